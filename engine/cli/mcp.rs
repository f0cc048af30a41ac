//! `toolgate mcp …`: the MCP commands. Each variant's work lives in its own file
//! (`mcp_serve.rs`); this file only lists them and dispatches.

use clap::Subcommand;

use super::{Exit, GlobalOptions};

/// The `mcp` subcommands.
#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// Serve the policy set's tools to any MCP client (Claude Code, Gemini CLI, Codex, an
    /// IDE), over stdio (default) or streamable HTTP, every call decided and run under the
    /// policies; policy changes are picked up while serving (see docs/mcp-serve.md).
    Serve(super::mcp_serve::McpServeArgs),
}

/// Runs an `mcp` subcommand; messages go to `err` (standard output belongs to the protocol).
pub fn run(global: &GlobalOptions, command: McpCommand, err: &mut dyn std::io::Write) -> Exit {
    match command {
        McpCommand::Serve(args) => super::mcp_serve::run(global, &args, err),
    }
}
