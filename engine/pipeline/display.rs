//! Stage 11, display: the UI projection of a result (SPEC §3 `display`), never budgeted with
//! and never mixed into the model content. `when: when_cut` produces it only when the model
//! content was cut, so the user still sees what the model did not.

use crate::budget::Produced;
use crate::model::contract::{DisplayKind, DisplayWhen};
use crate::snapshot::ResolvedContract;

use super::Display;

/// Projects the display, if the contract wants one now.
pub fn project(contract: &ResolvedContract, source: &str, produced: &Produced) -> Option<Display> {
    let display = &contract.display;
    if display.kind == DisplayKind::None {
        return None;
    }
    if display.when == DisplayWhen::WhenCut && !produced.meta.truncated {
        return None;
    }
    let (text, truncated) = match display.max_size {
        Some(max) if source.len() as u64 > max => {
            let mut end = usize::try_from(max).unwrap_or(usize::MAX).min(source.len());
            while !source.is_char_boundary(end) {
                end -= 1;
            }
            (source[..end].to_owned(), true)
        }
        _ => (source.to_owned(), false),
    };
    Some(Display {
        kind: display.kind,
        text,
        truncated,
    })
}
