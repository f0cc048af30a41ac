//! The batch finalizer applied to call results (SPEC §8.3): results become finalizer items
//! (hook context as a top-level text slot, then the output or the error), the finalizer
//! shares the batch budget, and the finalized texts and persistence decisions are written
//! back. `PostToolBatch` text is budgeted as one more item after the results.
//!
//! Most batches fit their budget as they are. Their byte length is an upper bound of their
//! length in either unit, so when the bytes already fit, nothing can be cut and the report is
//! built directly, without copying every text into finalizer items.

use std::path::PathBuf;

use serde::Serialize;

use crate::budget::measure::measure;
use crate::budget::{
    ArtifactTarget, BatchBudget, Budgeting, FinalizeConfig, FinalizeItem, ItemStatus, Slot,
    SlotKind, SlotText, finalize,
};
use crate::model::{BudgetUnit, CallId};
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

/// Whether the texts fit the budget without measuring them: the budget is off, or their
/// bytes (at least as many as their characters) fit. Exempt results count too, which can only
/// make the test stricter.
fn fits_as_is(results: &[CallResult], batch_context: Option<&str>, budget: BatchBudget) -> bool {
    // `Units(0)` disables like `none`, as the finalizer reads it.
    let Some(budget) = budget.units().filter(|&budget| budget > 0) else {
        return true;
    };
    let bytes = results
        .iter()
        .map(|r| r.model_content.len() + r.hook_context.as_ref().map_or(0, String::len))
        .chain(batch_context.map(str::len))
        .fold(0u64, |sum, len| sum.saturating_add(len as u64));
    bytes <= budget
}

/// The report of a batch the finalizer leaves as it is (what [`finalize`] reports then).
fn untouched(
    results: &[CallResult],
    batch_context: Option<String>,
    unit: BudgetUnit,
) -> FinalizeReport {
    let mut cuts: Vec<CutReport> = results
        .iter()
        .map(|result| {
            let size = measure(&result.model_content, unit)
                + result
                    .hook_context
                    .as_deref()
                    .map_or(0, |c| measure(c, unit));
            CutReport {
                call_id: result.call_id.clone(),
                cut: false,
                original_size: size,
                final_size: size,
                persisted_files: result.metadata.persisted_files.clone(),
            }
        })
        .collect();
    if let Some(context) = &batch_context {
        let size = measure(context, unit);
        cuts.push(CutReport {
            call_id: CallId::new(BATCH_CONTEXT_ID),
            cut: false,
            original_size: size,
            final_size: size,
            persisted_files: None,
        });
    }
    FinalizeReport {
        cuts,
        batch_context,
    }
}

fn items(results: &[CallResult], batch_context: Option<&str>) -> Vec<FinalizeItem> {
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
            // The producer stage's text carries the measurements already taken; a content
            // changed since is wrapped afresh.
            let text = match &result.prepared {
                Some(prepared) if prepared.as_str() == result.model_content => prepared.clone(),
                Some(_) | None => SlotText::new(result.model_content.as_str()),
            };
            slots.push(Slot::new(kind, text));
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
pub async fn finalize_results(
    env: &CallEnv<'_>,
    results: &mut [CallResult],
    batch_context: Option<String>,
) -> FinalizeReport {
    let engine = &env.prepared.snapshot.engine;
    let config = FinalizeConfig {
        budget: engine.batch_budget,
        unit: engine.budget_unit,
        templates: &env.prepared.templates,
        retention: engine.artifacts.retention,
    };
    let target = env.store.map(|store| ArtifactTarget {
        store,
        session: env.session,
    });
    if fits_as_is(results, batch_context.as_deref(), config.budget) {
        return untouched(results, batch_context, config.unit);
    }
    let input = items(results, batch_context.as_deref());
    let outcome = finalize(&input, &config, target).await;
    let mut report = FinalizeReport::default();
    for (index, (item, item_report)) in outcome.items.iter().zip(&outcome.reports).enumerate() {
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
                    result.model_content = slot.text.as_str().to_owned();
                    result.prepared = Some(slot.text.clone());
                }
            }
        }
        result.metadata.truncated = true;
        result.metadata.final_size = item_report.final_size;
        result.metadata.persisted_files = item_report.persisted_files.clone();
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Templates;
    use crate::events::CallStatus;
    use crate::model::contract::Retention;
    use crate::pipeline::ResultMetadata;

    fn result(id: &str, content: &str, context: Option<&str>, exempt: bool) -> CallResult {
        CallResult {
            call_id: CallId::new(id),
            tool: "T".into(),
            canonical_tool: None,
            status: CallStatus::Ok,
            model_content: content.into(),
            hook_context: context.map(str::to_owned),
            parts: Vec::new(),
            metadata: ResultMetadata {
                persisted_files: exempt.then(|| vec![PathBuf::from("/tmp/a.txt")]),
                ..ResultMetadata::default()
            },
            error: None,
            permission: None,
            display: None,
            turn: None,
            batch_exempt: exempt,
            weight: (1, 0),
            prepared: Some(SlotText::new(content)),
        }
    }

    /// The fast path reports exactly what the finalizer reports for a batch that fits.
    #[tokio::test]
    async fn the_fast_path_matches_the_finalizer_on_a_batch_that_fits() {
        let results = vec![
            result("a", "héllo wörld 日本", None, false),
            result("b", "", Some("context ✓"), false),
            result("c", "exempt output", None, true),
        ];
        let templates = Templates::spec_defaults();
        for unit in [BudgetUnit::Chars, BudgetUnit::Bytes] {
            for context in [None, Some("batch context ✓".to_owned())] {
                let config = FinalizeConfig {
                    budget: BatchBudget::Units(1000),
                    unit,
                    templates: &templates,
                    retention: Retention::Session,
                };
                assert!(fits_as_is(&results, context.as_deref(), config.budget));
                let outcome = finalize(&items(&results, context.as_deref()), &config, None).await;
                let expected: Vec<CutReport> = outcome
                    .reports
                    .iter()
                    .map(|r| CutReport {
                        call_id: r.call_id.clone(),
                        cut: r.status == ItemStatus::Cut,
                        original_size: r.original_size,
                        final_size: r.final_size,
                        persisted_files: r.persisted_files.clone(),
                    })
                    .collect();
                let fast = untouched(&results, context.clone(), unit);
                assert_eq!(fast.cuts, expected, "{unit:?} {context:?}");
                assert_eq!(fast.batch_context, context);
            }
        }
    }

    #[test]
    fn only_a_batch_whose_bytes_fit_takes_the_fast_path() {
        let results = vec![result("a", "12345", Some("678"), false)];
        assert!(fits_as_is(&results, None, BatchBudget::Units(8)));
        assert!(!fits_as_is(&results, None, BatchBudget::Units(7)));
        assert!(!fits_as_is(&results, Some("x"), BatchBudget::Units(8)));
        assert!(fits_as_is(&results, None, BatchBudget::Disabled));
        assert!(fits_as_is(&results, None, BatchBudget::Units(0)));
        // Three characters, six bytes: the byte test is conservative.
        let wide = vec![result("a", "日本語", None, false)];
        assert!(!fits_as_is(&wide, None, BatchBudget::Units(5)));
    }
}
