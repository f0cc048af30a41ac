//! Claude Code's hook protocol, and OpenAI Codex's reading of it
//! (<https://code.claude.com/docs/en/hooks>; Codex: `codex-rs/hooks/schema/generated` in
//! <https://github.com/openai/codex>).
//!
//! | event | allow | ask | deny | deferred |
//! | --- | --- | --- | --- | --- |
//! | `PreToolUse` | `permissionDecision: allow` (Codex: no output, unless the input was rewritten) | `ask` (Codex cannot ask: deny, or no output with `--codex-ask defer`) | `deny` | no output |
//! | `PermissionRequest` | `decision.behavior: allow` | no output: the agent asks its user | `behavior: deny` with `message` | no output |
//! | `PostToolUse` | `additionalContext` when the policy's `PostToolUse` hooks add context, else no output | | | |
//!
//! Every JSON answer exits 0; the reason of an answer without JSON goes to stderr.

use serde_json::{Map, Value, json};

use super::{AgentEvent, Answer, Fallback, HookOptions, Reply, Verdict};
use crate::model::Decision;

/// Claude Code itself, or Codex's stricter reading of the same format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// Claude Code (and Qwen Code, which reuses its format).
    Claude,
    /// OpenAI Codex: `PreToolUse` takes no `ask` and no `allow` without `updatedInput`, and
    /// `PermissionRequest` no `updatedInput`.
    Codex,
}

/// The reply to a Claude-format hook.
pub fn reply(
    flavour: Flavour,
    event: AgentEvent,
    verdict: &Verdict,
    options: &HookOptions,
) -> Reply {
    match event {
        AgentEvent::PreToolUse | AgentEvent::BeforeTool => pre_tool_use(flavour, verdict, options),
        AgentEvent::PermissionRequest => permission_request(flavour, verdict),
        AgentEvent::AfterTool => match &verdict.answer {
            Answer::Context { text: Some(text) } => json_reply(json!({
                "hookSpecificOutput": {
                    "hookEventName": "PostToolUse",
                    "additionalContext": text,
                }
            })),
            Answer::Context { text: None } | Answer::Decided { .. } | Answer::Defer { .. } => {
                Reply::default()
            }
        },
        AgentEvent::Other => super::unreadable(
            "a tool call came with a hook event toolgate does not know, so it is blocked; toolgate judges PreToolUse, PermissionRequest and PostToolUse hooks",
        ),
    }
}

fn pre_tool_use(flavour: Flavour, verdict: &Verdict, options: &HookOptions) -> Reply {
    let (decision, reason, updated) = match decided(verdict) {
        Ok(decided) => decided,
        Err(reply) => return reply,
    };
    match (flavour, decision) {
        (Flavour::Codex, Decision::Allow) if updated.is_none() => {
            // Codex rejects a bare `allow`: saying nothing lets the call go on under Codex's
            // own approval settings.
            note(&format!("allowed: {reason}"))
        }
        (Flavour::Codex, Decision::Ask) => match options.ask_unsupported {
            Fallback::Defer => note(&format!(
                "asks, which Codex's PreToolUse hooks cannot; left to Codex's approval settings: {reason}"
            )),
            Fallback::Deny | Fallback::Ask | Fallback::Allow => pre_tool_use_json(
                "deny",
                &format!("needs a person's approval, which a Codex hook cannot ask for: {reason}"),
                None,
            ),
        },
        (_, Decision::Allow) => pre_tool_use_json("allow", reason, updated),
        (_, Decision::Ask) => pre_tool_use_json("ask", reason, updated),
        (_, Decision::Deny) => pre_tool_use_json("deny", reason, None),
    }
}

fn pre_tool_use_json(decision: &str, reason: &str, updated: Option<&Value>) -> Reply {
    let mut output = Map::new();
    output.insert("hookEventName".into(), json!("PreToolUse"));
    output.insert("permissionDecision".into(), json!(decision));
    output.insert("permissionDecisionReason".into(), json!(reason));
    if let Some(updated) = updated {
        output.insert("updatedInput".into(), updated.clone());
    }
    json_reply(json!({ "hookSpecificOutput": output }))
}

fn permission_request(flavour: Flavour, verdict: &Verdict) -> Reply {
    let (decision, reason, updated) = match decided(verdict) {
        Ok(decided) => decided,
        Err(reply) => return reply,
    };
    let mut behaviour = Map::new();
    match decision {
        Decision::Allow => {
            match (flavour, updated) {
                (Flavour::Claude, Some(updated)) => {
                    behaviour.insert("updatedInput".into(), updated.clone());
                }
                // Codex cannot take a rewritten input here: the person decides.
                (Flavour::Codex, Some(_)) => {
                    return note(&format!(
                        "a toolgate hook rewrote the input; the user decides: {reason}"
                    ));
                }
                (_, None) => {}
            }
            behaviour.insert("behavior".into(), json!("allow"));
        }
        Decision::Ask => return note(&format!("asks the user: {reason}")),
        Decision::Deny => {
            behaviour.insert("behavior".into(), json!("deny"));
            behaviour.insert("message".into(), json!(reason));
        }
    }
    json_reply(json!({
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": behaviour,
        }
    }))
}

/// A JSON answer on stdout, exit 0.
pub(super) fn json_reply(value: Value) -> Reply {
    Reply {
        stdout: Some(format!("{value}\n")),
        stderr: None,
        exit: 0,
    }
}

/// No answer (the agent's own rules go on), with why on stderr.
/// A decided verdict's decision, reason and rewritten input; the reply for one that is not
/// (deferred: a note; context only: nothing).
pub(super) fn decided(verdict: &Verdict) -> Result<(Decision, &str, Option<&Value>), Reply> {
    match &verdict.answer {
        Answer::Decided {
            decision,
            reason,
            updated_input,
        } => Ok((*decision, reason.as_str(), updated_input.as_ref())),
        Answer::Defer { reason } => Err(note(reason)),
        Answer::Context { .. } => Err(Reply::default()),
    }
}

pub(super) fn note(reason: &str) -> Reply {
    Reply {
        stdout: None,
        stderr: Some(format!("toolgate: {reason}\n")),
        exit: 0,
    }
}
