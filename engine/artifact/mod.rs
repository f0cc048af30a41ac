//! The artifact store: where full outputs that did not fit the model budget are kept
//! (SPEC §8.2).
//!
//! The producer stage writes an output here when its contract says `overflow: artifact`;
//! the batch finalizer writes a result here when it has to cut one the producer did not
//! persist. Both only name the returned path to the model; neither ever fails a call because
//! a write failed.
//!
//! [`ArtifactStore`] is an object-safe async trait (futures are boxed, no `async-trait`).
//! [`FsArtifactStore`] writes one folder per session with atomic, 0600, symlink-refusing
//! writes under per-file and per-session caps; [`MemoryArtifactStore`] keeps artifacts in
//! memory for embedders, tests and benchmarks; [`testing::FaultyArtifactStore`] fails on
//! demand.
//!
//! Quota is reserved synchronously inside [`ArtifactStore::write`], before the returned
//! future does any I/O, and released if the write fails or the future is dropped: parallel
//! writes can never overshoot the session cap together, and the order of `write` calls (not
//! the scheduling of their I/O) decides who gets the last bytes.

mod fs;
mod ledger;
mod memory;
pub mod name;
#[cfg(test)]
pub mod testing;

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub use fs::{DEFAULT_BLOCK_SIZE, FsArtifactStore, FsStoreConfig};
pub use ledger::Limits;
pub use memory::MemoryArtifactStore;

use crate::model::CallId;
pub use crate::model::contract::Retention;

/// The id of the session artifacts belong to; names its folder, so it must consist of
/// `[A-Za-z0-9_-]` (1 to 128 characters, at least one letter or digit).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(Arc<str>);

impl SessionId {
    /// Wraps a session id; it is checked when a store uses it.
    pub fn new(value: impl Into<Arc<str>>) -> Self {
        Self(value.into())
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionId({:?})", &*self.0)
    }
}

impl From<&str> for SessionId {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

/// One artifact to write: the full text of one output.
#[derive(Clone, Debug)]
pub struct ArtifactRequest {
    /// The session the artifact belongs to.
    pub session: SessionId,
    /// The call whose output this is; names the file.
    pub call_id: CallId,
    /// The full text.
    pub content: Arc<str>,
    /// How long to keep it.
    pub retention: Retention,
}

/// A written artifact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactRef {
    /// Where it is; this is what the model is told.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// The retention actually applied (a store without a project directory keeps `project`
    /// artifacts in the session folder and says so here).
    pub retention: Retention,
}

/// The two failures SPEC §8.2 gives a model-facing stub; the text itself is policy data
/// (`Templates::stub` in the budget module).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stub {
    /// `(invalid call id)`.
    InvalidCallId,
    /// `(file too large to persist)`.
    FileTooLarge,
}

/// Why an artifact was not written. A failed write never fails a call: callers fall back to
/// truncation and, for the two cases that have one, show the model a stub
/// ([`ArtifactError::stub`]).
#[derive(Clone, Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The call id cannot name a file.
    #[error("call id `{call_id}` cannot name an artifact file: it needs a letter or digit")]
    InvalidCallId {
        /// The id as given.
        call_id: String,
    },
    /// The session id cannot name a folder.
    #[error(
        "session id `{session}` cannot name an artifact folder: use 1 to 128 of `A-Z a-z 0-9 _ -`"
    )]
    InvalidSessionId {
        /// The id as given.
        session: String,
    },
    /// The output is over the per-file limit.
    #[error("output of {bytes} bytes is over the artifact file limit of {limit} bytes")]
    TooLarge {
        /// The output's size.
        bytes: u64,
        /// `max_file`.
        limit: u64,
    },
    /// The session's artifacts would exceed the per-session limit.
    #[error(
        "artifact of {bytes} bytes would exceed the session limit of {limit} bytes ({used} bytes used)"
    )]
    SessionFull {
        /// The output's size.
        bytes: u64,
        /// Bytes already written or reserved in the session.
        used: u64,
        /// `max_session`.
        limit: u64,
    },
    /// The batch already wrote as many artifact files as one batch may
    /// (`artifacts.max_batch_files`).
    #[error("the batch already wrote {limit} artifact files, the most one batch may write")]
    BatchFiles {
        /// `max_batch_files`.
        limit: u64,
    },
    /// A symbolic link sits where the store would create or write.
    #[error("refusing to follow the symbolic link at `{path}`")]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// Something that is not a directory sits where the store needs one.
    #[error("`{path}` is not a directory")]
    NotADirectory {
        /// The offending path.
        path: PathBuf,
    },
    /// The file system refused.
    #[error("cannot write artifact under `{path}`: {source}")]
    Io {
        /// The file or folder being written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: Arc<io::Error>,
    },
}

impl ArtifactError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// The stub the model sees for this failure, for the two SPEC §8.2 names: an invalid
    /// call id and a file over the per-file limit.
    pub fn stub(&self) -> Option<Stub> {
        match self {
            ArtifactError::InvalidCallId { .. } => Some(Stub::InvalidCallId),
            ArtifactError::TooLarge { .. } => Some(Stub::FileTooLarge),
            ArtifactError::InvalidSessionId { .. }
            | ArtifactError::SessionFull { .. }
            | ArtifactError::BatchFiles { .. }
            | ArtifactError::Symlink { .. }
            | ArtifactError::NotADirectory { .. }
            | ArtifactError::Io { .. } => None,
        }
    }
}

/// Where full outputs go. Object safe: use it as `&dyn ArtifactStore` or
/// `Arc<dyn ArtifactStore>`.
pub trait ArtifactStore: Send + Sync {
    /// Writes one artifact.
    ///
    /// Implementations check the call id, the per-file limit and reserve the session quota
    /// (and pick the file name) synchronously, before returning the future; the reservation
    /// is released if the write fails or the future is dropped unfinished.
    fn write(&self, request: ArtifactRequest) -> BoxFuture<'_, Result<ArtifactRef, ArtifactError>>;

    /// Ends a session: removes its `temporary` artifacts. Other artifacts are kept; the
    /// session may write again afterwards.
    fn close_session<'a>(
        &'a self,
        session: &'a SessionId,
    ) -> BoxFuture<'a, Result<(), ArtifactError>>;
}

impl<S: ArtifactStore + ?Sized> ArtifactStore for Arc<S> {
    fn write(&self, request: ArtifactRequest) -> BoxFuture<'_, Result<ArtifactRef, ArtifactError>> {
        (**self).write(request)
    }

    fn close_session<'a>(
        &'a self,
        session: &'a SessionId,
    ) -> BoxFuture<'a, Result<(), ArtifactError>> {
        (**self).close_session(session)
    }
}
