//! Starts `toolgate mcp serve` (stdio or HTTP) on the fixture policies and connects rmcp's
//! client to it; the client records what the server sends it (tool-list changes, progress,
//! elicitations) and answers elicitations as told.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::mpsc;

/// How long any wait may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(30);

/// The fixture policies.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_serve")
}

/// A copy of the fixture policies in a fresh folder (the reload tests rewrite it), and the
/// policies root inside it.
pub fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("policies");
    std::fs::create_dir(&root).unwrap();
    std::fs::copy(
        fixtures().join("policies/tools.yaml"),
        root.join("tools.yaml"),
    )
    .unwrap();
    (dir, root)
}

/// `toolgate --no-builtin --workspace DIR -p ROOT mcp serve ARGS…`.
pub fn command(workspace: &Path, root: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .arg("--no-builtin")
        .arg("--workspace")
        .arg(workspace)
        .arg("-p")
        .arg(root)
        .args(["mcp", "serve"])
        .args(args);
    command
}

/// What the client saw from the server, besides responses.
#[derive(Debug)]
pub enum Seen {
    /// `notifications/tools/list_changed`.
    ListChanged,
    /// A progress notification.
    Progress(ProgressNotificationParam),
    /// An elicitation, by its message.
    Elicited(String),
}

/// rmcp's client, declaring elicitation when it has an answer to give.
#[derive(Clone)]
pub struct TestClient {
    answer: Option<ElicitationAction>,
    seen: mpsc::UnboundedSender<Seen>,
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities = match self.answer {
            Some(_) => ClientCapabilities::builder().enable_elicitation().build(),
            None => ClientCapabilities::default(),
        };
        ClientConfig::new(capabilities, Implementation::new("toolgate-tests", "0"))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = match &request {
            ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
            other => format!("{other:?}"),
        };
        let _ = self.seen.send(Seen::Elicited(message));
        let answer = self.answer.clone().unwrap_or(ElicitationAction::Decline);
        Ok(ElicitResult::new(answer))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.seen.send(Seen::ListChanged);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.seen.send(Seen::Progress(params));
    }
}

/// A connected client and what it saw.
pub struct Session {
    pub client: RunningService<RoleClient, TestClient>,
    pub seen: mpsc::UnboundedReceiver<Seen>,
    /// The workspace (and, for reload tests, the policies) live as long as the session.
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
}

fn client(answer: Option<ElicitationAction>) -> (TestClient, mpsc::UnboundedReceiver<Seen>) {
    let (seen, receiver) = mpsc::unbounded_channel();
    (TestClient { answer, seen }, receiver)
}

/// Starts `mcp serve` over stdio on a scratch copy of the fixtures.
pub async fn stdio(answer: Option<ElicitationAction>) -> Session {
    let (dir, root) = scratch();
    stdio_on(dir, root, answer).await
}

/// Starts `mcp serve` over stdio on the policies under `root`.
pub async fn stdio_on(
    dir: tempfile::TempDir,
    root: PathBuf,
    answer: Option<ElicitationAction>,
) -> Session {
    let command = command(dir.path(), &root, &["--debounce", "20ms"]);
    let transport = TokioChildProcess::new(tokio::process::Command::from(command)).unwrap();
    let (handler, seen) = client(answer);
    let client = handler.serve(transport).await.unwrap();
    Session {
        client,
        seen,
        dir,
        root,
    }
}

/// A running `mcp serve --http` process and its URL.
pub struct HttpServer {
    pub child: Child,
    pub url: String,
    /// Everything it wrote on stderr so far.
    pub stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `mcp serve --http 127.0.0.1:0 ARGS…` and waits for the address it prints.
pub fn http_server(
    workspace: &Path,
    root: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> HttpServer {
    let mut command = command(
        workspace,
        root,
        &["--http", "127.0.0.1:0", "--debounce", "20ms"],
    );
    command
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    let collected = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let log = std::sync::Arc::clone(&collected);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("toolgate mcp serve: listening on ") {
                let _ = sender.send(url.to_owned());
            }
            let mut log = log.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
    let url = receiver.recv_timeout(WAIT).unwrap_or_else(|_| {
        panic!(
            "the server printed no address: {}",
            collected.lock().unwrap()
        )
    });
    HttpServer {
        child,
        url,
        stderr: collected,
    }
}

/// reqwest (under rmcp's HTTP client) needs a process-wide TLS provider even for plain HTTP.
pub fn tls() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Starts `mcp serve --http` on a scratch copy of the fixtures and connects to it.
pub async fn http(answer: Option<ElicitationAction>) -> (Session, HttpServer) {
    tls();
    let (dir, root) = scratch();
    let server = http_server(dir.path(), &root, &[], &[]);
    let transport = StreamableHttpClientTransport::from_uri(server.url.as_str());
    let (handler, seen) = client(answer);
    let client = handler.serve(transport).await.unwrap();
    (
        Session {
            client,
            seen,
            dir,
            root,
        },
        server,
    )
}

/// Arguments from a JSON object.
pub fn args(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, not {other}"),
    }
}

/// Calls a tool and returns its result.
pub async fn call_on<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    arguments: Value,
) -> CallToolResult {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args(arguments));
    tokio::time::timeout(WAIT, client.call_tool(params))
        .await
        .expect("the call answered in time")
        .unwrap()
}

/// One more client (without elicitation) of an HTTP server.
pub async fn connect_http(url: &str) -> RunningService<RoleClient, TestClient> {
    tls();
    let (handler, _seen) = client(None);
    handler
        .serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .unwrap()
}

impl Session {
    /// Calls a tool and returns its result.
    pub async fn call(&self, tool: &str, arguments: Value) -> CallToolResult {
        call_on(&self.client, tool, arguments).await
    }

    /// The names of the listed tools.
    pub async fn tool_names(&self) -> Vec<String> {
        let tools = tokio::time::timeout(WAIT, self.client.list_all_tools())
            .await
            .expect("tools/list answered in time")
            .unwrap();
        tools.into_iter().map(|t| t.name.to_string()).collect()
    }

    /// The next thing seen that `wanted` accepts (others are skipped).
    pub async fn next_seen(&mut self, wanted: impl Fn(&Seen) -> bool) -> Seen {
        loop {
            let seen = tokio::time::timeout(WAIT, self.seen.recv())
                .await
                .expect("the server sent it in time")
                .expect("the client is alive");
            if wanted(&seen) {
                return seen;
            }
        }
    }

    /// A path in the workspace, as a string.
    pub fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

/// The text of a result (its text parts joined).
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether the result is a tool error.
pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// Waits until a file exists.
pub async fn wait_for_file(path: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !Path::new(path).exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "`{path}` never appeared"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

impl HttpServer {
    /// Waits until stderr holds `text`, and returns it all.
    pub async fn stderr_with(&self, text: &str) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let seen = self.stderr.lock().unwrap().clone();
            if seen.contains(text) {
                return seen;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "stderr never said `{text}`:\n{seen}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
