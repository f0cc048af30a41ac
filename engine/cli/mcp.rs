//! `toolgate mcp …`: the MCP subcommands (the arguments; the work is in the modules they
//! name).

use std::path::PathBuf;

/// The MCP subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum McpCommand {
    /// Connect to a server declared under `mcp_servers` and write a reviewable policy file
    /// with a contract for every tool it lists (its input schema, its annotations as
    /// commented suggestions, and an `ask` rule over all of them).
    Import(ImportArgs),
    /// Connect to the declared servers (or one) and compare their tool lists with the
    /// contracts that call them: a tool the server does not list is an error, a contract flag
    /// that contradicts the server's annotation a warning. (`toolgate check` never connects.)
    Check(CheckArgs),
}

/// `toolgate mcp check [SERVER]`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Only this server (default: every declared one).
    pub server: Option<String>,
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
