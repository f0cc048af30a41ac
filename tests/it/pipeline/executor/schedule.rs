//! Scheduling through the engine (SPEC §4), what failures do to siblings (`on_failure`), turn
//! control (§9.1), turn cancellation, and modes reaching every call (§9.2).
//!
//! Every test runs on tokio's paused clock: handlers "work" with `tokio::time::sleep`, so the
//! schedule and the timing figures are deterministic.

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::support::executor::*;
use serde_json::json;
use toolgate::{Batch, BatchError, Turn};
use toolgate::{CallId, ModeName};
use toolgate::{CallStatus, CancelReason, EventKind, FailureStage};
use toolgate::{ErrorCode, ToolCall};

const TURN_STOPPED: &str = "Tool cancelled because a previous tool result requested a turn stop.";

#[tokio::test(start_paused = true)]
async fn the_spec_example_groups_and_runs_group_after_group() {
    let h = Harness::new(&[]);
    let slow = json!({"sleep_ms": 1000});
    let started = tokio::time::Instant::now();
    let outcome = h
        .run(vec![
            call("a", "Read", slow.clone()),
            call("b", "Read", slow.clone()),
            call("c", "Edit", slow.clone()),
            call("d", "WebFetch", slow.clone()),
            call("e", "Bash", slow.clone()),
            call("f", "Read", slow.clone()),
        ])
        .await;
    assert_eq!(
        groups(&outcome),
        [vec!["a", "b"], vec!["c"], vec!["d"], vec!["e"], vec!["f"]]
    );
    assert!(outcome.results.iter().all(|r| r.is_ok()));
    // a and b shared their second; the four other groups took one each.
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(h.probe.peak.load(Ordering::SeqCst), 2);

    // Group order: c starts only after a and b have ended, d after c, …
    let events = h.events();
    let c_started = position(&events, "c", "ToolCallStarted");
    assert!(position(&events, "a", "ToolCallResult") < c_started);
    assert!(position(&events, "b", "ToolCallResult") < c_started);
    for (earlier, later) in [("c", "d"), ("d", "e"), ("e", "f")] {
        assert!(
            position(&events, earlier, "ToolCallResult")
                < position(&events, later, "ToolCallStarted")
        );
    }
    // The plan agrees with the run.
    let batch = Batch::new(vec![
        call("a", "Read", json!({})),
        call("b", "Read", json!({})),
        call("c", "Edit", json!({})),
        call("d", "WebFetch", json!({})),
        call("e", "Bash", json!({})),
        call("f", "Read", json!({})),
    ]);
    let plan = h.engine.plan(&batch, &[]).unwrap();
    assert_eq!(plan.groups, outcome.groups);
}

#[tokio::test(start_paused = true)]
async fn max_concurrency_comes_from_data() {
    let h = Harness::new(&["cap2.yaml"]);
    let slow = json!({"sleep_ms": 1000});
    let calls = (1..=5)
        .map(|i| call(&format!("p{i}"), "Par", slow.clone()))
        .collect();
    let started = tokio::time::Instant::now();
    let outcome = h.run(calls).await;
    assert_eq!(
        groups(&outcome),
        [vec!["p1", "p2"], vec!["p3", "p4"], vec!["p5"]]
    );
    assert_eq!(h.probe.peak.load(Ordering::SeqCst), 2);
    assert_eq!(started.elapsed(), Duration::from_secs(3));

    // Without the overlay the engine default (10) holds: one group.
    let h = Harness::new(&[]);
    let calls = (1..=5)
        .map(|i| call(&format!("p{i}"), "Par", slow.clone()))
        .collect();
    let outcome = h.run(calls).await;
    assert_eq!(outcome.groups.len(), 1);
    assert_eq!(h.probe.peak.load(Ordering::SeqCst), 5);
}

#[tokio::test(start_paused = true)]
async fn unknown_tools_share_the_group_and_fail_alone() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("a", "Read", json!({"sleep_ms": 100})),
            call("b", "Nope", json!({"x": 1})),
            call("c", "read", json!({"sleep_ms": 100})),
            call("d", "", json!({})),
        ])
        .await;
    assert_eq!(groups(&outcome), [vec!["a", "b", "c", "d"]]);
    assert_eq!(status(&outcome, "a"), CallStatus::Ok);
    assert_eq!(status(&outcome, "c"), CallStatus::Ok, "aliases resolve");
    let b = result(&outcome, "b");
    assert_eq!(b.status, CallStatus::Error);
    assert_eq!(b.model_content, "Tool not found: Nope");
    assert_eq!(b.error.as_ref().unwrap().code, ErrorCode::ToolNotFound);
    assert_eq!(result(&outcome, "d").model_content, "Tool not found: ");

    let events = h.events();
    for id in ["b", "d"] {
        // Scheduled, then exactly one terminal error; never started.
        assert_eq!(
            event_types(&events, id),
            ["ToolCallScheduled", "ToolCallError"]
        );
    }
    let error = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCallError(error) if e.call_id.as_ref().unwrap().as_str() == "b" => {
                Some(error.clone())
            }
            _ => None,
        })
        .unwrap();
    // Telemetry says `unknown`; the model is told the real name.
    assert_eq!(error.tool, "unknown");
    assert_eq!(error.code, "tool_not_found");
    assert_eq!(error.message, "Tool not found: Nope");
}

#[tokio::test(start_paused = true)]
async fn a_destructive_call_runs_alone() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("a", "Par", json!({})),
            call("b", "Par", json!({})),
            call("n", "Nuke", json!({})),
            call("c", "Par", json!({})),
        ])
        .await;
    assert_eq!(groups(&outcome), [vec!["a", "b"], vec!["n"], vec!["c"]]);
    assert!(outcome.results.iter().all(|r| r.is_ok()));
}

#[tokio::test(start_paused = true)]
async fn on_failure_continue_lets_every_call_stand_alone() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("f", "Par", json!({"end": "business"})),
            call("s", "Par", json!({"sleep_ms": 5000})),
            call("e", "Edit", json!({})),
        ])
        .await;
    assert_eq!(status(&outcome, "f"), CallStatus::Error);
    assert_eq!(status(&outcome, "s"), CallStatus::Ok);
    assert_eq!(
        status(&outcome, "e"),
        CallStatus::Ok,
        "failures of earlier calls do not stop later groups"
    );
    assert!(!outcome.turn_stopped);
}

#[tokio::test(start_paused = true)]
async fn on_failure_cancel_group_cancels_running_group_mates_only() {
    let h = Harness::new(&["cancel_group.yaml"]);
    let started = tokio::time::Instant::now();
    let outcome = h
        .run(vec![
            call("done", "Par", json!({"sleep_ms": 10})),
            call("f", "Par", json!({"sleep_ms": 100, "end": "business"})),
            call("s", "Par", json!({"sleep_ms": 60_000})),
            call("e", "Edit", json!({})),
        ])
        .await;
    assert_eq!(status(&outcome, "done"), CallStatus::Ok, "already finished");
    assert_eq!(status(&outcome, "f"), CallStatus::Error);
    let s = result(&outcome, "s");
    assert_eq!(s.status, CallStatus::Cancelled);
    assert_eq!(
        cancel_reason(&outcome, "s"),
        Some(CancelReason::SiblingFailed)
    );
    assert_eq!(
        s.model_content,
        "Tool cancelled because call f in the same batch failed"
    );
    assert_eq!(
        status(&outcome, "e"),
        CallStatus::Ok,
        "later groups still run"
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_no_user_interrupt(&h);
}

#[tokio::test(start_paused = true)]
async fn on_failure_cancel_batch_cancels_later_groups_too() {
    let h = Harness::new(&["cancel_batch.yaml"]);
    let outcome = h
        .run(vec![
            call("f", "Par", json!({"sleep_ms": 100, "end": "error"})),
            call("s", "Par", json!({"sleep_ms": 60_000})),
            call("e", "Edit", json!({})),
            call("r", "Read", json!({})),
        ])
        .await;
    assert_eq!(status(&outcome, "f"), CallStatus::Error);
    for id in ["s", "e", "r"] {
        assert_eq!(status(&outcome, id), CallStatus::Cancelled, "{id}");
        assert_eq!(
            cancel_reason(&outcome, id),
            Some(CancelReason::SiblingFailed)
        );
        assert_eq!(
            result(&outcome, id).model_content,
            "Tool cancelled because call f in the same batch failed"
        );
    }
    // The calls of later groups never started: they end at the schedule stage.
    assert_eq!(
        result(&outcome, "e").error.as_ref().unwrap().stage,
        FailureStage::Schedule
    );
    assert_eq!(
        event_types(&h.events(), "e"),
        ["ToolCallScheduled", "ToolCallError"]
    );
    assert_no_user_interrupt(&h);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_counts_as_a_failure_for_on_failure() {
    let h = Harness::new(&["cancel_group.yaml"]);
    let outcome = h
        .run(vec![
            call("t", "Timed", json!({"sleep_ms": 60_000, "timeout_ms": 100})),
            call("s", "Par", json!({"sleep_ms": 60_000})),
        ])
        .await;
    assert_eq!(status(&outcome, "t"), CallStatus::TimedOut);
    assert_eq!(
        cancel_reason(&outcome, "s"),
        Some(CancelReason::SiblingFailed)
    );
}

#[tokio::test(start_paused = true)]
async fn denials_do_not_cancel_siblings() {
    let h = Harness::new(&["cancel_batch.yaml"]);
    let outcome = h
        .run(vec![
            call("d", "Denied", json!({})),
            call("s", "Par", json!({"sleep_ms": 1000})),
            call("e", "Edit", json!({})),
        ])
        .await;
    assert_eq!(status(&outcome, "d"), CallStatus::Denied);
    assert_eq!(status(&outcome, "s"), CallStatus::Ok);
    assert_eq!(status(&outcome, "e"), CallStatus::Ok);
}

#[tokio::test(start_paused = true)]
async fn calls_that_never_ran_do_not_cancel_siblings() {
    // A typo in a tool name or an invalid input is the model's mistake, not a failure of the
    // work the group does: neither cancels its siblings, even under `cancel_batch`.
    let h = Harness::new(&["cancel_batch.yaml"]);
    let outcome = h
        .run(vec![
            call("typo", "Parr", json!({})),
            call("bad", "Par", json!({"sleep_ms": "soon"})),
            call("s", "Par", json!({"sleep_ms": 1000})),
            call("e", "Edit", json!({})),
        ])
        .await;
    assert_eq!(status(&outcome, "typo"), CallStatus::Error);
    assert_eq!(status(&outcome, "bad"), CallStatus::Error);
    assert_eq!(status(&outcome, "s"), CallStatus::Ok);
    assert_eq!(status(&outcome, "e"), CallStatus::Ok);
}

#[tokio::test(start_paused = true)]
async fn on_failure_per_contract_overrides_the_engine() {
    // Engine: continue. Fragile says cancel_group.
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("f", "Fragile", json!({"sleep_ms": 100, "end": "business"})),
            call("s", "Par", json!({"sleep_ms": 60_000})),
        ])
        .await;
    assert_eq!(status(&outcome, "f"), CallStatus::Error);
    assert_eq!(
        cancel_reason(&outcome, "s"),
        Some(CancelReason::SiblingFailed)
    );

    // A Par failing beside a Fragile cancels nothing.
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("f", "Par", json!({"sleep_ms": 100, "end": "business"})),
            call("s", "Fragile", json!({"sleep_ms": 1000})),
        ])
        .await;
    assert_eq!(status(&outcome, "s"), CallStatus::Ok);
    assert_no_user_interrupt(&h);
}

#[tokio::test(start_paused = true)]
async fn stop_turn_cancels_every_later_group_with_the_synthetic_message() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("stop", "Stopper", json!({"output": "stopping"})),
            call("mate", "Par", json!({"sleep_ms": 1000})),
            call("e", "Edit", json!({})),
            call("r1", "Read", json!({})),
            call("r2", "Read", json!({})),
            call("x", "Nope", json!({})),
        ])
        .await;
    assert_eq!(
        groups(&outcome),
        [vec!["stop", "mate"], vec!["e"], vec!["r1", "r2", "x"]]
    );
    assert!(outcome.turn_stopped);
    assert_eq!(status(&outcome, "stop"), CallStatus::Ok);
    assert_eq!(result(&outcome, "stop").model_content, "stopping");
    assert_eq!(
        status(&outcome, "mate"),
        CallStatus::Ok,
        "group-mates of the stopping call finish"
    );
    for id in ["e", "r1", "r2", "x"] {
        let r = result(&outcome, id);
        assert_eq!(r.status, CallStatus::Cancelled, "{id}");
        assert_eq!(r.model_content, TURN_STOPPED);
        assert_eq!(cancel_reason(&outcome, id), Some(CancelReason::TurnStopped));
    }
    // No handler ran for the cancelled calls.
    let ran: Vec<String> = h
        .probe
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.call_id.to_string())
        .collect();
    assert_eq!(ran.len(), 2);
    assert_eq!(terminal_counts(&h.events()).len(), 6);
}

#[tokio::test(start_paused = true)]
async fn cancel_rest_of_batch_cancels_later_groups_with_reason_policy() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("c", "Closer", json!({})),
            call("e", "Edit", json!({})),
            call("r", "Read", json!({})),
        ])
        .await;
    assert_eq!(status(&outcome, "c"), CallStatus::Ok);
    assert!(!outcome.turn_stopped);
    for id in ["e", "r"] {
        assert_eq!(status(&outcome, id), CallStatus::Cancelled);
        assert_eq!(cancel_reason(&outcome, id), Some(CancelReason::Policy));
    }
    assert_no_user_interrupt(&h);
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_turn_is_a_user_interrupt() {
    let h = Harness::new(&[]);
    let turn = Turn::default();
    let cancel = turn.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel.cancel();
    });
    let started = tokio::time::Instant::now();
    let outcome = h
        .run_in(
            vec![
                call("p", "Par", json!({"sleep_ms": 60_000})),
                call("t", "Timed", json!({"sleep_ms": 60_000})),
                call("e", "Edit", json!({})),
            ],
            &turn,
        )
        .await;
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    for id in ["p", "t", "e"] {
        assert_eq!(status(&outcome, id), CallStatus::Cancelled, "{id}");
        assert_eq!(
            cancel_reason(&outcome, id),
            Some(CancelReason::UserInterrupt)
        );
    }
    assert_eq!(
        result(&outcome, "p").model_content,
        "Tool execution was cancelled (user_interrupt)"
    );
    // The contract's own cancellation message wins over the generic one.
    assert_eq!(result(&outcome, "t").model_content, "Timed was stopped");
    assert_eq!(terminal_counts(&h.events()).len(), 3);
}

#[tokio::test(start_paused = true)]
async fn turn_control_maps_a_limit_failure_to_stop_turn_with_its_message() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("l", "Stopper", json!({"end": "limit"})),
            call("e", "Edit", json!({})),
        ])
        .await;
    let l = result(&outcome, "l");
    assert_eq!(l.status, CallStatus::Error);
    assert_eq!(
        l.error.as_ref().unwrap().detail_code.as_deref(),
        Some("limit:cron")
    );
    assert_eq!(l.model_content, "Cron limit reached; stopping.");
    assert_eq!(l.turn.as_ref().unwrap().outcome, "limit:cron");
    assert!(outcome.turn_stopped);
    assert_eq!(
        cancel_reason(&outcome, "e"),
        Some(CancelReason::TurnStopped)
    );
    assert_eq!(result(&outcome, "e").model_content, TURN_STOPPED);

    // A plain business failure of the same tool maps to nothing: the turn goes on.
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("b", "Stopper", json!({"end": "business"})),
            call("e", "Edit", json!({})),
        ])
        .await;
    assert!(!outcome.turn_stopped);
    assert_eq!(status(&outcome, "e"), CallStatus::Ok);
}

#[tokio::test(start_paused = true)]
async fn modes_reach_every_call_rule_and_contract_patch() {
    let h = Harness::new(&[]);
    let turn = turn_in(&["plan", "offpeak"]);
    let outcome = h
        .run_in(
            vec![
                call("r1", "Read", json!({})),
                call("r2", "Read", json!({})),
                call("p", "Par", json!({})),
                call("e", "Edit", json!({})),
            ],
            &turn,
        )
        .await;
    // offpeak patches Read to not concurrent-safe: r1 and r2 no longer share a group.
    assert_eq!(
        groups(&outcome),
        [vec!["r1"], vec!["r2"], vec!["p"], vec!["e"]]
    );
    // …and its timeout to 7 s.
    let events = h.events();
    assert_eq!(started_timeout(&events, "r1"), Some(7000));
    assert_eq!(started_timeout(&events, "r2"), Some(7000));
    assert_eq!(started_timeout(&events, "p"), Some(30_000));
    // The plan-mode rule denies the edit.
    let e = result(&outcome, "e");
    assert_eq!(e.status, CallStatus::Denied);
    assert_eq!(e.model_content, "edits are off in plan mode");
    // Every handler that ran saw both modes.
    let seen = h.probe.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    for s in &seen {
        assert_eq!(s.modes, ["plan", "offpeak"], "{}", s.call_id);
    }
    // The batch reports them too.
    let scheduled = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::BatchScheduled(s) => Some(s.modes.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(scheduled, ["plan", "offpeak"]);
    // Planning with the same modes gives the same groups and decisions.
    let batch = Batch::new(vec![
        call("r1", "Read", json!({})),
        call("r2", "Read", json!({})),
        call("p", "Par", json!({})),
        call("e", "Edit", json!({})),
    ]);
    let plan = h.engine.plan(&batch, &turn.modes).unwrap();
    assert_eq!(plan.groups, outcome.groups);
    assert_eq!(plan.calls[3].decision, "deny");
    assert_eq!(plan.calls[0].timeout_ms, Some(7000));

    // Without modes: one group for the reads, the edit runs, the default timeout applies.
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("r1", "Read", json!({})),
            call("r2", "Read", json!({})),
            call("e", "Edit", json!({})),
        ])
        .await;
    assert_eq!(groups(&outcome), [vec!["r1", "r2"], vec!["e"]]);
    assert_eq!(status(&outcome, "e"), CallStatus::Ok);
    assert_eq!(started_timeout(&h.events(), "r1"), Some(30_000));
    assert!(
        h.probe
            .seen
            .lock()
            .unwrap()
            .iter()
            .all(|s| s.modes.is_empty())
    );
}

#[tokio::test(start_paused = true)]
async fn an_undeclared_mode_is_a_batch_error() {
    let h = Harness::new(&[]);
    let turn = turn_in(&["plan", "yolo"]);
    let error = h
        .engine
        .execute_batch(Batch::new(vec![call("a", "Read", json!({}))]), &turn)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        BatchError::UnknownMode {
            mode: "yolo".into(),
            declared: "`plan`, `offpeak`".into()
        }
    );
    assert_eq!(
        error.to_string(),
        "mode `yolo` is not declared (declared modes: `plan`, `offpeak`)"
    );
    assert!(h.events().is_empty(), "nothing ran, nothing was reported");
    assert!(
        h.engine
            .plan(&Batch::new(vec![]), &[ModeName::new("yolo")])
            .is_err()
    );
}

#[tokio::test(start_paused = true)]
async fn duplicate_call_ids_are_a_batch_error() {
    let h = Harness::new(&[]);
    let error = h
        .engine
        .execute_batch(
            Batch::new(vec![
                call("a", "Read", json!({})),
                call("a", "Par", json!({})),
            ]),
            &Turn::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(error, BatchError::DuplicateCallId("a".into()));
    assert!(h.events().is_empty());
    // Planning refuses it too, whether the batch is small or large enough to be planned (and
    // its ids checked) on several threads.
    for size in [2, 5_000] {
        let mut calls: Vec<ToolCall> = (0..size)
            .map(|i| call(&format!("c{i}"), "Read", json!({})))
            .collect();
        calls.push(call(&format!("c{}", size / 2), "Par", json!({})));
        let twice = format!("c{}", size / 2);
        let batch = Batch::new(calls);
        assert_eq!(
            h.engine.plan(&batch, &[]),
            Err(BatchError::DuplicateCallId(twice)),
            "{size} calls"
        );
    }
}

fn assert_no_user_interrupt(h: &Harness) {
    for event in h.events() {
        if let EventKind::ToolCallError(error) = &event.kind {
            assert_ne!(error.cancel_reason, Some(CancelReason::UserInterrupt));
            assert!(
                !error.message.contains("user_interrupt"),
                "{}",
                error.message
            );
        }
    }
}

/// A batch large enough to be planned on several threads is planned call for call like the
/// same calls planned one at a time, in batch order, with groups in order.
#[tokio::test]
async fn a_large_batch_is_planned_in_order_like_its_calls_alone() {
    let h = Harness::new(&[]);
    let kinds = [
        ("Read", json!({})),
        ("Edit", json!({})),
        ("Nope", json!({})),
        ("read", json!({"sleep_ms": 5})),
        ("Bash", json!({"command": "ls"})),
    ];
    let calls: Vec<ToolCall> = (0..5_000)
        .map(|i| {
            let (tool, input) = &kinds[i % kinds.len()];
            call(&format!("c{i:05}"), tool, input.clone())
        })
        .collect();
    let batch = Batch::new(calls.clone());
    let plan = h.engine.plan(&batch, &[]).unwrap();
    assert_eq!(plan.calls.len(), calls.len());
    let mut last_group = 0;
    for (planned, call) in plan.calls.iter().zip(&calls) {
        assert_eq!(planned.id, call.id);
        assert!(planned.group >= last_group, "groups in batch order");
        last_group = planned.group;
        let one = Batch::new(vec![call.clone()]);
        let alone = h.engine.plan(&one, &[]).unwrap().calls.remove(0);
        assert_eq!(
            (
                &planned.decision,
                &planned.reasons,
                &planned.timeout_ms,
                &planned.error,
                &planned.canonical_tool
            ),
            (
                &alone.decision,
                &alone.reasons,
                &alone.timeout_ms,
                &alone.error,
                &alone.canonical_tool
            ),
            "{}",
            call.id
        );
    }
    let grouped: Vec<&CallId> = plan.groups.iter().flatten().copied().collect();
    let ids: Vec<_> = calls.iter().map(|c| c.id.clone()).collect();
    assert_eq!(grouped, ids);
}
