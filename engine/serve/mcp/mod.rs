//! `toolgate mcp serve`: the policy set's tools served to any MCP client, over stdio or
//! streamable HTTP ([`http`]), with the official SDK (`rmcp`) speaking the protocol.
//!
//! Every `tools/call` runs as a one-call batch through [`Engine::execute_batch`], the same
//! path as `run` and `serve`: decisions, hooks, timeouts, budgets, artifacts and events are
//! the engine's. What this module adds is the mapping to MCP:
//! - the tool list is [`tools::listed_tools`] of the snapshot in force (the contracts' tools
//!   and the tools wildcard contracts cover); a reload that changes it, and an MCP server's
//!   own `notifications/tools/list_changed`, send `notifications/tools/list_changed` to
//!   every connected client;
//! - an `ask` becomes an `elicitation/create` request when the client declared the
//!   elicitation capability; otherwise the engine denies it (no approver) and the result
//!   says what in the policy would let the call run (`result.rs`);
//! - the finalized result becomes the MCP result, any status but `ok` a tool error;
//! - `ToolCallProgress` events become progress notifications when the request carried a
//!   progress token; `notifications/cancelled` (or a dropped HTTP request) cancels the call;
//! - a call the scheduler would run alone runs alone across concurrent requests too
//!   (`exclusive.rs`).
//!
//! Only protocol versions with an `initialize` handshake are offered (up to
//! [`ProtocolVersion::LATEST_WITH_INITIALIZE`]): later versions forbid the server-to-client
//! requests an elicitation needs.

mod approve;
mod exclusive;
pub mod http;
mod result;
pub mod tools;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use tools::exposed_tools;

use super::ServeOptions;
use crate::approval::ApprovalBroker;
use crate::artifact::FsArtifactStore;
use crate::assess::Resolved;
use crate::events::{Event, EventKind, EventSink};
use crate::executor::{Batch, Engine, Turn, artifact_store_for};
use crate::model::{BatchId, ModeName};
use crate::pipeline::ToolCall;
use crate::snapshot::load;
use crate::snapshot::reload::Reloader;
use exclusive::CallLock;

/// How to serve MCP.
#[derive(Clone, Debug)]
pub struct McpServeOptions {
    /// What to load, and whether to watch it (as for `serve`).
    pub serve: ServeOptions,
    /// The modes every call runs in (`--mode`).
    pub modes: Vec<ModeName>,
}

/// Why `toolgate mcp serve` could not start or went on no longer.
#[derive(Debug)]
pub enum McpServeError {
    /// The policies do not load.
    Policies(Vec<crate::diagnostics::Diagnostic>),
    /// An option is wrong (an undeclared mode, a non-loopback address).
    Usage(String),
    /// Reading, writing or listening failed.
    Io(String),
}

/// Receives one line for each reload: installed, or rejected with its diagnostics (the CLI
/// writes them to stderr; standard output belongs to the protocol).
pub type Notices = Arc<dyn Fn(String) + Send + Sync>;

/// The line a reload event makes, if any.
pub fn reload_notice(kind: &EventKind) -> Option<String> {
    if let EventKind::PolicyReloaded(reloaded) = kind {
        let changes = reloaded.changes.len();
        let noun = if changes == 1 { "change" } else { "changes" };
        return Some(format!(
            "policies reloaded: generation {} ({changes} {noun})",
            reloaded.generation
        ));
    }
    let EventKind::PolicyReloadFailed(failed) = kind else {
        return None;
    };
    let mut text = format!(
        "warning: the changed policies do not load; generation {} stays in force",
        failed.generation
    );
    for diagnostic in &failed.diagnostics {
        let field = |key: &str| diagnostic[key].as_str().unwrap_or_default().to_owned();
        let at = match (diagnostic["line"].as_u64(), diagnostic["column"].as_u64()) {
            (Some(line), Some(column)) => format!("{}:{line}:{column}: ", field("file")),
            _ => String::new(),
        };
        text.push_str(&format!(
            "\n  {at}{}: {}",
            field("severity"),
            field("message")
        ));
    }
    Some(text)
}

/// Where one batch's progress goes.
struct Route {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    sent: u64,
}

type Routes = Arc<Mutex<HashMap<String, Route>>>;

/// What every session shares: the engine and the state of calls in flight.
struct Shared {
    engine: Engine,
    modes: Vec<ModeName>,
    lock: CallLock,
    routes: Routes,
    /// The progress forwarder, told when a call with a progress route has its result.
    forward: mpsc::UnboundedSender<Forward>,
    /// Clients that completed the handshake, told when the tool list changes.
    peers: Mutex<Vec<Peer<RoleServer>>>,
}

/// The MCP server handler; one per session, all sharing one engine.
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
}

/// A loaded policy set ready to serve: the engine, its reloader and watcher, and the tasks
/// that forward progress and tool-list changes. Dropping it stops the watcher.
pub struct McpHost {
    gateway: Gateway,
    store: Arc<FsArtifactStore>,
    /// Why the policy files are not watched, when watching failed to start.
    pub watch_error: Option<String>,
    _watch: Option<crate::snapshot::reload::WatchHandle>,
    _reloader: Arc<Reloader>,
    tasks: tokio::task::JoinSet<()>,
}

impl McpHost {
    /// Loads the policy set (an error, with its diagnostics, before any MCP traffic), builds
    /// the engine and starts watching.
    pub async fn start(options: McpServeOptions, notices: Notices) -> Result<Self, McpServeError> {
        let load_options = options.serve.load.clone();
        let loaded = load(&load_options, 1);
        let Some(snapshot) = loaded.snapshot else {
            return Err(McpServeError::Policies(loaded.diagnostics));
        };
        if let Some(mode) = options
            .modes
            .iter()
            .find(|mode| !snapshot.modes.contains_key(*mode))
        {
            let declared: Vec<String> = snapshot.modes.keys().map(|m| format!("`{m}`")).collect();
            let declared = if declared.is_empty() {
                "no modes are declared".to_owned()
            } else {
                format!("declared modes: {}", declared.join(", "))
            };
            return Err(McpServeError::Usage(format!(
                "mode `{mode}` is not declared ({declared})"
            )));
        }
        let routes: Routes = Arc::default();
        let (progress, forward) = mpsc::unbounded_channel();
        let sink: Arc<dyn EventSink> = Arc::new(progress_sink(
            Arc::clone(&routes),
            progress.clone(),
            notices,
        ));
        let store = Arc::new(artifact_store_for(&snapshot));
        let engine = Engine::builder(Arc::clone(&snapshot))
            .sink(Arc::clone(&sink))
            .artifact_store(store.clone())
            .build();
        let (changed, watch_changes) = tokio::sync::watch::channel(());
        let installer = engine.clone();
        let reloader = Arc::new(Reloader::new(
            load_options,
            Some(snapshot),
            Box::new(move |next| {
                installer.install(next);
                changed.send_replace(());
            }),
            Arc::clone(&sink),
        ));
        let (watch, watch_error) = if options.serve.watch {
            let watcher = Arc::clone(&reloader);
            let debounce = options.serve.debounce;
            let started = tokio::task::spawn_blocking(move || watcher.watch(debounce))
                .await
                .unwrap_or_else(|error| Err(notify::Error::generic(&error.to_string())));
            match started {
                Ok(handle) => (Some(handle), None),
                Err(error) => (None, Some(format!("policy files are not watched: {error}"))),
            }
        } else {
            (None, None)
        };
        let gateway = Gateway {
            shared: Arc::new(Shared {
                engine,
                modes: options.modes,
                lock: CallLock::default(),
                routes,
                forward: progress,
                peers: Mutex::default(),
            }),
        };
        let mut tasks = tokio::task::JoinSet::new();
        tasks.spawn(forward_progress(forward));
        tasks.spawn(announce_changes(gateway.clone(), watch_changes));
        Ok(Self {
            gateway,
            store,
            watch_error,
            _watch: watch,
            _reloader: reloader,
            tasks,
        })
    }

    /// A handler for one more session.
    pub fn gateway(&self) -> Gateway {
        self.gateway.clone()
    }

    /// Serves one client over a reader and a writer (stdin and stdout) until it disconnects
    /// or `stop` completes; running calls are cancelled, then artifacts are flushed.
    pub async fn serve_stdio<R, W, S>(
        self,
        reader: R,
        writer: W,
        stop: S,
    ) -> Result<(), McpServeError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
        S: std::future::Future<Output = ()> + Send,
    {
        let cancel = CancellationToken::new();
        // Cancelling the service ends the session and, with it, every call in flight.
        let _cancel_on_return = cancel.clone().drop_guard();
        let mut stop = std::pin::pin!(stop);
        let serving = self
            .gateway()
            .serve_with_ct((reader, writer), cancel.clone());
        let result = tokio::select! {
            running = serving => match running {
                Ok(running) => {
                    tokio::select! {
                        _ = running.waiting() => {}
                        () = &mut stop => cancel.cancel(),
                    }
                    Ok(())
                }
                // The client left (or spoke nonsense) before the handshake ended.
                Err(error) => Err(McpServeError::Io(format!(
                    "the MCP session did not start: {error}"
                ))),
            },
            // A signal before the handshake ended.
            () = &mut stop => Ok(()),
        };
        self.shutdown().await;
        result
    }

    /// Stops the background tasks and closes the artifact store.
    pub async fn shutdown(mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        let _ = self.store.close().await;
    }
}

/// What the progress forwarder is sent: a notification, or a call that has its result and
/// waits until every notification sent before this is out (a client stops counting progress
/// at the result).
enum Forward {
    Progress(Box<(Peer<RoleServer>, ProgressNotificationParam)>),
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// The event sink: `ToolCallProgress` events of batches that have a progress route go to
/// the forwarder, in order; reload events become notices.
fn progress_sink(
    routes: Routes,
    forward: mpsc::UnboundedSender<Forward>,
    notices: Notices,
) -> impl Fn(Event) + Send + Sync {
    move |event: Event| {
        let EventKind::ToolCallProgress(progress) = &event.kind else {
            if let Some(notice) = reload_notice(&event.kind) {
                notices(notice);
            }
            return;
        };
        let Some(batch) = &event.batch_id else { return };
        let Ok(mut routes) = routes.lock() else {
            return;
        };
        let Some(route) = routes.get_mut(batch.as_str()) else {
            return;
        };
        route.sent += 1;
        let mut param = ProgressNotificationParam::new(route.token.clone(), route.sent as f64);
        param.message = Some(progress.text.clone());
        let _ = forward.send(Forward::Progress(Box::new((route.peer.clone(), param))));
    }
}

async fn forward_progress(mut forward: mpsc::UnboundedReceiver<Forward>) {
    while let Some(message) = forward.recv().await {
        match message {
            // A client that went away misses its progress; its call is cancelled anyway.
            Forward::Progress(progress) => {
                let (peer, param) = *progress;
                let _ = peer.notify_progress(param).await;
            }
            Forward::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// After each reload that changes the contracts' tools, and whenever an MCP server says its
/// tool list changed (the tools a wildcard covers may have changed), tells every connected
/// client with `notifications/tools/list_changed`.
async fn announce_changes(gateway: Gateway, mut changes: tokio::sync::watch::Receiver<()>) {
    let shared = &gateway.shared;
    let contracts = |engine: &Engine| tools::contract_tools(&engine.snapshot()).collect::<Vec<_>>();
    let mut listed = contracts(&shared.engine);
    let mut servers = shared.engine.mcp_tool_changes();
    loop {
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                let now = contracts(&shared.engine);
                if now == listed {
                    continue;
                }
                listed = now;
            }
            changed = servers.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
        let peers: Vec<Peer<RoleServer>> = match shared.peers.lock() {
            Ok(mut peers) => {
                peers.retain(|peer| !peer.is_transport_closed());
                peers.clone()
            }
            Err(_) => Vec::new(),
        };
        for peer in peers {
            let _ = peer.notify_tool_list_changed().await;
        }
    }
}

/// Removes a batch's progress route when its call ends (or is dropped).
struct Unroute {
    routes: Routes,
    batch: String,
}

impl Drop for Unroute {
    fn drop(&mut self) {
        if let Ok(mut routes) = self.routes.lock() {
            routes.remove(&self.batch);
        }
    }
}

impl Gateway {
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> rmcp::model::CallToolResult {
        let shared = &self.shared;
        let batch_id = BatchId::generate();
        let input = Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall::new("mcp", request.name.as_ref(), input);
        // The class the scheduler would give the call (a reload between here and the batch's
        // start may change it; the batch then runs with the lock of the class it had).
        let class = {
            let snapshot = shared.engine.snapshot();
            let resolved = snapshot
                .lookup(&call.tool)
                .map(|tool| Resolved::new(&snapshot, &shared.modes, tool));
            crate::executor::plan::scheduling(resolved.as_ref())
        };
        let route = context.meta.get_progress_token().map(|token| {
            if let Ok(mut routes) = shared.routes.lock() {
                routes.insert(
                    batch_id.to_string(),
                    Route {
                        peer: context.peer.clone(),
                        token,
                        sent: 0,
                    },
                );
            }
            Unroute {
                routes: Arc::clone(&shared.routes),
                batch: batch_id.to_string(),
            }
        });
        let approver: Option<Arc<dyn ApprovalBroker>> = approve::Elicit::for_peer(&context.peer)
            .map(|broker| Arc::new(broker) as Arc<dyn ApprovalBroker>);
        let turn = Turn {
            modes: shared.modes.clone(),
            cancel: context.ct.clone(),
            approver,
        };
        let _held = tokio::select! {
            held = shared.lock.acquire(class) => held,
            () = context.ct.cancelled() => {
                return rmcp::model::CallToolResult::error(vec![rmcp::model::ContentBlock::text(
                    "the call was cancelled before it started",
                )]);
            }
        };
        let batch = Batch {
            id: Some(batch_id),
            calls: vec![call],
        };
        let outcome = shared.engine.execute_batch(batch, &turn).await;
        // The progress sent before the result goes out before it.
        if route.is_some() {
            let (done, flushed) = tokio::sync::oneshot::channel();
            if shared.forward.send(Forward::Flush(done)).is_ok() {
                let _ = flushed.await;
            }
        }
        match outcome {
            Ok(outcome) => result::call_result(&outcome),
            Err(error) => {
                rmcp::model::CallToolResult::error(vec![rmcp::model::ContentBlock::text(
                    error.to_string(),
                )])
            }
        }
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
        .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Tools governed by toolgate policy files: a call may be denied, need approval, \
             time out or be shortened to fit a budget; the result says which.",
        )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let engine = &self.shared.engine;
        Ok(ListToolsResult::with_all_items(
            tools::listed_tools(engine, &engine.snapshot()).await,
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        Ok(self.call(request, context).await.into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if let Ok(mut peers) = self.shared.peers.lock() {
            peers.retain(|peer| !peer.is_transport_closed());
            peers.push(context.peer);
        }
    }
}
