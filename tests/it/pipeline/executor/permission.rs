//! The permission stage through the engine (SPEC §6 step 5, §5.4): allow, deny, ask with and
//! without an approver, the approval timeout with each expiry outcome, cancellation while
//! waiting, and what is approved being byte-for-byte what runs. Paused time throughout.

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::executor::*;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::time::Instant;
use toolgate::Decision;
use toolgate::Turn;
use toolgate::{ApprovalAnswer, ApprovalBroker, ApprovalRequest, FixedAnswer};
use toolgate::{CallStatus, CancelReason, Event, EventKind, FailureStage};

fn with_approver(approver: Arc<dyn ApprovalBroker>) -> Turn {
    Turn {
        approver: Some(approver),
        ..Turn::default()
    }
}

fn answer(answer: ApprovalAnswer) -> Turn {
    with_approver(Arc::new(FixedAnswer(answer)))
}

/// An approver that records every request and answers by attempt: `None` never answers.
fn recording(
    answers: Vec<Option<ApprovalAnswer>>,
) -> (Arc<dyn ApprovalBroker>, Arc<Mutex<Vec<ApprovalRequest>>>) {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&requests);
    let broker = move |request: ApprovalRequest| -> BoxFuture<'static, ApprovalAnswer> {
        let attempt = request.attempt as usize;
        seen.lock().unwrap().push(request);
        match answers.get(attempt - 1).cloned().flatten() {
            Some(answer) => Box::pin(async move { answer }),
            None => Box::pin(std::future::pending()),
        }
    };
    (Arc::new(broker), requests)
}

fn kinds_of<'a>(events: &'a [Event], id: &str) -> Vec<&'a EventKind> {
    events
        .iter()
        .filter(|e| e.call_id.as_ref().is_some_and(|c| c.as_str() == id))
        .map(|e| &e.kind)
        .collect()
}

fn denied_event(events: &[Event], id: &str) -> (String, Vec<String>) {
    kinds_of(events, id)
        .into_iter()
        .find_map(|k| match k {
            EventKind::PermissionDenied(d) => Some((d.reason.clone(), d.sources.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no PermissionDenied for `{id}`"))
}

#[tokio::test(start_paused = true)]
async fn allow_and_deny_by_default() {
    let h = Harness::new(&[]);
    let outcome = h
        .run(vec![
            call("r", "Read", json!({})),
            call("d", "Denied", json!({})),
        ])
        .await;
    let r = result(&outcome, "r");
    assert_eq!(r.status, CallStatus::Ok);
    assert_eq!(r.permission.as_ref().unwrap().decision, Decision::Allow);
    let d = result(&outcome, "d");
    assert_eq!(d.status, CallStatus::Denied);
    assert_eq!(
        d.model_content,
        "Permission to use Denied is denied by policy"
    );
    assert_eq!(d.error.as_ref().unwrap().stage, FailureStage::Permission);
    let events = h.events();
    let (reason, sources) = denied_event(&events, "d");
    assert_eq!(reason, d.model_content);
    assert_eq!(sources.len(), 1);
    // No approval was asked for either, and the denied call never started.
    assert_eq!(
        event_types(&events, "d"),
        ["ToolCallScheduled", "PermissionDenied", "ToolCallError"]
    );
    assert_eq!(
        event_types(&events, "r"),
        ["ToolCallScheduled", "ToolCallStarted", "ToolCallResult"]
    );
}

#[tokio::test(start_paused = true)]
async fn ask_goes_to_the_approver() {
    let h = Harness::new(&[]);
    let outcome = h
        .run_in(
            vec![call("a", "Ask", json!({}))],
            &answer(ApprovalAnswer::Allow { reason: None }),
        )
        .await;
    assert_eq!(status(&outcome, "a"), CallStatus::Ok);
    assert_eq!(
        result(&outcome, "a").permission.as_ref().unwrap().decision,
        Decision::Allow
    );
    let events = h.events();
    assert_eq!(
        event_types(&events, "a"),
        [
            "ToolCallScheduled",
            "PermissionRequested",
            "PermissionResolved",
            "ToolCallStarted",
            "ToolCallResult"
        ]
    );
    let resolved = kinds_of(&events, "a")
        .into_iter()
        .find_map(|k| match k {
            EventKind::PermissionResolved(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(resolved.decision, "allow");
    assert_eq!(resolved.source, "approver");

    // A plain no, a no with a reason, and a no with feedback for the model.
    let cases = [
        (
            ApprovalAnswer::Deny { reason: None },
            "Permission to use Ask was not granted",
        ),
        (
            ApprovalAnswer::Deny {
                reason: Some("not on a Friday".into()),
            },
            // The model is told that a person said no, not only their bare words.
            "Permission to use Ask was denied by the person reviewing the request: not on a Friday",
        ),
        (
            ApprovalAnswer::DenyWithFeedback {
                feedback: "use the staging bucket instead".into(),
            },
            "use the staging bucket instead",
        ),
    ];
    for (reply, text) in cases {
        let h = Harness::new(&[]);
        let outcome = h
            .run_in(vec![call("a", "Ask", json!({}))], &answer(reply))
            .await;
        let a = result(&outcome, "a");
        assert_eq!(a.status, CallStatus::Denied);
        assert_eq!(a.model_content, text);
        assert_eq!(a.permission.as_ref().unwrap().decision, Decision::Deny);
        assert_eq!(denied_event(&h.events(), "a").1, ["approver"]);
        assert!(h.probe.seen.lock().unwrap().is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn ask_without_an_approver_is_denied() {
    let h = Harness::new(&[]);
    let outcome = h.run(vec![call("a", "Ask", json!({}))]).await;
    let a = result(&outcome, "a");
    assert_eq!(a.status, CallStatus::Denied);
    assert_eq!(a.model_content, "No permission client configured");
    let events = h.events();
    assert_eq!(denied_event(&events, "a").1, ["no_client"]);
    assert_eq!(
        event_types(&events, "a"),
        [
            "ToolCallScheduled",
            "PermissionRequested",
            "PermissionDenied",
            "ToolCallError"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_approval_expires_into_its_declared_outcome() {
    // expiry: deny
    let h = Harness::new(&["approval_deny.yaml"]);
    let (broker, requests) = recording(vec![None]);
    let started = Instant::now();
    let outcome = h
        .run_in(vec![call("a", "Ask", json!({}))], &with_approver(broker))
        .await;
    assert_eq!(started.elapsed(), Duration::from_secs(60));
    let a = result(&outcome, "a");
    assert_eq!(a.status, CallStatus::Denied);
    assert_eq!(
        a.model_content,
        "Permission request for Ask expired after 60000ms without an answer"
    );
    assert_eq!(a.metadata.permission_wait_ms, 60_000);
    assert_eq!(requests.lock().unwrap().len(), 1);
    assert_eq!(denied_event(&h.events(), "a").1, ["expiry"]);

    // expiry: allow — the call runs after the wait, with its full timeout.
    let h = Harness::new(&["approval_allow.yaml"]);
    let (broker, _) = recording(vec![None]);
    let started = Instant::now();
    let outcome = h
        .run_in(
            vec![call("a", "Ask", json!({"sleep_ms": 4000}))],
            &with_approver(broker),
        )
        .await;
    assert_eq!(started.elapsed(), Duration::from_secs(64));
    assert_eq!(status(&outcome, "a"), CallStatus::Ok);
    let resolved: Vec<(String, String)> = h
        .events()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::PermissionResolved(r) => Some((r.decision, r.source)),
            _ => None,
        })
        .collect();
    assert_eq!(resolved, [("allow".to_owned(), "expiry".to_owned())]);

    // expiry: ask_again — asked a second time, then denied.
    let h = Harness::new(&["approval_ask_again.yaml"]);
    let (broker, requests) = recording(vec![None, None]);
    let started = Instant::now();
    let outcome = h
        .run_in(vec![call("a", "Ask", json!({}))], &with_approver(broker))
        .await;
    assert_eq!(started.elapsed(), Duration::from_secs(120));
    assert_eq!(status(&outcome, "a"), CallStatus::Denied);
    let attempts: Vec<u32> = requests.lock().unwrap().iter().map(|r| r.attempt).collect();
    assert_eq!(attempts, [1, 2]);

    // ask_again answered the second time.
    let h = Harness::new(&["approval_ask_again.yaml"]);
    let (broker, requests) = recording(vec![None, Some(ApprovalAnswer::Allow { reason: None })]);
    let outcome = h
        .run_in(vec![call("a", "Ask", json!({}))], &with_approver(broker))
        .await;
    assert_eq!(status(&outcome, "a"), CallStatus::Ok);
    assert_eq!(requests.lock().unwrap().len(), 2);
    assert_eq!(result(&outcome, "a").metadata.permission_wait_ms, 60_000);
}

#[tokio::test(start_paused = true)]
async fn without_an_approval_timeout_the_wait_lasts_until_the_turn_is_cancelled() {
    let h = Harness::new(&[]);
    let (broker, _) = recording(vec![None]);
    let turn = with_approver(broker);
    let cancel = turn.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        cancel.cancel();
    });
    let outcome = h.run_in(vec![call("a", "Ask", json!({}))], &turn).await;
    let a = result(&outcome, "a");
    assert_eq!(a.status, CallStatus::Cancelled);
    assert_eq!(
        cancel_reason(&outcome, "a"),
        Some(CancelReason::UserInterrupt)
    );
    assert_eq!(a.error.as_ref().unwrap().stage, FailureStage::Permission);
    assert!(h.probe.seen.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn what_is_approved_is_byte_for_byte_what_runs() {
    let h = Harness::new(&[]);
    let (broker, requests) = recording(vec![Some(ApprovalAnswer::Allow { reason: None })]);
    // Given as a JSON string (normalised by the pipeline), with non-ASCII text, escapes, a
    // whole float and key order the handler must see unchanged.
    let text = r#"{"output":"zeile\n\t\"zwei\" 日本 🙂","path":"dir/ü.txt","sleep_ms":1.0,"json":{"z":1,"a":[true,null,-0.5]}}"#;
    let outcome = h
        .run_in(
            vec![call("a", "Ask", Value::String(text.to_owned()))],
            &with_approver(broker),
        )
        .await;
    assert_eq!(status(&outcome, "a"), CallStatus::Ok);
    let approved = requests.lock().unwrap()[0].input.clone();
    let ran = h.probe.inputs()["a"].clone();
    let shown = h
        .events()
        .into_iter()
        .find_map(|e| match e.kind {
            EventKind::PermissionRequested(r) => Some(r.input),
            _ => None,
        })
        .unwrap();
    let bytes = |v: &Value| serde_json::to_string(v).unwrap();
    assert_eq!(bytes(&approved), bytes(&ran));
    assert_eq!(bytes(&shown), bytes(&ran));
    // And it is the model's input, parsed, nothing added or reordered.
    assert_eq!(
        bytes(&ran),
        bytes(&serde_json::from_str::<Value>(text).unwrap())
    );
    assert_eq!(
        result(&outcome, "a").model_content,
        r#"{"z":1,"a":[true,null,-0.5]}"#
    );
}

#[tokio::test(start_paused = true)]
async fn the_approver_sees_the_call_and_its_modes() {
    let h = Harness::new(&[]);
    let (broker, requests) = recording(vec![Some(ApprovalAnswer::Allow { reason: None })]);
    let mut turn = turn_in(&["offpeak"]);
    turn.approver = Some(broker);
    h.run_in(vec![call("a", "Ask", json!({"path": "x"}))], &turn)
        .await;
    let request = requests.lock().unwrap()[0].clone();
    assert_eq!(request.call_id.as_str(), "a");
    assert_eq!(request.tool.as_str(), "Ask");
    assert_eq!(request.attempt, 1);
    assert_eq!(
        request.modes.iter().map(|m| m.as_str()).collect::<Vec<_>>(),
        ["offpeak"]
    );
    assert!(
        !request.reasons.is_empty(),
        "the approver is told why it is asked"
    );
}
