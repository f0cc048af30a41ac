//! The tools the MCP conformance suite's `tools-call-*` server scenarios call, built with the
//! SDK (`rmcp`) from each scenario's "Server Implementation Requirements" and run as a
//! separate stdio process (the `it` test binary re-invoked, as [`super::mcp_server`] is).
//!
//! The suite's own fixture server (TypeScript, in the suite's repository) is published on no
//! registry; the tests put this one behind `toolgate mcp serve --http` instead, so the
//! scenarios check what toolgate hands an MCP client, not what a server produces.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// Logging and sampling are deprecated in the protocol (SEP-2577); the suite still tests them.
#![allow(deprecated)]

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

/// Set (to anything) in the environment of the re-invoked test binary.
pub const FIXTURE_ENV: &str = "TOOLGATE_TEST_CONFORMANCE_FIXTURE";

/// The fixture's tools, by the names the scenarios call.
pub const TOOLS: [&str; 11] = [
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_error_handling",
    "test_tool_with_progress",
    "test_sampling",
    "test_elicitation",
    "json_schema_2020_12_tool",
];

/// The input schema of `json_schema_2020_12_tool` (scenario `json-schema-2020-12`: a client
/// must see `$schema`, `$defs` and `additionalProperties` as written).
pub fn schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": false
    })
}

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV file of one silent 8-bit sample at 8 kHz.
const WAV: &str = "UklGRiUAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQEAAACA";

/// A YAML `mcp_servers` entry that starts the fixture.
pub fn yaml_entry() -> String {
    let argv: Vec<String> =
        super::mcp_server::reinvoked("support::conformance_fixture::serve_stdio")
            .iter()
            .map(|arg| serde_json::to_string(arg).unwrap())
            .collect();
    format!(
        "{{ command: [{}], set_env: {{ {FIXTURE_ENV}: \"1\" }} }}",
        argv.join(", ")
    )
}

#[derive(Clone, Default)]
struct Fixture;

fn result(value: Value) -> Result<CallToolResponse, ErrorData> {
    Ok(serde_json::from_value::<CallToolResult>(value)
        .unwrap()
        .into())
}

fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn failure(message: String) -> Result<CallToolResponse, ErrorData> {
    result(json!({"isError": true, "content": [text(&message)]}))
}

async fn pause() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools: Vec<Value> = TOOLS
            .iter()
            .map(|name| {
                let schema = match *name {
                    "test_sampling" | "test_elicitation" => {
                        json!({"type": "object", "properties": {"prompt": {"type": "string"}, "message": {"type": "string"}}})
                    }
                    "json_schema_2020_12_tool" => schema_2020_12(),
                    _ => json!({"type": "object"}),
                };
                json!({"name": name, "description": name, "inputSchema": schema})
            })
            .collect();
        Ok(serde_json::from_value(json!({ "tools": tools })).unwrap())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let image = json!({"type": "image", "data": PNG, "mimeType": "image/png"});
        match request.name.as_ref() {
            "test_simple_text" => result(json!({
                "content": [text("This is a simple text response for testing.")]
            })),
            "test_image_content" => result(json!({ "content": [image] })),
            "test_audio_content" => result(json!({
                "content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]
            })),
            "test_embedded_resource" => result(json!({"content": [{
                "type": "resource",
                "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}
            }]})),
            "test_multiple_content_types" => result(json!({"content": [
                text("Multiple content types test:"),
                image,
                {"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}
            ]})),
            "test_tool_with_logging" => {
                for (step, message) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .into_iter()
                .enumerate()
                {
                    if step > 0 {
                        pause().await;
                    }
                    let param = LoggingMessageNotificationParam::new(
                        rmcp::model::LoggingLevel::Info,
                        json!(message),
                    );
                    let _ = context.peer.notify_logging_message(param).await;
                }
                result(json!({ "content": [text("Logging test completed")] }))
            }
            "test_error_handling" => {
                failure("This tool intentionally returns an error for testing".to_owned())
            }
            "test_tool_with_progress" => {
                let token = context.meta.get_progress_token();
                for (step, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if step > 0 {
                        pause().await;
                    }
                    if let Some(token) = &token {
                        let param = ProgressNotificationParam::new(token.clone(), progress)
                            .with_total(100.0);
                        let _ = context.peer.notify_progress(param).await;
                    }
                }
                result(json!({ "content": [text("Progress test completed")] }))
            }
            "test_sampling" => {
                let prompt = args["prompt"].as_str().unwrap_or_default();
                let params = serde_json::from_value(json!({
                    "messages": [{"role": "user", "content": text(prompt)}],
                    "maxTokens": 100
                }))
                .unwrap();
                match context.peer.create_message(params).await {
                    Ok(answer) => {
                        let answer = serde_json::to_value(answer).unwrap();
                        let said = answer["content"]["text"].as_str().unwrap_or_default();
                        result(json!({ "content": [text(&format!("LLM response: {said}"))] }))
                    }
                    Err(error) => failure(format!("sampling failed: {error}")),
                }
            }
            "test_elicitation" => {
                let message = args["message"].as_str().unwrap_or("Please provide input");
                let params = serde_json::from_value(json!({
                    "mode": "form",
                    "message": message,
                    "requestedSchema": {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}
                }))
                .unwrap();
                match context.peer.create_elicitation(params).await {
                    Ok(answer) => {
                        let answer = serde_json::to_value(answer).unwrap();
                        result(json!({ "content": [text(&format!("User response: {answer}"))] }))
                    }
                    Err(error) => failure(format!("elicitation failed: {error}")),
                }
            }
            "json_schema_2020_12_tool" => result(json!({ "content": [text(&args.to_string())] })),
            other => Err(ErrorData::invalid_params(
                format!("unknown tool `{other}`"),
                None,
            )),
        }
    }
}

/// The fixture's entry point when the binary is re-invoked with [`FIXTURE_ENV`] set; without
/// it (a developer running ignored tests), it does nothing.
#[test]
#[ignore = "the conformance fixture MCP server, run as a child process by the conformance test"]
fn serve_stdio() {
    if std::env::var_os(FIXTURE_ENV).is_none() {
        return;
    }
    super::mcp_server::run_stdio(Fixture);
}
