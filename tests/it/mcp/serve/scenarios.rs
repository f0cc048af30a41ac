//! What a client of `toolgate mcp serve` sees, the same over every transport: each function
//! runs one scenario against a connected session.

use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
use rmcp::service::PeerRequestOptions;
use serde_json::json;

use super::support::{Seen, Session, args, is_error, text, wait_for_file};

/// The tool list: every tool of the policy set, with its schema and hints.
pub async fn lists_the_policy_tools(session: &Session) {
    assert_eq!(
        session.tool_names().await,
        [
            "Echo",
            "Deploy",
            "Slow",
            "Ticker",
            "Hold",
            "HoldShared",
            "Release",
            "Big"
        ]
    );
    let tools = session.client.list_all_tools().await.unwrap();
    let echo = &tools[0];
    assert_eq!(
        echo.description.as_deref(),
        Some("Prints its text after the policy's version tag.")
    );
    assert_eq!(echo.input_schema["required"], json!(["text"]));
    let hints = echo.annotations.as_ref().unwrap();
    assert_eq!(hints.read_only_hint, Some(true));
    assert_eq!(hints.open_world_hint, Some(false));
    let deploy = tools[1].annotations.as_ref().unwrap();
    assert_eq!(deploy.read_only_hint, None);
    assert_eq!(deploy.open_world_hint, Some(true));
}

/// Allowed, denied by a rule, timed out, over budget.
pub async fn decides_and_runs_calls(session: &Session) {
    let allowed = session.call("Echo", json!({"text": "hi"})).await;
    assert!(!is_error(&allowed));
    assert_eq!(text(&allowed), "v1:hi");

    let denied = session.call("Deploy", json!({"target": "prod"})).await;
    assert!(is_error(&denied));
    assert_eq!(text(&denied), "production is off limits");

    let invalid = session.call("Echo", json!({"words": "hi"})).await;
    assert!(is_error(&invalid));
    assert!(
        text(&invalid).contains("InputValidationError"),
        "{}",
        text(&invalid)
    );

    let slow = session.call("Slow", json!({})).await;
    assert!(is_error(&slow));
    assert_eq!(text(&slow), "Tool execution timed out after 300ms");

    let big = session.call("Big", json!({})).await;
    assert!(!is_error(&big));
    let big = text(&big);
    assert!(big.starts_with("<persisted-output>"), "{big}");
    assert!(big.len() < 2048, "the budget holds: {big}");
    let path = big
        .lines()
        .find_map(|line| line.split("Full output saved to: ").nth(1))
        .expect("the envelope names the artifact");
    let full = std::fs::read_to_string(path).unwrap();
    assert!(full.ends_with("4999\n5000\n"));
}

/// An ask the user accepts, then one they decline, through elicitation.
pub async fn asks_through_elicitation(session: &mut Session, accepting: bool) -> String {
    let result = session.call("Deploy", json!({"target": "staging"})).await;
    let Seen::Elicited(message) = session
        .next_seen(|seen| matches!(seen, Seen::Elicited(_)))
        .await
    else {
        unreachable!()
    };
    assert!(message.contains("`Deploy`"), "{message}");
    assert!(message.contains("\"target\": \"staging\""), "{message}");
    assert!(message.contains("the tool's default is `ask`"), "{message}");
    if accepting {
        assert!(!is_error(&result));
        assert_eq!(text(&result), "deployed staging");
    } else {
        assert!(is_error(&result));
        assert_eq!(text(&result), "Permission to use Deploy was not granted");
    }
    message
}

/// An ask without elicitation: denied, saying what would allow it.
pub async fn denies_asks_without_elicitation(session: &Session) -> String {
    let result = session.call("Deploy", json!({"target": "staging"})).await;
    assert!(is_error(&result));
    text(&result)
}

/// Progress of a call with a progress token arrives as progress notifications.
pub async fn reports_progress(session: &mut Session) {
    let params = CallToolRequestParams::new("Ticker").with_arguments(args(json!({})));
    let handle = session
        .client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let token = handle.progress_token.clone();
    let Seen::Progress(progress) = session
        .next_seen(|seen| matches!(seen, Seen::Progress(_)))
        .await
    else {
        unreachable!()
    };
    assert_eq!(progress.progress_token, token);
    assert!(progress.progress >= 1.0);
    assert!(
        progress
            .message
            .as_deref()
            .is_some_and(|m| m.contains("tick 1")),
        "{progress:?}"
    );
    let response = handle.await_response().await.unwrap();
    let rmcp::model::ServerResult::CallToolResult(result) = response else {
        panic!("not a tool result: {response:?}");
    };
    assert_eq!(text(&result), "tick 1\ntick 2\ntick 3\n");
}

/// A call that must run alone keeps other requests' calls waiting; shared calls overlap.
///
/// `Hold` waits for a flag file that only `Release` creates. `Release` is sent once `Hold`
/// has started: when `Hold` runs alone, `Release` cannot start before `Hold` ends, so `Hold`
/// ends by its 2 s timeout; when both may share, `Release` frees `Hold` at once.
pub async fn serialises_alone_calls_across_requests(session: &Session) {
    for (holder, alone) in [("Hold", true), ("HoldShared", false)] {
        let flag = session.path(&format!("{holder}.flag"));
        let hold = session.call(holder, json!({"flag": flag}));
        let release = async {
            wait_for_file(&format!("{flag}.started")).await;
            session.call("Release", json!({"flag": flag})).await
        };
        let (hold, release) = tokio::join!(hold, release);
        assert!(!is_error(&release), "{}", text(&release));
        if alone {
            assert!(is_error(&hold));
            assert_eq!(text(&hold), "Tool execution timed out after 2000ms");
        } else {
            assert!(!is_error(&hold), "{}", text(&hold));
            assert_eq!(text(&hold), "released\n");
        }
    }
}

/// `notifications/cancelled` ends the call: its shared hold on the lock goes with it, so a
/// call that must run alone starts (without the cancellation it would wait a minute).
pub async fn cancels_calls(session: &Session) {
    let flag = session.path("cancelled.flag");
    let params =
        CallToolRequestParams::new("HoldShared").with_arguments(args(json!({"flag": flag})));
    let handle = session
        .client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    wait_for_file(&format!("{flag}.started")).await;
    handle
        .cancel(Some("the user pressed escape".into()))
        .await
        .unwrap();
    let other = session.path("after-cancel.flag");
    std::fs::write(&other, "").unwrap();
    let alone = session.call("Hold", json!({"flag": other})).await;
    assert_eq!(text(&alone), "released\n");
}

/// A policy change that adds a tool: `tools/list_changed`, then the new list.
pub async fn announces_tool_list_changes(session: &mut Session) {
    let file = session.root.join("tools.yaml");
    let policy = std::fs::read_to_string(&file).unwrap();
    let added = policy.replace(
        "rules:\n",
        "  Added:\n    description: Added while serving.\n    permission: { default: allow }\n    handler: { kind: command, argv: [printf, added] }\nrules:\n",
    );
    assert_ne!(policy, added);
    std::fs::write(&file, added).unwrap();
    session
        .next_seen(|seen| matches!(seen, Seen::ListChanged))
        .await;
    let names = session.tool_names().await;
    assert_eq!(names.last().map(String::as_str), Some("Added"));
    let result = session.call("Added", json!({})).await;
    assert_eq!(text(&result), "added");
}
