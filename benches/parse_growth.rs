//! How parse time grows with the length of a line (issue 19, defect 2): a one-line YAML flow
//! list, a YAML block list, and a one-line JSON batch through `plan`'s batch reader, each at
//! about 1 MB and 5 MB. Linear parsing takes about 5× as long for 5× the input; the limit
//! is 6×.
//!
//! Measured through the public API and the binary: a YAML file is loaded as a policy root
//! with [`toolgate::load`] (no built-in layer; the engine defaults are loaded too, a small
//! constant; the generated file is not a valid policy, so the load ends in diagnostics after
//! parsing it), and the JSON batch is read by `toolgate plan` (a whole process of the
//! `toolgate` binary, with a one-tool policy: its start-up and load are a constant of a few
//! milliseconds inside both sizes). A constant makes the ratio smaller, never larger, so a
//! ratio over the limit still means growth faster than linear.
//!
//! `main` times each shape at both sizes (best of a few runs, since the machine may be
//! shared; the texts are in memory before the clock starts), prints the times and the growth ratio, and exits non-zero when a shape over the
//! limit is one that must be linear; then divan prints its own statistics for the 1 MB
//! inputs.
//!
//! The YAML parser (`rlsp-yaml-parser`) spends time quadratic in a line's length on a flow
//! collection (it recomputes each token's column from the start of the line), so a line of
//! YAML longer than `ParseLimits::max_line_bytes` (256 KiB) is refused before parsing: the
//! one-line flow list at 1 MB and 5 MB measures that refusal, which must be linear, and the
//! worst case left, a flow list one line of 256 KiB long, is timed and printed.
//!
//! Judging the files a patch writes grows with the patch too: `git apply` of a patch of about
//! 1 MB and 5 MB (one small new file per hunk, ~21 000 and ~104 000 files), decided with the
//! built-in layer in a workspace that exists. Each file is located once, by its text (a
//! cache searched one entry at a time made 6 400 files take 15 s in a debug build).
//!
//! Run with `cargo bench --bench parse_growth`.

// Bench code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use toolgate::{LayerOptions, LoadOptions, LoadOutcome, load};

mod support;

// The allocator the `toolgate` binary uses (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MB: usize = 1_000_000;
/// The most the 5 MB parse may take, as a multiple of the 1 MB parse.
const MAX_RATIO: f64 = 6.0;

const POLICY: &str = r#"
version: 1
tools:
  Read:
    input_schema:
      type: object
      required: [file_path]
      properties: { file_path: { type: string } }
    concurrency: { concurrent_safe: true, read_only: true, side_effect_scope: none }
    permission: { default: allow }
    handler: { kind: native }
"#;

static DIR: LazyLock<tempfile::TempDir> = LazyLock::new(|| {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("policy")).unwrap();
    std::fs::write(dir.path().join("policy/policy.yaml"), POLICY).unwrap();
    dir
});

/// `version: 1` and a one-line flow list of about `size` bytes.
fn flow_list(size: usize) -> String {
    let mut text = String::with_capacity(size + 64);
    text.push_str("version: 1\nitems: [");
    let mut n = 0;
    while text.len() < size {
        if n > 0 {
            text.push_str(", ");
        }
        text.push_str(&format!("item{n}"));
        n += 1;
    }
    text.push_str("]\n");
    text
}

/// `version: 1` and a block list of about `size` bytes.
fn block_list(size: usize) -> String {
    let mut text = String::with_capacity(size + 64);
    text.push_str("version: 1\nitems:\n");
    let mut n = 0;
    while text.len() < size {
        text.push_str(&format!("  - item{n}\n"));
        n += 1;
    }
    text
}

/// A batch as `json.dump` writes it: one line, about `size` bytes.
fn json_batch(size: usize) -> String {
    let mut text = String::with_capacity(size + 64);
    text.push_str("{\"calls\": [");
    let mut n = 0;
    while text.len() < size {
        if n > 0 {
            text.push_str(", ");
        }
        text.push_str(&format!(
            "{{\"id\": \"call-{n}\", \"tool\": \"Read\", \"input\": {{\"file_path\": \"src/f{n}.rs\"}}}}"
        ));
        n += 1;
    }
    text.push_str("]}");
    text
}

/// A folder holding the generated text as its one policy file, written before the clock
/// starts.
fn source(text: &str) -> Arc<tempfile::TempDir> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bench.yaml"), text).unwrap();
    Arc::new(dir)
}

/// Loads the folder as the only policy root.
fn load_dir(dir: &tempfile::TempDir) -> LoadOutcome {
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        policies: vec![dir.path().to_path_buf()],
        ..LayerOptions::default()
    });
    options.workspace_root = dir.path().to_path_buf();
    load(&options, 1)
}

/// The file parses; the load reports the generated `items` key as unknown (a schema error,
/// found after parsing).
fn parse_yaml(dir: &tempfile::TempDir) {
    let outcome = black_box(load_dir(dir));
    assert!(
        outcome
            .diagnostics
            .iter()
            .all(|d| !d.code.as_str().contains("syntax")),
        "generated YAML parses"
    );
}

/// A line over the limit is refused (a syntax error of the file).
fn refuse_yaml(dir: &tempfile::TempDir) {
    let outcome = black_box(load_dir(dir));
    assert!(
        outcome
            .diagnostics
            .iter()
            .any(|d| d.code.as_str() == "toolgate::syntax::limit"),
        "the long line is refused: {:?}",
        outcome.diagnostics
    );
}

fn json_file(size: usize) -> PathBuf {
    let path = DIR.path().join(format!("batch-{size}.json"));
    if !path.exists() {
        std::fs::write(&path, json_batch(size)).unwrap();
    }
    path
}

/// `toolgate plan` of the batch file, a whole process. The batch parses; one of more calls
/// than a batch may hold (10 000) is then refused by its schema, after parsing.
fn load_json(path: &Path) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["--no-builtin", "-p"])
        .arg(DIR.path().join("policy"))
        .arg("plan")
        .arg(path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() || stderr.contains("toolgate::schema::range"),
        "the batch parses: {stderr}"
    );
    black_box(output);
}

/// A patch of about `size` bytes, each hunk adding a one-line file of its own.
fn patch(size: usize) -> String {
    let mut text = String::with_capacity(size + 64);
    let mut n = 0;
    while text.len() < size {
        text.push_str(&format!(
            "--- a/f{n}.txt\n+++ b/f{n}.txt\n@@ -0,0 +1 @@\n+x\n"
        ));
        n += 1;
    }
    text
}

/// A workspace holding a patch of about `size` bytes, and the snapshot of the built-in
/// layer in it.
fn patch_workspace(size: usize) -> (tempfile::TempDir, Arc<toolgate::Snapshot>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.patch"), patch(size)).unwrap();
    let none = serde_json::json!({ "version": 1 });
    let snapshot = support::snapshot_of_value_in(&none, true, dir.path());
    (dir, snapshot)
}

/// `git apply p.patch` decided: every file the patch writes is judged.
fn judge_patch(snapshot: &toolgate::Snapshot) {
    let call = toolgate::ToolCall::new(
        "c",
        "Bash",
        serde_json::json!({ "command": "git apply p.patch" }),
    );
    let assessment = black_box(toolgate::assess(snapshot, &[], &call));
    assert!(assessment.permission().is_some(), "the call is decided");
}

/// The best of `runs` timings of `work`.
fn best(runs: usize, mut work: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            work();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Times a shape at 1 MB and 5 MB and prints the ratio; returns whether it is within the
/// limit.
fn growth(name: &str, runs: usize, mut parse: impl FnMut(usize)) -> bool {
    let small = best(runs, || parse(MB));
    let large = best(runs, || parse(5 * MB));
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-9);
    let within = ratio <= MAX_RATIO;
    println!(
        "{name:<28} 1 MB {small:>10.2?}  5 MB {large:>10.2?}  ratio {ratio:>5.1}×{}",
        if within { "" } else { "  OVER 6×" }
    );
    within
}

fn main() {
    println!("parse time against line length ({})", support::ALLOCATOR);
    let mut failed = Vec::new();
    let blocks: Vec<Arc<tempfile::TempDir>> = [MB, 5 * MB]
        .iter()
        .map(|&size| source(&block_list(size)))
        .collect();
    if !growth("yaml block list", 3, |size| {
        parse_yaml(&blocks[usize::from(size != MB)])
    }) {
        failed.push("yaml block list");
    }
    if !growth("json batch (one line, plan)", 3, |size| {
        load_json(&json_file(size))
    }) {
        failed.push("json batch");
    }
    let flows: Vec<Arc<tempfile::TempDir>> = [MB, 5 * MB]
        .iter()
        .map(|&size| source(&flow_list(size)))
        .collect();
    if !growth("yaml flow list (one line)", 3, |size| {
        refuse_yaml(&flows[usize::from(size != MB)])
    }) {
        failed.push("yaml flow list");
    }
    let patches = [patch_workspace(MB), patch_workspace(5 * MB)];
    if !growth("patch files (git apply)", 2, |size| {
        judge_patch(&patches[usize::from(size != MB)].1)
    }) {
        failed.push("patch files");
    }
    let limit = toolgate::ParseLimits::DEFAULT.max_line_bytes;
    let longest = source(&flow_list(limit - 64));
    println!(
        "{:<28} {:>10.2?}  (the longest line the limit lets through)",
        "yaml flow list of 256 KiB",
        best(3, || parse_yaml(&longest))
    );
    assert!(
        failed.is_empty(),
        "parse time grows faster than linearly for: {failed:?}"
    );
    divan::main();
}

#[divan::bench]
fn yaml_block_list_1mb(bencher: divan::Bencher) {
    let text = source(&block_list(MB));
    bencher.bench(|| parse_yaml(&text));
}

#[divan::bench]
fn json_batch_1mb(bencher: divan::Bencher) {
    let path = json_file(MB);
    bencher.bench(|| load_json(&path));
}
