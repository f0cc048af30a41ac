//! Building a tool's handler from its declared `handler` (SPEC §10), once per snapshot: the
//! executor compiles every tool's handler when a snapshot is installed, and the pipeline's
//! handler stage dispatches calls to what was built.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::model::ToolName;
use crate::model::handler::{HandlerSpec, StdinMode};

use super::{CommandRunner, CommandSpec, HttpRunner, HttpSpec, McpRunner};

/// A tool's handler, compiled once per snapshot.
pub enum Dispatch {
    /// A subprocess.
    Command(Arc<CommandRunner>),
    /// An HTTP endpoint.
    Http(Arc<HttpRunner>),
    /// A tool of an MCP server.
    Mcp(Arc<McpRunner>),
    /// A native handler registered under this name.
    Native(String),
    /// No handler can run (why, for the model and the logs).
    Unavailable(String),
}

/// What every built handler shares: the engine's limits and the workspace.
#[derive(Clone, Copy)]
pub struct BuildOptions<'a> {
    /// Most output bytes a handler may produce (`engine.max_handler_output`).
    pub max_output_bytes: u64,
    /// How long a cancelled subprocess may take to wind down (`engine.kill_grace`).
    pub kill_grace: Duration,
    /// The workspace root: commands run there (or in their `cwd` below it).
    pub workspace: &'a Path,
    /// The snapshot's MCP servers (see [`super::mcp::servers`]).
    pub mcp: &'a super::mcp::Servers,
}

/// Compiles a tool's handler. Errors here were reported at load time; a handler that still
/// cannot be built becomes `Unavailable`, so the call fails with a clear message.
pub fn build(tool: &ToolName, spec: &HandlerSpec, options: &BuildOptions<'_>) -> Dispatch {
    match spec {
        HandlerSpec::Command(spec) => {
            let command = CommandSpec {
                argv: spec.argv.clone(),
                stdin: spec.stdin.unwrap_or(StdinMode::None),
                env_allow: spec.env.clone().unwrap_or_default(),
                env_set: spec.set_env.clone().unwrap_or_default(),
                cwd: Some(match &spec.cwd {
                    Some(dir) => options.workspace.join(dir),
                    None => options.workspace.to_path_buf(),
                }),
                success_codes: spec.success_codes.clone().unwrap_or_else(|| vec![0]),
                max_output_bytes: options.max_output_bytes,
                kill_grace: options.kill_grace,
            };
            match CommandRunner::new(command) {
                Ok(handler) => Dispatch::Command(Arc::new(handler)),
                Err(error) => Dispatch::Unavailable(format!(
                    "the handler's argv template is invalid: {error}"
                )),
            }
        }
        HandlerSpec::Http(spec) => {
            let mut http = HttpSpec::new(spec.url.clone());
            http.headers = spec.headers.clone().unwrap_or_default();
            http.env_allow = spec.env.clone().unwrap_or_default();
            http.max_body_bytes = options.max_output_bytes;
            match HttpRunner::new(http) {
                Ok(handler) => Dispatch::Http(Arc::new(handler)),
                Err(error) => {
                    Dispatch::Unavailable(format!("the http handler cannot be built: {error}"))
                }
            }
        }
        HandlerSpec::Mcp(spec) => match options.mcp.get(&spec.server) {
            Some(Ok(server)) => {
                // `None` for a wildcard: its calls name their tool.
                let name = crate::model::mcp::server_tool(
                    tool.as_str(),
                    &spec.server,
                    spec.tool.as_deref(),
                );
                Dispatch::Mcp(Arc::new(McpRunner::new(Arc::clone(server), name)))
            }
            Some(Err(why)) => Dispatch::Unavailable(why.clone()),
            None => Dispatch::Unavailable(format!(
                "MCP server `{}` is not declared under `mcp_servers`",
                spec.server
            )),
        },
        HandlerSpec::Native(spec) => {
            Dispatch::Native(spec.name.clone().unwrap_or_else(|| tool.to_string()))
        }
    }
}
