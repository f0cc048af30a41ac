//! Calls of different client requests share the engine, and each request runs as its own
//! one-call batch, so the scheduler (which keeps a call that must run alone apart from the
//! others of its batch) never sees two requests together. This lock does across requests
//! what grouping does within a batch: a call the scheduler runs `alone` holds it exclusively,
//! a `shared` call holds it shared. Waiters are served in arrival order (tokio's lock is
//! fair), so a call that must run alone is not starved by a stream of shared ones.
//!
//! The lock is held for the whole one-call batch, approval wait included: within a batch an
//! `alone` call's group also spans its approval.

use std::sync::Arc;

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use crate::schedule::Concurrency;

/// The lock every `tools/call` takes before its batch runs.
#[derive(Clone, Debug, Default)]
pub struct CallLock(Arc<RwLock<()>>);

/// A held lock; released on drop.
#[derive(Debug)]
pub enum Held {
    /// Held with other shared calls (released when the guard drops).
    Shared { _guard: OwnedRwLockReadGuard<()> },
    /// Held alone.
    Alone { _guard: OwnedRwLockWriteGuard<()> },
}

impl CallLock {
    /// Waits until a call of this class may run.
    pub async fn acquire(&self, class: Concurrency) -> Held {
        match class {
            Concurrency::Shared => Held::Shared {
                _guard: Arc::clone(&self.0).read_owned().await,
            },
            Concurrency::Alone => Held::Alone {
                _guard: Arc::clone(&self.0).write_owned().await,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn alone_excludes_everything_and_shared_excludes_alone() {
        let lock = CallLock::default();
        let first = lock.acquire(Concurrency::Shared).await;
        // Shared calls run together.
        let second = lock.acquire(Concurrency::Shared).await;
        let mut alone = Box::pin(lock.acquire(Concurrency::Alone));
        assert!(futures::poll!(alone.as_mut()).is_pending());
        drop(first);
        assert!(futures::poll!(alone.as_mut()).is_pending());
        drop(second);
        let held = alone.await;
        // While one runs alone, no shared call starts.
        let mut shared = Box::pin(lock.acquire(Concurrency::Shared));
        assert!(futures::poll!(shared.as_mut()).is_pending());
        drop(held);
        assert!(matches!(shared.await, Held::Shared { .. }));
    }

    #[tokio::test]
    async fn a_waiting_alone_call_is_not_overtaken_by_later_shared_ones() {
        let lock = CallLock::default();
        let running = lock.acquire(Concurrency::Shared).await;
        let mut alone = Box::pin(lock.acquire(Concurrency::Alone));
        assert!(futures::poll!(alone.as_mut()).is_pending());
        let mut later = Box::pin(lock.acquire(Concurrency::Shared));
        assert!(futures::poll!(later.as_mut()).is_pending());
        drop(running);
        let held = alone.await;
        assert!(futures::poll!(later.as_mut()).is_pending());
        drop(held);
        later.await;
    }
}
