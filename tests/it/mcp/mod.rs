//! MCP (issue 21): toolgate's MCP client behind `handler: { kind: mcp }` (`client`).

mod client;
