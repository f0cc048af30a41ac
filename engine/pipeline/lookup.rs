//! Stage 1, lookup: the name (or alias) to the canonical tool. An empty or unknown name ends
//! the call with `ToolNotFound`; names are case-sensitive, so `bash` is not `Bash`.

use super::errors::message;
use super::{CallEnv, CallState, ErrorCode, Failure};
use crate::events::FailureStage;
use crate::model::engine_config::MessageKey;
use crate::snapshot::Tool;

/// Resolves the call's tool.
pub fn lookup<'a>(env: &CallEnv<'a>, state: &mut CallState<'a>) -> Result<&'a Tool, Failure> {
    if state.cancel.is_cancelled() {
        let (reason, _) = state.cancel_reason(env);
        return Err(super::execute::cancellation(
            env,
            state,
            None,
            FailureStage::Schedule,
            reason,
        ));
    }
    match env.prepared.snapshot.lookup(&state.call.tool) {
        Some(tool) => {
            state.tool = Some(tool);
            Ok(tool)
        }
        None => {
            let engine = &env.prepared.snapshot.engine;
            let text = message(
                engine,
                MessageKey::ToolNotFound,
                &[("tool", &state.call.tool)],
            );
            Err(Failure::error(
                FailureStage::Lookup,
                ErrorCode::ToolNotFound,
                text,
            ))
        }
    }
}
