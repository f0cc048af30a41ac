//! Pure data: the typed model of policy files (engine config, tool contracts, rules, hooks,
//! gates, modes) with serde and schemars derives. Nothing here does I/O or async work.
//!
//! Every field of a file is optional (except `version` and the names and decisions that
//! identify rules and hooks) because layers override each other field by field; the snapshot
//! builder resolves what is still missing from the engine defaults.

pub mod agent;
pub mod batch;
pub mod command;
pub mod contract;
pub mod decision_log;
pub mod engine_config;
pub mod file;
pub mod handler;
pub mod hook;
pub mod ids;
pub mod mcp;
pub mod resolved;
pub mod review;
pub mod rule;
pub mod schema;
pub mod template;
pub mod units;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use contract::ToolContract;
pub use engine_config::EngineConfig;
pub use file::PolicyFile;
pub use ids::{BatchId, CallId, GateName, HookName, ModeName, RuleName, ToolName};
pub use units::{BudgetUnit, Duration, Limit, Size};

/// A permission decision. Ordered by strictness so that the strictest of several wins with
/// `max()`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The call runs.
    Allow,
    /// The call runs only after approval.
    Ask,
    /// The call does not run.
    Deny,
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        })
    }
}
