//! One supervised MCP server: started on first use, restarted with backoff after it dies or
//! fails to start, and shut down with the last handle or explicitly.
//!
//! Supervision is lazy: a dead server is noticed by the next call, which starts it again once
//! the backoff of the failures in a row has passed; until then calls fail at once with
//! [`McpError::Down`], which names the server and the last failure. Starts are serialised:
//! calls arriving while the server starts wait for that one start.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, JsonObject, ServerResult, Tool, ToolAnnotations,
};
use rmcp::service::{PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::client::{Client, ProgressFn, ProgressRoutes};
use super::stdio::StdioServer;
use crate::model::mcp::McpServer;
use crate::process::ProcessGroup;

/// How to reach a server, with everything read from the environment already filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its standard input and output.
    Stdio {
        /// Program and arguments.
        argv: Vec<String>,
        /// Environment variables passed through (all others are cleared).
        env_allow: Vec<String>,
        /// Environment variables set.
        env_set: Vec<(String, String)>,
        /// Working directory.
        cwd: PathBuf,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint.
        url: String,
        /// Request headers, rendered.
        headers: Vec<(String, String)>,
    },
}

/// A server to supervise: its name, transport and entry (for timeouts and backoff).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSpec {
    /// The name under `mcp_servers`.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// The entry as written (start timeout, restart policy, annotations).
    pub entry: McpServer,
}

/// Why an MCP request did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The server could not be started.
    #[error("MCP server `{server}` could not be started: {reason}")]
    Start {
        /// The server.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// The server is down and waits for its backoff (or is never restarted).
    #[error("MCP server `{server}` is down ({reason}); {retry}")]
    Down {
        /// The server.
        server: String,
        /// The last failure.
        reason: String,
        /// When it is tried again, in words.
        retry: String,
    },
    /// The request failed on the wire or the server answered with an error.
    #[error("MCP server `{server}`: {source}")]
    Request {
        /// The server.
        server: String,
        /// The SDK's error.
        #[source]
        source: ServiceError,
    },
    /// The connection was closed from this side under the request (a stdio server sent a
    /// message over the size limit).
    #[error("MCP server `{server}`: {reason}; it is started again by the next call")]
    Broken {
        /// The server.
        server: String,
        /// Why the connection was closed.
        reason: String,
    },
    /// The call was cancelled; the server was told with `notifications/cancelled`.
    #[error("cancelled")]
    Cancelled,
    /// The engine shut the server down.
    #[error("MCP server `{0}` was shut down")]
    ShutDown(String),
}

struct Connection {
    /// Which start of the server this is (1 for the first).
    serial: u64,
    service: RunningService<RoleClient, Client>,
    progress: Arc<ProgressRoutes>,
    /// Why a stdio server's connection was closed from this side, once it was.
    broken: Arc<std::sync::OnceLock<String>>,
    /// The process group a stdio server leads, with the processes that left it: killed when
    /// the connection goes (shut down, replaced after the server died, or dropped with the
    /// last call that used it), so that the processes the server started do not outlive
    /// it. Declared after `service`, so dropped after it: the server's process is closed (or
    /// killed) first, then whatever is left.
    _group: Option<ProcessGroup>,
}

enum State {
    /// Not started yet, or shut down after being idle.
    Idle,
    Running(Arc<Connection>),
    Down {
        failures: u32,
        reason: String,
        /// `None`: never restarted.
        retry_at: Option<Instant>,
    },
    ShutDown,
}

/// A supervised server. Cheap to share; the connection is closed when the last handle goes
/// (or at [`Server::shutdown`]).
pub struct Server {
    spec: ServerSpec,
    state: tokio::sync::Mutex<State>,
    tools_changed: Arc<AtomicU64>,
    changes: Arc<tokio::sync::watch::Sender<u64>>,
    /// The annotations of its tools as of its last listing (see [`Server::learn_hints`]).
    hints: std::sync::Mutex<Option<LearnedHints>>,
    /// Counts the starts.
    starts: AtomicU64,
}

/// The tool annotations a server listed, by tool name.
pub type Hints = Arc<std::collections::HashMap<String, ToolAnnotations>>;

/// Hints with what they were learned from: the connection (a restarted server may list
/// other tools) and the count of list changes at the time.
struct LearnedHints {
    connection: u64,
    changes: u64,
    hints: Hints,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server that starts on first use.
    pub fn new(spec: ServerSpec) -> Self {
        Self::with_changes(spec, Arc::new(tokio::sync::watch::Sender::new(0)))
    }

    /// A server that starts on first use and counts its tool list changes in `changes` too
    /// (shared by the servers of a pool).
    pub fn with_changes(spec: ServerSpec, changes: Arc<tokio::sync::watch::Sender<u64>>) -> Self {
        Self {
            spec,
            state: tokio::sync::Mutex::new(State::Idle),
            tools_changed: Arc::new(AtomicU64::new(0)),
            changes,
            hints: std::sync::Mutex::new(None),
            starts: AtomicU64::new(0),
        }
    }

    /// Its spec.
    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    /// How many `notifications/tools/list_changed` it has sent.
    pub fn tools_changed(&self) -> u64 {
        self.tools_changed
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Calls tool `name` with `arguments`. Progress notifications go to `progress`; when
    /// `cancel` fires first, the server is sent `notifications/cancelled` for the request and
    /// the call ends with [`McpError::Cancelled`].
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        progress: ProgressFn,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, McpError> {
        let connection = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(McpError::Cancelled),
            connection = self.connection() => connection?,
        };
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = arguments;
        let peer = connection.service.peer();
        let handle = peer
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .map_err(|source| self.failed(&connection, source))?;
        // Clone before the handle is consumed by `await_response`.
        let id = handle.id.clone();
        // The SDK hands each notification to a task of its own, which may run after the
        // response that followed it has arrived: a server that reports progress is given a
        // moment after the response for the last of it (`LATE_PROGRESS`).
        let reported = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = Arc::clone(&reported);
        let progress: ProgressFn = Arc::new(move |text| {
            seen.store(true, std::sync::atomic::Ordering::Relaxed);
            progress(text);
        });
        let _route = connection
            .progress
            .route(handle.progress_token.clone(), progress);
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                // The SDK sends the notification itself for requests whose future is
                // dropped; this request was sent through a handle, so say it here.
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(
                        Some(id),
                        Some("cancelled by toolgate (timeout or interrupt)".to_owned()),
                    ))
                    .await;
                return Err(McpError::Cancelled);
            }
            response = handle.await_response() => response,
        };
        if reported.load(std::sync::atomic::Ordering::Relaxed) {
            tokio::time::sleep(LATE_PROGRESS).await;
        }
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                if matches!(error, ServiceError::TransportClosed) {
                    self.forget(&connection).await;
                }
                return Err(self.failed(&connection, error));
            }
        };
        match response {
            ServerResult::CallToolResult(result) => Ok(result),
            _ => Err(self.request_error(ServiceError::UnexpectedResponse)),
        }
    }

    /// Forgets a connection that closed under a call, so that the next call starts the
    /// server again even before the SDK's service loop has wound down.
    async fn forget(&self, connection: &Arc<Connection>) {
        let mut state = self.state.lock().await;
        if let State::Running(current) = &*state
            && Arc::ptr_eq(current, connection)
        {
            tracing::warn!(server = %self.spec.name, "mcp server connection closed");
            *state = State::Idle;
        }
    }

    /// The tools the server lists (every page).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, McpError> {
        let connection = self.connection().await?;
        self.listed(&connection).await
    }

    /// The tools `connection` lists, within the server's `start_timeout`: a server that never
    /// answers `tools/list` held every call waiting on its tool list (and `mcp import`).
    async fn listed(&self, connection: &Connection) -> Result<Vec<Tool>, McpError> {
        let timeout = self.spec.entry.start_timeout();
        match tokio::time::timeout(timeout, connection.service.peer().list_all_tools()).await {
            Ok(listed) => listed.map_err(|source| self.failed(connection, source)),
            Err(_) => Err(self.request_error(ServiceError::Timeout { timeout })),
        }
    }

    /// The annotations of the server's tools, listed now when the ones known are out of date
    /// (never listed, listed by an earlier process of the server, or listed before a
    /// `notifications/tools/list_changed`). Starts the server when it is not running.
    pub async fn learn_hints(&self) -> Result<Hints, McpError> {
        let connection = self.connection().await?;
        let id = connection.serial;
        let changes = self.tools_changed();
        if let Some(known) = self.hints_lock().as_ref()
            && known.connection == id
            && known.changes == changes
        {
            return Ok(Arc::clone(&known.hints));
        }
        let tools = self.listed(&connection).await?;
        let hints: Hints = Arc::new(
            tools
                .into_iter()
                .filter_map(|tool| Some((tool.name.to_string(), tool.annotations?)))
                .collect(),
        );
        *self.hints_lock() = Some(LearnedHints {
            connection: id,
            changes,
            hints: Arc::clone(&hints),
        });
        Ok(hints)
    }

    /// The annotations last learned, if any (possibly out of date).
    pub fn known_hints(&self) -> Option<Hints> {
        self.hints_lock()
            .as_ref()
            .map(|known| Arc::clone(&known.hints))
    }

    /// Whether the annotations last learned are those of the running connection, with no
    /// list change since (without starting anything).
    pub async fn hints_current(&self) -> bool {
        let state = self.state.lock().await;
        let State::Running(connection) = &*state else {
            return false;
        };
        let id = connection.serial;
        self.hints_lock()
            .as_ref()
            .is_some_and(|known| known.connection == id && known.changes == self.tools_changed())
    }

    fn hints_lock(&self) -> std::sync::MutexGuard<'_, Option<LearnedHints>> {
        self.hints
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Closes the connection (a child process gets its standard input closed, then SIGTERM,
    /// then SIGKILL); later calls fail with [`McpError::ShutDown`].
    pub async fn shutdown(&self) {
        let previous = std::mem::replace(&mut *self.state.lock().await, State::ShutDown);
        if let State::Running(connection) = previous
            && let Ok(connection) = Arc::try_unwrap(connection)
        {
            let mut service = connection.service;
            let _ = service.close_with_timeout(SHUTDOWN_WAIT).await;
        }
    }

    /// The error of a request on `connection`: the reason the connection was closed from
    /// this side when it was, else the SDK's error.
    fn failed(&self, connection: &Connection, source: ServiceError) -> McpError {
        match (&source, connection.broken.get()) {
            (ServiceError::TransportClosed, Some(reason)) => McpError::Broken {
                server: self.spec.name.clone(),
                reason: reason.clone(),
            },
            _ => self.request_error(source),
        }
    }

    fn request_error(&self, source: ServiceError) -> McpError {
        McpError::Request {
            server: self.spec.name.clone(),
            source,
        }
    }

    /// The live connection: the running one, or a new one when the server is idle or its
    /// backoff has passed.
    async fn connection(&self) -> Result<Arc<Connection>, McpError> {
        let mut state = self.state.lock().await;
        let failures = match &*state {
            State::Running(connection)
                if !connection.service.is_closed()
                    && !connection.service.peer().is_transport_closed() =>
            {
                return Ok(Arc::clone(connection));
            }
            State::Running(_) => {
                // It died since the last call: start it again now; only a failed start
                // waits for a backoff.
                tracing::warn!(server = %self.spec.name, "mcp server connection closed");
                0
            }
            State::Idle => 0,
            State::Down {
                failures,
                retry_at: Some(at),
                ..
            } if Instant::now() >= *at => *failures,
            State::Down { .. } => return Err(self.down(&state)),
            State::ShutDown => return Err(McpError::ShutDown(self.spec.name.clone())),
        };
        match self.start().await {
            Ok(connection) => {
                let connection = Arc::new(connection);
                *state = State::Running(Arc::clone(&connection));
                Ok(connection)
            }
            Err(reason) => {
                self.fail(&mut state, failures + 1, reason.clone());
                Err(McpError::Start {
                    server: self.spec.name.clone(),
                    reason,
                })
            }
        }
    }

    fn fail(&self, state: &mut State, failures: u32, reason: String) {
        let retry_at = self
            .spec
            .entry
            .backoff_after(failures)
            .map(|wait| Instant::now() + wait);
        tracing::warn!(server = %self.spec.name, failures, %reason, "mcp server failed");
        *state = State::Down {
            failures,
            reason,
            retry_at,
        };
    }

    fn down(&self, state: &State) -> McpError {
        let State::Down {
            reason, retry_at, ..
        } = state
        else {
            return McpError::ShutDown(self.spec.name.clone());
        };
        let retry = match retry_at {
            Some(at) => format!(
                "it is started again by the first call after {}",
                humantime::format_duration(round_up(at.saturating_duration_since(Instant::now())))
            ),
            None => {
                "its restart policy is `never`: reload the policy set to start it again".to_owned()
            }
        };
        McpError::Down {
            server: self.spec.name.clone(),
            reason: reason.clone(),
            retry,
        }
    }

    /// Starts the server and runs the `initialize` handshake within the start timeout.
    async fn start(&self) -> Result<Connection, String> {
        let progress = Arc::new(ProgressRoutes::default());
        let client = Client {
            progress: Arc::clone(&progress),
            tools_changed: Arc::clone(&self.tools_changed),
            changes: Arc::clone(&self.changes),
        };
        let timeout = self.spec.entry.start_timeout();
        // A stdio server is spawned here, its group registered while no sweep for orphans
        // runs (see `crate::process`).
        let mut broken = Arc::default();
        let (stdio, group) = match &self.spec.transport {
            Transport::Stdio {
                argv,
                env_allow,
                env_set,
                cwd,
            } => {
                let mut spawning = crate::process::spawning();
                let transport = StdioServer::spawn(argv, env_allow, env_set, cwd)?;
                let group = transport
                    .id()
                    .and_then(|pid| ProcessGroup::serving(pid, &mut spawning));
                broken = transport.broken();
                (Some(transport), group)
            }
            Transport::Http { .. } => (None, None),
        };
        let started = async {
            match (&self.spec.transport, stdio) {
                (Transport::Stdio { .. }, Some(transport)) => client
                    .serve(transport)
                    .await
                    .map_err(|error| error.to_string()),
                (Transport::Stdio { .. }, None) => Err("the server was not started".to_owned()),
                (Transport::Http { url, headers }, _) => {
                    let mut map = std::collections::HashMap::new();
                    for (name, value) in headers {
                        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                            .map_err(|_| format!("`{name}` is not a valid header name"))?;
                        let value =
                            reqwest::header::HeaderValue::from_str(value).map_err(|_| {
                                format!("header `{name}` has a value a header cannot carry")
                            })?;
                        map.insert(name, value);
                    }
                    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .custom_headers(map);
                    let transport = StreamableHttpClientTransport::from_config(config);
                    client
                        .serve(transport)
                        .await
                        .map_err(|error| error.to_string())
                }
            }
        };
        let service = match tokio::time::timeout(timeout, started).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(format!(
                    "it did not answer `initialize` within {} (`start_timeout`)",
                    humantime::format_duration(timeout)
                ));
            }
        };
        tracing::debug!(server = %self.spec.name, "mcp server started");
        Ok(Connection {
            serial: self
                .starts
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1,
            service,
            progress,
            broken,
            _group: group,
        })
    }
}

/// How long a shut-down server may take to exit after its input is closed.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// How long a call whose server reported progress waits after the response for progress
/// notifications the SDK is still handing over (each runs in a task of its own).
const LATE_PROGRESS: Duration = Duration::from_millis(20);

/// Durations shown to users in whole seconds (at least one).
fn round_up(duration: Duration) -> Duration {
    Duration::from_secs(duration.as_secs() + u64::from(duration.subsec_nanos() > 0))
        .max(Duration::from_secs(1))
}
