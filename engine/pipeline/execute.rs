//! Stage 7, execute: the admission gate (time queued there does not count), then the handler
//! under its deadline and cancellation token.
//!
//! The deadline is the time the call asked for (its resolved budget, what the model is told).
//! On timeout or cancellation the handler's token is cancelled (a subprocess gets SIGTERM for
//! its whole process group) and the engine waits at most `engine.kill_grace` for the handler
//! to wind down (after a timeout, at least the contract's `cleanup_grace`); after that the handler is abandoned, which aborts its task and kills its
//! process group. The engine never waits longer on a handler that ignores cancellation,
//! except for the moment it takes the runtime to drop the aborted task: the call's result is
//! only reported once its processes have been sent SIGKILL.

use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::errors::{cancellation, message, project, project_marked};
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
    let deadline = Deadline::new(timeout.map(|t| t.budget));
    let grace = timeout.map_or(Duration::ZERO, |t| t.grace);
    // What the handler streamed, kept for the model should the call time out or be
    // cancelled.
    let partial = Arc::new(Mutex::new(Partial::default()));
    let (progress, emitter) = progress_sink(env, &state.call.id, Arc::clone(&partial));
    let partial = |when: &str| {
        std::mem::take(&mut *partial.lock().unwrap_or_else(PoisonError::into_inner)).shown(when)
    };
    let result = run(
        env, state, tool, contract, input, &deadline, grace, progress,
    )
    .await;
    // What coalescing held back goes out before the call's terminal event.
    if let Some(emitter) = emitter {
        emitter.flush_all();
    }
    state.metadata.queued_ms =
        u64::try_from(deadline.paused_total().as_millis()).unwrap_or(u64::MAX);
    match result {
        Ended::Ran(Ok(output)) => Ok(output),
        Ended::Ran(Err(HandlerError::Cancelled)) if state.cancel.is_cancelled() => {
            let (reason, _) = state.cancel_reason(env);
            let mut failure = cancellation(env, state, Some(tool), FailureStage::Handler, reason);
            failure.message.push_str(&partial("cancellation"));
            Err(failure)
        }
        // The output up to the limit is kept, as for a timeout: a log larger than the limit
        // still leaves the model its start.
        Ended::Ran(Err(error @ HandlerError::OutputTooLarge { .. })) => {
            let mut failure = handler_failure(env, tool.name_for_call(&state.call.tool), error);
            failure.message.push_str(&partial("limit was reached"));
            Err(failure)
        }
        Ended::Ran(Err(error)) => Err(handler_failure(
            env,
            tool.name_for_call(&state.call.tool),
            error,
        )),
        Ended::TimedOut => {
            let ms = timeout.map_or(0, |t| t.budget.as_millis()).to_string();
            let mut text = message(
                engine,
                MessageKey::Timeout,
                &[("tool", tool.name_for_call(&state.call.tool)), ("ms", &ms)],
            );
            // The output so far is kept (the produce stage budgets it like any output).
            text.push_str(&partial("timeout"));
            Err(Failure::timed_out(text))
        }
        Ended::Cancelled => {
            let (reason, _) = state.cancel_reason(env);
            let mut failure = cancellation(env, state, Some(tool), FailureStage::Handler, reason);
            failure.message.push_str(&partial("cancellation"));
            Err(failure)
        }
    }
}

// The call's parts travel separately (as in `execute`); a struct for them would be used once.
#[allow(clippy::too_many_arguments)]
async fn run(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    contract: &ResolvedContract,
    input: Value,
    deadline: &Deadline,
    grace: Duration,
    progress: ProgressSink,
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
        // A wildcard contract (`mcp__github__*`) covers many tools: its handler learns which
        // one from the name the call was made with.
        tool: crate::model::ToolName::new(tool.name_for_call(&state.call.tool)),
        cancel: handler_cancel.clone(),
        progress,
        deadline: deadline.clone(),
        cleanup_grace: grace,
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
        grace,
    ))
    .await
}

/// Awaits a running handler under its deadline and the call's cancellation; on timeout or
/// cancellation, cancels the handler's token and gives it at most `kill_grace` to wind down
/// (after a timeout, at least `cleanup_grace`) before abandoning it.
async fn supervise(
    mut task: Isolated,
    deadline: &Deadline,
    cancel: &CancellationToken,
    handler_cancel: &CancellationToken,
    kill_grace: Duration,
    cleanup_grace: Duration,
) -> Ended {
    let ended = tokio::select! {
        biased;
        result = &mut task => Ended::Ran(result),
        () = deadline.expired() => Ended::TimedOut,
        () = cancel.cancelled() => Ended::Cancelled,
    };
    if matches!(ended, Ended::TimedOut | Ended::Cancelled) {
        let kill_grace = if matches!(ended, Ended::TimedOut) {
            kill_grace.max(cleanup_grace)
        } else {
            kill_grace
        };
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
        Some(Dispatch::Mcp(handler)) => {
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
                &[("tool", ctx.tool.as_str())],
            )))),
        },
        Some(Dispatch::Unavailable(why)) => Err(HandlerError::other(NoHandler(why.clone()))),
        None => Err(HandlerError::other(NoHandler(message(
            engine,
            MessageKey::NativeMissing,
            &[("tool", ctx.tool.as_str())],
        )))),
    }
}

/// No handler can run the call.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NoHandler(String);

/// The output a call streamed so far (stdout and stderr as they arrived), up to the
/// engine's `max_handler_output`: what a timed-out call's result keeps.
#[derive(Debug, Default)]
struct Partial {
    text: String,
    /// Whether output was left out over the cap.
    cut: bool,
}

impl Partial {
    /// The output kept, to follow what the model is told of a call that ended `when` (its
    /// timeout, its cancellation); nothing when the handler streamed nothing.
    fn shown(&self, when: &str) -> String {
        if self.text.is_empty() {
            return String::new();
        }
        let mut shown = format!("\n--- output before the {when} ---\n{}", self.text);
        if self.cut {
            shown.push_str(&format!("\n[output cut at {} bytes]", self.text.len()));
        }
        shown
    }

    fn push(&mut self, text: &str, limit: usize) {
        let room = limit.saturating_sub(self.text.len());
        if text.len() <= room {
            self.text.push_str(text);
        } else {
            self.text.push_str(&text[..floor_boundary(text, room)]);
            self.cut = true;
        }
    }
}

/// Where a call's progress goes: `ToolCallProgress` events, coalesced to at most one per
/// stream per `engine.progress.interval` (output is joined; of status messages the latest
/// is sent) and capped at `engine.progress.max_bytes` per call
/// (the rest is counted in the next event's `dropped_bytes`, and in a last event at the end
/// of the call), plus the partial output kept for a timeout or a cancellation.
fn progress_sink(
    env: &CallEnv<'_>,
    call: &CallId,
    partial: Arc<Mutex<Partial>>,
) -> (ProgressSink, Option<Arc<ProgressEmitter>>) {
    let events = env.wants_events();
    let engine = &env.prepared.snapshot.engine;
    let limit = usize::try_from(engine.max_handler_output).unwrap_or(usize::MAX);
    let emitter = events.then(|| {
        Arc::new(ProgressEmitter {
            sink: Arc::clone(env.sink),
            batch: env.batch_id.clone(),
            call: call.clone(),
            generation: env.prepared.snapshot.generation,
            interval: engine.progress_interval,
            max_bytes: engine.progress_max_bytes,
            state: Mutex::new(Coalesced::default()),
        })
    });
    let sink = ProgressSink::new({
        let emitter = emitter.clone();
        move |chunk: ProgressChunk| {
            if chunk.stream != ProgressStream::Message {
                partial
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(&chunk.text, limit);
            }
            if let Some(emitter) = &emitter {
                emitter.chunk(chunk);
            }
        }
    });
    (sink, emitter)
}

/// The largest character boundary of `text` at or below `index`.
fn floor_boundary(text: &str, index: usize) -> usize {
    let mut at = index.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Coalesces a call's progress into `ToolCallProgress` events.
struct ProgressEmitter {
    sink: Arc<dyn crate::events::EventSink>,
    batch: crate::model::BatchId,
    call: CallId,
    generation: u64,
    interval: Duration,
    max_bytes: u64,
    state: Mutex<Coalesced>,
}

#[derive(Default)]
struct Coalesced {
    /// Text waiting per stream (stdout, stderr, message), in arrival order of streams.
    pending: Vec<(ProgressStream, String)>,
    /// When the last events went out.
    last: Option<tokio::time::Instant>,
    /// Bytes sent in events so far.
    sent: u64,
    /// Bytes left out over the cap and not reported yet.
    dropped: u64,
    /// Whether a flush at the end of the interval is scheduled.
    scheduled: bool,
}

impl ProgressEmitter {
    fn chunk(self: &Arc<Self>, chunk: ProgressChunk) {
        let now = tokio::time::Instant::now();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let queued: u64 = state.pending.iter().map(|(_, t)| t.len() as u64).sum();
        let room = self.max_bytes.saturating_sub(state.sent + queued);
        let text = chunk.text;
        let kept = if (text.len() as u64) <= room {
            text.as_str()
        } else {
            let cut = floor_boundary(&text, usize::try_from(room).unwrap_or(usize::MAX));
            &text[..cut]
        };
        state.dropped += (text.len() - kept.len()) as u64;
        if !kept.is_empty() {
            match state.pending.iter_mut().find(|(s, _)| *s == chunk.stream) {
                // A status message says where the call is now: a newer one replaces the one
                // still waiting (joined, `step 1` and `step 2` would read `step 1step 2`).
                Some((ProgressStream::Message, pending)) => kept.clone_into(pending),
                Some((_, pending)) => pending.push_str(kept),
                None => state.pending.push((chunk.stream, kept.to_owned())),
            }
        }
        let due = state
            .last
            .is_none_or(|last| now.duration_since(last) >= self.interval);
        if due {
            state.last = Some(now);
            self.flush(&mut state);
        } else if !state.scheduled && !state.pending.is_empty() {
            // What waits goes out at the end of the interval even if nothing else arrives.
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                self.flush(&mut state);
                return;
            };
            state.scheduled = true;
            let at = state.last.map_or(now, |last| last + self.interval);
            let emitter = Arc::clone(self);
            runtime.spawn(async move {
                tokio::time::sleep_until(at).await;
                let mut state = emitter.state.lock().unwrap_or_else(PoisonError::into_inner);
                state.scheduled = false;
                state.last = Some(tokio::time::Instant::now());
                emitter.flush(&mut state);
            });
        }
    }

    fn flush_all(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.flush(&mut state);
    }

    /// Sends what is pending, one event per stream; the count of dropped bytes goes with the
    /// last one (or alone, when nothing is pending).
    fn flush(&self, state: &mut Coalesced) {
        let pending = std::mem::take(&mut state.pending);
        let count = pending.len();
        if count == 0 && state.dropped == 0 {
            return;
        }
        let dropped = std::mem::take(&mut state.dropped);
        let mut events: Vec<(ProgressStream, String)> = pending;
        if events.is_empty() {
            events.push((ProgressStream::Message, String::new()));
        }
        let last = events.len() - 1;
        for (index, (stream, text)) in events.into_iter().enumerate() {
            state.sent += text.len() as u64;
            let stream = match stream {
                ProgressStream::Stdout => "stdout",
                ProgressStream::Stderr => "stderr",
                ProgressStream::Message => "message",
            };
            self.sink.emit(crate::events::Event::now(
                Some(self.batch.clone()),
                Some(self.call.clone()),
                self.generation,
                EventKind::ToolCallProgress(ToolCallProgress {
                    stream: stream.to_owned(),
                    text,
                    dropped_bytes: if index == last { dropped } else { 0 },
                }),
            ));
        }
    }
}

/// The failure for a handler error: a business failure is wrapped for the model
/// (`<tool_use_error>…</tool_use_error>`), anything else is projected through its cause chain.
/// `name` is the tool the call ran ([`Tool::name_for_call`]).
pub fn handler_failure(env: &CallEnv<'_>, name: &str, error: HandlerError) -> Failure {
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
                    &[("tool", name), ("message", &text)],
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
        other => {
            let (text, cut) = project_marked(engine, &other);
            let mut failure = Failure::error(FailureStage::Handler, ErrorCode::HandlerFailed, text);
            failure.truncated = cut;
            failure
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;

    fn emitter(max_bytes: u64) -> (Arc<ProgressEmitter>, Arc<Mutex<Vec<ToolCallProgress>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&seen);
        let sink: Arc<dyn crate::events::EventSink> = Arc::new(move |event: Event| {
            if let EventKind::ToolCallProgress(progress) = event.kind {
                kept.lock().unwrap().push(progress);
            }
        });
        let emitter = Arc::new(ProgressEmitter {
            sink,
            batch: "b".into(),
            call: "c".into(),
            generation: 1,
            interval: Duration::from_millis(100),
            max_bytes,
            state: Mutex::new(Coalesced::default()),
        });
        (emitter, seen)
    }

    fn chunk(stream: ProgressStream, text: &str) -> ProgressChunk {
        ProgressChunk {
            stream,
            text: text.to_owned(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn progress_is_coalesced_to_one_event_per_stream_per_interval() {
        let (emitter, seen) = emitter(1 << 20);
        for _ in 0..1000 {
            emitter.chunk(chunk(ProgressStream::Stdout, "line\n"));
        }
        // The first chunk goes out at once; the rest waits for the end of the interval.
        assert_eq!(seen.lock().unwrap().len(), 1);
        tokio::time::sleep(Duration::from_millis(100)).await;
        tokio::task::yield_now().await;
        {
            let seen = seen.lock().unwrap();
            assert_eq!(seen.len(), 2, "{seen:?}");
            assert_eq!(seen[1].stream, "stdout");
            assert_eq!(seen[1].text, "line\n".repeat(999));
        }
        emitter.chunk(chunk(ProgressStream::Stderr, "oops\n"));
        emitter.chunk(chunk(ProgressStream::Stdout, "tail"));
        assert_eq!(seen.lock().unwrap().len(), 2);
        // The end of the call sends what is left, one event per stream.
        emitter.flush_all();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert_eq!(
            (seen[2].stream.as_str(), seen[2].text.as_str()),
            ("stderr", "oops\n")
        );
        assert_eq!(
            (seen[3].stream.as_str(), seen[3].text.as_str()),
            ("stdout", "tail")
        );
        assert!(seen.iter().all(|p| p.dropped_bytes == 0));
    }

    /// Status messages (an MCP server's progress) are not output: within one interval the
    /// latest replaces the ones still waiting instead of being joined to them.
    #[tokio::test(start_paused = true)]
    async fn of_status_messages_within_an_interval_the_latest_is_sent() {
        let (emitter, seen) = emitter(1 << 20);
        for step in 1..=3 {
            emitter.chunk(chunk(ProgressStream::Message, &format!("step {step}")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        tokio::task::yield_now().await;
        let seen = seen.lock().unwrap();
        let texts: Vec<&str> = seen.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["step 1", "step 3"]);
        assert!(seen.iter().all(|p| p.stream == "message"));
    }

    #[tokio::test(start_paused = true)]
    async fn progress_over_the_cap_is_dropped_and_counted() {
        let (emitter, seen) = emitter(10);
        emitter.chunk(chunk(ProgressStream::Stdout, "0123456"));
        emitter.chunk(chunk(ProgressStream::Stdout, "789abcdef"));
        emitter.chunk(chunk(ProgressStream::Stdout, "ghij"));
        emitter.flush_all();
        let seen = seen.lock().unwrap();
        let text: String = seen.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(text, "0123456789");
        let dropped: u64 = seen.iter().map(|p| p.dropped_bytes).sum();
        assert_eq!(dropped, 10);
        // The count is serialised only where something was dropped.
        let last = serde_json::to_value(seen.last().unwrap()).unwrap();
        assert_eq!(last["dropped_bytes"], 10);
        let first = serde_json::to_value(&seen[0]).unwrap();
        assert!(first.get("dropped_bytes").is_none());
    }

    #[test]
    fn partial_output_is_cut_at_the_cap_on_a_character_boundary() {
        let mut partial = Partial::default();
        partial.push("abc", 5);
        partial.push("éé", 5);
        assert_eq!(partial.text, "abcé");
        assert!(partial.cut);
    }
}
