//! The `command` handler against real subprocesses (`/bin/sh` and coreutils only).
//!
//! No test asserts on elapsed time; real time is only spent where a process must run
//! (`kill_grace` of 100 ms, polling `/proc` until a killed process is gone).

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::handler::command::run_command;
use crate::handler::{CommandRunner, CommandSpec, StdinMode};
use crate::{
    CallContext, HandlerError, HandlerOutput, ProgressChunk, ProgressSink, ProgressStream,
};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

/// Guards against a hang (the failure mode of a leaked pipe): not a timing assertion.
const HANG_GUARD: Duration = Duration::from_secs(60);

fn spec(argv: &[&str]) -> CommandSpec {
    CommandSpec {
        kill_grace: Duration::from_millis(100),
        ..CommandSpec::new(argv.iter().copied())
    }
}

fn sh(script: &str) -> CommandSpec {
    spec(&["sh", "-c", script])
}

fn ctx() -> CallContext {
    CallContext::new("call-1", "Cmd")
}

fn ctx_with_progress() -> (CallContext, UnboundedReceiver<ProgressChunk>) {
    let (sink, receiver) = ProgressSink::channel();
    let mut ctx = ctx();
    ctx.progress = sink;
    (ctx, receiver)
}

async fn run(spec: &CommandSpec, input: Value) -> Result<HandlerOutput, HandlerError> {
    let ctx = ctx();
    tokio::time::timeout(HANG_GUARD, run_command(spec, &input, &ctx))
        .await
        .expect("the command handler hung")
}

fn text(output: Result<HandlerOutput, HandlerError>) -> String {
    match output {
        Ok(output) => output.as_text().expect("text output").to_owned(),
        Err(err) => panic!("expected success, got {err:?}"),
    }
}

/// Whether a process exists and is not a zombie (a killed grandchild may stay a zombie
/// until init reaps it; it no longer runs).
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

/// Polls until `pid` is gone; false if it is still running after the hang guard.
async fn gone(pid: i32) -> bool {
    let polls = HANG_GUARD.as_millis() / 20;
    for _ in 0..polls {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

fn pids(text: &str) -> Vec<i32> {
    text.split_whitespace()
        .map(|pid| pid.parse().expect("a pid"))
        .collect()
}

/// Receives stdout chunks until `wanted` lines have arrived; returns their text.
async fn stdout_lines(progress: &mut UnboundedReceiver<ProgressChunk>, wanted: usize) -> String {
    let mut text = String::new();
    while text.matches('\n').count() < wanted {
        let chunk = progress
            .recv()
            .await
            .expect("progress until the lines arrive");
        if chunk.stream == ProgressStream::Stdout {
            text.push_str(&chunk.text);
        }
    }
    text
}

#[tokio::test]
async fn a_templated_value_stays_one_argument() {
    let spec = spec(&[
        "sh",
        "-c",
        r#"printf '[%s]\n' "$@""#,
        "sh",
        "{{input.path}}",
        "--n={{input.n}}",
        "{{input.opt?}}",
        "{{input.obj}}",
    ]);
    let input = json!({
        "path": "a b; rm -rf / $(echo x) `id` 'q' \"dq\"\nline2",
        "n": 5,
        "obj": {"k": [1, "two"]},
    });
    let out = text(run(&spec, input).await);
    assert_eq!(
        out,
        "[a b; rm -rf / $(echo x) `id` 'q' \"dq\"\nline2]\n[--n=5]\n[{\"k\":[1,\"two\"]}]\n"
    );
}

#[tokio::test]
async fn a_missing_field_is_a_business_error_naming_it() {
    let err = run(&spec(&["echo", "{{input.path}}"]), json!({"other": 1}))
        .await
        .unwrap_err();
    match err {
        HandlerError::Business { message, code } => {
            assert_eq!(
                message,
                "missing value for `{{input.path}}`: the input has nothing at `/path`"
            );
            assert_eq!(code.as_deref(), Some("template"));
        }
        other => panic!("expected a business failure, got {other:?}"),
    }
}

#[tokio::test]
async fn stdin_json_passes_the_whole_input() {
    let spec = CommandSpec {
        stdin: StdinMode::Json,
        ..spec(&["cat"])
    };
    let input = json!({"b": [1, 2], "a": "é"});
    assert_eq!(text(run(&spec, input).await), "{\"b\":[1,2],\"a\":\"é\"}\n");
}

#[tokio::test]
async fn stdin_is_empty_without_stdin_json() {
    assert_eq!(text(run(&spec(&["cat"]), json!({"a": 1})).await), "");
}

#[tokio::test]
async fn only_allowed_variables_reach_the_command() {
    let spec = CommandSpec {
        env_allow: vec!["HOME".into(), "TOOLGATE_NOT_SET_ANYWHERE".into()],
        env_set: [("TOOLGATE_SET".to_owned(), "x y".to_owned())]
            .into_iter()
            .collect(),
        ..spec(&["env"])
    };
    let out = text(run(&spec, json!({})).await);
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    let home = std::env::var("HOME")
        .ok()
        .map(|home| format!("HOME={home}"));
    let mut expected: Vec<&str> = home.iter().map(String::as_str).collect();
    expected.push("TOOLGATE_SET=x y");
    expected.sort_unstable();
    assert_eq!(lines, expected, "PATH and everything else must be cleared");
}

#[tokio::test]
async fn runs_in_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let spec = CommandSpec {
        cwd: Some(dir.path().to_owned()),
        ..spec(&["pwd", "-P"])
    };
    let out = text(run(&spec, json!({})).await);
    let expected = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(PathBuf::from(out.trim_end()), expected);
}

#[tokio::test]
async fn exit_zero_with_empty_stderr_is_stdout_unchanged() {
    let out = text(run(&sh("printf 'a\\n\\nb  '"), json!({})).await);
    assert_eq!(out, "a\n\nb  ");
}

#[tokio::test]
async fn stderr_on_success_is_appended_after_a_separator() {
    let out = text(run(&sh("echo out; echo warn >&2"), json!({})).await);
    assert_eq!(out, "out\n--- stderr ---\nwarn\n");
}

#[tokio::test]
async fn a_failing_exit_code_is_a_business_failure_with_stderr() {
    let err = run(&sh("echo out; echo 'it broke' >&2; exit 3"), json!({}))
        .await
        .unwrap_err();
    match err {
        HandlerError::Business { message, code } => {
            assert_eq!(message, "exit code 3\nit broke");
            assert_eq!(code.as_deref(), Some("exit:3"));
        }
        other => panic!("expected a business failure, got {other:?}"),
    }
}

#[tokio::test]
async fn a_failure_without_stderr_reports_stdout() {
    let err = run(&sh("echo 'only stdout'; exit 1"), json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "exit code 1\nonly stdout");
}

#[tokio::test]
async fn success_codes_are_configurable() {
    let spec = CommandSpec {
        success_codes: vec![0, 1],
        ..sh("echo no match; exit 1")
    };
    assert_eq!(text(run(&spec, json!({})).await), "no match\n");
    let err = run(
        &CommandSpec {
            success_codes: vec![1],
            ..sh("exit 0")
        },
        json!({}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.to_string(), "exit code 0");
}

#[tokio::test]
async fn invalid_utf8_is_replaced() {
    let out = text(run(&sh(r"printf '\377abc'"), json!({})).await);
    assert_eq!(out, "\u{fffd}abc");
}

#[tokio::test]
async fn progress_chunks_arrive_in_order_and_whole() {
    // ~120 KiB of multi-byte text: several reads, each ending anywhere in a character.
    let script =
        r#"i=0; while [ $i -lt 3000 ]; do echo "$i é€😀 line"; i=$((i+1)); done; echo done >&2"#;
    let (ctx, mut progress) = ctx_with_progress();
    let out = run_command(&sh(script), &json!({}), &ctx).await.unwrap();
    drop(ctx);
    let mut stdout = String::new();
    let mut stderr = String::new();
    let mut stdout_chunks = 0;
    while let Some(chunk) = progress.recv().await {
        match chunk.stream {
            ProgressStream::Stdout => {
                stdout_chunks += 1;
                stdout.push_str(&chunk.text);
            }
            ProgressStream::Stderr => stderr.push_str(&chunk.text),
            ProgressStream::Message => panic!("no messages expected"),
        }
    }
    let expected: String = (0..3000).map(|i| format!("{i} é€😀 line\n")).collect();
    assert!(stdout_chunks > 1, "output should stream in several chunks");
    assert!(!stdout.contains('\u{fffd}'), "a character was split");
    assert_eq!(stdout, expected);
    assert_eq!(stderr, "done\n");
    assert_eq!(
        out.as_text(),
        Some(format!("{expected}--- stderr ---\ndone\n").as_str())
    );
}

#[tokio::test]
async fn cancellation_kills_a_group_that_ignores_sigterm() {
    let spec = sh("trap '' TERM; sleep 100 & echo $$ $!; wait");
    let (ctx, mut progress) = ctx_with_progress();
    let cancel = ctx.cancel.clone();
    let input = json!({});
    let (result, started) = tokio::join!(
        tokio::time::timeout(HANG_GUARD, run_command(&spec, &input, &ctx)),
        async {
            let line = stdout_lines(&mut progress, 1).await;
            cancel.cancel();
            line
        }
    );
    let result = result.expect("cancellation must not hang");
    assert!(matches!(result, Err(HandlerError::Cancelled)), "{result:?}");
    for pid in pids(&started) {
        assert!(gone(pid).await, "process {pid} survived cancellation");
    }
}

#[tokio::test]
async fn cancellation_sends_sigterm_first() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("term");
    let spec = spec(&[
        "sh",
        "-c",
        r#"trap 'echo got-term > "$1"; exit 0' TERM; echo ready; sleep 100 & wait"#,
        "sh",
        marker.to_str().unwrap(),
    ]);
    let spec = CommandSpec {
        kill_grace: Duration::from_secs(30),
        ..spec
    };
    let (ctx, mut progress) = ctx_with_progress();
    let cancel = ctx.cancel.clone();
    let input = json!({});
    let (result, ()) = tokio::join!(
        tokio::time::timeout(HANG_GUARD, run_command(&spec, &input, &ctx)),
        async {
            stdout_lines(&mut progress, 1).await;
            cancel.cancel();
        }
    );
    assert!(
        matches!(result, Ok(Err(HandlerError::Cancelled))),
        "{result:?}"
    );
    assert_eq!(read(&marker), "got-term\n");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[tokio::test]
async fn a_background_grandchild_neither_hangs_the_call_nor_survives_it() {
    let out = text(run(&sh("sleep 100 & echo $!"), json!({})).await);
    let pid = pids(&out)[0];
    assert!(gone(pid).await, "grandchild {pid} survived the call");
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let spec = sh("sleep 100 & echo $$ $!; wait");
    let (ctx, mut progress) = ctx_with_progress();
    let input = json!({});
    let call = run_command(&spec, &input, &ctx);
    let started = tokio::select! {
        result = call => panic!("the command ended early: {result:?}"),
        line = stdout_lines(&mut progress, 1) => line,
    };
    for pid in pids(&started) {
        assert!(gone(pid).await, "process {pid} survived the dropped call");
    }
}

#[tokio::test]
async fn output_over_the_cap_is_killed_and_reported() {
    let spec = CommandSpec {
        max_output_bytes: 64 * 1024,
        ..spec(&["yes", "flood"])
    };
    let err = run(&spec, json!({})).await.unwrap_err();
    assert!(
        matches!(err, HandlerError::OutputTooLarge { limit: 65536 }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "output exceeded the limit of 65536 bytes");
}

#[tokio::test]
async fn output_on_both_streams_counts_against_one_cap() {
    let spec = CommandSpec {
        max_output_bytes: 10,
        ..sh("printf 123456; printf 123456 >&2")
    };
    let err = run(&spec, json!({})).await.unwrap_err();
    assert!(
        matches!(err, HandlerError::OutputTooLarge { .. }),
        "{err:?}"
    );
    let spec = CommandSpec {
        max_output_bytes: 12,
        ..spec
    };
    assert!(run(&spec, json!({})).await.is_ok());
}

#[tokio::test]
async fn a_missing_binary_is_a_spawn_error() {
    let err = run(&spec(&["toolgate-no-such-command"]), json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, HandlerError::Spawn { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "cannot start `toolgate-no-such-command`: command not found (is it installed, and is `PATH` in `env_allow`?)"
    );
    let err = run(&spec(&["/nonexistent/toolgate"]), json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot start `/nonexistent/toolgate`: no such file"
    );
}

#[tokio::test]
async fn a_bad_working_directory_is_a_spawn_error() {
    let spec = CommandSpec {
        cwd: Some(PathBuf::from("/nonexistent/toolgate-dir")),
        ..spec(&["pwd"])
    };
    let err = run(&spec, json!({})).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot start `pwd`: working directory `/nonexistent/toolgate-dir` is not accessible"
    );
}

#[tokio::test]
async fn death_by_signal_names_the_signal() {
    let err = run(&sh("kill -9 $$"), json!({})).await.unwrap_err();
    assert!(
        matches!(err, HandlerError::Signaled { number: 9, ref name } if name == "SIGKILL"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "killed by signal SIGKILL (9)");
}

#[tokio::test]
async fn a_call_cancelled_before_it_starts_spawns_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let spec = spec(&["touch", marker.to_str().unwrap()]);
    let ctx = ctx();
    ctx.cancel.cancel();
    let err = run_command(&spec, &json!({}), &ctx).await.unwrap_err();
    assert!(matches!(err, HandlerError::Cancelled));
    assert!(!marker.exists());
}

#[tokio::test]
async fn the_prepared_handler_runs_like_run_command() {
    let handler = CommandRunner::new(spec(&["echo", "{{input.word}}"])).unwrap();
    let out = handler.call(&json!({"word": "hi"}), &ctx()).await.unwrap();
    assert_eq!(out.as_text(), Some("hi\n"));
    let err = CommandRunner::new(spec(&["echo", "{{input.word"])).unwrap_err();
    assert_eq!(err.index, 1);
}

#[tokio::test]
async fn a_command_that_ignores_a_large_stdin_does_not_hang() {
    let spec = CommandSpec {
        stdin: StdinMode::Json,
        ..spec(&["true"])
    };
    let input = json!({ "blob": "x".repeat(1024 * 1024) });
    assert_eq!(text(run(&spec, input).await), "");
}

#[tokio::test]
async fn an_invalid_variable_name_is_a_spawn_error() {
    let spec = CommandSpec {
        env_set: [("A=B".to_owned(), "x".to_owned())].into_iter().collect(),
        ..spec(&["env"])
    };
    let err = run(&spec, json!({})).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot start `env`: `A=B` is not a valid environment variable name"
    );
}
