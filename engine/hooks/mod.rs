//! Hooks: external commands run at lifecycle points (SPEC §6, §7.2), and their JSON protocol.
//!
//! A hook is a subprocess (its own process group, killed when it ends or times out) that
//! gets one JSON object on stdin and may answer with one JSON object on stdout:
//!
//! ```text
//! stdin:  {"hook_event_name": "PreToolUse", "hook": "<name>", "batch_id": "…", "call_id": "…",
//!          "tool_name": "Bash", "tool_input": {…}, "modes": ["plan"], "workspace": "/repo", …}
//! stdout: {"decision": "allow"|"ask"|"deny", "reason": "…",
//!          "updated_input": {…}, "additional_context": "…"}        (every field optional)
//! ```
//!
//! Event-specific fields on stdin: `PostToolUse` adds `tool_response` (the model content);
//! `PostToolUseFailure` adds `error`, `status` and `is_interrupt`; `PermissionRequest` adds
//! `reasons`; `PostToolBatch` adds `results` (`call_id`, `tool`, `status`, `model_content`).
//!
//! Exit code 0: the stdout answer (empty stdout = no opinion). Exit code 2: blocks — for
//! `PreToolUse` and `PermissionRequest` a denial with stderr as the reason; for the `Post*`
//! events stderr becomes additional context the model sees. Any other failure (another exit
//! code, a crash, a timeout, unparseable stdout) is a hook error, reported as a `HookFailed`
//! event: a `fail_open` hook (the default) is then ignored, a `fail_closed` one denies the
//! call (`PreToolUse`, `PermissionRequest`) or is reported only (`Post*`).
//!
//! `PreToolUse` hooks run one after another in declaration order, each seeing the input as
//! rewritten by the previous ones; a rewritten input is validated again. `PermissionRequest`
//! hooks run together and race the approver: the first decisive answer wins and the others
//! are dropped (their processes killed).

use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalAnswer, HookRace};
use crate::events::{CallStatus, EventKind, HookFailed};
use crate::handler::template::parse_argv;
use crate::handler::{CallContext, CommandSpec, StdinMode, run_captured};
use crate::model::hook::{HookEvent, HookFailure};
use crate::model::{CallId, Decision, ToolName};
use crate::pipeline::{CallEnv, CallResult, CallState, Failure};
use crate::policy::decide::HookVote;
use crate::snapshot::{Snapshot, SnapshotHook, Tool};

/// Most bytes a hook may print before it is stopped.
const HOOK_OUTPUT_LIMIT: u64 = 1024 * 1024;

/// A hook's answer on stdout.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    #[serde(default)]
    decision: Option<Decision>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    updated_input: Option<Value>,
    #[serde(default)]
    additional_context: Option<String>,
}

/// What one hook run came to.
#[derive(Debug)]
enum Ran {
    /// Exit 0 with an answer (possibly empty).
    Answered(Answer),
    /// Exit 2: blocked, with stderr.
    Blocked(String),
    /// Anything else.
    Failed(String),
}

/// Runs one hook process with `payload` on stdin.
async fn run_hook(
    snapshot: &Snapshot,
    hook: &SnapshotHook,
    payload: Value,
    cancel: &CancellationToken,
) -> Ran {
    let Some(command) = &hook.spec.command else {
        return Ran::Failed("the hook has no command".into());
    };
    // Hook commands are literal: no `{{input.*}}` templating (the input arrives on stdin).
    let literal: Vec<String> = command
        .iter()
        .map(|arg| arg.replace("{{", "{{{{"))
        .collect();
    let argv = match parse_argv(&literal) {
        Ok(argv) => argv,
        Err(error) => return Ran::Failed(error.to_string()),
    };
    let engine = &snapshot.engine;
    let mut spec = CommandSpec::new(command.clone());
    spec.stdin = StdinMode::Json;
    spec.env_allow = hook.spec.env.clone().unwrap_or_default();
    spec.cwd = Some(snapshot.workspace_root.clone());
    spec.max_output_bytes = HOOK_OUTPUT_LIMIT;
    spec.kill_grace = engine.kill_grace.0;
    let limit: Duration = hook.spec.timeout.unwrap_or(engine.hook_timeout).0;
    let mut ctx = CallContext::new(
        CallId::new(format!("hook:{}", hook.spec.name)),
        ToolName::new("hook"),
    );
    ctx.cancel = cancel.child_token();
    let token = ctx.cancel.clone();
    let run = run_captured(&spec, &argv, &payload, &ctx);
    tokio::pin!(run);
    let captured = tokio::select! {
        result = &mut run => result,
        () = tokio::time::sleep(limit) => {
            token.cancel();
            let _ = tokio::time::timeout(engine.kill_grace.0, &mut run).await;
            return Ran::Failed(format!("timed out after {}ms", limit.as_millis()));
        }
    };
    let captured = match captured {
        Ok(captured) => captured,
        Err(error) => return Ran::Failed(crate::pipeline::errors::project(engine, &error)),
    };
    match captured.status.code() {
        Some(0) => {
            let text = captured.stdout.trim();
            if text.is_empty() {
                return Ran::Answered(Answer::default());
            }
            match serde_json::from_str::<Answer>(text) {
                Ok(answer) => Ran::Answered(answer),
                Err(error) => Ran::Failed(format!("its stdout is not a valid answer: {error}")),
            }
        }
        Some(2) => Ran::Blocked(captured.stderr.trim().to_owned()),
        Some(code) => {
            let stderr = crate::pipeline::errors::fold_whitespace(&captured.stderr);
            // No dangling colon when the hook wrote nothing to stderr.
            Ran::Failed(if stderr.trim().is_empty() {
                format!("exit code {code}, nothing on stderr")
            } else {
                format!("exit code {code}: {}", stderr.trim())
            })
        }
        None => Ran::Failed("killed by a signal".into()),
    }
}

fn base_payload(
    env: &CallEnv<'_>,
    state: &CallState<'_>,
    event: &str,
    hook: &SnapshotHook,
    tool: &Tool,
    input: &Value,
) -> Map<String, Value> {
    let mut payload = Map::new();
    payload.insert("hook_event_name".into(), json!(event));
    payload.insert("hook".into(), json!(hook.spec.name));
    payload.insert("batch_id".into(), json!(env.batch_id.as_str()));
    payload.insert("call_id".into(), json!(state.call.id.as_str()));
    payload.insert("tool_name".into(), json!(tool.name.as_str()));
    payload.insert("tool_input".into(), input.clone());
    payload.insert(
        "modes".into(),
        json!(env.modes.iter().map(|m| m.as_str()).collect::<Vec<_>>()),
    );
    payload.insert(
        "workspace".into(),
        json!(env.prepared.snapshot.workspace_root.display().to_string()),
    );
    payload
}

fn report(env: &CallEnv<'_>, call: Option<&CallId>, hook: &SnapshotHook, event: &str, error: &str) {
    env.emit(
        call,
        EventKind::HookFailed(HookFailed {
            hook: hook.spec.name.clone(),
            event: event.to_owned(),
            error: error.to_owned(),
            fail_closed: hook.spec.on_error == Some(HookFailure::FailClosed),
        }),
    );
}

fn applicable<'a>(
    env: &'a CallEnv<'_>,
    event: HookEvent,
    tool: Option<&ToolName>,
) -> Vec<&'a SnapshotHook> {
    env.prepared
        .snapshot
        .hooks
        .iter()
        .filter(|hook| hook.applies(event, tool, env.modes))
        .collect()
}

/// `PreToolUse`: runs the hooks in order; collects their votes and context into `state`, and
/// returns the (possibly rewritten and re-validated) input.
pub async fn pre_tool_use(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    input: Value,
) -> Result<Value, Failure> {
    let hooks = applicable(env, HookEvent::PreToolUse, Some(&tool.name));
    let mut input = input;
    for hook in hooks {
        let payload = Value::Object(base_payload(env, state, "PreToolUse", hook, tool, &input));
        let name: Arc<str> = Arc::from(hook.spec.name.as_str());
        match run_hook(&env.prepared.snapshot, hook, payload, state.cancel).await {
            Ran::Answered(answer) => {
                if let Some(context) = answer.additional_context.filter(|c| !c.trim().is_empty()) {
                    state.hook_context.push(context);
                }
                if let Some(updated) = answer.updated_input {
                    // The rewritten input is what is approved and what runs: validate it again.
                    let updated = crate::pipeline::normalize::normalize(env, tool, &updated)?;
                    crate::pipeline::validate::validate_input(env, tool, &updated)?;
                    input = updated;
                }
                if let Some(decision) = answer.decision {
                    state.hook_votes.push(HookVote {
                        hook: name,
                        decision,
                        reason: answer.reason,
                    });
                }
            }
            Ran::Blocked(stderr) => {
                let reason = (!stderr.is_empty()).then_some(stderr);
                state.hook_votes.push(HookVote {
                    hook: name,
                    decision: Decision::Deny,
                    reason,
                });
            }
            Ran::Failed(error) => {
                report(env, Some(&state.call.id), hook, "PreToolUse", &error);
                if hook.spec.on_error == Some(HookFailure::FailClosed) {
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

/// `PermissionRequest`: the hooks as one future racing the approver, or `None` when no hook
/// applies. The first decisive answer wins; the rest are dropped.
pub fn permission_request(
    env: &CallEnv<'_>,
    state: &CallState<'_>,
    tool: &Tool,
    input: &Value,
) -> Option<HookRace> {
    let hooks = applicable(env, HookEvent::PermissionRequest, Some(&tool.name));
    if hooks.is_empty() {
        return None;
    }
    let reasons: Vec<String> = state
        .permission
        .as_ref()
        .map(|p| {
            p.reasons
                .iter()
                .map(crate::policy::decide::Reason::label)
                .collect()
        })
        .unwrap_or_default();
    let snapshot = Arc::clone(&env.prepared.snapshot);
    let sink = Arc::clone(env.sink);
    let batch = env.batch_id.clone();
    let call = state.call.id.clone();
    let cancel = state.cancel.clone();
    let runs: Vec<(SnapshotHook, Value)> = hooks
        .into_iter()
        .map(|hook| {
            let mut payload = base_payload(env, state, "PermissionRequest", hook, tool, input);
            payload.insert("reasons".into(), json!(reasons));
            (hook.clone(), Value::Object(payload))
        })
        .collect();
    Some(Box::pin(async move {
        let mut pending: FuturesUnordered<_> = runs
            .into_iter()
            .map(|(hook, payload)| {
                let snapshot = Arc::clone(&snapshot);
                let cancel = cancel.clone();
                async move {
                    let ran = run_hook(&snapshot, &hook, payload, &cancel).await;
                    (hook, ran)
                }
            })
            .collect();
        while let Some((hook, ran)) = pending.next().await {
            let name = hook.spec.name.clone();
            match ran {
                Ran::Answered(Answer {
                    decision: Some(Decision::Allow),
                    reason,
                    ..
                }) => {
                    return Some((name, ApprovalAnswer::Allow { reason }));
                }
                Ran::Answered(Answer {
                    decision: Some(Decision::Deny),
                    reason,
                    ..
                }) => {
                    return Some((name, ApprovalAnswer::Deny { reason }));
                }
                Ran::Answered(_) => {}
                Ran::Blocked(stderr) => {
                    let reason = (!stderr.is_empty()).then_some(stderr);
                    return Some((name, ApprovalAnswer::Deny { reason }));
                }
                Ran::Failed(error) => {
                    sink.emit(crate::events::Event::now(
                        Some(batch.clone()),
                        Some(call.clone()),
                        snapshot.generation,
                        EventKind::HookFailed(HookFailed {
                            hook: name.clone(),
                            event: "PermissionRequest".into(),
                            error: error.clone(),
                            fail_closed: hook.spec.on_error == Some(HookFailure::FailClosed),
                        }),
                    ));
                    if hook.spec.on_error == Some(HookFailure::FailClosed) {
                        return Some((
                            name.clone(),
                            ApprovalAnswer::Deny {
                                reason: Some(format!("hook `{name}` failed: {error}")),
                            },
                        ));
                    }
                }
            }
        }
        None
    }))
}

/// `PostToolUse`: the hooks may add context to a successful result.
pub async fn post_tool_use(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    input: &Value,
    output: &str,
) {
    for hook in applicable(env, HookEvent::PostToolUse, Some(&tool.name)) {
        let mut payload = base_payload(env, state, "PostToolUse", hook, tool, input);
        payload.insert("tool_response".into(), json!(output));
        payload.insert("status".into(), json!("ok"));
        collect_context(env, state, hook, "PostToolUse", Value::Object(payload)).await;
    }
}

/// `PostToolUseFailure`: the hooks may add context to a failed result (also to denials and
/// cancellations, so a hook's diagnosis reaches the model).
pub async fn post_tool_use_failure(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    failure: &Failure,
) {
    let Some(tool) = state.tool else {
        return;
    };
    for hook in applicable(env, HookEvent::PostToolUseFailure, Some(&tool.name)) {
        // The input as parsed and rewritten by `PreToolUse` hooks, when the call got that far.
        let input = state
            .input
            .clone()
            .unwrap_or_else(|| state.call.input.clone());
        let mut payload = base_payload(env, state, "PostToolUseFailure", hook, tool, &input);
        payload.insert("error".into(), json!(failure.message));
        payload.insert("status".into(), json!(failure.status.as_str()));
        payload.insert(
            "is_interrupt".into(),
            json!(failure.status == CallStatus::Cancelled),
        );
        collect_context(
            env,
            state,
            hook,
            "PostToolUseFailure",
            Value::Object(payload),
        )
        .await;
    }
}

async fn collect_context(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    hook: &SnapshotHook,
    event: &str,
    payload: Value,
) {
    match run_hook(&env.prepared.snapshot, hook, payload, &state.cancel.clone()).await {
        Ran::Answered(answer) => {
            if let Some(context) = answer.additional_context.filter(|c| !c.trim().is_empty()) {
                state.hook_context.push(context);
            }
        }
        Ran::Blocked(stderr) if !stderr.is_empty() => state.hook_context.push(stderr),
        Ran::Blocked(_) => {}
        Ran::Failed(error) => report(env, Some(&state.call.id), hook, event, &error),
    }
}

/// `PostToolBatch`: after the batch; the hooks may add text for the model (the batch
/// finalizer runs again afterwards). Returns the added texts in hook order.
pub async fn post_tool_batch(
    snapshot: &Arc<Snapshot>,
    emit: &(dyn Fn(EventKind) + Sync),
    batch_id: &str,
    modes: &[crate::model::ModeName],
    results: &[CallResult],
    cancel: &CancellationToken,
) -> Vec<String> {
    let hooks: Vec<&SnapshotHook> = snapshot
        .hooks
        .iter()
        .filter(|hook| hook.applies(HookEvent::PostToolBatch, None, modes))
        .collect();
    let mut texts = Vec::new();
    if hooks.is_empty() {
        return texts;
    }
    let summary: Vec<Value> = results
        .iter()
        .map(|r| json!({"call_id": r.call_id.as_str(), "tool": r.tool, "status": r.status.as_str(), "model_content": r.model_text()}))
        .collect();
    for hook in hooks {
        let payload = json!({
            "hook_event_name": "PostToolBatch",
            "hook": hook.spec.name,
            "batch_id": batch_id,
            "modes": modes.iter().map(|m| m.as_str()).collect::<Vec<_>>(),
            "workspace": snapshot.workspace_root.display().to_string(),
            "results": summary,
        });
        match run_hook(snapshot, hook, payload, cancel).await {
            Ran::Answered(answer) => {
                if let Some(text) = answer.additional_context.filter(|c| !c.trim().is_empty()) {
                    texts.push(text);
                }
            }
            Ran::Blocked(stderr) if !stderr.is_empty() => texts.push(stderr),
            Ran::Blocked(_) => {}
            Ran::Failed(error) => emit(EventKind::HookFailed(HookFailed {
                hook: hook.spec.name.clone(),
                event: "PostToolBatch".into(),
                error,
                fail_closed: hook.spec.on_error == Some(HookFailure::FailClosed),
            })),
        }
    }
    texts
}
