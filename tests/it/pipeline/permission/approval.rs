//! `toolgate run --approve prompt` end to end (issue 5 item 6): the terminal approver shows
//! the exact input and the rules that asked, and reads `y`, `n reason`, `f feedback` from
//! stdin; unreadable answers are asked again, and end of input denies. Runs the real binary
//! on `tests/fixtures/permission/approval/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

const DIR: &str = "tests/fixtures/permission/approval";

fn run_with_answers(answers: &str) -> (i32, String, Value) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--color", "never", "--no-builtin", "-p"])
        .arg(format!("{DIR}/policies.yaml"))
        .arg("run")
        .arg(format!("{DIR}/batch.yaml"))
        .args(["--approve", "prompt", "--format", "jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answers.as_bytes())
        .unwrap();
    // stdin is closed here: what is not answered by then meets end of input.
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let last = stdout.lines().last().unwrap();
    let finalized: Value = serde_json::from_str(last).unwrap();
    assert_eq!(finalized["type"], "BatchFinalized");
    let results: Vec<Value> = finalized["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            serde_json::json!({
                "call_id": r["call_id"],
                "status": r["status"],
                "model_content": r["model_content"],
                // Who answered the ask: the permission's last reason.
                "answered": r["permission"]["reasons"].as_array().and_then(|r| r.last()),
            })
        })
        .collect();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stderr).unwrap(),
        Value::Array(results),
    )
}

#[test]
fn answers_typed_on_the_terminal() {
    let (code, prompts, results) = run_with_answers("y\nn not now\nf use the staging db\nmaybe\n");
    assert_eq!(code, 0);
    let statuses: Vec<&str> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "denied", "denied", "denied"]);
    let answered: Vec<(&str, &str)> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["answered"]["by"].as_str().unwrap(),
                r["answered"]["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        answered,
        [
            ("approver", "allow"),
            ("approver", "deny"),
            ("approver", "deny"),
            ("approver", "deny")
        ]
    );
    assert_eq!(results[1]["answered"]["reason"], "not now");
    assert_eq!(results[0]["model_content"], "said: hello\n");
    assert_eq!(
        results[1]["model_content"],
        "Permission to use Say was denied by the person reviewing the request: not now"
    );
    assert_eq!(results[2]["model_content"], "use the staging db");
    assert_eq!(
        results[3]["model_content"],
        "Permission to use Say was denied by the person reviewing the request: no answer: the terminal closed"
    );
    // The rule that asked, with its place, and the exact input.
    assert!(prompts.contains(
        "why: rule `ask-loud` says ask: loud things need a look (tests/fixtures/permission/approval/policies.yaml:15:5)"
    ));
    assert!(prompts.contains("      \"text\": \"second!\"\n"));
    insta::assert_snapshot!(format!(
        "exit: {code}\n--- results\n{}\n--- stderr\n{prompts}",
        serde_json::to_string_pretty(&results).unwrap()
    ));
}

#[test]
fn end_of_input_denies_every_request() {
    let (code, prompts, results) = run_with_answers("");
    assert_eq!(code, 0);
    for result in results.as_array().unwrap() {
        assert_eq!(result["status"], "denied");
        assert_eq!(
            result["model_content"],
            "Permission to use Say was denied by the person reviewing the request: no answer: the terminal closed"
        );
    }
    assert_eq!(prompts.matches("approval needed: Say").count(), 4);
}

#[test]
fn a_hook_answer_withdraws_the_prompt_and_the_program_still_ends() {
    // stdin stays open and nobody types: the hook answers every request, each prompt is
    // withdrawn, and no read of the terminal keeps the program from ending.
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--color", "never", "--no-builtin", "-p"])
        .arg(format!("{DIR}/policies.yaml"))
        .arg("-p")
        .arg(format!("{DIR}/hooked.yaml"))
        .arg("run")
        .arg(format!("{DIR}/batch.yaml"))
        .args(["--approve", "prompt", "--format", "jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    // A bound on a hang, not a timing assertion.
    let mut status = None;
    for _ in 0..600 {
        if let Some(done) = child.try_wait().unwrap() {
            status = Some(done);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(stdin);
    if status.is_none() {
        let _ = child.kill();
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        status.is_some(),
        "toolgate run did not end while stdin stayed open"
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let finalized: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    for result in finalized["results"].as_array().unwrap() {
        assert_eq!(result["status"], "ok", "{result}");
    }
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr.matches("was withdrawn").count(),
        stderr.matches("approval needed").count(),
        "{stderr}"
    );
}
