//! MCP (issue 21): toolgate as an MCP server (`serve/`) and as an MCP client behind
//! `handler: { kind: mcp }` (`client/`).

mod client;
mod serve;
