//! Events (SPEC §11): every event carries the batch id, the snapshot generation and a
//! timestamp; every call gets exactly one terminal event, also unknown, denied and cancelled
//! ones; results come back in batch order. A property test runs random batches — random
//! tools (unknown ones too), outcomes, durations, failure policies, approvers and turn
//! cancellations — on tokio's paused clock.

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, SystemTime};

use crate::support::executor::*;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate::BatchId;
use toolgate::Snapshot;
use toolgate::ToolCall;
use toolgate::{ApprovalAnswer, ApprovalBroker, FixedAnswer};
use toolgate::{Batch, BatchOutcome, Turn};
use toolgate::{CallStatus, Event, EventKind};

#[tokio::test(start_paused = true)]
async fn every_event_carries_batch_generation_and_timestamp() {
    let h = Harness::on(snapshot_at(&[], 42));
    let before = SystemTime::now();
    let outcome = h
        .engine
        .execute_batch(
            Batch {
                id: Some(BatchId::new("batch-7")),
                calls: vec![
                    call("ok", "Read", json!({"sleep_ms": 10})),
                    call("unknown", "Nope", json!({})),
                    call("denied", "Denied", json!({})),
                    call("asked", "Ask", json!({})),
                    call("slow", "Timed", json!({"sleep_ms": 60_000})),
                    call("business", "Par", json!({"end": "business"})),
                    call("edit", "Edit", json!({})),
                ],
            },
            &Turn::default(),
        )
        .await
        .unwrap();
    let after = SystemTime::now();
    assert_eq!(outcome.batch_id.as_str(), "batch-7");
    assert_eq!(outcome.generation, 42);
    let events = h.events();
    for event in &events {
        assert_eq!(
            event.batch_id.as_ref().map(BatchId::as_str),
            Some("batch-7")
        );
        assert_eq!(event.generation, 42);
        assert!(before <= event.timestamp && event.timestamp <= after);
        let json = serde_json::to_value(event).unwrap();
        for key in ["type", "batch_id", "generation", "timestamp"] {
            assert!(json.get(key).is_some(), "{key} missing in {json}");
        }
        // Batch-level events have no call id; all others have one.
        let batch_level = matches!(
            event.kind,
            EventKind::BatchScheduled(_) | EventKind::ToolBatchComplete(_)
        );
        assert_eq!(
            event.call_id.is_none(),
            batch_level,
            "{}",
            event.type_name()
        );
    }
    assert_eq!(events.first().unwrap().type_name(), "BatchScheduled");
    assert_eq!(events.last().unwrap().type_name(), "ToolBatchComplete");
    let complete = match &events.last().unwrap().kind {
        EventKind::ToolBatchComplete(c) => c.clone(),
        _ => unreachable!(),
    };
    assert_eq!(complete.successes, 2);
    assert_eq!(complete.failures, 5);
    let counts = terminal_counts(&events);
    assert_eq!(counts.len(), 7);
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
}

#[tokio::test(start_paused = true)]
async fn a_generated_batch_id_is_unique_per_batch() {
    let h = Harness::new(&[]);
    let first = h.run(vec![call("a", "Read", json!({}))]).await;
    let second = h.run(vec![call("a", "Read", json!({}))]).await;
    assert_ne!(first.batch_id, second.batch_id);
    let ids: Vec<&str> = h
        .events()
        .iter()
        .filter(|e| e.is_terminal())
        .map(|e| e.batch_id.as_ref().unwrap().as_str())
        .map(|id| {
            if id == first.batch_id.as_str() {
                "first"
            } else {
                "second"
            }
        })
        .collect();
    assert_eq!(ids, ["first", "second"]);
}

#[tokio::test(start_paused = true)]
async fn a_batch_runs_on_the_snapshot_it_started_with() {
    let h = Harness::on(snapshot_at(&[], 1));
    let engine = h.engine.clone();
    let running = tokio::spawn(async move {
        engine
            .execute_batch(
                Batch::new(vec![
                    call("slow", "Par", json!({"sleep_ms": 1000})),
                    call("later", "Edit", json!({})),
                ]),
                &Turn::default(),
            )
            .await
            .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    // A reload lands while the batch runs (between its two groups).
    h.engine.install(snapshot_at(&["cap2.yaml"], 2));
    let outcome = running.await.unwrap();
    assert_eq!(outcome.generation, 1);
    assert!(h.events().iter().all(|e| e.generation == 1));
    let next = h.run(vec![call("a", "Read", json!({}))]).await;
    assert_eq!(next.generation, 2);
}

// ---------------------------------------------------------------------------------------
// Property: random batches.

/// Tools a random call may name: scheduling classes, permissions, timeouts, gates, turn
/// control, and names that resolve to nothing.
const TOOLS: &[&str] = &[
    "Read",
    "read",
    "Par",
    "Edit",
    "Nuke",
    "Denied",
    "Ask",
    "Timed",
    "Untimed",
    "Gated",
    "Stopper",
    "Closer",
    "Fragile",
    "Typed",
    "Orphan",
    "Nope",
    "",
    "mcp__x__y",
];

const ENDS: &[&str] = &["ok", "ok", "ok", "business", "error", "panic", "limit"];

const OVERLAYS: &[&[&str]] = &[
    &[],
    &["cancel_group.yaml"],
    &["cancel_batch.yaml"],
    &["cap2.yaml"],
    &["approval_ask_again.yaml", "cancel_group.yaml"],
];

#[derive(Clone, Debug)]
struct RandomCall {
    tool: usize,
    end: usize,
    sleep_ms: u64,
    ignore_cancel: bool,
    timeout_ms: Option<u64>,
    gate: bool,
    string_input: bool,
}

fn random_call() -> impl Strategy<Value = RandomCall> {
    (
        0..TOOLS.len(),
        0..ENDS.len(),
        prop_oneof![Just(0u64), 1u64..200, 1000u64..20_000],
        proptest::bool::weighted(0.1),
        proptest::option::weighted(0.3, 1u64..10_000),
        proptest::bool::weighted(0.15),
        proptest::bool::weighted(0.1),
    )
        .prop_map(
            |(tool, end, sleep_ms, ignore_cancel, timeout_ms, gate, string_input)| RandomCall {
                tool,
                end,
                sleep_ms,
                ignore_cancel,
                timeout_ms,
                gate,
                string_input,
            },
        )
}

#[derive(Clone, Debug)]
struct RandomBatch {
    calls: Vec<RandomCall>,
    overlay: usize,
    approver: u8,
    cancel_after_ms: Option<u64>,
}

fn random_batch() -> impl Strategy<Value = RandomBatch> {
    (
        proptest::collection::vec(random_call(), 0..24),
        0..OVERLAYS.len(),
        0u8..3,
        proptest::option::weighted(0.25, 0u64..30_000),
    )
        .prop_map(|(calls, overlay, approver, cancel_after_ms)| RandomBatch {
            calls,
            overlay,
            approver,
            cancel_after_ms,
        })
}

fn cached_snapshot(overlay: usize) -> Arc<Snapshot> {
    static CACHE: LazyLock<Mutex<HashMap<usize, Arc<Snapshot>>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let mut cache = CACHE.lock().unwrap();
    Arc::clone(
        cache
            .entry(overlay)
            .or_insert_with(|| snapshot(OVERLAYS[overlay])),
    )
}

fn to_calls(batch: &RandomBatch) -> Vec<ToolCall> {
    batch
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut input = json!({
                "end": ENDS[c.end],
                "sleep_ms": c.sleep_ms,
                "ignore_cancel": c.ignore_cancel,
            });
            if let Some(ms) = c.timeout_ms {
                input["timeout_ms"] = json!(ms);
            }
            // A call admitted through gate `api` that asks for it again mid-call would wait
            // for itself (its deadline paused) until the turn is cancelled: a handler bug,
            // not an engine property, so the random batches leave it out.
            if c.gate && TOOLS[c.tool] != "Gated" {
                input["gate"] = json!("api");
            }
            if TOOLS[c.tool] == "Typed" {
                input["json"] = json!({"n": c.sleep_ms});
            }
            let input = if c.string_input {
                Value::String(input.to_string())
            } else {
                input
            };
            call(&format!("c{i}"), TOOLS[c.tool], input)
        })
        .collect()
}

fn run_random(batch: &RandomBatch) -> (Vec<ToolCall>, BatchOutcome, Vec<Event>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let h = Harness::on(cached_snapshot(batch.overlay));
        let approver: Option<Arc<dyn ApprovalBroker>> = match batch.approver {
            0 => None,
            1 => Some(Arc::new(FixedAnswer(ApprovalAnswer::Allow {
                reason: None,
            }))),
            _ => Some(Arc::new(FixedAnswer(ApprovalAnswer::Deny { reason: None }))),
        };
        let turn = Turn {
            approver,
            ..Turn::default()
        };
        if let Some(ms) = batch.cancel_after_ms {
            let cancel = turn.cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                cancel.cancel();
            });
        }
        let calls = to_calls(batch);
        let outcome = h.run_in(calls.clone(), &turn).await;
        (calls, outcome, h.events())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn one_terminal_event_per_call_and_results_in_batch_order(batch in random_batch()) {
        quiet_deliberate_panics();
        let (calls, outcome, events) = run_random(&batch);

        // Results: one per call, in batch order.
        let result_ids: Vec<&str> = outcome.results.iter().map(|r| r.call_id.as_str()).collect();
        let call_ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        prop_assert_eq!(&result_ids, &call_ids);
        // Groups: every call in exactly one, in order.
        let grouped: Vec<&str> = outcome.groups.iter().flatten().map(|id| id.as_str()).collect();
        prop_assert_eq!(&grouped, &call_ids);

        // Exactly one terminal event per call, agreeing with its result.
        let counts = terminal_counts(&events);
        prop_assert_eq!(counts.len(), calls.len());
        for result in &outcome.results {
            let id = result.call_id.as_str();
            prop_assert_eq!(counts.get(id).copied(), Some(1), "call {}", id);
            let terminal = events
                .iter()
                .find(|e| e.is_terminal() && e.call_id.as_ref().is_some_and(|c| c.as_str() == id))
                .unwrap();
            let status = match &terminal.kind {
                EventKind::ToolCallResult(r) => r.status,
                EventKind::ToolCallError(e) => {
                    prop_assert_eq!(&e.message, &result.model_content);
                    e.status
                }
                _ => unreachable!(),
            };
            prop_assert_eq!(status, result.status);
            prop_assert_eq!(result.error.is_none(), result.status == CallStatus::Ok);
            // Started at most once, and before the end.
            let types = event_types(&events, id);
            prop_assert!(types.iter().filter(|t| **t == "ToolCallStarted").count() <= 1);
            prop_assert_eq!(types.last().copied(), Some(if result.is_ok() { "ToolCallResult" } else { "ToolCallError" }));
            prop_assert_eq!(types.first().copied(), Some("ToolCallScheduled"));
        }

        // Every event is of this batch and generation; the batch opens and closes.
        for event in &events {
            prop_assert_eq!(event.batch_id.as_ref(), Some(&outcome.batch_id));
            prop_assert_eq!(event.generation, outcome.generation);
        }
        prop_assert_eq!(events.first().map(Event::type_name), Some("BatchScheduled"));
        prop_assert_eq!(events.last().map(Event::type_name), Some("ToolBatchComplete"));
        if let Some(EventKind::ToolBatchComplete(complete)) = events.last().map(|e| &e.kind) {
            let ok = outcome.results.iter().filter(|r| r.is_ok()).count();
            prop_assert_eq!(complete.successes, ok);
            prop_assert_eq!(complete.failures, calls.len() - ok);
        }
    }
}
