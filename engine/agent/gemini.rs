//! Gemini CLI's hook protocol (`BeforeTool`, `AfterTool`;
//! <https://github.com/google-gemini/gemini-cli/blob/main/docs/hooks/reference.md>).
//!
//! The answer is one JSON object on stdout: `decision` `allow`, `deny` or `ask` (`ask` forces
//! a confirmation, showing `systemMessage`) with `reason` (what the model is told on deny);
//! a rewritten input goes in `hookSpecificOutput.tool_input`, which replaces the arguments
//! whole. Gemini CLI treats anything else on stdout with exit 0 — plain text, Claude's
//! fields — as allow, so nothing but this JSON may ever be printed there.
//!
//! | event | allow | ask | deny | deferred |
//! | --- | --- | --- | --- | --- |
//! | `BeforeTool` | `decision: allow` | `decision: ask` + `systemMessage` | `decision: deny` + `systemMessage` | no output |
//! | `AfterTool` | `hookSpecificOutput.additionalContext` when the policy's `PostToolUse` hooks add context, else no output | | | |

use serde_json::{Map, json};

use super::claude::{decided, json_reply};
use super::{AgentEvent, Answer, Reply, Verdict};
use crate::model::Decision;

/// The reply to a Gemini CLI hook.
pub fn reply(event: AgentEvent, verdict: &Verdict) -> Reply {
    match event {
        AgentEvent::BeforeTool | AgentEvent::PreToolUse | AgentEvent::PermissionRequest => {
            before_tool(verdict)
        }
        AgentEvent::AfterTool => match &verdict.answer {
            Answer::Context { text: Some(text) } => json_reply(json!({
                "hookSpecificOutput": {
                    "hookEventName": "AfterTool",
                    "additionalContext": text,
                }
            })),
            Answer::Context { text: None } | Answer::Decided { .. } | Answer::Defer { .. } => {
                Reply::default()
            }
        },
        AgentEvent::Other => super::unreadable(
            "a tool call came with a hook event toolgate does not know, so it is blocked; toolgate judges BeforeTool and AfterTool hooks",
        ),
    }
}

fn before_tool(verdict: &Verdict) -> Reply {
    let (decision, reason, updated) = match decided(verdict) {
        Ok(decided) => decided,
        Err(reply) => return reply,
    };
    let mut answer = Map::new();
    answer.insert("decision".into(), json!(decision.to_string()));
    answer.insert("reason".into(), json!(reason));
    match decision {
        Decision::Allow => {}
        Decision::Ask => {
            answer.insert(
                "systemMessage".into(),
                json!(format!("toolgate asks: {reason}")),
            );
        }
        Decision::Deny => {
            answer.insert(
                "systemMessage".into(),
                json!(format!("toolgate denied: {reason}")),
            );
        }
    }
    if let Some(updated) = updated
        && decision != Decision::Deny
    {
        answer.insert(
            "hookSpecificOutput".into(),
            json!({ "hookEventName": "BeforeTool", "tool_input": updated }),
        );
    }
    json_reply(serde_json::Value::Object(answer))
}
