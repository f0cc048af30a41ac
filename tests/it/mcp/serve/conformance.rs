//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `tests/node`) in server mode against `toolgate mcp serve --http`: the scenarios that apply
//! to a tool gateway, and the `tools-call-*` ones with the suite's fixture tools (see
//! [`conformance_fixture`]) behind toolgate as an MCP server, checked against the committed
//! expected-failures file (`tests/node/conformance-server-expected-failures.yaml`, which says
//! why each listed failure is expected). The suite needs Node 22 or later, which
//! `npx -p node@22` supplies; without it (or without npm) the tests say they skipped.

use std::path::Path;
use std::process::Command;

use super::support::{http_server, scratch};
use crate::support::conformance_fixture::{self, TOOLS};
use crate::support::node::{bin, packages};

const GATEWAY_SCENARIOS: [&str; 4] = [
    "server-initialize",
    "ping",
    "tools-list",
    "dns-rebinding-protection",
];

const TOOL_CALL_SCENARIOS: [&str; 11] = [
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
];

/// `npx -y -p node@22 -- node ARGS…`, or `None` (after saying so) when that cannot run.
fn node22(test: &str) -> Option<Command> {
    let probe = Command::new("npx")
        .args(["-y", "-p", "node@22", "--", "node", "--version"])
        .output();
    if !probe.is_ok_and(|out| out.status.success()) {
        eprintln!(
            "skipped {test}: `npx -p node@22` does not run (the suite needs Node 22 or later)"
        );
        return None;
    }
    let mut command = Command::new("npx");
    command.args(["-y", "-p", "node@22", "--", "node"]);
    Some(command)
}

/// Runs each scenario against the server at `url`; fails on any outcome the expected-failures
/// file does not predict. Returns `false` (after saying so) when the suite cannot run.
fn run_scenarios(test: &str, url: &str, scenarios: &[&str]) -> bool {
    let Some(modules) = packages(test) else {
        return false;
    };
    if node22(test).is_none() {
        return false;
    }
    // The package's `.bin` link points at the suite's entry point.
    let suite = std::fs::canonicalize(bin(&modules, "conformance")).unwrap();
    let expected = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/node/conformance-server-expected-failures.yaml");
    for scenario in scenarios {
        let output = node22(test)
            .unwrap()
            .arg(&suite)
            .args(["server", "--url", url, "--scenario", scenario])
            .arg("--expected-failures")
            .arg(&expected)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "conformance scenario `{scenario}` failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    true
}

#[test]
fn the_conformance_suite_passes_the_gateway_scenarios() {
    let (dir, root) = scratch();
    let server = http_server(dir.path(), &root, &[], &[]);
    run_scenarios(
        "the_conformance_suite_passes_the_gateway_scenarios",
        &server.url,
        &GATEWAY_SCENARIOS,
    );
}

/// The fixture tools run on an MCP server behind toolgate: one contract per tool, each an
/// `mcp` handler, allowed (`json_schema_2020_12_tool` declares its 2020-12 input
/// schema, which the client must see unchanged). What reaches the suite went through the whole pipeline (decision,
/// timeout, budget) and toolgate's MCP client and server.
#[test]
fn the_conformance_suite_passes_the_tool_call_scenarios_through_toolgate() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("policies");
    std::fs::create_dir(&root).unwrap();
    // Progress is forwarded as it comes (`progress_interval` coalesces what arrives closer
    // together, 100ms by default; the fixture reports every 50ms and the scenario counts).
    let mut policy = format!(
        "version: 1\nengine:\n  progress_interval: 0ms\nmcp_servers:\n  fixture: {}\ntools:\n",
        conformance_fixture::yaml_entry()
    );
    for tool in TOOLS {
        policy.push_str(&format!(
            "  {tool}:\n    description: The conformance fixture's {tool}\n    handler: {{ kind: mcp, server: fixture, tool: {tool} }}\n    permission: {{ default: allow }}\n"
        ));
        if tool == "json_schema_2020_12_tool" {
            // Declared as `mcp import` writes it: the server's input schema, unchanged.
            policy.push_str(&format!(
                "    input_schema: {}\n",
                conformance_fixture::schema_2020_12()
            ));
        }
    }
    std::fs::write(root.join("tools.yaml"), policy).unwrap();
    let server = http_server(dir.path(), &root, &[], &[]);
    run_scenarios(
        "the_conformance_suite_passes_the_tool_call_scenarios_through_toolgate",
        &server.url,
        &TOOL_CALL_SCENARIOS,
    );
}
