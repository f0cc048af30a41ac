//! Result budgets through the engine (SPEC §8): real batches with native handlers, the
//! fixture policies of `tests/fixtures/budget/engine/`, and a file artifact store in a
//! temporary folder. Every model-facing text is compared byte for byte with the one the SPEC
//! defines, computed independently in `support::budget`.

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

// The SPEC's finalizer re-derived independently of the crate, shared with the integration
// tests (`tests/it/support/budget.rs`).
#[path = "../../../tests/it/support/budget.rs"]
mod spec;
use crate::FinalizeConfig;
use crate::Overflow;
use crate::artifact::testing::{FaultPlan, FaultyArtifactStore};
use crate::budget::{BatchBudget, ItemStatus, Templates, finalize};
use crate::events::ArtifactStage;
use crate::model::contract::DisplayKind;
use crate::{ArtifactStore, FsArtifactStore, FsStoreConfig, Retention, SessionId};
use crate::{Batch, BatchError, BatchOutcome, Engine, Turn};
use crate::{CallContext, HandlerError, HandlerFuture, HandlerOutput};
use crate::{CallResult, ToolCall};
use crate::{EventKind, VecSink};
use crate::{LayerOptions, LoadOptions, Snapshot, load};
use serde_json::{Value, json};
use spec::Unit;

const SESSION: &str = "session-1";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/budget/engine/tools.yaml")
}

/// The fixture policies plus `overlay` (YAML under `version: 1`), with `workspace` as root.
fn snapshot(workspace: &Path, overlay: &str) -> Arc<Snapshot> {
    let overlay_path = workspace.join("overlay.yaml");
    fs::write(&overlay_path, format!("version: 1\n{overlay}")).unwrap();
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        enforced: Vec::new(),
        policies: vec![fixture(), overlay_path],
        ..Default::default()
    });
    options.workspace_root = workspace.to_owned();
    let outcome = load(&options, 1);
    outcome.snapshot.unwrap_or_else(|| {
        panic!(
            "the fixture policies do not load: {:#?}",
            outcome.diagnostics
        )
    })
}

fn overlay(batch_budget: &str, unit: Unit) -> String {
    format!(
        "engine: {{ batch_budget: {batch_budget}, budget_unit: {} }}\n",
        unit.name()
    )
}

fn echo(input: Value, _ctx: CallContext) -> HandlerFuture {
    Box::pin(async move {
        Ok(HandlerOutput::text(
            input["text"].as_str().unwrap_or_default(),
        ))
    })
}

fn image_part() -> Value {
    json!({"type": "image", "mime_type": "image/png", "data": "iVBORw0K".repeat(2000)})
}

fn with_image(input: Value, _ctx: CallContext) -> HandlerFuture {
    Box::pin(async move {
        Ok(HandlerOutput::text(input["text"].as_str().unwrap_or_default()).with_part(image_part()))
    })
}

fn failing(input: Value, _ctx: CallContext) -> HandlerFuture {
    Box::pin(async move {
        Err(HandlerError::business(
            input["text"].as_str().unwrap_or_default(),
        ))
    })
}

fn engine(snapshot: Arc<Snapshot>, store: Option<Arc<dyn ArtifactStore>>, session: &str) -> Engine {
    let mut builder = Engine::builder(snapshot)
        .session(SessionId::from(session))
        .native("Echo", echo)
        .native("WithImage", with_image)
        .native("Failing", failing);
    if let Some(store) = store {
        builder = builder.artifact_store(store);
    }
    builder.build()
}

/// Like [`engine`], in session [`SESSION`], with events going to `sink`.
fn engine_with_sink(
    snapshot: Arc<Snapshot>,
    store: Option<Arc<dyn ArtifactStore>>,
    sink: Arc<VecSink>,
) -> Engine {
    let mut builder = Engine::builder(snapshot)
        .session(SessionId::from(SESSION))
        .sink(sink)
        .native("Echo", echo);
    if let Some(store) = store {
        builder = builder.artifact_store(store);
    }
    builder.build()
}

/// A file store under `<root>` whose writes are counted.
type Counted = FaultyArtifactStore<FsArtifactStore>;

fn file_store(root: &Path) -> Arc<Counted> {
    Arc::new(FaultyArtifactStore::new(
        FsArtifactStore::new(FsStoreConfig::new(root)),
        FaultPlan::Never,
    ))
}

fn call(id: &str, tool: &str, text: &str) -> ToolCall {
    ToolCall::new(id, tool, json!({ "text": text }))
}

async fn run(engine: &Engine, calls: Vec<ToolCall>) -> BatchOutcome {
    engine
        .execute_batch(Batch::new(calls), &Turn::default())
        .await
        .unwrap()
}

/// Files (not folders) under `dir`, recursively, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                out.extend(files(&path));
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn paths(result: &CallResult) -> Vec<String> {
    result
        .metadata
        .persisted_files
        .iter()
        .flatten()
        .map(|p| p.display().to_string())
        .collect()
}

fn result<'a>(outcome: &'a BatchOutcome, id: &str) -> &'a CallResult {
    outcome
        .results
        .iter()
        .find(|r| r.call_id.as_str() == id)
        .unwrap_or_else(|| panic!("no result for `{id}`"))
}

/// 100 lines `line 0000` … `line 0099`: 1000 characters.
fn numbered_lines(n: usize) -> String {
    (0..n).map(|i| format!("line {i:04}\n")).collect()
}

// ---------------------------------------------------------------------------------------
// The batch finalizer, end to end.
// ---------------------------------------------------------------------------------------

/// Checks a batch of single-slot results against the SPEC: water-fill over the results'
/// lengths, each cut result persisted once to `<root>/<session>/<id>.txt` (0600, the exact
/// full text), and its model content exactly the SPEC's cut form naming that file.
fn assert_finalized_as_specified(
    outcome: &BatchOutcome,
    fulls: &[(&str, &str)],
    budget: u64,
    unit: Unit,
    root: &Path,
    session: &str,
) {
    let lengths: Vec<u64> = fulls.iter().map(|(_, t)| spec::len(t, unit)).collect();
    let allocs = spec::water_fill(&lengths, budget);
    let mut total = 0;
    for ((id, full), alloc) in fulls.iter().zip(&allocs) {
        let result = result(outcome, id);
        let cut = spec::len(full, unit) > *alloc;
        let expected_path = root.join(session).join(format!("{id}.txt"));
        let named = if cut {
            vec![expected_path.display().to_string()]
        } else {
            Vec::new()
        };
        let expected = spec::cut_slot(full, *alloc, unit, &named);
        assert_eq!(
            result.model_content.as_str(),
            expected,
            "model content of `{id}` (allocation {alloc} {})",
            unit.name()
        );
        let meta = &result.metadata;
        assert_eq!(meta.truncated, cut, "`{id}` truncated");
        assert_eq!(meta.original_size, spec::len(full, unit), "`{id}` original");
        assert_eq!(meta.final_size, spec::len(&expected, unit), "`{id}` final");
        if cut {
            assert_eq!(meta.persisted_files, Some(vec![expected_path.clone()]));
            assert_eq!(fs::read_to_string(&expected_path).unwrap(), *full);
            assert_eq!(mode(&expected_path), 0o600, "mode of {expected_path:?}");
        } else {
            assert_eq!(meta.persisted_files, None, "`{id}` fits: no decision");
            assert!(!expected_path.exists());
        }
        let report = outcome
            .finalizer
            .iter()
            .find(|c| c.call_id.as_str() == *id)
            .unwrap();
        assert_eq!(report.cut, cut, "finalizer report of `{id}`");
        total += meta.final_size;
    }
    assert!(total <= budget, "{total} > {budget}");
}

#[tokio::test]
async fn an_over_budget_batch_is_cut_byte_for_byte_as_the_spec_defines() {
    // Lengths [8, 1000, 300, 2000]: the short one and then the 300 fit their shares; the two
    // long ones split the rest, the first getting the leftover unit.
    for (unit, budget) in [(Unit::Chars, 1501), (Unit::Bytes, 3001)] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("artifacts");
        let store = file_store(&root);
        let snap = snapshot(tmp.path(), &budget_overlay(budget, unit));
        let engine = engine(snap, Some(store.clone()), SESSION);
        let b = spec::mixed_text("b", 1000);
        let c = spec::mixed_text("c", 300);
        let d = spec::mixed_text("d", 2000);
        let fulls = [("a", "short ok"), ("b", &*b), ("c", &*c), ("d", &*d)];
        let calls = fulls.iter().map(|(id, t)| call(id, "Echo", t)).collect();
        let outcome = run(&engine, calls).await;
        assert_finalized_as_specified(&outcome, &fulls, budget, unit, &root, SESSION);
        let cut = outcome.finalizer.iter().filter(|c| c.cut).count();
        assert!(cut >= 2, "{unit:?}: the test must cut something");
        assert_eq!(store.attempts(), cut, "{unit:?}: one write per cut result");
        assert_eq!(files(&root).len(), cut);
        if unit == Unit::Chars {
            // Every cut slot is exactly its allocation: the batch uses the whole budget.
            let total: u64 = outcome.results.iter().map(|r| r.metadata.final_size).sum();
            assert_eq!(total, budget);
        }
    }
}

fn budget_overlay(units: u64, unit: Unit) -> String {
    overlay(&units.to_string(), unit)
}

#[tokio::test]
async fn chars_and_bytes_count_differently_and_bytes_never_split_a_character() {
    // The same batch and number: in chars it fits, in bytes (every character here is 3
    // bytes) it does not.
    let text = "日本語".repeat(100);
    for (unit, cut) in [(Unit::Chars, false), (Unit::Bytes, true)] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("artifacts");
        let snap = snapshot(tmp.path(), &budget_overlay(600, unit));
        let engine = engine(snap, Some(file_store(&root)), SESSION);
        let outcome = run(
            &engine,
            vec![call("x", "Echo", &text), call("y", "Echo", &text)],
        )
        .await;
        for id in ["x", "y"] {
            let r = result(&outcome, id);
            assert_eq!(r.metadata.truncated, cut, "{unit:?}");
            assert_eq!(r.metadata.unit.to_string(), unit.name());
        }
        let fulls = [("x", &*text), ("y", &*text)];
        assert_finalized_as_specified(&outcome, &fulls, 600, unit, &root, SESSION);
    }
}

#[tokio::test]
async fn a_batch_that_fits_is_untouched_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let store = file_store(&root);
    let snap = snapshot(tmp.path(), &budget_overlay(1000, Unit::Chars));
    let engine = engine(snap, Some(store.clone()), SESSION);
    let a = spec::mixed_text("a", 500);
    let b = spec::mixed_text("b", 500);
    let outcome = run(&engine, vec![call("a", "Echo", &a), call("b", "Echo", &b)]).await;
    for (id, full) in [("a", &a), ("b", &b)] {
        let r = result(&outcome, id);
        assert_eq!(r.model_content, *full);
        assert!(!r.metadata.truncated);
        assert_eq!(r.metadata.persisted_files, None);
    }
    assert!(outcome.finalizer.iter().all(|c| !c.cut));
    assert_eq!(store.attempts(), 0);
    assert!(!root.exists(), "nothing is written, not even a folder");
}

#[tokio::test]
async fn a_disabled_budget_returns_the_batch_untouched() {
    for setting in ["none", "0", "-5"] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("artifacts");
        let store = file_store(&root);
        let snap = snapshot(tmp.path(), &overlay(setting, Unit::Chars));
        assert_eq!(snap.engine.batch_budget, BatchBudget::Disabled, "{setting}");
        let engine = engine(snap, Some(store.clone()), SESSION);
        let big = spec::mixed_text("z", 300_000);
        let outcome = run(&engine, vec![call("z", "Echo", &big)]).await;
        let r = result(&outcome, "z");
        assert_eq!(r.model_content, big, "{setting}");
        assert!(!r.metadata.truncated);
        assert_eq!(store.attempts(), 0, "{setting}");
    }
}

#[tokio::test]
async fn producer_artifacts_are_reused_and_never_written_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let store = file_store(&root);
    let snap = snapshot(tmp.path(), &budget_overlay(500, Unit::Chars));
    let engine = engine(snap, Some(store.clone()), SESSION);
    let lines = numbered_lines(100);
    let big = spec::mixed_text("e", 2000);
    let outcome = run(
        &engine,
        vec![
            call("spill", "SpillHead", &lines),
            call("echo", "Echo", &big),
        ],
    )
    .await;
    let spill = result(&outcome, "spill");
    let spill_path = root.join(SESSION).join("spill.txt");
    // The producer wrote the full output and handed the model an envelope; the finalizer cut
    // the envelope and named the producer's artifact, without writing it again.
    assert_eq!(
        spill.metadata.persisted_files,
        Some(vec![spill_path.clone()])
    );
    assert_eq!(fs::read_to_string(&spill_path).unwrap(), lines);
    assert_eq!(
        store.attempts(),
        2,
        "the producer's write and the finalizer's"
    );
    assert_eq!(
        files(&root),
        vec![root.join(SESSION).join("echo.txt"), spill_path.clone()]
    );
    let envelope = expected_envelope_head(&lines, &spill_path);
    let allocs = spec::water_fill(&[envelope.chars().count() as u64, 2000], 500);
    assert!(
        allocs[0] < envelope.chars().count() as u64,
        "the envelope is cut"
    );
    let named = vec![spill_path.display().to_string()];
    assert_eq!(
        spill.model_content.as_str(),
        spec::cut_slot(&envelope, allocs[0], Unit::Chars, &named)
    );
    assert_eq!(spill.metadata.original_size, 1000);
    assert!(spill.metadata.truncated);
    let echo_path = root.join(SESSION).join("echo.txt");
    assert_eq!(
        result(&outcome, "echo").model_content.as_str(),
        spec::cut_slot(
            &big,
            allocs[1],
            Unit::Chars,
            &[echo_path.display().to_string()]
        )
    );
}

#[tokio::test]
async fn a_producer_truncation_leaves_nothing_to_persist() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let store = file_store(&root);
    // [150, 2000] with 260 → 130 each: the truncated output is cut again, with a preview.
    let snap = snapshot(tmp.path(), &budget_overlay(260, Unit::Chars));
    let engine = engine(snap, Some(store.clone()), SESSION);
    let lines = numbered_lines(100);
    let big = spec::mixed_text("e", 2000);
    let outcome = run(
        &engine,
        vec![
            call("trunc", "TruncHead", &lines),
            call("echo", "Echo", &big),
        ],
    )
    .await;
    let trunc = result(&outcome, "trunc");
    assert_eq!(trunc.metadata.persisted_files, Some(Vec::new()));
    let produced = expected_truncation(&lines, 150, "head");
    assert_eq!(
        trunc.model_content.as_str(),
        spec::cut_slot(&produced, 130, Unit::Chars, &[])
    );
    assert!(
        trunc.model_content.contains("\n...\n"),
        "a preview, not only the header"
    );
    assert_eq!(
        store.attempts(),
        1,
        "only the untruncated output is written"
    );
    assert_eq!(files(&root), vec![root.join(SESSION).join("echo.txt")]);
}

#[tokio::test]
async fn repeated_call_ids_are_refused_in_a_batch_and_get_distinct_artifacts_across_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let store = file_store(&root);
    let snap = snapshot(tmp.path(), &budget_overlay(300, Unit::Chars));
    let first = engine(snap.clone(), Some(store.clone()), SESSION);

    let twice = first
        .execute_batch(
            Batch::new(vec![call("c1", "Echo", "a"), call("c1", "Echo", "b")]),
            &Turn::default(),
        )
        .await;
    assert_eq!(twice, Err(BatchError::DuplicateCallId("c1".into())));
    assert_eq!(store.attempts(), 0);

    // The same id in two batches of one session, in another session, and in a new store (a
    // new process) reusing the session folder: four distinct files, none overwritten.
    let texts: Vec<String> = (0..4)
        .map(|i| spec::mixed_text(&format!("run{i}-"), 1000))
        .collect();
    let o1 = run(&first, vec![call("c1", "Echo", &texts[0])]).await;
    let o2 = run(&first, vec![call("c1", "Echo", &texts[1])]).await;
    let other_session = engine(snap.clone(), Some(store.clone()), "session-2");
    let o3 = run(&other_session, vec![call("c1", "Echo", &texts[2])]).await;
    let new_process = engine(snap, Some(file_store(&root)), SESSION);
    let o4 = run(&new_process, vec![call("c1", "Echo", &texts[3])]).await;

    let named: Vec<PathBuf> = [&o1, &o2, &o3, &o4]
        .iter()
        .map(|o| o.results[0].metadata.persisted_files.clone().unwrap()[0].clone())
        .collect();
    assert_eq!(
        named,
        vec![
            root.join(SESSION).join("c1.txt"),
            root.join(SESSION).join("c1.2.txt"),
            root.join("session-2").join("c1.txt"),
            root.join(SESSION).join("c1.3.txt"),
        ]
    );
    for (path, text) in named.iter().zip(&texts) {
        assert_eq!(fs::read_to_string(path).unwrap(), *text, "{path:?}");
    }
    for (outcome, path) in [&o1, &o2, &o3, &o4].iter().zip(&named) {
        assert!(
            outcome.results[0]
                .model_content
                .contains(&path.display().to_string())
        );
    }
}

#[tokio::test]
async fn batch_exempt_results_are_untouched_and_not_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let snap = snapshot(tmp.path(), &budget_overlay(1000, Unit::Chars));
    let engine = engine(snap, Some(file_store(&root)), SESSION);
    let plan = spec::mixed_text("plan", 3000);
    let big = spec::mixed_text("e", 2000);
    let outcome = run(
        &engine,
        vec![call("plan", "Exempt", &plan), call("echo", "Echo", &big)],
    )
    .await;
    let exempt = result(&outcome, "plan");
    assert_eq!(exempt.model_content, plan);
    assert!(!exempt.metadata.truncated);
    assert_eq!(exempt.metadata.persisted_files, None);
    // The budget applies to the other result alone: it gets all of it.
    let echo_path = root.join(SESSION).join("echo.txt");
    assert_eq!(
        result(&outcome, "echo").model_content.as_str(),
        spec::cut_slot(&big, 1000, Unit::Chars, &[echo_path.display().to_string()])
    );
}

#[tokio::test]
async fn hook_context_is_a_counted_slot_before_the_output() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let overlay = format!(
        "{}hooks:\n  - name: note\n    event: PostToolUse\n    tools: [Echo]\n    env: [PATH]\n    command: [sh, -c, 'cat >/dev/null; printf \"%s\" \"{{\\\"additional_context\\\": \\\"remember: ünïcode context\\\"}}\"']\n",
        budget_overlay(400, Unit::Chars)
    );
    let snap = snapshot(tmp.path(), &overlay);
    let engine = engine(snap, Some(file_store(&root)), SESSION);
    let big = spec::mixed_text("e", 1000);
    let outcome = run(&engine, vec![call("x", "Echo", &big)]).await;
    let r = result(&outcome, "x");
    let context = "[Hook additional context]\n1. remember: ünïcode context";
    assert_eq!(r.hook_context.as_deref(), Some(context));
    // Slots [context, output]: the context fits its share and the output gets the rest.
    let allocs = spec::water_fill(&[context.chars().count() as u64, 1000], 400);
    assert_eq!(allocs[0], context.chars().count() as u64);
    let path = root.join(SESSION).join("x.txt");
    assert_eq!(
        r.model_content.as_str(),
        spec::cut_slot(&big, allocs[1], Unit::Chars, &[path.display().to_string()])
    );
    // The sizes are the output's: the context is its own slot.
    assert_eq!(r.metadata.original_size, 1000);
    assert_eq!(
        r.metadata.final_size,
        r.model_content.chars().count() as u64
    );
    // The artifact holds the result's whole text: context, newline, output.
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        format!("{context}\n{big}")
    );
}

#[tokio::test]
async fn non_text_parts_are_neither_counted_nor_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let text = spec::mixed_text("i", 300);
    // The two texts exactly fill the budget; the 16 000-character image part would not fit.
    for (budget, cut) in [(600, false), (500, true)] {
        let snap = snapshot(tmp.path(), &budget_overlay(budget, Unit::Chars));
        let engine = engine(snap, Some(file_store(&root)), SESSION);
        let outcome = run(
            &engine,
            vec![call("img", "WithImage", &text), call("echo", "Echo", &text)],
        )
        .await;
        let img = result(&outcome, "img");
        assert_eq!(img.parts, vec![image_part()], "budget {budget}");
        assert_eq!(img.metadata.truncated, cut, "budget {budget}");
        if !cut {
            assert_eq!(img.model_content, text);
        }
    }
}

#[tokio::test]
async fn error_texts_are_budgeted_like_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let snap = snapshot(tmp.path(), &budget_overlay(600, Unit::Chars));
    let engine = engine(snap, Some(file_store(&root)), SESSION);
    let message = spec::mixed_text("err", 2000);
    let outcome = run(&engine, vec![call("bad", "Failing", &message)]).await;
    let r = result(&outcome, "bad");
    let full = format!("<tool_use_error>{message}</tool_use_error>");
    let path = root.join(SESSION).join("bad.txt");
    assert_eq!(
        r.model_content.as_str(),
        spec::cut_slot(&full, 600, Unit::Chars, &[path.display().to_string()])
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), full);
}

#[tokio::test]
async fn finalizing_a_finalized_batch_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let snap = snapshot(tmp.path(), &budget_overlay(1501, Unit::Chars));
    let engine = engine(snap, Some(file_store(&root)), SESSION);
    let texts: Vec<String> = (0..4)
        .map(|i| spec::mixed_text(&format!("t{i}-"), 700 * (i + 1)))
        .collect();
    let calls = texts
        .iter()
        .enumerate()
        .map(|(i, t)| call(&format!("c{i}"), "Echo", t))
        .collect();
    let outcome = run(&engine, calls).await;
    assert!(outcome.finalizer.iter().any(|c| c.cut));

    let items = crate::executor::finalize::items(&outcome.results, None);
    let templates = Templates::spec_defaults();
    let config = FinalizeConfig {
        budget: BatchBudget::Units(1501),
        unit: crate::BudgetUnit::Chars,
        templates: &templates,
        retention: Retention::Session,
        max_files: None,
    };
    let store = file_store(&tmp.path().join("again"));
    let store_ref: &dyn ArtifactStore = &*store;
    let session = SessionId::from(SESSION);
    let again = finalize(
        &items,
        &config,
        Some(crate::budget::ArtifactTarget {
            store: store_ref,
            session: &session,
        }),
    )
    .await;
    assert_eq!(again.items, items);
    assert!(
        again
            .reports
            .iter()
            .all(|r| r.status == ItemStatus::Untouched)
    );
    assert_eq!(store.attempts(), 0);
}

#[tokio::test]
async fn the_pass_after_post_tool_batch_hooks_cuts_the_full_outputs_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let store = file_store(&root);
    let note = "batch note: ünïcode";
    let overlay = format!(
        "{}hooks:\n  - name: summary\n    event: PostToolBatch\n    env: [PATH]\n    command: [sh, -c, 'cat >/dev/null; printf \"%s\" \"{{\\\"additional_context\\\": \\\"{note}\\\"}}\"']\n",
        budget_overlay(1501, Unit::Chars)
    );
    let snap = snapshot(tmp.path(), &overlay);
    let engine = engine(snap, Some(store.clone()), SESSION);
    let b = spec::mixed_text("b", 1000);
    let c = spec::mixed_text("c", 300);
    let d = spec::mixed_text("d", 2000);
    let fulls = [("a", "short ok"), ("b", &*b), ("c", &*c), ("d", &*d)];
    let calls = fulls.iter().map(|(id, t)| call(id, "Echo", t)).collect();
    let outcome = run(&engine, calls).await;
    assert_eq!(outcome.batch_context.as_deref(), Some(note));

    // One allocation over the results and the batch text, applied to the full outputs.
    let mut lengths: Vec<u64> = fulls
        .iter()
        .map(|(_, t)| spec::len(t, Unit::Chars))
        .collect();
    lengths.push(note.chars().count() as u64);
    let allocs = spec::water_fill(&lengths, 1501);
    let mut cut = 0;
    for ((id, full), alloc) in fulls.iter().zip(&allocs) {
        let r = result(&outcome, id);
        let path = root.join(SESSION).join(format!("{id}.txt"));
        let is_cut = (full.chars().count() as u64) > *alloc;
        let named = if is_cut {
            cut += 1;
            vec![path.display().to_string()]
        } else {
            Vec::new()
        };
        assert_eq!(
            r.model_content.as_str(),
            spec::cut_slot(full, *alloc, Unit::Chars, &named),
            "`{id}`"
        );
        assert!(r.model_content.matches("Tool output truncated.").count() <= 1);
        let report = outcome
            .finalizer
            .iter()
            .find(|c| c.call_id.as_str() == *id)
            .unwrap();
        assert_eq!(report.cut, is_cut, "the report of `{id}` says it was cut");
    }
    assert!(cut >= 2);
    assert_eq!(
        store.attempts(),
        cut,
        "the second pass reuses the first's artifacts"
    );
}

// ---------------------------------------------------------------------------------------
// The producer stage through the engine.
// ---------------------------------------------------------------------------------------

/// The SPEC's head-preview envelope for the 100 numbered lines of `numbered_lines` with a
/// preview of 100: the first 100 characters end with a newline, so the preview is the first
/// ten lines without it.
fn expected_envelope_head(lines: &str, path: &Path) -> String {
    let preview: Vec<String> = (0..10).map(|i| format!("line {i:04}")).collect();
    format!(
        "<persisted-output>\nOutput too large ({} chars). Full output saved to: {}\n\nPreview (first 99 chars):\n{}\n...\n</persisted-output>",
        lines.chars().count(),
        path.display(),
        preview.join("\n")
    )
}

fn expected_truncation(text: &str, limit: u64, keep: &str) -> String {
    let original = spec::len(text, Unit::Chars);
    let notice = spec::notice(original, limit, Unit::Chars);
    let notice_len = notice.chars().count() as u64;
    match keep {
        "head" => {
            let room = limit - notice_len - 1;
            format!("{}\n{notice}", spec::first(text, room, Unit::Chars))
        }
        "tail" => {
            let room = limit - notice_len - 1;
            format!("{notice}\n{}", spec::last(text, room, Unit::Chars))
        }
        _ => {
            let room = limit - notice_len - 2;
            let head = room / 5;
            format!(
                "{}\n{notice}\n{}",
                spec::first(text, head, Unit::Chars),
                spec::last(text, room - head, Unit::Chars)
            )
        }
    }
}

#[tokio::test]
async fn artifact_overflow_gives_the_envelope_for_each_keep() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let store = file_store(&root);
    let snap = snapshot(tmp.path(), &overlay("none", Unit::Chars));
    let engine = engine(snap, Some(store.clone()), SESSION);
    let lines = numbered_lines(100);
    let outcome = run(
        &engine,
        vec![
            call("head", "SpillHead", &lines),
            call("tail", "SpillTail", &lines),
            call("both", "SpillBoth", &lines),
        ],
    )
    .await;
    let line = |i: usize| format!("line {i:04}");
    let join = |range: std::ops::Range<usize>| range.map(line).collect::<Vec<_>>().join("\n");
    let envelope = |path: &Path, label: &str, preview: String| {
        format!(
            "<persisted-output>\nOutput too large (1000 chars). Full output saved to: {}\n\nPreview ({label}):\n{preview}\n</persisted-output>",
            path.display()
        )
    };
    let path = |id: &str| root.join(SESSION).join(format!("{id}.txt"));
    let expected = [
        ("head", expected_envelope_head(&lines, &path("head"))),
        (
            // The last 100 characters start at a line: the last ten lines, whole.
            "tail",
            envelope(
                &path("tail"),
                "last 100 chars",
                format!("...\n{}\n", join(90..100)),
            ),
        ),
        (
            // First 20 → two lines without the trailing newline; last 80 → eight lines.
            "both",
            envelope(
                &path("both"),
                "first 19 and last 80 chars",
                format!("{}\n...\n{}\n", join(0..2), join(92..100)),
            ),
        ),
    ];
    for (id, want) in expected {
        let r = result(&outcome, id);
        assert_eq!(r.model_content.as_str(), want, "`{id}`");
        let meta = &r.metadata;
        assert!(meta.truncated);
        assert_eq!(meta.original_size, 1000);
        assert_eq!(meta.final_size, want.chars().count() as u64);
        assert!(meta.final_size <= 400, "within max_model");
        assert_eq!(meta.persisted_files, Some(vec![path(id)]));
        assert_eq!(meta.policy.unwrap().overflow, Overflow::Artifact);
        assert_eq!(fs::read_to_string(path(id)).unwrap(), lines);
        assert_eq!(mode(&path(id)), 0o600);
    }
    assert_eq!(store.attempts(), 3);
}

#[tokio::test]
async fn truncate_overflow_keeps_head_tail_or_both_with_the_notice() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let store = file_store(&root);
    let snap = snapshot(tmp.path(), &overlay("none", Unit::Chars));
    let engine = engine(snap, Some(store.clone()), SESSION);
    let lines = numbered_lines(100);
    let outcome = run(
        &engine,
        vec![
            call("head", "TruncHead", &lines),
            call("tail", "TruncTail", &lines),
            call("both", "TruncBoth", &lines),
        ],
    )
    .await;
    for keep in ["head", "tail", "both"] {
        let r = result(&outcome, keep);
        let want = expected_truncation(&lines, 150, keep);
        assert_eq!(r.model_content.as_str(), want, "keep {keep}");
        assert_eq!(r.metadata.final_size, 150);
        assert_eq!(r.metadata.persisted_files, Some(Vec::new()));
        assert_eq!(r.metadata.policy.unwrap().overflow, Overflow::Truncate);
    }
    assert_eq!(store.attempts(), 0);
}

#[tokio::test]
async fn the_smaller_of_max_model_and_max_inline_is_the_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = snapshot(tmp.path(), &overlay("none", Unit::Chars));
    let engine = engine(snap, None, SESSION);
    let lines = numbered_lines(100);
    let outcome = run(
        &engine,
        vec![
            call("inline", "InlineLimited", &lines),
            call("model", "ModelLimited", &lines),
        ],
    )
    .await;
    for id in ["inline", "model"] {
        let r = result(&outcome, id);
        assert_eq!(
            r.model_content.as_str(),
            expected_truncation(&lines, 120, "head"),
            "`{id}`"
        );
        assert_eq!(r.metadata.policy.unwrap().limit, Some(120));
    }
}

#[tokio::test]
async fn an_empty_output_becomes_the_placeholder() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = snapshot(tmp.path(), &budget_overlay(1000, Unit::Chars));
    let engine = engine(snap, None, SESSION);
    let outcome = run(
        &engine,
        vec![
            call("empty", "Echo", ""),
            call("blank", "SpillHead", " \n\t\n"),
            ToolCall::new("printf", "Printf", json!({"text": ""})),
        ],
    )
    .await;
    for (id, tool) in [
        ("empty", "Echo"),
        ("blank", "SpillHead"),
        ("printf", "Printf"),
    ] {
        let r = result(&outcome, id);
        assert_eq!(
            r.model_content.as_str(),
            format!("({tool} completed with no output)"),
            "`{id}`: {:?}",
            r.error
        );
        assert!(!r.metadata.truncated);
    }
}

#[tokio::test]
async fn a_failed_artifact_write_falls_back_to_truncation_and_the_call_succeeds() {
    let lines = numbered_lines(100);
    // The notice says the full output is lost.
    let notice = format!(
        "{} The full output could not be kept.",
        spec::notice(1000, 400, Unit::Chars)
    );
    let room = 400 - notice.chars().count() as u64 - 1;
    let head_truncation = format!("{}\n{notice}", spec::first(&lines, room, Unit::Chars));
    let tmp = tempfile::tempdir().unwrap();
    // A full disk; a regular file where the artifact folder should be (fails even as root);
    // a read-only folder (fails unless permissions are not enforced, e.g. as root).
    let in_the_way = tmp.path().join("file");
    fs::write(&in_the_way, "not a folder").unwrap();
    let read_only = tmp.path().join("read-only");
    fs::create_dir(&read_only).unwrap();
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o500)).unwrap();
    let enforced = fs::write(read_only.join("probe"), "x").is_err();
    let stores: Vec<(&str, Arc<dyn ArtifactStore>, bool)> = vec![
        (
            "full disk",
            Arc::new(FaultyArtifactStore::always_failing()),
            true,
        ),
        (
            "file in the way",
            Arc::new(FsArtifactStore::new(FsStoreConfig::new(
                in_the_way.join("artifacts"),
            ))),
            true,
        ),
        (
            "read-only folder",
            Arc::new(FsArtifactStore::new(FsStoreConfig::new(&read_only))),
            enforced,
        ),
    ];
    for (case, store, fails) in stores {
        let snap = snapshot(tmp.path(), &overlay("none", Unit::Chars));
        let sink = VecSink::new();
        let engine = engine_with_sink(snap, Some(store), sink.clone());
        let outcome = run(&engine, vec![call("spill", "SpillHead", &lines)]).await;
        let r = result(&outcome, "spill");
        assert!(r.is_ok(), "{case}: the call still succeeds");
        if !fails {
            continue;
        }
        // An event says the write failed, for this call, at the producer stage.
        let failed: Vec<_> = sink
            .events()
            .into_iter()
            .filter_map(|event| match event.kind {
                EventKind::ArtifactWriteFailed(failed) => Some((event.call_id, failed)),
                _ => None,
            })
            .collect();
        assert_eq!(failed.len(), 1, "{case}");
        assert_eq!(failed[0].0.as_ref().map(|id| id.as_str()), Some("spill"));
        assert_eq!(failed[0].1.stage, ArtifactStage::Producer);
        assert_eq!(failed[0].1.size, 1000);
        assert_eq!(r.model_content.as_str(), head_truncation, "{case}");
        assert_eq!(r.metadata.persisted_files, Some(Vec::new()), "{case}");
        assert_eq!(r.metadata.policy.unwrap().overflow, Overflow::Truncate);
    }
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o700)).unwrap();
}

#[tokio::test]
async fn a_failed_finalizer_write_emits_an_event_and_says_the_output_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = snapshot(tmp.path(), &overlay("300", Unit::Chars));
    let sink = VecSink::new();
    let store: Arc<dyn ArtifactStore> = Arc::new(FaultyArtifactStore::always_failing());
    let engine = engine_with_sink(snap, Some(store), sink.clone());
    let text = "w".repeat(2000);
    let outcome = run(&engine, vec![call("big", "Echo", &text)]).await;
    let r = result(&outcome, "big");
    assert!(r.is_ok());
    assert!(
        r.model_content
            .as_str()
            .starts_with("Tool output truncated. The full output could not be kept.\n"),
        "{}",
        r.model_content.as_str()
    );
    let failed: Vec<_> = sink
        .events()
        .into_iter()
        .filter_map(|event| match event.kind {
            EventKind::ArtifactWriteFailed(failed) => Some(failed),
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].stage, ArtifactStage::Finalizer);
    assert_eq!(failed[0].size, 2000);
}

#[tokio::test]
async fn an_invalid_call_id_truncates_with_its_stub() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let store = file_store(&root);
    let snap = snapshot(tmp.path(), &overlay("none", Unit::Chars));
    let engine = engine(snap, Some(store.clone()), SESSION);
    let lines = numbered_lines(100);
    let outcome = run(&engine, vec![call("🙂", "SpillHead", &lines)]).await;
    let r = &outcome.results[0];
    let notice = format!("{} (invalid call id)", spec::notice(1000, 400, Unit::Chars));
    let room = 400 - notice.chars().count() as u64 - 1;
    assert_eq!(
        r.model_content.as_str(),
        format!("{}\n{notice}", spec::first(&lines, room, Unit::Chars))
    );
    assert_eq!(r.metadata.persisted_files, Some(Vec::new()));
    assert!(files(&root).is_empty());
}

// ---------------------------------------------------------------------------------------
// The display projection.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_when_cut_display_appears_only_when_the_model_content_was_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    // 300 + 350 + 1000 → the producer cuts `cut` to 400; then [300, 350, 400] over 900 →
    // 300 each: `late` (whole after the producer) is cut by the finalizer.
    let snap = snapshot(tmp.path(), &budget_overlay(900, Unit::Chars));
    let engine = engine(snap, Some(file_store(&root)), SESSION);
    let short = numbered_lines(30);
    let late = numbered_lines(35);
    let long = numbered_lines(100);
    let outcome = run(
        &engine,
        vec![
            call("short", "ShownWhenCut", &short),
            call("late", "ShownWhenCut", &late),
            call("cut", "ShownWhenCut", &long),
        ],
    )
    .await;
    let short_result = result(&outcome, "short");
    assert!(!short_result.metadata.truncated);
    assert_eq!(short_result.display, None, "not cut: no display");

    for (id, full) in [("late", &late), ("cut", &long)] {
        let r = result(&outcome, id);
        assert!(r.metadata.truncated, "`{id}` is cut");
        let display = r
            .display
            .as_ref()
            .unwrap_or_else(|| panic!("`{id}` was cut: its display is shown"));
        assert_eq!(display.kind, DisplayKind::CommandOutput);
        // max_size 300 bytes of the full output, never the model's text.
        assert_eq!(display.text, full[..300]);
        assert!(display.truncated);
        assert_ne!(display.text, r.model_content.as_str());
    }
    // The producer kept the head (room for 32 lines), the display shows lines the model
    // never got, and the model content has no trace of the display beyond its own head.
    let cut = result(&outcome, "cut");
    assert_eq!(
        cut.model_content.as_str(),
        spec::cut_slot(
            &expected_truncation(&long, 400, "head"),
            300,
            Unit::Chars,
            &[]
        )
    );
    assert!(!cut.model_content.contains(display_text(cut)));
    assert!(display_text(cut).contains("line 0010"));
    assert!(!cut.model_content.contains("line 0010"));
}

fn display_text(result: &CallResult) -> &str {
    &result.display.as_ref().unwrap().text
}

#[tokio::test]
async fn an_always_display_is_capped_in_bytes_and_never_budgeted_with_the_model_content() {
    let tmp = tempfile::tempdir().unwrap();
    let text = spec::mixed_text("s", 200);
    // The budget is exactly the text: if the display were counted, the content would be cut.
    let snap = snapshot(
        tmp.path(),
        &budget_overlay(text.chars().count() as u64, Unit::Chars),
    );
    let engine = engine(snap, None, SESSION);
    let outcome = run(&engine, vec![call("s", "ShownAlways", &text)]).await;
    let r = &outcome.results[0];
    assert_eq!(r.model_content, text);
    assert!(!r.metadata.truncated);
    let display = r.display.as_ref().unwrap();
    assert_eq!(display.kind, DisplayKind::Text);
    assert!(display.text.len() <= 50);
    assert!(text.starts_with(&display.text));
    // The longest whole-character prefix within 50 bytes.
    assert!(
        display.text.len()
            + text[display.text.len()..]
                .chars()
                .next()
                .unwrap()
                .len_utf8()
            > 50
    );
    assert!(display.truncated);
}

#[tokio::test]
async fn a_display_of_kind_none_is_never_produced() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = snapshot(tmp.path(), &budget_overlay(50, Unit::Chars));
    let engine = engine(snap, None, SESSION);
    let outcome = run(&engine, vec![call("n", "NoDisplay", &numbered_lines(100))]).await;
    let r = &outcome.results[0];
    assert!(r.metadata.truncated);
    assert_eq!(r.display, None);
}

// ---------------------------------------------------------------------------------------
// Retention.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn temporary_artifacts_go_when_the_store_closes_and_session_ones_stay() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = snapshot(tmp.path(), &overlay("none", Unit::Chars));
    let store = Arc::new(crate::executor::artifact_store_for(&snap));
    let engine = engine(snap, Some(store.clone()), SESSION);
    let lines = numbered_lines(100);
    let outcome = run(
        &engine,
        vec![
            call("kept", "SpillHead", &lines),
            call("gone", "SpillTemporary", &lines),
        ],
    )
    .await;
    let kept = paths(result(&outcome, "kept"));
    let gone = paths(result(&outcome, "gone"));
    let root = tmp.path().join("artifacts").join(SESSION);
    assert_eq!(kept, vec![root.join("kept.txt").display().to_string()]);
    assert_eq!(gone, vec![root.join("gone.txt").display().to_string()]);
    assert!(Path::new(&gone[0]).exists(), "kept until the session ends");
    store.close().await.unwrap();
    assert!(!Path::new(&gone[0]).exists());
    assert_eq!(fs::read_to_string(&kept[0]).unwrap(), lines);
}
