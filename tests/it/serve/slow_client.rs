//! A client that stops reading stdout: the server's outgoing queue is bounded by
//! `engine.serve_queue`; progress events beyond it are dropped and counted
//! (`progressDropped`), while results and responses are never dropped; the server reads no
//! further request until the client reads, and runs at most `engine.serve_batches` batches.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::serve::{Server, WAIT, batch, scratch_policies};
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

/// A client that keeps writing requests and never reads: once its queue is full the server
/// reads no more of them (so nothing grows), and a signal still ends it. Before, the
/// server's reader waited for room inside the request it was answering and never saw the
/// signal (nor the end of input): the process had to be killed.
#[test]
fn a_client_that_never_reads_is_not_read_and_a_signal_still_ends_the_server() {
    let (dir, root) = scratch_policies();
    std::fs::write(
        root.join("queue.yaml"),
        "version: 1\nengine:\n  serve_queue: 4\n",
    )
    .unwrap();
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
    // Held open and never read.
    let _stdout = child.stdout.take().unwrap();
    // Far more than the pipes, the queue and every answer could hold.
    const REQUESTS: usize = 20_000;
    let written = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&written);
    std::thread::spawn(move || {
        for n in 0..REQUESTS {
            let request = json!({"jsonrpc": "2.0", "id": n, "method": "plan", "params": {"batch": {"calls": [{"id": "c", "tool": "Echo", "input": {"text": "x"}}]}}});
            if writeln!(stdin, "{request}").is_err() {
                return;
            }
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    // The writer stops getting anywhere once the server has stopped reading.
    let deadline = Instant::now() + WAIT;
    let mut last = usize::MAX;
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = written.load(Ordering::SeqCst);
        assert!(
            now < REQUESTS,
            "the server read every request of a client that never read"
        );
        if now == last {
            break;
        }
        last = now;
        assert!(Instant::now() < deadline, "the writer never got stuck");
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("SIGTERM did not end a server whose client does not read");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(128 + Signal::SIGTERM as i32));
}

/// At most `engine.serve_batches` batches run at once; one more is answered "server busy"
/// and runs nothing, and a slot is free again once a batch has answered.
#[test]
fn a_batch_beyond_serve_batches_is_answered_busy() {
    let (dir, root) = scratch_policies();
    let gate = dir.path().join("gate");
    std::fs::write(
        root.join("gate.yaml"),
        "version: 1\nengine:\n  serve_batches: 2\ntools:\n  Gate:\n    description: Waits until a file exists.\n    input_schema:\n      type: object\n      required: [file]\n      properties:\n        file: { type: string }\n    concurrency: { concurrent_safe: true, read_only: true, side_effect_scope: none }\n    permission: { default: allow }\n    handler: { kind: command, argv: [bash, -c, 'while [ ! -e \"$0\" ]; do sleep 0.01; done', \"{{input.file}}\"] }\n",
    )
    .unwrap();
    let mut server = Server::start(&["-p", root.to_str().unwrap()], &["--no-watch"]);
    let gated = |id: &str| batch(id, &[("c", "Gate", json!({"file": gate}))]);
    let first = server.request("executeBatch", gated("b1"));
    let second = server.request("executeBatch", gated("b2"));
    let busy = server.call("executeBatch", gated("b3"));
    assert_eq!(busy["error"]["code"], -32001, "{busy}");
    insta::assert_snapshot!(busy["error"]["message"].as_str().unwrap(), @"server busy: 2 batches are running (engine.serve_batches); send it again once one has answered, or cancel one");
    std::fs::write(&gate, "").unwrap();
    for id in [first, second] {
        let answer = server.response(&id);
        assert_eq!(answer["result"]["results"][0]["status"], "ok", "{answer}");
    }
    let again = server.result("executeBatch", gated("b3"));
    assert_eq!(again["results"][0]["status"], "ok", "{again}");
    assert_eq!(again["batch_id"], "b3", "{again}");
    server.request("shutdown", json!({}));
    assert!(server.wait_exit().success());
}
