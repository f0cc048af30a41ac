//! `toolgate mcp serve --http ADDR`: the SDK's streamable HTTP service (sessions, SSE, the
//! `Host` and `Origin` checks) at `/mcp` on a plain HTTP/1 server (hyper, already in the tree
//! through reqwest; a web framework would add a router for one route).
//!
//! The security model, in the order a request meets it:
//! - the address must be a loopback one unless `allow_remote` says otherwise ([`check_bind`]);
//! - with a bearer token configured (read from an environment variable, never from the command
//!   line, where other users could read it), a request without `Authorization: Bearer <token>`
//!   gets 401 (`WWW-Authenticate: Bearer`), a wrong token 401 with `error="invalid_token"`;
//! - the `Host` header must name a loopback host (or one of `allowed_hosts`), and an `Origin`
//!   header, when present, a loopback origin (or one of `allowed_origins`), else 403: a web
//!   page whose DNS name was rebound to 127.0.0.1 cannot reach the server.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::{Gateway, McpHost, McpServeError};

/// The path the MCP endpoint is served at.
pub const PATH: &str = "/mcp";

/// The hosts a request may name in `Host` (any port).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The origins a browser page may send from (any port).
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// How to serve over HTTP.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Where to listen (port 0: any free port).
    pub addr: SocketAddr,
    /// Listen on a non-loopback address too.
    pub allow_remote: bool,
    /// More hosts a request may name in `Host` (with a non-loopback address, its own name).
    pub allowed_hosts: Vec<String>,
    /// More origins a request may come from (`https://app.example:443`, `http://host:*`).
    pub allowed_origins: Vec<String>,
    /// The bearer token every request must carry, if any.
    pub token: Option<String>,
}

/// Refuses a non-loopback address unless allowed: the server would be reachable from the
/// network, with every tool of the policy set behind it.
pub fn check_bind(addr: &SocketAddr, allow_remote: bool) -> Result<(), McpServeError> {
    if addr.ip().is_loopback() || allow_remote {
        return Ok(());
    }
    Err(McpServeError::Usage(format!(
        "`{addr}` is not a loopback address; the server would be reachable from the network \
         (pass `--allow-remote` to listen there anyway, and set a bearer token with \
         `--token-env`)"
    )))
}

type Body = BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn unauthorized(challenge: &'static str, text: &str) -> Response<Body> {
    let mut response = plain(StatusCode::UNAUTHORIZED, text);
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static(challenge),
    );
    response
}

/// Compares without stopping at the first differing byte, so the time taken does not tell
/// how much of a guessed token was right.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

/// The bearer-token check: `None` when the request may go on.
fn refuse_unauthorized<B>(request: &Request<B>, token: Option<&str>) -> Option<Response<Body>> {
    let token = token?;
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            value
                .split_once(' ')
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map(|(_, token)| token.trim())
        });
    match given {
        None => Some(unauthorized(
            "Bearer",
            "unauthorized: this server needs `Authorization: Bearer <token>`",
        )),
        Some(given) if !same_secret(given.as_bytes(), token.as_bytes()) => Some(unauthorized(
            "Bearer error=\"invalid_token\"",
            "unauthorized: the bearer token is wrong",
        )),
        Some(_) => None,
    }
}

/// The SDK's service with toolgate's host and origin lists.
fn service(
    host: &McpHost,
    options: &HttpOptions,
    cancel: CancellationToken,
) -> StreamableHttpService<Gateway, LocalSessionManager> {
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    if !options.addr.ip().is_unspecified() {
        hosts.push(options.addr.ip().to_string());
    }
    hosts.extend(options.allowed_hosts.iter().cloned());
    let mut origins: Vec<String> = LOOPBACK_ORIGINS.iter().map(|o| (*o).to_owned()).collect();
    origins.extend(options.allowed_origins.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_cancellation_token(cancel);
    let gateway = host.gateway();
    StreamableHttpService::new(
        move || Ok(gateway.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Serves until `stop` completes; `bound` is told the address listened on (the port, when 0
/// was asked for). Sessions are closed, running calls cancelled, then artifacts flushed.
pub async fn serve<S>(
    host: McpHost,
    options: HttpOptions,
    stop: S,
    bound: impl FnOnce(SocketAddr),
) -> Result<(), McpServeError>
where
    S: std::future::Future<Output = ()> + Send,
{
    check_bind(&options.addr, options.allow_remote)?;
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|error| {
            McpServeError::Io(format!("cannot listen on `{}`: {error}", options.addr))
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| McpServeError::Io(e.to_string()))?;
    bound(addr);
    let cancel = CancellationToken::new();
    let mcp = service(&host, &options, cancel.clone());
    let token: Option<Arc<str>> = options.token.as_deref().map(Arc::from);
    let mut connections = tokio::task::JoinSet::new();
    let mut stop = std::pin::pin!(stop);
    let result = loop {
        tokio::select! {
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = &mut stop => break Ok(()),
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    // A connection that failed before it was accepted (reset, out of file
                    // descriptors for a moment) does not stop the server.
                    Err(error) => {
                        tracing::warn!(target: "toolgate::mcp", "accept failed: {error}");
                        continue;
                    }
                };
                let mcp = mcp.clone();
                let token = token.clone();
                connections.spawn(async move {
                    let handle = hyper::service::service_fn(move |request: Request<Incoming>| {
                        let mut mcp = mcp.clone();
                        let token = token.clone();
                        async move {
                            if request.uri().path() != PATH {
                                return Ok::<_, Infallible>(plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp"));
                            }
                            if let Some(refused) = refuse_unauthorized(&request, token.as_deref()) {
                                return Ok(refused);
                            }
                            tower_service::Service::call(&mut mcp, request).await
                        }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, handle)
                        .await;
                });
            }
        }
    };
    cancel.cancel();
    connections.abort_all();
    while connections.join_next().await.is_some() {}
    host.shutdown().await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_served_unless_allowed() {
        let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let v6: SocketAddr = "[::1]:8080".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let lan: SocketAddr = "192.168.1.2:8080".parse().unwrap();
        assert!(check_bind(&local, false).is_ok());
        assert!(check_bind(&v6, false).is_ok());
        assert!(check_bind(&any, false).is_err());
        assert!(check_bind(&lan, false).is_err());
        assert!(check_bind(&lan, true).is_ok());
    }

    #[test]
    fn bearer_tokens_are_checked() {
        let request = |auth: Option<&str>| {
            let mut builder = Request::builder().uri("/mcp");
            if let Some(auth) = auth {
                builder = builder.header(header::AUTHORIZATION, auth);
            }
            builder.body(()).unwrap()
        };
        assert!(refuse_unauthorized(&request(None), None).is_none());
        let missing = refuse_unauthorized(&request(None), Some("s3cret")).unwrap();
        assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(missing.headers()[header::WWW_AUTHENTICATE], "Bearer");
        let wrong = refuse_unauthorized(&request(Some("Bearer s3cre")), Some("s3cret")).unwrap();
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
        assert!(refuse_unauthorized(&request(Some("Basic s3cret")), Some("s3cret")).is_some());
        assert!(refuse_unauthorized(&request(Some("bearer s3cret")), Some("s3cret")).is_none());
    }
}
