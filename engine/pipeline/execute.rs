//! Stage 7, execute: the admission gate (time queued there does not count), then the handler
//! under its deadline and cancellation token.
//!
//! On timeout or cancellation the handler's token is cancelled (a subprocess gets SIGTERM for
//! its whole process group) and the engine waits at most `engine.kill_grace` for the handler
//! to wind down; after that the handler is abandoned, which aborts its task and kills its
//! process group. The engine never waits longer on a handler that ignores cancellation,
//! except for the moment it takes the runtime to drop the aborted task: the call's result is
//! only reported once its processes have been sent SIGKILL.

use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::errors::{cancellation, message, project};
use super::{CallEnv, CallState, ErrorCode, Failure, rare};
use crate::events::{EventKind, FailureStage, ToolCallProgress};
use crate::handler::{
    CallContext, Dispatch, HandlerError, HandlerFuture, HandlerOutput, Isolated, ProgressChunk,
    ProgressSink, ProgressStream, build_native, poll_native,
};
use crate::model::CallId;
use crate::model::engine_config::MessageKey;
use crate::model::resolved::ResolvedContract;
use crate::snapshot::Tool;
use crate::timeout::{Deadline, GateError, ResolvedTimeout};

enum Ended {
    Ran(Result<HandlerOutput, HandlerError>),
    TimedOut,
    Cancelled,
}

/// Passes the gate and runs the handler.
pub async fn execute(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    contract: &ResolvedContract,
    input: Value,
    timeout: Option<&ResolvedTimeout>,
) -> Result<HandlerOutput, Failure> {
    let engine = &env.prepared.snapshot.engine;
    let deadline = Deadline::new(timeout.map(|t| t.total));
    let result = run(env, state, tool, contract, input, &deadline).await;
    state.metadata.queued_ms =
        u64::try_from(deadline.paused_total().as_millis()).unwrap_or(u64::MAX);
    match result {
        Ended::Ran(Ok(output)) => Ok(output),
        Ended::Ran(Err(HandlerError::Cancelled)) if state.cancel.is_cancelled() => {
            let (reason, _) = state.cancel_reason(env);
            Err(cancellation(
                env,
                state,
                Some(tool),
                FailureStage::Handler,
                reason,
            ))
        }
        Ended::Ran(Err(error)) => Err(handler_failure(env, tool, error)),
        Ended::TimedOut => {
            let ms = timeout.map_or(0, |t| t.total.as_millis()).to_string();
            Err(Failure::timed_out(message(
                engine,
                MessageKey::Timeout,
                &[("tool", tool.name.as_str()), ("ms", &ms)],
            )))
        }
        Ended::Cancelled => {
            let (reason, _) = state.cancel_reason(env);
            Err(cancellation(
                env,
                state,
                Some(tool),
                FailureStage::Handler,
                reason,
            ))
        }
    }
}

async fn run(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    contract: &ResolvedContract,
    input: Value,
    deadline: &Deadline,
) -> Ended {
    let _permit = match &contract.gate {
        None => None,
        Some(gate) => match rare(env.prepared.gates.acquire(gate, deadline, state.cancel)).await {
            Ok(permit) => Some(permit),
            Err(GateError::Cancelled { .. }) => return Ended::Cancelled,
            Err(error @ (GateError::Unknown(_) | GateError::Held(_))) => {
                return Ended::Ran(Err(HandlerError::other(error)));
            }
        },
    };
    let handler_cancel = state.cancel.child_token();
    let ctx = CallContext {
        call_id: state.call.id.clone(),
        tool: tool.name.clone(),
        cancel: handler_cancel.clone(),
        progress: progress_sink(env, &state.call.id),
        deadline: deadline.clone(),
        gates: Arc::clone(&env.prepared.gates),
        modes: Arc::clone(env.modes),
        admitted: contract.gate.clone(),
    };
    let task = match dispatch(env, tool, input, ctx) {
        Ok(Dispatched::Task(task)) => task,
        Ok(Dispatched::Native(mut future)) => {
            // Polled once here first: a handler that finishes in this poll needs no task, and
            // no deadline or cancellation could have been acted on before its result (a
            // result ready when the engine looks wins, as in `supervise`).
            match std::future::poll_fn(|cx| Poll::Ready(poll_native(&mut future, cx))).await {
                Poll::Ready(result) => return Ended::Ran(result),
                Poll::Pending => Isolated::spawn(future),
            }
        }
        Err(failure) => return Ended::Ran(Err(failure)),
    };
    let kill_grace = env.prepared.snapshot.engine.kill_grace.0;
    rare(supervise(
        task,
        deadline,
        state.cancel,
        &handler_cancel,
        kill_grace,
    ))
    .await
}

/// Awaits a running handler under its deadline and the call's cancellation; on timeout or
/// cancellation, cancels the handler's token and gives it at most `kill_grace` to wind down
/// before abandoning it.
async fn supervise(
    mut task: Isolated,
    deadline: &Deadline,
    cancel: &CancellationToken,
    handler_cancel: &CancellationToken,
    kill_grace: Duration,
) -> Ended {
    let ended = tokio::select! {
        biased;
        result = &mut task => Ended::Ran(result),
        () = deadline.expired() => Ended::TimedOut,
        () = cancel.cancelled() => Ended::Cancelled,
    };
    if matches!(ended, Ended::TimedOut | Ended::Cancelled) {
        handler_cancel.cancel();
        // Bounded clean-up, then the handler is abandoned: its task is aborted and dropped,
        // which kills its process group, before the call is reported as ended.
        if tokio::time::timeout(kill_grace, &mut task).await.is_err() {
            task.abandon(ABANDON_WAIT).await;
        }
    }
    ended
}

/// How long an abandoned handler's task may take to be dropped after it is aborted. An idle
/// task goes at once; only a handler that blocks its thread inside a poll takes longer, and
/// it is then left to the runtime rather than holding up the call.
const ABANDON_WAIT: Duration = Duration::from_millis(100);

/// A started handler: a subprocess or HTTP request on its own task, or a native handler's
/// future, not polled yet.
enum Dispatched {
    Task(Isolated),
    Native(HandlerFuture),
}

/// Starts the call's handler: a subprocess or HTTP request on its own task; a native
/// handler's future is built (and polled first by `run`).
fn dispatch(
    env: &CallEnv<'_>,
    tool: &Tool,
    input: Value,
    ctx: CallContext,
) -> Result<Dispatched, HandlerError> {
    let engine = &env.prepared.snapshot.engine;
    match env.prepared.dispatch.get(&tool.name).map(Arc::as_ref) {
        Some(Dispatch::Command(handler)) => {
            let handler = Arc::clone(handler);
            Ok(Dispatched::Task(Isolated::spawn(async move {
                handler.call(&input, &ctx).await
            })))
        }
        Some(Dispatch::Http(handler)) => {
            let handler = Arc::clone(handler);
            Ok(Dispatched::Task(Isolated::spawn(async move {
                handler.call(&input, &ctx).await
            })))
        }
        Some(Dispatch::Native(name)) => match env.natives.get_ref(name) {
            Some(handler) => build_native(handler, input, ctx).map(Dispatched::Native),
            None => Err(HandlerError::other(NoHandler(message(
                engine,
                MessageKey::NativeMissing,
                &[("tool", tool.name.as_str())],
            )))),
        },
        Some(Dispatch::Unavailable(why)) => Err(HandlerError::other(NoHandler(why.clone()))),
        None => Err(HandlerError::other(NoHandler(message(
            engine,
            MessageKey::NativeMissing,
            &[("tool", tool.name.as_str())],
        )))),
    }
}

/// No handler can run the call.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NoHandler(String);

fn progress_sink(env: &CallEnv<'_>, call: &CallId) -> ProgressSink {
    if !env.wants_events() {
        return ProgressSink::discard();
    }
    let sink = Arc::clone(env.sink);
    let batch = env.batch_id.clone();
    let call = call.clone();
    let generation = env.prepared.snapshot.generation;
    ProgressSink::new(move |chunk: ProgressChunk| {
        let stream = match chunk.stream {
            ProgressStream::Stdout => "stdout",
            ProgressStream::Stderr => "stderr",
            ProgressStream::Message => "message",
        };
        sink.emit(crate::events::Event::now(
            Some(batch.clone()),
            Some(call.clone()),
            generation,
            EventKind::ToolCallProgress(ToolCallProgress {
                stream: stream.to_owned(),
                text: chunk.text,
            }),
        ));
    })
}

/// The failure for a handler error: a business failure is wrapped for the model
/// (`<tool_use_error>…</tool_use_error>`), anything else is projected through its cause chain.
pub fn handler_failure(env: &CallEnv<'_>, tool: &Tool, error: HandlerError) -> Failure {
    let engine = &env.prepared.snapshot.engine;
    match error {
        HandlerError::Business {
            message: text,
            code,
        } => {
            let mut failure = Failure::error(
                FailureStage::Handler,
                ErrorCode::Business,
                message(
                    engine,
                    MessageKey::BusinessFailure,
                    &[("tool", tool.name.as_str()), ("message", &text)],
                ),
            );
            failure.detail_code = code;
            failure
        }
        HandlerError::Other(inner) if inner.is::<NoHandler>() => Failure::error(
            FailureStage::Handler,
            ErrorCode::NoHandler,
            project(engine, inner.as_ref()),
        ),
        other => Failure::error(
            FailureStage::Handler,
            ErrorCode::HandlerFailed,
            project(engine, &other),
        ),
    }
}
