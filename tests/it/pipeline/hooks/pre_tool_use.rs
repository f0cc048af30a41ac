//! `PreToolUse` hooks (SPEC §6 step 4, §7.2; issue 5 item 5) as real processes: deny, ask,
//! allow, rewritten input (validated again), additional context, exit code 2, other exit
//! codes (non-blocking, reported as `HookFailed`), fail-closed hooks, timeouts, and the
//! tool-name, glob and mode matchers. Fixtures: `tests/fixtures/hooks/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::support::hooks::fixture;
use serde_json::json;
use toolgate::CallStatus;
use toolgate::Decision;
use toolgate::ErrorCode;
use toolgate::Reason;
use toolgate::{ApprovalAnswer, ApprovalBroker, FixedAnswer};

fn labels(reasons: &[Reason]) -> Vec<String> {
    reasons.iter().map(Reason::label).collect()
}

fn allow_all() -> Arc<dyn ApprovalBroker> {
    Arc::new(FixedAnswer(ApprovalAnswer::Allow { reason: None }))
}

#[tokio::test]
async fn a_hook_deny_wins_and_its_reason_is_told() {
    let f = fixture("pre.yaml");
    // Even with an approver that allows everything: a hook deny is final.
    let outcome = f
        .run(
            &[("Bash", json!({"command": "danger zone"}))],
            &[],
            Some(allow_all()),
        )
        .await;
    let result = &outcome.results[0];
    assert_eq!(result.status, CallStatus::Denied);
    assert_eq!(result.model_content, "the guard refuses danger");
    let permission = result.permission.as_ref().unwrap();
    assert_eq!(labels(&permission.reasons), ["hook:guard", "default"]);
    assert!(f.ran().is_empty());
}

#[tokio::test]
async fn a_hook_ask_turns_a_rules_allow_into_ask() {
    let f = fixture("pre.yaml");
    let result = f.one("Bash", json!({"command": "question now"})).await;
    assert_eq!(result.status, CallStatus::Denied);
    assert_eq!(result.model_content, "No permission client configured");
    let permission = result.permission.as_ref().unwrap();
    assert_eq!(
        labels(&permission.reasons),
        [
            "hook:guard",
            "rule:allow-test-commands",
            "approval:no_client"
        ]
    );
    assert!(f.ran().is_empty());
    // An approval runs it.
    let outcome = f
        .run(
            &[("Bash", json!({"command": "question now"}))],
            &[],
            Some(allow_all()),
        )
        .await;
    assert_eq!(outcome.results[0].status, CallStatus::Ok);
    assert_eq!(f.ran(), ["Bash: \"question now\""]);
}

#[tokio::test]
async fn a_hook_allow_turns_an_ask_into_allow() {
    let f = fixture("pre.yaml");
    let result = f.one("Bash", json!({"command": "trusted thing"})).await;
    assert_eq!(result.status, CallStatus::Ok, "{}", result.model_content);
    let permission = result.permission.as_ref().unwrap();
    assert_eq!(permission.decision, Decision::Allow);
    assert_eq!(labels(&permission.reasons), ["hook:guard", "default"]);
}

#[tokio::test]
async fn a_hook_allow_does_not_undo_always_ask() {
    let f = fixture("pre.yaml");
    let result = f.one("Deploy", json!({"target": "prod"})).await;
    assert_eq!(result.status, CallStatus::Denied);
    assert_eq!(result.model_content, "No permission client configured");
    // The hook ran and allowed; its allow agrees with the default, so the reasons name the
    // default, and `always_ask` (applied after the hooks) still asks.
    assert_eq!(
        result.hook_context.as_deref(),
        Some("[Hook additional context]\n1. the allow hook ran")
    );
    let permission = result.permission.as_ref().unwrap();
    assert_eq!(
        labels(&permission.reasons),
        ["always_ask", "default", "approval:no_client"]
    );
    assert!(f.ran().is_empty());
    // Only an explicit approval runs it.
    let outcome = f
        .run(
            &[("Deploy", json!({"target": "prod"}))],
            &[],
            Some(allow_all()),
        )
        .await;
    assert_eq!(outcome.results[0].status, CallStatus::Ok);
}

#[tokio::test]
async fn a_rewritten_input_is_what_is_judged_and_what_runs() {
    let f = fixture("pre.yaml");
    // `rewrite-me …` is not allowed by any rule; the rewrite `echo rewritten` is.
    let result = f.one("Bash", json!({"command": "rewrite-me please"})).await;
    assert_eq!(result.status, CallStatus::Ok, "{}", result.model_content);
    assert_eq!(f.ran(), ["Bash: \"echo rewritten\""]);
    assert_eq!(
        result.model_content,
        "Bash ran with {\"command\":\"echo rewritten\"}"
    );
}

#[tokio::test]
async fn an_invalid_rewrite_fails_the_call() {
    let f = fixture("pre.yaml");
    let result = f.one("Bash", json!({"command": "rewrite-badly now"})).await;
    assert_eq!(result.status, CallStatus::Error);
    assert_eq!(
        result.error.as_ref().unwrap().code,
        ErrorCode::InputValidation
    );
    assert!(
        result
            .model_content
            .starts_with("<tool_use_error>InputValidationError: "),
        "{}",
        result.model_content
    );
    assert!(f.ran().is_empty());
}

#[tokio::test]
async fn additional_context_reaches_the_model() {
    let f = fixture("pre.yaml");
    let result = f.one("Bash", json!({"command": "context please"})).await;
    assert_eq!(result.status, CallStatus::Ok);
    assert_eq!(
        result.model_text(),
        "Bash ran with {\"command\":\"context please\"}\n\n[Hook additional context]\n1. the guard saw this call"
    );
}

#[tokio::test]
async fn exit_code_2_blocks_with_stderr_as_the_reason() {
    let f = fixture("pre.yaml");
    let result = f.one("Bash", json!({"command": "blocked now"})).await;
    assert_eq!(result.status, CallStatus::Denied);
    assert_eq!(result.model_content, "blocked by exit code 2");
    assert!(f.ran().is_empty());
    assert!(f.hook_failures().is_empty());
}

#[tokio::test]
async fn a_failure_with_empty_stderr_has_no_dangling_colon() {
    let f = fixture("pre.yaml");
    let result = f.one("Bash", json!({"command": "mute now"})).await;
    assert_eq!(result.status, CallStatus::Ok);
    let errors: Vec<String> = f.hook_failures().into_iter().map(|h| h.error).collect();
    assert_eq!(errors, ["exit code 1, nothing on stderr"]);
}

#[tokio::test]
async fn other_failures_are_reported_and_do_not_block() {
    let f = fixture("pre.yaml");
    let outcome = f
        .run(
            &[
                ("Bash", json!({"command": "crash now"})),
                ("Bash", json!({"command": "garbage now"})),
                ("Hasty", json!({"command": "slow now"})),
            ],
            &[],
            None,
        )
        .await;
    let statuses: Vec<CallStatus> = outcome.results.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [CallStatus::Ok; 3]);
    let failures: Vec<(String, String, bool)> = f
        .hook_failures()
        .into_iter()
        .map(|h| (h.hook, h.event, h.fail_closed))
        .collect();
    assert_eq!(
        failures,
        [
            ("guard".into(), "PreToolUse".into(), false),
            ("guard".into(), "PreToolUse".into(), false),
            ("hasty-guard".into(), "PreToolUse".into(), false),
        ]
    );
    let errors: Vec<String> = f.hook_failures().into_iter().map(|h| h.error).collect();
    assert_eq!(errors[0], "exit code 1: something broke");
    assert!(
        errors[1].starts_with("its stdout is not a valid answer"),
        "{}",
        errors[1]
    );
    assert_eq!(errors[2], "timed out after 200ms");
    // The failures are reported against their calls.
    let calls: Vec<Option<String>> = f
        .events()
        .into_iter()
        .filter(|e| e.type_name() == "HookFailed")
        .map(|e| e.call_id.map(|c| c.to_string()))
        .collect();
    assert_eq!(
        calls,
        [Some("c0".into()), Some("c1".into()), Some("c2".into())]
    );
}

#[tokio::test]
async fn a_fail_closed_hook_that_fails_denies() {
    let f = fixture("pre.yaml");
    let outcome = f
        .run(
            &[
                ("Strict", json!({"command": "crash now"})),
                ("HastyStrict", json!({"command": "slow now"})),
                // A fail-closed hook that answers is just a hook.
                ("Strict", json!({"command": "echo fine"})),
            ],
            &[],
            None,
        )
        .await;
    let got: Vec<(CallStatus, &str)> = outcome
        .results
        .iter()
        .map(|r| (r.status, r.model_content.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                CallStatus::Denied,
                "hook `strict-guard` failed: exit code 1: something broke"
            ),
            (
                CallStatus::Denied,
                "hook `hasty-strict-guard` failed: timed out after 200ms"
            ),
            (
                CallStatus::Ok,
                "Strict ran with {\"command\":\"echo fine\"}"
            ),
        ]
    );
    let closed: Vec<bool> = f.hook_failures().iter().map(|h| h.fail_closed).collect();
    assert_eq!(closed, [true, true]);
}

#[tokio::test]
async fn matchers_on_tool_names_globs_and_modes() {
    let f = fixture("pre.yaml");
    let outcome = f
        .run(
            &[
                ("mcp__github__create_issue", json!({"title": "x"})),
                ("Read", json!({"file_path": "a"})),
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(
        outcome.results[0].hook_context.as_deref(),
        Some(
            "[Hook additional context]\n1. mcp: PreToolUse on mcp__github__create_issue (status none)"
        )
    );
    // No hook matches `Read` outside plan mode.
    assert_eq!(outcome.results[1].hook_context, None);

    let outcome = f
        .run(
            &[
                ("mcp__github__create_issue", json!({"title": "x"})),
                ("Read", json!({"file_path": "a"})),
            ],
            &["plan"],
            None,
        )
        .await;
    assert_eq!(
        outcome.results[0].hook_context.as_deref(),
        Some(
            "[Hook additional context]\n1. mcp: PreToolUse on mcp__github__create_issue (status none)\n2. plan: PreToolUse on mcp__github__create_issue (status none)"
        )
    );
    assert_eq!(
        outcome.results[1].hook_context.as_deref(),
        Some("[Hook additional context]\n1. plan: PreToolUse on Read (status none)")
    );
}
