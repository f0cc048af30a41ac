//! The call pipeline (SPEC §6): one file per stage; [`run_call`] lists the stages in order.
//!
//! ```text
//! lookup → normalize → validate → pre_hooks → permission → start → execute
//!        → output → produce → post_hooks → display → turn_control → finish
//! ```
//!
//! Each stage may end the call with a [`Failure`]; [`finish`] turns the success or the
//! failure into a [`CallResult`] and emits exactly one terminal event. What is approved is
//! exactly what runs: the input handed to the approver is the one the handler receives.

pub mod display;
pub mod errors;
pub mod execute;
pub mod finish;
pub mod lookup;
pub mod normalize;
pub mod outcome;
pub mod output;
pub mod permission;
pub mod post_hooks;
pub mod pre_hooks;
pub mod produce;
pub mod start;
pub mod turn_control;
pub mod validate;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;
// The runtime's clock (as deadlines and gates use), so `total_ms` agrees with them, also
// under paused time.
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use outcome::{CallResult, Display, ErrorCode, ErrorInfo, Failure, ResultMetadata, TurnEffect};

use crate::approval::ApprovalBroker;
use crate::artifact::{ArtifactStore, SessionId};
use crate::budget::Templates;
use crate::events::{CancelReason, Event, EventKind, EventSink};
use crate::handler::NativeRegistry;
use crate::model::{BatchId, CallId, ModeName, ToolName};
use crate::snapshot::Snapshot;
use crate::timeout::Gates;

/// One tool call as the model gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// Its id, unique within the batch.
    pub id: CallId,
    /// The tool name or alias as written.
    pub tool: String,
    /// The input: an object, or a JSON string holding one.
    pub input: Value,
}

impl ToolCall {
    /// A call.
    pub fn new(id: impl Into<CallId>, tool: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            tool: tool.into(),
            input,
        }
    }
}

/// Why a group or batch was cancelled, set once before its token is cancelled so that the
/// calls it stops can say why.
#[derive(Clone, Debug, Default)]
pub struct CancelCause(Arc<OnceLock<(CancelReason, Option<CallId>)>>);

impl CancelCause {
    /// Records the cause (the first one wins).
    pub fn set(&self, reason: CancelReason, by: Option<CallId>) {
        let _ = self.0.set((reason, by));
    }

    /// The recorded cause.
    pub fn get(&self) -> Option<&(CancelReason, Option<CallId>)> {
        self.0.get()
    }
}

/// A snapshot made ready to execute: the snapshot plus what the engine derives from it once
/// (gates, budget templates, compiled handlers).
pub struct Prepared {
    /// The policies.
    pub snapshot: Arc<Snapshot>,
    /// Its admission gates.
    pub gates: Arc<Gates>,
    /// Model-facing budget texts.
    pub templates: Templates,
    /// Compiled command/http handlers by tool.
    pub dispatch: HashMap<ToolName, Arc<execute::Dispatch>>,
}

/// Everything a call needs from its engine, batch and turn.
pub struct CallEnv<'a> {
    /// The prepared snapshot the batch runs on.
    pub prepared: &'a Prepared,
    /// Native handlers.
    pub natives: &'a NativeRegistry,
    /// Where events go.
    pub sink: &'a Arc<dyn EventSink>,
    /// Artifact store, if any.
    pub store: Option<&'a dyn ArtifactStore>,
    /// The session artifacts belong to.
    pub session: &'a SessionId,
    /// The batch.
    pub batch_id: &'a BatchId,
    /// Active modes.
    pub modes: &'a Arc<[ModeName]>,
    /// Who answers approval requests.
    pub approver: Option<&'a Arc<dyn ApprovalBroker>>,
    /// The turn's token (its cancellation is a user interrupt).
    pub turn_cancel: &'a CancellationToken,
    /// Cause of a batch-wide cancellation.
    pub batch_cause: &'a CancelCause,
}

impl CallEnv<'_> {
    /// Emits an event of this batch.
    pub fn emit(&self, call: Option<&CallId>, kind: EventKind) {
        self.emit_with(call, || kind);
    }

    /// Emits an event of this batch, building it only if the sink wants events: the hot
    /// path pays nothing for events nobody reads.
    pub fn emit_with(&self, call: Option<&CallId>, kind: impl FnOnce() -> EventKind) {
        if self.wants_events() {
            self.sink.emit(Event::now(
                Some(self.batch_id.clone()),
                call.cloned(),
                self.prepared.snapshot.generation,
                kind(),
            ));
        }
    }

    /// Whether the sink wants events at all.
    pub fn wants_events(&self) -> bool {
        self.sink.wants_events()
    }
}

/// The state of one call as it moves through the stages.
pub struct CallState<'a> {
    /// The call.
    pub call: ToolCall,
    /// The call's token: its group's (a child of the batch's and the turn's), borrowed;
    /// calls are only cancelled together with their group.
    pub cancel: &'a CancellationToken,
    /// Cause of a group-wide cancellation.
    pub group_cause: &'a CancelCause,
    /// When the call entered the pipeline.
    pub started: Instant,
    /// Metadata gathered along the way.
    pub metadata: ResultMetadata,
    /// The permission, once decided.
    pub permission: Option<crate::policy::decide::Permission>,
    /// The canonical tool, once looked up (borrowed from the batch's snapshot).
    pub tool: Option<&'a crate::snapshot::Tool>,
    /// Context added by hooks.
    pub hook_context: Vec<String>,
    /// What PreToolUse hooks said about permission.
    pub hook_votes: Vec<crate::policy::decide::HookVote>,
    /// The input as parsed and, after `PreToolUse` hooks, as rewritten: what
    /// `PostToolUseFailure` hooks are shown. Kept only when the snapshot has hooks.
    pub input: Option<Value>,
}

impl CallState<'_> {
    /// Why the call's token was cancelled: the group's cause, else the batch's, else a user
    /// interrupt (the turn was cancelled by its owner).
    pub fn cancel_reason(&self, env: &CallEnv<'_>) -> (CancelReason, Option<CallId>) {
        self.group_cause
            .get()
            .or_else(|| env.batch_cause.get())
            .cloned()
            .unwrap_or((CancelReason::UserInterrupt, None))
    }
}

/// Runs one call through every stage. Never fails: every outcome is a [`CallResult`] (boxed:
/// it is large, and moved several times before the batch collects it), and exactly one
/// terminal event is emitted.
pub async fn run_call<'a>(
    env: &CallEnv<'a>,
    call: ToolCall,
    cancel: &'a CancellationToken,
    group_cause: &'a CancelCause,
) -> Box<CallResult> {
    let mut state = CallState {
        call,
        cancel,
        group_cause,
        started: Instant::now(),
        metadata: ResultMetadata {
            unit: env.prepared.snapshot.engine.budget_unit,
            ..ResultMetadata::default()
        },
        permission: None,
        tool: None,
        hook_context: Vec::new(),
        hook_votes: Vec::new(),
        input: None,
    };
    match stages(env, &mut state).await {
        Ok(success) => finish::succeeded(env, state, success),
        // Boxed: the failure path's hooks and budgeting make a large future.
        Err(failure) => Box::pin(finish::finish_failure(env, state, failure)).await,
    }
}

/// The stages, in order.
async fn stages<'a>(
    env: &CallEnv<'a>,
    state: &mut CallState<'a>,
) -> Result<finish::Success, Failure> {
    // Both borrowed from the batch's snapshot (no reference counts touched per call); a
    // contract patched by an active mode is shared through the tool's cache.
    let tool = lookup::lookup(env, state)?;
    let contract = tool.contract_for(env.modes, &env.prepared.snapshot.engine);
    let has_hooks = !env.prepared.snapshot.hooks.is_empty();
    // `PostToolUseFailure` hooks are shown the call's own input when it fails before it is
    // parsed; without hooks nothing reads it again, and it is moved on rather than copied.
    let raw = if has_hooks {
        state.call.input.clone()
    } else {
        std::mem::take(&mut state.call.input)
    };
    let input = normalize::normalize_owned(env, tool, raw)?;
    if has_hooks {
        state.input = Some(input.clone());
    }
    validate::validate_input(env, tool, &input)?;
    let input = pre_hooks::pre_hooks(env, state, tool, input).await?;
    if has_hooks {
        state.input = Some(input.clone());
    }
    let timeout = validate::resolve_timeout(env, tool, &contract, &input)?;
    permission::permission(env, state, tool, &contract, &input).await?;
    start::start(env, state, tool, &contract, timeout.as_ref());
    // PostToolUse hooks see the input after the handler has run; without any hook the
    // handler takes it and nothing is copied.
    let (handler_input, kept_input) = if !has_hooks {
        (input, None)
    } else {
        (input.clone(), Some(input))
    };
    let output =
        execute::execute(env, state, tool, &contract, handler_input, timeout.as_ref()).await?;
    let output = output::check_output(env, tool, output)?;
    let produced = produce::produce(env, state, tool, &contract, output.text).await;
    if let Some(input) = &kept_input {
        post_hooks::post_hooks(env, state, tool, input, produced.content.as_str()).await;
    }
    let (display, pending_display) = display::project(&contract, &output.display_source, &produced);
    let turn = turn_control::on_success(&contract);
    let budget = &contract.budget;
    Ok(finish::Success {
        produced,
        parts: output.parts,
        display,
        pending_display,
        turn,
        batch_exempt: budget.batch_exempt,
        weight: (budget.weight, budget.min_share),
    })
}
