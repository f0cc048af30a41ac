//! The `mcp` handler (SPEC §10, issue 21): calls a tool of a server declared under
//! `mcp_servers`, through the engine's supervised connection (`crate::mcp`).
//!
//! - Input: the call's input object is the tool's `arguments`.
//! - Result: text parts joined by newlines are the text output; other parts (images, audio,
//!   resources, resource links) are passed on as [`HandlerOutput::parts`], as the server sent
//!   them, never counted in text budgets. When the server returns `structuredContent`, that is
//!   the output (JSON, checked against the contract's `output_schema` by the output stage) and
//!   the text parts, which repeat it by the protocol's advice, are dropped.
//! - A result with `isError: true` is a business failure (code `mcp:tool_error`), told to
//!   the model with the tool's text.
//! - Progress notifications become progress messages (`ToolCallProgress` events).
//! - Cancellation (timeout, interrupt, a sibling's failure) sends `notifications/cancelled`
//!   for the request and ends the call at once.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use super::template::{Source, parse_template};
use super::{CallContext, HandlerError, HandlerOutput, OutputContent};
use crate::mcp::{McpError, Pool, ProgressFn, Server, ServerSpec, Transport};
use crate::model::mcp::{McpServer, McpServersSection};

/// The servers of one snapshot by name: a supervised server, or why it cannot be used.
pub type Servers = HashMap<String, Result<Arc<Server>, String>>;

/// Resolves a snapshot's `mcp_servers` against the engine's pool (reusing the servers whose
/// entries did not change) and drops the servers the snapshot no longer declares from it.
/// Header values and the working directory are filled in here, once per install.
pub fn servers(declared: &McpServersSection, workspace: &Path, pool: &Pool) -> Servers {
    let servers = declared
        .iter()
        .map(|(name, entry)| {
            let server = spec(name, entry, workspace).map(|spec| pool.server(spec));
            (name.clone(), server)
        })
        .collect();
    pool.retain(|name| declared.contains_key(name));
    servers
}

/// The spec of one server entry.
pub fn spec(name: &str, entry: &McpServer, workspace: &Path) -> Result<ServerSpec, String> {
    let transport = match (&entry.command, &entry.url) {
        (Some(argv), None) => Transport::Stdio {
            argv: argv.clone(),
            env_allow: entry.env.clone().unwrap_or_default(),
            env_set: entry
                .set_env
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            cwd: match &entry.cwd {
                Some(dir) => workspace.join(dir),
                None => workspace.to_path_buf(),
            },
        },
        (None, Some(url)) => {
            super::http::install_crypto_provider();
            Transport::Http {
                url: url.clone(),
                headers: headers(entry)?,
            }
        }
        // Reported at load time; a snapshot with either cannot be built.
        (Some(_), Some(_)) | (None, None) => {
            return Err(format!(
                "MCP server `{name}` needs exactly one of `command` and `url`"
            ));
        }
    };
    Ok(ServerSpec {
        name: name.to_owned(),
        transport,
        entry: entry.clone(),
    })
}

/// Header values with their `{{env.NAME}}` placeholders filled in (an unset variable is
/// empty).
fn headers(entry: &McpServer) -> Result<Vec<(String, String)>, String> {
    let allowed = entry.env.as_deref().unwrap_or_default();
    let mut out = Vec::new();
    for (name, value) in entry.headers.iter().flatten() {
        let template =
            parse_template(value).map_err(|error| format!("header `{name}`: {error}"))?;
        let rendered = template
            .render(|placeholder| match &placeholder.source {
                Source::Env { name } if allowed.contains(name) => Ok(std::env::var(name).ok()),
                Source::Env { .. } | Source::Input { .. } => Ok(None),
            })
            .map_err(|error| format!("header `{name}`: {error}"))?;
        if let Some(rendered) = rendered {
            out.push((name.clone(), rendered));
        }
    }
    Ok(out)
}

/// A tool of a supervised server.
#[derive(Debug)]
pub struct McpRunner {
    server: Arc<Server>,
    /// `None` for a wildcard contract: the tool is the one the call names.
    tool: Option<String>,
}

/// The input of an MCP call is not a JSON object.
#[derive(Debug, thiserror::Error)]
#[error("the input of an mcp tool must be a JSON object, not {0}")]
struct NotAnObject(&'static str);

/// A call reached a wildcard's handler under a name that is not one of its server's tools.
#[derive(Debug, thiserror::Error)]
#[error("`{name}` is not a tool of MCP server `{server}` (`mcp__{server}__<tool>`)")]
struct WrongName {
    name: String,
    server: String,
}

impl McpRunner {
    /// Calls `tool` of `server`; with `None` (a wildcard contract), the tool a call's name
    /// `mcp__<server>__<tool>` says.
    pub fn new(server: Arc<Server>, tool: Option<String>) -> Self {
        Self { server, tool }
    }

    /// The server's tool a call runs: the fixed one, or the one its name says (only ever a
    /// tool of this runner's server).
    fn tool<'a>(&'a self, ctx: &'a CallContext) -> Result<&'a str, HandlerError> {
        if let Some(tool) = &self.tool {
            return Ok(tool);
        }
        let server = &self.server.spec().name;
        crate::model::mcp::split_tool_name(ctx.tool.as_str())
            .filter(|(named, _)| named == server)
            .map(|(_, tool)| tool)
            .ok_or_else(|| {
                HandlerError::other(WrongName {
                    name: ctx.tool.to_string(),
                    server: server.clone(),
                })
            })
    }

    /// Runs one call (see the module docs).
    pub async fn call(
        &self,
        input: &Value,
        ctx: &CallContext,
    ) -> Result<HandlerOutput, HandlerError> {
        let arguments = match input {
            Value::Object(map) => Some(map.clone()),
            Value::Null => None,
            Value::Bool(_) => return Err(HandlerError::other(NotAnObject("a boolean"))),
            Value::Number(_) => return Err(HandlerError::other(NotAnObject("a number"))),
            Value::String(_) => return Err(HandlerError::other(NotAnObject("a string"))),
            Value::Array(_) => return Err(HandlerError::other(NotAnObject("an array"))),
        };
        let tool = self.tool(ctx)?;
        let sink = ctx.progress.clone();
        let progress: ProgressFn = Arc::new(move |text| sink.message(text));
        match self
            .server
            .call_tool(tool, arguments, progress, &ctx.cancel)
            .await
        {
            Ok(result) => output(result),
            Err(McpError::Cancelled) => Err(HandlerError::Cancelled),
            Err(error) => Err(HandlerError::other(error)),
        }
    }
}

/// Maps a tool result onto a handler output (see the module docs).
pub fn output(result: CallToolResult) -> Result<HandlerOutput, HandlerError> {
    let mut texts = Vec::new();
    let mut parts = Vec::new();
    for block in result.content {
        match block {
            ContentBlock::Text(text) => texts.push(text.text),
            // Images, audio, resources, resource links, and kinds newer than this SDK.
            other => {
                parts.push(serde_json::to_value(&other).map_err(HandlerError::other)?);
            }
        }
    }
    let text = texts.join("\n");
    if result.is_error == Some(true) {
        let message = if text.is_empty() {
            "the tool reported an error without a message".to_owned()
        } else {
            text
        };
        return Err(HandlerError::business_with_code(message, "mcp:tool_error"));
    }
    let content = match result.structured_content {
        Some(value) => OutputContent::Json(value),
        None => OutputContent::Text(text),
    };
    Ok(HandlerOutput { content, parts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_stays_text_and_other_parts_pass_through() {
        let out = output(result(json!({
            "content": [
                {"type": "text", "text": "one"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "text", "text": "two"}
            ]
        })))
        .unwrap();
        assert_eq!(out.as_text(), Some("one\ntwo"));
        assert_eq!(out.parts.len(), 1);
        assert_eq!(out.parts[0]["type"], "image");
        assert_eq!(out.parts[0]["mimeType"], "image/png");
    }

    #[test]
    fn structured_content_is_the_output_and_is_error_a_business_failure() {
        let out = output(result(json!({
            "content": [{"type": "text", "text": "{\"sum\":3}"}],
            "structuredContent": {"sum": 3}
        })))
        .unwrap();
        assert_eq!(out.content, OutputContent::Json(json!({"sum": 3})));
        let err = output(result(json!({
            "content": [{"type": "text", "text": "no such file"}],
            "isError": true
        })))
        .unwrap_err();
        assert!(matches!(
            err,
            HandlerError::Business { ref message, code: Some(ref code) }
                if message == "no such file" && code == "mcp:tool_error"
        ));
    }

    #[test]
    fn header_values_read_only_listed_variables() {
        let entry = |headers: Value| -> McpServer {
            serde_json::from_value(json!({
                "url": "http://127.0.0.1:1/mcp", "env": ["PATH"], "headers": headers
            }))
            .unwrap()
        };
        let rendered = headers(&entry(
            json!({"X-Path": "p={{env.PATH}}", "Accept-Language": "en"}),
        ))
        .unwrap();
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(
            rendered,
            [
                ("X-Path".to_owned(), format!("p={path}")),
                ("Accept-Language".to_owned(), "en".to_owned())
            ]
        );
        let unlisted = headers(&entry(json!({"X-Home": "{{env.HOME}}"}))).unwrap_err();
        assert!(unlisted.starts_with("header `X-Home`"), "{unlisted}");
    }
}
