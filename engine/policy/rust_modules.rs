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

/// An attribute (`#[…]`, `#![…]`) up to its closing bracket, in code whose literals are
/// blanked; a `path` key in it, also inside `cfg_attr` (`#[cfg_attr(x, path = "…")]`),
/// every one of them; and an inline module block (`mod name {`), inside which a `#[path]` is
/// taken from a folder named after the modules around it. (`None` cannot happen for these
/// fixed patterns; were it so, every source would count as holding one.)
static ATTRIBUTE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"#\s*!?\s*\[[^\]]*").ok());
static PATH_KEY: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\bpath\s*=").ok());
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
/// `#[path]` attribute's file (which is looked through in turn, whatever its name), and
/// what cannot be followed (a `.rs` file that is a link, a value that is not a plain
/// string, an attribute inside an inline module, too many files). Cargo's build output (a
/// `target` folder holding `CACHEDIR.TAG` and no source of its own) and git's folder are
/// not walked: no module lies there but one a `#[path]` leads to, which asks.
pub(super) fn module_paths(root: &Path) -> Vec<Lead> {
    let mut leads = Vec::new();
    let mut sources = Vec::new();
    let mut skipped = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    let mut seen = 0usize;
    let too_many = || {
        Lead::Unknown(format!(
            "the workspace holds more than {MAX_ENTRIES} entries or {MAX_TARGETS} `#[path]` attributes, too many to follow the modules its Rust sources declare"
        ))
    };
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                leads.push(too_many());
                return leads;
            }
            if !super::disk::walked(1) {
                leads.push(Lead::Unknown(super::disk::walked_too_much()));
                return leads;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let name = entry.file_name();
            if kind.is_dir() {
                if name == ".git" || (name == "target" && is_build_output(&path)) {
                    skipped.push(path);
                } else {
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
            sources.push(path);
        }
    }
    // Each source, then each file a `#[path]` names (looked through in turn).
    let mut looked: std::collections::HashSet<PathBuf> = sources.iter().cloned().collect();
    let mut at = 0;
    while at < sources.len() {
        let found = path_attributes(&sources[at], &mut leads);
        at += 1;
        for target in found {
            let folded = folded(&target);
            if skipped.iter().any(|folder| folded.starts_with(folder)) {
                leads.push(Lead::Unknown(format!(
                    "a `#[path]` attribute leads to `{}`, in build output or git's folder, which is not looked through",
                    shown(&target)
                )));
            }
            if leads.len() > MAX_TARGETS {
                leads.push(too_many());
                return leads;
            }
            if looked.insert(target.clone()) {
                sources.push(target);
            }
        }
    }
    leads
}

/// `path` with `.` and `..` folded away lexically.
fn folded(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut folded = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                folded.pop();
            }
            other => folded.push(other),
        }
    }
    folded
}

/// Whether `folder` (named `target`) is cargo's build output: it holds `CACHEDIR.TAG`, which
/// cargo writes there, and no Rust source of its own (a module folder named `target` does).
fn is_build_output(folder: &Path) -> bool {
    folder.join("CACHEDIR.TAG").is_file()
        && std::fs::read_dir(folder).is_ok_and(|entries| {
            entries
                .flatten()
                .all(|entry| !entry.file_name().to_string_lossy().ends_with(".rs"))
        })
}

/// The `#[path]` attributes of the source file `path`, added to `leads`; returns the files
/// they name.
fn path_attributes(path: &Path, leads: &mut Vec<Lead>) -> Vec<PathBuf> {
    let mut targets = Vec::new();
    let mut source = Vec::new();
    let read = std::fs::File::open(path)
        .and_then(|file| file.take(MAX_SOURCE_BYTES + 1).read_to_end(&mut source));
    if read.is_err() {
        return targets;
    }
    if source.len() as u64 > MAX_SOURCE_BYTES {
        leads.push(Lead::Unknown(format!(
            "`{}` is larger than {} MiB, too large to look through for `#[path]` attributes",
            shown(path),
            MAX_SOURCE_BYTES / (1024 * 1024)
        )));
        return targets;
    }
    let code = code_of(&source);
    let (Some(attribute), Some(key), Some(inline)) = (
        ATTRIBUTE.as_ref(),
        PATH_KEY.as_ref(),
        INLINE_MODULE.as_ref(),
    ) else {
        leads.push(Lead::Unknown(format!(
            "`{}` cannot be looked through",
            shown(path)
        )));
        return targets;
    };
    let folder = path.parent().unwrap_or(Path::new("/"));
    let nested = inline.is_match(&code);
    let keys = attribute.find_iter(&code).flat_map(|found| {
        key.find_iter(found.as_bytes())
            .map(move |key| found.start() + key.end())
    });
    for end in keys {
        // The value, read from the source (the code has literals blanked, at the same
        // offsets): a plain string without escapes, else it cannot be told.
        let value = source[end..]
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
            Some(value) => {
                targets.push(folder.join(value));
                Lead::Path {
                    declared_in: path.to_path_buf(),
                    target: folder.join(value),
                }
            }
            None => Lead::Unknown(format!(
                "`{}` has a `#[path]` attribute whose value is not a plain string",
                shown(path)
            )),
        };
        leads.push(lead);
    }
    targets
}

/// The Rust source `source` with its comments and the insides of its string and character
/// literals blanked (a test's `"#[path = \"x\"]"` is text, not an attribute). Where the
/// source ends inside a literal or a comment, it is not read as Rust reads it, and is given
/// back whole: an attribute it may hide is then looked for in all of it.
fn code_of(source: &[u8]) -> Vec<u8> {
    let mut code = Vec::with_capacity(source.len());
    let mut at = 0;
    // A first line starting `#!` but not `#![` is a shebang, not code (one whose `#!` a
    // comment follows is read as code: rustc looks past comments for the `[`).
    let after = source.get(2..).map(<[u8]>::trim_ascii_start);
    if source.starts_with(b"#!")
        && after.is_some_and(|rest| {
            !rest.starts_with(b"[") && !rest.starts_with(b"//") && !rest.starts_with(b"/*")
        })
    {
        at = source
            .iter()
            .position(|&b| b == b'\n')
            .unwrap_or(source.len());
        code.extend(std::iter::repeat_n(b' ', at));
    }
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
                || rest.starts_with(b"br#")
                || rest.starts_with(b"cr\"")
                || rest.starts_with(b"cr#"))
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
    let mut i = at
        + if matches!(source[at], b'b' | b'c') {
            2
        } else {
            1
        };
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
        // Build output (cargo marks it with `CACHEDIR.TAG`) is not looked through.
        std::fs::create_dir_all(root.join("target/debug")).unwrap();
        std::fs::write(root.join("target/CACHEDIR.TAG"), "Signature").unwrap();
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
        // A raw C string, a shebang holding a quote, a second `path` in one `cfg_attr`.
        for (text, target) in [
            (
                "const C: &CStr = cr\"\\\"; #[path = \"../.env\"] mod config;",
                "../.env",
            ),
            (
                "#!/usr/bin/env \"\n#[path = \"../.env\"] mod config;",
                "../.env",
            ),
            (
                "#[cfg_attr(unix, path = \"a.rs\", path = \"../.env\")] mod m;",
                "a.rs",
            ),
        ] {
            std::fs::write(src.join("mod.rs"), text).unwrap();
            let found = targets(&module_paths(root));
            let expected = src.join(target).to_string_lossy().into_owned();
            assert!(found.contains(&expected), "{text}: {found:?}");
        }
        // A file a `#[path]` names is looked through in turn, whatever its name.
        std::fs::write(src.join("mod.rs"), "#[path = \"notes.txt\"] mod notes;").unwrap();
        std::fs::write(src.join("notes.txt"), "#[path = \"../../.env\"] mod env;").unwrap();
        let found = targets(&module_paths(root));
        let hop = src.join("../../.env").to_string_lossy().into_owned();
        assert!(found.contains(&hop), "{found:?}");
        // A module folder named `target` is walked; cargo's build output is not, and a
        // `#[path]` into it asks.
        std::fs::write(src.join("mod.rs"), "").unwrap();
        std::fs::remove_file(src.join("notes.txt")).unwrap();
        std::fs::create_dir_all(src.join("target")).unwrap();
        std::fs::write(src.join("target/mod.rs"), "#[path = \"../../.env\"] mod e;").unwrap();
        assert_eq!(module_paths(root).len(), 1);
        std::fs::remove_dir_all(src.join("target")).unwrap();
        std::fs::write(root.join("target/CACHEDIR.TAG"), "Signature").unwrap();
        std::fs::write(
            src.join("mod.rs"),
            "#[path = \"../../target/debug/gen.rs\"] mod g;",
        )
        .unwrap();
        let found = targets(&module_paths(root));
        assert!(
            found.iter().any(|f| f.contains("build output")),
            "{found:?}"
        );
        std::fs::write(src.join("mod.rs"), "").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("src/host.rs")).unwrap();
        let found = targets(&module_paths(root));
        assert!(found[0].contains("src/host.rs` is a link"), "{found:?}");
    }
}
