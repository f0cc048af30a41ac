//! What a client gets back for a `tools/call`: the finalized result of the one-call batch
//! the call ran as, as MCP content. The text is exactly what the model would see from `run`
//! or `serve` (budgeted, cut, with the artifact reference when the output went to a file);
//! non-text parts pass through; any status but `ok` is a tool error (`isError: true`) whose
//! text says why.
//!
//! An `ask` that no one could answer (the client declared no elicitation) is denied by the
//! engine; [`how_to_allow`] adds what would let such a call run, from the reasons that asked.

use rmcp::model::{CallToolResult, ContentBlock};

use crate::events::CallStatus;
use crate::executor::BatchOutcome;
use crate::model::Decision;
use crate::pipeline::CallResult;
use crate::policy::decide::Reason;

/// The MCP result of a one-call batch.
pub fn call_result(outcome: &BatchOutcome) -> CallToolResult {
    let Some(result) = outcome.results.first() else {
        return CallToolResult::error(vec![ContentBlock::text("the call produced no result")]);
    };
    let mut text = result.model_text();
    if let Some(context) = &outcome.batch_context {
        text.push_str("\n\n");
        text.push_str(context);
    }
    if let Some(hint) = how_to_allow(result) {
        text.push_str("\n\n");
        text.push_str(&hint);
    }
    let mut content = vec![ContentBlock::text(text)];
    // Parts are MCP content already (images, resources from an MCP server); one that is not
    // is dropped rather than sent malformed.
    content.extend(
        result
            .parts
            .iter()
            .filter_map(|part| serde_json::from_value::<ContentBlock>(part.clone()).ok()),
    );
    match result.status {
        CallStatus::Ok => CallToolResult::success(content),
        CallStatus::Error | CallStatus::Denied | CallStatus::TimedOut | CallStatus::Cancelled => {
            CallToolResult::error(content)
        }
    }
}

/// For a call that asked and was denied because the client cannot answer an ask: what would
/// let it run, naming the rules, default or flag that asked. `None` for any other result.
pub fn how_to_allow(result: &CallResult) -> Option<String> {
    let permission = result.permission.as_ref()?;
    let unanswered = permission
        .reasons
        .iter()
        .any(|reason| matches!(reason, Reason::Approval { by, .. } if by == "no_client"));
    if result.status != CallStatus::Denied || !unanswered {
        return None;
    }
    let tool = result
        .canonical_tool
        .as_ref()
        .map_or(result.tool.as_str(), |t| t.as_str());
    let mut causes = Vec::new();
    for reason in &permission.reasons {
        match reason {
            Reason::Rule {
                name,
                decision: Decision::Ask,
                location,
                ..
            } => causes.push(match location {
                Some(location) => format!(
                    "rule `{name}` ({location}) asks: change its decision to `allow`, or add an \
                     `allow` rule with a higher priority for this call"
                ),
                None => format!(
                    "rule `{name}` asks: change its decision to `allow`, or add an `allow` rule \
                     with a higher priority for this call"
                ),
            }),
            Reason::Default {
                decision: Decision::Ask,
                ..
            } => causes.push(format!(
                "the contract of `{tool}` defaults to `ask`: set `permission: {{default: allow}}` \
                 in it (or in a mode's patch, served with `--mode`), or add an `allow` rule for \
                 this call"
            )),
            Reason::AlwaysAsk => causes.push(format!(
                "the contract of `{tool}` sets `permission.always_ask`: remove it (or unset it in \
                 a mode's patch, served with `--mode`)"
            )),
            Reason::Analysis {
                decision: Decision::Ask,
                reason,
                ..
            } => causes.push(format!(
                "the policy cannot judge this input ({reason}): add an `allow` rule that matches it"
            )),
            Reason::Hook {
                name,
                decision: Decision::Ask,
                ..
            } => causes.push(format!("hook `{name}` asks: change the hook")),
            Reason::Rule { .. }
            | Reason::Default { .. }
            | Reason::Analysis { .. }
            | Reason::Hook { .. }
            | Reason::Untrusted { .. }
            | Reason::Approval { .. } => {}
        }
    }
    let mut text = String::from(
        "this call needs an approval, and the MCP client did not declare the elicitation \
         capability, so no one could be asked",
    );
    if causes.is_empty() {
        text.push_str(
            "; use a client that supports elicitation, or change the policy to allow this call",
        );
    } else {
        text.push_str(
            "; use a client that supports elicitation, or change the policy so it allows this \
             call:",
        );
        for cause in causes {
            text.push_str("\n- ");
            text.push_str(&cause);
        }
    }
    Some(text)
}
