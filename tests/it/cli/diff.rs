//! `toolgate diff` through the binary: every format on a pair of fixture sets that loosen,
//! tighten, add and remove things, with exit codes.

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::Command;

fn toolgate(args: &[&str]) -> (i32, String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(root)
        .args(["--no-builtin"])
        .args(args)
        .output()
        .expect("the binary runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

const BASE: &str = "tests/fixtures/diff/base";
const HEAD: &str = "tests/fixtures/diff/head";

fn snapshot(format: &str) -> String {
    let (code, stdout, stderr) = toolgate(&["diff", BASE, HEAD, "--format", format]);
    format!("exit: {code}\n--- stdout\n{stdout}--- stderr\n{stderr}")
}

#[test]
fn human() {
    insta::assert_snapshot!(snapshot("human"));
}

#[test]
fn markdown() {
    insta::assert_snapshot!(snapshot("markdown"));
}

#[test]
fn json() {
    insta::assert_snapshot!(snapshot("json"));
}

#[test]
fn github() {
    insta::assert_snapshot!(snapshot("github"));
}

#[test]
fn identical_sets_have_no_change() {
    let (code, stdout, _) = toolgate(&["diff", BASE, BASE]);
    assert_eq!((code, stdout.as_str()), (0, "no change in effect\n"));
}

#[test]
fn high_risk_changes_fail_when_asked() {
    let (code, _, _) = toolgate(&["diff", BASE, HEAD, "--fail-on-high-risk"]);
    assert_eq!(code, 1);
    let (code, _, _) = toolgate(&["diff", HEAD, HEAD, "--fail-on-high-risk"]);
    assert_eq!(code, 0);
}

#[test]
fn an_invalid_side_is_reported_with_its_diagnostics() {
    let (code, _, stderr) = toolgate(&["diff", BASE, "tests/fixtures/check/duplicate_name"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("the head policy set does not load"),
        "{stderr}"
    );
    assert!(stderr.contains("duplicate"), "{stderr}");
}

#[test]
fn an_unknown_revision_is_a_usage_error() {
    let (code, _, stderr) = toolgate(&["-p", BASE, "diff", "--git", "no-such-revision", "HEAD"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("`no-such-revision` is not a git revision"),
        "{stderr}"
    );
}

#[test]
fn a_missing_root_is_a_usage_error_that_names_the_argument() {
    for (args, side) in [
        (["diff", "tests/fixtures/diff/nowhere", HEAD], "base"),
        (["diff", BASE, "tests/fixtures/diff/nowhere"], "head"),
    ] {
        let (code, stdout, stderr) = toolgate(&args);
        assert_eq!(code, 2, "{stdout}{stderr}");
        assert!(
            stderr.contains(&format!(
                "the {side} policy root `tests/fixtures/diff/nowhere` does not exist"
            )),
            "{stderr}"
        );
        assert!(stderr.contains(&side.to_uppercase()), "{stderr}");
        assert!(!stderr.contains("--policies"), "{stderr}");
    }
}

#[test]
fn a_missing_policies_root_is_a_usage_error_too() {
    let (code, stdout, stderr) =
        toolgate(&["-p", "tests/fixtures/diff/nowhere", "diff", BASE, HEAD]);
    assert_eq!(code, 2, "{stdout}{stderr}");
}

#[test]
fn fail_on_takes_a_level() {
    for (level, code) in [("high", 1), ("medium", 1), ("low", 1)] {
        let (got, _, _) = toolgate(&["diff", BASE, HEAD, "--fail-on", level]);
        assert_eq!(got, code, "--fail-on {level}");
    }
    let (code, _, _) = toolgate(&["diff", BASE, BASE, "--fail-on", "low"]);
    assert_eq!(code, 0);
}

#[test]
fn a_tightening_change_passes_fail_on_high_but_not_fail_on_low() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let head = dir.path().join("policy.yaml");
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(HEAD)
            .join("policy.yaml"),
    )
    .expect("the head fixture");
    std::fs::write(
        &head,
        base.replace("max_concurrency: 4", "max_concurrency: 3"),
    )
    .expect("written");
    let head = head.to_str().expect("utf-8");
    let (code, stdout, _) = toolgate(&["diff", HEAD, head, "--fail-on", "high"]);
    assert_eq!(code, 0, "{stdout}");
    let (code, _, _) = toolgate(&["diff", HEAD, head, "--fail-on", "medium"]);
    assert_eq!(code, 1);
}

#[test]
fn the_json_report_follows_its_published_schema() {
    let (_, schema, _) = toolgate(&["schema", "diff"]);
    let schema: serde_json::Value = serde_json::from_str(&schema).expect("a schema");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let (_, report, _) = toolgate(&["diff", BASE, HEAD, "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&report).expect("json");
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        report["decisions"]["directions"],
        serde_json::json!([
            {"direction": "ask → allow", "count": 1},
            {"direction": "deny → ask", "count": 1}
        ])
    );
}

#[test]
fn test_cases_and_a_replayed_log_join_the_decision_diff() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(
        dir.path().join("deploy.test.yaml"),
        "version: 1\ntests:\n  - name: lint runs\n    call: { tool: Lint, input: {} }\n    expect: { decision: allow }\n",
    )
    .expect("written");
    std::fs::write(
        dir.path().join("decisions.jsonl"),
        concat!(
            r#"{"version":1,"tool":"Lint","input":{"fix":true},"decision":"allow"}"#,
            "\nnot a record\n"
        ),
    )
    .expect("written");
    let tests = dir.path().join("deploy.test.yaml");
    let log = dir.path().join("decisions.jsonl");
    let (code, stdout, stderr) = toolgate(&[
        "diff",
        BASE,
        HEAD,
        "--format",
        "json",
        "--tests",
        tests.to_str().expect("utf-8"),
        "--replay",
        log.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(report["replay_skipped"], 1);
    let origins: Vec<String> = report["decisions"]["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .flat_map(|c| c["origins"].as_array().cloned().unwrap_or_default())
        .map(|o| o["kind"].as_str().unwrap_or("").to_owned())
        .collect();
    // `Lint` is gone from HEAD: the tested and the logged call can no longer run.
    assert!(origins.contains(&"test".to_owned()), "{stdout}");
    assert!(origins.contains(&"replay".to_owned()), "{stdout}");
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

#[test]
fn git_ranges_and_the_work_tree_are_compared() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let policies = dir.path().join("policies");
    std::fs::create_dir_all(&policies).expect("created");
    let copy = |from: &str| {
        std::fs::copy(
            root.join(from).join("policy.yaml"),
            policies.join("policy.yaml"),
        )
        .expect("copied");
    };
    copy(BASE);
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "base"]);
    copy(HEAD);
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .current_dir(dir.path())
            .args([
                "--no-builtin",
                "-p",
                "policies",
                "diff",
                "--fail-on",
                "high",
            ])
            .args(args)
            .output()
            .expect("the binary runs");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    // The work tree is HEAD when no HEAD revision is given.
    let (code, stdout) = run(&["--git", "HEAD"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("allow rule `staging-ok` added"), "{stdout}");
    let (code, _) = run(&["--git", "HEAD.."]);
    assert_eq!(code, 1);
    git(dir.path(), &["commit", "-qam", "head"]);
    let (code, stdout) = run(&["--git", "HEAD~1..HEAD"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("(policies/policy.yaml:17:5)"), "{stdout}");
    let (code, stdout) = run(&["--git", "HEAD..HEAD"]);
    assert_eq!((code, stdout.as_str()), (0, "no change in effect\n"));
}

/// `diff --git REV` in a project found from the current folder (no `-p`) reads the work
/// tree's policies whole, as it reads the revision's: an allow rule added to an untrusted
/// work tree is the change under review (it was reported as "no change in effect", since
/// an untrusted project's allow rules are left out when it is loaded).
#[test]
fn the_work_tree_of_a_found_project_is_read_whole() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policies = dir.path().join(".toolgate/policies");
    std::fs::create_dir_all(&policies).expect("created");
    std::fs::write(policies.join("p.yaml"), "version: 1\n").expect("written");
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "base"]);
    std::fs::write(
        policies.join("p.yaml"),
        "version: 1\nrules:\n  - { name: anything-goes, tools: [Bash], decision: allow, priority: 1000 }\n",
    )
    .expect("written");
    let config = tempfile::tempdir().expect("a temporary folder");
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(dir.path())
        .env("TOOLGATE_CONFIG_DIR", config.path())
        .args(["diff", "--git", "HEAD", "--fail-on", "high"])
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("allow rule `anything-goes` added"),
        "{stdout}"
    );
}

/// Ranges are read as git reads them: `A...B` from where the two forked (the usual CI form,
/// `origin/main...HEAD`, was "`.HEAD` is not a git revision") and a side left out is `HEAD`
/// (`..HEAD` was "`` is not a git revision").
#[test]
fn git_ranges_compare_from_where_the_branches_forked() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policies = dir.path().join(".toolgate/policies");
    std::fs::create_dir_all(&policies).expect("created");
    std::fs::write(policies.join("p.yaml"), "version: 1\n").expect("written");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "base"]);
    git(dir.path(), &["checkout", "-qb", "feature"]);
    std::fs::write(
        policies.join("p.yaml"),
        "version: 1\nrules:\n  - { name: anything-goes, tools: [Bash], decision: allow, priority: 1000 }\n",
    )
    .expect("written");
    git(dir.path(), &["commit", "-qam", "loosen"]);
    // `main` moves on with a change of its own, which `main...feature` leaves out.
    git(dir.path(), &["checkout", "-q", "main"]);
    std::fs::write(
        policies.join("q.yaml"),
        "version: 1\nrules:\n  - { name: no-curl, tools: [Bash], decision: deny, match: { command: { shell: [\"curl *\"] } } }\n",
    )
    .expect("written");
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "tighten"]);
    let config = tempfile::tempdir().expect("a temporary folder");
    let diff = |range: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .current_dir(dir.path())
            .env("TOOLGATE_CONFIG_DIR", config.path())
            .args(["diff", "--git", range])
            .output()
            .expect("the binary runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.code(), text)
    };
    let (code, forked) = diff("main...feature");
    assert_eq!(code, Some(0), "{forked}");
    assert!(
        forked.contains("allow rule `anything-goes` added"),
        "{forked}"
    );
    assert!(!forked.contains("no-curl"), "{forked}");
    let (code, two_dots) = diff("main..feature");
    assert_eq!(code, Some(0), "{two_dots}");
    assert!(two_dots.contains("no-curl"), "{two_dots}");
    let (code, same) = diff("..HEAD");
    assert_eq!((code, same.as_str()), (Some(0), "no change in effect\n"));
}

/// A link in the policy root is followed when policies load, but git keeps only its target's
/// name: comparing revisions through it would leave out what it links (a pull request adding
/// `shared -> ../docs/agent` and an allow rule there was "no change in effect"). It is
/// refused, naming the link.
#[test]
fn a_link_in_the_policy_root_at_a_revision_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let policies = dir.path().join("policies");
    std::fs::create_dir_all(&policies).expect("created");
    std::fs::copy(
        root.join(BASE).join("policy.yaml"),
        policies.join("policy.yaml"),
    )
    .expect("copied");
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "base"]);
    std::fs::create_dir_all(dir.path().join("docs/agent")).expect("created");
    std::fs::copy(
        root.join(HEAD).join("policy.yaml"),
        dir.path().join("docs/agent/extra.yaml"),
    )
    .expect("copied");
    std::os::unix::fs::symlink("../docs/agent", policies.join("shared")).expect("linked");
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "link"]);
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(dir.path())
        .args([
            "--no-builtin",
            "-p",
            "policies",
            "diff",
            "--git",
            "HEAD~1..HEAD",
        ])
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`policies/shared` is a symbolic link or a submodule at `HEAD`"),
        "{stderr}"
    );
}
