//! Coding agents' hooks: an agent (Claude Code, Codex, Gemini CLI, …) runs `toolgate hook
//! <agent>` before (and after) each tool call; this module decides that call with the
//! policies and answers in the agent's protocol.
//!
//! ```text
//! agent's hook JSON ─ HookPayload::parse ─→ tool map (agents.<agent>.tools, map.rs)
//!   ─→ toolgate calls ─ assess::admit → PreToolUse hooks → Admitted::settle ─→ Permission
//!   ─→ strictest of the calls ─→ Verdict ─ claude.rs / gemini.rs ─→ stdout, stderr, exit code
//! ```
//!
//! Each toolgate call is decided by [`crate::assess`], the code `toolgate plan`, `toolgate
//! test` and the run pipeline decide with, and its `PreToolUse` hooks run through the
//! pipeline's own collector, so a call gets the same decision here as anywhere else. A call
//! the tool map splits (the edits of a `MultiEdit`, the files of a patch, the URLs of a
//! prompt) is answered with the strictest decision of its parts. Nothing fails open: a
//! payload that cannot be read, a policy that does not load, an input the contract rejects
//! are all refused (see [`Verdict`]); only a tool the policy does not know is deferred to the
//! agent's own rules (configurable).

pub mod claude;
pub mod gemini;
mod map;

use std::borrow::Cow;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::assess::{self, Admitted, Settled};
use crate::decision_log::{DecidedBy, decided_by, deciding_reason, file_and_line};
use crate::model::agent::AgentSpec;
use crate::model::hook::HookEvent;
use crate::model::{Decision, ModeName};
use crate::pipeline::{post_hooks, pre_hooks};
use crate::policy::decide::{Permission, Reason};
use crate::snapshot::{Snapshot, SnapshotHook};

use map::{Mapped, MappedCall};

pub use crate::model::agent::AgentProtocol;

/// An agent declared under `agents:` in a snapshot: the protocol its hooks speak and how its
/// tools map onto toolgate tools. Found by [`agent_spec`] and given to [`decide`]; its parts
/// are internal (the policy files' `agents` section describes them).
#[derive(Clone, Copy, Debug)]
pub struct Agent<'s> {
    spec: &'s AgentSpec,
}

/// What an agent's hook sent on stdin, as toolgate reads it (unknown fields are ignored).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct HookPayload {
    /// The hook event (`PreToolUse`, `PermissionRequest`, `PostToolUse`, `BeforeTool`,
    /// `AfterTool`).
    pub hook_event_name: String,
    /// The agent's tool.
    pub tool_name: String,
    /// Its input.
    #[serde(default)]
    pub tool_input: Value,
    /// The agent's working directory: the project is found from it.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The agent's session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The id of the tool call.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// The agent's permission mode (Claude Code, Codex).
    #[serde(default)]
    pub permission_mode: Option<String>,
    /// The tool's result (`PostToolUse`, `AfterTool`).
    #[serde(default)]
    pub tool_response: Option<Value>,
    /// Gemini CLI's description of an MCP tool.
    #[serde(default)]
    pub mcp_context: Option<McpContext>,
}

/// Gemini CLI's `mcp_context`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct McpContext {
    /// The MCP server.
    pub server_name: String,
    /// The tool's name on its server.
    pub tool_name: String,
}

impl HookPayload {
    /// Reads a payload; `Err` says why it cannot be read (the caller refuses the call).
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        // A UTF-8 byte-order mark, which JSON parsers may ignore (the policy loader does).
        let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|error| format!("the hook payload is not JSON: {error}"))?;
        crate::load::json::deserialize_as(&value, "the hook payload is not a tool hook's")
    }

    /// The event, by what it asks for.
    pub fn event(&self) -> AgentEvent {
        match self.hook_event_name.as_str() {
            "PreToolUse" => AgentEvent::PreToolUse,
            "PermissionRequest" => AgentEvent::PermissionRequest,
            "BeforeTool" => AgentEvent::BeforeTool,
            // `PostToolUseFailure` too: after a call, whatever its end.
            name if name.starts_with("PostToolUse") || name == "AfterTool" => AgentEvent::AfterTool,
            _ => AgentEvent::Other,
        }
    }

    /// The `mcp__<server>__<tool>` name of an MCP tool the agent names otherwise.
    fn mcp_name(&self) -> Option<String> {
        self.mcp_context
            .as_ref()
            .map(|mcp| crate::model::mcp::agent_tool_name(&mcp.server_name, &mcp.tool_name))
    }
}

/// What an agent's hook event asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentEvent {
    /// Before the call, every call (Claude Code and Codex): allow, ask or deny.
    PreToolUse,
    /// The agent is about to ask its user (Claude Code and Codex): allow or deny for them.
    PermissionRequest,
    /// Before the call (Gemini CLI): allow, ask or deny.
    BeforeTool,
    /// After the call (`PostToolUse`, `AfterTool`): context for the model, if a policy adds
    /// any.
    AfterTool,
    /// An event toolgate does not know, carrying a tool call: blocked (fail closed), since
    /// it may be a new or renamed event before the call.
    Other,
}

/// How the hook answers what it cannot decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookOptions {
    /// The answer for a tool the policy does not know (default: defer to the agent).
    pub unknown: Fallback,
    /// The answer when the policies do not load or the payload is unreadable (`deny` or
    /// `ask`; default `deny`).
    pub on_error: Decision,
    /// The answer for an `ask` where the protocol cannot ask (Codex's `PreToolUse`):
    /// `deny` (default) or `defer` (leave it to the agent's own approval settings).
    pub ask_unsupported: Fallback,
}

impl Default for HookOptions {
    fn default() -> Self {
        Self {
            unknown: Fallback::Defer,
            on_error: Decision::Deny,
            ask_unsupported: Fallback::Deny,
        }
    }
}

/// An answer given without a policy decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// Say nothing: the agent's own permission rules decide.
    Defer,
    /// Ask the user.
    Ask,
    /// Refuse.
    Deny,
    /// Allow.
    Allow,
}

/// What toolgate answers about one agent call, before it is put in the agent's protocol.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The answer.
    pub answer: Answer,
    /// Who decided.
    pub decided_by: DecidedBy,
    /// The deciding rule and its `file:line`, if a rule decided.
    pub rule: Option<(String, Option<String>)>,
    /// The toolgate tools the call was decided as.
    pub toolgate_tools: Vec<String>,
}

/// The answer about one agent call.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// A decision with its reason (`<rule> (<file>:<line>): <reason>`), and the agent's
    /// input as a toolgate hook rewrote it.
    Decided {
        /// allow, ask or deny.
        decision: Decision,
        /// Why, for the agent and its user.
        reason: String,
        /// The rewritten input, in the agent's fields.
        updated_input: Option<Value>,
    },
    /// Left to the agent's own rules, with why.
    Defer {
        /// Why.
        reason: String,
    },
    /// After a call: context for the model from the policy's `PostToolUse` hooks (none:
    /// nothing to add).
    Context {
        /// The context.
        text: Option<String>,
    },
}

impl Verdict {
    /// The fail-closed verdict for an error (`on_error`: deny or ask).
    pub fn error(on_error: Decision, reason: String) -> Self {
        Self {
            answer: Answer::Decided {
                decision: on_error,
                reason,
                updated_input: None,
            },
            decided_by: DecidedBy::Error,
            rule: None,
            toolgate_tools: Vec::new(),
        }
    }

    /// The decision logged for it (`None` for context-only answers).
    pub fn logged(&self) -> Option<crate::decision_log::LoggedDecision> {
        match &self.answer {
            Answer::Decided { decision, .. } => Some((*decision).into()),
            Answer::Defer { .. } => Some(crate::decision_log::LoggedDecision::Defer),
            Answer::Context { .. } => None,
        }
    }

    /// The reason given with it.
    pub fn reason(&self) -> Option<&str> {
        match &self.answer {
            Answer::Decided { reason, .. } | Answer::Defer { reason } => Some(reason),
            Answer::Context { .. } => None,
        }
    }
}

/// What the hook prints and exits with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// The JSON answer on stdout (nothing else ever goes there).
    pub stdout: Option<String>,
    /// Text for stderr.
    pub stderr: Option<String>,
    /// The exit code.
    pub exit: i32,
}

/// The agent's spec in the snapshot, with its protocol (default `claude`).
pub fn agent_spec<'s>(snapshot: &'s Snapshot, agent: &str) -> Option<(Agent<'s>, AgentProtocol)> {
    let spec = snapshot.agents.get(agent)?;
    Some((
        Agent { spec },
        spec.protocol.unwrap_or(AgentProtocol::Claude),
    ))
}

/// Puts a verdict in the agent's protocol.
pub fn reply(
    protocol: AgentProtocol,
    event: AgentEvent,
    verdict: &Verdict,
    options: &HookOptions,
) -> Reply {
    match protocol {
        AgentProtocol::Claude => claude::reply(claude::Flavour::Claude, event, verdict, options),
        AgentProtocol::Codex => claude::reply(claude::Flavour::Codex, event, verdict, options),
        AgentProtocol::Gemini => gemini::reply(event, verdict),
    }
}

/// The reply when the payload cannot be read or the agent is unknown: nothing is known about
/// the call, so it is blocked the way every protocol understands — exit code 2 with the
/// reason on stderr.
pub fn unreadable(reason: &str) -> Reply {
    Reply {
        stdout: None,
        stderr: Some(format!("toolgate: {reason}\n")),
        exit: 2,
    }
}

/// Decides an agent's call with the snapshot: maps it, decides every toolgate call it maps
/// to (running the policy's `PreToolUse` hooks), and keeps the strictest; after a call, runs
/// the policy's `PostToolUse` hooks for context.
pub async fn decide(
    snapshot: &Snapshot,
    agent: &str,
    spec: Agent<'_>,
    payload: &HookPayload,
    options: &HookOptions,
) -> Verdict {
    let spec = spec.spec;
    let modes: Vec<ModeName> = payload
        .permission_mode
        .as_deref()
        .and_then(|mode| spec.modes.get(mode))
        .filter(|mode| snapshot.modes.contains_key(mode.as_str()))
        .map(|mode| vec![ModeName::new(mode.as_str())])
        .unwrap_or_default();
    let mcp_name = payload.mcp_name();
    let mapped = map::map_call(
        snapshot,
        agent,
        spec,
        &payload.tool_name,
        &payload.tool_input,
        mcp_name.as_deref(),
    );
    let (mapping, calls) = match mapped {
        Mapped::Unknown { reason } => return unknown(options.unknown, reason),
        Mapped::Invalid { reason } => {
            return Verdict {
                answer: Answer::Decided {
                    decision: Decision::Deny,
                    reason,
                    updated_input: None,
                },
                decided_by: DecidedBy::InvalidInput,
                rule: None,
                toolgate_tools: Vec::new(),
            };
        }
        Mapped::Unreadable { reason } => {
            return Verdict {
                answer: decided(Decision::Ask, reason),
                decided_by: DecidedBy::Analysis,
                rule: None,
                toolgate_tools: Vec::new(),
            };
        }
        Mapped::Calls { mapping, calls } => (mapping, calls),
    };
    let calls = match &payload.cwd {
        Some(cwd) => map::in_folder(
            calls,
            mapping,
            &cwd.to_string_lossy(),
            snapshot.match_ctx.workspace_root(),
        ),
        None => calls,
    };
    let toolgate_tools = distinct_tools(snapshot, &calls);
    let call_id = payload.tool_use_id.as_deref().unwrap_or("call");
    let batch_id = payload.session_id.as_deref().unwrap_or("hook");
    // Each toolgate call is asked about under its own tool (see `decide_one` and `after`).
    let call = crate::hooks::CallScope {
        batch_id,
        call_id,
        tool: &payload.tool_name,
        modes: &modes,
    };
    if payload.event() == AgentEvent::AfterTool {
        let text = after(snapshot, &calls, &call, payload).await;
        return Verdict {
            answer: Answer::Context { text },
            decided_by: DecidedBy::Default,
            rule: None,
            toolgate_tools,
        };
    }
    let mut parts: Vec<Part> = Vec::with_capacity(calls.len());
    for mapped in &calls {
        parts.push(decide_one(snapshot, &modes, &call, mapped).await);
    }
    let several = parts.len() > 1;
    // INVARIANT: a mapping yields at least one call.
    let decision = parts
        .iter()
        .map(|p| p.decision)
        .max()
        .unwrap_or(Decision::Deny);
    let deciding: Vec<&Part> = parts.iter().filter(|p| p.decision == decision).collect();
    let reason = deciding
        .iter()
        .map(|part| match (&part.label, several) {
            (Some(label), true) => format!("`{label}`: {}", part.reason),
            _ => part.reason.clone(),
        })
        .fold(Vec::<String>::new(), |mut out, text| {
            if !out.contains(&text) {
                out.push(text);
            }
            out
        })
        .join("; ");
    let first = deciding.first();
    let decided_by = first.map_or(DecidedBy::Default, |p| p.decided_by);
    let rule = first.and_then(|p| p.rule.clone());
    let updated_input = match (&parts[..], decision) {
        ([part], Decision::Allow | Decision::Ask) => part
            .rewritten
            .as_ref()
            .and_then(|rewritten| map::carry_back(mapping, &payload.tool_input, rewritten)),
        _ => None,
    };
    // A rewrite that cannot be carried back to the agent's fields must not let the original
    // input run as if it had been approved.
    let carried = parts.len() != 1 || parts[0].rewritten.is_none() || updated_input.is_some();
    if !carried && decision != Decision::Deny {
        return Verdict {
            answer: Answer::Decided {
                decision: Decision::Deny,
                reason: "a toolgate hook rewrote the input, and the rewrite cannot be given back in the agent's fields".to_owned(),
                updated_input: None,
            },
            decided_by: DecidedBy::Hook,
            rule: None,
            toolgate_tools,
        };
    }
    Verdict {
        answer: Answer::Decided {
            decision,
            reason,
            updated_input,
        },
        decided_by,
        rule,
        toolgate_tools,
    }
}

fn unknown(fallback: Fallback, reason: String) -> Verdict {
    let answer = match fallback {
        Fallback::Defer => Answer::Defer { reason },
        Fallback::Ask => decided(Decision::Ask, reason),
        Fallback::Deny => decided(Decision::Deny, reason),
        Fallback::Allow => decided(Decision::Allow, reason),
    };
    Verdict {
        answer,
        decided_by: DecidedBy::UnknownTool,
        rule: None,
        toolgate_tools: Vec::new(),
    }
}

fn decided(decision: Decision, reason: String) -> Answer {
    Answer::Decided {
        decision,
        reason,
        updated_input: None,
    }
}

fn distinct_tools(snapshot: &Snapshot, calls: &[MappedCall]) -> Vec<String> {
    let mut tools: Vec<String> = Vec::new();
    for call in calls {
        let name = snapshot.lookup(&call.tool).map_or_else(
            || call.tool.clone(),
            |tool| tool.name_for_call(&call.tool).to_owned(),
        );
        if !tools.contains(&name) {
            tools.push(name);
        }
    }
    tools
}

/// The decision of one toolgate call.
struct Part {
    decision: Decision,
    reason: String,
    decided_by: DecidedBy,
    rule: Option<(String, Option<String>)>,
    label: Option<String>,
    /// The input as the policy's `PreToolUse` hooks rewrote it, if they did.
    rewritten: Option<Value>,
}

/// Decides one toolgate call exactly as the run pipeline does: admit (lookup, normalise,
/// validate), the `PreToolUse` hooks, then settle (rules, hook votes, `always_ask`). An input
/// the contract rejects is refused.
async fn decide_one(
    snapshot: &Snapshot,
    modes: &[ModeName],
    call: &crate::hooks::CallScope<'_>,
    mapped: &MappedCall,
) -> Part {
    let refused = |reason: String| Part {
        decision: Decision::Deny,
        reason,
        decided_by: DecidedBy::InvalidInput,
        rule: None,
        label: mapped.label.clone(),
        rewritten: None,
    };
    let admitted = match assess::admit(snapshot, modes, &mapped.tool, Cow::Borrowed(&mapped.input))
    {
        Ok(admitted) => admitted,
        Err((_, rejection)) => return refused(rejection.message),
    };
    let tool = admitted.resolved.tool;
    let hooks: Vec<&SnapshotHook> =
        crate::hooks::applicable(snapshot, HookEvent::PreToolUse, Some(&tool.name), modes)
            .collect();
    let (admitted, votes, rewritten) = if hooks.is_empty() {
        (admitted, Vec::new(), None)
    } else {
        let Admitted { resolved, input } = admitted;
        let original = input.clone().into_owned();
        let cancel = CancellationToken::new();
        let collected = match pre_hooks::collect(
            snapshot,
            tool,
            &hooks,
            &crate::hooks::CallScope {
                tool: tool.name_for_call(&mapped.tool),
                ..*call
            },
            input.into_owned(),
            &cancel,
            eprintln_hook_failure,
        )
        .await
        {
            Ok(collected) => collected,
            Err(rejection) => return refused(rejection.message),
        };
        let rewritten = (collected.input != original).then(|| collected.input.clone());
        (
            Admitted {
                resolved,
                input: Cow::Owned(collected.input),
            },
            collected.votes,
            rewritten,
        )
    };
    match admitted.settle(snapshot, modes, &votes) {
        (_, Ok(Settled { permission, .. })) => {
            let (decided_by, _) = decided_by(&permission);
            Part {
                decision: permission.decision,
                reason: crate::decision_log::reason_text(
                    &permission,
                    tool.name_for_call(&mapped.tool),
                ),
                decided_by,
                rule: rule_of(&permission),
                label: mapped.label.clone(),
                rewritten,
            }
        }
        (_, Err(rejection)) => refused(rejection.message),
    }
}

/// A failing policy hook is reported on stderr (stdout holds only the answer).
fn eprintln_hook_failure(hook: &SnapshotHook, error: &str) {
    eprintln!("toolgate: hook `{}` failed: {error}", hook.spec.name);
}

/// After a call: the context the policy's `PostToolUse` hooks add for its toolgate calls.
async fn after(
    snapshot: &Snapshot,
    calls: &[MappedCall],
    call: &crate::hooks::CallScope<'_>,
    payload: &HookPayload,
) -> Option<String> {
    let response = match &payload.tool_response {
        Some(Value::String(text)) => json!(text),
        Some(other) => json!(other.to_string()),
        None => json!(""),
    };
    let fields = |map: &mut serde_json::Map<String, Value>| {
        map.insert("tool_response".into(), response.clone());
        map.insert("status".into(), json!("ok"));
    };
    let cancel = CancellationToken::new();
    let mut context: Vec<String> = Vec::new();
    for mapped in calls {
        let Some(tool) = snapshot.lookup(&mapped.tool) else {
            continue;
        };
        let hooks: Vec<&SnapshotHook> = crate::hooks::applicable(
            snapshot,
            HookEvent::PostToolUse,
            Some(&tool.name),
            call.modes,
        )
        .collect();
        if hooks.is_empty() {
            continue;
        }
        context.extend(
            post_hooks::collect_context(
                snapshot,
                &hooks,
                HookEvent::PostToolUse,
                &crate::hooks::CallScope {
                    tool: tool.name_for_call(&mapped.tool),
                    ..*call
                },
                &mapped.input,
                &fields,
                &cancel,
                eprintln_hook_failure,
            )
            .await,
        );
    }
    (!context.is_empty()).then(|| context.join("\n\n"))
}

/// The rule behind a permission and its `file:line`, if a rule decided.
fn rule_of(permission: &Permission) -> Option<(String, Option<String>)> {
    match deciding_reason(permission) {
        Some(Reason::Rule { name, location, .. }) => Some((
            name.clone(),
            location.as_deref().map(|l| file_and_line(l).to_owned()),
        )),
        _ => None,
    }
}
