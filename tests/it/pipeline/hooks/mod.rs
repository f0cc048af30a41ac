//! Hooks around a call: `PreToolUse`, `PermissionRequest` and the post hooks.

mod permission_request;
mod post;
mod pre_tool_use;
