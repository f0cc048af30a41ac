//! `toolgate plan` and `toolgate run` as a user runs them: the real binary, from the executor
//! fixture folder (so every path in the output is relative), with exit code, stdout and
//! stderr snapshotted together. Events and timings that change from run to run (batch ids,
//! timestamps, elapsed milliseconds) are redacted.

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs `toolgate --no-builtin --color never <args>` in the fixture folder.
fn toolgate(args: &[&str]) -> (i32, String, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/executor");
    let home = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(&dir)
        // Artifacts (if any) go to a throw-away home, never the user's.
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .args(["--no-builtin", "--color", "never"])
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn report(code: i32, stdout: &str, stderr: &str) -> String {
    format!("exit: {code}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}")
}

/// Replaces the values that differ between runs.
fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                match key.as_str() {
                    "batch_id" => *item = Value::from("[batch]"),
                    "timestamp" => *item = Value::from("[time]"),
                    "total_ms" | "wait_ms" => *item = Value::from("[ms]"),
                    _ => redact(item),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// Every jsonl line parsed, redacted and printed again.
fn normalise_jsonl(stdout: &str) -> String {
    stdout
        .lines()
        .map(|line| {
            let mut value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
            redact(&mut value);
            serde_json::to_string(&value).unwrap()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The live view with its batch id and elapsed times replaced.
fn normalise_human(stdout: &str) -> String {
    let id = regex::Regex::new(r"batch b[0-9a-f]+").unwrap();
    let elapsed = regex::Regex::new(r"(ok|error|denied|timed_out|cancelled) \d+ms").unwrap();
    let text = id.replace_all(stdout, "batch [batch]");
    elapsed.replace_all(&text, "$1 [t]ms").into_owned()
}

#[test]
fn plan_human() {
    let (code, stdout, stderr) = toolgate(&["-p", "base", "plan", "batches/plan.yaml"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(report(code, &stdout, &stderr));
}

#[test]
fn plan_json() {
    let (code, stdout, stderr) = toolgate(&[
        "-p",
        "base",
        "plan",
        "batches/plan.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let plan: Value = serde_json::from_str(&stdout).unwrap();
    // The SPEC §13 shape.
    assert!(plan["groups"].is_array());
    for call in plan["calls"].as_array().unwrap() {
        for key in ["id", "tool", "decision", "timeout_ms"] {
            assert!(call.get(key).is_some(), "{key} missing in {call}");
        }
    }
    insta::assert_snapshot!(report(code, &stdout, &stderr));
}

#[test]
fn run_jsonl_events_and_batch_finalized() {
    let (code, stdout, stderr) = toolgate(&[
        "-p",
        "base",
        "-p",
        "overlays/cli.yaml",
        "run",
        "batches/run.yaml",
        "--format",
        "jsonl",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "BatchFinalized");
    let results = last["results"].as_array().unwrap();
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "hello", "fails", "slow", "unknown", "denied", "asked", "native"
        ]
    );
    for result in results {
        for key in ["call_id", "tool", "status", "model_content", "metadata"] {
            assert!(result.get(key).is_some(), "{key} missing in {result}");
        }
        for key in [
            "truncated",
            "original_size",
            "final_size",
            "queued_ms",
            "permission_wait_ms",
            "total_ms",
        ] {
            assert!(result["metadata"].get(key).is_some(), "metadata.{key}");
        }
    }
    insta::assert_snapshot!(report(code, &normalise_jsonl(&stdout), &stderr));
}

#[test]
fn run_human_live_view_and_summary() {
    let (code, stdout, stderr) = toolgate(&[
        "-p",
        "base",
        "-p",
        "overlays/cli.yaml",
        "run",
        "batches/run.yaml",
    ]);
    assert_eq!(code, 0, "{stderr}");
    insta::assert_snapshot!(report(code, &normalise_human(&stdout), &stderr));
}

#[test]
fn fail_on_error_exits_1_only_when_a_call_failed() {
    let failing = toolgate(&["-p", "base", "run", "batches/run.yaml", "--fail-on-error"]);
    assert_eq!(failing.0, 1);
    let passing = toolgate(&["-p", "base", "run", "batches/ok.yaml", "--fail-on-error"]);
    assert_eq!(passing.0, 0, "{}", passing.2);
    let without = toolgate(&["-p", "base", "run", "batches/run.yaml"]);
    assert_eq!(without.0, 0);
}

#[test]
fn invalid_batch_files_exit_2_with_positioned_diagnostics() {
    for name in ["duplicate_ids", "no_calls", "unknown_mode", "syntax"] {
        let path = format!("bad/batches/{name}.yaml");
        for command in ["run", "plan"] {
            let (code, stdout, stderr) = toolgate(&["-p", "base", command, &path]);
            assert_eq!(code, 2, "{command} {name}: {stderr}");
            assert!(stdout.is_empty(), "{command} {name}: {stdout}");
            assert!(
                stderr.contains(&format!("[{path}:")),
                "{command} {name}: the diagnostic points into the file: {stderr}"
            );
            if command == "run" {
                insta::assert_snapshot!(
                    format!("invalid_batch_{name}"),
                    report(code, &stdout, &stderr)
                );
            }
        }
    }
    // The JSON rendering carries the position too.
    let (code, stdout, _) = toolgate(&[
        "-p",
        "base",
        "plan",
        "bad/batches/duplicate_ids.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(code, 2);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let diagnostic = &report["diagnostics"][0];
    assert_eq!(diagnostic["code"], "toolgate::batch::duplicate_call_id");
    assert_eq!(diagnostic["file"], "bad/batches/duplicate_ids.yaml");
    assert_eq!(
        (diagnostic["line"].as_u64(), diagnostic["column"].as_u64()),
        (Some(4), Some(11))
    );
}

#[test]
fn a_missing_batch_file_exits_2() {
    let (code, _, stderr) = toolgate(&["-p", "base", "run", "no-such-batch.yaml"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("cannot read batch file `no-such-batch.yaml`"),
        "{stderr}"
    );
}

#[test]
fn invalid_policies_exit_1() {
    for command in ["plan", "run"] {
        let (code, stdout, stderr) = toolgate(&[
            "-p",
            "base",
            "-p",
            "bad/policies",
            command,
            "batches/ok.yaml",
        ]);
        assert_eq!(code, 1, "{command}: {stderr}");
        assert!(stdout.is_empty());
        insta::assert_snapshot!(
            format!("invalid_policies_{command}"),
            report(code, &stdout, &stderr)
        );
    }
}

/// Runs `toolgate --no-builtin <args>` in the fixture folder with `stdin` written to it by a
/// thread; returns the exit code, stderr and how many bytes of `stdin` were taken.
fn toolgate_with_stdin(args: &[&str], stdin: impl Iterator<Item = Vec<u8>>) -> (i32, String, u64) {
    use std::io::Write;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/executor");
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(&dir)
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .args(["--no-builtin", "--color", "never"])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let chunks: Vec<Vec<u8>> = stdin.collect();
    let writer = std::thread::spawn(move || {
        let mut written = 0u64;
        for chunk in chunks {
            if pipe.write_all(&chunk).is_err() {
                break;
            }
            written += chunk.len() as u64;
        }
        written
    });
    let output = child.wait_with_output().unwrap();
    let written = writer.join().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stderr).unwrap(),
        written,
    )
}

#[test]
fn an_endless_batch_on_stdin_is_refused_after_the_limit() {
    // 256 MiB of zeros, far past the 8 MiB limit: the reader must stop after the limit
    // instead of taking (and holding) everything.
    let chunks = (0..256).map(|_| vec![0u8; 1024 * 1024]);
    let (code, stderr, written) =
        toolgate_with_stdin(&["-p", "base", "plan", "/dev/stdin"], chunks);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("larger than 8 MiB"), "{stderr}");
    assert!(
        written < 64 * 1024 * 1024,
        "the batch reader took {written} bytes of an over-large input"
    );
}

#[test]
fn json_batches_take_json_escapes_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    // What `json.dumps` writes for an emoji: a surrogate pair, which is not a YAML escape.
    let text = r#"{"calls": [{"id": "smile", "tool": "Shell", "input": {"command": "echo \ud83d\ude00"}}]}"#;
    let path = dir.path().join("batch.json");
    std::fs::write(&path, text).unwrap();
    let (code, stdout, stderr) = toolgate(&["-p", "base", "plan", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("smile"), "{stdout}");
    // The same batch on standard input, as `-`.
    let (code, stderr, _) = toolgate_with_stdin(
        &["-p", "base", "plan", "-"],
        std::iter::once(text.as_bytes().to_vec()),
    );
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn json_batch_errors_are_positioned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.json");
    std::fs::write(
        &path,
        "{\"calls\": [\n  {\"id\": \"a\", \"tool\": \"Shell\", \"input\": {\"command\": \"true\"}},\n  {\"id\": \"a\", \"tool\": \"Shell\", \"input\": {\"command\": \"true\"}}\n]}\n",
    )
    .unwrap();
    let shown = path.to_str().unwrap();
    let (code, _, stderr) = toolgate(&["-p", "base", "plan", shown]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("[{shown}:3:")),
        "the duplicate id is located: {stderr}"
    );
    std::fs::write(&path, "{\"calls\": [\n  {\"id\": }\n]}\n").unwrap();
    let (code, _, stderr) = toolgate(&["-p", "base", "plan", shown]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not valid JSON"), "{stderr}");
    assert!(stderr.contains(&format!("[{shown}:2:")), "{stderr}");
}

#[test]
fn the_run_summary_names_the_canonical_tool_with_the_alias() {
    let (code, stdout, stderr) = toolgate(&["-p", "base", "run", "batches/alias.yaml"]);
    assert_eq!(code, 0, "{stderr}");
    let summary = stdout
        .lines()
        .find(|line| line.trim_start().starts_with("by-alias"))
        .unwrap_or_else(|| panic!("no summary line:\n{stdout}"));
    assert!(summary.contains("Read (read)"), "{summary}");
    assert!(
        stdout.contains("1 call in 1 group"),
        "plurals follow the count:\n{stdout}"
    );
}

#[test]
fn a_decision_log_that_cannot_be_written_is_reported_and_the_batch_goes_on() {
    let scratch = tempfile::tempdir().unwrap();
    // A path under a file: no folder can be made there.
    std::fs::write(scratch.path().join("file"), "").unwrap();
    let log = scratch.path().join("file/decisions.jsonl");
    let settings = scratch.path().join("log.yaml");
    std::fs::write(
        &settings,
        format!(
            "version: 1\nengine:\n  decision_log:\n    path: {}\n",
            log.display()
        ),
    )
    .unwrap();
    let (code, stdout, stderr) = toolgate(&[
        "-p",
        "base",
        "-p",
        "overlays/cli.yaml",
        "-p",
        settings.to_str().unwrap(),
        "run",
        "batches/ok.yaml",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let shown = normalise_human(&stdout).replace(&scratch.path().display().to_string(), "[TMP]");
    assert!(
        shown.contains("! cannot write the decision log `[TMP]/file/decisions.jsonl`"),
        "{shown}"
    );
    insta::assert_snapshot!(report(code, &shown, &stderr));
}

/// A report that cannot be written (a full disk: `/dev/full`; a reader gone away) cancels
/// the batch and fails the run with exit 2: the rest of the batch went on running its side
/// effects, reported to nobody, and the run exited 0.
#[test]
fn a_report_that_cannot_be_written_cancels_the_batch() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: this system has no /dev/full");
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("ran");
    let batch = scratch.path().join("batch.yaml");
    std::fs::write(
        &batch,
        format!(
            "calls:\n  - {{ id: a, tool: Shell, input: {{ command: \"echo a\" }} }}\n  - {{ id: b, tool: Shell, input: {{ command: \"sleep 3; echo b > {}\" }} }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/executor");
    let home = tempfile::tempdir().unwrap();
    for format in ["jsonl", "human"] {
        let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .current_dir(&dir)
            .env("HOME", home.path())
            .args(["--no-builtin", "--color", "never", "-p", "base", "run"])
            .arg(&batch)
            .args(["--format", format])
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{format}: {stderr}");
        assert!(
            stderr.contains("could not be written"),
            "{format}: {stderr}"
        );
        assert!(
            !marker.exists(),
            "{format}: the batch went on after its report was lost"
        );
    }
}

/// What a call names (its tool, its id, an input key an error quotes) reaches a terminal
/// with its control characters escaped: an ESC sequence hid text, moved the cursor or wrote
/// the clipboard, and a newline in a tool name printed a whole fake approval prompt.
#[test]
fn control_characters_a_call_names_are_escaped_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"{"calls": [
        {"id": "a\u001b[8m", "tool": "No\u001b[8mpe\napproval needed: Shell", "input": {}},
        {"id": "b\r", "tool": "Shell", "input": {"command": "echo hi", "bogus\u001b[31m": 1}}
    ]}"#;
    let path = dir.path().join("batch.json");
    std::fs::write(&path, text).unwrap();
    for command in ["plan", "run"] {
        let (_, stdout, stderr) = toolgate(&["-p", "base", command, path.to_str().unwrap()]);
        for (stream, output) in [("stdout", &stdout), ("stderr", &stderr)] {
            assert!(
                !output.contains(['\u{1b}', '\r']),
                "{command} {stream}: {output:?}"
            );
        }
        assert!(stdout.contains("\\u001b[8m"), "{command}: {stdout}");
        assert!(
            !stdout.lines().any(|l| l.starts_with("approval needed")),
            "{command}: {stdout}"
        );
    }
}
