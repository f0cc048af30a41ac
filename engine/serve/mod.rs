//! `toolgate serve --stdio`: JSON-RPC 2.0 for agent hosts, one JSON object per line, with the
//! policies hot-reloaded while it runs.
//!
//! Client → server requests: `initialize` → `{version, protocol, generation, tools, modes}`;
//! `executeBatch {batch: {calls: [{id, tool, input}], modes?, id?}}` → `{batch_id,
//! generation, results, turn_stopped, …}` (results as in `run`'s `BatchFinalized`); `cancel
//! {batch_id}` or `cancel {all: true}` → `{cancelled: [...]}`; `plan
//! {batch}`; `explain {tool}`; `shutdown` → `{}` (running batches are cancelled, then the
//! server exits). Several batches may be in flight at once; responses come when each ends.
//!
//! Server → client: `event` notifications carrying every engine event (including
//! `PolicyReloaded` / `PolicyReloadFailed`), and `permission/request` requests (params: the
//! approval request with the exact input) whose response `{decision: "allow"|"deny",
//! reason?}` answers it; the wait is bounded by `engine.approval_timeout`.
//!
//! Errors follow JSON-RPC: parse error -32700 (with `id: null`; also for a line that is not
//! UTF-8 or longer than 8 MiB), invalid request -32600, unknown method -32601, invalid
//! params -32602 (an unknown field, a missing one or a wrong type, named in the message; the
//! method does nothing), internal error -32603. A notification (no `id`) is never answered, nor is
//! a response (late, unknown or not ours: it is ignored). The server survives any bad line.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalAnswer, ApprovalBroker, ApprovalRequest};
use crate::events::Event;
use crate::executor::{Batch, Engine, Turn, artifact_store_for};
use crate::model::ModeName;
use crate::snapshot::reload::Reloader;
use crate::snapshot::{LoadOptions, Snapshot, load};

pub mod mcp;
mod outbox;
mod params;

pub use outbox::Outbox;

/// The longest line accepted; longer lines are answered with a parse error and skipped. As a
/// batch file and a hook payload: a line is parsed whole, and its parse takes some twenty
/// times its size (a 59 MiB line of small calls ran out of memory).
const MAX_LINE: usize = 8 * 1024 * 1024;

/// How long the answers of a server stopped by a signal wait for a client that does not read.
const FLUSH_AFTER_SIGNAL: Duration = Duration::from_secs(5);

/// JSON-RPC error codes.
mod code {
    pub const PARSE: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL: i64 = -32603;
    /// `engine.serve_batches` batches are running: the request did nothing.
    pub const BUSY: i64 = -32001;
}

/// How to serve.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// What to load: the policy roots and the workspace.
    pub load: LoadOptions,
    /// Watch the roots and hot-reload (default on).
    pub watch: bool,
    /// Debounce window of the watcher.
    pub debounce: Duration,
}

/// Why the server could not start.
#[derive(Debug)]
pub enum ServeError {
    /// The policies do not load.
    Policies(Vec<crate::diagnostics::Diagnostic>),
    /// Reading or writing failed.
    Io(std::io::Error),
}

type Outgoing = Arc<Outbox>;
type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<ApprovalAnswer>>>>;

fn respond(out: &Outgoing, id: Value, result: Value) {
    out.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
}

fn fail(out: &Outgoing, id: Value, code: i64, message: impl Into<String>) {
    out.send(
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}}),
    );
}

/// Answers approval requests by asking the client.
struct RpcApprover {
    out: Outgoing,
    pending: Pending,
    next: AtomicU64,
}

/// Removes a withdrawn request (its future was dropped: a hook answered first, the call was
/// cancelled, or the approval timed out), so a late answer is ignored.
struct Withdraw {
    pending: Pending,
    id: String,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(&self.id);
        }
    }
}

impl ApprovalBroker for RpcApprover {
    fn request(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        let id = format!(
            "permission-{}",
            self.next.fetch_add(1, Ordering::SeqCst) + 1
        );
        let (sender, receiver) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id.clone(), sender);
        }
        let params = serde_json::to_value(&request).unwrap_or(Value::Null);
        self.out.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "permission/request", "params": params}),
        );
        let guard = Withdraw {
            pending: Arc::clone(&self.pending),
            id,
        };
        Box::pin(async move {
            let _guard = guard;
            receiver.await.unwrap_or(ApprovalAnswer::Deny {
                reason: Some("the client went away".into()),
            })
        })
    }
}

/// The client's answer to a `permission/request`: an approval only when it is a well-formed
/// result saying `allow` — an error response (also one that holds a `result` too, which
/// JSON-RPC forbids) or a result with an unknown field or a value of the wrong type denies.
fn answer_from(response: &Value) -> ApprovalAnswer {
    let deny = |why: String| ApprovalAnswer::Deny { reason: Some(why) };
    if let Some(error) = response.get("error") {
        return deny(format!("the client answered with an error: {error}"));
    }
    let result = response.get("result").cloned().unwrap_or(Value::Null);
    let result = match crate::load::json::deserialize_as::<params::ApprovalResult>(
        &result,
        "the client's answer cannot be read",
    ) {
        Ok(result) => result,
        Err(problem) => return deny(problem),
    };
    match (result.decision, result.feedback) {
        (params::ApprovalDecision::Allow, None) => ApprovalAnswer::Allow {
            reason: result.reason,
        },
        (params::ApprovalDecision::Allow, Some(_)) => deny(
            "the client's answer allows and gives `feedback`, which only a denial has".to_owned(),
        ),
        (params::ApprovalDecision::Deny, Some(feedback)) => {
            ApprovalAnswer::DenyWithFeedback { feedback }
        }
        (params::ApprovalDecision::Deny, None) => ApprovalAnswer::Deny {
            reason: result.reason,
        },
    }
}

/// A batch as `executeBatch` and `plan` take it.
fn batch_param(params: &Value) -> Result<(Batch, Vec<ModeName>), String> {
    params::parse::<params::BatchParams>(params).and_then(params::BatchParams::into_batch)
}

struct Server {
    engine: Engine,
    out: Outgoing,
    approver: Arc<RpcApprover>,
    running: Arc<Mutex<HashMap<String, CancellationToken>>>,
    tasks: tokio::task::JoinSet<()>,
    /// Cancelled when a signal stops the server: plans still running answer that, unfinished.
    stopping: CancellationToken,
}

/// Whether a message is a response (to one of our `permission/request`s): an object with a
/// `result` or an `error` and no `method`.
fn is_response(message: &Value) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
}

impl Server {
    /// Answers the pending `permission/request` with the id `id` (ignored when none is
    /// pending under it: a late answer, or one to nothing asked).
    fn settle(&self, id: Option<&Value>, answer: ApprovalAnswer) {
        let waiting = match id {
            Some(Value::String(response_id)) => self
                .approver
                .pending
                .lock()
                .ok()
                .and_then(|mut p| p.remove(response_id)),
            _ => None,
        };
        if let Some(sender) = waiting {
            let _ = sender.send(answer);
        }
    }

    /// Handles one line; returns `false` when the client asked to shut down.
    fn handle(&mut self, line: &str) -> bool {
        // Parsed strictly: a key given twice (`"tool"` twice in params) is refused, where
        // `serde_json` alone keeps the last one silently.
        let message: Value = match crate::load::json::parse_text("<request>", line) {
            Ok(message) => message,
            Err(problem) => {
                // An answer to one of our `permission/request`s that cannot be read denies
                // (the call would otherwise wait for ever); a response is never answered.
                if let Some(response) = serde_json::from_str::<Value>(line).ok().filter(is_response)
                {
                    self.settle(
                        response.get("id"),
                        ApprovalAnswer::Deny {
                            reason: Some(format!(
                                "the client's answer cannot be read: {}",
                                problem.message
                            )),
                        },
                    );
                    return true;
                }
                let twice = problem.code == crate::diagnostics::Code::SyntaxDuplicateKey;
                let (code, what) = if twice {
                    (code::INVALID_REQUEST, "invalid request")
                } else {
                    (code::PARSE, "parse error")
                };
                // A request with a key given twice is JSON: it is answered at its id,
                // when that is one and not the key given twice.
                let id = twice
                    .then(|| serde_json::from_str::<Value>(line).ok())
                    .flatten()
                    .and_then(|message| message.get("id").cloned())
                    .filter(|id| id.is_string() || id.is_i64() || id.is_u64())
                    .filter(|_| !problem.message.contains("`id`"))
                    .unwrap_or(Value::Null);
                let place = problem
                    .location
                    .as_ref()
                    .map(|l| format!(" (at column {})", l.span.column))
                    .unwrap_or_default();
                fail(
                    &self.out,
                    id,
                    code,
                    format!("{what}: {}{place}", problem.message),
                );
                return true;
            }
        };
        let Value::Object(map) = &message else {
            let text = if message.is_array() {
                "JSON-RPC batch arrays are not supported: send one request per line"
            } else {
                "a request must be a JSON object"
            };
            fail(&self.out, Value::Null, code::INVALID_REQUEST, text);
            return true;
        };
        let id = map.get("id").cloned();
        if is_response(&message) {
            // A response to one of our `permission/request`s (their ids are strings); a late
            // or unknown one is ignored: a response is never answered.
            let answer = if map.get("jsonrpc") == Some(&json!("2.0")) {
                answer_from(&message)
            } else {
                ApprovalAnswer::Deny {
                    reason: Some(
                        "the client's answer cannot be read: `jsonrpc` must be \"2.0\"".to_owned(),
                    ),
                }
            };
            self.settle(id.as_ref(), answer);
            return true;
        }
        if map.get("jsonrpc") != Some(&json!("2.0")) {
            fail(
                &self.out,
                id.unwrap_or(Value::Null),
                code::INVALID_REQUEST,
                "`jsonrpc` must be \"2.0\"",
            );
            return true;
        }
        let Some(method) = map.get("method").and_then(Value::as_str) else {
            fail(
                &self.out,
                id.unwrap_or(Value::Null),
                code::INVALID_REQUEST,
                "a request needs a string `method`",
            );
            return true;
        };
        // An id that is not an integer JSON numbers hold exactly (`1e+23`, `1.5`) could not
        // be echoed as sent.
        if id
            .as_ref()
            .is_some_and(|id| !(id.is_string() || id.is_i64() || id.is_u64() || id.is_null()))
        {
            fail(
                &self.out,
                Value::Null,
                code::INVALID_REQUEST,
                "`id` must be a string, an integer (at most 64 bits) or null",
            );
            return true;
        }
        let params = map.get("params").cloned().unwrap_or(json!({}));
        if !params.is_object() {
            if let Some(id) = id {
                fail(
                    &self.out,
                    id,
                    code::INVALID_PARAMS,
                    "`params` must be an object",
                );
            }
            return true;
        }
        // A notification (no id) gets no response, whatever happens.
        let reply = id.clone();
        match method {
            "initialize" => {
                let answer = params::parse::<params::NoParams>(&params)
                    .map(|_| initialize(&self.engine.snapshot()))
                    .map_err(|e| (code::INVALID_PARAMS, e));
                self.reply(reply, answer);
            }
            "executeBatch" => self.execute(reply, &params),
            "cancel" => {
                let target = match params::parse::<params::CancelParams>(&params)
                    .and_then(params::CancelParams::target)
                {
                    Ok(target) => target,
                    Err(message) => {
                        self.reply(reply, Err((code::INVALID_PARAMS, message)));
                        return true;
                    }
                };
                let mut cancelled = Vec::new();
                if let Ok(running) = self.running.lock() {
                    for (batch, token) in running.iter() {
                        let wanted = match &target {
                            params::CancelTarget::All => true,
                            params::CancelTarget::One(id) => id == batch,
                        };
                        if wanted {
                            token.cancel();
                            cancelled.push(batch.clone());
                        }
                    }
                }
                cancelled.sort();
                self.reply(reply, Ok(json!({"cancelled": cancelled})));
            }
            "plan" => self.plan(reply, &params),
            "explain" => {
                let explained = match params::parse::<params::ExplainParams>(&params) {
                    Err(message) => Err((code::INVALID_PARAMS, message)),
                    Ok(params::ExplainParams { tool }) => {
                        match crate::report::explain::explain_in(&self.engine.snapshot(), &tool) {
                            Ok(report) => serde_json::to_value(report)
                                .map_err(|e| (code::INTERNAL, e.to_string())),
                            Err(error) => Err((
                                code::INVALID_PARAMS,
                                error.diagnostics().first().map_or_else(String::new, |d| {
                                    format!(
                                        "{}{}",
                                        d.message,
                                        d.help
                                            .as_deref()
                                            .map(|h| format!(" ({h})"))
                                            .unwrap_or_default()
                                    )
                                }),
                            )),
                        }
                    }
                };
                self.reply(reply, explained);
            }
            "shutdown" => {
                if let Err(message) = params::parse::<params::NoParams>(&params) {
                    self.reply(reply, Err((code::INVALID_PARAMS, message)));
                    return true;
                }
                self.reply(reply, Ok(json!({})));
                return false;
            }
            other => {
                if let Some(id) = reply {
                    fail(
                        &self.out,
                        id,
                        code::METHOD_NOT_FOUND,
                        format!("unknown method `{other}`"),
                    );
                }
            }
        }
        true
    }

    fn reply(&self, id: Option<Value>, result: Result<Value, (i64, String)>) {
        let Some(id) = id else { return };
        match result {
            Ok(value) => respond(&self.out, id, value),
            Err((code, message)) => fail(&self.out, id, code, message),
        }
    }

    /// Plans a batch off the request loop: a batch of thousands of calls takes seconds, while
    /// the loop goes on reading (approval answers for running batches, `cancel`, a signal).
    /// A server a signal stops does not wait for it: the plan answers that it stopped.
    fn plan(&mut self, id: Option<Value>, params: &Value) {
        let (batch, modes) = match batch_param(params) {
            Ok(found) => found,
            Err(message) => return self.reply(id, Err((code::INVALID_PARAMS, message))),
        };
        let engine = self.engine.clone();
        let out = self.out.clone();
        let stopping = self.stopping.clone();
        self.tasks.spawn(async move {
            let planning = tokio::task::spawn_blocking(move || {
                let plan = engine
                    .plan(&batch, &modes)
                    .map_err(|e| (code::INVALID_PARAMS, e.to_string()))?;
                serde_json::to_value(plan).map_err(|e| (code::INTERNAL, e.to_string()))
            });
            let planned = tokio::select! {
                biased;
                () = stopping.cancelled() => Err((
                    code::INTERNAL,
                    "the server stopped before the plan was done".to_owned(),
                )),
                joined = planning => joined
                    .unwrap_or_else(|error| Err((code::INTERNAL, format!("planning failed: {error}")))),
            };
            let Some(id) = id else { return };
            match planned {
                Ok(value) => respond(&out, id, value),
                Err((code, message)) => fail(&out, id, code, message),
            }
        });
    }

    fn execute(&mut self, id: Option<Value>, params: &Value) {
        let (mut batch, modes) = match batch_param(params) {
            Ok(found) => found,
            Err(message) => return self.reply(id, Err((code::INVALID_PARAMS, message))),
        };
        let batch_id = batch
            .id
            .clone()
            .unwrap_or_else(crate::model::BatchId::generate);
        batch.id = Some(batch_id.clone());
        let cancel = CancellationToken::new();
        let most = self.engine.snapshot().engine.serve_batches;
        if let Ok(mut running) = self.running.lock() {
            if running.len() >= most {
                drop(running);
                return self.reply(
                    id,
                    Err((
                        code::BUSY,
                        format!(
                            "server busy: {most} batches are running (engine.serve_batches); send it again once one has answered, or cancel one"
                        ),
                    )),
                );
            }
            if running.contains_key(batch_id.as_str()) {
                drop(running);
                return self.reply(
                    id,
                    Err((
                        code::INVALID_PARAMS,
                        format!("batch `{batch_id}` is already running"),
                    )),
                );
            }
            running.insert(batch_id.to_string(), cancel.clone());
        }
        let engine = self.engine.clone();
        let out = self.out.clone();
        let running = Arc::clone(&self.running);
        let approver: Arc<dyn ApprovalBroker> = self.approver.clone();
        self.tasks.spawn(async move {
            let turn = Turn {
                modes,
                cancel,
                approver: Some(approver),
            };
            let outcome = engine.execute_batch(batch, &turn).await;
            if let Ok(mut running) = running.lock() {
                running.remove(batch_id.as_str());
            }
            let Some(id) = id else { return };
            match outcome {
                Ok(outcome) => {
                    let mut result = crate::report::finalized_json(&outcome);
                    if let Value::Object(map) = &mut result {
                        map.shift_remove("type");
                    }
                    respond(&out, id, result);
                }
                Err(error) => fail(&out, id, code::INVALID_PARAMS, error.to_string()),
            }
        });
    }
}

/// One line of input.
enum Line {
    /// A line, without its newline.
    Text(String),
    /// A line longer than the limit (skipped up to its newline).
    TooLong,
    /// A line that is not UTF-8.
    NotUtf8(std::string::FromUtf8Error),
}

/// Splits input into lines of at most `max` bytes. Unlike a framed codec, a line over the
/// limit or with invalid UTF-8 is reported and skipped, and reading goes on with the next
/// line: a bad line never ends the session.
struct LineReader<R> {
    reader: BufReader<R>,
    max: usize,
    // INVARIANT: `buf` and `too_long` hold the line read so far; they are only changed
    // between awaits, so dropping `next()` while it waits (as `select!` does) loses nothing.
    buf: Vec<u8>,
    too_long: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    fn new(reader: R, max: usize) -> Self {
        Self {
            reader: BufReader::new(reader),
            max,
            buf: Vec::new(),
            too_long: false,
        }
    }

    /// The next line; `None` at the end of input. Cancel-safe.
    async fn next(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                if self.buf.is_empty() && !self.too_long {
                    return Ok(None);
                }
                return Ok(Some(self.take()));
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let end = newline.unwrap_or(available.len());
            if !self.too_long {
                if self.buf.len() + end > self.max {
                    self.too_long = true;
                    self.buf = Vec::new();
                } else {
                    self.buf.extend_from_slice(&available[..end]);
                }
            }
            match newline {
                Some(at) => {
                    self.reader.consume(at + 1);
                    return Ok(Some(self.take()));
                }
                None => self.reader.consume(end),
            }
        }
    }

    fn take(&mut self) -> Line {
        let bytes = std::mem::take(&mut self.buf);
        if std::mem::take(&mut self.too_long) {
            return Line::TooLong;
        }
        match String::from_utf8(bytes) {
            Ok(text) => Line::Text(text),
            Err(error) => Line::NotUtf8(error),
        }
    }
}

fn initialize(snapshot: &Snapshot) -> Value {
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "protocol": "toolgate/1",
        "generation": snapshot.generation,
        "tools": snapshot.tools.keys().map(|t| t.as_str()).collect::<Vec<_>>(),
        "modes": snapshot.modes.keys().map(|m| m.as_str()).collect::<Vec<_>>(),
    })
}

/// Serves JSON-RPC over a reader and a writer (stdin and stdout for `serve --stdio`).
pub async fn serve<R, W>(reader: R, writer: W, options: ServeOptions) -> Result<(), ServeError>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_until(reader, writer, options, std::future::pending()).await
}

/// Serves like [`serve`] until `stop` completes too (the binary passes SIGINT, SIGTERM and
/// SIGHUP): then, as at `shutdown`, running batches are cancelled, each answers with its
/// calls `cancelled`, and the server returns `Ok`.
pub async fn serve_until<R, W, S>(
    reader: R,
    mut writer: W,
    options: ServeOptions,
    stop: S,
) -> Result<(), ServeError>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
    S: std::future::Future<Output = ()> + Send,
{
    let stop = std::pin::pin!(stop);
    let mut stop = stop;
    let load_options = options.load.clone();
    let loaded = load(&load_options, 1);
    let Some(snapshot) = loaded.snapshot else {
        return Err(ServeError::Policies(loaded.diagnostics));
    };
    let out: Outgoing = Arc::new(Outbox::new(snapshot.engine.serve_queue));
    let outgoing = Arc::clone(&out);
    let writer_task = tokio::spawn(async move {
        while let Some(message) = outgoing.next().await {
            let mut line = message.to_string();
            line.push('\n');
            if writer.write_all(line.as_bytes()).await.is_err() || writer.flush().await.is_err() {
                // The client is gone: stop queueing and release every waiting sender.
                outgoing.close();
                break;
            }
        }
    });
    let events = out.clone();
    let sink: Arc<dyn crate::events::EventSink> = Arc::new(move |event: Event| {
        if let Ok(params) = serde_json::to_value(&event) {
            let progress = params["type"] == "ToolCallProgress";
            let message = json!({"jsonrpc": "2.0", "method": "event", "params": params});
            if progress {
                let id = |key: &str| message["params"][key].as_str().unwrap_or("").to_owned();
                let (batch_id, call_id) = (id("batch_id"), id("call_id"));
                events.send_progress(&batch_id, &call_id, message);
            } else {
                events.send(message);
            }
        }
    });
    let store = Arc::new(artifact_store_for(&snapshot));
    let engine = Engine::builder(Arc::clone(&snapshot))
        .sink(Arc::clone(&sink))
        .artifact_store(store.clone())
        .build();
    let installer = engine.clone();
    let reloader = Arc::new(Reloader::new(
        load_options,
        Some(snapshot),
        Box::new(move |next| installer.install(next)),
        Arc::clone(&sink),
    ));
    let watch_handle = if options.watch {
        let watcher = Arc::clone(&reloader);
        let debounce = options.debounce;
        let started = tokio::task::spawn_blocking(move || watcher.watch(debounce))
            .await
            .unwrap_or_else(|error| Err(notify::Error::generic(&error.to_string())));
        match started {
            Ok(handle) => Some(handle),
            Err(error) => {
                let message = format!("policy files are not watched: {error}");
                out.send(json!({"jsonrpc": "2.0", "method": "log", "params": {"level": "warning", "message": message}}));
                None
            }
        }
    } else {
        None
    };
    let mut server = Server {
        engine,
        out: out.clone(),
        approver: Arc::new(RpcApprover {
            out: out.clone(),
            pending: Arc::default(),
            next: AtomicU64::new(0),
        }),
        running: Arc::default(),
        tasks: tokio::task::JoinSet::new(),
        stopping: CancellationToken::new(),
    };
    let mut lines = LineReader::new(reader, MAX_LINE);
    let mut signalled = false;
    let result = loop {
        tokio::select! {
            // Reap finished batch tasks so the set does not grow with the session.
            Some(_) = server.tasks.join_next(), if !server.tasks.is_empty() => {}
            () = &mut stop => {
                signalled = true;
                break Ok(());
            }
            // A client that does not read is not read either: its queue stays bounded.
            line = async { out.room().await; lines.next().await } => match line {
                Ok(None) => break Ok(()),
                Ok(Some(Line::Text(line))) => {
                    if line.trim().is_empty() {
                        continue;
                    }
                    if !server.handle(&line) {
                        break Ok(());
                    }
                }
                Ok(Some(Line::TooLong)) => {
                    fail(&out, Value::Null, code::PARSE, format!("parse error: the line is longer than {MAX_LINE} bytes"));
                }
                Ok(Some(Line::NotUtf8(error))) => {
                    fail(&out, Value::Null, code::PARSE, format!("parse error: the line is not UTF-8 ({error})"));
                }
                Err(error) => break Err(ServeError::Io(error)),
            },
        }
    };
    // Shutdown or end of input: cancel what runs, let each batch answer, then stop writing.
    // Plans are finished and answered, unless a signal stops the server.
    if signalled {
        server.stopping.cancel();
    }
    if let Ok(running) = server.running.lock() {
        for token in running.values() {
            token.cancel();
        }
    }
    while server.tasks.join_next().await.is_some() {}
    // Stop the watcher (its reloads send events) before the writer is told to finish.
    drop(watch_handle);
    drop(reloader);
    let _ = store.close().await;
    drop(server);
    drop(sink);
    out.finish();
    if signalled {
        // Stopped by a signal: a client that does not read gets a bounded time to take the
        // answers, then the server exits anyway.
        let _ = tokio::time::timeout(FLUSH_AFTER_SIGNAL, writer_task).await;
    } else {
        let _ = writer_task.await;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_approvals() {
        let allow =
            json!({"jsonrpc": "2.0", "id": "permission-1", "result": {"decision": "allow"}});
        assert_eq!(answer_from(&allow), ApprovalAnswer::Allow { reason: None });
        let deny = json!({"result": {"decision": "deny", "reason": "no"}});
        assert_eq!(
            answer_from(&deny),
            ApprovalAnswer::Deny {
                reason: Some("no".into())
            }
        );
        let feedback = json!({"result": {"decision": "deny", "feedback": "use staging"}});
        assert_eq!(
            answer_from(&feedback),
            ApprovalAnswer::DenyWithFeedback {
                feedback: "use staging".into()
            }
        );
        let error = json!({"error": {"code": 1, "message": "x"}});
        assert!(matches!(answer_from(&error), ApprovalAnswer::Deny { .. }));
        let nonsense = json!({"result": {"decision": "maybe"}});
        assert!(matches!(
            answer_from(&nonsense),
            ApprovalAnswer::Deny { .. }
        ));
    }

    #[tokio::test]
    async fn bad_lines_are_reported_and_reading_goes_on() {
        let input: &[u8] = b"short\n0123456789abc\nnext\n\xff\xfe\n\nlast";
        let mut lines = LineReader::new(input, 8);
        let mut seen = Vec::new();
        while let Some(line) = lines.next().await.unwrap() {
            seen.push(match line {
                Line::Text(text) => text,
                Line::TooLong => "<too long>".to_owned(),
                Line::NotUtf8(_) => "<not utf-8>".to_owned(),
            });
        }
        assert_eq!(
            seen,
            ["short", "<too long>", "next", "<not utf-8>", "", "last"]
        );
    }

    #[tokio::test]
    async fn a_line_split_across_reads_is_joined() {
        let (mut client, server) = tokio::io::duplex(4);
        let writer = tokio::spawn(async move {
            client.write_all(b"{\"a\": 1}\n{\"b\"").await.unwrap();
            client.write_all(b": 2}\n").await.unwrap();
        });
        let mut lines = LineReader::new(server, 64);
        let mut seen = Vec::new();
        while let Some(Line::Text(text)) = lines.next().await.unwrap() {
            seen.push(text);
        }
        writer.await.unwrap();
        assert_eq!(seen, [r#"{"a": 1}"#, r#"{"b": 2}"#]);
    }
}
