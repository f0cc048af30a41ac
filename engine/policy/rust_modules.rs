//! Where a Rust package's modules may lead: rustfmt (`cargo fmt`) reads, and rewrites, every
//! module file the sources declare, and a module is found where a `#[path]` attribute points
//! (`#[path = "../.env"] mod config;`: rustfmt's error printed the secret's line) or where a
//! `.rs` file that is a link leads. Neither is named on the command line: the files such
//! attributes name are judged as the command's own (`follows_modules` in the command table),
//! and what cannot be followed asks.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::bytes::Regex;

/// The most folder entries looked through: past it, the modules cannot all be checked.
const MAX_ENTRIES: usize = 10_000;

/// The most bytes of one source file read: a larger one is not looked through.
const MAX_SOURCE_BYTES: u64 = 4 * 1024 * 1024;

/// The most `#[path]` targets judged: past it, the rest cannot be.
const MAX_TARGETS: usize = 64;

/// A `path` attribute, outer or inner, also inside `cfg_attr` (`#[cfg_attr(x, path = "…")]`),
/// up to where its value starts; and an inline module block (`mod name {`), inside which a
/// `#[path]` is taken from a folder named after the modules around it. (`None` cannot happen
/// for these fixed patterns; were it so, every source would count as holding one.)
static PATH_ATTRIBUTE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"#\s*!?\s*\[[^\]]*\bpath\s*=").ok());
static INLINE_MODULE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\bmod\s+(r#)?\w+\s*\{").ok());

/// Where a module of the sources leads off the command line.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Lead {
    /// A `#[path]` attribute in `declared_in`: the module is the file `target` (the value
    /// taken from the declaring file's folder, as written; `..` is left to the rules).
    Path {
        /// The source file holding the attribute.
        declared_in: PathBuf,
        /// The module file it names.
        target: PathBuf,
    },
    /// What cannot be followed, and why.
    Unknown(String),
}

/// Where the modules of the Rust sources below `root` lead off the command line: each
/// `#[path]` attribute's file, and what cannot be followed (a `.rs` file that is a link, a
/// value that is not a plain string, an attribute inside an inline module, too many files).
/// Build output (`target`) and git's folder are skipped: no module lies there without a
/// `#[path]` leading to it.
pub(super) fn module_paths(root: &Path) -> Vec<Lead> {
    let mut leads = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES || leads.len() > MAX_TARGETS {
                leads.push(Lead::Unknown(format!(
                    "the workspace holds more than {MAX_ENTRIES} entries or {MAX_TARGETS} `#[path]` attributes, too many to follow the modules its Rust sources declare"
                )));
                return leads;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let name = entry.file_name();
            if kind.is_dir() {
                if name != ".git" && name != "target" {
                    pending.push(path);
                }
                continue;
            }
            if !name.to_string_lossy().ends_with(".rs") {
                continue;
            }
            if kind.is_symlink() {
                leads.push(Lead::Unknown(format!(
                    "`{}` is a link: a module declared there is read where it leads",
                    shown(&path)
                )));
                continue;
            }
            path_attributes(&path, &mut leads);
        }
    }
    leads
}

/// The `#[path]` attributes of the source file `path`, added to `leads`.
fn path_attributes(path: &Path, leads: &mut Vec<Lead>) {
    let mut source = Vec::new();
    let read = std::fs::File::open(path)
        .and_then(|file| file.take(MAX_SOURCE_BYTES + 1).read_to_end(&mut source));
    if read.is_err() {
        return;
    }
    if source.len() as u64 > MAX_SOURCE_BYTES {
        leads.push(Lead::Unknown(format!(
            "`{}` is larger than {} MiB, too large to look through for `#[path]` attributes",
            shown(path),
            MAX_SOURCE_BYTES / (1024 * 1024)
        )));
        return;
    }
    let code = code_of(&source);
    let (Some(attribute), Some(inline)) = (PATH_ATTRIBUTE.as_ref(), INLINE_MODULE.as_ref()) else {
        leads.push(Lead::Unknown(format!(
            "`{}` cannot be looked through",
            shown(path)
        )));
        return;
    };
    let folder = path.parent().unwrap_or(Path::new("/"));
    let nested = inline.is_match(&code);
    for found in attribute.find_iter(&code) {
        // The value, read from the source (the code has literals blanked, at the same
        // offsets): a plain string without escapes, else it cannot be told.
        let value = source[found.end()..]
            .trim_ascii_start()
            .strip_prefix(b"\"")
            .and_then(|rest| rest.iter().position(|&b| b == b'"').map(|end| &rest[..end]))
            .filter(|value| !value.contains(&b'\\'))
            .and_then(|value| std::str::from_utf8(value).ok());
        let lead = match value {
            Some(_) if nested => Lead::Unknown(format!(
                "`{}` declares modules inside a module block and has a `#[path]` attribute: where its module file lies depends on the blocks around it",
                shown(path)
            )),
            Some(value) => Lead::Path {
                declared_in: path.to_path_buf(),
                target: folder.join(value),
            },
            None => Lead::Unknown(format!(
                "`{}` has a `#[path]` attribute whose value is not a plain string",
                shown(path)
            )),
        };
        leads.push(lead);
    }
}

/// The Rust source `source` with its comments and the insides of its string and character
/// literals blanked (a test's `"#[path = \"x\"]"` is text, not an attribute). Where the
/// source ends inside a literal or a comment, it is not read as Rust reads it, and is given
/// back whole: an attribute it may hide is then looked for in all of it.
fn code_of(source: &[u8]) -> Vec<u8> {
    let mut code = Vec::with_capacity(source.len());
    let mut at = 0;
    let blank = |code: &mut Vec<u8>, from: usize, to: usize| {
        code.extend(std::iter::repeat_n(b' ', to - from));
    };
    while at < source.len() {
        let rest = &source[at..];
        let after_word =
            at > 0 && (source[at - 1].is_ascii_alphanumeric() || source[at - 1] == b'_');
        let end = if rest.starts_with(b"//") {
            Some(
                rest.iter()
                    .position(|&b| b == b'\n')
                    .map_or(source.len(), |n| at + n),
            )
        } else if rest.starts_with(b"/*") {
            block_comment_end(source, at)
        } else if rest[0] == b'"' {
            quoted_end(source, at + 1, b'"')
        } else if !after_word
            && (rest.starts_with(b"r\"")
                || rest.starts_with(b"r#")
                || rest.starts_with(b"br\"")
                || rest.starts_with(b"br#"))
        {
            raw_string_end(source, at)
        } else if rest[0] == b'\'' {
            char_literal_end(source, at)
        } else {
            code.push(rest[0]);
            at += 1;
            continue;
        };
        match end {
            Some(end) => {
                blank(&mut code, at, end);
                at = end;
            }
            None => return source.to_vec(),
        }
    }
    code
}

/// Where the block comment opening at `at` ends (comments nest), if it does.
fn block_comment_end(source: &[u8], at: usize) -> Option<usize> {
    let (mut depth, mut i) = (0usize, at);
    while i + 1 < source.len() {
        match &source[i..i + 2] {
            b"/*" => {
                depth += 1;
                i += 2;
            }
            b"*/" => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Where a literal whose text starts at `from` ends at `close` (after it), backslash escapes
/// skipped, if it does.
fn quoted_end(source: &[u8], from: usize, close: u8) -> Option<usize> {
    let mut i = from;
    while i < source.len() {
        match source[i] {
            b'\\' => i += 2,
            b if b == close => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Where the raw string opening at `at` (`r"…"`, `r#"…"#`, `br##"…"##`) ends, if it does;
/// `r#ident` (a raw identifier) is code and ends where it starts.
fn raw_string_end(source: &[u8], at: usize) -> Option<usize> {
    let mut i = at + if source[at] == b'b' { 2 } else { 1 };
    let hashes = source[i..].iter().take_while(|&&b| b == b'#').count();
    i += hashes;
    if source.get(i) != Some(&b'"') {
        // A raw identifier: its `r` is kept as code.
        return Some(at + 1);
    }
    let closing: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    source[i + 1..]
        .windows(closing.len())
        .position(|window| window == closing.as_slice())
        .map(|n| i + 1 + n + closing.len())
}

/// Where the character literal opening at `at` ends (`'x'`, `'\n'`, `'\u{1F600}'`), or just
/// after its quote for a lifetime or a label (`'a`, `'static`), which is code.
fn char_literal_end(source: &[u8], at: usize) -> Option<usize> {
    let rest = &source[at + 1..];
    if rest.first() == Some(&b'\\') {
        // An escape: the literal closes within a few bytes.
        return rest
            .iter()
            .take(12)
            .skip(2)
            .position(|&b| b == b'\'')
            .map(|n| at + 1 + 2 + n + 1);
    }
    // One character (of up to four bytes) and the closing quote, else a lifetime.
    let width = rest.first().map_or(1, |&b| match b {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    });
    Some(if rest.get(width) == Some(&b'\'') {
        at + 1 + width + 1
    } else {
        at + 1
    })
}

/// `path` as shown in a reason.
fn shown(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(leads: &[Lead]) -> Vec<String> {
        leads
            .iter()
            .map(|lead| match lead {
                Lead::Path { target, .. } => target.to_string_lossy().into_owned(),
                Lead::Unknown(why) => format!("unknown: {why}"),
            })
            .collect()
    }

    #[test]
    fn path_attributes_and_linked_sources_are_found_and_plain_modules_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let src = root.join("src/net");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(root.join("src/main.rs"), "mod net;\nfn main() {}\n").unwrap();
        std::fs::write(src.join("mod.rs"), "//! no path here\n").unwrap();
        // Build output is not looked through.
        std::fs::create_dir_all(root.join("target/debug")).unwrap();
        std::fs::write(root.join("target/debug/gen.rs"), "#[path = \"/x\"] mod x;").unwrap();
        assert_eq!(module_paths(root), Vec::new());

        for (attribute, target) in [
            ("#[path = \"../.env\"] mod config;", "../.env"),
            (
                "#[cfg_attr(unix, path = \"/home/u/.aws/credentials\")]\nmod creds;",
                "/home/u/.aws/credentials",
            ),
            ("# [ path=\"x.rs\" ] mod x;", "x.rs"),
        ] {
            std::fs::write(src.join("mod.rs"), attribute).unwrap();
            let expected = src.join(target).to_string_lossy().into_owned();
            assert_eq!(targets(&module_paths(root)), vec![expected], "{attribute}");
        }
        // A value that is not a plain string, or an attribute inside a module block.
        for text in [
            "#[path = r\"x.rs\"] mod x;",
            "#[path = \"a\\\\b.rs\"] mod x;",
            "mod a { #[path = \"../../.env\"] mod b; }",
        ] {
            std::fs::write(src.join("mod.rs"), text).unwrap();
            let found = targets(&module_paths(root));
            assert!(
                found.len() == 1 && found[0].starts_with("unknown"),
                "{text}: {found:?}"
            );
        }
        // Text that only looks like one: in a string, a raw string, a comment.
        for text in [
            "const T: &str = \"#[path = \\\"../.env\\\"] mod config;\";",
            "const T: &str = r#\"#[path = \"x\"]\"#;",
            "// #[path = \"x\"] mod x;\n/* #[path = \"y\"] /* nested */ */ fn f<'a>(c: char) -> bool { c == '\"' }",
        ] {
            std::fs::write(src.join("mod.rs"), text).unwrap();
            assert_eq!(module_paths(root), Vec::new(), "{text}");
        }
        // After a lifetime, a char literal holding a quote, or an unclosed literal, code is
        // still read as code.
        for text in [
            "fn f<'a>(x: &'a str) {} #[path = \"../.env\"] mod config;",
            "const Q: char = '\"'; #[path = \"../.env\"] mod config;",
            "const S: &str = \"never closed; #[path = \"../.env\"] mod config;",
        ] {
            std::fs::write(src.join("mod.rs"), text).unwrap();
            assert!(!module_paths(root).is_empty(), "{text}");
        }
        std::fs::write(src.join("mod.rs"), "").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("src/host.rs")).unwrap();
        let found = targets(&module_paths(root));
        assert!(found[0].contains("src/host.rs` is a link"), "{found:?}");
    }
}
