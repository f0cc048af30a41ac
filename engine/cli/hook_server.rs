//! `toolgate hook --server` (and `plan --server`): a resident process that keeps loaded
//! policy sets between calls, so that an agent's per-call `toolgate hook` does not parse and
//! compile the policy set every time.
//!
//! ```text
//! agent ─ stdin ─→ toolgate hook --server ─ one request line ─→ toolgate hook-server
//!                   (reads the payload,      (argv, cwd, payload)  (parses argv as `hook`
//!                    prints the reply)  ←─ one reply line ───────   would, decides with a
//!                                          (stdout, stderr, exit)   kept snapshot)
//! ```
//!
//! The decision is the one `toolgate hook` (or `plan`) makes in its own process: the server
//! parses the client's arguments with the binary's own parser and runs the same
//! [`super::hook::hook_with`] (or [`super::plan::plan_with`]), taking relative paths against
//! the client's folder. What it keeps is only the loaded snapshot, keyed by the load options
//! and checked against the policy files before every use: a file or folder under any policy
//! root or the user's configuration folder (trust store, user policies) whose size, times or
//! inode changed, or a file added or removed, loads the set again. A set that does not load
//! is never kept.
//!
//! One server serves one user in one environment: its socket lives in a folder only the
//! user can open (`$XDG_RUNTIME_DIR/toolgate`, else `<tmp>/toolgate-<uid>`, created `0700`,
//! refused when another user owns it or others may enter it), and the socket's name carries
//! a digest of the whole environment, the executable and its version, so a client whose
//! `HOME`, `PATH` or any other variable differs starts (or finds) a server of its own, and a
//! rebuilt binary never talks to an old server. Servers exit after a quiet period
//! (`--idle-exit`, 10 minutes by default).
//!
//! Failing closed stays the client's job: any trouble with the server (none running, a
//! refused or broken connection, a reply that does not parse, no reply within the limit)
//! makes the client decide in its own process, as without `--server`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::agent::Reply;
use crate::snapshot::{LoadOptions, LoadOutcome, Snapshot, load};

/// How long a server waits without a request before it exits.
pub const DEFAULT_IDLE_EXIT: Duration = Duration::from_secs(600);

/// How long a client waits for the server's reply before deciding in its own process. A
/// decision that runs the policy's own hooks can take as long as those hooks.
const REPLY_TIMEOUT: Duration = Duration::from_secs(120);

/// How long the server waits for a client to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest request line the server reads (four times `hook`'s default `--max-input`, the
/// payload plus its JSON escaping and the client's arguments); a longer one is not answered
/// and its client decides in its own process.
const MAX_REQUEST_BYTES: u64 = 32 * 1024 * 1024;

/// Requests served at once; more are refused (their clients decide in their own process).
const MAX_CONNECTIONS: usize = 32;

/// Policy sets kept; when a new one would pass this, the kept ones are dropped.
const MAX_KEPT: usize = 16;

/// Servers `hook --server` starts per user at most (each serves one environment); past it,
/// hooks of a new environment decide in their own process.
const MAX_SERVERS: usize = 8;

/// Most files and folders a set's freshness check looks at; a set with more is not kept.
const MAX_WATCHED: usize = 10_000;

/// What gives a policy set for load options: [`load`] in a process of its own, the kept
/// sets in the server.
pub type Loader<'a> = dyn Fn(&LoadOptions) -> LoadOutcome + 'a;

/// One client's command, ready to run with the server's [`Loader`].
pub type Job = Box<dyn FnOnce(&Loader<'_>) -> Reply + Send>;

/// Turns a client's request into the job its command line asks for (the binary's own
/// argument parser: `hook` and `plan` are served); an error for anything else.
pub type ParseArgs = fn(&ClientRequest<'_>) -> Result<Job, String>;

/// What a client sent.
pub struct ClientRequest<'a> {
    /// `toolgate`'s arguments, without the program name.
    pub argv: &'a [String],
    /// The client's current folder: relative paths are taken against it.
    pub cwd: &'a Path,
    /// What the client read from its standard input (a hook's payload).
    pub payload: &'a str,
    /// Whether the client's output takes colours.
    pub color: bool,
}

#[derive(Serialize, Deserialize)]
struct Request {
    /// The client's version; a server of another version refuses the request.
    version: String,
    /// `toolgate`'s arguments (`hook …`), without the program name.
    argv: Vec<String>,
    /// The client's current folder: relative paths in `argv` and a payload without `cwd`
    /// are taken against it.
    cwd: PathBuf,
    /// What the client read from its standard input (a hook's payload).
    payload: String,
    /// Whether the client's output takes colours.
    #[serde(default)]
    color: bool,
}

#[derive(Serialize, Deserialize)]
struct WireReply {
    stdout: Option<String>,
    stderr: Option<String>,
    exit: i32,
}

/// The socket of the server for this user, environment and executable; `None` when no
/// private folder for it can be had (the client then decides in its own process).
pub fn socket_path() -> Option<PathBuf> {
    let dir = private_dir()?;
    Some(dir.join(format!("hook-{}.sock", environment_key())))
}

/// `$XDG_RUNTIME_DIR/toolgate`, else `<tmp>/toolgate-<uid>`: created `0700` when missing;
/// `None` when it is not a folder owned by this user that only this user may enter.
fn private_dir() -> Option<PathBuf> {
    let uid = nix::unistd::Uid::current().as_raw();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(runtime) => PathBuf::from(runtime).join("toolgate"),
        None => std::env::temp_dir().join(format!("toolgate-{uid}")),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    // Not followed: a link planted in place of the folder is refused.
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    let private = meta.is_dir() && meta.uid() == uid && meta.permissions().mode() & 0o077 == 0;
    private.then_some(dir)
}

/// A digest of everything that makes two `toolgate hook` processes decide alike outside
/// their arguments and folder: the whole environment, the executable (path, size, time) and
/// the version.
fn environment_key() -> String {
    let mut hasher = Sha256::new();
    hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
    if let Ok(exe) = std::env::current_exe() {
        hasher.update(exe.as_os_str().as_encoded_bytes());
        if let Ok(meta) = std::fs::metadata(&exe) {
            hasher.update(meta.len().to_le_bytes());
            hasher.update(meta.mtime().to_le_bytes());
            hasher.update(meta.mtime_nsec().to_le_bytes());
        }
    }
    let mut vars: Vec<_> = std::env::vars_os().collect();
    vars.sort();
    for (name, value) in vars {
        for part in [name, value] {
            let bytes = part.as_encoded_bytes();
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
    }
    let digest = hasher.finalize();
    digest[..12].iter().map(|b| format!("{b:02x}")).collect()
}

/// Asks the server at `socket` to run the command `argv` names; `None` when it cannot (the
/// caller then runs it in its own process).
pub fn ask(
    socket: &Path,
    argv: &[String],
    cwd: &Path,
    payload: &[u8],
    color: bool,
) -> Option<Reply> {
    let payload = std::str::from_utf8(payload).ok()?;
    let mut stream = UnixStream::connect(socket).ok()?;
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(REQUEST_TIMEOUT)).ok()?;
    let request = Request {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        argv: argv.to_vec(),
        cwd: cwd.to_owned(),
        payload: payload.to_owned(),
        color,
    };
    let mut line = serde_json::to_vec(&request).ok()?;
    line.push(b'\n');
    stream.write_all(&line).ok()?;
    stream.shutdown(std::net::Shutdown::Write).ok()?;
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer).ok()?;
    let reply: WireReply = serde_json::from_str(&answer).ok()?;
    tracing::debug!(socket = %socket.display(), "answered by the hook server");
    Some(Reply {
        stdout: reply.stdout,
        stderr: reply.stderr,
        exit: reply.exit,
    })
}

/// Starts a server for `socket` in the background (its own session, no terminal, standard
/// streams closed) and returns at once; it serves from the next call on.
pub fn start(socket: &Path, idle_exit: Duration) {
    use std::os::unix::process::CommandExt;
    // An agent that sets a variable per call would otherwise start a server per call.
    let running = socket.parent().map_or(0, live_servers);
    if running >= MAX_SERVERS {
        tracing::debug!(
            running,
            "no hook server answered; {MAX_SERVERS} run already, none started"
        );
        return;
    }
    tracing::debug!(socket = %socket.display(), "no hook server answered; starting one");
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let _ = std::process::Command::new(exe)
        .arg("hook-server")
        .arg("--socket")
        .arg(socket)
        .arg("--idle-exit")
        .arg(format!("{}s", idle_exit.as_secs()))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // Its own process group, so that an agent stopping the hook's group leaves it be.
        .process_group(0)
        .spawn();
}

/// The servers answering in `dir` (sockets left by servers that died do not count).
fn live_servers(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("hook-") && n.ends_with(".sock"))
        })
        .filter(|path| UnixStream::connect(path).is_ok())
        .count()
}

/// Serves hook requests on `socket` until no request came for `idle_exit`. Returns at once
/// (successfully) when another server already answers on it.
pub fn serve(socket: &Path, idle_exit: Duration, parse: ParseArgs) -> std::io::Result<()> {
    let listener = match UnixListener::bind(socket) {
        Ok(listener) => listener,
        Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
            if UnixStream::connect(socket).is_ok() {
                return Ok(());
            }
            // A socket left by a server that died: take its place. Anything else there (a
            // file, a link) is someone's data: never removed.
            let is_socket = std::fs::symlink_metadata(socket)
                .is_ok_and(|meta| std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()));
            if !is_socket {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!(
                        "`{}` exists and is not a socket: choose another `--socket` path",
                        socket.display()
                    ),
                ));
            }
            std::fs::remove_file(socket)?;
            UnixListener::bind(socket)?
        }
        Err(error) => return Err(error),
    };
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    let bound = std::fs::symlink_metadata(socket)?.ino();
    let server = Arc::new(Server {
        parse,
        kept: Mutex::new(HashMap::new()),
        busy: AtomicUsize::new(0),
        last: AtomicU64::new(now_secs()),
    });
    let watchdog = {
        let server = Arc::clone(&server);
        let socket = socket.to_owned();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(Duration::from_secs(1).min(idle_exit));
                let idle = now_secs().saturating_sub(server.last.load(Ordering::Relaxed));
                if server.busy.load(Ordering::Relaxed) == 0 && idle >= idle_exit.as_secs() {
                    // Only our own socket, not one a later server put under the same name.
                    if std::fs::symlink_metadata(&socket).is_ok_and(|meta| meta.ino() == bound) {
                        let _ = std::fs::remove_file(&socket);
                    }
                    std::process::exit(0);
                }
            }
        })
    };
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        server.last.store(now_secs(), Ordering::Relaxed);
        if server.busy.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            // Dropped unanswered: the client decides in its own process.
            server.busy.fetch_sub(1, Ordering::AcqRel);
            continue;
        }
        let server = Arc::clone(&server);
        std::thread::spawn(move || {
            server.answer(stream);
            server.last.store(now_secs(), Ordering::Relaxed);
            server.busy.fetch_sub(1, Ordering::AcqRel);
        });
    }
    drop(watchdog);
    Ok(())
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

struct Server {
    parse: ParseArgs,
    /// Loaded sets by their load options (`Debug` text), with what they were loaded from.
    kept: Mutex<HashMap<String, Kept>>,
    busy: AtomicUsize,
    last: AtomicU64,
}

struct Kept {
    files: Vec<Stamp>,
    snapshot: Arc<Snapshot>,
}

impl Server {
    fn answer(&self, stream: UnixStream) {
        let _ = stream.set_read_timeout(Some(REQUEST_TIMEOUT));
        let mut line = String::new();
        // The payload limit is the client's to enforce; this bounds what one client can make
        // the server hold.
        let read = BufReader::new(&stream)
            .take(MAX_REQUEST_BYTES)
            .read_line(&mut line);
        let Some(request) = read
            .ok()
            .and_then(|_| serde_json::from_str::<Request>(&line).ok())
        else {
            return;
        };
        if request.version != env!("CARGO_PKG_VERSION") {
            return;
        }
        let client = ClientRequest {
            argv: &request.argv,
            cwd: &request.cwd,
            payload: &request.payload,
            color: request.color,
        };
        let Ok(job) = (self.parse)(&client) else {
            return;
        };
        let loader = |options: &LoadOptions| self.load(options);
        let reply = job(&loader);
        let wire = WireReply {
            stdout: reply.stdout,
            stderr: reply.stderr,
            exit: reply.exit,
        };
        if let Ok(mut text) = serde_json::to_vec(&wire) {
            text.push(b'\n');
            let mut stream = stream;
            let _ = stream.write_all(&text);
        }
    }

    /// The kept snapshot for `options` when nothing it was loaded from changed, else a new
    /// load (kept when it succeeds).
    fn load(&self, options: &LoadOptions) -> LoadOutcome {
        let key = format!("{options:?}");
        let files = stamps(options);
        if let Some(files) = &files
            && let Ok(kept) = self.kept.lock()
            && let Some(found) = kept.get(&key)
            && found.files == *files
        {
            return LoadOutcome {
                snapshot: Some(Arc::clone(&found.snapshot)),
                diagnostics: Vec::new(),
            };
        }
        let outcome = load(options, 1);
        if let (Some(files), Some(snapshot)) = (files, &outcome.snapshot)
            && let Ok(mut kept) = self.kept.lock()
        {
            if kept.len() >= MAX_KEPT && !kept.contains_key(&key) {
                kept.clear();
            }
            kept.insert(
                key,
                Kept {
                    files,
                    snapshot: Arc::clone(snapshot),
                },
            );
        }
        outcome
    }
}

/// What a file or folder was when a set was loaded from it.
#[derive(Debug, PartialEq, Eq)]
struct Stamp {
    path: PathBuf,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
    inode: u64,
}

/// The stamps of every file and folder a load with `options` reads (the policy roots, and
/// the user's configuration folder with its trust store), in a fixed order; `None` when
/// there are too many to check on every call.
fn stamps(options: &LoadOptions) -> Option<Vec<Stamp>> {
    let layers = &options.layers;
    let mut roots: Vec<PathBuf> = layers.enforced.clone();
    roots.extend(layers.user.clone());
    roots.extend(layers.policies.iter().cloned());
    if let Some(project) = &layers.project {
        roots.push(project.policies.clone());
    }
    roots.extend(options.config_dir.clone());
    let mut out = Vec::new();
    for root in &roots {
        walk(root, 0, &mut out)?;
    }
    Some(out)
}

/// Stamps `path` and, for a folder, everything under it (links followed, as the loader
/// follows them; 32 levels at most).
fn walk(path: &Path, depth: usize, out: &mut Vec<Stamp>) -> Option<()> {
    if out.len() >= MAX_WATCHED || depth > 32 {
        return None;
    }
    let Ok(meta) = std::fs::metadata(path) else {
        // A root that does not exist yet: its appearing is a change.
        out.push(Stamp {
            path: path.to_owned(),
            len: u64::MAX,
            modified: (0, 0),
            changed: (0, 0),
            inode: 0,
        });
        return Some(());
    };
    out.push(Stamp {
        path: path.to_owned(),
        len: meta.len(),
        modified: (meta.mtime(), meta.mtime_nsec()),
        changed: (meta.ctime(), meta.ctime_nsec()),
        inode: meta.ino(),
    });
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .ok()?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for entry in entries {
            walk(&entry, depth + 1, out)?;
        }
    }
    Some(())
}
