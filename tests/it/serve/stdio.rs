//! `toolgate serve --stdio` end to end: the real binary, driven through its stdin and stdout
//! by JSON-RPC 2.0 lines — initialize, batches (several in flight), approval round trips,
//! cancellation, plan, explain, reloads between batches, bad input, shutdown and EOF.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::reload::save_by_rename;
use crate::support::serve::{Server, batch, is_alive, scratch_policies};
use serde_json::{Value, json};

fn echo(id: &str, text: &str) -> (&'static str, &'static str, Value) {
    // Leaked so the tuple can borrow a 'static id; tests make a handful of these.
    let id: &'static str = Box::leak(id.to_owned().into_boxed_str());
    (id, "Echo", json!({"text": text}))
}

/// The single result of a one-call batch response.
fn only_result(response: &Value) -> &Value {
    let results = response["result"]["results"].as_array().unwrap_or_else(|| {
        panic!("no results in {response}");
    });
    assert_eq!(results.len(), 1, "{response}");
    &results[0]
}

#[test]
fn initialize_reports_version_generation_and_tools() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);
    let result = server.result("initialize", json!({}));
    assert_eq!(result["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(result["generation"], 1);
    let tools: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for tool in ["Echo", "Slow", "Sleeper", "Deploy"] {
        assert!(tools.contains(&tool), "{tool} missing from {tools:?}");
    }
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}

#[test]
fn execute_batch_answers_with_the_batch_finalized_shape() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);
    let response = server.call(
        "executeBatch",
        batch(
            "b1",
            &[
                echo("one", "hello"),
                echo("two", "world"),
                ("three", "Nope", json!({})),
            ],
        ),
    );
    let result = &response["result"];
    assert_eq!(result["batch_id"], "b1");
    assert_eq!(result["generation"], 1);
    assert_eq!(result["turn_stopped"], false);
    assert!(result.get("type").is_none(), "{result}");
    let results = result["results"].as_array().unwrap();
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["one", "two", "three"], "results keep batch order");
    assert_eq!(results[0]["tool"], "Echo");
    assert_eq!(results[0]["status"], "ok");
    assert_eq!(results[0]["model_content"], "v1:hello");
    assert_eq!(results[1]["model_content"], "v1:world");
    assert_eq!(results[2]["status"], "error");
    assert_eq!(results[2]["model_content"], "Tool not found: Nope");
    for result in results {
        let metadata = &result["metadata"];
        for key in [
            "truncated",
            "original_size",
            "final_size",
            "queued_ms",
            "permission_wait_ms",
            "total_ms",
        ] {
            assert!(metadata.get(key).is_some(), "`{key}` missing in {result}");
        }
        // `persisted_files` is there only when the output was persisted.
        assert!(metadata.get("persisted_files").is_none_or(Value::is_array));
    }
    // Every engine event of the batch was sent as a notification, on one generation.
    let complete = server.event("ToolBatchComplete");
    assert_eq!(complete["batch_id"], "b1");
    assert_eq!(complete["successes"], 2);
    assert_eq!(complete["failures"], 1);
    let events: Vec<Value> = server
        .log
        .iter()
        .filter(|m| m["method"] == "event" && m["params"]["batch_id"] == "b1")
        .map(|m| m["params"].clone())
        .collect();
    assert_eq!(events[0]["type"], "BatchScheduled");
    assert!(events.iter().all(|e| e["generation"] == 1));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "ToolCallError" && e["call_id"] == "three")
    );
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}

#[test]
fn a_slow_batch_does_not_block_a_fast_one_and_cancel_by_id_ends_it() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);
    let slow = server.request(
        "executeBatch",
        batch("slow", &[("nap", "Slow", json!({"seconds": "60"}))]),
    );
    server.event("ToolCallStarted");
    // The fast batch is answered while the slow one still runs.
    let fast = server.call("executeBatch", batch("fast", &[echo("e", "quick")]));
    assert_eq!(only_result(&fast)["model_content"], "v1:quick");
    assert!(
        !server
            .log
            .iter()
            .any(|m| m.get("id") == Some(&slow) && m.get("method").is_none()),
        "the slow batch answered before it was cancelled"
    );
    // A batch id that is in use is refused.
    let twin = server.call("executeBatch", batch("slow", &[echo("e", "twin")]));
    assert_eq!(twin["error"]["code"], -32602, "{twin}");
    assert!(
        twin["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already running")
    );
    let cancelled = server.result("cancel", json!({"batch_id": "slow"}));
    assert_eq!(cancelled["cancelled"], json!(["slow"]));
    let answer = server.response(&slow);
    let nap = only_result(&answer);
    assert_eq!(nap["status"], "cancelled", "{answer}");
    // Cancelling something that no longer runs cancels nothing.
    let again = server.result("cancel", json!({"batch_id": "slow"}));
    assert_eq!(again["cancelled"], json!([]));
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}

#[test]
fn cancel_all_cancels_every_running_batch() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);
    let first = server.request(
        "executeBatch",
        batch("a", &[("a1", "Slow", json!({"seconds": "60"}))]),
    );
    let second = server.request(
        "executeBatch",
        batch("b", &[("b1", "Slow", json!({"seconds": "60"}))]),
    );
    server.event("ToolCallStarted");
    server.event("ToolCallStarted");
    let cancelled = server.result("cancel", json!({"all": true}));
    assert_eq!(cancelled["cancelled"], json!(["a", "b"]));
    for id in [first, second] {
        let answer = server.response(&id);
        assert_eq!(only_result(&answer)["status"], "cancelled", "{answer}");
    }
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}

#[test]
fn approval_round_trip_allow_deny_and_feedback() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);

    let id = server.request(
        "executeBatch",
        batch("allow", &[("d1", "Deploy", json!({"target": "staging"}))]),
    );
    let request = server.permission_request();
    assert_eq!(request["jsonrpc"], "2.0");
    assert!(request["id"].is_string(), "{request}");
    let params = &request["params"];
    assert_eq!(params["batch_id"], "allow");
    assert_eq!(params["call_id"], "d1");
    assert_eq!(params["tool"], "Deploy");
    assert_eq!(params["input"], json!({"target": "staging"}));
    assert_eq!(params["attempt"], 1);
    assert!(
        !params["reasons"].as_array().unwrap().is_empty(),
        "{params}"
    );
    server.answer(
        &request,
        json!({"decision": "allow", "reason": "looks fine"}),
    );
    let answer = server.response(&id);
    let result = only_result(&answer);
    assert_eq!(result["status"], "ok", "{answer}");
    assert_eq!(result["model_content"], "deployed staging");

    let id = server.request(
        "executeBatch",
        batch("deny", &[("d2", "Deploy", json!({"target": "staging"}))]),
    );
    let request = server.permission_request();
    server.answer(&request, json!({"decision": "deny", "reason": "not today"}));
    let answer = server.response(&id);
    let result = only_result(&answer);
    assert_eq!(result["status"], "denied", "{answer}");
    assert_eq!(
        result["model_content"],
        "Permission to use Deploy was denied by the person reviewing the request: not today",
        "{answer}"
    );
    assert_eq!(result["error"]["stage"], "permission", "{answer}");

    let id = server.request(
        "executeBatch",
        batch(
            "feedback",
            &[("d3", "Deploy", json!({"target": "staging"}))],
        ),
    );
    let request = server.permission_request();
    server.answer(
        &request,
        json!({"decision": "deny", "feedback": "deploy to canary first"}),
    );
    let answer = server.response(&id);
    let result = only_result(&answer);
    assert_eq!(result["status"], "denied", "{answer}");
    assert_eq!(
        result["model_content"], "deploy to canary first",
        "{answer}"
    );

    // A bare "no" gets the configured message.
    let id = server.request(
        "executeBatch",
        batch("bare", &[("d5", "Deploy", json!({"target": "staging"}))]),
    );
    let request = server.permission_request();
    server.answer(&request, json!({"decision": "deny"}));
    let answer = server.response(&id);
    assert_eq!(
        only_result(&answer)["model_content"],
        "Permission to use Deploy was not granted"
    );

    // An answer that is not allow or deny (or an error response) counts as a denial.
    let id = server.request(
        "executeBatch",
        batch("odd", &[("d6", "Deploy", json!({"target": "staging"}))]),
    );
    let request = server.permission_request();
    server.send(&json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -1, "message": "ui closed"}}));
    let answer = server.response(&id);
    assert_eq!(only_result(&answer)["status"], "denied", "{answer}");

    // A rule denial never asks.
    let answer = server.call(
        "executeBatch",
        batch("prod", &[("d4", "Deploy", json!({"target": "prod"}))]),
    );
    let result = only_result(&answer);
    assert_eq!(result["status"], "denied");
    assert!(
        !server
            .log
            .iter()
            .any(|m| m["method"] == "permission/request" && m["params"]["call_id"] == "d4")
    );

    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}

/// An answer that cannot be read denies, at once: one holding an `error` beside a `result`
/// that allows (JSON-RPC forbids both; the call ran), an unknown field or a value of the wrong
/// type in the result (both allowed), a key given twice, or `jsonrpc` not `"2.0"` (both left
/// the call waiting for ever, and the server answered the client's response with an error).
#[test]
fn an_approval_answer_that_cannot_be_read_denies() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);
    // Each answer as sent, `ID` standing for the request's id.
    let answers = [
        (
            "error and result",
            r#"{"jsonrpc": "2.0", "id": ID, "error": {"code": 1, "message": "no"}, "result": {"decision": "allow"}}"#,
        ),
        (
            "unknown field",
            r#"{"jsonrpc": "2.0", "id": ID, "result": {"decision": "allow", "extra": 1}}"#,
        ),
        (
            "wrong type",
            r#"{"jsonrpc": "2.0", "id": ID, "result": {"decision": "allow", "reason": 5}}"#,
        ),
        (
            "key twice",
            r#"{"jsonrpc": "2.0", "id": ID, "result": {"decision": "deny", "decision": "allow"}}"#,
        ),
        (
            "jsonrpc 1.0",
            r#"{"jsonrpc": "1.0", "id": ID, "result": {"decision": "allow"}}"#,
        ),
        (
            "no jsonrpc",
            r#"{"id": ID, "result": {"decision": "allow"}}"#,
        ),
        (
            "feedback with allow",
            r#"{"jsonrpc": "2.0", "id": ID, "result": {"decision": "allow", "feedback": "x"}}"#,
        ),
    ];
    for (index, (what, answer)) in answers.iter().enumerate() {
        let batch_id = format!("bad{index}");
        let id = server.request(
            "executeBatch",
            batch(&batch_id, &[("d", "Deploy", json!({"target": "staging"}))]),
        );
        let request = server.permission_request();
        let before = server.log.len();
        let line = answer.replace("ID", &request["id"].to_string());
        server.send_raw(format!("{line}\n").as_bytes());
        let response = server.response(&id);
        let result = only_result(&response);
        assert_eq!(result["status"], "denied", "{what}: {response}");
        // A response is never answered.
        assert!(
            !server.log[before..]
                .iter()
                .any(|m| m.get("error").is_some() && m["id"] == request["id"]),
            "{what}: {}",
            server.context()
        );
    }
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}

#[test]
fn an_unanswered_approval_expires_and_a_late_answer_is_ignored() {
    let mut server = Server::on_fixtures(&["expiry"], &["--no-watch"]);
    let id = server.request(
        "executeBatch",
        batch("late", &[("d", "Deploy", json!({"target": "staging"}))]),
    );
    let request = server.permission_request();
    let answer = server.response(&id);
    let result = only_result(&answer);
    assert_eq!(result["status"], "denied", "{answer}");
    assert_eq!(
        result["model_content"],
        "Permission request for Deploy expired after 300ms without an answer"
    );
    // The late answer goes nowhere and the server keeps serving.
    server.answer(&request, json!({"decision": "allow"}));
    let again = server.call("executeBatch", batch("after", &[echo("e", "still here")]));
    assert_eq!(only_result(&again)["model_content"], "v1:still here");
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
    let stray: Vec<&Value> = server
        .log
        .iter()
        .filter(|m| m.get("error").is_some())
        .collect();
    assert!(
        stray.is_empty(),
        "the late answer produced errors: {stray:?}"
    );
}

/// A server whose tool `Sh` is judged by shell rules, with a batch of `calls` calls of a
/// compound line: planning it parses and judges every line, which takes a while.
fn shell_planner(calls: usize) -> (Server, tempfile::TempDir, Value) {
    let (dir, root) = crate::support::serve::scratch_policies();
    std::fs::write(
        root.join("shell.yaml"),
        "version: 1\ntools:\n  Sh:\n    input_schema: { type: object, required: [command], properties: { command: { type: string } } }\n    permission: { default: ask }\n    handler: { kind: command, argv: [\"true\"] }\nrules:\n  - name: reads\n    tools: [Sh]\n    match: { command: { shell: [\"git status\", \"ls *\", \"sort *\", \"uniq *\", \"grep *\", \"echo *\", \"date\"] } }\n    decision: allow\n",
    )
    .unwrap();
    let root = root.display().to_string();
    let server = Server::start(&["-p", &root], &["--no-watch"]);
    let line = "git status && ls -la src | sort | uniq -c && grep -rn main src; echo \"$(date)\" > /dev/null";
    let calls: Vec<Value> = (0..calls)
        .map(|n| json!({"id": format!("c{n}"), "tool": "Sh", "input": {"command": line}}))
        .collect();
    (server, dir, json!({"batch": {"calls": calls}}))
}

/// A plan runs off the request loop: while a batch of thousands of calls is planned, the
/// server goes on answering (and reading approval answers, `cancel`, signals). The plan
/// was computed inside the loop, which read nothing more until it was done.
#[test]
fn a_long_plan_does_not_hold_other_requests() {
    let (mut server, _dir, batch) = shell_planner(3000);
    let plan = server.request("plan", batch);
    let initialize = server.call("initialize", json!({}));
    assert!(initialize.get("result").is_some(), "{initialize}");
    assert!(
        !server.log.iter().any(|m| m.get("id") == Some(&plan)),
        "the plan was answered before `initialize`: the loop waited for it"
    );
    let planned = server.response(&plan);
    let calls = planned["result"]["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3000);
    assert_eq!(calls[0]["decision"], "allow", "{}", calls[0]);
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}

/// A signal stops the server without waiting for a plan still being worked out: the plan is
/// answered with an error, at once.
#[test]
fn a_signal_answers_a_plan_still_running_and_exits() {
    use nix::sys::signal::{Signal, kill};
    let (mut server, _dir, batch) = shell_planner(10_000);
    let plan = server.request("plan", batch);
    // Once `initialize` is answered, the plan's line has been read and the plan started.
    server.result("initialize", json!({}));
    kill(
        nix::unistd::Pid::from_raw(server.pid() as i32),
        Signal::SIGTERM,
    )
    .unwrap();
    let answer = server.response(&plan);
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("stopped before the plan was done")),
        "{answer}"
    );
    assert_eq!(
        server.wait_exit().code(),
        Some(128 + Signal::SIGTERM as i32)
    );
}

#[test]
fn plan_shows_groups_and_decisions_without_running() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);
    let plan = server.result(
        "plan",
        batch(
            "p",
            &[
                echo("e1", "a"),
                echo("e2", "b"),
                ("d", "Deploy", json!({"target": "prod"})),
                ("s", "Deploy", json!({"target": "staging"})),
            ],
        ),
    );
    assert_eq!(
        plan["groups"],
        json!([["e1", "e2"], ["d"], ["s"]]),
        "{plan}"
    );
    let calls = plan["calls"].as_array().unwrap();
    let decisions: Vec<&Value> = calls.iter().map(|c| &c["decision"]).collect();
    assert_eq!(
        decisions,
        [
            &json!("allow"),
            &json!("allow"),
            &json!("deny"),
            &json!("ask")
        ],
        "{plan}"
    );
    // Nothing ran: no event, no permission request.
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
    assert!(
        !server
            .log
            .iter()
            .any(|m| m["method"] == "event" || m["method"] == "permission/request"),
        "{}",
        server.context()
    );
}

#[test]
fn explain_reports_the_contract_and_rejects_unknown_tools() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);
    let explained = server.result("explain", json!({"tool": "Deploy"}));
    let text = explained.to_string();
    assert!(text.contains("Deploy"), "{text}");
    assert!(
        text.contains("tools.yaml"),
        "values carry their file: {text}"
    );
    assert!(text.contains("no-prod"), "the rules that can apply: {text}");

    let unknown = server.call("explain", json!({"tool": "Nope"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Nope"),
        "{unknown}"
    );
    let missing = server.call("explain", json!({}));
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}

fn with_tag(text: &str, tag: &str) -> String {
    let replaced = text.replace("\"v1:%s\"", &format!("\"{tag}:%s\""));
    assert_ne!(replaced, text);
    replaced
}

#[test]
fn reload_between_batches_saves_by_rename_and_overwrite_and_rejects_invalid_saves() {
    let (scratch, root) = scratch_policies();
    let file = root.join("tools.yaml");
    let original = std::fs::read_to_string(&file).unwrap();
    let mut server = Server::start(&["-p", root.to_str().unwrap()], &[]);
    let _keep = scratch;
    assert_eq!(server.result("initialize", json!({}))["generation"], 1);
    let first = server.call("executeBatch", batch("g1", &[echo("e", "hi")]));
    assert_eq!(only_result(&first)["model_content"], "v1:hi");

    // Save by rename.
    save_by_rename(&file, &with_tag(&original, "v2"));
    let reloaded = server.event("PolicyReloaded");
    let generation = reloaded["generation"].as_u64().unwrap();
    assert!(generation >= 2, "{reloaded}");
    let changes = reloaded["changes"].as_array().unwrap();
    let argv = changes
        .iter()
        .find(|c| c["subject"] == "tool" && c["name"] == "Echo")
        .unwrap_or_else(|| panic!("no Echo change in {reloaded}"));
    assert_eq!(argv["kind"], "changed");
    assert!(argv["before"].to_string().contains("v1:%s"), "{argv}");
    assert!(argv["after"].to_string().contains("v2:%s"), "{argv}");
    assert!(
        reloaded["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f.as_str().unwrap().ends_with("tools.yaml")),
        "{reloaded}"
    );
    let second = server.call("executeBatch", batch("g2", &[echo("e", "hi")]));
    assert_eq!(second["result"]["generation"], generation);
    assert_eq!(only_result(&second)["model_content"], "v2:hi");

    // Plain overwrite in place.
    std::fs::write(&file, with_tag(&original, "v3")).unwrap();
    let generation = wait_for_tag(&mut server, "v3");
    let third = server.call("executeBatch", batch("g3", &[echo("e", "hi")]));
    assert_eq!(third["result"]["generation"], generation);
    assert_eq!(only_result(&third)["model_content"], "v3:hi");

    // An invalid save is rejected with positioned diagnostics; v3 stays in force.
    let broken = with_tag(&original, "v4").replace(
        "permission: { default: allow }",
        "permission: { default: maybe }",
    );
    save_by_rename(&file, &broken);
    let failed = server.event("PolicyReloadFailed");
    assert_eq!(failed["generation"], generation, "{failed}");
    let diagnostics = failed["diagnostics"].as_array().unwrap();
    assert!(!diagnostics.is_empty());
    for diagnostic in diagnostics {
        assert!(
            diagnostic["file"].as_str().unwrap().ends_with("tools.yaml"),
            "{diagnostic}"
        );
        assert!(diagnostic["line"].as_u64().unwrap() > 1, "{diagnostic}");
        assert!(diagnostic["column"].as_u64().unwrap() >= 1, "{diagnostic}");
    }
    let fourth = server.call("executeBatch", batch("g4", &[echo("e", "hi")]));
    assert_eq!(fourth["result"]["generation"], generation);
    assert_eq!(only_result(&fourth)["model_content"], "v3:hi");
    assert_eq!(
        server.result("initialize", json!({}))["generation"],
        generation
    );

    // Fixing the file brings a new generation.
    save_by_rename(&file, &with_tag(&original, "v5"));
    let fixed = wait_for_tag(&mut server, "v5");
    assert!(fixed > generation);
    let fifth = server.call("executeBatch", batch("g5", &[echo("e", "hi")]));
    assert_eq!(only_result(&fifth)["model_content"], "v5:hi");

    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}

/// Waits for the `PolicyReloaded` event whose changes set Echo's tag; returns its generation.
/// (An overwrite may be seen as more than one change; only the one carrying the tag counts.)
fn wait_for_tag(server: &mut Server, tag: &str) -> u64 {
    let needle = format!("{tag}:%s");
    let event = server.wait_for(&format!("a reload to {tag}"), |m| {
        m["method"] == "event"
            && m["params"]["type"] == "PolicyReloaded"
            && m["params"]["changes"].to_string().contains(&needle)
    });
    event["params"]["generation"].as_u64().unwrap()
}

#[test]
fn a_running_batch_finishes_on_its_generation_while_a_reload_lands() {
    let (scratch, root) = scratch_policies();
    let file = root.join("tools.yaml");
    let original = std::fs::read_to_string(&file).unwrap();
    let mut server = Server::start(&["-p", root.to_str().unwrap()], &[]);
    let _keep = scratch;
    let pending = server.request(
        "executeBatch",
        batch(
            "old",
            &[("nap", "Slow", json!({"seconds": "1"})), echo("after", "x")],
        ),
    );
    server.event("ToolCallStarted");
    save_by_rename(&file, &with_tag(&original, "v2"));
    let reloaded = server.event("PolicyReloaded");
    let answer = server.response(&pending);
    // The batch started on generation 1 and its Echo still speaks v1.
    assert_eq!(answer["result"]["generation"], 1, "{answer}");
    let results = answer["result"]["results"].as_array().unwrap();
    assert_eq!(results[1]["model_content"], "v1:x");
    let new = server.call("executeBatch", batch("new", &[echo("e", "x")]));
    assert_eq!(new["result"]["generation"], reloaded["generation"]);
    assert_eq!(only_result(&new)["model_content"], "v2:x");
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}

#[test]
fn bad_input_is_answered_and_the_server_keeps_serving() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);
    let error_of = |message: &Value| message["error"]["code"].as_i64().unwrap_or(0);
    let by_null_id = |m: &Value| m.get("id") == Some(&Value::Null) && m.get("error").is_some();

    server.send_raw(b"{not json");
    let parse = server.wait_for("the parse error", by_null_id);
    assert_eq!(error_of(&parse), -32700, "{parse}");

    server.send_raw(b"[1, 2]");
    let array = server.wait_for("the array error", by_null_id);
    assert_eq!(error_of(&array), -32600, "{array}");

    server.send_raw(b"42");
    let number = server.wait_for("the non-object error", by_null_id);
    assert_eq!(error_of(&number), -32600, "{number}");

    // An id that could not be echoed as sent (it came back as `1e+23`), and a key given
    // twice (the last `tool` was explained), are refused.
    server
        .send_raw(br#"{"jsonrpc": "2.0", "id": 99999999999999999999999, "method": "initialize"}"#);
    let big = server.wait_for("the big id error", by_null_id);
    assert_eq!(error_of(&big), -32600, "{big}");
    server.send_raw(br#"{"jsonrpc": "2.0", "id": "dup", "method": "explain", "params": {"tool": "Echo", "tool": "Read"}}"#);
    let twice = server.response(&json!("dup"));
    assert_eq!(error_of(&twice), -32600, "{twice}");
    assert!(
        twice["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`tool` is defined twice"),
        "{twice}"
    );

    server.send(&json!({"id": "no-version", "method": "initialize"}));
    let missing = server.response(&json!("no-version"));
    assert_eq!(error_of(&missing), -32600, "{missing}");

    server.send(&json!({"jsonrpc": "1.0", "id": "old", "method": "initialize"}));
    let old = server.response(&json!("old"));
    assert_eq!(error_of(&old), -32600, "{old}");

    server.send(&json!({"jsonrpc": "2.0", "id": "no-method"}));
    let no_method = server.response(&json!("no-method"));
    assert_eq!(error_of(&no_method), -32600, "{no_method}");

    let unknown = server.call("frobnicate", json!({}));
    assert_eq!(error_of(&unknown), -32601, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("frobnicate")
    );

    for params in [
        json!({}),
        json!({"batch": {"calls": []}}),
        json!({"batch": {"calls": [{"id": 1, "tool": "Echo"}]}}),
        json!({"batch": "calls"}),
        json!({"batch": {"modes": ["nope"], "calls": [{"id": "a", "tool": "Echo", "input": {}}]}}),
        json!({"batch": {"calls": [{"id": "a", "tool": "Echo", "input": {"text": "x"}}, {"id": "a", "tool": "Echo", "input": {"text": "y"}}]}}),
    ] {
        let invalid = server.call("executeBatch", params.clone());
        assert_eq!(error_of(&invalid), -32602, "{params} → {invalid}");
        let planned = server.call("plan", params.clone());
        assert_eq!(error_of(&planned), -32602, "{params} → {planned}");
    }
    server.send(
        &json!({"jsonrpc": "2.0", "id": "array-params", "method": "executeBatch", "params": [1]}),
    );
    let array_params = server.response(&json!("array-params"));
    assert_eq!(error_of(&array_params), -32602, "{array_params}");

    // A notification (no id) is never answered, even when it fails.
    server.send(&json!({"jsonrpc": "2.0", "method": "frobnicate"}));
    server.send(&json!({"jsonrpc": "2.0", "method": "executeBatch", "params": {}}));

    // A response to a permission request that was never made is ignored.
    server
        .send(&json!({"jsonrpc": "2.0", "id": "permission-999", "result": {"decision": "allow"}}));
    server.send(&json!({"jsonrpc": "2.0", "id": 77, "result": {}}));

    // Empty and blank lines are skipped.
    server.send_raw(b"");
    server.send_raw(b"   \t ");
    server.send_raw(b"\r");

    // Invalid UTF-8 is a parse error, not the end of the session.
    server.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": \"\xff\xfe\", \"method\": \"initialize\"}");
    let utf8 = server.wait_for("the UTF-8 error", by_null_id);
    assert_eq!(error_of(&utf8), -32700, "{utf8}");

    // A long but acceptable line (1 MiB of padding) is served.
    let padding = "x".repeat(1 << 20);
    let long = server.call(
        "executeBatch",
        batch(
            "long",
            &[("e", "Echo", json!({"text": "long", "padding": padding}))],
        ),
    );
    assert_eq!(
        only_result(&long)["model_content"],
        "v1:long",
        "a 1 MiB request is served"
    );

    // The server still answers normally.
    let result = server.result("initialize", json!({}));
    assert_eq!(result["generation"], 1);
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
    let unexpected: Vec<&Value> = server
        .log
        .iter()
        .filter(|m| {
            m.is_string()
                || (m.get("error").is_some()
                    && m.get("id")
                        .is_some_and(|id| id == "permission-999" || id == 77))
        })
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:?}");
    let errors = server
        .log
        .iter()
        .filter(|m| m.get("error").is_some())
        .count();
    // 5 null-id errors + 4 invalid requests + 1 unknown method + 12 invalid batches + 1 params.
    assert_eq!(errors, 5 + 4 + 1 + 12 + 1, "{}", server.context());
}

#[test]
fn a_line_over_the_limit_is_a_parse_error_and_the_session_goes_on() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);
    let mut huge = Vec::with_capacity(65 << 20);
    huge.extend_from_slice(b"{\"jsonrpc\": \"2.0\", \"id\": \"huge\", \"method\": \"initialize\", \"params\": {\"pad\": \"");
    huge.resize(huge.len() + (65 << 20), b'x');
    huge.extend_from_slice(b"\"}}");
    server.send_raw(&huge);
    drop(huge);
    let error = server.wait_for("the line-too-long error", |m| m.get("error").is_some());
    assert_eq!(error["id"], Value::Null, "{error}");
    assert_eq!(error["error"]["code"], -32700, "{error}");
    let result = server.result("initialize", json!({}));
    assert_eq!(result["generation"], 1);
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}

#[test]
fn shutdown_cancels_running_batches_exits_zero_and_leaves_no_children() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);
    let pidfile = server.scratch.as_ref().unwrap().path().join("sleeper.pid");
    let running = server.request(
        "executeBatch",
        batch(
            "sleepy",
            &[(
                "z",
                "Sleeper",
                json!({"pidfile": pidfile.display().to_string()}),
            )],
        ),
    );
    server.event("ToolCallStarted");
    let pid = wait_for_pid(&pidfile);
    assert!(is_alive(pid));
    // And a batch waiting for an approval that never comes.
    let waiting = server.request(
        "executeBatch",
        batch("waiting", &[("d", "Deploy", json!({"target": "staging"}))]),
    );
    server.permission_request();
    let shutdown = server.request("shutdown", json!({}));
    let status = server.wait_exit();
    assert!(status.success(), "{status:?}; {}", server.context());
    // The running batch was answered (cancelled) before the server went away.
    let answer = server.response(&running);
    assert_eq!(only_result(&answer)["status"], "cancelled", "{answer}");
    let answer = server.response(&waiting);
    assert_eq!(only_result(&answer)["status"], "cancelled", "{answer}");
    assert!(server.response(&shutdown)["result"].is_object());
    assert!(
        !is_alive(pid),
        "the handler process {pid} survived the server"
    );
}

#[test]
fn end_of_input_exits_zero_and_leaves_no_children() {
    let mut server = Server::on_fixtures(&[], &[]);
    let pidfile = server.scratch.as_ref().unwrap().path().join("sleeper.pid");
    server.request(
        "executeBatch",
        batch(
            "sleepy",
            &[(
                "z",
                "Sleeper",
                json!({"pidfile": pidfile.display().to_string()}),
            )],
        ),
    );
    server.event("ToolCallStarted");
    let pid = wait_for_pid(&pidfile);
    server.close_stdin();
    let status = server.wait_exit();
    assert!(status.success(), "{status:?}; {}", server.context());
    assert!(
        !is_alive(pid),
        "the handler process {pid} survived the server"
    );
}

#[test]
fn a_server_whose_policies_do_not_load_exits_one_with_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.yaml"), "version: 1\ntools: [\n").unwrap();
    let mut server = Server::start(&["-p", dir.path().to_str().unwrap()], &[]);
    let status = server.wait_exit();
    assert_eq!(status.code(), Some(1), "{}", server.context());
    assert!(server.stderr().contains("bad.yaml"), "{}", server.stderr());
}

fn wait_for_pid(path: &std::path::Path) -> u32 {
    let deadline = std::time::Instant::now() + crate::support::serve::WAIT;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(std::time::Instant::now() < deadline, "no pid file");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn every_decided_call_is_logged_where_the_settings_say() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("decisions.jsonl");
    let settings = dir.path().join("log.yaml");
    std::fs::write(
        &settings,
        format!(
            "version: 1\nengine:\n  decision_log:\n    path: {}\n",
            log.display()
        ),
    )
    .unwrap();
    let mut server = Server::on_fixtures(&[settings.to_str().unwrap()], &["--no-watch"]);
    server.call(
        "executeBatch",
        batch("b1", &[echo("one", "hi"), ("two", "Nope", json!({}))]),
    );
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
    let records: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // The unknown tool was never decided.
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["event"], "run");
    assert_eq!(records[0]["tool"], "Echo");
    assert_eq!(records[0]["decision"], "allow");
    assert_eq!(records[0]["input"], json!({"text": "hi"}));
}
