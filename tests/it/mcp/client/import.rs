//! `toolgate mcp import SERVER`: the contract file written from the test server's tool list,
//! and that it loads and asks before anything runs.

use serde_json::json;
use toolgate::CallStatus;

use super::harness::{Workspace, call};
use crate::support::check::toolgate;
use crate::support::mcp_server;

#[tokio::test]
async fn import_writes_a_reviewable_contract_per_tool_that_asks_before_running() {
    let workspace = Workspace::new("");
    let server = mcp_server::yaml_entry(&workspace.path("cancel.log"));
    let trusted = format!(
        "{}, trust_annotations: true }}",
        server.trim_end_matches('}').trim_end()
    );
    workspace.write(&format!(
        "version: 1\nmcp_servers:\n  test: {server}\n  trusted: {trusted}\n"
    ));
    let policies = workspace.path("policies");
    let run = toolgate(&[
        "--no-builtin",
        "-p",
        policies.to_str().unwrap(),
        "mcp",
        "import",
        "test",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("mcp_import_test_server", run.stdout);

    std::fs::write(workspace.path("policies/test-tools.yaml"), &run.stdout).unwrap();

    // A server whose annotations are trusted gets the flags they suggest as contract values.
    let trusting = toolgate(&[
        "--no-builtin",
        "-p",
        policies.to_str().unwrap(),
        "mcp",
        "import",
        "trusted",
    ]);
    assert_eq!(trusting.code, 0, "{}", trusting.stderr);
    assert!(trusting.stdout.contains(
        "  mcp__trusted__echo:\n    description: \"Returns its text\"\n    handler: { kind: mcp, server: trusted, tool: \"echo\" }\n"
    ));
    assert!(trusting.stdout.contains(
        "    # from the annotations (`trust_annotations: true`):\n    concurrency: { read_only: true, side_effect_scope: none }\n"
    ));
    std::fs::write(
        workspace.path("policies/trusted-tools.yaml"),
        &trusting.stdout,
    )
    .unwrap();
    let snapshot = workspace.snapshot(1);
    assert_eq!(
        snapshot.effective()["tools"]["mcp__trusted__echo"]["concurrency"]["read_only"],
        true
    );
    let (engine, _sink) = workspace.engine();
    let asked = call(&engine, "mcp__test__echo", json!({"text": "hi"})).await;
    // No approver: an `ask` is denied, and says why.
    assert_eq!(asked.results[0].status, CallStatus::Denied);
    engine.shutdown().await;

    let unknown = toolgate(&[
        "--no-builtin",
        "-p",
        policies.to_str().unwrap(),
        "mcp",
        "import",
        "tset",
    ]);
    assert_eq!(unknown.code, 2);
    assert_eq!(
        unknown.stderr,
        "error: no MCP server `tset` under `mcp_servers`; did you mean `test`?\n"
    );
}

/// Two tools whose names agents write alike (`repo.delete` and `repo_delete`, both
/// `mcp__clash__repo_delete`) are refused with both names, and no file is written (it would
/// not load); control characters in a description are written as escapes.
#[test]
fn import_refuses_tools_that_would_share_a_contract_and_escapes_control_characters() {
    let workspace = Workspace::new("");
    let log = workspace.path("cancel.log");
    let clash = mcp_server::yaml_entry_with_tools(
        &log,
        &[
            ("repo.delete", "Deletes a repository"),
            ("repo_delete", "Also deletes one"),
        ],
    );
    let odd = mcp_server::yaml_entry_with_tools(&log, &[("odd", "a\u{7f}b\u{85}c\u{9b}d")]);
    workspace.write(&format!(
        "version: 1\nmcp_servers:\n  clash: {clash}\n  odd: {odd}\n"
    ));
    let policies = workspace.path("policies");
    let written = workspace.path("clash-tools.yaml");
    let run = toolgate(&[
        "--no-builtin",
        "-p",
        policies.to_str().unwrap(),
        "mcp",
        "import",
        "clash",
        "-o",
        written.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "error: tools of MCP server `clash` would share a contract name: `repo.delete` and `repo_delete` become `mcp__clash__repo_delete`; coding agents call them by that one name, so no contract can tell them apart. Nothing was written: write their contracts by hand, each naming its tool in `handler.tool`, or have the server rename them\n"
    );
    assert!(!written.exists());

    let run = toolgate(&[
        "--no-builtin",
        "-p",
        policies.to_str().unwrap(),
        "mcp",
        "import",
        "odd",
    ]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout
            .contains("  mcp__odd__odd:\n    description: \"a\\u007fb\\u0085c\\u009bd\"\n"),
        "{}",
        run.stdout
    );
}
