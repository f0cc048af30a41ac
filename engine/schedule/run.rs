//! Running the groups of a batch (SPEC §4): one group after another, the calls of a group
//! concurrently. What a failure does to its siblings comes from data (`on_failure` of the
//! failed call's contract, else the engine's): `continue`, `cancel_group` or `cancel_batch`.
//! A result whose turn control says `stop_turn` cancels every later group (reason
//! `turn_stopped`); `cancel_rest_of_batch` does the same with reason `policy`. Cancelled
//! calls still go through the pipeline's finish stage, so each gets its one terminal event.
//!
//! A failure here is a call that ran and ended with status `error` or `timed_out`; a call
//! that never ran (unknown tool, invalid input) and denials and cancellations do not cancel
//! siblings.

use std::future::Future;
use std::ops::Range;
use std::task::Poll;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::events::{CallStatus, CancelReason, FailureStage};
use crate::model::contract::{OnFailure, TurnAction};
use crate::pipeline::{CallEnv, CallResult, CancelCause, ToolCall, run_call};

/// The results of the groups.
pub struct RunOutcome {
    /// One per call, in batch order.
    pub results: Vec<CallResult>,
    /// Whether a result stopped the turn.
    pub turn_stopped: bool,
}

/// Runs the groups in order.
pub async fn run_groups(
    env: &CallEnv<'_>,
    calls: Vec<ToolCall>,
    ranges: &[Range<usize>],
    batch_cancel: &CancellationToken,
) -> RunOutcome {
    let mut slots: Vec<Option<Box<CallResult>>> = Vec::with_capacity(calls.len());
    slots.resize_with(calls.len(), || None);
    let mut pending: Vec<Option<ToolCall>> = calls.into_iter().map(Some).collect();
    let mut later_groups: Option<CancelReason> = None;
    let mut turn_stopped = false;
    for range in ranges {
        let group_cancel = batch_cancel.child_token();
        let group_cause = CancelCause::default();
        if let Some(reason) = later_groups {
            // Not started: each call still gets its synthetic cancelled result.
            group_cause.set(reason, None);
            group_cancel.cancel();
        }
        let mut running = FuturesUnordered::new();
        let mut settle = |index: usize, result: Box<CallResult>| {
            if is_failure(&result) {
                match on_failure(env, &result) {
                    OnFailure::Continue => {}
                    OnFailure::CancelGroup => {
                        group_cause.set(CancelReason::SiblingFailed, Some(result.call_id.clone()));
                        group_cancel.cancel();
                    }
                    OnFailure::CancelBatch => {
                        env.batch_cause
                            .set(CancelReason::SiblingFailed, Some(result.call_id.clone()));
                        batch_cancel.cancel();
                    }
                }
            }
            match result.turn.as_ref().map(|t| t.action) {
                Some(TurnAction::StopTurn) => {
                    turn_stopped = true;
                    later_groups.get_or_insert(CancelReason::TurnStopped);
                }
                Some(TurnAction::CancelRestOfBatch) => {
                    later_groups.get_or_insert(CancelReason::Policy);
                }
                Some(TurnAction::InjectFeedback) | None => {}
            }
            if let Some(slot) = slots.get_mut(index) {
                *slot = Some(result);
            }
        };
        for index in range.clone() {
            let Some(call) = pending.get_mut(index).and_then(Option::take) else {
                continue;
            };
            // Calls are only ever cancelled through their group, batch or turn, so a call
            // borrows its group's token (the handler gets a child of its own, which a
            // timeout cancels).
            let token = &group_cancel;
            let cause = &group_cause;
            // Boxed once here rather than moved by value into the set's task.
            let mut call =
                Box::pin(async move { (index, run_call(env, call, token, cause).await) });
            // Each call is polled once as it starts, in batch order, as the set would poll
            // it: a call that ends in that poll (refused, invalid, or an inline native
            // handler) is settled before the next starts and never enters the set.
            match std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await {
                Poll::Ready((index, result)) => settle(index, result),
                Poll::Pending => running.push(call),
            }
        }
        while let Some((index, result)) = running.next().await {
            settle(index, result);
        }
    }
    RunOutcome {
        results: slots.into_iter().flatten().map(|result| *result).collect(),
        turn_stopped,
    }
}

/// Whether a result is a failure for `on_failure`: the call ran (handler or output stage) and
/// ended `error` or `timed_out`. A call that never ran — an unknown tool, an invalid input, a
/// denial — is the model's or the policy's business and does not cancel its siblings.
fn is_failure(result: &CallResult) -> bool {
    matches!(result.status, CallStatus::Error | CallStatus::TimedOut)
        && result
            .error
            .as_ref()
            .is_some_and(|e| matches!(e.stage, FailureStage::Handler | FailureStage::Output))
}

/// The `on_failure` of a failed call: its contract's (modes applied), else the engine's.
fn on_failure(env: &CallEnv<'_>, result: &CallResult) -> OnFailure {
    let snapshot = &env.prepared.snapshot;
    result
        .canonical_tool
        .as_ref()
        .and_then(|name| snapshot.tools.get(name))
        .map_or(snapshot.engine.on_failure, |tool| {
            tool.resolved_for(env.modes, &snapshot.engine).on_failure
        })
}
