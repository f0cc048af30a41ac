//! Deciding takes a fast path for the rules it walks past (a parse cache, no explanation);
//! it must agree with the full evaluation that explains a decision, for every rule and any
//! input. On the fixture policies of the permission tests (`tests/fixtures/permission/rules`).

use std::path::PathBuf;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::json;

use crate::policy::matcher::ParseCache;
use crate::policy::rule::CallFacts;
use crate::{LayerOptions, LoadOptions, ModeName, Snapshot, load};

const ROOT: &str = "tests/fixtures/permission/rules";
const TOOLS: &[&str] = &[
    "Bash", "Read", "Write", "Fetch", "Search", "Purge", "Deploy",
];

fn snapshot() -> Arc<Snapshot> {
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        enforced: vec![PathBuf::from(ROOT).join("org")],
        policies: vec![PathBuf::from(ROOT).join("project")],
        ..Default::default()
    });
    options.workspace_root = PathBuf::from("/ws");
    let outcome = load(&options, 1);
    match outcome.snapshot {
        Some(snapshot) => snapshot,
        None => panic!("fixture policies must load: {:#?}", outcome.diagnostics),
    }
}

fn command_line() -> impl Strategy<Value = String> {
    let words = prop::sample::select(vec![
        "git", "status", "diff", "ls", "rm", "-rf", "make", "npm", "curl", "sudo", "cargo",
        "build", "test", "x", ";", "&&", "|", "$(", ")", "'", "\"", ">", "out", "\n", "{", "}",
        "`",
    ]);
    prop::collection::vec(words, 0..10).prop_map(|w| w.join(" "))
}

fn file_path() -> impl Strategy<Value = String> {
    let parts = prop::sample::select(vec![
        ".", "..", "", "src", ".env", "secrets", "a", "/ws", "/", "x.rs", ".envrc",
    ]);
    prop::collection::vec(parts, 0..6).prop_map(|p| p.join("/"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_fast_path_agrees_with_the_explanation(
        command in command_line(),
        path in file_path(),
        background in any::<bool>(),
        plan in any::<bool>(),
    ) {
        let snapshot = snapshot_cached();
        let modes: Vec<ModeName> = if plan { vec![ModeName::new("plan")] } else { vec![] };
        let input = json!({"command": command, "file_path": path, "run_in_background": background, "target": "staging"});
        for tool in TOOLS {
            let tool = snapshot.lookup(tool).unwrap();
            let contract = tool.resolved_for(&modes, &snapshot.engine);
            let facts = CallFacts { tool: &tool.name, input: &input, modes: &modes, flags: &contract.concurrency };
            let mut cache = ParseCache::default();
            for rule in snapshot.rules.for_tool(&tool.name) {
                let fast = rule.holds_with_cache(&facts, &snapshot.match_ctx, &mut cache);
                let (full, _) = rule.evaluate(&facts, &snapshot.match_ctx);
                prop_assert_eq!(fast, full, "rule {} on {} {}", rule.name, tool.name, input);
            }
        }
    }
}

fn snapshot_cached() -> Arc<Snapshot> {
    static SNAPSHOT: std::sync::OnceLock<Arc<Snapshot>> = std::sync::OnceLock::new();
    Arc::clone(SNAPSHOT.get_or_init(snapshot))
}
