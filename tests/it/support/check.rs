//! Shared helpers of the `cli::check`, `cli::check_diagnostics`, `cli::explain_provenance`,
//! `load::layers_override` and `load::policies_equivalence` tests: run the real `toolgate` binary, capture exit code, stdout and stderr as one stable
//! transcript, and look up the source text a reported `file:line:column` points at.

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The repository root: tests run the binary from here, so fixture paths in the output are
/// relative and stable.
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One run of the binary.
#[derive(Debug)]
pub struct Run {
    /// The exit code (`-1` when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// A finished process's exit code and output (`-1` when killed by a signal).
    pub fn of(output: &Output) -> Self {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Exit code, stdout and stderr together, with machine-specific paths replaced.
    pub fn transcript(&self) -> String {
        format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            self.code,
            normalise(&self.stdout),
            normalise(&self.stderr)
        )
    }

    /// Stdout parsed as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("stdout is not JSON ({err}):\n{}", self.stdout))
    }

    /// The `diagnostics` of a `check --format json` run.
    pub fn diagnostics(&self) -> Vec<Value> {
        self.json()["diagnostics"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("no `diagnostics` list:\n{}", self.stdout))
    }
}

/// `file:line:column` of a JSON object that has them (a diagnostic, an explained field).
pub fn place(located: &Value) -> String {
    format!(
        "{}:{}:{}",
        located["file"].as_str().unwrap_or("(no file)"),
        located["line"],
        located["column"]
    )
}

/// Replaces the repository root (it appears in absolute paths such as normalised workspace
/// paths) with `[ROOT]`.
pub fn normalise(text: &str) -> String {
    text.replace(ROOT, "[ROOT]")
}

/// Runs `toolgate ARGS` from the repository root.
pub fn toolgate(args: &[&str]) -> Run {
    toolgate_in(Path::new(ROOT), args)
}

/// A configuration folder that does not exist: no user layer, no trusted project, whatever
/// the machine's own `~/.config/toolgate` holds.
pub const NO_CONFIG: &str = "/nonexistent/toolgate-config";

/// Runs `toolgate ARGS` from `dir`, without colours, with a fixed terminal width and no
/// user configuration ([`NO_CONFIG`]).
pub fn toolgate_in(dir: &Path, args: &[&str]) -> Run {
    toolgate_with_config(dir, Path::new(NO_CONFIG), args)
}

/// Like [`toolgate_in`], with `config` as the user's configuration folder (trust store and
/// user policies).
pub fn toolgate_with_config(dir: &Path, config: &Path, args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env("TOOLGATE_CONFIG_DIR", config)
        .env_remove("RUST_LOG")
        .output()
        .expect("the toolgate binary runs");
    Run::of(&output)
}

/// Runs `command` with `stdin` written to its standard input, its output collected.
pub fn run_with_stdin(command: &mut Command, stdin: &[u8]) -> Run {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the toolgate binary runs");
    // A command that refuses its input early may close stdin before it is all written.
    let _ = child.stdin.take().expect("piped stdin").write_all(stdin);
    Run::of(&child.wait_with_output().expect("the toolgate binary runs"))
}

/// The file a reported path names: `builtin:policies/x.yaml` is the shipped file, anything
/// else is relative to `base`.
pub fn resolve(base: &Path, file: &str) -> PathBuf {
    match file.strip_prefix("builtin:") {
        Some(shipped) => Path::new(ROOT).join(shipped),
        None => base.join(file),
    }
}

/// Splits `file:line:column` (the file may itself contain `:`, as in `builtin:…`).
pub fn split_location(location: &str) -> (String, u32, u32) {
    let mut parts = location.rsplitn(3, ':');
    let column = parts.next().and_then(|c| c.parse().ok());
    let line = parts.next().and_then(|l| l.parse().ok());
    let file = parts.next();
    match (file, line, column) {
        (Some(file), Some(line), Some(column)) => (file.to_owned(), line, column),
        _ => panic!("`{location}` is not file:line:column"),
    }
}

/// The rest of the line at a 1-based line and 1-based column (in characters).
pub fn text_at(base: &Path, file: &str, line: u32, column: u32) -> String {
    let path = resolve(base, file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    let lines: Vec<&str> = text.lines().collect();
    // A position at the end of the file (an unexpected end) is on the line after the last.
    if line as usize == lines.len() + 1 && text.ends_with('\n') {
        return String::new();
    }
    let Some(source_line) = lines.get(line as usize - 1) else {
        panic!("{file} has no line {line}");
    };
    source_line.chars().skip(column as usize - 1).collect()
}

/// Asserts that the source at `file:line:column` starts with `expected`.
pub fn assert_points_at(base: &Path, location: &str, expected: &str) {
    let (file, line, column) = split_location(location);
    let found = text_at(base, &file, line, column);
    assert!(
        found.starts_with(expected),
        "{location} should point at `{expected}`, but the source there is `{found}`"
    );
}
