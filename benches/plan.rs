//! Headline figure of issue 3: planning a 10 000-call batch (target < 2 ms) — grouping,
//! per call the lookup, input validation, resolved timeout and budget, and the permission
//! decision with a path rule — without running anything.
//!
//! `main` measures `Engine::plan` (best and median of 101 runs, since the machine may be
//! shared) and prints the figure, then divan prints its own statistics.
//!
//! Run with `cargo bench --bench plan`.

// Bench code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use divan::Bencher;
use divan::counter::ItemsCount;
use serde_json::json;
use toolgate::Snapshot;
use toolgate::ToolCall;
use toolgate::{Batch, Engine};

mod support;

// The allocator the `toolgate` binary uses (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CALLS: usize = 10_000;

const POLICY: &str = r#"
version: 1
tools:
  Read:
    input_schema: &file
      type: object
      required: [file_path]
      properties:
        file_path: { type: string }
        limit: { type: integer, minimum: 1 }
    concurrency: { concurrent_safe: true, read_only: true, side_effect_scope: none }
    permission: { default: allow }
    timeout: { default: 30s, max: 2m, override_field: timeout_ms }
    handler: { kind: native }
  Grep:
    input_schema:
      type: object
      required: [pattern]
      properties:
        pattern: { type: string }
        path: { type: string }
    concurrency: { concurrent_safe: true, read_only: true, side_effect_scope: none }
    permission: { default: allow }
    handler: { kind: native }
  Edit:
    input_schema: *file
    concurrency: { concurrent_safe: false }
    permission: { default: ask }
    handler: { kind: native }
rules:
  - name: no-secrets
    tools: [Read, Edit]
    match:
      file_path: { path: ["**/.env", "**/secrets/**"] }
    decision: deny
    reason: secrets are off limits
"#;

static SNAPSHOT: LazyLock<Arc<Snapshot>> = LazyLock::new(|| support::snapshot_of(POLICY));

/// The same tools without the rule: what planning costs besides rule matching.
static SNAPSHOT_NO_RULES: LazyLock<Arc<Snapshot>> = LazyLock::new(|| {
    let tools = POLICY.split("rules:").next().unwrap();
    support::snapshot_of(tools)
});

/// A model-like batch: mostly reads and greps, an edit every 10th call, an unknown tool
/// every 500th, a read of a secret every 1000th.
static BATCH: LazyLock<Batch> = LazyLock::new(|| {
    let calls = (0..CALLS)
        .map(|i| {
            let id = format!("toolu_{i:06}");
            match i {
                i if i % 500 == 499 => ToolCall::new(id, "Nope", json!({})),
                i if i % 1000 == 7 => ToolCall::new(id, "Read", json!({"file_path": "app/.env"})),
                i if i % 10 == 9 => ToolCall::new(
                    id,
                    "Edit",
                    json!({"file_path": format!("src/module_{i}.rs")}),
                ),
                i if i % 3 == 0 => {
                    ToolCall::new(id, "Grep", json!({"pattern": "fn main", "path": "src"}))
                }
                i => ToolCall::new(
                    id,
                    "Read",
                    json!({"file_path": format!("src/module_{i}.rs"), "limit": 200}),
                ),
            }
        })
        .collect();
    Batch::new(calls)
});

fn engine() -> Engine {
    Engine::builder(Arc::clone(&SNAPSHOT)).build()
}

/// Sorted times of `runs` plans of the batch.
fn times(engine: &Engine, runs: usize) -> Vec<Duration> {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            black_box(engine.plan(black_box(&BATCH), &[]).unwrap());
            started.elapsed()
        })
        .collect();
    times.sort_unstable();
    times
}

fn main() {
    let engine = engine();
    let plan = engine.plan(&BATCH, &[]).unwrap();
    assert_eq!(plan.calls.len(), CALLS);
    assert!(plan.calls.iter().any(|c| c.decision == "deny"));
    let with_rules = times(&engine, 101);
    let without_rules = times(
        &Engine::builder(Arc::clone(&SNAPSHOT_NO_RULES)).build(),
        101,
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "planning a {CALLS}-call batch: best {:.3} ms ({:.0} ns/call), median {:.3} ms  (target < 2 ms)",
        ms(with_rules[0]),
        with_rules[0].as_nanos() as f64 / CALLS as f64,
        ms(with_rules[with_rules.len() / 2])
    );
    println!(
        "  of which outside rule matching (same batch, no rules): best {:.3} ms, median {:.3} ms\n",
        ms(without_rules[0]),
        ms(without_rules[without_rules.len() / 2])
    );
    divan::main();
}

/// `Engine::plan` on the 10 000-call batch.
#[divan::bench(sample_count = 50)]
fn plan_10_000_calls(bencher: Bencher) {
    let engine = engine();
    bencher
        .counter(ItemsCount::new(CALLS))
        .bench_local(|| engine.plan(black_box(&BATCH), &[]).unwrap());
}

/// The same without the path rule.
#[divan::bench(sample_count = 50)]
fn plan_10_000_calls_no_rules(bencher: Bencher) {
    let engine = Engine::builder(Arc::clone(&SNAPSHOT_NO_RULES)).build();
    bencher
        .counter(ItemsCount::new(CALLS))
        .bench_local(|| engine.plan(black_box(&BATCH), &[]).unwrap());
}
