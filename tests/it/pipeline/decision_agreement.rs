//! Plan and run decide a call the same way: random calls — valid and invalid inputs, inputs
//! given as JSON strings (valid JSON and not), non-object inputs, timeout overrides good and
//! bad, unknown names, aliases — in every combination of the declared modes go through
//! `Engine::plan` (what `toolgate plan`, `toolgate test` and `serve`'s `plan` show) and
//! through a real run with no-op native handlers and an approver that allows. Both must give
//! the same decision, the same reasons (rule names, default, `always_ask`), the same timeout,
//! and for a call that cannot run the same text for the model.

use std::sync::{Arc, OnceLock};

use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate::CallStatus;
use toolgate::Reason;
use toolgate::{ApprovalAnswer, FixedAnswer};
use toolgate::{Batch, Engine, PlannedCall, PlannedDecision, Turn};
use toolgate::{CallContext, HandlerFuture, HandlerOutput};
use toolgate::{CallResult, ErrorCode, ToolCall};
use toolgate::{Decision, ModeName};
use toolgate::{LayerOptions, LoadOptions, load};

const POLICY: &str = r#"
version: 1
engine:
  default_timeout: 30s
modes:
  plan: { description: read-only planning }
  offpeak: { description: unattended run }
tools:
  Read:
    aliases: [read, cat]
    input_schema:
      type: object
      required: [file_path]
      additionalProperties: false
      properties:
        file_path: { type: string }
        limit: { type: integer, minimum: 1 }
        timeout_ms: {}
    concurrency: { concurrent_safe: true, read_only: true, side_effect_scope: none }
    permission: { default: allow }
    timeout: { default: 10s, max: 60s, override_field: timeout_ms, cleanup_grace: 1s }
    handler: { kind: native }
    modes:
      offpeak:
        timeout: { default: 7s }
  Write:
    input_schema:
      type: object
      required: [file_path, content]
      properties:
        file_path: { type: string }
        content: { type: string }
    concurrency: { concurrent_safe: false }
    permission: { default: ask }
    handler: { kind: native }
  Bash:
    aliases: [shell]
    input_schema:
      type: object
      required: [command]
      properties:
        command: { type: string }
        timeout: { type: integer }
    concurrency: { concurrent_safe: false }
    permission: { default: allow, always_ask: true }
    timeout: { default: 2m, max: 10m, override_field: timeout }
    handler: { kind: native }
  Fetch:
    concurrency: { concurrent_safe: true, side_effect_scope: external }
    permission: { default: deny }
    timeout: none
    handler: { kind: native }
    modes:
      offpeak:
        permission: { default: allow }
rules:
  - name: no-secrets
    tools: [Read, Write]
    match:
      file_path: { path: ["**/.env", "**/secrets/**"] }
    decision: deny
    priority: 10
    reason: secrets are off limits
  - name: plan-read-only
    tools: ["*"]
    modes: [plan]
    when: { read_only: false }
    decision: deny
  - name: docs-are-free
    tools: [Write]
    match:
      file_path: { glob: ["docs/**"] }
    decision: allow
  - name: git-reads
    tools: [Bash]
    match:
      command: { regex: "^git (status|log)" }
    decision: allow
  - name: offpeak-fetch-asks
    tools: [Fetch]
    modes: [offpeak]
    decision: ask
"#;

/// An engine on the policy above, every tool a no-op native handler.
fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("policy.yaml"), POLICY).unwrap();
        let mut options = LoadOptions::new(LayerOptions {
            no_builtin: true,
            policies: vec![dir.path().to_path_buf()],
            ..LayerOptions::default()
        });
        options.workspace_root = dir.path().to_path_buf();
        let outcome = load(&options, 1);
        let snapshot = outcome
            .snapshot
            .unwrap_or_else(|| panic!("the policy loads: {:#?}", outcome.diagnostics));
        let mut builder = Engine::builder(snapshot);
        for tool in ["Read", "Write", "Bash", "Fetch"] {
            builder = builder.native(tool, |_: Value, _: CallContext| -> HandlerFuture {
                Box::pin(async { Ok(HandlerOutput::text("done")) })
            });
        }
        builder.build()
    })
}

fn tool_name() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "Read", "read", "cat", "Write", "Bash", "shell", "Fetch", "bash", "Nope", "",
    ])
    .prop_map(str::to_owned)
}

fn path() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            "src/main.rs",
            "docs/guide.md",
            "app/.env",
            "./a/../.env",
            "secrets/key",
            "/etc/passwd",
        ])
        .prop_map(|p| json!(p)),
        Just(json!(42)),
    ]
}

fn timeout_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        (1u64..200_000).prop_map(|ms| json!(ms)),
        Just(json!(-5)),
        Just(json!("soon")),
        Just(json!(1e30)),
    ]
}

/// An object input with fields every tool knows of (and some it does not).
fn object() -> impl Strategy<Value = Value> {
    (
        prop::option::of(path()),
        prop::option::of(prop_oneof![Just(json!("x")), Just(json!(7))]),
        prop::option::of(prop::sample::select(vec![
            "git status",
            "git log -3",
            "rm -rf /",
            "ls",
        ])),
        prop::option::of(timeout_value()),
        prop::option::of(timeout_value()),
        prop::option::of(prop_oneof![
            Just(json!(5)),
            Just(json!(0)),
            Just(json!("many"))
        ]),
        any::<bool>(),
    )
        .prop_map(
            |(file_path, content, command, timeout_ms, timeout, limit, extra)| {
                let mut object = serde_json::Map::new();
                let mut put = |key: &str, value: Option<Value>| {
                    if let Some(value) = value {
                        object.insert(key.to_owned(), value);
                    }
                };
                put("file_path", file_path);
                put("content", content);
                put("command", command.map(|c| json!(c)));
                put("timeout_ms", timeout_ms);
                put("timeout", timeout);
                put("limit", limit);
                if extra {
                    put("colour", Some(json!("blue")));
                }
                Value::Object(object)
            },
        )
}

fn input() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => object(),
        2 => object().prop_map(|object| json!(object.to_string())),
        1 => prop::sample::select(vec!["not json", "[1, 2]", "\"text\"", "42", "{\"file_path\": "])
            .prop_map(|text| json!(text)),
        1 => prop::sample::select(vec![json!(null), json!(42), json!([1]), json!(true)]),
    ]
}

fn modes() -> impl Strategy<Value = Vec<ModeName>> {
    (any::<bool>(), any::<bool>()).prop_map(|(plan, offpeak)| {
        [("plan", plan), ("offpeak", offpeak)]
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(name, _)| ModeName::new(name))
            .collect()
    })
}

/// The reasons as the decision's sources (rule names, default, always_ask, hooks).
fn labels(reasons: &[Reason]) -> Vec<String> {
    reasons.iter().map(Reason::label).collect()
}

/// Checks that the run of one call agrees with its plan.
fn assert_agree(call: &ToolCall, planned: &PlannedCall<'_>, ran: &CallResult) {
    let context = format!("{call:?} planned {planned:?} ran {ran:?}");
    assert_eq!(
        planned.canonical_tool.as_ref(),
        ran.canonical_tool.as_ref(),
        "{context}"
    );
    match planned.decision {
        PlannedDecision::Error => {
            assert_eq!(ran.status, CallStatus::Error, "{context}");
            let code = ran.error.as_ref().map(|e| e.code);
            assert!(
                matches!(
                    code,
                    Some(ErrorCode::ToolNotFound | ErrorCode::InputValidation)
                ),
                "{context}"
            );
            assert_eq!(
                planned.error.as_deref(),
                Some(ran.model_content.as_str()),
                "{context}"
            );
            assert!(ran.permission.is_none(), "{context}");
        }
        PlannedDecision::Deny => {
            assert_eq!(ran.status, CallStatus::Denied, "{context}");
            let permission = ran
                .permission
                .as_ref()
                .expect("a denied call has a permission");
            assert_eq!(permission.decision, Decision::Deny, "{context}");
            assert_eq!(
                labels(&permission.reasons),
                labels(&planned.reasons),
                "{context}"
            );
        }
        PlannedDecision::Allow | PlannedDecision::Ask => {
            assert_eq!(ran.status, CallStatus::Ok, "{context}");
            assert_eq!(ran.model_content.as_str(), "done", "{context}");
            let permission = ran
                .permission
                .as_ref()
                .expect("a call that ran has a permission");
            let mut reasons = labels(&permission.reasons);
            if planned.decision == PlannedDecision::Ask {
                // The approver's answer comes last.
                assert_eq!(
                    reasons.pop().as_deref(),
                    Some("approval:approver"),
                    "{context}"
                );
            }
            assert_eq!(reasons, labels(&planned.reasons), "{context}");
            assert_eq!(ran.metadata.timeout_ms, planned.timeout_ms, "{context}");
        }
    }
    if planned.decision != PlannedDecision::Error {
        assert_eq!(planned.error, None, "{context}");
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn plan_and_run_agree(
        calls in prop::collection::vec((tool_name(), input()), 1..6),
        modes in modes(),
    ) {
        let engine = engine();
        let calls: Vec<ToolCall> = calls
            .into_iter()
            .enumerate()
            .map(|(i, (tool, input))| ToolCall::new(format!("c{i}"), tool, input))
            .collect();
        let batch = Batch::new(calls.clone());
        let plan = engine.plan(&batch, &modes).unwrap();
        let turn = Turn {
            modes: modes.clone(),
            approver: Some(Arc::new(FixedAnswer(ApprovalAnswer::Allow { reason: None }))),
            ..Turn::default()
        };
        for (call, planned) in calls.iter().zip(&plan.calls) {
            // Each call alone: a failing call may not change what its group-mates see.
            let outcome = runtime()
                .block_on(engine.execute_batch(Batch::new(vec![call.clone()]), &turn))
                .unwrap();
            assert_agree(call, planned, &outcome.results[0]);
        }
    }
}

/// The cases where plan and run used to disagree, pinned.
#[test]
fn an_input_string_that_is_not_json_is_told_the_same_way() {
    let engine = engine();
    let turn = Turn::default();
    for (tool, input) in [
        ("Read", json!("not json")),
        ("Read", json!("[1, 2]")),
        (
            "Read",
            json!({"file_path": 42, "limit": "many", "colour": "blue"}),
        ),
        ("Read", json!({"file_path": "x", "timeout_ms": -5})),
        ("Nope", json!({})),
    ] {
        let call = ToolCall::new("c", tool, input);
        let batch = Batch::new(vec![call.clone()]);
        let plan = engine.plan(&batch, &[]).unwrap();
        let outcome = runtime()
            .block_on(engine.execute_batch(batch.clone(), &turn))
            .unwrap();
        assert_eq!(plan.calls[0].decision, PlannedDecision::Error);
        assert_agree(&call, &plan.calls[0], &outcome.results[0]);
    }
}

/// One call of each decision, so the random calls above are known to reach them all.
#[test]
fn every_decision_agrees() {
    let engine = engine();
    let turn = Turn {
        approver: Some(Arc::new(FixedAnswer(ApprovalAnswer::Allow {
            reason: None,
        }))),
        ..Turn::default()
    };
    for (tool, input, modes, decision) in [
        (
            "cat",
            json!({"file_path": "src/main.rs", "timeout_ms": 90000}),
            vec![],
            PlannedDecision::Allow,
        ),
        (
            "Read",
            json!({"file_path": "./a/../.env"}),
            vec![],
            PlannedDecision::Deny,
        ),
        (
            "Write",
            json!({"file_path": "x", "content": "y"}),
            vec![],
            PlannedDecision::Ask,
        ),
        (
            "Write",
            json!("{\"file_path\": \"docs/a.md\", \"content\": \"y\"}"),
            vec![],
            PlannedDecision::Allow,
        ),
        (
            "Write",
            json!({"file_path": "docs/a.md", "content": "y"}),
            vec!["plan"],
            PlannedDecision::Deny,
        ),
        (
            "shell",
            json!({"command": "git status"}),
            vec![],
            PlannedDecision::Ask,
        ),
        ("Fetch", json!({}), vec![], PlannedDecision::Deny),
        ("Fetch", json!({}), vec!["offpeak"], PlannedDecision::Ask),
    ] {
        let modes: Vec<ModeName> = modes.into_iter().map(ModeName::new).collect();
        let call = ToolCall::new("c", tool, input);
        let batch = Batch::new(vec![call.clone()]);
        let plan = engine.plan(&batch, &modes).unwrap();
        let turn = Turn {
            modes: modes.clone(),
            ..turn.clone()
        };
        let outcome = runtime()
            .block_on(engine.execute_batch(batch.clone(), &turn))
            .unwrap();
        assert_eq!(plan.calls[0].decision, decision, "{call:?}");
        assert_agree(&call, &plan.calls[0], &outcome.results[0]);
    }
}
