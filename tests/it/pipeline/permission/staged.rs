//! Staged rollout (issue 22 point 5): rules with `enforcement: warn` or `audit` decide
//! nothing; where one would change a call's decision, a run records it as a
//! `StagedRuleMatched` event and in the result's permission, and a `warn` rule's message
//! reaches the model after the output. `plan` and `test` show the same.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

use crate::support::check::toolgate;

const POLICIES: &str = "tests/fixtures/permission/staged/policies";
const BATCH: &str = "tests/fixtures/permission/staged/batch.yaml";

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn staged_rules_decide_nothing_but_are_recorded_and_warn_the_model() {
    let run = toolgate(&[
        "--no-builtin",
        "-p",
        POLICIES,
        "run",
        BATCH,
        "--format",
        "jsonl",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let events = lines(&run.stdout);
    let staged: Vec<(&str, &str, &str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "StagedRuleMatched")
        .map(|e| {
            (
                e["call_id"].as_str().unwrap(),
                e["rule"].as_str().unwrap(),
                e["enforcement"].as_str().unwrap(),
                e["would"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        staged,
        [
            ("token", "no-tokens", "warn", "deny"),
            ("password", "no-passwords", "audit", "deny")
        ]
    );
    let finalized = events.last().unwrap();
    assert_eq!(finalized["type"], "BatchFinalized");
    let result = |id: &str| {
        finalized["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["call_id"] == id)
            .unwrap()
            .clone()
    };
    // Every call ran: nothing staged decides.
    for id in ["plain", "token", "password"] {
        assert_eq!(result(id)["status"], "ok", "{id}");
        assert_eq!(result(id)["permission"]["decision"], "allow", "{id}");
    }
    // `warn` tells the model; `audit` does not.
    assert_eq!(
        result("token")["model_content"],
        "my token\n\n\n[Policy warnings]\n1. rule `no-tokens` is not enforced yet; once it is, this call would be denied: tokens must not be echoed"
    );
    assert_eq!(result("password")["model_content"], "my password\n");
    assert_eq!(
        result("password")["permission"]["staged"][0]["rule"],
        "no-passwords"
    );
    assert!(result("plain")["permission"].get("staged").is_none());
}

#[test]
fn plan_and_test_show_what_staged_rules_would_change() {
    let plan = toolgate(&["--no-builtin", "-p", POLICIES, "plan", BATCH]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    insta::assert_snapshot!("staged_plan", plan.stdout);
    let test = toolgate(&[
        "--no-builtin",
        "-p",
        POLICIES,
        "test",
        "tests/fixtures/permission/staged/staged.test.yaml",
    ]);
    assert_eq!(test.code, 0, "{}", test.stdout);
    assert!(
        test.stdout
            .contains("rule `no-tokens` (warn) would make it deny (it is allow)"),
        "{}",
        test.stdout
    );
    insta::assert_snapshot!("staged_test", test.stdout);
}
