//! Pure data: the typed model of policy files (engine config, tool contracts, rules, hooks,
//! gates, modes) with serde and schemars derives. Nothing here does I/O or async work.

pub mod ids;
pub mod units;

pub use ids::{BatchId, CallId, GateName, HookName, ModeName, RuleName, ToolName};
pub use units::{BudgetUnit, Duration, Limit, Size};
