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
}
