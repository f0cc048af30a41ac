//! `toolgate import`: a reviewable toolgate policy file from the rule files an agent already
//! has — Claude Code `settings.json` permissions ([`claude`]), Codex `.rules` files
//! ([`codex`]) and Gemini CLI policy TOML ([`gemini`]).
//!
//! ```text
//! agent files ─read─▶ per-agent translation ─▶ rules + what was not translated
//!                                                   │
//!       YAML text (every rule commented with its origin) ◀─ render ◀─ verify by loading
//! ```
//!
//! Each agent module turns its files into [`Translation`]: toolgate rules, each with its
//! origin (file, place, original text) and notes on what it does not say exactly, plus the
//! entries that cannot be translated at all and why. Nothing is dropped silently: both are
//! written into the output as comments and returned as [`Note`]s for stderr. The output is
//! then loaded with the built-in policies, exactly as `toolgate check` would: an imported
//! example that toolgate judges differently from the source agent is moved out of the rule
//! into a comment, a rule toolgate refuses (a regex or glob it cannot compile) is listed as
//! not imported, both reported; any other problem is an error, so what `import` prints always
//! passes `check`.
//!
//! Rules from an organisation's files (Claude Code managed settings, Gemini CLI admin
//! policies) go to a second file, meant for `--enforced`.

pub mod claude;
pub mod codex;
pub mod gemini;

pub(crate) use crate::policy::shell::shell_word;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::diagnostics::Code;
use crate::snapshot::{LayerOptions, LoadOptions, load};

/// The agent whose files are imported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    /// Claude Code `settings.json` files.
    Claude,
    /// Codex `.rules` files.
    Codex,
    /// Gemini CLI policy `.toml` files.
    Gemini,
}

impl Agent {
    /// The name used on the command line and in rule names.
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }
}

/// Where an imported entry comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The file, as given.
    pub file: String,
    /// The place in it: `permissions.allow[2]`, `line 3`, `rule 4 (line 12)`.
    pub place: String,
    /// The original text of the entry.
    pub text: String,
}

impl Origin {
    fn describe(&self) -> String {
        format!("{} {}: {}", self.file, self.place, self.text)
    }
}

/// Something the output does not say exactly as the source did, or does not say at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// The entry it is about.
    pub origin: Origin,
    /// `true`: the entry was not imported; `false`: imported, but not exactly.
    pub dropped: bool,
    /// Why.
    pub why: String,
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.dropped {
            "not imported"
        } else {
            "imported inexactly"
        };
        write!(
            f,
            "{}: {} `{}`: {what}: {}",
            self.origin.file, self.origin.place, self.origin.text, self.why
        )
    }
}

/// One imported rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// A name hint; made unique when rendered.
    pub name: String,
    /// Toolgate tool names or globs.
    pub tools: Vec<String>,
    /// Only in these modes (empty: all).
    pub modes: Vec<String>,
    /// The argument matchers, by field.
    pub matchers: Vec<(String, Value)>,
    /// `allow`, `ask` or `deny`.
    pub decision: &'static str,
    /// Its priority.
    pub priority: i32,
    /// What the model is told when it denies.
    pub reason: Option<String>,
    /// Example calls: `true` must match, `false` must not.
    pub examples: Vec<(bool, Value)>,
    /// Where it comes from.
    pub origin: Origin,
    /// What it does not say exactly.
    pub inexact: Vec<String>,
    /// It belongs in the enforced (organisation) file.
    pub enforced: bool,
}

impl Rule {
    /// A rule with no matcher, no example and priority 0.
    pub fn new(
        name: impl Into<String>,
        tools: Vec<String>,
        decision: &'static str,
        origin: Origin,
    ) -> Self {
        Self {
            name: name.into(),
            tools,
            modes: Vec::new(),
            matchers: Vec::new(),
            decision,
            priority: 0,
            reason: None,
            examples: Vec::new(),
            origin,
            inexact: Vec::new(),
            enforced: false,
        }
    }
}

/// What a per-agent translation produced.
#[derive(Clone, Debug, Default)]
pub struct Translation {
    /// The rules, in source order.
    pub rules: Vec<Rule>,
    /// Entries that were not imported, with why (`dropped` is true).
    pub skipped: Vec<Note>,
    /// Modes the rules use that the built-in policies do not declare, with a description.
    pub modes: BTreeMap<String, String>,
}

impl Translation {
    fn skip(&mut self, origin: Origin, why: impl Into<String>) {
        self.skipped.push(Note {
            origin,
            dropped: true,
            why: why.into(),
        });
    }
}

/// The result of an import.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The policy file (YAML).
    pub policy: String,
    /// The enforced policy file (YAML), when the sources hold organisation rules.
    pub enforced: Option<String>,
    /// Everything not translated exactly: the imported rules' notes in rule order, then the
    /// entries not imported in source order.
    pub notes: Vec<Note>,
}

/// Why an import failed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A file could not be read.
    #[error("cannot read `{path}`: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A file is not valid in its format.
    #[error("{file}:{line}:{column}: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The translation does not load (a bug of the importer).
    #[error("the imported policy does not load: {0}")]
    Invalid(String),
}

/// Imports the files of an agent.
pub fn import(agent: Agent, paths: &[PathBuf]) -> Result<Imported, ImportError> {
    let mut sources = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|err| ImportError::Read {
            path: path.clone(),
            reason: err.to_string(),
        })?;
        sources.push((path.clone(), text));
    }
    let translation = match agent {
        Agent::Claude => claude::translate(&sources)?,
        Agent::Codex => codex::translate(&sources)?,
        Agent::Gemini => gemini::translate(&sources)?,
    };
    finish(agent, paths, translation)
}

/// The toolgate tool each of `agent`'s tools is decided as, by the built-in agent tool maps
/// (`policies/agents.yaml`, the maps `toolgate hook` uses): the importers translate the
/// agent's tool names through them rather than through a table of their own. Left out:
/// mappings that are disabled or name no tool, and those that fix input values (`set`) onto
/// a toolgate tool other agent tools map onto too — a rule on such a tool (Claude Code's
/// `NotebookEdit`, Gemini CLI's `list_directory`) would cover every call of the shared tool,
/// so it is not imported (and says so).
pub(crate) fn agent_tools(agent: &str) -> &'static BTreeMap<String, String> {
    static MAPS: std::sync::OnceLock<BTreeMap<String, BTreeMap<String, String>>> =
        std::sync::OnceLock::new();
    static NONE: BTreeMap<String, String> = BTreeMap::new();
    let maps = MAPS.get_or_init(|| {
        let outcome = load(&LoadOptions::new(LayerOptions::default()), 1);
        let Some(snapshot) = outcome.snapshot else {
            return BTreeMap::new();
        };
        snapshot
            .agents
            .iter()
            .map(|(name, spec)| {
                let live: Vec<(&String, &crate::model::agent::ToolMapping, &String)> = spec
                    .tools
                    .iter()
                    .filter(|(_, mapping)| mapping.disabled != Some(true))
                    .filter_map(|(tool, mapping)| Some((tool, mapping, mapping.tool.as_ref()?)))
                    .collect();
                let shared =
                    |target: &String| live.iter().filter(|(_, _, t)| *t == target).count() > 1;
                let tools = live
                    .iter()
                    .filter(|(_, mapping, target)| mapping.set.is_empty() || !shared(target))
                    .map(|(tool, _, target)| ((*tool).clone(), (*target).clone()))
                    .collect();
                (name.clone(), tools)
            })
            .collect()
    });
    maps.get(agent).unwrap_or(&NONE)
}

/// Renders, verifies by loading, and collects the notes.
fn finish(
    agent: Agent,
    paths: &[PathBuf],
    mut translation: Translation,
) -> Result<Imported, ImportError> {
    name_rules(agent, &mut translation.rules);
    // Examples toolgate judges differently from the source agent move to comments; a few
    // rounds suffice (each round removes every failing example it found).
    for _ in 0..4 {
        let rendered = render_all(agent, paths, &translation);
        let problems = verify(&rendered)?;
        if problems.is_empty() {
            let mut notes: Vec<Note> = Vec::new();
            for rule in &translation.rules {
                notes.extend(rule.inexact.iter().map(|why| Note {
                    origin: rule.origin.clone(),
                    dropped: false,
                    why: why.clone(),
                }));
            }
            notes.extend(translation.skipped.iter().cloned());
            return Ok(Imported {
                policy: rendered.policy.text,
                enforced: rendered.enforced.map(|file| file.text),
                notes,
            });
        }
        let mut rejected = Vec::new();
        for problem in problems {
            let (rule, example, why) = match problem {
                Problem::Example { rule, example, why } => (rule, example, why),
                Problem::Rule { rule, why } => {
                    rejected.push((rule, why));
                    continue;
                }
            };
            let Some(rule) = translation.rules.get_mut(rule) else {
                continue;
            };
            if example < rule.examples.len() {
                let (expected, call) = rule.examples.remove(example);
                let command = call
                    .pointer("/input/command")
                    .and_then(Value::as_str)
                    .map_or_else(|| call.to_string(), str::to_owned);
                let list = if expected { "match" } else { "not_match" };
                rule.inexact.push(format!(
                    "its `{list}` example `{command}` is judged differently by toolgate ({why}), so it is not kept as an example"
                ));
            }
        }
        // A rule toolgate refuses (a regex or glob it cannot compile) is not imported.
        rejected.sort_by_key(|(rule, _)| std::cmp::Reverse(*rule));
        rejected.dedup_by_key(|(rule, _)| *rule);
        for (index, why) in rejected {
            if index < translation.rules.len() {
                let rule = translation.rules.remove(index);
                translation.skip(
                    rule.origin,
                    format!("toolgate refuses the translation: {why}"),
                );
            }
        }
    }
    Err(ImportError::Invalid(
        "problems kept being found after the rules and examples behind them were removed".into(),
    ))
}

/// Gives every rule a unique name: `<agent>-<decision>-<hint>`, with `-2`, `-3`… on repeats.
fn name_rules(agent: Agent, rules: &mut [Rule]) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for rule in rules {
        let mut slug = String::new();
        for c in rule.name.chars() {
            if c.is_ascii_alphanumeric() {
                slug.push(c.to_ascii_lowercase());
            } else if !slug.ends_with('-') {
                slug.push('-');
            }
        }
        let slug: String = slug.trim_matches('-').chars().take(40).collect();
        let slug = slug.trim_end_matches('-');
        let base = if slug.is_empty() {
            format!("{}-{}", agent.as_str(), rule.decision)
        } else {
            format!("{}-{}-{slug}", agent.as_str(), rule.decision)
        };
        let count = seen.entry(base.clone()).or_insert(0);
        *count += 1;
        rule.name = if *count == 1 {
            base
        } else {
            format!("{base}-{count}")
        };
    }
}

/// One rendered file, with the line of every example (1-based) for the verification.
struct RenderedFile {
    text: String,
    /// line → (rule index in the translation, example index in the rule).
    examples: BTreeMap<usize, (usize, usize)>,
    /// (first line, last line, rule index in the translation) of every rule.
    rules: Vec<(usize, usize, usize)>,
}

struct Rendered {
    policy: RenderedFile,
    enforced: Option<RenderedFile>,
}

fn render_all(agent: Agent, paths: &[PathBuf], translation: &Translation) -> Rendered {
    let any_enforced = translation.rules.iter().any(|r| r.enforced);
    let policy = render(agent, paths, translation, false);
    let enforced = any_enforced.then(|| render(agent, paths, translation, true));
    Rendered { policy, enforced }
}

/// A string as a YAML scalar: JSON's double-quoted strings are YAML too.
fn quoted(text: &str) -> String {
    Value::from(text).to_string()
}

/// A comment line's text: one line, whatever the source held.
fn comment(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

/// The line the next text written to a growing output starts on, counting only what was
/// written since it last looked (counting the whole output again for each rule took minutes
/// for 20 000 rules).
#[derive(Default)]
struct LineCounter {
    /// The bytes of the output counted so far.
    counted: usize,
    /// The line breaks in them.
    breaks: usize,
}

impl LineCounter {
    /// The (1-based) line after all of `out`.
    fn next_line(&mut self, out: &str) -> usize {
        self.breaks += out[self.counted..].matches('\n').count();
        self.counted = out.len();
        self.breaks + 1
    }
}

fn render(
    agent: Agent,
    paths: &[PathBuf],
    translation: &Translation,
    enforced: bool,
) -> RenderedFile {
    let mut out = String::new();
    let mut examples = BTreeMap::new();
    let mut lines = Vec::new();
    let mut lines_of = LineCounter::default();
    let kind = if enforced {
        "enforced (organisation) "
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "# The {kind}rules of `toolgate import {}`, from:",
        agent.as_str()
    );
    for path in paths {
        let _ = writeln!(out, "#   {}", comment(&path.display().to_string()));
    }
    if enforced {
        out.push_str("# Load it as an enforced layer: `toolgate --enforced FILE …`.\n");
    }
    out.push_str(
        "# Each rule names where it comes from. Review before use: `inexact` notes say where\n\
         # toolgate will decide differently, and what could not be imported is listed last.\n",
    );
    out.push_str("version: 1\n");
    if !enforced && !translation.modes.is_empty() {
        out.push_str("modes:\n");
        for (mode, description) in &translation.modes {
            let _ = writeln!(
                out,
                "  {}: {{ description: {} }}",
                quoted(mode),
                quoted(description)
            );
        }
    }
    let rules: Vec<(usize, &Rule)> = translation
        .rules
        .iter()
        .enumerate()
        .filter(|(_, rule)| rule.enforced == enforced)
        .collect();
    if rules.is_empty() {
        out.push_str("rules: []\n");
    } else {
        out.push_str("rules:\n");
    }
    for (index, rule) in rules {
        let first = lines_of.next_line(&out);
        let _ = writeln!(
            out,
            "  # from {} {}: {}",
            comment(&rule.origin.file),
            rule.origin.place,
            comment(&rule.origin.text)
        );
        for note in &rule.inexact {
            let _ = writeln!(out, "  # inexact: {}", comment(note));
        }
        let _ = writeln!(out, "  - name: {}", rule.name);
        let tools: Vec<String> = rule.tools.iter().map(|t| quoted(t)).collect();
        let _ = writeln!(out, "    tools: [{}]", tools.join(", "));
        if !rule.modes.is_empty() {
            let modes: Vec<String> = rule.modes.iter().map(|m| quoted(m)).collect();
            let _ = writeln!(out, "    modes: [{}]", modes.join(", "));
        }
        if !rule.matchers.is_empty() {
            out.push_str("    match:\n");
            for (field, matcher) in &rule.matchers {
                let _ = writeln!(out, "      {}: {matcher}", quoted(field));
            }
        }
        let _ = writeln!(out, "    decision: {}", rule.decision);
        let _ = writeln!(out, "    priority: {}", rule.priority);
        if let Some(reason) = &rule.reason {
            let _ = writeln!(out, "    reason: {}", quoted(reason));
        }
        if !rule.examples.is_empty() {
            out.push_str("    examples:\n");
            for (list, expected) in [("match", true), ("not_match", false)] {
                let calls: Vec<(usize, &Value)> = rule
                    .examples
                    .iter()
                    .enumerate()
                    .filter(|(_, (e, _))| *e == expected)
                    .map(|(i, (_, call))| (i, call))
                    .collect();
                if calls.is_empty() {
                    continue;
                }
                let _ = writeln!(out, "      {list}:");
                for (example, call) in calls {
                    examples.insert(lines_of.next_line(&out), (index, example));
                    let _ = writeln!(out, "        - {call}");
                }
            }
        }
        lines.push((first, lines_of.next_line(&out) - 1, index));
    }
    let skipped: Vec<&Note> = translation.skipped.iter().filter(|_| !enforced).collect();
    if !skipped.is_empty() {
        out.push_str("# Not imported:\n");
        for note in skipped {
            let _ = writeln!(
                out,
                "# - {}: {}",
                comment(&note.origin.describe()),
                comment(&note.why)
            );
        }
    }
    RenderedFile {
        text: out,
        examples,
        rules: lines,
    }
}

/// What the load of the rendered files found wrong with one rule.
enum Problem {
    /// An example toolgate judges differently from the source agent.
    Example {
        rule: usize,
        example: usize,
        why: String,
    },
    /// A rule toolgate refuses (a pattern it cannot compile).
    Rule { rule: usize, why: String },
}

/// Loads the rendered files with the built-in policies, as `toolgate check` does, and
/// returns the problems found in imported rules; a problem outside any rule fails the import.
fn verify(rendered: &Rendered) -> Result<Vec<Problem>, ImportError> {
    let dir = tempfile::tempdir().map_err(|err| ImportError::Invalid(err.to_string()))?;
    let write = |name: &str, text: &str| -> Result<PathBuf, ImportError> {
        let path = dir.path().join(name);
        std::fs::write(&path, text).map_err(|err| ImportError::Invalid(err.to_string()))?;
        Ok(path)
    };
    let policy = write("imported.yaml", &rendered.policy.text)?;
    let enforced = match &rendered.enforced {
        Some(file) => vec![write("enforced.yaml", &file.text)?],
        None => Vec::new(),
    };
    let mut options = LoadOptions::new(LayerOptions {
        enforced,
        policies: vec![policy.clone()],
        ..LayerOptions::default()
    });
    options.build_all_matchers = true;
    let outcome = load(&options, 1);
    let mut problems = Vec::new();
    for diagnostic in outcome.diagnostics.iter().filter(|d| d.is_error()) {
        let located = diagnostic.location.as_ref().and_then(|location| {
            let file = if Path::new(&**location.source.path()) == policy {
                &rendered.policy
            } else {
                rendered.enforced.as_ref()?
            };
            Some((file, location.span.line as usize))
        });
        let why = diagnostic
            .message
            .split_once(": ")
            .map_or(diagnostic.message.as_str(), |(_, why)| why)
            .to_owned();
        let example = located.and_then(|(file, line)| file.examples.get(&line).copied());
        let rule = located.and_then(|(file, line)| {
            file.rules
                .iter()
                .find(|(first, last, _)| (*first..=*last).contains(&line))
                .map(|(_, _, rule)| *rule)
        });
        match (diagnostic.code, example, rule) {
            (Code::SemanticExampleFailed, Some((rule, example)), _) => {
                problems.push(Problem::Example { rule, example, why })
            }
            (_, _, Some(rule)) => problems.push(Problem::Rule {
                rule,
                why: diagnostic.message.clone(),
            }),
            _ => {
                let place = diagnostic
                    .location
                    .as_ref()
                    .map(|l| format!(" (line {})", l.span.line))
                    .unwrap_or_default();
                return Err(ImportError::Invalid(format!(
                    "{}{place}",
                    diagnostic.message
                )));
            }
        }
    }
    // Highest example first, so that removing one keeps the others' indices.
    problems.sort_by_key(|problem| match problem {
        Problem::Example { rule, example, .. } => std::cmp::Reverse((*rule, *example)),
        Problem::Rule { rule, .. } => std::cmp::Reverse((*rule, usize::MAX)),
    });
    Ok(problems)
}

/// Splits a command line into words, shell style (quotes and backslashes), keeping whether
/// each word had quotes: an unquoted `*` is a wildcard, a quoted one a literal star. `None`
/// for an unterminated quote.
pub fn split_words(line: &str) -> Option<Vec<(String, bool)>> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push((std::mem::take(&mut current), quoted));
                    quoted = false;
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                quoted = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => current.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                quoted = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => current.push(chars.next()?),
                        c => current.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                quoted = true;
                current.push(chars.next()?);
            }
            c => {
                in_word = true;
                current.push(c);
            }
        }
    }
    if in_word {
        words.push((current, quoted));
    }
    Some(words)
}

/// A `shell` matcher for commands starting with `words` (each matched exactly): the words
/// alone, and the words followed by anything.
pub fn prefix_patterns(words: &[String]) -> Vec<String> {
    let line: Vec<String> = words.iter().map(|w| shell_word(w)).collect();
    let line = line.join(" ");
    vec![line.clone(), format!("{line} *")]
}

/// A Bash example call.
pub fn bash_call(command: &str) -> Value {
    json!({ "tool": "Bash", "input": { "command": command } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Counting only what was written since the last look gives the line a count of the
        /// whole output gives, however the output grows.
        #[test]
        fn the_line_counter_agrees_with_counting_everything(
            pieces in proptest::collection::vec("[a\n]{0,8}", 0..40),
            looks in proptest::collection::vec(any::<bool>(), 40),
        ) {
            let mut out = String::new();
            let mut counter = LineCounter::default();
            for (piece, look) in pieces.iter().zip(&looks) {
                out.push_str(piece);
                if *look {
                    prop_assert_eq!(counter.next_line(&out), out.matches('\n').count() + 1);
                }
            }
            prop_assert_eq!(counter.next_line(&out), out.matches('\n').count() + 1);
        }
    }

    #[test]
    fn words_split_like_a_shell_and_quote_back() {
        let words = split_words(r#"git commit -m "a b" 'c*' d\ e *"#).unwrap();
        assert_eq!(
            words,
            [
                ("git".to_owned(), false),
                ("commit".to_owned(), false),
                ("-m".to_owned(), false),
                ("a b".to_owned(), true),
                ("c*".to_owned(), true),
                ("d e".to_owned(), true),
                ("*".to_owned(), false),
            ]
        );
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("--format=x"), "'--format=x'");
        assert_eq!(shell_word("src/main.rs"), "src/main.rs");
        assert!(split_words("echo 'open").is_none());
    }
}
