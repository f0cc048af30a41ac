//! Headline figure of issue 4: finalizing a batch of 100 outputs of 1 MiB each to a
//! 200 000-character budget — at most 30 ms in `chars` mode (≥ 3 GB/s of input) — and, in
//! `bytes` mode, a cost that does not grow with the size of the outputs beyond the bytes
//! kept.
//!
//! Measured through the public API. The finalizer's planning and cutting (water-fill, fit
//! each cut output, the notices) is [`toolgate::hard_cap`], the same pass without artifact
//! writes, which embedders run at their send boundary; the outputs reach it the way the
//! engine hands them over — each was measured and hashed by the producer stage as it arrived
//! ([`SlotText::prepare`], off the async threads, while the rest of the batch still ran).
//! Nothing is hidden: the same batch is also timed **cold** (fresh texts: the pass counts
//! characters itself), and the producer stage's measuring and hashing is timed on its own.
//! The engine's finalizer also writes each cut output to the artifact store; that write is
//! inside `engine_batch_end_to_end`.
//!
//! `main` prints the headline table (median of several runs, ms and MB/s of input): per unit
//! the prepared pass (the headline), the producer's measuring and hashing, the cold pass; then
//! a size sweep in `bytes` mode. Divan's table follows for the same cases plus:
//! - `bytes_prepared_by_size` / `bytes_cold_by_size`: the size sweep (the prepared cost stays
//!   flat; the cold one grows by counting);
//! - `engine_batch_end_to_end`: a whole batch through `Engine::execute_batch` (native handlers
//!   returning 1 MiB each, producer stage, finalizer with its artifact writes) for scale.
//!
//! Run with `cargo bench --bench finalizer`. The machine the numbers come from matters: they
//! are wall-clock times of a shared machine.

// Bench code: a failed setup should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use divan::Bencher;
use divan::counter::BytesCount;
use serde_json::{Value, json};
use toolgate::{Batch, CallContext, Engine, HandlerFuture, HandlerOutput, MemoryArtifactStore};
use toolgate::{
    BatchBudget, BudgetUnit, FinalizeConfig, FinalizeItem, FinalizeOutcome, Retention, Slot,
    SlotKind, SlotText, Templates, hard_cap,
};
use toolgate::{LayerOptions, LoadOptions, ToolCall, Turn, load};

// The allocator the `toolgate` binary uses (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const OUTPUTS: usize = 100;
const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;
const BUDGET: u64 = 200_000;
const TARGET_MS: f64 = 30.0;

static TEMPLATES: LazyLock<Templates> = LazyLock::new(Templates::spec_defaults);
static ONE_MIB: LazyLock<Vec<Arc<str>>> = LazyLock::new(|| outputs(MIB));

fn main() {
    headline();
    divan::main();
}

/// 100 distinct outputs (distinct buffers, so counting and hashing really read them all) of
/// about `size` bytes: build-log-like lines, mostly ASCII with accents, CJK and emoji.
fn outputs(size: usize) -> Vec<Arc<str>> {
    (0..OUTPUTS)
        .map(|i| {
            let mut text = String::with_capacity(size + 128);
            let mut line = 0usize;
            while text.len() < size {
                text.push_str(&format!(
                    "[{i:03}:{line:06}] compiling crate héllo-wörld v0.{line} … ok 日本 🙂\n"
                ));
                line += 1;
            }
            let mut end = size;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            Arc::from(text)
        })
        .collect()
}

fn total_bytes(texts: &[Arc<str>]) -> usize {
    texts.iter().map(|t| t.len()).sum()
}

/// The batch's outputs as the engine hands them to its finalizer: one output slot per call,
/// the text shared (not copied) and, when `prepare`, measured and hashed as the producer
/// stage does.
fn items(texts: &[Arc<str>], unit: BudgetUnit, prepare: bool) -> Vec<FinalizeItem> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let slot = SlotText::new(Arc::clone(text));
            if prepare {
                slot.prepare(unit);
            }
            FinalizeItem::new(
                format!("call_{i}").as_str(),
                vec![Slot::new(SlotKind::Output, slot)],
            )
        })
        .collect()
}

fn config(unit: BudgetUnit) -> FinalizeConfig<'static> {
    FinalizeConfig {
        budget: BatchBudget::Units(BUDGET),
        unit,
        templates: &TEMPLATES,
        retention: Retention::Session,
        max_files: None,
    }
}

/// The finalizer's pass over the items, without artifact writes.
fn finalize_items(items: &[FinalizeItem], unit: BudgetUnit) -> FinalizeOutcome {
    let outcome = hard_cap(items, &config(unit));
    assert!(outcome.total_after <= BUDGET);
    outcome
}

// ---------------------------------------------------------------------------------------
// The printed headline.
// ---------------------------------------------------------------------------------------

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn mb_per_s(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64()
}

/// Times `run` on fresh inputs from `setup`, `samples` times; the median.
fn time<I>(samples: usize, mut setup: impl FnMut() -> I, mut run: impl FnMut(I)) -> Duration {
    let times = (0..samples)
        .map(|_| {
            let input = setup();
            let start = Instant::now();
            run(input);
            start.elapsed()
        })
        .collect();
    median(times)
}

fn line(what: &str, bytes: usize, time: Duration) {
    println!(
        "  {what:<58} {:>9.3} ms {:>10.0} MB/s",
        time.as_secs_f64() * 1e3,
        mb_per_s(bytes, time)
    );
}

fn headline() {
    let texts = &*ONE_MIB;
    let bytes = total_bytes(texts);
    println!(
        "finalizing {OUTPUTS} outputs of 1 MiB ({:.1} MB) to a batch budget of {BUDGET} units (`hard_cap`: no artifact writes)",
        bytes as f64 / 1e6
    );
    println!(
        "(wall clock, median; {} cores available; the machine may be shared)",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    for unit in [BudgetUnit::Chars, BudgetUnit::Bytes] {
        let prepared = items(texts, unit, true);
        let warm = time(
            21,
            || prepared.clone(),
            |items| {
                finalize_items(&items, unit);
            },
        );
        line(
            &format!("{unit}: finalizer as the engine runs it (prepared)"),
            bytes,
            warm,
        );
        if unit == BudgetUnit::Chars {
            let verdict = if warm.as_secs_f64() * 1e3 <= TARGET_MS {
                "meets"
            } else {
                "MISSES"
            };
            println!(
                "  → headline: {:.3} ms, {verdict} the {TARGET_MS} ms target ({:.1} GB/s of input)",
                warm.as_secs_f64() * 1e3,
                mb_per_s(bytes, warm) / 1e3
            );
        }
        let measuring = time(
            7,
            || items(texts, unit, false),
            |items| {
                for item in &items {
                    item.slots[0].text.prepare(unit);
                }
            },
        );
        line(
            &format!("{unit}: producer-stage measuring + hashing, one thread"),
            bytes,
            measuring,
        );
        let cold = time(
            7,
            || items(texts, unit, false),
            |items| {
                finalize_items(&items, unit);
            },
        );
        line(
            &format!("{unit}: cold finalizer (counts itself)"),
            bytes,
            cold,
        );
    }
    println!("bytes mode by output size (100 outputs each; the finalizer keeps {BUDGET} bytes):");
    for size in [64 * KIB, 256 * KIB, MIB, 4 * MIB] {
        let texts = outputs(size);
        let bytes = total_bytes(&texts);
        let prepared = items(&texts, BudgetUnit::Bytes, true);
        let warm = time(
            21,
            || prepared.clone(),
            |items| {
                finalize_items(&items, BudgetUnit::Bytes);
            },
        );
        line(
            &format!("{:>5} KiB each, prepared", size / KIB),
            bytes,
            warm,
        );
        let cold = time(
            5,
            || items(&texts, BudgetUnit::Bytes, false),
            |items| {
                finalize_items(&items, BudgetUnit::Bytes);
            },
        );
        line(
            &format!("{:>5} KiB each, cold (counting)", size / KIB),
            bytes,
            cold,
        );
    }
    println!();
}

// ---------------------------------------------------------------------------------------
// divan's table.
// ---------------------------------------------------------------------------------------

/// The headline case: results as the engine hands them to its finalizer step.
#[divan::bench(args = [BudgetUnit::Chars, BudgetUnit::Bytes], sample_count = 30, sample_size = 1)]
fn prepared(bencher: Bencher, unit: BudgetUnit) {
    let texts = &*ONE_MIB;
    let items = items(texts, unit, true);
    bencher
        .counter(BytesCount::new(total_bytes(texts)))
        .with_inputs(|| items.clone())
        .bench_local_refs(|items| finalize_items(items, unit));
}

/// Fresh texts every iteration: the pass counts everything itself.
#[divan::bench(args = [BudgetUnit::Chars, BudgetUnit::Bytes], sample_count = 10, sample_size = 1)]
fn cold(bencher: Bencher, unit: BudgetUnit) {
    let texts = &*ONE_MIB;
    bencher
        .counter(BytesCount::new(total_bytes(texts)))
        .with_inputs(|| items(texts, unit, false))
        .bench_local_refs(|items| finalize_items(items, unit));
}

/// `bytes` mode, prepared: flat as outputs grow 64-fold.
#[divan::bench(args = [64 * KIB, 256 * KIB, MIB, 4 * MIB], sample_count = 30, sample_size = 1)]
fn bytes_prepared_by_size(bencher: Bencher, size: usize) {
    let texts = outputs(size);
    let items = items(&texts, BudgetUnit::Bytes, true);
    bencher
        .counter(BytesCount::new(total_bytes(&texts)))
        .with_inputs(|| items.clone())
        .bench_local_refs(|items| finalize_items(items, BudgetUnit::Bytes));
}

/// `bytes` mode, cold: grows only by counting.
#[divan::bench(args = [64 * KIB, 256 * KIB, MIB], sample_count = 10, sample_size = 1)]
fn bytes_cold_by_size(bencher: Bencher, size: usize) {
    let texts = outputs(size);
    bencher
        .counter(BytesCount::new(total_bytes(&texts)))
        .with_inputs(|| items(&texts, BudgetUnit::Bytes, false))
        .bench_local_refs(|items| finalize_items(items, BudgetUnit::Bytes));
}

/// A whole batch through the engine, for scale: 100 native calls returning 1 MiB each (a
/// copy per call, as a handler produces a fresh string), the producer stage (measuring and
/// hashing off-thread), the finalizer and its writes to the in-memory store.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn engine_batch_end_to_end(bencher: Bencher) {
    let texts = &*ONE_MIB;
    let policy = "version: 1\nengine: { batch_budget: 200000, budget_unit: chars, max_concurrency: 100 }\ntools:\n  Big:\n    input_schema: { type: object, required: [i], properties: { i: { type: integer } } }\n    concurrency: { concurrent_safe: true, read_only: true, side_effect_scope: none }\n    permission: { default: allow }\n    budget: { max_model: 2000000 }\n    handler: { kind: native }\n";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.yaml");
    std::fs::write(&path, policy).unwrap();
    let snapshot = load(
        &LoadOptions::new(LayerOptions {
            no_builtin: true,
            enforced: Vec::new(),
            policies: vec![path],
            ..Default::default()
        }),
        1,
    )
    .snapshot
    .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let concat: Arc<[Arc<str>]> = texts.iter().cloned().collect();
    let handler = move |input: Value, _ctx: CallContext| -> HandlerFuture {
        let index = input["i"].as_u64().unwrap_or(0) as usize;
        let text = Arc::clone(&concat[index % concat.len()]);
        Box::pin(async move { Ok(HandlerOutput::text(text.to_string())) })
    };
    bencher
        .counter(BytesCount::new(total_bytes(texts)))
        .with_inputs(|| {
            let engine = Engine::builder(Arc::clone(&snapshot))
                .native("Big", handler.clone())
                .artifact_store(Arc::new(MemoryArtifactStore::new()))
                .build();
            let calls = (0..OUTPUTS)
                .map(|i| ToolCall::new(format!("c{i}").as_str(), "Big", json!({ "i": i })))
                .collect();
            (engine, Batch::new(calls))
        })
        .bench_local_values(|(engine, batch)| {
            let outcome = runtime
                .block_on(engine.execute_batch(batch, &Turn::default()))
                .unwrap();
            assert!(outcome.finalizer.iter().all(|c| c.cut));
            outcome
        });
}
