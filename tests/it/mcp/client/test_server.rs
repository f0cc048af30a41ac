//! The `mcp` handler against the suite's own rmcp server (a separate stdio process):
//! results, progress, failures, decisions, timeouts and cancellation, supervision and
//! reloads.

use serde_json::json;
use toolgate::CallStatus;
use toolgate::ToolCall;
use toolgate::{Batch, Turn};

use super::harness::{Workspace, call, lines, progress};
use crate::support::mcp_server;

/// A policy set with the test server as `test` and one contract per tool.
fn policy(log: &std::path::Path, server_extra: &str) -> String {
    let mut entry = mcp_server::yaml_entry(log);
    if !server_extra.is_empty() {
        entry = format!(
            "{}, {server_extra} }}",
            entry.trim_end_matches('}').trim_end()
        );
    }
    format!(
        r#"version: 1
mcp_servers:
  test: {entry}
  missing: {{ command: ["/nonexistent/mcp-server"], restart: {{ backoff: 10m, max_backoff: 1h }} }}
tools:
  Echo: {{ handler: {{ kind: mcp, server: test, tool: echo }}, permission: {{ default: allow }} }}
  Image: {{ handler: {{ kind: mcp, server: test, tool: image }}, permission: {{ default: allow }} }}
  Huge: {{ handler: {{ kind: mcp, server: test, tool: huge }}, permission: {{ default: allow }}, timeout: {{ default: 60s }} }}
  Progress: {{ handler: {{ kind: mcp, server: test, tool: progress }}, permission: {{ default: allow }} }}
  Add:
    handler: {{ kind: mcp, server: test, tool: add }}
    permission: {{ default: allow }}
    output_schema: {{ type: object, required: [sum], properties: {{ sum: {{ type: number }} }} }}
  AddText:
    handler: {{ kind: mcp, server: test, tool: add }}
    permission: {{ default: allow }}
    output_schema: {{ type: object, required: [sum], properties: {{ sum: {{ type: string }} }} }}
  Fail: {{ handler: {{ kind: mcp, server: test, tool: fail }}, permission: {{ default: allow }} }}
  Sleep:
    handler: {{ kind: mcp, server: test, tool: sleep }}
    permission: {{ default: allow }}
    timeout: {{ default: 300ms }}
  Crash: {{ handler: {{ kind: mcp, server: test, tool: crash }}, permission: {{ default: deny }} }}
  CrashAllowed: {{ handler: {{ kind: mcp, server: test, tool: crash }}, permission: {{ default: allow }} }}
  Grow: {{ handler: {{ kind: mcp, server: test, tool: grow }}, permission: {{ default: allow }} }}
  Late: {{ handler: {{ kind: mcp, server: test, tool: late }}, permission: {{ default: allow }} }}
  Missing: {{ handler: {{ kind: mcp, server: missing, tool: x }}, permission: {{ default: allow }} }}
"#
    )
}

#[tokio::test]
async fn calls_keep_text_pass_parts_through_and_stream_progress() {
    let workspace = Workspace::new("");
    workspace.write(&policy(&workspace.path("cancel.log"), ""));
    let (engine, sink) = workspace.engine();

    let echo = call(&engine, "Echo", json!({"text": "hello"})).await;
    assert_eq!(echo.results[0].status, CallStatus::Ok);
    assert_eq!(echo.results[0].model_text(), "hello");
    assert!(echo.results[0].parts.is_empty());

    let image = call(&engine, "Image", json!({})).await;
    assert_eq!(image.results[0].model_text(), "a picture");
    assert_eq!(image.results[0].parts.len(), 1);
    assert_eq!(image.results[0].parts[0]["type"], "image");
    assert_eq!(image.results[0].parts[0]["mimeType"], "image/png");

    let done = call(&engine, "Progress", json!({"steps": 3})).await;
    assert_eq!(done.results[0].model_text(), "done");
    // Each progress event is one whole status message (within one `progress_interval`
    // the latest replaces the ones waiting), in order, ending with the last step.
    let streamed = progress(&sink);
    let steps: Vec<u32> = streamed
        .iter()
        .map(|text| {
            let step = text
                .strip_prefix("step ")
                .and_then(|rest| rest.split_once(' '))
                .and_then(|(step, rest)| (rest == format!("({step}/3)")).then_some(step));
            step.and_then(|step| step.parse().ok())
                .unwrap_or_else(|| panic!("not one status message: {text:?} in {streamed:?}"))
        })
        .collect();
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{streamed:?}");
    assert_eq!(steps.first(), Some(&1), "{streamed:?}");
    assert_eq!(steps.last(), Some(&3), "{streamed:?}");
    engine.shutdown().await;
}

#[tokio::test]
async fn structured_content_is_checked_and_is_error_is_a_business_failure() {
    let workspace = Workspace::new("");
    workspace.write(&policy(&workspace.path("cancel.log"), ""));
    let (engine, _sink) = workspace.engine();

    let sum = call(&engine, "Add", json!({"a": 1, "b": 2})).await;
    assert_eq!(sum.results[0].status, CallStatus::Ok);
    assert_eq!(sum.results[0].model_text(), r#"{"sum":3.0}"#);

    let wrong = call(&engine, "AddText", json!({"a": 1, "b": 2})).await;
    assert_eq!(wrong.results[0].status, CallStatus::Error);
    let error = wrong.results[0].error.as_ref().unwrap();
    assert_eq!(error.code, toolgate::ErrorCode::OutputSchema);

    let failed = call(&engine, "Fail", json!({"message": "disk is full"})).await;
    assert_eq!(failed.results[0].status, CallStatus::Error);
    assert_eq!(
        failed.results[0].model_text(),
        "<tool_use_error>disk is full</tool_use_error>"
    );
    assert_eq!(
        failed.results[0]
            .error
            .as_ref()
            .unwrap()
            .detail_code
            .as_deref(),
        Some("mcp:tool_error")
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn a_denied_call_never_reaches_the_server() {
    let workspace = Workspace::new("");
    workspace.write(&policy(&workspace.path("cancel.log"), ""));
    let (engine, _sink) = workspace.engine();
    let denied = call(&engine, "Crash", json!({})).await;
    assert_eq!(denied.results[0].status, CallStatus::Denied);
    // The server is still there: the denied `crash` did not run.
    let echo = call(&engine, "Echo", json!({"text": "alive"})).await;
    assert_eq!(echo.results[0].model_text(), "alive");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_timeout_and_an_interrupt_send_the_cancellation_notification() {
    let workspace = Workspace::new("");
    let log = workspace.path("cancel.log");
    workspace.write(&policy(&log, ""));
    let (engine, _sink) = workspace.engine();
    // Start the server first: started by the timed call itself, on a busy machine it could
    // still be starting when the 300 ms are up, and a request never sent is not cancelled.
    let echo = call(&engine, "Echo", json!({"text": "up"})).await;
    assert_eq!(echo.results[0].status, CallStatus::Ok);

    let slow = call(&engine, "Sleep", json!({"ms": 600_000})).await;
    assert_eq!(slow.results[0].status, CallStatus::TimedOut);

    let turn = Turn::default();
    let batch = Batch::new(vec![ToolCall::new("c2", "Sleep", json!({"ms": 600_000}))]);
    let interrupt = turn.cancel.clone();
    let running = engine.execute_batch(batch, &turn);
    tokio::pin!(running);
    // Interrupt once the request is on its way (the server has started by now: the first
    // call started it, so the call is sent at once).
    tokio::task::yield_now().await;
    interrupt.cancel();
    let interrupted = running.await.unwrap();
    assert_eq!(interrupted.results[0].status, CallStatus::Cancelled);

    // The server logs each notification as it handles it; on a busy machine that may be
    // later than the calls' ends, and shutting down kills what is left of the server.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while lines(&log).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    engine.shutdown().await;
    let received = lines(&log);
    assert!(
        received.len() <= 2
            && received
                .iter()
                .all(|line| line == "cancelled by toolgate (timeout or interrupt)"),
        "{received:?}"
    );
    assert!(
        !received.is_empty(),
        "the server was told of no cancellation"
    );
}

#[tokio::test]
async fn a_dead_server_is_restarted_and_one_that_cannot_start_waits_for_its_backoff() {
    let workspace = Workspace::new("");
    workspace.write(&policy(&workspace.path("cancel.log"), ""));
    let (engine, _sink) = workspace.engine();

    let crashed = call(&engine, "CrashAllowed", json!({})).await;
    assert_eq!(crashed.results[0].status, CallStatus::Error);
    assert!(
        crashed.results[0]
            .model_text()
            .contains("MCP server `test`"),
        "{}",
        crashed.results[0].model_text()
    );
    let echo = call(&engine, "Echo", json!({"text": "back"})).await;
    assert_eq!(echo.results[0].model_text(), "back");

    let first = call(&engine, "Missing", json!({})).await;
    let text = first.results[0].model_text();
    assert!(
        text.contains(
            "MCP server `missing` could not be started: cannot start `/nonexistent/mcp-server`"
        ),
        "{text}"
    );
    let second = call(&engine, "Missing", json!({})).await;
    let text = second.results[0].model_text();
    assert!(
        text.contains("MCP server `missing` is down (cannot start `/nonexistent/mcp-server`")
            && text.contains("it is started again by the first call after 10m"),
        "{text}"
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn a_message_over_the_size_limit_ends_the_call_at_once_and_says_why() {
    let workspace = Workspace::new("");
    workspace.write(&policy(&workspace.path("cancel.log"), ""));
    let (engine, _sink) = workspace.engine();

    // Within the limit: answered whole.
    let big = call(&engine, "Huge", json!({"bytes": 1_000_000})).await;
    assert_eq!(big.results[0].status, CallStatus::Ok);

    // Over it: the connection is closed and the call fails with the reason, not after its
    // 60-second timeout with a timeout (the SDK drops such a message and reads on).
    let huge = call(&engine, "Huge", json!({"bytes": 17 * 1024 * 1024})).await;
    assert_eq!(huge.results[0].status, CallStatus::Error);
    let text = huge.results[0].model_text();
    assert!(
        text.contains("MCP server `test`: it sent a message of more than 16 MiB")
            && text.contains("it is started again by the next call"),
        "{text}"
    );

    // The next call starts the server again.
    let echo = call(&engine, "Echo", json!({"text": "back"})).await;
    assert_eq!(echo.results[0].model_text(), "back");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_server_is_kept_across_reloads_until_its_entry_changes() {
    let workspace = Workspace::new("");
    let log = workspace.path("cancel.log");
    workspace.write(&policy(&log, ""));
    let (engine, _sink) = workspace.engine();

    assert_eq!(
        call(&engine, "Grow", json!({})).await.results[0].model_text(),
        "grown"
    );
    assert_eq!(
        call(&engine, "Late", json!({})).await.results[0].model_text(),
        "late"
    );

    // Same entry, another generation: the same process answers (it still knows `late`).
    engine.install(workspace.snapshot(2));
    assert_eq!(
        call(&engine, "Late", json!({})).await.results[0].model_text(),
        "late"
    );

    // A changed entry starts a new process, which has not grown.
    workspace.write(&policy(&log, "description: changed"));
    engine.install(workspace.snapshot(3));
    let late = call(&engine, "Late", json!({})).await;
    assert_eq!(late.results[0].status, CallStatus::Error);
    assert!(
        late.results[0].model_text().contains("unknown tool `late`"),
        "{}",
        late.results[0].model_text()
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn calls_after_shutdown_fail_naming_the_server() {
    let workspace = Workspace::new("");
    workspace.write(&policy(&workspace.path("cancel.log"), ""));
    let (engine, _sink) = workspace.engine();
    assert_eq!(
        call(&engine, "Echo", json!({"text": "x"})).await.results[0].model_text(),
        "x"
    );
    engine.shutdown().await;
    let after = call(&engine, "Echo", json!({"text": "x"})).await;
    assert!(
        after.results[0]
            .model_text()
            .contains("MCP server `test` was shut down"),
        "{}",
        after.results[0].model_text()
    );
}
