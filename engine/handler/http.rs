//! The `http` handler (SPEC §10): POSTs the call's input as JSON to a URL; the response body
//! is the output.
//!
//! - Headers come from the spec; a value may read environment variables with
//!   `{{env.NAME}}` (for tokens), but only variables listed in `env_allow`, checked when the
//!   handler is built. Variables are read at call time.
//! - Status mapping: 2xx → the body (UTF-8, invalid bytes replaced) as text output; 4xx →
//!   business failure `HTTP <status>` followed by a newline and the body, code `http:<code>`;
//!   anything else (3xx included: redirects are not followed, so a POST is never silently
//!   turned into a GET) → an [`HttpStatusError`].
//! - The body is read up to `max_body_bytes`; a larger one fails the call with
//!   [`HandlerError::OutputTooLarge`].
//! - Cancellation (`ctx.cancel`) drops the request and its connection at once.
//! - `https` uses rustls with the `ring` provider (installed as the process default when no
//!   provider is installed yet) and the platform's trust store.

use std::time::Duration as StdDuration;

use indexmap::IndexMap;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, StatusCode, Url};
use serde_json::Value;

use super::template::{Source, Template, TemplateError, TemplateErrorKind, parse_template};
use super::{CallContext, HandlerError, HandlerOutput};

/// How to call an HTTP endpoint (the lead maps the contract's `handler` onto this).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpSpec {
    /// The URL to POST to (`http` or `https`).
    pub url: String,
    /// Request headers; values may contain `{{env.NAME}}`.
    pub headers: IndexMap<String, String>,
    /// Environment variables header values may read.
    pub env_allow: Vec<String>,
    /// Cap on the response body, in bytes.
    pub max_body_bytes: u64,
    /// Time allowed to establish a connection (the call's own timeout still applies).
    pub connect_timeout: Option<StdDuration>,
}

impl HttpSpec {
    /// A spec for `url` with no headers and a 10 MiB body cap. The engine sets every field
    /// from policy data; the defaults are for programs that call endpoints directly.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            headers: IndexMap::new(),
            env_allow: Vec::new(),
            max_body_bytes: 10 * 1024 * 1024,
            connect_timeout: None,
        }
    }
}

/// A spec that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HttpConfigError {
    /// The URL does not parse.
    #[error("`{url}` is not a valid URL: {reason}")]
    BadUrl {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// Not `http` or `https`.
    #[error("`{url}` uses the scheme `{scheme}`: only `http` and `https` are supported")]
    UnsupportedScheme {
        /// The URL.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// A header name that HTTP does not allow.
    #[error("`{0}` is not a valid header name")]
    BadHeaderName(String),
    /// A header value template that does not parse.
    #[error("header `{header}`: {error}")]
    BadHeaderTemplate {
        /// The header.
        header: String,
        /// The template error, with offsets into the value.
        error: TemplateError,
    },
    /// A literal header value with characters HTTP does not allow (line breaks, controls).
    #[error("header `{0}` has a value with characters a header cannot carry")]
    BadHeaderValue(String),
    /// `{{env.NAME}}` for a variable not in `env_allow`.
    #[error("header `{header}` reads `{name}`, which is not in `env_allow`")]
    EnvNotAllowed {
        /// The header.
        header: String,
        /// The variable.
        name: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
}

/// A response with a status other than 2xx or 4xx.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status} from `{url}`{}", body_suffix(.body))]
pub struct HttpStatusError {
    /// The status.
    pub status: StatusCode,
    /// The URL called.
    pub url: String,
    /// The response body (UTF-8, invalid bytes replaced).
    pub body: String,
}

fn body_suffix(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        String::new()
    } else {
        format!(": {body}")
    }
}

/// A request that failed before a response arrived.
#[derive(Debug, thiserror::Error)]
#[error("request to `{url}` failed")]
struct RequestError {
    url: String,
    #[source]
    source: reqwest::Error,
}

/// A header value that cannot be sent after filling in its variables.
#[derive(Debug, thiserror::Error)]
#[error(
    "header `{0}` has a value with characters a header cannot carry after filling in its variables"
)]
struct RenderedHeaderError(String);

/// An HTTP handler: the parsed spec and a connection-pooling client.
#[derive(Clone, Debug)]
pub struct HttpRunner {
    client: Client,
    url: Url,
    headers: Vec<(HeaderName, Template)>,
    max_body_bytes: u64,
}

impl HttpRunner {
    /// Checks the spec (URL, header names, templates, env allow-list) and builds the client.
    pub fn new(spec: HttpSpec) -> Result<Self, HttpConfigError> {
        let url = Url::parse(&spec.url).map_err(|error| HttpConfigError::BadUrl {
            url: spec.url.clone(),
            reason: error.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(HttpConfigError::UnsupportedScheme {
                url: spec.url.clone(),
                scheme: url.scheme().to_owned(),
            });
        }
        let mut headers = Vec::with_capacity(spec.headers.len());
        for (name, value) in &spec.headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| HttpConfigError::BadHeaderName(name.clone()))?;
            let template = parse_header_value(name, value, &spec.env_allow)?;
            if template.placeholders().next().is_none() && HeaderValue::from_str(value).is_err() {
                return Err(HttpConfigError::BadHeaderValue(name.clone()));
            }
            headers.push((header, template));
        }
        install_crypto_provider();
        let mut builder = Client::builder().redirect(reqwest::redirect::Policy::none());
        if let Some(timeout) = spec.connect_timeout {
            builder = builder.connect_timeout(timeout);
        }
        let client = builder.build().map_err(HttpConfigError::Client)?;
        Ok(Self {
            client,
            url,
            headers,
            max_body_bytes: spec.max_body_bytes,
        })
    }

    /// POSTs `input` and maps the response (see the module docs).
    pub async fn call(
        &self,
        input: &Value,
        ctx: &CallContext,
    ) -> Result<HandlerOutput, HandlerError> {
        if ctx.cancel.is_cancelled() {
            return Err(HandlerError::Cancelled);
        }
        let request = self.request(input)?;
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => Err(HandlerError::Cancelled),
            result = self.exchange(request) => result,
        }
    }

    fn request(&self, input: &Value) -> Result<reqwest::Request, HandlerError> {
        let mut headers = HeaderMap::with_capacity(self.headers.len() + 1);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, template) in &self.headers {
            let value = template
                .render(|placeholder| match &placeholder.source {
                    Source::Env { name } => Ok(std::env::var(name).ok()),
                    Source::Input { .. } => Ok(None),
                })
                .map_err(HandlerError::other)?;
            // INVARIANT: header templates have no optional placeholders, so `value` is Some.
            let Some(value) = value else { continue };
            let value = HeaderValue::from_str(&value)
                .map_err(|_| HandlerError::other(RenderedHeaderError(name.to_string())))?;
            headers.append(name.clone(), value);
        }
        let body = serde_json::to_vec(input).map_err(HandlerError::other)?;
        self.client
            .post(self.url.clone())
            .headers(headers)
            .body(body)
            .build()
            .map_err(|source| self.request_error(source))
    }

    async fn exchange(&self, request: reqwest::Request) -> Result<HandlerOutput, HandlerError> {
        let mut response = self
            .client
            .execute(request)
            .await
            .map_err(|source| self.request_error(source))?;
        let status = response.status();
        if response
            .content_length()
            .is_some_and(|length| length > self.max_body_bytes)
        {
            return Err(HandlerError::OutputTooLarge {
                limit: self.max_body_bytes,
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|source| self.request_error(source))?
        {
            let total = u64::try_from(body.len() + chunk.len()).unwrap_or(u64::MAX);
            if total > self.max_body_bytes {
                return Err(HandlerError::OutputTooLarge {
                    limit: self.max_body_bytes,
                });
            }
            body.extend_from_slice(&chunk);
        }
        let body = String::from_utf8_lossy(&body).into_owned();
        if status.is_success() {
            Ok(HandlerOutput::text(body))
        } else if status.is_client_error() {
            let trimmed = body.trim_end();
            let message = if trimmed.is_empty() {
                format!("HTTP {status}")
            } else {
                format!("HTTP {status}\n{trimmed}")
            };
            Err(HandlerError::business_with_code(
                message,
                format!("http:{}", status.as_u16()),
            ))
        } else {
            Err(HandlerError::other(HttpStatusError {
                status,
                url: self.url.to_string(),
                body,
            }))
        }
    }

    fn request_error(&self, source: reqwest::Error) -> HandlerError {
        HandlerError::other(RequestError {
            url: self.url.to_string(),
            source,
        })
    }
}

/// Parses a header value template: only `{{env.NAME}}` placeholders, only allowed names.
pub fn parse_header_value(
    header: &str,
    value: &str,
    env_allow: &[String],
) -> Result<Template, HttpConfigError> {
    let bad = |error| HttpConfigError::BadHeaderTemplate {
        header: header.to_owned(),
        error,
    };
    let template = parse_template(value).map_err(bad)?;
    for placeholder in template.placeholders() {
        match &placeholder.source {
            Source::Env { name } => {
                if !env_allow.iter().any(|allowed| allowed == name) {
                    return Err(HttpConfigError::EnvNotAllowed {
                        header: header.to_owned(),
                        name: name.clone(),
                    });
                }
            }
            Source::Input { .. } => {
                return Err(bad(TemplateError {
                    offset: placeholder.span.start,
                    len: placeholder.span.len(),
                    kind: TemplateErrorKind::NotAllowed {
                        expr: placeholder.expr.clone(),
                        place: "a header value (the input is sent as the body)",
                    },
                }));
            }
        }
    }
    Ok(template)
}

/// reqwest is built without a default crypto provider (the default one needs a C and cmake
/// build); install `ring` unless the embedding program installed a provider already.
pub(crate) fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race against another thread installing one is fine: any provider works.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(headers: &[(&str, &str)], allow: &[&str]) -> HttpSpec {
        HttpSpec {
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            env_allow: allow.iter().map(|name| (*name).to_owned()).collect(),
            ..HttpSpec::new("http://127.0.0.1:9/tool")
        }
    }

    #[test]
    fn spec_checks() {
        assert!(
            HttpRunner::new(spec(
                &[("Authorization", "Bearer {{env.TOKEN}}")],
                &["TOKEN"]
            ))
            .is_ok()
        );
        let err =
            HttpRunner::new(spec(&[("Authorization", "Bearer {{env.TOKEN}}")], &[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "header `Authorization` reads `TOKEN`, which is not in `env_allow`"
        );
        let err = HttpRunner::new(spec(&[("X-Path", "{{input.path}}")], &[])).unwrap_err();
        assert!(matches!(
            err,
            HttpConfigError::BadHeaderTemplate { ref error, .. } if error.offset == 0
        ));
        let err = HttpRunner::new(spec(&[("Bad Name", "x")], &[])).unwrap_err();
        assert!(matches!(err, HttpConfigError::BadHeaderName(_)));
        let err = HttpRunner::new(spec(&[("X-A", "a\nb")], &[])).unwrap_err();
        assert!(matches!(err, HttpConfigError::BadHeaderValue(_)));
        let err = HttpRunner::new(HttpSpec::new("ftp://example.com/")).unwrap_err();
        assert!(matches!(err, HttpConfigError::UnsupportedScheme { .. }));
        let err = HttpRunner::new(HttpSpec::new("not a url")).unwrap_err();
        assert!(matches!(err, HttpConfigError::BadUrl { .. }));
    }

    #[test]
    fn https_clients_build_with_the_ring_provider() {
        assert!(HttpRunner::new(HttpSpec::new("https://example.com/tool")).is_ok());
    }
}
