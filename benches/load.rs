//! Headline figures for a whole load (issue 2): 1 000 tools and 10 000 rules across 100 files
//! (a realistic mix: input schemas, aliases, command handlers with templates, path, shell,
//! glob, regex and equality matchers, rules with examples), read from disk, parsed,
//! schema-checked, merged with the built-in layer, checked for meaning and frozen into a
//! snapshot — cold, in one process. Targets: at most 150 ms in a release build, and the
//! snapshot under 50 MB resident.
//!
//! Printed before the divan table: the cold load (first in the process, compiling the
//! policy schema) and the warm load, timed with allocation counting off; the heap a snapshot
//! holds and the heap's peak during a load, counted on a further load, with what each part of
//! the snapshot holds; and the resident memory after the cold load (which also keeps what the
//! allocator retains of the load's peak), and the resident memory the snapshot itself keeps
//! (the resident set with it and without it, once the allocator has returned its free pages).
//!
//! Every tool's input schema is distinct and no snapshot outlives its measurement, so the
//! process-wide schema cache never flatters a figure. `TOOLGATE_BENCH_SET=DIR` writes the set
//! to `DIR` instead, to run the binary on it.

// Test code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The allocation-counting allocator below (the library itself forbids unsafe code).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::Instant;

use toolgate::{LayerOptions, LoadOptions, load};

mod support;
use support::ALLOCATOR;
// The tests' plain YAML reader, to write a quarter of the generated files as TOML.
#[path = "../tests/it/support/yaml.rs"]
mod yaml;

// The allocator the `toolgate` binary uses (see the `mimalloc` feature), wrapped to count
// the bytes live on the heap while `COUNTING` is on: what the snapshot holds, apart from the
// allocator's slack. Counting is off while the load is timed (shared counters would slow
// every allocation of the parallel load).
#[cfg(feature = "mimalloc")]
type Inner = mimalloc::MiMalloc;
#[cfg(not(feature = "mimalloc"))]
type Inner = std::alloc::System;

#[global_allocator]
static GLOBAL: Counting = Counting(Inner {});

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

struct Counting(Inner);

impl Counting {
    fn count(delta: isize) {
        if COUNTING.load(Ordering::Relaxed) {
            let live = LIVE.fetch_add(delta, Ordering::Relaxed) + delta;
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
    }

    /// Starts counting from zero.
    fn start() {
        LIVE.store(0, Ordering::SeqCst);
        PEAK.store(0, Ordering::SeqCst);
        COUNTING.store(true, Ordering::SeqCst);
    }

    /// Stops counting: (bytes allocated minus bytes freed since `start`, the peak of that).
    fn stop() -> (i64, i64) {
        COUNTING.store(false, Ordering::SeqCst);
        (
            LIVE.load(Ordering::SeqCst) as i64,
            PEAK.load(Ordering::SeqCst) as i64,
        )
    }
}

// SAFETY: every call is forwarded unchanged to the inner allocator, which upholds the
// `GlobalAlloc` contract; the wrapper only updates counters, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees are passed on unchanged.
        let ptr = unsafe { self.0.alloc(layout) };
        if !ptr.is_null() {
            Self::count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees are passed on unchanged.
        let ptr = unsafe { self.0.alloc_zeroed(layout) };
        if !ptr.is_null() {
            Self::count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's guarantees are passed on unchanged.
        unsafe { self.0.dealloc(ptr, layout) };
        Self::count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees are passed on unchanged.
        let new = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            Self::count(new_size as isize - layout.size() as isize);
        }
        new
    }
}

const FILES: usize = 100;
const TOOLS_PER_FILE: usize = 10;
const RULES_PER_FILE: usize = 100;

/// One generated policy file: 10 contracts and 100 rules. Every fourth file is TOML. Every
/// tool's input schema is distinct (a description names the tool), so each is compiled: the
/// process-wide schema cache, which compiles a schema once however many tools share it,
/// does not flatter the figure.
fn policy_file(file: usize) -> (String, String) {
    let mut yaml = String::from("version: 1\ntools:\n");
    for tool in 0..TOOLS_PER_FILE {
        let name = format!("Tool{file}_{tool}");
        let flags = match tool % 3 {
            0 => "{ concurrent_safe: true, read_only: true, side_effect_scope: none }",
            1 => "{ side_effect_scope: workspace }",
            _ => "{ destructive: true, side_effect_scope: external }",
        };
        yaml.push_str(&format!(
            r#"  {name}:
    aliases: [t{file}x{tool}]
    description: generated tool {tool} of file {file}
    input_schema:
      type: object
      required: [path]
      additionalProperties: false
      properties:
        path: {{ type: string, minLength: 1, pattern: "^[^\\u0000]+$", description: "what {name} reads" }}
        command: {{ type: string }}
        timeout: {{ type: integer, minimum: 1, maximum: 600000 }}
        mode: {{ enum: [fast, thorough] }}
        tags: {{ type: array, items: {{ type: string }}, maxItems: 8 }}
    concurrency: {flags}
    timeout: {{ default: 2m, max: 10m, override_field: timeout, cleanup_grace: 2s }}
    budget: {{ max_model: 30000, overflow: artifact, keep: tail, preview: 1000 }}
    permission: {{ default: ask }}
    display: {{ kind: text, when: always }}
    handler: {{ kind: command, argv: [tool-{tool}, --path, "{{{{input.path}}}}", "{{{{input.mode?}}}}"], env: [PATH, HOME] }}
"#
        ));
    }
    yaml.push_str("rules:\n");
    for rule in 0..RULES_PER_FILE {
        let tool = format!("Tool{file}_{}", rule % TOOLS_PER_FILE);
        let (matcher, example_match, example_not) = match rule % 5 {
            0 => (
                format!(r#"path: {{ path: ["src/r{rule}/**", "**/gen{rule}/*.rs"] }}"#),
                format!(r#"{{ path: src/r{rule}/a/b.rs }}"#),
                format!(r#"{{ path: docs/r{rule}.md }}"#),
            ),
            1 => (
                format!(r#"command: {{ shell: ["git status", "git diff *", "make t{rule} *"] }}"#),
                r#"{ path: x, command: "git diff HEAD -- src" }"#.to_owned(),
                r#"{ path: x, command: "git push; rm -rf /" }"#.to_owned(),
            ),
            2 => (
                format!(r#"path: {{ glob: "*.r{rule}" }}"#),
                format!(r#"{{ path: a.r{rule} }}"#),
                r#"{ path: a.txt }"#.to_owned(),
            ),
            3 => (
                format!(r#"path: {{ regex: "^/srv/r{rule}/[a-z]+\\.(log|txt)$" }}"#),
                format!(r#"{{ path: /srv/r{rule}/app.log }}"#),
                format!(r#"{{ path: /srv/r{rule}/APP.bin }}"#),
            ),
            _ => (
                "mode: { equals: thorough }\n      path: { exists: true }".to_owned(),
                r#"{ path: a, mode: thorough }"#.to_owned(),
                r#"{ path: a, mode: fast }"#.to_owned(),
            ),
        };
        let decision = ["allow", "ask", "deny"][rule % 3];
        yaml.push_str(&format!(
            "  - name: rule-{file}-{rule}\n    tools: [{tool}]\n    match:\n      {matcher}\n    decision: {decision}\n    priority: {}\n    reason: generated rule {rule}\n",
            rule % 7
        ));
        // One rule in ten pins its behaviour with examples.
        if rule % 10 == 0 {
            yaml.push_str(&format!(
                "    examples:\n      match: [{{ tool: {tool}, input: {example_match} }}]\n      not_match: [{{ tool: {tool}, input: {example_not} }}]\n"
            ));
        }
    }
    if file % 4 == 3 {
        let value = yaml::parse("generated.yaml", &yaml);
        let text = toml::to_string(&value).expect("generated policy as TOML");
        (format!("p{file:03}.toml"), text)
    } else {
        (format!("p{file:03}.yaml"), yaml)
    }
}

fn write_set(dir: &Path) -> usize {
    let mut bytes = 0;
    for file in 0..FILES {
        let (name, text) = policy_file(file);
        bytes += text.len();
        std::fs::write(dir.join(name), text).unwrap();
    }
    bytes
}

fn options(dir: &Path) -> LoadOptions {
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: false,
        enforced: Vec::new(),
        policies: vec![dir.to_owned()],
        ..Default::default()
    });
    options.workspace_root = "/workspace".into();
    options
}

/// CPU time of the whole process (every thread) so far, from `/proc/self/stat`, in
/// milliseconds. On a shared, loaded machine it says more than wall time about what an idle
/// one would see.
fn cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may contain spaces) start after the last `)`.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // Clock ticks are 1/100 s on Linux.
    Some((utime + stime) * 10.0)
}

/// Resident set size in bytes, from `/proc/self/statm`.
fn resident() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn headline(dir: &Path, bytes: usize) {
    let before = resident();
    let cpu_before = cpu_ms();
    let started = Instant::now();
    let outcome = load(&options(dir), 1);
    let cold = started.elapsed();
    let cpu = cpu_ms()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let after = resident();
    let snapshot = outcome.snapshot.unwrap_or_else(|| {
        let errors: Vec<String> = outcome
            .diagnostics
            .iter()
            .take(5)
            .map(|d| d.to_string())
            .collect();
        panic!("the generated set does not load: {errors:#?}")
    });
    assert_eq!(snapshot.tool_names().count(), FILES * TOOLS_PER_FILE + 10);
    assert!(snapshot.rule_count() >= FILES * RULES_PER_FILE);

    // No snapshot stays alive from here on: a later load must compile every schema again
    // rather than share the cold load's (see the schema cache), and the heap count must not
    // miss what a snapshot would share.
    let (tools, rules) = (snapshot.tool_names().count(), snapshot.rule_count());
    // What the snapshot itself keeps resident: the resident set with it and without it, each
    // measured once the allocator has handed its free pages back to the system (the load's
    // peak is otherwise kept for reuse, and would count as the snapshot's).
    let with_snapshot = return_free_pages().and_then(|()| resident());
    drop(snapshot);
    let without_snapshot = return_free_pages().and_then(|()| resident());
    let mut warm = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let again = load(&options(dir), 2);
        warm.push(started.elapsed());
        assert!(again.snapshot.is_some());
    }
    warm.sort();

    // The heap a snapshot holds, counted on one more load (counting is off while timing).
    Counting::start();
    let counted = load(&options(dir), 3).snapshot.unwrap();
    let (held, peak) = Counting::stop();
    drop(counted);

    println!(
        "load: {} files ({:.1} MB), {} tools, {} rules, {} warnings; allocator {ALLOCATOR}",
        FILES,
        mb(bytes as u64),
        tools,
        rules,
        outcome.diagnostics.len()
    );
    println!(
        "load: cold (first in process) {:.1} ms wall, {} CPU on {} cores; warm median {:.1} ms wall (target ≤ 150 ms)",
        cold.as_secs_f64() * 1000.0,
        cpu.map_or_else(|| "?".to_owned(), |ms| format!("{ms:.0} ms")),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        warm[warm.len() / 2].as_secs_f64() * 1000.0
    );
    println!(
        "load: heap held by the snapshot {:.1} MB (target < 50 MB); heap peak during a load {:.1} MB",
        mb(held.max(0) as u64),
        mb(peak.max(0) as u64)
    );
    match (before, after) {
        (Some(before), Some(after)) => println!(
            "load: resident {:.1} MB before, {:.1} MB after the cold load: +{:.1} MB (the snapshot, plus what the allocator keeps of the load's peak)",
            mb(before),
            mb(after),
            mb(after.saturating_sub(before))
        ),
        _ => println!("load: resident memory unavailable (no /proc/self/statm)"),
    }
    if let (Some(with), Some(without)) = (with_snapshot, without_snapshot) {
        println!(
            "load: resident memory the snapshot keeps {:.1} MB (target < 50 MB): {:.1} MB resident with it, {:.1} MB once it is dropped, each after the allocator returned its free pages",
            mb(with.saturating_sub(without)),
            mb(with),
            mb(without)
        );
    }
}

/// Makes the allocator return the pages it holds free to the system, so that the resident
/// set counts only live memory; `None` with an allocator that cannot be asked.
fn return_free_pages() -> Option<()> {
    #[cfg(feature = "mimalloc")]
    {
        unsafe extern "C" {
            /// mimalloc's `mi_collect`: with `force`, frees the pages of every heap that hold
            /// nothing live (the calling thread's, and those abandoned by ended threads).
            fn mi_collect(force: bool);
        }
        // SAFETY: `mi_collect` takes no pointers and may be called at any time; mimalloc is
        // the global allocator, so its symbol is linked in.
        unsafe { mi_collect(true) };
        Some(())
    }
    #[cfg(not(feature = "mimalloc"))]
    {
        None
    }
}

fn main() {
    // `TOOLGATE_BENCH_SET=DIR` writes the generated set to DIR and stops, to run the binary
    // on it (`TOOLGATE_LOG=debug toolgate --no-builtin -p DIR check` prints load phases).
    if let Some(dir) = std::env::var_os("TOOLGATE_BENCH_SET") {
        std::fs::create_dir_all(&dir).unwrap();
        let bytes = write_set(Path::new(&dir));
        println!(
            "load: wrote {FILES} files ({:.1} MB) to {}",
            mb(bytes as u64),
            Path::new(&dir).display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bytes = write_set(dir.path());
    headline(dir.path(), bytes);
    growth();
    // Keep the set on disk for the divan runs below.
    DIR.set(dir).unwrap();
    divan::main();
}

/// One file with `n` tools named `mcp_server{i % 1000}_t{i}` and `n` rules each naming its
/// tools by a glob (`mcp_server7_*`); with `broken`, every tool's `argv` is a boolean, so
/// the file has one schema error per tool (a large file with thousands of diagnostics).
fn glob_set(dir: &Path, n: usize, broken: bool) {
    use std::fmt::Write as _;
    let argv = if broken { "[true]" } else { "[\"true\"]" };
    let mut text = String::from("version: 1\ntools:\n");
    for i in 0..n {
        let _ = write!(
            text,
            "  mcp_server{}_t{i}:\n    description: x\n    permission: {{ default: allow }}\n    handler: {{ kind: command, argv: {argv} }}\n",
            i % 1000
        );
    }
    text.push_str("rules:\n");
    for r in 0..n {
        let _ = write!(
            text,
            "  - name: r{r}\n    tools: [\"mcp_server{}_*\"]\n    decision: deny\n",
            r % 1000
        );
    }
    std::fs::write(dir.join("p.yaml"), text).unwrap();
}

/// One file with `n` rules of one tool (`Bash`), each allowing its own command: the lint for
/// rules another rule shadows compared each rule with every rule of its tool.
fn one_tool_set(dir: &Path, n: usize) {
    use std::fmt::Write as _;
    let mut text = String::from("version: 1\nrules:\n");
    for r in 0..n {
        let _ = writeln!(
            text,
            "  - {{ name: r{r}, tools: [Bash], match: {{ command: {{ shell: [\"cmd{r} *\"] }} }}, decision: allow }}"
        );
    }
    std::fs::write(dir.join("p.yaml"), text).unwrap();
}

/// Median of `runs` timings of `work`, in milliseconds.
fn median_ms(runs: usize, mut work: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            work();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// The shapes whose cost once grew faster than the work (issue 19), at 1x and 4x the size,
/// with the growth ratio: linear work gives about 4x, quadratic about 16x.
/// - a set whose 2 500 rules name tools by glob (`mcp_server7_*`) over 2 500 tools: every
///   glob was tried against every tool; now one `GlobSet` for all;
/// - `check` in the human format on one large file with one diagnostic per tool: each
///   snippet scanned the file from its start; now the file's line index finds the lines;
/// - a set whose 2 500 rules are all `Bash` rules with a `match`: each rule was compared with
///   every rule of its tool for one that shadows it; now only with those without `match`.
fn growth() {
    let mut rows = Vec::new();
    // (shape, with one diagnostic per tool, on the built-in layer's `Bash`)
    for (shape, broken, bash) in [
        ("glob rules: load", false, false),
        ("human render", true, false),
        ("rules of one tool: load", false, true),
    ] {
        let mut times = Vec::new();
        for scale in [1, 4] {
            let dir = tempfile::tempdir().unwrap();
            if bash {
                one_tool_set(dir.path(), 2_500 * scale);
            } else {
                glob_set(dir.path(), 2_500 * scale, broken);
            }
            let mut options = LoadOptions::new(LayerOptions {
                no_builtin: !bash,
                enforced: Vec::new(),
                policies: vec![dir.path().to_owned()],
                ..Default::default()
            });
            options.workspace_root = "/workspace".into();
            let ms = if broken {
                let diagnostics = load(&options, 1).diagnostics;
                assert!(diagnostics.len() >= 2_500 * scale);
                let render = toolgate::HumanOptions::default();
                median_ms(3, || {
                    let text = toolgate::render_human(&diagnostics, &render);
                    assert!(!text.is_empty());
                })
            } else {
                median_ms(3, || {
                    assert!(load(&options, 1).snapshot.is_some());
                })
            };
            times.push(ms);
        }
        rows.push(format!(
            "{shape}: {:.0} ms at 1x, {:.0} ms at 4x, growth {:.1}x (linear: ~4x)",
            times[0],
            times[1],
            times[1] / times[0]
        ));
    }
    for row in rows {
        println!("growth: {row}");
    }
}

static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();

/// A whole load of the generated set (warm: schemas already compiled in this process).
#[divan::bench(sample_count = 10, sample_size = 1)]
fn load_1000_tools_10000_rules() -> usize {
    let dir = DIR.get().unwrap().path();
    let outcome = load(&options(dir), 1);
    outcome.snapshot.map_or(0, |s| s.tool_names().count())
}
