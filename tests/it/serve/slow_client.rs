//! A client that stops reading stdout: the server's outgoing queue is bounded by
//! `engine.serve_queue`; progress events beyond it are dropped and counted
//! (`progressDropped`), while results and responses are never dropped — the batch waits.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::serve::{WAIT, scratch_policies};
use serde_json::{Value, json};

const QUEUE: usize = 8;
const LINES: usize = 1000;
const LINE: usize = 2000;

#[test]
fn a_client_that_stops_reading_gets_a_bounded_queue_and_every_result() {
    let (dir, root) = scratch_policies();
    std::fs::write(
        root.join("queue.yaml"),
        format!(
            "version: 1\nengine:\n  serve_queue: {QUEUE}\ntools:\n  Chatty:\n    description: Prints many lines, then touches a marker file.\n    input_schema:\n      type: object\n      required: [marker]\n      properties:\n        marker: {{ type: string }}\n    concurrency: {{ concurrent_safe: true, read_only: true, side_effect_scope: none }}\n    permission: {{ default: allow }}\n    handler: {{ kind: command, argv: [bash, -c, 'line=$(head -c {LINE} /dev/zero | tr \"\\\\0\" x); for i in $(seq 1 {LINES}); do echo \"$line\"; sleep 0.002; done; touch \"$0\"', \"{{{{input.marker}}}}\"] }}\n"
        ),
    )
    .unwrap();
    let marker = dir.path().join("done");
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("--no-builtin")
        .arg("--workspace")
        .arg(dir.path())
        .arg("-p")
        .arg(&root)
        .args(["serve", "--stdio", "--no-watch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "executeBatch", "params": {"batch": {"id": "chatty", "calls": [{"id": "c", "tool": "Chatty", "input": {"marker": marker}}]}}});
    writeln!(stdin, "{request}").unwrap();
    stdin.flush().unwrap();
    // Nobody reads stdout until the handler has printed everything.
    let deadline = Instant::now() + WAIT * 2;
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the handler never finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Read until the batch has answered, and only then shut down: `shutdown` cancels what
    // still runs, and the handler may still be exiting when its marker appears.
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut messages: Vec<Value> = Vec::new();
    while !messages.iter().any(|m| m["id"] == 1) {
        let line = lines
            .next()
            .expect("the server ended before answering the batch");
        messages.push(serde_json::from_str(&line.unwrap()).unwrap());
    }
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    )
    .unwrap();
    drop(stdin);
    messages.extend(lines.map(|line| serde_json::from_str::<Value>(&line.unwrap()).unwrap()));
    assert!(child.wait().unwrap().success());
    let progress = messages
        .iter()
        .filter(|m| m["params"]["type"] == "ToolCallProgress")
        .count();
    let dropped: u64 = messages
        .iter()
        .filter(|m| m["method"] == "progressDropped")
        .map(|m| {
            assert_eq!(m["params"]["call_id"], "c", "{m}");
            m["params"]["dropped"].as_u64().unwrap()
        })
        .sum();
    // What was queued while nobody read: at most the queue, what fits in the pipe (64 KiB of
    // messages over 2 000 bytes each) and the one message being written.
    let bound = QUEUE + 64 * 1024 / LINE + 1;
    assert!(
        progress <= bound,
        "{progress} progress events reached the client; at most {bound} can have been queued"
    );
    assert!(dropped > 0, "no progress was reported dropped");
    // Nothing that is not progress was lost: the result event, the batch's answer and the
    // shutdown answer all arrived, the drop notice before the call's result.
    let position = |wanted: &dyn Fn(&Value) -> bool| messages.iter().position(wanted);
    let notice = position(&|m| m["method"] == "progressDropped").unwrap();
    let result = position(&|m| m["params"]["type"] == "ToolCallResult").unwrap();
    assert!(notice < result);
    let answer = position(&|m| m["id"] == 1).unwrap();
    assert_eq!(messages[answer]["result"]["results"][0]["status"], "ok");
    assert!(position(&|m| m["id"] == 2).is_some());
}
