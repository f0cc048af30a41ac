//! Native handlers: Rust functions registered by the embedding program (`handler.kind:
//! native`), and the isolation every handler runs under.
//!
//! The engine enforces everything around a native handler (validation, permission, timeout,
//! budgets); the handler only computes. [`run_isolated`] (and [`Isolated`], its handle) runs a
//! handler future on its own tokio task, so a panic inside it becomes
//! [`HandlerError::Panicked`] for that one call instead of unwinding into the engine, and
//! dropping or abandoning the call aborts the task. The engine first polls a native handler
//! once on the call's own task ([`build_native`], [`poll_native`], panics contained the same
//! way) and gives it a task only if it is still pending: a handler that waits on nothing
//! costs no task.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use futures::future::BoxFuture;
use indexmap::IndexMap;
use serde_json::Value;
use tokio::task::JoinHandle;

use super::{CallContext, HandlerError, HandlerOutput};
use crate::model::ToolName;

/// The future a native handler returns.
pub type HandlerFuture = BoxFuture<'static, Result<HandlerOutput, HandlerError>>;

/// A handler implemented in Rust by the embedding program.
///
/// Implemented for every `Fn(Value, CallContext) -> impl Future<Output = Result<…>>` closure:
///
/// ```
/// use toolgate::{CallContext, HandlerError, HandlerOutput, NativeHandler};
///
/// fn native(_: &impl NativeHandler) {}
/// native(&|input: serde_json::Value, _ctx: CallContext| async move {
///     Ok::<_, HandlerError>(HandlerOutput::json(input))
/// });
/// ```
pub trait NativeHandler: Send + Sync + 'static {
    /// Runs one call with its validated input. Watch `ctx.cancel` in long work.
    fn call(&self, input: Value, ctx: CallContext) -> HandlerFuture;
}

impl<F, Fut> NativeHandler for F
where
    F: Fn(Value, CallContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<HandlerOutput, HandlerError>> + Send + 'static,
{
    fn call(&self, input: Value, ctx: CallContext) -> HandlerFuture {
        Box::pin(self(input, ctx))
    }
}

/// The native handlers an embedding program registered, by name.
#[derive(Clone, Default)]
pub struct NativeRegistry {
    handlers: IndexMap<ToolName, Arc<dyn NativeHandler>>,
}

#[cfg(test)]
/// A registration that was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NativeRegistryError {
    /// The name is taken; use [`NativeRegistry::replace`] to swap a handler on purpose.
    #[error("a native handler named `{0}` is already registered")]
    Duplicate(ToolName),
}

impl NativeRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    #[cfg(test)]
    /// Registers `handler` under `name`; a name can be registered once.
    pub fn register(
        &mut self,
        name: impl Into<ToolName>,
        handler: impl NativeHandler,
    ) -> Result<(), NativeRegistryError> {
        self.register_arc(name, Arc::new(handler))
    }

    #[cfg(test)]
    /// Registers a shared handler under `name`; a name can be registered once.
    pub fn register_arc(
        &mut self,
        name: impl Into<ToolName>,
        handler: Arc<dyn NativeHandler>,
    ) -> Result<(), NativeRegistryError> {
        let name = name.into();
        if self.handlers.contains_key(&name) {
            return Err(NativeRegistryError::Duplicate(name));
        }
        self.handlers.insert(name, handler);
        Ok(())
    }

    /// Registers `handler` under `name`, returning the handler it replaces.
    pub fn replace(
        &mut self,
        name: impl Into<ToolName>,
        handler: impl NativeHandler,
    ) -> Option<Arc<dyn NativeHandler>> {
        self.handlers.insert(name.into(), Arc::new(handler))
    }

    /// Registers a shared handler under `name`, returning the handler it replaces.
    pub fn replace_arc(
        &mut self,
        name: impl Into<ToolName>,
        handler: Arc<dyn NativeHandler>,
    ) -> Option<Arc<dyn NativeHandler>> {
        self.handlers.insert(name.into(), handler)
    }

    #[cfg(test)]
    /// The handler registered under `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn NativeHandler>> {
        self.handlers.get(name).cloned()
    }

    /// The handler registered under `name`, borrowed.
    pub fn get_ref(&self, name: &str) -> Option<&dyn NativeHandler> {
        self.handlers.get(name).map(Arc::as_ref)
    }

    #[cfg(test)]
    /// The registered names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &ToolName> {
        self.handlers.keys()
    }
}

impl fmt::Debug for NativeRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.handlers.keys()).finish()
    }
}

#[cfg(test)]
/// Runs a native handler isolated on its own task (see [`run_isolated`]); a panic while
/// building the future is contained too.
pub fn call_native(
    handler: Arc<dyn NativeHandler>,
    input: Value,
    ctx: CallContext,
) -> impl Future<Output = Result<HandlerOutput, HandlerError>> + Send + 'static {
    run_isolated(async move { handler.call(input, ctx).await })
}

/// Builds a native handler's future for one call, without polling it; a panic while building
/// it becomes [`HandlerError::Panicked`].
pub fn build_native(
    handler: &dyn NativeHandler,
    input: Value,
    ctx: CallContext,
) -> Result<HandlerFuture, HandlerError> {
    std::panic::catch_unwind(AssertUnwindSafe(|| handler.call(input, ctx)))
        .map_err(|payload| HandlerError::Panicked(panic_message(payload.as_ref())))
}

/// Polls a native handler's future on the caller's task; a panic in the poll becomes
/// [`HandlerError::Panicked`] (the future must then not be polled again).
///
/// The engine polls each native handler once this way before giving it a task: a handler
/// that finishes in that poll (one that waits on nothing) costs no task, and one that is
/// still pending moves, as it is (its future is boxed), onto its own task with
/// [`Isolated::spawn`], to be awaited, timed out, cancelled and abandoned like any other.
pub fn poll_native(
    future: &mut HandlerFuture,
    cx: &mut std::task::Context<'_>,
) -> Poll<Result<HandlerOutput, HandlerError>> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
        Ok(poll) => poll,
        Err(payload) => Poll::Ready(Err(HandlerError::Panicked(panic_message(payload.as_ref())))),
    }
}

#[cfg(test)]
/// Runs a handler future on its own tokio task: a panic becomes [`HandlerError::Panicked`]
/// with the panic message, and dropping the returned future aborts the task.
pub async fn run_isolated<F>(future: F) -> Result<HandlerOutput, HandlerError>
where
    F: Future<Output = Result<HandlerOutput, HandlerError>> + Send + 'static,
{
    Isolated::spawn(future).await
}

/// A handler running on its own tokio task.
///
/// Awaiting it gives the handler's result (a panic becomes [`HandlerError::Panicked`]).
/// Dropping it aborts the task, but the task's future — and whatever it owns, such as a
/// subprocess's process group, killed when dropped — only goes when the runtime next gets
/// to the task. [`Isolated::abandon`] aborts and waits for that, so a caller that gives up
/// on a handler knows its processes have been killed before it reports the call as ended.
pub struct Isolated {
    task: JoinHandle<Result<HandlerOutput, HandlerError>>,
}

impl Isolated {
    /// Spawns `future` on its own task.
    pub fn spawn<F>(future: F) -> Self
    where
        F: Future<Output = Result<HandlerOutput, HandlerError>> + Send + 'static,
    {
        Self {
            task: tokio::spawn(future),
        }
    }

    /// Aborts the task and waits, at most `bound`, until its future has been dropped. Only a
    /// handler that blocks its thread inside a poll takes longer; it is then left to the
    /// runtime.
    pub async fn abandon(mut self, bound: std::time::Duration) {
        self.task.abort();
        let _ = tokio::time::timeout(bound, &mut self.task).await;
    }
}

impl Future for Isolated {
    type Output = Result<HandlerOutput, HandlerError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.task)
            .poll(cx)
            .map(|joined| match joined {
                Ok(result) => result,
                Err(error) => match error.try_into_panic() {
                    Ok(payload) => Err(HandlerError::Panicked(panic_message(payload.as_ref()))),
                    // The task was aborted from outside: only the runtime shutting down does that.
                    Err(_) => Err(HandlerError::Cancelled),
                },
            })
    }
}

impl Drop for Isolated {
    /// A call abandoned mid-flight aborts its handler's task.
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl fmt::Debug for Isolated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Isolated")
            .field("finished", &self.task.is_finished())
            .finish()
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use serde_json::json;

    use super::*;

    struct Upper;

    impl NativeHandler for Upper {
        fn call(&self, input: Value, _ctx: CallContext) -> HandlerFuture {
            Box::pin(async move {
                let text = input["text"].as_str().unwrap_or_default().to_uppercase();
                Ok(HandlerOutput::text(text))
            })
        }
    }

    fn ctx() -> CallContext {
        CallContext::new("c1", "Tool")
    }

    #[tokio::test]
    async fn closures_and_structs_are_handlers() {
        let mut registry = NativeRegistry::new();
        registry
            .register("Echo", |input: Value, _ctx: CallContext| async move {
                Ok(HandlerOutput::json(input))
            })
            .unwrap();
        registry.register("Upper", Upper).unwrap();
        assert_eq!(
            registry.register("Upper", Upper),
            Err(NativeRegistryError::Duplicate("Upper".into()))
        );
        let names: Vec<_> = registry.names().map(ToolName::as_str).collect();
        assert_eq!(names, ["Echo", "Upper"]);

        let echo = registry.get("Echo").unwrap();
        let out = call_native(echo, json!({"a": 1}), ctx()).await.unwrap();
        assert_eq!(out, HandlerOutput::json(json!({"a": 1})));
        let upper = registry.get("Upper").unwrap();
        let out = call_native(upper, json!({"text": "hi"}), ctx())
            .await
            .unwrap();
        assert_eq!(out.as_text(), Some("HI"));
    }

    /// A handler that panics with `message` when its future is first polled.
    fn panicking(message: &'static str) -> Arc<dyn NativeHandler> {
        Arc::new(move |_input: Value, _ctx: CallContext| async move {
            let items: Vec<u8> = Vec::new();
            if items.is_empty() {
                panic!("{message}");
            }
            Ok(HandlerOutput::text("unreachable"))
        })
    }

    /// A handler that panics while building its future (before any poll).
    fn eager(
        _input: Value,
        _ctx: CallContext,
    ) -> std::future::Ready<Result<HandlerOutput, HandlerError>> {
        let code = 7;
        panic!("eager panic {code}");
    }

    #[tokio::test]
    async fn a_panic_becomes_a_panicked_error() {
        let handler = panicking("index out of range in tool");
        let err = call_native(handler, json!({}), ctx()).await.unwrap_err();
        match err {
            HandlerError::Panicked(message) => assert_eq!(message, "index out of range in tool"),
            other => panic!("expected Panicked, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_panic_while_building_the_future_is_contained() {
        let err = call_native(Arc::new(eager), json!({}), ctx())
            .await
            .unwrap_err();
        assert!(matches!(err, HandlerError::Panicked(m) if m == "eager panic 7"));
    }

    fn poll_once(future: &mut HandlerFuture) -> Poll<Result<HandlerOutput, HandlerError>> {
        let waker = futures::task::noop_waker();
        poll_native(future, &mut std::task::Context::from_waker(&waker))
    }

    #[tokio::test]
    async fn the_first_poll_contains_panics_and_a_pending_handler_moves_to_a_task() {
        let ready: Arc<dyn NativeHandler> = Arc::new(
            |input: Value, _ctx: CallContext| async move { Ok(HandlerOutput::json(input)) },
        );
        let mut future = build_native(ready.as_ref(), json!({"a": 1}), ctx()).unwrap();
        assert!(
            matches!(poll_once(&mut future), Poll::Ready(Ok(out)) if out == HandlerOutput::json(json!({"a": 1})))
        );

        let err = build_native(&eager, json!({}), ctx()).err().unwrap();
        assert!(matches!(err, HandlerError::Panicked(m) if m == "eager panic 7"));

        let polled = panicking("panic in the first poll");
        let mut future = build_native(polled.as_ref(), json!({}), ctx()).unwrap();
        assert!(
            matches!(poll_once(&mut future), Poll::Ready(Err(HandlerError::Panicked(m))) if m == "panic in the first poll")
        );

        // Pending after its first poll: it finishes on its own task, woken there.
        let (sender, receiver) = tokio::sync::oneshot::channel::<String>();
        let receiver = std::sync::Mutex::new(Some(receiver));
        let waiting: Arc<dyn NativeHandler> = Arc::new(move |_input: Value, _ctx: CallContext| {
            let receiver = receiver.lock().unwrap().take().unwrap();
            async move { Ok(HandlerOutput::text(receiver.await.unwrap())) }
        });
        let mut future = build_native(waiting.as_ref(), json!({}), ctx()).unwrap();
        assert!(poll_once(&mut future).is_pending());
        let task = Isolated::spawn(future);
        sender.send("late".to_owned()).unwrap();
        assert_eq!(task.await.unwrap().as_text(), Some("late"));
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_call_aborts_the_handler_task() {
        let finished = Arc::new(AtomicBool::new(false));
        let flag = finished.clone();
        let call = run_isolated(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            flag.store(true, Ordering::SeqCst);
            Ok(HandlerOutput::text("late"))
        });
        let outcome = tokio::time::timeout(std::time::Duration::from_millis(1), call).await;
        assert!(outcome.is_err());
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(!finished.load(Ordering::SeqCst));
    }
}
