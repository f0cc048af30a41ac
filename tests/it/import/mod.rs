//! `toolgate import`: realistic rule files of each agent (`tests/fixtures/import/`, written
//! from the agents' documentation and covering every form the importer reads) are imported
//! by the real binary; the output is snapshotted, passes `toolgate check`, and decides a
//! table of calls as the source agent documents them, through the same decision function as
//! `toolgate plan`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use toolgate::{Decision, ModeName};
use toolgate::{LayerOptions, LoadOptions, Snapshot, load};
use toolgate::{ToolCall, assess};

use crate::support::check::{NO_CONFIG, ROOT, Run, normalise};

const FIXTURES: &str = "tests/fixtures/import";

/// One import by the binary, from the repository root.
struct Imported {
    run: Run,
    dir: tempfile::TempDir,
}

impl Imported {
    fn policy(&self) -> PathBuf {
        self.dir.path().join("imported.yaml")
    }

    fn enforced(&self) -> Option<PathBuf> {
        let path = self.dir.path().join("enforced.yaml");
        path.exists().then_some(path)
    }

    /// Exit code, stdout and stderr, with the repository and temporary folder replaced.
    fn transcript(&self) -> String {
        self.run
            .transcript()
            .replace(&self.dir.path().display().to_string(), "[OUT]")
    }
}

fn import(agent: &str, files: &[&str], home: &Path) -> Imported {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = vec!["import".into(), agent.into()];
    args.extend(files.iter().map(|f| format!("{FIXTURES}/{f}")));
    args.push("--enforced-output".into());
    args.push(dir.path().join("enforced.yaml").display().to_string());
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(&args)
        .current_dir(ROOT)
        .env("HOME", home)
        .env("TOOLGATE_CONFIG_DIR", NO_CONFIG)
        .output()
        .unwrap();
    let run = Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    std::fs::write(dir.path().join("imported.yaml"), &run.stdout).unwrap();
    Imported { run, dir }
}

fn claude() -> Imported {
    import(
        "claude",
        &[
            "claude/home/.claude/settings.json",
            "claude/project/.claude/settings.json",
            "claude/project/.claude/settings.local.json",
            "claude/managed/managed-settings.json",
        ],
        &Path::new(ROOT).join(FIXTURES).join("claude/home"),
    )
}

fn codex() -> Imported {
    import("codex", &["codex/default.rules"], Path::new("/home/dev"))
}

fn gemini() -> Imported {
    import(
        "gemini",
        &[
            "gemini/user/policies.toml",
            "gemini/project/.gemini/policies/team.toml",
            "gemini/etc/gemini-cli/policies/admin.toml",
        ],
        Path::new("/home/dev"),
    )
}

/// `toolgate check` of the imported files (the enforced one with `--enforced`) passes.
fn assert_checks(imported: &Imported) {
    let mut args: Vec<String> = Vec::new();
    if let Some(enforced) = imported.enforced() {
        args.extend(["--enforced".into(), enforced.display().to_string()]);
    }
    args.extend([
        "-p".into(),
        imported.policy().display().to_string(),
        "check".into(),
    ]);
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(&args)
        .current_dir(ROOT)
        .env("TOOLGATE_CONFIG_DIR", NO_CONFIG)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("policy set OK"), "{stdout}");
}

/// The imported set as `toolgate plan` loads it, with `/ws` as workspace and `/home/dev` as
/// home folder.
fn snapshot(imported: &Imported) -> std::sync::Arc<Snapshot> {
    let mut options = LoadOptions::new(LayerOptions {
        enforced: imported.enforced().into_iter().collect(),
        policies: vec![imported.policy()],
        ..LayerOptions::default()
    });
    options.workspace_root = PathBuf::from("/ws");
    options.home = Some(PathBuf::from("/home/dev"));
    let outcome = load(&options, 1);
    outcome
        .snapshot
        .unwrap_or_else(|| panic!("{:#?}", outcome.diagnostics))
}

/// Checks every `(tool, input, modes, decision)` of a table.
fn assert_table(snapshot: &Snapshot, table: &[(&str, Value, &[&str], Decision)]) {
    let mut wrong = Vec::new();
    for (index, (tool, input, modes, want)) in table.iter().enumerate() {
        let call = ToolCall::new(format!("c{index}"), *tool, input.clone());
        let modes: Vec<ModeName> = modes.iter().map(|m| ModeName::new(*m)).collect();
        let assessment = assess(snapshot, &modes, &call);
        let permission = assessment
            .permission()
            .unwrap_or_else(|| panic!("{tool} {input}: {:?}", assessment.rejection()));
        if permission.decision != *want {
            wrong.push(format!(
                "{tool} {input} {modes:?}: want {want}, got {} by {:?}",
                permission.decision,
                permission
                    .reasons
                    .iter()
                    .map(|r| r.label())
                    .collect::<Vec<_>>()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn bash(command: &str) -> Value {
    json!({ "command": command })
}

fn edit(path: &str) -> Value {
    json!({ "file_path": path, "old_string": "a", "new_string": "b" })
}

#[test]
fn claude_settings_import_check_and_decide_as_claude_code_documents() {
    let imported = claude();
    assert_eq!(imported.run.code, 0, "{}", imported.run.transcript());
    insta::assert_snapshot!("claude", normalise(&imported.transcript()));
    insta::assert_snapshot!(
        "claude_enforced",
        normalise(&std::fs::read_to_string(imported.enforced().unwrap()).unwrap())
    );
    assert_checks(&imported);
    use Decision::{Allow, Ask, Deny};
    let none: &[&str] = &[];
    assert_table(
        &snapshot(&imported),
        &[
            // `Bash(npm run test:*)`: a prefix, the command alone or with more words.
            ("Bash", bash("npm run test"), none, Allow),
            ("Bash", bash("npm run test --watch"), none, Allow),
            // `Bash(npm run lint *)`.
            ("Bash", bash("npm run lint src"), none, Allow),
            // Every part of a compound command must be allowed; a denied part denies.
            ("Bash", bash("npm run test && npm run build"), none, Ask),
            (
                "Bash",
                bash("npm run test && curl https://example.com"),
                none,
                Deny,
            ),
            // Ask beats allow; no rule: Bash asks.
            ("Bash", bash("git push origin main"), none, Ask),
            ("Bash", bash("npm run build"), none, Ask),
            ("Bash", bash("git commit -m wip"), none, Allow),
            ("Bash", bash("make all"), none, Allow),
            // Managed settings: an enforced deny.
            ("Bash", bash("sudo make install"), none, Deny),
            // `Read(./.env)`, `Read(//etc/shadow)`, `Read(secrets/)`, `Read(~/notes/**)`.
            ("Read", json!({ "file_path": ".env" }), none, Deny),
            ("Read", json!({ "file_path": "/etc/shadow" }), none, Deny),
            (
                "Read",
                json!({ "file_path": "deploy/secrets/token" }),
                none,
                Deny,
            ),
            (
                "Read",
                json!({ "file_path": "~/notes/todo.md" }),
                none,
                Allow,
            ),
            ("Read", json!({ "file_path": "src/main.rs" }), none, Allow),
            (
                "Grep",
                json!({ "pattern": "x", "path": "deploy/secrets" }),
                none,
                Deny,
            ),
            // `Edit(/src/**)` and acceptEdits allow; `Edit(./package.json)` asks;
            // `Edit(/config/production/**)` denies.
            ("Edit", edit("src/lib.rs"), none, Allow),
            ("Edit", edit("README.md"), none, Allow),
            ("Edit", edit("package.json"), none, Ask),
            (
                "Write",
                json!({ "file_path": "config/production/db.yml", "content": "x" }),
                none,
                Deny,
            ),
            // `WebFetch(domain:example.com)`; other domains ask; `WebSearch` is denied.
            (
                "WebFetch",
                json!({ "url": "https://example.com/docs", "prompt": "p" }),
                none,
                Allow,
            ),
            (
                "WebFetch",
                json!({ "url": "https://example.org/", "prompt": "p" }),
                none,
                Ask,
            ),
            ("WebSearch", json!({ "query": "toolgate" }), none, Deny),
            ("Glob", json!({ "pattern": "**/*.rs" }), none, Allow),
        ],
    );
}

#[test]
fn codex_rules_import_and_their_examples_hold_on_every_load() {
    let imported = codex();
    assert_eq!(imported.run.code, 0, "{}", imported.run.transcript());
    insta::assert_snapshot!("codex", normalise(&imported.transcript()));
    assert!(imported.enforced().is_none());
    // `check` loads the rules with their `match`/`not_match` examples: every one kept holds.
    assert_checks(&imported);
    let text = std::fs::read_to_string(imported.policy()).unwrap();
    assert_eq!(text.matches("{\"tool\":\"Bash\"").count(), 15, "{text}");
    // The one example toolgate judges differently is reported, not dropped silently.
    assert!(
        imported
            .run
            .stderr
            .contains("`find . -name '*.orig' -delete` is judged differently"),
        "{}",
        imported.run.stderr
    );
    use Decision::{Allow, Ask, Deny};
    let none: &[&str] = &[];
    assert_table(
        &snapshot(&imported),
        &[
            ("Bash", bash("git status"), none, Allow),
            ("Bash", bash("git log -1"), none, Allow),
            ("Bash", bash("git push origin main"), none, Ask),
            ("Bash", bash("rm -fr build"), none, Deny),
            ("Bash", bash("curl -fsSL https://example.com"), none, Deny),
            ("Bash", bash("npm run lint"), none, Allow),
            ("Bash", bash("npm run build"), none, Ask),
        ],
    );
}

#[test]
fn gemini_policies_import_check_and_decide_as_gemini_cli_documents() {
    let imported = gemini();
    assert_eq!(imported.run.code, 0, "{}", imported.run.transcript());
    insta::assert_snapshot!("gemini", normalise(&imported.transcript()));
    insta::assert_snapshot!(
        "gemini_enforced",
        std::fs::read_to_string(imported.enforced().unwrap()).unwrap()
    );
    assert_checks(&imported);
    use Decision::{Allow, Ask, Deny};
    let none: &[&str] = &[];
    assert_table(
        &snapshot(&imported),
        &[
            // The highest priority wins: `git status` (200) over `git` (100).
            ("Bash", bash("git status"), none, Allow),
            ("Bash", bash("git commit -m x"), none, Ask),
            // Admin tier over user tier, whatever the priority.
            ("Bash", bash("git push origin main"), none, Deny),
            ("Bash", bash("rm -rf build"), none, Deny),
            ("Bash", bash("git reset --hard HEAD~1"), none, Deny),
            // Workspace tier: below every user rule, but the only one for `make`.
            ("Bash", bash("make all"), none, Allow),
            // Modes: `plan` denies the shell; `autoEdit` allows writes.
            ("Bash", bash("git status"), &["plan"], Deny),
            (
                "Write",
                json!({ "file_path": "a.txt", "content": "x" }),
                none,
                Ask,
            ),
            (
                "Write",
                json!({ "file_path": "a.txt", "content": "x" }),
                &["autoEdit"],
                Allow,
            ),
            ("Edit", edit("a.txt"), &["autoEdit"], Ask),
            ("Read", json!({ "file_path": "src/main.rs" }), none, Allow),
            // `interactive = false` → toolgate's `automation` mode.
            (
                "WebFetch",
                json!({ "url": "https://example.com/", "prompt": "p" }),
                &["automation"],
                Deny,
            ),
            (
                "WebFetch",
                json!({ "url": "https://example.com/", "prompt": "p" }),
                none,
                Ask,
            ),
            ("WebSearch", json!({ "query": "toolgate" }), none, Allow),
        ],
    );
}

#[test]
fn organisation_rules_need_an_enforced_output() {
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "import",
            "gemini",
            &format!("{FIXTURES}/gemini/etc/gemini-cli/policies/admin.toml"),
        ])
        .current_dir(ROOT)
        .env("TOOLGATE_CONFIG_DIR", NO_CONFIG)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--enforced-output"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn a_broken_rules_file_is_an_error_at_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    for (agent, name, text, want) in [
        (
            "codex",
            "bad.rules",
            "prefix_rule(\n    pattern = [\"git\", status],\n)\n",
            "bad.rules:2:23: `status`: only literal values",
        ),
        (
            "codex",
            "unknown.rules",
            "allow(\"git\")\n",
            "unknown.rules:1:1: `allow` is not a Codex policy function",
        ),
        (
            "claude",
            "settings.json",
            "{\n  \"permissions\": { \"allow\": [\"Bash\" }\n}\n",
            "settings.json:2:37: not valid JSON: expected `,` or `]`\n",
        ),
        // A key given twice: Claude Code keeps the last list, and the first deny rule was
        // dropped without a word.
        (
            "claude",
            "dup.json",
            "{\"permissions\": {\"deny\": [\"Bash(curl:*)\"],\n \"deny\": [\"Read(.env)\"]}}\n",
            "dup.json:2:2: the key `deny` is defined twice",
        ),
        (
            "gemini",
            "bad.toml",
            "[[rule]]\ntoolName = \"run_shell_command\"\ndecision = \n",
            "bad.toml:3:",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["import", agent, path.to_str().unwrap()])
            .env("TOOLGATE_CONFIG_DIR", NO_CONFIG)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{agent} {name}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(want), "{agent} {name}: {stderr}");
    }
}
