//! toolgate as an MCP client: `mcp_servers` and `handler: { kind: mcp }` against real
//! servers (the test server of `support::mcp_server`, the npm reference servers, the
//! conformance suite's client scenarios).

mod annotations;
mod check;
mod conformance;
mod diagnostics;
mod harness;
mod import;
mod reference;
mod test_server;
mod wildcard;
