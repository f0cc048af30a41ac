//! `toolgate explain TOOL`: the effective contract with the file, line and column that set
//! each value, across the built-in layer and a project layer that overrides some fields (in
//! YAML and TOML); explaining an alias; an unknown tool (exit 2 with a suggestion).

// Test code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::check::{ROOT, place, split_location, text_at, toolgate};
use serde_json::Value;

const PROJECT: &str = "tests/fixtures/explain/project";

/// Asserts that the source at a field's position spells its value.
fn assert_spells(field: &Value) {
    let name = field["field"].as_str().unwrap();
    let file = field["file"].as_str().unwrap();
    let line = field["line"].as_u64().unwrap() as u32;
    let column = field["column"].as_u64().unwrap() as u32;
    let found = text_at(Path::new(ROOT), file, line, column);
    let value = &field["value"];
    let ok = match value {
        Value::String(text) => [text.clone(), format!("\"{text}\""), format!("'{text}'")]
            .iter()
            .any(|form| found.starts_with(form.as_str())),
        Value::Number(_) | Value::Bool(_) => found.starts_with(&value.to_string()),
        Value::Array(_) => found.starts_with('[') || found.starts_with('-'),
        Value::Object(_) => !found.trim().is_empty(),
        Value::Null => false,
    };
    assert!(
        ok,
        "`{name}` = {value} is said to be set at {file}:{line}:{column}, where the source reads `{found}`"
    );
}

#[test]
fn explain_shows_both_layers_with_their_positions() {
    let human = toolgate(&["-p", PROJECT, "explain", "Bash"]);
    insta::assert_snapshot!("bash_human", human.transcript());
    assert_eq!(human.code, 0);

    let json = toolgate(&["-p", PROJECT, "explain", "Bash", "--format", "json"]);
    insta::assert_snapshot!("bash_json", json.transcript());
    assert_eq!(json.code, 0);
    let report = json.json();
    assert_eq!(report["tool"], "Bash");

    let fields = report["fields"].as_array().unwrap();
    let mut files = std::collections::BTreeSet::new();
    for field in fields {
        let object = field.as_object().unwrap();
        for key in ["field", "value", "source", "file", "line", "column"] {
            assert!(object.contains_key(key), "{field} lacks `{key}`");
        }
        match field["source"].as_str().unwrap() {
            // Every value some file set carries that file's position, and the source there
            // spells the value.
            "contract" | "engine" => {
                files.insert(field["file"].as_str().unwrap().to_owned());
                assert_spells(field);
            }
            // What toolgate makes of an absent field: no file sets it.
            "default" => assert!(field["file"].is_null() && field["line"].is_null()),
            other => panic!("unknown source `{other}`"),
        }
    }
    assert_eq!(
        files.into_iter().collect::<Vec<_>>(),
        [
            "builtin:policies/engine.yaml",
            "builtin:policies/tools/bash.yaml",
            "tests/fixtures/explain/project/bash.yaml",
            "tests/fixtures/explain/project/engine.toml",
        ]
    );

    let get = |name: &str| {
        fields
            .iter()
            .find(|f| f["field"] == name)
            .unwrap_or_else(|| panic!("no field `{name}`"))
    };
    let origin = |name: &str| place(get(name));
    // Overridden by the project, field by field; the rest stays with the built-in layer.
    assert_eq!(get("timeout.max")["value"], "15m");
    assert_eq!(
        origin("timeout.max"),
        "tests/fixtures/explain/project/bash.yaml:4:21"
    );
    assert_eq!(get("timeout.default")["value"], "2m");
    assert_eq!(
        origin("timeout.default"),
        "builtin:policies/tools/bash.yaml:18:16"
    );
    assert_eq!(get("budget.max_model")["value"], 50000);
    assert_eq!(get("budget.keep")["value"], "tail");
    assert!(origin("budget.keep").starts_with("builtin:policies/tools/bash.yaml:"));
    assert_eq!(get("permission.always_ask")["value"], true);
    // An engine default overridden by the project's TOML file.
    assert_eq!(get("budget.preview")["value"], 500);
    assert_eq!(get("budget.preview")["setting"], "engine.budget.preview");
    assert_eq!(
        origin("budget.preview"),
        "tests/fixtures/explain/project/engine.toml:7:11"
    );
    assert_eq!(get("on_failure")["source"], "engine");
    assert_eq!(get("modes.plan.permission.default")["value"], "deny");

    // The project's rule (written against the alias) applies, in precedence order.
    let rules: Vec<&str> = report["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    let npm = rules.iter().position(|r| *r == "project-npm").unwrap();
    let force = rules.iter().position(|r| *r == "no-force-push").unwrap();
    let git = rules.iter().position(|r| *r == "git-read-only").unwrap();
    assert!(force < npm && npm < git, "{rules:?}");
    for rule in report["rules"].as_array().unwrap() {
        let (file, line, column) = split_location(rule["location"].as_str().unwrap());
        let text = text_at(Path::new(ROOT), &file, line, column);
        assert!(
            text.starts_with(&format!("name: {}", rule["name"].as_str().unwrap())),
            "{rule} at `{text}`"
        );
    }
}

#[test]
fn explaining_an_alias_explains_its_tool() {
    let by_name = toolgate(&["-p", PROJECT, "explain", "Bash", "--format", "json"]);
    let by_alias = toolgate(&["-p", PROJECT, "explain", "shell", "--format", "json"]);
    assert_eq!(by_alias.code, 0);
    assert_eq!(by_alias.json()["tool"], "Bash");
    assert_eq!(by_name.stdout, by_alias.stdout);
    let human = toolgate(&["explain", "shell"]);
    assert!(
        human.stdout.starts_with("tool `Bash` (generation 1)\n"),
        "{}",
        human.stdout
    );
}

#[test]
fn unknown_tool_exits_2_with_a_suggestion() {
    let human = toolgate(&["-p", PROJECT, "explain", "Bsh"]);
    insta::assert_snapshot!("unknown_tool_human", human.transcript());
    assert_eq!(human.code, 2);
    assert!(human.stdout.is_empty());
    assert!(human.stderr.contains("did you mean `Bash`?"));

    let json = toolgate(&["-p", PROJECT, "explain", "Bsh", "--format", "json"]);
    insta::assert_snapshot!("unknown_tool_json", json.transcript());
    assert_eq!(json.code, 2);
    let diagnostics = json.diagnostics();
    assert_eq!(
        diagnostics[0]["code"],
        "toolgate::semantic::unknown_reference"
    );
    assert_eq!(diagnostics[0]["help"], "did you mean `Bash`?");

    // Nothing close: the help lists the tools.
    let far = toolgate(&["explain", "Zzzzzz"]);
    assert_eq!(far.code, 2);
    assert!(
        far.stderr.contains("help: tools: Agent, TodoWrite, Bash, "),
        "{}",
        far.stderr
    );
}

#[test]
fn explain_of_an_invalid_set_exits_1_with_the_diagnostics() {
    let run = toolgate(&[
        "--no-builtin",
        "-p",
        "tests/fixtures/check/timeout_range",
        "explain",
        "Build",
    ]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("toolgate::semantic::timeout_range"));
}

#[test]
fn every_value_of_every_builtin_tool_is_located() {
    let tools = [
        "Bash",
        "Read",
        "Write",
        "Edit",
        "Glob",
        "Grep",
        "WebFetch",
        "WebSearch",
        "Agent",
        "TodoWrite",
    ];
    for tool in tools {
        let run = toolgate(&["explain", tool, "--format", "json"]);
        assert_eq!(run.code, 0, "{tool}: {}", run.transcript());
        for field in run.json()["fields"].as_array().unwrap() {
            if field["source"] != "default" {
                assert_spells(field);
            }
        }
    }
}

#[test]
fn a_long_handler_argv_is_shown_whole() {
    let run = toolgate(&[
        "-p",
        "tests/fixtures/explain/long_argv",
        "explain",
        "Deploy",
    ]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let line = run
        .stdout
        .lines()
        .find(|line| line.trim_start().starts_with("handler.argv"))
        .unwrap_or_else(|| panic!("no handler.argv line:\n{}", run.stdout));
    assert!(!line.contains('…'), "{line}");
    assert!(line.contains("{{input.target}}"), "{line}");
    assert!(
        line.contains("tools.yaml:7:"),
        "its origin follows it: {line}"
    );
}
