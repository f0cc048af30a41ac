//! `PostToolBatch` hooks: after the batch, they may add text for the model (the batch
//! finalizer runs again afterwards).

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::events::{EventKind, HookFailed};
use crate::hooks::{self, Ran};
use crate::model::hook::HookEvent;
use crate::pipeline::errors::hook_error;
use crate::pipeline::{CallEnv, CallResult};

/// Runs the batch's `PostToolBatch` hooks; returns the texts they added, in hook order.
pub async fn post_tool_batch(
    env: &CallEnv<'_>,
    results: &[CallResult],
    cancel: &CancellationToken,
) -> Vec<String> {
    let snapshot = &env.prepared.snapshot;
    let mut texts = Vec::new();
    let summary: Vec<Value> = results
        .iter()
        .map(|r| json!({"call_id": r.call_id.as_str(), "tool": r.tool, "status": r.status.as_str(), "model_content": r.model_text()}))
        .collect();
    for hook in hooks::applicable(snapshot, HookEvent::PostToolBatch, None, env.modes) {
        let payload = hooks::batch_payload(
            hook,
            env.batch_id.as_str(),
            env.modes,
            &snapshot.workspace_root,
            &summary,
        );
        match hooks::run(snapshot, hook, payload, cancel).await {
            Ran::Answered(mut answer) => texts.extend(answer.context()),
            Ran::Blocked(stderr) if !stderr.is_empty() => texts.push(stderr),
            Ran::Blocked(_) => {}
            Ran::Failed(error) => env.emit(
                None,
                EventKind::HookFailed(HookFailed {
                    hook: hook.spec.name.clone(),
                    event: hooks::event_name(HookEvent::PostToolBatch).to_owned(),
                    error: hook_error(&snapshot.engine, &error),
                    fail_closed: hooks::fails_closed(hook),
                }),
            ),
        }
    }
    texts
}
