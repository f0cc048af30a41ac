//! Speed of permission decisions (issue 5, "Speed"): deciding one call against 10 000 rules
//! (target: median at most 2 µs with the per-tool index), and a call whose command line is
//! judged by many `shell` rules (parsed once per call and shared across rules). And the
//! shape of a policy converted from gemini-cli (issue 18, "Speed"): one tool with thousands
//! of rules that are each one `regex` over the same field, mostly not matching; deciding
//! against 10 000 of them must stay within 3× of 1 000.
//!
//! Every figure is measured through the public decision function, [`toolgate::assess`] on a
//! loaded snapshot (lookup, input normalisation, timeout and budget resolution and the
//! permission decision; the tools declare no input schema, so nothing is validated): what
//! `plan`, `toolgate test` and a run do for each call before anything runs. The policies are
//! generated as TOML files and loaded with [`toolgate::load`].
//!
//! Run with `cargo bench --bench decide`. Before divan's table, `main` prints the headline
//! medians measured with a plain loop: one call against 10 008 rules (and the same in `plan`
//! mode, and the first decision for the tool, which builds its rules' automata), a
//! 200-character compound command line against 20 `shell` rules, and one call against
//! 1 000 / 10 000 `regex` rules on one field with their ratio.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Instant;

use divan::{Bencher, black_box};
use serde_json::{Map, Value, json};
use toolgate::{Decision, ModeName, Snapshot, ToolCall, assess};

mod support;
use support::ALLOCATOR;

// The allocator the `toolgate` binary uses (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TOOLS: usize = 1000;
const RULES_PER_TOOL: usize = 10;
/// The decided tool: it has its own ten rules plus the wildcard ones, like every tool.
const DECIDED: usize = 500;

/// A compound command of about 200 characters, like the shell matcher bench's. The command
/// substitution is the operand of a program the command table does not know (`tool0`), any
/// of whose words may name a file: its value is only known when it runs, so the line asks,
/// after every part is judged as for a line that is allowed.
const LINE: &str = "git status && git diff --stat HEAD~3..HEAD -- src/ && ls -la src/policy | ls; \
nice tool0 \"$(git status)\" 2>&1 >/dev/null && ls 'my dir' *.rs || git diff HEAD~1 -- README.md Cargo.toml engine/lib.rs docs/ tests/";

fn tool(i: usize) -> String {
    format!("mcp__server{}__tool_{i:04}", i % 17)
}

/// Ten rules per tool, over 1000 tools, plus wildcard rules: 10 000 + 8 rules in all. The
/// rules of a tool mix every cheap matcher kind and priorities, so deciding walks several
/// precedence levels before a match.
fn rules() -> Vec<Value> {
    let mut rules = Vec::with_capacity(TOOLS * RULES_PER_TOOL + 8);
    for i in 0..TOOLS {
        let t = tool(i);
        rules.push(json!({"name": format!("r{i}-secrets"), "tools": [t], "match": {"file_path": {"path": ["**/.env", "**/secrets/**", "**/*.pem"]}}, "decision": "deny", "priority": 100}));
        rules.push(json!({"name": format!("r{i}-prod"), "tools": [t], "match": {"target": {"equals": "prod"}}, "decision": "deny", "priority": 90}));
        rules.push(json!({"name": format!("r{i}-force"), "tools": [t], "match": {"/options/force": {"equals": true}}, "decision": "ask", "priority": 80}));
        rules.push(json!({"name": format!("r{i}-big"), "tools": [t], "match": {"limit": {"exists": true}, "name": {"regex": ["^huge-"]}}, "decision": "ask", "priority": 50}));
        rules.push(json!({"name": format!("r{i}-tmp"), "tools": [t], "match": {"file_path": {"glob": ["/tmp/*"]}}, "decision": "allow", "priority": 40}));
        rules.push(json!({"name": format!("r{i}-vendor"), "tools": [t], "match": {"file_path": {"path": ["vendor/**", "third_party/**"]}}, "decision": "deny", "priority": 10}));
        rules.push(json!({"name": format!("r{i}-docs"), "tools": [t], "match": {"file_path": {"path": ["docs/**/*.md"]}}, "decision": "allow", "priority": 5}));
        rules.push(json!({"name": format!("r{i}-named"), "tools": [t], "match": {"name": {"glob": ["report-*", "draft-*"]}}, "decision": "ask"}));
        rules.push(json!({"name": format!("r{i}-src"), "tools": [t], "match": {"file_path": {"path": ["src/**"]}}, "decision": "allow"}));
        rules.push(
            json!({"name": format!("r{i}-any"), "tools": [t], "decision": "ask", "priority": -10}),
        );
    }
    for (k, scope) in ["external", "session", "workspace", "none"]
        .iter()
        .enumerate()
    {
        rules.push(json!({"name": format!("plan-{k}"), "tools": ["*"], "modes": ["plan"], "when": {"side_effect_scope": [scope]}, "decision": "deny", "priority": 95}));
        rules.push(json!({"name": format!("mcp-{k}"), "tools": [format!("mcp__server{k}__*")], "when": {"destructive": true}, "decision": "ask", "priority": 60}));
    }
    rules
}

/// A tool contract as the original rule-set bench assumed it: not destructive, workspace
/// scope, asked by default, a native handler.
fn contract() -> Value {
    json!({
        "concurrency": {"concurrent_safe": false, "read_only": false, "side_effect_scope": "workspace"},
        "permission": {"default": "ask"},
        "handler": {"kind": "native"},
    })
}

/// A policy declaring `tools` (each with [`contract`]), the `plan` mode and `rules`.
fn policy(tools: &[&str], rules: Vec<Value>) -> Value {
    let tools: Map<String, Value> = tools
        .iter()
        .map(|name| ((*name).to_owned(), contract()))
        .collect();
    json!({"version": 1, "modes": {"plan": {}}, "tools": tools, "rules": rules})
}

struct Fixture {
    snapshot: Arc<Snapshot>,
    tool: String,
    rules: usize,
}

impl Fixture {
    fn ten_thousand() -> Self {
        let names: Vec<String> = (0..TOOLS).map(tool).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let rules = rules();
        let count = rules.len();
        assert_eq!(count, TOOLS * RULES_PER_TOOL + 8);
        Self {
            snapshot: support::snapshot_of_value(&policy(&names, rules), false),
            tool: tool(DECIDED),
            rules: count,
        }
    }

    fn shell() -> Self {
        // Twenty `shell` rules on one tool: denies that match nothing, asks, then the allow
        // that decides. Each judges the same command line. The tool is not the built-in
        // `Bash`, so only these rules apply; the built-in layer gives the command table.
        let tool = "BenchShell";
        let mut values = Vec::new();
        for k in 0..8 {
            values.push(json!({"name": format!("deny-{k}"), "tools": [tool], "match": {"command": {"shell": [format!("rm{k} *"), format!("curl{k} *"), "sudo *"]}}, "decision": "deny", "priority": 100 - k}));
        }
        for k in 0..8 {
            values.push(json!({"name": format!("ask-{k}"), "tools": [tool], "match": {"command": {"shell": [format!("npm{k} publish *"), format!("cargo{k} publish *")]}}, "decision": "ask", "priority": 50 - k}));
        }
        for k in 0..4 {
            values.push(json!({"name": format!("allow-{k}"), "tools": [tool], "match": {"command": {"shell": ["git status", "git diff *", "ls *", format!("tool{k} *")]}}, "decision": "allow", "priority": -k}));
        }
        let rules = values.len();
        Self {
            snapshot: support::snapshot_of_value(&policy(&[tool], values), true),
            tool: tool.to_owned(),
            rules,
        }
    }

    /// `count` rules on one tool, each one `regex` over its `command` (the shape of a policy
    /// converted from gemini-cli), with mixed decisions and priorities. Only the last,
    /// `^git\s+status\b` (allow, the lowest priority), matches [`regex_input`], so every
    /// precedence level is consulted before it decides.
    fn regex_rules(count: usize) -> Self {
        let mut values = Vec::with_capacity(count);
        for k in 0..count - 1 {
            let (pattern, decision) = match k % 8 {
                0 => (format!(r"^git{k}\s+status\b"), "allow"),
                1 => (format!(r"\brm{k}\s+-rf\b"), "deny"),
                2 => (format!(r"^npm{k} (test|run)"), "allow"),
                3 => (format!(r"^curl{k}\s+https?://"), "ask"),
                4 => (format!(r"^cat\s+/etc/conf{k}\b"), "deny"),
                5 => (format!(r"^(ls|dir){k}(\s+-[a-z]+)*$"), "allow"),
                6 => (format!(r"\bsudo{k}\s"), "deny"),
                _ => (format!(r"^python{k}\s+-m\s+pytest\b"), "allow"),
            };
            values.push(json!({"name": format!("rule-{k}"), "tools": ["run_shell_command"], "match": {"command": {"regex": pattern}}, "decision": decision, "priority": 10 + (k % 5) as i32 * 10}));
        }
        values.push(json!({"name": "git-status", "tools": ["run_shell_command"], "match": {"command": {"regex": r"^git\s+status\b"}}, "decision": "allow"}));
        Self {
            snapshot: support::snapshot_of_value(
                &policy(&["run_shell_command", "read_file"], values),
                false,
            ),
            tool: "run_shell_command".to_owned(),
            rules: count,
        }
    }

    /// The call to decide: `input` for the fixture's tool.
    fn call(&self, input: Value) -> ToolCall {
        ToolCall::new("c1", self.tool.as_str(), input)
    }

    fn decide(&self, call: &ToolCall, modes: &[ModeName]) -> Decision {
        let assessment = assess(&self.snapshot, modes, call);
        match assessment.permission() {
            Some(permission) => permission.decision,
            None => panic!("{}: {:?}", call.tool, assessment.rejection()),
        }
    }
}

/// The input the 10 000-rule benches decide: it matches only `r500-src` (allow, priority 0),
/// so every higher precedence level of the tool is evaluated first.
fn input() -> Value {
    json!({"file_path": "./src/../src/policy/rules.rs", "name": "notes", "target": "staging", "options": {"force": false}})
}

/// The call the regex-rule benches decide: only the last rule (`git-status`) matches it.
fn regex_input() -> Value {
    json!({"command": "git status --short"})
}

/// Median nanoseconds per call of `f`, over 201 samples.
fn median_ns(mut f: impl FnMut()) -> f64 {
    let mut iterations = 1u32;
    loop {
        let start = Instant::now();
        for _ in 0..iterations {
            f();
        }
        if start.elapsed().as_micros() >= 200 || iterations >= 1 << 20 {
            break;
        }
        iterations *= 2;
    }
    let mut samples: Vec<f64> = (0..201)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                f();
            }
            start.elapsed().as_nanos() as f64 / f64::from(iterations)
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    println!("allocator: {ALLOCATOR}");
    let big = Fixture::ten_thousand();
    let input = big.call(input());
    // The first decision for a tool builds the glob and regex automata of the rules it
    // consults (they are built on first use, not at load): its cost, once per tool and
    // snapshot, beside the steady state measured below.
    let started = Instant::now();
    assert_eq!(big.decide(&input, &[]), Decision::Allow);
    let first = started.elapsed();
    let plan = [ModeName::new("plan")];
    assert_eq!(big.decide(&input, &plan), Decision::Deny);
    let decide = median_ns(|| {
        black_box(big.decide(black_box(&input), &[]));
    });
    let decide_plan = median_ns(|| {
        black_box(big.decide(black_box(&input), &plan));
    });
    let shell = Fixture::shell();
    let line = shell.call(json!({ "command": LINE }));
    assert_eq!(shell.decide(&line, &[]), Decision::Ask);
    let decide_shell = median_ns(|| {
        black_box(shell.decide(black_box(&line), &[]));
    });
    let regex_1k = Fixture::regex_rules(1_000);
    let regex_10k = Fixture::regex_rules(10_000);
    let call = regex_1k.call(regex_input());
    let mut firsts = Vec::new();
    for fixture in [&regex_1k, &regex_10k] {
        let started = Instant::now();
        assert_eq!(fixture.decide(&call, &[]), Decision::Allow);
        firsts.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let decide_regex_1k = median_ns(|| {
        black_box(regex_1k.decide(black_box(&call), &[]));
    });
    let decide_regex_10k = median_ns(|| {
        black_box(regex_10k.decide(black_box(&call), &[]));
    });
    println!(
        "decide one call against {} rules ({TOOLS} tools), through `assess`: median {:.2} µs (target ≤ 5 µs)",
        big.rules,
        decide / 1000.0
    );
    println!(
        "  same call in plan mode (decided by a wildcard rule): median {:.2} µs",
        decide_plan / 1000.0
    );
    println!(
        "  the first decision for that tool, building its rules' automata: {:.0} µs (once per tool and snapshot)",
        first.as_secs_f64() * 1e6
    );
    println!(
        "decide a {}-char command line against {} shell rules, through `assess`: median {:.2} µs (parsed once per call)",
        LINE.chars().count(),
        shell.rules,
        decide_shell / 1000.0
    );
    println!(
        "decide one call against {} / {} regex rules on one field, through `assess`: median {:.2} µs / {:.2} µs, ratio {:.2} (target ≤ 3)",
        regex_1k.rules,
        regex_10k.rules,
        decide_regex_1k / 1000.0,
        decide_regex_10k / 1000.0,
        decide_regex_10k / decide_regex_1k
    );
    println!(
        "  the first decision, building the automata: {:.1} ms / {:.1} ms",
        firsts[0], firsts[1]
    );
    divan::main();
}

/// One call against 10 000 rules: the tool's own rules and the wildcard rules are walked.
#[divan::bench]
fn decide_10k_rules(bencher: Bencher) {
    let big = Fixture::ten_thousand();
    let input = big.call(input());
    bencher.bench(|| big.decide(black_box(&input), &[]));
}

/// The same in `plan` mode: a wildcard rule of higher priority decides.
#[divan::bench]
fn decide_10k_rules_plan_mode(bencher: Bencher) {
    let big = Fixture::ten_thousand();
    let input = big.call(input());
    let plan = [ModeName::new("plan")];
    bencher.bench(|| big.decide(black_box(&input), &plan));
}

/// Twenty `shell` rules judging one 200-character command line.
#[divan::bench]
fn decide_20_shell_rules_200_chars(bencher: Bencher) {
    let shell = Fixture::shell();
    let line = shell.call(json!({ "command": LINE }));
    bencher.bench(|| shell.decide(black_box(&line), &[]));
}

/// One call against 1 000 `regex` rules on one field of one tool.
#[divan::bench]
fn decide_1k_regex_rules(bencher: Bencher) {
    let rules = Fixture::regex_rules(1_000);
    let call = rules.call(regex_input());
    bencher.bench(|| rules.decide(black_box(&call), &[]));
}

/// One call against 10 000 `regex` rules on one field of one tool.
#[divan::bench]
fn decide_10k_regex_rules(bencher: Bencher) {
    let rules = Fixture::regex_rules(10_000);
    let call = rules.call(regex_input());
    bencher.bench(|| rules.decide(black_box(&call), &[]));
}
