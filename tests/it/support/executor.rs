//! Shared helpers of the executor tests: the fixture policy set, the native handler `work`
//! whose input says how it behaves, and small queries over results and events.
//!
//! `work` understands these input fields (all optional):
//! - `sleep_ms`: how long it works (tokio time, so paused-time tests are deterministic);
//! - `ignore_cancel`: keep working when the call is cancelled (the engine must abandon it);
//! - `gate`: pass through this admission gate mid-call (`ctx.gate`) before working;
//! - `end`: `ok` (default), `business` (a business failure), `error` (a fault with a long,
//!   multi-line cause chain 15 levels deep), `long_error` (a fault with a 2 400-character
//!   message), `panic`, `limit` (a business failure with code `limit:cron`);
//! - `output`: the text returned on success; `json`: a JSON value returned instead.

// Test helpers panic on purpose: a panic is a failed test. Not every test file uses every
// helper.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use serde_json::Value;
use toolgate::{Batch, BatchOutcome, Engine, Turn};
use toolgate::{CallContext, HandlerError, HandlerOutput, NativeHandler};
use toolgate::{CallId, ModeName};
use toolgate::{CallResult, ToolCall};
use toolgate::{CallStatus, CancelReason, Event, EventKind, VecSink};
use toolgate::{LayerOptions, LoadOptions, Snapshot, load};

/// `tests/fixtures/executor/<relative>`.
pub fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/executor")
        .join(relative)
}

/// The base policy set plus overlays (file names under `overlays/`), without the built-in
/// layer, at generation `generation`.
pub fn snapshot_at(overlays: &[&str], generation: u64) -> Arc<Snapshot> {
    let mut policies = vec![fixture("base")];
    policies.extend(
        overlays
            .iter()
            .map(|name| fixture(&format!("overlays/{name}"))),
    );
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        policies,
        ..LayerOptions::default()
    });
    options.workspace_root = fixture("");
    let outcome = load(&options, generation);
    match outcome.snapshot {
        Some(snapshot) => snapshot,
        None => panic!("fixture policies do not load: {:#?}", outcome.diagnostics),
    }
}

/// [`snapshot_at`] generation 1.
pub fn snapshot(overlays: &[&str]) -> Arc<Snapshot> {
    snapshot_at(overlays, 1)
}

/// What the `work` handler saw of one call.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The call.
    pub call_id: CallId,
    /// Its input, exactly as the handler received it.
    pub input: Value,
    /// The modes in its context.
    pub modes: Vec<String>,
}

/// Observations of the `work` handler.
#[derive(Default)]
pub struct Probe {
    /// Every call it ran, in start order.
    pub seen: Mutex<Vec<Seen>>,
    /// Calls running right now.
    pub running: AtomicUsize,
    /// Most calls running at once.
    pub peak: AtomicUsize,
    /// Handler futures dropped (finished, aborted or abandoned).
    pub dropped: AtomicUsize,
}

impl Probe {
    /// The inputs seen, by call id.
    pub fn inputs(&self) -> HashMap<String, Value> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| (s.call_id.to_string(), s.input.clone()))
            .collect()
    }
}

/// Counts a running handler until dropped, however its future ends.
struct Running(Arc<Probe>);

impl Running {
    fn new(probe: Arc<Probe>) -> Self {
        let now = probe.running.fetch_add(1, Ordering::SeqCst) + 1;
        probe.peak.fetch_max(now, Ordering::SeqCst);
        Self(probe)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// An error whose message spans lines and whose cause chain is `depth` levels deep.
#[derive(Debug)]
pub struct Layered {
    level: usize,
    depth: usize,
    inner: Option<Box<Layered>>,
}

impl Layered {
    /// A chain of `depth` levels.
    pub fn chain(depth: usize) -> Self {
        let mut current: Option<Box<Layered>> = None;
        for level in (0..depth).rev() {
            current = Some(Box::new(Layered {
                level,
                depth,
                inner: current,
            }));
        }
        *current.unwrap()
    }
}

impl fmt::Display for Layered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "level{}\n\t  of {}   failed", self.level, self.depth)
    }
}

impl std::error::Error for Layered {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// The text `work` panics with.
pub const PANIC_TEXT: &str = "deliberate handler panic";

/// Keeps the deliberate panics of `work` out of the test output; other panics print as usual.
pub fn quiet_deliberate_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            let deliberate = text.is_some_and(|text| text.contains(PANIC_TEXT));
            if !deliberate {
                default(info);
            }
        }));
    });
}

/// The `work` native handler, reporting to `probe`.
pub fn work(probe: Arc<Probe>) -> impl NativeHandler {
    move |input: Value, ctx: CallContext| {
        let probe = Arc::clone(&probe);
        async move {
            probe.seen.lock().unwrap().push(Seen {
                call_id: ctx.call_id.clone(),
                input: input.clone(),
                modes: ctx.modes.iter().map(|m| m.to_string()).collect(),
            });
            let _running = Running::new(Arc::clone(&probe));
            let _permit = match input.get("gate").and_then(Value::as_str) {
                Some(gate) => Some(ctx.gate(gate).await?),
                None => None,
            };
            let sleep = Duration::from_millis(input["sleep_ms"].as_u64().unwrap_or(0));
            if input["ignore_cancel"].as_bool() == Some(true) {
                tokio::time::sleep(sleep).await;
            } else {
                tokio::select! {
                    () = tokio::time::sleep(sleep) => {}
                    () = ctx.cancel.cancelled() => return Err(HandlerError::Cancelled),
                }
            }
            match input["end"].as_str().unwrap_or("ok") {
                "business" => Err(HandlerError::business("it broke")),
                "limit" => Err(HandlerError::business_with_code(
                    "cron limit hit",
                    "limit:cron",
                )),
                "error" => Err(HandlerError::other(Layered::chain(15))),
                "long_error" => Err(HandlerError::other(std::io::Error::other(
                    "word\n ".repeat(400),
                ))),
                "panic" => panic!("{}", PANIC_TEXT),
                _ => match input.get("json") {
                    Some(json) => Ok(HandlerOutput::json(json.clone())),
                    None => Ok(HandlerOutput::text(
                        input["output"]
                            .as_str()
                            .map_or_else(|| format!("done {}", ctx.call_id), str::to_owned),
                    )),
                },
            }
        }
    }
}

/// An engine on the fixture policies with `work` registered and every event kept.
pub struct Harness {
    /// The engine.
    pub engine: Engine,
    /// Its events.
    pub sink: Arc<VecSink>,
    /// What `work` saw.
    pub probe: Arc<Probe>,
}

impl Harness {
    /// An engine on the base set plus `overlays`.
    pub fn new(overlays: &[&str]) -> Self {
        Self::on(snapshot(overlays))
    }

    /// An engine on `snapshot`.
    pub fn on(snapshot: Arc<Snapshot>) -> Self {
        quiet_deliberate_panics();
        let probe = Arc::new(Probe::default());
        let sink = VecSink::new();
        let engine = Engine::builder(snapshot)
            .native("work", work(Arc::clone(&probe)))
            .sink(sink.clone())
            .build();
        Self {
            engine,
            sink,
            probe,
        }
    }

    /// Runs calls as one batch in a default turn.
    pub async fn run(&self, calls: Vec<ToolCall>) -> BatchOutcome {
        self.run_in(calls, &Turn::default()).await
    }

    /// Runs calls as one batch in `turn`.
    pub async fn run_in(&self, calls: Vec<ToolCall>, turn: &Turn) -> BatchOutcome {
        self.engine
            .execute_batch(Batch::new(calls), turn)
            .await
            .expect("the batch starts")
    }

    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.sink.events()
    }
}

/// A call.
pub fn call(id: &str, tool: &str, input: Value) -> ToolCall {
    ToolCall::new(id, tool, input)
}

/// A turn in these modes.
pub fn turn_in(modes: &[&str]) -> Turn {
    Turn {
        modes: modes.iter().map(|m| ModeName::new(*m)).collect(),
        ..Turn::default()
    }
}

/// The result of call `id`.
pub fn result<'a>(outcome: &'a BatchOutcome, id: &str) -> &'a CallResult {
    outcome
        .results
        .iter()
        .find(|r| r.call_id.as_str() == id)
        .unwrap_or_else(|| panic!("no result for `{id}`"))
}

/// The status of call `id`.
pub fn status(outcome: &BatchOutcome, id: &str) -> CallStatus {
    result(outcome, id).status
}

/// The cancel reason of call `id`.
pub fn cancel_reason(outcome: &BatchOutcome, id: &str) -> Option<CancelReason> {
    result(outcome, id)
        .error
        .as_ref()
        .and_then(|e| e.cancel_reason)
}

/// Groups as lists of id strings.
pub fn groups(outcome: &BatchOutcome) -> Vec<Vec<String>> {
    outcome
        .groups
        .iter()
        .map(|g| g.iter().map(|id| id.to_string()).collect())
        .collect()
}

/// The events of call `id`, by type name.
pub fn event_types(events: &[Event], id: &str) -> Vec<&'static str> {
    events
        .iter()
        .filter(|e| e.call_id.as_ref().is_some_and(|c| c.as_str() == id))
        .map(Event::type_name)
        .collect()
}

/// The position of the first event of `type_name` for call `id`.
pub fn position(events: &[Event], id: &str, type_name: &str) -> usize {
    events
        .iter()
        .position(|e| {
            e.type_name() == type_name && e.call_id.as_ref().is_some_and(|c| c.as_str() == id)
        })
        .unwrap_or_else(|| panic!("no {type_name} for `{id}`"))
}

/// Terminal events per call id.
pub fn terminal_counts(events: &[Event]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for event in events.iter().filter(|e| e.is_terminal()) {
        let id = event
            .call_id
            .as_ref()
            .map(|c| c.to_string())
            .unwrap_or_default();
        *counts.entry(id).or_default() += 1;
    }
    counts
}

/// The `ToolCallStarted` timeout of call `id`.
pub fn started_timeout(events: &[Event], id: &str) -> Option<u64> {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCallStarted(started)
                if e.call_id.as_ref().is_some_and(|c| c.as_str() == id) =>
            {
                Some(started.timeout_ms)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("`{id}` never started"))
}

/// Whether process `pid` still exists as a live process (a zombie counts as gone: it has
/// exited and only waits to be reaped).
pub fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            // `pid (comm) S …`: the state follows the last `)`.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("?");
            !matches!(state, "Z" | "X" | "x")
        }
    }
}

/// Waits (up to 10 s of real time) for every pid to be gone; returns those still alive.
pub fn survivors(pids: &[i32]) -> Vec<i32> {
    for _ in 0..200 {
        let alive: Vec<i32> = pids.iter().copied().filter(|p| process_alive(*p)).collect();
        if alive.is_empty() {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    pids.iter().copied().filter(|p| process_alive(*p)).collect()
}

/// Pids of live processes whose environment carries `marker` (`NAME=value`).
pub fn marked_processes(marker: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let needle = marker.as_bytes();
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == needle))
        })
        .filter(|pid| process_alive(*pid))
        .collect()
}
