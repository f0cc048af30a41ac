//! A store that fails on demand, for tests of the "a failed write never fails a call" paths
//! (full disk, unwritable folder) without touching a real file system.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use futures::FutureExt;
use futures::future::{self, BoxFuture};

use super::{
    ArtifactError, ArtifactRef, ArtifactRequest, ArtifactStore, MemoryArtifactStore, SessionId,
};

/// When a [`FaultyArtifactStore`] fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultPlan {
    /// Every write goes through to the inner store.
    Never,
    /// Every write fails.
    Always,
    /// The first n writes go through; every later one fails.
    AfterWrites(usize),
}

/// Wraps a store and fails writes as planned, with the error a full disk gives (`ENOSPC`).
pub struct FaultyArtifactStore<S = MemoryArtifactStore> {
    inner: S,
    plan: Mutex<FaultPlan>,
    attempts: AtomicUsize,
}

impl FaultyArtifactStore<MemoryArtifactStore> {
    /// A memory store whose every write fails.
    pub fn always_failing() -> Self {
        Self::new(MemoryArtifactStore::new(), FaultPlan::Always)
    }
}

impl<S: ArtifactStore> FaultyArtifactStore<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, plan: FaultPlan) -> Self {
        Self {
            inner,
            plan: Mutex::new(plan),
            attempts: AtomicUsize::new(0),
        }
    }

    /// Writes attempted.
    pub fn attempts(&self) -> usize {
        self.attempts.load(Ordering::SeqCst)
    }

    /// The error an injected failure returns.
    pub fn injected_error() -> ArtifactError {
        ArtifactError::io(
            "<injected>",
            io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device (injected)",
            ),
        )
    }
}

impl<S: ArtifactStore> ArtifactStore for FaultyArtifactStore<S> {
    fn write(&self, request: ArtifactRequest) -> BoxFuture<'_, Result<ArtifactRef, ArtifactError>> {
        let index = self.attempts.fetch_add(1, Ordering::SeqCst);
        let plan = *self.plan.lock().unwrap_or_else(PoisonError::into_inner);
        let fail = match plan {
            FaultPlan::Never => false,
            FaultPlan::Always => true,
            FaultPlan::AfterWrites(n) => index >= n,
        };
        if fail {
            future::ready(Err(Self::injected_error())).boxed()
        } else {
            self.inner.write(request)
        }
    }

    fn close_session<'a>(
        &'a self,
        session: &'a SessionId,
    ) -> BoxFuture<'a, Result<(), ArtifactError>> {
        self.inner.close_session(session)
    }
}
