//! Rule mistakes are loud (issue 18, class 7): a matcher without a condition and a selector
//! the tool's input schema does not define used to load, even with `--deny-warnings`, and
//! changed what the rules decide without a word. Each case is a project policy on top of the
//! built-in layer, loaded as `toolgate` loads it; the fixed rule is loaded too, to show that
//! the report is about the mistake and nothing else.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use toolgate::Diagnostic;
use toolgate::ToolCall;
use toolgate::{Batch, Engine};
use toolgate::{LayerOptions, LoadOptions, LoadOutcome, load};

/// Loads the built-in layer and one project file holding `rules`, in `policies/` of the
/// workspace `dir`.
fn load_rules(dir: &Path, rules: &str) -> LoadOutcome {
    let policies = dir.join("policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(
        policies.join("project.yaml"),
        format!("version: 1\nrules:\n{rules}"),
    )
    .unwrap();
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: false,
        enforced: Vec::new(),
        policies: vec![policies],
        ..Default::default()
    });
    options.workspace_root = dir.to_owned();
    load(&options, 1)
}

/// `code severity line:column` of every diagnostic of the project file.
fn reported(outcome: &LoadOutcome) -> Vec<String> {
    outcome
        .diagnostics
        .iter()
        .filter(|d| {
            d.location
                .as_ref()
                .is_some_and(|l| l.source.path().ends_with("policies/project.yaml"))
        })
        .map(|d: &Diagnostic| {
            let location = d.location.as_ref().unwrap().display();
            let place = location.rsplitn(3, ':').take(2).collect::<Vec<_>>();
            format!(
                "{} {} {}:{}",
                d.code.as_str().trim_start_matches("toolgate::semantic::"),
                d.severity,
                place[1],
                place[0]
            )
        })
        .collect()
}

/// The decision the loaded set gives a Bash call.
fn bash_decision(outcome: LoadOutcome, command: &str) -> String {
    let snapshot = outcome.snapshot.expect("the fixed rules load");
    let engine = Engine::builder(snapshot).build();
    let batch = Batch::new(vec![ToolCall::new(
        "c",
        "Bash",
        serde_json::json!({ "command": command }),
    )]);
    let plan = engine.plan(&batch, &[]).unwrap();
    plan.calls[0].decision.as_str().to_owned()
}

#[test]
fn a_misspelt_field_in_a_deny_rule_fails_the_load_instead_of_never_firing() {
    let dir = tempfile::tempdir().unwrap();
    let rule = |field: &str| {
        format!(
            "  - name: no-rm\n    tools: [Bash]\n    match:\n      {field}: {{ shell: [\"rm -rf *\"] }}\n    decision: deny\n"
        )
    };
    let outcome = load_rules(dir.path(), &rule("comand"));
    assert!(outcome.snapshot.is_none());
    assert_eq!(reported(&outcome), ["unknown_field error 6:7"]);
    let help = outcome.diagnostics[0].help.clone().unwrap_or_default();
    assert_eq!(help, "did you mean `command`?");

    let outcome = load_rules(dir.path(), &rule("file_path"));
    assert!(outcome.snapshot.is_none());
    assert_eq!(reported(&outcome), ["unknown_field error 6:7"]);

    let outcome = load_rules(dir.path(), &rule("command"));
    assert_eq!(reported(&outcome), Vec::<String>::new());
    assert_eq!(bash_decision(outcome, "rm -rf /"), "deny");
}

#[test]
fn an_empty_pattern_list_in_an_allow_rule_fails_the_load_instead_of_allowing_everything() {
    let dir = tempfile::tempdir().unwrap();
    for (matcher, at) in [
        ("command: { shell: [] }", "6:25"),
        ("command: { glob: [] }", "6:24"),
        ("command: { regex: [] }", "6:25"),
        ("command: { reaches: [] }", "6:27"),
        ("command: { path: [] }", "6:24"),
        ("command: {}", "6:16"),
    ] {
        let rules = format!(
            "  - name: git-only\n    tools: [Bash]\n    match:\n      {matcher}\n    decision: allow\n"
        );
        let outcome = load_rules(dir.path(), &rules);
        assert!(outcome.snapshot.is_none(), "{matcher}");
        assert_eq!(
            reported(&outcome),
            [format!("empty_matcher error {at}")],
            "{matcher}"
        );
    }
    let outcome = load_rules(
        dir.path(),
        "  - name: git-only\n    tools: [Bash]\n    match: {}\n    decision: allow\n",
    );
    assert_eq!(reported(&outcome), ["empty_matcher error 5:12"]);

    let outcome = load_rules(
        dir.path(),
        "  - name: git-only\n    tools: [Bash]\n    match:\n      command: { shell: [\"git status\"] }\n    decision: allow\n",
    );
    assert_eq!(reported(&outcome), Vec::<String>::new());
    assert_eq!(bash_decision(outcome, "rm -rf build"), "ask");
}

#[test]
fn the_shipped_policies_have_no_rule_mistakes() {
    let outcome = load(&LoadOptions::new(LayerOptions::default()), 1);
    // Not even a warning: `check --deny-warnings` passes on the built-in layer alone.
    let reported: Vec<_> = outcome
        .diagnostics
        .iter()
        .map(Diagnostic::flat_message)
        .collect();
    assert!(outcome.snapshot.is_some());
    assert_eq!(reported, Vec::<String>::new());
}
