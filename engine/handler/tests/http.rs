//! The `http` handler against a tiny HTTP/1.1 server on 127.0.0.1 (a tokio `TcpListener`).

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::handler::{HttpRunner, HttpSpec, http::HttpStatusError};
use crate::{CallContext, HandlerError};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Guards against a hang: not a timing assertion.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// A request as the server saw it.
#[derive(Debug)]
struct Seen {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// What the server answers; `None` never answers (holds the connection open).
type Reply = Option<(u16, &'static str, String)>;

/// Serves every connection with `reply`, reporting each request on the channel.
async fn serve(reply: Reply) -> (String, mpsc::UnboundedReceiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tool", listener.local_addr().unwrap());
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (sender, reply) = (sender.clone(), reply.clone());
            tokio::spawn(async move { answer(stream, reply, sender).await });
        }
    });
    (url, receiver)
}

async fn answer(mut stream: TcpStream, reply: Reply, seen: mpsc::UnboundedSender<Seen>) {
    let mut data = Vec::new();
    let mut buffer = [0_u8; 4096];
    let header_end = loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => data.extend_from_slice(&buffer[..read]),
        }
    };
    let head = String::from_utf8_lossy(&data[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[header_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => body.extend_from_slice(&buffer[..read]),
        }
    }
    let _ = seen.send(Seen {
        request_line,
        headers,
        body,
    });
    match reply {
        Some((status, reason, body)) => {
            let response = format!(
                "HTTP/1.1 {status} {reason}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
        None => {
            // Hold the connection until the client goes away.
            let _ = stream.read(&mut buffer).await;
        }
    }
}

fn ctx() -> CallContext {
    CallContext::new("call-1", "Remote")
}

#[tokio::test]
async fn ok_returns_the_body_and_posts_the_input_as_json() {
    let (url, mut seen) = serve(Some((200, "OK", "result text é".into()))).await;
    let spec = HttpSpec {
        headers: [
            ("X-Path".to_owned(), "{{env.PATH}}".to_owned()),
            ("X-Static".to_owned(), "v1".to_owned()),
        ]
        .into_iter()
        .collect(),
        env_allow: vec!["PATH".into()],
        ..HttpSpec::new(url)
    };
    let handler = HttpRunner::new(spec).unwrap();
    let input = json!({"query": "a b", "n": 1});
    let out = tokio::time::timeout(HANG_GUARD, handler.call(&input, &ctx()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.as_text(), Some("result text é"));

    let request = seen.recv().await.unwrap();
    assert_eq!(request.request_line, "POST /tool HTTP/1.1");
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("x-static"), Some("v1"));
    assert_eq!(
        request.header("x-path"),
        std::env::var("PATH").ok().as_deref()
    );
    let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body, input);
}

#[tokio::test]
async fn not_found_is_a_business_failure_with_the_body() {
    let (url, _seen) = serve(Some((404, "Not Found", "no such item\n".into()))).await;
    let handler = HttpRunner::new(HttpSpec::new(url)).unwrap();
    let err = handler.call(&json!({}), &ctx()).await.unwrap_err();
    match err {
        HandlerError::Business { message, code } => {
            assert_eq!(message, "HTTP 404 Not Found\nno such item");
            assert_eq!(code.as_deref(), Some("http:404"));
        }
        other => panic!("expected a business failure, got {other:?}"),
    }
}

#[tokio::test]
async fn server_error_is_an_error_with_the_status() {
    let (url, _seen) = serve(Some((500, "Internal Server Error", "boom".into()))).await;
    let handler = HttpRunner::new(HttpSpec::new(url.clone())).unwrap();
    let err = handler.call(&json!({}), &ctx()).await.unwrap_err();
    let HandlerError::Other(source) = &err else {
        panic!("expected Other, got {err:?}");
    };
    let status = source
        .downcast_ref::<HttpStatusError>()
        .expect("an HttpStatusError");
    assert_eq!(status.status.as_u16(), 500);
    assert_eq!(status.body, "boom");
    assert_eq!(
        err.to_string(),
        format!("HTTP 500 Internal Server Error from `{url}`: boom")
    );
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let (url, _seen) = serve(Some((302, "Found", String::new()))).await;
    let handler = HttpRunner::new(HttpSpec::new(url)).unwrap();
    let err = handler.call(&json!({}), &ctx()).await.unwrap_err();
    assert!(err.to_string().starts_with("HTTP 302 Found from"), "{err}");
}

#[tokio::test]
async fn a_body_over_the_cap_fails() {
    let (url, _seen) = serve(Some((200, "OK", "x".repeat(2048)))).await;
    let spec = HttpSpec {
        max_body_bytes: 1024,
        ..HttpSpec::new(url)
    };
    let err = HttpRunner::new(spec)
        .unwrap()
        .call(&json!({}), &ctx())
        .await
        .unwrap_err();
    assert!(
        matches!(err, HandlerError::OutputTooLarge { limit: 1024 }),
        "{err:?}"
    );
}

#[tokio::test]
async fn cancellation_ends_a_call_waiting_for_a_response() {
    let (url, mut seen) = serve(None).await;
    let handler = HttpRunner::new(HttpSpec::new(url)).unwrap();
    let ctx = ctx();
    let cancel = ctx.cancel.clone();
    let input = json!({"slow": true});
    let (result, ()) = tokio::join!(
        tokio::time::timeout(HANG_GUARD, handler.call(&input, &ctx)),
        async {
            seen.recv().await.unwrap();
            cancel.cancel();
        }
    );
    assert!(
        matches!(result, Ok(Err(HandlerError::Cancelled))),
        "{result:?}"
    );
}

#[tokio::test]
async fn an_unset_variable_fails_the_call() {
    let (url, _seen) = serve(Some((200, "OK", String::new()))).await;
    let spec = HttpSpec {
        headers: [(
            "Authorization".to_owned(),
            "Bearer {{env.TOOLGATE_TEST_UNSET_TOKEN}}".to_owned(),
        )]
        .into_iter()
        .collect(),
        env_allow: vec!["TOOLGATE_TEST_UNSET_TOKEN".into()],
        ..HttpSpec::new(url)
    };
    let err = HttpRunner::new(spec)
        .unwrap()
        .call(&json!({}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "environment variable `TOOLGATE_TEST_UNSET_TOKEN` is not set"
    );
}

#[tokio::test]
async fn a_refused_connection_is_an_error_with_its_cause() {
    // Bind then drop to get a port nobody listens on.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tool", listener.local_addr().unwrap());
    drop(listener);
    let err = HttpRunner::new(HttpSpec::new(url.clone()))
        .unwrap()
        .call(&json!({}), &ctx())
        .await
        .unwrap_err();
    assert!(matches!(err, HandlerError::Other(_)));
    assert_eq!(err.to_string(), format!("request to `{url}` failed"));
    assert!(
        std::error::Error::source(&err).is_some(),
        "the cause chain is kept"
    );
}

/// Issue 19, defect 11: a server error with a 50 MB body (under the engine's output cap)
/// reaches the model as the status and the start of the body, cut at the engine's error limit
/// with a marker that says how much was left out, and the result says it was cut. (A body
/// over the cap is refused unread: `a_body_over_the_cap_fails`.)
#[tokio::test]
async fn a_huge_server_error_body_is_cut_with_a_marker_and_marked_truncated() {
    use crate::{Batch, CallStatus, Engine, ToolCall, Turn};
    use crate::{LayerOptions, LoadOptions, load};

    let body = format!("stack trace {}", "x".repeat(50 * 1024 * 1024));
    let (url, _seen) = serve(Some((500, "Internal Server Error", body))).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\ntools:\n  Remote:\n    input_schema: {{ type: object }}\n    permission: {{ default: allow }}\n    handler: {{ kind: http, url: \"{url}\" }}\n"
        ),
    )
    .unwrap();
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        policies: vec![policy],
        ..LayerOptions::default()
    });
    options.workspace_root = dir.path().to_path_buf();
    let outcome = load(&options, 1);
    let snapshot = outcome
        .snapshot
        .unwrap_or_else(|| panic!("{:#?}", outcome.diagnostics));
    let max_chars = snapshot.engine.max_error_chars;
    let engine = Engine::builder(snapshot).build();
    let batch = Batch::new(vec![ToolCall::new("c1", "Remote", json!({}))]);
    let outcome = tokio::time::timeout(HANG_GUARD, engine.execute_batch(batch, &Turn::default()))
        .await
        .expect("no hang")
        .unwrap();

    let result = &outcome.results[0];
    assert_eq!(result.status, CallStatus::Error);
    let text = result.model_text();
    assert!(text.contains("HTTP 500 Internal Server Error"), "{text}");
    assert!(text.contains("stack trace x"), "{text}");
    assert!(text.ends_with(" more characters]"), "{text}");
    assert!(
        text.chars().count() <= max_chars,
        "{} chars over the limit of {max_chars}",
        text.chars().count()
    );
    assert!(result.metadata.truncated);
}
