//! `toolgate explain`: load the policy set and explain one tool (the report's shape is in
//! `report::explain`, shared with `serve`).

use crate::report::explain::explain_in;
pub use crate::report::explain::{ExplainError, ExplainReport};
use crate::snapshot::load;

use super::GlobalOptions;

/// Loads the policy set and explains `tool`.
pub fn explain(global: &GlobalOptions, tool: &str) -> Result<ExplainReport, ExplainError> {
    let outcome = load(&global.load_options(), 1);
    let Some(snapshot) = outcome.snapshot else {
        return Err(ExplainError::Invalid(outcome.diagnostics));
    };
    explain_in(&snapshot, tool)
}
