//! Handlers: what actually runs a call (command, http, mcp, native).
