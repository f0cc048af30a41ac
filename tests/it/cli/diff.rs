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
