//! `toolgate test [PATH…]`: policy test files — calls with the decision (and optionally the
//! deciding rule, timeout, budget and scheduling) the policies must give them — evaluated
//! against the loaded policy set without running anything.
//!
//! A test is planned exactly like a one-call batch of `toolgate plan` (`plan`), which
//! decides each call with [`crate::assess`] as a run does, so a test, a plan and a run never
//! disagree. Hooks are not run: a test pins what the rules, the contract
//! default and `always_ask` decide.
//!
//! Files: a PATH is a test file (YAML or TOML) or a folder, searched recursively for files
//! named `*.test.yaml`, `*.test.yml` or `*.test.toml`. Without PATH, `.toolgate/tests` (what
//! `toolgate init` writes). Each file is checked against the `policy-test` schema; modes it
//! names must be declared and rules it expects must exist. Every problem is a positioned
//! diagnostic, and any of them stops the run (exit 2) before a test is evaluated.
//!
//! `expect.rule` holds when that rule is among the rules that decided; `default` expects
//! that no rule matched (the contract default decided). `expect.timeout_ms: 0` expects no
//! timeout.
//!
//! `--coverage` adds which rules no test case and no rule example exercises, and which never
//! decide a tested call (`review::coverage`); `--min-coverage N` fails the run below
//! N %. Reports: human, JSON, or JUnit XML (one suite per test file, one for the coverage).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::Value;

use crate::assess::{self, Resolved};
use crate::diagnostics::{Code, Diagnostic, Location, SourceFile, closest};
use crate::executor::Batch;
use crate::executor::plan::{PlannedCall, plan};
use crate::load::{ReadLimits, SchemaChecker, parse_document, read_source};
use crate::model::ModeName;
use crate::model::batch::{Expectation, GroupExpectation, PolicyTest, PolicyTestFile};
use crate::pipeline::ToolCall;
use crate::policy::decide::{Reason, Staged};
use crate::policy::rule::CallFacts;
use crate::review::coverage::{Coverage, CoveredRule, coverage};
use crate::review::decisions::{CorpusCall, Origin};
use crate::snapshot::{Snapshot, load};

use super::{Exit, GlobalOptions};

/// The folder searched when no PATH is given.
pub const DEFAULT_DIR: &str = ".toolgate/tests";

/// The `expect.rule` value that expects the contract default.
pub const DEFAULT_RULE: &str = "default";

/// Why the tests could not run.
#[derive(Clone, Debug)]
pub enum TestError {
    /// The policies do not load (exit 1 like `check`; 2 when a policy root is missing).
    Policies(Vec<Diagnostic>),
    /// A test file is missing, unreadable or invalid (exit 2).
    Files(Vec<Diagnostic>),
}

impl TestError {
    /// The diagnostics to show.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            TestError::Policies(d) | TestError::Files(d) => d,
        }
    }

    /// The exit code.
    pub fn exit(&self) -> Exit {
        match self {
            TestError::Policies(d) if super::is_io_problem(d) => Exit::Usage,
            TestError::Policies(_) => Exit::Problems,
            TestError::Files(_) => Exit::Usage,
        }
    }
}

/// One checked test file.
#[derive(Clone, Debug)]
pub struct TestFile {
    /// The file.
    pub source: Arc<SourceFile>,
    /// Its tests, each with the place it starts.
    pub tests: Vec<(PolicyTest, Location)>,
}

/// The expectation a result differs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// `expect.decision`.
    Decision,
    /// `expect.rule`.
    Rule,
    /// `expect.timeout_ms`.
    TimeoutMs,
    /// `expect.budget`.
    Budget,
    /// `expect.group`.
    Group,
}

impl Field {
    fn as_str(self) -> &'static str {
        match self {
            Field::Decision => "decision",
            Field::Rule => "rule",
            Field::TimeoutMs => "timeout_ms",
            Field::Budget => "budget",
            Field::Group => "group",
        }
    }
}

/// One expectation that does not hold.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mismatch {
    /// Which expectation.
    pub field: Field,
    /// What the test expects.
    pub expected: String,
    /// What the policies give.
    pub actual: String,
    /// Why, when it can be told (e.g. why the expected rule did not decide).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What the policies give the call of a test.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Actual {
    /// Canonical tool, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canonical_tool: Option<String>,
    /// `allow`, `ask`, `deny`, or `error` when the call cannot run.
    pub decision: String,
    /// The rules (or the default, or `always_ask`) behind the decision.
    pub reasons: Vec<Reason>,
    /// Resolved timeout with grace in milliseconds (`null`: none).
    pub timeout_ms: Option<u64>,
    /// Effective model budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<u64>,
    /// `shared` or `alone`.
    pub group: &'static str,
    /// Why the call cannot run, if it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `PreToolUse` / `PermissionRequest` hooks that apply to the call: tests do not run
    /// them, and at run time their answers may change the decision.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<String>,
    /// Rules not enforced yet (`warn`, `audit`) that would change the decision.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub staged: Vec<Staged>,
}

/// The outcome of one test.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TestOutcome {
    /// The test file.
    pub file: String,
    /// 1-based line where the test starts.
    pub line: u32,
    /// 1-based column where the test starts.
    pub column: u32,
    /// The test's name.
    pub name: String,
    /// The tool as the test writes it.
    pub tool: String,
    /// The input as the test writes it.
    pub input: Value,
    /// Modes of the test.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<String>,
    /// Whether every expectation holds.
    pub passed: bool,
    /// The expectations that do not hold.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<Mismatch>,
    /// What the policies give.
    pub actual: Actual,
}

/// The report of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TestReport {
    /// Number of tests that passed.
    pub passed: usize,
    /// Number of tests that failed.
    pub failed: usize,
    /// The test files, in the order they ran.
    pub files: Vec<String>,
    /// Every test, in file order.
    pub tests: Vec<TestOutcome>,
    /// The rule coverage, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
    /// The coverage the run must reach, in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_coverage: Option<f64>,
}

/// What `toolgate test` reports besides the tests.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CoverageOptions {
    /// Report the rule coverage.
    pub report: bool,
    /// Fail below this coverage, in percent (implies `report`).
    pub min: Option<f64>,
}

/// Loads the policies and the test files, and runs the tests.
pub fn test(
    global: &GlobalOptions,
    paths: &[PathBuf],
    options: CoverageOptions,
) -> Result<TestReport, TestError> {
    let outcome = load(&global.load_options(), 1);
    let Some(snapshot) = outcome.snapshot else {
        return Err(TestError::Policies(outcome.diagnostics));
    };
    // Inside a project, its tests wherever the command runs from.
    let defaults = [match &global.project_root {
        Some(root) => root.join(DEFAULT_DIR),
        None => PathBuf::from(DEFAULT_DIR),
    }];
    let paths = if paths.is_empty() {
        &defaults[..]
    } else {
        paths
    };
    let found = discover(paths).map_err(TestError::Files)?;
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for path in &found {
        match load_test_file(path, &snapshot) {
            Ok(file) => files.push(file),
            Err(diagnostics) => problems.extend(diagnostics),
        }
    }
    if !problems.is_empty() {
        return Err(TestError::Files(problems));
    }
    let mut report = run_tests(&snapshot, &files);
    if options.report || options.min.is_some() {
        let tested: Vec<CorpusCall> = report
            .tests
            .iter()
            .map(|test| CorpusCall {
                tool: test.tool.clone(),
                input: test.input.clone(),
                modes: test.modes.clone(),
                origin: Origin::Test {
                    name: test.name.clone(),
                },
            })
            .collect();
        report.coverage = Some(coverage(&snapshot, &tested));
        report.min_coverage = options.min;
    }
    Ok(report)
}

/// Whether a file name is a policy test file's.
pub fn is_test_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| {
            [".test.yaml", ".test.yml", ".test.toml"]
                .iter()
                .any(|suffix| name.len() > suffix.len() && name.ends_with(suffix))
        })
}

/// The test files named by `paths`: files as given, folders searched recursively for test
/// files (in lexicographic order; hidden entries skipped).
///
/// # Errors
/// A path that does not exist, a folder that cannot be read or holds no test file.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Vec<Diagnostic>> {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        let shown = path.display();
        match std::fs::metadata(path) {
            Err(error) => problems.push(
                Diagnostic::new(Code::IoNotFound, format!("cannot read `{shown}`: {error}"))
                    .with_help("pass policy test files or folders holding `*.test.yaml` files"),
            ),
            Ok(meta) if meta.is_dir() => {
                let before = found.len();
                if let Err(error) = walk(path, &mut found) {
                    problems.push(Diagnostic::new(
                        Code::IoRead,
                        format!("cannot read folder `{shown}`: {error}"),
                    ));
                } else if found.len() == before {
                    problems.push(
                        Diagnostic::new(
                            Code::IoNotFound,
                            format!("no policy test file in `{shown}`"),
                        )
                        .with_help(
                            "test files are named `*.test.yaml`, `*.test.yml` or `*.test.toml`",
                        ),
                    );
                }
            }
            Ok(_) => found.push(path.clone()),
        }
    }
    if problems.is_empty() {
        Ok(found)
    } else {
        Err(problems)
    }
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        // `metadata` follows symlinks, so a linked folder of tests is searched too; a loop
        // of links ends in an error from the file system (too many levels).
        let meta = std::fs::metadata(&path)?;
        if meta.is_dir() {
            walk(&path, found)?;
        } else if is_test_file(&path) {
            found.push(path);
        }
    }
    Ok(())
}

fn checker() -> Result<&'static SchemaChecker, String> {
    static CHECKER: OnceLock<Result<SchemaChecker, String>> = OnceLock::new();
    SchemaChecker::compiled_once(&CHECKER, crate::model::schema::policy_test_file)
}

/// Reads and checks a test file against the snapshot (its modes and rule names).
///
/// # Errors
/// Every problem found, each at its place in the file.
pub fn load_test_file(path: &Path, snapshot: &Snapshot) -> Result<TestFile, Vec<Diagnostic>> {
    let source = read_source(path, &ReadLimits::DEFAULT).map_err(|d| vec![d])?;
    parse_test_file(source, snapshot)
}

/// Checks a test file held in memory.
///
/// # Errors
/// Every problem found, each at its place in the file.
pub fn parse_test_file(
    source: Arc<SourceFile>,
    snapshot: &Snapshot,
) -> Result<TestFile, Vec<Diagnostic>> {
    let document = parse_document(source)?;
    let checker =
        checker().map_err(|message| vec![Diagnostic::new(Code::SchemaInvalid, message)])?;
    let problems = checker.check_document(&document);
    if problems.iter().any(Diagnostic::is_error) {
        return Err(problems);
    }
    let file: PolicyTestFile = match serde_path_to_error::deserialize(&document.value) {
        Ok(file) => file,
        Err(error) => {
            let pointer = path_to_pointer(error.path());
            let mut diagnostic = Diagnostic::new(
                Code::ModelDeserialize,
                format!("invalid policy test file: {}", error.inner()),
            );
            if let Some(node) = document.spans.nearest(&pointer) {
                diagnostic = diagnostic.at(&document.source, node.value);
            }
            return Err(vec![diagnostic]);
        }
    };
    let at = |pointer: &str| {
        document
            .spans
            .nearest(pointer)
            .map(|node| document.source.location(node.value))
    };
    let place = |diagnostic: Diagnostic, pointer: &str| match at(pointer) {
        Some(location) => diagnostic.with_location(location),
        None => diagnostic,
    };
    let mut diagnostics = Vec::new();
    let rule_names: Vec<&str> = snapshot
        .rules
        .rules()
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    let mut tests = Vec::with_capacity(file.tests.len());
    for (index, test) in file.tests.into_iter().enumerate() {
        let pointer = format!("/tests/{index}");
        for (m, mode) in test.modes.iter().flatten().enumerate() {
            if !snapshot.modes.contains_key(mode.as_str()) {
                let declared: Vec<String> =
                    snapshot.modes.keys().map(|m| format!("`{m}`")).collect();
                diagnostics.push(place(
                    Diagnostic::new(
                        Code::BatchUnknownMode,
                        format!("mode `{mode}` is not declared"),
                    )
                    .with_help(format!("declared modes: {}", declared.join(", "))),
                    &format!("{pointer}/modes/{m}"),
                ));
            }
        }
        if let Some(rule) = &test.expect.rule
            && rule != DEFAULT_RULE
            && !rule_names.contains(&rule.as_str())
        {
            let help = match closest(rule, rule_names.iter().copied()) {
                Some(near) => format!("did you mean `{near}`?"),
                None => format!(
                    "name a rule of the policy set, or `{DEFAULT_RULE}` to expect that no rule matches"
                ),
            };
            diagnostics.push(place(
                Diagnostic::new(
                    Code::SemanticUnknownReference,
                    format!("no rule named `{rule}` in the policy set"),
                )
                .with_help(help),
                &format!("{pointer}/expect/rule"),
            ));
        }
        let location = at(&pointer).unwrap_or_else(|| document.source.location_at(0, 0));
        tests.push((test, location));
    }
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    Ok(TestFile {
        source: document.source,
        tests,
    })
}

fn path_to_pointer(path: &serde_path_to_error::Path) -> String {
    let mut pointer = String::new();
    for segment in path.iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => {
                pointer.push('/');
                pointer.push_str(&index.to_string());
            }
            serde_path_to_error::Segment::Map { key } => {
                crate::load::spans::push_segment(&mut pointer, key);
            }
            serde_path_to_error::Segment::Enum { .. } | serde_path_to_error::Segment::Unknown => {}
        }
    }
    pointer
}

/// Runs the tests of checked files.
pub fn run_tests(snapshot: &Snapshot, files: &[TestFile]) -> TestReport {
    let mut tests = Vec::new();
    for file in files {
        for (test, location) in &file.tests {
            tests.push(run_test(snapshot, test, location));
        }
    }
    let passed = tests.iter().filter(|t| t.passed).count();
    TestReport {
        passed,
        failed: tests.len() - passed,
        files: files.iter().map(|f| f.source.path().to_string()).collect(),
        tests,
        coverage: None,
        min_coverage: None,
    }
}

/// Evaluates one test (its modes were checked).
pub fn run_test(snapshot: &Snapshot, test: &PolicyTest, location: &Location) -> TestOutcome {
    let modes: Vec<ModeName> = test
        .modes
        .iter()
        .flatten()
        .map(|m| ModeName::new(m.as_str()))
        .collect();
    let call = ToolCall::new("test", test.call.tool.clone(), test.call.input.clone());
    let batch = Batch::new(vec![call]);
    let planned = plan(snapshot, &batch, &modes).calls.into_iter().next();
    let actual = match planned {
        Some(planned) => actual_of(planned),
        // A one-call batch has one planned call; keep a value for the impossible case.
        None => Actual {
            canonical_tool: None,
            decision: "error".into(),
            reasons: Vec::new(),
            timeout_ms: None,
            budget: None,
            group: "alone",
            error: Some("the call could not be planned".into()),
            hooks: Vec::new(),
            staged: Vec::new(),
        },
    };
    let failures = compare(snapshot, test, &modes, &actual);
    TestOutcome {
        file: location.source.path().to_string(),
        line: location.span.line,
        column: location.span.column,
        name: test.name.clone(),
        tool: test.call.tool.clone(),
        input: test.call.input.clone(),
        modes: modes.iter().map(|m| m.to_string()).collect(),
        passed: failures.is_empty(),
        failures,
        actual,
    }
}

fn actual_of(planned: PlannedCall<'_>) -> Actual {
    Actual {
        canonical_tool: planned.canonical_tool.map(|tool| tool.to_string()),
        decision: planned.decision.as_str().to_owned(),
        reasons: planned.reasons,
        timeout_ms: planned.timeout_ms,
        budget: planned.budget,
        group: planned.scheduling.as_str(),
        error: planned.error,
        hooks: planned.hooks,
        staged: planned.staged,
    }
}

fn compare(
    snapshot: &Snapshot,
    test: &PolicyTest,
    modes: &[ModeName],
    actual: &Actual,
) -> Vec<Mismatch> {
    let Expectation {
        decision,
        rule,
        timeout_ms,
        budget,
        group,
    } = &test.expect;
    let mut failures = Vec::new();
    let cannot_run = actual
        .error
        .as_ref()
        .map(|error| format!("the call cannot run: {error}"));
    if let Some(expected) = decision
        && actual.decision != expected.to_string()
    {
        failures.push(Mismatch {
            field: Field::Decision,
            expected: expected.to_string(),
            actual: actual.decision.clone(),
            note: cannot_run.clone(),
        });
    }
    if let Some(expected) = rule {
        // A line decided part by part lists every part's reasons; the parts that decide are
        // the strictest.
        let part_decision = |r: &Reason| match r {
            Reason::Rule {
                decision,
                part: Some(_),
                ..
            }
            | Reason::Default {
                decision,
                part: Some(_),
            }
            | Reason::Analysis {
                decision,
                part: Some(_),
                ..
            } => Some(*decision),
            _ => None,
        };
        let strictest = actual.reasons.iter().filter_map(part_decision).max();
        let deciding: Vec<String> = actual
            .reasons
            .iter()
            .filter(|r| part_decision(r).is_none_or(|d| Some(d) == strictest))
            .filter_map(|r| match r {
                Reason::Rule { name, .. } => Some(name.clone()),
                Reason::Default { .. } => Some(DEFAULT_RULE.to_owned()),
                Reason::Hook { .. }
                | Reason::Analysis { .. }
                | Reason::AlwaysAsk
                | Reason::Untrusted { .. }
                | Reason::Approval { .. } => None,
            })
            .collect();
        if !deciding.contains(expected) {
            let note = cannot_run
                .clone()
                .or_else(|| why_not(snapshot, test, modes, expected, actual));
            failures.push(Mismatch {
                field: Field::Rule,
                expected: expected.clone(),
                actual: if deciding.is_empty() {
                    "none".to_owned()
                } else {
                    deciding.join(", ")
                },
                note,
            });
        }
    }
    if let Some(expected) = timeout_ms {
        let expected = (*expected != 0).then_some(*expected);
        if actual.error.is_some() || actual.timeout_ms != expected {
            failures.push(Mismatch {
                field: Field::TimeoutMs,
                expected: show_timeout(expected),
                actual: if actual.error.is_some() {
                    "unknown".to_owned()
                } else {
                    show_timeout(actual.timeout_ms)
                },
                note: cannot_run.clone(),
            });
        }
    }
    if let Some(expected) = budget
        && actual.budget != Some(*expected)
    {
        failures.push(Mismatch {
            field: Field::Budget,
            expected: expected.to_string(),
            actual: actual
                .budget
                .map_or_else(|| "unknown".to_owned(), |b| b.to_string()),
            note: cannot_run.clone(),
        });
    }
    if let Some(expected) = group {
        let expected = match expected {
            GroupExpectation::Shared => "shared",
            GroupExpectation::Alone => "alone",
        };
        if actual.group != expected {
            failures.push(Mismatch {
                field: Field::Group,
                expected: expected.to_owned(),
                actual: actual.group.to_owned(),
                note: None,
            });
        }
    }
    failures
}

fn show_timeout(ms: Option<u64>) -> String {
    ms.map_or_else(|| "none".to_owned(), |ms| format!("{ms}ms"))
}

/// Why an expected rule is not among the deciding ones.
fn why_not(
    snapshot: &Snapshot,
    test: &PolicyTest,
    modes: &[ModeName],
    expected: &str,
    actual: &Actual,
) -> Option<String> {
    if expected == DEFAULT_RULE {
        return Some("a rule matched, so the contract default did not apply".to_owned());
    }
    let rule = snapshot.rules.get(expected)?;
    let admitted = assess::admit(
        snapshot,
        modes,
        &test.call.tool,
        Cow::Borrowed(&test.call.input),
    )
    .ok()?;
    let Resolved { tool, contract } = &admitted.resolved;
    if !rule.tools.contains(&tool.name) {
        return Some(format!(
            "rule `{expected}` does not apply to tool `{}`",
            tool.name
        ));
    }
    let facts = CallFacts {
        tool: &tool.name,
        input: &admitted.input,
        modes,
        flags: &contract.concurrency,
    };
    let (holds, outcome) = rule.evaluate_in(&facts, &snapshot.match_ctx, snapshot.rules.commands());
    if holds {
        let winners: Vec<String> = actual
            .reasons
            .iter()
            .filter_map(|r| match r {
                Reason::Rule { name, .. } => Some(format!("`{name}`")),
                Reason::Default { .. }
                | Reason::Hook { .. }
                | Reason::Analysis { .. }
                | Reason::AlwaysAsk
                | Reason::Untrusted { .. }
                | Reason::Approval { .. } => None,
            })
            .collect();
        return Some(format!(
            "rule `{expected}` matches ({}, priority {}) but {} outrank{} it",
            rule.decision,
            rule.priority,
            winners.join(", "),
            if winners.len() == 1 { "s" } else { "" }
        ));
    }
    if let Some(wanted) = &rule.modes
        && !wanted.iter().any(|m| modes.contains(m))
    {
        let wanted: Vec<String> = wanted.iter().map(|m| format!("`{m}`")).collect();
        return Some(format!(
            "rule `{expected}` applies only in modes {}",
            wanted.join(", ")
        ));
    }
    match outcome {
        Some(outcome) => Some(format!("rule `{expected}` does not match: {outcome}")),
        None => Some(format!(
            "rule `{expected}`: its `when` flags do not hold for `{}`",
            tool.name
        )),
    }
}

fn describe_reason(reason: &Reason, tool: Option<&str>) -> Vec<String> {
    match reason {
        Reason::Rule {
            name,
            decision,
            priority,
            enforced,
            reason,
            location,
            detail,
            part,
        } => {
            let mut head = format!("rule `{name}` ({decision}, priority {priority}");
            if *enforced {
                head.push_str(", enforced");
            }
            head.push(')');
            if let Some(location) = location {
                head.push_str(&format!(" at {location}"));
            }
            if let Some(reason) = reason {
                head.push_str(&format!(": {reason}"));
            }
            if let Some(part) = part {
                head.push_str(&format!(" for `{part}`"));
            }
            let mut lines = vec![head];
            if let Some(detail) = detail {
                lines.push(format!("  {detail}"));
            }
            lines
        }
        Reason::Default { decision, part } => vec![format!(
            "no rule matched{}: the contract default{} is {decision}",
            part.as_deref()
                .map(|p| format!(" `{p}`"))
                .unwrap_or_default(),
            tool.map(|t| format!(" of `{t}`")).unwrap_or_default()
        )],
        Reason::Analysis {
            decision, reason, ..
        } => vec![format!("{decision}: {reason}")],
        Reason::Hook {
            name,
            decision,
            reason,
        } => vec![format!(
            "hook `{name}` says {decision}{}",
            reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        )],
        Reason::AlwaysAsk => vec!["the contract says always_ask".to_owned()],
        Reason::Untrusted { reason, .. } => vec![reason.clone()],
        Reason::Approval {
            by,
            decision,
            reason,
        } => vec![approval_line(by, *decision, reason.as_deref())],
    }
}

impl TestReport {
    /// The exit code: 1 when a test failed or the coverage is below the minimum.
    pub fn exit(&self) -> Exit {
        if self.failed == 0 && !self.below_min_coverage() {
            Exit::Success
        } else {
            Exit::Problems
        }
    }

    /// Whether the coverage misses the minimum asked for.
    fn below_min_coverage(&self) -> bool {
        match (&self.coverage, self.min_coverage) {
            (Some(coverage), Some(min)) => !coverage.reaches(min),
            _ => false,
        }
    }

    /// The human rendering: one line per test, the details of each failure, a summary.
    pub fn render_human(&self, color: bool) -> String {
        let paint = |code: &str, text: &str| {
            if color {
                format!("\u{1b}[{code}m{text}\u{1b}[0m")
            } else {
                text.to_owned()
            }
        };
        let total = self.tests.len();
        let mut out = format!(
            "running {total} test{} from {} file{}\n\n",
            plural(total),
            self.files.len(),
            plural(self.files.len())
        );
        for test in &self.tests {
            let status = if test.passed {
                paint("32", "ok  ")
            } else {
                paint("1;31", "FAIL")
            };
            out.push_str(&format!(
                "{status} {}:{}:{}  {}\n",
                test.file, test.line, test.column, test.name
            ));
            if test.passed {
                continue;
            }
            for line in details(test).lines() {
                out.push_str(&format!("       {line}\n"));
            }
        }
        let verdict = if self.failed == 0 {
            paint("32", "ok")
        } else {
            paint("1;31", "FAILED")
        };
        let staged: Vec<&TestOutcome> = self
            .tests
            .iter()
            .filter(|t| !t.actual.staged.is_empty())
            .collect();
        if !staged.is_empty() {
            out.push_str(&format!(
                "\nrules not enforced yet would change {} tested decision{}:\n",
                staged.len(),
                plural(staged.len())
            ));
            for test in staged {
                for rule in &test.actual.staged {
                    out.push_str(&format!(
                        "  {}:{}:{}  {}: rule `{}` ({}) would make it {} (it is {})\n",
                        test.file,
                        test.line,
                        test.column,
                        test.name,
                        rule.rule,
                        rule.enforcement.as_str(),
                        rule.decision,
                        test.actual.decision
                    ));
                }
            }
        }
        out.push_str(&format!(
            "\ntest result: {verdict}. {} passed; {} failed\n",
            self.passed, self.failed
        ));
        if let Some(coverage) = &self.coverage {
            out.push('\n');
            out.push_str(&self.render_coverage(coverage));
        }
        out
    }

    fn render_coverage(&self, coverage: &Coverage) -> String {
        let mut out = format!(
            "rule coverage: {} of {} rule{} exercised ({} %) by {} call{} (test cases and rule examples)\n",
            coverage.exercised,
            coverage.rules,
            plural(coverage.rules),
            coverage.percent,
            coverage.calls,
            plural(coverage.calls),
        );
        let list = |out: &mut String, title: &str, rules: &[CoveredRule]| {
            if rules.is_empty() {
                return;
            }
            out.push_str(&format!("  {title}:\n"));
            for rule in rules {
                let at = rule
                    .location
                    .as_deref()
                    .map(|l| format!(" at {l}"))
                    .unwrap_or_default();
                out.push_str(&format!("    `{}` ({}){at}\n", rule.name, rule.decision));
            }
        };
        list(
            &mut out,
            "not exercised by any test case or example",
            &coverage.unexercised,
        );
        list(
            &mut out,
            "exercised but never deciding (another rule always wins)",
            &coverage.never_decides,
        );
        if let Some(min) = self.min_coverage {
            if coverage.reaches(min) {
                out.push_str(&format!("coverage meets the minimum of {min} %\n"));
            } else {
                out.push_str(&format!(
                    "coverage {} % is below the minimum of {min} %: add test cases or rule examples for the rules listed\n",
                    coverage.percent
                ));
            }
        }
        out
    }

    /// JUnit XML: a suite per test file with a case per test, and with `--coverage` a suite
    /// `rule coverage` with a case per rule (skipped when nothing exercises it) and, with a
    /// minimum, a case that fails below it.
    pub fn render_junit(&self) -> String {
        use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
        let mut report = Report::new("toolgate test");
        for file in &self.files {
            let mut suite = TestSuite::new(file.as_str());
            for test in self.tests.iter().filter(|t| &t.file == file) {
                let status = if test.passed {
                    TestCaseStatus::success()
                } else {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    let summary: Vec<String> = test
                        .failures
                        .iter()
                        .map(|f| {
                            format!(
                                "{}: expected `{}`, got `{}`",
                                f.field.as_str(),
                                f.expected,
                                f.actual
                            )
                        })
                        .collect();
                    status.set_message(summary.join("; "));
                    status.set_description(details(test));
                    status
                };
                let mut case = TestCase::new(test.name.as_str(), status);
                case.set_classname(format!("{}:{}:{}", test.file, test.line, test.column));
                suite.add_test_case(case);
            }
            report.add_test_suite(suite);
        }
        if let Some(coverage) = &self.coverage {
            let mut suite = TestSuite::new("rule coverage");
            let unexercised: Vec<&str> = coverage
                .unexercised
                .iter()
                .map(|r| r.name.as_str())
                .collect();
            for rule in &coverage.unexercised {
                let mut status = TestCaseStatus::skipped();
                status.set_message("no test case or rule example exercises this rule");
                suite.add_test_case(rule_case(rule, status));
            }
            for rule in &coverage.never_decides {
                let mut case = rule_case(rule, TestCaseStatus::success());
                case.set_system_out("exercised but never deciding: another rule always wins");
                suite.add_test_case(case);
            }
            if let Some(min) = self.min_coverage {
                let status = if coverage.reaches(min) {
                    TestCaseStatus::success()
                } else {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    status.set_message(format!(
                        "coverage {} % is below the minimum of {min} % (not exercised: {})",
                        coverage.percent,
                        unexercised.join(", ")
                    ));
                    status
                };
                suite.add_test_case(TestCase::new(format!("minimum coverage {min} %"), status));
            }
            report.add_test_suite(suite);
        }
        // Writing XML into memory fails only on an invalid name, which these are not.
        report.to_string().unwrap_or_default()
    }
}

fn rule_case(rule: &CoveredRule, status: quick_junit::TestCaseStatus) -> quick_junit::TestCase {
    let mut case = quick_junit::TestCase::new(rule.name.as_str(), status);
    if let Some(location) = &rule.location {
        case.set_classname(location.as_str());
    }
    case
}

/// What a failed test's report says besides its status line: the call, each expectation that
/// does not hold, the reasons behind the decision and the hooks not run.
fn details(test: &TestOutcome) -> String {
    let mut out = String::new();
    let modes = if test.modes.is_empty() {
        String::new()
    } else {
        format!(" in modes {}", test.modes.join(", "))
    };
    out.push_str(&format!(
        "call: {} {}{modes}\n",
        test.tool,
        serde_json::to_string(&test.input).unwrap_or_default()
    ));
    for failure in &test.failures {
        out.push_str(&format!(
            "{}: expected `{}`, got `{}`\n",
            failure.field.as_str(),
            failure.expected,
            failure.actual
        ));
        if let Some(note) = &failure.note {
            out.push_str(&format!("  {note}\n"));
        }
    }
    if !test.actual.reasons.is_empty() {
        out.push_str("decided by:\n");
        let tool = test.actual.canonical_tool.as_deref();
        for reason in &test.actual.reasons {
            for line in describe_reason(reason, tool) {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    if !test.actual.hooks.is_empty() {
        let hooks: Vec<String> = test.actual.hooks.iter().map(|h| format!("`{h}`")).collect();
        out.push_str(&format!(
            "not run here: hooks {} may change the decision at run time\n",
            hooks.join(", ")
        ));
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// How an approval answer reads: `approver says deny: not today`.
pub(crate) fn approval_line(
    by: &str,
    decision: crate::model::Decision,
    reason: Option<&str>,
) -> String {
    format!(
        "{by} says {decision}{}",
        reason.map(|r| format!(": {r}")).unwrap_or_default()
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::diagnostics::Format;
    use crate::snapshot::{LayerOptions, LoadOptions};

    fn snapshot() -> Arc<Snapshot> {
        let mut options = LoadOptions::new(LayerOptions::default());
        options.workspace_root = PathBuf::from("/ws");
        load(&options, 1).snapshot.unwrap()
    }

    fn parse(text: &str) -> Result<TestFile, Vec<Diagnostic>> {
        let source = SourceFile::in_memory("t.test.yaml", text, Format::Yaml);
        parse_test_file(source, &snapshot())
    }

    #[test]
    fn recognises_test_file_names() {
        for (name, expected) in [
            ("a.test.yaml", true),
            ("a.test.yml", true),
            ("a.test.toml", true),
            ("dir/b.test.yaml", true),
            (".test.yaml", false),
            ("a.yaml", false),
            ("a.test.json", false),
            ("test.yaml", false),
        ] {
            assert_eq!(is_test_file(Path::new(name)), expected, "{name}");
        }
    }

    #[test]
    fn a_passing_and_a_failing_test() {
        let file = parse(
            "version: 1\ntests:\n  - name: secrets\n    call: { tool: Read, input: { file_path: a/../.env } }\n    expect: { decision: deny, rule: no-secrets, group: shared }\n  - name: wrong\n    call: { tool: Bash, input: { command: git status } }\n    expect: { decision: deny, rule: default, timeout_ms: 0 }\n",
        )
        .unwrap();
        let snapshot = snapshot();
        let report = run_tests(&snapshot, &[file]);
        assert_eq!((report.passed, report.failed), (1, 1));
        assert_eq!((report.tests[0].line, report.tests[0].column), (3, 5));
        let fields: Vec<Field> = report.tests[1].failures.iter().map(|f| f.field).collect();
        assert_eq!(fields, [Field::Decision, Field::Rule, Field::TimeoutMs]);
        assert_eq!(report.tests[1].failures[0].actual, "allow");
        assert_eq!(
            report.tests[1].failures[1].actual,
            "git-read-only, read-only-inspection"
        );
        assert_eq!(report.tests[1].failures[2].actual, "120000ms");
        assert_eq!(report.exit(), Exit::Problems);
    }

    #[test]
    fn explains_why_the_expected_rule_did_not_decide() {
        let file = parse(
            "version: 1\ntests:\n  - name: a\n    call: { tool: Bash, input: { command: git push } }\n    expect: { rule: git-read-only }\n  - name: b\n    call: { tool: Read, input: { file_path: x } }\n    expect: { rule: no-force-push }\n  - name: c\n    call: { tool: Write, input: { file_path: x, content: y } }\n    expect: { rule: plan-mode-read-only }\n",
        )
        .unwrap();
        let report = run_tests(&snapshot(), &[file]);
        let notes: Vec<&str> = report
            .tests
            .iter()
            .map(|t| t.failures[0].note.as_deref().unwrap())
            .collect();
        assert_eq!(
            notes,
            [
                "rule `git-read-only` does not match: `command` shell: `git push`: no pattern matches this command",
                "rule `no-force-push` does not apply to tool `Read`",
                "rule `plan-mode-read-only` applies only in modes `plan`",
            ]
        );
    }

    #[test]
    fn unknown_modes_and_rules_are_positioned() {
        let errors = parse(
            "version: 1\ntests:\n  - name: a\n    call: { tool: Bash }\n    modes: [pln]\n    expect: { rule: git-read-onyl }\n",
        )
        .unwrap_err();
        let found: Vec<(Code, u32, u32)> = errors
            .iter()
            .map(|d| {
                let l = d.location.as_ref().unwrap();
                (d.code, l.span.line, l.span.column)
            })
            .collect();
        assert_eq!(
            found,
            [
                (Code::BatchUnknownMode, 5, 13),
                (Code::SemanticUnknownReference, 6, 21)
            ]
        );
        assert_eq!(
            errors[1].help.as_deref(),
            Some("did you mean `git-read-only`?")
        );
    }

    #[test]
    fn schema_errors_are_positioned() {
        let errors = parse("version: 1\ntests:\n  - name: a\n    call: { tool: Bash }\n    expect: { decision: maybe }\n").unwrap_err();
        assert!(errors.iter().all(|d| d.location.is_some()), "{errors:?}");
        assert_eq!(errors[0].location.as_ref().unwrap().span.line, 5);
    }
}
