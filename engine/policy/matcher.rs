//! Argument matchers of permission rules, compiled once and evaluated without parsing.
//!
//! A rule's `match` maps a selector — a top-level field name (`command`) or a JSON pointer
//! (`/options/path`, starting with `/`) — to one [`ArgMatcher`]. [`CompiledArgMatchers`]
//! holds the compiled form: every glob, regex, path glob and shell pattern is compiled by
//! [`CompiledArgMatchers::compile`], which reports every bad pattern at once
//! ([`PatternError`], with the byte offset inside the pattern where it can be told).
//! [`CompiledArgMatchers::matches`] then evaluates an input against them and returns a
//! [`MatchOutcome`]: whether it holds, and for each selector what matched or failed, for
//! `explain` and denial reasons.
//!
//! # Semantics
//! - All selectors must hold; within one spec all given matcher kinds must hold; within a
//!   kind any pattern may match. A spec with no matcher kinds holds vacuously.
//! - A selector reads the parsed input only, never its serialised text: an allowed string in
//!   another field cannot satisfy a matcher on `command`.
//! - `glob`: a [`globset`] glob over the whole string, with `*` crossing `/` (the value is
//!   not assumed to be a path; use `path` for paths). Case-sensitive.
//! - `regex`: the [`regex`] crate's syntax, **unanchored** (it holds if the regex matches
//!   anywhere in the string, like `grep`); anchor with `^…$` to match the whole value.
//! - `equals`: JSON equality, with numbers compared by value (`1` equals `1.0`) and objects
//!   regardless of key order.
//! - `exists`: `true` holds when the selector resolves (a `null` value is present), `false`
//!   when it does not.
//! - `path`, `workspace`, `policy_files` and `git_runs`: conditions on the location a path argument names
//!   (written and resolved through symlinks), see [`super::path`]. `shell`: see
//!   [`super::pattern`].
//! - `glob`, `regex`, `path`, `workspace`, `policy_files` and `shell` apply to strings. For an array value,
//!   [`MatchMode::Any`] holds if some string element matches and [`MatchMode::All`] only if
//!   every element is a string that matches; an empty array never matches. Other types
//!   (and a missing selector) never match these kinds.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use super::glob::GlobList;
use indexmap::IndexMap;
use regex::RegexSet;
use serde::Serialize;
use serde_json::Value;
use thiserror::Error;

use super::commands::{Analysed, CommandTable};
use super::glob::parse_globs;
use super::mode::MatchMode;
use super::path::{Location, MatchContext, PathCase, PathMatcher, Side, locate};
use super::pattern::{CommandKeys, RedirectionPolicy, ShellMatcher, ShellVerdict};
use super::search::split_glob;
use super::shell::Role;
use super::shell::wildcard::{escape_glob, readings, unescape_glob, widened};
use crate::diagnostics::diagnostic::lowercase_first;
use crate::model::rule::WorkspaceSide;
use crate::model::rule::{ArgMatcher, OneOrMany};

/// The kind of a pattern that failed to compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PatternKind {
    /// A `glob` pattern.
    Glob,
    /// A `regex` pattern.
    Regex,
    /// A `shell` pattern.
    Shell,
    /// A `path` pattern.
    Path,
    /// The selector (a JSON pointer or field name).
    Pointer,
}

impl fmt::Display for PatternKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Glob => "glob",
            Self::Regex => "regex",
            Self::Shell => "shell",
            Self::Path => "path",
            Self::Pointer => "pointer",
        })
    }
}

/// A pattern (or selector) that failed to compile.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("`{selector}`: invalid {kind}{}{}: {message}", index_label(.pattern_index), offset_label(.offset_in_pattern))]
pub struct PatternError {
    /// The selector whose spec holds the pattern.
    pub selector: String,
    /// Which kind of pattern.
    pub kind: PatternKind,
    /// Index of the pattern in its list (`None` for a selector error).
    pub pattern_index: Option<usize>,
    /// Byte offset inside the pattern (or selector), when it can be told.
    pub offset_in_pattern: Option<usize>,
    /// What is wrong (lowercase, no trailing period).
    pub message: String,
}

fn index_label(index: &Option<usize>) -> String {
    index.map(|i| format!(" pattern #{i}")).unwrap_or_default()
}

fn offset_label(offset: &Option<usize>) -> String {
    offset.map(|o| format!(" at byte {o}")).unwrap_or_default()
}

/// Up to this many fields, a field is looked up by comparing keys rather than by hashing.
const SMALL_OBJECT: usize = 16;

/// Where an argument is read from.
#[derive(Debug, Clone)]
enum Selector {
    Field(Arc<str>),
    /// A JSON pointer as written, and its reference tokens with `~1` and `~0` decoded.
    Pointer(Arc<str>, Box<[Box<str>]>),
}

impl Selector {
    fn parse(text: &str) -> Result<Self, (Option<usize>, String)> {
        if text.is_empty() {
            return Err((
                Some(0),
                "empty selector: name a field or give a JSON pointer starting with `/`".to_owned(),
            ));
        }
        if !text.starts_with('/') {
            return Ok(Self::Field(Arc::from(text)));
        }
        // RFC 6901: `~` must be followed by `0` (for `~`) or `1` (for `/`).
        let bytes = text.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'~' && !matches!(bytes.get(i + 1), Some(b'0' | b'1')) {
                return Err((
                    Some(i),
                    "`~` in a JSON pointer must be followed by `0` or `1`".to_owned(),
                ));
            }
        }
        let tokens = text[1..]
            .split('/')
            .map(|token| token.replace("~1", "/").replace("~0", "~").into_boxed_str())
            .collect();
        Ok(Self::Pointer(Arc::from(text), tokens))
    }

    fn text(&self) -> &Arc<str> {
        match self {
            Self::Field(text) | Self::Pointer(text, _) => text,
        }
    }

    fn resolve<'v>(&self, input: &'v Value) -> Option<&'v Value> {
        match self {
            Self::Field(name) => field(input, name),
            // As `Value::pointer` (RFC 6901), with the tokens decoded once, at compile time.
            Self::Pointer(_, tokens) => tokens.iter().try_fold(input, |value, token| match value {
                Value::Object(_) => field(value, token),
                Value::Array(items) => array_index(token).and_then(|i| items.get(i)),
                _ => None,
            }),
        }
    }
}

/// The field `name` of an object (a tool call's input, or an object inside it).
pub(crate) fn field<'v>(value: &'v Value, name: &str) -> Option<&'v Value> {
    let object = value.as_object()?;
    // Tool inputs have a handful of fields: comparing keys is cheaper than hashing the name
    // (every rule of a call resolves its selectors).
    if object.len() <= SMALL_OBJECT {
        object
            .iter()
            .find_map(|(key, value)| (key == name).then_some(value))
    } else {
        object.get(name)
    }
}

/// An array index in a JSON pointer: decimal digits without a sign or leading zeros.
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

/// The kind of a rule's only pattern list (see [`CompiledArgMatchers::pattern_list`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PatternListKind {
    /// `regex` patterns: unanchored, any may match.
    Regex,
    /// `glob` patterns: over the whole string, `*` crossing `/`.
    Glob,
}

/// One compiled matcher kind.
#[derive(Debug, Clone)]
enum Compiled {
    Exists(bool),
    Equals(Value),
    Glob(Deferred<GlobList>),
    Regex(Deferred<RegexSet>),
    /// `reaches`: the paths a value's glob must not match.
    Reaches(Box<Reaches>),
    Workspace(WorkspaceSide),
    PolicyFiles(bool),
    GitRuns(bool),
    Path(Box<PathMatcher>),
    Shell(ShellMatcher),
    ReadOnly(bool),
}

/// Patterns validated when their rule was compiled, whose automaton is built on first use.
///
/// Building regex and glob automata is most of the time and memory a large policy set's
/// rules cost, and a process consults few of its rules: they are built when first needed,
/// once, and shared by every thread. Syntax errors are found when the rule is compiled; an
/// automaton that still cannot be built (a size limit) fails closed where it is used: the
/// matcher then holds for deny and ask rules and not for allow rules.
#[derive(Debug, Clone)]
struct Deferred<T> {
    patterns: Box<[String]>,
    /// The automaton, or the index of the pattern that cannot be built (when it can be told)
    /// and why.
    built: OnceLock<Result<T, (Option<usize>, String)>>,
}

impl<T> Deferred<T> {
    fn new(patterns: &[String]) -> Self {
        Self {
            patterns: patterns.into(),
            built: OnceLock::new(),
        }
    }

    fn get(
        &self,
        build: impl FnOnce(&[String]) -> Result<T, (Option<usize>, String)>,
    ) -> Result<&T, &(Option<usize>, String)> {
        self.built.get_or_init(|| build(&self.patterns)).as_ref()
    }

    /// Drops the automaton; the next use builds it again.
    fn release(&mut self) {
        self.built.take();
    }
}

impl Deferred<GlobList> {
    fn globs(&self) -> Result<&GlobList, &(Option<usize>, String)> {
        self.get(|patterns| {
            GlobList::build(patterns, false, false).map_err(|message| (None, message))
        })
    }
}

impl Deferred<RegexSet> {
    fn regex_set(&self) -> Result<&RegexSet, &(Option<usize>, String)> {
        self.get(|patterns| {
            compile_regexes(patterns).map_err(|errors| {
                let culprits = errors.len();
                errors.into_iter().next().map_or_else(
                    || (None, "the regex set cannot be built".to_owned()),
                    // One culprit is named; several (or none) make it the set's fault.
                    |(index, _, message)| ((culprits == 1).then_some(index), message),
                )
            })
        })
    }
}

impl Compiled {
    fn kind(&self) -> MatcherKind {
        match self {
            Self::Exists(_) => MatcherKind::Exists,
            Self::Equals(_) => MatcherKind::Equals,
            Self::Glob(_) => MatcherKind::Glob,
            Self::Regex(_) => MatcherKind::Regex,
            Self::Reaches(_) => MatcherKind::Reaches,
            Self::Workspace(_) => MatcherKind::Workspace,
            Self::PolicyFiles(_) => MatcherKind::PolicyFiles,
            Self::GitRuns(_) => MatcherKind::GitRuns,
            Self::Path(_) => MatcherKind::Path,
            Self::Shell(_) => MatcherKind::Shell,
            Self::ReadOnly(_) => MatcherKind::ReadOnly,
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    selector: Selector,
    // INVARIANT: cheapest kinds first (exists, equals, glob, regex, workspace, policy_files,
    // path, shell); the order
    // only affects which failure is reported, never the result.
    // A boxed slice holds exactly its matchers: a `Vec` grown by `push` keeps room for four
    // (~0.5 KB per argument, a third of the heap the rules of a large set hold).
    matchers: Box<[Compiled]>,
}

impl Entry {
    fn reads_command_line(&self) -> bool {
        self.matchers
            .iter()
            .any(|m| matches!(m, Compiled::Shell(_) | Compiled::ReadOnly(_)))
    }
}

/// The compiled argument matchers of one rule.
#[derive(Debug, Clone)]
pub struct CompiledArgMatchers {
    entries: Vec<Entry>,
}

impl CompiledArgMatchers {
    /// Compiles every matcher of a rule's `match` map.
    ///
    /// # Errors
    /// Every pattern and selector that does not compile.
    ///
    /// ```text
    /// use indexmap::IndexMap;
    /// use serde_json::json;
    /// use toolgate::model::rule::{ArgMatcher, OneOrMany};
    /// use toolgate::policy::{CompiledArgMatchers, MatchContext, MatchMode};
    ///
    /// let mut spec = IndexMap::new();
    /// spec.insert("command".to_owned(), ArgMatcher { shell: Some(OneOrMany::One("git status".into())), ..Default::default() });
    /// let matchers = CompiledArgMatchers::compile(&spec).unwrap();
    /// let ctx = MatchContext::new("/work");
    /// assert!(matchers.matches(&json!({"command": "git status"}), &ctx, MatchMode::All).matched);
    /// assert!(!matchers.matches(&json!({"command": "git status; rm -rf /"}), &ctx, MatchMode::All).matched);
    /// ```
    pub fn compile(specs: &IndexMap<String, ArgMatcher>) -> Result<Self, Vec<PatternError>> {
        let mut entries = Vec::with_capacity(specs.len());
        let mut errors = Vec::new();
        for (selector_text, spec) in specs {
            let error = |kind, pattern_index, offset_in_pattern, message| PatternError {
                selector: selector_text.clone(),
                kind,
                pattern_index,
                offset_in_pattern,
                message,
            };
            let selector = match Selector::parse(selector_text) {
                Ok(selector) => selector,
                Err((offset, message)) => {
                    errors.push(error(PatternKind::Pointer, None, offset, message));
                    continue;
                }
            };
            let mut matchers = Vec::new();
            if let Some(exists) = spec.exists {
                matchers.push(Compiled::Exists(exists));
            }
            if let Some(value) = &spec.equals {
                matchers.push(Compiled::Equals(value.clone()));
            }
            let (glob, regex, path, shell) = (
                spec.glob.as_ref().map_or(&[][..], OneOrMany::as_slice),
                spec.regex.as_ref().map_or(&[][..], OneOrMany::as_slice),
                spec.path.as_ref().map_or(&[][..], OneOrMany::as_slice),
                spec.shell.as_ref().map_or(&[][..], OneOrMany::as_slice),
            );
            if !glob.is_empty() {
                match parse_globs(glob, false, false) {
                    Ok(_) => matchers.push(Compiled::Glob(Deferred::new(glob))),
                    Err(bad) => errors.extend(
                        bad.into_iter()
                            .map(|(i, e)| error(PatternKind::Glob, Some(i), e.offset, e.message)),
                    ),
                }
            }
            if !regex.is_empty() {
                match parse_regexes(regex) {
                    Ok(()) => matchers.push(Compiled::Regex(Deferred::new(regex))),
                    Err(bad) => errors.extend(bad.into_iter().map(|(i, offset, message)| {
                        error(PatternKind::Regex, Some(i), offset, message)
                    })),
                }
            }
            if let Some(paths) = &spec.reaches {
                matchers.push(Compiled::Reaches(Box::new(Reaches {
                    paths: OneOrMany::as_slice(paths).into(),
                    from: spec.reaches_from.clone(),
                })));
            }
            if let Some(side) = spec.workspace {
                matchers.push(Compiled::Workspace(side));
            }
            if let Some(expected) = spec.policy_files {
                matchers.push(Compiled::PolicyFiles(expected));
            }
            if let Some(expected) = spec.git_runs {
                matchers.push(Compiled::GitRuns(expected));
            }
            if !path.is_empty() {
                match PathMatcher::compile(path) {
                    Ok(matcher) => matchers.push(Compiled::Path(Box::new(matcher))),
                    Err(bad) => errors.extend(
                        bad.into_iter()
                            .map(|(i, e)| error(PatternKind::Path, Some(i), e.offset, e.message)),
                    ),
                }
            }
            if !shell.is_empty() {
                let redirection = if spec.allow_redirection == Some(true) {
                    RedirectionPolicy::Allowed
                } else {
                    RedirectionPolicy::Forbidden
                };
                match ShellMatcher::compile(shell, redirection) {
                    Ok(matcher) => matchers.push(Compiled::Shell(matcher)),
                    Err(bad) => errors.extend(
                        bad.into_iter()
                            .map(|(i, e)| error(PatternKind::Shell, Some(i), e.offset, e.message)),
                    ),
                }
            }
            if let Some(read_only) = spec.read_only {
                matchers.push(Compiled::ReadOnly(read_only));
            }
            entries.push(Entry {
                selector,
                matchers: matchers.into_boxed_slice(),
            });
        }
        if errors.is_empty() {
            Ok(Self { entries })
        } else {
            Err(errors)
        }
    }

    /// Builds now the automata that are otherwise built on first use (for the path case
    /// `case`), and reports those that cannot be built.
    ///
    /// # Errors
    /// One per matcher whose patterns parse but whose automaton exceeds a size limit.
    pub fn build(&self, case: PathCase) -> Result<(), Vec<PatternError>> {
        let mut errors = Vec::new();
        for entry in &self.entries {
            for matcher in &entry.matchers {
                let failed = match matcher {
                    Compiled::Glob(deferred) => deferred
                        .globs()
                        .err()
                        .map(|(index, m)| (PatternKind::Glob, *index, m.clone())),
                    Compiled::Regex(deferred) => deferred
                        .regex_set()
                        .err()
                        .map(|(index, m)| (PatternKind::Regex, *index, m.clone())),
                    Compiled::Path(path) => {
                        path.build(case).err().map(|m| (PatternKind::Path, None, m))
                    }
                    Compiled::Exists(_)
                    | Compiled::Equals(_)
                    | Compiled::Reaches(_)
                    | Compiled::Workspace(_)
                    | Compiled::PolicyFiles(_)
                    | Compiled::GitRuns(_)
                    | Compiled::Shell(_)
                    | Compiled::ReadOnly(_) => None,
                };
                if let Some((kind, pattern_index, message)) = failed {
                    errors.push(PatternError {
                        selector: entry.selector.text().to_string(),
                        kind,
                        pattern_index,
                        offset_in_pattern: None,
                        message,
                    });
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Drops the automata [`Self::build`] or earlier matches built; they are built again on
    /// first use. A load builds a rule's automata to check its `examples`, then releases
    /// them: most rules of a large set are never consulted by a process.
    pub fn release(&mut self) {
        for entry in &mut self.entries {
            for matcher in &mut entry.matchers {
                match matcher {
                    Compiled::Glob(deferred) => deferred.release(),
                    Compiled::Regex(deferred) => deferred.release(),
                    Compiled::Path(path) => path.release(),
                    Compiled::Exists(_)
                    | Compiled::Equals(_)
                    | Compiled::Reaches(_)
                    | Compiled::Workspace(_)
                    | Compiled::PolicyFiles(_)
                    | Compiled::GitRuns(_)
                    | Compiled::Shell(_)
                    | Compiled::ReadOnly(_) => {}
                }
            }
        }
    }

    /// The one pattern list of matchers that are exactly one selector with only `regex` (or
    /// only `glob`) patterns: the selector as written, the kind and the patterns. A rule set
    /// matches such lists of many rules on the same field together (see `super::groups`).
    pub(crate) fn pattern_list(&self) -> Option<(&Arc<str>, PatternListKind, &[String])> {
        let [entry] = &self.entries[..] else {
            return None;
        };
        match &entry.matchers[..] {
            [Compiled::Regex(deferred)] => Some((
                entry.selector.text(),
                PatternListKind::Regex,
                &deferred.patterns,
            )),
            [Compiled::Glob(deferred)] => Some((
                entry.selector.text(),
                PatternListKind::Glob,
                &deferred.patterns,
            )),
            _ => None,
        }
    }

    /// The value the first selector reads in `input`.
    pub(crate) fn first_value<'v>(&self, input: &'v Value) -> Option<&'v Value> {
        self.entries.first()?.selector.resolve(input)
    }

    /// Whether this rule reads an argument as a command line (`shell` or `read_only`
    /// matchers).
    pub fn reads_command_line(&self) -> bool {
        self.entries.iter().any(Entry::reads_command_line)
    }

    /// The command line this rule reads with `shell` or `read_only` matchers in `input`: the
    /// first such argument whose value is a string.
    pub fn command_line<'v>(&self, input: &'v Value) -> Option<&'v str> {
        self.entries
            .iter()
            .filter(|entry| entry.reads_command_line())
            .find_map(|entry| entry.selector.resolve(input)?.as_str())
    }

    /// Whether these matchers cannot hold while `part`, one command of the command line
    /// `line`, is judged on its own (see `policy::parts`): a `shell` matcher reads `line`
    /// and none of its patterns can match that command's command word
    /// ([`ShellMatcher::may_match`]). Cheap, so most rules are passed over for most parts of
    /// a compound line without being evaluated; `false` says nothing.
    pub fn ruled_out_for(
        &self,
        input: &Value,
        line: &str,
        part: &CommandKeys<'_>,
        table: &CommandTable,
    ) -> bool {
        self.entries.iter().any(|entry| {
            entry.selector.resolve(input).and_then(Value::as_str) == Some(line)
                && entry.matchers.iter().any(|matcher| match matcher {
                    Compiled::Shell(shell) => !shell.may_match(part, table),
                    _ => false,
                })
        })
    }

    /// Evaluates the matchers against a tool call's input.
    #[cfg(test)]
    pub fn matches(&self, input: &Value, ctx: &MatchContext, mode: MatchMode) -> MatchOutcome {
        self.matches_with_cache(input, ctx, mode, &mut ParseCache::default())
    }

    /// Whether the matchers hold, without building the explanation: what deciding a call
    /// asks of every rule it walks past. Always equal to
    /// `matches_with_cache(…).matched`.
    pub fn holds_with_cache(
        &self,
        input: &Value,
        ctx: &MatchContext,
        mode: MatchMode,
        cache: &mut ParseCache,
    ) -> bool {
        self.entries.iter().all(|entry| {
            let value = entry.selector.resolve(input);
            entry
                .matchers
                .iter()
                .all(|matcher| holds(matcher, (value, input), ctx, mode, cache))
        })
    }

    /// Like [`matches`](Self::matches), reusing the command lines already parsed (and the
    /// paths already normalised) for this call: evaluate every rule of one call with the
    /// same cache, so a command line is parsed once however many `shell` matchers judge it.
    pub fn matches_with_cache(
        &self,
        input: &Value,
        ctx: &MatchContext,
        mode: MatchMode,
        cache: &mut ParseCache,
    ) -> MatchOutcome {
        let mut selectors = Vec::with_capacity(self.entries.len());
        for entry in &self.entries {
            let value = entry.selector.resolve(input);
            let mut checks = Vec::with_capacity(entry.matchers.len());
            let mut holds = true;
            for matcher in &entry.matchers {
                let check = check(matcher, (value, input), ctx, mode, cache);
                holds = check.holds;
                checks.push(check);
                if !holds {
                    break;
                }
            }
            selectors.push(SelectorOutcome {
                selector: Arc::clone(entry.selector.text()),
                holds,
                checks,
            });
            if !holds {
                return MatchOutcome {
                    matched: false,
                    selectors,
                };
            }
        }
        MatchOutcome {
            matched: true,
            selectors,
        }
    }
}

/// Command lines parsed and paths located while evaluating one call's input, keyed by their
/// text.
///
/// Parsing dominates the cost of a `shell` matcher, and locating (normalising, resolving
/// symlinks) that of a `path`, `workspace` or `policy_files` matcher; judging the result is
/// cheap. A cache lives for one call (it holds that call's strings), one [`MatchContext`]
/// (paths are located against its workspace root and home) and one command table (command
/// lines are analysed with it), and is not shared between threads.
#[derive(Debug, Default)]
pub struct ParseCache {
    // A call has few command lines: a linear search beats hashing here. It may name many
    // paths (a patch's files, an archive's entries), so those are hashed.
    entries: Vec<(String, Arc<Analysed>)>,
    paths: HashMap<String, Option<Arc<Location>>, foldhash::fast::RandomState>,
    table: Option<Arc<CommandTable>>,
}

impl ParseCache {
    /// A cache whose command lines are analysed with `table`.
    pub fn with_table(table: Arc<CommandTable>) -> Self {
        Self {
            table: Some(table),
            ..Self::default()
        }
    }

    /// The command table lines are analysed with.
    pub fn table(&self) -> &CommandTable {
        self.table.as_deref().unwrap_or(CommandTable::none())
    }

    /// The analysed parse of `line` and the table, computed on first use.
    pub fn analysed(&mut self, line: &str) -> (&Analysed, &CommandTable) {
        let index = match self.entries.iter().position(|(text, _)| text == line) {
            Some(index) => index,
            None => {
                let analysed = Analysed::new(line, self.table());
                self.entries.push((line.to_owned(), Arc::new(analysed)));
                self.entries.len() - 1
            }
        };
        let table = self.table.as_deref().unwrap_or(CommandTable::none());
        // INVARIANT: `index` is in bounds: found above or just pushed.
        (&self.entries[index].1, table)
    }

    /// Makes `line` read as `analysed` (one part of a line, judged on its own).
    pub fn seed(&mut self, line: &str, analysed: Arc<Analysed>) {
        self.entries.retain(|(text, _)| text != line);
        self.entries.push((line.to_owned(), analysed));
    }

    /// Records where the path `raw` leads, known to the caller (a file found by listing
    /// its folder).
    pub(crate) fn seed_path(&mut self, raw: &str, location: Location) {
        self.paths.insert(raw.to_owned(), Some(Arc::new(location)));
    }

    /// Where the path `raw` leads (`None` for an empty path), computed on first use.
    pub fn path(&mut self, raw: &str, ctx: &MatchContext) -> Option<&Arc<Location>> {
        if !self.paths.contains_key(raw) {
            self.paths
                .insert(raw.to_owned(), locate(raw, ctx).map(Arc::new));
        }
        self.paths.get(raw).and_then(Option::as_ref)
    }
}

/// Whether a line only reads, by the command table: it parses, every command it runs is
/// known to the table as read-only (wrappers are judged through what they run), no command
/// hides another, evaluates an expression or writes a file, and every environment
/// assignment is harmless — or, alone on its command (`n=0; …`), sets a shell variable of
/// the script's own: a name with a lower-case letter that the table does not list as
/// changing what programs do or as a secret (programs read upper-case names; `http_proxy`
/// and zsh's `path` are listed).
pub fn line_is_read_only(analysed: &Analysed, table: &CommandTable) -> bool {
    let Ok(script) = &analysed.script else {
        return false;
    };
    // (A subscript, `x[$(cmd)]=1`, is evaluated: no variable of its own.)
    let own_variable = |name: &str| {
        name.chars().all(super::shell::name_char)
            && name.bytes().any(|b| b.is_ascii_lowercase())
            && !table.effective_env(name)
            && !table.secret_env(name)
    };
    script.unresolved.is_empty()
        && script.constructs.is_empty()
        && !script.commands.is_empty()
        && analysed.commands().all(|(command, facts)| {
            let alone = command.words.is_empty();
            command.assignments.iter().all(|assignment| {
                table.harmless_env(&assignment.name) || (alone && own_variable(&assignment.name))
            }) && command.file_writes().next().is_none()
                && (command.role == Role::TransparentWrapper
                    || facts.read_only
                    || (alone && !command.assignments.is_empty()))
                && !command
                    .words
                    .iter()
                    .any(|w| matches!(w.kind, super::shell::WordKind::Opaque(_)))
        })
}

/// Parses regexes one by one, for positions (parsing builds no automaton).
fn parse_regexes(patterns: &[String]) -> Result<(), Vec<(usize, Option<usize>, String)>> {
    let errors: Vec<_> = patterns
        .iter()
        .enumerate()
        .filter_map(|(index, pattern)| {
            regex_error_position(pattern).map(|(offset, message)| (index, offset, message))
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Compiles parsed regexes once, as a set.
fn compile_regexes(patterns: &[String]) -> Result<RegexSet, Vec<(usize, Option<usize>, String)>> {
    parse_regexes(patterns)?;
    RegexSet::new(patterns).map_err(|set_error| {
        // Parsed but not compiled: a size limit. Name the pattern that exceeds it.
        let culprits: Vec<_> = patterns
            .iter()
            .enumerate()
            .filter_map(|(index, pattern)| {
                regex::Regex::new(pattern)
                    .err()
                    .map(|err| (index, None, last_line(&err.to_string())))
            })
            .collect();
        if culprits.is_empty() {
            vec![(0, None, last_line(&set_error.to_string()))]
        } else {
            culprits
        }
    })
}

/// The last line of a `regex` error, as a diagnostic message (lowercase, no period).
fn last_line(message: &str) -> String {
    let line = message.lines().last().unwrap_or("invalid regex").trim();
    lowercase_first(line.strip_suffix('.').unwrap_or(line))
}

/// The byte offset and one-line message of a regex syntax error, from `regex-syntax`.
fn regex_error_position(pattern: &str) -> Option<(Option<usize>, String)> {
    // Translating the syntax tree can only fail on a Unicode class (`\p{..}`, `\P{..}`) or
    // inside a flag group that turns Unicode off (every Unicode table is compiled in), so a
    // pattern with neither is checked by the parse alone, which costs half as much.
    if !(pattern.contains("\\p") || pattern.contains("\\P") || pattern.contains("(?")) {
        return regex_syntax::ast::parse::Parser::new()
            .parse(pattern)
            .err()
            .map(|err| (Some(err.span().start.offset), err.kind().to_string()));
    }
    match regex_syntax::Parser::new().parse(pattern) {
        Ok(_) => None,
        Err(regex_syntax::Error::Parse(err)) => {
            Some((Some(err.span().start.offset), err.kind().to_string()))
        }
        Err(regex_syntax::Error::Translate(err)) => {
            Some((Some(err.span().start.offset), err.kind().to_string()))
        }
        Err(other) => Some((None, other.to_string())),
    }
}

/// JSON equality with numbers compared by value.
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || matches!((x.as_f64(), y.as_f64()), (Some(x), Some(y)) if x == y)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// What one matcher kind found for one string.
enum Found {
    Pattern(Option<usize>),
    ReadOnly {
        read_only: bool,
        expected: bool,
    },
    Path {
        holds: bool,
        condition: PathCondition,
        side: Side,
        path: Option<Arc<Location>>,
    },
    Shell(ShellVerdict),
}

impl Found {
    fn holds(&self) -> bool {
        match self {
            Self::Pattern(index) => index.is_some(),
            Self::ReadOnly {
                read_only,
                expected,
            } => read_only == expected,
            Self::Path { holds, .. } => *holds,
            Self::Shell(verdict) => verdict.holds(),
        }
    }

    fn into_detail(self, element: Option<usize>) -> CheckDetail {
        match self {
            Self::Pattern(pattern) => CheckDetail::Pattern { element, pattern },
            Self::ReadOnly { read_only, .. } => CheckDetail::ReadOnly { element, read_only },
            Self::Path {
                condition,
                side,
                path,
                ..
            } => CheckDetail::Path {
                element,
                condition,
                side,
                path,
            },
            Self::Shell(verdict) => CheckDetail::Shell { element, verdict },
        }
    }

    /// A `workspace` or `policy_files` condition judged on the location of `raw`.
    fn place(
        raw: &str,
        ctx: &MatchContext,
        mode: MatchMode,
        cache: &mut ParseCache,
        condition: PathCondition,
        holds_at: impl FnMut(&super::path::NormalisedPath) -> bool,
    ) -> Self {
        let path = cache.path(raw, ctx).cloned();
        let judgement = path
            .as_deref()
            .map(|location| location.judge(mode, holds_at));
        Self::Path {
            holds: judgement.is_some_and(|j| j.holds),
            condition,
            side: judgement.map_or(Side::Written, |j| j.side),
            path,
        }
    }
}

fn check(
    matcher: &Compiled,
    (value, input): (Option<&Value>, &Value),
    ctx: &MatchContext,
    mode: MatchMode,
    cache: &mut ParseCache,
) -> Check {
    let kind = matcher.kind();
    let (holds, detail) = match matcher {
        Compiled::Exists(expected) => {
            let present = value.is_some();
            (present == *expected, CheckDetail::Presence { present })
        }
        Compiled::Equals(expected) => match value {
            None => (false, CheckDetail::Missing),
            Some(value) => {
                let equal = json_eq(value, expected);
                (equal, CheckDetail::Equality { equal })
            }
        },
        Compiled::Glob(deferred) => match deferred.globs() {
            Ok(set) => over_strings(value, mode, |s| Found::Pattern(set.first_match(s))),
            Err((_, message)) => unbuilt(mode, message),
        },
        Compiled::Regex(deferred) => match deferred.regex_set() {
            Ok(set) => over_strings(value, mode, |s| {
                Found::Pattern(set.matches(s).iter().next())
            }),
            Err((_, message)) => unbuilt(mode, message),
        },
        Compiled::Reaches(reaches) => over_strings(value, mode, |s| {
            Found::Pattern(reaches.reached(s, input, ctx))
        }),
        Compiled::Workspace(side) => over_strings(value, mode, |s| {
            Found::place(s, ctx, mode, cache, PathCondition::Workspace, |place| {
                place.workspace_side() == *side
            })
        }),
        Compiled::PolicyFiles(expected) => over_strings(value, mode, |s| {
            Found::place(s, ctx, mode, cache, PathCondition::PolicyFiles, |place| {
                place.is_policy_file() == *expected
            })
        }),
        Compiled::GitRuns(expected) => over_strings(value, mode, |s| {
            Found::place(s, ctx, mode, cache, PathCondition::GitRuns, |place| {
                place.is_git_run() == *expected
            })
        }),
        Compiled::Path(matcher) => match matcher.build(ctx.path_case()) {
            Ok(()) => over_strings(value, mode, |s| {
                let verdict = matcher.judge(cache.path(s, ctx).cloned(), ctx, mode);
                Found::Path {
                    holds: verdict.holds,
                    condition: PathCondition::Patterns {
                        matched: verdict.pattern,
                    },
                    side: verdict.side,
                    path: verdict.path,
                }
            }),
            Err(message) => unbuilt(mode, &message),
        },
        Compiled::Shell(matcher) => over_strings(value, mode, |s| {
            let (analysed, table) = cache.analysed(s);
            Found::Shell(matcher.evaluate_analysed(analysed, table, mode))
        }),
        Compiled::ReadOnly(expected) => over_strings(value, mode, |s| {
            let (analysed, table) = cache.analysed(s);
            Found::ReadOnly {
                read_only: line_is_read_only(analysed, table),
                expected: *expected,
            }
        }),
    };
    Check {
        kind,
        holds,
        detail,
    }
}

/// A `reaches` condition: the paths a glob must not match, and the field naming the folder
/// it is taken in.
#[derive(Debug, Clone)]
struct Reaches {
    paths: Box<[String]>,
    from: Option<String>,
}

impl Reaches {
    /// The first of the paths that the glob `text` matches (`*` stays within a folder, as a
    /// search tool reads its file filter). The glob is [widened](widened) to what an agent's
    /// glob library may read in it and matched without regard to case (Gemini CLI's
    /// tools ignore it). `~/x` is reached by a glob written with the home folder's path
    /// too (`/home/dev/**`). A text that is not a glob even widened reaches nothing: the
    /// tool refuses it, and searches nothing.
    fn reached(&self, text: &str, input: &Value, ctx: &MatchContext) -> Option<usize> {
        readings(text)
            .iter()
            .find_map(|reading| self.reached_as(reading, input, ctx))
    }

    /// [`Self::reached`] for one reading of the glob ([`readings`]).
    fn reached_as(&self, text: &str, input: &Value, ctx: &MatchContext) -> Option<usize> {
        let text = widened(text);
        let Some(from) = &self.from else {
            let glob = glob_matcher(&text)?;
            let home = ctx.home();
            let at_home = |path: &String| {
                let rest = path.strip_prefix('~')?;
                Some(format!("{}{rest}", home?.trim_end_matches('/')))
            };
            return self.paths.iter().position(|path| {
                glob.is_match(path) || at_home(path).is_some_and(|absolute| glob.is_match(absolute))
            });
        };
        // As a location: the folder part located in the folder the call names, the rest
        // matched below it.
        let folder = input
            .get(from)
            .and_then(Value::as_str)
            .filter(|folder| !folder.is_empty())
            .unwrap_or(".");
        let (start, rest) = split_glob(&text);
        let joined = if start.starts_with(['/', '~']) || start.starts_with("$HOME") {
            start
        } else {
            format!("{}/{start}", folder.trim_end_matches('/'))
        };
        // `..` below a wildcard leads anywhere a link below it may lead.
        let anywhere = rest.as_deref().is_some_and(|rest| {
            rest.split('/')
                .any(crate::policy::shell::wildcard::may_name_parent)
        });
        let location = locate(&unescape_glob(&joined), ctx);
        let places: Vec<&str> = match &location {
            Some(Location::Known { .. }) if !anywhere => [Side::Written, Side::Resolved]
                .into_iter()
                .filter_map(|side| location.as_ref()?.at(side))
                .map(|place| place.absolute())
                .collect(),
            // Where it starts cannot be told: it may reach anything.
            _ => return Some(0),
        };
        let targets: Vec<String> = self
            .paths
            .iter()
            .map(
                |path| match locate(path, ctx).as_ref().and_then(|l| l.at(Side::Written)) {
                    Some(place) => place.absolute().to_owned(),
                    None => path.clone(),
                },
            )
            .collect();
        places.iter().find_map(|place| {
            let glob = match &rest {
                Some(rest) => format!("{}/{rest}", escape_glob(place.trim_end_matches('/'))),
                None => escape_glob(place),
            };
            let glob = glob_matcher(&glob)?;
            targets.iter().position(|target| glob.is_match(target))
        })
    }
}

/// The matcher of a glob read as a search tool reads it: `*` within a folder, case ignored.
fn glob_matcher(text: &str) -> Option<globset::GlobMatcher> {
    Some(
        globset::GlobBuilder::new(text)
            .literal_separator(true)
            .case_insensitive(true)
            .build()
            .ok()?
            .compile_matcher(),
    )
}

/// A matcher whose automaton cannot be built fails closed: it holds for deny and ask rules
/// ([`MatchMode::Any`]) and not for allow rules.
fn unbuilt(mode: MatchMode, message: &str) -> (bool, CheckDetail) {
    (
        mode == MatchMode::Any,
        CheckDetail::Unbuilt {
            message: message.to_owned(),
        },
    )
}

/// [`check`]`.holds` without the detail.
fn holds(
    matcher: &Compiled,
    (value, input): (Option<&Value>, &Value),
    ctx: &MatchContext,
    mode: MatchMode,
    cache: &mut ParseCache,
) -> bool {
    match matcher {
        Compiled::Exists(expected) => value.is_some() == *expected,
        Compiled::Equals(expected) => value.is_some_and(|value| json_eq(value, expected)),
        Compiled::Glob(deferred) => match deferred.globs() {
            Ok(set) => strings_hold(value, mode, |s| set.is_match(s)),
            Err(_) => mode == MatchMode::Any,
        },
        Compiled::Regex(deferred) => match deferred.regex_set() {
            Ok(set) => strings_hold(value, mode, |s| set.is_match(s)),
            Err(_) => mode == MatchMode::Any,
        },
        Compiled::Reaches(reaches) => {
            strings_hold(value, mode, |s| reaches.reached(s, input, ctx).is_some())
        }
        Compiled::Workspace(side) => strings_hold(value, mode, |s| {
            cache.path(s, ctx).is_some_and(|location| {
                location
                    .judge(mode, |place| place.workspace_side() == *side)
                    .holds
            })
        }),
        Compiled::PolicyFiles(expected) => strings_hold(value, mode, |s| {
            cache.path(s, ctx).is_some_and(|location| {
                location
                    .judge(mode, |place| place.is_policy_file() == *expected)
                    .holds
            })
        }),
        Compiled::GitRuns(expected) => strings_hold(value, mode, |s| {
            cache.path(s, ctx).is_some_and(|location| {
                location
                    .judge(mode, |place| place.is_git_run() == *expected)
                    .holds
            })
        }),
        Compiled::Path(matcher) => match matcher.build(ctx.path_case()) {
            Ok(()) => strings_hold(value, mode, |s| {
                cache.path(s, ctx).is_some_and(|location| {
                    location
                        .judge(mode, |place| {
                            matcher.matches_normalised(place, ctx, mode).is_some()
                        })
                        .holds
                })
            }),
            Err(_) => mode == MatchMode::Any,
        },
        Compiled::Shell(matcher) => strings_hold(value, mode, |s| {
            let (analysed, table) = cache.analysed(s);
            matcher.evaluate_analysed(analysed, table, mode).holds()
        }),
        Compiled::ReadOnly(expected) => strings_hold(value, mode, |s| {
            let (analysed, table) = cache.analysed(s);
            line_is_read_only(analysed, table) == *expected
        }),
    }
}

/// [`over_strings`]`.0` without the detail.
fn strings_hold(
    value: Option<&Value>,
    mode: MatchMode,
    mut holds: impl FnMut(&str) -> bool,
) -> bool {
    match value {
        Some(Value::String(s)) => holds(s),
        Some(Value::Array(items)) if items.is_empty() => false,
        Some(Value::Array(items)) => match mode {
            MatchMode::All => items
                .iter()
                .all(|item| item.as_str().is_some_and(&mut holds)),
            MatchMode::Any => items
                .iter()
                .any(|item| item.as_str().is_some_and(&mut holds)),
        },
        None | Some(_) => false,
    }
}

/// Applies a string matcher to a string or to the elements of an array (see module docs).
fn over_strings(
    value: Option<&Value>,
    mode: MatchMode,
    mut find: impl FnMut(&str) -> Found,
) -> (bool, CheckDetail) {
    match value {
        None => (false, CheckDetail::Missing),
        Some(Value::String(s)) => {
            let found = find(s);
            (found.holds(), found.into_detail(None))
        }
        Some(Value::Array(items)) if items.is_empty() => (false, CheckDetail::EmptyArray),
        Some(Value::Array(items)) => match mode {
            MatchMode::All => {
                let mut last = None;
                for (i, item) in items.iter().enumerate() {
                    let Some(s) = item.as_str() else {
                        return (false, CheckDetail::WrongType { element: Some(i) });
                    };
                    let found = find(s);
                    if !found.holds() {
                        return (false, found.into_detail(Some(i)));
                    }
                    last = Some(found.into_detail(Some(i)));
                }
                (true, last.unwrap_or(CheckDetail::EmptyArray))
            }
            MatchMode::Any => {
                for (i, item) in items.iter().enumerate() {
                    if let Some(s) = item.as_str() {
                        let found = find(s);
                        if found.holds() {
                            return (true, found.into_detail(Some(i)));
                        }
                    }
                }
                (false, CheckDetail::NoElementMatched)
            }
        },
        Some(_) => (false, CheckDetail::WrongType { element: None }),
    }
}

/// The kinds of argument matcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatcherKind {
    /// `glob`.
    Glob,
    /// `regex`.
    Regex,
    /// `reaches`.
    Reaches,
    /// `equals`.
    Equals,
    /// `exists`.
    Exists,
    /// `path`.
    Path,
    /// `workspace`.
    Workspace,
    /// `policy_files`.
    PolicyFiles,
    /// `git_runs`.
    GitRuns,
    /// `shell`.
    Shell,
    /// `read_only`.
    ReadOnly,
}

impl fmt::Display for MatcherKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Glob => "glob",
            Self::Regex => "regex",
            Self::Reaches => "reaches",
            Self::Equals => "equals",
            Self::Exists => "exists",
            Self::Path => "path",
            Self::Workspace => "workspace",
            Self::PolicyFiles => "policy_files",
            Self::GitRuns => "git_runs",
            Self::Shell => "shell",
            Self::ReadOnly => "read_only",
        })
    }
}

/// Which condition on a path argument a [`CheckDetail::Path`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathCondition {
    /// `path`: the first pattern the deciding location matched, if any.
    Patterns {
        /// Index of the pattern.
        matched: Option<usize>,
    },
    /// `workspace`.
    Workspace,
    /// `policy_files`.
    PolicyFiles,
    /// `git_runs`.
    GitRuns,
}

/// The result of evaluating a rule's argument matchers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchOutcome {
    /// Whether every selector held.
    pub matched: bool,
    /// The selectors evaluated, in order; evaluation stops at the first that fails, so when
    /// `matched` is false the last entry says why.
    pub selectors: Vec<SelectorOutcome>,
}

impl MatchOutcome {
    /// The check that made the rule fail, if it did.
    #[cfg(test)]
    pub fn failure(&self) -> Option<(&str, &Check)> {
        let last = self.selectors.last()?;
        if last.holds {
            return None;
        }
        last.checks
            .last()
            .map(|check| (last.selector.as_ref(), check))
    }
}

impl fmt::Display for MatchOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for selector in &self.selectors {
            for check in &selector.checks {
                if !first {
                    f.write_str("; ")?;
                }
                first = false;
                write!(
                    f,
                    "`{}` {}: {}",
                    selector.selector, check.kind, check.detail
                )?;
            }
        }
        if first {
            f.write_str("no argument matchers")?;
        }
        Ok(())
    }
}

/// What happened for one selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorOutcome {
    /// The selector as written.
    pub selector: Arc<str>,
    /// Whether all its matcher kinds held.
    pub holds: bool,
    /// The kinds evaluated, in order, up to the first that failed.
    pub checks: Vec<Check>,
}

/// What one matcher kind found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The kind.
    pub kind: MatcherKind,
    /// Whether it held.
    pub holds: bool,
    /// Details.
    pub detail: CheckDetail,
}

/// Details of a [`Check`]. `element` is the array index the detail is about, if the value
/// was an array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckDetail {
    /// The selector did not resolve.
    Missing,
    /// `exists`: whether the argument was present.
    Presence { present: bool },
    /// `equals`: whether it was equal.
    Equality { equal: bool },
    /// The value (or an element) is not a string.
    WrongType { element: Option<usize> },
    /// The value is an empty array.
    EmptyArray,
    /// [`MatchMode::Any`]: no element of the array matched.
    NoElementMatched,
    /// `glob` / `regex`: the first pattern that matched, if any.
    Pattern {
        element: Option<usize>,
        pattern: Option<usize>,
    },
    /// `path`, `workspace`, `policy_files`: where the argument leads (`None` for an empty
    /// path), the location that decided, and what was found there.
    Path {
        element: Option<usize>,
        condition: PathCondition,
        side: Side,
        path: Option<Arc<Location>>,
    },
    /// `shell`: the verdict on the command line.
    Shell {
        element: Option<usize>,
        verdict: ShellVerdict,
    },
    /// `read_only`: whether the command line only reads.
    ReadOnly {
        element: Option<usize>,
        read_only: bool,
    },
    /// The patterns parse but their automaton cannot be built (a size limit): the matcher
    /// fails closed.
    Unbuilt {
        /// Why it cannot be built.
        message: String,
    },
}

impl fmt::Display for CheckDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Written straight into the formatter: the deciding rule's detail is formatted on
        // every decision.
        let at = |f: &mut fmt::Formatter<'_>, element: &Option<usize>| match element {
            Some(i) => write!(f, "element {i}: "),
            None => Ok(()),
        };
        match self {
            Self::Missing => f.write_str("argument is missing"),
            Self::Presence { present: true } => f.write_str("argument is present"),
            Self::Presence { present: false } => f.write_str("argument is absent"),
            Self::Equality { equal: true } => f.write_str("value is equal"),
            Self::Equality { equal: false } => f.write_str("value differs"),
            Self::WrongType { element } => {
                at(f, element)?;
                f.write_str("not a string")
            }
            Self::EmptyArray => f.write_str("empty array"),
            Self::NoElementMatched => f.write_str("no element matched"),
            Self::Pattern { element, pattern } => {
                at(f, element)?;
                match pattern {
                    Some(i) => write!(f, "matched pattern #{i}"),
                    None => f.write_str("no pattern matched"),
                }
            }
            Self::Path {
                element,
                condition,
                side,
                path,
            } => {
                at(f, element)?;
                let Some(location) = path.as_deref() else {
                    return f.write_str("an empty path");
                };
                let Some(place) = location.at(*side) else {
                    return write!(f, "{location}; failing closed");
                };
                write!(f, "{location}")?;
                match condition {
                    PathCondition::Patterns { matched: Some(i) } => {
                        write!(f, " matched pattern #{i}")?;
                    }
                    PathCondition::Patterns { matched: None } => {
                        f.write_str(" matched no pattern")?;
                    }
                    PathCondition::Workspace => {
                        write!(f, " is {} the workspace", place.workspace_side().as_str())?;
                    }
                    PathCondition::PolicyFiles if place.is_policy_file() => {
                        f.write_str(" is a loaded policy file")?;
                    }
                    PathCondition::PolicyFiles => f.write_str(" is not a loaded policy file")?,
                    PathCondition::GitRuns if place.is_git_run() => {
                        f.write_str(" is run by git (the repository's config names it)")?;
                    }
                    PathCondition::GitRuns => f.write_str(" is not run by git")?,
                }
                match (location, side) {
                    (
                        Location::Known {
                            resolved: Some(_), ..
                        },
                        Side::Written,
                    ) => f.write_str(" (written location)"),
                    (
                        Location::Known {
                            resolved: Some(_), ..
                        },
                        Side::Resolved,
                    ) => f.write_str(" (resolved location)"),
                    (Location::Known { resolved: None, .. } | Location::Unknown { .. }, _) => {
                        Ok(())
                    }
                }
            }
            Self::Shell { element, verdict } => {
                at(f, element)?;
                write!(f, "{verdict}")
            }
            Self::ReadOnly { element, read_only } => {
                at(f, element)?;
                f.write_str(if *read_only {
                    "the command line only reads"
                } else {
                    "the command line does more than read"
                })
            }
            Self::Unbuilt { message } => write!(
                f,
                "the patterns cannot be built ({message}); failing closed"
            ),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn specs(entries: Value) -> IndexMap<String, ArgMatcher> {
        serde_json::from_value(entries).unwrap()
    }

    fn compile(entries: Value) -> CompiledArgMatchers {
        CompiledArgMatchers::compile(&specs(entries)).unwrap()
    }

    fn ctx() -> MatchContext {
        MatchContext::new("/ws")
            .with_policy_locations(["/ws/policies"])
            .with_path_case(PathCase::Sensitive)
    }

    /// A glob reaches a home folder's file however it names the folder: `~`, or its path.
    #[test]
    fn a_glob_reaches_home_files_by_the_home_path_too() {
        let reaches = |from: Option<&str>| Reaches {
            paths: ["~/.ssh/id_rsa".to_owned(), "~/.aws/credentials".to_owned()].into(),
            from: from.map(str::to_owned),
        };
        let home = ctx().with_home("/home/dev");
        let reached = |glob: &str, input: Value, ctx: &MatchContext| {
            [reaches(None), reaches(Some("path"))].map(|r| r.reached(glob, &input, ctx))
        };
        let none = json!({});
        assert_eq!(reached("~/.s?h/*", none.clone(), &home), [Some(0); 2]);
        assert_eq!(reached("/home/dev/**", none.clone(), &home), [Some(0); 2]);
        assert_eq!(reached("/home/*/.a?s/*", none.clone(), &home), [Some(1); 2]);
        assert_eq!(reached("/home/dev/notes/*", none.clone(), &home), [None; 2]);
        assert_eq!(reached("/home/dev/**", none.clone(), &ctx()), [None; 2]);
        // As agents' glob libraries read it: extglobs, brackets, any case.
        assert_eq!(reached("~/@(.ssh)/*", none.clone(), &home), [Some(0); 2]);
        assert_eq!(reached("~/.[!A]ws/*", none.clone(), &home), [Some(1); 2]);
        assert_eq!(reached("~/.SSH/*", none.clone(), &home), [Some(0); 2]);
        // Taken in the folder the call names, only with `reaches_from`.
        let in_home = json!({ "path": "~" });
        assert_eq!(reached(".s?h/*", in_home.clone(), &home), [None, Some(0)]);
        assert_eq!(reached("./.s?h/*", in_home.clone(), &home), [None, Some(0)]);
        assert_eq!(reached("x/../.a?s/*", in_home, &home), [None, Some(1)]);
        let in_app = json!({ "path": "/home/dev/app" });
        assert_eq!(reached("../.a?s/*", in_app.clone(), &home), [None, Some(1)]);
        assert_eq!(reached("notes/*.md", in_app, &home), [None; 2]);
        let above = json!({ "path": "/home" });
        assert_eq!(reached("dev/.s?h/*", above, &home), [None, Some(0)]);
        // `..` below a wildcard may lead anywhere.
        assert_eq!(reached("src/*/../x", none, &home), [None, Some(0)]);
    }

    proptest::proptest! {
        /// The parse-only check of patterns without Unicode classes or flag groups agrees
        /// with the full parse (syntax tree and translation) on every pattern.
        #[test]
        fn the_quick_regex_check_agrees_with_the_full_parse(
            pattern in proptest::collection::vec(
                proptest::sample::select(vec![
                    "a", "Z", "0", ".", "*", "+", "?", "|", "^", "$", "(", ")", "[", "]", "{",
                    "}", "-", ",", "2", "\\", "\\w", "\\d", "\\b", "\\x", "\\xFF", "\\p",
                    "\\pL", "\\p{Greek}", "\\p{Nope}", "\\P", "(?", "(?i)", "(?-u)", "(?-u:",
                    "u", "i", ":", "\u{e9}", "[[:alpha:]]", "[a-", "x{2,1}",
                ]),
                0..8,
            )
        ) {
            let pattern = pattern.concat();
            let quick = regex_error_position(&pattern);
            let full = regex_syntax::Parser::new().parse(&pattern);
            proptest::prop_assert_eq!(quick.is_some(), full.is_err(), "{}", pattern);
        }
    }

    /// `reaches`: the value is a glob, and the matcher holds when it matches a listed path,
    /// however it is spelled; the explanation and the cheap check agree.
    #[test]
    fn a_glob_value_reaches_the_paths_it_matches() {
        let matchers = compile(json!({ "glob": { "reaches": [".env", "x.pem", ".ssh/id_rsa"] } }));
        let mut cache = ParseCache::default();
        for (glob, reached) in [
            (".env", Some(0)),
            (".en?", Some(0)),
            (".e[n]v", Some(0)),
            ("**/.e*", Some(0)),
            ("{*.rs,.env}", Some(0)),
            ("*.pe[m]", Some(1)),
            (".s?h/*", Some(2)),
            ("*.rs", None),
            (".envrc", None),
            ("*/id_rsa", Some(2)),
            ("[", None),
        ] {
            let input = json!({ "glob": glob });
            let outcome = matchers.matches(&input, &ctx(), MatchMode::Any);
            assert_eq!(outcome.matched, reached.is_some(), "{glob}");
            assert!(
                matches!(
                    outcome.selectors[0].checks[0].detail,
                    CheckDetail::Pattern { pattern, .. } if pattern == reached
                ),
                "{glob}"
            );
            assert_eq!(
                matchers.holds_with_cache(&input, &ctx(), MatchMode::Any, &mut cache),
                reached.is_some(),
                "{glob}"
            );
        }
    }

    #[test]
    fn an_automaton_too_big_to_build_is_reported_by_build_and_fails_closed() {
        // Parses (so compiling the rule succeeds) but exceeds the regex size limit.
        let matchers = compile(json!({ "command": { "regex": ["ok", "\\w{1000}"] } }));
        let errors = matchers.build(PathCase::Sensitive).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].kind, PatternKind::Regex);
        assert_eq!(errors[0].selector, "command");
        assert_eq!(
            errors[0].pattern_index,
            Some(1),
            "the pattern that is too big"
        );
        assert!(
            errors[0].message.contains("size limit"),
            "{}",
            errors[0].message
        );
        let input = json!({ "command": "anything" });
        // Deny and ask rules (any): the matcher holds; allow rules (all): it does not.
        let any = matchers.matches(&input, &ctx(), MatchMode::Any);
        assert!(any.matched);
        assert!(matches!(
            any.selectors[0].checks[0].detail,
            CheckDetail::Unbuilt { .. }
        ));
        assert!(!matchers.matches(&input, &ctx(), MatchMode::All).matched);
        let mut cache = ParseCache::default();
        assert!(matchers.holds_with_cache(&input, &ctx(), MatchMode::Any, &mut cache));
        assert!(!matchers.holds_with_cache(&input, &ctx(), MatchMode::All, &mut cache));
        assert_eq!(
            any.selectors[0].checks[0].detail.to_string(),
            "the patterns cannot be built (compiled regex exceeds size limit of 10485760 bytes); failing closed"
        );
    }

    #[test]
    fn automata_are_built_on_first_use_and_match_like_built_ones() {
        let spec = json!({
            "path": { "glob": ["*.rs"], "regex": ["^src/"], "path": ["src/**"] }
        });
        let lazy = compile(spec.clone());
        let built = compile(spec.clone());
        built.build(PathCase::Sensitive).unwrap();
        // Built, then released (as a load does after checking a rule's examples): built
        // again on the next use.
        let mut released = compile(spec);
        released.build(PathCase::Sensitive).unwrap();
        released.release();
        for path in ["src/a.rs", "docs/a.md", "src/x/y.rs", "/ws/src/a.rs"] {
            let input = json!({ "path": path });
            for mode in [MatchMode::All, MatchMode::Any] {
                let expected = built.matches(&input, &ctx(), mode);
                assert_eq!(
                    lazy.matches(&input, &ctx(), mode),
                    expected,
                    "{path} {mode:?}"
                );
                assert_eq!(
                    released.matches(&input, &ctx(), mode),
                    expected,
                    "{path} {mode:?}"
                );
            }
        }
    }

    #[test]
    fn pointers_resolve_as_rfc_6901_says() {
        let input = json!({
            "a/b": {"m~n": [10, {"x": true}]},
            "list": ["zero", "one"],
            "": {"": "empty keys"},
            "01": "key, not index",
        });
        let pointers = [
            "/a~1b/m~0n/1/x",
            "/a~1b/m~0n/0",
            "/list/1",
            "/list/01",
            "/list/+1",
            "/list/2",
            "/list/-",
            "//",
            "/01",
            "/a~1b/m~0n/1/x/deeper",
            "/missing/x",
        ];
        for pointer in pointers {
            let Ok(selector) = Selector::parse(pointer) else {
                panic!("{pointer} should parse");
            };
            assert_eq!(
                selector.resolve(&input),
                input.pointer(pointer),
                "pointer {pointer}"
            );
        }
    }

    #[test]
    fn reports_every_compile_error_with_its_position() {
        let errors = CompiledArgMatchers::compile(&specs(json!({
            "command": { "shell": ["git status", "ls; rm"], "regex": ["ok", "a(b", "x{2,1}"] },
            "name": { "glob": ["*.rs", "src/[ab", "{a,b"] },
            "/a~2b": { "exists": true },
            "": { "exists": true },
            "file": { "path": ["**/x", "a\\"] },
        })))
        .unwrap_err();
        let summary: Vec<(String, PatternKind, Option<usize>, Option<usize>)> = errors
            .iter()
            .map(|e| {
                (
                    e.selector.clone(),
                    e.kind,
                    e.pattern_index,
                    e.offset_in_pattern,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("command".to_owned(), PatternKind::Regex, Some(1), Some(1)),
                ("command".to_owned(), PatternKind::Regex, Some(2), Some(1)),
                ("command".to_owned(), PatternKind::Shell, Some(1), Some(2)),
                ("name".to_owned(), PatternKind::Glob, Some(1), Some(4)),
                ("name".to_owned(), PatternKind::Glob, Some(2), Some(0)),
                ("/a~2b".to_owned(), PatternKind::Pointer, None, Some(2)),
                (String::new(), PatternKind::Pointer, None, Some(0)),
                ("file".to_owned(), PatternKind::Path, Some(1), Some(1)),
            ]
        );
        assert_eq!(
            errors[0].to_string(),
            "`command`: invalid regex pattern #1 at byte 1: unclosed group"
        );
        assert_eq!(
            errors[3].to_string(),
            "`name`: invalid glob pattern #1 at byte 4: unclosed character class; missing ']'"
        );
    }

    #[test]
    fn evaluates_each_kind() {
        let table: &[(Value, Value, MatchMode, bool)] = &[
            (
                json!({"name": {"glob": ["*.rs"]}}),
                json!({"name": "src/main.rs"}),
                MatchMode::All,
                true,
            ),
            (
                json!({"name": {"glob": ["*.rs"]}}),
                json!({"name": "main.py"}),
                MatchMode::All,
                false,
            ),
            (
                json!({"name": {"regex": ["^git "]}}),
                json!({"name": "git log"}),
                MatchMode::All,
                true,
            ),
            (
                json!({"name": {"regex": ["log"]}}),
                json!({"name": "git log"}),
                MatchMode::All,
                true,
            ),
            (
                json!({"name": {"regex": ["^log$"]}}),
                json!({"name": "git log"}),
                MatchMode::All,
                false,
            ),
            (
                json!({"n": {"equals": 1}}),
                json!({"n": 1.0}),
                MatchMode::All,
                true,
            ),
            (
                json!({"n": {"equals": {"a": [1, "x"]}}}),
                json!({"n": {"a": [1, "x"]}}),
                MatchMode::All,
                true,
            ),
            (
                json!({"n": {"equals": "1"}}),
                json!({"n": 1}),
                MatchMode::All,
                false,
            ),
            (
                json!({"n": {"exists": true}}),
                json!({"n": null}),
                MatchMode::All,
                true,
            ),
            (
                json!({"n": {"exists": false}}),
                json!({}),
                MatchMode::All,
                true,
            ),
            (
                json!({"n": {"exists": false}}),
                json!({"n": 1}),
                MatchMode::All,
                false,
            ),
            (
                json!({"/a/b": {"equals": true}}),
                json!({"a": {"b": true}}),
                MatchMode::All,
                true,
            ),
            (
                json!({"/a/0": {"glob": ["x*"]}}),
                json!({"a": ["xy"]}),
                MatchMode::All,
                true,
            ),
            (
                json!({"/a~1b": {"exists": true}}),
                json!({"a/b": 1}),
                MatchMode::All,
                true,
            ),
            (
                json!({"f": {"path": ["**/.env"]}}),
                json!({"f": "a/../.env"}),
                MatchMode::Any,
                true,
            ),
            (
                json!({"f": {"path": ["src/**"]}}),
                json!({"f": ["src/a", "src/b"]}),
                MatchMode::All,
                true,
            ),
            (
                json!({"f": {"path": ["src/**"]}}),
                json!({"f": ["src/a", "../b"]}),
                MatchMode::All,
                false,
            ),
            (
                json!({"f": {"path": ["src/**"]}}),
                json!({"f": ["src/a", 3]}),
                MatchMode::All,
                false,
            ),
            (
                json!({"f": {"path": ["**/.env"]}}),
                json!({"f": ["a", ".env"]}),
                MatchMode::Any,
                true,
            ),
            (
                json!({"f": {"path": ["**/.env"]}}),
                json!({"f": []}),
                MatchMode::Any,
                false,
            ),
            (
                json!({"f": {"path": ["**"]}}),
                json!({"f": []}),
                MatchMode::All,
                false,
            ),
            (
                json!({"f": {"glob": ["*"]}}),
                json!({"f": 3}),
                MatchMode::Any,
                false,
            ),
            (
                json!({"f": {"glob": ["*"]}}),
                json!({}),
                MatchMode::Any,
                false,
            ),
            (
                json!({"f": {"workspace": "inside"}}),
                json!({"f": "src/../README.md"}),
                MatchMode::All,
                true,
            ),
            (
                json!({"f": {"workspace": "inside"}}),
                json!({"f": ["src/a", "../b"]}),
                MatchMode::All,
                false,
            ),
            (
                json!({"f": {"workspace": "outside"}}),
                json!({"f": ["src/a", "/etc/passwd"]}),
                MatchMode::Any,
                true,
            ),
            (
                json!({"f": {"workspace": "outside"}}),
                json!({"f": "~/.bashrc"}),
                MatchMode::Any,
                true,
            ),
            (
                json!({"f": {"workspace": "inside"}}),
                json!({"f": "~/notes"}),
                MatchMode::All,
                false,
            ),
            (
                json!({"f": {"workspace": "inside"}}),
                json!({"f": ""}),
                MatchMode::Any,
                false,
            ),
            (
                json!({"f": {"policy_files": true}}),
                json!({"f": "policies/rules.yaml"}),
                MatchMode::Any,
                true,
            ),
            (
                json!({"f": {"policy_files": true}}),
                json!({"f": "src/rules.yaml"}),
                MatchMode::Any,
                false,
            ),
            (
                json!({"f": {"policy_files": false, "path": ["**"]}}),
                json!({"f": "src/rules.yaml"}),
                MatchMode::All,
                true,
            ),
            (json!({"f": {}}), json!({}), MatchMode::All, true),
            (
                json!({"f": {"glob": ["a*"], "regex": ["z$"]}}),
                json!({"f": "abz"}),
                MatchMode::All,
                true,
            ),
            (
                json!({"f": {"glob": ["a*"], "regex": ["z$"]}}),
                json!({"f": "aby"}),
                MatchMode::All,
                false,
            ),
            (
                json!({"f": {"glob": ["a*"]}, "g": {"glob": ["b*"]}}),
                json!({"f": "a", "g": "c"}),
                MatchMode::All,
                false,
            ),
        ];
        for (spec, input, mode, expected) in table {
            let matchers = compile(spec.clone());
            let outcome = matchers.matches(input, &ctx(), *mode);
            assert_eq!(
                outcome.matched, *expected,
                "spec {spec} input {input} {mode:?}: {outcome}"
            );
            let fast = matchers.holds_with_cache(input, &ctx(), *mode, &mut ParseCache::default());
            assert_eq!(
                fast, *expected,
                "holds_with_cache: spec {spec} input {input} {mode:?}"
            );
        }
    }

    #[test]
    fn reads_only_the_selected_field() {
        let matchers = compile(json!({"command": {"shell": ["git status"]}}));
        let smuggled = json!({"command": "rm -rf /", "description": "git status"});
        assert!(!matchers.matches(&smuggled, &ctx(), MatchMode::All).matched);
        let nested = json!({"command": ["git status"], "x": "git status"});
        assert!(matchers.matches(&nested, &ctx(), MatchMode::All).matched);
        let wrong_type = json!({"command": {"command": "git status"}});
        assert!(
            !matchers
                .matches(&wrong_type, &ctx(), MatchMode::All)
                .matched
        );
    }

    #[test]
    fn a_cache_gives_the_same_outcomes() {
        let rules = [
            compile(json!({"command": {"shell": ["git status"]}})),
            compile(json!({"command": {"shell": ["git *"]}})),
            compile(json!({"command": {"shell": ["rm *"]}})),
        ];
        let mut cache = ParseCache::default();
        for line in ["git status", "git log; rm x", "echo 'x"] {
            let input = json!({ "command": line });
            for rule in &rules {
                for mode in [MatchMode::All, MatchMode::Any] {
                    let cached = rule.matches_with_cache(&input, &ctx(), mode, &mut cache);
                    assert_eq!(cached, rule.matches(&input, &ctx(), mode), "line {line:?}");
                }
            }
        }
        assert_eq!(cache.entries.len(), 3);
    }

    #[test]
    fn explains_what_matched_and_what_failed() {
        let matchers = compile(json!({
            "file_path": {"path": ["**/.env", "**/secrets/**"]},
            "command": {"shell": ["git status", "ls *"]},
        }));
        let input = json!({"file_path": "./foo/../secrets/key", "command": "ls; curl x | grep y"});
        let outcome = matchers.matches(&input, &ctx(), MatchMode::All);
        assert!(!outcome.matched);
        assert_eq!(
            outcome.to_string(),
            "`file_path` path: `secrets/key` (`/ws/secrets/key`) matched pattern #1; \
             `command` shell: `curl x`: no pattern matches this command"
        );
        let (selector, check) = outcome.failure().unwrap();
        assert_eq!((selector, check.kind), ("command", MatcherKind::Shell));
        let deny = matchers.matches(&input, &ctx(), MatchMode::Any);
        assert_eq!(
            deny.to_string(),
            "`file_path` path: `secrets/key` (`/ws/secrets/key`) matched pattern #1; \
             `command` shell: `ls` matched pattern #1"
        );
        let places = compile(json!({
            "f": {"workspace": "outside"},
            "g": {"policy_files": true},
        }));
        let outcome = places.matches(
            &json!({"f": "../x", "g": "./policies/a.yaml"}),
            &ctx(),
            MatchMode::Any,
        );
        assert_eq!(
            outcome.to_string(),
            "`f` workspace: `/x` is outside the workspace; \
             `g` policy_files: `policies/a.yaml` (`/ws/policies/a.yaml`) is a loaded policy file"
        );
        let unknown = places.matches(&json!({"f": "~/x", "g": "p"}), &ctx(), MatchMode::All);
        assert_eq!(
            unknown.to_string(),
            "`f` workspace: `~/x`, whose location is unknown (no home folder is known to expand \
             it); failing closed"
        );
    }
}

/// The module documentation's example, as a test (the module is crate-private, so rustdoc
/// cannot run it).
#[cfg(test)]
mod doc_example {
    #[test]
    fn a_shell_matcher_judges_every_command() {
        use crate::model::rule::{ArgMatcher, OneOrMany};
        use crate::policy::MatchContext;
        use crate::policy::matcher::CompiledArgMatchers;
        use crate::policy::mode::MatchMode;
        use indexmap::IndexMap;
        use serde_json::json;

        let mut spec = IndexMap::new();
        spec.insert(
            "command".to_owned(),
            ArgMatcher {
                shell: Some(OneOrMany::One("git status".into())),
                ..Default::default()
            },
        );
        let matchers = CompiledArgMatchers::compile(&spec).unwrap();
        let ctx = MatchContext::new("/work");
        assert!(
            matchers
                .matches(&json!({"command": "git status"}), &ctx, MatchMode::All)
                .matched
        );
        assert!(
            !matchers
                .matches(
                    &json!({"command": "git status; rm -rf /"}),
                    &ctx,
                    MatchMode::All
                )
                .matched
        );
    }
}
