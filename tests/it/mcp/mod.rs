//! MCP: toolgate as an MCP server (`serve/`).

mod serve;
