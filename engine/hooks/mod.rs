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
//!
//! This module is the protocol and the process runner only: it builds payloads, runs one
//! hook and reads its answer. When hooks run and what their answers do to a call is the
//! pipeline's business (`pipeline::pre_hooks`, `pipeline::permission`,
//! `pipeline::post_hooks`) and the executor's (`PostToolBatch`).

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::diagnostics::diagnostic::fold_whitespace;
use crate::handler::template::parse_argv;
use crate::handler::{CallContext, CommandSpec, HandlerError, StdinMode, run_captured};
use crate::model::hook::{HookEvent, HookFailure};
use crate::model::{CallId, Decision, ModeName, ToolName};
use crate::snapshot::{Snapshot, SnapshotHook};

/// Most bytes a hook may print before it is stopped.
const HOOK_OUTPUT_LIMIT: u64 = 1024 * 1024;

/// A hook's answer on stdout.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// Its permission vote (`PreToolUse`) or answer (`PermissionRequest`).
    #[serde(default)]
    pub decision: Option<Decision>,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
    /// The input to continue with (`PreToolUse`).
    #[serde(default)]
    pub updated_input: Option<Value>,
    /// Text for the model.
    #[serde(default)]
    pub additional_context: Option<String>,
}

impl Answer {
    /// The additional context, unless it is blank.
    pub fn context(&mut self) -> Option<String> {
        self.additional_context
            .take()
            .filter(|c| !c.trim().is_empty())
    }
}

/// What one hook run came to.
#[derive(Debug)]
pub enum Ran {
    /// Exit 0 with an answer (possibly empty).
    Answered(Answer),
    /// Exit 2: blocked, with stderr (trimmed).
    Blocked(String),
    /// Anything else.
    Failed(HookError),
}

/// Why a hook run failed.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The hook declares no command.
    #[error("the hook has no command")]
    NoCommand,
    /// Its command cannot be parsed.
    #[error("{0}")]
    Argv(String),
    /// Its process could not be run.
    #[error(transparent)]
    Process(HandlerError),
    /// It ran out of time.
    #[error("timed out after {}ms", .0.as_millis())]
    TimedOut(Duration),
    /// Exit 0 with stdout that is not an answer.
    #[error("its stdout is not a valid answer: {0}")]
    BadAnswer(String),
    /// Another exit code, with its stderr (whitespace folded).
    #[error("exit code {code}{}", after_code(.stderr))]
    Exit {
        /// The exit code.
        code: i32,
        /// Its stderr.
        stderr: String,
    },
    /// Killed by a signal.
    #[error("killed by a signal")]
    Signal,
}

/// What follows the exit code in [`HookError::Exit`]: `: STDERR`, or a note that stderr was
/// empty (no dangling colon).
fn after_code(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        ", nothing on stderr".to_owned()
    } else {
        format!(": {}", stderr.trim())
    }
}

/// The reason of a block: its stderr, `None` when that was empty.
pub fn blocked_reason(stderr: String) -> Option<String> {
    (!stderr.is_empty()).then_some(stderr)
}

/// Whether a failing hook denies the call (`on_error: fail_closed`).
pub fn fails_closed(hook: &SnapshotHook) -> bool {
    hook.spec.on_error == Some(HookFailure::FailClosed)
}

/// The hooks of the snapshot that run for this event, tool and modes, in declaration order.
pub fn applicable<'s>(
    snapshot: &'s Snapshot,
    event: HookEvent,
    tool: Option<&ToolName>,
    modes: &[ModeName],
) -> impl Iterator<Item = &'s SnapshotHook> {
    snapshot
        .hooks
        .iter()
        .filter(move |hook| hook.applies(event, tool, modes))
}

/// Runs one hook process with `payload` on stdin.
pub async fn run(
    snapshot: &Snapshot,
    hook: &SnapshotHook,
    payload: Value,
    cancel: &CancellationToken,
) -> Ran {
    let Some(command) = &hook.spec.command else {
        return Ran::Failed(HookError::NoCommand);
    };
    // Hook commands are literal: no `{{input.*}}` templating (the input arrives on stdin).
    let literal: Vec<String> = command
        .iter()
        .map(|arg| arg.replace("{{", "{{{{"))
        .collect();
    let argv = match parse_argv(&literal) {
        Ok(argv) => argv,
        Err(error) => return Ran::Failed(HookError::Argv(error.to_string())),
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
            return Ran::Failed(HookError::TimedOut(limit));
        }
    };
    let captured = match captured {
        Ok(captured) => captured,
        Err(error) => return Ran::Failed(HookError::Process(error)),
    };
    match captured.status.code() {
        Some(0) => {
            let text = captured.stdout.trim();
            if text.is_empty() {
                return Ran::Answered(Answer::default());
            }
            match serde_json::from_str::<Answer>(text) {
                Ok(answer) => Ran::Answered(answer),
                Err(error) => Ran::Failed(HookError::BadAnswer(error.to_string())),
            }
        }
        Some(2) => Ran::Blocked(captured.stderr.trim().to_owned()),
        Some(code) => Ran::Failed(HookError::Exit {
            code,
            stderr: fold_whitespace(&captured.stderr),
        }),
        None => Ran::Failed(HookError::Signal),
    }
}

/// Which call hooks are asked about: its batch, its id, its tool and the turn's modes.
#[derive(Clone, Copy, Debug)]
pub struct CallScope<'a> {
    /// Its batch.
    pub batch_id: &'a str,
    /// Its id.
    pub call_id: &'a str,
    /// The tool it runs ([`crate::snapshot::Tool::name_for_call`]).
    pub tool: &'a str,
    /// The active modes.
    pub modes: &'a [ModeName],
}

/// The call a hook is asked about.
pub struct CallInfo<'a> {
    /// The batch.
    pub batch_id: &'a str,
    /// The call.
    pub call_id: &'a str,
    /// Its canonical tool.
    pub tool: &'a str,
    /// Its input (as rewritten so far).
    pub input: &'a Value,
    /// Active modes.
    pub modes: &'a [ModeName],
    /// The workspace root.
    pub workspace: &'a Path,
}

/// The fields every per-call payload has; the caller adds the event's own fields.
pub fn call_payload(
    event: HookEvent,
    hook: &SnapshotHook,
    call: &CallInfo<'_>,
) -> Map<String, Value> {
    let mut payload = Map::new();
    payload.insert("hook_event_name".into(), json!(event_name(event)));
    payload.insert("hook".into(), json!(hook.spec.name));
    payload.insert("batch_id".into(), json!(call.batch_id));
    payload.insert("call_id".into(), json!(call.call_id));
    payload.insert("tool_name".into(), json!(call.tool));
    payload.insert("tool_input".into(), call.input.clone());
    payload.insert("modes".into(), json!(mode_names(call.modes)));
    payload.insert(
        "workspace".into(),
        json!(call.workspace.display().to_string()),
    );
    payload
}

/// The payload of a `PostToolBatch` hook; `results` holds `call_id`, `tool`, `status` and
/// `model_content` per call.
pub fn batch_payload(
    hook: &SnapshotHook,
    batch_id: &str,
    modes: &[ModeName],
    workspace: &Path,
    results: &[Value],
) -> Value {
    json!({
        "hook_event_name": event_name(HookEvent::PostToolBatch),
        "hook": hook.spec.name,
        "batch_id": batch_id,
        "modes": mode_names(modes),
        "workspace": workspace.display().to_string(),
        "results": results,
    })
}

fn mode_names(modes: &[ModeName]) -> Vec<&str> {
    modes.iter().map(|m| m.as_str()).collect()
}

/// The event's name on the wire.
pub fn event_name(event: HookEvent) -> &'static str {
    match event {
        HookEvent::PreToolUse => "PreToolUse",
        HookEvent::PostToolUse => "PostToolUse",
        HookEvent::PostToolUseFailure => "PostToolUseFailure",
        HookEvent::PermissionRequest => "PermissionRequest",
        HookEvent::PostToolBatch => "PostToolBatch",
    }
}
