//! Batch files (`toolgate plan BATCH`, `toolgate run BATCH`) and policy test files
//! (`toolgate test`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Decision;

/// The most calls one batch may hold: each is planned, run and reported, and one reply holds
/// every one (600 000 small calls took 2.9 GB). More are sent as several batches.
pub const MAX_CALLS: usize = 10_000;

/// A batch of tool calls as one model reply gave them, in order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchFile {
    /// The JSON Schema this file follows (for editors); ignored.
    #[serde(default, rename = "$schema", skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Modes of the turn (each must be declared under `modes` in the policies).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<String>,
    /// The calls, in the model's order.
    #[schemars(length(max = MAX_CALLS))]
    pub calls: Vec<BatchCall>,
}

/// One tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchCall {
    /// The call's id, unique within the batch.
    pub id: String,
    /// Tool name or alias, as the model wrote it.
    pub tool: String,
    /// The input: an object, or a JSON string holding one.
    #[serde(default)]
    pub input: serde_json::Value,
}

/// A policy test file: calls with the decision (and optionally timeout, budget, scheduling)
/// the policies must give them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyTestFile {
    /// Format version; currently `1`.
    #[schemars(range(min = 1, max = 1))]
    pub version: u32,
    /// The JSON Schema this file follows (for editors); ignored.
    #[serde(default, rename = "$schema", skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The tests.
    pub tests: Vec<PolicyTest>,
}

/// One policy test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyTest {
    /// What the test checks.
    pub name: String,
    /// The call.
    pub call: TestCall,
    /// Modes of the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Vec<String>>,
    /// What the policies must say.
    pub expect: Expectation,
}

/// A call under test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestCall {
    /// Tool name or alias.
    pub tool: String,
    /// The input.
    #[serde(default)]
    pub input: serde_json::Value,
}

/// Expected results; only the fields given are checked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// The permission decision before any approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// The rule that decides (absent rule: use `default` to expect the contract default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The resolved timeout in milliseconds; `0` expects no timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The effective model budget (`min(max_model, max_inline)`) in budget units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<u64>,
    /// How the call is scheduled: `shared` (may run with others) or `alone`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupExpectation>,
}

/// Scheduling class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupExpectation {
    /// May share a group with other concurrent-safe calls.
    Shared,
    /// Runs alone.
    Alone,
}
