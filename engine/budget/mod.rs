//! Result budgets: how much of each output the model sees (SPEC §8).
//!
//! Two stages, both pure in their decisions and doing I/O only through an
//! [`ArtifactStore`]:
//! - the **producer stage** ([`produce`]) runs per call: an empty output becomes a
//!   placeholder, an output over the contract's limit is written to an artifact (envelope with
//!   a preview) or truncated (with a one-line notice), and the result carries
//!   [`BudgetMeta`];
//! - the **batch finalizer** ([`finalize`]) runs after a batch (and again after
//!   `PostToolBatch` hooks): the text of all results together must fit the batch budget, so
//!   it shares the budget by max-min water-fill ([`waterfill`]), persists each cut result at
//!   most once, rewrites each cut slot into a header plus head/tail preview ([`fit`]), and
//!   ends with an in-memory [`hard_cap`] that embedders can also call at their send boundary.
//!
//! All counting and cutting goes through [`measure`] (characters or bytes, never splitting a
//! UTF-8 character); texts carry their measurements in [`SlotText`]; every model-facing text
//! comes from [`Templates`].
//!
//! ```text
//! use toolgate::budget::{finalize, BatchBudget, FinalizeConfig, FinalizeItem, Slot, SlotKind, Templates};
//! use toolgate::artifact::Retention;
//! use toolgate::model::units::BudgetUnit;
//!
//! let templates = Templates::spec_defaults();
//! let config = FinalizeConfig {
//!     budget: BatchBudget::Units(100),
//!     unit: BudgetUnit::Chars,
//!     templates: &templates,
//!     retention: Retention::Session,
//!     max_files: None,
//! };
//! let batch = vec![
//!     FinalizeItem::new("a", vec![Slot::new(SlotKind::Output, "x".repeat(1000))]),
//!     FinalizeItem::new("b", vec![Slot::new(SlotKind::Output, "ok")]),
//! ];
//! let runtime = tokio::runtime::Builder::new_current_thread().build()?;
//! let outcome = runtime.block_on(finalize(&batch, &config, None));
//! // The small result is untouched; the large one gets the rest of the budget.
//! assert_eq!(outcome.items[1], batch[1]);
//! assert_eq!(outcome.items[0].slots[0].text.len(BudgetUnit::Chars), 98);
//! assert!(outcome.items[0].slots[0].text.as_str().starts_with("Tool output truncated."));
//! ```

pub mod finalizer;
pub mod fit;
pub mod measure;
pub mod producer;
mod slot;
pub mod templates;
pub mod waterfill;

pub use finalizer::{
    BatchBudget, Budgeting, FinalizeConfig, FinalizeItem, FinalizeOutcome, ItemReport, ItemStatus,
    Persistence, Slot, SlotKind, finalize, hard_cap,
};
pub use producer::{
    AppliedPolicy, Produced, ProducerInput, ProducerPolicy, produce, produce_without_io,
};
pub use slot::{Measurement, Sha256Digest, SlotText, measure_all};
pub use templates::Templates;

use crate::artifact::{ArtifactStore, SessionId};

/// Where a stage may write artifacts: a store and the session they belong to.
#[derive(Clone, Copy)]
pub struct ArtifactTarget<'a> {
    /// The store.
    pub store: &'a dyn ArtifactStore,
    /// The session.
    pub session: &'a SessionId,
}

impl std::fmt::Debug for ArtifactTarget<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactTarget")
            .field("session", self.session)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;

/// The module documentation's example, as a test (the module is crate-private, so rustdoc
/// cannot run it).
#[cfg(test)]
mod doc_example {
    #[test]
    fn the_small_result_is_untouched_and_the_large_one_cut()
    -> Result<(), Box<dyn std::error::Error>> {
        use crate::artifact::Retention;
        use crate::budget::{
            BatchBudget, FinalizeConfig, FinalizeItem, Slot, SlotKind, Templates, finalize,
        };
        use crate::model::units::BudgetUnit;

        let templates = Templates::spec_defaults();
        let config = FinalizeConfig {
            budget: BatchBudget::Units(100),
            unit: BudgetUnit::Chars,
            templates: &templates,
            retention: Retention::Session,
            max_files: None,
        };
        let batch = vec![
            FinalizeItem::new("a", vec![Slot::new(SlotKind::Output, "x".repeat(1000))]),
            FinalizeItem::new("b", vec![Slot::new(SlotKind::Output, "ok")]),
        ];
        let runtime = tokio::runtime::Builder::new_current_thread().build()?;
        let outcome = runtime.block_on(finalize(&batch, &config, None));
        // The small result is untouched; the large one gets the rest of the budget.
        assert_eq!(outcome.items[1], batch[1]);
        assert_eq!(outcome.items[0].slots[0].text.len(BudgetUnit::Chars), 98);
        assert!(
            outcome.items[0].slots[0]
                .text
                .as_str()
                .starts_with("Tool output truncated.")
        );
        Ok(())
    }
}
