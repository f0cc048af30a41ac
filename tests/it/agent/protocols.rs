//! Per agent and event: the exact answer and exit code for everyday, asked and denied calls,
//! compound command lines, split calls (MultiEdit, patches, URLs), unknown tools, rewrites by
//! a toolgate hook, and a policy that does not load.

use insta::assert_snapshot;

use super::{Project, config, hooks_layer, run_hook};

/// Runs every fixture of `agent` listed in `cases` against the standard project (with the
/// hooks layer) and snapshots each transcript under `<agent>__<case>`.
fn answers(agent: &str, cases: &[&str]) {
    answers_in(&Project::standard(), agent, cases);
}

/// [`answers`] in `project`.
fn answers_in(project: &Project, agent: &str, cases: &[&str]) {
    let hooks = hooks_layer();
    for case in cases {
        let run = project.hook(
            agent,
            &format!("{agent}/{case}.json"),
            &["--enforced", &hooks],
            &[],
        );
        assert_snapshot!(format!("{agent}__{case}"), project.transcript(&run));
    }
}

#[test]
fn claude_code_pre_tool_use_permission_request_and_post_tool_use() {
    answers(
        "claude",
        &[
            "pre_tool_use_bash_allowed",
            "pre_tool_use_bash_ask",
            "pre_tool_use_rm_rf",
            "pre_tool_use_compound",
            "pre_tool_use_read_env",
            "pre_tool_use_read_source",
            "pre_tool_use_multi_edit",
            "pre_tool_use_in_a_subfolder",
            "pre_tool_use_unknown_tool",
            "pre_tool_use_mcp",
            "pre_tool_use_plan_mode",
            "pre_tool_use_npm_install",
            "permission_request_bash",
            "permission_request_denied",
            "permission_request_ask",
            "post_tool_use_bash",
        ],
    );
}

#[test]
fn codex_pre_tool_use_and_permission_request() {
    answers(
        "codex",
        &[
            "pre_tool_use_bash_allowed",
            "pre_tool_use_bash_ask",
            "pre_tool_use_rm_rf",
            "pre_tool_use_apply_patch_denied",
            "pre_tool_use_apply_patch",
            "pre_tool_use_apply_patch_indented_header",
            "pre_tool_use_bash_workdir",
            // Keys typed into a running program (`write_stdin`): a tab completes a name,
            // `^U` erases what came before it.
            "pre_tool_use_keys_tab",
            "pre_tool_use_keys_erase_line",
            // `!` runs a command in a pager (`less`), recalls one in an interactive shell.
            "pre_tool_use_keys_bang",
            "pre_tool_use_npm_install",
            "pre_tool_use_spawn_agent",
            "permission_request_bash",
            "permission_request_denied",
        ],
    );
}

#[test]
fn gemini_cli_before_tool_and_after_tool() {
    answers(
        "gemini",
        &[
            "before_tool_shell_allowed",
            "before_tool_shell_ask",
            "before_tool_rm_rf",
            "before_tool_read_env",
            "before_tool_read_many",
            "before_tool_web_fetch",
            // Its own `url` besides the prompt's (direct fetch reads only that one).
            "before_tool_web_fetch_url",
            "before_tool_mcp",
            "before_tool_unknown",
            "before_tool_npm_install",
            "before_tool_shell_in_folder",
            "before_tool_write_todos",
            "before_tool_save_memory",
            "after_tool_shell",
        ],
    );
}

/// Older Gemini CLI releases name some fields differently (`absolute_path`, `path`,
/// `directory`): each is judged as the field it is, and two names of one field with
/// different values are refused.
#[test]
fn gemini_cli_older_field_names_are_judged() {
    answers(
        "gemini",
        &[
            "before_tool_read_older_name",
            "before_tool_list_older_name",
            "before_tool_shell_older_folder",
            "before_tool_glob_two_names",
        ],
    );
}

#[test]
fn qwen_code_pre_tool_use_in_claude_code_format() {
    answers(
        "qwen",
        &[
            "pre_tool_use_shell_allowed",
            "pre_tool_use_shell_in_folder",
            "pre_tool_use_read_env",
            "pre_tool_use_edit",
            "pre_tool_use_read_many_include",
            "pre_tool_use_save_memory",
            // Names of older releases.
            "pre_tool_use_read_older_name",
            "pre_tool_use_search_older_name",
        ],
    );
}

/// A search asks for the protected files below the folder it reads, whichever agent's tool
/// runs it: Claude Code's `Grep` over the project (ripgrep with `--hidden`: a
/// `deploy/server.pem` and `config/.env.production`), Gemini CLI's `read_many_files` with a
/// glob that reaches `config/.env.production`.
#[test]
fn searches_answer_for_the_files_below_them() {
    let project = Project::standard();
    std::fs::create_dir_all(project.path().join("deploy")).unwrap();
    std::fs::write(project.path().join("deploy/server.pem"), "KEY\n").unwrap();
    std::fs::create_dir_all(project.path().join("config")).unwrap();
    std::fs::write(project.path().join("config/.env.production"), "TOKEN=1\n").unwrap();
    answers_in(&project, "claude", &["pre_tool_use_grep_project"]);
    answers_in(&project, "gemini", &["before_tool_read_many_glob"]);
}

/// Gemini CLI's `read_many_files` matches a path missing as written regardless of case
/// (`.ENV` reads `.env`), with `respect_git_ignore: false` reads what .gitignore lists,
/// climbs out of a wildcard with `..`, and names at most 256 paths.
#[test]
fn gemini_read_many_files_is_judged_as_gemini_reads() {
    let project = Project::standard();
    std::fs::create_dir_all(project.path().join("build")).unwrap();
    std::fs::write(project.path().join("build/tls.key"), "KEY\n").unwrap();
    std::fs::write(project.path().join(".gitignore"), "build/\n").unwrap();
    std::fs::write(project.path().join(".env"), "TOKEN=1\n").unwrap();
    answers_in(
        &project,
        "gemini",
        &[
            "before_tool_read_many_case",
            "before_tool_read_many_ignored",
            // `src/**/../.e*` is `.e*` to node-glob (`**` may match no folder).
            "before_tool_read_many_climbs",
            // 300 paths: refused with the limit, before any is searched.
            "before_tool_read_many_too_many",
        ],
    );
}

/// `no_ignore: true` brings what `.gitignore` lists back into Gemini CLI's search, under
/// its older name (`search_file_content`) too.
#[test]
fn gemini_searches_without_ignore_files_read_what_they_list() {
    let project = Project::standard();
    let git_init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(project.path())
        .status();
    if !git_init.is_ok_and(|status| status.success()) {
        eprintln!("skipped: git is not installed");
        return;
    }
    std::fs::create_dir_all(project.path().join("build")).unwrap();
    std::fs::write(project.path().join("build/tls.key"), "KEY\n").unwrap();
    std::fs::write(project.path().join(".gitignore"), "build/\n").unwrap();
    answers_in(&project, "gemini", &["before_tool_search_no_ignore"]);
}

/// Gemini CLI's `web_fetch` fetches every word of its prompt holding `://` that its URL
/// parser reads: each is judged as that parser writes it out, under the host it contacts
/// (`https:evil.net/…` and `http:\\evil.net/…` beside an allowed URL, user info that ends in
/// a quote before `@evil.net`), and a word it cannot read is asked about.
#[test]
fn gemini_web_fetch_judges_the_urls_gemini_fetches() {
    let project = Project::standard();
    std::fs::copy(
        super::fixtures().join("web.yaml"),
        project.path().join(".toolgate/policies/web.yaml"),
    )
    .unwrap();
    answers_in(
        &project,
        "gemini",
        &[
            "before_tool_web_fetch_allowed",
            "before_tool_web_fetch_no_slashes",
            "before_tool_web_fetch_backslashes",
            "before_tool_web_fetch_user_info",
            "before_tool_web_fetch_not_a_url",
        ],
    );
}

/// Gemini CLI's search may run `git grep --untracked -- INCLUDE` instead of ripgrep: its
/// include is read as a git pathspec too, so `.` (every file, to git) reaches `.env`.
#[test]
fn gemini_search_includes_are_read_as_git_pathspecs() {
    let project = Project::standard();
    std::fs::write(project.path().join(".env"), "TOKEN=1\n").unwrap();
    answers_in(&project, "gemini", &["before_tool_grep_include_pathspec"]);
}

#[test]
fn a_policy_that_does_not_load_denies_with_its_first_diagnostic() {
    let project = Project::with("broken.yaml");
    for (agent, fixture) in [
        ("claude", "claude/pre_tool_use_bash_allowed.json"),
        ("codex", "codex/pre_tool_use_bash_allowed.json"),
        ("gemini", "gemini/before_tool_shell_allowed.json"),
    ] {
        let run = project.hook(agent, fixture, &[], &[]);
        assert_snapshot!(format!("broken_policy__{agent}"), project.transcript(&run));
    }
    // `--on-error ask` asks instead (Codex cannot ask in PreToolUse: it still denies).
    let run = project.hook(
        "claude",
        "claude/pre_tool_use_bash_allowed.json",
        &[],
        &["--on-error", "ask"],
    );
    assert_eq!(run.code, 0);
    assert_eq!(
        run.json()["hookSpecificOutput"]["permissionDecision"],
        "ask"
    );
}

#[test]
fn an_unknown_tool_answer_is_configurable() {
    let project = Project::standard();
    let deny = project.hook(
        "claude",
        "claude/pre_tool_use_unknown_tool.json",
        &[],
        &["--unknown", "deny"],
    );
    assert_eq!(
        deny.json()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    let ask = project.hook(
        "gemini",
        "gemini/before_tool_unknown.json",
        &[],
        &["--unknown", "ask"],
    );
    assert_eq!(ask.json()["decision"], "ask");
}

#[test]
fn codex_asks_can_be_deferred_to_codex() {
    let project = Project::standard();
    let run = project.hook(
        "codex",
        "codex/pre_tool_use_bash_ask.json",
        &[],
        &["--codex-ask", "defer"],
    );
    assert_snapshot!("codex__ask_deferred", project.transcript(&run));
}

#[test]
fn payloads_that_cannot_be_read_block_with_exit_2() {
    for (name, payload) in [
        ("not_json", &b"{\"hook_event_name\": \"PreToolUse\", "[..]),
        (
            "no_tool",
            &b"{\"hook_event_name\": \"PreToolUse\", \"cwd\": \"/\"}"[..],
        ),
    ] {
        for agent in ["claude", "codex", "gemini"] {
            let run = run_hook(agent, payload, &[], &[]);
            assert_eq!(run.code, 2, "{agent} {name}: {}", run.transcript());
            assert!(
                run.stdout.is_empty(),
                "{agent} {name}: {}",
                run.transcript()
            );
            assert!(run.stderr.starts_with("toolgate: "), "{}", run.stderr);
        }
    }
    // A field of the wrong type is named.
    let run = run_hook(
        "claude",
        br#"{"hook_event_name": "PreToolUse", "cwd": "/", "tool_name": 5, "tool_input": {}}"#,
        &[],
        &[],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("`tool_name`: invalid type"),
        "{}",
        run.stderr
    );
    // The largest limit is no limit, not an overflow (it panicked, exit 101).
    let run = run_hook(
        "claude",
        b"{}",
        &[],
        &["--max-input", "18446744073709551615"],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let big = vec![b' '; 2048];
    let run = run_hook("claude", &big, &[], &["--max-input", "1024"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("larger than 1024 bytes"),
        "{}",
        run.stderr
    );
    // A `cwd` longer than any folder's path is refused at once: finding the project along
    // 200 000 components took seconds per call, growing with their square.
    let payload = serde_json::json!({
        "hook_event_name": "PreToolUse",
        "cwd": format!("/{}", "a/".repeat(200_000)),
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    });
    let run = run_hook("claude", payload.to_string().as_bytes(), &[], &[]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("more than the 4096 bytes"),
        "{}",
        run.stderr
    );
}

/// A tool call with a hook event toolgate does not know (a new or renamed event before the
/// call) is blocked, not left to the agent; one after the call (`PostToolUseFailure`) is not.
#[test]
fn a_tool_call_with_an_unknown_event_is_blocked() {
    let payload = |event: &str| {
        format!(
            r#"{{"hook_event_name": "{event}", "cwd": "/", "tool_name": "Read", "tool_input": {{"file_path": ".env"}}}}"#
        )
    };
    for agent in ["claude", "codex", "gemini"] {
        let run = run_hook(agent, payload("PreToolUse2").as_bytes(), &[], &[]);
        assert_eq!(run.code, 2, "{agent}: {}", run.transcript());
        assert!(run.stdout.is_empty(), "{agent}: {}", run.transcript());
        assert!(
            run.stderr.contains("hook event toolgate does not know"),
            "{agent}: {}",
            run.stderr
        );
        let after = run_hook(agent, payload("PostToolUseFailure").as_bytes(), &[], &[]);
        assert_eq!(after.code, 0, "{agent}: {}", after.transcript());
    }
}

/// An agent that writes its payload and never closes stdin gets an answer once
/// `--read-timeout` has passed (the hook waited for the end of input for ever before).
#[test]
fn a_payload_that_never_ends_is_refused_after_the_read_timeout() {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["hook", "claude", "--read-timeout", "300ms"])
        .current_dir(std::env::temp_dir())
        .env("TOOLGATE_CONFIG_DIR", config())
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"hook_event_name\": \"PreToolUse\",")
        .unwrap();
    stdin.flush().unwrap();
    // stdin stays open while the hook answers.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the hook waited for the end of its input past --read-timeout");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    drop(stdin);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(output.stdout.is_empty());
    insta::assert_snapshot!(stderr, @"toolgate: the hook payload did not end within 300ms (`--read-timeout`): the agent must close stdin after it");
}

#[test]
fn an_agent_without_a_tool_map_is_refused() {
    let project = Project::standard();
    let run = project.hook("cursor", "claude/pre_tool_use_bash_allowed.json", &[], &[]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("no agent `cursor` under `agents:`"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_project_adds_an_agent_without_code() {
    // An in-house agent that speaks Claude Code's hook format with its own tool names.
    let project = Project::standard();
    std::fs::write(
        project.path().join(".toolgate/policies/acme.yaml"),
        "version: 1\nagents:\n  acme:\n    protocol: claude\n    tools:\n      run_shell_command:\n        tool: Bash\n        input: { command: command }\n",
    )
    .unwrap();
    let payload = project
        .payload("claude/pre_tool_use_bash_allowed.json")
        .replace("\"Bash\"", "\"run_shell_command\"");
    let run = run_hook("acme", payload.as_bytes(), &[], &[]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        run.json()["hookSpecificOutput"]["permissionDecision"],
        "allow"
    );
}

#[test]
fn nothing_but_the_answer_reaches_stdout_even_with_logging_on() {
    let project = Project::standard();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["hook", "gemini"])
        .env("TOOLGATE_LOG", "debug")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(
                project
                    .payload("gemini/before_tool_shell_ask.json")
                    .as_bytes(),
            )?;
            child.wait_with_output()
        })
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let answer: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(answer["decision"], "ask");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(!output.stderr.is_empty(), "debug logs go to stderr");
}

/// The project is the one the agent names in its hooks' environment (`CLAUDE_PROJECT_DIR`),
/// not the event's `cwd`, which follows the agent's `cd` out of it: the project's rules
/// still decide there.
#[test]
fn the_project_is_the_one_the_agent_names_in_the_environment() {
    let project = Project::standard();
    let elsewhere = tempfile::tempdir().unwrap();
    let payload = serde_json::json!({
        "session_id": "s1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": elsewhere.path(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": { "command": "rm -r build" },
        "tool_use_id": "toolu_1",
    })
    .to_string();
    let named = super::run_hook_with_env(
        "claude",
        payload.as_bytes(),
        &[],
        &[],
        &[("CLAUDE_PROJECT_DIR", project.path())],
    );
    let out = named.stdout.clone();
    assert!(out.contains("\"permissionDecision\":\"deny\""), "{out}");
    assert!(out.contains("no-recursive-delete"), "{out}");
    let unnamed = super::run_hook("claude", payload.as_bytes(), &[], &[]);
    let out = unnamed.stdout.clone();
    assert!(!out.contains("no-recursive-delete"), "{out}");
}

/// Claude Code's `Grep` and `Glob` without a `path` search the folder the session is in:
/// with the session `cd`'d into `~/.ssh`, they are judged as searches of it.
#[test]
fn a_search_without_a_path_is_one_of_the_working_folder() {
    let project = Project::standard();
    let home = tempfile::tempdir().unwrap();
    let ssh = home.path().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), "KEY\n").unwrap();
    for (tool, input) in [
        ("Grep", serde_json::json!({ "pattern": "." })),
        ("Glob", serde_json::json!({ "pattern": "*" })),
        ("Grep", serde_json::json!({ "pattern": ".", "path": "" })),
        // Older releases' listing tool.
        ("LS", serde_json::json!({})),
        ("LS", serde_json::json!({ "path": ssh })),
    ] {
        let payload = serde_json::json!({
            "session_id": "s1",
            "transcript_path": "/tmp/t.jsonl",
            "cwd": ssh,
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": input,
            "tool_use_id": "toolu_1",
        })
        .to_string();
        let run = super::run_hook_with_env(
            "claude",
            payload.as_bytes(),
            &[],
            &[],
            &[
                ("CLAUDE_PROJECT_DIR", project.path()),
                ("HOME", home.path()),
            ],
        );
        let out = run.stdout.clone();
        assert!(
            out.contains("\"permissionDecision\":\"deny\""),
            "{tool} {input}: {out}"
        );
        assert!(out.contains("no-secrets-search"), "{tool} {input}: {out}");
    }
}

/// `cd NAME` may enter a folder the agent's shell settings choose, which the hook's
/// environment shows: `NAME` below each folder of an exported `CDPATH`, and with bash's
/// `cdable_vars` the value of a variable so named (`cd HOME`). A read there is judged there.
#[test]
fn cd_is_followed_where_the_environment_may_send_it() {
    let project = Project::standard();
    let home = tempfile::tempdir().unwrap();
    let gh = home.path().join(".config/gh");
    std::fs::create_dir_all(&gh).unwrap();
    std::fs::write(gh.join("hosts.yml"), "oauth_token: gho_X\n").unwrap();
    let store = home.path().join(".config");
    for (command, env) in [
        (
            "cd gh && head hosts.yml",
            vec![("HOME", home.path()), ("CDPATH", store.as_path())],
        ),
        (
            "cd HOME && head .config/gh/hosts.yml",
            vec![("HOME", home.path())],
        ),
        (
            "cd HOME/.config/gh && head hosts.yml",
            vec![("HOME", home.path())],
        ),
    ] {
        let payload = serde_json::json!({
            "hook_event_name": "PreToolUse",
            "cwd": project.path(),
            "tool_name": "Bash",
            "tool_input": {"command": command},
        });
        let mut env = env;
        env.push(("CLAUDE_PROJECT_DIR", project.path()));
        let run =
            super::run_hook_with_env("claude", payload.to_string().as_bytes(), &[], &[], &env);
        let out = run.stdout.clone();
        assert!(
            out.contains("\"permissionDecision\":\"deny\""),
            "{command}: {out}"
        );
        assert!(out.contains("no-secrets"), "{command}: {out}");
    }
}

/// The configuration folder with the trust store and the user layer is protected wherever
/// the environment puts it (`TOOLGATE_CONFIG_DIR`, `XDG_CONFIG_HOME`), not only at
/// `~/.config/toolgate`: an agent that rewrote the store would trust its own policies.
#[test]
fn the_trust_store_is_protected_wherever_it_is() {
    let project = Project::standard();
    let store = config().join("trusted.json");
    for (tool, path) in [
        ("Write", store.clone()),
        ("Write", config().join("policies/mine.yaml")),
    ] {
        let payload = serde_json::json!({
            "hook_event_name": "PreToolUse",
            "cwd": project.path(),
            "tool_name": tool,
            "tool_input": {"file_path": path, "content": "{}"},
        });
        let run = run_hook("claude", payload.to_string().as_bytes(), &[], &[]);
        assert!(
            run.stdout.contains("\"deny\""),
            "{path:?}: {}",
            run.transcript()
        );
        assert!(
            run.stdout.contains("no-policy-writes"),
            "{path:?}: {}",
            run.transcript()
        );
    }
    let payload = serde_json::json!({
        "hook_event_name": "PreToolUse",
        "cwd": project.path(),
        "tool_name": "Bash",
        "tool_input": {"command": format!("echo '{{}}' > {}", store.display())},
    });
    let run = run_hook("claude", payload.to_string().as_bytes(), &[], &[]);
    assert!(run.stdout.contains("\"deny\""), "{}", run.transcript());
}

/// An answer that cannot be written (a full disk: `/dev/full`) fails the hook with exit 2,
/// which blocks the call, and says why on stderr: the hook exited 0 with nothing written,
/// which Gemini CLI reads as "allow".
#[test]
fn an_answer_that_cannot_be_written_blocks_the_call() {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: this system has no /dev/full");
        return;
    };
    let project = Project::standard();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["hook", "gemini"])
        .current_dir(std::env::temp_dir())
        .env("TOOLGATE_CONFIG_DIR", config())
        .env_remove("GEMINI_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(full)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let payload = project.payload("gemini/before_tool_read_env.json");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(payload.as_bytes()).unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("could not be written to standard output"),
        "{stderr}"
    );
}

/// A payload that starts with a UTF-8 byte-order mark is read as JSON parsers may read it
/// (it was refused as "not JSON at line 1 column 1", with no hint).
#[test]
fn a_payload_with_a_byte_order_mark_is_read() {
    let project = Project::standard();
    let payload = project.payload("claude/pre_tool_use_read_env.json");
    let plain = run_hook("claude", payload.as_bytes(), &[], &[]);
    let marked = run_hook(
        "claude",
        &[b"\xef\xbb\xbf".as_slice(), payload.as_bytes()].concat(),
        &[],
        &[],
    );
    assert_eq!(marked.code, 0, "{}", marked.transcript());
    assert_eq!(marked.stdout, plain.stdout);
}
