//! rmcp's client against `toolgate mcp serve` over stdio.

use rmcp::model::ElicitationAction;

use super::scenarios;
use super::support::stdio;

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
