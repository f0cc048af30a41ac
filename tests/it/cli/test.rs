//! `toolgate test` and the decisions `toolgate plan` shows (issue 5 item 7), through the
//! real binary: exit code, stdout and stderr snapshotted together.
//!
//! The fixtures under `tests/fixtures/permission/cli/` load with `--no-builtin`, so the
//! snapshots do not change when the built-in policies do; `--workspace /ws` keeps the
//! normalised paths in rule details stable. The starter set of `toolgate init` is tested
//! against the built-in policies, as a user runs it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/permission/cli")
}

/// Runs the binary in `dir`; returns the exit code and a transcript for snapshots.
fn toolgate(dir: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(dir)
        .args(["--color", "never"])
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .expect("the binary runs");
    let code = output.status.code().unwrap_or(-1);
    let transcript = format!(
        "exit: {code}\n--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (code, transcript)
}

/// The JSON a transcript's stdout holds.
fn stdout_json(transcript: &str) -> serde_json::Value {
    let stdout = transcript.split("--- stdout\n").nth(1).unwrap();
    serde_json::from_str(stdout.split("--- stderr").next().unwrap()).unwrap()
}

const FIXTURE_POLICIES: &[&str] = &["--no-builtin", "-p", "policies", "--workspace", "/ws"];

fn fixture(args: &[&str]) -> (i32, String) {
    let all: Vec<&str> = FIXTURE_POLICIES.iter().chain(args).copied().collect();
    toolgate(&fixtures(), &all)
}

#[test]
fn passing_tests_human() {
    let (code, out) = fixture(&["test", "tests"]);
    assert_eq!(code, 0, "{out}");
    // Folder discovery: the YAML and the nested TOML file, not `ignored.yaml`.
    assert!(out.contains("tests/nested/reads.test.toml:3:1"), "{out}");
    assert!(!out.contains("ignored"), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn passing_tests_json() {
    let (code, out) = fixture(&["test", "tests/basics.test.yaml", "--format", "json"]);
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn failing_tests_human() {
    let (code, out) = fixture(&["test", "failing"]);
    assert_eq!(code, 1, "{out}");
    // Each failure names the test, its place, expected vs actual and the deciding rules with
    // their file:line.
    assert!(
        out.contains("FAIL failing/failing.test.yaml:7:5  expects the wrong decision and rule")
    );
    assert!(out.contains("decision: expected `allow`, got `ask`"));
    assert!(out.contains("rule `plan-read-only` (deny, priority 90) at policies/rules.yaml:26:5"));
    insta::assert_snapshot!(out);
}

#[test]
fn failing_tests_json() {
    let (code, out) = fixture(&["test", "failing", "--format", "json"]);
    assert_eq!(code, 1, "{out}");
    let report = stdout_json(&out);
    assert_eq!(report["passed"], 1);
    assert_eq!(report["failed"], 7);
    insta::assert_snapshot!(out);
}

#[test]
fn invalid_test_files_exit_2_with_positioned_diagnostics() {
    let (code, out) = fixture(&["test", "invalid"]);
    assert_eq!(code, 2, "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn invalid_test_files_json() {
    let (code, out) = fixture(&["test", "invalid/references.test.yaml", "--format", "json"]);
    assert_eq!(code, 2, "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn a_valid_file_does_not_run_when_another_is_invalid() {
    let (code, out) = fixture(&["test", "tests", "invalid/syntax.test.yaml"]);
    assert_eq!(code, 2, "{out}");
    assert!(!out.contains("test result"), "{out}");
}

#[test]
fn missing_paths_exit_2() {
    let (code, out) = fixture(&["test", "nowhere.test.yaml", "policies"]);
    assert_eq!(code, 2, "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn invalid_policies_exit_1() {
    let (code, out) = toolgate(
        &fixtures(),
        &[
            "--no-builtin",
            "-p",
            "failing/failing.test.yaml",
            "test",
            "tests",
        ],
    );
    assert_eq!(code, 1, "{out}");
}

#[test]
fn plan_shows_the_rules_behind_each_decision() {
    let (code, out) = fixture(&["plan", "batch.yaml"]);
    assert_eq!(code, 0, "{out}");
    for expected in [
        "allow  by rule:git-read-only",
        "deny   by rule:no-secrets",
        "allow  by default",
        "deny   by rule:no-force-push",
        "ask    by always_ask, default",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in {out}");
    }
    insta::assert_snapshot!(out);
}

#[test]
fn plan_json_carries_rule_names_and_locations() {
    let (code, out) = fixture(&["plan", "batch.yaml", "--format", "json"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("\"location\": \"policies/rules.yaml:3:5\""),
        "{out}"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn the_init_starter_set_passes_its_own_tests() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = toolgate(dir.path(), &["init", "starter"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = toolgate(dir.path(), &["-p", "starter/policies", "check"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = toolgate(
        dir.path(),
        &["-p", "starter/policies", "test", "starter/tests"],
    );
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn without_paths_the_init_folder_is_tested() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = toolgate(dir.path(), &["-p", ".toolgate/policies", "test"]);
    assert_eq!(code, 2, "policies missing: {out}");
    let (code, out) = toolgate(dir.path(), &["init"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = toolgate(dir.path(), &["-p", ".toolgate/policies", "test"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("running 3 tests from 1 file"), "{out}");
    // And a missing default folder is a usage error.
    std::fs::remove_dir_all(dir.path().join(".toolgate/tests")).unwrap();
    let (code, out) = toolgate(dir.path(), &["-p", ".toolgate/policies", "test"]);
    assert_eq!(code, 2, "{out}");
}

#[test]
fn coverage_lists_unexercised_rules_and_fails_below_the_minimum() {
    let (code, out) = fixture(&["test", "tests/nested", "--min-coverage", "80"]);
    assert_eq!(code, 1, "25 % is below 80 %: {out}");
    assert!(
        out.contains("rule coverage: 1 of 4 rules exercised (25 %)"),
        "{out}"
    );
    assert!(
        out.contains("`no-force-push` (deny) at policies/rules.yaml:18:5"),
        "{out}"
    );
    insta::assert_snapshot!(out);
    // The same run passes with a minimum it reaches, and `--coverage` alone never fails.
    let (code, out) = fixture(&["test", "tests/nested", "--min-coverage", "25%"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = fixture(&["test", "tests/nested", "--coverage"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn coverage_names_rules_that_match_but_never_decide() {
    let (code, out) = fixture(&["test", "coverage", "--coverage", "--format", "json"]);
    assert_eq!(code, 0, "{out}");
    let report = stdout_json(&out);
    let names = |key: &str| -> Vec<String> {
        report["coverage"][key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("never_decides"), ["git-read-only"]);
    assert_eq!(names("unexercised"), ["no-secrets", "plan-read-only"]);
    assert_eq!(report["coverage"]["percent"], 50.0);
    insta::assert_snapshot!(out);
}

#[test]
fn coverage_counts_the_project_rules_not_the_built_in_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = toolgate(dir.path(), &["init", "starter"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = toolgate(
        dir.path(),
        &[
            "-p",
            "starter/policies",
            "test",
            "starter/tests",
            "--coverage",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let report = stdout_json(&out);
    let starter =
        std::fs::read_to_string(dir.path().join("starter/policies/project.yaml")).unwrap();
    let written = starter.matches("- name:").count();
    assert!(written > 0, "the starter set has rules");
    assert_eq!(report["coverage"]["rules"], written, "{out}");
}

#[test]
fn junit_reports_failures_and_the_coverage() {
    let (code, out) = fixture(&["test", "failing", "--format", "junit"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("failures=\"7\""), "{out}");
    insta::assert_snapshot!("junit_failures", out);
    let (code, out) = fixture(&[
        "test",
        "tests/nested",
        "--format",
        "junit",
        "--min-coverage",
        "90",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("<skipped message=\"no test case or rule example exercises this rule\""),
        "{out}"
    );
    assert!(
        out.contains("<failure message=\"coverage 25 % is below the minimum of 90 %"),
        "{out}"
    );
    insta::assert_snapshot!("junit_coverage", out);
}

#[test]
fn a_minimum_coverage_that_is_not_a_percentage_is_a_usage_error() {
    let (code, out) = fixture(&["test", "tests", "--min-coverage", "120"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("`120` is not between 0 and 100"), "{out}");
}
