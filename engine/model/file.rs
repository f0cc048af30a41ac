//! One policy file as written: the top-level sections.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::contract::ToolContract;
use super::engine_config::EngineConfig;
use super::hook::Hook;
use super::rule::Rule;

/// A policy file (YAML or TOML). Every section is optional except `version`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// Format version; currently `1`.
    #[schemars(range(min = 1, max = 1))]
    pub version: u32,
    /// The JSON Schema this file follows (for editors); ignored by the engine.
    #[serde(default, rename = "$schema", skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Engine-wide settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineConfig>,
    /// Tool contracts, keyed by canonical tool name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(schema_with = "tools_schema")]
    pub tools: IndexMap<String, ToolContract>,
    /// Permission rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<Rule>,
    /// Hooks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<Hook>,
    /// Admission gates, keyed by name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(schema_with = "gates_schema")]
    pub gates: IndexMap<String, Gate>,
    /// The command table: what programs do with their options and operands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<super::command::CommandsSection>,
    /// How `toolgate diff` rates a change by its effect on decisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<super::review::ReviewSection>,
    /// Turn modes, keyed by name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(schema_with = "modes_schema")]
    pub modes: IndexMap<String, Mode>,
    /// Agent tool maps, keyed by the agent name `toolgate hook <agent>` is run with: how the
    /// agent's tool names and input fields map onto toolgate tools.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub agents: super::agent::AgentsSection,
    /// MCP servers, keyed by the name `handler: { kind: mcp, server: NAME }` uses.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(schema_with = "mcp_servers_schema")]
    pub mcp_servers: super::mcp::McpServersSection,
}

/// Tool names: a letter or `_`, then letters, digits, `_`, `-`, `.`; or a wildcard contract
/// `mcp__<server>__*` (see [`super::mcp::wildcard_server`]).
pub const TOOL_NAME_PATTERN: &str = r"^([A-Za-z_][A-Za-z0-9_.-]*|mcp__[A-Za-z0-9_-]+__\*)$";
/// Names of gates and modes.
pub const NAME_PATTERN: &str = r"^[A-Za-z_][A-Za-z0-9_-]*$";

fn keyed_map<T: JsonSchema>(
    generator: &mut schemars::SchemaGenerator,
    description: &str,
    pattern: &str,
) -> schemars::Schema {
    let value = generator.subschema_for::<T>();
    schemars::json_schema!({
        "description": description,
        "type": "object",
        "propertyNames": { "pattern": pattern },
        "additionalProperties": value
    })
}

fn tools_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    keyed_map::<ToolContract>(
        generator,
        "Tool contracts, keyed by canonical tool name.",
        TOOL_NAME_PATTERN,
    )
}

fn gates_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    keyed_map::<Gate>(generator, "Admission gates, keyed by name.", NAME_PATTERN)
}

fn mcp_servers_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    keyed_map::<super::mcp::McpServer>(
        generator,
        "MCP servers, keyed by the name `handler: { kind: mcp, server: NAME }` uses.",
        NAME_PATTERN,
    )
}

fn modes_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    keyed_map::<Mode>(generator, "Turn modes, keyed by name.", NAME_PATTERN)
}

/// A named admission gate (SPEC §5.3): a number of permits shared by every call that names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Gate {
    /// How many calls may hold the gate at once.
    #[schemars(range(min = 1))]
    pub permits: u32,
    /// What the gate protects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A turn mode (SPEC §9.2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mode {
    /// What the mode means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}
