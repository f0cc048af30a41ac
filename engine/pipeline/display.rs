//! Stage 11, display: the UI projection of a result (SPEC §3 `display`), never budgeted with
//! and never mixed into the model content. `when: when_cut` produces it only when the model
//! content was cut, so the user still sees what the model did not.
//!
//! The model content can be cut twice: by the producer stage (known here) and by the batch
//! finalizer after the whole batch ran. A `when_cut` display whose content the producer left
//! whole is therefore kept as a [`PendingDisplay`] on the result, and the finalizer projects
//! it if it cuts that result ([`PendingDisplay::project`]). The pending source shares the
//! output's buffer, so waiting costs no copy for text outputs.

use crate::budget::{Produced, SlotText};
use crate::model::contract::{DisplayKind, DisplayWhen};
use crate::model::resolved::ResolvedContract;
use crate::model::resolved::ResolvedDisplay;

use super::Display;

/// A display to produce only if the batch finalizer cuts the result.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingDisplay {
    /// The contract's display settings.
    pub spec: ResolvedDisplay,
    /// What the display would show.
    pub source: SlotText,
}

impl PendingDisplay {
    /// The display, now that the model content was cut.
    pub fn project(&self) -> Option<Display> {
        render(&self.spec, &self.source, true)
    }
}

/// Projects the display if the contract wants one now, or keeps it pending when it depends
/// on a cut that has not happened (yet).
pub fn project(
    contract: &ResolvedContract,
    source: &SlotText,
    produced: &Produced,
) -> (Option<Display>, Option<PendingDisplay>) {
    let spec = contract.display;
    let cut = produced.meta.truncated;
    match (spec.kind, spec.when, cut) {
        (DisplayKind::None, _, _) => (None, None),
        (_, DisplayWhen::WhenCut, false) => (
            None,
            Some(PendingDisplay {
                spec,
                source: source.clone(),
            }),
        ),
        (DisplayKind::Text | DisplayKind::CommandOutput | DisplayKind::Json, _, _) => {
            (render(&spec, source, cut), None)
        }
    }
}

/// The display text within `max_size` bytes (never splitting a character).
fn render(spec: &ResolvedDisplay, source: &str, cut: bool) -> Option<Display> {
    match (spec.kind, spec.when, cut) {
        (DisplayKind::None, _, _) | (_, DisplayWhen::WhenCut, false) => return None,
        (_, DisplayWhen::Always | DisplayWhen::WhenCut, _) => {}
    }
    let (text, truncated) = match spec.max_size {
        Some(max) if source.len() as u64 > max => {
            let end = usize::try_from(max).unwrap_or(usize::MAX);
            let end = crate::budget::measure::floor_boundary(source, end);
            (source[..end].to_owned(), true)
        }
        Some(_) | None => (source.to_owned(), false),
    };
    Some(Display {
        kind: spec.kind,
        text,
        truncated,
    })
}
