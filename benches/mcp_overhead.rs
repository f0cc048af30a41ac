//! Headline figure of issue 21: the overhead toolgate adds to an MCP tool call (decision,
//! input validation, timeout, budget, events) over calling the same rmcp server directly
//! with the SDK's client (target ≤ 200 µs median per call).
//!
//! The server is this bench binary itself, re-run with `TOOLGATE_BENCH_MCP_SERVER` set: a
//! stdio rmcp server with one `echo` tool. Two connections to two copies of it are measured
//! side by side, one call at a time on a current-thread runtime: the SDK's client calling
//! `echo`, and `Engine::execute_batch` running a one-call batch whose contract has
//! `handler: { kind: mcp }`. `main` prints the medians and their difference, then divan prints
//! its own statistics for the same two loops.
//!
//! Run with `cargo bench --bench mcp_overhead`.

// Bench code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;
use tokio::runtime::Runtime;
use toolgate::ToolCall;
use toolgate::{Batch, Engine, Turn};

mod support;

// The allocator the `toolgate` binary uses (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SERVER_ENV: &str = "TOOLGATE_BENCH_MCP_SERVER";

/// The stdio server: one `echo` tool.
struct EchoServer;

impl ServerHandler for EchoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(serde_json::from_value(json!({"tools": [{
            "name": "echo",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}
        }]}))
        .unwrap())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|args| args.get("text"))
            .and_then(|text| text.as_str())
            .unwrap_or_default()
            .to_owned();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn exe() -> String {
    std::env::current_exe()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

/// The SDK's client on its own copy of the server.
fn direct(runtime: &Runtime) -> RunningService<RoleClient, ()> {
    runtime.block_on(async {
        let mut command = tokio::process::Command::new(exe());
        command.env(SERVER_ENV, "1");
        let transport = TokioChildProcess::new(command).unwrap();
        ().serve(transport).await.unwrap()
    })
}

/// An engine whose `Echo` contract calls the server's `echo`.
fn engine() -> Engine {
    let policy = format!(
        r#"
version: 1
mcp_servers:
  bench: {{ command: [{exe:?}], set_env: {{ {SERVER_ENV}: "1" }}, cwd: {cwd:?} }}
tools:
  Echo:
    input_schema:
      type: object
      required: [text]
      properties: {{ text: {{ type: string }} }}
    concurrency: {{ concurrent_safe: true, read_only: true, side_effect_scope: none }}
    permission: {{ default: allow }}
    handler: {{ kind: mcp, server: bench, tool: echo }}
"#,
        exe = exe(),
        cwd = std::env::temp_dir().to_str().unwrap(),
    );
    Engine::builder(support::snapshot_of(&policy)).build()
}

async fn direct_call(client: &RunningService<RoleClient, ()>) {
    let mut params = CallToolRequestParams::new("echo");
    params.arguments = json!({"text": "hello"}).as_object().cloned();
    let result = client.call_tool(params).await.unwrap();
    assert_eq!(result.content.len(), 1);
}

async fn engine_call(engine: &Engine, turn: &Turn) {
    let batch = Batch::new(vec![ToolCall::new("c1", "Echo", json!({"text": "hello"}))]);
    let outcome = engine.execute_batch(batch, turn).await.unwrap();
    assert!(outcome.results[0].is_ok(), "{:?}", outcome.results[0]);
}

/// Each call's time, sorted.
fn times(count: usize, mut call: impl FnMut()) -> Vec<Duration> {
    let mut times: Vec<Duration> = (0..count)
        .map(|_| {
            let started = Instant::now();
            call();
            started.elapsed()
        })
        .collect();
    times.sort();
    times
}

struct Fixture {
    runtime: Runtime,
    client: RunningService<RoleClient, ()>,
    engine: Engine,
    turn: Turn,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let runtime = runtime();
    let client = direct(&runtime);
    let engine = engine();
    Fixture {
        runtime,
        client,
        engine,
        turn: Turn::default(),
    }
});

fn main() {
    if std::env::var_os(SERVER_ENV).is_some() {
        runtime().block_on(async {
            let service = EchoServer.serve(rmcp::transport::stdio()).await.unwrap();
            let _ = service.waiting().await;
        });
        return;
    }
    let fixture = &*FIXTURE;
    let Fixture {
        runtime,
        client,
        engine,
        turn,
    } = fixture;
    // Warm up both connections (the engine starts its server on the first call).
    for _ in 0..200 {
        runtime.block_on(direct_call(client));
        runtime.block_on(engine_call(engine, turn));
    }
    let count = 5_000;
    let mut direct_times = Vec::new();
    let mut engine_times = Vec::new();
    // Interleaved rounds, so that a busy moment of a shared machine hits both alike.
    for _ in 0..10 {
        direct_times.extend(times(count / 10, || runtime.block_on(direct_call(client))));
        engine_times.extend(times(count / 10, || {
            runtime.block_on(engine_call(engine, turn));
        }));
    }
    direct_times.sort();
    engine_times.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let (direct_median, engine_median) = (direct_times[count / 2], engine_times[count / 2]);
    println!(
        "mcp overhead, one echo call at a time over stdio, one core ({count} calls each, {}):",
        support::ALLOCATOR
    );
    println!(
        "  rmcp client directly: median {:>7.1} µs, best {:>7.1} µs",
        us(direct_median),
        us(direct_times[0])
    );
    println!(
        "  through toolgate:     median {:>7.1} µs, best {:>7.1} µs",
        us(engine_median),
        us(engine_times[0])
    );
    println!(
        "  overhead: {:>7.1} µs per call (median; target <= 200 µs)",
        us(engine_median) - us(direct_median)
    );
    divan::main();
}

#[divan::bench]
fn rmcp_client_directly() {
    let fixture = &*FIXTURE;
    fixture.runtime.block_on(direct_call(&fixture.client));
}

#[divan::bench]
fn through_toolgate() {
    let fixture = &*FIXTURE;
    fixture
        .runtime
        .block_on(engine_call(&fixture.engine, &fixture.turn));
}
