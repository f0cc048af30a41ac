//! `toolgate plan BATCH`: what would happen, without running anything.

use std::path::Path;

use crate::diagnostics::Diagnostic;
use crate::executor::Plan;

use super::GlobalOptions;

/// Why there is no plan.
#[derive(Clone, Debug)]
pub enum PlanError {
    /// The policies do not load.
    Policies(Vec<Diagnostic>),
    /// The batch file is invalid.
    Batch(Vec<Diagnostic>),
}

/// Loads the policies with `load` (a fresh load, or one of the hook server's kept sets) and
/// the batch (a relative path is read in the folder `base`: the server's client's), plans
/// it, and hands the plan (which borrows the batch) to `show`.
pub fn plan_with<R>(
    global: &GlobalOptions,
    base: &Path,
    batch: &Path,
    load: &super::hook_server::Loader<'_>,
    show: impl FnOnce(&Plan<'_>) -> R,
) -> Result<R, PlanError> {
    let outcome = load(&global.load_options());
    let Some(snapshot) = outcome.snapshot else {
        return Err(PlanError::Policies(outcome.diagnostics));
    };
    let (batch, modes) =
        super::batch_file::load_batch_in(base, batch, &snapshot).map_err(PlanError::Batch)?;
    Ok(show(&crate::executor::plan::plan(
        &snapshot, &batch, &modes,
    )))
}
