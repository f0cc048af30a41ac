//! `toolgate mcp serve`: loads the policy set (a broken one is reported on stderr before any
//! MCP traffic, exit 1), then serves it over stdio or `--http` until the client leaves or a
//! signal arrives (exit 128 + its number).

use std::net::SocketAddr;
use std::sync::Arc;

use clap::Args;

use super::{Exit, GlobalOptions};
use crate::diagnostics::render::{HumanOptions, render_human};
use crate::model::ModeName;
use crate::serve::ServeOptions;
use crate::serve::mcp::http::HttpOptions;
use crate::serve::mcp::{McpHost, McpServeError, McpServeOptions, Notices};

/// The flags of `toolgate mcp serve`.
#[derive(Args, Debug, Clone)]
pub struct McpServeArgs {
    /// Serve streamable HTTP at ADDR (`127.0.0.1:8931`; port 0 picks a free one) under
    /// `/mcp`, instead of stdio. The address actually used is printed on stderr.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Allow a non-loopback `--http` address (the server is then reachable from the
    /// network: set a token with `--token-env`).
    #[arg(long, requires = "http")]
    pub allow_remote: bool,
    /// A host name requests may use in their `Host` header besides the loopback ones
    /// (repeatable).
    #[arg(long, value_name = "HOST", requires = "http")]
    pub allowed_host: Vec<String>,
    /// An origin browser requests may come from besides the loopback ones, with scheme and
    /// port (`https://app.example:443`, `http://tool.internal:*`; repeatable).
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub allowed_origin: Vec<String>,
    /// Require `Authorization: Bearer <token>` on every HTTP request, the token being the
    /// value of this environment variable (never a flag: command lines are visible to other
    /// users).
    #[arg(long, value_name = "VAR", requires = "http")]
    pub token_env: Option<String>,
    /// A mode every call runs in (repeatable; must be declared under `modes`).
    #[arg(long = "mode", value_name = "MODE")]
    pub modes: Vec<String>,
    /// Do not watch the policy files.
    #[arg(long)]
    pub no_watch: bool,
    /// How long the files must be quiet before a reload (e.g. `50ms`).
    #[arg(long, default_value = "50ms", value_parser = parse_duration)]
    pub debounce: std::time::Duration,
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    crate::model::Duration::parse(text)
        .map(|d| d.0)
        .map_err(|e| e.to_string())
}

/// The bearer token from the environment variable `--token-env` names.
fn token(args: &McpServeArgs) -> Result<Option<String>, McpServeError> {
    let Some(var) = &args.token_env else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(token) if !token.trim().is_empty() => Ok(Some(token.trim().to_owned())),
        Ok(_) | Err(_) => Err(McpServeError::Usage(format!(
            "the environment variable `{var}` (named by `--token-env`) is not set or empty"
        ))),
    }
}

/// What a failed start or session says on stderr, and the exit code.
pub fn report(error: &McpServeError) -> (String, Exit) {
    match error {
        McpServeError::Policies(diagnostics) => (
            format!(
                "error: the policies do not load, so nothing is served\n\n{}",
                render_human(
                    diagnostics,
                    &HumanOptions {
                        color: false,
                        ..HumanOptions::default()
                    },
                )
            ),
            Exit::Problems,
        ),
        McpServeError::Usage(message) | McpServeError::Io(message) => {
            (format!("error: {message}\n"), Exit::Usage)
        }
    }
}

/// Runs the server; returns when it stops.
pub fn run(global: &GlobalOptions, args: &McpServeArgs, err: &mut dyn std::io::Write) -> Exit {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            let _ = writeln!(err, "error: cannot start the async runtime: {error}");
            return Exit::Usage;
        }
    };
    let options = McpServeOptions {
        serve: ServeOptions {
            load: global.load_options(),
            watch: !args.no_watch,
            debounce: args.debounce,
        },
        modes: args
            .modes
            .iter()
            .map(|m| ModeName::new(m.as_str()))
            .collect(),
    };
    let mut received = 0;
    let served = runtime.block_on(async {
        let http = match args.http {
            Some(addr) => {
                crate::serve::mcp::http::check_bind(&addr, args.allow_remote)?;
                Some(HttpOptions {
                    addr,
                    allow_remote: args.allow_remote,
                    allowed_hosts: args.allowed_host.clone(),
                    allowed_origins: args.allowed_origin.clone(),
                    token: token(args)?,
                })
            }
            None => None,
        };
        let mut termination = super::signals::Termination::listen()
            .map_err(|error| McpServeError::Io(error.to_string()))?;
        // Reload notices come from the watcher's thread: they go straight to stderr.
        let notices: Notices = Arc::new(|line: String| {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr().lock(), "{line}");
        });
        let host = McpHost::start(options, notices).await?;
        if let Some(warning) = &host.watch_error {
            let _ = writeln!(err, "warning: {warning}");
        }
        let stop = async {
            received = termination.recv().await;
        };
        match http {
            Some(http) => {
                crate::serve::mcp::http::serve(host, http, stop, |addr| {
                    let _ = writeln!(
                        err,
                        "toolgate mcp serve: listening on http://{addr}{}",
                        crate::serve::mcp::http::PATH
                    );
                    let _ = err.flush();
                })
                .await
            }
            None => {
                host.serve_stdio(tokio::io::stdin(), tokio::io::stdout(), stop)
                    .await
            }
        }
    });
    // Do not wait for a blocking read of stdin that will never finish.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match served {
        Ok(()) if received != 0 => Exit::Signalled(received),
        Ok(()) => Exit::Success,
        Err(error) => {
            let (text, exit) = report(&error);
            let _ = err.write_all(text.as_bytes());
            exit
        }
    }
}
