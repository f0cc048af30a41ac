//! Artifact file names, derived from call ids (SPEC §8.2).
//!
//! A call id is model- or runtime-supplied text, so it is normalised before it names a file:
//! every character outside `[A-Za-z0-9_-]` becomes `_`, a leading `-` becomes `_` (so a name
//! never reads as a command-line option), and only the first [`MAX_STEM_CHARS`] characters
//! are used. An id left without any letter or digit (empty, `../..`, `🙂`) is invalid: the
//! model then sees the `(invalid call id)` stub instead of a path.
//!
//! Ids that normalise alike (`a/b`, `a_b`) or repeat within a session get distinct names:
//! the first is `<stem>.txt`, the next `<stem>.2.txt`, `<stem>.3.txt`... The `.` cannot occur
//! in a stem, so a numbered name never collides with another id's first name.

use super::{ArtifactError, SessionId};

/// The longest stem (and session folder name) used, in characters.
pub const MAX_STEM_CHARS: usize = 128;

/// The file stem for a call id, or [`ArtifactError::InvalidCallId`].
pub fn file_stem(call_id: &str) -> Result<String, ArtifactError> {
    let mut stem: String = call_id
        .chars()
        .take(MAX_STEM_CHARS)
        .map(|c| if allowed(c) { c } else { '_' })
        .collect();
    if !stem.chars().any(|c| c.is_ascii_alphanumeric()) {
        return Err(ArtifactError::InvalidCallId {
            call_id: call_id.chars().take(MAX_STEM_CHARS).collect(),
        });
    }
    if stem.starts_with('-') {
        stem.replace_range(..1, "_");
    }
    Ok(stem)
}

/// The n-th file name for a stem (n counts from 1).
pub fn numbered_file_name(stem: &str, n: u32) -> String {
    if n <= 1 {
        format!("{stem}.txt")
    } else {
        format!("{stem}.{n}.txt")
    }
}

/// The folder name for a session: the id itself, which must already be a valid name (a
/// session id is not normalised, so two sessions can never share a folder).
pub fn session_folder(session: &SessionId) -> Result<&str, ArtifactError> {
    let id = session.as_str();
    let valid = !id.is_empty()
        && id.chars().count() <= MAX_STEM_CHARS
        && id.chars().all(allowed)
        && id.chars().any(|c| c.is_ascii_alphanumeric())
        && !id.starts_with('-');
    if valid {
        Ok(id)
    } else {
        Err(ArtifactError::InvalidSessionId {
            session: id.chars().take(MAX_STEM_CHARS).collect(),
        })
    }
}

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_normalise_to_safe_stems() {
        let table = [
            ("toolu_01ABC", "toolu_01ABC"),
            ("call-7", "call-7"),
            ("a/b", "a_b"),
            ("../../etc/passwd", "______etc_passwd"),
            ("-rf", "_rf"),
            ("日本1", "__1"),
            ("a b\tc\n", "a_b_c_"),
            ("x.y", "x_y"),
        ];
        for (id, want) in table {
            assert_eq!(file_stem(id).unwrap(), want, "{id:?}");
        }
    }

    #[test]
    fn long_ids_are_cut() {
        let stem = file_stem(&"a".repeat(1000)).unwrap();
        assert_eq!(stem.len(), MAX_STEM_CHARS);
    }

    #[test]
    fn ids_without_a_letter_or_digit_are_invalid() {
        for id in ["", "..", "../..", "🙂", "___", "--", "/", " "] {
            assert!(
                matches!(file_stem(id), Err(ArtifactError::InvalidCallId { .. })),
                "{id:?}"
            );
        }
    }

    #[test]
    fn numbered_names_cannot_collide_with_stems() {
        assert_eq!(numbered_file_name("a", 1), "a.txt");
        assert_eq!(numbered_file_name("a", 2), "a.2.txt");
        // The stem of the id "a.2" is "a_2", whose first name is "a_2.txt".
        assert_eq!(numbered_file_name(&file_stem("a.2").unwrap(), 1), "a_2.txt");
    }

    #[test]
    fn session_ids_must_already_be_names() {
        for ok in ["s1", "550e8400-e29b-41d4-a716-446655440000", "a_b"] {
            assert!(session_folder(&SessionId::from(ok)).is_ok(), "{ok}");
        }
        for bad in ["", "..", "a/b", "-x", "日本", "___"] {
            assert!(session_folder(&SessionId::from(bad)).is_err(), "{bad}");
        }
        assert!(session_folder(&SessionId::new("a".repeat(129))).is_err());
    }
}
