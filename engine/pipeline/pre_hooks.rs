//! Stage 4, PreToolUse hooks: they may deny, ask, allow, rewrite the input (which is then
//! validated again) or add context. Their permission votes are combined with the rules in the
//! permission stage.

use serde_json::Value;

use super::{CallEnv, CallState, Failure};
use crate::snapshot::Tool;

/// Runs the PreToolUse hooks that apply to the call and returns the input to continue with.
pub async fn pre_hooks(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    input: Value,
) -> Result<Value, Failure> {
    if env.prepared.snapshot.hooks.is_empty() {
        return Ok(input);
    }
    // Boxed: hook processes make a large future, and most calls have no hook to run.
    Box::pin(crate::hooks::pre_tool_use(env, state, tool, input)).await
}
