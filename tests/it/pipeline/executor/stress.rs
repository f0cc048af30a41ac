//! Stress (issue 3, "Bad input and faults"): 1 000 calls in batches — native handlers and real
//! `sleep` subprocesses (some leaving grandchildren, some ignoring SIGTERM) with random
//! durations, timeouts, failures, panics and turn cancellations — on the real clock, since
//! subprocesses do not run on a paused one. Asserts one terminal event per call, results in
//! batch order, and that no process survives: every subprocess of the run carries a marker
//! variable in its environment, and none may be alive at the end.
//!
//! The random choices come from a fixed seed, so a failure reproduces.

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::support::executor::*;
use serde_json::json;
use toolgate::BatchId;
use toolgate::EventKind;
use toolgate::ToolCall;
use toolgate::{Batch, BatchOutcome, Turn};

const CALLS: usize = 1000;
const BATCH: usize = 50;
/// Batches running at the same time on the one engine.
const PARALLEL_BATCHES: usize = 5;

/// xorshift64*: small, seedable, good enough to pick test cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn random_call(rng: &mut Rng, id: String, marker: &str) -> ToolCall {
    if rng.chance(45) {
        // A real subprocess: sleeps up to 0.3 s under a timeout of 50–400 ms; sometimes a
        // grandchild that outlives it, sometimes SIGTERM ignored, sometimes a failure.
        let sleep = format!("0.{:03}", rng.below(300));
        let mut script = String::new();
        if rng.chance(20) {
            script.push_str("trap '' TERM; ");
        }
        if rng.chance(25) {
            script.push_str("sleep 30 & ");
        }
        script.push_str(&format!("sleep {sleep}"));
        if rng.chance(15) {
            script.push_str("; echo failing >&2; exit 4");
        } else {
            script.push_str("; echo done");
        }
        let timeout = 50 + rng.below(350);
        // Re-exec with the marker exported, so the group leader carries it in its
        // environment too, not only its children.
        let command = format!("export {marker}; exec bash -c \"{script}\"");
        return call(
            &id,
            "Shell",
            json!({"command": command, "timeout_ms": timeout}),
        );
    }
    let tool = match rng.below(4) {
        0 => "Timed",
        1 => "Read",
        2 => "Nope",
        _ => "Par",
    };
    let end = match rng.below(10) {
        0 => "business",
        1 => "error",
        2 => "panic",
        _ => "ok",
    };
    let mut input = json!({
        "sleep_ms": rng.below(300),
        "end": end,
        "ignore_cancel": rng.chance(10),
    });
    if tool == "Timed" {
        input["timeout_ms"] = json!(20 + rng.below(300));
    }
    call(&id, tool, input)
}

fn check_batch(outcome: &BatchOutcome, calls: &[ToolCall], h: &Harness) {
    let ids: Vec<&str> = outcome.results.iter().map(|r| r.call_id.as_str()).collect();
    let expected: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, expected, "results in batch order");
    let events: Vec<_> = h
        .events()
        .into_iter()
        .filter(|e| e.batch_id.as_ref() == Some(&outcome.batch_id))
        .collect();
    let counts = terminal_counts(&events);
    assert_eq!(counts.len(), calls.len());
    assert!(
        counts.values().all(|n| *n == 1),
        "one terminal event per call: {counts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_calls_one_terminal_event_each_and_no_leftover_process() {
    let marker = format!("TOOLGATE_STRESS=run{}", std::process::id());
    let h = Arc::new(Harness::new(&["stress.yaml"]));
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let batches: Vec<(Vec<ToolCall>, Option<u64>)> = (0..CALLS / BATCH)
        .map(|b| {
            let calls = (0..BATCH)
                .map(|i| random_call(&mut rng, format!("b{b}c{i}"), &marker))
                .collect();
            // A third of the batches are interrupted by their turn's owner.
            let cancel = rng.chance(33).then(|| 50 + rng.below(400));
            (calls, cancel)
        })
        .collect();

    let mut total = 0;
    let mut interrupted = 0;
    for wave in batches.chunks(PARALLEL_BATCHES) {
        let runs = wave.iter().enumerate().map(|(i, (calls, cancel_after))| {
            let h = Arc::clone(&h);
            let calls = calls.clone();
            let cancel_after = *cancel_after;
            async move {
                let turn = Turn::default();
                if let Some(ms) = cancel_after {
                    let cancel = turn.cancel.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        cancel.cancel();
                    });
                }
                let batch = Batch {
                    id: Some(BatchId::new(format!("{}-{i}", calls[0].id))),
                    calls: calls.clone(),
                };
                let outcome = tokio::time::timeout(
                    Duration::from_secs(120),
                    h.engine.execute_batch(batch, &turn),
                )
                .await
                .expect("the batch ended (no hang)")
                .unwrap();
                (calls, outcome)
            }
        });
        for (calls, outcome) in futures::future::join_all(runs).await {
            check_batch(&outcome, &calls, &h);
            total += outcome.results.len();
            interrupted += outcome
                .results
                .iter()
                .filter(|r| {
                    r.error.as_ref().and_then(|e| e.cancel_reason)
                        == Some(toolgate::CancelReason::UserInterrupt)
                })
                .count();
        }
    }
    assert_eq!(total, CALLS);
    assert!(interrupted > 0, "some calls were interrupted");
    let terminal = h.events().iter().filter(|e| e.is_terminal()).count();
    assert_eq!(terminal, CALLS);
    // Every kind of ending happened.
    let statuses: std::collections::HashSet<&'static str> = h
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallResult(_) => Some("ok"),
            EventKind::ToolCallError(e) => Some(e.status.as_str()),
            _ => None,
        })
        .collect();
    for status in ["ok", "error", "timed_out", "cancelled"] {
        assert!(statuses.contains(status), "no `{status}` in {statuses:?}");
    }

    // No subprocess of the run is left, grandchildren included.
    let mut left = marked_processes(&marker);
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = marked_processes(&marker);
    }
    assert_eq!(left, Vec::<i32>::new(), "leftover processes");
    // No native handler is still running either.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(h.probe.running.load(Ordering::SeqCst), 0);
}
