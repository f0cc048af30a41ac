//! Stage 5, permission (SPEC §7): the rules decide, the PreToolUse hooks' votes combine with
//! them, `always_ask` turns an allow into an ask. On ask, a `PermissionRequested` event is
//! emitted and the approver's answer races the `PermissionRequest` hooks; the wait has its
//! own timeout with a declared outcome. The request carries the exact input that runs.

use std::borrow::Cow;
use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{Value, json};
// tokio's clock, not std's: approval waits are measured on the runtime's clock, so they
// read right under paused time too.
use tokio::time::Instant;

use super::errors::{cancellation, hook_error, message, rejected};
use super::{CallEnv, CallState, Failure, rare};
use crate::approval::{
    AnsweredBy, ApprovalAnswer, ApprovalOutcome, ApprovalRequest, HookRace, WaitPolicy, wait,
};
use crate::assess::{Admitted, Resolved, Settled};
use crate::events::{
    EventKind, FailureStage, HookFailed, PermissionDenied, PermissionRequested, PermissionResolved,
    StagedRuleMatched,
};
use crate::hooks::{self, CallInfo, Ran};
use crate::model::engine_config::MessageKey;
use crate::model::hook::HookEvent;
use crate::model::resolved::ResolvedContract;
use crate::model::rule::Enforcement;
use crate::model::{Decision, ToolName};
use crate::policy::decide::{Permission, Reason};
use crate::snapshot::{SnapshotHook, Tool};
use crate::timeout::ResolvedTimeout;

/// A call cleared to run: its tool and contract, the input that runs, its timeout.
pub struct Cleared<'a> {
    /// The canonical tool.
    pub tool: &'a Tool,
    /// Its contract for the active modes.
    pub contract: Cow<'a, Arc<ResolvedContract>>,
    /// The input the handler receives: exactly the one that was approved.
    pub input: Value,
    /// The resolved timeout (`None`: no timeout).
    pub timeout: Option<ResolvedTimeout>,
}

/// Decides the call's permission with [`Admitted::settle`] (the rules, the PreToolUse
/// hooks' votes, `always_ask`; also the timeout, whose bad override ends the call here),
/// asking for approval when needed.
pub async fn permission<'a>(
    env: &CallEnv<'a>,
    state: &mut CallState<'a>,
    admitted: Admitted<'a, 'static>,
) -> Result<Cleared<'a>, Failure> {
    let (Resolved { tool, contract }, settled) =
        admitted.settle(&env.prepared.snapshot, env.modes, &state.hook_votes);
    let Settled {
        input,
        timeout,
        permission,
    } = settled.map_err(rejected)?;
    let input = input.into_owned();
    report_staged(env, state, tool, &permission);
    let cleared = |input| Cleared {
        tool,
        contract,
        input,
        timeout,
    };
    match permission.decision {
        Decision::Allow => {
            // The common case needs the permission only in the result: moved there, not
            // copied.
            state.permission = Some(permission);
            Ok(cleared(input))
        }
        Decision::Deny => {
            let text = denial_message(env, tool.name_for_call(&state.call.tool), &permission);
            let sources = permission
                .denial_source()
                .map(Reason::label)
                .into_iter()
                .collect();
            state.permission = Some(permission);
            Err(deny(env, state, tool, text, sources))
        }
        Decision::Ask => {
            state.permission = Some(permission.clone());
            rare(ask(env, state, tool, &input, permission)).await?;
            Ok(cleared(input))
        }
    }
}

/// Records what the `warn` and `audit` rules would have changed (`StagedRuleMatched`), and
/// keeps the warnings of `warn` rules for the model.
fn report_staged(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    permission: &Permission,
) {
    let engine = &env.prepared.snapshot.engine;
    for staged in &permission.staged {
        env.emit(
            Some(&state.call.id),
            EventKind::StagedRuleMatched(StagedRuleMatched {
                tool: tool.name_for_call(&state.call.tool).to_owned(),
                rule: staged.rule.clone(),
                enforcement: staged.enforcement.as_str().to_owned(),
                decision: permission.decision.to_string(),
                would: staged.decision.to_string(),
                reason: staged.reason.clone(),
            }),
        );
        if staged.enforcement == Enforcement::Warn {
            let would = match staged.decision {
                Decision::Allow => "allowed",
                Decision::Ask => "asked about",
                Decision::Deny => "denied",
            };
            state.warnings.push(message(
                engine,
                MessageKey::StagedWarning,
                &[
                    ("rule", staged.rule.as_str()),
                    ("decision", would),
                    ("reason", staged.reason.as_deref().unwrap_or_default()),
                ],
            ));
        }
    }
}

/// The model-facing text of a rule, hook or default denial: the deciding reason, or the
/// template of its source.
fn denial_message(env: &CallEnv<'_>, name: &str, permission: &Permission) -> String {
    if let Some(reason) = permission.denial_reason() {
        return reason.to_owned();
    }
    let engine = &env.prepared.snapshot.engine;
    match permission.denial_source() {
        Some(Reason::Hook { name: hook, .. }) => message(
            engine,
            MessageKey::HookDenied,
            &[("tool", name), ("hook", hook)],
        ),
        Some(Reason::Rule { name: rule, .. }) => message(
            engine,
            MessageKey::RuleDenied,
            &[("tool", name), ("rule", rule)],
        ),
        Some(
            Reason::Default { .. }
            | Reason::Analysis { .. }
            | Reason::AlwaysAsk
            | Reason::Untrusted { .. }
            | Reason::Approval { .. },
        )
        | None => message(engine, MessageKey::DefaultDenied, &[("tool", name)]),
    }
}

fn deny(
    env: &CallEnv<'_>,
    state: &CallState<'_>,
    tool: &Tool,
    text: String,
    sources: Vec<String>,
) -> Failure {
    env.emit(
        Some(&state.call.id),
        EventKind::PermissionDenied(PermissionDenied {
            tool: tool.name_for_call(&state.call.tool).to_owned(),
            reason: text.clone(),
            sources,
        }),
    );
    Failure::denied(FailureStage::Permission, text)
}

async fn ask(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    input: &Value,
    permission: Permission,
) -> Result<(), Failure> {
    let engine = &env.prepared.snapshot.engine;
    let name = tool.name_for_call(&state.call.tool).to_owned();
    env.emit(
        Some(&state.call.id),
        EventKind::PermissionRequested(PermissionRequested {
            tool: name.clone(),
            input: input.clone(),
            reasons: permission.reasons.iter().map(Reason::label).collect(),
        }),
    );
    let request = ApprovalRequest {
        batch_id: env.batch_id.clone(),
        call_id: state.call.id.clone(),
        tool: ToolName::new(name.as_str()),
        input: input.clone(),
        reasons: permission.reasons.clone(),
        modes: env.modes.to_vec(),
        attempt: 1,
    };
    let hooks = hook_race(env, state, tool, input);
    let policy = WaitPolicy {
        timeout: engine.approval_timeout.map(|d| d.0),
        expiry: engine.approval_expiry,
    };
    let waited = Instant::now();
    let outcome = wait(env.approver, request, hooks, &policy, state.cancel).await;
    let wait_ms = u64::try_from(waited.elapsed().as_millis()).unwrap_or(u64::MAX);
    state.metadata.permission_wait_ms = wait_ms;
    let (answer, by) = match outcome {
        ApprovalOutcome::Cancelled => {
            let (reason, _) = state.cancel_reason(env);
            return Err(cancellation(
                env,
                state,
                Some(tool),
                FailureStage::Permission,
                reason,
            ));
        }
        ApprovalOutcome::Answered { answer, by } => (answer, by),
    };
    let source = match &by {
        AnsweredBy::Broker => "approver".to_owned(),
        AnsweredBy::Hook(name) => format!("hook:{name}"),
        AnsweredBy::Expiry => "expiry".to_owned(),
        AnsweredBy::NoClient => "no_client".to_owned(),
    };
    let (decision, reason) = match &answer {
        ApprovalAnswer::Allow { reason } => (Decision::Allow, reason.clone()),
        ApprovalAnswer::Deny { reason } => (Decision::Deny, reason.clone()),
        ApprovalAnswer::DenyWithFeedback { feedback } => (Decision::Deny, Some(feedback.clone())),
    };
    if let Some(permission) = &mut state.permission {
        permission.reasons.push(Reason::Approval {
            by: source.clone(),
            decision,
            reason: reason.clone(),
        });
    }
    if !matches!(by, AnsweredBy::NoClient) {
        env.emit(
            Some(&state.call.id),
            EventKind::PermissionResolved(PermissionResolved {
                decision: crate::events::decision_name(decision).to_owned(),
                source: source.clone(),
                reason,
                wait_ms,
            }),
        );
    }
    let name = name.as_str();
    match answer {
        ApprovalAnswer::Allow { .. } => {
            if let Some(permission) = &mut state.permission {
                permission.decision = Decision::Allow;
            }
            Ok(())
        }
        ApprovalAnswer::Deny { reason } => {
            let text = match (&by, reason) {
                (AnsweredBy::NoClient, _) => {
                    message(engine, MessageKey::NoPermissionClient, &[("tool", name)])
                }
                (AnsweredBy::Expiry, _) => {
                    let ms = engine
                        .approval_timeout
                        .map_or(0, |d| d.as_millis())
                        .to_string();
                    message(
                        engine,
                        MessageKey::ApprovalExpired,
                        &[("tool", name), ("ms", &ms)],
                    )
                }
                // A hook's reason is the hook's own words.
                (AnsweredBy::Hook(_), Some(reason)) => reason,
                // A person said no: the model is told so, with their reason.
                (_, Some(reason)) => message(
                    engine,
                    MessageKey::ApprovalDeniedReason,
                    &[("tool", name), ("reason", &reason)],
                ),
                (_, None) => message(engine, MessageKey::ApprovalDenied, &[("tool", name)]),
            };
            mark_denied(state);
            Err(deny(env, state, tool, text, vec![source]))
        }
        ApprovalAnswer::DenyWithFeedback { feedback } => {
            // The reviewer's words are the reason the model is told.
            let text = feedback.clone();
            mark_denied(state);
            let mut failure = deny(env, state, tool, text, vec![source]);
            failure.feedback = Some(feedback);
            Err(failure)
        }
    }
}

fn mark_denied(state: &mut CallState<'_>) {
    if let Some(permission) = &mut state.permission {
        permission.decision = Decision::Deny;
    }
}

/// The `PermissionRequest` hooks that apply, as one future racing the approver, or `None`
/// when no hook applies. The first decisive answer wins; the rest are dropped (their
/// processes killed).
fn hook_race(
    env: &CallEnv<'_>,
    state: &CallState<'_>,
    tool: &Tool,
    input: &Value,
) -> Option<HookRace> {
    let snapshot = Arc::clone(&env.prepared.snapshot);
    let hooks: Vec<&SnapshotHook> = hooks::applicable(
        &snapshot,
        HookEvent::PermissionRequest,
        Some(&tool.name),
        env.modes,
    )
    .collect();
    if hooks.is_empty() {
        return None;
    }
    let reasons: Vec<String> = state
        .permission
        .as_ref()
        .map(|p| p.reasons.iter().map(Reason::label).collect())
        .unwrap_or_default();
    let call = CallInfo {
        batch_id: env.batch_id.as_str(),
        call_id: state.call.id.as_str(),
        tool: tool.name_for_call(&state.call.tool),
        input,
        modes: env.modes,
        workspace: &snapshot.workspace_root,
    };
    let runs: Vec<(SnapshotHook, Value)> = hooks
        .into_iter()
        .map(|hook| {
            let mut payload = hooks::call_payload(HookEvent::PermissionRequest, hook, &call);
            payload.insert("reasons".into(), json!(reasons));
            (hook.clone(), Value::Object(payload))
        })
        .collect();
    let sink = Arc::clone(env.sink);
    let batch = env.batch_id.clone();
    let call = state.call.id.clone();
    let cancel = state.cancel.clone();
    Some(Box::pin(async move {
        let mut pending: FuturesUnordered<_> = runs
            .into_iter()
            .map(|(hook, payload)| {
                let snapshot = Arc::clone(&snapshot);
                let cancel = cancel.clone();
                async move {
                    let ran = hooks::run(&snapshot, &hook, payload, &cancel).await;
                    (hook, ran)
                }
            })
            .collect();
        while let Some((hook, ran)) = pending.next().await {
            let name = hook.spec.name.clone();
            match ran {
                Ran::Answered(answer) => match answer.decision {
                    Some(Decision::Allow) => {
                        let reason = answer.reason;
                        return Some((name, ApprovalAnswer::Allow { reason }));
                    }
                    Some(Decision::Deny) => {
                        let reason = answer.reason;
                        return Some((name, ApprovalAnswer::Deny { reason }));
                    }
                    Some(Decision::Ask) | None => {}
                },
                Ran::Blocked(stderr) => {
                    let reason = hooks::blocked_reason(stderr);
                    return Some((name, ApprovalAnswer::Deny { reason }));
                }
                Ran::Failed(error) => {
                    let error = hook_error(&snapshot.engine, &error);
                    sink.emit(crate::events::Event::now(
                        Some(batch.clone()),
                        Some(call.clone()),
                        snapshot.generation,
                        EventKind::HookFailed(HookFailed {
                            hook: name.clone(),
                            event: hooks::event_name(HookEvent::PermissionRequest).to_owned(),
                            error: error.clone(),
                            fail_closed: hooks::fails_closed(&hook),
                        }),
                    ));
                    if hooks::fails_closed(&hook) {
                        let reason = Some(format!("hook `{name}` failed: {error}"));
                        return Some((name, ApprovalAnswer::Deny { reason }));
                    }
                }
            }
        }
        None
    }))
}
