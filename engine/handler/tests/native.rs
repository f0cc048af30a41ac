//! Native handlers as an embedding program registers them: isolation from panics, and
//! passing through a gate mid-call.

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use crate::GateName;
use crate::handler::NativeRegistry;
use crate::handler::native::call_native;
use crate::timeout::{Deadline, Gates};
use crate::{CallContext, HandlerError, HandlerOutput};
use serde_json::{Value, json};

#[tokio::test]
async fn a_panic_inside_a_native_handler_becomes_panicked() {
    let mut registry = NativeRegistry::new();
    registry
        .register("Boom", |input: Value, _ctx: CallContext| async move {
            let index = input["index"].as_u64().unwrap_or(0) as usize;
            let items = [1, 2, 3];
            Ok(HandlerOutput::text(items[index].to_string()))
        })
        .unwrap();
    let handler = registry.get("Boom").unwrap();
    let ok = call_native(
        handler.clone(),
        json!({"index": 1}),
        CallContext::new("a", "Boom"),
    )
    .await
    .unwrap();
    assert_eq!(ok.as_text(), Some("2"));
    let err = call_native(handler, json!({"index": 7}), CallContext::new("b", "Boom"))
        .await
        .unwrap_err();
    match err {
        HandlerError::Panicked(message) => {
            assert!(message.contains("index out of bounds"), "{message}");
        }
        other => panic!("expected Panicked, got {other:?}"),
    }
}

#[tokio::test]
async fn a_business_failure_keeps_its_code() {
    let handler = Arc::new(|_input: Value, _ctx: CallContext| async move {
        Err::<HandlerOutput, _>(HandlerError::business_with_code("quota used up", "quota"))
    });
    let err = call_native(handler, json!({}), CallContext::new("a", "Q"))
        .await
        .unwrap_err();
    assert!(err.is_business());
    assert_eq!(err.to_string(), "quota used up");
}

/// A handler that waits at gate `api` mid-call, then works for 4 s.
fn gated_worker() -> Arc<dyn crate::NativeHandler> {
    Arc::new(|_input: Value, ctx: CallContext| async move {
        let permit = ctx.gate("api").await?;
        ctx.progress
            .message(format!("queued {} ms", permit.queued().as_millis()));
        tokio::time::sleep(Duration::from_secs(4)).await;
        Ok(HandlerOutput::text("done"))
    })
}

#[tokio::test(start_paused = true)]
async fn time_queued_at_a_gate_mid_call_does_not_time_the_call_out() {
    let gates = Arc::new(Gates::new([(GateName::from("api"), 1)]).unwrap());
    // Another call holds the only permit for 10 s.
    let holder = gates
        .acquire(&"api".into(), &Deadline::unlimited(), &Default::default())
        .await
        .unwrap();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(10)).await;
        drop(holder);
    });

    let mut ctx = CallContext::new("c1", "Search");
    ctx.gates = gates;
    ctx.deadline = Deadline::new(Some(Duration::from_secs(5)));
    let deadline = ctx.deadline.clone();
    // The pipeline's timeout stage: the handler races the deadline.
    let outcome = tokio::select! {
        result = call_native(gated_worker(), json!({}), ctx) => result.map(|o| o.as_text().map(str::to_owned)),
        () = deadline.expired() => Err(HandlerError::other("timed out")),
    };
    assert_eq!(outcome.unwrap().as_deref(), Some("done"));
    assert_eq!(deadline.paused_total(), Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn without_a_gate_wait_the_same_budget_still_expires() {
    let gates = Arc::new(Gates::new([(GateName::from("api"), 1)]).unwrap());
    let mut ctx = CallContext::new("c1", "Search");
    ctx.gates = gates;
    ctx.deadline = Deadline::new(Some(Duration::from_secs(3)));
    let deadline = ctx.deadline.clone();
    let cancel = ctx.cancel.clone();
    let timed_out = tokio::select! {
        _ = call_native(gated_worker(), json!({}), ctx) => false,
        () = deadline.expired() => { cancel.cancel(); true }
    };
    assert!(timed_out);
    assert_eq!(deadline.paused_total(), Duration::ZERO);
}
