//! Speed of the argument matchers (issue 5, "Speed"; issue 17 sets ≤ 30 µs median for the
//! shell matcher): a 200-character compound command judged by `shell` rules, and a path
//! match. Measured through the public decision function, [`toolgate::assess`], on a loaded
//! snapshot: each figure is one whole decision of one call (lookup, input normalisation,
//! timeout and budget resolution, the permission decision) whose cost is dominated by the
//! matcher named (the tools declare no input schema, so nothing is validated).
//!
//! Run with `cargo bench --bench shell_matcher`; divan prints the figures:
//! - `shell_allow_200_chars`: the line parsed, split and judged by one allow rule (every
//!   command must match) — the shell matcher's headline figure;
//! - `shell_allow_200_chars_in_a_repository`: the same in a workspace that exists, a
//!   repository holding the files the line names (the others' workspace does not exist);
//! - `shell_deny_200_chars`: the same line judged by a deny rule matching none of its
//!   commands (the worst case: every command is compared with every pattern);
//! - `shell_allow_200_chars_10_rules`: the line judged by ten allow rules; the line is
//!   parsed once per call, so the difference to `shell_allow_200_chars`, over nine, is what
//!   each further rule costs;
//! - `path_match`: one path argument located and matched against deny globs;
//! - `rule_matchers`: one rule with a path and a shell matcher against a tool input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use divan::{Bencher, black_box};
use serde_json::{Value, json};
use toolgate::{Decision, Snapshot, ToolCall, assess};

mod support;
use support::ALLOCATOR;

// The allocator the `toolgate` binary uses (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A 200-character compound command: `&&`, `||`, `|`, `;`, a wrapper, a command
/// substitution inside double quotes, redirections, quoting and a glob. The substitution is
/// `echo`'s text: a word only known when it runs asks as a file operand (of `ls`), and as
/// an operand of a program with options that run code (`cargo test`, whose `--config` does).
const LINE: &str = "git status && git diff --stat HEAD~3..HEAD -- src/ && ls -la src/policy | ls; \
nice echo \"$(git status)\" 2>&1 >/dev/null && ls 'my dir' *.rs || git diff HEAD~1 -- README.md Cargo.toml engine/lib.rs";

/// The tool every rule is on: not the built-in `Bash`, so only the bench's rules apply (the
/// built-in layer is loaded for its command table).
const TOOL: &str = "BenchShell";

fn main() {
    println!(
        "compound command: {} characters; allocator: {ALLOCATOR}; every figure is one `assess` call",
        LINE.chars().count()
    );
    divan::main();
}

/// A snapshot of [`TOOL`] (asked by default) with `rules`.
fn snapshot(rules: Value) -> Arc<Snapshot> {
    snapshot_in(rules, Path::new("/home/dev/project"))
}

/// Like [`snapshot`], for the workspace `workspace`.
fn snapshot_in(rules: Value, workspace: &Path) -> Arc<Snapshot> {
    let policy = json!({
        "version": 1,
        "tools": {TOOL: {
            "concurrency": {"concurrent_safe": false, "read_only": false, "side_effect_scope": "workspace"},
            "permission": {"default": "ask"},
            "handler": {"kind": "native"},
        }},
        "rules": rules,
    });
    support::snapshot_of_value_in(&policy, true, workspace)
}

fn decide(snapshot: &Snapshot, call: &ToolCall) -> Decision {
    let assessment = assess(snapshot, &[], call);
    match assessment.permission() {
        Some(permission) => permission.decision,
        None => panic!("{:?}", assessment.rejection()),
    }
}

fn allow_rule(name: &str) -> Value {
    json!({"name": name, "tools": [TOOL], "match": {"command": {"shell": ["git status", "git diff *", "ls *", "echo *"]}}, "decision": "allow"})
}

fn line() -> ToolCall {
    ToolCall::new("c1", TOOL, json!({ "command": LINE }))
}

/// Parse, split and judge the whole line as an allow rule (every command must match).
#[divan::bench]
fn shell_allow_200_chars(bencher: Bencher) {
    let snapshot = snapshot(json!([allow_rule("allow")]));
    let call = line();
    assert_eq!(decide(&snapshot, &call), Decision::Allow);
    bencher.bench(|| decide(&snapshot, black_box(&call)));
}

/// The same line and rule in a workspace that exists: a git repository holding the files and
/// folders the line names, so the file system answers as it does for an agent (the other
/// figures' workspace, `/home/dev/project`, does not exist, and every lookup in it fails at
/// its first missing folder).
#[divan::bench]
fn shell_allow_200_chars_in_a_repository(bencher: Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for folder in ["src/policy", "engine", "my dir"] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
    }
    for file in [
        "README.md",
        "Cargo.toml",
        "engine/lib.rs",
        "build.rs",
        "src/main.rs",
    ] {
        std::fs::write(root.join(file), "x\n").unwrap();
    }
    // A repository as `git init` lays it out (git itself may be missing where benches run).
    std::fs::create_dir_all(root.join(".git/objects")).unwrap();
    std::fs::create_dir_all(root.join(".git/refs/heads")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        root.join(".git/config"),
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
    )
    .unwrap();
    let snapshot = snapshot_in(json!([allow_rule("allow")]), &root);
    let call = line();
    assert_eq!(decide(&snapshot, &call), Decision::Allow);
    bencher.bench(|| decide(&snapshot, black_box(&call)));
}

/// The same line judged as a deny rule that matches none of its commands (worst case); the
/// tool's default (ask) decides.
#[divan::bench]
fn shell_deny_200_chars(bencher: Bencher) {
    let snapshot = snapshot(json!([
        {"name": "deny", "tools": [TOOL], "match": {"command": {"shell": ["rm *", "curl *", "sudo *"]}}, "decision": "deny"}
    ]));
    let call = line();
    assert_eq!(decide(&snapshot, &call), Decision::Ask);
    bencher.bench(|| decide(&snapshot, black_box(&call)));
}

/// The same line judged by ten allow rules of falling priority: parsed once, judged ten
/// times.
#[divan::bench]
fn shell_allow_200_chars_10_rules(bencher: Bencher) {
    let rules: Vec<Value> = (0..10)
        .map(|k| {
            let mut rule = allow_rule(&format!("allow-{k}"));
            rule["priority"] = json!(-k);
            rule
        })
        .collect();
    let snapshot = snapshot(Value::Array(rules));
    let call = line();
    assert_eq!(decide(&snapshot, &call), Decision::Allow);
    bencher.bench(|| decide(&snapshot, black_box(&call)));
}

/// One path argument located and matched against deny globs.
#[divan::bench]
fn path_match(bencher: Bencher) {
    let snapshot = snapshot(json!([
        {"name": "secrets", "tools": [TOOL], "match": {"file_path": {"path": ["**/.env", "**/secrets/**", "**/*.pem", "/etc/**"]}}, "decision": "deny"}
    ]));
    let env = ToolCall::new("c0", TOOL, json!({"file_path": "./src/../config/.env"}));
    assert_eq!(decide(&snapshot, &env), Decision::Deny);
    let call = ToolCall::new(
        "c1",
        TOOL,
        json!({"file_path": "./src/../config/secrets/db.yaml"}),
    );
    bencher.bench(|| decide(&snapshot, black_box(&call)));
}

/// A whole rule's matchers (a path and a shell matcher) against a tool input.
#[divan::bench]
fn rule_matchers(bencher: Bencher) {
    let snapshot = snapshot(json!([
        {"name": "both", "tools": [TOOL], "match": {
            "command": { "shell": ["git status", "git diff *", "ls *"] },
            "/options/cwd": { "path": ["**"] },
        }, "decision": "allow"}
    ]));
    let call = ToolCall::new(
        "c1",
        TOOL,
        json!({ "command": "git status && git diff HEAD~1", "options": { "cwd": "src" } }),
    );
    assert_eq!(decide(&snapshot, &call), Decision::Allow);
    bencher.bench(|| decide(&snapshot, black_box(&call)));
}
