//! Stage 12, turn control (SPEC §9.1): what an outcome of this tool does to the turn, from
//! the contract's `turn_control` map.

use crate::events::CallStatus;
use crate::model::resolved::ResolvedContract;
use crate::model::resolved::{TurnOutcome, TurnRule};

use super::{Failure, TurnEffect};

/// The effect of a success.
pub fn on_success(contract: &ResolvedContract) -> Option<(TurnEffect, Option<String>)> {
    effect(contract, &TurnOutcome::Success, "success".to_owned(), None)
}

/// The effect of a failure: `denied`, `denied_with_feedback`, `limit:<name>` (a business
/// failure whose code is `limit:<name>`), or `error:<code>`.
pub fn on_failure(
    contract: &ResolvedContract,
    failure: &Failure,
) -> Option<(TurnEffect, Option<String>)> {
    if failure.status == CallStatus::Denied {
        if let Some(feedback) = &failure.feedback
            && let Some(found) = effect(
                contract,
                &TurnOutcome::DeniedWithFeedback,
                "denied_with_feedback".into(),
                Some(feedback.clone()),
            )
        {
            return Some(found);
        }
        return effect(contract, &TurnOutcome::Denied, "denied".into(), None);
    }
    if let Some(limit) = failure
        .detail_code
        .as_deref()
        .and_then(|code| code.strip_prefix("limit:"))
        && let Some(found) = effect(
            contract,
            &TurnOutcome::Limit(limit.to_owned()),
            format!("limit:{limit}"),
            None,
        )
    {
        return Some(found);
    }
    let code = failure.code.as_str();
    effect(
        contract,
        &TurnOutcome::Error(code.to_owned()),
        format!("error:{code}"),
        None,
    )
}

fn effect(
    contract: &ResolvedContract,
    outcome: &TurnOutcome,
    key: String,
    feedback: Option<String>,
) -> Option<(TurnEffect, Option<String>)> {
    let TurnRule { action, message } = contract.turn_control.get(outcome)?;
    Some((
        TurnEffect {
            action: *action,
            outcome: key,
            feedback,
        },
        message.clone(),
    ))
}
