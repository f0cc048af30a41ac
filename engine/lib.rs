//! toolgate: a declarative policy engine and executor for the tool calls of AI coding agents.
//!
//! Everything an agent runtime usually hard-codes about its tools (which calls may run in
//! parallel, how long each may run, who must approve it, how much of its output the model
//! may see) is read from YAML or TOML policy files, checked against JSON Schemas and
//! hot-reloaded.
//!
//! # Data flow
//!
//! ```text
//! policy files ─▶ load ─▶ Snapshot (immutable, compiled; swapped whole on reload)
//! Batch of ToolCalls ─▶ assess (tool, input schema, rules, modes ─▶ allow / ask / deny)
//!                    ─▶ schedule (groups: concurrent-safe calls together, the rest alone)
//!                    ─▶ pipeline per call (hooks, approval, timeout, handler, output budget)
//!                    ─▶ finalize (the batch budget over every result)
//!                    ─▶ BatchOutcome, with Events streamed to a sink on the way
//! ```
//!
//! # Example
//!
//! Load a policy, register a native handler, run a one-call batch:
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use toolgate::{
//!     Batch, CallContext, CallStatus, Engine, HandlerFuture, HandlerOutput, LayerOptions,
//!     LoadOptions, ToolCall, Turn, load,
//! };
//!
//! let dir = tempfile::tempdir()?;
//! let policy = dir.path().join("policy.yaml");
//! std::fs::write(&policy, "\
//! version: 1
//! tools:
//!   Shout:
//!     description: Upper-cases a text.
//!     input_schema:
//!       type: object
//!       required: [text]
//!       properties:
//!         text: { type: string }
//!     concurrency: { concurrent_safe: true, read_only: true, side_effect_scope: none }
//!     permission: { default: allow }
//!     handler: { kind: native }
//! ")?;
//! let layers = LayerOptions { policies: vec![policy], ..LayerOptions::default() };
//! let outcome = load(&LoadOptions::new(layers), 1);
//! let snapshot = outcome.snapshot.ok_or("the policy has errors")?;
//!
//! let engine = Engine::builder(snapshot)
//!     .native("Shout", |input: serde_json::Value, _ctx: CallContext| -> HandlerFuture {
//!         Box::pin(async move {
//!             Ok(HandlerOutput::text(input["text"].as_str().unwrap_or("").to_uppercase()))
//!         })
//!     })
//!     .build();
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let batch = Batch::new(vec![ToolCall::new("c1", "Shout", json!({"text": "hello"}))]);
//! let outcome = runtime.block_on(engine.execute_batch(batch, &Turn::default()))?;
//! assert_eq!(outcome.results[0].status, CallStatus::Ok);
//! assert_eq!(outcome.results[0].model_text(), "HELLO");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The public API
//!
//! Everything an embedding program needs is re-exported at the crate root:
//!
//! - **Engine**: [`Engine`], [`EngineBuilder`]; a batch is run with
//!   [`Engine::execute_batch`] and planned without running with [`Engine::plan`]
//!   ([`Plan`], [`PlannedCall`], [`PlannedDecision`], [`Concurrency`]).
//! - **Loading policies**: [`load`], [`LoadOptions`], [`LayerOptions`] (with a found
//!   [`ProjectLayer`]), [`LayerKind`], [`LayerSpec`], [`LoadOutcome`], [`Snapshot`], and the
//!   limits of a load [`ReadLimits`], [`ParseLimits`], [`SetLimits`]; hot reload with
//!   [`Reloader`], [`ReloadOutcome`] (a reload's changes in effect: [`Change`], its
//!   [`ChangeKind`], [`ChangeSubject`], [`ChangeEffect`] and [`Risk`]) and [`WatchHandle`].
//! - **Batches and calls**: [`Batch`], [`Turn`], [`ToolCall`], [`BatchError`],
//!   [`BatchOutcome`], [`CutReport`]; ids [`BatchId`], [`CallId`], [`ModeName`],
//!   [`ToolName`], [`GateName`], [`HookName`], [`RuleName`].
//! - **Results**: [`CallResult`] and its parts [`ErrorCode`], [`ErrorInfo`], [`Failure`],
//!   [`ResultMetadata`], [`Display`] (of a [`DisplayKind`]), [`TurnEffect`] (with its
//!   [`TurnAction`]), [`SlotText`].
//! - **Events**: [`Event`], [`EventKind`], [`EventSink`], the sinks [`NullSink`],
//!   [`VecSink`], [`ChannelSink`], [`Fanout`], and [`CallStatus`], [`CancelReason`],
//!   [`FailureStage`]; the payload of each kind is in the [`events`] module.
//! - **Handlers**: [`NativeHandler`], [`HandlerFuture`], [`CallContext`],
//!   [`HandlerOutput`], [`OutputContent`], [`HandlerError`], [`ProgressSink`],
//!   [`ProgressStream`], [`ProgressChunk`]; on Linux, [`become_subreaper`] lets a call's
//!   end kill the orphans its handler processes left behind.
//! - **Approvals**: [`ApprovalBroker`], [`ApprovalRequest`], [`ApprovalAnswer`],
//!   [`FixedAnswer`].
//! - **Artifacts** (oversized output kept outside the model's context; embedders may supply
//!   their own store): [`ArtifactStore`], [`ArtifactRequest`], [`ArtifactRef`],
//!   [`ArtifactError`], [`FsArtifactStore`], [`FsStoreConfig`], [`MemoryArtifactStore`],
//!   [`ArtifactLimits`], [`Retention`], [`SessionId`].
//! - **The finalizer's hard cap** (SPEC §8.3 step 5, for the send boundary): [`hard_cap`],
//!   [`FinalizeItem`] (its [`Slot`]s of a [`SlotKind`] holding a [`SlotText`], and its
//!   [`Budgeting`]), [`FinalizeConfig`] (with a [`BatchBudget`] and the model-facing
//!   [`Templates`]), [`FinalizeOutcome`] (an [`ItemReport`] per item: its [`ItemStatus`] and
//!   [`Persistence`]).
//! - **Deciding without running**: [`assess`] and its [`Assessment`], [`Decision`]; the
//!   reasons behind a decision [`Reason`], and the staged rules that would change it
//!   [`Staged`], [`Enforcement`].
//! - **Output budgets**: [`BudgetUnit`] (what a budget counts), [`Overflow`] (what happens
//!   to output over it), [`Keep`] (which part of a cut output is kept).
//! - **Diagnostics** (for programs that check policies): [`Diagnostic`], [`Code`],
//!   [`Severity`], [`Location`], [`SourceFile`], [`render_human`], [`HumanOptions`],
//!   [`render_json`], [`render_sarif`], [`render_github`], [`OutputFormat`].
//!
//! Four modules are public as well: [`events`] (the payload of every event kind),
//! [`serve`] (the JSON-RPC server behind `toolgate serve`, for programs that host it),
//! [`agent`] (deciding a coding agent's hook call, as `toolgate hook` does) and
//! [`decision_log`] (the JSON Lines record of every decision).

// No unsafe code in the library (the package lint is `deny` only so that a bench can count
// allocations with a wrapping allocator).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The documented API is the root re-exports below, plus the modules `agent` (a coding
// agent's hook call), `decision_log` (the JSON Lines decision record), `events` (each event
// kind's payload) and `serve` (the JSON-RPC server). Every other module is crate-private:
// the integration tests, benches and examples use the root re-exports, and the tests of an
// internal unit live next to it as unit tests. Two exceptions are `pub` and doc-hidden,
// neither an API: `cli_main`, the `toolgate` binary's command line (the binary is a
// separate crate), and `fuzzing`, the entry points of the fuzz targets (behind the
// `fuzzing` feature).
pub mod agent;
mod approval;
mod artifact;
mod assess;
mod budget;
mod cli;
pub mod decision_log;
mod diagnostics;
pub mod events;
mod executor;
/// Entry points for the fuzz targets in `fuzz/`; not an API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod hooks;
mod import;
mod load;
mod mcp;
mod model;
mod pipeline;
mod policy;
mod process;
mod report;
mod review;
mod schedule;
pub mod serve;
mod snapshot;
mod timeout;

pub use approval::{ApprovalAnswer, ApprovalBroker, ApprovalRequest, FixedAnswer};
pub use artifact::{
    ArtifactError, ArtifactRef, ArtifactRequest, ArtifactStore, FsArtifactStore, FsStoreConfig,
    Limits as ArtifactLimits, MemoryArtifactStore, Retention, SessionId, Stub,
};
pub use assess::{Assessment, assess};
pub use budget::{
    AppliedPolicy, BatchBudget, Budgeting, FinalizeConfig, FinalizeItem, FinalizeOutcome,
    ItemReport, ItemStatus, Persistence, Sha256Digest, Slot, SlotKind, SlotText, Templates,
    hard_cap,
};
/// Runs the `toolgate` command line of this process (what the binary's `main` does). Not an
/// API: public because the binary is a separate crate.
#[doc(hidden)]
pub use cli::command::main as cli_main;
pub use diagnostics::codes::UnknownCode;
pub use diagnostics::diagnostic::{Diagnostics, Related};
pub use diagnostics::render::UnknownFormat;
pub use diagnostics::render::{
    HumanOptions, OutputFormat, render_github, render_human, render_json, render_sarif,
};
pub use diagnostics::source::{Format as SourceFormat, LineCursor, Span};
pub use diagnostics::{Code, Diagnostic, Location, Severity, SourceFile};
pub use events::{
    CallStatus, CancelReason, ChannelSink, Event, EventKind, EventSink, FailureStage, Fanout,
    NullSink, VecSink,
};
pub use executor::finalize::CutReport;
pub use executor::{
    Batch, BatchError, BatchOutcome, Engine, EngineBuilder, Plan, PlannedCall, PlannedDecision,
    Turn,
};
pub use handler::{
    CallContext, HandlerError, HandlerFuture, HandlerOutput, NativeHandler, OutputContent,
    ProgressChunk, ProgressSink, ProgressStream,
};
pub use load::{ParseLimits, ReadLimits};
pub use model::contract::{DisplayKind, Keep, Overflow, TurnAction};
pub use model::rule::Enforcement;
pub use model::{
    BatchId, BudgetUnit, CallId, Decision, GateName, HookName, ModeName, RuleName, ToolName,
};
pub use pipeline::{
    CallResult, Display, ErrorCode, ErrorInfo, Failure, ResultMetadata, ToolCall, TurnEffect,
};
pub use policy::decide::{Permission, Reason, Staged};
pub use process::become_subreaper;
pub use review::{Change, ChangeKind, Effect as ChangeEffect, Risk, Subject as ChangeSubject};
pub use schedule::Concurrency;
pub use snapshot::reload::{ReloadOutcome, Reloader, WatchHandle};
pub use snapshot::{
    LayerKind, LayerOptions, LayerSpec, LoadOptions, LoadOutcome, ProjectLayer, SetLimits,
    Snapshot, load,
};
pub use timeout::{Deadline, GateConfigError, GateError, GatePermit, Gates, PauseGuard};
