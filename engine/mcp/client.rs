//! The client half of a connection: what toolgate tells a server about itself, and where the
//! server's notifications go (progress to the call that asked for it, list changes to the
//! tool list cache).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken,
    ProtocolVersion,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};

/// Receives the progress of one call, as text.
pub type ProgressFn = Arc<dyn Fn(String) + Send + Sync>;

/// Progress receivers by the progress token of the request they belong to.
#[derive(Default)]
pub(super) struct ProgressRoutes {
    routes: Mutex<HashMap<ProgressToken, ProgressFn>>,
}

impl ProgressRoutes {
    /// Routes the progress of `token` to `receiver` until the returned guard is dropped.
    pub(super) fn route(self: &Arc<Self>, token: ProgressToken, receiver: ProgressFn) -> Route {
        self.lock().insert(token.clone(), receiver);
        Route {
            routes: Arc::clone(self),
            token,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ProgressFn>> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Removes a progress route when the call ends.
pub(super) struct Route {
    routes: Arc<ProgressRoutes>,
    token: ProgressToken,
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.token);
    }
}

/// toolgate as an MCP client.
pub(super) struct Client {
    pub(super) progress: Arc<ProgressRoutes>,
    /// Bumped on every `notifications/tools/list_changed`.
    pub(super) tools_changed: Arc<AtomicU64>,
    /// Bumped likewise, for whoever watches every server of a pool.
    pub(super) changes: Arc<tokio::sync::watch::Sender<u64>>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let receiver = self.progress.lock().get(&params.progress_token).cloned();
        if let Some(receiver) = receiver {
            receiver(progress_text(&params));
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.fetch_add(1, Ordering::Relaxed);
        self.changes.send_modify(|count| *count += 1);
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        );
        // The newest version with the `initialize` handshake, which the servers of today
        // speak; a server answering with an older version it supports is accepted.
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info
    }
}

/// One progress notification as a line of text: its message, or `progress/total`.
fn progress_text(params: &ProgressNotificationParam) -> String {
    let amount = match params.total {
        Some(total) => format!("{}/{}", params.progress, total),
        None => params.progress.to_string(),
    };
    match &params.message {
        Some(message) => format!("{message} ({amount})"),
        None => amount,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_as_message_and_amount() {
        let token = ProgressToken(rmcp::model::NumberOrString::Number(1));
        let plain = ProgressNotificationParam::new(token.clone(), 2.0);
        assert_eq!(progress_text(&plain), "2");
        let full = ProgressNotificationParam::new(token, 2.0)
            .with_total(5.0)
            .with_message("copying");
        assert_eq!(progress_text(&full), "copying (2/5)");
    }
}
