//! `toolgate plan BATCH`: what would happen, without running anything.

use std::path::Path;

use crate::executor::Plan;
use crate::load::Diagnostic;
use crate::snapshot::load;

use super::GlobalOptions;

/// Why there is no plan.
#[derive(Clone, Debug)]
pub enum PlanError {
    /// The policies do not load.
    Policies(Vec<Diagnostic>),
    /// The batch file is invalid.
    Batch(Vec<Diagnostic>),
}

/// Loads the policies and the batch, and plans it.
pub fn plan(global: &GlobalOptions, batch: &Path) -> Result<Plan, PlanError> {
    let outcome = load(&global.load_options(), 1);
    let Some(snapshot) = outcome.snapshot else {
        return Err(PlanError::Policies(outcome.diagnostics));
    };
    let (batch, modes) =
        super::batch_file::load_batch(batch, &snapshot).map_err(PlanError::Batch)?;
    Ok(crate::executor::plan::plan(&snapshot, &batch, &modes))
}
