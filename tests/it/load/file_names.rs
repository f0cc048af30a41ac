//! A policy file whose name is not valid UTF-8 is loaded like any other (its name shown
//! lossily), never skipped: skipping it would drop an enforced deny rule while `check`
//! reports a clean set.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::support::check::toolgate;

#[test]
fn a_policy_file_with_a_non_utf8_name_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let org = dir.path().join("org");
    std::fs::create_dir(&org).unwrap();
    // `règles.yaml` in Latin-1: not UTF-8.
    let name = OsStr::from_bytes(b"r\xe9gles.yaml");
    std::fs::write(
        org.join(name),
        "version: 1\nrules:\n  - name: org-no-echo\n    tools: [Echo]\n    decision: deny\n    reason: org says no\n",
    )
    .unwrap();
    let batch = dir.path().join("batch.yaml");
    std::fs::write(
        &batch,
        "calls:\n  - {id: a, tool: Echo, input: {text: hi}}\n",
    )
    .unwrap();
    let org = org.to_str().unwrap();
    let policies = "tests/fixtures/serve/policies";
    let check = toolgate(&["--no-builtin", "--enforced", org, "-p", policies, "check"]);
    assert_eq!(check.code, 0, "{}", check.transcript());
    assert!(
        check.stdout.contains("4 files"),
        "the file is counted: {}",
        check.transcript()
    );
    let plan = toolgate(&[
        "--no-builtin",
        "--enforced",
        org,
        "-p",
        policies,
        "plan",
        batch.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let plan = plan.json();
    let call = &plan["calls"][0];
    assert_eq!(call["decision"], "deny", "{plan}");
    assert_eq!(call["reasons"][0]["name"], "org-no-echo", "{plan}");
    let location = call["reasons"][0]["location"].as_str().unwrap();
    assert!(
        location.contains("r\u{fffd}gles.yaml:3:5"),
        "the name is shown lossily: {location}"
    );
}
