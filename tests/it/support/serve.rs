//! Drives `toolgate serve --stdio` as a child process: a reader thread collects every line
//! the server writes, and helpers send requests and wait (with generous timeouts, so a hang
//! fails the test instead of blocking CI) for the message they expect.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long any single wait may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(30);

/// The fixture folder of the serve tests.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/serve")
}

/// Copies the fixture policy set into a fresh temporary folder (the reload tests rewrite
/// it); returns the folder and the policies root inside it.
pub fn scratch_policies() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("policies");
    std::fs::create_dir(&root).unwrap();
    for entry in std::fs::read_dir(fixtures().join("policies")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), root.join(entry.file_name())).unwrap();
    }
    (dir, root)
}

/// A running server.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    stderr: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
    /// Everything received and not yet consumed by a wait, oldest first.
    backlog: Vec<Value>,
    /// Everything received, oldest first.
    pub log: Vec<Value>,
    next_id: u64,
    /// Keeps a scratch folder alive as long as the server.
    pub scratch: Option<tempfile::TempDir>,
}

impl Server {
    /// Starts `toolgate --no-builtin --workspace <tmp> <args…> serve --stdio <serve_args…>`.
    pub fn start(global: &[&str], serve_args: &[&str]) -> Self {
        let workspace = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command
            .arg("--no-builtin")
            .arg("--workspace")
            .arg(workspace.path())
            .args(global)
            .args(["serve", "--stdio"])
            .args(serve_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // A line that is not JSON is kept as a string so a test can flag it.
                let value = serde_json::from_str(&line).unwrap_or(Value::String(line));
                if sender.send(value).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut child_err = child.stderr.take().unwrap();
        let collected = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = child_err.read_to_string(&mut text);
            collected.lock().unwrap().push_str(&text);
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            stderr,
            reader: Some(reader),
            backlog: Vec::new(),
            log: Vec::new(),
            next_id: 0,
            scratch: Some(workspace),
        }
    }

    /// Starts a server on the fixture policies plus extra roots.
    pub fn on_fixtures(extra_roots: &[&str], serve_args: &[&str]) -> Self {
        let base = fixtures().join("policies");
        let mut global = vec!["-p".to_owned(), base.display().to_string()];
        for root in extra_roots {
            global.push("-p".to_owned());
            global.push(fixtures().join(root).display().to_string());
        }
        let global: Vec<&str> = global.iter().map(String::as_str).collect();
        Self::start(&global, serve_args)
    }

    /// Writes raw bytes followed by a newline.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes one message.
    pub fn send(&mut self, message: &Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// Sends a request with a fresh numeric id; returns the id.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and waits for its response (`result` or `error`).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(&id)
    }

    /// Sends a request and returns its `result`, failing on an error response.
    pub fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(
            response.get("error").is_none(),
            "`{method}` failed: {response}"
        );
        response["result"].clone()
    }

    /// Waits for the response with this id.
    pub fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.wait_for(&format!("the response to {id}"), |m| {
            m.get("method").is_none() && m.get("id") == Some(&id)
        })
    }

    /// Waits for an `event` notification of this type; returns its params.
    pub fn event(&mut self, kind: &str) -> Value {
        self.wait_for(&format!("a `{kind}` event"), |m| {
            m["method"] == "event" && m["params"]["type"] == kind
        })["params"]
            .clone()
    }

    /// Waits for the next `permission/request` from the server.
    pub fn permission_request(&mut self) -> Value {
        self.wait_for("a `permission/request`", |m| {
            m["method"] == "permission/request"
        })
    }

    /// Answers a server → client request.
    pub fn answer(&mut self, request: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
    }

    /// Waits for the first message (received earlier and not yet consumed, or arriving
    /// within [`WAIT`]) that satisfies `wanted`, and consumes it.
    pub fn wait_for(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(index) = self.backlog.iter().position(&wanted) {
            return self.backlog.remove(index);
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(message) => {
                    self.log.push(message.clone());
                    if wanted(&message) {
                        return message;
                    }
                    self.backlog.push(message);
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("timed out waiting for {what}; {}", self.context())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "the server closed stdout while waiting for {what}; {}",
                        self.context()
                    )
                }
            }
        }
    }

    /// Collects what arrives until `quiet` passes without a message (for asserting that
    /// nothing unexpected was sent).
    pub fn drain(&mut self, quiet: Duration) -> Vec<Value> {
        while let Ok(message) = self.lines.recv_timeout(quiet) {
            self.log.push(message.clone());
            self.backlog.push(message);
        }
        std::mem::take(&mut self.backlog)
    }

    /// What the server has said, for failure messages.
    pub fn context(&self) -> String {
        let received: Vec<String> = self.log.iter().map(Value::to_string).collect();
        format!(
            "received:\n{}\nstderr:\n{}",
            received.join("\n"),
            self.stderr.lock().unwrap()
        )
    }

    /// The server's stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Closes stdin (end of input) without sending anything.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the process to end (within [`WAIT`]); kills it and fails otherwise.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                if let Some(reader) = self.reader.take() {
                    let _ = reader.join();
                }
                while let Ok(message) = self.lines.try_recv() {
                    self.log.push(message.clone());
                    self.backlog.push(message);
                }
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not exit; {}", self.context());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // A failed test must not leave a server behind.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A batch parameter: `calls` as `(id, tool, input)`.
pub fn batch(id: &str, calls: &[(&str, &str, Value)]) -> Value {
    json!({
        "batch": {
            "id": id,
            "calls": calls
                .iter()
                .map(|(id, tool, input)| json!({"id": id, "tool": tool, "input": input}))
                .collect::<Vec<_>>(),
        }
    })
}

/// Whether a process is still alive (not gone, not a zombie).
pub fn is_alive(pid: u32) -> bool {
    i32::try_from(pid).is_ok_and(super::executor::process_alive)
}
