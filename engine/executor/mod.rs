//! The engine: executes batches of tool calls against a policy snapshot.
//!
//! An [`Engine`] holds the current snapshot (swapped whole on reload), the native handlers
//! the embedding program registered, the event sink and the artifact store. A batch runs
//! entirely on the snapshot that was current when it started: [`Engine::execute_batch`]
//! loads it once and every call of the batch sees that generation.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use toolgate::{Batch, CallContext, Engine, HandlerFuture, HandlerOutput, Turn};
//! use toolgate::{LayerOptions, LoadOptions, ToolCall, load};
//!
//! let snapshot = load(&LoadOptions::new(LayerOptions::default()), 1).snapshot.expect("built-in policies load");
//! let engine = Engine::builder(snapshot)
//!     .native("Read", |input: serde_json::Value, _ctx: CallContext| -> HandlerFuture {
//!         Box::pin(async move { Ok(HandlerOutput::text(format!("contents of {}", input["file_path"]))) })
//!     })
//!     .build();
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let batch = Batch::new(vec![ToolCall::new("c1", "Read", json!({"file_path": "README.md"}))]);
//! let outcome = runtime.block_on(engine.execute_batch(batch, &Turn::default()))?;
//! assert_eq!(outcome.results[0].model_content, "contents of \"README.md\"");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod batch_hooks;
pub mod finalize;
pub mod plan;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arc_swap::ArcSwap;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

pub use plan::{Plan, PlannedCall, PlannedDecision};

use crate::approval::ApprovalBroker;
use crate::artifact::{ArtifactStore, SessionId};
use crate::assess::Resolved;
use crate::budget::Templates;
use crate::decision_log::{DecisionLog, SnapshotLog};
use crate::events::{
    BatchScheduled, DecisionLogFailed, Event, EventKind, EventSink, NullSink, ToolBatchComplete,
    ToolCallScheduled,
};
use crate::handler::{BuildOptions, NativeHandler, NativeRegistry};
use crate::model::hook::HookEvent;
use crate::model::{BatchId, CallId, ModeName};
use crate::pipeline::{CallEnv, CallResult, CancelCause, Prepared, ToolCall, rare};
use crate::schedule::{Concurrency, group};
use crate::snapshot::Snapshot;
use crate::timeout::Gates;

/// The calls of one model reply, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    /// Its id; generated when absent.
    pub id: Option<BatchId>,
    /// The calls.
    pub calls: Vec<ToolCall>,
}

impl Batch {
    /// A batch of calls with a generated id.
    pub fn new(calls: Vec<ToolCall>) -> Self {
        Self { id: None, calls }
    }

    /// The batch a batch file describes (with a generated id), and the modes of its turn.
    pub(crate) fn from_file(file: crate::model::batch::BatchFile) -> (Self, Vec<ModeName>) {
        let modes = file
            .modes
            .iter()
            .map(|m| ModeName::new(m.as_str()))
            .collect();
        let calls = file
            .calls
            .into_iter()
            .map(|call| ToolCall::new(call.id, call.tool, call.input))
            .collect();
        (Self::new(calls), modes)
    }
}

/// The turn a batch belongs to: its modes, its cancellation, and who answers approvals.
#[derive(Clone, Default)]
pub struct Turn {
    /// Active modes; each must be declared under `modes`.
    pub modes: Vec<ModeName>,
    /// Cancelling it stops the batch (calls end with `user_interrupt`).
    pub cancel: CancellationToken,
    /// Answers approval requests; without one, every `ask` is denied with
    /// "No permission client configured".
    pub approver: Option<Arc<dyn ApprovalBroker>>,
}

/// A batch that cannot start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// Two calls share an id.
    #[error("call id `{0}` is used by more than one call of the batch")]
    DuplicateCallId(String),
    /// A mode is not declared in the policies.
    #[error("mode `{mode}` is not declared (declared modes: {declared})")]
    UnknownMode {
        /// The mode.
        mode: String,
        /// The declared ones.
        declared: String,
    },
}

/// The result of a batch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BatchOutcome {
    /// The batch.
    pub batch_id: BatchId,
    /// The snapshot generation every call ran on.
    pub generation: u64,
    /// Call ids per group, in execution order.
    pub groups: Vec<Vec<CallId>>,
    /// One result per call, in batch order, finalized to the batch budget.
    pub results: Vec<CallResult>,
    /// Text added by `PostToolBatch` hooks (budgeted with the results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_context: Option<String>,
    /// Whether a result stopped the turn.
    pub turn_stopped: bool,
    /// Reviewer feedback to hand to the model as user messages (`inject_feedback`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub feedback: Vec<String>,
    /// What the batch finalizer did, per call.
    pub finalizer: Vec<finalize::CutReport>,
}

struct Inner {
    current: ArcSwap<Prepared>,
    /// The MCP servers, kept across snapshot installs while their entries do not change.
    mcp: crate::mcp::Pool,
    natives: NativeRegistry,
    sink: Arc<dyn EventSink>,
    store: Option<Arc<dyn ArtifactStore>>,
    session: SessionId,
    /// The log every snapshot's decisions go to, whatever its settings say.
    decision_log: Option<DecisionLog>,
}

/// Executes batches. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// Builds an [`Engine`].
pub struct EngineBuilder {
    snapshot: Arc<Snapshot>,
    natives: NativeRegistry,
    sink: Arc<dyn EventSink>,
    store: Option<Arc<dyn ArtifactStore>>,
    session: Option<SessionId>,
    decision_log: Option<DecisionLog>,
}

impl EngineBuilder {
    /// Registers a native handler under a tool name (or a contract's `handler.name`). A later
    /// registration under the same name replaces the earlier one.
    #[must_use]
    pub fn native(mut self, name: &str, handler: impl NativeHandler + 'static) -> Self {
        let _ = self.natives.replace(name, handler);
        self
    }

    /// Registers a shared native handler.
    #[must_use]
    pub fn native_arc(mut self, name: &str, handler: Arc<dyn NativeHandler>) -> Self {
        let _ = self.natives.replace_arc(name, handler);
        self
    }

    /// Where events go (default: dropped).
    #[must_use]
    pub fn sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sink = sink;
        self
    }

    /// Where full outputs go when they do not fit (default: nowhere; outputs are truncated).
    #[must_use]
    pub fn artifact_store(mut self, store: Arc<dyn ArtifactStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The session artifacts belong to (default: a fresh id).
    #[must_use]
    pub fn session(mut self, session: SessionId) -> Self {
        self.session = Some(session);
        self
    }

    /// Appends every permission decision to `log`, whatever the engine settings say
    /// (default: the log the settings' `decision_log.path` names, if any).
    #[must_use]
    pub fn decision_log(mut self, log: DecisionLog) -> Self {
        self.decision_log = Some(log);
        self
    }

    /// The engine.
    pub fn build(self) -> Engine {
        let session = self
            .session
            .unwrap_or_else(|| SessionId::new(format!("s{}", uuid::Uuid::new_v4().simple())));
        let mcp = crate::mcp::Pool::new();
        let current = prepare_snapshot(
            self.snapshot,
            &mcp,
            self.decision_log.as_ref(),
            self.sink.as_ref(),
        );
        Engine {
            inner: Arc::new(Inner {
                current: ArcSwap::from_pointee(current),
                mcp,
                natives: self.natives,
                sink: self.sink,
                store: self.store,
                session,
                decision_log: self.decision_log,
            }),
        }
    }
}

/// Derives what executing needs from a snapshot: gates, budget texts, compiled handlers, the
/// decision log (`log`, or the one its settings name; one that cannot be set up is reported
/// to `sink` and the calls go on unlogged).
fn prepare_snapshot(
    snapshot: Arc<Snapshot>,
    mcp: &crate::mcp::Pool,
    log: Option<&DecisionLog>,
    sink: &dyn EventSink,
) -> Prepared {
    // Gate permits were validated at load time (at least 1); a gate that still cannot be
    // built leaves the set empty, and calls naming it fail with "unknown gate".
    let gates = Gates::new(
        snapshot
            .gates
            .iter()
            .map(|(name, gate)| (name.clone(), gate.permits as usize)),
    )
    .unwrap_or_else(|_| Gates::empty());
    let templates = Templates::from_engine(&snapshot.engine);
    let servers =
        crate::handler::mcp::servers(&snapshot.mcp_servers, &snapshot.workspace_root, mcp);
    let snapshot = with_known_hints(snapshot, |name| {
        servers
            .get(name)
            .and_then(|server| server.as_ref().ok())
            .cloned()
    });
    let options = BuildOptions {
        max_output_bytes: snapshot.engine.max_handler_output,
        kill_grace: snapshot.engine.kill_grace.0,
        workspace: &snapshot.workspace_root,
        mcp: &servers,
    };
    let dispatch = snapshot
        .tools
        .iter()
        .map(|(name, tool)| {
            let handler = crate::handler::build(name, &tool.resolved.handler, &options);
            (name.clone(), Arc::new(handler))
        })
        .collect();
    let decision_log = match SnapshotLog::for_snapshot(&snapshot, log) {
        Ok(log) => log.map(Arc::new),
        Err(error) => {
            sink.emit(Event::now(
                None,
                None,
                snapshot.generation,
                EventKind::DecisionLogFailed(DecisionLogFailed {
                    path: snapshot
                        .engine
                        .decision_log
                        .path
                        .clone()
                        .unwrap_or_default(),
                    error: error.to_string(),
                }),
            ));
            None
        }
    };
    Prepared {
        snapshot,
        gates: Arc::new(gates),
        templates,
        dispatch,
        decision_log,
    }
}

/// The snapshot with the contract flags its `trust_annotations: true` servers' annotations
/// fill, as far as the servers' tool lists are known (see [`Snapshot::with_hints`]).
fn with_known_hints(
    snapshot: Arc<Snapshot>,
    server: impl Fn(&str) -> Option<Arc<crate::mcp::Server>>,
) -> Arc<Snapshot> {
    let hints: HashMap<String, crate::snapshot::ServerHints> = snapshot
        .mcp_servers
        .iter()
        .filter(|(_, entry)| entry.trusts_annotations())
        .filter_map(|(name, _)| Some((name.clone(), server(name)?.known_hints()?)))
        .collect();
    if hints.is_empty() && snapshot.hinted.is_empty() {
        return snapshot;
    }
    Arc::new(snapshot.with_hints(&hints))
}

/// The server of a call's tool when it is an MCP server declared with
/// `trust_annotations: true`.
fn trusted_server<'s>(snapshot: &'s Snapshot, tool: &str) -> Option<&'s str> {
    let crate::model::handler::HandlerSpec::Mcp(handler) = &snapshot.lookup(tool)?.resolved.handler
    else {
        return None;
    };
    snapshot
        .mcp_servers
        .get(&handler.server)
        .is_some_and(crate::model::mcp::McpServer::trusts_annotations)
        .then_some(handler.server.as_str())
}

impl Engine {
    /// Before a batch with calls of tools of MCP servers declared with
    /// `trust_annotations: true`: learns those servers' tool annotations where the ones known
    /// are out of date (starting a server that is not running: its calls would start it
    /// anyway), and installs the snapshot with the flags they fill. A server that cannot be
    /// reached leaves the flags as they are; its calls fail with the reason.
    async fn learn_hints(&self, batch: &Batch) {
        let prepared = self.inner.current.load_full();
        let snapshot = &prepared.snapshot;
        if !snapshot
            .mcp_servers
            .values()
            .any(crate::model::mcp::McpServer::trusts_annotations)
        {
            return;
        }
        let mut servers: Vec<&str> = Vec::new();
        for call in &batch.calls {
            if let Some(server) = trusted_server(snapshot, &call.tool)
                && !servers.contains(&server)
            {
                servers.push(server);
            }
        }
        let mut learned = false;
        for name in servers {
            let Some(server) = self.inner.mcp.get(name) else {
                continue;
            };
            if server.hints_current().await {
                continue;
            }
            match server.learn_hints().await {
                Ok(_) => learned = true,
                Err(error) => {
                    tracing::warn!(server = name, %error, "cannot learn the annotations of an mcp server's tools")
                }
            }
        }
        if learned {
            // Re-derived from the snapshot in force; a reload installed meanwhile wins (and
            // has the hints learned so far already).
            // Only the snapshot changes: the tools' names, handlers, gates and the decision
            // log stay those of the prepared set.
            let next = Arc::new(Prepared {
                snapshot: with_known_hints(Arc::clone(&prepared.snapshot), |name| {
                    self.inner.mcp.get(name)
                }),
                gates: Arc::clone(&prepared.gates),
                templates: prepared.templates.clone(),
                dispatch: prepared.dispatch.clone(),
                decision_log: prepared.decision_log.clone(),
            });
            let _ = self.inner.current.compare_and_swap(&prepared, next);
        }
    }

    /// Starts building an engine on a snapshot.
    pub fn builder(snapshot: Arc<Snapshot>) -> EngineBuilder {
        EngineBuilder {
            snapshot,
            natives: NativeRegistry::new(),
            sink: Arc::new(NullSink),
            store: None,
            session: None,
            decision_log: None,
        }
    }

    /// The snapshot new batches run on.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.inner.current.load().snapshot)
    }

    /// Installs a new snapshot for the batches that start from now on; running batches
    /// finish on the one they started with.
    pub fn install(&self, snapshot: Arc<Snapshot>) {
        self.inner.current.store(Arc::new(prepare_snapshot(
            snapshot,
            &self.inner.mcp,
            self.inner.decision_log.as_ref(),
            self.inner.sink.as_ref(),
        )));
    }

    /// Shuts down the MCP servers the engine started (closing their connections; a stdio
    /// server gets its input closed, then SIGTERM, then SIGKILL). Calls after this fail with
    /// "was shut down" until a snapshot is installed again.
    pub async fn shutdown(&self) {
        self.inner.mcp.shutdown().await;
    }

    /// The MCP server of that name the engine supervises (declared by the snapshot in force).
    pub(crate) fn mcp_server(&self, name: &str) -> Option<Arc<crate::mcp::Server>> {
        self.inner.mcp.get(name)
    }

    /// Changes whenever an MCP server of the engine sends `notifications/tools/list_changed`.
    pub fn mcp_tool_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.mcp.tool_changes()
    }

    /// The session artifacts are written under.
    pub fn session(&self) -> &SessionId {
        &self.inner.session
    }

    /// The event sink.
    pub fn sink(&self) -> &Arc<dyn EventSink> {
        &self.inner.sink
    }

    /// Plans a batch without running anything: groups, decisions, timeouts and budgets.
    pub fn plan<'b>(&self, batch: &'b Batch, modes: &[ModeName]) -> Result<Plan<'b>, BatchError> {
        let prepared = self.inner.current.load_full();
        check_batch(&prepared.snapshot, batch, modes)?;
        Ok(plan::plan(&prepared.snapshot, batch, modes))
    }

    /// Executes a batch: groups in order, calls of a group concurrently, then the batch
    /// finalizer (and, when `PostToolBatch` hooks exist, the hooks and the finalizer again).
    pub async fn execute_batch(
        &self,
        batch: Batch,
        turn: &Turn,
    ) -> Result<BatchOutcome, BatchError> {
        self.learn_hints(&batch).await;
        let prepared = self.inner.current.load_full();
        let snapshot = &prepared.snapshot;
        check_batch(snapshot, &batch, &turn.modes)?;
        let batch_id = batch.id.clone().unwrap_or_else(BatchId::generate);
        let modes: Arc<[ModeName]> = Arc::from(turn.modes.clone());
        let classes: Vec<Concurrency> = batch
            .calls
            .iter()
            .map(|call| {
                let resolved = snapshot
                    .lookup(&call.tool)
                    .map(|tool| Resolved::new(snapshot, &modes, tool));
                plan::scheduling(resolved.as_ref())
            })
            .collect();
        let ranges = group(&classes, snapshot.engine.max_concurrency);
        let groups: Vec<Vec<CallId>> = ranges
            .iter()
            .map(|range| {
                batch.calls[range.clone()]
                    .iter()
                    .map(|c| c.id.clone())
                    .collect()
            })
            .collect();

        let batch_cancel = turn.cancel.child_token();
        let batch_cause = CancelCause::default();
        let env = CallEnv {
            prepared: &prepared,
            natives: &self.inner.natives,
            sink: &self.inner.sink,
            store: self.inner.store.as_deref(),
            session: &self.inner.session,
            batch_id: &batch_id,
            modes: &modes,
            approver: turn.approver.as_ref(),
            batch_cause: &batch_cause,
        };
        env.emit_with(None, || {
            EventKind::BatchScheduled(BatchScheduled {
                groups: groups.clone(),
                modes: modes.iter().map(|m| m.to_string()).collect(),
            })
        });
        for (index, range) in ranges.iter().enumerate() {
            for call in &batch.calls[range.clone()] {
                env.emit_with(Some(&call.id), || {
                    let tool = snapshot
                        .lookup(&call.tool)
                        .map_or("unknown", |t| t.name_for_call(&call.tool))
                        .to_owned();
                    EventKind::ToolCallScheduled(ToolCallScheduled { tool, group: index })
                });
            }
        }

        // The calls as given, for the decision log.
        let logged: Vec<(String, serde_json::Value)> = match &prepared.decision_log {
            Some(_) => batch
                .calls
                .iter()
                .map(|call| (call.tool.clone(), call.input.clone()))
                .collect(),
            None => Vec::new(),
        };
        let run = crate::schedule::run::run_groups(&env, batch.calls, &ranges, &batch_cancel).await;
        let mut results = run.results;
        let feedback: Vec<String> = results
            .iter()
            .filter_map(|r| r.turn.as_ref().and_then(|t| t.feedback.clone()))
            .collect();

        // The second pass after `PostToolBatch` hooks starts again from the unfinalized
        // results (cheap: texts are shared), so that a result cut twice shows one header with
        // the digest of its full output, not a cut of a cut. Kept only when such a hook may
        // run.
        let batch_hooks = snapshot
            .hooks
            .iter()
            .any(|hook| hook.applies(HookEvent::PostToolBatch, None, &modes));
        let unfinalized = batch_hooks.then(|| results.clone());
        // A batch that fits needs no finalizer pass.
        let mut report = match finalize::report_if_fits(&env, &results) {
            Some(report) => report,
            None => rare(finalize::finalize_results(&env, &mut results, None)).await,
        };
        let texts = if batch_hooks {
            rare(batch_hooks::post_tool_batch(&env, &results, &batch_cancel)).await
        } else {
            Vec::new()
        };
        let batch_context = if texts.is_empty() {
            None
        } else {
            Some(texts.join("\n\n"))
        };
        let mut batch_context = batch_context;
        if batch_context.is_some()
            && let Some(mut again) = unfinalized
        {
            finalize::carry_persistence(&mut again, &results);
            let extra = rare(finalize::finalize_results(
                &env,
                &mut again,
                batch_context.take(),
            ))
            .await;
            results = again;
            batch_context = extra.batch_context.clone();
            report = extra;
        }
        finalize::drop_pending_displays(&mut results);
        if let Some(log) = &prepared.decision_log {
            log_decisions(&env, log, &logged, &results);
        }

        let successes = results.iter().filter(|r| r.is_ok()).count();
        env.emit_with(None, || {
            EventKind::ToolBatchComplete(ToolBatchComplete {
                successes,
                failures: results.len() - successes,
                turn_stopped: run.turn_stopped,
            })
        });
        Ok(BatchOutcome {
            batch_id,
            generation: snapshot.generation,
            groups,
            results,
            batch_context,
            turn_stopped: run.turn_stopped,
            feedback,
            finalizer: report.cuts,
        })
    }
}

/// Appends one decision log record per call that got a permission decision (a call that
/// failed before it, such as an unknown tool, was never decided). A failed append is
/// reported as a `DecisionLogFailed` event, once per batch.
fn log_decisions(
    env: &CallEnv<'_>,
    log: &SnapshotLog,
    calls: &[(String, serde_json::Value)],
    results: &[CallResult],
) {
    let snapshot = &env.prepared.snapshot;
    for ((tool, input), result) in calls.iter().zip(results) {
        let Some(permission) = &result.permission else {
            continue;
        };
        let record = log.record(
            snapshot,
            env.session.as_str(),
            tool,
            input,
            permission,
            result.metadata.total_ms,
        );
        if let Err(error) = log.log.append(&record) {
            env.emit_with(None, || {
                EventKind::DecisionLogFailed(DecisionLogFailed {
                    path: log.log.path().display().to_string(),
                    error: error.to_string(),
                })
            });
            return;
        }
    }
}

/// Batch-level checks: unique call ids, declared modes.
fn check_batch(snapshot: &Snapshot, batch: &Batch, modes: &[ModeName]) -> Result<(), BatchError> {
    if let Some(id) = duplicate_id(&batch.calls) {
        return Err(BatchError::DuplicateCallId(id.to_string()));
    }
    check_modes(snapshot, modes)
}

/// Every mode of a turn is declared.
fn check_modes(snapshot: &Snapshot, modes: &[ModeName]) -> Result<(), BatchError> {
    for mode in modes {
        if !snapshot.modes.contains_key(mode) {
            let declared: Vec<String> = snapshot.modes.keys().map(|m| format!("`{m}`")).collect();
            return Err(BatchError::UnknownMode {
                mode: mode.to_string(),
                declared: declared.join(", "),
            });
        }
    }
    Ok(())
}

/// A call id the batch uses twice, if any (the first repeated one in batch order).
fn duplicate_id(calls: &[ToolCall]) -> Option<&CallId> {
    // A model's batch has a handful of calls: comparing each with those before it is
    // quicker than hashing them all.
    if calls.len() <= SMALL_BATCH {
        return calls
            .iter()
            .enumerate()
            .find(|(index, call)| calls[..*index].iter().any(|before| before.id == call.id))
            .map(|(_, call)| &call.id);
    }
    let mut seen: HashSet<&str, foldhash::fast::RandomState> =
        HashSet::with_capacity_and_hasher(calls.len(), Default::default());
    calls
        .iter()
        .find(|call| !seen.insert(call.id.as_str()))
        .map(|call| &call.id)
}

/// Up to this many calls, [`duplicate_id`] compares pairs instead of hashing.
const SMALL_BATCH: usize = 16;

/// The file artifact store a snapshot's `engine.artifacts` describes: `dir` with `~` expanded
/// (relative paths are taken against the workspace root), the project folder under the
/// workspace root, and the per-file and per-session caps.
pub fn artifact_store_for(snapshot: &Snapshot) -> crate::artifact::FsArtifactStore {
    let artifacts = &snapshot.engine.artifacts;
    let dir = expand_home(&artifacts.dir);
    let dir = if dir.is_absolute() {
        dir
    } else {
        snapshot.workspace_root.join(dir)
    };
    crate::artifact::FsArtifactStore::new(crate::artifact::FsStoreConfig {
        dir,
        project_dir: Some(snapshot.workspace_root.join(&artifacts.project_dir)),
        limits: crate::artifact::Limits {
            max_file: artifacts.max_file,
            max_session: artifacts.max_session,
        },
        block_size: crate::artifact::DEFAULT_BLOCK_SIZE,
        checked_from: Some(snapshot.workspace_root.clone()),
    })
}

fn expand_home(path: &str) -> std::path::PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::PathBuf::from(home).join(rest),
        _ if path == "~" => {
            std::env::var_os("HOME").map_or_else(|| path.into(), std::path::PathBuf::from)
        }
        _ => std::path::PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    // Moved from the integration tests: they exercise this module's internals.
    mod budget;

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn calls(ids: &[u8]) -> Vec<ToolCall> {
        ids.iter()
            .map(|id| ToolCall::new(format!("c{id}"), "Read", json!({})))
            .collect()
    }

    proptest! {
        /// Small batches (pairs compared) and large ones (hashed) find the same duplicate:
        /// the first call whose id an earlier call has.
        #[test]
        fn the_first_repeated_id_is_found(ids in proptest::collection::vec(0u8..40, 0..40)) {
            let calls = calls(&ids);
            let expected = ids
                .iter()
                .enumerate()
                .find(|(index, id)| ids[..*index].contains(id))
                .map(|(_, id)| format!("c{id}"));
            prop_assert_eq!(duplicate_id(&calls).map(|id| id.to_string()), expected);
        }
    }
}
