//! Headline figures of issue 3: the engine's overhead per call. A no-op native handler, an
//! `allow` decision from the contract default, a small input schema, batches of 10
//! concurrent-safe calls, on a current-thread (one core) runtime:
//!
//! - calls per second through `Engine::execute_batch` (target ≥ 200 000/s);
//! - the ratio of that time to a bare tokio `JoinSet` spawning and joining the same 10 no-op
//!   futures (target ≤ 3×).
//!
//! `main` measures both (best and median of many short rounds, since the machine may be
//! shared) and prints the figures, then divan prints its own statistics for the same two loops.
//! The batches are built before each round's clock starts: building the calls is the agent
//! runtime's work, and the engine's starts when it is handed a batch (the engine still
//! consumes and frees each batch inside the timing).
//!
//! Run with `cargo bench --bench engine_overhead`.

// Bench code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use divan::Bencher;
use divan::counter::ItemsCount;
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tokio::task::JoinSet;
use toolgate::Snapshot;
use toolgate::ToolCall;
use toolgate::{Batch, Engine, Turn};
use toolgate::{CallContext, HandlerError, HandlerOutput};

mod support;

// The allocator the `toolgate` binary uses (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BATCH: usize = 10;

const POLICY: &str = r#"
version: 1
tools:
  Noop:
    input_schema:
      type: object
      required: [path]
      properties:
        path: { type: string }
        limit: { type: integer, minimum: 1 }
    concurrency: { concurrent_safe: true, read_only: true, side_effect_scope: none }
    permission: { default: allow }
    handler: { kind: native }
"#;

static SNAPSHOT: LazyLock<Arc<Snapshot>> = LazyLock::new(|| support::snapshot_of(POLICY));

static CALLS: LazyLock<Vec<ToolCall>> = LazyLock::new(|| {
    (0..BATCH)
        .map(|i| ToolCall::new(format!("call_{i}"), "Noop", json!({"path": "src/lib.rs"})))
        .collect()
});

fn engine() -> Engine {
    Engine::builder(Arc::clone(&SNAPSHOT))
        .native("Noop", |_input: Value, _ctx: CallContext| noop())
        .build()
}

/// The no-op handler's future (and the baseline's).
async fn noop() -> Result<HandlerOutput, HandlerError> {
    Ok(HandlerOutput::text("ok"))
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn engine_batch(engine: &Engine, turn: &Turn, batch: Batch) {
    let outcome = engine.execute_batch(batch, turn).await.unwrap();
    debug_assert!(outcome.results.iter().all(|r| r.is_ok()));
    black_box(outcome);
}

/// A batch of the calls, as the agent runtime hands it over (built outside the timings: the
/// engine's overhead starts when it is given the batch).
fn batch() -> Batch {
    Batch::new(CALLS.clone())
}

async fn joinset_batch() {
    let mut set = JoinSet::new();
    for _ in 0..BATCH {
        set.spawn(noop());
    }
    while let Some(joined) = set.join_next().await {
        black_box(joined.unwrap().unwrap());
    }
}

/// Time per call of each of `rounds` rounds of `batches` batches, sorted: short rounds, so
/// that the best and the median say something on a shared, loaded machine.
/// Sorted per-call times of `rounds` rounds, each running `batches` batches prepared before
/// the round's clock starts.
fn per_call_rounds<T, P: FnMut() -> T, F: FnMut(T)>(
    rounds: usize,
    batches: usize,
    mut prepare: P,
    mut run_batch: F,
) -> Vec<Duration> {
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let prepared: Vec<T> = (0..batches).map(|_| prepare()).collect();
            let started = Instant::now();
            for batch in prepared {
                run_batch(batch);
            }
            started.elapsed() / (batches * BATCH) as u32
        })
        .collect();
    times.sort_unstable();
    times
}

fn main() {
    let runtime = runtime();
    let engine = engine();
    let turn = Turn::default();
    // Sanity: the calls succeed.
    let outcome = runtime
        .block_on(engine.execute_batch(batch(), &turn))
        .unwrap();
    assert!(
        outcome.results.iter().all(|r| r.is_ok()),
        "{:?}",
        outcome.results
    );

    let (rounds, batches) = (200, 100);
    let engine_calls = per_call_rounds(rounds, batches, batch, |batch| {
        runtime.block_on(engine_batch(&engine, &turn, batch))
    });
    let joinset_calls = per_call_rounds(
        rounds,
        batches,
        || (),
        |()| runtime.block_on(joinset_batch()),
    );
    let ns = |d: Duration| d.as_nanos() as f64;
    let per_second = |d: Duration| 1.0 / d.as_secs_f64();
    let (engine_best, engine_median) = (engine_calls[0], engine_calls[rounds / 2]);
    let (joinset_best, joinset_median) = (joinset_calls[0], joinset_calls[rounds / 2]);
    println!(
        "engine overhead, batches of {BATCH} no-op native calls, one core ({rounds} rounds of {batches} batches):"
    );
    println!(
        "  engine:  best {:>6.0} ns/call = {:>8.0} calls/s; median {:>6.0} ns/call = {:>8.0} calls/s  (target >= 200000 calls/s)",
        ns(engine_best),
        per_second(engine_best),
        ns(engine_median),
        per_second(engine_median)
    );
    println!(
        "  JoinSet: best {:>6.0} ns/call = {:>8.0} calls/s; median {:>6.0} ns/call = {:>8.0} calls/s",
        ns(joinset_best),
        per_second(joinset_best),
        ns(joinset_median),
        per_second(joinset_median)
    );
    println!(
        "  ratio engine / JoinSet: best {:.2}x, median {:.2}x  (target <= 3x)\n",
        engine_best.as_secs_f64() / joinset_best.as_secs_f64(),
        engine_median.as_secs_f64() / joinset_median.as_secs_f64()
    );
    divan::main();
}

/// One batch of 10 calls through the engine.
#[divan::bench]
fn engine_batch_of_10(bencher: Bencher) {
    let runtime = runtime();
    let engine = engine();
    let turn = Turn::default();
    bencher
        .counter(ItemsCount::new(BATCH))
        .with_inputs(batch)
        .bench_local_values(|batch| runtime.block_on(engine_batch(&engine, &turn, batch)));
}

/// The same 10 no-op futures on a bare `JoinSet`.
#[divan::bench]
fn joinset_batch_of_10(bencher: Bencher) {
    let runtime = runtime();
    bencher
        .counter(ItemsCount::new(BATCH))
        .bench_local(|| runtime.block_on(joinset_batch()));
}
