//! The decision log's record (`toolgate schema decision-log`): one permission decision with
//! the rule behind it, as one JSON line. Pure data; writing it is `decision_log`'s business.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Decision;

/// The version of the record format.
pub const RECORD_VERSION: u32 = 1;

/// The text a masked value is replaced with.
pub const MASK: &str = "[redacted]";

/// One logged decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionRecord {
    /// Format version (currently 1).
    pub version: u32,
    /// A unique id of this decision (a UUID).
    pub id: String,
    /// When it was decided (RFC 3339, UTC).
    pub time: String,
    /// The agent whose hook asked (`claude`, `codex`, `gemini`, …), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The agent's session id, if it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The hook event (`PreToolUse`, `BeforeTool`, …), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The tool as the caller named it.
    pub tool: String,
    /// The toolgate tools that decided it (several when a call was split, e.g. one per file
    /// of a patch); empty when the tool is unknown to the policy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub toolgate_tools: Vec<String>,
    /// The call's input as the caller sent it, with secrets masked (or, when too large, its
    /// size and SHA-256 as `{"omitted_bytes": n, "sha256": "…"}`).
    pub input: Value,
    /// The answer: `allow`, `ask`, `deny`, or `defer` (left to the agent's own rules).
    pub decision: LoggedDecision,
    /// Who decided.
    pub decided_by: DecidedBy,
    /// The deciding rule, if a rule decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Where that rule is defined (`file:line`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The reason given to the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The policy snapshot's generation (0 when the policies did not load).
    pub generation: u64,
    /// SHA-256 of the policy set's files (paths and contents, in load order); absent when the
    /// policies did not load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_hash: Option<String>,
    /// How long the decision took, in microseconds (loading the policies included).
    pub elapsed_us: u64,
    /// Rules not enforced yet (`enforcement: warn | audit`) that would have changed the
    /// decision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub staged: Vec<StagedRecord>,
}

/// A rule not enforced yet that would have changed a logged decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StagedRecord {
    /// The rule.
    pub rule: String,
    /// `warn` or `audit`.
    pub enforcement: super::rule::Enforcement,
    /// The decision the call would have got with the rule enforced.
    pub would: LoggedDecision,
    /// Where the rule is defined (`file:line`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// A logged answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoggedDecision {
    /// The call may run.
    Allow,
    /// A person must approve it.
    Ask,
    /// It must not run.
    Deny,
    /// toolgate left it to the agent's own rules (a tool the policy does not know).
    Defer,
}

impl From<Decision> for LoggedDecision {
    fn from(decision: Decision) -> Self {
        match decision {
            Decision::Allow => LoggedDecision::Allow,
            Decision::Ask => LoggedDecision::Ask,
            Decision::Deny => LoggedDecision::Deny,
        }
    }
}

/// Who (or what) made a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// A permission rule.
    Rule,
    /// The contract's default (no rule matched).
    Default,
    /// What rules cannot judge (a line that does not parse, a command chosen at run time).
    Analysis,
    /// A toolgate hook.
    Hook,
    /// The contract's `always_ask`.
    AlwaysAsk,
    /// A person answering an approval request.
    Person,
    /// An approval request that expired.
    Expiry,
    /// Nobody: the tool is unknown to the policy, or its mapping names no toolgate tool.
    UnknownTool,
    /// The call's input does not fit the toolgate tool's contract.
    InvalidInput,
    /// The policies did not load (or the agent's payload was unreadable): fail-closed answer.
    Error,
}
