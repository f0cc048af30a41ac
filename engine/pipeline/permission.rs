//! Stage 5, permission (SPEC §7): the rules decide, the PreToolUse hooks' votes combine with
//! them, `always_ask` turns an allow into an ask. On ask, a `PermissionRequested` event is
//! emitted and the approver's answer races the `PermissionRequest` hooks; the wait has its
//! own timeout with a declared outcome. The request carries the exact input that runs.

use serde_json::Value;
// tokio's clock, not std's: approval waits are measured on the runtime's clock, so they
// read right under paused time too.
use tokio::time::Instant;

use super::errors::message;
use super::{CallEnv, CallState, Failure};
use crate::approval::{
    AnsweredBy, ApprovalAnswer, ApprovalOutcome, ApprovalRequest, WaitPolicy, wait,
};
use crate::events::{
    EventKind, FailureStage, PermissionDenied, PermissionRequested, PermissionResolved,
};
use crate::model::Decision;
use crate::model::engine_config::MessageKey;
use crate::policy::decide::{Permission, Reason, combine};
use crate::policy::rules::CallFacts;
use crate::snapshot::{ResolvedContract, Tool};

/// Decides the call's permission, asking for approval when needed.
pub async fn permission(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    contract: &ResolvedContract,
    input: &Value,
) -> Result<(), Failure> {
    let snapshot = &env.prepared.snapshot;
    let facts = CallFacts {
        tool: &tool.name,
        input,
        modes: env.modes,
        flags: &contract.concurrency,
    };
    let rules = snapshot
        .rules
        .decide(&facts, &snapshot.match_ctx, contract.default_permission);
    let permission = combine(rules, &state.hook_votes, contract.always_ask);
    if permission.decision == Decision::Allow {
        // The common case needs the permission only in the result: moved there, not copied.
        state.permission = Some(permission);
        return Ok(());
    }
    state.permission = Some(permission.clone());
    match permission.decision {
        Decision::Allow => Ok(()),
        Decision::Deny => {
            let text = denial_message(env, tool, &permission);
            let sources = permission
                .denial_source()
                .map(Reason::label)
                .into_iter()
                .collect();
            Err(deny(env, state, tool, text, sources))
        }
        // Boxed: the approval wait is a large future, and most calls never ask.
        Decision::Ask => Box::pin(ask(env, state, tool, input, permission)).await,
    }
}

/// The model-facing text of a rule, hook or default denial: the deciding reason, or the
/// template of its source.
fn denial_message(env: &CallEnv<'_>, tool: &Tool, permission: &Permission) -> String {
    if let Some(reason) = permission.denial_reason() {
        return reason.to_owned();
    }
    let engine = &env.prepared.snapshot.engine;
    let name = tool.name.as_str();
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
        Some(Reason::Default { .. } | Reason::AlwaysAsk | Reason::Approval { .. }) | None => {
            message(engine, MessageKey::DefaultDenied, &[("tool", name)])
        }
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
            tool: tool.name.to_string(),
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
    env.emit(
        Some(&state.call.id),
        EventKind::PermissionRequested(PermissionRequested {
            tool: tool.name.to_string(),
            input: input.clone(),
            reasons: permission.reasons.iter().map(Reason::label).collect(),
        }),
    );
    let request = ApprovalRequest {
        batch_id: env.batch_id.clone(),
        call_id: state.call.id.clone(),
        tool: tool.name.clone(),
        input: input.clone(),
        reasons: permission.reasons.clone(),
        modes: env.modes.to_vec(),
        attempt: 1,
    };
    let hooks = crate::hooks::permission_request(env, state, tool, input);
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
            return Err(super::execute::cancellation(
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
    let name = tool.name.as_str();
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
