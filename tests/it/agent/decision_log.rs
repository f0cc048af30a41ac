//! The decision log of `toolgate hook`: records validate against `toolgate schema
//! decision-log`, carry the rule and its place, mask secrets, and lines written by two
//! processes at once never mix.

use serde_json::{Value, json};

use super::{Project, run_hook};

fn records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&toolgate::decision_log::schema()).unwrap()
}

#[test]
fn every_decision_is_a_record_that_fits_the_schema() {
    let project = Project::standard();
    let log = project.path().join("decisions.jsonl");
    let log_arg = log.display().to_string();
    for (agent, fixture) in [
        ("claude", "claude/pre_tool_use_bash_allowed.json"),
        ("claude", "claude/pre_tool_use_read_env.json"),
        ("claude", "claude/pre_tool_use_unknown_tool.json"),
        ("codex", "codex/pre_tool_use_apply_patch_denied.json"),
        ("gemini", "gemini/before_tool_shell_ask.json"),
    ] {
        let run = project.hook(agent, fixture, &[], &["--decision-log", &log_arg]);
        assert_eq!(run.code, 0, "{}", run.transcript());
    }
    let records = records(&log);
    assert_eq!(records.len(), 5);
    let validator = validator();
    for record in &records {
        let errors: Vec<String> = validator
            .iter_errors(record)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:?}\n{record:#}");
        assert_eq!(record["version"], 1);
        assert_eq!(record["generation"], 1);
        assert_eq!(record["policy_hash"].as_str().map(str::len), Some(64));
    }
    let summary: Vec<Value> = records
        .iter()
        .map(|r| {
            json!([
                r["agent"],
                r["event"],
                r["tool"],
                r["toolgate_tools"],
                r["decision"],
                r["decided_by"],
                r["rule"],
                r["location"]
            ])
        })
        .collect();
    let project_policy = format!(
        "{}/.toolgate/policies/project.yaml:15",
        project.path().display()
    );
    assert_eq!(
        summary,
        [
            json!([
                "claude",
                "PreToolUse",
                "Bash",
                ["Bash"],
                "allow",
                "rule",
                "npm-scripts",
                project_policy
            ]),
            json!([
                "claude",
                "PreToolUse",
                "Read",
                ["Read"],
                "deny",
                "rule",
                "no-secrets",
                "builtin:policies/rules.yaml:9"
            ]),
            json!([
                "claude",
                "PreToolUse",
                "ExitPlanMode",
                null,
                "defer",
                "unknown_tool",
                null,
                null
            ]),
            json!([
                "codex",
                "PreToolUse",
                "apply_patch",
                ["Edit"],
                "deny",
                "rule",
                "no-secrets",
                "builtin:policies/rules.yaml:9"
            ]),
            json!([
                "gemini",
                "BeforeTool",
                "run_shell_command",
                ["Bash"],
                "ask",
                "default",
                null,
                null
            ]),
        ]
    );
    assert_eq!(
        records[0]["session_id"],
        "8f1c0a52-6b0e-4c53-9e3a-1d2f3b4c5d6e"
    );
    assert_eq!(
        records[0]["input"],
        json!({"command": "npm test", "description": "Run the test suite"})
    );
    // Ids are unique; the same policy set has the same hash.
    assert_ne!(records[0]["id"], records[1]["id"]);
    assert_eq!(records[0]["policy_hash"], records[4]["policy_hash"]);
}

#[test]
fn secrets_are_masked_by_field_name_and_by_their_look() {
    let project = Project::standard();
    let log = project.path().join("decisions.jsonl");
    let payload = json!({
        "session_id": "s",
        "cwd": project.path(),
        "hook_event_name": "PreToolUse",
        "tool_name": "mcp__github__create_issue",
        "tool_input": {
            "repo": "acme/app",
            "title": "use token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB please",
            "auth": {"password": "hunter2", "user": "dev"},
            "body": "curl -H 'Authorization: Bearer abcdefghijklmnop0123456789' https://user:s3cret@example.com/x"
        }
    });
    let run = run_hook(
        "claude",
        payload.to_string().as_bytes(),
        &[],
        &["--decision-log", &log.display().to_string()],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let records = records(&log);
    assert_eq!(
        records[0]["input"],
        json!({
            "repo": "acme/app",
            "title": "use token [redacted] please",
            "auth": {"password": "[redacted]", "user": "dev"},
            "body": "curl -H 'Authorization: Bearer [redacted]' https://user:[redacted]@example.com/x"
        })
    );
}

#[test]
fn the_engine_settings_name_the_log_relative_to_the_project() {
    let project = Project::standard();
    std::fs::write(
        project.path().join(".toolgate/policies/log.yaml"),
        "version: 1\nengine:\n  decision_log:\n    path: logs/decisions.jsonl\n    redact_fields: [description]\n",
    )
    .unwrap();
    let run = project.hook("claude", "claude/pre_tool_use_bash_allowed.json", &[], &[]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let records = records(&project.path().join("logs/decisions.jsonl"));
    assert_eq!(records.len(), 1);
    // A project's `redact_fields` replaces the list; the secret patterns stay.
    assert_eq!(records[0]["input"]["description"], "[redacted]");
}

#[test]
fn two_processes_writing_at_once_never_mix_their_lines() {
    let project = Project::standard();
    let log = project.path().join("decisions.jsonl");
    let log_arg = log.display().to_string();
    const RUNS: usize = 12;
    std::thread::scope(|scope| {
        for letter in ['a', 'b'] {
            let project = &project;
            let log_arg = &log_arg;
            scope.spawn(move || {
                // Large records (about 40 KB each) make a torn write likely if writes were
                // not whole.
                let content: String = std::iter::repeat_n(letter, 40_000).collect();
                let payload = json!({
                    "session_id": format!("writer-{letter}"),
                    "cwd": project.path(),
                    "hook_event_name": "PreToolUse",
                    "tool_name": "Write",
                    "tool_input": {"file_path": project.path().join("notes.txt"), "content": content},
                })
                .to_string();
                for _ in 0..RUNS {
                    let run = run_hook("claude", payload.as_bytes(), &[], &["--decision-log", log_arg]);
                    assert_eq!(run.code, 0, "{}", run.transcript());
                }
            });
        }
    });
    let records = records(&log);
    assert_eq!(records.len(), 2 * RUNS);
    for record in &records {
        let session = record["session_id"].as_str().unwrap();
        let letter = session.strip_prefix("writer-").unwrap();
        let content = record["input"]["content"].as_str().unwrap();
        assert_eq!(content.len(), 40_000);
        assert!(
            content.chars().all(|c| c.to_string() == letter),
            "{session}"
        );
    }
}

#[test]
fn run_logs_every_decided_call_with_who_decided() {
    let project = Project::standard();
    std::fs::write(
        project.path().join(".toolgate/policies/log.yaml"),
        "version: 1\nengine:\n  decision_log:\n    path: decisions.jsonl\n",
    )
    .unwrap();
    std::fs::write(
        project.path().join("batch.yaml"),
        "calls:\n  - { id: a, tool: Bash, input: { command: npm test } }\n  - { id: b, tool: Read, input: { file_path: .env } }\n  - { id: c, tool: WebSearch, input: { query: serde derive } }\n  - { id: d, tool: Nope, input: {} }\n  - { id: e, tool: WebFetch, input: { url: \"https://example.com\", prompt: p } }\n",
    )
    .unwrap();
    // The log is named by the project's engine settings, which apply once it is trusted.
    let trust = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("trust")
        .current_dir(project.path())
        .env("TOOLGATE_CONFIG_DIR", super::config())
        .output()
        .unwrap();
    assert!(trust.status.success());
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "run",
            "batch.yaml",
            "--approve",
            "deny",
            "--format",
            "jsonl",
        ])
        .current_dir(project.path())
        .env("TOOLGATE_CONFIG_DIR", super::config())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let records = records(&project.path().join("decisions.jsonl"));
    let validator = validator();
    let summary: Vec<Value> = records
        .iter()
        .map(|r| {
            assert!(validator.is_valid(r), "{r:#}");
            json!([
                r["event"],
                r["tool"],
                r["decision"],
                r["decided_by"],
                r["rule"]
            ])
        })
        .collect();
    // The unknown tool was never decided: no record.
    assert_eq!(
        summary,
        [
            json!(["run", "Bash", "allow", "rule", "npm-scripts"]),
            json!(["run", "Read", "deny", "rule", "no-secrets"]),
            json!(["run", "WebSearch", "allow", "default", null]),
            // Asked, and refused by the approver (`--approve deny`).
            json!(["run", "WebFetch", "deny", "person", null]),
        ]
    );
}

/// A FIFO at the log's path (another process's pipe, or one planted there) is refused, never
/// opened and waited on: the hook still answers, and says why nothing was logged (it hung,
/// and an agent takes a hook that times out as no objection).
#[test]
fn a_fifo_at_the_log_path_is_refused_and_the_hook_still_answers() {
    let project = Project::standard();
    let log = project.path().join("decisions.jsonl");
    nix::unistd::mkfifo(&log, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let log_arg = log.display().to_string();
    let run = project.hook(
        "claude",
        "claude/pre_tool_use_read_env.json",
        &[],
        &["--decision-log", &log_arg],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(run.stdout.contains("\"deny\""), "{}", run.transcript());
    assert!(
        run.stderr.contains("not a regular file"),
        "{}",
        run.transcript()
    );
}
