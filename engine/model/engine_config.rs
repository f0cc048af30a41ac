//! The `engine` section: batch-wide settings, defaults for contracts, the artifact store, the
//! approval wait, and every model-facing message template. The built-in defaults live in
//! `policies/engine.yaml`, not in code.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::contract::{BudgetPolicy, OnFailure, Retention};
use super::units::{BudgetUnit, Duration, Limit, Size};

/// Engine-wide settings. Every field may be set by any layer; the effective value is the one
/// from the highest layer that sets it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// Most calls of one group that run at the same time; a longer run of concurrent-safe
    /// calls is split into several groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_concurrency: Option<u32>,

    /// Timeout of a call whose contract sets none (`none` = no timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_timeout: Option<Limit<Duration>>,

    /// What a failed call does to the calls that still run beside it or after it:
    /// `continue` (each call stands alone), `cancel_group` or `cancel_batch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<OnFailure>,

    /// Budget of the model-facing text of one batch, all results together, in
    /// `budget_unit`s. `none` (or a value ≤ 0) disables the batch finalizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_budget: Option<BatchBudget>,

    /// What budgets count: `chars` (Unicode scalar values) or `bytes` (UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_unit: Option<BudgetUnit>,

    /// Budget defaults for contracts that do not set their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetPolicy>,

    /// Permission of a tool whose contract and rules say nothing (`allow`, `ask`, `deny`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_permission: Option<super::Decision>,

    /// Where full outputs that did not fit the budget are written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<ArtifactConfig>,

    /// How long an approval request may wait for an answer (`none` = wait until the turn
    /// is cancelled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_timeout: Option<Limit<Duration>>,

    /// What happens when an approval request times out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_expiry: Option<ApprovalExpiry>,

    /// Timeout of a hook process that does not set its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_timeout: Option<Duration>,

    /// Most bytes a command or http handler may produce (stdout and stderr together) before
    /// it is stopped; protects the engine from a handler that prints gigabytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_handler_output: Option<Size>,

    /// How long a cancelled subprocess gets between SIGTERM and SIGKILL of its process group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_grace: Option<Duration>,

    /// Most messages `serve` queues for a client that does not read its output. When the
    /// queue is full, progress events are dropped (and the count reported) and the server
    /// reads no further request until the client reads; results, responses and permission
    /// requests are never dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub serve_queue: Option<u32>,

    /// Most batches `serve` runs at once; an `executeBatch` beyond them is answered with a
    /// "server busy" error (-32001) and runs nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub serve_batches: Option<u32>,

    /// Streamed output (`ToolCallProgress` events) is coalesced: at most one event per
    /// stream per this interval (default 100ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_interval: Option<Duration>,

    /// Most bytes of streamed output sent in `ToolCallProgress` events per call (default
    /// 1 MiB); the rest is left out and counted in the events' `dropped_bytes`. The call's
    /// result is not affected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_max_bytes: Option<Size>,

    /// How an error that is not one of the known cases is turned into model content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_projection: Option<ErrorProjection>,

    /// Model-facing message templates. `{name}` placeholders are filled in; each template
    /// documents the placeholders it may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Messages>,

    /// The decision log: one JSON line per decision `toolgate hook` (and an embedding
    /// program's `DecisionLog`) makes. Off until a `path` is set (or `--decision-log` given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_log: Option<DecisionLogConfig>,
}

/// Where decisions are logged and what is masked in them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionLogConfig {
    /// The JSON Lines file, relative to the workspace root (may start with `~`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// When an append would make the file larger than this, it is renamed to `<path>.1`
    /// (replacing the previous one) and a new file is started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<Size>,
    /// Largest record, in bytes: a record whose input would make it larger logs the input's
    /// size and SHA-256 instead of the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_record: Option<Size>,
    /// Input fields whose value is always masked: a field name (at any depth) or a JSON
    /// pointer from the input's root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redact_fields: Option<Vec<String>>,
    /// Regular expressions of secret-looking text (tokens, keys, passwords in URLs): every
    /// match inside a string of the input is masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_patterns: Option<Vec<String>>,
}

/// The batch budget: a size, or `none` (also any value ≤ 0) to disable the finalizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchBudget {
    /// The finalizer is off.
    Disabled,
    /// The budget, in budget units.
    Units(u64),
}

impl BatchBudget {
    /// The budget, if enabled.
    pub fn units(&self) -> Option<u64> {
        match self {
            BatchBudget::Disabled => None,
            BatchBudget::Units(n) => Some(*n),
        }
    }
}

impl Serialize for BatchBudget {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            BatchBudget::Disabled => serializer.serialize_str("none"),
            BatchBudget::Units(n) => serializer.serialize_u64(*n),
        }
    }
}

impl<'de> Deserialize<'de> for BatchBudget {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Signed(i64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Signed(n) if n <= 0 => Ok(BatchBudget::Disabled),
            Raw::Signed(n) => Ok(BatchBudget::Units(n.unsigned_abs())),
            Raw::Text(text) if text.trim() == "none" => Ok(BatchBudget::Disabled),
            Raw::Text(text) => Size::parse(&text)
                .map(|size| BatchBudget::Units(size.0))
                .map_err(serde::de::Error::custom),
        }
    }
}

impl JsonSchema for BatchBudget {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "BatchBudget".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A budget in budget units: an integer (≤ 0 disables), a size string like `200 KB`, or `none`.",
            "anyOf": [
                { "type": "integer" },
                { "type": "string", "format": "size", "pattern": super::units::SIZE_PATTERN },
                { "type": "string", "const": "none" }
            ]
        })
    }
}

/// The artifact store: one folder per session under `dir`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactConfig {
    /// Folder holding one sub-folder per session. `~` expands to the home directory; a
    /// relative path is taken against the workspace root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// Largest single artifact; a larger output is not written (the model gets the stub
    /// `(file too large to persist)` instead of a path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_file: Option<Size>,
    /// Most bytes one session may write; reserved before each write, each file counted in
    /// whole disk blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_session: Option<Size>,
    /// Most artifact files the batch finalizer writes for one batch; the results after them
    /// are cut without an artifact (their notice says the full output was not kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batch_files: Option<u64>,
    /// Default retention of artifacts of contracts that do not set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<Retention>,
    /// Folder (relative to the workspace root) for artifacts with `retention: project`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_dir: Option<String>,
}

/// What an expired approval wait turns into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalExpiry {
    /// The call is denied.
    Deny,
    /// The call runs.
    Allow,
    /// The request is asked once more; a second expiry denies.
    AskAgain,
}

/// How an unexpected error becomes model content.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorProjection {
    /// How many levels of the cause chain are followed to find the first message that is
    /// not a mere wrapper.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_cause_depth: Option<u32>,
    /// Longest projected message, in characters (whitespace is folded first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_chars: Option<u32>,
}

/// Model-facing message templates (SPEC §7.3, §8). `{name}` placeholders are filled in;
/// each template lists the placeholders it may use, and an unknown placeholder is a load
/// error. `{{` and `}}` stand for literal braces.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Messages {
    /// Unknown or empty tool name. Placeholders: `{tool}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_not_found: Option<String>,
    /// A name that would reach an MCP server's tool through a wildcard contract while an exact
    /// contract runs that tool (only that contract's name runs it). Placeholders: `{tool}`,
    /// `{contract}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_tool_has_contract: Option<String>,
    /// Input failed the contract's schema. Placeholders: `{tool}`, `{details}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_validation: Option<String>,
    /// A handler reported a business failure. Placeholders: `{tool}`, `{message}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub business_failure: Option<String>,
    /// A PreToolUse hook denied without giving a reason. Placeholders: `{tool}`, `{hook}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_denied: Option<String>,
    /// A rule denied and gave no `reason`. Placeholders: `{tool}`, `{rule}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_denied: Option<String>,
    /// The contract's default permission is `deny`. Placeholders: `{tool}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_denied: Option<String>,
    /// An approval request was answered no without a reason. Placeholders: `{tool}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_denied: Option<String>,
    /// A person answered an approval request no and gave a reason. Placeholders: `{tool}`,
    /// `{reason}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_denied_reason: Option<String>,
    /// An approval request timed out and expired into a denial. Placeholders: `{tool}`, `{ms}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_expired: Option<String>,
    /// Approval was needed but no approval client is configured. Placeholders: `{tool}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_permission_client: Option<String>,
    /// The call ran out of time. Placeholders: `{tool}`, `{ms}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// The call was cancelled and its contract sets no `cancellation_message`. Placeholders: `{tool}`, `{reason}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<String>,
    /// A call was cancelled because a sibling failed (`call_id` is the failed call). Placeholders: `{tool}`, `{call_id}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sibling_failed: Option<String>,
    /// A call was not started because an earlier result stopped the turn. Placeholders: `{tool}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_stopped: Option<String>,
    /// The handler's output did not match the contract's `output_schema`. Placeholders: `{tool}`, `{details}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
    /// Successful output that is empty. Placeholders: `{tool}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_output: Option<String>,
    /// The line added to output cut by `overflow: truncate`. Placeholders: `{original}`, `{limit}`, `{unit}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation_notice: Option<String>,
    /// The notice line when an artifact could not be written for a reason with a stub. Placeholders: `{notice}`, `{stub}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation_notice_with_stub: Option<String>,
    /// The envelope replacing output written to an artifact; `more` is a line with `preview_omitted` when a head preview is shorter than the output, else empty. Placeholders: `{original}`, `{unit}`, `{path}`, `{preview_label}`, `{preview_size}`, `{preview}`, `{more}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_envelope: Option<String>,
    /// `{preview_label}` of an envelope for `keep: head`. Placeholders: `{size}`, `{unit}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_label_head: Option<String>,
    /// `{preview_label}` of an envelope for `keep: tail`. Placeholders: `{size}`, `{unit}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_label_tail: Option<String>,
    /// `{preview_label}` of an envelope for `keep: both`. Placeholders: `{head}`, `{tail}`, `{unit}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_label_both: Option<String>,
    /// The line standing for the part of an output a preview leaves out. Placeholders: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_omitted: Option<String>,
    /// Stub given instead of an artifact path when the call id cannot name a file. Placeholders: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_call_id: Option<String>,
    /// Stub given instead of an artifact path when the output is over `artifacts.max_file`. Placeholders: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_too_large: Option<String>,
    /// Starts a slot the batch finalizer cut (SPEC §8.3). Placeholders: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_header: Option<String>,
    /// Follows `cut_header` when one artifact holds the full output. Placeholders: `{path}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_one_artifact: Option<String>,
    /// Follows `cut_header` when several artifacts hold the full output. Placeholders: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_many_artifacts: Option<String>,
    /// One per artifact after `cut_many_artifacts`. Placeholders: `{path}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_artifact_item: Option<String>,
    /// Ends the cut header. Placeholders: `{sha256}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_digest: Option<String>,
    /// Between the cut header and the preview. Placeholders: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_separator: Option<String>,
    /// Between the head and the tail of a cut slot's preview. Placeholders: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_marker: Option<String>,
    /// The shortest complete form of a cut slot, used when the full header does not fit the
    /// slot's share: it names one artifact whole, never part of a path. Placeholders: `{path}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<String>,
    /// Follows `cut_header` (or a truncation notice) when the full output could not be kept in an artifact. Placeholders: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_lost: Option<String>,
    /// The embedding program registered no native handler for the tool. Placeholders: `{tool}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_missing: Option<String>,
    /// Header before context entries added by hooks. Placeholders: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_context_header: Option<String>,
    /// Header before the warnings of `enforcement: warn` rules. Placeholders: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_warning_header: Option<String>,
    /// One warning of an `enforcement: warn` rule that would change the call's decision.
    /// Placeholders: `{rule}`, `{decision}` (what the call would get), `{reason}` (the rule's
    /// reason, or empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged_warning: Option<String>,
}

/// The situations a model-facing message exists for; one per field of [`Messages`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MessageKey {
    /// Unknown or empty tool name.
    ToolNotFound,
    /// A name that would reach an MCP server tool an exact contract runs.
    McpToolHasContract,
    /// Input failed the contract's schema.
    InputValidation,
    /// A handler reported a business failure.
    BusinessFailure,
    /// A PreToolUse hook denied without giving a reason.
    HookDenied,
    /// A rule denied and gave no `reason`.
    RuleDenied,
    /// The contract's default permission is `deny`.
    DefaultDenied,
    /// An approval request was answered no without a reason.
    ApprovalDenied,
    /// A person answered an approval request no and gave a reason.
    ApprovalDeniedReason,
    /// An approval request timed out and expired into a denial.
    ApprovalExpired,
    /// Approval was needed but no approval client is configured.
    NoPermissionClient,
    /// The call ran out of time.
    Timeout,
    /// The call was cancelled and its contract sets no `cancellation_message`.
    Cancelled,
    /// A call was cancelled because a sibling failed (`call_id` is the failed call).
    SiblingFailed,
    /// A call was not started because an earlier result stopped the turn.
    TurnStopped,
    /// The handler's output did not match the contract's `output_schema`.
    OutputSchema,
    /// Successful output that is empty.
    EmptyOutput,
    /// The line added to output cut by `overflow: truncate`.
    TruncationNotice,
    /// The notice line when an artifact could not be written for a reason with a stub.
    TruncationNoticeWithStub,
    /// The envelope replacing output written to an artifact; `more` is a line with `preview_omitted` when a head preview is shorter than the output, else empty.
    ArtifactEnvelope,
    /// `{preview_label}` of an envelope for `keep: head`.
    PreviewLabelHead,
    /// `{preview_label}` of an envelope for `keep: tail`.
    PreviewLabelTail,
    /// `{preview_label}` of an envelope for `keep: both`.
    PreviewLabelBoth,
    /// The line standing for the part of an output a preview leaves out.
    PreviewOmitted,
    /// Stub given instead of an artifact path when the call id cannot name a file.
    InvalidCallId,
    /// Stub given instead of an artifact path when the output is over `artifacts.max_file`.
    FileTooLarge,
    /// Starts a slot the batch finalizer cut (SPEC §8.3).
    CutHeader,
    /// Follows `cut_header` when one artifact holds the full output.
    CutOneArtifact,
    /// Follows `cut_header` when several artifacts hold the full output.
    CutManyArtifacts,
    /// One per artifact after `cut_many_artifacts`.
    CutArtifactItem,
    /// Ends the cut header.
    CutDigest,
    /// Between the cut header and the preview.
    CutSeparator,
    /// Between the head and the tail of a cut slot's preview.
    CutMarker,
    /// The shortest complete form of a cut slot, naming one artifact whole.
    CutShort,
    /// Says that the full output could not be kept in an artifact.
    OutputLost,
    /// The embedding program registered no native handler for the tool.
    NativeMissing,
    /// Header before context entries added by hooks.
    HookContextHeader,
    /// Header before the warnings of `enforcement: warn` rules.
    PolicyWarningHeader,
    /// One warning of an `enforcement: warn` rule.
    StagedWarning,
}

impl MessageKey {
    /// Every key, in declaration order.
    pub const ALL: &[MessageKey] = &[
        MessageKey::ToolNotFound,
        MessageKey::McpToolHasContract,
        MessageKey::InputValidation,
        MessageKey::BusinessFailure,
        MessageKey::HookDenied,
        MessageKey::RuleDenied,
        MessageKey::DefaultDenied,
        MessageKey::ApprovalDenied,
        MessageKey::ApprovalDeniedReason,
        MessageKey::ApprovalExpired,
        MessageKey::NoPermissionClient,
        MessageKey::Timeout,
        MessageKey::Cancelled,
        MessageKey::SiblingFailed,
        MessageKey::TurnStopped,
        MessageKey::OutputSchema,
        MessageKey::EmptyOutput,
        MessageKey::TruncationNotice,
        MessageKey::TruncationNoticeWithStub,
        MessageKey::ArtifactEnvelope,
        MessageKey::PreviewLabelHead,
        MessageKey::PreviewLabelTail,
        MessageKey::PreviewLabelBoth,
        MessageKey::PreviewOmitted,
        MessageKey::InvalidCallId,
        MessageKey::FileTooLarge,
        MessageKey::CutHeader,
        MessageKey::CutOneArtifact,
        MessageKey::CutManyArtifacts,
        MessageKey::CutArtifactItem,
        MessageKey::CutDigest,
        MessageKey::CutSeparator,
        MessageKey::CutMarker,
        MessageKey::CutShort,
        MessageKey::OutputLost,
        MessageKey::NativeMissing,
        MessageKey::HookContextHeader,
        MessageKey::PolicyWarningHeader,
        MessageKey::StagedWarning,
    ];

    /// The field name in `engine.messages`.
    pub fn field(self) -> &'static str {
        match self {
            MessageKey::ToolNotFound => "tool_not_found",
            MessageKey::McpToolHasContract => "mcp_tool_has_contract",
            MessageKey::InputValidation => "input_validation",
            MessageKey::BusinessFailure => "business_failure",
            MessageKey::HookDenied => "hook_denied",
            MessageKey::RuleDenied => "rule_denied",
            MessageKey::DefaultDenied => "default_denied",
            MessageKey::ApprovalDenied => "approval_denied",
            MessageKey::ApprovalDeniedReason => "approval_denied_reason",
            MessageKey::ApprovalExpired => "approval_expired",
            MessageKey::NoPermissionClient => "no_permission_client",
            MessageKey::Timeout => "timeout",
            MessageKey::Cancelled => "cancelled",
            MessageKey::SiblingFailed => "sibling_failed",
            MessageKey::TurnStopped => "turn_stopped",
            MessageKey::OutputSchema => "output_schema",
            MessageKey::EmptyOutput => "empty_output",
            MessageKey::TruncationNotice => "truncation_notice",
            MessageKey::TruncationNoticeWithStub => "truncation_notice_with_stub",
            MessageKey::ArtifactEnvelope => "artifact_envelope",
            MessageKey::PreviewLabelHead => "preview_label_head",
            MessageKey::PreviewLabelTail => "preview_label_tail",
            MessageKey::PreviewLabelBoth => "preview_label_both",
            MessageKey::PreviewOmitted => "preview_omitted",
            MessageKey::InvalidCallId => "invalid_call_id",
            MessageKey::FileTooLarge => "file_too_large",
            MessageKey::CutHeader => "cut_header",
            MessageKey::CutOneArtifact => "cut_one_artifact",
            MessageKey::CutManyArtifacts => "cut_many_artifacts",
            MessageKey::CutArtifactItem => "cut_artifact_item",
            MessageKey::CutDigest => "cut_digest",
            MessageKey::CutSeparator => "cut_separator",
            MessageKey::CutMarker => "cut_marker",
            MessageKey::CutShort => "cut_short",
            MessageKey::OutputLost => "output_lost",
            MessageKey::NativeMissing => "native_missing",
            MessageKey::HookContextHeader => "hook_context_header",
            MessageKey::PolicyWarningHeader => "policy_warning_header",
            MessageKey::StagedWarning => "staged_warning",
        }
    }

    /// The placeholders the template may use.
    pub fn placeholders(self) -> &'static [&'static str] {
        match self {
            MessageKey::ToolNotFound => &["tool"],
            MessageKey::McpToolHasContract => &["tool", "contract"],
            MessageKey::InputValidation => &["tool", "details"],
            MessageKey::BusinessFailure => &["tool", "message"],
            MessageKey::HookDenied => &["tool", "hook"],
            MessageKey::RuleDenied => &["tool", "rule"],
            MessageKey::DefaultDenied => &["tool"],
            MessageKey::ApprovalDenied => &["tool"],
            MessageKey::ApprovalDeniedReason => &["tool", "reason"],
            MessageKey::ApprovalExpired => &["tool", "ms"],
            MessageKey::NoPermissionClient => &["tool"],
            MessageKey::Timeout => &["tool", "ms"],
            MessageKey::Cancelled => &["tool", "reason"],
            MessageKey::SiblingFailed => &["tool", "call_id"],
            MessageKey::TurnStopped => &["tool"],
            MessageKey::OutputSchema => &["tool", "details"],
            MessageKey::EmptyOutput => &["tool"],
            MessageKey::TruncationNotice => &["original", "limit", "unit"],
            MessageKey::TruncationNoticeWithStub => &["notice", "stub"],
            MessageKey::ArtifactEnvelope => &[
                "original",
                "unit",
                "path",
                "preview_label",
                "preview_size",
                "preview",
                "more",
            ],
            MessageKey::PreviewLabelHead => &["size", "unit"],
            MessageKey::PreviewLabelTail => &["size", "unit"],
            MessageKey::PreviewLabelBoth => &["head", "tail", "unit"],
            MessageKey::PreviewOmitted => &[],
            MessageKey::InvalidCallId => &[],
            MessageKey::FileTooLarge => &[],
            MessageKey::CutHeader => &[],
            MessageKey::CutOneArtifact => &["path"],
            MessageKey::CutManyArtifacts => &[],
            MessageKey::CutArtifactItem => &["path"],
            MessageKey::CutDigest => &["sha256"],
            MessageKey::CutSeparator => &[],
            MessageKey::CutMarker => &[],
            MessageKey::CutShort => &["path"],
            MessageKey::OutputLost => &[],
            MessageKey::NativeMissing => &["tool"],
            MessageKey::HookContextHeader => &[],
            MessageKey::PolicyWarningHeader => &[],
            MessageKey::StagedWarning => &["rule", "decision", "reason"],
        }
    }
}

impl Messages {
    /// The template for a key, if set.
    pub fn get(&self, key: MessageKey) -> Option<&str> {
        match key {
            MessageKey::ToolNotFound => self.tool_not_found.as_deref(),
            MessageKey::McpToolHasContract => self.mcp_tool_has_contract.as_deref(),
            MessageKey::InputValidation => self.input_validation.as_deref(),
            MessageKey::BusinessFailure => self.business_failure.as_deref(),
            MessageKey::HookDenied => self.hook_denied.as_deref(),
            MessageKey::RuleDenied => self.rule_denied.as_deref(),
            MessageKey::DefaultDenied => self.default_denied.as_deref(),
            MessageKey::ApprovalDenied => self.approval_denied.as_deref(),
            MessageKey::ApprovalDeniedReason => self.approval_denied_reason.as_deref(),
            MessageKey::ApprovalExpired => self.approval_expired.as_deref(),
            MessageKey::NoPermissionClient => self.no_permission_client.as_deref(),
            MessageKey::Timeout => self.timeout.as_deref(),
            MessageKey::Cancelled => self.cancelled.as_deref(),
            MessageKey::SiblingFailed => self.sibling_failed.as_deref(),
            MessageKey::TurnStopped => self.turn_stopped.as_deref(),
            MessageKey::OutputSchema => self.output_schema.as_deref(),
            MessageKey::EmptyOutput => self.empty_output.as_deref(),
            MessageKey::TruncationNotice => self.truncation_notice.as_deref(),
            MessageKey::TruncationNoticeWithStub => self.truncation_notice_with_stub.as_deref(),
            MessageKey::ArtifactEnvelope => self.artifact_envelope.as_deref(),
            MessageKey::PreviewLabelHead => self.preview_label_head.as_deref(),
            MessageKey::PreviewLabelTail => self.preview_label_tail.as_deref(),
            MessageKey::PreviewLabelBoth => self.preview_label_both.as_deref(),
            MessageKey::PreviewOmitted => self.preview_omitted.as_deref(),
            MessageKey::InvalidCallId => self.invalid_call_id.as_deref(),
            MessageKey::FileTooLarge => self.file_too_large.as_deref(),
            MessageKey::CutHeader => self.cut_header.as_deref(),
            MessageKey::CutOneArtifact => self.cut_one_artifact.as_deref(),
            MessageKey::CutManyArtifacts => self.cut_many_artifacts.as_deref(),
            MessageKey::CutArtifactItem => self.cut_artifact_item.as_deref(),
            MessageKey::CutDigest => self.cut_digest.as_deref(),
            MessageKey::CutSeparator => self.cut_separator.as_deref(),
            MessageKey::CutMarker => self.cut_marker.as_deref(),
            MessageKey::CutShort => self.cut_short.as_deref(),
            MessageKey::OutputLost => self.output_lost.as_deref(),
            MessageKey::NativeMissing => self.native_missing.as_deref(),
            MessageKey::HookContextHeader => self.hook_context_header.as_deref(),
            MessageKey::PolicyWarningHeader => self.policy_warning_header.as_deref(),
            MessageKey::StagedWarning => self.staged_warning.as_deref(),
        }
    }
}
