//! Stage 6, start: the `ToolCallStarted` event with the flags as resolved for this call
//! (modes applied), and the clock of the call starts (the deadline is created by the execute
//! stage, after permission).

use super::{CallEnv, CallState};
use crate::events::{CallFlags, EventKind, ToolCallStarted};
use crate::model::contract::SideEffectScope;
use crate::model::resolved::ResolvedContract;
use crate::snapshot::Tool;
use crate::timeout::ResolvedTimeout;

/// Emits `ToolCallStarted`.
pub fn start(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    contract: &ResolvedContract,
    timeout: Option<&ResolvedTimeout>,
) {
    let timeout_ms = timeout.map(|t| u64::try_from(t.budget.as_millis()).unwrap_or(u64::MAX));
    state.metadata.timeout_ms = timeout_ms;
    let flags = &contract.concurrency;
    env.emit_with(Some(&state.call.id), || {
        EventKind::ToolCallStarted(ToolCallStarted {
            tool: tool.name_for_call(&state.call.tool).to_owned(),
            flags: CallFlags {
                read_only: flags.effectively_read_only(),
                destructive: flags.destructive,
                concurrent_safe: flags.concurrent_safe,
                side_effect_scope: scope_name(flags.side_effect_scope).to_owned(),
            },
            timeout_ms,
        })
    });
}

fn scope_name(scope: SideEffectScope) -> &'static str {
    match scope {
        SideEffectScope::None => "none",
        SideEffectScope::Session => "session",
        SideEffectScope::Workspace => "workspace",
        SideEffectScope::External => "external",
    }
}
