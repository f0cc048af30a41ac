//! SIGINT, SIGTERM and SIGHUP to `toolgate run` and `toolgate serve`: the real binary, with a
//! batch of three calls that each start a grandchild. The signal is sent once every call has
//! started and printed its process ids (read from the binary's own output, never after a fixed
//! sleep); then every process must be gone, every call reported `cancelled`, and the exit
//! code 128 + the signal's number.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::process::{Command, Stdio};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::support::executor::survivors;
use crate::support::serve::{Server, WAIT, batch};

/// A tool whose shell starts a `sleep` grandchild, prints both process ids, and waits.
const POLICY: &str = r#"version: 1
tools:
  Nest:
    description: Starts a sleeping grandchild and waits for it.
    input_schema: { type: object }
    concurrency: { concurrent_safe: true, read_only: true, side_effect_scope: none }
    permission: { default: allow }
    timeout: none
    handler: { kind: command, argv: [sh, -c, 'sleep 300 & echo "pids $$ $!"; wait'] }
"#;

const BATCH: &str = r"calls:
  - { id: a, tool: Nest, input: {} }
  - { id: b, tool: Nest, input: {} }
  - { id: c, tool: Nest, input: {} }
";

fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("policies")).unwrap();
    std::fs::write(dir.path().join("policies/nest.yaml"), POLICY).unwrap();
    std::fs::write(dir.path().join("batch.yaml"), BATCH).unwrap();
    dir
}

/// The process ids in a progress text `pids 12 34`.
fn pids_in(text: &str) -> Vec<i32> {
    text.split_whitespace()
        .skip_while(|word| *word != "pids")
        .skip(1)
        .filter_map(|word| word.parse().ok())
        .collect()
}

fn assert_all_cancelled(results: &Value, context: &str) {
    let results = results.as_array().unwrap_or_else(|| panic!("{context}"));
    let statuses: Vec<(&str, &str)> = results
        .iter()
        .map(|r| {
            (
                r["call_id"].as_str().unwrap(),
                r["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [("a", "cancelled"), ("b", "cancelled"), ("c", "cancelled")],
        "{context}"
    );
}

/// Runs the batch with `toolgate run --format jsonl`, sends `signal` once all three calls
/// printed their pids, and checks the end.
fn run_stopped_by(signal: Signal) {
    let dir = scratch();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .args(["--no-builtin", "--color", "never", "-p", "policies"])
        .args(["run", "--format", "jsonl", "batch.yaml"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let lines = crate::support::lines::lines(stdout);
    let mut seen = Vec::new();
    let mut started = HashSet::new();
    let mut pids = Vec::new();
    while started.len() < 3 || pids.len() < 6 {
        let line = lines
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("the calls did not all start; seen:\n{}", seen.join("\n")));
        let event: Value = serde_json::from_str(&line).unwrap();
        match event["type"].as_str() {
            Some("ToolCallStarted") => {
                started.insert(event["call_id"].as_str().unwrap().to_owned());
            }
            Some("ToolCallProgress") => pids.extend(pids_in(event["text"].as_str().unwrap())),
            _ => {}
        }
        seen.push(line);
    }
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    while let Ok(line) = lines.recv_timeout(WAIT) {
        seen.push(line);
    }
    let status = child.wait().unwrap();
    let context = seen.join("\n");
    assert_eq!(survivors(&pids), Vec::<i32>::new(), "{context}");
    let last: Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    assert_eq!(last["type"], "BatchFinalized", "{context}");
    assert_all_cancelled(&last["results"], &context);
    assert_eq!(status.code(), Some(128 + signal as i32), "{context}");
}

#[test]
fn sigterm_to_run_cancels_the_batch_and_kills_every_process() {
    run_stopped_by(Signal::SIGTERM);
}

#[test]
fn sighup_to_run_cancels_the_batch_and_kills_every_process() {
    run_stopped_by(Signal::SIGHUP);
}

#[test]
fn sigint_to_run_exits_non_zero_after_the_cancelled_batch() {
    run_stopped_by(Signal::SIGINT);
}

/// Starts `serve`, sends the batch, waits for the three calls' pids, sends `signal`.
fn serve_stopped_by(signal: Signal) {
    let dir = scratch();
    let policies = dir.path().join("policies");
    let mut server = Server::start(&["-p", policies.to_str().unwrap()], &["--no-watch"]);
    let calls: Vec<(&str, &str, Value)> = ["a", "b", "c"]
        .into_iter()
        .map(|id| (id, "Nest", json!({})))
        .collect();
    let id = server.request("executeBatch", batch("sig", &calls));
    let mut pids = Vec::new();
    while pids.len() < 6 {
        let progress = server.event("ToolCallProgress");
        pids.extend(pids_in(progress["text"].as_str().unwrap()));
    }
    kill(Pid::from_raw(server.pid() as i32), signal).unwrap();
    let response = server.response(&id);
    let status = server.wait_exit();
    let context = server.context();
    assert_eq!(survivors(&pids), Vec::<i32>::new(), "{context}");
    assert_all_cancelled(&response["result"]["results"], &context);
    assert_eq!(status.code(), Some(128 + signal as i32), "{context}");
    drop(dir);
}

#[test]
fn sigterm_to_serve_cancels_running_batches_and_kills_every_process() {
    serve_stopped_by(Signal::SIGTERM);
}

#[test]
fn sighup_to_serve_cancels_running_batches_and_kills_every_process() {
    serve_stopped_by(Signal::SIGHUP);
}
