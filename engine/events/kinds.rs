//! The event payloads and the outcome vocabulary they report.

use serde::Serialize;
use serde_json::Value;

use crate::model::CallId;

/// What happened.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum EventKind {
    /// The batch was split into groups.
    BatchScheduled(BatchScheduled),
    /// A call was scheduled into a group.
    ToolCallScheduled(ToolCallScheduled),
    /// A call needs approval.
    PermissionRequested(PermissionRequested),
    /// An approval request was answered.
    PermissionResolved(PermissionResolved),
    /// A call was denied (by a rule, a hook, the default, or the approver).
    PermissionDenied(PermissionDenied),
    /// A `warn` or `audit` rule would have changed a call's decision had it been enforced.
    StagedRuleMatched(StagedRuleMatched),
    /// A call's handler is about to start; its clock starts now.
    ToolCallStarted(ToolCallStarted),
    /// Streaming output of a running call.
    ToolCallProgress(ToolCallProgress),
    /// A call succeeded (terminal).
    ToolCallResult(ToolCallResult),
    /// A call failed, was denied, timed out or was cancelled (terminal).
    ToolCallError(ToolCallError),
    /// Every call of the batch has ended.
    ToolBatchComplete(ToolBatchComplete),
    /// A hook failed (crash, timeout, bad answer); fail-open hooks are then ignored.
    HookFailed(HookFailed),
    /// A reload produced a new generation.
    PolicyReloaded(PolicyReloaded),
    /// A reload was rejected; the previous generation stays in force.
    PolicyReloadFailed(PolicyReloadFailed),
    /// A call's full output could not be written to an artifact; the model was told it is
    /// lost.
    ArtifactWriteFailed(ArtifactWriteFailed),
    /// A decision could not be appended to the decision log; the call itself went on.
    DecisionLogFailed(DecisionLogFailed),
}

impl EventKind {
    /// The event's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::BatchScheduled(_) => "BatchScheduled",
            EventKind::ToolCallScheduled(_) => "ToolCallScheduled",
            EventKind::PermissionRequested(_) => "PermissionRequested",
            EventKind::PermissionResolved(_) => "PermissionResolved",
            EventKind::PermissionDenied(_) => "PermissionDenied",
            EventKind::StagedRuleMatched(_) => "StagedRuleMatched",
            EventKind::ToolCallStarted(_) => "ToolCallStarted",
            EventKind::ToolCallProgress(_) => "ToolCallProgress",
            EventKind::ToolCallResult(_) => "ToolCallResult",
            EventKind::ToolCallError(_) => "ToolCallError",
            EventKind::ToolBatchComplete(_) => "ToolBatchComplete",
            EventKind::HookFailed(_) => "HookFailed",
            EventKind::PolicyReloaded(_) => "PolicyReloaded",
            EventKind::PolicyReloadFailed(_) => "PolicyReloadFailed",
            EventKind::ArtifactWriteFailed(_) => "ArtifactWriteFailed",
            EventKind::DecisionLogFailed(_) => "DecisionLogFailed",
        }
    }
}

/// The groups of a batch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BatchScheduled {
    /// Call ids per group, in execution order.
    pub groups: Vec<Vec<CallId>>,
    /// Modes the batch runs in.
    pub modes: Vec<String>,
}

/// A call's place in the schedule.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCallScheduled {
    /// Tool name (`unknown` for tools that are not registered).
    pub tool: String,
    /// Index of its group.
    pub group: usize,
}

/// An approval request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PermissionRequested {
    /// Tool name.
    pub tool: String,
    /// The exact input that will run if approved.
    pub input: Value,
    /// Why approval is needed (rule names, hook names, defaults).
    pub reasons: Vec<String>,
}

/// An approval answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PermissionResolved {
    /// `allow` or `deny`.
    pub decision: String,
    /// Who answered: `approver`, `hook:<name>`, `expiry`.
    pub source: String,
    /// The approver's reason or comment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Milliseconds spent waiting.
    pub wait_ms: u64,
}

/// A denial.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PermissionDenied {
    /// Tool name.
    pub tool: String,
    /// What the model is told.
    pub reason: String,
    /// Where the denial came from: `rule:<name>`, `hook:<name>`, `default`, `approver`,
    /// `expiry`, `no_client`.
    pub sources: Vec<String>,
}

/// What a rule that is not enforced yet (`enforcement: warn | audit`) would have done.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StagedRuleMatched {
    /// Tool name.
    pub tool: String,
    /// The rule.
    pub rule: String,
    /// `warn` or `audit`.
    pub enforcement: String,
    /// The decision the call got.
    pub decision: String,
    /// The decision it would get with the rule enforced.
    pub would: String,
    /// The rule's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A call starting.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCallStarted {
    /// Tool name.
    pub tool: String,
    /// Scheduling flags as resolved for this call (modes applied).
    pub flags: CallFlags,
    /// Resolved timeout, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// A call's flags as resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallFlags {
    /// Read-only for scheduling (read-only and no side effects).
    pub read_only: bool,
    /// Destructive.
    pub destructive: bool,
    /// Concurrent-safe.
    pub concurrent_safe: bool,
    /// Reach of side effects.
    pub side_effect_scope: String,
}

/// Streaming output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCallProgress {
    /// `stdout`, `stderr` or `message`.
    pub stream: String,
    /// The text (never a split character).
    pub text: String,
    /// Bytes of output left out of progress events since the last one that said so: over
    /// the call's `engine.progress.max_bytes`. Absent when nothing was left out. The call's
    /// result is not affected.
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped_bytes: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// The status of an ended call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The handler succeeded.
    Ok,
    /// The call failed (lookup, validation, handler, output).
    Error,
    /// Permission was denied.
    Denied,
    /// The call ran out of time.
    TimedOut,
    /// The call was cancelled.
    Cancelled,
}

impl CallStatus {
    /// The status as written in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Ok => "ok",
            CallStatus::Error => "error",
            CallStatus::Denied => "denied",
            CallStatus::TimedOut => "timed_out",
            CallStatus::Cancelled => "cancelled",
        }
    }
}

/// Why a call was cancelled; machine-readable, never a message that reads like the user
/// interrupted when it did not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    /// A sibling failed and `on_failure` cancels the group or batch.
    SiblingFailed,
    /// An earlier result stopped the turn.
    TurnStopped,
    /// The call ran out of time.
    Timeout,
    /// The turn was cancelled by its owner.
    UserInterrupt,
    /// Policy cancelled it (e.g. `cancel_rest_of_batch`).
    Policy,
}

impl CancelReason {
    /// The reason as written in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CancelReason::SiblingFailed => "sibling_failed",
            CancelReason::TurnStopped => "turn_stopped",
            CancelReason::Timeout => "timeout",
            CancelReason::UserInterrupt => "user_interrupt",
            CancelReason::Policy => "policy",
        }
    }
}

/// The pipeline stage at which a call ended without success.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureStage {
    /// Tool lookup.
    Lookup,
    /// Input normalisation.
    Normalize,
    /// Input validation (schema or timeout override).
    Validate,
    /// PreToolUse hooks.
    PreHooks,
    /// Permission.
    Permission,
    /// Admission gate.
    Admission,
    /// The handler.
    Handler,
    /// Output validation.
    Output,
    /// Before the call started (cancelled while waiting for its group).
    Schedule,
}

/// Timing of a call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CallMetrics {
    /// Time queued at admission gates.
    pub queued_ms: u64,
    /// Time waiting for approval.
    pub permission_wait_ms: u64,
    /// From lookup to the end of the call.
    pub total_ms: u64,
}

/// A successful call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCallResult {
    /// Tool name.
    pub tool: String,
    /// Always `ok`.
    pub status: CallStatus,
    /// Size of the model content before the producer stage.
    pub original_size: u64,
    /// Size of the model content after it.
    pub final_size: u64,
    /// Whether the producer stage cut it.
    pub truncated: bool,
    /// Timing.
    pub metrics: CallMetrics,
}

/// An unsuccessful call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCallError {
    /// Tool name (`unknown` for unregistered tools).
    pub tool: String,
    /// `error`, `denied`, `timed_out` or `cancelled`.
    pub status: CallStatus,
    /// Where it ended.
    pub stage: FailureStage,
    /// Error code (`ToolNotFound`, `InputValidationError`, `PermissionDenied`, …).
    pub code: String,
    /// Why it was cancelled, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel_reason: Option<CancelReason>,
    /// What the model is told.
    pub message: String,
    /// Timing.
    pub metrics: CallMetrics,
}

/// The end of a batch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolBatchComplete {
    /// Calls with status `ok`.
    pub successes: usize,
    /// All other calls.
    pub failures: usize,
    /// Whether a result stopped the turn.
    pub turn_stopped: bool,
}

/// A hook that failed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HookFailed {
    /// The hook's name.
    pub hook: String,
    /// The lifecycle point.
    pub event: String,
    /// What went wrong.
    pub error: String,
    /// Whether the hook is fail-closed (the call was denied because of it).
    pub fail_closed: bool,
}

/// A new generation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyReloaded {
    /// The new generation.
    pub generation: u64,
    /// What changed in effect.
    pub changes: Vec<Value>,
    /// Files of the new set.
    pub files: Vec<String>,
}

/// A rejected reload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyReloadFailed {
    /// The generation that stays in force.
    pub generation: u64,
    /// The diagnostics, each with file, line and column.
    pub diagnostics: Vec<Value>,
}

/// Which budget stage tried to write an artifact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactStage {
    /// The per-call producer stage (SPEC §8.1).
    Producer,
    /// The batch finalizer (SPEC §8.3).
    Finalizer,
}

/// A failed artifact write: the call's full output is not kept anywhere.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArtifactWriteFailed {
    /// The stage that tried to write it.
    pub stage: ArtifactStage,
    /// Why it failed (disk full, session cap, invalid call id, ...).
    pub error: String,
    /// The size of the output that was lost, in the budget unit.
    pub size: u64,
}

/// A decision that could not be appended to the decision log.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DecisionLogFailed {
    /// The log file.
    pub path: String,
    /// Why (disk full, permission denied, ...).
    pub error: String,
}
