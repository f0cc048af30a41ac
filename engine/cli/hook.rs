//! `toolgate hook AGENT`: the command a coding agent's hook configuration runs per tool
//! call. Reads the agent's hook JSON on stdin, finds the project from its `cwd`, decides the
//! call ([`crate::agent::decide`]), logs the decision, and answers in the agent's protocol.
//! Nothing but the JSON answer ever goes to stdout.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::agent::{self, AgentEvent, HookOptions, HookPayload, Reply, Verdict};
use crate::decision_log::{DecisionLog, DecisionRecord, LoggedDecision};
use crate::diagnostics::Diagnostic;
use crate::diagnostics::render::{HumanOptions, render_human};
use crate::model::agent::AgentProtocol;
use crate::snapshot::{LoadOptions, Snapshot, load};

use super::GlobalOptions;

/// What `toolgate hook` was asked.
#[derive(Clone, Debug)]
pub struct HookArgs {
    /// The agent (a name under `agents:`).
    pub agent: String,
    /// Answers for what the policy cannot decide.
    pub options: HookOptions,
    /// The protocol, when it is not the agent's map's (or the policies do not load).
    pub protocol: Option<AgentProtocol>,
    /// `--decision-log`: log here, whatever the settings say.
    pub decision_log: Option<PathBuf>,
    /// Most bytes read from stdin; a larger payload is refused.
    pub max_input: u64,
    /// How long the payload may take to arrive whole (`toolgate hook` reading stdin).
    pub read_timeout: std::time::Duration,
    /// The agent's project folder, as its environment gives it to hooks
    /// ([`project_dir_from_env`]): the project is found from it rather than from the event's
    /// `cwd`, which follows the agent's `cd`s.
    pub project_dir: Option<PathBuf>,
}

/// The project folder an agent gives its hooks in the environment: `CLAUDE_PROJECT_DIR`
/// (Claude Code, and Gemini CLI and Qwen Code, which set it too), `GEMINI_PROJECT_DIR`,
/// `QWEN_PROJECT_DIR`. Only an absolute path to a folder counts.
pub fn project_dir_from_env(agent: &str) -> Option<PathBuf> {
    let names: &[&str] = match agent {
        "gemini" => &["GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"],
        "qwen" => &["QWEN_PROJECT_DIR", "CLAUDE_PROJECT_DIR"],
        "codex" => &[],
        _ => &["CLAUDE_PROJECT_DIR"],
    };
    names
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .find(|dir| dir.is_absolute() && dir.is_dir())
}

/// Runs one hook: `global` as the flags give it (the project is found from the payload's
/// `cwd`, not from where the process runs), `stdin` the agent's payload.
pub fn hook(global: &GlobalOptions, args: &HookArgs, stdin: impl Read) -> Reply {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    hook_with(global, args, stdin, &here, &|options: &LoadOptions| {
        load(options, 1)
    })
}

/// The longest path a folder may have (Linux's `PATH_MAX`).
const MAX_PATH: usize = 4096;

/// [`hook`] for a caller that is not where the hook was started (the hook server): `here`
/// is the folder a payload without `cwd` is taken to come from, and `load` gives the policy
/// set for load options (the server's gives a kept one while its files are unchanged).
pub fn hook_with(
    global: &GlobalOptions,
    args: &HookArgs,
    stdin: impl Read,
    here: &Path,
    load: &super::hook_server::Loader<'_>,
) -> Reply {
    let started = Instant::now();
    let mut bytes = Vec::new();
    if let Err(error) = stdin
        .take(args.max_input.saturating_add(1))
        .read_to_end(&mut bytes)
    {
        return agent::unreadable(&format!("cannot read the hook payload: {error}"));
    }
    if bytes.len() as u64 > args.max_input {
        return agent::unreadable(&format!(
            "the hook payload is larger than {} bytes (`--max-input`)",
            args.max_input
        ));
    }
    let payload = match HookPayload::parse(&bytes) {
        Ok(payload) => payload,
        Err(reason) => return agent::unreadable(&reason),
    };
    let cwd = match (&args.project_dir, &payload.cwd) {
        (Some(project), _) => project.clone(),
        (None, Some(cwd)) => cwd.clone(),
        (None, None) => here.to_owned(),
    };
    // No folder's path is longer than the system's limit (4096 bytes on Linux): a longer one
    // names no folder the agent is in, and each lookup along it (the project, the
    // repository) would walk every one of its components.
    if cwd.as_os_str().len() > MAX_PATH {
        return agent::unreadable(&format!(
            "the payload's `cwd` is {} bytes long, more than the {MAX_PATH} bytes a folder's path may have",
            cwd.as_os_str().len()
        ));
    }
    // A relative `cwd` is taken against where the hook was started.
    let cwd = here.join(cwd);
    let global = global.clone().with_project_defaults(&cwd);
    let mut options = global.load_options();
    if global.workspace.is_none() {
        options.workspace_root = std::path::absolute(&cwd).unwrap_or(cwd);
    }
    let outcome = load(&options);
    let Some(snapshot) = outcome.snapshot else {
        return policies_failed(args, &payload, &outcome.diagnostics, started);
    };
    let Some((spec, protocol)) = agent::agent_spec(&snapshot, &args.agent) else {
        let known: Vec<&str> = snapshot.agents.keys().map(String::as_str).collect();
        return agent::unreadable(&format!(
            "no agent `{}` under `agents:` (known: {})",
            args.agent,
            known.join(", ")
        ));
    };
    let protocol = args.protocol.unwrap_or(protocol);
    let verdict = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(agent::decide(
            &snapshot,
            &args.agent,
            spec,
            &payload,
            &args.options,
        )),
        Err(error) => Verdict::error(
            args.options.on_error,
            format!("toolgate cannot start its runtime: {error}"),
        ),
    };
    let mut reply = agent::reply(protocol, payload.event(), &verdict, &args.options);
    log(
        args,
        &payload,
        &verdict,
        Some(&snapshot),
        started,
        &mut reply,
    );
    reply
}

/// The policies do not load: the fail-closed answer (`--on-error`), the diagnostics' first
/// line as the reason and all of them on stderr.
fn policies_failed(
    args: &HookArgs,
    payload: &HookPayload,
    diagnostics: &[Diagnostic],
    started: Instant,
) -> Reply {
    let first = diagnostics
        .iter()
        .find(|d| d.is_error())
        .or_else(|| diagnostics.first())
        .map(first_line)
        .unwrap_or_else(|| "no diagnostic was given".to_owned());
    let verdict = Verdict::error(
        args.options.on_error,
        format!("the toolgate policies do not load: {first}"),
    );
    let protocol = args.protocol.unwrap_or_else(|| guess_protocol(&args.agent));
    let mut reply = agent::reply(protocol, payload.event(), &verdict, &args.options);
    let rendered = render_human(
        diagnostics,
        &HumanOptions {
            color: false,
            ..HumanOptions::default()
        },
    );
    reply.stderr = Some(format!("{}{rendered}", reply.stderr.unwrap_or_default()));
    log(args, payload, &verdict, None, started, &mut reply);
    reply
}

/// One line for a diagnostic: its message and where.
fn first_line(diagnostic: &Diagnostic) -> String {
    match &diagnostic.location {
        Some(location) => format!(
            "{} ({})",
            diagnostic.message,
            crate::decision_log::file_and_line(&location.display())
        ),
        None => diagnostic.message.clone(),
    }
}

/// The protocol when no tool map can say: by the agent's name.
fn guess_protocol(agent: &str) -> AgentProtocol {
    match agent {
        "gemini" => AgentProtocol::Gemini,
        "codex" => AgentProtocol::Codex,
        _ => AgentProtocol::Claude,
    }
}

/// The log record of a decision (`None` after a call: nothing was decided).
fn record(
    args: &HookArgs,
    payload: &HookPayload,
    verdict: &Verdict,
    snapshot: Option<&Snapshot>,
    started: Instant,
) -> Option<DecisionRecord> {
    if payload.event() == AgentEvent::AfterTool {
        return None;
    }
    let decision = verdict.logged().unwrap_or(LoggedDecision::Defer);
    let mut record = DecisionRecord::new(
        payload.tool_name.clone(),
        payload.tool_input.clone(),
        decision,
        verdict.decided_by,
    );
    if let Some(snapshot) = snapshot {
        record = record.with_snapshot(snapshot);
    }
    record.agent = Some(args.agent.clone());
    record.session_id = payload.session_id.clone();
    record.event = Some(payload.hook_event_name.clone());
    record.toolgate_tools = verdict.toolgate_tools.clone();
    record.reason = verdict.reason().map(str::to_owned);
    if let Some((rule, location)) = &verdict.rule {
        record.rule = Some(rule.clone());
        record.location = location.clone();
    }
    record.elapsed_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    Some(record)
}

/// Appends the decision's record to the log the settings or `--decision-log` name, if any
/// (the record, with its hash of the policy files, is only made then); a log that cannot be
/// written is reported on stderr (the answer stands).
fn log(
    args: &HookArgs,
    payload: &HookPayload,
    verdict: &Verdict,
    snapshot: Option<&Snapshot>,
    started: Instant,
    reply: &mut Reply,
) {
    let log = match snapshot {
        Some(snapshot) => DecisionLog::from_settings(
            &snapshot.engine,
            &snapshot.workspace_root,
            args.decision_log.as_deref(),
        ),
        // The policies did not load: the engine defaults still say what to mask.
        None => match &args.decision_log {
            Some(path) => DecisionLog::new(path, &engine_defaults()).map(Some),
            None => Ok(None),
        },
    };
    let result = match log {
        Ok(Some(log)) => match record(args, payload, verdict, snapshot, started) {
            Some(record) => log.append(&record),
            None => Ok(()),
        },
        Ok(None) => Ok(()),
        Err(error) => Err(error),
    };
    if let Err(error) = result {
        let stderr = reply.stderr.get_or_insert_with(String::new);
        stderr.push_str(&format!("toolgate: {error}\n"));
    }
}

/// The decision log settings of the engine defaults (`policies/engine.yaml`, always loaded).
fn engine_defaults() -> crate::model::engine_config::DecisionLogConfig {
    let options = crate::snapshot::LoadOptions::new(crate::snapshot::LayerOptions {
        no_builtin: true,
        ..Default::default()
    });
    load(&options, 0)
        .snapshot
        .map(|snapshot| snapshot.engine.decision_log.clone())
        .unwrap_or_default()
}

/// The default `--max-input`: 8 MiB (a patch of a large file fits).
pub const DEFAULT_MAX_INPUT: u64 = 8 * 1024 * 1024;
