//! Token patterns of the `shell` matcher, and the matcher itself.
//!
//! A pattern such as `git diff *` is written in shell syntax and tokenised with the same
//! parser and quoting rules as the command lines it judges ([`super::shell`]). It must be
//! one simple command: operators, redirections, compound commands and expansions (`$x`,
//! `$(…)`, `~`, `{a,b}`) are compile errors with the byte offset of the offending part —
//! quote them to match them literally.
//!
//! # Tokens
//! - A plain token matches one word with exactly that value after quote removal:
//!   `'my dir'` matches `"my dir"` and `my\ dir`.
//! - A token that is exactly an unquoted `*` matches any number of words, including none:
//!   `git diff *` matches `git diff`, `git diff HEAD~1` and `git diff -- a b`; `git * push`
//!   matches `git -C dir push`. It is the only token that matches dynamic words (`$X`, globs,
//!   substitutions, whose own commands are judged separately).
//! - Any other token with an unquoted `*`, `?` or `[…]` is a glob over one word, where `*`
//!   also crosses `/` (words are arguments, not paths): `--format=*` matches
//!   `--format=%H/%s`. A quoted `'*'` is a literal star.
//! - `NAME=value` before the command word names an environment assignment the command
//!   may carry (see below).
//!
//! Matching is whole: `git status` matches exactly `git status`, not `git status --short`.
//! A dynamic word never matches a plain or glob token, and a command whose command word is
//! dynamic never matches any pattern.
//!
//! # Allow and deny
//! [`ShellMatcher::evaluate`] judges a whole line in one of two modes:
//! - [`MatchMode::All`] (allow rules) holds only if the line parses and every simple
//!   command matches a pattern, with no file-writing redirection (unless the rule allows
//!   redirection), no environment-assignment prefix other than those the matching pattern
//!   spells out (`LC_ALL=C ls *` allows `LC_ALL=C ls -la`; no other assignment is ever
//!   allowed, since `GIT_DIR=`, `LD_PRELOAD=` or `PAGER=` change what a command does), no
//!   opaque word, no unresolved command and no evaluating construct (`(( ))`, `[[ ]]`).
//!   Transparent wrappers are judged through the command they run.
//! - [`MatchMode::Any`] (deny and ask rules) holds if any simple command matches a pattern,
//!   where the command word also matches by its last path component (`/bin/rm` matches
//!   `rm *`), extra assignments are ignored and `*` also absorbs opaque words. It fails
//!   closed: a line that does not parse, or that hides a command it cannot resolve (a
//!   dynamic command word, `eval "$x"`, an unknown wrapper option), holds.

use std::fmt;
use std::sync::OnceLock;

use globset::{GlobBuilder, GlobMatcher};
use thiserror::Error;

use crate::model::command::Effect;

use super::commands::{Analysed, CommandFacts, CommandTable, EffectFrom, PatternWord};
use super::mode::MatchMode;
use super::shell::{
    ConstructKind, Expansion, Found, Part, Quoting, Role, ShellParseError, SimpleCommand,
    UnresolvedReason, Word, WordKind, parse_tokens, split_word, tokenize, unquoted_expansions,
};

/// A pattern that could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct PatternSyntaxError {
    /// Byte offset in the pattern, when known.
    pub offset: Option<usize>,
    /// What is wrong (lowercase, no trailing period).
    pub message: String,
}

impl PatternSyntaxError {
    fn new(offset: Option<usize>, message: impl Into<String>) -> Self {
        Self {
            offset,
            message: message.into(),
        }
    }
}

impl From<ShellParseError> for PatternSyntaxError {
    fn from(err: ShellParseError) -> Self {
        Self::new(err.offset, err.message)
    }
}

/// One token of a pattern.
#[derive(Clone)]
enum Token {
    /// Unquoted `*`: any number of words.
    Rest,
    /// One word with exactly this value.
    Literal(String),
    /// One literal word matching this glob (boxed: most tokens are literals, and an inline
    /// matcher would make every token four times its size).
    Glob(Box<GlobMatcher>),
}

impl fmt::Debug for Token {
    // A glob shows its pattern, not its automaton (whose state differs between runs).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rest => f.write_str("Rest"),
            Self::Literal(value) => f.debug_tuple("Literal").field(value).finish(),
            Self::Glob(glob) => f.debug_tuple("Glob").field(&glob.glob().glob()).finish(),
        }
    }
}

impl Token {
    /// Whether the token matches one word. `command_word` enables the basename comparison
    /// of [`MatchMode::Any`].
    fn matches_word(&self, word: &Word, command_word: bool, mode: MatchMode) -> bool {
        let single = |candidate: &str| match self {
            Self::Rest => true,
            Self::Literal(expected) => expected == candidate,
            Self::Glob(glob) => glob.is_match(candidate),
        };
        let Some(value) = word.literal() else {
            return mode == MatchMode::Any
                && command_word
                && program_named(word).is_some_and(single);
        };
        let basename = match (mode, command_word) {
            (MatchMode::Any, true) => value.rsplit_once('/').map(|(_, base)| base),
            (MatchMode::Any | MatchMode::All, _) => None,
        };
        single(value) || basename.is_some_and(single)
    }
}

/// The name of the program a command word expanded at run time still runs, for deny and ask
/// rules: its last path component when that is written plainly (`~/bin/curl`, `$D/rm`:
/// bash looks no further than the path), or the text of a `$"…"` string with nothing to
/// expand (a translation catalog may change it, but untranslated it is that name).
fn program_named(word: &Word) -> Option<&str> {
    let raw = word.raw.as_str();
    let name = match raw.rsplit_once('/') {
        Some((_, base)) => base,
        None => raw.strip_prefix("$\"")?.strip_suffix('"')?,
    };
    super::shell::is_plain(name).then_some(name)
}

/// A compiled shell pattern.
#[derive(Clone)]
pub struct ShellPattern {
    source: String,
    assignments: Vec<(String, Token)>,
    tokens: Vec<Token>,
    /// The pattern read with a command table (see [`ShellPattern::shape`]), with the id of
    /// that table.
    shape: OnceLock<(u64, Option<CommandFacts>)>,
}

impl fmt::Debug for ShellPattern {
    // The cached reading with a command table is left out: it is derived, and tables differ
    // between loads of the same set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShellPattern")
            .field("source", &self.source)
            .field("assignments", &self.assignments)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl ShellPattern {
    /// Compiles a pattern.
    ///
    /// # Errors
    /// A [`PatternSyntaxError`] with the byte offset of the problem when the pattern is not
    /// one simple command of plain, quoted or glob words.
    ///
    /// ```text
    /// use toolgate::policy::pattern::ShellPattern;
    ///
    /// assert!(ShellPattern::compile("git diff *").is_ok());
    /// let err = ShellPattern::compile("git status; ls").unwrap_err();
    /// assert_eq!(err.offset, Some(10));
    /// ```
    pub fn compile(source: &str) -> Result<Self, PatternSyntaxError> {
        match plain_words(source) {
            Some(words) => Self::from_words(source, &words),
            None => Self::parse(source),
        }
    }

    /// Compiles a pattern of plain words (see [`plain_words`]) without the shell parser,
    /// which would read it the same way: a large policy set has thousands of such patterns.
    fn from_words(source: &str, words: &[(usize, &str)]) -> Result<Self, PatternSyntaxError> {
        let tokens = words
            .iter()
            .map(|&(offset, word)| compile_token(word, Some(offset)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            source: source.to_owned(),
            assignments: Vec::new(),
            tokens,
            shape: OnceLock::new(),
        })
    }

    /// Compiles a pattern through the shell parser.
    fn parse(source: &str) -> Result<Self, PatternSyntaxError> {
        if source.trim().is_empty() {
            return Err(PatternSyntaxError::new(Some(0), "empty pattern"));
        }
        let tokens = tokenize(source)?;
        if let Some(operator) = tokens
            .iter()
            .find(|t| matches!(t, brush_parser::Token::Operator(..)))
        {
            let offset = super::shell::byte_offset(source, operator.location().start.index);
            let shown = operator.to_str().replace('\n', "\\n");
            return Err(PatternSyntaxError::new(
                Some(offset),
                format!(
                    "`{shown}` is not allowed in a pattern: a pattern is one simple command (quote it to match it literally)"
                ),
            ));
        }
        let program = parse_tokens(source, &tokens)?;
        let simple = single_simple_command(&program).ok_or_else(|| {
            PatternSyntaxError::new(
                Some(0),
                "a pattern must be a simple command, not a compound command (quote reserved words to match them literally)",
            )
        })?;
        let mut assignments = Vec::new();
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            let brush_parser::ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, word) =
                item
            else {
                return Err(PatternSyntaxError::new(
                    Some(0),
                    "unexpected item before the command word",
                ));
            };
            let offset = word_offset(source, word);
            let brush_parser::ast::AssignmentValue::Scalar(value) = &assignment.value else {
                return Err(PatternSyntaxError::new(
                    offset,
                    "array assignments are not allowed in a pattern",
                ));
            };
            let value_offset = offset.map(|o| o + word.value.len() - value.value.len());
            let token = compile_token(&value.value, value_offset)?;
            assignments.push((assignment.name.to_string(), token));
        }
        let mut words = Vec::new();
        if let Some(name) = &simple.word_or_name {
            words.push(name);
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            match item {
                brush_parser::ast::CommandPrefixOrSuffixItem::Word(word)
                | brush_parser::ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
                    words.push(word)
                }
                brush_parser::ast::CommandPrefixOrSuffixItem::IoRedirect(_)
                | brush_parser::ast::CommandPrefixOrSuffixItem::ProcessSubstitution(..) => {
                    return Err(PatternSyntaxError::new(
                        Some(0),
                        "redirections and process substitutions are not allowed in a pattern",
                    ));
                }
            }
        }
        if words.is_empty() {
            return Err(PatternSyntaxError::new(
                Some(0),
                "the pattern has no command word",
            ));
        }
        let tokens = words
            .into_iter()
            .map(|word| compile_token(&word.value, word_offset(source, word)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            source: source.to_owned(),
            assignments,
            tokens,
            shape: OnceLock::new(),
        })
    }

    #[cfg(test)]
    /// Whether a simple command matches this pattern in `mode` by its spelling alone (see
    /// the module docs). File redirections are not considered here; [`ShellMatcher`]
    /// checks them.
    pub fn matches(&self, command: &SimpleCommand, mode: MatchMode) -> bool {
        self.matches_spelling(command, mode, None)
    }

    fn matches_spelling(
        &self,
        command: &SimpleCommand,
        mode: MatchMode,
        table: Option<&CommandTable>,
    ) -> bool {
        let words = &command.words;
        let named = |word: &Word| {
            word.literal().is_some() || (mode == MatchMode::Any && program_named(word).is_some())
        };
        if !words.first().is_some_and(named) {
            return false;
        }
        if mode == MatchMode::All && words.iter().any(|w| matches!(w.kind, WordKind::Opaque(_))) {
            return false;
        }
        // The words first: they usually differ at the command word, which is cheap to see.
        self.words_match(words, mode) && self.assignments_match(command, mode, table)
    }

    /// Whether a simple command matches this pattern in `mode`, read with the command
    /// table: by spelling, or by meaning — the same program and subcommand, the pattern's
    /// options among the command's in any spelling (`-rf` = `-r -f` = `--recursive
    /// --force`; the program's own options before the subcommand do not count), and the
    /// operands matched token-wise. In [`MatchMode::All`] it also refuses a command with an
    /// effect the pattern does not name (see [`ShellPattern::unnamed_effect`]).
    pub fn matches_in(
        &self,
        command: &SimpleCommand,
        facts: &CommandFacts,
        table: &CommandTable,
        mode: MatchMode,
    ) -> bool {
        let matched = self.matches_spelling(command, mode, Some(table))
            || self.matches_meaning(command, facts, table, mode);
        matched && (mode == MatchMode::Any || self.unnamed_effect(facts, table).is_none())
    }

    /// Whether this pattern can match a command with these keys, in either mode: `false`
    /// only when its command word is a literal that is neither the command's command word
    /// (nor that word's last path component) nor the name of the program the command runs
    /// by the table. A cheap test, sound for [`ShellPattern::matches_in`]: spelling needs the
    /// first token to match the command word, meaning needs the same program.
    fn may_match(&self, keys: &CommandKeys<'_>, table: &CommandTable) -> bool {
        let Some(Token::Literal(named)) = self.tokens.first() else {
            return true;
        };
        let spelled = keys.word.is_some_and(|word| {
            word == named || word.rsplit_once('/').is_some_and(|(_, base)| base == named)
        });
        spelled
            || self
                .shape(table)
                .and_then(|shape| shape.program.as_deref())
                .is_some_and(|program| keys.program == Some(program))
    }

    /// The pattern read with `table`: `None` when the table does not know its program.
    fn shape(&self, table: &CommandTable) -> Option<&CommandFacts> {
        let (id, shape) = self.shape.get_or_init(|| (table.id(), self.analyse(table)));
        // Another table (a test reusing a compiled pattern) is not cached.
        if *id == table.id() {
            shape.as_ref()
        } else {
            None
        }
    }

    fn analyse(&self, table: &CommandTable) -> Option<CommandFacts> {
        // Non-literal tokens are named by their index, so operands map back to tokens.
        let names: Vec<String> = (0..self.tokens.len()).map(|i| format!("\0{i}")).collect();
        let words: Vec<PatternWord<'_>> = self
            .tokens
            .iter()
            .zip(&names)
            .map(|(token, name)| match token {
                Token::Literal(value) => PatternWord::Literal(value),
                Token::Rest | Token::Glob(_) => PatternWord::Other(name),
            })
            .collect();
        table.analyse_pattern(&words)
    }

    /// The pattern's token for a word of its shape.
    fn token_of<'t>(&'t self, word: &Word, literal: &'t mut Option<Token>) -> &'t Token {
        match word
            .raw
            .strip_prefix("\0")
            .and_then(|index| index.parse::<usize>().ok())
            .and_then(|index| self.tokens.get(index))
        {
            Some(token) => token,
            None => literal.insert(Token::Literal(
                word.literal().unwrap_or_default().to_owned(),
            )),
        }
    }

    fn matches_meaning(
        &self,
        command: &SimpleCommand,
        facts: &CommandFacts,
        table: &CommandTable,
        mode: MatchMode,
    ) -> bool {
        let Some(shape) = self.shape(table) else {
            return false;
        };
        if facts.program.is_none()
            || facts.program != shape.program
            || facts.subcommand != shape.subcommand
            || !self.assignments_match(command, mode, Some(table))
        {
            return false;
        }
        if mode == MatchMode::All {
            // An allow names the command word exactly (`/tmp/x/git` is not `git`).
            let written = command.words.first().and_then(Word::literal);
            let named = self.tokens.first().and_then(|t| match t {
                Token::Literal(value) => Some(value.as_str()),
                Token::Rest | Token::Glob(_) => None,
            });
            if written.is_none() || written != named {
                return false;
            }
            if command
                .words
                .iter()
                .any(|w| matches!(w.kind, WordKind::Opaque(_)))
            {
                return false;
            }
            // An option before the subcommand that the table does not know may change what
            // the subcommand does (`npm --script-shell=./x.sh test`): an allow must name it.
            let unnamed_global = facts.options.iter().any(|used| {
                used.before_subcommand
                    && used.info.is_none()
                    && !shape
                        .options
                        .iter()
                        .any(|o| o.before_subcommand && o.canonical == used.canonical)
            });
            if unnamed_global {
                return false;
            }
        }
        let rest = self.tokens.iter().any(|t| matches!(t, Token::Rest));
        let mut spare = None;
        for wanted in &shape.options {
            let found = facts.options.iter().any(|used| {
                used.canonical == wanted.canonical
                    && used.before_subcommand == wanted.before_subcommand
                    && match (&wanted.value, &used.value) {
                        (None, _) => true,
                        (Some(_), None) => false,
                        (Some(token_word), Some(value)) => self
                            .token_of(token_word, &mut spare)
                            .matches_word(value, false, mode),
                    }
            });
            if !found {
                return false;
            }
        }
        if !rest {
            let own = |options: &[super::commands::UsedOption]| {
                options.iter().filter(|o| !o.before_subcommand).count()
            };
            if own(&facts.options) != own(&shape.options) {
                return false;
            }
        }
        let mut operand_tokens: Vec<Token> = Vec::with_capacity(shape.operands.len() + 1);
        for word in &shape.operands {
            let mut spare = None;
            operand_tokens.push(self.token_of(word, &mut spare).clone());
        }
        if matches!(self.tokens.last(), Some(Token::Rest))
            && !matches!(operand_tokens.last(), Some(Token::Rest))
        {
            operand_tokens.push(Token::Rest);
        }
        tokens_match(&operand_tokens, &facts.operands, mode, false)
    }

    /// The first effect of the command that this pattern does not grant, for an allow: the
    /// program's own effects are granted by naming the program, a subcommand's by naming
    /// the subcommand (`git *` does not grant `git push`'s network, nor `cargo *` `cargo
    /// test`'s code); an option's only by naming the option; an effect of a word's content
    /// (a `sed` script with `e`, a variable name with a subscript) only by a pattern without
    /// `*`.
    pub fn unnamed_effect<'f>(
        &self,
        facts: &'f CommandFacts,
        table: &CommandTable,
    ) -> Option<&'f super::commands::EffectSource> {
        let exact = !self.tokens.iter().any(|t| matches!(t, Token::Rest));
        facts.effects.iter().find(|effect| match &effect.from {
            EffectFrom::Program => {
                facts.subcommand.is_some()
                    && self
                        .shape(table)
                        .is_none_or(|shape| shape.subcommand != facts.subcommand)
            }
            EffectFrom::Option(canonical) => !self
                .shape(table)
                .is_some_and(|shape| shape.options.iter().any(|o| &o.canonical == canonical)),
            EffectFrom::Content => !exact,
        })
    }

    fn assignments_match(
        &self,
        command: &SimpleCommand,
        mode: MatchMode,
        table: Option<&CommandTable>,
    ) -> bool {
        let pattern_matches =
            |name: &str, token: &Token, assignment: &super::shell::EnvAssignment| {
                assignment.name == name && token_matches_one(token, &assignment.value, mode)
            };
        match mode {
            MatchMode::All => {
                // Harmless variables (`RUST_BACKTRACE=1`) do not change the command, unless
                // the pattern names them.
                let counted: Vec<_> = command
                    .assignments
                    .iter()
                    .filter(|assignment| {
                        !table.is_some_and(|table| table.harmless_env(&assignment.name))
                            || self
                                .assignments
                                .iter()
                                .any(|(name, _)| *name == assignment.name)
                    })
                    .collect();
                counted.len() == self.assignments.len()
                    && self
                        .assignments
                        .iter()
                        .zip(counted)
                        .all(|((name, token), assignment)| pattern_matches(name, token, assignment))
            }
            MatchMode::Any => self.assignments.iter().all(|(name, token)| {
                command
                    .assignments
                    .iter()
                    .any(|assignment| pattern_matches(name, token, assignment))
            }),
        }
    }

    fn words_match(&self, words: &[Word], mode: MatchMode) -> bool {
        tokens_match(&self.tokens, words, mode, true)
    }
}

/// Wildcard matching of tokens against words, where [`Token::Rest`] absorbs any run of
/// words. Greedy with backtracking to the last `*`: O(words × tokens), no allocation.
/// `command` says the first word is a command word (see [`Token::matches_word`]).
fn tokens_match(tokens: &[Token], words: &[Word], mode: MatchMode, command: bool) -> bool {
    let (mut t, mut w) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while w < words.len() {
        match tokens.get(t) {
            Some(Token::Rest) => {
                star = Some((t + 1, w));
                t += 1;
            }
            Some(token) if token.matches_word(&words[w], command && w == 0, mode) => {
                t += 1;
                w += 1;
            }
            _ => match star {
                Some((after_star, absorbed_from)) => {
                    // INVARIANT: in All mode no word is opaque here (checked by the callers),
                    // so `*` may absorb every remaining word kind.
                    t = after_star;
                    w = absorbed_from + 1;
                    star = Some((after_star, absorbed_from + 1));
                }
                None => return false,
            },
        }
    }
    tokens[t..].iter().all(|token| matches!(token, Token::Rest))
}

/// The words of a pattern, with their byte offsets, when it is plain words only: letters,
/// digits and `_ . / : @ % + , - * ?`, separated by spaces or tabs, none of them a reserved
/// word. The shell parser reads such a pattern as one simple command of exactly these words
/// (no quotes, expansions, operators, assignments, comments or compound commands can occur),
/// so it need not run; `None` for anything else.
fn plain_words(source: &str) -> Option<Vec<(usize, &str)>> {
    const RESERVED: [&str; 17] = [
        "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function", "if",
        "in", "select", "then", "time", "until", "while",
    ];
    let plain = |byte: u8| byte.is_ascii_alphanumeric() || b"_./:@%+,-*?".contains(&byte);
    let mut words = Vec::new();
    let mut start = None;
    for (index, byte) in source.bytes().enumerate() {
        match (byte, start) {
            (b' ' | b'\t', Some(from)) => {
                words.push((from, source.get(from..index)?));
                start = None;
            }
            (b' ' | b'\t', None) => {}
            (byte, None) if plain(byte) => start = Some(index),
            (byte, Some(_)) if plain(byte) => {}
            _ => return None,
        }
    }
    if let Some(from) = start {
        words.push((from, source.get(from..)?));
    }
    if words.is_empty() || words.iter().any(|(_, word)| RESERVED.contains(word)) {
        return None;
    }
    Some(words)
}

/// An assignment value is matched by one token (`*` there means any value).
fn token_matches_one(token: &Token, word: &Word, mode: MatchMode) -> bool {
    match token {
        Token::Rest => !matches!((mode, &word.kind), (MatchMode::All, WordKind::Opaque(_))),
        Token::Literal(_) | Token::Glob(_) => token.matches_word(word, false, mode),
    }
}

fn word_offset(source: &str, word: &brush_parser::ast::Word) -> Option<usize> {
    word.loc
        .as_ref()
        .map(|loc| super::shell::byte_offset(source, loc.start.index))
}

/// The single simple command of a program, if that is all it is.
fn single_simple_command(
    program: &brush_parser::ast::Program,
) -> Option<&brush_parser::ast::SimpleCommand> {
    let [list] = program.complete_commands.as_slice() else {
        return None;
    };
    let [item] = list.0.as_slice() else {
        return None;
    };
    let and_or = &item.0;
    if !and_or.additional.is_empty() || and_or.first.bang || and_or.first.timed.is_some() {
        return None;
    }
    match and_or.first.seq.as_slice() {
        [brush_parser::ast::Command::Simple(simple)] => Some(simple),
        _ => None,
    }
}

/// Compiles one pattern word into a token.
fn compile_token(raw: &str, offset: Option<usize>) -> Result<Token, PatternSyntaxError> {
    let at = |inner: usize| offset.map(|o| o + inner);
    let mut found = Found::default();
    let parts =
        split_word(raw, &mut found).map_err(|err| PatternSyntaxError::new(offset, err.message))?;
    for part in &parts {
        if let Part::Expansion {
            expansion, start, ..
        } = part
        {
            return Err(expansion_error(raw, *expansion, at(*start)));
        }
    }
    let unquoted = unquoted_expansions(&parts);
    if let Some(start) = unquoted.tilde {
        return Err(expansion_error(raw, Expansion::Tilde, at(start)));
    }
    if let Some(start) = unquoted.brace {
        return Err(expansion_error(raw, Expansion::Brace, at(start)));
    }
    if let [
        Part::Text {
            text,
            quoting: Quoting::Unquoted,
            ..
        },
    ] = parts.as_slice()
        && text == "*"
    {
        return Ok(Token::Rest);
    }
    let Some(glob_at) = unquoted.glob else {
        let value: String = parts
            .iter()
            .filter_map(|part| match part {
                Part::Text { text, .. } => Some(text.as_str()),
                Part::Expansion { .. } => None,
            })
            .collect();
        return Ok(Token::Literal(value));
    };
    let mut glob = String::new();
    for part in &parts {
        if let Part::Text {
            text,
            quoting,
            start,
        } = part
        {
            for (i, c) in text.char_indices() {
                match (quoting, c) {
                    (Quoting::Unquoted, '(') => {
                        return Err(PatternSyntaxError::new(
                            at(start + i),
                            format!("extended globs are not supported in patterns (in `{raw}`)"),
                        ));
                    }
                    (Quoting::Unquoted, '*' | '?' | '[' | ']') => glob.push(c),
                    (_, '*' | '?' | '[' | ']' | '{' | '}' | '\\') => {
                        glob.push('\\');
                        glob.push(c);
                    }
                    _ => glob.push(c),
                }
            }
        }
    }
    GlobBuilder::new(&glob)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .map(|g| Token::Glob(Box::new(g.compile_matcher())))
        .map_err(|err| {
            PatternSyntaxError::new(
                at(glob_at),
                format!("invalid glob in `{raw}`: {}", err.kind()),
            )
        })
}

fn expansion_error(raw: &str, expansion: Expansion, offset: Option<usize>) -> PatternSyntaxError {
    PatternSyntaxError::new(
        offset,
        format!(
            "`{raw}` contains {expansion}, which the shell expands: quote it to match it literally"
        ),
    )
}

/// What a pattern's command word is compared with (see [`ShellMatcher::may_match`]): the
/// command's command word as written, and the program it runs by the command table.
#[derive(Debug, Clone, Copy)]
pub struct CommandKeys<'a> {
    word: Option<&'a str>,
    program: Option<&'a str>,
}

impl<'a> CommandKeys<'a> {
    /// The keys of one simple command and its facts.
    pub fn of(command: &'a SimpleCommand, facts: &'a CommandFacts) -> Self {
        Self {
            word: command
                .words
                .first()
                .and_then(|word| word.literal().or_else(|| program_named(word))),
            program: facts.program.as_deref(),
        }
    }
}

/// Whether an allow rule also permits file-writing redirections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectionPolicy {
    /// Output to files makes an allow rule fail (the default).
    Forbidden,
    /// Output to files is allowed.
    Allowed,
}

/// The compiled `shell` matcher of one argument: its patterns and redirection policy.
#[derive(Debug, Clone)]
pub struct ShellMatcher {
    patterns: Vec<ShellPattern>,
    redirection: RedirectionPolicy,
}

impl ShellMatcher {
    /// Compiles every pattern; the error lists each bad pattern with its index.
    ///
    /// # Errors
    /// Every pattern that does not compile, with its index.
    pub fn compile(
        patterns: &[String],
        redirection: RedirectionPolicy,
    ) -> Result<Self, Vec<(usize, PatternSyntaxError)>> {
        let mut compiled = Vec::with_capacity(patterns.len());
        let mut errors = Vec::new();
        for (index, pattern) in patterns.iter().enumerate() {
            match ShellPattern::compile(pattern) {
                Ok(pattern) => compiled.push(pattern),
                Err(err) => errors.push((index, err)),
            }
        }
        if errors.is_empty() {
            Ok(Self {
                patterns: compiled,
                redirection,
            })
        } else {
            Err(errors)
        }
    }

    #[cfg(any(test, feature = "fuzzing"))]
    /// Parses `line` and judges it (see the module docs for the two modes).
    ///
    /// ```
    /// use toolgate::policy::MatchMode;
    /// use toolgate::policy::pattern::{RedirectionPolicy, ShellMatcher};
    ///
    /// let m = ShellMatcher::compile(&["git status".into(), "git diff *".into()], RedirectionPolicy::Forbidden)
    ///     .unwrap();
    /// assert!(m.evaluate("git status && git diff HEAD~1", MatchMode::All).holds());
    /// assert!(!m.evaluate("git status; rm -rf /", MatchMode::All).holds());
    /// assert!(!m.evaluate("git diff > out", MatchMode::All).holds());
    /// ```
    pub fn evaluate(&self, line: &str, mode: MatchMode) -> ShellVerdict {
        let table = CommandTable::none();
        self.evaluate_analysed(&Analysed::new(line, table), table, mode)
    }

    #[cfg(test)]
    /// Judges an already parsed line by spelling alone (no command table).
    pub fn evaluate_script(
        &self,
        script: &Result<super::shell::Script, ShellParseError>,
        mode: MatchMode,
    ) -> ShellVerdict {
        let table = CommandTable::none();
        self.evaluate_analysed(&Analysed::of(script.clone(), table), table, mode)
    }

    /// Judges an analysed line (parse once, judge against many matchers) with the command
    /// table it was analysed with.
    pub fn evaluate_analysed(
        &self,
        analysed: &Analysed,
        table: &CommandTable,
        mode: MatchMode,
    ) -> ShellVerdict {
        match mode {
            MatchMode::All => self.all(analysed, table),
            MatchMode::Any => self.any(analysed, table),
        }
    }

    /// Whether some pattern can match the command with `keys` ([`ShellPattern::may_match`]).
    /// When not, the matcher holds, in either mode, for no line whose commands are that one
    /// command and nothing unresolved — such as a part of a line judged on its own.
    pub fn may_match(&self, keys: &CommandKeys<'_>, table: &CommandTable) -> bool {
        self.patterns.iter().any(|p| p.may_match(keys, table))
    }

    fn matching_pattern(
        &self,
        command: &SimpleCommand,
        facts: &CommandFacts,
        table: &CommandTable,
        mode: MatchMode,
    ) -> Option<usize> {
        self.patterns
            .iter()
            .position(|p| p.matches_in(command, facts, table, mode))
    }

    fn all(&self, analysed: &Analysed, table: &CommandTable) -> ShellVerdict {
        let refused = |command: &str, reason: RefusalReason| {
            ShellVerdict::Refused(Refusal {
                command: command.to_owned(),
                reason,
            })
        };
        let script = match &analysed.script {
            Ok(script) => script,
            Err(err) => return refused("", RefusalReason::Unparseable(err.clone())),
        };
        if let Some(unresolved) = script.unresolved.first() {
            return refused(
                &unresolved.text,
                RefusalReason::Unresolved(unresolved.reason.clone()),
            );
        }
        if let Some(construct) = script.constructs.first() {
            return refused(&construct.text, RefusalReason::Construct(construct.kind));
        }
        if script.commands.is_empty() {
            return refused("", RefusalReason::Empty);
        }
        let mut judged = 0;
        for (command, facts) in analysed.commands() {
            if self.redirection == RedirectionPolicy::Forbidden
                && let Some(write) = command.file_writes().next()
            {
                return refused(
                    &command.text,
                    RefusalReason::FileWrite {
                        redirection: write.text.clone(),
                    },
                );
            }
            match command.role {
                // Judged through the command it runs (its own entry).
                Role::TransparentWrapper => continue,
                Role::Command | Role::Launched => {}
            }
            judged += 1;
            if let Some(word) = command
                .words
                .iter()
                .find(|w| matches!(w.kind, WordKind::Opaque(_)))
            {
                let expansion = match word.kind {
                    WordKind::Opaque(expansion) | WordKind::Dynamic(expansion) => expansion,
                    WordKind::Literal(_) => Expansion::Arithmetic,
                };
                return refused(
                    &command.text,
                    RefusalReason::OpaqueWord {
                        word: word.raw.clone(),
                        expansion,
                    },
                );
            }
            if self
                .matching_pattern(command, facts, table, MatchMode::All)
                .is_some()
            {
                continue;
            }
            // Say why: a pattern that matches the spelling but not the effect, else the
            // assignment, else no pattern.
            let unnamed = self.patterns.iter().find_map(|p| {
                (p.matches_spelling(command, MatchMode::All, Some(table))
                    || p.matches_meaning(command, facts, table, MatchMode::All))
                .then(|| p.unnamed_effect(facts, table))
                .flatten()
            });
            let reason = match (unnamed, command.assignments.first()) {
                (Some(effect), _) => RefusalReason::Effect {
                    cause: effect.cause.clone(),
                    effect: effect.effect,
                },
                (None, Some(assignment)) => RefusalReason::EnvAssignment {
                    name: assignment.name.clone(),
                },
                (None, None) => RefusalReason::NoPatternMatched,
            };
            return refused(&command.text, reason);
        }
        if judged == 0 {
            // Only wrappers whose scripts run nothing (`sh -c ''`): nothing to approve.
            return refused("", RefusalReason::Empty);
        }
        ShellVerdict::Allowed { commands: judged }
    }

    fn any(&self, analysed: &Analysed, table: &CommandTable) -> ShellVerdict {
        let script = match &analysed.script {
            Ok(script) => script,
            Err(err) => return ShellVerdict::FailedClosed(FailClosed::Unparseable(err.clone())),
        };
        for (command, facts) in analysed.commands() {
            if let Some(pattern) = self.matching_pattern(command, facts, table, MatchMode::Any) {
                return ShellVerdict::Matched {
                    command: command.text.clone(),
                    pattern,
                };
            }
        }
        if let Some(unresolved) = script.unresolved.first() {
            return ShellVerdict::FailedClosed(FailClosed::Unresolved {
                command: unresolved.text.clone(),
                reason: unresolved.reason.clone(),
            });
        }
        ShellVerdict::NotMatched
    }
}

/// The judgement of a `shell` matcher on one command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellVerdict {
    /// [`MatchMode::All`]: every command matched (`commands` counts those judged, wrappers
    /// judged through what they run excluded).
    Allowed { commands: usize },
    /// [`MatchMode::All`]: the first command (or construct) that stops the allow.
    Refused(Refusal),
    /// [`MatchMode::Any`]: a command matched a pattern.
    Matched {
        /// The command, as written.
        command: String,
        /// Index of the pattern it matched.
        pattern: usize,
    },
    /// [`MatchMode::Any`]: held because the line could not be fully analysed.
    FailedClosed(FailClosed),
    /// [`MatchMode::Any`]: no command matched.
    NotMatched,
}

impl ShellVerdict {
    /// Whether the matcher holds.
    pub fn holds(&self) -> bool {
        match self {
            Self::Allowed { .. } | Self::Matched { .. } | Self::FailedClosed(_) => true,
            Self::Refused(_) | Self::NotMatched => false,
        }
    }
}

impl fmt::Display for ShellVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Allowed { commands } => write!(f, "all {commands} command(s) matched a pattern"),
            Self::Refused(refusal) => refusal.fmt(f),
            Self::Matched { command, pattern } => {
                write!(f, "`{command}` matched pattern #{pattern}")
            }
            Self::FailedClosed(reason) => reason.fmt(f),
            Self::NotMatched => f.write_str("no command matched a pattern"),
        }
    }
}

/// Why an allow ([`MatchMode::All`]) judgement failed, and on which command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The command (or construct) as written; empty when the line itself is at fault.
    pub command: String,
    /// Why.
    pub reason: RefusalReason,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.command.is_empty() {
            self.reason.fmt(f)
        } else {
            write!(f, "`{}`: {}", self.command, self.reason)
        }
    }
}

/// Reasons for a [`Refusal`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefusalReason {
    /// The line does not parse.
    Unparseable(ShellParseError),
    /// The line runs nothing.
    Empty,
    /// No pattern matches the command.
    NoPatternMatched,
    /// The command carries an assignment no matching pattern names.
    EnvAssignment { name: String },
    /// The command writes to a file.
    FileWrite { redirection: String },
    /// An option or word of the command has an effect the pattern does not name.
    Effect { cause: String, effect: Effect },
    /// A word makes the shell evaluate hidden text.
    OpaqueWord { word: String, expansion: Expansion },
    /// A command cannot be resolved.
    Unresolved(UnresolvedReason),
    /// An evaluating construct.
    Construct(ConstructKind),
}

impl fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unparseable(err) => match err.offset {
                Some(offset) => write!(
                    f,
                    "cannot parse the command line at byte {offset}: {}",
                    err.message
                ),
                None => write!(f, "cannot parse the command line: {}", err.message),
            },
            Self::Empty => f.write_str("the command line runs nothing"),
            Self::NoPatternMatched => f.write_str("no pattern matches this command"),
            Self::EnvAssignment { name } => {
                write!(
                    f,
                    "the environment assignment `{name}=…` is not named by a matching pattern"
                )
            }
            Self::FileWrite { redirection } => write!(f, "`{redirection}` writes to a file"),
            Self::Effect { cause, effect } => write!(
                f,
                "`{cause}` {effect}, and no allow pattern names it (a `*` never grants it)"
            ),
            Self::OpaqueWord { word, expansion } => {
                write!(
                    f,
                    "`{word}` needs {expansion}, which can run commands hidden in variables"
                )
            }
            Self::Unresolved(reason) => reason.fmt(f),
            Self::Construct(kind) => write!(f, "{kind} can run commands hidden in variables"),
        }
    }
}

/// Why a deny ([`MatchMode::Any`]) judgement held without a pattern match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailClosed {
    /// The line does not parse.
    Unparseable(ShellParseError),
    /// A command cannot be resolved.
    Unresolved {
        command: String,
        reason: UnresolvedReason,
    },
}

impl fmt::Display for FailClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unparseable(err) => write!(
                f,
                "cannot parse the command line ({}); treated as matching, as a deny rule fails closed",
                err.message
            ),
            Self::Unresolved { command, reason } => {
                write!(
                    f,
                    "`{command}`: {reason}; treated as matching, as a deny rule fails closed"
                )
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::policy::shell::parse_script;

    mod plain_words {
        use super::*;
        use proptest::prelude::*;

        /// Words of the plain alphabet, reserved words among them, and a few that are not
        /// plain (quotes, expansions, operators, assignments, comments).
        fn word() -> impl Strategy<Value = String> {
            prop_oneof![
                "[a-z0-9_./:@%+,*?-]{1,6}",
                Just("*".to_owned()),
                Just("if".to_owned()),
                Just("for".to_owned()),
                Just("in".to_owned()),
                Just("done".to_owned()),
                Just("-rf".to_owned()),
                Just("a=b".to_owned()),
                Just("'q w'".to_owned()),
                Just("$HOME".to_owned()),
                Just("#c".to_owned()),
                Just(";".to_owned()),
                Just("{".to_owned()),
                Just("~".to_owned()),
                Just("[ab]".to_owned()),
            ]
        }

        fn pattern() -> impl Strategy<Value = String> {
            (
                prop::collection::vec(
                    (word(), prop_oneof![Just(" "), Just("  "), Just("\t")]),
                    1..5,
                ),
                prop_oneof![Just(""), Just(" "), Just("\t ")],
            )
                .prop_map(|(words, lead)| {
                    let mut text = lead.to_owned();
                    for (word, gap) in words {
                        text.push_str(&word);
                        text.push_str(gap);
                    }
                    text
                })
        }

        proptest! {
            /// Whenever the parser is skipped, the pattern compiles exactly as the parser
            /// would compile it (or fails with the same error).
            #[test]
            fn skipping_the_parser_changes_nothing(source in pattern()) {
                let fast = ShellPattern::compile(&source);
                let parsed = ShellPattern::parse(&source);
                prop_assert_eq!(format!("{fast:?}"), format!("{parsed:?}"));
            }
        }

        #[test]
        fn plain_patterns_skip_the_parser_and_others_do_not() {
            assert_eq!(
                plain_words("git  diff *").unwrap(),
                [(0, "git"), (5, "diff"), (10, "*")]
            );
            assert_eq!(plain_words("\tmake t1 *.rs").unwrap()[0], (1, "make"));
            for other in [
                "", "  ", "if x", "a=b c", "git 'x'", "ls $HOME", "ls; rm", "ls # c", "ls ~",
            ] {
                assert!(plain_words(other).is_none(), "{other:?}");
            }
        }
    }

    fn matcher(patterns: &[&str], redirection: RedirectionPolicy) -> ShellMatcher {
        let patterns: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
        ShellMatcher::compile(&patterns, redirection).unwrap()
    }

    #[test]
    fn compiles_patterns_or_points_at_the_problem() {
        /// The expected error: its offset and the start of its message.
        type Expected<'a> = Option<(Option<usize>, &'a str)>;
        let table: &[(&str, Expected<'_>)] = &[
            ("git status", None),
            ("git diff *", None),
            ("git * push *", None),
            ("ls '*'", None),
            ("git log --format=*", None),
            ("LC_ALL=C ls *", None),
            ("'if' x", None),
            ("", Some((Some(0), "empty pattern"))),
            (
                "git status; rm",
                Some((Some(10), "`;` is not allowed in a pattern")),
            ),
            ("ls | sh", Some((Some(3), "`|` is not allowed"))),
            ("ls > out", Some((Some(3), "`>` is not allowed"))),
            ("ls\nrm", Some((Some(2), "`\\n` is not allowed"))),
            (
                "git diff $(x)",
                Some((Some(9), "`$(x)` contains command substitution")),
            ),
            (
                "git diff \"a $x\"",
                Some((Some(12), "`\"a $x\"` contains parameter expansion")),
            ),
            ("cat ~/x", Some((Some(4), "`~/x` contains tilde expansion"))),
            (
                "ls {a,b}",
                Some((Some(3), "`{a,b}` contains brace expansion")),
            ),
            (
                "ls @(a)",
                Some((Some(4), "extended globs are not supported")),
            ),
            (
                "if true; then ls; fi",
                Some((Some(7), "`;` is not allowed")),
            ),
            ("{ ls", Some((Some(4), "unexpected end of input"))),
            (
                "time ls",
                Some((Some(0), "a pattern must be a simple command")),
            ),
            (
                "! ls",
                Some((Some(0), "a pattern must be a simple command")),
            ),
            ("X=1", Some((Some(0), "the pattern has no command word"))),
            ("echo 'x", Some((Some(5), "unterminated single quote"))),
            ("ls [a", None),
        ];
        for (pattern, expected) in table {
            let actual = ShellPattern::compile(pattern).err();
            match (expected, &actual) {
                (None, None) => {}
                (Some((offset, message)), Some(err)) => {
                    assert_eq!(err.offset, *offset, "pattern {pattern:?}: {err}");
                    assert!(
                        err.message.starts_with(message),
                        "pattern {pattern:?}: {err}"
                    );
                }
                _ => panic!("pattern {pattern:?}: expected {expected:?}, got {actual:?}"),
            }
        }
    }

    #[test]
    fn matches_tokens_word_for_word() {
        let table: &[(&str, &str, MatchMode, bool)] = &[
            ("git status", "git status", MatchMode::All, true),
            ("git status", "git status --short", MatchMode::All, false),
            ("git status", "git", MatchMode::All, false),
            ("git status", "'git' \"status\"", MatchMode::All, true),
            (
                "git status",
                "git -c core.pager=x status",
                MatchMode::All,
                false,
            ),
            ("git diff *", "git diff", MatchMode::All, true),
            (
                "git diff *",
                "git diff HEAD~1 -- src/main.rs",
                MatchMode::All,
                true,
            ),
            ("git diff *", "git diff $REV", MatchMode::All, true),
            ("git diff *", "git diff $((x+1))", MatchMode::All, false),
            ("git diff *", "git diff $((x+1))", MatchMode::Any, true),
            // Arithmetic on numbers only evaluates nothing hidden.
            ("git diff *", "git diff $((1+1))", MatchMode::All, true),
            ("git diff *", "git log", MatchMode::All, false),
            (
                "git * push *",
                "git -C dir push --force",
                MatchMode::Any,
                true,
            ),
            ("git * push *", "git push", MatchMode::Any, true),
            ("git * push *", "git status", MatchMode::Any, false),
            ("ls *", "ls 'my dir'", MatchMode::All, true),
            ("ls 'my dir'", "ls my\\ dir", MatchMode::All, true),
            ("ls '*'", "ls '*'", MatchMode::All, true),
            ("ls '*'", "ls x", MatchMode::All, false),
            ("ls '*'", "ls *", MatchMode::All, false),
            (
                "git log --format=*",
                "git log --format=%H/%s",
                MatchMode::All,
                true,
            ),
            (
                "git log --format=*",
                "git log --format=$F",
                MatchMode::All,
                false,
            ),
            ("ls *.md", "ls README.md", MatchMode::All, true),
            ("ls *.md", "ls *.md", MatchMode::All, false),
            ("rm *", "/bin/rm -rf /", MatchMode::Any, true),
            ("rm *", "/bin/rm -rf /", MatchMode::All, false),
            ("rm *", "\\rm x", MatchMode::Any, true),
            ("* --version", "node --version", MatchMode::All, true),
            ("LC_ALL=C ls *", "LC_ALL=C ls -la", MatchMode::All, true),
            ("LC_ALL=C ls *", "ls -la", MatchMode::All, false),
            ("LC_ALL=C ls *", "LC_ALL=C X=1 ls", MatchMode::All, false),
            ("LC_ALL=* ls *", "LC_ALL=$(id) ls", MatchMode::All, true),
            ("ls *", "X=1 ls", MatchMode::All, false),
            ("ls *", "X=1 ls", MatchMode::Any, true),
            (
                "LD_PRELOAD=* *",
                "LD_PRELOAD=/x.so ls",
                MatchMode::Any,
                true,
            ),
        ];
        for (pattern, line, mode, expected) in table {
            let compiled = ShellPattern::compile(pattern).unwrap();
            let script = parse_script(line).unwrap();
            let command = script
                .commands
                .iter()
                .find(|c| c.origin == super::super::shell::Origin::Line)
                .unwrap();
            assert_eq!(
                compiled.matches(command, *mode),
                *expected,
                "pattern {pattern:?} line {line:?} {mode:?}"
            );
        }
    }

    #[test]
    fn judges_whole_lines() {
        let allow = matcher(
            &["git status", "git diff *", "ls *"],
            RedirectionPolicy::Forbidden,
        );
        let table: &[(&str, MatchMode, &str)] = &[
            (
                "git status",
                MatchMode::All,
                "all 1 command(s) matched a pattern",
            ),
            (
                "git status && ls -la | ls",
                MatchMode::All,
                "all 3 command(s) matched a pattern",
            ),
            (
                "git status; rm -rf /",
                MatchMode::All,
                "`rm -rf /`: no pattern matches this command",
            ),
            (
                "ls > out",
                MatchMode::All,
                "`ls > out`: `> out` writes to a file",
            ),
            (
                "ls 2>&1 >/dev/null",
                MatchMode::All,
                "all 1 command(s) matched a pattern",
            ),
            (
                "GIT_DIR=x git status",
                MatchMode::All,
                "`GIT_DIR=x git status`: the environment assignment `GIT_DIR=…` is not named by a matching pattern",
            ),
            (
                "ls $((x))",
                MatchMode::All,
                "`ls $((x))`: `$((x))` needs arithmetic evaluation, which can run commands hidden in variables",
            ),
            (
                "$X",
                MatchMode::All,
                "`$X`: the command word is expanded at run time, so the program is unknown",
            ),
            (
                "[[ -f x ]]",
                MatchMode::All,
                "`[[ -f x ]]`: a `[[ ]]` test can run commands hidden in variables",
            ),
            ("", MatchMode::All, "the command line runs nothing"),
            (
                "echo 'x",
                MatchMode::All,
                "cannot parse the command line at byte 5: unterminated single quote",
            ),
            (
                "nice git status",
                MatchMode::All,
                "all 1 command(s) matched a pattern",
            ),
            (
                "nice rm x",
                MatchMode::All,
                "`rm x`: no pattern matches this command",
            ),
            (
                "sudo ls",
                MatchMode::All,
                "`sudo ls`: no pattern matches this command",
            ),
            (
                "git status; rm -rf /",
                MatchMode::Any,
                "`git status` matched pattern #0",
            ),
            ("echo hi", MatchMode::Any, "no command matched a pattern"),
            (
                "echo 'x",
                MatchMode::Any,
                "cannot parse the command line (unterminated single quote); treated as matching, as a deny rule fails closed",
            ),
            (
                "eval \"$X\"",
                MatchMode::Any,
                "`eval \"$X\"`: the script given to `eval` is not a literal; treated as matching, as a deny rule fails closed",
            ),
        ];
        for (line, mode, expected) in table {
            assert_eq!(
                allow.evaluate(line, *mode).to_string(),
                *expected,
                "line {line:?} {mode:?}"
            );
        }
        let redirecting = matcher(&["ls *"], RedirectionPolicy::Allowed);
        assert!(redirecting.evaluate("ls > out", MatchMode::All).holds());
        let deny = matcher(&["rm *"], RedirectionPolicy::Forbidden);
        for line in [
            "rm -rf /",
            "ls; rm x",
            "echo $(rm x)",
            "nice rm x",
            "sudo rm x",
            "find . -exec rm {} +",
            "ls | xargs rm",
            "sh -c 'rm x'",
            "{rm,-rf,/}",
        ] {
            assert!(deny.evaluate(line, MatchMode::Any).holds(), "line {line:?}");
        }
        for line in ["ls", "echo rm", "git rm x", "rmdir x"] {
            assert!(
                !deny.evaluate(line, MatchMode::Any).holds(),
                "line {line:?}"
            );
        }
    }
}

/// The module documentation's example, as a test (the module is crate-private, so rustdoc
/// cannot run it).
#[cfg(test)]
mod doc_example {
    #[test]
    fn a_pattern_is_one_simple_command() {
        use crate::policy::pattern::ShellPattern;

        assert!(ShellPattern::compile("git diff *").is_ok());
        let err = ShellPattern::compile("git status; ls").unwrap_err();
        assert_eq!(err.offset, Some(10));
    }
}
