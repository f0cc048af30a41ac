//! Hooks: external commands run at lifecycle points (SPEC §6, §7.2).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::units::Duration;

/// A hook.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    /// Unique name; shown in decisions and events.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The lifecycle point. Required, unless a lower layer defines a hook of the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<HookEvent>,
    /// Tools the hook runs for (names, aliases, globs); `"*"` (the default) for all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Only in these modes (any of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Vec<String>>,
    /// Program and arguments. The hook gets a JSON object on stdin and may answer with one on
    /// stdout; exit code 2 blocks with stderr as the reason. Required, unless a lower layer
    /// defines a hook of the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub command: Option<Vec<String>>,
    /// How long the hook may run (default `engine.hook_timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// What a hook that fails (crash, timeout, bad output) means: `fail_open` (ignored,
    /// reported in events; the default) or `fail_closed` (the call is denied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<HookFailure>,
    /// Environment variables passed through to the hook; all others are cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<String>>,
    /// Switches off a hook defined by a lower layer (not possible for enforced layers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
}

/// Lifecycle points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum HookEvent {
    /// Before permission: may deny, ask, allow, rewrite the input or add context.
    PreToolUse,
    /// When a call needs approval: races the approval client; the first answer wins.
    PermissionRequest,
    /// After a successful call: may add context.
    PostToolUse,
    /// After a failed call: may add context.
    PostToolUseFailure,
    /// After a batch: may add text; the batch finalizer runs again afterwards.
    PostToolBatch,
}

/// What a failing hook means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookFailure {
    /// Ignore the hook (reported in events).
    FailOpen,
    /// Deny the call.
    FailClosed,
}
