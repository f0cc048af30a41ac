//! A stdio server's transport: the child process, and its standard input and output as the
//! SDK's line transport, with a cap on the size of one message.
//!
//! The SDK caps a message too, but drops one that is over its cap and reads on, so the call
//! waiting for that answer waited until its timeout and then reported a timeout. Here a
//! message over [`MAX_MESSAGE`] closes the connection at once with the reason, which
//! [`StdioServer::broken`] keeps for the calls that were waiting (see `server`): memory stays
//! bounded and the call says what happened.

use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// The largest message (one line of JSON) a stdio server may send: 16 MiB, as the SDK's
/// streamable HTTP client allows for one event.
pub(super) const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// How long a server gets to exit after its standard input is closed, and again after
/// `SIGTERM`, before it is killed.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// A running stdio server and the transport over its standard input and output.
pub(super) struct StdioServer {
    child: Child,
    transport: AsyncRwTransport<RoleClient, Capped<ChildStdout>, ChildStdin>,
    broken: Arc<OnceLock<String>>,
}

impl StdioServer {
    /// Spawns `argv` in `cwd` with a cleared environment plus the allowed and set variables,
    /// as the leader of its own process group (a terminal's Ctrl-C goes to toolgate, which
    /// shuts it down), its standard error passed on to the log.
    pub(super) fn spawn(
        argv: &[String],
        env_allow: &[String],
        env_set: &[(String, String)],
        cwd: &Path,
    ) -> Result<Self, String> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| "its `command` is empty".to_owned())?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        for name in env_allow {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        for (name, value) in env_set {
            command.env(name, value);
        }
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command
            .spawn()
            .map_err(|error| format!("cannot start `{program}`: {error}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(format!(
                "`{program}` was started without its standard streams"
            ));
        };
        if let Some(stderr) = child.stderr.take() {
            let program = program.clone();
            tokio::spawn(async move {
                use tokio::io::AsyncBufReadExt;
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(server = %program, "{line}");
                }
            });
        }
        let broken = Arc::new(OnceLock::new());
        let stdout = Capped {
            inner: stdout,
            line: 0,
            broken: Arc::clone(&broken),
        };
        // The cap above ends a message at `MAX_MESSAGE` bytes, plus its newline.
        let transport =
            AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(MAX_MESSAGE + 1);
        Ok(Self {
            child,
            transport,
            broken,
        })
    }

    /// The process id, while it runs.
    pub(super) fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Why the connection was closed from this side, once it was.
    pub(super) fn broken(&self) -> Arc<OnceLock<String>> {
        Arc::clone(&self.broken)
    }

    /// Shuts the server down as the MCP specification says for stdio: its standard input
    /// closed, then `SIGTERM`, then `SIGKILL`, each after [`EXIT_WAIT`].
    async fn shut_down(&mut self) -> std::io::Result<()> {
        self.transport.close().await?;
        if self.exited().await {
            return Ok(());
        }
        #[cfg(unix)]
        if let Some(pid) = self.id().and_then(|pid| i32::try_from(pid).ok()) {
            let pid = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            if self.exited().await {
                return Ok(());
            }
        }
        self.child.kill().await
    }

    /// Whether the server exits within [`EXIT_WAIT`].
    async fn exited(&mut self) -> bool {
        matches!(
            tokio::time::timeout(EXIT_WAIT, self.child.wait()).await,
            Ok(Ok(_))
        )
    }
}

impl Transport<RoleClient> for StdioServer {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shut_down()
    }
}

/// A server's standard output that fails once a line (one message) grows past
/// [`MAX_MESSAGE`] bytes, keeping the reason in `broken`.
struct Capped<R> {
    inner: R,
    /// The bytes read since the last newline.
    line: usize,
    broken: Arc<OnceLock<String>>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Capped<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let read = &buf.filled()[before..];
        this.line = match read.iter().rposition(|byte| *byte == b'\n') {
            Some(newline) => read.len() - newline - 1,
            None => this.line + read.len(),
        };
        if this.line > MAX_MESSAGE {
            let reason = this
                .broken
                .get_or_init(|| {
                    format!(
                        "it sent a message of more than {} MiB, the most one message may \
                         hold, and was disconnected",
                        MAX_MESSAGE / (1024 * 1024)
                    )
                })
                .clone();
            // A failed read hands back no bytes.
            buf.set_filled(before);
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                reason,
            )));
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    fn capped(bytes: Vec<u8>) -> (Capped<std::io::Cursor<Vec<u8>>>, Arc<OnceLock<String>>) {
        let broken = Arc::new(OnceLock::new());
        let reader = Capped {
            inner: std::io::Cursor::new(bytes),
            line: 0,
            broken: Arc::clone(&broken),
        };
        (reader, broken)
    }

    #[tokio::test]
    async fn lines_up_to_the_cap_pass_whole() {
        let mut bytes = vec![b'x'; MAX_MESSAGE];
        bytes.push(b'\n');
        bytes.extend(vec![b'y'; MAX_MESSAGE]);
        bytes.push(b'\n');
        let (mut reader, broken) = capped(bytes.clone());
        let mut read = Vec::new();
        reader.read_to_end(&mut read).await.unwrap();
        assert_eq!(read, bytes);
        assert!(broken.get().is_none());
    }

    #[tokio::test]
    async fn a_line_past_the_cap_fails_the_read_and_says_why() {
        let mut bytes = b"{}\n".to_vec();
        bytes.extend(vec![b'x'; MAX_MESSAGE + 1]);
        let (mut reader, broken) = capped(bytes);
        let error = reader.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
        assert!(
            broken.get().unwrap().contains("more than 16 MiB"),
            "{broken:?}"
        );
    }
}
