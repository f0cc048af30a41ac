//! MCP servers as the engine uses them: the client connections behind `handler: { kind: mcp }`
//! and their supervision (issue 21). The protocol itself is the official SDK's (`rmcp`).
//!
//! Place in the flow: the executor keeps one [`Pool`] for the engine's lifetime. Installing a
//! snapshot asks the pool for each server the snapshot declares ([`Pool::server`]): an
//! unchanged entry gets the server it already had (its connection survives the reload), a
//! changed or new entry gets a fresh one, and servers no snapshot declares any more are
//! dropped from the pool (their connection closes when the last running call lets go).
//! Servers start on their first call (module `server` has the supervision rules); the handler in
//! `handler::mcp` maps a call's input and result to and from MCP.
//!
//! This module knows the model and the SDK only; everything read from the environment
//! (header values, the process environment) is filled in by the caller.

mod client;
mod server;
mod stdio;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

pub use client::ProgressFn;
pub use server::{McpError, Server, ServerSpec, Transport};

/// The engine's servers by name.
#[derive(Debug)]
pub struct Pool {
    servers: Mutex<HashMap<String, Arc<Server>>>,
    /// Counts the `notifications/tools/list_changed` of every server of the pool.
    tool_changes: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Default for Pool {
    fn default() -> Self {
        Self {
            servers: Mutex::default(),
            tool_changes: Arc::new(tokio::sync::watch::Sender::new(0)),
        }
    }
}

impl Pool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// The server of that name, if the pool has one.
    pub fn get(&self, name: &str) -> Option<Arc<Server>> {
        self.lock().get(name).cloned()
    }

    /// Changes (its count goes up) whenever a server of the pool sends
    /// `notifications/tools/list_changed`.
    pub fn tool_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.tool_changes.subscribe()
    }

    /// The server for `spec`: the one the pool has under its name when its spec is the same,
    /// otherwise a new one (which replaces it in the pool).
    pub fn server(&self, spec: ServerSpec) -> Arc<Server> {
        let mut servers = self.lock();
        if let Some(server) = servers.get(&spec.name)
            && server.spec() == &spec
        {
            return Arc::clone(server);
        }
        let server = Arc::new(Server::with_changes(
            spec.clone(),
            Arc::clone(&self.tool_changes),
        ));
        servers.insert(spec.name, Arc::clone(&server));
        server
    }

    /// Drops the servers whose names `keep` does not return true for.
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.lock().retain(|name, _| keep(name));
    }

    /// Shuts every server down (and empties the pool).
    pub async fn shutdown(&self) {
        let servers: Vec<Arc<Server>> = self.lock().drain().map(|(_, server)| server).collect();
        for server in servers {
            server.shutdown().await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Server>>> {
        self.servers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
