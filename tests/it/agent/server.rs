//! `toolgate hook --server` and `toolgate hook-server`: the resident process answers exactly
//! as the hook decides on its own, sees every policy and trust change, serves only clients
//! of the same environment, refuses a folder others may enter, and exits when idle.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::check::{Run, run_with_stdin};

use super::Project;

/// One environment: its own runtime folder (where sockets go), home and configuration
/// folder. Every process a test starts gets exactly these variables, so the hook and the
/// server it finds agree on the socket. Servers still running when it is dropped are killed.
struct Env {
    dir: tempfile::TempDir,
    extra: Vec<(String, String)>,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["run", "home", "config"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::fs::set_permissions(
            dir.path().join("run"),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        Self {
            dir,
            extra: Vec::new(),
        }
    }

    fn runtime(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command
            .args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path().join("home"))
            .env("XDG_RUNTIME_DIR", self.runtime())
            .env("TOOLGATE_CONFIG_DIR", self.dir.path().join("config"))
            .env("TOOLGATE_LOG", "debug")
            .env("NO_COLOR", "1");
        for (name, value) in &self.extra {
            command.env(name, value);
        }
        command
    }

    fn trust(&self, project: &Project) {
        let status = self
            .command(&["trust", &project.path().display().to_string()])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// `toolgate hook claude [args…]` with a fixture payload of `project`.
    fn hook(&self, project: &Project, fixture: &str, args: &[&str]) -> Run {
        let mut all = vec!["hook", "claude"];
        all.extend_from_slice(args);
        run_with_stdin(&mut self.command(&all), project.payload(fixture).as_bytes())
    }

    /// The sockets in the runtime folder.
    fn sockets(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.runtime().join("toolgate")) else {
            return Vec::new();
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "sock"))
            .collect();
        found.sort();
        found
    }

    /// Waits (at most 30 s) until the runtime folder holds `count` sockets.
    fn wait_for_sockets(&self, count: usize) -> Vec<PathBuf> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let found = self.sockets();
            if found.len() >= count {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "expected {count} hook server sockets, found {found:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Env {
    /// Kills every process whose command line names this environment's runtime folder (the
    /// servers `hook --server` started in the background).
    fn drop(&mut self) {
        let needle = self.runtime().display().to_string();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        for entry in entries.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            if String::from_utf8_lossy(&cmdline).contains(&needle) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

/// A server run in the foreground by the test, killed when dropped.
struct Foreground(Child);

impl Drop for Foreground {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const ANSWERED: &str = "answered by the hook server";
const STARTING: &str = "no hook server answered; starting one";

#[test]
fn a_server_answers_as_the_hook_itself_would_and_sees_every_policy_and_trust_change() {
    let env = Env::new();
    let project = Project::standard();
    env.trust(&project);
    let _server = Foreground(
        env.command(&["hook-server", "--idle-exit", "5m"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    env.wait_for_sockets(1);
    let fixtures = [
        "claude/pre_tool_use_bash_allowed.json",
        "claude/pre_tool_use_rm_rf.json",
        "claude/pre_tool_use_read_env.json",
        "claude/pre_tool_use_compound.json",
    ];
    let compare = |expect_allow: bool| {
        for fixture in fixtures {
            let alone = env.hook(&project, fixture, &[]);
            let served = env.hook(&project, fixture, &["--server"]);
            assert!(
                served.stderr.contains(ANSWERED),
                "{fixture}: {}",
                served.stderr
            );
            assert!(!alone.stderr.contains(ANSWERED));
            assert_eq!(
                (served.code, &served.stdout),
                (alone.code, &alone.stdout),
                "{fixture}"
            );
        }
        let npm = env.hook(&project, fixtures[0], &["--server"]);
        assert_eq!(
            npm.stdout.contains("\"permissionDecision\":\"allow\""),
            expect_allow,
            "{}",
            npm.stdout
        );
    };
    compare(true);

    // An edit of the project's policy: the project is no longer trusted, and the server
    // sees it at once (its allow rules are ignored until it is trusted again).
    let policy = project.path().join(".toolgate/policies/project.yaml");
    let text = std::fs::read_to_string(&policy).unwrap();
    std::fs::write(
        &policy,
        text.replace(
            "decision: allow\n    reason: the project's npm scripts",
            "decision: deny\n    reason: no npm here",
        ),
    )
    .unwrap();
    let untrusted = env.hook(&project, fixtures[0], &["--server"]);
    assert!(untrusted.stderr.contains(ANSWERED));
    assert!(
        untrusted.stdout.contains("is not trusted"),
        "{}",
        untrusted.stdout
    );
    compare(false);

    // Trusting it again (a change of the trust store) takes effect at once too: the edited
    // rule now denies.
    env.trust(&project);
    let denied = env.hook(&project, fixtures[0], &["--server"]);
    assert!(denied.stderr.contains(ANSWERED));
    assert!(
        denied.stdout.contains("\"permissionDecision\":\"deny\"")
            && denied.stdout.contains("no npm here"),
        "{}",
        denied.stdout
    );
    compare(false);

    // A new file in the policy folder is seen as well.
    std::fs::write(
        project.path().join(".toolgate/policies/more.yaml"),
        "version: 1\nrules:\n  - name: no-curl-here\n    tools: [Bash]\n    match:\n      command: { shell: [\"curl *\"] }\n    decision: deny\n    reason: added later\n",
    )
    .unwrap();
    env.trust(&project);
    let added = env.hook(&project, "claude/pre_tool_use_bash_ask.json", &["--server"]);
    assert!(added.stderr.contains(ANSWERED));
    assert!(added.stdout.contains("added later"), "{}", added.stdout);
}

#[test]
fn without_a_server_the_hook_decides_itself_and_starts_one_for_its_environment_only() {
    let mut env = Env::new();
    let project = Project::standard();
    env.trust(&project);
    let alone = env.hook(&project, "claude/pre_tool_use_rm_rf.json", &[]);

    let first = env.hook(&project, "claude/pre_tool_use_rm_rf.json", &["--server"]);
    assert!(first.stderr.contains(STARTING), "{}", first.stderr);
    assert!(!first.stderr.contains(ANSWERED));
    assert_eq!((first.code, &first.stdout), (alone.code, &alone.stdout));
    let sockets = env.wait_for_sockets(1);
    let mode = std::fs::metadata(&sockets[0]).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the socket is the user's only");

    let second = env.hook(&project, "claude/pre_tool_use_rm_rf.json", &["--server"]);
    assert!(second.stderr.contains(ANSWERED), "{}", second.stderr);
    assert_eq!((second.code, &second.stdout), (alone.code, &alone.stdout));

    // A client whose environment differs in any variable is not served by that server: it
    // decides itself and starts a server of its own.
    env.extra.push(("SOME_TOKEN".into(), "other".into()));
    let other = env.hook(&project, "claude/pre_tool_use_rm_rf.json", &["--server"]);
    assert!(other.stderr.contains(STARTING), "{}", other.stderr);
    assert_eq!((other.code, &other.stdout), (alone.code, &alone.stdout));
    assert_eq!(env.wait_for_sockets(2).len(), 2);
}

#[test]
fn a_socket_folder_others_may_enter_is_never_used() {
    let env = Env::new();
    let project = Project::standard();
    env.trust(&project);
    let folder = env.runtime().join("toolgate");
    std::fs::create_dir(&folder).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o777)).unwrap();
    let alone = env.hook(&project, "claude/pre_tool_use_read_env.json", &[]);
    let run = env.hook(&project, "claude/pre_tool_use_read_env.json", &["--server"]);
    assert_eq!((run.code, &run.stdout), (alone.code, &alone.stdout));
    assert!(!run.stderr.contains(STARTING) && !run.stderr.contains(ANSWERED));
    assert!(env.sockets().is_empty());
    // Started by hand, it refuses too.
    let serve = env.command(&["hook-server"]).output().unwrap();
    assert_eq!(serve.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&serve.stderr).contains("no private folder"),
        "{}",
        String::from_utf8_lossy(&serve.stderr)
    );
}

/// A file or a link at the socket path is someone's data: the server refuses the path
/// and leaves it as it was (it was removed, and the server took its place).
#[test]
fn a_server_never_removes_a_file_at_its_socket_path() {
    let env = Env::new();
    let notes = env.runtime().join("notes.txt");
    std::fs::write(&notes, "keep me\n").unwrap();
    let link = env.runtime().join("link");
    std::os::unix::fs::symlink(&notes, &link).unwrap();
    for path in [&notes, &link] {
        let run = env
            .command(&[
                "hook-server",
                "--socket",
                &path.display().to_string(),
                "--idle-exit",
                "1s",
            ])
            .output()
            .unwrap();
        assert_eq!(run.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&run.stderr).contains("is not a socket"),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(std::fs::symlink_metadata(path).is_ok());
    }
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "keep me\n");
}

#[test]
fn a_server_takes_over_a_dead_servers_socket_and_exits_when_idle() {
    let env = Env::new();
    let socket = env.runtime().join("dead.sock");
    // A socket file nobody listens on any more.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    let mut server = env
        .command(&[
            "hook-server",
            "--socket",
            &socket.display().to_string(),
            "--idle-exit",
            "1s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It listens: a connection is accepted (and answered with nothing, as the request is
    // not one).
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(Instant::now() < deadline, "the server never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Then, with no request for its quiet period, it exits and removes its socket.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = server.kill();
            panic!("the server did not exit when idle");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    assert!(!socket.exists());
}

/// The socket path of a hook server is private to its environment: the same environment
/// gives the same path (so `hook --server` finds its server), another gives another.
#[test]
fn the_socket_name_follows_the_environment() {
    let env = Env::new();
    let project = Project::standard();
    let path_of = |env: &Env| -> Option<PathBuf> {
        let run = env.hook(&project, "claude/pre_tool_use_rm_rf.json", &["--server"]);
        run.stderr
            .lines()
            .find(|l| l.contains(STARTING) || l.contains(ANSWERED))
            .and_then(|l| l.split("socket=").nth(1))
            .map(|s| Path::new(s.split_whitespace().next().unwrap_or_default()).to_owned())
    };
    let a = path_of(&env).expect("the hook names its socket");
    let b = path_of(&env).expect("the hook names its socket");
    assert_eq!(a, b);
    assert!(a.starts_with(env.runtime().join("toolgate")));
}

#[test]
fn no_more_than_eight_servers_are_started_per_user() {
    let env = Env::new();
    let project = Project::standard();
    env.trust(&project);
    let folder = env.runtime().join("toolgate");
    std::fs::create_dir(&folder).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
    // Eight live servers of other environments (listening sockets of this test).
    let _others: Vec<std::os::unix::net::UnixListener> = (0..8)
        .map(|i| {
            std::os::unix::net::UnixListener::bind(folder.join(format!("hook-other{i}.sock")))
                .unwrap()
        })
        .collect();
    let alone = env.hook(&project, "claude/pre_tool_use_rm_rf.json", &[]);
    let run = env.hook(&project, "claude/pre_tool_use_rm_rf.json", &["--server"]);
    assert_eq!((run.code, &run.stdout), (alone.code, &alone.stdout));
    assert!(
        run.stderr.contains("8 run already, none started"),
        "{}",
        run.stderr
    );
    assert_eq!(env.sockets().len(), 8, "no ninth server");
}

#[test]
fn plan_through_the_server_is_the_plan_made_alone() {
    let env = Env::new();
    let project = Project::standard();
    env.trust(&project);
    std::fs::write(
        project.path().join("batch.yaml"),
        "calls:\n  - { id: a, tool: Bash, input: { command: npm test } }\n  - { id: b, tool: Read, input: { file_path: .env } }\n  - { id: c, tool: Bash, input: { command: \"git status && rm -rf build\" } }\n",
    )
    .unwrap();
    std::fs::write(project.path().join("broken.yaml"), "calls: [\n").unwrap();
    let _server = Foreground(
        env.command(&["hook-server", "--idle-exit", "5m"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    env.wait_for_sockets(1);
    let plan = |args: &[&str], stdin: &str| -> Run {
        let mut all = vec!["plan"];
        all.extend_from_slice(args);
        run_with_stdin(
            env.command(&all).current_dir(project.path()),
            stdin.as_bytes(),
        )
    };
    let without_log = |text: &str| -> String {
        text.lines()
            .filter(|line| !line.contains(" DEBUG ") && !line.contains(" INFO "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for args in [
        vec!["batch.yaml"],
        vec!["batch.yaml", "--format", "json"],
        vec!["broken.yaml"],
        vec!["broken.yaml", "--format", "json"],
        vec!["missing.yaml"],
    ] {
        let alone = plan(&args, "");
        let mut served_args = args.clone();
        served_args.push("--server");
        let served = plan(&served_args, "");
        assert!(
            served.stderr.contains(ANSWERED),
            "{args:?}: {}",
            served.stderr
        );
        assert_eq!(served.code, alone.code, "{args:?}");
        assert_eq!(served.stdout, alone.stdout, "{args:?}");
        assert_eq!(
            without_log(&served.stderr),
            without_log(&alone.stderr),
            "{args:?}"
        );
    }
    // A batch on standard input is planned by the process itself.
    let batch = std::fs::read_to_string(project.path().join("batch.yaml")).unwrap();
    let stdin = plan(&["-", "--server"], &batch);
    assert!(!stdin.stderr.contains(ANSWERED));
    assert_eq!(stdin.stdout, plan(&["batch.yaml"], "").stdout);
}

#[test]
fn an_argument_that_is_not_utf8_is_run_by_the_hook_itself() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let project = Project::standard();
    env.trust(&project);
    let odd = std::ffi::OsStr::from_bytes(b"/nonexistent/\xff.jsonl");
    let run = run_with_stdin(
        env.command(&["hook", "claude", "--server", "--decision-log"])
            .arg(odd),
        project.payload("claude/pre_tool_use_rm_rf.json").as_bytes(),
    );
    let stderr = &run.stderr;
    assert_eq!(run.code, 0, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        !stderr.contains(STARTING) && !stderr.contains(ANSWERED),
        "{stderr}"
    );
    assert!(run.stdout.contains("\"permissionDecision\":\"deny\""));
    assert!(env.sockets().is_empty());
}
