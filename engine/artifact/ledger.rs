//! The per-session book both stores keep: bytes reserved and written (for the caps), names
//! handed out (so repeated call ids get distinct files), and `temporary` artifacts to remove
//! when the session ends.
//!
//! Every operation is a short critical section under one mutex and does no I/O, so a store's
//! `write` can reserve synchronously before its future starts.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::name::numbered_file_name;
use super::{ArtifactError, SessionId};

/// Size limits of a store, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// A single artifact larger than this is not written.
    pub max_file: u64,
    /// The most a session's artifacts may take together.
    pub max_session: u64,
}

impl Limits {
    /// SPEC §8.2: 50 MiB per file, 500 MiB per session.
    pub const fn spec_defaults() -> Self {
        Self {
            max_file: 50 * 1024 * 1024,
            max_session: 500 * 1024 * 1024,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::spec_defaults()
    }
}

#[derive(Default)]
struct Book {
    used: u64,
    names: HashMap<String, u32>,
    temporaries: Vec<PathBuf>,
}

/// The books of all sessions of one store.
pub(crate) struct Ledger {
    limits: Limits,
    /// Each reservation is rounded up to whole blocks of this size (at least one).
    block: u64,
    sessions: Mutex<HashMap<SessionId, Book>>,
}

impl Ledger {
    pub(crate) fn new(limits: Limits) -> Arc<Self> {
        Self::with_block(limits, 1)
    }

    /// A ledger that charges each file its size rounded up to whole blocks of `block` bytes,
    /// and at least one block: what it takes on disk, so that many tiny files cannot take
    /// far more disk than the cap says.
    pub(crate) fn with_block(limits: Limits, block: u64) -> Arc<Self> {
        Arc::new(Self {
            limits,
            block: block.max(1),
            sessions: Mutex::default(),
        })
    }

    /// What a file of `bytes` is charged against the session cap.
    fn charge(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.block).max(1).saturating_mul(self.block)
    }

    fn books(&self) -> MutexGuard<'_, HashMap<SessionId, Book>> {
        // Nothing panics while the lock is held; a poisoned map is still consistent.
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks the per-file limit and reserves `bytes` of the session's quota.
    pub(crate) fn reserve(
        self: &Arc<Self>,
        session: &SessionId,
        bytes: u64,
    ) -> Result<Reservation, ArtifactError> {
        if bytes > self.limits.max_file {
            return Err(ArtifactError::TooLarge {
                bytes,
                limit: self.limits.max_file,
            });
        }
        let charged = self.charge(bytes);
        let mut books = self.books();
        let book = books.entry(session.clone()).or_default();
        // INVARIANT: book.used ≤ max_session at all times: checked and added under one lock.
        match book.used.checked_add(charged) {
            Some(total) if total <= self.limits.max_session => book.used = total,
            Some(_) | None => {
                return Err(ArtifactError::SessionFull {
                    bytes,
                    used: book.used,
                    limit: self.limits.max_session,
                });
            }
        }
        Ok(Reservation {
            ledger: Arc::clone(self),
            session: session.clone(),
            bytes: charged,
            kept: false,
        })
    }

    /// The next unused file name for `stem` in the session.
    pub(crate) fn next_name(&self, session: &SessionId, stem: &str) -> String {
        let mut books = self.books();
        let book = books.entry(session.clone()).or_default();
        let count = book.names.entry(stem.to_owned()).or_insert(0);
        *count = count.saturating_add(1);
        numbered_file_name(stem, *count)
    }

    pub(crate) fn record_temporary(&self, session: &SessionId, path: PathBuf) {
        self.books()
            .entry(session.clone())
            .or_default()
            .temporaries
            .push(path);
    }

    pub(crate) fn take_temporaries(&self, session: &SessionId) -> Vec<PathBuf> {
        self.books()
            .get_mut(session)
            .map(|book| std::mem::take(&mut book.temporaries))
            .unwrap_or_default()
    }

    pub(crate) fn take_all_temporaries(&self) -> Vec<PathBuf> {
        self.books()
            .values_mut()
            .flat_map(|book| std::mem::take(&mut book.temporaries))
            .collect()
    }

    /// Bytes written or reserved in the session.
    pub(crate) fn used(&self, session: &SessionId) -> u64 {
        self.books().get(session).map_or(0, |book| book.used)
    }

    fn release(&self, session: &SessionId, bytes: u64) {
        if let Some(book) = self.books().get_mut(session) {
            book.used = book.used.saturating_sub(bytes);
        }
    }
}

/// Reserved session quota; released on drop unless [`Reservation::keep`] was called.
pub(crate) struct Reservation {
    ledger: Arc<Ledger>,
    session: SessionId,
    bytes: u64,
    kept: bool,
}

impl Reservation {
    /// The write succeeded: the bytes stay counted.
    pub(crate) fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.kept {
            self.ledger.release(&self.session, self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_charged_in_whole_blocks() {
        let ledger = Ledger::with_block(
            Limits {
                max_file: 10_000,
                max_session: 3 * 4096,
            },
            4096,
        );
        let s = SessionId::from("s");
        // Empty and one-byte files take a block each; 4097 bytes take two.
        ledger.reserve(&s, 0).unwrap().keep();
        assert_eq!(ledger.used(&s), 4096);
        ledger.reserve(&s, 1).unwrap().keep();
        assert_eq!(ledger.used(&s), 8192);
        assert!(matches!(
            ledger.reserve(&s, 4097),
            Err(ArtifactError::SessionFull { bytes: 4097, .. })
        ));
        ledger.reserve(&s, 4096).unwrap().keep();
        assert_eq!(ledger.used(&s), 3 * 4096);
        assert!(ledger.reserve(&s, 1).is_err());
    }

    #[test]
    fn reservations_are_released_unless_kept() {
        let ledger = Ledger::new(Limits {
            max_file: 10,
            max_session: 15,
        });
        let s = SessionId::from("s");
        let first = ledger.reserve(&s, 10).unwrap();
        assert!(matches!(
            ledger.reserve(&s, 6),
            Err(ArtifactError::SessionFull { used: 10, .. })
        ));
        assert!(matches!(
            ledger.reserve(&s, 11),
            Err(ArtifactError::TooLarge { .. })
        ));
        drop(first);
        assert_eq!(ledger.used(&s), 0);
        ledger.reserve(&s, 10).unwrap().keep();
        ledger.reserve(&s, 5).unwrap().keep();
        assert_eq!(ledger.used(&s), 15);
        assert!(ledger.reserve(&s, 1).is_err());
        // Another session has its own quota.
        assert!(ledger.reserve(&SessionId::from("t"), 10).is_ok());
    }

    #[test]
    fn names_repeat_with_numbers() {
        let ledger = Ledger::new(Limits::default());
        let s = SessionId::from("s");
        let names: Vec<String> = (0..3).map(|_| ledger.next_name(&s, "c")).collect();
        assert_eq!(names, ["c.txt", "c.2.txt", "c.3.txt"]);
        assert_eq!(ledger.next_name(&SessionId::from("t"), "c"), "c.txt");
    }
}
