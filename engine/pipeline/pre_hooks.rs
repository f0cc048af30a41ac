//! Stage 4, PreToolUse hooks: they may deny, ask, allow, rewrite the input (which is then
//! checked again, by the same [`assess::check_input`] the first check used) or add context.
//! Their permission votes are combined with the rules in the permission stage.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::errors::{hook_error, rejected};
use super::{CallEnv, CallState, Failure, rare};
use crate::assess::{self, Admitted};
use crate::hooks::{self, CallInfo, Ran};
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
    mut input: Value,
) -> Result<Value, Failure> {
    let snapshot = &env.prepared.snapshot;
    for &hook in hooks {
        let payload = hooks::call_payload(
            HookEvent::PreToolUse,
            hook,
            &CallInfo {
                batch_id: env.batch_id.as_str(),
                call_id: state.call.id.as_str(),
                tool: tool.name.as_str(),
                input: &input,
                modes: env.modes,
                workspace: &snapshot.workspace_root,
            },
        );
        let name: Arc<str> = Arc::from(hook.spec.name.as_str());
        match hooks::run(snapshot, hook, payload.into(), state.cancel).await {
            Ran::Answered(mut answer) => {
                if let Some(context) = answer.context() {
                    state.hook_context.push(context);
                }
                if let Some(updated) = answer.updated_input {
                    // The rewritten input is what is approved and what runs: checked again.
                    input = assess::check_input(&snapshot.engine, tool, Cow::Owned(updated))
                        .map_err(rejected)?
                        .into_owned();
                }
                if let Some(decision) = answer.decision {
                    state.hook_votes.push(HookVote {
                        hook: name,
                        decision,
                        reason: answer.reason,
                    });
                }
            }
            Ran::Blocked(stderr) => state.hook_votes.push(HookVote {
                hook: name,
                decision: Decision::Deny,
                reason: hooks::blocked_reason(stderr),
            }),
            Ran::Failed(error) => {
                let error = hook_error(&snapshot.engine, &error);
                super::post_hooks::report(
                    env,
                    Some(&state.call.id),
                    hook,
                    HookEvent::PreToolUse,
                    &error,
                );
                if hooks::fails_closed(hook) {
                    let reason = format!("hook `{}` failed: {error}", hook.spec.name);
                    state.hook_votes.push(HookVote {
                        hook: name,
                        decision: Decision::Deny,
                        reason: Some(reason),
                    });
                }
            }
        }
    }
    Ok(input)
}
