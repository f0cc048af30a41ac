//! Compiled glob lists: the first pattern of a list that a text matches.
//!
//! [`globset`] is the reference for what a glob means, and it parses and validates every
//! pattern. Building its automaton, though, compiles a regex (and often an Aho-Corasick
//! automaton) per list, which costs tens of microseconds: most of the cost of checking a
//! rule's `examples` at load time. So a list whose patterns are all *plain* is matched
//! directly instead, without building anything.
//!
//! A plain pattern is made of literal characters, `*`, `?` and `**` as a whole path
//! component (`**/x`, `x/**`, `x/**/y`, `**`), with no two `**` components in a row and no
//! empty component other than a leading `/`. No classes, alternations or escapes, and only
//! case-sensitive matching. Anything else is built by `globset`. A plain pattern is matched
//! exactly as `globset` translates it into a bytes regex: `*` is `[^/]*` with
//! `literal_separator` and `.*` without, `?` is `[^/]` or `.` (one byte), `**/` is
//! `(?:/?|.*/)`, `/**/` is `(?:/|/.*/)`, `/**` is `/.*` and `**` alone is `.*`, where `.`
//! is any byte, a newline included. A property test compares both on random patterns and
//! texts.

use std::sync::OnceLock;

use globset::{Candidate, GlobSet};

use globset::{GlobBuilder, GlobSetBuilder};

/// A compiled list of globs.
#[derive(Debug, Clone)]
pub(crate) enum GlobList {
    /// Every pattern is plain: matched directly, in order, except texts whose last component
    /// is `..` (see [`PlainList`]).
    Plain(PlainList),
    /// Built by `globset`.
    Set(GlobSet),
}

/// Plain globs, and the `globset` set of the same patterns for the one kind of text on which
/// `globset` departs from its own regexes: one whose file name is `..`. `globset` gives such
/// a text no file name, so the patterns it matches by file name or extension (`*.`, say)
/// never match it although their regex would. That set is built the first time such a text
/// is asked about, so the answer is always `globset`'s.
#[derive(Debug, Clone)]
pub(crate) struct PlainList {
    globs: Box<[PlainGlob]>,
    patterns: Box<[String]>,
    literal_separator: bool,
    set: OnceLock<Result<GlobSet, String>>,
}

impl PlainList {
    /// The `globset` set, for a text whose file name is `..`, or `None` for any other text.
    /// A set that cannot be built matches nothing (plain patterns are far below its limits).
    fn set_for(&self, text: &str) -> Option<Option<&GlobSet>> {
        (text == ".." || text.ends_with("/..")).then(|| {
            self.set
                .get_or_init(|| {
                    build_parsed_glob_set(&self.patterns, self.literal_separator, false)
                })
                .as_ref()
                .ok()
        })
    }
}

impl GlobList {
    /// Compiles `patterns`, which already parse as globs (see [`parse_globs`]).
    ///
    /// # Errors
    /// Why `globset` cannot build the automaton (a size limit).
    pub(crate) fn build(
        patterns: &[String],
        literal_separator: bool,
        case_insensitive: bool,
    ) -> Result<Self, String> {
        if !case_insensitive
            && let Some(globs) = patterns
                .iter()
                .map(|pattern| PlainGlob::parse(pattern, literal_separator))
                .collect::<Option<Box<[_]>>>()
        {
            return Ok(Self::Plain(PlainList {
                globs,
                patterns: patterns.into(),
                literal_separator,
                set: OnceLock::new(),
            }));
        }
        build_parsed_glob_set(patterns, literal_separator, case_insensitive).map(Self::Set)
    }

    /// Whether some pattern matches `text`.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        match self {
            Self::Plain(list) => match list.set_for(text) {
                Some(set) => set.is_some_and(|set| set.is_match(text)),
                None => list.globs.iter().any(|glob| glob.is_match(text.as_bytes())),
            },
            Self::Set(set) => set.is_match(text),
        }
    }

    /// The first pattern (by index in the list) that matches `text`.
    pub(crate) fn first_match(&self, text: &str) -> Option<usize> {
        match self {
            Self::Plain(list) => match list.set_for(text) {
                Some(set) => set.and_then(|set| set.matches(text).into_iter().min()),
                None => list
                    .globs
                    .iter()
                    .position(|glob| glob.is_match(text.as_bytes())),
            },
            Self::Set(set) => {
                if set.is_empty() {
                    return None;
                }
                let candidate = Candidate::new(text);
                // Most texts match no pattern of most rules: ask the cheap question first.
                if !set.is_match_candidate(&candidate) {
                    return None;
                }
                set.matches_candidate(&candidate).into_iter().min()
            }
        }
    }
}

/// Which bytes one step of a plain glob admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Byte(u8),
    /// Any byte but `/` (`[^/]`).
    NotSlash,
    /// Any byte (`.`: `globset` lets it match a newline).
    Any,
}

impl Class {
    fn admits(self, byte: u8) -> bool {
        match self {
            Self::Byte(expected) => byte == expected,
            Self::NotSlash => byte != b'/',
            Self::Any => true,
        }
    }
}

/// One step of the automaton.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// One byte of the class.
    Once(Class),
    /// Any number of bytes of the class.
    Repeat(Class),
    /// Reads nothing: goes on to the next step, or skips to a later one (an optional
    /// group: the steps in between are taken whole or not at all).
    Split { skip_to: u8 },
}

/// A plain glob as a sequence of steps, run as a nondeterministic automaton whose states
/// (one per step, plus the accepting one) fit in a `u64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlainGlob {
    steps: Box<[Step]>,
}

/// States are bits of a `u64`: the accepting state is bit `steps.len()`.
const MAX_STEPS: usize = 63;

impl PlainGlob {
    /// The plain form of `pattern`, or `None` when it is not plain (see the module docs) or
    /// too long to run as a `u64` automaton.
    pub(crate) fn parse(pattern: &str, literal_separator: bool) -> Option<Self> {
        if pattern.is_empty()
            || pattern
                .bytes()
                .any(|byte| matches!(byte, b'[' | b']' | b'{' | b'}' | b'\\'))
        {
            return None;
        }
        let one = if literal_separator {
            Class::NotSlash
        } else {
            Class::Any
        };
        let mut steps = Vec::with_capacity(pattern.len());
        if pattern == "**" {
            steps.push(Step::Repeat(Class::Any));
            return Some(Self {
                steps: steps.into(),
            });
        }
        let components: Vec<&str> = pattern.split('/').collect();
        let last = components.len() - 1;
        // Whether the `/` before the current component was already taken by a `**/`.
        let mut separator_taken = false;
        let mut previous_recursive = false;
        for (index, component) in components.iter().enumerate() {
            if index > 0 && !separator_taken {
                steps.push(Step::Once(Class::Byte(b'/')));
            }
            separator_taken = false;
            if *component == "**" {
                if previous_recursive {
                    return None;
                }
                previous_recursive = true;
                if index == last {
                    // `/**`: the `/` is pushed above; then anything.
                    steps.push(Step::Repeat(Class::Any));
                } else {
                    // `**/` at the start, or the `**/` of `/**/`: optionally, anything
                    // ending in `/`.
                    let after = u8::try_from(steps.len() + 3).ok()?;
                    steps.push(Step::Split { skip_to: after });
                    steps.push(Step::Repeat(Class::Any));
                    steps.push(Step::Once(Class::Byte(b'/')));
                    separator_taken = true;
                }
                continue;
            }
            previous_recursive = false;
            // Only a leading `/` may leave an empty component.
            if component.is_empty() && index != 0 {
                return None;
            }
            if component.contains("**") {
                return None;
            }
            for byte in component.bytes() {
                steps.push(match byte {
                    b'*' => Step::Repeat(one),
                    b'?' => Step::Once(one),
                    other => Step::Once(Class::Byte(other)),
                });
            }
        }
        (steps.len() <= MAX_STEPS).then(|| Self {
            steps: steps.into(),
        })
    }

    /// Adds the states reachable without reading (steps only skip forwards, so one pass).
    fn closure(&self, mut states: u64) -> u64 {
        for (index, step) in self.steps.iter().enumerate() {
            if states & (1 << index) != 0 {
                match step {
                    Step::Once(_) => {}
                    Step::Repeat(_) => states |= 1 << (index + 1),
                    Step::Split { skip_to } => states |= (1 << (index + 1)) | (1 << skip_to),
                }
            }
        }
        states
    }

    /// Whether the whole of `text` matches.
    pub(crate) fn is_match(&self, text: &[u8]) -> bool {
        let accepting = 1u64 << self.steps.len();
        let mut states = self.closure(1);
        for &byte in text {
            let mut next = 0u64;
            let mut live = states & !accepting;
            while live != 0 {
                let index = live.trailing_zeros() as usize;
                live &= live - 1;
                match self.steps.get(index) {
                    Some(Step::Once(class)) if class.admits(byte) => next |= 1 << (index + 1),
                    Some(Step::Repeat(class)) if class.admits(byte) => next |= 1 << index,
                    _ => {}
                }
            }
            if next == 0 {
                return false;
            }
            states = self.closure(next);
        }
        states & accepting != 0
    }
}

/// A pattern that could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobSyntaxError {
    /// Byte offset in the pattern, when it can be told.
    pub offset: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// Parses globs (cheap: no automaton is built); errors carry each pattern's index and the
/// best offset.
pub(crate) fn parse_globs(
    patterns: &[String],
    literal_separator: bool,
    case_insensitive: bool,
) -> Result<Vec<globset::Glob>, Vec<(usize, GlobSyntaxError)>> {
    let mut globs = Vec::with_capacity(patterns.len());
    let mut errors = Vec::new();
    for (index, pattern) in patterns.iter().enumerate() {
        match GlobBuilder::new(pattern)
            .literal_separator(literal_separator)
            .case_insensitive(case_insensitive)
            .backslash_escape(true)
            .build()
        {
            Ok(glob) => globs.push(glob),
            Err(err) => errors.push((
                index,
                GlobSyntaxError {
                    offset: glob_error_offset(pattern, err.kind()),
                    message: err.kind().to_string(),
                },
            )),
        }
    }
    if errors.is_empty() {
        Ok(globs)
    } else {
        Err(errors)
    }
}

/// Compiles globs into a set; errors carry each pattern's index and the best offset.
pub(crate) fn build_glob_set(
    patterns: &[String],
    literal_separator: bool,
    case_insensitive: bool,
) -> Result<GlobSet, Vec<(usize, GlobSyntaxError)>> {
    let mut builder = GlobSetBuilder::new();
    for glob in parse_globs(patterns, literal_separator, case_insensitive)? {
        builder.add(glob);
    }
    builder.build().map_err(|err| {
        vec![(
            0,
            GlobSyntaxError {
                offset: None,
                message: err.kind().to_string(),
            },
        )]
    })
}

/// Builds the set of globs that already parse (see [`parse_globs`]); the error says why the
/// automaton cannot be built (a size limit), which no one pattern is blamed for.
pub(crate) fn build_parsed_glob_set(
    patterns: &[String],
    literal_separator: bool,
    case_insensitive: bool,
) -> Result<GlobSet, String> {
    build_glob_set(patterns, literal_separator, case_insensitive).map_err(|errors| {
        errors.into_iter().next().map_or_else(
            || "the glob set cannot be built".to_owned(),
            |(_, e)| e.message,
        )
    })
}

/// The best offset for a glob error: `globset` errors carry none, so find the construct.
pub(crate) fn glob_error_offset(pattern: &str, kind: &globset::ErrorKind) -> Option<usize> {
    use globset::ErrorKind;
    match kind {
        ErrorKind::UnclosedClass => unclosed_class(pattern),
        ErrorKind::InvalidRange(start, end) => pattern.find(&format!("{start}-{end}")),
        ErrorKind::UnopenedAlternates => alternates(pattern).0,
        ErrorKind::UnclosedAlternates | ErrorKind::TooManyNestedAlternates => alternates(pattern).1,
        ErrorKind::DanglingEscape => pattern.len().checked_sub(1),
        _ => None,
    }
}

/// The offset of the `[` of an unclosed character class.
fn unclosed_class(pattern: &str) -> Option<usize> {
    let mut chars = pattern.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' => {
                // `!` or `^` negates; a `]` right after the opening (or negation) is literal.
                if matches!(chars.peek(), Some((_, '!' | '^'))) {
                    chars.next();
                }
                if matches!(chars.peek(), Some((_, ']'))) {
                    chars.next();
                }
                if !chars.by_ref().any(|(_, c)| c == ']') {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The offsets of the first unopened `}` and of the last unclosed `{`.
fn alternates(pattern: &str) -> (Option<usize>, Option<usize>) {
    let mut open: Vec<usize> = Vec::new();
    let mut unopened = None;
    let mut chars = pattern.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '{' => open.push(i),
            '}' if open.pop().is_none() && unopened.is_none() => unopened = Some(i),
            _ => {}
        }
    }
    (unopened, open.last().copied())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(pattern: &str, literal_separator: bool) -> Option<globset::GlobMatcher> {
        globset::GlobBuilder::new(pattern)
            .literal_separator(literal_separator)
            .backslash_escape(true)
            .build()
            .ok()
            .map(|glob| glob.compile_matcher())
    }

    #[test]
    fn plain_patterns_are_recognised() {
        for pattern in [
            "**",
            "**/.env",
            "src/**",
            "src/**/*.rs",
            "**/gen1/*.rs",
            "/srv/**",
            "/**/x",
            "*.r1",
            "a?c",
            "é/*",
        ] {
            assert!(PlainGlob::parse(pattern, true).is_some(), "{pattern}");
        }
        for pattern in [
            "", "[ab]", "{a,b}", "\\*", "a**", "**a", "***", "**/**", "a/**/**", "a/", "a//b",
        ] {
            assert!(PlainGlob::parse(pattern, true).is_none(), "{pattern}");
        }
        let long = "a".repeat(MAX_STEPS + 1);
        assert!(PlainGlob::parse(&long, true).is_none());
        assert!(PlainGlob::parse(&long[1..], true).is_some());
    }

    #[test]
    fn matches_like_the_reference_on_examples() {
        let table: &[(&str, &str, bool)] = &[
            ("**/.env", ".env", true),
            ("**/.env", "/.env", true),
            ("**/.env", "a/b/.env", true),
            ("**/.env", "a/b/.envrc", false),
            ("**/.env", "/ws.env", false),
            ("**/.env", "ws.env", false),
            ("a/**/b", "a/xb", false),
            ("src/**", "src", false),
            ("src/**", "src/", true),
            ("src/**", "src/a/b", true),
            ("a/**/b", "a/b", true),
            ("a/**/b", "a/x/y/b", true),
            ("a/**/b", "ab", false),
            ("*.rs", "a/b.rs", false),
            ("**", "x\ny", true),
            ("*", "a\nb", true),
            ("a*b", "a\nb", true),
        ];
        for &(pattern, text, expected) in table {
            let plain = PlainGlob::parse(pattern, true).unwrap();
            assert_eq!(
                plain.is_match(text.as_bytes()),
                expected,
                "{pattern} on {text:?}"
            );
            let reference = reference(pattern, true).unwrap();
            assert_eq!(
                reference.is_match(text),
                expected,
                "reference: {pattern} on {text:?}"
            );
        }
    }

    #[test]
    fn a_list_of_plain_patterns_is_not_built_by_globset() {
        let patterns = vec!["src/**".to_owned(), "**/gen/*.rs".to_owned()];
        let list = GlobList::build(&patterns, true, false).unwrap();
        assert!(matches!(list, GlobList::Plain(_)));
        assert_eq!(list.first_match("x/gen/a.rs"), Some(1));
        assert_eq!(list.first_match("src/gen/a.rs"), Some(0));
        assert_eq!(list.first_match("docs/a.md"), None);
        // A text whose file name is `..` gets `globset`'s answer, which differs from the
        // pattern's regex for patterns it matches by extension.
        let dot = GlobList::build(&["*.".to_owned()], true, false).unwrap();
        assert!(PlainGlob::parse("*.", true).unwrap().is_match(b".."));
        assert_eq!(dot.first_match(".."), None);
        assert!(!dot.is_match("a/.."));
        assert_eq!(dot.first_match("a."), Some(0));
        // Case-insensitive lists and lists with any other pattern are built by globset.
        assert!(matches!(
            GlobList::build(&patterns, true, true).unwrap(),
            GlobList::Set(_)
        ));
        let mixed = vec!["src/**".to_owned(), "*.{rs,md}".to_owned()];
        assert!(matches!(
            GlobList::build(&mixed, true, false).unwrap(),
            GlobList::Set(_)
        ));
    }

    /// Patterns from pieces that make plain and non-plain globs alike, and texts from the
    /// bytes those patterns care about.
    fn pattern() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop::sample::select(vec![
                "a", "b", ".", "/", "*", "**", "**/", "/**", "?", "é", "-",
            ]),
            1..10,
        )
        .prop_map(|pieces| pieces.concat())
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop::sample::select(vec!["a", "b", ".", "/", "é", "\n", "-", "ab/", ".."]),
            0..12,
        )
        .prop_map(|pieces| pieces.concat())
    }

    /// A text shaped by `pattern`: each wildcard replaced by a pick from what it may or may
    /// not match, so that matches and near misses are both common.
    fn instantiate(pattern: &str, picks: &[u8]) -> String {
        let mut picks = picks.iter().cycle();
        let mut pick = |options: &[&'static str]| {
            let index = usize::from(*picks.next().unwrap_or(&0)) % options.len();
            options[index]
        };
        let mut text = String::new();
        let mut rest = pattern;
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix("**") {
                text.push_str(pick(&["", "x/", "x/y/", "x", "/", "x\ny/"]));
                rest = after;
                continue;
            }
            match c {
                '*' => text.push_str(pick(&["", "b", "b.c", "/", "b/c"])),
                '?' => text.push_str(pick(&["a", "/", "é", ""])),
                '/' => text.push_str(pick(&["/", "/", "/", "", "//"])),
                other => text.push(other),
            }
            rest = &rest[c.len_utf8()..];
        }
        text
    }

    /// When `pattern` is plain, it matches each text exactly when `globset` says it does.
    fn agrees_with_globset(
        pattern: &str,
        literal_separator: bool,
        texts: impl IntoIterator<Item = String>,
    ) -> Result<(), TestCaseError> {
        let (Some(plain), Some(reference)) = (
            PlainGlob::parse(pattern, literal_separator),
            reference(pattern, literal_separator),
        ) else {
            return Ok(());
        };
        for text in texts {
            prop_assert_eq!(
                plain.is_match(text.as_bytes()),
                reference.is_match(&text),
                "pattern {:?} on {:?}",
                pattern,
                text
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn plain_globs_match_texts_shaped_like_them_as_globset_does(
            pattern in pattern(),
            picks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..12), 8),
            literal_separator in any::<bool>(),
        ) {
            let texts = picks.iter().map(|picks| instantiate(&pattern, picks));
            agrees_with_globset(&pattern, literal_separator, texts)?;
        }

        #[test]
        fn plain_globs_match_exactly_as_globset(
            pattern in pattern(),
            texts in proptest::collection::vec(text(), 1..8),
            literal_separator in any::<bool>(),
        ) {
            agrees_with_globset(&pattern, literal_separator, texts)?;
        }

        #[test]
        fn a_plain_list_finds_the_first_pattern_globset_finds(
            patterns in proptest::collection::vec(pattern(), 1..5),
            texts in proptest::collection::vec(text(), 1..8),
        ) {
            let Ok(set) = build_parsed_glob_set(&patterns, true, false) else {
                return Ok(());
            };
            let list = GlobList::build(&patterns, true, false).unwrap();
            for text in &texts {
                prop_assert_eq!(
                    list.first_match(text),
                    set.matches(text).into_iter().min(),
                    "patterns {:?} on {:?}", patterns, text
                );
                prop_assert_eq!(list.is_match(text), set.is_match(text));
            }
        }
    }
}
