//! The decision layer: what the policies say about one tool call, as a value, before anything
//! runs (SPEC §5.1, §6 stages 1–3 and 5, §7).
//!
//! ```text
//! ToolCall ─ admit ─→ lookup (alias → canonical) → normalise (JSON-string input parsed)
//!                     → validate (input schema)
//!          ─ settle ─→ timeout (override field, default, cap, grace) → permission (rules,
//!                      default, hook votes, always_ask) with its reasons
//! ```
//!
//! [`assess`] is [`admit`] then [`Admitted::settle`] with no hook votes. `toolgate plan`,
//! `toolgate test`, `serve`'s `plan` and the run pipeline all decide a call through these
//! functions, so they give the same answer by construction. The pipeline runs the
//! `PreToolUse` hooks between the two halves (a rewritten input goes through
//! [`check_input`] again) and then acts on the decision: approval, the handler, events.
//!
//! Pure and synchronous: no hook, handler or approver runs here, and nothing is awaited.
//! A call that cannot run is a [`Rejection`] carrying the exact text the model is told.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::model::engine_config::MessageKey;
use crate::model::handler::{CommandHandler, HandlerSpec};
use crate::model::hook::HookEvent;
use crate::model::resolved::{ResolvedContract, ResolvedEngine};
use crate::model::{CallId, ModeName};
use crate::policy::decide::{HookVote, Permission, Reason, combine, staged};
use crate::policy::parts::{FileTool, FileTools};
use crate::policy::rule::CallFacts;
use crate::policy::rules::RuleSet;
use crate::snapshot::{Snapshot, Tool};
use crate::timeout::{ResolvedTimeout, resolve};

/// One tool call as the model gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// Its id, unique within the batch.
    pub id: CallId,
    /// The tool name or alias as written.
    pub tool: String,
    /// The input: an object, or a JSON string holding one.
    pub input: Value,
}

impl ToolCall {
    /// A call.
    pub fn new(id: impl Into<CallId>, tool: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            tool: tool.into(),
            input,
        }
    }
}

/// Why a call cannot run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectionKind {
    /// The name is empty, or no tool's name or alias.
    UnknownTool,
    /// The input is not a JSON object (nor a JSON string holding one).
    NotAnObject,
    /// The input breaks the contract's input schema.
    SchemaViolation,
    /// The input's timeout override cannot be obeyed.
    BadTimeoutOverride,
}

/// A call that cannot run, and what the model is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// Why.
    pub kind: RejectionKind,
    /// The model-facing text (from the `engine.messages` templates).
    pub message: String,
}

/// What the policies say about one call.
#[derive(Clone, Debug)]
pub struct Assessment<'s, 'c> {
    /// The tool the name resolved to, with its contract for the active modes; `None` when the
    /// name is no tool's.
    pub(crate) tool: Option<Resolved<'s>>,
    /// The normalised input, timeout and permission; or why the call cannot run.
    pub(crate) outcome: Result<Settled<'c>, Rejection>,
}

impl Assessment<'_, '_> {
    /// The permission (decision and reasons), or `None` when the call cannot run.
    pub fn permission(&self) -> Option<&Permission> {
        self.outcome
            .as_ref()
            .ok()
            .map(|settled| &settled.permission)
    }

    /// Why the call cannot run (the text the model is told), or `None` when it can.
    pub fn rejection(&self) -> Option<&str> {
        self.outcome
            .as_ref()
            .err()
            .map(|rejection| rejection.message.as_str())
    }
}

/// A tool as a call sees it: looked up, with its contract for the active modes.
#[derive(Clone, Debug)]
pub struct Resolved<'s> {
    /// The canonical tool.
    pub tool: &'s Arc<Tool>,
    /// Its contract with the active modes' patches applied.
    pub contract: Cow<'s, Arc<ResolvedContract>>,
}

/// A call whose tool is known and whose input is an object that fits the input schema.
#[derive(Clone, Debug)]
pub struct Admitted<'s, 'c> {
    /// The tool and its contract.
    pub resolved: Resolved<'s>,
    /// The normalised, validated input (borrowed when the call's input already was an
    /// object).
    pub input: Cow<'c, Value>,
}

/// What a call that may run gets: its input, timeout and permission.
#[derive(Clone, Debug, PartialEq)]
pub struct Settled<'c> {
    /// The normalised, validated input.
    pub input: Cow<'c, Value>,
    /// The resolved timeout (`None`: no timeout).
    pub timeout: Option<ResolvedTimeout>,
    /// allow / ask / deny, with the rules (or default, hooks, `always_ask`) behind it.
    pub permission: Permission,
}

/// Decides one call: `admit`, then `Admitted::settle` without hook votes. Reads the call's
/// input in place (only a JSON-string input is parsed).
pub fn assess<'s, 'c>(
    snapshot: &'s Snapshot,
    modes: &[ModeName],
    call: &'c ToolCall,
) -> Assessment<'s, 'c> {
    assess_input(snapshot, modes, &call.tool, Cow::Borrowed(&call.input))
}

/// [`assess`] of a tool name and an input, borrowed or owned.
pub fn assess_input<'s, 'c>(
    snapshot: &'s Snapshot,
    modes: &[ModeName],
    tool: &str,
    input: Cow<'c, Value>,
) -> Assessment<'s, 'c> {
    match admit(snapshot, modes, tool, input) {
        Ok(admitted) => {
            let (resolved, outcome) = admitted.settle(snapshot, modes, &[]);
            Assessment {
                tool: Some(resolved),
                outcome,
            }
        }
        Err((tool, rejection)) => Assessment {
            tool,
            outcome: Err(rejection),
        },
    }
}

/// Stages 1–3: looks the tool up, resolves its contract for the active modes, normalises and
/// validates the input. On rejection, the tool is returned too when it was known.
#[allow(clippy::type_complexity)]
pub fn admit<'s, 'c>(
    snapshot: &'s Snapshot,
    modes: &[ModeName],
    tool: &str,
    input: Cow<'c, Value>,
) -> Result<Admitted<'s, 'c>, (Option<Resolved<'s>>, Rejection)> {
    let tool = lookup(snapshot, tool).map_err(|rejection| (None, rejection))?;
    let resolved = Resolved::new(snapshot, modes, tool);
    match check_input(&snapshot.engine, tool, input) {
        Ok(input) => Ok(Admitted { resolved, input }),
        Err(rejection) => Err((Some(resolved), rejection)),
    }
}

/// Stage 1: the name (or alias) to the canonical tool. Names are case-sensitive, so `bash` is
/// not `Bash`. A name that would reach an MCP server tool an exact contract runs is refused
/// with the contract's name ([`Snapshot::contract_running`]).
pub fn lookup<'s>(snapshot: &'s Snapshot, name: &str) -> Result<&'s Arc<Tool>, Rejection> {
    snapshot.lookup(name).ok_or_else(|| {
        let messages = &snapshot.engine.messages;
        let message = match snapshot.contract_running(name) {
            Some(contract) => messages.render(
                MessageKey::McpToolHasContract,
                &[("tool", name), ("contract", contract.as_str())],
            ),
            None => messages.render(MessageKey::ToolNotFound, &[("tool", name)]),
        };
        Rejection {
            kind: RejectionKind::UnknownTool,
            message,
        }
    })
}

/// Stages 2 and 3: an input given as a JSON string is parsed, a missing input (`null`) is the
/// empty object, anything but an object is rejected; then the input is checked against the
/// contract's input schema, every violation listed with its JSON pointer (sorted, without
/// repeats). The pipeline checks an input a `PreToolUse` hook rewrote with it again.
pub fn check_input<'c>(
    engine: &ResolvedEngine,
    tool: &Tool,
    input: Cow<'c, Value>,
) -> Result<Cow<'c, Value>, Rejection> {
    let input = normalize(input)
        .map_err(|details| invalid(engine, tool, RejectionKind::NotAnObject, &details))?;
    validate(tool, &input)
        .map_err(|details| invalid(engine, tool, RejectionKind::SchemaViolation, &details))?;
    Ok(input)
}

fn normalize(input: Cow<'_, Value>) -> Result<Cow<'_, Value>, String> {
    match input.as_ref() {
        Value::Object(_) => Ok(input),
        Value::Null => Ok(Cow::Owned(Value::Object(Map::new()))),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(object @ Value::Object(_)) => Ok(Cow::Owned(object)),
            Ok(other) => Err(format!(
                "the input must be a JSON object, not {}",
                kind(&other)
            )),
            Err(error) => Err(format!("the input string is not valid JSON: {error}")),
        },
        other => Err(format!(
            "the input must be a JSON object, not {}",
            kind(other)
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn validate(tool: &Tool, input: &Value) -> Result<(), String> {
    let Some(validator) = &tool.input_schema else {
        return Ok(());
    };
    if validator.is_valid(input) {
        return Ok(());
    }
    // The validator reports in no useful order, and some violations twice (once per
    // failing branch): sorted and de-duplicated, the text is stable.
    let mut problems: Vec<(String, String)> = validator
        .iter_errors(input)
        .map(|error| (error.instance_path().to_string(), error.to_string()))
        .collect();
    problems.sort();
    problems.dedup();
    let details: Vec<String> = problems
        .iter()
        .map(|(pointer, text)| {
            let at = if pointer.is_empty() { "/" } else { pointer };
            format!("`{at}`: {text}")
        })
        .collect();
    Err(details.join("; "))
}

fn invalid(engine: &ResolvedEngine, tool: &Tool, kind: RejectionKind, details: &str) -> Rejection {
    Rejection {
        kind,
        message: engine.messages.render(
            MessageKey::InputValidation,
            &[("tool", tool.name.as_str()), ("details", details)],
        ),
    }
}

impl<'s, 'c> Admitted<'s, 'c> {
    /// Stage 3's timeout and stage 5's decision (without approval): resolves the timeout the
    /// call asks for — a bad override value rejects the call, never clamped — and combines
    /// the rules (or the contract default), the `PreToolUse` hooks' votes and `always_ask`
    /// into the permission. Hands the input on (not copied) with the tool.
    pub fn settle(
        self,
        snapshot: &Snapshot,
        modes: &[ModeName],
        votes: &[HookVote],
    ) -> (Resolved<'s>, Result<Settled<'c>, Rejection>) {
        let Admitted { resolved, input } = self;
        let Resolved { tool, contract } = &resolved;
        let timeout = match resolve_timeout(&snapshot.engine, tool, contract, &input) {
            Ok(timeout) => timeout,
            Err(rejection) => return (resolved, Err(rejection)),
        };
        let facts = CallFacts {
            tool: &tool.name,
            input: &input,
            modes,
            flags: &contract.concurrency,
        };
        // A command line's files are judged by the file tools' rules, and so are the files
        // below a folder the search tool searches and the folders the list tool lists through
        // links; the read tool's file is looked into when it may hold a credential.
        let table = snapshot.rules.commands();
        let judges_files = snapshot.rules.reads_command_lines(&tool.name)
            || [&table.search_tool, &table.read_tool, &table.list_tool]
                .iter()
                .any(|file_tool| file_tool.as_deref() == Some(tool.name.as_str()));
        let files = if judges_files {
            file_tools(snapshot, modes)
        } else {
            ResolvedFileTools {
                read: None,
                write: None,
                search: None,
                list: None,
            }
        };
        let files = FileTools {
            read: files.read.as_ref().map(|(tool, contract)| FileTool {
                tool,
                flags: &contract.concurrency,
            }),
            write: files.write.as_ref().map(|(tool, contract)| FileTool {
                tool,
                flags: &contract.concurrency,
            }),
            search: files.search.as_ref().map(|(tool, contract)| FileTool {
                tool,
                flags: &contract.concurrency,
            }),
            list: files.list.as_ref().map(|(tool, contract)| FileTool {
                tool,
                flags: &contract.concurrency,
            }),
        };
        // A handler with a `cwd` takes the call's relative paths (and starts its command
        // lines) there: they are judged where they lead from it.
        let in_folder = match &tool.contract.handler {
            Some(HandlerSpec::Command(CommandHandler { cwd: Some(cwd), .. })) => {
                Some(snapshot.match_ctx.in_folder(Path::new(cwd)))
            }
            _ => None,
        };
        let ctx = in_folder.as_ref().unwrap_or(&snapshot.match_ctx);
        let decide =
            |rules: &RuleSet| rules.decide(&facts, ctx, contract.default_permission, &files);
        let mut permission = combine(decide(&snapshot.rules), votes, contract.always_ask);
        // `warn` and `audit` rules decide nothing; what they would change is recorded.
        if let Some(all) = snapshot.rules.with_staged() {
            let would = combine(decide(all), votes, contract.always_ask);
            permission.staged = staged(&permission, &would, &snapshot.rules);
        }
        // What an untrusted project could have allowed was ignored: a decision other than
        // allow says so, and how to trust the project.
        if let Some(untrusted) = &snapshot.untrusted
            && !untrusted.ignored.is_empty()
            && permission.decision != crate::model::Decision::Allow
        {
            permission.reasons.push(Reason::Untrusted {
                project: untrusted.root.display().to_string(),
                reason: untrusted.notice(),
            });
        }
        let settled = Settled {
            input,
            timeout,
            permission,
        };
        (resolved, Ok(settled))
    }
}

/// The tools whose rules judge the files a command line reads and writes, with their
/// contracts in these modes.
struct ResolvedFileTools<'s> {
    read: Option<(&'s crate::model::ToolName, Cow<'s, Arc<ResolvedContract>>)>,
    write: Option<(&'s crate::model::ToolName, Cow<'s, Arc<ResolvedContract>>)>,
    search: Option<(&'s crate::model::ToolName, Cow<'s, Arc<ResolvedContract>>)>,
    list: Option<(&'s crate::model::ToolName, Cow<'s, Arc<ResolvedContract>>)>,
}

fn file_tools<'s>(snapshot: &'s Snapshot, modes: &[ModeName]) -> ResolvedFileTools<'s> {
    let table = snapshot.rules.commands();
    let resolve = |name: Option<&str>| {
        let tool = snapshot.lookup(name?)?;
        Some((&tool.name, tool.contract_for(modes, &snapshot.engine)))
    };
    ResolvedFileTools {
        read: resolve(table.read_tool.as_deref()),
        write: resolve(table.write_tool.as_deref()),
        search: resolve(table.search_tool.as_deref()),
        list: resolve(table.list_tool.as_deref()),
    }
}

/// The call's timeout (SPEC §5.1); `None` means no timeout.
fn resolve_timeout(
    engine: &ResolvedEngine,
    tool: &Tool,
    contract: &ResolvedContract,
    input: &Value,
) -> Result<Option<ResolvedTimeout>, Rejection> {
    resolve(&contract.timeout, input).map_err(|error| {
        invalid(
            engine,
            tool,
            RejectionKind::BadTimeoutOverride,
            &error.to_string(),
        )
    })
}

impl<'s> Resolved<'s> {
    /// A tool with its contract for these modes.
    pub fn new(snapshot: &Snapshot, modes: &[ModeName], tool: &'s Arc<Tool>) -> Self {
        Self {
            tool,
            contract: tool.contract_for(modes, &snapshot.engine),
        }
    }

    /// The names of the `PreToolUse` and `PermissionRequest` hooks that apply to calls of this
    /// tool in these modes: planning does not run them, and at run time their answers may
    /// change the decision.
    pub fn hooks_asked<'h>(&self, snapshot: &'h Snapshot, modes: &[ModeName]) -> Vec<&'h str> {
        let name = &self.tool.name;
        snapshot
            .hooks
            .iter()
            .filter(|hook| {
                hook.applies(HookEvent::PreToolUse, Some(name), modes)
                    || hook.applies(HookEvent::PermissionRequest, Some(name), modes)
            })
            .map(|hook| hook.spec.name.as_str())
            .collect()
    }
}

impl Settled<'_> {
    /// The resolved timeout in milliseconds, the deadline the call asked for (the cleanup grace
    /// is not part of it); `None`: no timeout.
    pub fn timeout_ms(&self) -> Option<u64> {
        self.timeout
            .map(|t| u64::try_from(t.budget.as_millis()).unwrap_or(u64::MAX))
    }
}
