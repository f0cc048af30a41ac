//! [`MemoryArtifactStore`]: artifacts kept in memory, for embedders that have no disk to
//! spare, for tests and for benchmarks.
//!
//! It follows the same rules as the file store (name normalisation, repeated ids, per-file
//! and per-session caps with synchronous reservation, `temporary` artifacts dropped when the
//! session ends), so tests written against it hold for the file store too. The content is
//! shared (`Arc<str>`), never copied. Paths are virtual:
//! `<root>/<session>/<stem>.txt` (root `memory` by default; `project` retention uses
//! `<root>/project/<session>/...`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::FutureExt;
use futures::future::{self, BoxFuture};

use super::ledger::{Ledger, Limits};
use super::name::{file_stem, session_folder};
use super::{ArtifactError, ArtifactRef, ArtifactRequest, ArtifactStore, Retention, SessionId};

/// Artifacts in memory; see the module documentation.
pub struct MemoryArtifactStore {
    root: PathBuf,
    ledger: Arc<Ledger>,
    files: Mutex<BTreeMap<PathBuf, Arc<str>>>,
}

impl MemoryArtifactStore {
    /// An empty store with the SPEC's limits.
    pub fn new() -> Self {
        Self::with_limits(Limits::spec_defaults())
    }

    /// An empty store with the given limits.
    pub fn with_limits(limits: Limits) -> Self {
        Self {
            root: PathBuf::from("memory"),
            ledger: Ledger::new(limits),
            files: Mutex::default(),
        }
    }

    /// The same store with paths under `root`.
    pub fn with_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = root.into();
        self
    }

    fn files(&self) -> MutexGuard<'_, BTreeMap<PathBuf, Arc<str>>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The content of an artifact.
    pub fn get(&self, path: &Path) -> Option<Arc<str>> {
        self.files().get(path).cloned()
    }

    /// The paths of all artifacts, sorted.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files().keys().cloned().collect()
    }

    /// How many artifacts the store holds.
    pub fn len(&self) -> usize {
        self.files().len()
    }

    /// Whether the store holds no artifact.
    pub fn is_empty(&self) -> bool {
        self.files().is_empty()
    }

    /// Bytes written or reserved in a session.
    pub fn session_usage(&self, session: &SessionId) -> u64 {
        self.ledger.used(session)
    }

    fn write_now(&self, request: ArtifactRequest) -> Result<ArtifactRef, ArtifactError> {
        let folder = session_folder(&request.session)?;
        let stem = file_stem(request.call_id.as_str())?;
        let bytes = u64::try_from(request.content.len()).unwrap_or(u64::MAX);
        let reservation = self.ledger.reserve(&request.session, bytes)?;
        let name = self.ledger.next_name(&request.session, &stem);
        let path = match request.retention {
            Retention::Project => self.root.join("project").join(folder).join(name),
            Retention::Session | Retention::Temporary => self.root.join(folder).join(name),
        };
        self.files().insert(path.clone(), request.content);
        reservation.keep();
        if request.retention == Retention::Temporary {
            self.ledger.record_temporary(&request.session, path.clone());
        }
        Ok(ArtifactRef {
            path,
            bytes,
            retention: request.retention,
        })
    }
}

impl Default for MemoryArtifactStore {
    fn default() -> Self {
        Self::new()
    }
}

impl ArtifactStore for MemoryArtifactStore {
    fn write(&self, request: ArtifactRequest) -> BoxFuture<'_, Result<ArtifactRef, ArtifactError>> {
        future::ready(self.write_now(request)).boxed()
    }

    fn close_session<'a>(
        &'a self,
        session: &'a SessionId,
    ) -> BoxFuture<'a, Result<(), ArtifactError>> {
        let paths = self.ledger.take_temporaries(session);
        let mut files = self.files();
        for path in paths {
            files.remove(&path);
        }
        future::ready(Ok(())).boxed()
    }
}
