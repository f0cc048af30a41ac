//! Speed of the argument matchers (issue 5, "Speed"): a 200-character compound command
//! through the shell matcher (target: median at most 20 µs) and a path match.
//!
//! Run with `cargo bench --bench shell_matcher`; divan prints the figures.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use divan::{Bencher, black_box};
use indexmap::IndexMap;
use serde_json::json;
use toolgate::model::rule::ArgMatcher;
use toolgate::policy::{
    CompiledArgMatchers, MatchContext, MatchMode, PathCase, PathMatcher, RedirectionPolicy,
    ShellMatcher, parse_script,
};

mod support;
use support::ALLOCATOR;

// The allocator the `toolgate` binary uses (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A 200-character compound command: `&&`, `||`, `|`, `;`, a wrapper, a command
/// substitution inside double quotes, redirections, quoting and a glob.
const LINE: &str = "git status && git diff --stat HEAD~3..HEAD -- src/ && ls -la src/policy | ls; \
nice git diff \"$(git status)\" 2>&1 >/dev/null && ls 'my dir' *.rs || git diff HEAD~1 -- README.md Cargo.toml engine/lib.rs";

fn main() {
    println!(
        "compound command: {} characters; allocator: {ALLOCATOR}",
        LINE.chars().count()
    );
    divan::main();
}

fn allow() -> ShellMatcher {
    let patterns = ["git status", "git diff *", "ls *", "cargo test *"].map(String::from);
    ShellMatcher::compile(&patterns, RedirectionPolicy::Forbidden).unwrap()
}

/// Parse, split and judge the whole line as an allow rule (every command must match).
#[divan::bench]
fn shell_allow_200_chars(bencher: Bencher) {
    let matcher = allow();
    assert!(matcher.evaluate(LINE, MatchMode::All).holds());
    bencher.bench(|| matcher.evaluate(black_box(LINE), MatchMode::All));
}

/// The same line judged as a deny rule that matches none of its commands (worst case).
#[divan::bench]
fn shell_deny_200_chars(bencher: Bencher) {
    let patterns = ["rm *", "curl *", "sudo *"].map(String::from);
    let matcher = ShellMatcher::compile(&patterns, RedirectionPolicy::Forbidden).unwrap();
    assert!(!matcher.evaluate(LINE, MatchMode::Any).holds());
    bencher.bench(|| matcher.evaluate(black_box(LINE), MatchMode::Any));
}

/// Judging an already parsed line (what each further rule costs when a call's command line
/// is parsed once and shared across rules with `evaluate_script`).
#[divan::bench]
fn shell_judge_parsed_200_chars(bencher: Bencher) {
    let matcher = allow();
    let parsed = parse_script(LINE);
    bencher.bench(|| matcher.evaluate_script(black_box(&parsed), MatchMode::All));
}

/// Parsing and splitting alone.
#[divan::bench]
fn shell_split_200_chars() -> usize {
    parse_script(black_box(LINE)).unwrap().commands.len()
}

/// One path argument normalised and matched against deny globs.
#[divan::bench]
fn path_match(bencher: Bencher) {
    let ctx = MatchContext::new("/home/dev/project").with_path_case(PathCase::Sensitive);
    let patterns = ["**/.env", "**/secrets/**", "**/*.pem", "/etc/**"].map(String::from);
    let matcher = PathMatcher::compile(&patterns).unwrap();
    assert!(
        matcher
            .matches("./src/../config/.env", &ctx)
            .pattern
            .is_some()
    );
    bencher.bench(|| matcher.matches(black_box("./src/../config/secrets/db.yaml"), &ctx));
}

/// A whole rule's matchers (a path and a shell matcher) against a tool input.
#[divan::bench]
fn rule_matchers(bencher: Bencher) {
    let specs: IndexMap<String, ArgMatcher> = serde_json::from_value(json!({
        "command": { "shell": ["git status", "git diff *", "ls *"] },
        "/options/cwd": { "path": ["**"] },
    }))
    .unwrap();
    let matchers = CompiledArgMatchers::compile(&specs).unwrap();
    let ctx = MatchContext::new("/home/dev/project");
    let input = json!({ "command": "git status && git diff HEAD~1", "options": { "cwd": "src" } });
    assert!(matchers.matches(&input, &ctx, MatchMode::All).matched);
    bencher.bench(|| matchers.matches(black_box(&input), &ctx, MatchMode::All));
}
