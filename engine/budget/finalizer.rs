//! The batch finalizer (SPEC §8.3): the model-facing text of all results of a batch together
//! must fit the batch budget.
//!
//! Steps, in order:
//! 1. **Collect** every budgeted slot: results in batch order, within a result its `text`,
//!    then `output`, then `error` slots (a stable sort by [`SlotKind`], so callers may list
//!    them in any order). Non-text parts are neither counted nor changed. Results marked
//!    [`Budgeting::Exempt`] (policy input such as a plan-mode instruction) are neither
//!    counted nor changed either: **the budget applies to the non-exempt text**. If the total
//!    fits, stop: nothing is rewritten and nothing is written.
//! 2. **Allocate** by max-min water-fill ([`waterfill::allocate_weighted`], which is exactly
//!    the SPEC's unweighted algorithm when all weights are 1 and there are no minimums). A
//!    result's `weight` applies to each of its slots; its `min_share` is a floor for the
//!    result as a whole, given to its slots in collection order up to each slot's length.
//! 3. **Persist** each result that has a slot over its allocation, at most once, deciding from
//!    `persisted_files` only: non-empty → reused; empty → nothing written; absent → the
//!    result's slots' full text (non-empty slots joined by `\n`; a single slot is written
//!    exactly, so its file's SHA-256 is the one in the header) goes to one artifact and
//!    `persisted_files` becomes `[path]`, or `[]` if the write failed or there is no store.
//!    Writes are started in batch order, so under a session cap earlier results win.
//! 4. **Fit** each cut slot ([`fit_slot`]) with the result's artifact paths.
//! 5. **Hard cap** ([`hard_cap`]): an in-memory pass (no I/O) that re-checks the total and
//!    fits again if anything is over; after step 4 it changes nothing, and it is what
//!    embedders call at their send boundary.
//!
//! The input is never mutated; the outcome holds new items. Untouched slots share their text
//! (and cached measurements) with the input. Finalizing a finalized batch changes nothing:
//! its total fits, so step 1 returns it as is.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::join_all;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ArtifactTarget;
use super::fit::fit_slot;
use super::measure::measure;
use super::slot::{Measurement, SlotText, measure_all};
use super::templates::Templates;
use super::waterfill::{self, Demand};
use crate::artifact::{ArtifactError, ArtifactRequest, Retention};
use crate::model::CallId;
pub use crate::model::engine_config::BatchBudget;
use crate::model::units::BudgetUnit;

/// Which field of a tool response a text slot is; also its collection order within a result.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SlotKind {
    /// A top-level text part of the result.
    Text,
    /// The response's output field.
    Output,
    /// The response's error field.
    Error,
}

/// One budgeted text of a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Which field it is.
    pub kind: SlotKind,
    /// The text.
    pub text: SlotText,
}

impl Slot {
    /// A slot of `kind` holding `text`.
    pub fn new(kind: SlotKind, text: impl Into<SlotText>) -> Self {
        Self {
            kind,
            text: text.into(),
        }
    }
}

/// Whether a result's text counts against the batch budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Budgeting {
    /// Counted and, if needed, shortened.
    #[default]
    Counted,
    /// Policy input (`budget.batch_exempt`): never shortened, not counted.
    Exempt,
}

/// One result of the batch as the finalizer sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct FinalizeItem {
    /// The call the result belongs to; names its artifact.
    pub call_id: CallId,
    /// Its text slots.
    pub slots: Vec<Slot>,
    /// Its non-text parts (images, ...): carried over untouched and never counted.
    pub non_text: Vec<serde_json::Value>,
    /// The producer's persistence decision (the producer stage's `BudgetMeta`).
    pub persisted_files: Option<Vec<PathBuf>>,
    /// Whether the result counts against the budget.
    pub budgeting: Budgeting,
    /// Relative share of the budget (`budget.weight`, default 1; 0 is read as 1).
    pub weight: u32,
    /// Floor of the result's share when the budget allows (`budget.min_share`).
    pub min_share: u64,
}

impl FinalizeItem {
    /// A counted result with weight 1, no minimum, no non-text parts and no persistence
    /// decision.
    pub fn new(call_id: impl Into<CallId>, slots: Vec<Slot>) -> Self {
        Self {
            call_id: call_id.into(),
            slots,
            non_text: Vec::new(),
            persisted_files: None,
            budgeting: Budgeting::Counted,
            weight: 1,
            min_share: 0,
        }
    }
}

/// How the finalizer runs.
#[derive(Clone, Copy, Debug)]
pub struct FinalizeConfig<'a> {
    /// The batch budget.
    pub budget: BatchBudget,
    /// What it counts.
    pub unit: BudgetUnit,
    /// The model-facing texts.
    pub templates: &'a Templates,
    /// Retention of the artifacts the finalizer writes.
    pub retention: Retention,
    /// Most artifact files one pass writes (`artifacts.max_batch_files`); `None`: no limit.
    /// The results after them are cut without an artifact, as if their write had failed.
    pub max_files: Option<u64>,
}

/// What happened to one result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// Every slot kept its full text.
    Untouched,
    /// Exempt from the budget: untouched and not counted.
    Exempt,
    /// At least one slot was shortened.
    Cut,
}

/// How a cut result's full output was (or was not) persisted.
#[derive(Clone, Debug)]
pub enum Persistence {
    /// The result was not cut (or the pass does no I/O).
    NotNeeded,
    /// The producer's artifacts were reused.
    Reused,
    /// `persisted_files` was empty: decided earlier, nothing reusable, nothing written.
    NothingReusable,
    /// One artifact was written.
    Written,
    /// There was no store to write to.
    NoStore,
    /// The write failed; the result was cut anyway.
    Failed(ArtifactError),
}

/// Per-result report: what the result events say about how much was cut.
#[derive(Clone, Debug)]
pub struct ItemReport {
    /// The call.
    pub call_id: CallId,
    /// Untouched, exempt or cut.
    pub status: ItemStatus,
    /// The size of its text slots before, in the budget unit.
    pub original_size: u64,
    /// The size after.
    pub final_size: u64,
    /// Its `persisted_files` after the pass.
    pub persisted_files: Option<Vec<PathBuf>>,
    /// How its full output was persisted.
    pub persistence: Persistence,
}

/// The finalized batch.
#[derive(Clone, Debug)]
pub struct FinalizeOutcome {
    /// The results, in batch order; new values, the input is untouched.
    pub items: Vec<FinalizeItem>,
    /// One report per result, in batch order.
    pub reports: Vec<ItemReport>,
    /// Counted (non-exempt) text before, in the budget unit.
    pub total_before: u64,
    /// Counted text after; ≤ the budget when the budget is enabled.
    pub total_after: u64,
}

/// Where a counted slot sits, and its length.
struct SlotRef {
    item: usize,
    slot: usize,
    len: u64,
}

/// Steps 1–2: the counted slots in collection order with their allocations, or `None` when
/// the batch fits (or the budget is disabled).
struct Plan {
    slots: Vec<SlotRef>,
    allocs: Vec<u64>,
    total: u64,
}

impl Plan {
    fn make(items: &[FinalizeItem], config: &FinalizeConfig<'_>) -> Result<Plan, u64> {
        let counted: Vec<&SlotText> = items
            .iter()
            .filter(|item| item.budgeting == Budgeting::Counted)
            .flat_map(|item| item.slots.iter().map(|slot| &slot.text))
            .collect();
        measure_all(&counted, Measurement::Length(config.unit));
        let mut slots = Vec::new();
        let mut demands = Vec::new();
        let mut total = 0u64;
        for (item_index, item) in items.iter().enumerate() {
            match item.budgeting {
                Budgeting::Exempt => continue,
                Budgeting::Counted => {}
            }
            let mut order: Vec<usize> = (0..item.slots.len()).collect();
            order.sort_by_key(|&i| item.slots[i].kind);
            let mut floor_left = item.min_share;
            for slot_index in order {
                let len = item.slots[slot_index].text.len(config.unit);
                let floor = floor_left.min(len);
                floor_left -= floor;
                total = total.saturating_add(len);
                slots.push(SlotRef {
                    item: item_index,
                    slot: slot_index,
                    len,
                });
                demands.push(Demand {
                    length: len,
                    weight: item.weight,
                    min_share: floor,
                });
            }
        }
        // `Units(0)` disables like `none` (SPEC: "`none` or ≤ 0 disables it").
        match config.budget.units().filter(|&budget| budget > 0) {
            Some(budget) if total > budget => Ok(Plan {
                allocs: waterfill::allocate_weighted(&demands, budget),
                slots,
                total,
            }),
            Some(_) | None => Err(total),
        }
    }

    /// The allocation of every slot of every item, `None` where the slot is not counted.
    fn per_item(&self, items: &[FinalizeItem]) -> Vec<Vec<Option<u64>>> {
        let mut out: Vec<Vec<Option<u64>>> = items
            .iter()
            .map(|item| vec![None; item.slots.len()])
            .collect();
        for (slot, &alloc) in self.slots.iter().zip(&self.allocs) {
            out[slot.item][slot.slot] = Some(alloc);
        }
        out
    }

    /// Which items have a slot over its allocation.
    fn cut_items(&self, item_count: usize) -> Vec<bool> {
        let mut cut = vec![false; item_count];
        for (slot, &alloc) in self.slots.iter().zip(&self.allocs) {
            if slot.len > alloc {
                cut[slot.item] = true;
            }
        }
        cut
    }
}

/// Finalizes a batch (SPEC §8.3); see the module documentation. Never fails: a failed
/// artifact write is reported in [`ItemReport::persistence`] and the result is cut anyway.
pub async fn finalize(
    items: &[FinalizeItem],
    config: &FinalizeConfig<'_>,
    artifacts: Option<ArtifactTarget<'_>>,
) -> FinalizeOutcome {
    let plan = match Plan::make(items, config) {
        Ok(plan) => plan,
        Err(total) => return untouched(items, config, total),
    };
    let cut = plan.cut_items(items.len());
    let persisted = persist(items, &cut, config, artifacts).await;
    let outcome = apply(items, &plan, persisted, config);
    enforce(outcome, config)
}

/// The no-I/O hard cap (SPEC §8.3 step 5): if the counted text is over the budget, water-fill
/// and fit as the finalizer does, naming the artifacts already in `persisted_files`, writing
/// nothing and leaving `persisted_files` as it is. Embedders call it at their send boundary;
/// it is a no-op on a finalized batch.
pub fn hard_cap(items: &[FinalizeItem], config: &FinalizeConfig<'_>) -> FinalizeOutcome {
    let plan = match Plan::make(items, config) {
        Ok(plan) => plan,
        Err(total) => return untouched(items, config, total),
    };
    let persisted = items
        .iter()
        .map(|item| (item.persisted_files.clone(), Persistence::NotNeeded))
        .collect();
    apply(items, &plan, persisted, config)
}

/// Step 5 inside [`finalize`]: runs the hard cap over the finalized items and folds any
/// change into the reports (none is expected: every fitted slot is within its allocation).
fn enforce(outcome: FinalizeOutcome, config: &FinalizeConfig<'_>) -> FinalizeOutcome {
    let capped = hard_cap(&outcome.items, config);
    if capped.total_before == capped.total_after {
        return outcome;
    }
    tracing::error!(
        before = capped.total_before,
        after = capped.total_after,
        "batch finalizer output was over budget; hard cap applied"
    );
    let reports = outcome
        .reports
        .into_iter()
        .zip(&capped.reports)
        .map(|(mut report, capped)| {
            report.final_size = capped.final_size;
            if capped.status == ItemStatus::Cut {
                report.status = ItemStatus::Cut;
            }
            report
        })
        .collect();
    FinalizeOutcome {
        items: capped.items,
        reports,
        total_before: outcome.total_before,
        total_after: capped.total_after,
    }
}

fn untouched(items: &[FinalizeItem], config: &FinalizeConfig<'_>, total: u64) -> FinalizeOutcome {
    let reports = items
        .iter()
        .map(|item| {
            let size = item_size(item, config.unit);
            ItemReport {
                call_id: item.call_id.clone(),
                status: match item.budgeting {
                    Budgeting::Counted => ItemStatus::Untouched,
                    Budgeting::Exempt => ItemStatus::Exempt,
                },
                original_size: size,
                final_size: size,
                persisted_files: item.persisted_files.clone(),
                persistence: Persistence::NotNeeded,
            }
        })
        .collect();
    FinalizeOutcome {
        items: items.to_vec(),
        reports,
        total_before: total,
        total_after: total,
    }
}

fn item_size(item: &FinalizeItem, unit: BudgetUnit) -> u64 {
    item.slots
        .iter()
        .fold(0u64, |acc, slot| acc.saturating_add(slot.text.len(unit)))
}

/// Step 3: one persistence decision per item (the new `persisted_files` and how it came).
async fn persist(
    items: &[FinalizeItem],
    cut: &[bool],
    config: &FinalizeConfig<'_>,
    artifacts: Option<ArtifactTarget<'_>>,
) -> Vec<(Option<Vec<PathBuf>>, Persistence)> {
    // `write` reserves quota and picks the name synchronously, so calling it in batch order
    // (before awaiting any) makes the outcome under a session cap deterministic.
    let mut writes = Vec::new();
    let mut decisions: Vec<(Option<Vec<PathBuf>>, Persistence)> = Vec::with_capacity(items.len());
    for (item, &is_cut) in items.iter().zip(cut) {
        let decision = match (&item.persisted_files, is_cut) {
            (files, false) => (files.clone(), Persistence::NotNeeded),
            (Some(files), true) if !files.is_empty() => (Some(files.clone()), Persistence::Reused),
            (Some(_), true) => (Some(Vec::new()), Persistence::NothingReusable),
            (None, true) => match artifacts {
                Some(_)
                    if config
                        .max_files
                        .is_some_and(|limit| writes.len() as u64 >= limit) =>
                {
                    let limit = config.max_files.unwrap_or_default();
                    (
                        Some(Vec::new()),
                        Persistence::Failed(ArtifactError::BatchFiles { limit }),
                    )
                }
                Some(target) => {
                    let request = ArtifactRequest {
                        session: target.session.clone(),
                        call_id: item.call_id.clone(),
                        content: full_text(item),
                        retention: config.retention,
                    };
                    writes.push((decisions.len(), target.store.write(request)));
                    (None, Persistence::NotNeeded)
                }
                None => (Some(Vec::new()), Persistence::NoStore),
            },
        };
        decisions.push(decision);
    }
    let (indices, futures): (Vec<usize>, Vec<_>) = writes.into_iter().unzip();
    for (index, result) in indices.into_iter().zip(join_all(futures).await) {
        decisions[index] = match result {
            Ok(artifact) => (Some(vec![artifact.path]), Persistence::Written),
            Err(err) => {
                tracing::warn!(call_id = %items[index].call_id, error = %err, "artifact write failed; cutting without it");
                (Some(Vec::new()), Persistence::Failed(err))
            }
        };
    }
    decisions
}

/// The full text of a result for its artifact: its non-empty slots in collection order,
/// joined by a newline; a single slot is shared, not copied.
fn full_text(item: &FinalizeItem) -> Arc<str> {
    let mut slots: Vec<&Slot> = item.slots.iter().filter(|s| !s.text.is_empty()).collect();
    slots.sort_by_key(|s| s.kind);
    match slots.as_slice() {
        [] => Arc::from(""),
        [one] => one.text.shared(),
        several => {
            let texts: Vec<&str> = several.iter().map(|s| s.text.as_str()).collect();
            Arc::from(texts.join("\n"))
        }
    }
}

/// Step 4: the new items and their reports.
fn apply(
    items: &[FinalizeItem],
    plan: &Plan,
    persisted: Vec<(Option<Vec<PathBuf>>, Persistence)>,
    config: &FinalizeConfig<'_>,
) -> FinalizeOutcome {
    let unit = config.unit;
    let allocs = plan.per_item(items);
    // Every cut slot's header needs the digest of its full text: hash them up front, in
    // parallel when they are large.
    let to_cut: Vec<&SlotText> = plan
        .slots
        .iter()
        .zip(&plan.allocs)
        .filter(|(slot, alloc)| slot.len > **alloc)
        .map(|(slot, _)| &items[slot.item].slots[slot.slot].text)
        .collect();
    measure_all(&to_cut, Measurement::Digest);
    let mut out_items = Vec::with_capacity(items.len());
    let mut reports = Vec::with_capacity(items.len());
    let mut total_after = 0u64;
    for ((item, item_allocs), (files, persistence)) in items.iter().zip(&allocs).zip(persisted) {
        let paths: &[PathBuf] = files.as_deref().unwrap_or(&[]);
        let lost = matches!(persistence, Persistence::Failed(_) | Persistence::NoStore);
        let mut original_size = 0u64;
        let mut final_size = 0u64;
        let mut was_cut = false;
        let slots = item
            .slots
            .iter()
            .zip(item_allocs)
            .map(|(slot, alloc)| {
                let len = slot.text.len(unit);
                original_size = original_size.saturating_add(len);
                match alloc {
                    Some(max) if len > *max => {
                        was_cut = true;
                        let fitted =
                            fit_slot(&slot.text, *max, unit, paths, lost, config.templates);
                        let text = match unit {
                            BudgetUnit::Chars => {
                                let chars = measure(&fitted, unit);
                                SlotText::with_char_count(fitted, chars)
                            }
                            BudgetUnit::Bytes => SlotText::new(fitted),
                        };
                        final_size = final_size.saturating_add(text.len(unit));
                        Slot {
                            kind: slot.kind,
                            text,
                        }
                    }
                    Some(_) | None => {
                        final_size = final_size.saturating_add(len);
                        slot.clone()
                    }
                }
            })
            .collect();
        let status = match (item.budgeting, was_cut) {
            (Budgeting::Exempt, _) => ItemStatus::Exempt,
            (Budgeting::Counted, true) => ItemStatus::Cut,
            (Budgeting::Counted, false) => ItemStatus::Untouched,
        };
        if item.budgeting == Budgeting::Counted {
            total_after = total_after.saturating_add(final_size);
        }
        reports.push(ItemReport {
            call_id: item.call_id.clone(),
            status,
            original_size,
            final_size,
            persisted_files: files.clone(),
            persistence,
        });
        out_items.push(FinalizeItem {
            call_id: item.call_id.clone(),
            slots,
            non_text: item.non_text.clone(),
            persisted_files: files,
            budgeting: item.budgeting,
            weight: item.weight,
            min_share: item.min_share,
        });
    }
    FinalizeOutcome {
        items: out_items,
        reports,
        total_before: plan.total,
        total_after,
    }
}
