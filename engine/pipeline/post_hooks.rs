//! Stage 10, PostToolUse hooks, and the `PostToolUseFailure` hooks of a failed call: they may
//! add context, appended to the result as `[Hook additional context]` entries. A hook that
//! fails is reported (`HookFailed`) and otherwise ignored.

use serde_json::{Value, json};

use super::errors::{hook_error, report_hook_failure};
use super::{CallEnv, CallState, Failure, rare};
use crate::events::CallStatus;
use crate::hooks::{self, CallInfo, CallScope, Ran};
use crate::model::hook::HookEvent;
use crate::snapshot::{SnapshotHook, Tool};

/// Runs the PostToolUse hooks that apply to a successful call.
pub async fn post_hooks(env: &CallEnv<'_>, state: &mut CallState<'_>, tool: &Tool, output: &str) {
    run(env, state, tool, HookEvent::PostToolUse, |payload| {
        payload.insert("tool_response".into(), json!(output));
        payload.insert("status".into(), json!("ok"));
    })
    .await;
}

/// Runs the `PostToolUseFailure` hooks that apply to a failed call (also to denials and
/// cancellations, so a hook's diagnosis reaches the model).
pub async fn post_failure_hooks(env: &CallEnv<'_>, state: &mut CallState<'_>, failure: &Failure) {
    let Some(tool) = state.tool else {
        return;
    };
    run(env, state, tool, HookEvent::PostToolUseFailure, |payload| {
        payload.insert("error".into(), json!(failure.message));
        payload.insert("status".into(), json!(failure.status.as_str()));
        payload.insert(
            "is_interrupt".into(),
            json!(failure.status == CallStatus::Cancelled),
        );
    })
    .await;
}

async fn run(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    event: HookEvent,
    event_fields: impl Fn(&mut serde_json::Map<String, Value>) + Sync,
) {
    let snapshot = &env.prepared.snapshot;
    let hooks: Vec<&SnapshotHook> =
        hooks::applicable(snapshot, event, Some(&tool.name), env.modes).collect();
    if hooks.is_empty() {
        return;
    }
    rare(async {
        // The input as parsed and rewritten by `PreToolUse` hooks, when the call got that
        // far (kept whenever the snapshot has hooks).
        let input = state.input.clone().unwrap_or(Value::Null);
        let call_id = state.call.id.clone();
        let called = state.call.tool.clone();
        let context = collect_context(
            snapshot,
            &hooks,
            event,
            &env.hook_scope(&call_id, tool.name_for_call(called.as_str())),
            &input,
            &event_fields,
            state.cancel,
            |hook, error| report_hook_failure(env, &call_id, hook, event, error),
        )
        .await;
        state.hook_context.extend(context);
    })
    .await;
}

/// Runs `hooks` for a `Post*` event of a call and collects the context they add (an exit-2
/// block's stderr is context too). A hook run that fails is handed to `failed` with its error
/// text and otherwise ignored. Used by the pipeline and by `toolgate hook`.
#[allow(clippy::too_many_arguments)]
pub async fn collect_context(
    snapshot: &crate::snapshot::Snapshot,
    hooks: &[&SnapshotHook],
    event: HookEvent,
    call: &CallScope<'_>,
    input: &Value,
    event_fields: &(dyn Fn(&mut serde_json::Map<String, Value>) + Sync),
    cancel: &tokio_util::sync::CancellationToken,
    mut failed: impl FnMut(&SnapshotHook, &str),
) -> Vec<String> {
    let mut context = Vec::new();
    for &hook in hooks {
        let mut payload = hooks::call_payload(
            event,
            hook,
            &CallInfo {
                batch_id: call.batch_id,
                call_id: call.call_id,
                tool: call.tool,
                input,
                modes: call.modes,
                workspace: &snapshot.workspace_root,
            },
        );
        event_fields(&mut payload);
        match hooks::run(snapshot, hook, payload.into(), cancel).await {
            Ran::Answered(mut answer) => {
                if let Some(text) = answer.context() {
                    context.push(text);
                }
            }
            Ran::Blocked(stderr) if !stderr.is_empty() => context.push(stderr),
            Ran::Blocked(_) => {}
            Ran::Failed(error) => failed(hook, &hook_error(&snapshot.engine, &error)),
        }
    }
    context
}
