//! The batch finalizer applied to call results (SPEC §8.3): results become finalizer items
//! (hook context as a top-level text slot, then the output or the error), the finalizer
//! shares the batch budget, and the finalized texts and persistence decisions are written
//! back. `PostToolBatch` text is budgeted as one more item after the results.

use std::path::PathBuf;

use serde::Serialize;

use crate::budget::measure::measure;
use crate::budget::{
    ArtifactTarget, Budgeting, FinalizeConfig, FinalizeItem, ItemStatus, Persistence, Slot,
    SlotKind, finalize,
};
use crate::events::{ArtifactStage, ArtifactWriteFailed, EventKind};
use crate::model::CallId;
use crate::pipeline::{CallEnv, CallResult};

/// The item id of the `PostToolBatch` text.
pub const BATCH_CONTEXT_ID: &str = "batch-context";

/// What the finalizer did to one result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CutReport {
    /// The call (or `batch-context`).
    pub call_id: CallId,
    /// Whether its text was shortened.
    pub cut: bool,
    /// Its text before, in the budget unit.
    pub original_size: u64,
    /// Its text after.
    pub final_size: u64,
    /// Artifacts holding its full text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persisted_files: Option<Vec<PathBuf>>,
}

/// The finalizer's report for a batch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FinalizeReport {
    /// Per result, in batch order (plus the batch context, if any).
    pub cuts: Vec<CutReport>,
    /// The batch context as finalized.
    pub batch_context: Option<String>,
}

/// The finalizer's view of a batch's results: per result its hook context (a top-level text
/// slot) and its output or error, its non-text parts, persistence decision and budget
/// settings; the `PostToolBatch` text, if any, as one more item named [`BATCH_CONTEXT_ID`].
/// Texts are shared with the results, not copied.
pub fn items(results: &[CallResult], batch_context: Option<&str>) -> Vec<FinalizeItem> {
    let mut items: Vec<FinalizeItem> = results
        .iter()
        .map(|result| {
            let mut slots = Vec::new();
            if let Some(context) = &result.hook_context {
                slots.push(Slot::new(SlotKind::Text, context.as_str()));
            }
            let kind = if result.is_ok() {
                SlotKind::Output
            } else {
                SlotKind::Error
            };
            // Shared, not copied: the producer stage already measured and hashed it.
            slots.push(Slot::new(kind, result.model_content.clone()));
            let mut item = FinalizeItem::new(result.call_id.clone(), slots);
            item.non_text = result.parts.clone();
            item.persisted_files = result.metadata.persisted_files.clone();
            item.budgeting = if result.batch_exempt {
                Budgeting::Exempt
            } else {
                Budgeting::Counted
            };
            item.weight = result.weight.0;
            item.min_share = result.weight.1;
            item
        })
        .collect();
    if let Some(text) = batch_context {
        items.push(FinalizeItem::new(
            BATCH_CONTEXT_ID,
            vec![Slot::new(SlotKind::Text, text)],
        ));
    }
    items
}

/// Finalizes the results in place; `batch_context` is the `PostToolBatch` text, if any.
///
/// A cut result gets its new texts, `truncated`, the size of its new model content as
/// `final_size` (its `original_size` stays the size of the output), its `persisted_files`,
/// and its pending `when_cut` display.
pub async fn finalize_results(
    env: &CallEnv<'_>,
    results: &mut [CallResult],
    batch_context: Option<String>,
) -> FinalizeReport {
    let config = config_of(env);
    if batch_context.is_none()
        && let Some(report) = fits(results, &config)
    {
        return report;
    }
    let target = env.store.map(|store| ArtifactTarget {
        store,
        session: env.session,
    });
    let input = items(results, batch_context.as_deref());
    let outcome = finalize(&input, &config, target).await;
    let mut report = FinalizeReport::default();
    for (index, (item, item_report)) in outcome.items.iter().zip(&outcome.reports).enumerate() {
        if let Persistence::Failed(error) = &item_report.persistence {
            env.emit(
                Some(&item_report.call_id),
                EventKind::ArtifactWriteFailed(ArtifactWriteFailed {
                    stage: ArtifactStage::Finalizer,
                    error: error.to_string(),
                    size: item_report.original_size,
                }),
            );
        }
        let cut = item_report.status == ItemStatus::Cut;
        report.cuts.push(CutReport {
            call_id: item_report.call_id.clone(),
            cut,
            original_size: item_report.original_size,
            final_size: item_report.final_size,
            persisted_files: item_report.persisted_files.clone(),
        });
        let Some(result) = results.get_mut(index) else {
            // The extra item after the results is the batch context.
            report.batch_context = item.slots.first().map(|slot| slot.text.as_str().to_owned());
            continue;
        };
        if !cut {
            continue;
        }
        for slot in &item.slots {
            match slot.kind {
                SlotKind::Text => result.hook_context = Some(slot.text.as_str().to_owned()),
                SlotKind::Output | SlotKind::Error => {
                    result.metadata.final_size = slot.text.len(config.unit);
                    result.model_content = slot.text.clone();
                }
            }
        }
        result.metadata.truncated = true;
        result.metadata.persisted_files = item_report.persisted_files.clone();
        if result.display.is_none()
            && let Some(pending) = result.pending_display.take()
        {
            result.display = pending.project();
        }
    }
    report
}

/// The finalizer's settings from the engine settings of the batch's snapshot.
fn config_of<'a>(env: &'a CallEnv<'_>) -> FinalizeConfig<'a> {
    let engine = &env.prepared.snapshot.engine;
    FinalizeConfig {
        budget: engine.batch_budget,
        unit: engine.budget_unit,
        templates: &env.prepared.templates,
        retention: engine.artifacts.retention,
        max_files: Some(engine.artifacts.max_batch_files),
    }
}

/// The report of results that fit the batch budget together (or have none to fit), read
/// from the results themselves: the same report [`finalize_results`] gives for them (without
/// a batch context), without building the finalizer's items and without awaiting anything.
/// `None` when something has to be cut.
pub fn report_if_fits(env: &CallEnv<'_>, results: &[CallResult]) -> Option<FinalizeReport> {
    let config = config_of(env);
    fits(results, &config)
}

fn fits(results: &[CallResult], config: &FinalizeConfig<'_>) -> Option<FinalizeReport> {
    let unit = config.unit;
    // An item's size as the finalizer counts it: its hook context slot plus its output or
    // error slot.
    let sizes: Vec<u64> = results
        .iter()
        .map(|result| {
            let context = result
                .hook_context
                .as_deref()
                .map_or(0, |text| measure(text, unit));
            context.saturating_add(result.model_content.len(unit))
        })
        .collect();
    // `Units(0)` disables like `none` (as in the finalizer).
    if let Some(budget) = config.budget.units().filter(|&budget| budget > 0) {
        let total = results
            .iter()
            .zip(&sizes)
            .filter(|(result, _)| !result.batch_exempt)
            .fold(0u64, |total, (_, &size)| total.saturating_add(size));
        if total > budget {
            return None;
        }
    }
    let cuts = results
        .iter()
        .zip(sizes)
        .map(|(result, size)| CutReport {
            call_id: result.call_id.clone(),
            cut: false,
            original_size: size,
            final_size: size,
            persisted_files: result.metadata.persisted_files.clone(),
        })
        .collect();
    Some(FinalizeReport {
        cuts,
        batch_context: None,
    })
}

/// Gives each result the persistence decision a finalized copy of it holds, so that
/// finalizing the unfinalized results again reuses the artifacts the first pass wrote
/// instead of writing them twice.
pub fn carry_persistence(results: &mut [CallResult], finalized: &[CallResult]) {
    for (result, done) in results.iter_mut().zip(finalized) {
        if result.metadata.persisted_files.is_none() {
            result
                .metadata
                .persisted_files
                .clone_from(&done.metadata.persisted_files);
        }
    }
}

/// Drops the displays that waited for a cut that did not come.
pub fn drop_pending_displays(results: &mut [CallResult]) {
    for result in results {
        result.pending_display = None;
    }
}
