//! The engine's decision log: every call that got a permission decision is one record, in
//! the log the builder names or the one the policy set's settings name (a reload can set or
//! move it), and a log that cannot be written is reported without stopping the call.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use toolgate::decision_log::DecisionLog;
use toolgate::events::{EventKind, VecSink};
use toolgate::{Batch, Engine, Turn};

use crate::support::executor::{Probe, call, fixture, snapshot, work};

fn records(path: &Path) -> Vec<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) => text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn engine(snapshot: Arc<toolgate::Snapshot>, log: Option<DecisionLog>) -> (Engine, Arc<VecSink>) {
    let sink = VecSink::new();
    let mut builder = Engine::builder(snapshot)
        .native("work", work(Arc::new(Probe::default())))
        .sink(sink.clone());
    if let Some(log) = log {
        builder = builder.decision_log(log);
    }
    (builder.build(), sink)
}

async fn run(engine: &Engine, calls: Vec<toolgate::ToolCall>) {
    engine
        .execute_batch(Batch::new(calls), &Turn::default())
        .await
        .expect("the batch starts");
}

#[tokio::test]
async fn the_engine_logs_every_decided_call_to_the_log_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("decisions.jsonl");
    let log = DecisionLog::new(&path, &Default::default()).unwrap();
    let (engine, _) = engine(snapshot(&[]), Some(log));
    run(
        &engine,
        vec![
            call("a", "Read", json!({"path": "src/lib.rs", "output": "fine"})),
            call("b", "Nope", json!({})),
            call("c", "Edit", json!({"path": "README.md"})),
        ],
    )
    .await;
    let records = records(&path);
    let summary: Vec<Value> = records
        .iter()
        .map(|r| json!([r["event"], r["tool"], r["decision"], r["decided_by"]]))
        .collect();
    // The unknown tool was never decided: no record.
    assert_eq!(
        summary,
        [
            json!(["run", "Read", "allow", "default"]),
            json!(["run", "Edit", "allow", "default"]),
        ]
    );
    for record in &records {
        assert_eq!(record["session_id"], engine.session().as_str());
        assert_eq!(record["generation"], 1);
        assert!(record["input"]["path"].is_string());
        let hash = record["policy_hash"].as_str().unwrap();
        assert!(hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}

#[tokio::test]
async fn a_reload_that_names_a_log_starts_logging_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("later.jsonl");
    let (engine, _) = engine(snapshot(&[]), None);
    run(&engine, vec![call("a", "Read", json!({}))]).await;
    assert!(!path.exists(), "no log is configured yet");

    let settings = dir.path().join("log.yaml");
    std::fs::write(
        &settings,
        format!(
            "version: 1\nengine:\n  decision_log:\n    path: {}\n",
            path.display()
        ),
    )
    .unwrap();
    let mut options = toolgate::LoadOptions::new(toolgate::LayerOptions {
        no_builtin: true,
        policies: vec![fixture("base"), settings],
        ..toolgate::LayerOptions::default()
    });
    options.workspace_root = fixture("");
    let reloaded = toolgate::load(&options, 2).snapshot.expect("loads");
    engine.install(reloaded);
    run(&engine, vec![call("b", "Read", json!({}))]).await;
    let records = records(&path);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["generation"], 2);
}

#[tokio::test]
async fn a_log_that_cannot_be_written_is_reported_and_the_call_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    // A path under a file: no folder can be made there.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let path = blocker.join("decisions.jsonl");
    let log = DecisionLog::new(&path, &Default::default()).unwrap();
    let (engine, sink) = engine(snapshot(&[]), Some(log));
    let outcome = engine
        .execute_batch(
            Batch::new(vec![call("a", "Read", json!({"output": "fine"}))]),
            &Turn::default(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.results[0].status, toolgate::CallStatus::Ok);
    let failures: Vec<_> = sink
        .events()
        .into_iter()
        .filter_map(|event| match event.kind {
            EventKind::DecisionLogFailed(failed) => Some(failed),
            _ => None,
        })
        .collect();
    assert_eq!(failures.len(), 1, "one report per batch");
    assert_eq!(failures[0].path, path.display().to_string());
    assert!(!failures[0].error.is_empty());
}
