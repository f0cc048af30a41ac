//! The tool contract (SPEC §3): everything the engine knows about one tool, as data.
//!
//! Every field is optional in a file because layers override each other field by field; the
//! snapshot builder merges the layers and fills what is still missing from the engine
//! defaults (`engine.budget`, `engine.default_timeout`, `engine.default_permission`).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Decision;
use super::handler::HandlerSpec;
use super::ids::GateName;
use super::units::{Duration, Size};

/// One tool's contract.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolContract {
    /// Other names the model may use for this tool; resolved to the canonical name before
    /// anything else happens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aliases: Option<Vec<String>>,

    /// What the tool does, for humans (`explain`, reviews).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,

    /// JSON Schema (draft 2020-12) of the call's input; calls are validated against it.
    /// Absent means any object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_json_schema")]
    pub input_schema: Option<serde_json::Value>,

    /// JSON Schema of the handler's output; a mismatch is a non-recoverable error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_json_schema")]
    pub output_schema: Option<serde_json::Value>,

    /// Scheduling flags: which calls may share a group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<ConcurrencySpec>,

    /// How long a call may run: `none`, or a timeout policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<TimeoutSpec>,

    /// How much of the output the model sees, and what happens to the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetPolicy>,

    /// Permission when no rule matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionDefaults>,

    /// What outcomes of this tool do to the turn. Keys: `success`, `denied`,
    /// `denied_with_feedback`, `error:<code>`, `limit:<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "turn_control_schema")]
    pub turn_control: Option<IndexMap<String, TurnControlEntry>>,

    /// Admission control before the handler starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,

    /// How the result is projected for a user interface (never mixed into model content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<DisplaySpec>,

    /// What a failed call of this tool does to its siblings; overrides `engine.on_failure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<OnFailure>,

    /// How the call is executed. Absent means `native`: the embedding program provides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler: Option<HandlerSpec>,

    /// Contract fields (dotted paths such as `timeout.max` or `permission.always_ask`) that
    /// later layers may not change. Only honoured in an enforced layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked: Option<Vec<String>>,

    /// Field overrides that apply while a mode is active, keyed by mode name; applied in the
    /// order written, after the layers are merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<IndexMap<String, ContractPatch>>,
}

/// The fields a mode may override in a contract.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContractPatch {
    /// Scheduling flags while the mode is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<ConcurrencySpec>,
    /// Timeout while the mode is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<TimeoutSpec>,
    /// Budget while the mode is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetPolicy>,
    /// Permission defaults while the mode is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionDefaults>,
    /// Turn control while the mode is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "turn_control_schema")]
    pub turn_control: Option<IndexMap<String, TurnControlEntry>>,
    /// Admission while the mode is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
}

fn any_json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "A JSON Schema (draft 2020-12), checked against the meta-schema at load time.",
        "type": ["object", "boolean"]
    })
}

fn turn_control_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let entry = generator.subschema_for::<TurnControlEntry>();
    schemars::json_schema!({
        "description": "Outcome → action. Keys: `success`, `denied`, `denied_with_feedback`, `error:<code>`, `limit:<name>`.",
        "type": "object",
        "propertyNames": { "pattern": TURN_CONTROL_KEY_PATTERN },
        "additionalProperties": entry
    })
}

/// Keys of `turn_control`.
pub const TURN_CONTROL_KEY_PATTERN: &str =
    r"^(success|denied|denied_with_feedback|error:[A-Za-z][A-Za-z0-9_]*|limit:[A-Za-z0-9_-]+)$";

// As a contract writes them; the snapshot resolves them into `ResolvedConcurrency`, and the
// scheduler turns those into a call's scheduling class.
/// Scheduling flags (SPEC §4).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// The schema keeps the name it always had.
#[schemars(rename = "Concurrency")]
pub struct ConcurrencySpec {
    /// May share a group with other concurrent-safe calls. Default `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_safe: Option<bool>,
    /// Always runs alone. Default `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Informational and usable by rules; counts as read-only for scheduling only when
    /// `side_effect_scope` is `none`. Default `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// What the tool's side effects reach. Default `workspace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_effect_scope: Option<SideEffectScope>,
}

/// What a tool's side effects reach.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SideEffectScope {
    /// No side effects.
    None,
    /// Only the agent session's own state (todo lists, plans).
    Session,
    /// Files of the workspace.
    #[default]
    Workspace,
    /// The world outside the machine (network writes, deployments).
    External,
}

/// `timeout: none`, or a timeout policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TimeoutSpec {
    /// `none`: the call never times out.
    None(NoneKeyword),
    /// A timeout policy.
    Policy(TimeoutPolicy),
}

/// The word `none`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoneKeyword {
    /// `none`.
    None,
}

/// How long a call may run (SPEC §5.1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimeoutPolicy {
    /// Timeout when the call does not request one (falls back to `engine.default_timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Duration>,
    /// Cap on any requested timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Duration>,
    /// Input field (milliseconds) through which a call may request its own timeout, e.g.
    /// `timeout` or `timeout_ms`. Absent: calls cannot override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_field: Option<String>,
    /// Margin added on top, for tools that enforce their own timeout; also how long a
    /// cancelled handler gets to clean up before the engine stops waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup_grace: Option<Duration>,
    /// What the model is told when the call is cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancellation_message: Option<String>,
}

/// How much of the output the model sees (SPEC §8.1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetPolicy {
    /// Largest model content of one call; the effective limit is the smaller of this and
    /// `max_inline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model: Option<Size>,
    /// Largest output kept inline; the effective limit is the smaller of this and
    /// `max_model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_inline: Option<Size>,
    /// What happens to output over the limit: `artifact` (written to a file, the model gets a
    /// preview and the path) or `truncate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflow: Option<Overflow>,
    /// Which part is kept: `head`, `tail` or `both`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<Keep>,
    /// Size of the preview in an artifact envelope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<Size>,
    /// Share of the batch budget relative to other results (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub weight: Option<u32>,
    /// Smallest share of the batch budget this result gets when it needs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_share: Option<Size>,
    /// The output is policy input (e.g. a plan-mode instruction) and is never shortened by
    /// the batch finalizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_exempt: Option<bool>,
    /// How long artifacts are kept: `temporary`, `session` or `project`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<Retention>,
}

/// What happens to output over the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Overflow {
    /// Written to the artifact store; the model gets an envelope with a preview.
    Artifact,
    /// Cut, with a one-line notice.
    Truncate,
}

/// Which part of a cut output is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Keep {
    /// The beginning.
    Head,
    /// The end (exit codes and errors of commands are usually there).
    Tail,
    /// Both ends.
    Both,
}

/// How long artifacts are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Retention {
    /// Removed when the session ends.
    Temporary,
    /// Kept in the session folder.
    Session,
    /// Written under the project (`engine.artifacts.project_dir`).
    Project,
}

/// Permission when no rule matches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionDefaults {
    /// `allow`, `ask` or `deny` when no rule matches (falls back to
    /// `engine.default_permission`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Decision>,
    /// An `allow` from rules or hooks becomes `ask`: only an explicit approval runs the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always_ask: Option<bool>,
}

/// An action, or an action with a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TurnControlEntry {
    /// Just the action.
    Action(TurnAction),
    /// The action with a message.
    Detailed(TurnControlDetail),
}

/// An action with a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnControlDetail {
    /// What happens.
    pub action: TurnAction,
    /// Text given to the model (for `stop_turn`/`cancel_rest_of_batch`) or put before the
    /// reviewer's feedback (for `inject_feedback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// What an outcome does to the turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnAction {
    /// Every later group of the batch is cancelled and the turn ends.
    StopTurn,
    /// The calls of the batch that have not started are cancelled.
    CancelRestOfBatch,
    /// A reviewer's comment becomes a user message.
    InjectFeedback,
}

/// Admission control.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Admission {
    /// A gate (declared under `gates`) the call must pass before its handler starts; time
    /// queued there does not count against the timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateName>,
}

/// How a result is projected for a user interface.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DisplaySpec {
    /// The kind of display: `text`, `command_output`, `json`, `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<DisplayKind>,
    /// Largest display, in bytes; budgeted separately from model content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<Size>,
    /// When the display is produced: `always`, or `when_cut` (only when the model content was
    /// cut, so the user still sees what the model did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<DisplayWhen>,
}

/// The kind of display.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DisplayKind {
    /// Plain text.
    Text,
    /// A command's output with its exit status.
    CommandOutput,
    /// The output as JSON.
    Json,
    /// No display.
    None,
}

/// When the display is produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DisplayWhen {
    /// For every result.
    Always,
    /// Only when the model content was cut.
    WhenCut,
}

/// What a failed call does to its siblings (SPEC §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Each call stands alone.
    Continue,
    /// The failed call's still-running group-mates are cancelled.
    CancelGroup,
    /// Every call of the batch that has not finished is cancelled.
    CancelBatch,
}
