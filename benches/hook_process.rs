//! Issue 20's speed figure: one `toolgate hook claude` decision as a whole process, the way
//! an agent runs it for every tool call — a Claude Code `PreToolUse` payload for `Bash`
//! `git status && npm test` (a two-part line), the built-in policies, and a trusted project
//! whose `.toolgate/policies` holds one file of 50 or of 1 000 rules (a quarter each: `shell`
//! allow rules for Bash, `path` deny rules for Read/Write/Edit, `shell` ask rules, `glob`
//! allow rules on WebFetch URLs).
//!
//! Each case is timed alone (`toolgate hook claude`: the process loads the policy set) and
//! through the resident server (`toolgate hook claude --server`, with a `toolgate
//! hook-server` running: the process only passes the payload on). Every run is a fresh
//! process; the figure is the median (and minimum) of 60 runs after 5 warm-up runs, wall
//! time from spawn to exit. Both variants must give the same answer; the bench fails if
//! they do not.
//!
//! Issue 18's process figure is measured the same way: `toolgate plan` of a one-call batch
//! file (the same `Bash` call) in the 50-rule project, alone and with `--server`.
//!
//! Run with `cargo bench --bench hook_process` (it uses the release `toolgate` binary that
//! cargo builds for benches).

// Bench code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 60;
const WARMUP: usize = 5;

/// A project with `rules` rules, trusted in `config`.
fn project(root: &Path, rules: usize, env: &Env) -> (PathBuf, String) {
    let dir = root.join(format!("p{rules}"));
    std::fs::create_dir_all(dir.join(".toolgate/policies")).unwrap();
    let mut text = String::from("version: 1\nrules:\n");
    for i in 0..rules {
        let line = match i % 4 {
            0 => format!(
                "  - {{ name: sh-allow-{i}, tools: [Bash], match: {{ command: {{ shell: [\"tool{i} run *\"] }} }}, decision: allow }}\n"
            ),
            1 => format!(
                "  - {{ name: path-deny-{i}, tools: [Read, Write, Edit], match: {{ file_path: {{ path: \"secret{i}/**\" }} }}, decision: deny }}\n"
            ),
            2 => format!(
                "  - {{ name: sh-ask-{i}, tools: [Bash], match: {{ command: {{ shell: [\"deploy{i} *\"] }} }}, decision: ask }}\n"
            ),
            _ => format!(
                "  - {{ name: url-allow-{i}, tools: [WebFetch], match: {{ url: {{ glob: \"https://docs{i}.example.com/**\" }} }}, decision: allow }}\n"
            ),
        };
        text.push_str(&line);
    }
    std::fs::write(dir.join(".toolgate/policies/team.yaml"), text).unwrap();
    let status = env
        .command(&["trust", &dir.display().to_string()])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "toolgate trust failed");
    let payload = serde_json::json!({
        "session_id": "bench",
        "transcript_path": "/tmp/bench.jsonl",
        "cwd": dir,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "git status && npm test"},
        "tool_use_id": "toolu_bench"
    });
    (dir, payload.to_string())
}

/// The environment every process of the bench gets (the hook and its server must agree).
struct Env {
    root: PathBuf,
}

impl Env {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command
            .args(args)
            .current_dir(&self.root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("XDG_RUNTIME_DIR", self.root.join("run"))
            .env("TOOLGATE_CONFIG_DIR", self.root.join("config"));
        command
    }

    /// One hook process: its wall time and its answer.
    fn hook(&self, payload: &str, server: bool) -> (Duration, String) {
        let mut args = vec!["hook", "claude"];
        if server {
            args.push("--server");
        }
        self.time(&args, None, payload)
    }

    /// One `toolgate plan BATCH` process in `dir`: its wall time and its output.
    fn plan(&self, dir: &Path, batch: &str, server: bool) -> (Duration, String) {
        let mut args = vec!["plan", batch];
        if server {
            args.push("--server");
        }
        self.time(&args, Some(dir), "")
    }

    fn time(&self, args: &[&str], dir: Option<&Path>, stdin: &str) -> (Duration, String) {
        let mut command = self.command(args);
        if let Some(dir) = dir {
            command.current_dir(dir);
        }
        let started = Instant::now();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        let took = started.elapsed();
        assert!(
            output.status.success(),
            "`toolgate {}` failed",
            args.join(" ")
        );
        (took, String::from_utf8(output.stdout).unwrap())
    }
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn measure(run: impl Fn() -> (Duration, String)) -> (Duration, Duration, String) {
    let mut answer = String::new();
    for _ in 0..WARMUP {
        answer = run().1;
    }
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let (took, got) = run();
            assert_eq!(got, answer, "answers differ between runs");
            took
        })
        .collect();
    times.sort();
    (times[RUNS / 2], times[0], answer)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env {
        root: dir.path().to_owned(),
    };
    for sub in ["home", "run", "config"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    let _server = Server(
        env.command(&["hook-server", "--idle-exit", "10m"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Wait for the server's socket.
    let sockets = dir.path().join("run/toolgate");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_dir(&sockets).map_or(0, |d| d.count()) == 0 {
        assert!(Instant::now() < deadline, "the hook server never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    println!(
        "toolgate hook claude, one PreToolUse (Bash `git status && npm test`), whole process:"
    );
    println!("| project layer | alone: median (min) | --server: median (min) | target |");
    println!("|---|---|---|---|");
    let mut plan_dir = None;
    for (rules, target) in [(50, "≤ 10 ms"), (1000, "≤ 20 ms")] {
        let (project_dir, payload) = project(dir.path(), rules, &env);
        if rules == 50 {
            plan_dir = Some(project_dir);
        }
        let (alone, alone_min, alone_answer) = measure(|| env.hook(&payload, false));
        let (served, served_min, served_answer) = measure(|| env.hook(&payload, true));
        assert_eq!(alone_answer, served_answer, "the server answered otherwise");
        println!(
            "| {rules} rules | {} ({}) | {} ({}) | {target} |",
            ms(alone),
            ms(alone_min),
            ms(served),
            ms(served_min)
        );
    }
    let plan_dir = plan_dir.expect("the 50-rule project");
    std::fs::write(
        plan_dir.join("one.yaml"),
        "calls:\n  - { id: a, tool: Bash, input: { command: \"git status && npm test\" } }\n",
    )
    .unwrap();
    let (alone, alone_min, alone_plan) = measure(|| env.plan(&plan_dir, "one.yaml", false));
    let (served, served_min, served_plan) = measure(|| env.plan(&plan_dir, "one.yaml", true));
    assert_eq!(alone_plan, served_plan, "the server planned otherwise");
    println!(
        "toolgate plan of one call (50-rule project), whole process: alone {} ({}), --server {} ({}); target ≤ 10 ms",
        ms(alone),
        ms(alone_min),
        ms(served),
        ms(served_min)
    );
    // The same binary with nothing to decide, for scale.
    let mut version: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            let status = env
                .command(&["--version"])
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
            started.elapsed()
        })
        .collect();
    version.sort();
    println!(
        "toolgate --version: median {} (min {})",
        ms(version[RUNS / 2]),
        ms(version[0])
    );
}
