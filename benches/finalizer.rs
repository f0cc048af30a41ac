//! Headline figure of issue 4: finalizing a batch of 100 outputs of 1 MiB each to a
//! 200 000-character budget with the in-memory artifact store. divan prints the throughput
//! (bytes of input per second) next to each time.
//!
//! - `cold`: every output is new to the finalizer, so it counts characters (`chars`) and
//!   hashes every cut slot (the SPEC's `Full output sha256:` line): two passes over 100 MiB.
//! - `prepared`: the executor already called `SlotText::prepare` on each output as it arrived
//!   (off the batch's critical path), so the finalizer only reads and writes what it keeps.
//! - `bytes_prepared_by_size`: in `bytes` mode a prepared batch costs the same whatever the
//!   size of its outputs (lengths are O(1), cuts are boundary fix-ups).
//!
//! Run with `cargo bench --bench finalizer`.

use std::sync::{Arc, LazyLock};

use divan::Bencher;
use divan::counter::BytesCount;
use toolgate::artifact::{ArtifactStore, MemoryArtifactStore, Retention, SessionId};
use toolgate::budget::{
    ArtifactTarget, BatchBudget, FinalizeConfig, FinalizeItem, FinalizeOutcome, Slot, SlotKind,
    SlotText, Templates, finalize,
};
use toolgate::model::units::BudgetUnit;

const OUTPUTS: usize = 100;
const MIB: usize = 1 << 20;
const BUDGET: u64 = 200_000;

static TEMPLATES: LazyLock<Templates> = LazyLock::new(Templates::spec_defaults);
static SESSION: LazyLock<SessionId> = LazyLock::new(|| SessionId::from("bench"));
static ONE_MIB: LazyLock<Vec<Arc<str>>> = LazyLock::new(|| outputs(MIB));

fn main() {
    divan::main();
}

/// 100 distinct outputs (distinct buffers, so hashing and counting really read 100 MiB) of
/// about `size` bytes: build-log-like lines, mostly ASCII with some accents, CJK and emoji.
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

fn batch(texts: &[Arc<str>]) -> Vec<FinalizeItem> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            FinalizeItem::new(
                format!("call_{i}"),
                vec![Slot::new(SlotKind::Output, SlotText::new(Arc::clone(text)))],
            )
        })
        .collect()
}

fn total_bytes(texts: &[Arc<str>]) -> usize {
    texts.iter().map(|t| t.len()).sum()
}

fn config(unit: BudgetUnit) -> FinalizeConfig<'static> {
    FinalizeConfig {
        budget: BatchBudget::Units(BUDGET),
        unit,
        templates: &TEMPLATES,
        retention: Retention::Session,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(err) => panic!("cannot start a runtime: {err}"),
    }
}

fn run(
    runtime: &tokio::runtime::Runtime,
    items: &[FinalizeItem],
    unit: BudgetUnit,
    store: &MemoryArtifactStore,
) -> FinalizeOutcome {
    let store: &dyn ArtifactStore = store;
    let target = ArtifactTarget {
        store,
        session: &SESSION,
    };
    let outcome = runtime.block_on(finalize(items, &config(unit), Some(target)));
    assert!(outcome.total_after <= BUDGET);
    outcome
}

/// Fresh `SlotText`s every iteration: the finalizer counts and hashes everything.
#[divan::bench(args = [BudgetUnit::Chars, BudgetUnit::Bytes], sample_count = 10, sample_size = 1)]
fn cold(bencher: Bencher, unit: BudgetUnit) {
    let texts = &*ONE_MIB;
    let runtime = runtime();
    bencher
        .counter(BytesCount::new(total_bytes(texts)))
        .with_inputs(|| (batch(texts), MemoryArtifactStore::new()))
        .bench_local_refs(|(items, store)| run(&runtime, items, unit, store));
}

/// Outputs measured as they arrived: the finalizer's own work.
#[divan::bench(args = [BudgetUnit::Chars, BudgetUnit::Bytes], sample_count = 30, sample_size = 1)]
fn prepared(bencher: Bencher, unit: BudgetUnit) {
    let texts = &*ONE_MIB;
    let items = batch(texts);
    for item in &items {
        for slot in &item.slots {
            slot.text.prepare(unit);
        }
    }
    let runtime = runtime();
    bencher
        .counter(BytesCount::new(total_bytes(texts)))
        .with_inputs(|| (items.clone(), MemoryArtifactStore::new()))
        .bench_local_refs(|(items, store)| run(&runtime, items, unit, store));
}

/// `bytes` mode, prepared: the time stays flat as outputs grow 16-fold.
#[divan::bench(args = [128 * 1024, 512 * 1024, 2 * MIB], sample_count = 30, sample_size = 1)]
fn bytes_prepared_by_size(bencher: Bencher, size: usize) {
    let texts = outputs(size);
    let items = batch(&texts);
    for item in &items {
        for slot in &item.slots {
            slot.text.prepare(BudgetUnit::Bytes);
        }
    }
    let runtime = runtime();
    bencher
        .counter(BytesCount::new(total_bytes(&texts)))
        .with_inputs(|| (items.clone(), MemoryArtifactStore::new()))
        .bench_local_refs(|(items, store)| run(&runtime, items, BudgetUnit::Bytes, store));
}
