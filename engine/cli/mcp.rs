//! `toolgate mcp …`: the MCP commands. Each variant's work lives in its own file
//! (`mcp_serve.rs`, `mcp_import.rs`, `mcp_check.rs`); this file only lists them and
//! dispatches.

use std::io::Write as _;
use std::path::PathBuf;

use clap::Subcommand;

use super::{Exit, GlobalOptions};
use crate::diagnostics::Diagnostic;
use crate::diagnostics::render::{HumanOptions, render_human};

/// The `mcp` subcommands.
#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// Serve the policy set's tools to any MCP client (Claude Code, Gemini CLI, Codex, an
    /// IDE), over stdio (default) or streamable HTTP, every call decided and run under the
    /// policies; policy changes are picked up while serving (see docs/mcp-serve.md).
    Serve(super::mcp_serve::McpServeArgs),
    /// Connect to a server declared under `mcp_servers` and write a reviewable policy file
    /// with a contract for every tool it lists (its input schema, its annotations as
    /// commented suggestions, and an `ask` rule over all of them).
    Import(ImportArgs),
    /// Connect to the declared servers (or one) and compare their tool lists with the
    /// contracts that call them: a tool the server does not list is an error, a contract flag
    /// that contradicts the server's annotation a warning. (`toolgate check` never connects.)
    Check(CheckArgs),
}

/// `toolgate mcp import SERVER [-o FILE]`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The server's name under `mcp_servers`.
    pub server: String,
    /// Write the policy file to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `toolgate mcp check [SERVER]`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Only this server (default: every declared one).
    pub server: Option<String>,
}

/// Runs an `mcp` subcommand; messages go to `err` (standard output belongs to the protocol
/// for `serve`, to the written policy file for `import`).
pub fn run(global: &GlobalOptions, command: McpCommand, err: &mut dyn std::io::Write) -> Exit {
    match command {
        McpCommand::Serve(args) => super::mcp_serve::run(global, &args, err),
        McpCommand::Import(args) => with_runtime(err, |runtime, err| {
            let options = super::mcp_import::ImportOptions {
                output: args.output,
            };
            match runtime.block_on(super::mcp_import::run(global, &args.server, &options)) {
                Ok(report) => {
                    let _ = err.write_all(report.stderr.as_bytes());
                    let mut out = std::io::stdout();
                    let _ = out.write_all(report.stdout.as_bytes());
                    let _ = out.flush();
                    Exit::Success
                }
                Err(super::mcp_import::McpImportError::Invalid(diagnostics)) => {
                    report(err, &diagnostics);
                    Exit::Problems
                }
                Err(error) => {
                    let _ = writeln!(err, "error: {error}");
                    Exit::Usage
                }
            }
        }),
        McpCommand::Check(args) => with_runtime(err, |runtime, err| {
            match runtime.block_on(super::mcp_check::run(global, args.server.as_deref())) {
                Ok(diagnostics) if diagnostics.is_empty() => {
                    let _ = writeln!(err, "no problems found");
                    Exit::Success
                }
                Ok(diagnostics) => {
                    report(err, &diagnostics);
                    if diagnostics.iter().any(Diagnostic::is_error) {
                        Exit::Problems
                    } else {
                        Exit::Success
                    }
                }
                Err(super::mcp_check::McpCheckError::Invalid(diagnostics)) => {
                    report(err, &diagnostics);
                    Exit::Problems
                }
                Err(error) => {
                    let _ = writeln!(err, "error: {error}");
                    Exit::Usage
                }
            }
        }),
    }
}

fn report(err: &mut dyn std::io::Write, diagnostics: &[Diagnostic]) {
    let _ = err.write_all(render_human(diagnostics, &HumanOptions::default()).as_bytes());
}

fn with_runtime(
    err: &mut dyn std::io::Write,
    body: impl FnOnce(&tokio::runtime::Runtime, &mut dyn std::io::Write) -> Exit,
) -> Exit {
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => body(&runtime, err),
        Err(error) => {
            let _ = writeln!(err, "error: cannot start the async runtime: {error}");
            Exit::Usage
        }
    }
}
