//! Headline figures for hot reload (issue 6), printed before divan's table:
//! - from the rename of a saved file to the new generation being in force, with the default
//!   50 ms debounce, for a 100-file set (target: median ≤ 150 ms);
//! - reloading a 1 000-tool set: load, diff and install (target ≤ 200 ms).
//!
//! The divan benches below time a whole reload and two of its parts, the load and the
//! install, to show where the time goes; the rest of a reload is the semantic diff of the
//! two merged documents (an internal step, not timed on its own).

// Bench code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use toolgate::Engine;
use toolgate::NullSink;
use toolgate::{LayerOptions, LoadOptions, Snapshot, load};
use toolgate::{ReloadOutcome, Reloader};

// The allocator the `toolgate` binary uses (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const FILES: usize = 100;
const TOOLS_PER_FILE: usize = 10;
const RULES_PER_FILE: usize = 10;
const DEBOUNCE: Duration = Duration::from_millis(50);
const SAVES: usize = 25;

fn main() {
    headline();
    divan::main();
}

/// One policy file: 10 tool contracts and 10 rules; `tag` changes a value of its first
/// tool so that each save is a change in effect.
fn policy_file(file: usize, tag: usize) -> String {
    let mut text = String::from("version: 1\ntools:\n");
    for tool in 0..TOOLS_PER_FILE {
        let minutes = if tool == 0 { 2 + tag } else { 2 };
        text.push_str(&format!(
            "  Tool{file}_{tool}:\n    aliases: [t{file}x{tool}]\n    concurrency: {{ concurrent_safe: true, side_effect_scope: none }}\n    timeout: {{ default: {minutes}m, max: 10h, override_field: timeout }}\n    budget: {{ max_model: 30000, overflow: truncate, keep: tail }}\n    permission: {{ default: ask }}\n    handler: {{ kind: command, argv: [bash, -c, \"{{{{input.command}}}}\"] }}\n    input_schema:\n      type: object\n      required: [command]\n      properties:\n        command: {{ type: string }}\n"
        ));
    }
    text.push_str("rules:\n");
    for rule in 0..RULES_PER_FILE {
        text.push_str(&format!(
            "  - name: rule-{file}-{rule}\n    tools: [Tool{file}_{rule}]\n    match:\n      command: {{ shell: [\"git status\", \"git diff *\"] }}\n    decision: allow\n    priority: {rule}\n"
        ));
    }
    text
}

/// A folder with the 100-file, 1 000-tool set.
fn policy_set() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in 0..FILES {
        std::fs::write(
            dir.path().join(format!("p{file:03}.yaml")),
            policy_file(file, 0),
        )
        .unwrap();
    }
    dir
}

fn options(root: &Path) -> LoadOptions {
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        policies: vec![root.to_path_buf()],
        ..LayerOptions::default()
    });
    options.workspace_root = root.to_path_buf();
    options
}

fn loaded(root: &Path, generation: u64) -> Arc<Snapshot> {
    let outcome = load(&options(root), generation);
    outcome.snapshot.unwrap_or_else(|| {
        panic!("the generated set loads: {:?}", outcome.diagnostics);
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn headline() {
    let dir = policy_set();
    let initial = loaded(dir.path(), 1);
    assert_eq!(initial.tool_names().count(), FILES * TOOLS_PER_FILE);
    let engine = Engine::builder(Arc::clone(&initial)).build();
    let installer = engine.clone();
    let (installed, generations) = channel();
    let reloader = Arc::new(Reloader::new(
        options(dir.path()),
        Some(initial),
        Box::new(move |next| {
            installer.install(Arc::clone(&next));
            let _ = installed.send((next.generation(), Instant::now()));
        }),
        Arc::new(NullSink),
    ));

    // Reloading the 1 000-tool set directly: until the new generation is in force, and
    // until `reload()` returns (the diff and the event come after the swap).
    let mut in_force = Vec::new();
    let mut reloads = Vec::new();
    for _ in 0..15 {
        let started = Instant::now();
        let outcome = reloader.reload();
        reloads.push(started.elapsed());
        assert!(matches!(outcome, ReloadOutcome::Reloaded { .. }));
        let (_, at) = generations.recv().unwrap();
        in_force.push(at - started);
    }
    in_force.sort();
    reloads.sort();

    // From the rename of a saved file to the new generation in force, through the watcher.
    let watch = reloader.watch(DEBOUNCE).unwrap();
    let mut latencies = Vec::new();
    for save in 1..=SAVES {
        let file = save % FILES;
        let path = dir.path().join(format!("p{file:03}.yaml"));
        let tmp = dir.path().join(format!(".p{file:03}.yaml.swp"));
        std::fs::write(&tmp, policy_file(file, save)).unwrap();
        let expected = format!("{}m", 2 + save);
        let started = Instant::now();
        std::fs::rename(&tmp, &path).unwrap();
        loop {
            let (_, at) = generations
                .recv_timeout(Duration::from_secs(10))
                .expect("the save comes into force");
            let effective = engine.snapshot().effective();
            let timeout = effective.pointer(&format!("/tools/Tool{file}_0/timeout/default"));
            if timeout.and_then(|t| t.as_str()) == Some(expected.as_str()) {
                latencies.push(at - started);
                break;
            }
        }
        // Let the debouncer go quiet before the next save.
        std::thread::sleep(Duration::from_millis(150));
    }
    drop(watch);
    latencies.sort();

    println!(
        "reload of a {}-tool set ({FILES} files) until in force: median {:.1} ms, min {:.1} ms, max {:.1} ms (target ≤ 200 ms); until reported (diff, event): median {:.1} ms",
        FILES * TOOLS_PER_FILE,
        ms(percentile(&in_force, 0.5)),
        ms(in_force[0]),
        ms(in_force[in_force.len() - 1]),
        ms(percentile(&reloads, 0.5)),
    );
    println!(
        "rename → new generation in force ({FILES} files, {} ms debounce, {SAVES} saves): median {:.1} ms, p90 {:.1} ms, max {:.1} ms (target: median ≤ 150 ms)",
        DEBOUNCE.as_millis(),
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.9)),
        ms(latencies[latencies.len() - 1]),
    );
}

/// The whole reload: load, diff against the generation in force, install.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn reload_1000_tools(bencher: divan::Bencher) {
    let dir = policy_set();
    let initial = loaded(dir.path(), 1);
    let engine = Engine::builder(Arc::clone(&initial)).build();
    let reloader = Reloader::new(
        options(dir.path()),
        Some(initial),
        Box::new(move |next| engine.install(next)),
        Arc::new(NullSink),
    );
    bencher.bench_local(|| reloader.reload());
}

/// Loading alone (read, parse, schema, merge, semantics, compile).
#[divan::bench(sample_count = 10, sample_size = 1)]
fn load_1000_tools(bencher: divan::Bencher) {
    let dir = policy_set();
    let options = options(dir.path());
    bencher.bench_local(|| load(&options, 2));
}

/// Installing a snapshot in an engine (preparing its handlers and gates).
#[divan::bench(sample_count = 10, sample_size = 1)]
fn install_1000_tools(bencher: divan::Bencher) {
    let dir = policy_set();
    let snapshot = loaded(dir.path(), 1);
    let engine = Engine::builder(Arc::clone(&snapshot)).build();
    bencher.bench_local(|| engine.install(Arc::clone(&snapshot)));
}
