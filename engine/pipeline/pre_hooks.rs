//! Stage 4, PreToolUse hooks: they may deny, ask, allow, rewrite the input (which is then
//! checked again, by the same [`assess::check_input`] the first check used) or add context.
//! Their permission votes are combined with the rules in the permission stage.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::errors::{hook_error, rejected, report_hook_failure};
use super::{CallEnv, CallState, Failure, rare};
use crate::assess::{self, Admitted};
use crate::hooks::{self, CallInfo, CallScope, Ran};
use crate::model::Decision;
use crate::model::hook::HookEvent;
use crate::policy::decide::HookVote;
use crate::snapshot::{SnapshotHook, Tool};

/// Runs the PreToolUse hooks that apply to the call, in order, and returns the call with the
/// input to continue with.
pub async fn pre_hooks<'a>(
    env: &CallEnv<'a>,
    state: &mut CallState<'a>,
    admitted: Admitted<'a, 'static>,
) -> Result<Admitted<'a, 'static>, Failure> {
    let tool = admitted.resolved.tool;
    let hooks: Vec<&SnapshotHook> = hooks::applicable(
        &env.prepared.snapshot,
        HookEvent::PreToolUse,
        Some(&tool.name),
        env.modes,
    )
    .collect();
    if hooks.is_empty() {
        return Ok(admitted);
    }
    let Admitted { resolved, input } = admitted;
    let input = rare(run(env, state, tool, &hooks, input.into_owned())).await?;
    state.keep_input(env, &input);
    Ok(Admitted {
        resolved,
        input: Cow::Owned(input),
    })
}

async fn run(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    hooks: &[&SnapshotHook],
    input: Value,
) -> Result<Value, Failure> {
    let snapshot = &env.prepared.snapshot;
    let call_id = state.call.id.clone();
    let called = state.call.tool.clone();
    let ran = collect(
        snapshot,
        tool,
        hooks,
        &env.hook_scope(&call_id, tool.name_for_call(called.as_str())),
        input,
        state.cancel,
        |hook, error| report_hook_failure(env, &call_id, hook, HookEvent::PreToolUse, error),
    )
    .await
    .map_err(rejected)?;
    state.hook_context.extend(ran.context);
    state.hook_votes.extend(ran.votes);
    Ok(ran.input)
}

/// What the `PreToolUse` hooks of one call said.
#[derive(Debug, Default)]
pub struct Collected {
    /// The input to continue with (as the hooks rewrote it, checked again).
    pub input: Value,
    /// Their permission votes, in order.
    pub votes: Vec<HookVote>,
    /// Context they added.
    pub context: Vec<String>,
}

/// Runs `hooks` one after another on the call, each seeing the input as rewritten by the
/// ones before (a rewrite is checked again, by the same [`assess::check_input`] the first
/// check used), and collects their votes and context. A hook run that fails is handed to
/// `failed` with its error text; a `fail_closed` hook's failure is a deny vote. Used by the
/// pipeline and by `toolgate hook`, which decides an agent's call the same way.
pub async fn collect(
    snapshot: &crate::snapshot::Snapshot,
    tool: &Tool,
    hooks: &[&SnapshotHook],
    call: &CallScope<'_>,
    mut input: Value,
    cancel: &tokio_util::sync::CancellationToken,
    mut failed: impl FnMut(&SnapshotHook, &str),
) -> Result<Collected, assess::Rejection> {
    let mut collected = Collected::default();
    for &hook in hooks {
        let payload = hooks::call_payload(
            HookEvent::PreToolUse,
            hook,
            &CallInfo {
                batch_id: call.batch_id,
                call_id: call.call_id,
                tool: call.tool,
                input: &input,
                modes: call.modes,
                workspace: &snapshot.workspace_root,
            },
        );
        let name: Arc<str> = Arc::from(hook.spec.name.as_str());
        match hooks::run(snapshot, hook, payload.into(), cancel).await {
            Ran::Answered(mut answer) => {
                if let Some(context) = answer.context() {
                    collected.context.push(context);
                }
                if let Some(updated) = answer.updated_input {
                    // The rewritten input is what is approved and what runs: checked again.
                    input = assess::check_input(&snapshot.engine, tool, Cow::Owned(updated))?
                        .into_owned();
                }
                if let Some(decision) = answer.decision {
                    collected.votes.push(HookVote {
                        hook: name,
                        decision,
                        reason: answer.reason,
                    });
                }
            }
            Ran::Blocked(stderr) => collected.votes.push(HookVote {
                hook: name,
                decision: Decision::Deny,
                reason: hooks::blocked_reason(stderr),
            }),
            Ran::Failed(error) => {
                let error = hook_error(&snapshot.engine, &error);
                failed(hook, &error);
                if hooks::fails_closed(hook) {
                    let reason = format!("hook `{}` failed: {error}", hook.spec.name);
                    collected.votes.push(HookVote {
                        hook: name,
                        decision: Decision::Deny,
                        reason: Some(reason),
                    });
                }
            }
        }
    }
    collected.input = input;
    Ok(collected)
}
