//! Faults end as that one call's error result and the engine goes on (issue 3, "Bad input and
//! faults"): real subprocesses that ignore SIGTERM and leave grandchildren, panics, programs
//! that cannot be spawned, floods of output, signals; and the texts the model gets for them
//! (SPEC §7.3): the error projection, `<tool_use_error>` wrapping, and templates from
//! `engine.messages`.
//!
//! The subprocess tests run on the real clock (a paused clock does not wait for processes);
//! a generous outer timeout turns a hang into a failure instead of a stuck test run.

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::executor::*;
use serde_json::json;
use toolgate::ErrorCode;
use toolgate::{BatchOutcome, Turn};
use toolgate::{CallStatus, CancelReason, Event, EventKind};

/// Hang guard for real-time tests.
const HANG: Duration = Duration::from_secs(60);

/// The stdout a call streamed, from its `ToolCallProgress` events.
fn streamed(events: &[Event], id: &str) -> String {
    events
        .iter()
        .filter(|e| e.call_id.as_ref().is_some_and(|c| c.as_str() == id))
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallProgress(p) if p.stream == "stdout" => Some(p.text.as_str()),
            _ => None,
        })
        .collect()
}

/// The pids a command printed as `pid <n>` lines.
fn printed_pids(text: &str) -> Vec<i32> {
    text.lines()
        .filter_map(|line| line.strip_prefix("pid "))
        .filter_map(|n| n.trim().parse().ok())
        .collect()
}

/// A command that ignores SIGTERM, starts a grandchild that ignores it too, prints both pids
/// and waits forever.
const STUBBORN: &str = "trap '' TERM; sleep 300 & echo \"pid $!\"; echo \"pid $$\"; wait";

async fn within_hang_guard<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(HANG, future)
        .await
        .expect("the engine returned (no hang)")
}

#[tokio::test]
async fn a_stubborn_subprocess_and_its_grandchild_are_killed_on_timeout() {
    let h = Harness::new(&[]);
    let outcome: BatchOutcome = within_hang_guard(h.run(vec![call(
        "s",
        "Shell",
        json!({"command": STUBBORN, "timeout_ms": 3000}),
    )]))
    .await;
    let s = result(&outcome, "s");
    assert_eq!(s.status, CallStatus::TimedOut);
    // The output before the timeout is kept for the model, after the timeout message.
    let pids = printed_pids(&streamed(&h.events(), "s"));
    assert_eq!(pids.len(), 2, "the command printed its pids: {pids:?}");
    let (message, partial) = s
        .model_content
        .split_once("\n--- output before the timeout ---\n")
        .unwrap_or_else(|| panic!("no partial output: {}", s.model_content.as_str()));
    assert_eq!(message, "Tool execution timed out after 3000ms");
    assert_eq!(printed_pids(partial).len(), 2, "{partial}");
    assert_eq!(survivors(&pids), Vec::<i32>::new(), "no process survives");
}

#[tokio::test]
async fn a_stubborn_subprocess_and_its_grandchild_are_killed_on_cancel() {
    let h = Harness::new(&[]);
    let turn = Turn::default();
    let cancel = turn.cancel.clone();
    let sink = h.sink.clone();
    // Cancel the turn once the command has printed both pids.
    let watcher = tokio::spawn(async move {
        loop {
            if printed_pids(&streamed(&sink.events(), "s")).len() == 2 {
                cancel.cancel();
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let outcome = within_hang_guard(h.run_in(
        vec![call(
            "s",
            "Shell",
            json!({"command": STUBBORN, "timeout_ms": 50_000}),
        )],
        &turn,
    ))
    .await;
    watcher.await.unwrap();
    assert_eq!(status(&outcome, "s"), CallStatus::Cancelled);
    assert_eq!(
        cancel_reason(&outcome, "s"),
        Some(CancelReason::UserInterrupt)
    );
    let pids = printed_pids(&streamed(&h.events(), "s"));
    assert_eq!(survivors(&pids), Vec::<i32>::new(), "no process survives");
    // The output before the cancellation is kept for the model, as after a timeout (it was
    // lost: a cancelled call's result held the message only).
    let s = result(&outcome, "s");
    let (_, partial) = s
        .model_content
        .split_once("\n--- output before the cancellation ---\n")
        .unwrap_or_else(|| panic!("no partial output: {}", s.model_content.as_str()));
    assert_eq!(printed_pids(partial).len(), 2, "{partial}");
}

#[tokio::test]
async fn a_command_flooding_output_is_stopped_at_max_handler_output() {
    let h = Harness::new(&[]);
    let outcome = within_hang_guard(h.run(vec![
        call(
            "flood",
            "Shell",
            json!({"command": "echo \"pid $$\"; yes toolgate"}),
        ),
        call("fine", "Shell", json!({"command": "printf 'a b\\n  c'"})),
    ]))
    .await;
    let flood = result(&outcome, "flood");
    assert_eq!(flood.status, CallStatus::Error);
    assert_eq!(flood.error.as_ref().unwrap().code, ErrorCode::HandlerFailed);
    // What it printed up to the limit is kept (it was thrown away: a log larger than the
    // limit left the model nothing).
    let (message, kept) = flood
        .model_content
        .split_once("\n--- output before the limit was reached ---\n")
        .unwrap_or_else(|| panic!("no output kept: {}", flood.model_content));
    assert_eq!(message, "output exceeded the limit of 65536 bytes");
    assert!(
        kept.starts_with("pid ") && kept.contains("\ntoolgate\ntoolgate\n"),
        "{kept}"
    );
    // Exit 0, empty stderr: stdout unchanged.
    assert_eq!(result(&outcome, "fine").model_content, "a b\n  c");
    let pids = printed_pids(&streamed(&h.events(), "flood"));
    assert_eq!(pids.len(), 1);
    assert_eq!(survivors(&pids), Vec::<i32>::new());
}

#[tokio::test]
async fn exit_codes_signals_and_spawn_failures_are_that_calls_result() {
    let h = Harness::new(&[]);
    let outcome = within_hang_guard(h.run(vec![
        call(
            "exit",
            "Shell",
            json!({"command": "echo partial; echo oops >&2; exit 3"}),
        ),
        call("signal", "Shell", json!({"command": "kill -9 $$"})),
        call("missing", "Missing", json!({})),
        call("orphan", "Orphan", json!({})),
        call("ok", "Shell", json!({"command": "echo fine"})),
    ]))
    .await;
    let exit = result(&outcome, "exit");
    assert_eq!(exit.status, CallStatus::Error);
    assert_eq!(exit.error.as_ref().unwrap().code, ErrorCode::Business);
    assert_eq!(
        exit.error.as_ref().unwrap().detail_code.as_deref(),
        Some("exit:3")
    );
    assert_eq!(
        exit.model_content,
        "<tool_use_error>exit code 3\noops</tool_use_error>"
    );

    let signal = result(&outcome, "signal");
    assert_eq!(signal.status, CallStatus::Error);
    assert_eq!(signal.model_content, "killed by signal SIGKILL (9)");

    let missing = result(&outcome, "missing");
    assert_eq!(missing.status, CallStatus::Error);
    assert_eq!(
        missing.error.as_ref().unwrap().code,
        ErrorCode::HandlerFailed
    );
    assert!(
        missing
            .model_content
            .starts_with("cannot start `/nonexistent/toolgate-test-program`: "),
        "{}",
        missing.model_content
    );

    let orphan = result(&outcome, "orphan");
    assert_eq!(orphan.error.as_ref().unwrap().code, ErrorCode::NoHandler);
    assert_eq!(
        orphan.model_content,
        "No handler is registered for tool Orphan"
    );

    assert_eq!(result(&outcome, "ok").model_content, "fine\n");
    assert_eq!(terminal_counts(&h.events()).len(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_is_one_error_and_the_engine_goes_on() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("boom", "Par", json!({"end": "panic"})),
            call("ok", "Par", json!({"sleep_ms": 100})),
        ])
        .await;
    let boom = result(&outcome, "boom");
    assert_eq!(boom.status, CallStatus::Error);
    assert_eq!(boom.error.as_ref().unwrap().code, ErrorCode::HandlerFailed);
    assert_eq!(
        boom.model_content,
        format!("handler panicked: {PANIC_TEXT}")
    );
    assert_eq!(status(&outcome, "ok"), CallStatus::Ok);

    // The same engine runs the next batch.
    let outcome = h.run(vec![call("again", "Par", json!({}))]).await;
    assert_eq!(status(&outcome, "again"), CallStatus::Ok);
}

#[tokio::test(start_paused = true)]
async fn unexpected_errors_are_projected_through_their_cause_chain() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("deep", "Par", json!({"end": "error"})),
            call("long", "Par", json!({"end": "long_error"})),
        ])
        .await;
    let deep = result(&outcome, "deep");
    assert_eq!(deep.status, CallStatus::Error);
    assert_eq!(deep.error.as_ref().unwrap().code, ErrorCode::HandlerFailed);
    // 15 levels, each "levelN\n\t  of 15   failed": 12 are followed, whitespace folded.
    let expected: Vec<String> = (0..12).map(|n| format!("level{n} of 15 failed")).collect();
    assert_eq!(deep.model_content, expected.join(": "));

    assert!(!deep.metadata.truncated);

    // A projection over `max_chars` (as a huge HTTP 500 body makes) says it was cut, and the
    // result is marked truncated.
    let long = result(&outcome, "long");
    let length = long.model_content.chars().count();
    assert!((490..=500).contains(&length), "{length}");
    assert!(long.model_content.starts_with("word word word"));
    assert!(
        regex::Regex::new(r" … \[\d+ more characters\]$")
            .unwrap()
            .is_match(&long.model_content),
        "{}",
        long.model_content.as_str()
    );
    assert!(long.metadata.truncated);
    assert!(!long.model_content.contains('\n'));
    assert!(!long.model_content.contains("  "));
}

#[tokio::test(start_paused = true)]
async fn business_failures_are_wrapped_for_the_model() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![call("b", "Par", json!({"end": "business"}))])
        .await;
    let b = result(&outcome, "b");
    assert_eq!(b.status, CallStatus::Error);
    assert_eq!(b.error.as_ref().unwrap().code, ErrorCode::Business);
    assert_eq!(b.model_content, "<tool_use_error>it broke</tool_use_error>");
}

#[tokio::test(start_paused = true)]
async fn input_and_output_schema_failures() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("input", "Read", json!({"sleep_ms": "soon", "end": "bogus"})),
            call("not_object", "Read", json!([1, 2])),
            call("string_input", "Read", json!("{not json")),
            call("good", "Typed", json!({"json": {"n": 1}})),
            call("bad", "Typed", json!({"json": {"n": "one"}})),
        ])
        .await;
    let input = result(&outcome, "input");
    assert_eq!(
        input.error.as_ref().unwrap().code,
        ErrorCode::InputValidation
    );
    assert!(
        input
            .model_content
            .starts_with("<tool_use_error>InputValidationError: ")
            && input.model_content.contains("`/end`")
            && input.model_content.contains("`/sleep_ms`"),
        "every violation with its pointer: {}",
        input.model_content
    );
    for id in ["not_object", "string_input"] {
        let r = result(&outcome, id);
        assert_eq!(
            r.error.as_ref().unwrap().code,
            ErrorCode::InputValidation,
            "{id}"
        );
        assert!(
            r.model_content
                .starts_with("<tool_use_error>InputValidationError: ")
        );
    }
    assert_eq!(result(&outcome, "good").model_content, r#"{"n":1}"#);
    let bad = result(&outcome, "bad");
    assert_eq!(bad.error.as_ref().unwrap().code, ErrorCode::OutputSchema);
    assert_eq!(
        bad.model_content,
        "Tool output failed runtimeOutputSchema validation"
    );
}

#[tokio::test(start_paused = true)]
async fn every_message_comes_from_an_engine_messages_template() {
    // The overlay rewords several templates and shortens the error projection to 30 chars.
    let h = Harness::new(&["messages.yaml"]);
    let outcome = h
        .run(vec![
            call("unknown", "Nope", json!({})),
            call("business", "Par", json!({"end": "business"})),
            call("error", "Par", json!({"end": "error"})),
            call("ask", "Ask", json!({})),
            call("stop", "Stopper", json!({})),
            call("later", "Edit", json!({})),
        ])
        .await;
    let text = |id: &str| result(&outcome, id).model_content.clone();
    assert_eq!(text("unknown"), "No such tool here: Nope");
    assert_eq!(text("business"), "[Par failed] it broke");
    assert_eq!(text("error"), "level0 of 15 failed: level1 o…");
    assert_eq!(text("ask"), "Nobody can approve Ask");
    assert_eq!(text("later"), "Skipped: the turn was stopped.");

    let h = Harness::new(&["messages.yaml", "cancel_group.yaml"]);
    let outcome = h
        .run(vec![
            call("f", "Par", json!({"sleep_ms": 10, "end": "business"})),
            call("s", "Par", json!({"sleep_ms": 60_000})),
        ])
        .await;
    assert_eq!(
        result(&outcome, "s").model_content,
        "Skipped because f failed"
    );

    let h = Harness::new(&["messages.yaml"]);
    let outcome = h
        .run(vec![call("t", "Timed", json!({"sleep_ms": 3_600_000}))])
        .await;
    assert_eq!(
        result(&outcome, "t").model_content,
        "Timed ran out of time (5000 ms)"
    );
}
