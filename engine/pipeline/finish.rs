//! Stage 13, finish: the success or failure becomes the [`CallResult`], failures run the
//! `PostToolUseFailure` hooks and are budgeted like outputs, turn control is applied, and
//! exactly one terminal event (`ToolCallResult` or `ToolCallError`) is emitted — also for
//! unknown tools and cancelled calls, so no UI waits forever.

use super::display::PendingDisplay;
use super::{CallEnv, CallResult, CallState, Display, ErrorInfo, Failure, TurnEffect};
use crate::budget::{Produced, SlotText};
use crate::events::{CallStatus, EventKind, ToolCallError, ToolCallResult};
use crate::model::ToolName;
use crate::model::contract::TurnAction;
use crate::model::engine_config::MessageKey;

/// What the stages produce for a successful call.
pub struct Success {
    /// The budgeted content and its metadata.
    pub produced: Produced,
    /// Non-text parts.
    pub parts: Vec<serde_json::Value>,
    /// The UI projection.
    pub display: Option<Display>,
    /// A display the batch finalizer projects if it cuts the result.
    pub pending_display: Option<PendingDisplay>,
    /// The turn effect and its message.
    pub turn: Option<(TurnEffect, Option<String>)>,
    /// The contract's `budget.batch_exempt`.
    pub batch_exempt: bool,
    /// The contract's `budget.weight` and `budget.min_share`.
    pub weight: (u32, u64),
}

/// Builds the result of a successful call and emits the terminal event.
///
/// The result is boxed once here and moved as a pointer until the batch collects it.
pub fn succeeded(env: &CallEnv<'_>, mut state: CallState<'_>, success: Success) -> Box<CallResult> {
    let mut content = success.produced.content;
    let turn = success.turn.map(|(effect, message)| {
        if let Some(message) = message {
            content = SlotText::from(message);
        }
        effect
    });
    let canonical_tool = state
        .tool
        .map(|t| ToolName::new(t.name_for_call(&state.call.tool)));
    // Moved out of the state: nothing reads them there after this.
    let mut result = Box::new(CallResult {
        call_id: state.call.id.clone(),
        tool: std::mem::take(&mut state.call.tool),
        canonical_tool,
        status: CallStatus::Ok,
        model_content: content,
        hook_context: None,
        parts: success.parts,
        metadata: std::mem::take(&mut state.metadata),
        error: None,
        permission: state.permission.take(),
        display: success.display,
        pending_display: success.pending_display,
        turn,
        batch_exempt: success.batch_exempt,
        weight: success.weight,
    });
    end(env, &state, &mut result);
    result
}

/// Builds the result of a failed call — after its `PostToolUseFailure` hooks, with the error
/// text budgeted like an output — and emits the terminal event.
pub async fn failed(
    env: &CallEnv<'_>,
    mut state: CallState<'_>,
    failure: Failure,
) -> Box<CallResult> {
    super::post_hooks::post_failure_hooks(env, &mut state, &failure).await;
    let mut result = Box::new(failed_result(env, &mut state, failure).await);
    end(env, &state, &mut result);
    result
}

/// What every call ends with: the hooks' context, `total_ms`, the terminal event and the
/// call's log line.
fn end(env: &CallEnv<'_>, state: &CallState<'_>, result: &mut CallResult) {
    let snapshot = &env.prepared.snapshot;
    let messages = &snapshot.engine.messages;
    let numbered = |header: MessageKey, entries: &[String]| {
        let entries: Vec<String> = entries
            .iter()
            .enumerate()
            .map(|(i, text)| format!("{}. {text}", i + 1))
            .collect();
        format!("{}\n{}", messages.template(header), entries.join("\n"))
    };
    let mut blocks = Vec::new();
    if !state.warnings.is_empty() {
        blocks.push(numbered(MessageKey::PolicyWarningHeader, &state.warnings));
    }
    if !state.hook_context.is_empty() {
        blocks.push(numbered(MessageKey::HookContextHeader, &state.hook_context));
    }
    if !blocks.is_empty() {
        result.hook_context = Some(blocks.join("\n"));
    }
    result.metadata.total_ms =
        u64::try_from(state.started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let metrics = result.metadata.metrics();
    // The tool that ran: a covered call's own name, not its wildcard's (the call's name is
    // in the result by now).
    let telemetry_tool = state
        .tool
        .as_ref()
        .map_or("unknown", |t| t.name_for_call(&result.tool));
    env.emit_with(Some(&result.call_id), || match &result.error {
        None => EventKind::ToolCallResult(ToolCallResult {
            tool: telemetry_tool.to_owned(),
            status: CallStatus::Ok,
            original_size: result.metadata.original_size,
            final_size: result.metadata.final_size,
            truncated: result.metadata.truncated,
            metrics,
        }),
        Some(error) => EventKind::ToolCallError(ToolCallError {
            tool: telemetry_tool.to_owned(),
            status: result.status,
            stage: error.stage,
            code: error.code.as_str().to_owned(),
            cancel_reason: error.cancel_reason,
            message: result.model_content.as_str().to_owned(),
            metrics,
        }),
    });
    tracing::info!(
        target: "toolgate::call",
        tool = %telemetry_tool,
        call_id = %result.call_id,
        status = result.status.as_str(),
        permission = result.permission.as_ref().map_or("none", |p| crate::events::decision_name(p.decision)),
        output_bytes = result.model_content.as_str().len(),
        truncated = result.metadata.truncated,
        failure_stage = result.error.as_ref().map(|e| format!("{:?}", e.stage)).unwrap_or_default(),
        total_ms = result.metadata.total_ms,
        "tool call ended"
    );
}

async fn failed_result(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    failure: Failure,
) -> CallResult {
    let tool = state.tool;
    let contract = tool
        .as_ref()
        .map(|t| t.resolved_for(env.modes, &env.prepared.snapshot.engine));
    let turn = contract
        .as_deref()
        .and_then(|c| super::turn_control::on_failure(c, &failure));
    let mut text = failure.message.clone();
    if let Some((_, Some(message))) = &turn {
        text = message.clone();
    }
    // An error text can be as large as an output (a failing command's stderr): it gets the
    // same per-call budget when the tool is known.
    let (model_content, batch_exempt, weight) = match (&tool, &contract) {
        (Some(tool), Some(contract)) => {
            let produced =
                super::produce::produce(env, state, tool, contract, SlotText::from(text)).await;
            // A text cut before the budget (an error projection) is truncated too.
            state.metadata.truncated |= failure.truncated;
            (
                produced.content,
                contract.budget.batch_exempt,
                (contract.budget.weight, contract.budget.min_share),
            )
        }
        _ => {
            let unit = env.prepared.snapshot.engine.budget_unit;
            let size = crate::budget::measure::measure(&text, unit);
            state.metadata.original_size = size;
            state.metadata.final_size = size;
            (SlotText::from(text), false, (1, 0))
        }
    };
    let turn = turn.map(|(mut effect, _)| {
        if effect.action != TurnAction::InjectFeedback {
            effect.feedback = None;
        }
        effect
    });
    CallResult {
        call_id: state.call.id.clone(),
        tool: state.call.tool.clone(),
        canonical_tool: tool.map(|t| ToolName::new(t.name_for_call(&state.call.tool))),
        status: failure.status,
        model_content,
        hook_context: None,
        parts: Vec::new(),
        metadata: state.metadata.clone(),
        error: Some(ErrorInfo {
            code: failure.code,
            detail_code: failure.detail_code,
            stage: failure.stage,
            cancel_reason: failure.cancel_reason,
        }),
        permission: state.permission.clone(),
        display: None,
        pending_display: None,
        turn,
        batch_exempt,
        weight,
    }
}
