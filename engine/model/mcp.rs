//! The MCP servers a policy set uses (`mcp_servers:` section), and what an `mcp` handler
//! names. A server is started by the engine (stdio) or reached over streamable HTTP; the
//! `handler: { kind: mcp, server, tool }` of a contract sends its calls there.
//!
//! A server entry merges key by key with the same entry of a lower layer, like `agents`.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::units::Duration;

/// The `mcp_servers` section: servers by the name handlers use.
pub type McpServersSection = IndexMap<String, McpServer>;

/// How long a server may take to start and answer `initialize` when no entry says.
pub const DEFAULT_START_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// The first wait before a failed server is started again when no entry says.
pub const DEFAULT_RESTART_BACKOFF: std::time::Duration = std::time::Duration::from_secs(1);
/// The longest wait between restarts when no entry says.
pub const DEFAULT_RESTART_MAX_BACKOFF: std::time::Duration = std::time::Duration::from_secs(60);

/// One MCP server: either a `command` (stdio) or a `url` (streamable HTTP).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// One line for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Program and arguments of a server that speaks MCP on its standard input and output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub command: Option<Vec<String>>,
    /// Names of environment variables passed through to the server (stdio), or that header
    /// templates may read (HTTP); all others are withheld.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<String>>,
    /// Environment variables set for the server process (stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_env: Option<IndexMap<String, String>>,
    /// Working directory of the server process; relative paths are taken against the
    /// workspace root (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// URL of a server that speaks MCP over streamable HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Request headers (HTTP). A value's secret part comes from the environment:
    /// `{{env.NAME}}` inserts variable `NAME`, which `env` must list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<IndexMap<String, String>>,
    /// How long the server may take to start and answer `initialize` (default `30s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timeout: Option<Duration>,
    /// What happens when the server dies or cannot be started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<RestartPolicy>,
    /// Whether the server's tool annotations (`readOnlyHint`, `destructiveHint`,
    /// `idempotentHint`, `openWorldHint`) fill contract flags the contract leaves unset
    /// (default `false`: annotations are claims of the server, not facts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_annotations: Option<bool>,
}

/// When and how often a server is started again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestartPolicy {
    /// `on_failure` (default): a server that died or failed to start is started again by the
    /// next call once its backoff has passed. `never`: it stays down until the policy set is
    /// reloaded with a changed entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<RestartMode>,
    /// The wait after the first failure (default `1s`); it doubles with every failure in a row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Duration>,
    /// The longest wait (default `60s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_backoff: Option<Duration>,
}

/// Whether a failed server is started again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RestartMode {
    /// Start it again after the backoff.
    OnFailure,
    /// Leave it down.
    Never,
}

impl McpServer {
    /// The start timeout in force.
    pub fn start_timeout(&self) -> std::time::Duration {
        self.start_timeout
            .map_or(DEFAULT_START_TIMEOUT, |duration| duration.0)
    }

    /// Whether annotations fill unset contract flags.
    pub fn trusts_annotations(&self) -> bool {
        self.trust_annotations.unwrap_or(false)
    }

    /// The wait before restart attempt number `failures` (1 after the first failure), or
    /// `None` when the server is not restarted.
    pub fn backoff_after(&self, failures: u32) -> Option<std::time::Duration> {
        let restart = self.restart.clone().unwrap_or_default();
        if restart.mode == Some(RestartMode::Never) {
            return None;
        }
        let first = restart
            .backoff
            .map_or(DEFAULT_RESTART_BACKOFF, |duration| duration.0);
        let max = restart
            .max_backoff
            .map_or(DEFAULT_RESTART_MAX_BACKOFF, |duration| duration.0);
        let doublings = failures.saturating_sub(1).min(20);
        Some(first.saturating_mul(1 << doublings).min(max))
    }
}

/// The prefix of the names coding agents give MCP tools: `mcp__<server>__<tool>`.
pub const TOOL_PREFIX: &str = "mcp__";

/// The name coding agents give `tool` of `server`: `mcp__<server>__<tool>`, every character
/// of the tool outside `A-Z a-z 0-9 _ -` written `_`, as Claude Code and Codex write it
/// (`fs.read` is `mcp__evil__fs_read`).
pub fn agent_tool_name(server: &str, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{TOOL_PREFIX}{server}__{tool}")
}

/// The name of the wildcard contract that covers every tool of `server`: `mcp__<server>__*`.
pub fn wildcard_name(server: &str) -> String {
    format!("{TOOL_PREFIX}{server}__*")
}

/// The server a wildcard contract covers, when `name` has the one wildcard form there is,
/// `mcp__<server>__*`, with a server name that [`split_tool_name`] can read back out of a
/// covered name (no `__` inside it, not ending in `_`). Anything else with a `*` is no
/// wildcard: `mcp__git*` does not cover `mcp__github__x`.
pub fn wildcard_server(name: &str) -> Option<&str> {
    let server = name.strip_prefix(TOOL_PREFIX)?.strip_suffix("__*")?;
    server_name_splits(server).then_some(server)
}

/// Whether a server name can stand in a wildcard: not empty, no `__` in it, not ending in
/// `_` and none of the characters a tool name cannot hold (so that the first `__` after
/// `mcp__` in a covered name always ends it).
pub fn server_name_splits(server: &str) -> bool {
    !server.is_empty()
        && !server.contains("__")
        && !server.ends_with('_')
        && server
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A tool name an agent gives an MCP tool, split into server and tool: `mcp__<server>__<tool>`,
/// the server ending at the first `__` after the prefix. The tool part must be a name MCP
/// allows (1 to 128 of `A-Z a-z 0-9 _ - .`) that cannot be read with another server: not
/// starting with `_` nor holding `__` (`mcp__docs__x__delete` may be tool `delete` of an
/// agent's server `docs__x`, `mcp__docs___run` tool `run` of server `docs_`); `None`
/// otherwise.
pub fn split_tool_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(TOOL_PREFIX)?;
    let end = rest.find("__")?;
    let (server, tool) = (&rest[..end], &rest[end + 2..]);
    let valid_tool = (1..=128).contains(&tool.len())
        && !tool.starts_with('_')
        && !tool.contains("__")
        && tool
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    (server_name_splits(server) && valid_tool).then_some((server, tool))
}

/// The server's tool an `mcp` handler runs for contract `contract` (handler `server`,
/// `tool`): `tool` when given; else, for a contract named `mcp__<server>__<tool>` of this
/// server, that `<tool>`; else the contract's name. `None` for a wildcard contract, whose
/// calls each name their tool.
pub fn server_tool(contract: &str, server: &str, tool: Option<&str>) -> Option<String> {
    if let Some(tool) = tool {
        return Some(tool.to_owned());
    }
    if wildcard_server(contract).is_some() {
        return None;
    }
    Some(
        split_tool_name(contract)
            .filter(|(named, _)| *named == server)
            .map_or(contract, |(_, tool)| tool)
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration as Std;

    #[test]
    fn backoff_doubles_up_to_the_maximum_and_never_means_none() {
        let server = McpServer {
            restart: Some(RestartPolicy {
                mode: None,
                backoff: Some(Duration(Std::from_millis(100))),
                max_backoff: Some(Duration(Std::from_millis(350))),
            }),
            ..McpServer::default()
        };
        let waits: Vec<_> = (1..=4).map(|n| server.backoff_after(n)).collect();
        assert_eq!(
            waits,
            [100, 200, 350, 350].map(|ms| Some(Std::from_millis(ms)))
        );
        let never = McpServer {
            restart: Some(RestartPolicy {
                mode: Some(RestartMode::Never),
                ..RestartPolicy::default()
            }),
            ..McpServer::default()
        };
        assert_eq!(never.backoff_after(1), None);
        assert_eq!(
            McpServer::default().backoff_after(u32::MAX),
            Some(DEFAULT_RESTART_MAX_BACKOFF)
        );
    }
    #[test]
    fn wildcards_have_one_strict_form() {
        assert_eq!(wildcard_server("mcp__github__*"), Some("github"));
        assert_eq!(wildcard_server("mcp__my-server_1__*"), Some("my-server_1"));
        for not in [
            "mcp__git*",
            "mcp__github*",
            "mcp____*",
            "mcp__a__b__*",
            "mcp__a___*",
            "mcp__github__x*",
            "github__*",
            "mcp__github__*x",
        ] {
            assert_eq!(wildcard_server(not), None, "{not}");
        }
        assert_eq!(wildcard_name("github"), "mcp__github__*");
    }

    #[test]
    fn the_server_tool_is_the_handlers_or_the_names_or_none_for_a_wildcard() {
        assert_eq!(
            server_tool("Add", "calc", Some("add")).as_deref(),
            Some("add")
        );
        assert_eq!(
            server_tool("mcp__calc__add", "calc", None).as_deref(),
            Some("add")
        );
        // Another server's prefix is no part of this server's tool names.
        assert_eq!(
            server_tool("mcp__other__add", "calc", None).as_deref(),
            Some("mcp__other__add")
        );
        assert_eq!(server_tool("add", "calc", None).as_deref(), Some("add"));
        assert_eq!(server_tool("mcp__calc__*", "calc", None), None);
    }

    #[test]
    fn covered_names_split_at_the_first_double_underscore() {
        assert_eq!(
            split_tool_name("mcp__github__list_issues"),
            Some(("github", "list_issues"))
        );
        // A name another server's tool may have is no tool of this one: an agent's server
        // may be named `a__b` (`mcp__a__b__c`) or `a_` (`mcp__a___x`).
        assert_eq!(split_tool_name("mcp__a__b__c"), None);
        assert_eq!(split_tool_name("mcp__github__"), None);
        assert_eq!(split_tool_name("mcp__github__*"), None);
        assert_eq!(split_tool_name("mcp__github__a/b"), None);
        assert_eq!(split_tool_name("mcp__github"), None);
        assert_eq!(split_tool_name("Bash"), None);
        assert_eq!(split_tool_name("mcp__a___x"), None);
        assert_eq!(
            crate::model::mcp::agent_tool_name("evil", "fs.read"),
            "mcp__evil__fs_read"
        );
        assert_eq!(
            split_tool_name(&format!("mcp__s__{}", "x".repeat(129))),
            None
        );
    }
}
