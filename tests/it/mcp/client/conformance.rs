//! The official conformance suite (`@modelcontextprotocol/conformance`) in client mode:
//! the suite starts a scenario's server and runs a command with the server's URL; the command
//! here is this test binary re-invoked on [`client`], which puts the URL behind an `mcp`
//! handler over streamable HTTP and makes the calls the scenario expects through the engine.
//! Expected failures (with reasons) are listed in `tests/node/conformance-client-expected-failures.yaml`.
//! Needs Node ≥ 22, which `npx -p node@22` supplies; skipped, saying so, when it cannot.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::harness::{Workspace, call};
use crate::support::node;

const CLIENT_ENV: &str = "TOOLGATE_TEST_CONFORMANCE_CLIENT";

/// Runs `scenario`; `None` when Node 22 cannot be had.
fn run_scenario(modules: &Path, scenario: &str) -> Option<std::process::Output> {
    let node22 = Command::new("npx")
        .args(["-y", "-p", "node@22", "--", "node", "--version"])
        .output();
    if !node22.is_ok_and(|out| out.status.success()) {
        eprintln!(
            "skipped conformance scenario {scenario}: Node 22 is not available through `npx -p node@22`"
        );
        return None;
    }
    let exe = std::env::current_exe().unwrap();
    let command = format!(
        "{} mcp::client::conformance::client --exact --ignored --nocapture --test-threads=1 -q",
        exe.display()
    );
    let expected = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/node/conformance-client-expected-failures.yaml");
    let output = Command::new("npx")
        .args(["-y", "-p", "node@22", "--", "node"])
        .arg(modules.join("@modelcontextprotocol/conformance/dist/index.js"))
        .args(["client", "--command", &command, "--scenario", scenario])
        .arg("--expected-failures")
        .arg(&expected)
        .env(CLIENT_ENV, "1")
        .output()
        .unwrap();
    Some(output)
}

fn assert_passes(scenario: &str) {
    let Some(modules) = node::packages(&format!("conformance client {scenario}")) else {
        return;
    };
    let Some(output) = run_scenario(&modules, scenario) else {
        return;
    };
    assert!(
        output.status.success(),
        "scenario {scenario} failed\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn conformance_client_initialize() {
    assert_passes("initialize");
}

#[test]
fn conformance_client_tools_call() {
    assert_passes("tools_call");
}

/// The client the suite runs: its last argument is the scenario server's URL, and
/// `MCP_CONFORMANCE_SCENARIO` names the scenario.
#[test]
#[ignore = "the conformance client, run by the conformance suite"]
fn client() {
    if std::env::var_os(CLIENT_ENV).is_none() {
        return;
    }
    let url = std::env::args().next_back().unwrap();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let workspace = Workspace::new(&format!(
        r#"version: 1
mcp_servers:
  scenario: {{ url: {url:?} }}
tools:
  Probe: {{ handler: {{ kind: mcp, server: scenario, tool: probe }}, permission: {{ default: allow }} }}
  AddNumbers: {{ handler: {{ kind: mcp, server: scenario, tool: add_numbers }}, permission: {{ default: allow }} }}
"#
    ));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let (engine, _sink) = workspace.engine();
        match scenario.as_str() {
            "tools_call" => {
                let outcome = call(&engine, "AddNumbers", json!({"a": 5, "b": 3})).await;
                eprintln!("{}", outcome.results[0].model_text());
            }
            // `initialize` and anything else: the first call connects (initialize, then the
            // call).
            _ => {
                let outcome = call(&engine, "Probe", json!({})).await;
                eprintln!("{}", outcome.results[0].model_text());
            }
        }
        engine.shutdown().await;
    });
    std::process::exit(0);
}
