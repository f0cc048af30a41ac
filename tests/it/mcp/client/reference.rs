//! The official reference servers from npm (`@modelcontextprotocol/server-everything`,
//! `@modelcontextprotocol/server-filesystem`, pinned in `tests/node`) behind toolgate. Skipped,
//! saying so, when `node` or the packages are absent.

use serde_json::json;
use toolgate::CallStatus;

use super::harness::{Workspace, call, progress};
use crate::support::node;

fn argv(bin: &std::path::Path, args: &[&str]) -> String {
    let mut argv = vec![serde_json::to_string(bin.to_str().unwrap()).unwrap()];
    argv.extend(args.iter().map(|arg| serde_json::to_string(arg).unwrap()));
    format!("[{}]", argv.join(", "))
}

#[tokio::test]
async fn the_everything_server_lists_answers_denies_and_is_cancelled_on_timeout() {
    let Some(modules) =
        node::packages("the_everything_server_lists_answers_denies_and_is_cancelled_on_timeout")
    else {
        return;
    };
    let command = argv(&node::bin(&modules, "mcp-server-everything"), &["stdio"]);
    let workspace = Workspace::new(&format!(
        r#"version: 1
mcp_servers:
  everything: {{ command: {command}, env: [PATH, HOME] }}
tools:
  Echo:
    handler: {{ kind: mcp, server: everything, tool: echo }}
    permission: {{ default: allow }}
  Env:
    handler: {{ kind: mcp, server: everything, tool: get-env }}
    permission: {{ default: allow }}
  LongOperation:
    handler: {{ kind: mcp, server: everything, tool: trigger-long-running-operation }}
    permission: {{ default: allow }}
    timeout: {{ default: 1500ms }}
rules:
  - name: no-environment
    tools: [Env]
    decision: deny
    reason: the server's environment is not for the model
"#
    ));
    let (engine, sink) = workspace.engine();

    // The server lists the tools the contracts call: `toolgate mcp check` asks it, through
    // the same client the handler uses, and fails on a contract naming an unlisted tool.
    let check = crate::support::check::toolgate_in(
        workspace.dir.path(),
        &[
            "--no-builtin",
            "-p",
            "policies",
            "mcp",
            "check",
            "everything",
        ],
    );
    assert_eq!(check.code, 0, "{}", check.transcript());

    let echo = call(&engine, "Echo", json!({"message": "hello"})).await;
    assert_eq!(echo.results[0].status, CallStatus::Ok);
    assert_eq!(echo.results[0].model_text(), "Echo: hello");

    let env = call(&engine, "Env", json!({})).await;
    assert_eq!(env.results[0].status, CallStatus::Denied);
    assert!(env.results[0].model_text().contains("not for the model"));

    // One step of progress every second, far longer than the timeout.
    let long = call(
        &engine,
        "LongOperation",
        json!({"duration": 600, "steps": 600}),
    )
    .await;
    assert_eq!(long.results[0].status, CallStatus::TimedOut);
    // The server took the cancellation and still serves.
    let again = call(&engine, "Echo", json!({"message": "still here"})).await;
    assert_eq!(again.results[0].model_text(), "Echo: still here");

    let short = call(
        &engine,
        "LongOperation",
        json!({"duration": 0.2, "steps": 2}),
    )
    .await;
    assert_eq!(short.results[0].status, CallStatus::Ok);
    assert!(
        progress(&sink).concat().contains("2/2"),
        "{:?}",
        progress(&sink)
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn the_filesystem_server_writes_where_rules_allow_and_not_where_a_path_rule_denies() {
    let Some(modules) = node::packages(
        "the_filesystem_server_writes_where_rules_allow_and_not_where_a_path_rule_denies",
    ) else {
        return;
    };
    let workspace = Workspace::new("");
    let root = workspace.dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("protected")).unwrap();
    let command = argv(
        &node::bin(&modules, "mcp-server-filesystem"),
        &[root.to_str().unwrap()],
    );
    workspace.write(&format!(
        r#"version: 1
mcp_servers:
  files: {{ command: {command}, env: [PATH, HOME] }}
tools:
  Write:
    handler: {{ kind: mcp, server: files, tool: write_file }}
    input_schema:
      type: object
      required: [path, content]
      properties: {{ path: {{ type: string }}, content: {{ type: string }} }}
    permission: {{ default: allow }}
rules:
  - name: protected-is-read-only
    tools: [Write]
    match:
      path: {{ path: ["/**/protected/**"] }}
    decision: deny
    reason: the protected folder is read-only
"#
    ));
    let (engine, _sink) = workspace.engine();

    let allowed_path = root.join("notes.txt");
    let allowed = call(
        &engine,
        "Write",
        json!({"path": allowed_path, "content": "kept"}),
    )
    .await;
    assert_eq!(
        allowed.results[0].status,
        CallStatus::Ok,
        "{}",
        allowed.results[0].model_text()
    );
    assert_eq!(std::fs::read_to_string(&allowed_path).unwrap(), "kept");

    let denied_path = root.join("protected/notes.txt");
    let denied = call(
        &engine,
        "Write",
        json!({"path": denied_path, "content": "lost"}),
    )
    .await;
    assert_eq!(denied.results[0].status, CallStatus::Denied);
    assert!(denied.results[0].model_text().contains("read-only"));
    assert!(!denied_path.exists());
    engine.shutdown().await;
}
