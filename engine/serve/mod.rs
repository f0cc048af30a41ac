//! JSON-RPC 2.0 over stdio for agent hosts.
