//! rmcp's client against `toolgate mcp serve` over stdio.

use rmcp::model::ElicitationAction;

use super::scenarios;
use super::support::{self, stdio};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_and_runs_the_policy_tools() {
    let session = stdio(None).await;
    scenarios::lists_the_policy_tools(&session).await;
    scenarios::decides_and_runs_calls(&session).await;
    session.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_is_an_elicitation_the_user_accepts() {
    let mut session = stdio(Some(ElicitationAction::Accept)).await;
    let message = scenarios::asks_through_elicitation(&mut session, true).await;
    insta::assert_snapshot!(message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_is_an_elicitation_the_user_declines() {
    let mut session = stdio(Some(ElicitationAction::Decline)).await;
    scenarios::asks_through_elicitation(&mut session, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_without_elicitation_is_denied_with_what_would_allow_it() {
    let session = stdio(None).await;
    let text = scenarios::denies_asks_without_elicitation(&session).await;
    insta::assert_snapshot!(text);
    // An ask by a rule names the rule and where it is defined.
    let asked = session
        .call("Echo", serde_json::json!({"text": "secret"}))
        .await;
    assert!(super::support::is_error(&asked));
    let text = super::support::text(&asked)
        .replace(&session.dir.path().display().to_string(), "<scratch>");
    insta::assert_snapshot!("asked_by_a_rule", text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_becomes_progress_notifications() {
    let mut session = stdio(None).await;
    scenarios::reports_progress(&mut session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_must_run_alone_runs_alone_across_requests() {
    let session = stdio(None).await;
    scenarios::serialises_alone_calls_across_requests(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_request_cancels_its_call() {
    let session = stdio(None).await;
    scenarios::cancels_calls(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_that_adds_a_tool_announces_the_new_list() {
    let mut session = stdio(None).await;
    scenarios::announces_tool_list_changes(&mut session).await;
}

/// A wildcard contract over the suite's rmcp server: its tools are listed under the names
/// agents use, with the server's schemas; a tool it adds while serving is announced with
/// `notifications/tools/list_changed`, then listed and callable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wildcard_lists_its_servers_tools_and_announces_the_ones_it_adds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("policies");
    std::fs::create_dir(&root).unwrap();
    let entry = crate::support::mcp_server::yaml_entry(&dir.path().join("cancel.log"));
    std::fs::write(
        root.join("tools.yaml"),
        format!(
            "version: 1\nmcp_servers:\n  test: {entry}\ntools:\n  mcp__test__*:\n    handler: {{ kind: mcp, server: test }}\n    permission: {{ default: allow }}\n  mcp__test__echo:\n    description: Echo, with a contract of its own\n"
        ),
    )
    .unwrap();
    let mut session = support::stdio_on(dir, root, None).await;
    let names = session.tool_names().await;
    assert_eq!(names[0], "mcp__test__echo");
    for covered in ["mcp__test__sleep", "mcp__test__grow", "mcp__test__add"] {
        assert!(names.iter().any(|name| name == covered), "{names:?}");
    }
    assert!(
        !names
            .iter()
            .any(|name| name.ends_with("late") || name.ends_with('*')),
        "{names:?}"
    );
    let tools = session.client.list_all_tools().await.unwrap();
    // The exact contract declares no input schema: the server's is listed.
    assert_eq!(
        tools[0].input_schema["properties"]["text"]["type"],
        "string"
    );
    assert_eq!(
        tools[0].description.as_deref(),
        Some("Echo, with a contract of its own")
    );
    let add = tools
        .iter()
        .find(|tool| tool.name == "mcp__test__add")
        .unwrap();
    assert_eq!(add.description.as_deref(), Some("Adds two numbers"));

    assert_eq!(
        support::text(&session.call("mcp__test__grow", serde_json::json!({})).await),
        "grown"
    );
    session
        .next_seen(|seen| matches!(seen, support::Seen::ListChanged))
        .await;
    let names = session.tool_names().await;
    assert!(
        names.iter().any(|name| name == "mcp__test__late"),
        "{names:?}"
    );
    assert_eq!(
        support::text(&session.call("mcp__test__late", serde_json::json!({})).await),
        "late"
    );
}

/// A server tool an exact contract runs is listed under that contract's name only, not again
/// under the name the wildcard would give it, and that name is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wildcard_does_not_list_a_server_tool_an_exact_contract_runs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("policies");
    std::fs::create_dir(&root).unwrap();
    let entry = crate::support::mcp_server::yaml_entry_with_tools(
        &dir.path().join("cancel.log"),
        &[("repo.delete", "Deletes a repository")],
    );
    std::fs::write(
        root.join("tools.yaml"),
        format!(
            "version: 1\nmcp_servers:\n  test: {entry}\ntools:\n  mcp__test__*:\n    handler: {{ kind: mcp, server: test }}\n    permission: {{ default: allow }}\n  mcp__test__repo_delete:\n    handler: {{ kind: mcp, server: test, tool: \"repo.delete\" }}\n    permission: {{ default: deny }}\n  mcp__test__say:\n    handler: {{ kind: mcp, server: test, tool: echo }}\n"
        ),
    )
    .unwrap();
    let session = support::stdio_on(dir, root, None).await;
    let names = session.tool_names().await;
    for listed in ["mcp__test__repo_delete", "mcp__test__say", "mcp__test__add"] {
        assert!(names.iter().any(|name| name == listed), "{names:?}");
    }
    for unlisted in ["mcp__test__repo.delete", "mcp__test__echo"] {
        assert!(!names.iter().any(|name| name == unlisted), "{names:?}");
    }
    let refused = session
        .call("mcp__test__repo.delete", serde_json::json!({}))
        .await;
    assert!(support::is_error(&refused));
    assert_eq!(
        support::text(&refused),
        "Tool not found: mcp__test__repo.delete (the MCP tool it names is called mcp__test__repo_delete)"
    );
}
