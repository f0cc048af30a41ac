//! Provenance: for every value of the effective policy set, the file and the place in it that
//! set the value. Stored as JSON pointers so that it costs nothing until `explain` or a
//! diagnostic resolves a pointer to a line and column through the file's span table.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Index of a loaded file in the snapshot's file list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// Where a value came from: a file and a JSON pointer inside that file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The file.
    pub file: FileId,
    /// The pointer of the value inside the file's document.
    pub pointer: Arc<str>,
}

/// Effective pointer → origin, ordered so that a subtree is a contiguous range.
#[derive(Clone, Debug, Default)]
pub struct Provenance {
    map: BTreeMap<String, Origin>,
}

impl Provenance {
    /// The origin recorded exactly at `pointer`.
    #[cfg(test)]
    pub fn get(&self, pointer: &str) -> Option<&Origin> {
        self.map.get(pointer)
    }

    /// The origin of `pointer`, or of its closest ancestor that has one (a value inside an
    /// atomic object such as an `input_schema` has the object's origin).
    pub fn nearest(&self, pointer: &str) -> Option<(&str, &Origin)> {
        let mut current = pointer;
        loop {
            if let Some((key, origin)) = self.map.get_key_value(current) {
                return Some((key.as_str(), origin));
            }
            match current.rfind('/') {
                Some(cut) => current = &current[..cut],
                None => return None,
            }
        }
    }

    /// Records `origin` for `pointer`.
    pub fn set(&mut self, pointer: String, origin: Origin) {
        self.map.insert(pointer, origin);
    }

    /// Removes the origin recorded exactly at `pointer`.
    pub fn remove(&mut self, pointer: &str) {
        self.map.remove(pointer);
    }

    /// Removes every origin strictly below `pointer` (its value was replaced as a whole).
    pub fn clear_below(&mut self, pointer: &str) {
        let prefix = format!("{pointer}/");
        let doomed: Vec<String> = self
            .map
            .range(prefix.clone()..)
            .take_while(|(key, _)| key.starts_with(&prefix))
            .map(|(key, _)| key.clone())
            .collect();
        for key in doomed {
            self.map.remove(&key);
        }
    }

    /// Every origin at or below `pointer`, in pointer order.
    pub fn subtree<'a>(
        &'a self,
        pointer: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Origin)> + 'a {
        let prefix = format!("{pointer}/");
        self.map
            .range(pointer.to_owned()..)
            .take_while(move |(key, _)| key.as_str() == pointer || key.starts_with(&prefix))
            .map(|(key, origin)| (key.as_str(), origin))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(n: u32) -> Origin {
        Origin {
            file: FileId(n),
            pointer: Arc::from("/x"),
        }
    }

    #[test]
    fn clear_below_keeps_siblings_with_a_common_prefix() {
        let mut p = Provenance::default();
        p.set("/tools/Bash/timeout".into(), origin(0));
        p.set("/tools/Bash/timeout/max".into(), origin(0));
        p.set("/tools/Bash/timeouts".into(), origin(0));
        p.clear_below("/tools/Bash/timeout");
        assert!(p.get("/tools/Bash/timeout").is_some());
        assert!(p.get("/tools/Bash/timeout/max").is_none());
        assert!(p.get("/tools/Bash/timeouts").is_some());
    }

    #[test]
    fn nearest_walks_up_to_an_ancestor() {
        let mut p = Provenance::default();
        p.set("/tools/Bash/input_schema".into(), origin(3));
        let (at, found) = p
            .nearest("/tools/Bash/input_schema/properties/command")
            .unwrap();
        assert_eq!(at, "/tools/Bash/input_schema");
        assert_eq!(found.file, FileId(3));
        assert!(p.nearest("/engine").is_none());
    }
}
