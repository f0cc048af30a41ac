//! One component of a pathname pattern (`*.rs`, `.e[!N]v`, `[[:alpha:]]x`), matched against
//! a file name as bash matches it.
//!
//! bash's brackets are not those of the glob crates: `[!…]` and `[^…]` negate, a `]` right
//! after the opening bracket (or its `!`) is a member, POSIX classes (`[[:upper:]]`) are
//! members, a backslash escapes the next character, and a `[` without its `]` is a literal.
//! A pattern is matched both with and without regard to case: bash is case-sensitive unless
//! `nocaseglob` is on, and a negated bracket (`[!N]`) matches `n` only with case — so one
//! side alone would reach fewer files than bash may. Collating symbols and equivalence
//! classes (`[[.n.]]`, `[[=n=]]`), unknown class names and reversed ranges are refused: what
//! they match depends on the locale, so the word's files cannot be judged.

use regex::Regex;

/// How many files one word (or one agent's glob) may expand to before it is asked instead.
pub(crate) const MAX_EXPANSIONS: usize = 256;

/// A compiled pattern component.
#[derive(Debug)]
pub(crate) struct Wildcard {
    exact: Regex,
    any_case: Regex,
}

/// The class names bash (and the `regex` crate) know inside brackets.
const CLASSES: &[&str] = &[
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
    "space", "upper", "word", "xdigit",
];

impl Wildcard {
    /// Compiles one component (no `/`). `Err` says why it cannot be read.
    pub(crate) fn new(component: &str) -> Result<Self, String> {
        let body = regex_of(component)?;
        let build = |flags: &str| {
            Regex::new(&format!("(?s{flags})^(?:{body})$"))
                .map_err(|err| format!("`{component}` is not a pattern toolgate can read: {err}"))
        };
        Ok(Self {
            exact: build("")?,
            any_case: build("i")?,
        })
    }

    /// Whether `name` matches, with case or without it.
    pub(crate) fn matches(&self, name: &str) -> bool {
        self.exact.is_match(name) || self.any_case.is_match(name)
    }
}

/// A glob an agent's tool or a search program reads (ripgrep's `--glob`, the glob libraries
/// of the agents' tools, with their extglobs and POSIX classes), rewritten for the glob
/// crates so that it matches at least every path it may match, whatever the case or locale:
/// each bracket expression becomes `?` and each extglob group (`@(…)`, `!(…)`, `+(…)`,
/// `*(…)`, `?(…)`) becomes `*`. Matching more paths only judges more of them.
pub(crate) fn widened(glob: &str) -> String {
    let chars: Vec<char> = glob.chars().collect();
    let mut out = String::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        match c {
            // An escape keeps a character the glob reads from meaning more; before any
            // other, it is nothing (`\.ssh` is `.ssh`).
            '\\' if at + 1 < chars.len() => {
                let escaped = chars[at + 1];
                if "*?[]{}()!@+,\\".contains(escaped) {
                    out.push(c);
                }
                out.push(escaped);
                at += 2;
            }
            '[' => match bracket(&chars, at, glob) {
                Some((_, next)) => {
                    out.push('?');
                    at = next;
                }
                None => {
                    out.push_str("\\[");
                    at += 1;
                }
            },
            // Nested braces, which the glob crates refuse.
            '{' => match group_end(&chars, at, ('{', '}')) {
                Some(next) if chars[at + 1..next].contains(&'{') => {
                    out.push('*');
                    at = next;
                }
                _ => {
                    out.push(c);
                    at += 1;
                }
            },
            '@' | '!' | '+' | '*' | '?' if chars.get(at + 1) == Some(&'(') => {
                match group_end(&chars, at + 1, ('(', ')')) {
                    // `@(a|b)` without groups inside is exactly `{a,b}`.
                    Some(next)
                        if c == '@'
                            && !chars[at + 2..next - 1]
                                .iter()
                                .any(|c| matches!(c, '(' | ')' | '{' | '}' | ',' | '\\')) =>
                    {
                        let alternatives: String = chars[at + 2..next - 1].iter().collect();
                        out.push('{');
                        out.push_str(&widened(&alternatives.replace('|', ",")));
                        out.push('}');
                        at = next;
                    }
                    Some(next) => {
                        out.push('*');
                        at = next;
                    }
                    None => {
                        out.push(c);
                        at += 1;
                    }
                }
            }
            _ => {
                out.push(c);
                at += 1;
            }
        }
    }
    out
}

/// The globs an agent's tool may read in `glob`: as written, and, when it holds a
/// backslash, with each backslash as a folder separator (Gemini CLI's read-many tool turns
/// `cfg\*` into `cfg/*` before globbing; elsewhere a backslash escapes).
pub(crate) fn readings(glob: &str) -> Vec<String> {
    let mut readings = vec![glob.to_owned()];
    if glob.contains('\\') {
        readings.push(glob.replace('\\', "/"));
    }
    // The glob libraries expand braces first (`{src,.}/.e*`, `.{e..f}nv`) and read `x/..`
    // and `./` as paths do (`*/../.e*` is `.e*`).
    // Each expansion is kept as written too: `**` may match no folder, so in
    // `src/**/{..,x}/.e*` the `..` climbs out of `src` itself, which collapsing hides.
    let expanded: Vec<String> = readings
        .iter()
        .flat_map(|reading| expand_braces(reading).unwrap_or_default())
        .flat_map(|reading| [collapsed(&reading), reading])
        .collect();
    for reading in expanded {
        if !readings.contains(&reading) {
            readings.push(reading);
        }
    }
    readings
}

/// Whether a glob's component may name the parent folder: `..`, or a pattern matching it
/// that does not start with a wildcard (`.[.]`, `.?`; a leading `*` or `?` never matches
/// `..` in bash or the agents' glob libraries).
pub(crate) fn may_name_parent(component: &str) -> bool {
    component == ".."
        || (has_glob(component)
            && !component.starts_with(['*', '?'])
            && Wildcard::new(component).is_ok_and(|w| w.matches("..")))
}

/// `glob` with `.` components removed and each `..` taking the component before it away
/// (`*/../.e*` → `.e*`, `./x` → `x`).
fn collapsed(glob: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    for component in glob.split('/') {
        match component {
            "." if !kept.is_empty() || glob.len() > 1 => {}
            ".." if kept.last().is_some_and(|last| !matches!(*last, ".." | "")) => {
                kept.pop();
            }
            _ => kept.push(component),
        }
    }
    let joined = kept.join("/");
    if joined.is_empty() {
        ".".to_owned()
    } else {
        joined
    }
}

/// Where the group opening at `open` (with `(` or `{`) ends (after its closing character),
/// nested groups and escapes included; `None` when it is not closed.
fn group_end(chars: &[char], open: usize, (opening, closing): (char, char)) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = open;
    while at < chars.len() {
        match chars[at] {
            '\\' => at += 1,
            c if c == opening => depth += 1,
            c if c == closing => {
                depth -= 1;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// `text` with every character a pattern reads escaped: it then matches only itself.
pub(crate) fn escape_glob(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` with its backslash escapes removed: the name a pattern that matches nothing
/// stands for.
pub(crate) fn unescape_glob(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `text` holds an unescaped `*`, `?` or `[`.
pub(crate) fn has_glob(text: &str) -> bool {
    let mut escaped = false;
    for c in text.chars() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '*' | '?' | '[') => return true,
            (false, _) => {}
        }
    }
    false
}

/// Brace expansion (`a{b,c}d`, `{1..3}`), outside quotes; `Err` past [`MAX_EXPANSIONS`].
pub(crate) fn expand_braces(raw: &str) -> Result<Vec<String>, String> {
    let mut out = vec![String::new()];
    let chars: Vec<char> = raw.chars().collect();
    let mut i = 0;
    let mut quote: Option<char> = None;
    while i < chars.len() {
        let c = chars[i];
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '\\') => {
                for value in &mut out {
                    value.push(c);
                    if let Some(&next) = chars.get(i + 1) {
                        value.push(next);
                    }
                }
                i += 2;
                continue;
            }
            (None, '{') => {
                if let Some((alternatives, end)) = brace_group(&chars, i)? {
                    let mut next = Vec::new();
                    for prefix in &out {
                        for alternative in &alternatives {
                            for expanded in expand_braces(alternative)? {
                                next.push(format!("{prefix}{expanded}"));
                            }
                        }
                    }
                    if next.len() > MAX_EXPANSIONS {
                        return Err("the braces expand to too many words".to_owned());
                    }
                    out = next;
                    i = end + 1;
                    continue;
                }
            }
            _ => {}
        }
        for value in &mut out {
            value.push(c);
        }
        i += 1;
    }
    Ok(out)
}

/// The alternatives of the brace group starting at `open`, and the index of its `}`;
/// `Ok(None)` when it is not a group (bash keeps it as written), `Err` for a sequence of more
/// than [`MAX_EXPANSIONS`] words.
fn brace_group(chars: &[char], open: usize) -> Result<Option<(Vec<String>, usize)>, String> {
    let mut depth = 0;
    let mut alternatives = vec![String::new()];
    let mut i = open + 1;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                if alternatives.len() > 1 {
                    return Ok(Some((alternatives, i)));
                }
                // `{1..3}`, `{a..c}`, `{01..10..2}`.
                let body = alternatives.pop().unwrap_or_default();
                return Ok(sequence(&body)?.map(|values| (values, i)));
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                alternatives.push(String::new());
                i += 1;
                continue;
            }
            _ => {}
        }
        if let Some(last) = alternatives.last_mut() {
            last.push(c);
        }
        i += 1;
    }
    Ok(None)
}

/// bash's sequence expression `x..y[..step]`, integers (zero-padded to the longer end when
/// either is written with a leading zero) or single letters, in the order bash writes them;
/// `Ok(None)` when `body` is not one (bash keeps it as written), `Err` past
/// [`MAX_EXPANSIONS`] words.
fn sequence(body: &str) -> Result<Option<Vec<String>>, String> {
    let ends: Vec<&str> = body.split("..").collect();
    let (from, to, step) = match ends.as_slice() {
        [from, to] => (*from, *to, 1),
        [from, to, step] => match step.parse::<i64>() {
            Ok(step) => (*from, *to, step.unsigned_abs().max(1)),
            Err(_) => return Ok(None),
        },
        _ => return Ok(None),
    };
    let numbers = (from.parse::<i64>(), to.parse::<i64>());
    let letter = |end: &str| match end.as_bytes() {
        [byte] if byte.is_ascii_alphabetic() => Some(i64::from(*byte)),
        _ => None,
    };
    let (start, end, as_number) = match numbers {
        (Ok(start), Ok(end)) => (start, end, true),
        _ => match (letter(from), letter(to)) {
            (Some(start), Some(end)) => (start, end, false),
            _ => return Ok(None),
        },
    };
    let count = start.abs_diff(end) / step + 1;
    if count > MAX_EXPANSIONS as u64 {
        return Err("the braces expand to too many words".to_owned());
    }
    let padded = |end: &str| {
        let digits = end.strip_prefix('-').unwrap_or(end);
        digits.len() > 1 && digits.starts_with('0')
    };
    let width = if padded(from) || padded(to) {
        from.len().max(to.len())
    } else {
        0
    };
    let step = i64::try_from(step).unwrap_or(i64::MAX);
    let mut values = Vec::new();
    let mut at = start;
    for _ in 0..count {
        values.push(if as_number {
            format!("{at:0width$}")
        } else {
            u8::try_from(at).map(char::from).unwrap_or('?').to_string()
        });
        at = if start <= end {
            at.saturating_add(step)
        } else {
            at.saturating_sub(step)
        };
    }
    Ok(Some(values))
}

/// The regular expression (without anchors) bash's pattern `component` stands for.
fn regex_of(component: &str) -> Result<String, String> {
    let chars: Vec<char> = component.chars().collect();
    let mut out = String::new();
    let mut at = 0;
    while at < chars.len() {
        match chars[at] {
            '\\' if at + 1 < chars.len() => {
                out.push_str(&literal(chars[at + 1]));
                at += 2;
            }
            '*' => {
                out.push_str(".*");
                at += 1;
            }
            '?' => {
                out.push('.');
                at += 1;
            }
            '[' => match bracket(&chars, at, component) {
                Some((class, next)) => {
                    out.push_str(&class?);
                    at = next;
                }
                None => {
                    out.push_str(&literal('['));
                    at += 1;
                }
            },
            c => {
                out.push_str(&literal(c));
                at += 1;
            }
        }
    }
    Ok(out)
}

/// The bracket expression opening at `open`: its class (`Err` says why it cannot be read)
/// and where it ends; `None` when it has no closing `]` (the `[` is then a literal).
fn bracket(
    chars: &[char],
    open: usize,
    component: &str,
) -> Option<(Result<String, String>, usize)> {
    let mut refused = None;
    let mut refuse = |what: String| {
        refused.get_or_insert(format!(
            "`{component}` holds {what}, whose matches depend on the locale"
        ));
    };
    let mut at = open + 1;
    let negated = matches!(chars.get(at), Some('!' | '^'));
    if negated {
        at += 1;
    }
    let mut members = String::new();
    let mut first = true;
    loop {
        let &c = chars.get(at)?;
        match c {
            ']' if !first => break,
            '[' if matches!(chars.get(at + 1), Some(':' | '.' | '=')) => {
                let kind = chars[at + 1];
                let end = (at + 2..chars.len().saturating_sub(1))
                    .find(|&i| chars[i] == kind && chars[i + 1] == ']');
                let Some(end) = end else {
                    // `[:` without its `:]` is two members.
                    members.push_str(&literal('['));
                    at += 1;
                    first = false;
                    continue;
                };
                let name: String = chars[at + 2..end].iter().collect();
                match kind {
                    ':' if CLASSES.contains(&name.as_str()) => {
                        members.push_str(&format!("[:{name}:]"));
                    }
                    ':' => refuse(format!("the unknown class `[:{name}:]`")),
                    _ => refuse(format!("`[{kind}{name}{kind}]`")),
                }
                at = end + 2;
            }
            _ => {
                let (from, after) = member(chars, at);
                // `a-z`, unless the `-` is last (`[a-]`).
                if chars.get(after) == Some(&'-') && chars.get(after + 1).is_some_and(|&c| c != ']')
                {
                    let (to, next) = member(chars, after + 1);
                    if to < from {
                        refuse(format!("the reversed range `{from}-{to}`"));
                    }
                    members.push_str(&format!("{}-{}", literal(from), literal(to)));
                    at = next;
                } else {
                    members.push_str(&literal(from));
                    at = after;
                }
            }
        }
        first = false;
    }
    let class = match refused {
        Some(why) => Err(why),
        None => Ok(format!("[{}{members}]", if negated { "^" } else { "" })),
    };
    Some((class, at + 1))
}

/// The character at `at` of a bracket (a backslash escapes the next one) and where the next
/// member starts.
fn member(chars: &[char], at: usize) -> (char, usize) {
    match chars.get(at + 1) {
        Some(&escaped) if chars[at] == '\\' => (escaped, at + 2),
        _ => (chars[at], at + 1),
    }
}

/// `c` as a regular expression matching only it.
fn literal(c: char) -> String {
    format!("\\x{{{:x}}}", c as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A component that may be `..` to a glob library, and ones that cannot.
    #[test]
    fn components_that_may_name_the_parent_folder() {
        for component in ["..", ".[.]", "[.][.]", ".?", ".[!x]"] {
            assert!(may_name_parent(component), "{component}");
        }
        for component in ["*", "**", "?", "??", "*.rs", ".env", "src", "[a-z]*", "."] {
            assert!(!may_name_parent(component), "{component}");
        }
    }

    /// Brace expansions are read as written as well as collapsed: `**` may match no folder.
    #[test]
    fn a_brace_expansion_is_kept_as_written() {
        let got = readings("src/**/{..,x}/.e*");
        assert!(got.contains(&"src/**/../.e*".to_owned()), "{got:?}");
        assert!(got.contains(&"src/.e*".to_owned()), "{got:?}");
    }

    /// Each row: a pattern, names it matches, names it does not (as bash 5.2 expands them).
    #[test]
    fn components_match_as_bash_matches_them() {
        let rows: &[(&str, &[&str], &[&str])] = &[
            ("*.rs", &["lib.rs", ".rs", "x.RS"], &["lib.rs.bak"]),
            ("?bc", &["abc", "Abc"], &["bc", "abcd"]),
            (".e[!N]v", &[".env", ".exv"], &[".eNv", ".ev"]),
            (".e[^N]v", &[".env"], &[]),
            (".e[![:upper:]]v", &[".env"], &[]),
            (".e[[:alpha:]]v", &[".env", ".eXv"], &[".e1v"]),
            ("[[:upper:]a]bc", &["Abc", "abc"], &["1bc"]),
            ("[]]x", &["]x"], &["x"]),
            ("[\\]]x", &["]x"], &[]),
            ("[!]]x", &["ax"], &["]x"]),
            ("[a-b]bc", &["abc", "bbc", "Abc"], &["cbc"]),
            ("[A-a]bc", &["Abc", "abc", "_bc"], &[]),
            ("[a-]x", &["ax", "-x"], &["bx"]),
            (".e[n", &[".e[n"], &[".en"]),
            (".e\\nv", &[".env"], &[".e\\nv"]),
            ("a.b", &["a.b"], &["axb"]),
            ("[*]", &["*"], &["x"]),
            ("x$(y)", &["x$(y)"], &["x"]),
        ];
        for (pattern, matched, unmatched) in rows {
            let wildcard = Wildcard::new(pattern).unwrap();
            for name in *matched {
                assert!(wildcard.matches(name), "`{pattern}` should match `{name}`");
            }
            for name in *unmatched {
                assert!(
                    !wildcard.matches(name),
                    "`{pattern}` should not match `{name}`"
                );
            }
        }
    }

    #[test]
    fn agent_globs_are_widened_to_what_they_may_match() {
        for (glob, widened_to) in [
            ("src/**/*.rs", "src/**/*.rs"),
            (".e[!N]v", ".e?v"),
            (".e[[:alpha:]]v", ".e?v"),
            (".e[[.n.]]v", ".e?v"),
            ("@(.env.local)", "{.env.local}"),
            ("config/@(*.pem)", "config/{*.pem}"),
            ("deploy/@(secrets)/*", "deploy/{secrets}/*"),
            ("@(.e[!N]v|x)", "{.e?v,x}"),
            ("@(a,b)", "*"),
            ("!(src)", "*"),
            ("~/+(.ssh|.aws)/*", "~/*/*"),
            ("x/@(a|@(b|c))y", "x/*y"),
            ("x/@(a|+(b))y", "x/*y"),
            ("app/(group)/page.tsx", "app/(group)/page.tsx"),
            ("a[b", "a\\[b"),
            ("\\[x]", "\\[x]"),
            ("~/\\.ssh/*", "~/.ssh/*"),
            ("~/.a\\ws/*", "~/.aws/*"),
            ("a\\*b", "a\\*b"),
            ("@(open", "@(open"),
            ("{src,lib}/*.rs", "{src,lib}/*.rs"),
            ("~/{x,{.ssh,y}}/*", "~/*/*"),
        ] {
            assert_eq!(widened(glob), widened_to, "{glob}");
        }
    }

    #[test]
    fn agent_globs_are_read_every_way_a_library_may_read_them() {
        for (glob, reading) in [
            ("cfg\\*", "cfg/*"),
            ("{src,.}/.e*", ".e*"),
            (".{e..f}nv", ".env"),
            ("*/../.e*", ".e*"),
            ("./.e*", ".e*"),
            ("/a/../b", "/b"),
        ] {
            let readings = readings(glob);
            assert_eq!(readings[0], glob);
            assert!(
                readings.iter().any(|r| r == reading),
                "{glob}: {readings:?}"
            );
        }
        assert_eq!(readings("src/*.rs"), ["src/*.rs"]);
    }

    #[test]
    fn locale_dependent_brackets_are_refused() {
        for pattern in [".e[[.n.]]v", ".e[[=n=]]v", "[[:foo:]]bc", "[z-a]bc"] {
            let err = Wildcard::new(pattern).unwrap_err();
            assert!(err.contains(pattern), "{err}");
        }
    }
}
