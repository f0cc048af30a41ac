//! The official TypeScript SDK client (`tests/node/client.mjs`) against `toolgate mcp serve`,
//! over stdio and HTTP. Skipped, saying so, when node or the pinned packages are absent.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::support::{http_server, scratch};
use crate::support::node::packages;

/// Runs the script and returns its steps by name.
fn run_client(args: &[&str]) -> serde_json::Map<String, Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/client.mjs");
    let output = Command::new("node")
        .arg(&script)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the client failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|line| {
            let step: Value = serde_json::from_str(line).unwrap();
            (step["step"].as_str().unwrap().to_owned(), step)
        })
        .collect()
}

fn check(steps: &serde_json::Map<String, Value>) {
    assert_eq!(steps["initialize"]["server"]["name"], "toolgate");
    assert_eq!(
        steps["initialize"]["capabilities"]["tools"],
        json!({"listChanged": true})
    );
    assert_eq!(
        steps["list"]["tools"],
        json!([
            "Echo",
            "Deploy",
            "Slow",
            "Ticker",
            "Hold",
            "HoldShared",
            "Release",
            "Big"
        ])
    );
    let result = |step: &str| (steps[step]["isError"].clone(), steps[step]["text"].clone());
    assert_eq!(result("allow"), (json!(false), json!("v1:from node")));
    assert_eq!(
        result("deny"),
        (json!(true), json!("production is off limits"))
    );
    assert_eq!(result("ask"), (json!(false), json!("deployed staging")));
    let elicited = steps["elicited"]["messages"][0].as_str().unwrap();
    assert!(elicited.contains("`Deploy`"), "{elicited}");
    assert_eq!(
        result("timeout"),
        (json!(true), json!("Tool execution timed out after 300ms"))
    );
    let (denied, text) = result("ask-without-elicitation");
    assert_eq!(denied, json!(true));
    assert!(
        text.as_str()
            .unwrap()
            .contains("did not declare the elicitation capability"),
        "{text}"
    );
    assert_eq!(
        steps["reloaded"]["tools"].as_array().unwrap().last(),
        Some(&json!("FromNode"))
    );
    assert_eq!(result("added"), (json!(false), json!("added")));
}

#[test]
fn the_typescript_sdk_client_over_stdio() {
    if packages("the_typescript_sdk_client_over_stdio").is_none() {
        return;
    }
    let (dir, root) = scratch();
    let policy = root.join("tools.yaml").display().to_string();
    let workspace = dir.path().display().to_string();
    let root = root.display().to_string();
    let steps = run_client(&[
        &policy,
        "--stdio",
        env!("CARGO_BIN_EXE_toolgate"),
        "--no-builtin",
        "--workspace",
        &workspace,
        "-p",
        &root,
        "mcp",
        "serve",
        "--debounce",
        "20ms",
    ]);
    check(&steps);
}

#[test]
fn the_typescript_sdk_client_over_http() {
    if packages("the_typescript_sdk_client_over_http").is_none() {
        return;
    }
    let (dir, root) = scratch();
    let server = http_server(dir.path(), &root, &[], &[]);
    let policy = root.join("tools.yaml").display().to_string();
    let steps = run_client(&[&policy, "--http", &server.url]);
    check(&steps);
}
