//! Stage 10, PostToolUse hooks: they may add context, appended to the result as
//! `[Hook additional context]` entries.

use serde_json::Value;

use super::{CallEnv, CallState};
use crate::snapshot::Tool;

/// Runs the PostToolUse hooks that apply to the call.
pub async fn post_hooks(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    input: &Value,
    output: &str,
) {
    if env.prepared.snapshot.hooks.is_empty() {
        return;
    }
    // Boxed: hook processes make a large future, and most calls have no hook to run.
    Box::pin(crate::hooks::post_tool_use(env, state, tool, input, output)).await;
}
