//! The `toolgate` command line: parses arguments, calls the library function of the
//! command, renders its report and maps it to an exit code (0 success, 1 problems found, 2
//! usage or I/O error). The binary (`engine/cli/main.rs`) only calls [`main`].

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{self, Exit, GlobalOptions};
use crate::{HumanOptions, OutputFormat, render_human, render_json};
use clap::{Args, Parser, Subcommand, ValueEnum};

/// A declarative policy engine and executor for the tool calls of AI coding agents.
///
/// Policies are YAML or TOML files loaded in layers, lowest first: the engine defaults, the
/// built-in contracts and rules, every `--enforced` root, then every `--policies` root in
/// the order given. Later layers override earlier ones field by field. Set `TOOLGATE_LOG=info`
/// to log every call's outcome to stderr (`debug` adds the time of each load phase).
#[derive(Parser, Debug)]
#[command(
    name = "toolgate",
    version,
    propagate_version = true,
    max_term_width = 100
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Debug)]
struct Global {
    /// A policy root (directory or file); repeatable, lowest layer first. Default: the
    /// project's `.toolgate/policies`, the project being the nearest folder, from the current
    /// directory upwards, that holds `.toolgate/policies`.
    #[arg(short = 'p', long = "policies", value_name = "PATH", global = true)]
    policies: Vec<PathBuf>,
    /// A policy root whose layer is enforced: its deny rules always win and the contract
    /// fields it lists under `locked` cannot be changed by later layers. Repeatable; enforced
    /// layers load right after the built-in layer.
    #[arg(long = "enforced", value_name = "PATH", global = true)]
    enforced: Vec<PathBuf>,
    /// Drop the built-in contracts, rules, gates and modes (the engine defaults stay).
    #[arg(long, global = true)]
    no_builtin: bool,
    /// The workspace root: path rules and relative handler directories are taken against
    /// it (default: the project root, else the current directory).
    #[arg(long, value_name = "DIR", global = true)]
    workspace: Option<PathBuf>,
    /// Colour in human output.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true)]
    color: Color,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Validate the policy set: syntax, JSON Schema, and cross-file semantics (including
    /// building every rule's glob and regex automata, which other commands build on first
    /// use). Exit 1 when any error is found (or any warning, with --deny-warnings).
    Check {
        /// Output format.
        #[arg(long, value_enum, default_value_t = CheckFormat::Human)]
        format: CheckFormat,
        /// Treat warnings (lints) as errors.
        #[arg(long)]
        deny_warnings: bool,
    },
    /// Show the effective contract of a tool, every value with the file:line:column that set
    /// it, and the rules that can apply to it.
    Explain {
        /// Tool name or alias.
        tool: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ExplainFormat::Human)]
        format: ExplainFormat,
    },
    /// Show what a batch would do without running anything: the groups, and per call its
    /// decision with the rules behind it, its resolved timeout and budget.
    Plan {
        /// Batch file (YAML or JSON): `{modes: [...], calls: [{id, tool, input}]}`.
        batch: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ExplainFormat::Human)]
        format: ExplainFormat,
        /// Plan through the resident `toolgate hook-server` that keeps loaded policies (started
        /// in the background when none runs; this plan is then made on its own), as
        /// `hook --server` does. A batch on standard input is always planned here.
        #[arg(long)]
        server: bool,
    },
    /// Execute a batch under the policies and report every event.
    Run {
        /// Batch file (YAML or JSON): `{modes: [...], calls: [{id, tool, input}]}`.
        batch: PathBuf,
        /// Who answers approval requests: `deny` (default), `allow`, or `prompt` (ask on the
        /// terminal, showing the exact input and the rules that asked).
        #[arg(long, value_enum, default_value_t = ApproveArg::Deny)]
        approve: ApproveArg,
        /// `human`: a live view and a summary; `jsonl`: one event per line, then a
        /// `BatchFinalized` line with every result.
        #[arg(long, value_enum, default_value_t = RunFormatArg::Human)]
        format: RunFormatArg,
        /// Exit 1 when any call did not succeed.
        #[arg(long)]
        fail_on_error: bool,
    },
    /// Review a policy change: every change rated by its effect on decisions, and the calls
    /// decided differently. BASE and HEAD are policy roots loaded as the last layer; with --git
    /// they are git revisions (`BASE..HEAD` works too; without HEAD, the work tree) at which
    /// the --policies/--enforced roots are read.
    Diff {
        /// The old set (a root, or a revision or `BASE..HEAD` with --git).
        base: String,
        /// The new set (a root, or a revision with --git; absent with --git: the work tree).
        head: Option<String>,
        /// BASE and HEAD are git revisions.
        #[arg(long)]
        git: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = DiffFormatArg::Human)]
        format: DiffFormatArg,
        /// Exit 1 when the review reaches this risk (a call that moves toward allow is high).
        #[arg(long, value_enum, value_name = "RISK")]
        fail_on: Option<RiskArg>,
        /// The same as `--fail-on high`.
        #[arg(long, hide = true)]
        fail_on_high_risk: bool,
        /// A policy test file or folder whose calls are also decided under both sets
        /// (repeatable).
        #[arg(long, value_name = "PATH")]
        tests: Vec<PathBuf>,
        /// A decision log (JSON Lines) whose calls are replayed under both sets.
        #[arg(long, value_name = "LOG")]
        replay: Option<PathBuf>,
    },
    /// Check the policy set, then re-check on every change of its files.
    Watch {
        /// `human`: diagnostics and change lists; `jsonl`: one `PolicyReloaded` or
        /// `PolicyReloadFailed` record per (re)load.
        #[arg(long, value_enum, default_value_t = WatchFormatArg::Human)]
        format: WatchFormatArg,
        /// How long the files must be quiet before a reload (e.g. `50ms`).
        #[arg(long, default_value = "50ms", value_parser = parse_duration)]
        debounce: std::time::Duration,
    },
    /// Serve JSON-RPC 2.0 on stdin/stdout for agent hosts, hot-reloading the policies.
    Serve {
        /// Speak JSON-RPC over stdin and stdout (the only transport).
        #[arg(long, required = true)]
        stdio: bool,
        /// Do not watch the policy files.
        #[arg(long)]
        no_watch: bool,
        /// How long the files must be quiet before a reload (e.g. `50ms`).
        #[arg(long, default_value = "50ms", value_parser = parse_duration)]
        debounce: std::time::Duration,
    },
    /// MCP: serve the policy set's tools (`toolgate mcp serve`), import a server's tools as
    /// contracts (`mcp import`), compare contracts with servers (`mcp check`).
    Mcp {
        #[command(subcommand)]
        command: cli::mcp::McpCommand,
    },
    /// Run policy test files: calls with the decision (and optionally the deciding rule,
    /// timeout, budget, group) the policies must give them, evaluated without running
    /// anything. Exit 1 when a test fails, 2 when a test file is missing or invalid.
    Test {
        /// Test files, or folders searched for `*.test.yaml` / `*.test.yml` / `*.test.toml`
        /// (default: the project's `.toolgate/tests`).
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Output format (`junit`: JUnit XML for CI test reports).
        #[arg(long, value_enum, default_value_t = TestFormat::Human)]
        format: TestFormat,
        /// Also report the rules no test case and no rule example exercises, and those that
        /// never decide a tested call.
        #[arg(long)]
        coverage: bool,
        /// Fail (exit 1) when fewer than this percentage of the rules are exercised; implies
        /// `--coverage`.
        #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
        min_coverage: Option<f64>,
    },
    /// Write a toolgate policy file from an agent's own permission rules: Claude Code
    /// `settings.json` files, Codex `.rules` files or Gemini CLI policy `.toml` files. Every
    /// rule names its origin; what cannot be translated exactly is written as a comment and
    /// reported on stderr.
    Import {
        /// Whose files.
        #[arg(value_enum)]
        agent: AgentArg,
        /// The files, lowest precedence first.
        #[arg(value_name = "PATH", required = true)]
        paths: Vec<PathBuf>,
        /// Write the policy to FILE instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// Write organisation rules (Claude Code managed settings, Gemini CLI admin
        /// policies) to FILE, to be loaded with `--enforced`.
        #[arg(long, value_name = "FILE")]
        enforced_output: Option<PathBuf>,
    },
    /// Trust the project around DIR (default: the current directory): record a digest of
    /// its `.toolgate/policies` in the user's trust store. Until trusted, a project found
    /// from the current directory may only tighten: its allow rules, hooks, tool contracts
    /// and settings are ignored. Any change to its policy files needs trust again.
    Trust {
        /// A folder of the project (default: the current directory).
        dir: Option<PathBuf>,
        /// List the trusted projects and whether their policies changed since.
        #[arg(long, conflicts_with_all = ["revoke", "dir"])]
        list: bool,
        /// Forget the project instead.
        #[arg(long)]
        revoke: bool,
    },
    /// Decide a coding agent's tool call from its hook: reads the agent's hook JSON on stdin
    /// and answers in its protocol on stdout (see docs/agents.md). The project is found from
    /// the payload's `cwd`. Never fails open: an unreadable payload exits 2 (blocks), a policy
    /// that does not load answers deny (or `--on-error ask`).
    Hook {
        /// The agent: a name under `agents:` (built in: `claude`, `codex`, `gemini`, `qwen`).
        agent: String,
        /// The answer for a tool the policy does not know: `defer` to the agent's own rules,
        /// or `ask`, `deny`, `allow`.
        #[arg(long, value_enum, default_value_t = UnknownArg::Defer)]
        unknown: UnknownArg,
        /// The answer when the policies do not load.
        #[arg(long, value_enum, default_value_t = OnErrorArg::Deny)]
        on_error: OnErrorArg,
        /// Codex's PreToolUse hooks cannot ask: `deny` such calls, or `defer` them to Codex's
        /// own approval settings.
        #[arg(long, value_enum, default_value_t = CodexAskArg::Deny)]
        codex_ask: CodexAskArg,
        /// The hook protocol, instead of the agent map's `protocol`.
        #[arg(long, value_enum)]
        protocol: Option<ProtocolArg>,
        /// Append every decision to this JSON Lines file (default: `engine.decision_log.path`).
        #[arg(long, value_name = "PATH")]
        decision_log: Option<PathBuf>,
        /// Most bytes read from stdin; a larger payload is refused.
        #[arg(long, default_value_t = cli::hook::DEFAULT_MAX_INPUT)]
        max_input: u64,
        /// How long the payload may take to arrive whole (stdin closed); a hook still
        /// reading then answers as for a payload it cannot read, instead of waiting on.
        #[arg(long, default_value = "10s", value_parser = parse_duration)]
        read_timeout: std::time::Duration,
        /// Decide through a resident `toolgate hook-server` that keeps the loaded policies
        /// between calls (started in the background when none runs for this user and
        /// environment; this call then decides on its own). Same decisions, a fraction of the
        /// time; see docs/agents.md.
        #[arg(long)]
        server: bool,
    },
    /// The resident process behind `toolgate hook --server` (started by it; run it yourself
    /// only to keep it under a supervisor). Serves until no call came for `--idle-exit`.
    HookServer {
        /// The socket to serve on (default: the one `hook --server` uses in this
        /// environment).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
        /// Exit after this long without a call.
        #[arg(long, default_value = "10m", value_parser = parse_duration)]
        idle_exit: std::time::Duration,
    },
    /// Print a JSON Schema (`policy`, `batch`, `policy-test`, `decision-log`, `diff`); without
    /// NAME, list them.
    Schema {
        /// Schema name.
        name: Option<String>,
    },
    /// Write a commented starter policy set (and the schemas for editors) into DIR.
    Init {
        /// Target folder.
        #[arg(default_value = ".toolgate")]
        dir: PathBuf,
        /// Overwrite existing files.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum CheckFormat {
    Human,
    Json,
    Github,
    Sarif,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ExplainFormat {
    Human,
    Json,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum TestFormat {
    Human,
    Json,
    Junit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum DiffFormatArg {
    Human,
    Markdown,
    Json,
    Github,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum RiskArg {
    High,
    Medium,
    Low,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum WatchFormatArg {
    Human,
    Jsonl,
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    cli::Duration::parse(text)
        .map(|d| d.0)
        .map_err(|e| e.to_string())
}

fn parse_percent(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("`{text}` is not a number; give a percentage such as `80`"))?;
    if (0.0..=100.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("`{text}` is not between 0 and 100"))
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum AgentArg {
    Claude,
    Codex,
    Gemini,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum UnknownArg {
    Defer,
    Ask,
    Deny,
    Allow,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum OnErrorArg {
    Deny,
    Ask,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum CodexAskArg {
    Deny,
    Defer,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ProtocolArg {
    Claude,
    Codex,
    Gemini,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ApproveArg {
    Deny,
    Allow,
    Prompt,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum RunFormatArg {
    Human,
    Jsonl,
}

/// Logs of the engine's `tracing` events (one line per call with its permission, output size,
/// truncation and failure stage; at `debug`, the time of each load phase) go to stderr when
/// `TOOLGATE_LOG` names a level (`error`, `warn`, `info`, `debug`, `trace`).
fn init_logging() {
    let Some(level) = std::env::var("TOOLGATE_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
    else {
        return;
    };
    // Only toolgate's own events: its dependencies (the shell parser logs every parse at
    // `debug`) would drown them.
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let only_toolgate = tracing_subscriber::filter::Targets::new().with_target("toolgate", level);
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false)
                .with_filter(only_toolgate),
        )
        .try_init();
}

/// The options of `toolgate hook` (`command` must be [`Command::Hook`]).
fn hook_args(global: GlobalOptions, command: Command) -> (GlobalOptions, cli::hook::HookArgs) {
    let Command::Hook {
        agent,
        unknown,
        on_error,
        codex_ask,
        protocol,
        decision_log,
        max_input,
        read_timeout,
        server: _,
    } = command
    else {
        unreachable!("hook_args is only called for `hook`")
    };
    use crate::agent::{Fallback, HookOptions};
    let project_dir = cli::hook::project_dir_from_env(&agent);
    let args = cli::hook::HookArgs {
        project_dir,
        agent,
        options: HookOptions {
            unknown: match unknown {
                UnknownArg::Defer => Fallback::Defer,
                UnknownArg::Ask => Fallback::Ask,
                UnknownArg::Deny => Fallback::Deny,
                UnknownArg::Allow => Fallback::Allow,
            },
            on_error: match on_error {
                OnErrorArg::Deny => crate::Decision::Deny,
                OnErrorArg::Ask => crate::Decision::Ask,
            },
            ask_unsupported: match codex_ask {
                CodexAskArg::Deny => Fallback::Deny,
                CodexAskArg::Defer => Fallback::Defer,
            },
        },
        protocol: protocol.map(|p| match p {
            ProtocolArg::Claude => cli::AgentProtocol::Claude,
            ProtocolArg::Codex => cli::AgentProtocol::Codex,
            ProtocolArg::Gemini => cli::AgentProtocol::Gemini,
        }),
        decision_log,
        max_input,
        read_timeout,
    };
    (global, args)
}

/// What the hook server does with a client's request: parses its arguments as this binary
/// would, taking relative paths against the client's folder, into the job of `hook` or
/// `plan` (the commands it serves).
fn server_job(
    request: &cli::hook_server::ClientRequest<'_>,
) -> Result<cli::hook_server::Job, String> {
    let argv = std::iter::once("toolgate").chain(request.argv.iter().map(String::as_str));
    let cli = Cli::try_parse_from(argv).map_err(|error| error.to_string())?;
    let cwd = request.cwd.to_owned();
    let global = global_options(cli.global).taken_against(&cwd);
    match cli.command {
        command @ Command::Hook { .. } => {
            let (global, mut args) = hook_args(global, command);
            if let Some(log) = args.decision_log.as_mut() {
                *log = cwd.join(&*log);
            }
            let payload = request.payload.to_owned();
            Ok(Box::new(move |load| {
                cli::hook::hook_with(&global, &args, payload.as_bytes(), &cwd, load)
            }))
        }
        Command::Plan { batch, format, .. } if batch.as_os_str() != "-" => {
            let global = global.with_project_defaults(&cwd);
            let color = request.color;
            Ok(Box::new(move |load| {
                plan_reply(&global, &cwd, &batch, format, color, load)
            }))
        }
        _ => Err("not a command the hook server runs".to_owned()),
    }
}

/// Runs a command through the hook server when `server` is set and one answers (starting one
/// for the next calls when none does); `None` when this process must run it itself.
fn through_server(server: bool, payload: &[u8], color: bool) -> Option<crate::agent::Reply> {
    if !server {
        return None;
    }
    let socket = cli::hook_server::socket_path()?;
    let here = std::env::current_dir().ok()?;
    // An argument that is not UTF-8 cannot be sent: this process runs the command itself.
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(std::ffi::OsString::into_string)
        .collect::<Result<_, _>>()
        .ok()?;
    let reply = cli::hook_server::ask(&socket, &argv, &here, payload, color);
    if reply.is_none() {
        cli::hook_server::start(&socket, cli::hook_server::DEFAULT_IDLE_EXIT);
    }
    reply
}

/// Decides one hook call: through the hook server when `server` is set and one answers, else
/// in this process.
fn run_hook(
    global: &GlobalOptions,
    args: &cli::hook::HookArgs,
    server: bool,
) -> crate::agent::Reply {
    use std::io::Read as _;
    // Read on a thread of its own, so that an agent that never closes stdin gets an answer
    // (the process exits with the thread still waiting).
    let (sender, receiver) = std::sync::mpsc::channel();
    let most = args.max_input.saturating_add(1);
    std::thread::spawn(move || {
        let mut payload = Vec::new();
        let read = std::io::stdin()
            .lock()
            .take(most)
            .read_to_end(&mut payload)
            .map(|_| payload);
        let _ = sender.send(read);
    });
    let payload = match receiver.recv_timeout(args.read_timeout) {
        Ok(Ok(payload)) => payload,
        Ok(Err(error)) => {
            return crate::agent::unreadable(&format!("cannot read the hook payload: {error}"));
        }
        Err(_) => {
            return crate::agent::unreadable(&format!(
                "the hook payload did not end within {} (`--read-timeout`): the agent must close stdin after it",
                crate::model::Duration(args.read_timeout)
            ));
        }
    };
    through_server(server, &payload, false)
        .unwrap_or_else(|| cli::hook::hook(global, args, &payload[..]))
}

/// `toolgate plan`'s output and exit code, with the policy set from `load`.
fn plan_reply(
    global: &GlobalOptions,
    base: &std::path::Path,
    batch: &std::path::Path,
    format: ExplainFormat,
    color: bool,
    load: &cli::hook_server::Loader<'_>,
) -> crate::agent::Reply {
    let shown = cli::plan::plan_with(global, base, batch, load, |plan| match format {
        ExplainFormat::Human => Ok(plan.render_human()),
        ExplainFormat::Json => json_text(plan),
    });
    match shown {
        Ok(Ok(stdout)) => crate::agent::Reply {
            stdout: Some(stdout),
            stderr: None,
            exit: Exit::Success.code(),
        },
        Ok(Err(stderr)) => crate::agent::Reply {
            stdout: None,
            stderr: Some(stderr),
            exit: Exit::Usage.code(),
        },
        Err(error) => {
            let (diagnostics, exit) = match error {
                cli::plan::PlanError::Policies(d) => (d, Exit::Problems),
                cli::plan::PlanError::Batch(d) => (d, Exit::Usage),
            };
            let (stdout, stderr) = diagnostics_text(&diagnostics, format, color);
            crate::agent::Reply {
                stdout,
                stderr,
                exit: exit.code(),
            }
        }
    }
}

/// The policy roots the global flags name.
fn global_options(flags: Global) -> GlobalOptions {
    GlobalOptions {
        policies: flags.policies,
        enforced: flags.enforced,
        no_builtin: flags.no_builtin,
        workspace: flags.workspace,
        ..GlobalOptions::default()
    }
}

/// Runs the command line of this process and returns its exit code.
pub fn main() -> ExitCode {
    // Descendants of handler processes that leave their process group and lose their parent
    // come back to this process (Linux), to be killed when their call ends.
    crate::become_subreaper();
    init_logging();
    let cli = Cli::parse();
    let color = match cli.global.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let global = global_options(cli.global);
    // `hook` finds its project from the agent's payload, not from where it runs.
    if let Command::HookServer { socket, idle_exit } = &cli.command {
        let Some(socket) = socket.clone().or_else(cli::hook_server::socket_path) else {
            eprint(
                "error: no private folder for the hook server's socket (set XDG_RUNTIME_DIR to a folder only you can enter)\n",
            );
            return ExitCode::from(2);
        };
        return match cli::hook_server::serve(&socket, *idle_exit, server_job) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprint(&format!(
                    "error: cannot serve on `{}`: {error}\n",
                    socket.display()
                ));
                ExitCode::from(2)
            }
        };
    }
    if let Command::Plan {
        batch,
        server: true,
        ..
    } = &cli.command
        && batch.as_os_str() != "-"
        && let Some(reply) = through_server(true, &[], color)
    {
        return emit(&reply);
    }
    if let Command::Hook { server, .. } = &cli.command {
        let server = *server;
        let (global, args) = hook_args(global, cli.command);
        return emit(&run_hook(&global, &args, server));
    }
    // Inside a project (a folder holding `.toolgate/policies`, found from the current
    // directory upwards), its policies and root are the defaults. `init` and `schema` load
    // nothing.
    let global = match std::env::current_dir() {
        Ok(cwd) => global.with_project_defaults(&cwd),
        Err(_) => global,
    };
    let exit = match cli.command {
        Command::Check {
            format,
            deny_warnings,
        } => {
            let report = cli::check::check(&global, deny_warnings);
            let format = match format {
                CheckFormat::Human => OutputFormat::Human,
                CheckFormat::Json => OutputFormat::Json,
                CheckFormat::Github => OutputFormat::Github,
                CheckFormat::Sarif => OutputFormat::Sarif,
            };
            print(&report.render(format, color));
            report.exit()
        }
        Command::Explain { tool, format } => match cli::explain::explain(&global, &tool) {
            Ok(report) => {
                match format {
                    ExplainFormat::Human => print(&report.render_human()),
                    ExplainFormat::Json => print_json(&report),
                }
                Exit::Success
            }
            Err(error) => {
                report_diagnostics(&error.diagnostics(), format, color);
                match error {
                    cli::explain::ExplainError::Invalid(_) => Exit::Problems,
                    cli::explain::ExplainError::UnknownTool { .. } => Exit::Usage,
                }
            }
        },
        Command::Plan { batch, format, .. } => {
            let reply = plan_reply(&global, Path::new(""), &batch, format, color, &|options| {
                crate::load(options, 1)
            });
            return emit(&reply);
        }
        Command::Run {
            batch,
            approve,
            format,
            fail_on_error,
        } => {
            let options = cli::run::RunOptions {
                approve: match approve {
                    ApproveArg::Deny => cli::run::Approve::Deny,
                    ApproveArg::Allow => cli::run::Approve::Allow,
                    ApproveArg::Prompt => cli::run::Approve::Prompt,
                },
                format: match format {
                    RunFormatArg::Human => cli::run::RunFormat::Human,
                    RunFormatArg::Jsonl => cli::run::RunFormat::Jsonl,
                },
                color,
                live: format == RunFormatArg::Human && std::io::stdout().is_terminal(),
                fail_on_error,
            };
            with_runtime(|runtime| {
                let mut out = std::io::stdout();
                let mut err = std::io::stderr();
                runtime.block_on(cli::run::run(&global, &batch, options, &mut out, &mut err))
            })
        }
        Command::Diff {
            base,
            head,
            git,
            format,
            fail_on,
            fail_on_high_risk,
            tests,
            replay,
        } => match cli::diff::run(
            &global,
            &base,
            head.as_deref(),
            &cli::diff::DiffOptions { git, tests, replay },
        ) {
            Ok(review) => {
                let format = match format {
                    DiffFormatArg::Human => cli::diff::DiffFormat::Human,
                    DiffFormatArg::Markdown => cli::diff::DiffFormat::Markdown,
                    DiffFormatArg::Json => cli::diff::DiffFormat::Json,
                    DiffFormatArg::Github => cli::diff::DiffFormat::Github,
                };
                print(&cli::diff::render(&review, format));
                let level = match fail_on {
                    Some(RiskArg::High) => Some(cli::Risk::High),
                    Some(RiskArg::Medium) => Some(cli::Risk::Medium),
                    Some(RiskArg::Low) => Some(cli::Risk::Low),
                    None if fail_on_high_risk => Some(cli::Risk::High),
                    None => None,
                };
                match level {
                    Some(level) if review.reaches(level) => Exit::Problems,
                    Some(_) | None => Exit::Success,
                }
            }
            Err(error) => {
                let exit = error.exit();
                match error {
                    cli::diff::DiffError::Invalid { side, diagnostics } => {
                        eprint(&format!("error: the {side} policy set does not load\n\n"));
                        eprint(&render_human(
                            &diagnostics,
                            &HumanOptions {
                                color,
                                ..HumanOptions::default()
                            },
                        ));
                    }
                    cli::diff::DiffError::Git(message) => eprint(&format!("error: {message}\n")),
                    cli::diff::DiffError::Corpus(diagnostics) => eprint(&render_human(
                        &diagnostics,
                        &HumanOptions {
                            color,
                            ..HumanOptions::default()
                        },
                    )),
                    cli::diff::DiffError::MissingRoot { root, .. } if root.is_empty() => {
                        eprint(
                            "error: HEAD is missing\n  help: pass BASE and HEAD policy roots, or \
                             a git revision with `--git` (the work tree is HEAD then)\n",
                        );
                    }
                    cli::diff::DiffError::MissingRoot { side, root } => {
                        let arg = side.to_uppercase();
                        eprint(&format!(
                            "error: the {side} policy root `{root}` does not exist\n  help: {arg} \
                             is a policy root (a directory or file); pass an existing one, or a \
                             git revision with `--git`\n"
                        ));
                    }
                }
                exit
            }
        },
        Command::Watch { format, debounce } => {
            let format = match format {
                WatchFormatArg::Human => cli::watch::WatchFormat::Human,
                WatchFormatArg::Jsonl => cli::watch::WatchFormat::Jsonl,
            };
            with_runtime(|runtime| {
                let mut out = std::io::stdout();
                runtime.block_on(cli::watch::watch(
                    &global, format, color, debounce, &mut out,
                ))
            })
        }
        Command::Serve {
            stdio: _,
            no_watch,
            debounce,
        } => with_runtime(|runtime| {
            let options = crate::serve::ServeOptions {
                load: global.load_options(),
                watch: !no_watch,
                debounce,
            };
            // SIGINT, SIGTERM and SIGHUP stop the server like `shutdown`: running batches
            // are cancelled and answer first; the exit code is 128 + the signal's number.
            let mut received = 0;
            let served = runtime.block_on(async {
                let mut termination = match cli::signals::Termination::listen() {
                    Ok(termination) => termination,
                    Err(error) => return Err(crate::serve::ServeError::Io(error)),
                };
                let stop = async {
                    received = termination.recv().await;
                };
                crate::serve::serve_until(tokio::io::stdin(), tokio::io::stdout(), options, stop)
                    .await
            });
            match served {
                Ok(()) if received != 0 => Exit::Signalled(received),
                Ok(()) => Exit::Success,
                Err(crate::serve::ServeError::Policies(diagnostics)) => {
                    eprint(&render_human(
                        &diagnostics,
                        &HumanOptions {
                            color: false,
                            ..HumanOptions::default()
                        },
                    ));
                    Exit::Problems
                }
                Err(crate::serve::ServeError::Io(error)) => {
                    eprint(&format!("error: {error}\n"));
                    Exit::Usage
                }
            }
        }),
        Command::Mcp { command } => cli::mcp::run(&global, command, &mut std::io::stderr()),
        Command::Test {
            paths,
            format,
            coverage,
            min_coverage,
        } => {
            let options = cli::test::CoverageOptions {
                report: coverage,
                min: min_coverage,
            };
            match cli::test::test(&global, &paths, options) {
                Ok(report) => {
                    match format {
                        TestFormat::Human => print(&report.render_human(color)),
                        TestFormat::Json => print_json(&report),
                        TestFormat::Junit => print(&report.render_junit()),
                    }
                    report.exit()
                }
                Err(error) => {
                    let format = match format {
                        TestFormat::Human => ExplainFormat::Human,
                        TestFormat::Json | TestFormat::Junit => ExplainFormat::Json,
                    };
                    report_diagnostics(error.diagnostics(), format, color);
                    error.exit()
                }
            }
        }
        Command::Import {
            agent,
            paths,
            output,
            enforced_output,
        } => {
            let agent = match agent {
                AgentArg::Claude => cli::ImportAgent::Claude,
                AgentArg::Codex => cli::ImportAgent::Codex,
                AgentArg::Gemini => cli::ImportAgent::Gemini,
            };
            let options = cli::import::ImportOptions {
                output,
                enforced_output,
            };
            match cli::import::run(agent, &paths, &options) {
                Ok(report) => {
                    eprint(&report.stderr);
                    print(&report.stdout);
                    Exit::Success
                }
                Err(error) => {
                    eprint(&format!("error: {error}\n"));
                    Exit::Usage
                }
            }
        }
        Command::Trust { dir, list, revoke } => {
            let action = match (list, revoke) {
                (true, _) => cli::trust::TrustAction::List,
                (false, true) => cli::trust::TrustAction::Revoke(dir),
                (false, false) => cli::trust::TrustAction::Trust(dir),
            };
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            match cli::trust::trust(&global, &cwd, &action) {
                Ok(text) => {
                    print(&text);
                    Exit::Success
                }
                Err(error) => {
                    eprint(&format!(
                        "error: {error}
"
                    ));
                    Exit::Usage
                }
            }
        }
        Command::Schema { name } => match name {
            None => {
                print(&cli::schema::list());
                Exit::Success
            }
            Some(name) => match cli::schema::schema(&name) {
                Some(text) => {
                    print(&text);
                    Exit::Success
                }
                None => {
                    eprint(&format!(
                        "error: no schema named `{name}`\n\n{}",
                        cli::schema::list()
                    ));
                    Exit::Usage
                }
            },
        },
        // Answered above, before the project defaults of the current directory applied.
        Command::Hook { .. } | Command::HookServer { .. } => Exit::Usage,
        Command::Init { dir, force } => match cli::init::init(&dir, force) {
            Ok(report) => {
                for path in &report.written {
                    print(&format!("wrote {}\n", path.display()));
                }
                // The user just wrote these policies: their project is trusted (a failure to
                // record it only means `toolgate trust` is needed later).
                match cli::trust::trust_after_init(&global, &dir) {
                    Some(Ok(text)) => print(&text),
                    Some(Err(error)) => eprint(&format!(
                        "warning: {error}\n  help: run `toolgate trust` in the project to let its policies loosen decisions\n"
                    )),
                    None => {}
                }
                // `.toolgate` in some folder makes that folder a project: its commands find the
                // policies and tests without flags.
                if dir.file_name() == Some(std::ffi::OsStr::new(cli::PROJECT_DIR)) {
                    print("\nnext: toolgate check && toolgate test\n");
                } else {
                    print(&format!(
                        "\nnext: toolgate -p {0}/policies check && toolgate -p {0}/policies test {0}/tests\n",
                        dir.display()
                    ));
                }
                Exit::Success
            }
            Err(error) => {
                eprint(&format!("error: {error}\n"));
                Exit::Usage
            }
        },
    };
    finish(exit)
}

fn with_runtime(body: impl FnOnce(&tokio::runtime::Runtime) -> Exit) -> Exit {
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => {
            let exit = body(&runtime);
            // Do not wait for a blocking read of stdin that will never finish.
            runtime.shutdown_timeout(std::time::Duration::from_millis(100));
            exit
        }
        Err(error) => {
            eprint(&format!("error: cannot start the async runtime: {error}\n"));
            Exit::Usage
        }
    }
}

/// The first error met writing to stdout. The output is then lost, so the command fails
/// (exit 2) whatever it found: an empty hook answer, SARIF file or plan must never pass for a
/// clean one (Gemini CLI reads a hook's empty answer with exit 0 as "allow").
static OUTPUT_ERROR: std::sync::OnceLock<std::io::Error> = std::sync::OnceLock::new();

fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(error) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        let _ = OUTPUT_ERROR.set(error);
    }
}

/// `exit` as the process's exit code, unless writing to stdout failed (see
/// [`OUTPUT_ERROR`]): then 2, said on stderr (but for a reader that went away, `| head`).
fn finish(exit: Exit) -> ExitCode {
    match OUTPUT_ERROR.get() {
        None => ExitCode::from(exit.code() as u8),
        Some(error) => {
            if error.kind() != std::io::ErrorKind::BrokenPipe {
                eprint(&format!(
                    "error: the output could not be written to standard output: {error}\n"
                ));
            }
            ExitCode::from(Exit::Usage.code() as u8)
        }
    }
}

fn eprint(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Diagnostics that stopped `explain`, `plan` or `test`: rendered on stderr for humans, as
/// the JSON report on stdout.
fn report_diagnostics(diagnostics: &[crate::Diagnostic], format: ExplainFormat, color: bool) {
    let (stdout, stderr) = diagnostics_text(diagnostics, format, color);
    if let Some(text) = stderr {
        eprint(&text);
    }
    if let Some(text) = stdout {
        print(&text);
    }
}

/// [`report_diagnostics`]' text: (stdout, stderr).
fn diagnostics_text(
    diagnostics: &[crate::Diagnostic],
    format: ExplainFormat,
    color: bool,
) -> (Option<String>, Option<String>) {
    match format {
        ExplainFormat::Human => (
            None,
            Some(render_human(
                diagnostics,
                &HumanOptions {
                    color,
                    ..HumanOptions::default()
                },
            )),
        ),
        ExplainFormat::Json => (Some(render_json(diagnostics)), None),
    }
}

fn print_json<T: serde::Serialize>(value: &T) {
    match json_text(value) {
        Ok(text) => print(&text),
        Err(error) => eprint(&error),
    }
}

/// `value` as pretty JSON and a newline, or the error for stderr.
fn json_text<T: serde::Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string_pretty(value)
        .map(|text| text + "\n")
        .map_err(|error| format!("error: cannot serialise the report: {error}\n"))
}

/// Writes a reply's standard error and output, and gives its exit code.
fn emit(reply: &crate::agent::Reply) -> ExitCode {
    if let Some(text) = &reply.stderr {
        eprint(text);
    }
    if let Some(text) = &reply.stdout {
        print(text);
    }
    if OUTPUT_ERROR.get().is_some() {
        return finish(Exit::Usage);
    }
    ExitCode::from(u8::try_from(reply.exit).unwrap_or(2))
}
