//! Approvals by MCP elicitation: an `ask` becomes an `elicitation/create` request (form mode,
//! no fields) whose message shows the tool, the exact input and why it asks; `accept` allows
//! the call, `decline` and `cancel` deny it. The engine bounds the wait
//! (`engine.approval_timeout`) and withdraws the request when the call is cancelled.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer, RoleServer};

use crate::approval::{ApprovalAnswer, ApprovalBroker, ApprovalRequest};
use crate::policy::decide::Reason;

/// Asks the client's user through elicitation.
pub struct Elicit {
    peer: Peer<RoleServer>,
}

impl Elicit {
    /// A broker for a client that declared form elicitation; `None` for one that did not
    /// (its asks are denied by the engine, with what would allow them).
    pub fn for_peer(peer: &Peer<RoleServer>) -> Option<Self> {
        peer.supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
            .then(|| Self { peer: peer.clone() })
    }
}

impl ApprovalBroker for Elicit {
    fn request(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        let peer = self.peer.clone();
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message(&request),
            requested_schema: ElicitationSchema::new(BTreeMap::new()),
        };
        Box::pin(async move {
            match peer.create_elicitation(params).await {
                // Only an explicit accept allows; decline, cancel and any action a later
                // protocol adds deny.
                Ok(result) if result.action == ElicitationAction::Accept => {
                    ApprovalAnswer::Allow { reason: None }
                }
                Ok(_) => ApprovalAnswer::Deny { reason: None },
                Err(error) => ApprovalAnswer::Deny {
                    reason: Some(format!("the approval request failed: {error}")),
                },
            }
        })
    }
}

/// What the user reads: the tool, the exact input, and the reasons that asked.
pub fn message(request: &ApprovalRequest) -> String {
    let input = crate::diagnostics::escape_invisible(
        &serde_json::to_string_pretty(&request.input).unwrap_or_default(),
    );
    let mut text = format!(
        "Allow `{}` to run with this input?\n\n{input}\n",
        request.tool
    );
    let reasons: Vec<String> = request.reasons.iter().filter_map(describe).collect();
    if !reasons.is_empty() {
        text.push_str("\nIt needs approval because:\n");
        for reason in reasons {
            text.push_str("- ");
            text.push_str(&reason);
            text.push('\n');
        }
    }
    text.push_str("\nAccept to run it; decline to refuse it.");
    text
}

fn describe(reason: &Reason) -> Option<String> {
    let with = |head: String, why: &Option<String>| match why {
        Some(why) => format!("{head}: {why}"),
        None => head,
    };
    Some(match reason {
        Reason::Rule { name, reason, .. } => with(format!("rule `{name}`"), reason),
        Reason::Default { decision, .. } => format!("the tool's default is `{decision}`"),
        Reason::Analysis { reason, .. } => reason.clone(),
        Reason::Hook { name, reason, .. } => with(format!("hook `{name}`"), reason),
        Reason::AlwaysAsk => "the tool always asks".to_owned(),
        Reason::Untrusted { reason, .. } => reason.clone(),
        Reason::Approval { .. } => return None,
    })
}
