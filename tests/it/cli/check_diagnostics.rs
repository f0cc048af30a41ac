//! Every diagnostic the semantic stage (and the merge and build steps around it) reports,
//! from a small fixture policy folder per code under `tests/fixtures/check/<code>/`, through
//! the real `toolgate check` binary: human and JSON output snapshotted with the exit code,
//! and every reported position (and every related "first defined here" / "locked here"
//! place) checked against the source text it must point at.

// Test code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::check::{ROOT, Run, assert_points_at, place, toolgate};
use toolgate::Code;

const FIXTURES: &str = "tests/fixtures/check";

/// What one diagnostic must be: its code, `file:line:column` relative to the case's folder,
/// the source text found there, and its related places.
struct Expect {
    code: String,
    at: &'static str,
    text: &'static str,
    related: Vec<(&'static str, &'static str, &'static str)>,
}

/// A diagnostic with `code` (`semantic::…` is implied when no stage is named) at `at`, where
/// the source reads `text`.
fn at(code: &str, at: &'static str, text: &'static str) -> Expect {
    let code = if code.contains("::") {
        format!("toolgate::{code}")
    } else {
        format!("toolgate::semantic::{code}")
    };
    Expect {
        code,
        at,
        text,
        related: Vec::new(),
    }
}

impl Expect {
    /// A related place: its label, `file:line:column` and the source text there.
    fn rel(mut self, label: &'static str, at: &'static str, text: &'static str) -> Self {
        self.related.push((label, at, text));
        self
    }
}

/// `toolgate ARGS check [--format json]` with `{dir}` in ARGS replaced by the case's folder.
fn run(dir: &str, args: &[&str], extra: &[&str]) -> Run {
    let mut all: Vec<String> = args.iter().map(|a| a.replace("{dir}", dir)).collect();
    all.push("check".into());
    all.extend(extra.iter().map(|a| (*a).to_owned()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    toolgate(&refs)
}

/// Runs a case in human and JSON form, snapshots both, and checks every diagnostic against
/// `expected`, in order.
fn case(name: &str, args: &[&str], exit: i32, expected: &[Expect]) {
    let dir = format!("{FIXTURES}/{name}");
    let human = run(&dir, args, &[]);
    let json = run(&dir, args, &["--format", "json"]);
    insta::assert_snapshot!(format!("{name}_human"), human.transcript());
    insta::assert_snapshot!(format!("{name}_json"), json.transcript());
    assert_eq!(human.code, exit, "human exit code\n{}", human.transcript());
    assert_eq!(json.code, exit, "json exit code\n{}", json.transcript());
    assert!(human.stderr.is_empty() && json.stderr.is_empty());

    let root = Path::new(ROOT);
    let diagnostics = json.diagnostics();
    let found: Vec<(String, String)> = diagnostics
        .iter()
        .map(|d| (d["code"].as_str().unwrap().to_owned(), place(d)))
        .collect();
    let wanted: Vec<(String, String)> = expected
        .iter()
        .map(|e| (e.code.clone(), located(&dir, e.at)))
        .collect();
    assert_eq!(found, wanted, "codes and positions");
    for (diagnostic, expect) in diagnostics.iter().zip(expected) {
        assert_points_at(root, &located(&dir, expect.at), expect.text);
        let message = diagnostic["message"].as_str().unwrap();
        for (label, place, text) in &expect.related {
            let place = located(&dir, place);
            let folded = format!("({label}: {place})");
            assert!(
                message.contains(&folded),
                "`{message}` should name {folded}"
            );
            assert_points_at(root, &place, text);
        }
        // Human output shows the same place.
        assert!(
            human
                .stdout
                .contains(&format!("[{}]", located(&dir, expect.at))),
            "human output lacks {}",
            expect.at
        );
    }
}

/// A place relative to the case folder, as the binary reports it.
fn located(dir: &str, place: &str) -> String {
    if place.starts_with("builtin:") {
        place.to_owned()
    } else {
        format!("{dir}/{place}")
    }
}

const NO_BUILTIN: &[&str] = &["--no-builtin", "-p", "{dir}"];

#[test]
fn duplicate_name() {
    let first = "first defined here";
    case(
        "duplicate_name",
        NO_BUILTIN,
        1,
        &[
            at("duplicate_name", "a.yaml:13:11", "fetch-ok").rel(first, "a.yaml:10:11", "fetch-ok"),
            at("duplicate_name", "b.toml:3:8", "Fetch]").rel(first, "a.yaml:3:3", "Fetch:"),
            at("duplicate_name", "b.toml:6:8", "net]").rel(first, "a.yaml:6:3", "net:"),
            at("duplicate_name", "b.toml:9:8", "review]").rel(first, "a.yaml:8:3", "review:"),
            at("duplicate_name", "b.toml:12:8", "\"audit\"").rel(first, "a.yaml:17:11", "audit"),
        ],
    );
}

#[test]
fn alias_conflict() {
    case(
        "alias_conflict",
        NO_BUILTIN,
        1,
        &[
            at("alias_conflict", "tools.yaml:6:15", "Grep, files").rel(
                "the tool is defined here",
                "tools.yaml:3:3",
                "Grep:",
            ),
            at("alias_conflict", "tools.yaml:8:15", "find, locate").rel(
                "first claimed here",
                "tools.yaml:4:23",
                "find]",
            ),
        ],
    );
}

#[test]
fn alias_shadowing_a_builtin_tool() {
    // With the built-in layer, the fixture's `Grep` overrides the shipped one; the related
    // place is where the tool was first defined, in the shipped file.
    let dir = format!("{FIXTURES}/alias_conflict");
    let json = run(&dir, &["-p", "{dir}"], &["--format", "json"]);
    assert_eq!(json.code, 1);
    let messages: Vec<String> = json
        .diagnostics()
        .iter()
        .map(|d| d["message"].as_str().unwrap().to_owned())
        .collect();
    let grep = messages
        .iter()
        .find(|m| m.starts_with("alias `Grep` of `Glob`"))
        .expect("the alias shadowing Grep is reported");
    let place = "builtin:policies/tools/search.yaml:17:3";
    assert!(
        grep.contains(&format!("(the tool is defined here: {place})")),
        "{grep}"
    );
    assert_points_at(Path::new(ROOT), place, "Grep:");
}

#[test]
fn unknown_reference() {
    case(
        "unknown_reference",
        NO_BUILTIN,
        1,
        &[
            at("unknown_reference", "rules.yaml:4:13", "Fetc]"),
            at("unknown_reference", "rules.yaml:8:13", "reveiw]"),
            at("unknown_reference", "rules.yaml:15:19", "Fetchh,"),
            at("unknown_reference", "rules.yaml:16:53", "pln]"),
            at("unknown_reference", "rules.yaml:20:13", "Fech]"),
            at("unknown_reference", "rules.yaml:21:13", "offpeak]"),
            at("unknown_reference", "tools.yaml:13:55", "timeout }"),
            at("unknown_reference", "tools.yaml:14:24", "wbe }"),
            at("unknown_reference", "tools.yaml:17:28", "slow }"),
            at("unknown_reference", "tools.yaml:18:7", "offpeak:"),
        ],
    );
}

#[test]
fn timeout_range() {
    case(
        "timeout_range",
        NO_BUILTIN,
        1,
        &[
            at("timeout_range", "tools.yaml:7:25", "20m").rel(
                "max set here",
                "tools.yaml:7:35",
                "10m",
            ),
            // A mode patch raising `default` past the contract's `max`.
            at("timeout_range", "tools.yaml:12:29", "10m").rel(
                "max set here",
                "tools.yaml:9:34",
                "5m",
            ),
            // A mode patch lowering `max` under the contract's `default`.
            at("timeout_range", "tools.yaml:14:25", "30s").rel(
                "default set here",
                "tools.yaml:9:25",
                "1m",
            ),
        ],
    );
}

#[test]
fn contradiction() {
    case(
        "contradiction",
        NO_BUILTIN,
        1,
        &[
            at("contradiction", "tools.yaml:5:20", "true").rel(
                "`concurrent_safe` set here",
                "tools.yaml:6:24",
                "true",
            ),
            at("contradiction", "tools.yaml:8:50", "true }").rel(
                "`read_only` set here",
                "tools.yaml:8:31",
                "true,",
            ),
        ],
    );
}

#[test]
fn invalid_glob() {
    case(
        "invalid_glob",
        NO_BUILTIN,
        1,
        &[
            at("invalid_glob", "policy.yaml:7:13", "\"mcp__[github\""),
            // Inside the second pattern of a list, at the unclosed `{`.
            at("invalid_glob", "policy.yaml:12:43", "{a,b\""),
            at("invalid_glob", "policy.yaml:17:31", "z-a]"),
            at("invalid_glob", "policy.yaml:22:13", "\"mcp__{x\""),
        ],
    );
}

#[test]
fn invalid_regex() {
    case(
        "invalid_regex",
        NO_BUILTIN,
        1,
        &[
            // TOML basic string with escapes, then a literal string.
            at("invalid_regex", "policy.toml:7:34", "[b\""),
            at("invalid_regex", "policy.toml:13:32", "(x'"),
            at("invalid_regex", "policy.yaml:8:30", "(a|b"),
            at("invalid_regex", "policy.yaml:13:37", "{2,1}"),
            // A YAML double-quoted string with escapes before the error.
            at("invalid_regex", "policy.yaml:18:28", "(x\""),
            // Parses, but its automaton exceeds the size limit: `check` builds every one.
            at("invalid_regex", "policy.yaml:23:21", "'\\w{1000}'"),
        ],
    );
}

#[test]
fn invalid_shell_pattern() {
    case(
        "invalid_shell_pattern",
        NO_BUILTIN,
        1,
        &[
            at("invalid_shell_pattern", "policy.yaml:8:51", "&& git commit"),
            at("invalid_shell_pattern", "policy.yaml:13:33", "> out.txt"),
            at("invalid_shell_pattern", "policy.yaml:18:32", "'oops"),
        ],
    );
}

#[test]
fn invalid_pointer() {
    case(
        "invalid_pointer",
        NO_BUILTIN,
        1,
        &[at("invalid_pointer", "policy.yaml:8:7", "\"/options/~x\"")],
    );
}

#[test]
fn invalid_schema() {
    case(
        "invalid_schema",
        NO_BUILTIN,
        1,
        &[
            at("invalid_schema", "tools.toml:5:12", "\"key\""),
            at("invalid_schema", "tools.yaml:8:24", "strng"),
            at("invalid_schema", "tools.yaml:9:42", "\"ten\""),
            at("invalid_schema", "tools.yaml:13:48", "\"a(b\""),
        ],
    );
}

#[test]
fn rule_never_matches() {
    let (fetch, schema) = ("the input schema of `Fetch`", "input_schema:");
    case(
        "rule_never_matches",
        NO_BUILTIN,
        0,
        &[
            at("rule_never_matches", "policy.yaml:7:12", "[\"mcp__*\"]"),
            at(
                "rule_never_matches",
                "policy.yaml:11:11",
                "{ destructive: true }",
            ),
            at("rule_never_matches", "policy.yaml:15:12", "[]"),
            // Matchers the input schema rules out: a value outside the `enum`, `exists: false`
            // on a required field, a glob on an integer, a string where an integer is.
            at("rule_never_matches", "schema.yaml:16:25", "POST }").rel(
                fetch,
                "schema.yaml:4:5",
                schema,
            ),
            at("rule_never_matches", "schema.yaml:21:22", "false }").rel(
                fetch,
                "schema.yaml:4:5",
                schema,
            ),
            at("rule_never_matches", "schema.yaml:26:24", "[\"1*\"]").rel(
                fetch,
                "schema.yaml:4:5",
                schema,
            ),
            at("rule_never_matches", "schema.yaml:31:26", "\"3\" }").rel(
                fetch,
                "schema.yaml:4:5",
                schema,
            ),
        ],
    );
}

#[test]
fn empty_matcher() {
    // Each at the empty list or map itself, in YAML and in TOML.
    case(
        "empty_matcher",
        NO_BUILTIN,
        1,
        &[
            at("empty_matcher", "policy.yaml:19:25", "[] }"),
            at("empty_matcher", "policy.yaml:24:26", "[], glob"),
            // The glob beside the empty list compares text.
            at("loose_pattern", "policy.yaml:24:36", "[\"*.pem\"]"),
            at("empty_matcher", "policy.yaml:28:12", "{}"),
            at("empty_matcher", "policy.yaml:33:18", "{}"),
            at(
                "empty_matcher",
                "policy.yaml:38:16",
                "{ allow_redirection: true }",
            ),
            at("empty_matcher", "rules.toml:7:33", "[] } }"),
        ],
    );
}

#[test]
fn unknown_field() {
    // Errors where every covered schema rules the field out (a misspelling, another tool's
    // field, a JSON pointer into a closed object); warnings for an open schema, a tool
    // without a schema, and a rule naming several tools of which only some have the field.
    let (bash, search) = ("the input schema of `Bash`", "the input schema of `Search`");
    let schema = "input_schema:";
    case(
        "unknown_field",
        NO_BUILTIN,
        1,
        &[
            at("unknown_field", "policy.yaml:26:7", "comand:").rel(bash, "policy.yaml:4:5", schema),
            at("unknown_field", "policy.yaml:31:7", "file_path:").rel(
                bash,
                "policy.yaml:4:5",
                schema,
            ),
            at("unknown_field", "policy.yaml:36:7", "\"/options/paht\":").rel(
                search,
                "policy.yaml:16:5",
                schema,
            ),
            at("unknown_field", "policy.yaml:41:7", "qeury:").rel(
                search,
                "policy.yaml:16:5",
                schema,
            ),
            at("unknown_field", "policy.yaml:46:7", "target:").rel(
                "`Legacy` is defined here",
                "policy.yaml:21:3",
                "Legacy:",
            ),
            at("unknown_field", "policy.yaml:51:7", "file_path:").rel(
                bash,
                "policy.yaml:4:5",
                schema,
            ),
            // Through `*`: no warning that Bash lacks `file_path` (line 57), but a misspelt
            // field no tool has is still reported.
            at("unknown_field", "policy.yaml:62:7", "fle_path:").rel(
                search,
                "policy.yaml:16:5",
                schema,
            ),
        ],
    );
}

#[test]
fn rule_shadowed() {
    let shadowing = "the shadowing rule";
    case(
        "rule_shadowed",
        NO_BUILTIN,
        0,
        &[
            at("rule_shadowed", "policy.yaml:10:5", "name: allow-bash").rel(
                shadowing,
                "policy.yaml:6:5",
                "name: lockdown",
            ),
            at("rule_shadowed", "policy.yaml:13:5", "name: ask-read").rel(
                shadowing,
                "policy.yaml:6:5",
                "name: lockdown",
            ),
            // A deny whose `when` holds for every call of the tool, in every mode.
            at("rule_shadowed", "when.yaml:18:5", "name: allow-nuke").rel(
                shadowing,
                "when.yaml:13:5",
                "name: no-destructive",
            ),
        ],
    );
}

#[test]
fn rule_shadowed_by_an_enforced_deny() {
    case(
        "rule_shadowed_enforced",
        &[
            "--no-builtin",
            "--enforced",
            "{dir}/org",
            "-p",
            "{dir}/project",
        ],
        0,
        &[
            at(
                "rule_shadowed",
                "project/project.yaml:4:5",
                "name: allow-shell",
            )
            .rel("the shadowing rule", "org/org.yaml:6:5", "name: no-shell"),
            at(
                "rule_shadowed",
                "project/project.yaml:9:5",
                "name: allow-fetch",
            )
            .rel("the shadowing rule", "org/org.yaml:9:5", "name: ask-fetch"),
        ],
    );
}

/// A later layer's rule with the name of a lower layer's deny or ask rule and a `match` of
/// its own takes that rule's place: a warning naming both (changing another field, or an
/// allow rule's match, is not one).
#[test]
fn rule_replaced() {
    case(
        "rule_replaced",
        &["--no-builtin", "-p", "{dir}/base", "-p", "{dir}/project"],
        0,
        &[at(
            "rule_replaced",
            "project/project.yaml:6:12",
            "{ file_path: { path: [\"/**/prod.env\"] } }",
        )
        .rel(
            "the rule whose match is replaced",
            "base/base.yaml:12:5",
            "name: no-env",
        )],
    );
}

/// Text patterns on a path or a URL: a warning each; `path:` is not one.
#[test]
fn loose_pattern() {
    case(
        "loose_pattern",
        NO_BUILTIN,
        0,
        &[
            at("loose_pattern", "policy.yaml:22:26", "\"docs/**\""),
            at(
                "loose_pattern",
                "policy.yaml:27:20",
                "[\"https://docs.rs/*\"",
            ),
            at("loose_pattern", "policy.yaml:38:28", "\"src/config.txt\""),
            at("loose_pattern", "policy.yaml:44:25", "\"^curl \""),
            at("loose_pattern", "policy.yaml:50:26", "[\"private/\"]"),
            at(
                "loose_pattern",
                "policy.yaml:55:26",
                "[\"~root/.vault/**\"]",
            ),
            at(
                "loose_pattern",
                "policy.yaml:60:26",
                "[\"$USERPROFILE/x/**\"]",
            ),
            at("loose_pattern", "policy.yaml:65:26", "['conf\\db.yml']"),
            at("loose_pattern", "policy.yaml:70:26", "[\"conf/db.yml \"]"),
        ],
    );
}

#[test]
fn budget_ineffective() {
    case(
        "budget_ineffective",
        NO_BUILTIN,
        0,
        &[
            at("budget_ineffective", "tools.yaml:4:26", "30000").rel(
                "`max_inline` set here",
                "tools.yaml:4:45",
                "5000",
            ),
            at("budget_ineffective", "tools.yaml:7:19", "90000").rel(
                "`max_model` set here",
                "tools.yaml:8:18",
                "20000",
            ),
        ],
    );
}

#[test]
fn exempt_unbounded() {
    case(
        "exempt_unbounded",
        NO_BUILTIN,
        0,
        &[at("exempt_unbounded", "tools.yaml:5:21", "true")],
    );
}

#[test]
fn example_failed() {
    case(
        "example_failed",
        NO_BUILTIN,
        1,
        &[
            at(
                "example_failed",
                "policy.yaml:18:11",
                "{ tool: Read, input: { file_path: app/.envrc",
            ),
            at("example_failed", "policy.yaml:19:11", "{ tool: Write,"),
            at(
                "example_failed",
                "policy.yaml:22:11",
                "{ tool: Read, input: { file_path: ./x/../.env",
            ),
        ],
    );
}

/// A user's file that changes a built-in rule's `match` so that the built-in examples fail:
/// the diagnostic points at the failing example and at the user's change.
#[test]
fn example_failed_override() {
    let changed = "the rule's `match` is changed here";
    // The failing example's line in the built-in rules, wherever edits have moved it.
    let line = include_str!("../../../policies/rules.yaml")
        .lines()
        .position(|l| l.contains("file_path: deploy/secrets/token"))
        .expect("the built-in example")
        + 1;
    let location: &'static str =
        Box::leak(format!("builtin:policies/rules.yaml:{line}:11").into_boxed_str());
    case(
        "example_failed_override",
        &["-p", "{dir}"],
        1,
        &[
            at(
                "example_failed",
                location,
                "{ tool: Read, input: { file_path: deploy/secrets/token } }",
            )
            .rel(changed, "secrets.yaml:6:7", "file_path"),
            // The built-in rule's protections are replaced, not added to.
            at("rule_replaced", "secrets.yaml:6:7", "file_path").rel(
                "the rule whose match is replaced",
                "builtin:policies/rules.yaml:9:5",
                "name: no-secrets",
            ),
        ],
    );
}

#[test]
fn locked_field() {
    let locked = "locked here";
    case(
        "locked_field",
        &[
            "--no-builtin",
            "--enforced",
            "{dir}/org",
            "-p",
            "{dir}/project",
        ],
        1,
        &[
            // The fixture's Bash has no input schema, so the org rule's selector cannot be
            // checked: a warning.
            at("unknown_field", "org/org.yaml:11:7", "command").rel(
                "`Bash` is defined here",
                "org/org.yaml:3:3",
                "Bash:",
            ),
            at("locked_field", "project/project.yaml:4:34", "1h").rel(
                locked,
                "org/org.yaml:6:14",
                "timeout.max",
            ),
            at("locked_field", "project/project.yaml:5:31", "false").rel(
                locked,
                "org/org.yaml:6:27",
                "permission.always_ask",
            ),
            at("locked_field", "project/project.yaml:7:5", "name: no-curl").rel(
                "defined here",
                "org/org.yaml:8:5",
                "name: no-curl",
            ),
        ],
    );
}

#[test]
fn invalid_lock() {
    case(
        "invalid_lock",
        &[
            "--no-builtin",
            "--enforced",
            "{dir}/org",
            "-p",
            "{dir}/project",
        ],
        1,
        &[
            at("invalid_lock", "org/org.yaml:5:14", "timeout.maximum"),
            // A lock outside an enforced layer binds nothing: a warning.
            at(
                "invalid_lock",
                "project/project.yaml:4:14",
                "budget.max_model",
            ),
        ],
    );
}

#[test]
fn invalid_template() {
    case(
        "invalid_template",
        NO_BUILTIN,
        1,
        &[
            at("invalid_template", "engine.yaml:4:40", "{user}"),
            at("invalid_template", "engine.yaml:5:31", "{ms ms"),
            at("invalid_template", "tools.yaml:10:34", "{{input.edition}}"),
            at("invalid_template", "tools.yaml:10:55", "{{input.path\""),
            at("invalid_template", "tools.yaml:10:71", "{{env.HOME}}"),
            at("invalid_template", "tools.yaml:17:32", "{{env.TOKN}}"),
            at("invalid_template", "tools.yaml:18:21", "{{input.channel}}"),
            at("invalid_template", "tools.yaml:19:22", "{{env.TOKEN\""),
        ],
    );
}

#[test]
fn missing_required() {
    // Rules and hooks may leave out `decision`, `event` and `command` in a file (a lower layer
    // may define them); the merged set must have them.
    case(
        "missing_required",
        NO_BUILTIN,
        1,
        &[
            at("schema::required", "project.yaml:5:5", "name: half-rule"),
            at("schema::required", "project.yaml:9:5", "name: half-hook"),
            at("schema::required", "project.yaml:9:5", "name: half-hook"),
        ],
    );
}

#[test]
fn three_stages() {
    // A syntax error, schema errors and semantic errors in three files are all reported in
    // one run; the broken files are left out of the merge.
    case(
        "three_stages",
        NO_BUILTIN,
        1,
        &[
            at("syntax::yaml", "a_syntax.yaml:4:14", "[cat"),
            at("schema::unknown_key", "b_schema.toml:4:1", "timout"),
            at("schema::enum", "b_schema.toml:5:37", "\"disk\""),
            at("schema::format", "b_schema.toml:8:13", "\"lots\""),
            at("timeout_range", "c_semantic.yaml:4:25", "5m"),
            at("unknown_reference", "c_semantic.yaml:7:13", "Edt]"),
        ],
    );
}

#[test]
fn github_and_sarif_renderings() {
    for name in ["locked_field", "rule_shadowed"] {
        let dir = format!("{FIXTURES}/{name}");
        let args: &[&str] = if name == "locked_field" {
            &[
                "--no-builtin",
                "--enforced",
                "{dir}/org",
                "-p",
                "{dir}/project",
            ]
        } else {
            NO_BUILTIN
        };
        for format in ["github", "sarif"] {
            let out = run(&dir, args, &["--format", format]);
            insta::assert_snapshot!(format!("{name}_{format}"), out.transcript());
        }
        let sarif = run(&dir, args, &["--format", "sarif"]).json();
        let results = sarif["runs"][0]["results"].as_array().unwrap();
        assert!(!results.is_empty());
        for result in results {
            let region = &result["locations"][0]["physicalLocation"]["region"];
            assert!(region["startLine"].as_u64().unwrap() >= 1);
            assert!(!result["relatedLocations"].as_array().unwrap().is_empty());
        }
    }
}

#[test]
fn invalid_argv() {
    case(
        "invalid_argv",
        NO_BUILTIN,
        1,
        &[at("invalid_argv", "tools.yaml:8:27", "\\0")],
    );
}

#[test]
fn missing_executable() {
    case(
        "missing_executable",
        NO_BUILTIN,
        0,
        &[
            at(
                "missing_executable",
                "tools.yaml:6:38",
                "toolgate-no-such-program",
            ),
            at(
                "missing_executable",
                "tools.yaml:10:38",
                "./scripts/missing.sh",
            ),
            at(
                "missing_executable",
                "tools.yaml:18:15",
                "/nonexistent/audit",
            ),
        ],
    );
}

#[test]
fn input_in_script() {
    case(
        "input_in_script",
        NO_BUILTIN,
        1,
        &[
            at("input_in_script", "tools.yaml:8:38", "{{input.q}}"),
            at("input_in_script", "tools.yaml:22:58", "{{input.q}}"),
            at("input_in_script", "tools.yaml:26:66", "{{input.q}}"),
            at("input_in_script", "tools.yaml:30:45", "{{input.q}}"),
            at("input_in_script", "tools.yaml:42:65", "{{input.q}}"),
            at("input_in_script", "tools.yaml:46:46", "{{input.q}}"),
            at("input_in_script", "tools.yaml:50:60", "{{input.q}}"),
            at("input_in_script", "tools.yaml:54:59", "{{input.q}}"),
            at("input_in_script", "tools.yaml:58:91", "{{input.q}}"),
            at("input_in_script", "tools.yaml:62:57", "{{input.q}}"),
            at("input_in_script", "tools.yaml:66:54", "{{input.q}}"),
        ],
    );
}

#[test]
fn invalid_env_name() {
    case(
        "invalid_env_name",
        NO_BUILTIN,
        1,
        &[at("invalid_env_name", "tools.yaml:9:18", "\"A=B\"")],
    );
}

#[test]
fn hook_runs_workspace_code() {
    case(
        "hook_runs_workspace_code",
        NO_BUILTIN,
        0,
        &[
            at("hook_runs_workspace_code", "hooks.yaml:5:14", "[sh"),
            at("hook_runs_workspace_code", "hooks.yaml:8:14", "[sh"),
            at("hook_runs_workspace_code", "hooks.yaml:11:14", "[sh"),
        ],
    );
}

#[test]
fn every_semantic_code_has_a_fixture() {
    // Codes no stage emits yet, or that no command-line input can reach (see each reason).
    let exempt = [
        // The MCP handler issue adds the hint check.
        "toolgate::semantic::untrusted_hint",
        // The engine defaults layer is always loaded and no layer can unset a value, so the
        // merged engine section is always complete.
        "toolgate::semantic::incomplete_engine",
    ];
    for code in Code::ALL {
        let name = code.as_str();
        let Some(short) = name.strip_prefix("toolgate::semantic::") else {
            continue;
        };
        if exempt.contains(&name) {
            continue;
        }
        assert!(
            Path::new(ROOT).join(FIXTURES).join(short).is_dir(),
            "no fixture folder for {name}"
        );
    }
}
