//! Identifier newtypes. They keep tool names, call ids, rule names and the like from being
//! mixed up at API boundaries; all are cheap to clone (`Arc<str>`).

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! id_newtype {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
        #[serde(transparent)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Wraps a string as this identifier.
            pub fn new(value: impl Into<Arc<str>>) -> Self {
                Self(value.into())
            }

            /// The identifier as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // `pad` honours width and alignment (`{:<12}`), unlike `write_str`.
                f.pad(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }

        /// A borrowed identifier equals the same identifier owned (a plan borrows its
        /// batch's call ids; a run's outcome owns them).
        impl PartialEq<$name> for &$name {
            fn eq(&self, other: &$name) -> bool {
                self.0 == other.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self::new(value)
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self::new(value)
            }
        }
    };
}

id_newtype!(
    /// The canonical name of a tool (`Bash`, `mcp__github__create_issue`).
    ToolName
);
id_newtype!(
    /// The id the model gave a tool call; unique within a batch.
    CallId
);
id_newtype!(
    /// The id of one executed batch.
    BatchId
);
id_newtype!(
    /// The name of a permission rule.
    RuleName
);
id_newtype!(
    /// The name of a hook.
    HookName
);
id_newtype!(
    /// The name of an admission gate.
    GateName
);
id_newtype!(
    /// The name of a turn mode (`plan`, `offpeak`, ...).
    ModeName
);

impl BatchId {
    /// A fresh id, `b` and 32 hex digits: 64 random bits drawn once per process, then a
    /// counter. Unique within the process and, with overwhelming probability, across
    /// processes; a batch costs no system call for its id.
    pub fn generate() -> Self {
        use std::sync::LazyLock;
        use std::sync::atomic::{AtomicU64, Ordering};
        static PROCESS: LazyLock<u64> = LazyLock::new(|| uuid::Uuid::new_v4().as_u64_pair().0);
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let count = NEXT.fetch_add(1, Ordering::Relaxed);
        // Without `format!`: this runs once per batch.
        let mut hex = [0u8; uuid::fmt::Simple::LENGTH];
        let mut id = String::with_capacity(1 + hex.len());
        id.push('b');
        id.push_str(
            uuid::Uuid::from_u64_pair(*PROCESS, count)
                .simple()
                .encode_lower(&mut hex),
        );
        Self::new(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_batch_ids_are_distinct_and_shaped_like_before() {
        let ids: Vec<BatchId> = (0..1000).map(|_| BatchId::generate()).collect();
        let distinct: std::collections::HashSet<&str> = ids.iter().map(BatchId::as_str).collect();
        assert_eq!(distinct.len(), ids.len());
        for id in &ids {
            let hex = id.as_str().strip_prefix('b').unwrap_or_default();
            assert_eq!(hex.len(), 32, "{id}");
            assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        }
    }
}
