//! `toolgate mcp serve` driven by real MCP clients: rmcp's client over stdio and streamable
//! HTTP, the official TypeScript SDK client, and the official conformance suite.

mod cli;
mod conformance;
mod http;
mod node;
mod scenarios;
mod stdio;
mod support;
