//! [`SlotText`]: a budgeted text, shared cheaply, that remembers its own measurements.
//!
//! The finalizer runs after a batch and again after `PostToolBatch` hooks, and an output can
//! be megabytes long. Counting characters and hashing are the only costs that grow with the
//! size of an output, so a `SlotText` computes each at most once and shares the result with
//! every clone. An executor can also call [`SlotText::prepare`] as each call's output
//! arrives (e.g. on a blocking thread while the rest of the batch still runs), so that the
//! finalizer at the end of the batch only reads and writes the bytes it keeps.

use std::fmt;
use std::sync::{Arc, OnceLock};

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
    fn clones_share_the_cache_and_compare_by_text() {
        let text = SlotText::from("日本語");
        let clone = text.clone();
        assert_eq!(text.len(BudgetUnit::Chars), 3);
        assert_eq!(clone.facts.chars.get(), Some(&3));
        assert_eq!(clone.len(BudgetUnit::Bytes), 9);
        assert_eq!(text, SlotText::from("日本語".to_owned()));
    }
}
