//! What a `for` loop over words written in the line gives its variable.
//!
//! `for f in src/*.rs; do wc -l "$f"; done` reads the files `src/*.rs` matches, and is
//! judged as `wc -l src/*.rs`. While the walker is in the body of such a loop, a word that
//! refers to the loop variable is read with the value written in the loop's header, and the
//! body is walked once per value:
//! - `"$f"` or `"${f}"` as a whole word is the header's word itself (globs, `~` and quotes
//!   included: each match is one value);
//! - inside a double-quoted word (`"src/$f.bak"`), a value that is a literal is put in place;
//! - unquoted (`wc -l $f`), a value that is a plain literal (no blank, no glob) is put in
//!   place, and a glob as a whole word is that glob, whose matches the shell splits and
//!   globs again ([`Expansion::LoopGlob`]: a match with a blank or a glob character asks).
//!
//! Anything else keeps the reference as it is: a value only known when the line runs.
//!
//! The value holds only while nothing else can set the variable. A loop binds its variable
//! when every value is written out — no expansion but globs, `~` and quotes (`$x`, `$(…)`,
//! `{a,b}` make the values unknown) — there are at most [`MAX_VALUES`], and the loops
//! around it multiply to at most [`MAX_WALKS`] walks of a body. Once the line is walked,
//! [`bindings_hold`] checks that nothing in it can set a bound variable (or `IFS`, which
//! splits unquoted values): the name appears only as a loop's variable and in plain
//! references (`$f`, `${f}`) — never as a word (`read f`, `declare -n r=f`), an
//! assignment, an arithmetic operand (`(( f++ ))`), an option's attached value
//! (`printf -vf …`) or a parameter operation (`${f:=x}`); one loop sets it (`IFS`: none);
//! no command sets a variable whose name the line computes (`read "$x"`, `printf -v "$x"`,
//! `declare "$x=…"`) or runs text the line does not show (`source`, `.`, `enable`); and
//! nothing evaluates text (arithmetic, `[[ ]]`, `${!x:=…}`: they assign by computed names).
//! When the check fails the line is walked again without bindings.

use super::word::is_plain;
use super::{Expansion, Script, SimpleCommand, Word, WordKind, is_variable_name, name_length};

/// The most values a loop may bind; a longer list is left unknown.
pub(super) const MAX_VALUES: usize = 16;

/// The most walks of one body that nested bound loops may cause.
pub(super) const MAX_WALKS: usize = 64;

/// The loops whose bodies are being walked, and what was substituted.
#[derive(Debug, Default)]
pub(super) struct Loops {
    /// Off when the line is walked again because a binding did not hold.
    pub(super) disabled: bool,
    /// Innermost last.
    bound: Vec<Binding>,
    /// Names whose value was put in place of a reference.
    pub(super) used: Vec<String>,
    /// How many loop bodies, pipelines, `&` lists, coprocesses and process substitutions the
    /// walker is in.
    pub(super) overlapping: usize,
}

/// A loop variable in one walk of the loop's body.
#[derive(Debug)]
pub(super) struct Binding {
    name: String,
    /// Its value in this walk; `None` when the loop's values are unknown.
    value: Option<String>,
    /// How many walks the loop makes of its body.
    walks: usize,
}

impl Loops {
    /// The values a `for` loop over `name` binds it to, one walk of the body each, or `None`
    /// when they are not all written out (or there are too many), or the shell itself sets
    /// the variable.
    pub(super) fn values(&self, name: &str, values: Option<&[String]>) -> Option<Vec<String>> {
        let values = values?;
        if shell_sets(name) {
            return None;
        }
        let walks: usize = self.bound.iter().map(|b| b.walks).product();
        let fits = !values.is_empty()
            && values.len() <= MAX_VALUES
            && walks.saturating_mul(values.len()) <= MAX_WALKS;
        (!self.disabled && fits && values.iter().all(|v| written_out(v))).then(|| values.to_vec())
    }

    /// Enters one walk of the body of a loop that makes `walks` of them.
    pub(super) fn enter(&mut self, name: &str, value: Option<String>, walks: usize) {
        self.bound.push(Binding {
            name: name.to_owned(),
            value,
            walks,
        });
    }

    /// Leaves the walk entered last.
    pub(super) fn leave(&mut self) {
        self.bound.pop();
    }

    /// Hides every binding (a script run by another shell does not see the loop's
    /// variables); returns them for [`Loops::restore`].
    pub(super) fn hide(&mut self) -> Vec<Binding> {
        std::mem::take(&mut self.bound)
    }

    pub(super) fn restore(&mut self, bound: Vec<Binding>) {
        self.bound = bound;
    }

    fn lookup(&self, name: &str) -> Option<&Option<String>> {
        self.bound
            .iter()
            .rev()
            .find(|b| b.name == name)
            .map(|b| &b.value)
    }

    fn note_used(&mut self, name: &str) {
        if !self.used.iter().any(|used| used == name) {
            self.used.push(name.to_owned());
        }
    }

    /// The glob a bound variable's value is, for `raw` an unquoted `$NAME` or `${NAME}`
    /// alone (see [`Expansion::LoopGlob`]); `None` for any other word or value.
    pub(super) fn unquoted_glob(&mut self, raw: &str) -> Option<String> {
        let inner = raw.strip_prefix('$')?;
        let name = inner
            .strip_prefix('{')
            .and_then(|braced| braced.strip_suffix('}'))
            .unwrap_or(inner);
        if !is_variable_name(name) {
            return None;
        }
        let Some(Some(value)) = self.lookup(name) else {
            return None;
        };
        let value = value.clone();
        let mut found = super::word::Found::default();
        let parts = super::word::split_word(&value, &mut found).ok()?;
        if super::word::word_from_parts(&value, &parts).kind != WordKind::Dynamic(Expansion::Glob) {
            return None;
        }
        self.note_used(name);
        self.note_used("IFS");
        Some(value)
    }

    /// `raw` with the references to bound variables replaced by their values, or `None`
    /// when nothing was replaced (or the word is not one this module reads).
    pub(super) fn substitute(&mut self, raw: &str) -> Option<String> {
        if self.bound.is_empty() || !raw.contains('$') {
            return None;
        }
        if let Some(name) = whole_quoted_reference(raw)
            && let Some(Some(value)) = self.lookup(name)
        {
            let value = value.clone();
            self.note_used(name);
            return Some(value);
        }
        let mut out = String::with_capacity(raw.len());
        let mut replaced = Vec::new();
        let mut unquoted = false;
        let mut quote = Quote::None;
        let mut chars = raw.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            match (quote, c) {
                (Quote::Single, '\'') => quote = Quote::None,
                (Quote::Single, _) => {}
                (Quote::None, '\'') => quote = Quote::Single,
                (Quote::None, '"') => quote = Quote::Double,
                (Quote::Double, '"') => quote = Quote::None,
                (Quote::None | Quote::Double, '`') => return None,
                (Quote::None | Quote::Double, '\\') => {
                    out.push(c);
                    if let Some((_, next)) = chars.next() {
                        out.push(next);
                    }
                    continue;
                }
                (Quote::None | Quote::Double, '$') => {
                    let rest = &raw[at + 1..];
                    let (name, length) = reference(rest)?;
                    let Some(name) = name else {
                        // `$1`, `$?`, `$$`: left as it is.
                        out.push(c);
                        continue;
                    };
                    let Some(Some(value)) = self.lookup(name) else {
                        out.push(c);
                        continue;
                    };
                    let literal = literal_value(value)?;
                    match quote {
                        Quote::Double => out.push_str(&double_quoted_escape(&literal)),
                        Quote::None | Quote::Single => {
                            if !is_plain(value) {
                                return None;
                            }
                            unquoted = true;
                            out.push_str(&literal);
                        }
                    }
                    replaced.push(name.to_owned());
                    for _ in 0..length {
                        chars.next();
                    }
                    continue;
                }
                _ => {}
            }
            out.push(c);
        }
        if replaced.is_empty() {
            return None;
        }
        for name in &replaced {
            self.note_used(name);
        }
        if unquoted {
            self.note_used("IFS");
        }
        Some(out)
    }
}

#[derive(Clone, Copy)]
enum Quote {
    None,
    Single,
    Double,
}

/// After a `$`: `(Some(name), chars)` for `NAME` or `{NAME}`, `(None, 0)` for anything
/// that is not a name (`$1`, `$?`, a lone `$`); `None` for the forms this module does not
/// read (`${x:-…}`, `${#x}`, `$(…)`, `$'…'`, `$"…"`).
fn reference(rest: &str) -> Option<(Option<&str>, usize)> {
    let name_length = |text: &str| {
        let starts = text
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if starts { name_length(text) } else { 0 }
    };
    if let Some(braced) = rest.strip_prefix('{') {
        let length = name_length(braced);
        return (length > 0 && braced[length..].starts_with('}'))
            .then(|| (Some(&braced[..length]), length + 2));
    }
    if rest.starts_with(['(', '\'', '"']) {
        return None;
    }
    let length = name_length(rest);
    if length == 0 {
        return Some((None, 0));
    }
    // zsh reads a modifier or subscript written after the name (`$f:h`, `$f[1,2]`).
    if super::word::zsh_modified(&rest[length..]) {
        return None;
    }
    Some((Some(&rest[..length]), length))
}

/// `"$NAME"` or `"${NAME}"` as a whole word: its name.
fn whole_quoted_reference(raw: &str) -> Option<&str> {
    let inner = raw.strip_prefix("\"$")?.strip_suffix('"')?;
    let name = inner
        .strip_prefix('{')
        .and_then(|braced| braced.strip_suffix('}'))
        .unwrap_or(inner);
    is_variable_name(name).then_some(name)
}

/// A header word is written out when it has no expansion but globs, `~` and quotes.
fn written_out(raw: &str) -> bool {
    !raw.contains(['$', '`', '{', '}', '(', ')'])
}

/// Whether the shell sets the variable itself: bash's (all capitals: `REPLY` by `read`,
/// `OPTARG`, `BASH_REMATCH`), `_` (the last argument of the command before), and zsh's
/// lower-case ones.
fn shell_sets(name: &str) -> bool {
    const ZSH: &[&str] = &[
        "reply",
        "match",
        "mbegin",
        "mend",
        "argv",
        "status",
        "pipestatus",
        "path",
        "cdpath",
        "fpath",
        "manpath",
        "mailpath",
        "module_path",
        "psvar",
        "signals",
        "watch",
        "fignore",
        "histchars",
        "prompt",
        "options",
        "parameters",
    ];
    name.starts_with('_') || !name.chars().any(|c| c.is_ascii_lowercase()) || ZSH.contains(&name)
}

/// The value of a header word when it is a literal (no glob, no `~`).
fn literal_value(raw: &str) -> Option<String> {
    if is_plain(raw) {
        return Some(raw.to_owned());
    }
    let mut found = super::word::Found::default();
    let parts = super::word::split_word(raw, &mut found).ok()?;
    match super::word::word_from_parts(raw, &parts).kind {
        WordKind::Literal(value) => Some(value),
        WordKind::Dynamic(_) | WordKind::Opaque(_) => None,
    }
}

/// `text` escaped for use inside double quotes.
fn double_quoted_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '"' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Programs that set a variable named by an argument.
const ASSIGNERS: &[&str] = &[
    "read",
    "printf",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "mapfile",
    "readarray",
    "getopts",
    "unset",
    "let",
    "wait",
];

/// Programs that run text the line does not show, in the same shell.
const SOURCERS: &[&str] = &["source", ".", "enable"];

/// Whether nothing in `line` (walked into `script`) can set a variable in `names`; see the
/// module docs.
pub(super) fn bindings_hold(line: &str, script: &Script, names: &[String]) -> bool {
    // One loop sets each bound name (a second one may set it to what it cannot know), and
    // none sets `IFS`.
    let loops_set = |name: &String| for_headers(line, name) > usize::from(name != "IFS");
    let evaluates = !script.constructs.is_empty()
        || script.commands.iter().any(|command| {
            command
                .words
                .iter()
                .any(|w| matches!(w.kind, WordKind::Opaque(_)))
                || command
                    .assignments
                    .iter()
                    .any(|a| matches!(a.value.kind, WordKind::Opaque(_)))
        });
    !evaluates
        && names
            .iter()
            .all(|name| !mentions(line, name, false) && !loops_set(name))
        && script
            .commands
            .iter()
            .all(|command| !sets_variables(command, names))
}

/// Whether `command` may set one of `names`: by an assignment, or as a builtin that sets
/// the variable an argument names (computed at run time, or spelled in a way the line's
/// text does not show, as `$'\x66'`).
fn sets_variables(command: &SimpleCommand, names: &[String]) -> bool {
    if command
        .assignments
        .iter()
        .any(|a| names.iter().any(|n| assigned_name(&a.name) == n))
    {
        return true;
    }
    let Some(program) = command.command_word().and_then(|w| w.literal()) else {
        return false;
    };
    if SOURCERS.contains(&program) {
        return true;
    }
    // `test -v 'a[…]'` evaluates the subscript, which may assign.
    if matches!(program, "test" | "[") && command.words.iter().any(|w| w.literal() == Some("-v")) {
        return true;
    }
    if !ASSIGNERS.contains(&program) {
        return false;
    }
    let arguments = &command.words[1..];
    let arguments = if program == "printf" {
        printf_options(arguments)
    } else {
        arguments
    };
    arguments.iter().any(|word| match word.literal() {
        Some(value) => names.iter().any(|name| mentions(value, name, true)),
        None => !names_a_literal_variable(&word.raw),
    })
}

/// The words before `printf`'s format: only `-v NAME` there sets a variable.
fn printf_options(words: &[Word]) -> &[Word] {
    let mut end = 0;
    while let Some(word) = words.get(end) {
        match word.literal() {
            Some("--") => break,
            Some("-v") => end += 2,
            Some(option) if option.starts_with('-') => end += 1,
            Some(_) => break,
            // Unknown until it runs: it may be `-v NAME`.
            None => {
                end += 1;
                break;
            }
        }
    }
    &words[..end.min(words.len())]
}

/// `NAME` of `NAME[…]`.
fn assigned_name(name: &str) -> &str {
    name.split('[').next().unwrap_or(name)
}

/// `NAME=…` or `NAME+=…` whose value alone is expanded: the variable it sets is written out.
fn names_a_literal_variable(raw: &str) -> bool {
    let length = name_length(raw);
    length > 0
        && !raw.starts_with(|c: char| c.is_ascii_digit())
        && (raw[length..].starts_with('=') || raw[length..].starts_with("+="))
}

/// Whether `text` names `name` other than in a plain reference (`$name`, `${name}`) or as
/// the variable of a `for` loop: as a word, an assignment, an arithmetic operand or a
/// parameter operation — and, with `clusters` (for the arguments of a builtin that sets
/// variables), as the value attached to an option (`printf -vname`, `read -raname`).
fn mentions(text: &str, name: &str, clusters: bool) -> bool {
    runs(text).any(|(before, run, after)| {
        if run == name {
            // `-name` is an option letter; `--name` may decrement it in arithmetic.
            let plain = before.ends_with('$')
                || (before.ends_with("${") && after.starts_with('}'))
                || (before.ends_with('-') && !before.ends_with("--"))
                || is_for_header(before);
            !plain
        } else {
            clusters && run.ends_with(name) && before.ends_with('-')
        }
    })
}

/// How many `for` loops over `name` the text holds.
fn for_headers(text: &str, name: &str) -> usize {
    runs(text)
        .filter(|(before, run, _)| *run == name && is_for_header(before))
        .count()
}

/// Each run of name characters in `text`, with the text before and after it.
fn runs(text: &str) -> impl Iterator<Item = (&str, &str, &str)> {
    let is_name_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = text.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        while start < bytes.len() && !is_name_byte(bytes[start]) {
            start += 1;
        }
        if start == bytes.len() {
            return None;
        }
        let end = bytes[start..]
            .iter()
            .position(|&b| !is_name_byte(b))
            .map_or(bytes.len(), |length| start + length);
        let found = (&text[..start], &text[start..end], &text[end..]);
        start = end;
        Some(found)
    })
}

/// Whether the text before a name ends in the keyword `for` at a command's start.
fn is_for_header(before: &str) -> bool {
    let Some(keyword) = before.trim_end_matches([' ', '\t']).strip_suffix("for") else {
        return false;
    };
    if before.len() == keyword.len() + 3 {
        return false; // no blank between `for` and the name
    }
    let keyword = keyword.trim_end_matches([' ', '\t']);
    keyword.is_empty()
        || keyword.ends_with([';', '&', '|', '(', '{', '\n', '!', '`'])
        || ["do", "then", "else", "elif"].iter().any(|w| {
            keyword.strip_suffix(w).is_some_and(|head| {
                head.is_empty() || head.ends_with([' ', '\t', '\n', ';', '&', '|', '(', '{'])
            })
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::policy::shell::parse_script;
    use proptest::prelude::*;

    fn words(line: &str) -> Vec<Vec<Word>> {
        let script = parse_script(line).unwrap();
        script.commands.into_iter().map(|c| c.words).collect()
    }

    proptest! {
        /// A loop over written-out words whose body uses `"$f"` is the body once per word
        /// (repeats kept once), as if the words were written in its place.
        #[test]
        fn a_loop_is_its_body_once_per_word(
            values in prop::collection::vec(
                prop::sample::select(vec!["a", "'b c'", "-rf", "*.rs", "x.y", "\"q\"", "~/k", "a\\ b"]),
                1..5,
            ),
            body in prop::sample::select(vec!["cat \"$f\"", "rm \"${f}\" /", "ls -l \"$f\" x"]),
        ) {
            let looped = format!("for f in {}; do {body}; done", values.join(" "));
            let mut unrolled: Vec<Vec<Word>> = Vec::new();
            for value in &values {
                let line = body.replace("\"$f\"", value).replace("\"${f}\"", value);
                for command in words(&line) {
                    if !unrolled.contains(&command) {
                        unrolled.push(command);
                    }
                }
            }
            prop_assert_eq!(words(&looped), unrolled);
        }
    }

    #[test]
    fn a_name_is_mentioned_when_something_could_set_it() {
        for text in [
            "read f",
            "f=1",
            "declare -n r=f",
            "(( f++ ))",
            "echo ${f:=x}",
            "echo ${#f}",
            "exec {f}>x",
            "read for f",
            "select f in a; do :; done",
            "for ((f=0; f<3; f++)); do :; done",
            "'for' f",
            "(( --f ))",
        ] {
            assert!(mentions(text, "f", false), "{text}");
        }
        for text in [
            "for f in a b; do wc -l \"$f\" ${f}; done",
            "x; for f in a; do :; done",
            "if a; then for f in a; do :; done; fi",
            "echo $(for f in a; do :; done)",
            "test -f x && rm -rf y",
            "elf of fab",
        ] {
            assert!(!mentions(text, "f", false), "{text}");
        }
        for word in ["-vf", "-raf", "f", "--f"] {
            assert!(mentions(word, "f", true), "{word}");
        }
        for word in ["-f", "-v", "%s"] {
            assert!(!mentions(word, "f", true), "{word}");
        }
    }

    #[test]
    fn references_are_replaced_by_the_values_written_in_the_header() {
        let mut loops = Loops::default();
        loops.enter("f", Some("src/*.rs".to_owned()), 1);
        loops.enter("d", Some("'my dir'".to_owned()), 1);
        let table = [
            ("\"$f\"", Some("src/*.rs")),
            ("\"${f}\"", Some("src/*.rs")),
            ("\"$d/x\"", Some("\"my dir/x\"")),
            ("$f", None),
            ("\"src/$f\"", None),
            ("\"${f:-x}\"", None),
            ("'$d'", None),
            ("\"$HOME\"", None),
            ("\"$(cat $d)\"", None),
        ];
        for (raw, expected) in table {
            assert_eq!(loops.substitute(raw).as_deref(), expected, "{raw}");
        }
        loops.enter("f", Some("README.md".to_owned()), 1);
        assert_eq!(loops.substitute("src/$f").as_deref(), Some("src/README.md"));
        assert_eq!(loops.substitute("\\$f"), None);
        assert_eq!(loops.substitute("\"$f:s/_//\""), None);
        assert_eq!(loops.substitute("$f[2,3]"), None);
        assert!(loops.used.contains(&"IFS".to_owned()));
        loops.enter("f", None, 1);
        assert_eq!(loops.substitute("\"$f\""), None);
    }
}
