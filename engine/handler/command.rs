//! The `command` handler (SPEC §10): runs a subprocess for a call.
//!
//! - argv comes from templates (`{{input.path}}`, see [`super::template`]); every template
//!   is exactly one argument and no shell ever re-splits it. With `stdin: json` the whole
//!   input is written to stdin as compact JSON plus a newline, then stdin is closed;
//!   otherwise stdin is `/dev/null`.
//! - The environment is cleared, then the variables named in `env_allow` are copied from the
//!   engine's environment and `env_set` is applied. `PATH` is not passed unless allowed;
//!   without it the program is looked up in the C library's default path (`/bin:/usr/bin`).
//! - stdout and stderr are read concurrently, streamed as progress chunks (never splitting a
//!   character; invalid UTF-8 becomes U+FFFD) and counted together against
//!   `max_output_bytes`; over the cap the process group is killed and the call fails.
//! - The command leads its own process group. On cancellation the group gets SIGTERM, then
//!   SIGKILL after `kill_grace`; when the call ends for any reason the group is SIGKILLed, so
//!   no grandchild survives and none can hold the pipes open.
//!
//! Result mapping, by exit status:
//! - exit code in `success_codes`, empty stderr → stdout, unchanged;
//! - exit code in `success_codes`, non-empty stderr → stdout, a newline if stdout is
//!   non-empty and does not end with one, the line `--- stderr ---`, then stderr;
//! - other exit code → business failure `exit code N`, a newline and stderr (or stdout when
//!   stderr is empty; nothing when both are), trailing whitespace trimmed; code `exit:N`;
//! - killed by a signal → [`HandlerError::Signaled`].

use std::io::ErrorKind;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::pin::pin;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration as StdDuration;

use indexmap::IndexMap;
use nix::sys::signal::Signal;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};

use crate::model::handler::StdinMode;

use super::decode::Utf8Decoder;
use super::template::{ArgvTemplateError, Template, parse_argv, render_argv};
use super::{
    CallContext, HandlerError, HandlerOutput, ProgressChunk, ProgressSink, ProgressStream,
};
use crate::process::{ProcessGroup, signal_name};

/// The line that separates stdout from stderr in the output of a successful command that
/// wrote to stderr.
pub const STDERR_SEPARATOR: &str = "--- stderr ---";

/// After the command exits (and its group is killed), how long to keep reading output at
/// least: killed group members need a moment to die and close their ends of the pipes.
/// The actual wait is `max(kill_grace, this)`; it only matters when a process that left the
/// group (`setsid`) still holds a pipe open, and then bounds the wait.
const SETTLE_AFTER_EXIT: StdDuration = StdDuration::from_millis(100);

/// Bytes read from a pipe at a time.
const READ_CHUNK: usize = 16 * 1024;

/// How to run a command for a call (the lead maps the contract's `handler` onto this).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandSpec {
    /// Program and arguments, each a template (`{{input.field}}`).
    pub argv: Vec<String>,
    /// What goes to stdin (`none`: `/dev/null`; `json`: the whole input as compact JSON and
    /// a newline, then end of file).
    pub stdin: StdinMode,
    /// Names of variables inherited from the engine's environment; all others are cleared.
    pub env_allow: Vec<String>,
    /// Variables set for the command (applied after `env_allow`).
    pub env_set: IndexMap<String, String>,
    /// Working directory; the engine's when `None`.
    pub cwd: Option<PathBuf>,
    /// Exit codes that mean success; an empty list means `[0]`.
    pub success_codes: Vec<i32>,
    /// Cap on stdout + stderr together, in bytes.
    pub max_output_bytes: u64,
    /// Time between SIGTERM and SIGKILL when the call is cancelled.
    pub kill_grace: StdDuration,
}

impl CommandSpec {
    /// A spec for `argv` with stdin null, an empty environment, success code 0, a 10 MiB
    /// output cap and a 2 s kill grace. The engine sets every field from policy data; these
    /// defaults are for programs that run commands directly.
    pub fn new(argv: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            argv: argv.into_iter().map(Into::into).collect(),
            stdin: StdinMode::None,
            env_allow: Vec::new(),
            env_set: IndexMap::new(),
            cwd: None,
            success_codes: vec![0],
            max_output_bytes: 10 * 1024 * 1024,
            kill_grace: StdDuration::from_secs(2),
        }
    }
}

/// A command handler with its argv templates parsed once.
#[derive(Clone, Debug)]
pub struct CommandRunner {
    spec: CommandSpec,
    argv: Vec<Template>,
}

impl CommandRunner {
    /// Parses the spec's argv templates.
    pub fn new(spec: CommandSpec) -> Result<Self, ArgvTemplateError> {
        let argv = parse_argv(&spec.argv)?;
        Ok(Self { spec, argv })
    }

    /// Runs the command for one call.
    pub async fn call(
        &self,
        input: &Value,
        ctx: &CallContext,
    ) -> Result<HandlerOutput, HandlerError> {
        run_parsed(&self.spec, &self.argv, input, ctx).await
    }
}

#[cfg(test)]
/// Runs `spec` for one call (parsing its templates first; prefer [`CommandRunner`] to parse
/// once).
pub async fn run_command(
    spec: &CommandSpec,
    input: &Value,
    ctx: &CallContext,
) -> Result<HandlerOutput, HandlerError> {
    let argv = parse_argv(&spec.argv).map_err(HandlerError::other)?;
    run_parsed(spec, &argv, input, ctx).await
}

async fn run_parsed(
    spec: &CommandSpec,
    argv: &[Template],
    input: &Value,
    ctx: &CallContext,
) -> Result<HandlerOutput, HandlerError> {
    let captured = run_captured(spec, argv, input, ctx).await?;
    map_status(spec, captured.status, captured.stdout, captured.stderr)
}

/// What a finished command left: its exit status and its whole output.
#[derive(Debug)]
pub struct Captured {
    /// The exit status.
    pub status: std::process::ExitStatus,
    /// Standard output (lossily decoded).
    pub stdout: String,
    /// Standard error (lossily decoded).
    pub stderr: String,
}

/// Runs a command like [`run_command`] (process group, output cap, cancellation, streaming)
/// but returns the raw exit status and output instead of mapping them to a result; hooks use
/// it because their exit codes mean something else.
pub async fn run_captured(
    spec: &CommandSpec,
    argv: &[Template],
    input: &Value,
    ctx: &CallContext,
) -> Result<Captured, HandlerError> {
    if ctx.cancel.is_cancelled() {
        return Err(HandlerError::Cancelled);
    }
    let args = render_argv(argv, input)
        .map_err(|error| HandlerError::business_with_code(error.to_string(), "template"))?;
    let stdin_bytes = match spec.stdin {
        StdinMode::None => None,
        StdinMode::Json => {
            let mut bytes = serde_json::to_vec(input).map_err(HandlerError::other)?;
            bytes.push(b'\n');
            Some(bytes)
        }
    };
    let (mut child, mut group) = spawn(spec, &args, stdin_bytes.is_some()).await?;

    let capture = Capture {
        limit: spec.max_output_bytes,
        total: AtomicU64::new(0),
        progress: &ctx.progress,
        stdout: Mutex::new(String::new()),
        stderr: Mutex::new(String::new()),
    };
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let mut io = pin!(async {
        tokio::try_join!(
            pump(stdout, ProgressStream::Stdout, &capture.stdout, &capture),
            pump(stderr, ProgressStream::Stderr, &capture.stderr, &capture),
            async {
                feed(stdin, stdin_bytes).await;
                Ok(())
            },
        )
        .map(|_| ())
    });
    let too_large = || HandlerError::OutputTooLarge {
        limit: spec.max_output_bytes,
    };

    let mut io_done = false;
    let status = loop {
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                // After a timeout the handler gets its cleanup grace before SIGKILL.
                let grace = if ctx.deadline.is_expired() {
                    spec.kill_grace.max(ctx.cleanup_grace)
                } else {
                    spec.kill_grace
                };
                terminate(&mut group, &mut child, grace).await;
                return Err(HandlerError::Cancelled);
            }
            read = &mut io, if !io_done => match read {
                Ok(()) => io_done = true,
                Err(OutputExceeded) => {
                    group.kill();
                    reap(&mut child, spec.kill_grace).await;
                    return Err(too_large());
                }
            },
            status = child.wait() => break status.map_err(HandlerError::other)?,
        }
    };
    // The call is over: nothing of the group may outlive it, and nothing left in the group
    // may keep the pipes open.
    group.kill();
    if !io_done {
        tokio::select! {
            biased;
            read = &mut io => {
                if let Err(OutputExceeded) = read {
                    return Err(too_large());
                }
            }
            () = ctx.cancel.cancelled() => return Err(HandlerError::Cancelled),
            // A process outside the group holds a pipe open; keep what was read.
            () = tokio::time::sleep(spec.kill_grace.max(SETTLE_AFTER_EXIT)) => {}
        }
    }
    let stdout = std::mem::take(&mut *lock(&capture.stdout));
    let stderr = std::mem::take(&mut *lock(&capture.stderr));
    Ok(Captured {
        status,
        stdout,
        stderr,
    })
}

/// Builds and spawns the command as the leader of a new process group.
async fn spawn(
    spec: &CommandSpec,
    args: &[String],
    piped_stdin: bool,
) -> Result<(Child, ProcessGroup), HandlerError> {
    let (program, rest) = args.split_first().ok_or_else(|| HandlerError::Spawn {
        program: String::new(),
        reason: "the command line is empty".into(),
        source: None,
    })?;
    let spawn_error = |reason: String, source: Option<std::io::Error>| HandlerError::Spawn {
        program: program.clone(),
        reason,
        source,
    };
    if let Some(dir) = &spec.cwd {
        match tokio::fs::metadata(dir).await {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(spawn_error(
                    format!("working directory `{}` is not a directory", dir.display()),
                    None,
                ));
            }
            Err(error) => {
                return Err(spawn_error(
                    format!("working directory `{}` is not accessible", dir.display()),
                    Some(error),
                ));
            }
        }
    }
    if let Some(name) = spec.env_set.keys().find(|name| !valid_env_name(name)) {
        return Err(spawn_error(
            format!("`{name}` is not a valid environment variable name"),
            None,
        ));
    }
    let mut command = Command::new(program);
    command.args(rest).env_clear();
    // A name that cannot be a variable (empty, `=`, NUL) matches nothing in the environment.
    for name in spec.env_allow.iter().filter(|name| valid_env_name(name)) {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.envs(&spec.env_set);
    if let Some(dir) = &spec.cwd {
        command.current_dir(dir);
    }
    command
        .stdin(if piped_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // Spawned and registered as one step: a sweep for orphans (another call ending) must
    // never see this child before it is known as a group leader.
    let mut spawning = crate::process::spawning();
    let child = command.spawn().map_err(|error| {
        let reason = match error.kind() {
            ErrorKind::NotFound if program.contains('/') => "no such file".to_owned(),
            ErrorKind::NotFound => {
                "command not found (is it installed, and is `PATH` in `env_allow`?)".to_owned()
            }
            ErrorKind::PermissionDenied => "permission denied (is it executable?)".to_owned(),
            _ => error.to_string(),
        };
        spawn_error(reason, Some(error))
    })?;
    let group = child
        .id()
        .and_then(|pid| ProcessGroup::led_by(pid, &mut spawning))
        .ok_or_else(|| spawn_error("the process has no id".into(), None))?;
    drop(spawning);
    Ok((child, group))
}

/// Whether `name` can be an environment variable name at all.
fn valid_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

/// The output cap was exceeded.
struct OutputExceeded;

/// Output collected from both pipes, counted against one cap.
struct Capture<'a> {
    limit: u64,
    total: AtomicU64,
    progress: &'a ProgressSink,
    stdout: Mutex<String>,
    stderr: Mutex<String>,
}

impl Capture<'_> {
    /// Keeps `text` in `buffer` and streams it as a progress chunk.
    fn emit(&self, stream: ProgressStream, buffer: &Mutex<String>, text: String) {
        if text.is_empty() {
            return;
        }
        lock(buffer).push_str(&text);
        self.progress.send(ProgressChunk { stream, text });
    }
}

fn lock(buffer: &Mutex<String>) -> std::sync::MutexGuard<'_, String> {
    // Only this module pushes whole strings under the lock; a poisoned buffer is intact.
    buffer.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads one pipe to its end, streaming and collecting whole characters.
async fn pump(
    reader: Option<impl AsyncRead + Unpin>,
    stream: ProgressStream,
    output: &Mutex<String>,
    capture: &Capture<'_>,
) -> Result<(), OutputExceeded> {
    let Some(mut reader) = reader else {
        return Ok(());
    };
    let mut chunk = vec![0_u8; READ_CHUNK];
    let mut decoder = Utf8Decoder::new();
    loop {
        let read = match reader.read(&mut chunk).await {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            // A broken pipe ends the stream like end of file; the exit status tells the rest.
            Err(_) => break,
        };
        let read_u64 = u64::try_from(read).unwrap_or(u64::MAX);
        let total = capture
            .total
            .fetch_add(read_u64, Ordering::Relaxed)
            .saturating_add(read_u64);
        if total > capture.limit {
            return Err(OutputExceeded);
        }
        capture.emit(stream, output, decoder.push(&chunk[..read]));
    }
    capture.emit(stream, output, decoder.finish());
    Ok(())
}

/// Writes the input to stdin and closes it.
async fn feed(stdin: Option<ChildStdin>, bytes: Option<Vec<u8>>) {
    if let (Some(mut stdin), Some(bytes)) = (stdin, bytes) {
        // A command that exits without reading its stdin makes this fail with a broken
        // pipe; that is its choice, not an error of the call.
        let _ = stdin.write_all(&bytes).await;
        let _ = stdin.shutdown().await;
    }
}

/// Cancellation: SIGTERM to the group, SIGKILL after `grace` (at once if the leader is gone).
async fn terminate(group: &mut ProcessGroup, child: &mut Child, grace: StdDuration) {
    group.signal(Signal::SIGTERM);
    let _ = tokio::time::timeout(grace, child.wait()).await;
    group.kill();
    reap(child, grace).await;
}

/// Waits (bounded) for the SIGKILLed leader to be reaped so it leaves no zombie behind; if
/// it does not go in time, `kill_on_drop` hands it to tokio's background reaper.
async fn reap(child: &mut Child, grace: StdDuration) {
    let _ = tokio::time::timeout(grace.max(SETTLE_AFTER_EXIT), child.wait()).await;
}

fn map_status(
    spec: &CommandSpec,
    status: ExitStatus,
    stdout: String,
    stderr: String,
) -> Result<HandlerOutput, HandlerError> {
    if let Some(code) = status.code() {
        let success = if spec.success_codes.is_empty() {
            code == 0
        } else {
            spec.success_codes.contains(&code)
        };
        return if success {
            Ok(HandlerOutput::text(success_text(stdout, &stderr)))
        } else {
            Err(HandlerError::business_with_code(
                failure_text(code, &stdout, &stderr),
                format!("exit:{code}"),
            ))
        };
    }
    match status.signal() {
        Some(number) => Err(HandlerError::Signaled {
            number,
            name: signal_name(number),
        }),
        None => Err(HandlerError::other(format!(
            "the command ended with an unknown status `{status}`"
        ))),
    }
}

fn success_text(mut stdout: String, stderr: &str) -> String {
    if stderr.is_empty() {
        return stdout;
    }
    if !stdout.is_empty() && !stdout.ends_with('\n') {
        stdout.push('\n');
    }
    stdout.push_str(STDERR_SEPARATOR);
    stdout.push('\n');
    stdout.push_str(stderr);
    stdout
}

fn failure_text(code: i32, stdout: &str, stderr: &str) -> String {
    let detail = if stderr.trim().is_empty() {
        stdout.trim_end()
    } else {
        stderr.trim_end()
    };
    if detail.is_empty() {
        format!("exit code {code}")
    } else {
        format!("exit code {code}\n{detail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_text_format() {
        assert_eq!(success_text("out\n".into(), ""), "out\n");
        assert_eq!(
            success_text("out".into(), "warn\n"),
            "out\n--- stderr ---\nwarn\n"
        );
        assert_eq!(
            success_text("out\n".into(), "warn"),
            "out\n--- stderr ---\nwarn"
        );
        assert_eq!(success_text(String::new(), "warn"), "--- stderr ---\nwarn");
    }

    #[test]
    fn failure_text_format() {
        assert_eq!(failure_text(2, "out\n", "bad\n"), "exit code 2\nbad");
        assert_eq!(failure_text(2, "out\n", ""), "exit code 2\nout");
        assert_eq!(failure_text(2, "", " \n"), "exit code 2");
    }
}
