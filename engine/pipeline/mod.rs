//! The call pipeline (SPEC §6): one file per stage; [`run_call`] lists the stages in order.
//!
//! ```text
//! admit (lookup, normalise, validate) → pre_hooks → permission → start → execute
//!       → output → produce → post_hooks → display → turn_control → finish
//! ```
//!
//! What the policies decide about a call — its tool, input, timeout and permission — is
//! decided by [`crate::assess`], the same code `toolgate plan` and `toolgate test` use; the
//! stages add what is asynchronous or effectful: hooks, approval, the handler, budgets,
//! events. Each stage may end the call with a [`Failure`]; [`finish`] turns the success or
//! the failure into a [`CallResult`] and emits exactly one terminal event. What is approved
//! is exactly what runs: the input handed to the approver is the one the handler receives.

pub mod admit;
pub mod display;
pub mod errors;
pub mod execute;
pub mod finish;
pub mod outcome;
pub mod output;
pub mod permission;
pub mod post_hooks;
pub mod pre_hooks;
pub mod produce;
pub mod start;
pub mod turn_control;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, OnceLock};

use serde_json::Value;
// The runtime's clock (as deadlines and gates use), so `total_ms` agrees with them, also
// under paused time.
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use crate::assess::ToolCall;
pub use outcome::{CallResult, Display, ErrorCode, ErrorInfo, Failure, ResultMetadata, TurnEffect};

use crate::approval::ApprovalBroker;
use crate::artifact::{ArtifactStore, SessionId};
use crate::budget::Templates;
use crate::events::{CancelReason, Event, EventKind, EventSink};
use crate::handler::{Dispatch, NativeRegistry};
use crate::model::{BatchId, CallId, ModeName, ToolName};
use crate::snapshot::Snapshot;
use crate::timeout::Gates;

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
    pub dispatch: HashMap<ToolName, Arc<Dispatch>>,
    /// Where decisions are logged, when a log is configured.
    pub decision_log: Option<Arc<crate::decision_log::SnapshotLog>>,
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
    /// Cause of a batch-wide cancellation.
    pub batch_cause: &'a CancelCause,
}

impl CallEnv<'_> {
    /// Which call of this batch, in which modes, the hooks are asked about.
    pub fn hook_scope<'s>(
        &'s self,
        call: &'s CallId,
        tool: &'s str,
    ) -> crate::hooks::CallScope<'s> {
        crate::hooks::CallScope {
            batch_id: self.batch_id.as_str(),
            call_id: call.as_str(),
            tool,
            modes: self.modes,
        }
    }

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
    /// Warnings of `enforcement: warn` rules, shown to the model after the output.
    pub warnings: Vec<String>,
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

    /// Keeps a copy of the input for the hooks that read it after the handler or a failure
    /// (`PostToolUse`, `PostToolUseFailure`); without hooks nothing reads it again, and
    /// nothing is copied.
    pub fn keep_input(&mut self, env: &CallEnv<'_>, input: &Value) {
        if !env.prepared.snapshot.hooks.is_empty() {
            self.input = Some(input.clone());
        }
    }
}

/// Awaits a stage's rarely taken, large part on the heap: hook processes, approval waits,
/// gates, handler supervision and failure budgeting make large futures that most calls never
/// build, and boxing them here keeps every call's future small.
pub(crate) async fn rare<F: Future>(future: F) -> F::Output {
    Box::pin(future).await
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
        warnings: Vec::new(),
        hook_votes: Vec::new(),
        input: None,
    };
    match stages(env, &mut state).await {
        Ok(success) => finish::succeeded(env, state, success),
        Err(failure) => rare(finish::failed(env, state, failure)).await,
    }
}

/// The stages, in order.
async fn stages<'a>(
    env: &CallEnv<'a>,
    state: &mut CallState<'a>,
) -> Result<finish::Success, Failure> {
    let admitted = admit::admit(env, state)?;
    let admitted = pre_hooks::pre_hooks(env, state, admitted).await?;
    let permission::Cleared {
        tool,
        contract,
        input,
        timeout,
    } = permission::permission(env, state, admitted).await?;
    start::start(env, state, tool, &contract, timeout.as_ref());
    let output = execute::execute(env, state, tool, &contract, input, timeout.as_ref()).await?;
    let output = output::check_output(env, tool, tool.name_for_call(&state.call.tool), output)?;
    let produced = produce::produce(env, state, tool, &contract, output.text).await;
    post_hooks::post_hooks(env, state, tool, produced.content.as_str()).await;
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
