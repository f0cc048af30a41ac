//! The agent tool maps (`agents:` section): how each coding agent's tool names and input
//! fields map onto toolgate tools, so that `toolgate hook <agent>` decides an agent's tool
//! call with the rules written for toolgate's tools.
//!
//! The built-in maps are `policies/agents.yaml`; a project adds or changes a mapping without
//! code (an agent entry merges key by key with the one below, like the `commands` section).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `agents` section: agents by the name `toolgate hook <agent>` is run with.
pub type AgentsSection = IndexMap<String, AgentSpec>;

/// One agent: the hook protocol it speaks and how its tools map onto toolgate tools.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// One line for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON protocol of the agent's hooks: `claude` (Claude Code and the agents that reuse
    /// its format), `codex` (Claude's format as OpenAI Codex reads it) or `gemini` (Gemini
    /// CLI's `BeforeTool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<AgentProtocol>,
    /// The agent's permission modes (as its hooks send them in `permission_mode`) that turn
    /// on a toolgate mode: `plan: plan` decides calls made in the agent's plan mode with the
    /// rules of toolgate's `plan` mode.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub modes: IndexMap<String, String>,
    /// The agent's tools by the name its hooks send, each mapped onto a toolgate tool. A tool
    /// not listed here is unknown to the policy (but `mcp__<server>__<tool>` names map onto
    /// the toolgate tool of the same name when the policy has one).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub tools: IndexMap<String, ToolMapping>,
}

/// The JSON protocol an agent's hooks speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentProtocol {
    /// Claude Code's `PreToolUse`, `PermissionRequest` and `PostToolUse` hooks.
    Claude,
    /// Claude's format as OpenAI Codex reads it: no `ask` and no bare `allow` in
    /// `PreToolUse`.
    Codex,
    /// Gemini CLI's `BeforeTool` and `AfterTool` hooks.
    Gemini,
}

/// How one of the agent's tools becomes toolgate calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolMapping {
    /// The toolgate tool (name or alias) that decides the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The toolgate tool's input fields, each taken from a field of the agent's input: a
    /// field name, or a JSON pointer (`/edits/0/new_string`). A field the agent did not send
    /// is left out; fields not listed are not judged. A list names every spelling the agent
    /// has used for the field (`[dir_path, path]`, its older name): whichever it sends is
    /// taken, and a call giving two of them different values is refused, never guessed.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub input: IndexMap<String, FieldNames>,
    /// Input fields with a fixed value.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub set: IndexMap<String, Value>,
    /// Splits the call into one toolgate call per item; the strictest decision of the items
    /// is the answer (deny if any is denied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub each: Option<Each>,
    /// The agent's input field naming the folder a shell command runs in (Gemini CLI's
    /// `dir_path`, Qwen Code's `directory`). When the agent sends it, the mapped `command` is
    /// judged as `cd '<folder>' && <command>`, so the folder and the command's relative paths
    /// are judged where the command really runs, not in the project root. A mapping without
    /// a `command` field cannot use it.
    /// A list names every spelling the agent has used for the field (Gemini CLI's
    /// `dir_path`, `directory` before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cd: Option<FieldNames>,
    /// The agent's input field that, when sent, says the mapped `command` is keys typed
    /// into a program running in a terminal rather than a script to run (Codex sends
    /// `workdir` with `write_stdin` only). A terminal's line editor acts on some keys: a tab
    /// completes a name the text does not show, `^U` erases what was typed before it, and a
    /// pager or editor runs a shell command after `!`. Such a call holding a tab or `!` is
    /// refused (a control key asks for any command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_when: Option<FieldNames>,
    /// A mapped input field naming a folder that the agent's tool takes to be its working
    /// folder when the agent sends none (Claude Code's `Grep` and `Glob` search the folder
    /// the session is in). When the hook reports a working folder other than the workspace
    /// root, a call without the field is judged with that folder in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults_to_cwd: Option<String>,
    /// Leaves the tool unmapped (unknown to the policy), e.g. to switch off a built-in
    /// mapping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
}

/// One field of the agent's input, or several: the array fields a call is split by (each in
/// turn), or the names one input field has had (`dir_path`, and `path` before it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum FieldNames {
    /// One field.
    One(String),
    /// Several fields.
    Many(Vec<String>),
}

impl From<&str> for FieldNames {
    fn from(field: &str) -> Self {
        Self::One(field.to_owned())
    }
}

impl FieldNames {
    /// The names in backquotes, joined by "or" (`` `dir_path` or `path` ``).
    pub fn quoted(&self) -> String {
        let names: Vec<String> = self.as_slice().iter().map(|f| format!("`{f}`")).collect();
        names.join(" or ")
    }

    /// The fields.
    pub fn as_slice(&self) -> &[String] {
        match self {
            Self::One(field) => std::slice::from_ref(field),
            Self::Many(fields) => fields,
        }
    }
}

/// How a call is split into several toolgate calls: exactly one of `items`, `patch` or
/// `urls`. The field names inside `input` then refer to each item's fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1, "maxProperties" = 1))]
pub struct Each {
    /// One call per element of this array field (a field name or JSON pointer); an item is
    /// the agent's input with the element's fields (an object element) over it, or with the
    /// element as `item` (any other element). A list of fields (`[paths, include]`) splits
    /// each one the input has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<FieldNames>,
    /// One call per file the patch in this field touches (Codex's `apply_patch` format:
    /// `*** Add File:`, `*** Update File:` with `*** Move to:`, `*** Delete File:`). Items
    /// have `path`, `kind` (`add`, `update`, `delete`, `move`), `removed` (the lines taken
    /// out) and `added` (the lines put in); a move is two items, its old and its new path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// One call per URL in this text field (a prompt that names the pages to fetch), read as
    /// Gemini CLI reads it: each word with `://`, as a WHATWG URL parser writes it out
    /// (`https:evil.net/?a=://` is `https://evil.net/?a=://`). Items have `url` and the
    /// agent's fields; the input's own `url` is read the same way and judged too. A word
    /// with `://` that does not parse is asked about. No URL: one call without `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urls: Option<String>,
}
