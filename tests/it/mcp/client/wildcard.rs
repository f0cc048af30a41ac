//! Wildcard contracts (`mcp__<server>__*`): the tools of a server, the ones it adds later
//! included, run under one contract that exact contracts extend; rules written for the
//! wildcard apply to every tool it covers, and a wildcard never reaches another server.

use serde_json::json;
use toolgate::EventKind;
use toolgate::events::CallStatus;

use super::harness::{Workspace, call};
use crate::support::check::{toolgate, toolgate_in};
use crate::support::mcp_server;

fn policy(log: &std::path::Path) -> String {
    let entry = mcp_server::yaml_entry(log);
    format!(
        r#"version: 1
mcp_servers:
  test: {entry}
  tes: {entry}
tools:
  mcp__test__*:
    handler: {{ kind: mcp, server: test }}
    permission: {{ default: allow }}
  mcp__test__fail:
    permission: {{ default: deny }}
  mcp__test__sleep:
    timeout: {{ default: 200ms }}
rules:
  - name: no-secrets
    tools: [mcp__test__*]
    match:
      text: {{ glob: ["secret*"] }}
    decision: deny
    reason: no secrets through the test server
"#
    )
}

#[tokio::test]
async fn a_wildcard_runs_every_tool_of_its_server_and_exact_contracts_extend_it() {
    let workspace = Workspace::new("");
    workspace.write(&policy(&workspace.path("cancel.log")));
    let (engine, _sink) = workspace.engine();

    // A covered tool without a contract of its own runs on the server's tool of its name.
    let echo = call(&engine, "mcp__test__echo", json!({"text": "hi"})).await;
    assert_eq!(echo.results[0].status, CallStatus::Ok);
    assert_eq!(echo.results[0].model_text(), "hi");

    // A rule written for the wildcard applies to the tools it covers.
    let secret = call(&engine, "mcp__test__echo", json!({"text": "secret-1"})).await;
    assert_eq!(secret.results[0].status, CallStatus::Denied);
    assert!(
        secret.results[0]
            .model_text()
            .contains("no secrets through the test server"),
        "{}",
        secret.results[0].model_text()
    );

    // An exact contract overrides what it sets and keeps the rest (handler, server).
    let fail = call(&engine, "mcp__test__fail", json!({"message": "x"})).await;
    assert_eq!(fail.results[0].status, CallStatus::Denied);
    let sleep = call(&engine, "mcp__test__sleep", json!({"ms": 60_000})).await;
    assert_eq!(sleep.results[0].status, CallStatus::TimedOut);

    // A tool the server adds later is covered as soon as the server lists it.
    let late = call(&engine, "mcp__test__late", json!({})).await;
    assert_eq!(late.results[0].status, CallStatus::Error);
    assert_eq!(
        call(&engine, "mcp__test__grow", json!({})).await.results[0].model_text(),
        "grown"
    );
    let late = call(&engine, "mcp__test__late", json!({})).await;
    assert_eq!(late.results[0].status, CallStatus::Ok);
    assert_eq!(late.results[0].model_text(), "late");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_wildcard_covers_no_other_server_and_is_no_tool_itself() {
    let workspace = Workspace::new("");
    workspace.write(&policy(&workspace.path("cancel.log")));
    let (engine, _sink) = workspace.engine();
    // `tes` is declared but has no wildcard; `testx` and `test_x` are other servers; so may
    // be an agent's servers `test__x` and `test_` (`mcp__test__x__echo`,
    // `mcp__test___echo`: they were covered, and allowed by the wildcard's default); the
    // wildcard's own name and a name without a tool part are not tools.
    for name in [
        "mcp__tes__echo",
        "mcp__testx__echo",
        "mcp__test_x__echo",
        "mcp__test__x__echo",
        "mcp__test___echo",
        "mcp__test__*",
        "mcp__test__",
        "mcp__test",
        "mcp__test__a/b",
    ] {
        let outcome = call(&engine, name, json!({"text": "x"})).await;
        assert_eq!(outcome.results[0].status, CallStatus::Error, "{name}");
        assert!(
            outcome.results[0].model_text().contains("Tool not found"),
            "{name}: {}",
            outcome.results[0].model_text()
        );
    }
    engine.shutdown().await;
}

#[tokio::test]
async fn a_stdio_server_goes_with_its_process_group() {
    let workspace = Workspace::new("");
    workspace.write(&policy(&workspace.path("cancel.log")));
    let (engine, _sink) = workspace.engine();
    let spawned = call(&engine, "mcp__test__spawn", json!({})).await;
    let pid: i32 = spawned.results[0].model_text().trim().parse().unwrap();
    assert!(alive(pid), "the grandchild did not start");
    engine.shutdown().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(pid) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!alive(pid), "the server's child {pid} outlived the server");
}

/// A process the server starts in a group of its own (`setsid`, `setpgid`) does not outlive
/// the server either: the `toolgate` binary tracks a server's processes as it does a
/// command's (the group's signal alone missed it, and it ran on after `toolgate run`).
#[test]
fn a_process_that_leaves_a_servers_group_goes_with_the_server() {
    let workspace = Workspace::new("");
    workspace.write(&policy(&workspace.path("cancel.log")));
    std::fs::write(
        workspace.path("batch.yaml"),
        "calls:\n  - { id: d, tool: mcp__test__detach, input: {} }\n",
    )
    .unwrap();
    let finalized = run_batch(&workspace);
    let pid: i32 = finalized["results"][0]["model_content"]
        .as_str()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {finalized}"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(pid) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let survived = alive(pid);
    if survived {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(
        !survived,
        "the server's detached child {pid} outlived toolgate"
    );
}

/// A server is no orphan of a command that ends beside it: the sweep for the orphans a
/// finished command left took the running server for one and killed it (the next call
/// started it again, and what the server held, here a tool it added, was gone).
#[test]
fn a_server_outlives_the_commands_that_run_beside_it() {
    let workspace = Workspace::new("");
    let shell = "  Sh:\n    input_schema: { type: object, properties: { command: { type: string } } }\n    permission: { default: allow }\n    handler: { kind: command, argv: [bash, -c, \"{{input.command}}\"], env: [PATH] }\n";
    let policy =
        policy(&workspace.path("cancel.log")).replacen("tools:\n", &format!("tools:\n{shell}"), 1);
    workspace.write(&policy);
    std::fs::write(
        workspace.path("batch.yaml"),
        "calls:\n  - { id: g, tool: mcp__test__grow, input: {} }\n  - { id: s, tool: Sh, input: { command: \"true\" } }\n  - { id: l, tool: mcp__test__late, input: {} }\n",
    )
    .unwrap();
    let finalized = run_batch(&workspace);
    let results = finalized["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{finalized}");
    assert_eq!(results[1]["status"], "ok", "{finalized}");
    assert_eq!(results[2]["model_content"], "late", "{finalized}");
}

/// `toolgate run` of the workspace's `batch.yaml` (its own process: a subreaper, as the
/// binary is) and its `BatchFinalized` event.
fn run_batch(workspace: &Workspace) -> serde_json::Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(workspace.dir.path())
        .env("HOME", workspace.dir.path())
        .args([
            "--no-builtin",
            "-p",
            "policies",
            "run",
            "batch.yaml",
            "--format",
            "jsonl",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|event| event["type"] == "BatchFinalized")
        .unwrap_or_else(|| panic!("{stdout}{}", String::from_utf8_lossy(&output.stderr)))
}

/// Whether a process exists and is not a zombie waiting to be reaped.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn explain_shows_the_wildcard_that_applies() {
    let args = |tool: &str| {
        toolgate(&[
            "--no-builtin",
            "-p",
            "tests/fixtures/mcp/wildcard",
            "explain",
            tool,
        ])
    };
    let covered = args("mcp__github__list_issues");
    assert_eq!(covered.code, 0, "{}", covered.transcript());
    insta::assert_snapshot!("explain_covered", covered.transcript());
    let extended = args("mcp__github__create_issue");
    assert_eq!(extended.code, 0, "{}", extended.transcript());
    insta::assert_snapshot!("explain_extended", extended.transcript());
}

#[test]
fn check_reports_wildcards_that_name_no_server() {
    let run = toolgate(&[
        "--no-builtin",
        "-p",
        "tests/fixtures/mcp/wildcard_errors",
        "check",
    ]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!("wildcard_check_errors", run.transcript());
}

/// A call a wildcard covers is named by the tool it runs, not by the wildcard: in its events,
/// in what hooks are shown, in denial messages and in its result (a hook or a person deciding
/// on `mcp__test__*` could not tell `echo` from `crash`).
#[tokio::test]
async fn a_covered_call_is_named_by_its_tool_in_events_hooks_and_results() {
    let workspace = Workspace::new("");
    let seen = workspace.path("hook.jsonl");
    let policy = format!(
        "{}hooks:\n  - name: record\n    event: PreToolUse\n    tools: [mcp__test__*]\n    command: [sh, -c, 'cat >> {}; echo >> {}']\n",
        policy(&workspace.path("cancel.log")),
        seen.display(),
        seen.display()
    );
    workspace.write(&policy);
    let (engine, sink) = workspace.engine();

    let echo = call(&engine, "mcp__test__echo", json!({"text": "hi"})).await;
    assert_eq!(echo.results[0].status, CallStatus::Ok);
    assert_eq!(
        echo.results[0].canonical_tool.as_ref().map(|t| t.as_str()),
        Some("mcp__test__echo")
    );
    let denied = call(&engine, "mcp__test__echo", json!({"text": "secret"})).await;
    assert_eq!(denied.results[0].status, CallStatus::Denied);

    let named: Vec<String> = sink
        .events()
        .into_iter()
        .filter_map(|event| match event.kind {
            EventKind::ToolCallScheduled(scheduled) => {
                Some(format!("scheduled {}", scheduled.tool))
            }
            EventKind::ToolCallStarted(started) => Some(format!("started {}", started.tool)),
            EventKind::PermissionDenied(denied) => Some(format!("denied {}", denied.tool)),
            EventKind::ToolCallResult(result) => Some(format!("result {}", result.tool)),
            EventKind::ToolCallError(error) => Some(format!("error {}", error.tool)),
            _ => None,
        })
        .collect();
    assert_eq!(
        named,
        [
            "scheduled mcp__test__echo",
            "started mcp__test__echo",
            "result mcp__test__echo",
            "scheduled mcp__test__echo",
            "denied mcp__test__echo",
            "error mcp__test__echo"
        ]
    );
    let payloads: Vec<serde_json::Value> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(payloads.len(), 2, "{payloads:?}");
    for payload in payloads {
        assert_eq!(payload["tool_name"], "mcp__test__echo", "{payload}");
    }
    engine.shutdown().await;
}

/// A policy over a server that also lists `repo.delete`: the contracts `toolgate mcp import`
/// writes for it (`mcp__test__repo_delete`, tool `repo.delete`), a renamed contract for
/// `echo`, and a wildcard that allows the rest.
fn exact_contracts_policy(workspace: &Workspace) -> String {
    let entry = mcp_server::yaml_entry_with_tools(
        &workspace.path("cancel.log"),
        &[("repo.delete", "Deletes a repository")],
    );
    format!(
        r#"version: 1
mcp_servers:
  test: {entry}
tools:
  mcp__test__*:
    handler: {{ kind: mcp, server: test }}
    permission: {{ default: allow }}
  mcp__test__repo_delete:
    handler: {{ kind: mcp, server: test, tool: "repo.delete" }}
  mcp__test__say:
    handler: {{ kind: mcp, server: test, tool: echo }}
rules:
  - name: no-repo-delete
    tools: [mcp__test__repo_delete]
    decision: deny
    reason: never delete repositories
"#
    )
}

/// A server tool an exact contract runs is run under that contract only: the name a wildcard
/// would run it under (`mcp__test__repo.delete` beside `mcp__test__repo_delete`, whose rule
/// denies it) is refused with the contract's name, by the engine and by `plan` alike, and
/// nothing reaches the server.
#[tokio::test]
async fn a_wildcard_does_not_run_a_server_tool_an_exact_contract_runs() {
    let workspace = Workspace::new("");
    workspace.write(&exact_contracts_policy(&workspace));
    let (engine, sink) = workspace.engine();

    let exact = call(
        &engine,
        "mcp__test__repo_delete",
        json!({"repo": "org/prod"}),
    )
    .await;
    assert_eq!(exact.results[0].status, CallStatus::Denied);
    assert!(
        exact.results[0]
            .model_text()
            .contains("never delete repositories"),
        "{}",
        exact.results[0].model_text()
    );
    for (name, contract) in [
        ("mcp__test__repo.delete", "mcp__test__repo_delete"),
        ("mcp__test__echo", "mcp__test__say"),
    ] {
        let outcome = call(&engine, name, json!({"repo": "org/prod", "text": "hi"})).await;
        assert_eq!(outcome.results[0].status, CallStatus::Error, "{name}");
        assert_eq!(
            outcome.results[0].model_text(),
            format!("Tool not found: {name} (the MCP tool it names is called {contract})")
        );
    }
    let started: Vec<String> = sink
        .events()
        .into_iter()
        .filter_map(|event| match event.kind {
            EventKind::ToolCallStarted(started) => Some(started.tool),
            _ => None,
        })
        .collect();
    assert!(started.is_empty(), "{started:?}");

    // The renamed contract runs its tool; the wildcard still covers the tools no contract runs.
    let said = call(&engine, "mcp__test__say", json!({"text": "hi"})).await;
    assert_eq!(said.results[0].model_text(), "hi");
    let added = call(&engine, "mcp__test__add", json!({"a": 1, "b": 2})).await;
    assert_eq!(added.results[0].status, CallStatus::Ok);
    engine.shutdown().await;

    std::fs::write(
        workspace.path("batch.yaml"),
        "calls:\n  - { id: a, tool: mcp__test__repo_delete, input: {} }\n  - { id: b, tool: mcp__test__repo.delete, input: {} }\n",
    )
    .unwrap();
    let planned = toolgate_in(
        workspace.dir.path(),
        &[
            "--no-builtin",
            "-p",
            "policies",
            "plan",
            "batch.yaml",
            "--format",
            "json",
        ],
    );
    let plan: serde_json::Value = serde_json::from_str(&planned.stdout)
        .unwrap_or_else(|_| panic!("{}", planned.transcript()));
    assert_eq!(plan["calls"][0]["decision"], "deny", "{plan}");
    assert_eq!(plan["calls"][1]["decision"], "error", "{plan}");
    assert_eq!(
        plan["calls"][1]["error"],
        "Tool not found: mcp__test__repo.delete (the MCP tool it names is called mcp__test__repo_delete)"
    );
}

/// In hook mode too: an agent's call by the name the wildcard would run the tool under is
/// refused, with the name of the contract that runs it (not left to the agent's own rules).
#[test]
fn a_hook_refuses_a_server_tool_by_a_name_its_contract_does_not_have() {
    let workspace = Workspace::new("");
    workspace.write(&exact_contracts_policy(&workspace));
    let payload = json!({
        "session_id": "s",
        "transcript_path": "/nonexistent/s.jsonl",
        "cwd": workspace.dir.path(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "mcp__test__repo.delete",
        "tool_input": {"repo": "org/prod"},
        "tool_use_id": "t"
    });
    let policies = workspace.path("policies");
    let run = crate::agent::run_hook(
        "claude",
        payload.to_string().as_bytes(),
        &["-p", policies.to_str().unwrap()],
        &[],
    );
    let answer = &run.json()["hookSpecificOutput"];
    assert_eq!(answer["permissionDecision"], "deny", "{}", run.transcript());
    assert_eq!(
        answer["permissionDecisionReason"],
        "`mcp__test__repo.delete` names an MCP server tool that only `mcp__test__repo_delete` runs: call it by that name"
    );
}
