//! `trust_annotations: true` at run time: a trusted server's tool annotations fill the
//! contract flags a contract leaves unset (so rules that look at flags see them), never the
//! ones it sets; an untrusted server's annotations fill nothing; a plan says which flag came
//! from which hint.

use serde_json::json;
use toolgate::events::CallStatus;
use toolgate::{Batch, ToolCall};

use super::harness::{Workspace, call};
use crate::support::mcp_server;

fn policy(log: &std::path::Path) -> String {
    let entry = mcp_server::yaml_entry(log);
    let trusted = format!(
        "{}, trust_annotations: true }}",
        entry.trim_end_matches('}').trim_end()
    );
    format!(
        r#"version: 1
mcp_servers:
  test: {trusted}
  again: {trusted}
  plain: {entry}
tools:
  mcp__test__*:
    handler: {{ kind: mcp, server: test }}
    permission: {{ default: deny }}
  mcp__plain__*:
    handler: {{ kind: mcp, server: plain }}
    permission: {{ default: deny }}
  # `echo` of another trusted server: a tool an exact contract runs is no tool of a wildcard.
  EchoNotReadOnly:
    handler: {{ kind: mcp, server: again, tool: echo }}
    permission: {{ default: deny }}
    concurrency: {{ read_only: false }}
rules:
  - name: reads-run
    tools: [mcp__test__*, mcp__plain__*, EchoNotReadOnly]
    when: {{ read_only: true }}
    decision: allow
"#
    )
}

#[tokio::test]
async fn a_trusted_servers_annotations_fill_the_flags_a_contract_leaves_unset() {
    let workspace = Workspace::new("");
    workspace.write(&policy(&workspace.path("cancel.log")));
    let (engine, _sink) = workspace.engine();

    // `echo` is annotated read-only: the flag is filled before the first call is decided.
    let echo = call(&engine, "mcp__test__echo", json!({"text": "hi"})).await;
    assert_eq!(
        echo.results[0].status,
        CallStatus::Ok,
        "{}",
        echo.results[0].model_text()
    );
    assert_eq!(echo.results[0].model_text(), "hi");
    // `sleep` has no annotations: the default (not read-only) stands.
    let sleep = call(&engine, "mcp__test__sleep", json!({"ms": 1})).await;
    assert_eq!(sleep.results[0].status, CallStatus::Denied);
    // A flag the contract sets is never changed by a hint.
    let strict = call(&engine, "EchoNotReadOnly", json!({"text": "hi"})).await;
    assert_eq!(strict.results[0].status, CallStatus::Denied);
    // An untrusted server's annotations fill nothing.
    let plain = call(&engine, "mcp__plain__echo", json!({"text": "hi"})).await;
    assert_eq!(plain.results[0].status, CallStatus::Denied);

    let batch = Batch::new(vec![
        ToolCall::new("c1", "mcp__test__echo", json!({"text": "hi"})),
        ToolCall::new("c2", "mcp__test__fail", json!({"message": "x"})),
    ]);
    let plan = engine.plan(&batch, &[]).unwrap();
    assert_eq!(
        plan.calls[0].from_annotations,
        [
            "read_only from readOnlyHint: true",
            "side_effect_scope from openWorldHint: false, readOnlyHint: true"
        ]
    );
    assert_eq!(
        plan.calls[1].from_annotations,
        [
            "destructive from destructiveHint: true",
            "read_only from readOnlyHint: false"
        ]
    );
    engine.shutdown().await;
}

/// A trusted server that never answers `tools/list` holds no call past its `start_timeout`:
/// the annotations are not learned and the flags stay as written (every call of its tools,
/// and `mcp serve` with them, waited for ever).
#[tokio::test]
async fn a_server_that_never_lists_its_tools_holds_no_call() {
    let workspace = Workspace::new("");
    let entry = mcp_server::yaml_entry(&workspace.path("cancel.log"));
    let silent = format!(
        "{}, trust_annotations: true, start_timeout: 1s }}",
        entry.trim_end_matches('}').trim_end().replacen(
            "set_env: {",
            &format!("set_env: {{ {}: \"1\",", mcp_server::SILENT_LIST_ENV),
            1
        )
    );
    workspace.write(&format!(
        "version: 1\nmcp_servers:\n  test: {silent}\ntools:\n  mcp__test__*:\n    handler: {{ kind: mcp, server: test }}\n    permission: {{ default: allow }}\n"
    ));
    let (engine, _sink) = workspace.engine();
    let echo = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        call(&engine, "mcp__test__echo", json!({"text": "hi"})),
    )
    .await
    .expect("the call was answered");
    assert_eq!(echo.results[0].model_text(), "hi");
    engine.shutdown().await;
}
