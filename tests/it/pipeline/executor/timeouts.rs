//! Timeouts, the clock and gates through the engine (SPEC §5): resolution order, cap, grace,
//! bad override values, the clock starting after permission, time queued at gates (before
//! the handler and mid-call) not counting, the reported metrics, and handlers that ignore
//! cancellation. All on tokio's paused clock.

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::support::executor::*;
use futures::future::BoxFuture;
use serde_json::json;
use tokio::time::Instant;
use toolgate::ErrorCode;
use toolgate::Turn;
use toolgate::{ApprovalAnswer, ApprovalBroker, ApprovalRequest};
use toolgate::{CallStatus, CancelReason, EventKind, FailureStage};

#[tokio::test(start_paused = true)]
async fn timeout_resolution_order_cap_and_grace() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            // The override field; the 1 s cleanup grace is the engine's own, never added to
            // the time the model is told about.
            call("override", "Timed", json!({"timeout_ms": 12_000})),
            // An override above `max` (20 s) is capped.
            call("capped", "Timed", json!({"timeout_ms": 90_000})),
            // No override: the contract default.
            call("contract", "Timed", json!({})),
            // No timeout section: the engine default.
            call("engine", "Par", json!({})),
            // `timeout: none`.
            call("none", "Untimed", json!({})),
            // A contract without `override_field` ignores the field.
            call("ignored", "Par", json!({"timeout_ms": 5})),
        ])
        .await;
    let events = h.events();
    let expected = [
        ("override", Some(12_000)),
        ("capped", Some(20_000)),
        ("contract", Some(5_000)),
        ("engine", Some(30_000)),
        ("none", None),
        ("ignored", Some(30_000)),
    ];
    for (id, ms) in expected {
        assert_eq!(status(&outcome, id), CallStatus::Ok, "{id}");
        assert_eq!(started_timeout(&events, id), ms, "{id}");
        assert_eq!(result(&outcome, id).metadata.timeout_ms, ms, "{id}");
    }

    // With the engine default set to `none`, calls without their own timeout have none.
    let h = Harness::new(&["no_default_timeout.yaml"]);
    h.run(vec![
        call("engine", "Par", json!({})),
        call("contract", "Timed", json!({})),
    ])
    .await;
    assert_eq!(started_timeout(&h.events(), "engine"), None);
    assert_eq!(started_timeout(&h.events(), "contract"), Some(5_000));
}

#[tokio::test(start_paused = true)]
async fn bad_override_values_are_input_validation_errors() {
    let h = Harness::new(&[]);
    let bad = [
        ("negative", json!(-5)),
        ("text", json!("soon")),
        ("fraction", json!(1.5)),
        ("huge", json!(1e20)),
        ("boolean", json!(true)),
        ("zero", json!(0)),
    ];
    let calls = bad
        .iter()
        .map(|(id, value)| call(id, "Timed", json!({ "timeout_ms": value })))
        .collect();
    let outcome = h.run(calls).await;
    for (id, _) in bad {
        let r = result(&outcome, id);
        assert_eq!(r.status, CallStatus::Error, "{id}");
        let error = r.error.as_ref().unwrap();
        assert_eq!(error.code, ErrorCode::InputValidation, "{id}");
        assert_eq!(error.stage, FailureStage::Validate, "{id}");
        assert!(
            r.model_content
                .starts_with("<tool_use_error>InputValidationError: ")
                && r.model_content.ends_with("</tool_use_error>")
                && r.model_content.contains("/timeout_ms"),
            "{id}: {}",
            r.model_content
        );
    }
    assert!(
        h.probe.seen.lock().unwrap().is_empty(),
        "no handler ran for a bad override"
    );
}

#[tokio::test(start_paused = true)]
async fn a_timeout_ends_the_call_with_the_template_message() {
    let h = Harness::new(&[]);
    let started = Instant::now();
    let outcome = h
        .run(vec![call("t", "Timed", json!({"sleep_ms": 3_600_000}))])
        .await;
    // The 5 s default is the deadline (the grace only follows it, for a handler that does
    // not stop at once); the handler honours cancellation, so nothing more.
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    let t = result(&outcome, "t");
    assert_eq!(t.status, CallStatus::TimedOut);
    assert_eq!(t.model_content, "Tool execution timed out after 5000ms");
    assert_eq!(cancel_reason(&outcome, "t"), Some(CancelReason::Timeout));
    assert_eq!(t.metadata.total_ms, 5_000);

    // The override sets the clock, too.
    let h = Harness::new(&[]);
    let started = Instant::now();
    let outcome = h
        .run(vec![call(
            "t",
            "Timed",
            json!({"sleep_ms": 3_600_000, "timeout_ms": 2_000}),
        )])
        .await;
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    assert_eq!(
        result(&outcome, "t").model_content,
        "Tool execution timed out after 2000ms"
    );
    let error = h
        .events()
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::ToolCallError(error) => Some(error),
            _ => None,
        })
        .unwrap();
    assert_eq!(error.status, CallStatus::TimedOut);
    assert_eq!(error.cancel_reason, Some(CancelReason::Timeout));
    assert_eq!(error.code, "timeout");
}

#[tokio::test(start_paused = true)]
async fn total_ms_is_the_time_of_the_call() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![call("p", "Par", json!({"sleep_ms": 1234}))])
        .await;
    let meta = &result(&outcome, "p").metadata;
    assert_eq!(meta.total_ms, 1234);
    assert_eq!(meta.queued_ms, 0);
    assert_eq!(meta.permission_wait_ms, 0);
    let metrics = h
        .events()
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::ToolCallResult(r) => Some(r.metrics),
            _ => None,
        })
        .unwrap();
    assert_eq!(metrics.total_ms, 1234);
}

/// An approver that answers `allow` after `delay`.
fn slow_approver(delay: Duration) -> Arc<dyn ApprovalBroker> {
    Arc::new(
        move |_request: ApprovalRequest| -> BoxFuture<'static, ApprovalAnswer> {
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                ApprovalAnswer::Allow { reason: None }
            })
        },
    )
}

#[tokio::test(start_paused = true)]
async fn the_clock_starts_after_permission() {
    let h = Harness::new(&[]);
    let turn = Turn {
        approver: Some(slow_approver(Duration::from_secs(600))),
        ..Turn::default()
    };
    // Ask has a 5 s timeout; the approver takes 10 minutes; the handler works 4 s.
    let outcome = h
        .run_in(vec![call("a", "Ask", json!({"sleep_ms": 4000}))], &turn)
        .await;
    let a = result(&outcome, "a");
    assert_eq!(a.status, CallStatus::Ok, "{}", a.model_content);
    assert_eq!(a.metadata.permission_wait_ms, 600_000);
    assert_eq!(a.metadata.total_ms, 604_000);
    let events = h.events();
    let waited = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PermissionResolved(r) => Some(r.wait_ms),
            _ => None,
        })
        .unwrap();
    assert_eq!(waited, 600_000);
    let metrics = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCallResult(r) => Some(r.metrics),
            _ => None,
        })
        .unwrap();
    assert_eq!(metrics.permission_wait_ms, 600_000);

    // The same work without the wait still fits; 6 s of work does not.
    let h = Harness::new(&[]);
    let outcome = h
        .run_in(vec![call("a", "Ask", json!({"sleep_ms": 6000}))], &turn)
        .await;
    assert_eq!(status(&outcome, "a"), CallStatus::TimedOut);
    assert_eq!(
        result(&outcome, "a").model_content,
        "Tool execution timed out after 5000ms"
    );
}

#[tokio::test(start_paused = true)]
async fn time_queued_at_an_admission_gate_does_not_count() {
    let h = Harness::new(&[]);
    // Gate `api` has one permit; each call works 4 s under a 5 s timeout. The second waits
    // 4 s in the queue, then works 4 s: 8 s in all, but only 4 s of running time.
    let started = Instant::now();
    let outcome = h
        .run(vec![
            call("g1", "Gated", json!({"sleep_ms": 4000})),
            call("g2", "Gated", json!({"sleep_ms": 4000})),
            call("g3", "Gated", json!({"sleep_ms": 4000})),
        ])
        .await;
    assert_eq!(groups(&outcome), [vec!["g1", "g2", "g3"]]);
    assert_eq!(started.elapsed(), Duration::from_secs(12));
    assert_eq!(h.probe.peak.load(Ordering::SeqCst), 1, "one permit");
    let mut queued: Vec<u64> = ["g1", "g2", "g3"]
        .iter()
        .map(|id| {
            let r = result(&outcome, id);
            assert_eq!(r.status, CallStatus::Ok, "{id}: {}", r.model_content);
            assert_eq!(r.metadata.total_ms, r.metadata.queued_ms + 4000, "{id}");
            r.metadata.queued_ms
        })
        .collect();
    queued.sort_unstable();
    assert_eq!(queued, [0, 4000, 8000]);
}

#[tokio::test(start_paused = true)]
async fn a_native_handler_passing_a_gate_mid_call_has_its_deadline_paused() {
    let h = Harness::new(&[]);
    // Timed: 6 s with grace. Each call takes the `api` gate mid-call (`ctx.gate`) and works
    // 4 s while holding it; the second queues 4 s behind the first and still fits.
    let gated = json!({"gate": "api", "sleep_ms": 4000});
    let started = Instant::now();
    let outcome = h
        .run(vec![
            call("m1", "Timed", gated.clone()),
            call("m2", "Timed", gated.clone()),
            // An admission-gated call competes for the same permit.
            call("g", "Gated", json!({"sleep_ms": 4000})),
        ])
        .await;
    assert_eq!(started.elapsed(), Duration::from_secs(12));
    let mut queued = Vec::new();
    for id in ["m1", "m2", "g"] {
        let r = result(&outcome, id);
        assert_eq!(r.status, CallStatus::Ok, "{id}: {}", r.model_content);
        queued.push(r.metadata.queued_ms);
    }
    queued.sort_unstable();
    assert_eq!(queued, [0, 4000, 8000]);

    // Control: the same wait in the handler without a gate is running time, and times out.
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![call("slow", "Timed", json!({"sleep_ms": 8000}))])
        .await;
    assert_eq!(status(&outcome, "slow"), CallStatus::TimedOut);
}

#[tokio::test(start_paused = true)]
async fn a_call_cancelled_while_queued_at_a_gate_is_cancelled() {
    let h = Harness::new(&[]);
    let turn = Turn::default();
    let cancel = turn.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        cancel.cancel();
    });
    let outcome = h
        .run_in(
            vec![
                call("g1", "Gated", json!({"sleep_ms": 4000})),
                call("g2", "Gated", json!({"sleep_ms": 4000})),
            ],
            &turn,
        )
        .await;
    for id in ["g1", "g2"] {
        assert_eq!(status(&outcome, id), CallStatus::Cancelled, "{id}");
        assert_eq!(
            cancel_reason(&outcome, id),
            Some(CancelReason::UserInterrupt)
        );
    }
    // Only one handler ever started: the other was still queued.
    assert_eq!(h.probe.seen.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_handler_ignoring_cancellation_is_abandoned_after_kill_grace() {
    let h = Harness::new(&[]);
    let started = Instant::now();
    let outcome = h
        .run(vec![call(
            "stuck",
            "Timed",
            json!({"sleep_ms": 3_600_000, "ignore_cancel": true}),
        )])
        .await;
    // The 5 s deadline, then the contract's 1 s cleanup grace (longer than
    // `engine.kill_grace`, 500 ms) before the handler is abandoned; the model is told 5 s.
    assert_eq!(started.elapsed(), Duration::from_millis(6000));
    assert_eq!(status(&outcome, "stuck"), CallStatus::TimedOut);
    assert_eq!(
        result(&outcome, "stuck").model_content,
        "Tool execution timed out after 5000ms"
    );
    // The abandoned handler's task is aborted, not left running.
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(h.probe.running.load(Ordering::SeqCst), 0);
    assert_eq!(h.probe.dropped.load(Ordering::SeqCst), 1);

    // The same on a user interrupt.
    let h = Harness::new(&[]);
    let turn = Turn::default();
    let cancel = turn.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let outcome = h
        .run_in(
            vec![call(
                "stuck",
                "Untimed",
                json!({"sleep_ms": 3_600_000, "ignore_cancel": true}),
            )],
            &turn,
        )
        .await;
    assert_eq!(started.elapsed(), Duration::from_millis(1500));
    assert_eq!(
        cancel_reason(&outcome, "stuck"),
        Some(CancelReason::UserInterrupt)
    );
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(h.probe.running.load(Ordering::SeqCst), 0);
}
