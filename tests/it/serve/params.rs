//! Every method's params are checked: an unknown field, a wrong type or a missing field is
//! an invalid-params error (-32602) naming the field, and the method does nothing. A
//! misspelled or wrong-typed `batch_id` once cancelled every running batch.

use crate::support::serve::{Server, batch};
use serde_json::{Value, json};

#[test]
fn invalid_cancel_params_cancel_nothing_and_all_needs_an_explicit_form() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);
    let keep = server.request(
        "executeBatch",
        batch("keep-me", &[("k", "Slow", json!({"seconds": "60"}))]),
    );
    let other = server.request(
        "executeBatch",
        batch("other", &[("o", "Slow", json!({"seconds": "60"}))]),
    );
    server.event("ToolCallStarted");
    server.event("ToolCallStarted");
    let mut answers = Vec::new();
    for params in [
        json!({"batch_id": 12345}),
        json!({"batchId": "keep-me"}),
        json!({}),
        json!({"all": false}),
        json!({"all": "yes"}),
        json!({"batch_id": "keep-me", "all": true}),
    ] {
        let answer = server.call("cancel", params.clone());
        assert_eq!(answer["error"]["code"], -32602, "{params} → {answer}");
        answers.push(json!({"params": params, "error": answer["error"]}));
    }
    // Nothing was cancelled: both batches still run, and the explicit form cancels them.
    let cancelled = server.result("cancel", json!({"all": true}));
    assert_eq!(cancelled["cancelled"], json!(["keep-me", "other"]));
    for id in [keep, other] {
        let answer = server.response(&id);
        assert_eq!(
            answer["result"]["results"][0]["status"], "cancelled",
            "{answer}"
        );
    }
    insta::assert_json_snapshot!("cancel_errors", answers);
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}

#[test]
fn every_method_rejects_unknown_fields_and_wrong_types_naming_the_field() {
    let mut server = Server::on_fixtures(&[], &["--no-watch"]);
    let call = json!({"id": "a", "tool": "Echo", "input": {"text": "x"}});
    let cases: Vec<(&str, Value)> = vec![
        ("initialize", json!({"verbose": true})),
        (
            "executeBatch",
            json!({"batch": {"calls": [call], "batchId": "x"}}),
        ),
        (
            "executeBatch",
            json!({"batch": {"calls": [call]}, "extra": 1}),
        ),
        ("executeBatch", json!({"batch": {"id": 7, "calls": [call]}})),
        (
            "executeBatch",
            json!({"batch": {"calls": [{"id": "a", "tool": 3}]}}),
        ),
        (
            "executeBatch",
            json!({"batch": {"calls": [{"id": "a", "tool": "Echo", "args": {}}]}}),
        ),
        ("plan", json!({"batch": {"calls": [call], "modes": "plan"}})),
        ("explain", json!({})),
        ("explain", json!({"tool": 5})),
        ("explain", json!({"tool": "Echo", "verbose": true})),
        ("shutdown", json!({"now": true})),
    ];
    let mut answers = Vec::new();
    for (method, params) in cases {
        let answer = server.call(method, params.clone());
        assert_eq!(
            answer["error"]["code"], -32602,
            "{method} {params} → {answer}"
        );
        answers.push(json!({"method": method, "params": params, "error": answer["error"]}));
    }
    // No batch ran and the server did not stop.
    assert!(
        !server
            .log
            .iter()
            .any(|m| m["params"]["type"] == "BatchScheduled"),
        "{}",
        server.context()
    );
    insta::assert_json_snapshot!("method_param_errors", answers);
    // An unknown tool in a batch is a call result, not a protocol error.
    let unknown = server.call("executeBatch", batch("u", &[("n", "Nope", json!({}))]));
    assert_eq!(
        unknown["result"]["results"][0]["status"], "error",
        "{unknown}"
    );
    server.result("shutdown", json!({}));
    assert!(server.wait_exit().success());
}
