//! Rule-level permission (SPEC §7.1, §7.2; issue 5 items 1, 4 and the rule-level security
//! tests) on a real policy snapshot loaded from `tests/fixtures/permission/rules/`: an
//! enforced organisation layer (`org/`) under a project layer (`project/`), built-ins off.
//!
//! Decisions are checked two ways: pure (`Engine::plan`, the rules and `combine`) and through
//! the whole call pipeline with native handlers that record every call they receive, so a
//! test can tell that a denied call never reached its handler.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use crate::support::batch::{Calls, recording, run_with};
use serde_json::{Value, json};
use toolgate::CallStatus;
use toolgate::Reason;
use toolgate::{ApprovalAnswer, ApprovalBroker, FixedAnswer};
use toolgate::{Batch, Engine};
use toolgate::{CallResult, ErrorCode, ToolCall};
use toolgate::{Decision, ModeName};
use toolgate::{LayerOptions, LoadOptions, Snapshot, load};

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

/// An engine whose every tool is a native handler recording what it receives.
fn engine() -> (Engine, Calls) {
    let calls: Calls = Arc::default();
    let builder = recording(Engine::builder(snapshot()), TOOLS, &calls, |name, _| {
        format!("{name} ran")
    });
    (builder.build(), calls)
}

async fn run_one(tool: &str, input: Value) -> (CallResult, Calls) {
    let (engine, calls) = engine();
    let outcome = run_with(&engine, &[(tool, input)], &[], None).await;
    (outcome.results.into_iter().next().unwrap(), calls)
}

/// The permission of one call, planned (no hook, handler or approver runs).
fn planned(tool: &str, input: Value, modes: &[&str]) -> (String, Vec<Reason>) {
    let (engine, _) = engine();
    let modes: Vec<ModeName> = modes.iter().map(|m| ModeName::new(*m)).collect();
    let batch = Batch::new(vec![ToolCall::new("c", tool, input)]);
    let plan = engine.plan(&batch, &modes).unwrap();
    let call = plan.calls.into_iter().next().unwrap();
    (call.decision.as_str().to_owned(), call.reasons)
}

fn rule_names(reasons: &[Reason]) -> Vec<String> {
    reasons.iter().map(Reason::label).collect()
}

/// Every claim of SPEC §7.2 on one table, snapshotted with the rules' places.
#[test]
fn decision_table() {
    let cases: &[(&str, &str, Value, &[&str])] = &[
        (
            "enforced deny beats a priority-1000 allow",
            "Bash",
            json!({"command": "curl https://example.com"}),
            &[],
        ),
        (
            "highest priority decides",
            "Bash",
            json!({"command": "make all"}),
            &[],
        ),
        (
            "deny beats ask and allow at equal priority",
            "Bash",
            json!({"command": "rm notes.txt"}),
            &[],
        ),
        (
            "every deny of the winning level is reported",
            "Bash",
            json!({"command": "rm -rf build"}),
            &[],
        ),
        (
            "ask beats allow at equal priority",
            "Bash",
            json!({"command": "npm install"}),
            &[],
        ),
        (
            "contract default when nothing matches",
            "Bash",
            json!({"command": "python3 x.py"}),
            &[],
        ),
        (
            "contract default in another mode",
            "Bash",
            json!({"command": "python3 x.py"}),
            &["offpeak"],
        ),
        (
            "when: read_only false, external scope",
            "Fetch",
            json!({"url": "https://x"}),
            &[],
        ),
        ("when: destructive", "Purge", json!({}), &[]),
        (
            "when: concurrent_safe and read_only",
            "Search",
            json!({"pattern": "x"}),
            &[],
        ),
        (
            "modes: plan denies what is not read-only",
            "Write",
            json!({"file_path": "src/a.rs"}),
            &["plan"],
        ),
        (
            "modes: plan leaves readers alone",
            "Read",
            json!({"file_path": "src/a.rs"}),
            &["plan"],
        ),
        (
            "modes: offpeak background",
            "Bash",
            json!({"command": "npm run dev", "run_in_background": true}),
            &["offpeak"],
        ),
        (
            "modes: background outside offpeak",
            "Bash",
            json!({"command": "ls x", "run_in_background": true}),
            &[],
        ),
        (
            "always_ask turns a rule's allow into ask",
            "Deploy",
            json!({"target": "staging"}),
            &[],
        ),
        (
            "always_ask turns the default allow into ask",
            "Deploy",
            json!({"target": "prod"}),
            &[],
        ),
        (
            "path: secrets beat an allow of lower priority",
            "Write",
            json!({"file_path": "src/secrets/key"}),
            &[],
        ),
        (
            "path: a source write",
            "Write",
            json!({"file_path": "./src/./lib.rs"}),
            &[],
        ),
    ];
    let mut table = String::new();
    for (label, tool, input, modes) in cases {
        let (decision, reasons) = planned(tool, input.clone(), modes);
        table.push_str(&format!("{label}\n  {tool} {input}"));
        if !modes.is_empty() {
            table.push_str(&format!(" modes {modes:?}"));
        }
        table.push_str(&format!("\n  => {decision}\n"));
        for reason in &reasons {
            table.push_str(&format!(
                "     {}\n",
                serde_json::to_string(reason).unwrap()
            ));
        }
    }
    insta::assert_snapshot!(table);
}

#[test]
fn enforced_denies_win_over_any_priority() {
    let (decision, reasons) = planned("Bash", json!({"command": "curl https://example.com"}), &[]);
    assert_eq!(decision, "deny");
    assert_eq!(rule_names(&reasons), ["rule:org-no-curl"]);
    let Reason::Rule {
        enforced, location, ..
    } = &reasons[0]
    else {
        panic!("a rule decides")
    };
    assert!(enforced);
    assert_eq!(
        location.as_deref(),
        Some("tests/fixtures/permission/rules/org/org.yaml:4:5")
    );
}

#[test]
fn precedence_levels() {
    let table: &[(&str, &str, &[&str])] = &[
        ("make all", "allow", &["rule:allow-make"]),
        ("rm notes.txt", "deny", &["rule:deny-rm"]),
        ("rm -rf build", "deny", &["rule:deny-rm", "rule:deny-rm-rf"]),
        ("npm install", "ask", &["rule:ask-npm"]),
        ("python3 x.py", "ask", &["default"]),
        ("git status", "allow", &["rule:git-read-only"]),
    ];
    for (command, decision, reasons) in table {
        let (got, why) = planned("Bash", json!({ "command": command }), &[]);
        assert_eq!(
            (got.as_str(), rule_names(&why)),
            (*decision, reasons.iter().map(|r| r.to_string()).collect()),
            "{command}"
        );
    }
}

#[test]
fn when_flags_and_modes() {
    let table: &[(&str, Value, &[&str], &str, &str)] = &[
        ("Fetch", json!({}), &[], "deny", "rule:no-external-writes"),
        ("Purge", json!({}), &[], "ask", "rule:ask-destructive"),
        (
            "Search",
            json!({}),
            &[],
            "allow",
            "rule:allow-concurrent-reads",
        ),
        (
            "Read",
            json!({"file_path": "a"}),
            &[],
            "allow",
            "rule:allow-concurrent-reads",
        ),
        (
            "Write",
            json!({"file_path": "src/a"}),
            &["plan"],
            "deny",
            "rule:plan-read-only",
        ),
        (
            "Bash",
            json!({"command": "git status"}),
            &["plan"],
            "deny",
            "rule:plan-read-only",
        ),
        (
            "Read",
            json!({"file_path": "a"}),
            &["plan"],
            "allow",
            "rule:allow-concurrent-reads",
        ),
        (
            "Write",
            json!({"file_path": "src/a"}),
            &[],
            "allow",
            "rule:allow-src-writes",
        ),
        (
            "Bash",
            json!({"command": "ls", "run_in_background": true}),
            &["offpeak"],
            "deny",
            "rule:offpeak-no-background",
        ),
        (
            "Bash",
            json!({"command": "python3 x", "run_in_background": false}),
            &["offpeak"],
            "ask",
            "default",
        ),
        (
            "Bash",
            json!({"command": "ls", "run_in_background": true}),
            &["plan"],
            "deny",
            "rule:plan-read-only",
        ),
    ];
    for (tool, input, modes, decision, first) in table {
        let (got, why) = planned(tool, input.clone(), modes);
        assert_eq!(
            (got.as_str(), rule_names(&why)[0].as_str()),
            (*decision, *first),
            "{tool} {input} {modes:?}"
        );
    }
}

#[test]
fn decisions_carry_rule_names_and_places() {
    let (_, reasons) = planned("Read", json!({"file_path": "a/../.env"}), &[]);
    match &reasons[..] {
        [
            Reason::Rule {
                name,
                decision,
                priority,
                enforced,
                reason,
                location,
                detail,
                part: None,
            },
        ] => {
            assert_eq!(name, "no-secrets");
            assert_eq!(*decision, Decision::Deny);
            assert_eq!(*priority, 100);
            assert!(!enforced);
            assert_eq!(reason.as_deref(), Some("secrets are off limits"));
            assert_eq!(
                location.as_deref(),
                Some("tests/fixtures/permission/rules/project/rules.yaml:108:5")
            );
            assert_eq!(
                detail.as_deref(),
                Some("`file_path` path: `.env` (`/ws/.env`) matched pattern #0")
            );
        }
        other => panic!("expected the one rule, got {other:?}"),
    }
}

#[tokio::test]
async fn the_model_is_told_the_rules_reason() {
    let (result, calls) = run_one("Read", json!({"file_path": "./.env"})).await;
    assert_eq!(result.status, CallStatus::Denied);
    assert_eq!(result.model_content, "secrets are off limits");
    assert_eq!(
        result.error.as_ref().unwrap().code,
        ErrorCode::PermissionDenied
    );
    assert!(calls.lock().unwrap().is_empty());
    // Without a reason, the template names the rule.
    let (result, _) = run_one("shell", json!({"command": "sudo ls"})).await;
    assert_eq!(result.status, CallStatus::Denied);
    assert_eq!(
        result.model_content,
        "Permission to use Bash was denied by rule `deny-sudo`"
    );
    // The enforced layer's reason, not the outranked allow's.
    let (result, _) = run_one("Bash", json!({"command": "curl x | sh"})).await;
    assert_eq!(result.model_content, "the organisation forbids curl");
}

#[tokio::test]
async fn aliases_resolve_before_rules() {
    let (engine, calls) = engine();
    let outcome = run_with(
        &engine,
        &[
            // A deny rule on `Bash` applies to calls through the alias.
            ("shell", json!({"command": "sudo rm -rf /"})),
            ("shell", json!({"command": "curl https://example.com"})),
            // A rule written with the alias applies to calls by the canonical name.
            ("Bash", json!({"command": "cargo build"})),
            ("shell", json!({"command": "cargo test -q"})),
        ],
        &[],
        None,
    )
    .await;
    let statuses: Vec<CallStatus> = outcome.results.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            CallStatus::Denied,
            CallStatus::Denied,
            CallStatus::Ok,
            CallStatus::Ok
        ]
    );
    let ran: Vec<Value> = calls
        .lock()
        .unwrap()
        .iter()
        .map(|(_, i)| i["command"].clone())
        .collect();
    assert_eq!(ran, [json!("cargo build"), json!("cargo test -q")]);
    assert_eq!(
        outcome.results[0]
            .canonical_tool
            .as_ref()
            .map(|t| t.as_str()),
        Some("Bash")
    );
}

#[tokio::test]
async fn differently_cased_tool_names_never_run_and_never_bypass() {
    let (engine, calls) = engine();
    let names = [
        "bash",
        "BASH",
        "bAsh",
        "Shell",
        "SHELL",
        " Bash",
        "Bash ",
        "Bash\n",
        "B\u{0430}sh",
        "read",
        "",
    ];
    let batch: Vec<(&str, Value)> = names
        .iter()
        .map(|name| (*name, json!({"command": "git status", "file_path": ".env"})))
        .collect();
    // Even with an approver that allows everything.
    let allow: Arc<dyn ApprovalBroker> =
        Arc::new(FixedAnswer(ApprovalAnswer::Allow { reason: None }));
    let outcome = run_with(&engine, &batch, &[], Some(allow)).await;
    for (name, result) in names.iter().zip(&outcome.results) {
        assert_eq!(result.status, CallStatus::Error, "{name:?}");
        assert_eq!(
            result.error.as_ref().unwrap().code,
            ErrorCode::ToolNotFound,
            "{name:?}"
        );
        assert_eq!(result.model_content, format!("Tool not found: {name}"));
        assert!(result.permission.is_none(), "{name:?} got a permission");
    }
    assert!(calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_allowed_string_in_another_field_does_not_satisfy_an_allow_rule() {
    let (engine, calls) = engine();
    let outcome = run_with(
        &engine,
        &[
            (
                "Bash",
                json!({"command": "rm -rf ~/work", "description": "git status"}),
            ),
            (
                "Bash",
                json!({"command": "python3 evil.py", "description": "ls -la"}),
            ),
            // Smuggled the other way: an allowed command with a forbidden description runs.
            (
                "Bash",
                json!({"command": "git status", "description": "rm -rf /"}),
            ),
        ],
        &[],
        None,
    )
    .await;
    let statuses: Vec<CallStatus> = outcome.results.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [CallStatus::Denied, CallStatus::Denied, CallStatus::Ok]
    );
    // Not allowed by a rule: the contract default asks, and without an approver that is no.
    assert_eq!(
        outcome.results[1].model_content,
        "No permission client configured"
    );
    let ran: Vec<Value> = calls
        .lock()
        .unwrap()
        .iter()
        .map(|(_, i)| i["command"].clone())
        .collect();
    assert_eq!(ran, [json!("git status")]);
}

#[tokio::test]
async fn path_rules_through_the_whole_pipeline() {
    let denied = [
        ".env",
        "./.env",
        "a/../.env",
        ".//.env",
        "/ws/.env",
        "/ws//sub/../.env",
        "/elsewhere/.env",
        "src/../../ws/.env",
        "./src/./../.env",
        "foo/./secrets/x",
        "secrets/a/b",
        "/ws/secrets/key",
        "deploy/../deploy/secrets//token",
    ];
    let allowed = [
        ".envrc",
        "docs/env.txt",
        "src/.env.example",
        "secrets.txt",
        "mysecrets/x",
        "src/main.rs",
        "/ws/README.md",
    ];
    let (reader, calls) = engine();
    let batch: Vec<(&str, Value)> = denied
        .iter()
        .chain(&allowed)
        .map(|path| ("Read", json!({ "file_path": path })))
        .collect();
    let outcome = run_with(&reader, &batch, &[], None).await;
    for (path, result) in denied.iter().zip(&outcome.results) {
        assert_eq!(result.status, CallStatus::Denied, "{path}");
        assert_eq!(result.model_content, "secrets are off limits", "{path}");
    }
    for (path, result) in allowed.iter().zip(&outcome.results[denied.len()..]) {
        assert_eq!(
            result.status,
            CallStatus::Ok,
            "{path}: {}",
            result.model_content
        );
    }
    let ran: Vec<Value> = calls
        .lock()
        .unwrap()
        .iter()
        .map(|(_, i)| i["file_path"].clone())
        .collect();
    // Reads share groups and run concurrently: compare as sets.
    let mut ran: Vec<String> = ran.iter().map(|v| v.as_str().unwrap().to_owned()).collect();
    ran.sort();
    let mut expected: Vec<String> = allowed.iter().map(|p| (*p).to_owned()).collect();
    expected.sort();
    assert_eq!(ran, expected);

    // Writes: the secrets rule (priority 100) beats the source allow; a write that climbs
    // out of `src/` is not a source write.
    let (writer, calls) = engine();
    let outcome = run_with(
        &writer,
        &[
            ("Write", json!({"file_path": "src/secrets/key"})),
            ("Write", json!({"file_path": "src/../.env"})),
            ("Write", json!({"file_path": "src/../Cargo.toml"})),
            ("Write", json!({"file_path": "./src//lib.rs"})),
            ("Bash", json!({"command": "git diff HEAD~1"})),
        ],
        &[],
        None,
    )
    .await;
    let statuses: Vec<(CallStatus, &str)> = outcome
        .results
        .iter()
        .map(|r| (r.status, r.model_content.as_str()))
        .collect();
    assert_eq!(
        statuses,
        [
            (CallStatus::Denied, "secrets are off limits"),
            (CallStatus::Denied, "secrets are off limits"),
            (CallStatus::Denied, "No permission client configured"),
            (CallStatus::Ok, "Write ran"),
            (CallStatus::Ok, "Bash ran"),
        ]
    );
    assert_eq!(calls.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn always_ask_needs_an_explicit_approval() {
    let (engine, calls) = engine();
    let staging = ("Deploy", json!({"target": "staging"}));
    // No approver: the ask is a denial.
    let outcome = run_with(&engine, std::slice::from_ref(&staging), &[], None).await;
    let result = &outcome.results[0];
    assert_eq!(result.status, CallStatus::Denied);
    let permission = result.permission.as_ref().unwrap();
    assert_eq!(
        rule_names(&permission.reasons),
        [
            "always_ask",
            "rule:allow-staging-deploys",
            "approval:no_client"
        ]
    );
    // An approver's allow runs it (and is recorded); a deny does not.
    let allow: Arc<dyn ApprovalBroker> =
        Arc::new(FixedAnswer(ApprovalAnswer::Allow { reason: None }));
    let outcome = run_with(&engine, std::slice::from_ref(&staging), &[], Some(allow)).await;
    assert_eq!(outcome.results[0].status, CallStatus::Ok);
    let permission = outcome.results[0].permission.as_ref().unwrap();
    assert_eq!(permission.decision, Decision::Allow);
    assert_eq!(
        permission.reasons.last(),
        Some(&Reason::Approval {
            by: "approver".to_owned(),
            decision: Decision::Allow,
            reason: None
        })
    );
    let deny: Arc<dyn ApprovalBroker> = Arc::new(FixedAnswer(ApprovalAnswer::Deny {
        reason: Some("not today".into()),
    }));
    let outcome = run_with(&engine, &[staging], &[], Some(deny)).await;
    assert_eq!(outcome.results[0].status, CallStatus::Denied);
    assert_eq!(
        outcome.results[0].model_content,
        "Permission to use Deploy was denied by the person reviewing the request: not today"
    );
    assert_eq!(calls.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn modes_reach_every_call() {
    let (engine, calls) = engine();
    let outcome = run_with(
        &engine,
        &[
            ("Read", json!({"file_path": "a"})),
            ("Write", json!({"file_path": "src/a"})),
            ("Bash", json!({"command": "git status"})),
            ("Read", json!({"file_path": "b"})),
        ],
        &["plan"],
        None,
    )
    .await;
    let statuses: Vec<CallStatus> = outcome.results.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            CallStatus::Ok,
            CallStatus::Denied,
            CallStatus::Denied,
            CallStatus::Ok
        ]
    );
    assert_eq!(outcome.results[1].model_content, "plan mode is read-only");
    assert_eq!(calls.lock().unwrap().len(), 2);
}

/// A rule whose regex parses but whose automaton exceeds the size limit: loading for running
/// builds automata on first use, so the set loads (only `check` reports it), and the rule
/// then fails closed: as a deny rule it denies, as an allow rule it allows nothing.
#[test]
fn a_rule_whose_automaton_cannot_be_built_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("policy.yaml"),
        r#"version: 1
tools:
  Fetch: { permission: { default: ask } }
  Purge: { permission: { default: allow } }
rules:
  - name: allow-too-big
    tools: [Fetch]
    match: { url: { regex: '\w{1000}' } }
    decision: allow
  - name: deny-too-big
    tools: [Purge]
    match: { target: { regex: 'a{1000}{1000}' } }
    decision: deny
"#,
    )
    .unwrap();
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        enforced: Vec::new(),
        policies: vec![dir.path().to_owned()],
        ..Default::default()
    });
    let snapshot = load(&options, 1)
        .snapshot
        .expect("a load for running defers building automata");
    let engine = Engine::builder(snapshot).build();
    let decide = |tool: &str, input: Value| {
        let batch = Batch::new(vec![ToolCall::new("c", tool, input)]);
        let plan = engine.plan(&batch, &[]).unwrap();
        plan.calls.into_iter().next().unwrap().decision
    };
    assert_eq!(
        decide("Fetch", json!({"url": "https://example.com"})),
        "ask"
    );
    assert_eq!(decide("Purge", json!({"target": "b"})), "deny");

    options.build_all_matchers = true;
    let checked = load(&options, 1);
    assert!(checked.snapshot.is_none());
    let codes: Vec<String> = checked
        .diagnostics
        .iter()
        .map(|d| d.code.to_string())
        .collect();
    assert_eq!(
        codes,
        [
            "toolgate::semantic::invalid_regex",
            "toolgate::semantic::invalid_regex"
        ]
    );
}
