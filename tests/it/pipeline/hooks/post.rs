//! `PostToolUse`, `PostToolUseFailure` and `PostToolBatch` hooks (SPEC §6 step 8, §8.3;
//! issue 5 item 5) as real `/bin/sh` processes: context appended to the model text as
//! `[Hook additional context]` entries, also on error results and denials; exit code 2's
//! stderr as context; the batch text budgeted by a second finalizer pass.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::hooks::fixture;
use serde_json::json;
use toolgate::CallStatus;

#[tokio::test]
async fn post_tool_use_context_follows_the_output() {
    let f = fixture("post.yaml");
    let result = f.one("Read", json!({"file_path": "notes.txt"})).await;
    assert_eq!(result.status, CallStatus::Ok);
    assert_eq!(
        result.model_text(),
        "Read ran with {\"file_path\":\"notes.txt\"}\n\n[Hook additional context]\n1. post: PostToolUse on Read (status ok)"
    );
}

#[tokio::test]
async fn exit_code_2_after_a_call_becomes_context() {
    let f = fixture("post.yaml");
    let result = f
        .one("mcp__github__create_issue", json!({"title": "x"}))
        .await;
    assert_eq!(result.status, CallStatus::Ok);
    assert_eq!(
        result.hook_context.as_deref(),
        Some("[Hook additional context]\n1. the post hook insists on a review")
    );
    assert!(f.hook_failures().is_empty());
}

#[tokio::test]
async fn failure_hooks_add_context_to_error_results_and_denials() {
    let f = fixture("post.yaml");
    let outcome = f
        .run(
            &[
                // A business failure of the handler.
                ("Fail", json!({})),
                // A rule denial.
                ("Read", json!({"file_path": "app/.env"})),
                // An ask without approver.
                ("Bash", json!({"command": "rm -rf /"})),
                // Input validation.
                ("Bash", json!({"command": 7})),
            ],
            &[],
            None,
        )
        .await;
    let got: Vec<(CallStatus, String)> = outcome
        .results
        .iter()
        .map(|r| (r.status, r.model_text()))
        .collect();
    assert_eq!(
        got,
        [
            (
                CallStatus::Error,
                "<tool_use_error>the handler failed</tool_use_error>\n\n[Hook additional context]\n1. failure: PostToolUseFailure on Fail (status error)".to_owned()
            ),
            (
                CallStatus::Denied,
                "secrets are off limits\n\n[Hook additional context]\n1. failure: PostToolUseFailure on Read (status denied)".to_owned()
            ),
            (
                CallStatus::Denied,
                "No permission client configured\n\n[Hook additional context]\n1. failure: PostToolUseFailure on Bash (status denied)".to_owned()
            ),
            (
                CallStatus::Error,
                format!(
                    "{}\n\n[Hook additional context]\n1. failure: PostToolUseFailure on Bash (status error)",
                    outcome.results[3].model_content
                )
            ),
        ]
    );
    // The success hook did not run for failures.
    assert!(!got.iter().any(|(_, text)| text.contains("PostToolUse on")));
}

#[tokio::test]
async fn post_tool_batch_text_is_budgeted_by_a_second_finalizer_pass() {
    let f = fixture("batch.yaml");
    let outcome = f
        .run(
            &[
                ("Read", json!({"file_path": "a"})),
                ("Read", json!({"file_path": "b"})),
            ],
            &[],
            None,
        )
        .await;
    // The hook saw both results and added a long note (about 450 characters).
    let context = outcome.batch_context.as_deref().unwrap();
    assert!(context.contains("2 results seen"), "{context}");
    // The results alone fit the 400-character budget; with the note they do not, so the
    // finalizer ran again and the whole batch fits.
    let total: u64 = outcome
        .results
        .iter()
        .map(|r| chars(&r.model_content) + r.hook_context.as_deref().map_or(0, chars))
        .sum::<u64>()
        + chars(context);
    assert!(total <= 400, "batch is {total} characters");
    let cut = outcome
        .finalizer
        .iter()
        .find(|c| c.call_id.as_str() == "batch-context")
        .unwrap();
    assert!(cut.cut);
    assert!(cut.original_size > 400, "{cut:?}");
}

#[tokio::test]
async fn without_a_batch_hook_nothing_is_added() {
    let f = fixture("post.yaml");
    let outcome = f
        .run(&[("Read", json!({"file_path": "a"}))], &[], None)
        .await;
    assert_eq!(outcome.batch_context, None);
}

/// A `PostToolUseFailure` hook is shown the input that ran: parsed (the call gave a JSON
/// string) and rewritten by a `PreToolUse` hook, not the call's original arguments.
#[tokio::test]
async fn failure_hooks_see_the_input_that_ran() {
    let f = fixture("rewrite_failure.yaml");
    let result = f
        .one("Fail", json!(r#"{"command":"rewrite-me please"}"#))
        .await;
    assert_eq!(result.status, CallStatus::Error);
    assert_eq!(
        result.model_text(),
        "<tool_use_error>the handler failed</tool_use_error>\n\n[Hook additional context]\n1. failure hook saw command: echo rewritten"
    );
}

/// The length of `text` in characters (Unicode scalar values), as a `chars` budget counts.
fn chars(text: &str) -> u64 {
    text.chars().count() as u64
}
