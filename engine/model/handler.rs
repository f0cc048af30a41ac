//! Handler specifications (SPEC §10): how a call is executed.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a call is executed, by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum HandlerSpec {
    /// A subprocess.
    Command(CommandHandler),
    /// An HTTP endpoint that receives the input as a JSON POST body.
    Http(HttpHandler),
    /// A tool of an MCP server.
    Mcp(McpHandler),
    /// A Rust function registered by the embedding program under the tool's name.
    Native(NativeHandlerSpec),
}

/// A subprocess handler.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandHandler {
    /// Program and arguments. `{{input.field}}` (or `{{input./json/pointer}}`) inserts an
    /// input value into exactly one argument, never re-split by a shell; `{{input.field?}}`
    /// alone in an argument drops the argument when the field is absent. A value at the
    /// start of an argument starting with `-` or `+` before a literal `--`, or with `@`, is
    /// refused (an option, an editor's command, a file of options), unless written
    /// `{{input.field!}}` or given to a shell's `-c SCRIPT`.
    #[schemars(length(min = 1))]
    pub argv: Vec<String>,
    /// `json`: the whole input is written as JSON to standard input. `none` (default):
    /// standard input is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<StdinMode>,
    /// Names of environment variables passed through from the engine's environment; all
    /// others are cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<String>>,
    /// Environment variables set for the process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_env: Option<IndexMap<String, String>>,
    /// Working directory; relative paths are taken against the workspace root (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Exit codes that mean success (default `[0]`); any other exit is a business failure
    /// the model is told about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_codes: Option<Vec<i32>>,
}

/// What the subprocess gets on standard input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StdinMode {
    /// Nothing.
    None,
    /// The input as JSON.
    Json,
}

/// An HTTP handler.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpHandler {
    /// The URL the input is POSTed to.
    pub url: String,
    /// Request headers. `{{env.NAME}}` inserts an environment variable listed in `env`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<IndexMap<String, String>>,
    /// Environment variables that header templates may read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<String>>,
}

/// An MCP tool handler: a tool of a server declared under `mcp_servers`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpHandler {
    /// The server's name under `mcp_servers`.
    pub server: String,
    /// The tool's name on the server (default: `TOOL` for a contract named
    /// `mcp__<server>__TOOL`, otherwise the contract's name; none for a wildcard contract).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// A native handler registered by the embedding program.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NativeHandlerSpec {
    /// Name the handler is registered under (default: the tool's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}
