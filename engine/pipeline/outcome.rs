//! What a call ends as: a [`CallResult`] for the model and the UI, and the [`Failure`] value
//! that every stage can end a call with. Outcomes the model is told about are values, never
//! engine errors.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::budget::{AppliedPolicy, SlotText};
use crate::events::{CallMetrics, CallStatus, CancelReason, FailureStage};
use crate::model::contract::{DisplayKind, TurnAction};
use crate::model::{BudgetUnit, CallId, ToolName};
use crate::policy::decide::Permission;

/// Machine-readable error codes (also the `error:<code>` keys of `turn_control`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Unknown or empty tool name.
    ToolNotFound,
    /// The input failed the schema, was not an object, or had a bad timeout override.
    InputValidation,
    /// Permission denied (rule, hook, default, approver, expiry, no client).
    PermissionDenied,
    /// The handler reported a business failure.
    Business,
    /// The call ran out of time.
    Timeout,
    /// The call was cancelled.
    Cancelled,
    /// The output did not match `output_schema`.
    OutputSchema,
    /// The handler failed in another way (spawn, signal, panic, too much output, …).
    HandlerFailed,
    /// No handler is available for the tool (unregistered native, unsupported kind).
    NoHandler,
}

impl ErrorCode {
    /// The code as written in JSON and in `turn_control` keys.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ToolNotFound => "tool_not_found",
            ErrorCode::InputValidation => "input_validation",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::Business => "business",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::OutputSchema => "output_schema",
            ErrorCode::HandlerFailed => "handler_failed",
            ErrorCode::NoHandler => "no_handler",
        }
    }
}

/// How a call ended without success. Built by a stage, turned into a [`CallResult`] by the
/// finish stage.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// `error`, `denied`, `timed_out` or `cancelled`.
    pub status: CallStatus,
    /// Where.
    pub stage: FailureStage,
    /// What kind of failure.
    pub code: ErrorCode,
    /// The handler's own code for business failures (`exit:2`, `http:404`, `limit:cron`).
    pub detail_code: Option<String>,
    /// What the model is told.
    pub message: String,
    /// Why it was cancelled, when it was.
    pub cancel_reason: Option<CancelReason>,
    /// The reviewer's feedback, for `denied_with_feedback`.
    pub feedback: Option<String>,
    /// Whether `message` was already cut before the per-call budget (an error projection
    /// over `engine.error_projection.max_chars`); the result's `truncated` says so.
    pub truncated: bool,
}

impl Failure {
    /// A failure with status `error`.
    pub fn error(stage: FailureStage, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status: CallStatus::Error,
            stage,
            code,
            detail_code: None,
            message: message.into(),
            cancel_reason: None,
            feedback: None,
            truncated: false,
        }
    }

    /// A denial.
    pub fn denied(stage: FailureStage, message: impl Into<String>) -> Self {
        Self {
            status: CallStatus::Denied,
            ..Self::error(stage, ErrorCode::PermissionDenied, message)
        }
    }

    /// A cancellation.
    pub fn cancelled(
        stage: FailureStage,
        reason: CancelReason,
        message: impl Into<String>,
    ) -> Self {
        Self {
            status: CallStatus::Cancelled,
            cancel_reason: Some(reason),
            ..Self::error(stage, ErrorCode::Cancelled, message)
        }
    }

    /// A timeout.
    pub fn timed_out(message: impl Into<String>) -> Self {
        Self {
            status: CallStatus::TimedOut,
            cancel_reason: Some(CancelReason::Timeout),
            ..Self::error(FailureStage::Handler, ErrorCode::Timeout, message)
        }
    }
}

/// Metadata of a result (SPEC §13 `metadata`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ResultMetadata {
    /// Whether the model content is shorter than the output.
    pub truncated: bool,
    /// Size of the output (or error text) in `unit`.
    pub original_size: u64,
    /// Size of the model content in `unit`.
    pub final_size: u64,
    /// What sizes count.
    pub unit: BudgetUnit,
    /// The budget policy applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<AppliedPolicy>,
    /// Absent: no persistence decision; empty: decided, nothing reusable; else the artifacts
    /// holding the full output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persisted_files: Option<Vec<PathBuf>>,
    /// Time queued at admission gates.
    pub queued_ms: u64,
    /// Time waiting for approval.
    pub permission_wait_ms: u64,
    /// From lookup to the end of the call.
    pub total_ms: u64,
    /// The resolved timeout (with grace), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl ResultMetadata {
    /// The timing part, as events report it.
    pub fn metrics(&self) -> CallMetrics {
        CallMetrics {
            queued_ms: self.queued_ms,
            permission_wait_ms: self.permission_wait_ms,
            total_ms: self.total_ms,
        }
    }
}

/// The UI projection of a result; never part of the model content.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Display {
    /// Its kind.
    pub kind: DisplayKind,
    /// The text shown.
    pub text: String,
    /// Whether the display itself was cut to its size limit.
    pub truncated: bool,
}

/// What a result does to the turn.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TurnEffect {
    /// The action.
    pub action: TurnAction,
    /// The `turn_control` key that fired (`success`, `denied`, `error:timeout`, …).
    pub outcome: String,
    /// The reviewer's feedback that becomes a user message (`inject_feedback`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

/// The error part of an unsuccessful result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrorInfo {
    /// What kind of failure.
    pub code: ErrorCode,
    /// The handler's own code for business failures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail_code: Option<String>,
    /// Where the call ended.
    pub stage: FailureStage,
    /// Why it was cancelled, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel_reason: Option<CancelReason>,
}

/// The result of one call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallResult {
    /// The call's id.
    pub call_id: CallId,
    /// The tool name as the model wrote it.
    pub tool: String,
    /// The canonical tool, when the name resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canonical_tool: Option<ToolName>,
    /// `ok`, `error`, `denied`, `timed_out` or `cancelled`.
    pub status: CallStatus,
    /// The text the model gets (after the producer stage; the batch finalizer may shorten it
    /// again). Shared, with its budget measurements cached, so the finalizer neither copies
    /// nor re-reads a large output it leaves whole.
    pub model_content: SlotText,
    /// Context added by hooks, given to the model after the content (its own budgeted slot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_context: Option<String>,
    /// Non-text parts (images, …): passed through, never budgeted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Value>,
    /// Metadata.
    pub metadata: ResultMetadata,
    /// The error, for unsuccessful calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    /// The permission decision with its reasons, when the call got that far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission: Option<Permission>,
    /// The UI projection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display: Option<Display>,
    /// A `when: when_cut` display waiting for the batch finalizer: projected if it cuts the
    /// result, dropped when the batch is finalized.
    #[serde(skip)]
    pub(crate) pending_display: Option<super::display::PendingDisplay>,
    /// What the result does to the turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnEffect>,
    /// Whether the budget was exempt from the batch finalizer (`budget.batch_exempt`).
    #[serde(skip)]
    pub(crate) batch_exempt: bool,
    /// Batch weight and minimum share, for the finalizer.
    #[serde(skip)]
    pub(crate) weight: (u32, u64),
}

impl CallResult {
    /// The full text the model gets: the content, then the hook context.
    pub fn model_text(&self) -> String {
        match &self.hook_context {
            Some(context) if !context.is_empty() => format!("{}\n\n{context}", self.model_content),
            _ => self.model_content.as_str().to_owned(),
        }
    }

    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        self.status == CallStatus::Ok
    }
}
