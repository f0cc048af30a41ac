//! Handlers: what actually runs a call (SPEC §10) — a subprocess ([`command`]), an HTTP
//! endpoint ([`http`]), or a Rust function registered by the embedding program ([`native`]).
//!
//! Place in the flow: the pipeline's handler stage (SPEC §6 step 7) builds a [`CallContext`]
//! for the call (its cancellation token, progress sink, pausable deadline, gates and modes)
//! and awaits the handler under the timeout. A handler returns a [`HandlerOutput`] or a
//! [`HandlerError`]; the error separates a business failure the model is told about
//! (`<tool_use_error>…</tool_use_error>`) from faults (spawn failure, signal, panic, …) that
//! are projected through their cause chain (SPEC §7.3).
//!
//! Handlers observe cancellation only through `ctx.cancel`; timeouts are the pipeline's job
//! (it cancels the token when the deadline expires).

pub mod build;
pub mod command;
mod decode;
pub mod http;
pub mod mcp;
pub mod native;
pub mod template;

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::model::{CallId, GateName, ModeName, ToolName};
use crate::timeout::{Deadline, GateError, GatePermit, Gates};

pub use crate::model::handler::StdinMode;
pub use build::{BuildOptions, Dispatch, build};
pub use command::{CommandRunner, CommandSpec, run_captured};
pub use http::{HttpRunner, HttpSpec};
pub use mcp::McpRunner;
pub use native::{
    HandlerFuture, Isolated, NativeHandler, NativeRegistry, build_native, poll_native,
};

/// Everything a handler gets besides its input: identity, cancellation, progress, clock,
/// gates and the turn's modes. Cheap to clone.
#[derive(Clone, Debug)]
pub struct CallContext {
    /// After the deadline, how long the handler may take to clean up before it is killed
    /// (the contract's `cleanup_grace`; a command's process group gets SIGTERM at the
    /// deadline and SIGKILL after `max(kill_grace, cleanup_grace)`).
    pub cleanup_grace: std::time::Duration,
    /// The call's id (from the model).
    pub call_id: CallId,
    /// The canonical tool name.
    pub tool: ToolName,
    /// Cancelled on timeout, on user interrupt, or when a sibling's failure cancels the group.
    pub cancel: CancellationToken,
    /// Where streamed output goes (becomes `ToolCallProgress` events).
    pub progress: ProgressSink,
    /// The call's pausable deadline; paused while the call waits at a gate.
    pub deadline: Deadline,
    /// The snapshot's admission gates.
    pub gates: Arc<Gates>,
    /// The turn's active modes.
    pub modes: Arc<[ModeName]>,
    /// The gate the call was admitted through (`admission.gate`), held for the whole call.
    pub admitted: Option<GateName>,
}

impl CallContext {
    /// A context with a fresh token, no progress receiver, no timeout, no gates and no modes:
    /// the starting point for tests and for embedders running a handler directly.
    pub fn new(call_id: impl Into<CallId>, tool: impl Into<ToolName>) -> Self {
        Self {
            call_id: call_id.into(),
            tool: tool.into(),
            cancel: CancellationToken::new(),
            progress: ProgressSink::discard(),
            deadline: Deadline::unlimited(),
            cleanup_grace: std::time::Duration::ZERO,
            gates: Arc::new(Gates::empty()),
            modes: Arc::from(Vec::new()),
            admitted: None,
        }
    }

    /// Passes through admission gate `name` mid-call: waits for a permit with this call's
    /// deadline paused. Hold the permit for as long as the gated work runs.
    pub async fn gate(&self, name: impl Into<GateName>) -> Result<GatePermit, GateError> {
        let name = name.into();
        // Waiting for a permit this call itself holds would never end (with the deadline
        // paused all the while): refuse instead.
        if self.admitted.as_ref() == Some(&name) {
            return Err(GateError::Held(name));
        }
        self.gates
            .acquire(&name, &self.deadline, &self.cancel)
            .await
    }

    /// Whether mode `name` is active in this turn.
    pub fn has_mode(&self, name: &str) -> bool {
        self.modes.iter().any(|mode| mode.as_str() == name)
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// Which stream a progress chunk came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgressStream {
    /// A subprocess's standard output.
    Stdout,
    /// A subprocess's standard error.
    Stderr,
    /// A status message from a handler.
    Message,
}

/// A piece of streamed output. `text` is always whole characters: a multi-byte character is
/// never split across chunks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgressChunk {
    /// The stream.
    pub stream: ProgressStream,
    /// The text.
    pub text: String,
}

type ProgressFn = dyn Fn(ProgressChunk) + Send + Sync;

/// Receives a call's progress chunks. Cheap to clone; sending never blocks, so a receiver
/// must not block either (forward to a channel or an event sink).
#[derive(Clone)]
pub struct ProgressSink {
    receiver: Option<Arc<ProgressFn>>,
}

impl ProgressSink {
    /// A sink that calls `receiver` for every chunk.
    pub fn new(receiver: impl Fn(ProgressChunk) + Send + Sync + 'static) -> Self {
        Self {
            receiver: Some(Arc::new(receiver)),
        }
    }

    /// A sink that drops every chunk.
    pub fn discard() -> Self {
        Self { receiver: None }
    }

    /// A sink that forwards chunks into an unbounded channel, and that channel's receiver.
    pub fn channel() -> (Self, tokio::sync::mpsc::UnboundedReceiver<ProgressChunk>) {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let sink = Self::new(move |chunk| {
            // A closed receiver means nobody listens any more; progress is best effort.
            let _ = sender.send(chunk);
        });
        (sink, receiver)
    }

    /// Sends one chunk.
    pub fn send(&self, chunk: ProgressChunk) {
        if let Some(receiver) = &self.receiver {
            receiver(chunk);
        }
    }

    /// Sends a status message.
    pub fn message(&self, text: impl Into<String>) {
        self.send(ProgressChunk {
            stream: ProgressStream::Message,
            text: text.into(),
        });
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressSink")
            .field("connected", &self.receiver.is_some())
            .finish()
    }
}

/// What a handler produced.
#[derive(Clone, Debug, PartialEq)]
pub struct HandlerOutput {
    /// The main result.
    pub content: OutputContent,
    /// Non-text parts (images, resources, …) as the handler gave them.
    pub parts: Vec<Value>,
}

/// The main result of a handler.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputContent {
    /// Plain text.
    Text(String),
    /// A JSON value (validated against the contract's `output_schema` if it has one).
    Json(Value),
}

impl HandlerOutput {
    /// A text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: OutputContent::Text(text.into()),
            parts: Vec::new(),
        }
    }

    /// A JSON result.
    pub fn json(value: Value) -> Self {
        Self {
            content: OutputContent::Json(value),
            parts: Vec::new(),
        }
    }

    /// Adds a non-text part.
    pub fn with_part(mut self, part: Value) -> Self {
        self.parts.push(part);
        self
    }

    /// The text of a text result.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            OutputContent::Text(text) => Some(text),
            OutputContent::Json(_) => None,
        }
    }
}

/// Why a handler did not produce output.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// A failure the handler reports to the model (non-success exit code, HTTP 4xx, a
    /// native handler's own error): becomes `<tool_use_error>{message}</tool_use_error>`.
    #[error("{message}")]
    Business {
        /// What the model is told.
        message: String,
        /// A machine-readable code (`exit:2`, `http:404`, or a native handler's own).
        code: Option<String>,
    },
    /// The handler's process could not be started.
    #[error("cannot start `{program}`: {reason}")]
    Spawn {
        /// The program (`argv[0]`).
        program: String,
        /// What went wrong, in words.
        reason: String,
        /// The operating system's error, when there is one.
        #[source]
        source: Option<std::io::Error>,
    },
    /// The handler produced more output than allowed; a process was killed.
    #[error("output exceeded the limit of {limit} bytes")]
    OutputTooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// The handler's process was killed by a signal.
    #[error("killed by signal {name} ({number})")]
    Signaled {
        /// The signal number.
        number: i32,
        /// The signal name (`SIGKILL`).
        name: String,
    },
    /// The handler panicked; the panic was contained.
    #[error("handler panicked: {0}")]
    Panicked(String),
    /// The handler stopped because its cancellation token was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// Any other fault, with its cause chain.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl HandlerError {
    /// A business failure without a code.
    pub fn business(message: impl Into<String>) -> Self {
        Self::Business {
            message: message.into(),
            code: None,
        }
    }

    /// A business failure with a machine-readable code.
    pub fn business_with_code(message: impl Into<String>, code: impl Into<String>) -> Self {
        Self::Business {
            message: message.into(),
            code: Some(code.into()),
        }
    }

    /// Any other error (keeps its cause chain).
    pub fn other(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Other(error.into())
    }

    /// Whether this is a business failure (told to the model as `<tool_use_error>`).
    pub fn is_business(&self) -> bool {
        matches!(self, Self::Business { .. })
    }
}

impl From<GateError> for HandlerError {
    fn from(error: GateError) -> Self {
        match error {
            GateError::Cancelled { .. } => Self::Cancelled,
            GateError::Unknown(_) | GateError::Held(_) => Self::other(error),
        }
    }
}

#[cfg(test)]
mod tests {
    // Moved from the integration tests: they exercise this module's internals.
    mod command;
    mod http;
    mod native;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn context_gate_pauses_the_call_deadline() {
        let gates = Gates::new([(GateName::from("api"), 1)]).unwrap();
        let mut ctx = CallContext::new("c1", "Fetch");
        ctx.gates = Arc::new(gates);
        ctx.deadline = Deadline::new(Some(std::time::Duration::from_secs(5)));
        let first = ctx.gate("api").await.unwrap();
        let other = ctx.clone();
        let waiter = tokio::spawn(async move { other.gate("api").await.map(|p| p.queued()) });
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        drop(first);
        let queued = waiter.await.unwrap().unwrap();
        assert_eq!(queued, std::time::Duration::from_secs(30));
        assert!(!ctx.deadline.is_expired());
    }

    #[tokio::test]
    async fn gate_errors_convert_to_handler_errors() {
        let ctx = CallContext::new("c1", "Fetch");
        let err: HandlerError = ctx.gate("nope").await.unwrap_err().into();
        assert_eq!(err.to_string(), "unknown gate `nope`");
        ctx.cancel.cancel();
        let gates = Gates::new([(GateName::from("api"), 1)]).unwrap();
        let ctx = CallContext {
            gates: Arc::new(gates),
            ..ctx
        };
        let err: HandlerError = ctx.gate("api").await.unwrap_err().into();
        assert!(matches!(err, HandlerError::Cancelled));
    }

    #[tokio::test]
    async fn passing_the_gate_the_call_was_admitted_through_is_refused_not_a_deadlock() {
        let gates = Gates::new([(GateName::from("api"), 1)]).unwrap();
        let _admission = gates
            .acquire(
                &GateName::from("api"),
                &Deadline::unlimited(),
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        let mut ctx = CallContext::new("c1", "Fetch");
        ctx.gates = Arc::new(gates);
        ctx.admitted = Some(GateName::from("api"));
        let err = ctx.gate("api").await.unwrap_err();
        assert_eq!(err, GateError::Held(GateName::from("api")));
    }

    #[test]
    fn progress_channel_and_modes() {
        let (sink, mut receiver) = ProgressSink::channel();
        sink.message("hello");
        assert_eq!(
            receiver.try_recv().unwrap(),
            ProgressChunk {
                stream: ProgressStream::Message,
                text: "hello".into()
            }
        );
        let mut ctx = CallContext::new("c1", "Read");
        ctx.modes = Arc::from(vec![ModeName::from("plan")]);
        assert!(ctx.has_mode("plan"));
        assert!(!ctx.has_mode("offpeak"));
    }
}
