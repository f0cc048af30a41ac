//! A handler's descendant that leaves the process group (`setsid`) and loses its parent does
//! not outlive the call: the `toolgate` binary is a child subreaper (Linux), gets the orphan
//! back and kills it when the call ends.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use crate::support::executor::{process_alive, survivors};
use crate::support::serve::{Server, batch};

/// Starts `setsid sleep 300` in the background, prints its pid and exits at once.
const POLICY: &str = r#"version: 1
tools:
  Detach:
    description: Leaves a detached sleeper behind.
    input_schema: { type: object }
    concurrency: { concurrent_safe: true, read_only: true, side_effect_scope: none }
    permission: { default: allow }
    handler: { kind: command, argv: [sh, -c, 'setsid sleep 300 & echo "pid $!"'] }
"#;

fn printed_pid(result: &Value) -> i32 {
    let text = result["model_content"].as_str().unwrap();
    text.trim()
        .strip_prefix("pid ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {result}"))
}

#[test]
fn a_setsid_grandchild_is_killed_when_its_call_ends() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("detach.yaml"), POLICY).unwrap();
    let mut server = Server::start(&["-p", dir.path().to_str().unwrap()], &["--no-watch"]);
    let response = server.call("executeBatch", batch("d", &[("one", "Detach", json!({}))]));
    let result = &response["result"]["results"][0];
    assert_eq!(result["status"], "ok", "{response}");
    let pid = printed_pid(result);
    // Gone while the server still runs: it died with its call, not with the server.
    assert_eq!(survivors(&[pid]), Vec::<i32>::new(), "{}", server.context());
    assert!(process_alive(server.pid() as i32));
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}
