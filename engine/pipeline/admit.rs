//! Stages 1–3, lookup, normalise, validate: the call's tool (alias → canonical name; empty
//! or unknown → `ToolNotFound`), its input as an object (a JSON string is parsed) that fits
//! the input schema (else `InputValidationError`). Decided by [`assess::admit`], the code
//! `toolgate plan` and `toolgate test` decide with; this stage only checks first that the
//! call was not cancelled while it was queued, and records what it found in the call's state.

use std::borrow::Cow;

use super::errors::{cancellation, rejected};
use super::{CallEnv, CallState, Failure};
use crate::assess::{self, Admitted};
use crate::events::FailureStage;

/// Admits the call, or ends it.
pub fn admit<'a>(
    env: &CallEnv<'a>,
    state: &mut CallState<'a>,
) -> Result<Admitted<'a, 'static>, Failure> {
    if state.cancel.is_cancelled() {
        let (reason, _) = state.cancel_reason(env);
        return Err(cancellation(
            env,
            state,
            None,
            FailureStage::Schedule,
            reason,
        ));
    }
    // `PostToolUseFailure` hooks are shown the call's own input when it fails before it is
    // parsed.
    let raw = std::mem::take(&mut state.call.input);
    state.keep_input(env, &raw);
    let snapshot: &'a crate::snapshot::Snapshot = &env.prepared.snapshot;
    match assess::admit(snapshot, env.modes, &state.call.tool, Cow::Owned(raw)) {
        Ok(admitted) => {
            state.tool = Some(admitted.resolved.tool);
            state.keep_input(env, &admitted.input);
            Ok(admitted)
        }
        Err((resolved, rejection)) => {
            state.tool = resolved.map(|resolved| &**resolved.tool);
            Err(rejected(rejection))
        }
    }
}
