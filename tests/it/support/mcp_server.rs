//! A test MCP server built with the SDK (`rmcp`), run as a separate stdio process: the `it`
//! test binary itself, re-invoked to run only the ignored test [`serve_stdio`] with
//! [`SERVER_ENV`] set (see [`command`]). It needs no extra build target, so it works from a
//! clean clone under `cargo test` and `cargo test --test it`.
//!
//! The test harness prints a line (`running 1 test`) on standard output before the server
//! starts; MCP clients ignore lines that are not JSON (the SDKs do, as the protocol's stdio
//! transport advises).
//!
//! Tools (input fields in parentheses):
//! - `echo` (`text`): returns the text; annotated read-only and idempotent;
//! - `sleep` (`ms`): waits, or until the request is cancelled; returns `slept`;
//! - `fail` (`message`): an `isError` result with the message; annotated destructive;
//! - `progress` (`steps`): sends `steps` progress notifications, then returns `done`;
//! - `image`: a text part and a PNG image part;
//! - `huge` (`bytes`): returns a text of that many `x`;
//! - `add` (`a`, `b`): structured content `{"sum": a + b}` (declares an output schema);
//! - `grow`: adds the tool `late` to the list and sends `notifications/tools/list_changed`;
//! - `late` (only after `grow`): returns `late`;
//! - `crash`: the process exits at once (status 3);
//! - `spawn`: starts `sleep 300` as a child of the server and returns its process id;
//! - `detach`: the same, in a process group of its own.
//!
//! With [`SILENT_LIST_ENV`] set, it never answers `tools/list`. [`EXTRA_TOOLS_ENV`] adds
//! tools to the list (see [`yaml_entry_with_tools`]); calling one returns `ran <name>`.
//!
//! Every `notifications/cancelled` the server receives is appended as a line (its reason) to
//! the file named by [`CANCEL_LOG_ENV`], when set.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    ContentBlock, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// Set (to anything) in the environment of the re-invoked test binary.
pub const SERVER_ENV: &str = "TOOLGATE_TEST_MCP_SERVER";
/// A file the server appends the reason of every cancellation it receives to.
pub const CANCEL_LOG_ENV: &str = "TOOLGATE_TEST_MCP_CANCEL_LOG";
/// Set (to anything): the server never answers `tools/list`.
pub const SILENT_LIST_ENV: &str = "TOOLGATE_TEST_MCP_SILENT_LIST";

/// A JSON list of further tools the server lists (`name` and `description` of each).
pub const EXTRA_TOOLS_ENV: &str = "TOOLGATE_TEST_MCP_EXTRA_TOOLS";

/// The argv that starts the test server (the `it` binary running only [`serve_stdio`]).
pub fn command() -> Vec<String> {
    reinvoked("support::mcp_server::serve_stdio")
}

/// The argv that runs only the ignored test `test` of this `it` binary (a server's entry
/// point, see [`run_stdio`]).
pub fn reinvoked(test: &str) -> Vec<String> {
    let exe = std::env::current_exe().unwrap();
    [
        exe.to_str().unwrap(),
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// A YAML `mcp_servers` entry that starts the test server (with `extra` YAML lines added,
/// indented by the caller), logging cancellations to `cancel_log`.
pub fn yaml_entry(cancel_log: &std::path::Path) -> String {
    let argv: Vec<String> = command()
        .iter()
        .map(|arg| serde_json::to_string(arg).unwrap())
        .collect();
    format!(
        "{{ command: [{}], set_env: {{ {SERVER_ENV}: \"1\", {CANCEL_LOG_ENV}: {} }} }}",
        argv.join(", "),
        serde_json::to_string(cancel_log.to_str().unwrap()).unwrap()
    )
}

/// [`yaml_entry`] for a server that also lists `extra` tools, given as `(name, description)`.
pub fn yaml_entry_with_tools(cancel_log: &std::path::Path, extra: &[(&str, &str)]) -> String {
    let tools: Vec<Value> = extra
        .iter()
        .map(|(name, description)| json!({"name": name, "description": description}))
        .collect();
    let listed = serde_json::to_string(&serde_json::to_string(&tools).unwrap()).unwrap();
    let entry = yaml_entry(cancel_log);
    format!(
        "{}, {EXTRA_TOOLS_ENV}: {listed} }} }}",
        entry.trim_end_matches(" } }")
    )
}

/// The extra tools of [`EXTRA_TOOLS_ENV`].
fn extra_tools() -> Vec<Tool> {
    let Some(listed) = std::env::var_os(EXTRA_TOOLS_ENV) else {
        return Vec::new();
    };
    let listed: Vec<Value> = serde_json::from_str(listed.to_str().unwrap()).unwrap();
    listed
        .into_iter()
        .map(|mut extra| {
            extra["inputSchema"] = object(json!({}));
            tool(extra)
        })
        .collect()
}

/// Starts `sleep 300` (in a process group of its own when `detached`) and returns its process
/// id. Left running: the tests check that toolgate ends it with the server.
fn sleeper(detached: bool) -> u32 {
    use std::os::unix::process::CommandExt as _;
    let mut command = std::process::Command::new("sleep");
    command
        .arg("300")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if detached {
        command.process_group(0);
    }
    let child = command.spawn().unwrap();
    let pid = child.id();
    std::mem::forget(child);
    pid
}

#[derive(Clone, Default)]
struct TestServer {
    grown: Arc<AtomicBool>,
}

fn tool(value: Value) -> Tool {
    serde_json::from_value(value).unwrap()
}

fn object(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            tool(json!({
                "name": "echo", "description": "Returns its text",
                "inputSchema": object(json!({"text": {"type": "string"}})),
                "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
            })),
            tool(json!({
                "name": "sleep", "description": "Waits",
                "inputSchema": object(json!({"ms": {"type": "integer"}}))
            })),
            tool(json!({
                "name": "fail", "description": "Fails",
                "inputSchema": object(json!({"message": {"type": "string"}})),
                "annotations": {"destructiveHint": true, "readOnlyHint": false}
            })),
            tool(json!({
                "name": "progress", "description": "Reports progress",
                "inputSchema": object(json!({"steps": {"type": "integer"}}))
            })),
            tool(json!({
                "name": "image", "description": "Returns a picture",
                "inputSchema": object(json!({}))
            })),
            tool(json!({
                "name": "huge", "description": "Returns a long text",
                "inputSchema": object(json!({"bytes": {"type": "integer"}}))
            })),
            tool(json!({
                "name": "add", "description": "Adds two numbers",
                "inputSchema": object(json!({"a": {"type": "number"}, "b": {"type": "number"}})),
                "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}
            })),
            tool(json!({
                "name": "grow", "description": "Adds the tool `late`",
                "inputSchema": object(json!({}))
            })),
            tool(json!({
                "name": "crash", "description": "Exits the server",
                "inputSchema": object(json!({}))
            })),
            tool(json!({
                "name": "spawn", "description": "Starts a child process",
                "inputSchema": object(json!({}))
            })),
            tool(json!({
                "name": "detach", "description": "Starts a child process in a group of its own",
                "inputSchema": object(json!({}))
            })),
        ];
        tools.extend(extra_tools());
        if self.grown.load(Ordering::SeqCst) {
            tools.push(tool(json!({
                "name": "late", "description": "Added by grow",
                "inputSchema": object(json!({}))
            })));
        }
        tools
    }
}

fn text(result: &str) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::success(vec![ContentBlock::text(result)]).into())
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if std::env::var_os(SILENT_LIST_ENV).is_some() {
            std::future::pending::<()>().await;
        }
        Ok(serde_json::from_value(json!({ "tools": self.tools() })).unwrap())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        match request.name.as_ref() {
            "echo" => text(args["text"].as_str().unwrap_or_default()),
            "sleep" => {
                let ms = args["ms"].as_u64().unwrap_or(60_000);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => text("slept"),
                    () = context.ct.cancelled() => Err(ErrorData::internal_error("cancelled", None)),
                }
            }
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text(
                args["message"].as_str().unwrap_or("failed"),
            )])
            .into()),
            "progress" => {
                let steps = args["steps"].as_u64().unwrap_or(3);
                if let Some(token) = context.meta.get_progress_token() {
                    for step in 1..=steps {
                        let _ = context
                            .peer
                            .notify_progress(
                                ProgressNotificationParam::new(token.clone(), step as f64)
                                    .with_total(steps as f64)
                                    .with_message(format!("step {step}")),
                            )
                            .await;
                    }
                }
                text("done")
            }
            "image" => Ok(CallToolResult::success(vec![
                ContentBlock::text("a picture"),
                ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ])
            .into()),
            "huge" => {
                let bytes = args["bytes"].as_u64().unwrap_or(0);
                text(&"x".repeat(usize::try_from(bytes).unwrap()))
            }
            "add" => {
                let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                Ok(CallToolResult::structured(json!({ "sum": sum })).into())
            }
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                text("grown")
            }
            "late" if self.grown.load(Ordering::SeqCst) => text("late"),
            "crash" => std::process::exit(3),
            "spawn" => text(&sleeper(false).to_string()),
            "detach" => text(&sleeper(true).to_string()),
            extra if extra_tools().iter().any(|tool| tool.name == extra) => {
                text(&format!("ran {extra}"))
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool `{other}`"),
                None,
            )),
        }
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        if let Some(path) = std::env::var_os(CANCEL_LOG_ENV) {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap();
            writeln!(file, "{}", notification.reason.unwrap_or_default()).unwrap();
        }
    }
}

/// The server's entry point when the binary is re-invoked with [`SERVER_ENV`] set; without
/// it (a developer running ignored tests), it does nothing.
#[test]
#[ignore = "the test MCP server, run as a child process by the MCP tests"]
fn serve_stdio() {
    if std::env::var_os(SERVER_ENV).is_none() {
        return;
    }
    run_stdio(TestServer::default());
}

/// Serves `server` on this process's stdin and stdout until the client leaves, then exits
/// the process (before the test harness prints its summary into a closed pipe).
pub fn run_stdio<S: ServerHandler>(server: S) -> ! {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let service = server.serve(rmcp::transport::stdio()).await.unwrap();
        let _ = service.waiting().await;
    });
    std::process::exit(0);
}
