//! Whether one pattern admits at most what another admits: the question behind "can this
//! change widen a rule". Globs (and path globs) and shell token patterns are compared
//! symbolically; when that cannot show containment, strings sampled from the inner pattern
//! look for a witness it admits and the outer does not. Regular expressions are compared on
//! sample strings only. An answer without proof either way is [`Containment::Unknown`].
//!
//! Soundness: [`Containment::Within`] is only returned when every string the inner pattern
//! matches is matched by the outer one (the symbolic check under-approximates the outer
//! pattern), and [`Containment::Beyond`] only with a witness that was actually matched.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// The answer to "does the outer pattern admit everything the inner one admits".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Containment {
    /// Yes, shown from the patterns.
    Within,
    /// No: the inner pattern admits something the outer does not.
    Beyond {
        /// The argument (or `tools`) it is about.
        field: String,
        /// What the inner pattern admits and the outer does not, when one was found.
        witness: Option<String>,
    },
    /// No: the inner matcher lets commands on this argument redirect output to files.
    Redirection {
        /// The argument.
        field: String,
    },
    /// Not decided.
    Unknown {
        /// Why not.
        why: String,
    },
}

impl Containment {
    /// Combines the answers for conjoined parts: any `Beyond` wins, then any `Unknown`.
    fn and(self, other: Containment) -> Containment {
        match (self, other) {
            (beyond @ (Containment::Beyond { .. } | Containment::Redirection { .. }), _)
            | (_, beyond @ (Containment::Beyond { .. } | Containment::Redirection { .. })) => {
                beyond
            }
            (unknown @ Containment::Unknown { .. }, _)
            | (_, unknown @ Containment::Unknown { .. }) => unknown,
            (Containment::Within, Containment::Within) => Containment::Within,
        }
    }
}

/// One symbol of a glob.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Literal(char),
    /// `?`
    One,
    /// `*`
    Star,
    /// `**` as a whole path component
    Any,
    /// `[…]`, compared as written
    Class(String),
}

/// The most alternatives a pattern's braces may expand to before comparing gives up.
const MAX_ALTERNATIVES: usize = 64;

/// Expands `{a,b}` alternations (nested ones too); `None` when there are too many or a brace
/// is unbalanced.
fn expand_braces(pattern: &str) -> Option<Vec<String>> {
    let bytes: Vec<char> = pattern.chars().collect();
    let mut depth = 0usize;
    let mut open = None;
    let mut escaped = false;
    for (index, &c) in bytes.iter().enumerate() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '{' => {
                if depth == 0 {
                    open = Some(index);
                }
                depth += 1;
            }
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    let start = open?;
                    let head: String = bytes[..start].iter().collect();
                    let tail: String = bytes[index + 1..].iter().collect();
                    let inner: String = bytes[start + 1..index].iter().collect();
                    let mut out = Vec::new();
                    for alternative in split_top_level(&inner) {
                        for expanded in expand_braces(&format!("{head}{alternative}{tail}"))? {
                            out.push(expanded);
                            if out.len() > MAX_ALTERNATIVES {
                                return None;
                            }
                        }
                    }
                    return Some(out);
                }
            }
            _ => {}
        }
    }
    (depth == 0).then(|| vec![pattern.to_owned()])
}

fn split_top_level(inner: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut depth = 0usize;
    for c in inner.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = parts.last_mut() {
            last.push(c);
        }
    }
    parts
}

/// The tokens of a brace-free glob.
fn tokens(pattern: &str) -> Vec<Token> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                out.push(Token::Literal(chars[i + 1]));
                i += 2;
                continue;
            }
            '?' => out.push(Token::One),
            '*' if chars.get(i + 1) == Some(&'*') => {
                let whole = (i == 0 || chars[i - 1] == '/')
                    && (i + 2 == chars.len() || chars[i + 2] == '/');
                out.push(if whole { Token::Any } else { Token::Star });
                i += 2;
                continue;
            }
            '*' => out.push(Token::Star),
            '[' => match chars[i + 1..].iter().position(|&c| c == ']') {
                Some(end) => {
                    out.push(Token::Class(chars[i..i + end + 2].iter().collect()));
                    i += end + 2;
                    continue;
                }
                None => out.push(Token::Literal('[')),
            },
            c => out.push(Token::Literal(c)),
        }
        i += 1;
    }
    out
}

/// Whether every string `inner` matches is matched by `outer` (brace-free token lists), shown
/// symbolically. `separator`: `*` and `?` do not cross `/`.
fn tokens_within(inner: &[Token], outer: &[Token], separator: bool) -> bool {
    fn go(
        i: usize,
        j: usize,
        inner: &[Token],
        outer: &[Token],
        separator: bool,
        memo: &mut HashMap<(usize, usize), bool>,
    ) -> bool {
        if let Some(&known) = memo.get(&(i, j)) {
            return known;
        }
        let answer = match outer.get(j) {
            None => i == inner.len(),
            // `**` is at least any string here: its real language (`(?:/?|.*/)` before a
            // `/`) is larger, so the check stays sound.
            Some(Token::Any) => {
                go(i, j + 1, inner, outer, separator, memo)
                    || (i < inner.len() && go(i + 1, j, inner, outer, separator, memo))
            }
            Some(Token::Star) => {
                let absorbs = |t: &Token| match t {
                    Token::Literal(c) => !separator || *c != '/',
                    Token::One | Token::Star => true,
                    Token::Class(class) => !separator || !class.contains('/'),
                    Token::Any => !separator,
                };
                go(i, j + 1, inner, outer, separator, memo)
                    || (i < inner.len()
                        && absorbs(&inner[i])
                        && go(i + 1, j, inner, outer, separator, memo))
            }
            Some(Token::One) => {
                matches!(inner.get(i), Some(Token::Literal(c)) if !separator || *c != '/')
                    && go(i + 1, j + 1, inner, outer, separator, memo)
                    || matches!(inner.get(i), Some(Token::One))
                        && go(i + 1, j + 1, inner, outer, separator, memo)
            }
            Some(token @ (Token::Literal(_) | Token::Class(_))) => {
                inner.get(i) == Some(token) && go(i + 1, j + 1, inner, outer, separator, memo)
            }
        };
        memo.insert((i, j), answer);
        answer
    }
    go(0, 0, inner, outer, separator, &mut HashMap::new())
}

/// The spellings of a brace-free glob with each `**/` (leading) and `/**/` (inner) also
/// matched as no component: the token model reads `**` as any string, which misses `x` for
/// `**/x` and `a/b` for `a/**/b`.
fn zero_components(pattern: &str) -> Vec<String> {
    fn inner(pattern: &str) -> Vec<String> {
        match pattern.find("/**/") {
            None => vec![pattern.to_owned()],
            Some(at) => {
                let head = &pattern[..at];
                inner(&pattern[at + 4..])
                    .into_iter()
                    .flat_map(|tail| [format!("{head}/{tail}"), format!("{head}/**/{tail}")])
                    .collect()
            }
        }
    }
    match pattern.strip_prefix("**/") {
        Some(rest) => inner(rest)
            .into_iter()
            .flat_map(|v| [v.clone(), format!("/{v}"), format!("**/{v}")])
            .collect(),
        None => inner(pattern),
    }
}

/// Strings a glob matches, simplest first: `*` as `x` or nothing, `**` as `a` or `a/b`.
pub fn samples(pattern: &str) -> Vec<String> {
    let Some(alternatives) = expand_braces(pattern) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for alternative in alternatives {
        for (star, any) in [("x", "a"), ("", "a"), ("x", "a/b"), ("x.y", "a")] {
            let text: String = tokens(&alternative)
                .iter()
                .map(|t| match t {
                    Token::Literal(c) => c.to_string(),
                    Token::One => "x".to_owned(),
                    Token::Star => star.to_owned(),
                    Token::Any => any.to_owned(),
                    Token::Class(class) => class_member(class),
                })
                .collect();
            if !out.contains(&text) {
                out.push(text);
            }
        }
    }
    out
}

/// A character of a `[…]` class (its first listed one; for a negated class, one it excludes
/// rarely: `x` unless listed).
fn class_member(class: &str) -> String {
    let body = &class[1..class.len() - 1];
    match body.strip_prefix(['!', '^']) {
        Some(negated) if !negated.contains('x') => "x".to_owned(),
        Some(_) => "y".to_owned(),
        None => body.chars().next().map(String::from).unwrap_or_default(),
    }
}

fn glob_matcher(pattern: &str, separator: bool) -> Option<globset::GlobMatcher> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(separator)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// Whether `outer` matches everything `inner` matches (globs; `separator`: `*` stops at `/`).
pub fn glob_within(inner: &str, outer: &str, separator: bool) -> GlobAnswer {
    if inner == outer {
        return GlobAnswer::Within;
    }
    if let (Some(inners), Some(outers)) = (expand_braces(inner), expand_braces(outer)) {
        // Each spelling of the outer pattern matches a subset of what it matches, so an inner
        // spelling within one of them is within the pattern.
        let outers: Vec<Vec<Token>> = outers
            .iter()
            .flat_map(|o| zero_components(o))
            .map(|o| tokens(&o))
            .collect();
        let inners: Vec<String> = inners.iter().flat_map(|i| zero_components(i)).collect();
        let all = inners.iter().all(|i| {
            let i = tokens(i);
            outers.iter().any(|o| tokens_within(&i, o, separator))
        });
        if all {
            return GlobAnswer::Within;
        }
    }
    match (
        glob_matcher(inner, separator),
        glob_matcher(outer, separator),
    ) {
        (Some(i), Some(o)) => samples(inner)
            .into_iter()
            .find(|s| i.is_match(s) && !o.is_match(s))
            .map_or(GlobAnswer::Unknown, GlobAnswer::Beyond),
        _ => GlobAnswer::Unknown,
    }
}

/// The answer for one pair of globs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GlobAnswer {
    /// Contained.
    Within,
    /// This string is matched by the inner glob only.
    Beyond(String),
    /// Not decided.
    Unknown,
}

/// Lists: every inner pattern within some outer pattern. `Beyond` needs a witness that no
/// outer pattern matches.
fn list_within(
    field: &str,
    inner: &[String],
    outer: &[String],
    within: impl Fn(&str, &str) -> GlobAnswer,
    matches: impl Fn(&str, &str) -> bool,
) -> Containment {
    let mut unknown = None;
    for i in inner {
        let answers: Vec<GlobAnswer> = outer.iter().map(|o| within(i, o)).collect();
        if answers.contains(&GlobAnswer::Within) {
            continue;
        }
        let witness = answers.iter().find_map(|a| match a {
            GlobAnswer::Beyond(s) if !outer.iter().any(|o| matches(s, o)) => Some(s.clone()),
            GlobAnswer::Beyond(_) | GlobAnswer::Within | GlobAnswer::Unknown => None,
        });
        match witness {
            Some(witness) => {
                return Containment::Beyond {
                    field: field.to_owned(),
                    witness: Some(witness),
                };
            }
            None if outer.is_empty() => {
                return Containment::Beyond {
                    field: field.to_owned(),
                    witness: samples(i).into_iter().next(),
                };
            }
            None => {
                unknown.get_or_insert(format!(
                    "`{i}` cannot be compared with `{field}`'s patterns"
                ));
            }
        }
    }
    match unknown {
        Some(why) => Containment::Unknown { why },
        None => Containment::Within,
    }
}

/// Path patterns: relative ones are taken inside the workspace, so `x` is within `/**/x`;
/// `$HOME` and `${HOME}` are the home folder, as `~` (the engine expands them so).
fn path_within(inner: &str, outer: &str) -> GlobAnswer {
    let (inner, outer) = (&*at_home(inner), &*at_home(outer));
    let anchor = |p: &str| {
        if p.starts_with('/') {
            0
        } else if p.starts_with("~/") || p == "~" {
            1
        } else {
            2
        }
    };
    match (anchor(inner), anchor(outer)) {
        (a, b) if a == b => glob_within(inner, outer, true),
        // A workspace path is the root's absolute path, `/`, then the relative path.
        (2, 0) => match outer.strip_prefix("/**/") {
            Some(_) => match glob_within(inner, &outer[1..], true) {
                GlobAnswer::Within => GlobAnswer::Within,
                GlobAnswer::Beyond(_) | GlobAnswer::Unknown => GlobAnswer::Unknown,
            },
            None => GlobAnswer::Unknown,
        },
        _ => GlobAnswer::Unknown,
    }
}

/// `pattern` with a leading `$HOME` or `${HOME}` written `~`.
fn at_home(pattern: &str) -> std::borrow::Cow<'_, str> {
    for variable in ["${HOME}", "$HOME"] {
        if let Some(rest) = pattern.strip_prefix(variable)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return format!("~{rest}").into();
        }
    }
    pattern.into()
}

fn path_matches(text: &str, pattern: &str) -> bool {
    // Only texts sampled from a pattern of the same anchoring are asked about.
    glob_matcher(pattern, true).is_some_and(|m| m.is_match(text))
        || pattern
            .strip_prefix("/**/")
            .and_then(|rest| glob_matcher(rest, true))
            .is_some_and(|m| m.is_match(text))
}

/// A shell pattern's words: `None` when it uses quoting or expansions this comparison does
/// not model.
fn words(pattern: &str) -> Option<Vec<&str>> {
    if pattern.contains(['\'', '"', '\\', '$', '`']) {
        return None;
    }
    Some(pattern.split_whitespace().collect())
}

/// Whether a shell pattern `outer` matches every command `inner` matches: `*` alone matches
/// any words, another word is a glob over one word (`*` crossing `/`). A pattern that names
/// an option `outer` does not name is not within it: an allow rule grants the effects of the
/// options it names, which `*` never does (`git diff --output *` allows what `git diff *`
/// asks about).
pub fn shell_within(inner: &str, outer: &str) -> GlobAnswer {
    if inner == outer {
        return GlobAnswer::Within;
    }
    let (Some(i), Some(o)) = (words(inner), words(outer)) else {
        return GlobAnswer::Unknown;
    };
    let names_more = i
        .iter()
        .any(|word| word.starts_with('-') && !o.contains(word));
    fn go(i: &[&str], o: &[&str]) -> bool {
        match o.split_first() {
            None => i.is_empty(),
            Some((&"*", rest)) => go(i, rest) || (!i.is_empty() && go(&i[1..], o)),
            Some((word, rest)) => match i.split_first() {
                Some((&"*", _)) | None => false,
                Some((first, tail)) => {
                    glob_within(first, word, false) == GlobAnswer::Within && go(tail, rest)
                }
            },
        }
    }
    if go(&i, &o) {
        return if names_more {
            GlobAnswer::Unknown
        } else {
            GlobAnswer::Within
        };
    }
    shell_samples(inner)
        .into_iter()
        .find(|s| !shell_matches(s, outer))
        .map_or(GlobAnswer::Unknown, GlobAnswer::Beyond)
}

/// Command lines a shell pattern matches, simplest first (`*` alone as `x`, then nothing).
pub fn shell_samples(pattern: &str) -> Vec<String> {
    let Some(words) = words(pattern) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for any in ["x", ""] {
        let line: Vec<String> = words
            .iter()
            .filter_map(|w| match *w {
                "*" => (!any.is_empty()).then(|| any.to_owned()),
                other => samples(other).into_iter().next(),
            })
            .collect();
        let line = line.join(" ");
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// Whether a plain command line (words split on spaces) matches a shell pattern as an allow
/// rule reads it.
fn shell_matches(line: &str, pattern: &str) -> bool {
    let Some(o) = words(pattern) else {
        return false;
    };
    let i: Vec<&str> = line.split_whitespace().collect();
    fn go(i: &[&str], o: &[&str]) -> bool {
        match o.split_first() {
            None => i.is_empty(),
            Some((&"*", rest)) => go(i, rest) || (!i.is_empty() && go(&i[1..], o)),
            Some((word, rest)) => match i.split_first() {
                None => false,
                Some((first, tail)) => {
                    glob_matcher(word, false).is_some_and(|m| m.is_match(first)) && go(tail, rest)
                }
            },
        }
    }
    go(&i, &o)
}

/// The strings of a `OneOrMany` value.
fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    match value? {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => None,
    }
}

/// Whether the `outer` argument matcher holds for every value the `inner` one holds for.
/// `samples` are strings to try regular expressions on.
fn argument_within(
    field: &str,
    inner: &Map<String, Value>,
    outer: &Map<String, Value>,
    samples: &[String],
) -> Containment {
    let mut answer = Containment::Within;
    // `reaches_from` changes what `reaches` compares (a glob in a folder, as locations),
    // added or dropped alike.
    if inner.get("reaches_from") != outer.get("reaches_from") {
        return Containment::Unknown {
            why: format!("`reaches_from` on `{field}` changed: what `reaches` compares changed"),
        };
    }
    // Redirection only widens what an allow rule's `shell` matches.
    if inner.get("allow_redirection") == Some(&Value::Bool(true))
        && outer.get("allow_redirection") != Some(&Value::Bool(true))
    {
        return Containment::Redirection {
            field: field.to_owned(),
        };
    }
    for (kind, wanted) in outer {
        let given = inner.get(kind);
        let part = match (kind.as_str(), given) {
            ("allow_redirection", _) => Containment::Within,
            (_, None) => Containment::Unknown {
                why: format!("the `{kind}` matcher on `{field}` is gone"),
            },
            ("glob", Some(given)) => list_within(
                field,
                &strings(Some(given)).unwrap_or_default(),
                &strings(Some(wanted)).unwrap_or_default(),
                |i, o| glob_within(i, o, false),
                |s, o| glob_matcher(o, false).is_some_and(|m| m.is_match(s)),
            ),
            ("path", Some(given)) => list_within(
                field,
                &strings(Some(given)).unwrap_or_default(),
                &strings(Some(wanted)).unwrap_or_default(),
                path_within,
                path_matches,
            ),
            ("shell", Some(given)) => list_within(
                field,
                &strings(Some(given)).unwrap_or_default(),
                &strings(Some(wanted)).unwrap_or_default(),
                shell_within,
                shell_matches,
            ),
            ("regex", Some(given)) => regex_within(
                field,
                &strings(Some(given)).unwrap_or_default(),
                &strings(Some(wanted)).unwrap_or_default(),
                samples,
            ),
            (_, Some(given)) if given == wanted => Containment::Within,
            (_, Some(_)) => Containment::Beyond {
                field: field.to_owned(),
                witness: None,
            },
        };
        answer = answer.and(part);
    }
    answer
}

/// Regular expressions: the same set is contained; otherwise a sample string matched by an
/// inner expression and by no outer one is a witness.
fn regex_within(
    field: &str,
    inner: &[String],
    outer: &[String],
    samples: &[String],
) -> Containment {
    let set = |list: &[String]| {
        let mut sorted = list.to_vec();
        sorted.sort();
        sorted.dedup();
        sorted
    };
    if set(inner).iter().all(|i| outer.contains(i)) {
        return Containment::Within;
    }
    let compile = |list: &[String]| regex::RegexSet::new(list).ok();
    if let (Some(i), Some(o)) = (compile(inner), compile(outer))
        && let Some(witness) = samples.iter().find(|s| i.is_match(s) && !o.is_match(s))
    {
        return Containment::Beyond {
            field: field.to_owned(),
            witness: Some(witness.clone()),
        };
    }
    Containment::Unknown {
        why: format!("the regular expressions on `{field}` cannot be compared"),
    }
}

/// Whether every call the `inner` rule `match` (absent: every call) matches is matched by
/// the `outer` one.
pub fn match_within(
    inner: Option<&Value>,
    outer: Option<&Value>,
    samples: &[String],
) -> Containment {
    let empty = Map::new();
    let outer = match outer.and_then(Value::as_object) {
        None => return Containment::Within,
        Some(map) if map.is_empty() => return Containment::Within,
        Some(map) => map,
    };
    let inner = inner.and_then(Value::as_object).unwrap_or(&empty);
    let mut answer = Containment::Within;
    for (field, wanted) in outer {
        let part = match inner.get(field) {
            None => Containment::Beyond {
                field: field.clone(),
                witness: None,
            },
            Some(given) => argument_within(
                field,
                given.as_object().unwrap_or(&empty),
                wanted.as_object().unwrap_or(&empty),
                samples,
            ),
        };
        answer = answer.and(part);
    }
    // Redirection widens an argument the outer rule does not constrain either.
    for (field, given) in inner {
        if !outer.contains_key(field) && given.get("allow_redirection") == Some(&Value::Bool(true))
        {
            answer = answer.and(Containment::Redirection {
                field: field.clone(),
            });
        }
    }
    answer
}

/// Whether the tool patterns `outer` cover the tool name or glob `inner`.
pub fn tool_within(inner: &str, outer: &[String]) -> bool {
    outer
        .iter()
        .any(|o| glob_within(inner, o, false) == GlobAnswer::Within)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn globs_are_compared_by_what_they_match() {
        for (inner, outer, separator) in [
            ("src/**", "**", true),
            ("src/*.rs", "src/**", true),
            ("**/.env", "**/.env*", true),
            ("a/{b,c}.rs", "a/*.rs", true),
            ("npm", "*", false),
        ] {
            assert_eq!(
                glob_within(inner, outer, separator),
                GlobAnswer::Within,
                "{inner} ⊆ {outer}"
            );
        }
        assert_eq!(
            glob_within("**/.env*", "**/.env", true),
            GlobAnswer::Beyond("a/.envx".into())
        );
        assert_eq!(
            glob_within("**", "src/**", true),
            GlobAnswer::Beyond("a".into())
        );
        assert_eq!(
            glob_within("src/*/x", "src/*", true),
            GlobAnswer::Beyond("src/x/x".into())
        );
    }

    #[test]
    fn shell_patterns_are_compared_word_by_word() {
        assert_eq!(shell_within("npm test", "npm *"), GlobAnswer::Within);
        assert_eq!(
            shell_within("git diff --stat *", "git diff --stat *"),
            GlobAnswer::Within
        );
        assert_eq!(
            shell_within("git log --oneline *", "git * --oneline *"),
            GlobAnswer::Within
        );
        // Naming an option grants its effects, which `*` does not.
        assert_eq!(
            shell_within("git diff --output *", "git diff *"),
            GlobAnswer::Unknown
        );
        assert_eq!(
            shell_within("npm *", "npm test"),
            GlobAnswer::Beyond("npm x".into())
        );
        assert_eq!(
            shell_within("rm -r *", "sleep *"),
            GlobAnswer::Beyond("rm -r x".into())
        );
        assert_eq!(shell_within("echo 'a b'", "echo *"), GlobAnswer::Unknown);
    }

    #[test]
    fn relative_paths_are_within_anywhere_patterns() {
        assert_eq!(path_within("**/.env", "/**/.env"), GlobAnswer::Within);
        assert_eq!(path_within("/**/.env", "**/.env"), GlobAnswer::Unknown);
        assert_eq!(path_within("~/.ssh/**", "~/.ssh/**"), GlobAnswer::Within);
        // `$HOME` is the home folder, not a folder of the workspace.
        assert_ne!(path_within("$HOME/**", "**"), GlobAnswer::Within);
        assert_eq!(
            path_within("${HOME}/.ssh/**", "~/.ssh/**"),
            GlobAnswer::Within
        );
        assert_eq!(
            path_within("~/.ssh/id_rsa", "$HOME/.ssh/**"),
            GlobAnswer::Within
        );
    }

    #[test]
    fn matches_are_compared_argument_by_argument() {
        let narrow = json!({"command": {"shell": ["npm test"]}});
        let wide = json!({"command": {"shell": ["npm *"]}});
        assert_eq!(
            match_within(Some(&narrow), Some(&wide), &[]),
            Containment::Within
        );
        assert!(matches!(
            match_within(Some(&wide), Some(&narrow), &[]),
            Containment::Beyond { witness: Some(w), .. } if w == "npm x"
        ));
        assert_eq!(match_within(Some(&wide), None, &[]), Containment::Within);
        // `reaches_from` dropped (or added) changes what `reaches` means: not comparable.
        let from = json!({"pattern": {"reaches": ["~/private/**"], "reaches_from": "path"}});
        let plain = json!({"pattern": {"reaches": ["~/private/**"]}});
        for (inner, outer) in [(&from, &plain), (&plain, &from)] {
            assert!(matches!(
                match_within(Some(inner), Some(outer), &[]),
                Containment::Unknown { .. }
            ));
        }
        let redirecting = json!({"command": {"shell": ["npm test"], "allow_redirection": true}});
        assert!(matches!(
            match_within(Some(&redirecting), Some(&narrow), &[]),
            Containment::Redirection { .. }
        ));
        let regex_a = json!({"url": {"regex": "^https://a/"}});
        let regex_b = json!({"url": {"regex": "^https://"}});
        assert!(matches!(
            match_within(Some(&regex_b), Some(&regex_a), &["https://b/x".into()]),
            Containment::Beyond { witness: Some(w), .. } if w == "https://b/x"
        ));
        assert!(matches!(
            match_within(Some(&regex_b), Some(&regex_a), &[]),
            Containment::Unknown { .. }
        ));
    }

    fn glob_pattern() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("a"),
                Just("b"),
                Just("/"),
                Just("*"),
                Just("**"),
                Just("?"),
                Just("."),
                Just("{a,b}")
            ],
            1..6,
        )
        .prop_map(|parts| parts.concat())
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![Just("a"), Just("b"), Just("/"), Just(".")],
            0..7,
        )
        .prop_map(|parts| parts.concat())
    }

    fn shell_pattern() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("git"),
                Just("npm"),
                Just("*"),
                Just("-r"),
                Just("t*"),
                Just("test")
            ],
            1..5,
        )
        .prop_map(|words| words.join(" "))
    }

    proptest! {
        // INVARIANT: when the checker says shell pattern A ⊆ B, every command line sampled
        // from A matches B; a witness matches A and not B.
        #[test]
        fn a_shell_pattern_said_to_be_within_another_admits_nothing_more(
            inner in shell_pattern(),
            outer in shell_pattern(),
        ) {
            match shell_within(&inner, &outer) {
                GlobAnswer::Within => {
                    for line in shell_samples(&inner) {
                        prop_assert!(shell_matches(&line, &outer), "{line}: {inner} ⊆ {outer}");
                    }
                }
                GlobAnswer::Beyond(witness) => {
                    prop_assert!(shell_matches(&witness, &inner) && !shell_matches(&witness, &outer));
                }
                GlobAnswer::Unknown => {}
            }
        }

        // INVARIANT: when the checker says A ⊆ B, every string A matches is matched by B.
        #[test]
        fn a_glob_said_to_be_within_another_matches_nothing_the_other_does_not(
            inner in glob_pattern(),
            outer in glob_pattern(),
            texts in proptest::collection::vec(text(), 1..20),
            separator in any::<bool>(),
        ) {
            let (Some(i), Some(o)) = (glob_matcher(&inner, separator), glob_matcher(&outer, separator)) else {
                return Ok(());
            };
            match glob_within(&inner, &outer, separator) {
                GlobAnswer::Within => {
                    for text in texts.iter().cloned().chain(samples(&inner)) {
                        prop_assert!(!i.is_match(&text) || o.is_match(&text), "{text}: {inner} ⊆ {outer}");
                    }
                }
                GlobAnswer::Beyond(witness) => {
                    prop_assert!(i.is_match(&witness) && !o.is_match(&witness));
                }
                GlobAnswer::Unknown => {}
            }
        }
    }
}
