//! rmcp's client against `toolgate mcp serve --http`, and the HTTP security checks: loopback
//! only, `Host` and `Origin` checks, the bearer token.

use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::ElicitationAction;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

use super::scenarios;
use super::support::{command, http, http_server, scratch, tls};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_and_runs_the_policy_tools() {
    let (session, _server) = http(None).await;
    scenarios::lists_the_policy_tools(&session).await;
    scenarios::decides_and_runs_calls(&session).await;
    let text = scenarios::denies_asks_without_elicitation(&session).await;
    assert!(
        text.contains("did not declare the elicitation capability"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_is_an_elicitation() {
    let (mut session, _server) = http(Some(ElicitationAction::Accept)).await;
    scenarios::asks_through_elicitation(&mut session, true).await;
    let (mut session, _server) = http(Some(ElicitationAction::Decline)).await;
    scenarios::asks_through_elicitation(&mut session, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_cancellation_and_serialisation() {
    let (mut session, _server) = http(None).await;
    scenarios::reports_progress(&mut session).await;
    scenarios::serialises_alone_calls_across_requests(&session).await;
    scenarios::cancels_calls(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_that_adds_a_tool_announces_the_new_list() {
    let (mut session, server) = http(None).await;
    // A change that does not load is reported on stderr and changes nothing.
    let file = session.root.join("tools.yaml");
    let good = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        good.replace("description: Pretends", "descripton: Pretends"),
    )
    .unwrap();
    let stderr = server.stderr_with("unknown key `descripton`").await;
    assert!(
        stderr.contains("generation 1 stays in force\n  ")
            && stderr.contains("tools.yaml:19:5: error: unknown key `descripton`"),
        "{stderr}"
    );
    assert_eq!(session.tool_names().await.len(), 8);
    std::fs::write(&file, &good).unwrap();
    server.stderr_with("policies reloaded: generation 2").await;
    scenarios::announces_tool_list_changes(&mut session).await;
    server.stderr_with("policies reloaded: generation 3").await;
}

/// Two clients of one server share its lock: a call that must run alone in one session
/// keeps the other session's call waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_share_the_serialisation() {
    let (session, server) = http(None).await;
    let other = super::support::connect_http(&server.url).await;
    let flag = session.path("shared.flag");
    let hold = session.call("Hold", json!({"flag": flag}));
    let release = async {
        super::support::wait_for_file(&format!("{flag}.started")).await;
        super::support::call_on(&other, "Release", json!({"flag": flag})).await
    };
    let (hold, release) = tokio::join!(hold, release);
    assert!(!super::support::is_error(&release));
    assert_eq!(
        super::support::text(&hold),
        "Tool execution timed out after 2000ms"
    );
}

fn initialize() -> serde_json::Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}
        }
    })
}

/// The status of a raw `initialize` POST with extra headers.
async fn post_status(url: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    tls();
    let client = reqwest::Client::new();
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize().to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, challenge, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_or_origin_is_refused() {
    let (dir, root) = scratch();
    let server = http_server(dir.path(), &root, &[], &[]);
    let (ok, _, _) = post_status(&server.url, &[]).await;
    assert_eq!(ok, 200);
    let (local, _, _) = post_status(&server.url, &[("origin", "http://localhost:3000")]).await;
    assert_eq!(local, 200);
    let (origin, _, body) = post_status(&server.url, &[("origin", "http://evil.example")]).await;
    assert_eq!(
        (origin, body.as_str()),
        (403, "Forbidden: Origin header is not allowed")
    );
    let (host, _, body) = post_status(&server.url, &[("host", "evil.example")]).await;
    assert_eq!(
        (host, body.as_str()),
        (403, "Forbidden: Host header is not allowed")
    );
    let other_path = server.url.replace("/mcp", "/other");
    let (missing, _, _) = post_status(&other_path, &[]).await;
    assert_eq!(missing, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_is_required_when_configured() {
    let (dir, root) = scratch();
    let server = http_server(
        dir.path(),
        &root,
        &["--token-env", "TOOLGATE_TEST_TOKEN"],
        &[("TOOLGATE_TEST_TOKEN", "s3cret-token")],
    );
    let (status, challenge, _) = post_status(&server.url, &[]).await;
    assert_eq!((status, challenge.as_str()), (401, "Bearer"));
    let (status, challenge, _) =
        post_status(&server.url, &[("authorization", "Bearer wrong")]).await;
    assert_eq!(
        (status, challenge.as_str()),
        (401, "Bearer error=\"invalid_token\"")
    );
    let (status, _, _) =
        post_status(&server.url, &[("authorization", "Bearer s3cret-token")]).await;
    assert_eq!(status, 200);
    // rmcp's client with the token lists the tools.
    let config = StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
        .auth_header("s3cret-token");
    let transport = StreamableHttpClientTransport::from_config(config);
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 8);
}

/// What `mcp serve --http` says and exits with when it refuses to start.
fn refused(args: &[&str], env: &[(&str, &str)]) -> String {
    let (dir, root) = scratch();
    let output = command(dir.path(), &root, args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    format!(
        "exit: {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn a_non_loopback_address_is_refused_unless_allowed() {
    insta::assert_snapshot!(refused(&["--http", "0.0.0.0:0"], &[]));
    insta::assert_snapshot!(
        "token_variable_unset",
        refused(
            &[
                "--http",
                "127.0.0.1:0",
                "--token-env",
                "TOOLGATE_TEST_UNSET_TOKEN"
            ],
            &[]
        )
    );
}
