//! [`SlotText`]: a budgeted text, shared cheaply, that remembers its own measurements.
//!
//! The finalizer runs after a batch and again after `PostToolBatch` hooks, and an output can
//! be megabytes long. Counting characters and hashing are the only costs that grow with the
//! size of an output, so a `SlotText` computes each at most once and shares the result with
//! every clone. An executor can also call [`SlotText::prepare`] as each call's output
//! arrives (e.g. on a blocking thread while the rest of the batch still runs), so that the
//! finalizer at the end of the batch only reads and writes the bytes it keeps.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use super::measure;
use crate::model::units::BudgetUnit;

/// A SHA-256 digest; displays as lowercase hex.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256Digest(pub [u8; 32]);

impl Sha256Digest {
    /// The digest of `text`.
    pub fn of(text: &str) -> Self {
        Self(Sha256::digest(text.as_bytes()).into())
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Digest({self})")
    }
}

#[derive(Default)]
struct Facts {
    chars: OnceLock<u64>,
    sha256: OnceLock<Sha256Digest>,
}

/// A model-facing text with cached measurements. Clones share the text and the cache.
#[derive(Clone)]
pub struct SlotText {
    text: Arc<str>,
    facts: Arc<Facts>,
}

impl SlotText {
    /// Wraps a text.
    pub fn new(text: impl Into<Arc<str>>) -> Self {
        Self {
            text: text.into(),
            facts: Arc::default(),
        }
    }

    /// Wraps a text whose SHA-256 digest the caller already computed (for example while
    /// streaming the output). The caller vouches that `digest` is the digest of `text`.
    pub fn with_sha256(text: impl Into<Arc<str>>, digest: Sha256Digest) -> Self {
        let slot = Self::new(text);
        // A fresh cell: setting it cannot fail, and if it did the digest would be recomputed.
        let _ = slot.facts.sha256.set(digest);
        slot
    }

    /// Wraps a text whose character count is already known.
    pub(crate) fn with_char_count(text: impl Into<Arc<str>>, chars: u64) -> Self {
        let slot = Self::new(text);
        let _ = slot.facts.chars.set(chars);
        slot
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The text as a shared string (no copy), e.g. to hand it to an artifact store.
    pub fn shared(&self) -> Arc<str> {
        Arc::clone(&self.text)
    }

    /// The length in `unit`; characters are counted once per text.
    pub fn len(&self, unit: BudgetUnit) -> u64 {
        match unit {
            BudgetUnit::Bytes => measure::measure(&self.text, unit),
            BudgetUnit::Chars => *self
                .facts
                .chars
                .get_or_init(|| measure::count_chars(&self.text)),
        }
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The SHA-256 digest of the text; computed once per text.
    pub fn sha256(&self) -> Sha256Digest {
        *self
            .facts
            .sha256
            .get_or_init(|| Sha256Digest::of(&self.text))
    }

    /// Computes and caches everything the finalizer may need (length in `unit`, digest), so
    /// a later finalization does no work proportional to the text's size.
    pub fn prepare(&self, unit: BudgetUnit) {
        self.len(unit);
        self.sha256();
    }

    /// Whether [`Self::len`] in `unit` is already known without reading the text.
    fn length_known(&self, unit: BudgetUnit) -> bool {
        match unit {
            BudgetUnit::Bytes => true,
            BudgetUnit::Chars => self.facts.chars.get().is_some(),
        }
    }

    fn digest_known(&self) -> bool {
        self.facts.sha256.get().is_some()
    }
}

/// Work the finalizer can spread over threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measurement {
    /// The length in a unit.
    Length(BudgetUnit),
    /// The SHA-256 digest.
    Digest,
}

/// Below this many bytes still to read, spawning threads costs more than it saves.
const PARALLEL_THRESHOLD: usize = 4 << 20;

/// The number of cores, asked once per process.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| thread::available_parallelism().map_or(1, usize::from))
}

/// Computes and caches `what` for every text, in parallel over the available cores when the
/// texts still to read are large (the only work of the finalizer that grows with the size of
/// the outputs). Blocks the calling thread until done.
pub fn measure_all(texts: &[&SlotText], what: Measurement) {
    let pending: Vec<&SlotText> = texts
        .iter()
        .copied()
        .filter(|text| match what {
            Measurement::Length(unit) => !text.length_known(unit),
            Measurement::Digest => !text.digest_known(),
        })
        .collect();
    let work = |text: &SlotText| match what {
        Measurement::Length(unit) => {
            text.len(unit);
        }
        Measurement::Digest => {
            text.sha256();
        }
    };
    let bytes: usize = pending.iter().map(|text| text.as_str().len()).sum();
    // Small work stays on this thread; only then is the core count worth asking for (it
    // reads cgroup files, which costs more than measuring a small text).
    if bytes < PARALLEL_THRESHOLD || pending.len() <= 1 {
        pending.iter().for_each(|text| work(text));
        return;
    }
    let threads = cores().min(pending.len());
    if threads <= 1 {
        pending.iter().for_each(|text| work(text));
        return;
    }
    // Largest first, pulled from a shared counter: threads stay busy until the end.
    let mut pending = pending;
    pending.sort_by_key(|text| std::cmp::Reverse(text.as_str().len()));
    let next = AtomicUsize::new(0);
    let pull = || {
        while let Some(text) = pending.get(next.fetch_add(1, Ordering::Relaxed)) {
            work(text);
        }
    };
    thread::scope(|scope| {
        for _ in 1..threads {
            // A thread that cannot be spawned leaves its share to the others.
            let _ = thread::Builder::new().spawn_scoped(scope, pull);
        }
        pull();
    });
}

impl From<String> for SlotText {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

impl From<&str> for SlotText {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl PartialEq for SlotText {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

// A `SlotText` reads like the string it holds (results hand their model content around as
// one), so comparisons with plain strings and `&str` methods work directly. `len` is the
// exception: the inherent `len(unit)` shadows `str::len`, so a byte count is written
// `as_str().len()` and never taken by accident for a budget length.
impl std::ops::Deref for SlotText {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

impl AsRef<str> for SlotText {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl PartialEq<str> for SlotText {
    fn eq(&self, other: &str) -> bool {
        &*self.text == other
    }
}

impl PartialEq<&str> for SlotText {
    fn eq(&self, other: &&str) -> bool {
        &*self.text == *other
    }
}

impl PartialEq<String> for SlotText {
    fn eq(&self, other: &String) -> bool {
        *self.text == **other
    }
}

impl PartialEq<SlotText> for str {
    fn eq(&self, other: &SlotText) -> bool {
        self == &*other.text
    }
}

impl PartialEq<SlotText> for &str {
    fn eq(&self, other: &SlotText) -> bool {
        *self == &*other.text
    }
}

impl PartialEq<SlotText> for String {
    fn eq(&self, other: &SlotText) -> bool {
        **self == *other.text
    }
}

impl From<SlotText> for String {
    fn from(text: SlotText) -> Self {
        text.text.to_string()
    }
}

impl From<Arc<str>> for SlotText {
    fn from(text: Arc<str>) -> Self {
        Self::new(text)
    }
}

impl Eq for SlotText {}

impl fmt::Debug for SlotText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.text, f)
    }
}

impl fmt::Display for SlotText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for SlotText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for SlotText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_lowercase_hex_of_the_text() {
        assert_eq!(
            SlotText::from("abc").sha256().to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn measure_all_fills_every_cache() {
        let texts: Vec<SlotText> = (0..8)
            .map(|i| {
                SlotText::new(
                    "é".repeat(1 << 20)
                        .replace('é', if i % 2 == 0 { "é" } else { "e" }),
                )
            })
            .collect();
        let refs: Vec<&SlotText> = texts.iter().collect();
        measure_all(&refs, Measurement::Length(BudgetUnit::Chars));
        measure_all(&refs, Measurement::Digest);
        for text in &texts {
            assert_eq!(text.facts.chars.get(), Some(&(1 << 20)));
            assert_eq!(
                text.facts.sha256.get(),
                Some(&Sha256Digest::of(text.as_str()))
            );
        }
    }

    #[test]
    fn clones_share_the_cache_and_compare_by_text() {
        let text = SlotText::from("日本語");
        let clone = text.clone();
        assert_eq!(text.len(BudgetUnit::Chars), 3);
        assert_eq!(clone.facts.chars.get(), Some(&3));
        assert_eq!(clone.len(BudgetUnit::Bytes), 9);
        assert_eq!(text, SlotText::from("日本語".to_owned()));
    }
}
