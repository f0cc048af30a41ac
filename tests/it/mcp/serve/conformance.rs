//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `tests/node`) in server mode against `toolgate mcp serve --http`: the scenarios that apply
//! to a tool gateway, checked against the committed expected-failures file
//! (`tests/node/conformance-server-expected-failures.yaml`, which also lists what is pending
//! and why). The suite needs Node 22 or later, which `npx -p node@22` supplies; without it
//! (or without npm) the test says it skipped.

use std::path::Path;
use std::process::Command;

use super::support::{http_server, scratch};
use crate::support::node::{bin, packages};

const SCENARIOS: [&str; 4] = [
    "server-initialize",
    "ping",
    "tools-list",
    "dns-rebinding-protection",
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

#[test]
fn the_conformance_suite_passes_the_gateway_scenarios() {
    let test = "the_conformance_suite_passes_the_gateway_scenarios";
    let Some(modules) = packages(test) else {
        return;
    };
    if node22(test).is_none() {
        return;
    }
    // The package's `.bin` link points at the suite's entry point.
    let suite = std::fs::canonicalize(bin(&modules, "conformance")).unwrap();
    let expected = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/node/conformance-server-expected-failures.yaml");
    let (dir, root) = scratch();
    let server = http_server(dir.path(), &root, &[], &[]);
    for scenario in SCENARIOS {
        let output = node22(test)
            .unwrap()
            .arg(&suite)
            .args(["server", "--url", &server.url, "--scenario", scenario])
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
}
