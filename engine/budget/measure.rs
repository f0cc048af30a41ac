//! Measuring and cutting text in the budget unit: Unicode scalar values (`chars`) or UTF-8
//! bytes (`bytes`).
//!
//! Every budget decision (producer stage, water-fill, fit, hard cap) counts and cuts through
//! these functions, so this is the one place that guarantees no cut ever splits a UTF-8
//! character.
//!
//! Cost model, which the finalizer relies on to stay fast on large outputs:
//! - [`measure`] in `bytes` is O(1); in `chars` it is one pass over the text (std's counter,
//!   the fastest available without `unsafe`). Callers count a text once and cache the result
//!   (see [`SlotText`](super::SlotText)).
//! - [`head`] and [`tail`] never scan the whole text: in `bytes` they are a boundary fix-up
//!   of at most three bytes; in `chars` they read only the bytes they keep (plus at most
//!   three), by counting characters in chunks sized by the number still needed.

use crate::model::units::BudgetUnit;

/// The length of `text` in `unit`.
pub fn measure(text: &str, unit: BudgetUnit) -> u64 {
    match unit {
        BudgetUnit::Bytes => to_u64(text.len()),
        BudgetUnit::Chars => count_chars(text),
    }
}

/// The number of Unicode scalar values in `text`.
pub fn count_chars(text: &str) -> u64 {
    to_u64(text.chars().count())
}

/// The longest prefix of `text` that is at most `n` units long.
///
/// In `bytes` the prefix may be up to three bytes shorter than `n` when `n` falls inside a
/// character.
pub fn head(text: &str, n: u64, unit: BudgetUnit) -> &str {
    let end = head_end(text, n, unit);
    text.get(..end).unwrap_or(text)
}

/// The longest suffix of `text` that is at most `n` units long.
///
/// In `bytes` the suffix may be up to three bytes shorter than `n` when the cut falls inside
/// a character.
pub fn tail(text: &str, n: u64, unit: BudgetUnit) -> &str {
    let start = tail_start(text, n, unit);
    text.get(start..).unwrap_or("")
}

/// The byte index where the longest prefix of at most `n` units ends.
pub fn head_end(text: &str, n: u64, unit: BudgetUnit) -> usize {
    let n = to_usize(n);
    match unit {
        BudgetUnit::Bytes => floor_boundary(text, n),
        BudgetUnit::Chars => chars_head_end(text, n),
    }
}

/// The byte index where the longest suffix of at most `n` units starts.
pub fn tail_start(text: &str, n: u64, unit: BudgetUnit) -> usize {
    let n = to_usize(n);
    match unit {
        BudgetUnit::Bytes => ceil_boundary(text, text.len().saturating_sub(n)),
        BudgetUnit::Chars => chars_tail_start(text, n),
    }
}

/// Walks forward counting characters in chunks of `remaining` bytes: a chunk of r bytes holds
/// at most r characters, so the walk never passes the n-th character and reads about as many
/// bytes as it keeps.
fn chars_head_end(text: &str, n: usize) -> usize {
    let mut pos = 0;
    let mut remaining = n;
    // INVARIANT: `pos` is a char boundary and text[..pos] holds n - remaining characters.
    while remaining > 0 && pos < text.len() {
        let mut end = floor_boundary(text, pos.saturating_add(remaining));
        if end == pos {
            // The next character is wider than the bytes still wanted: it is exactly one
            // character, which is at most `remaining`.
            end = ceil_boundary(text, pos + 1);
        }
        let counted = text.get(pos..end).map_or(0, |chunk| chunk.chars().count());
        remaining -= counted.min(remaining);
        pos = end;
    }
    pos
}

/// The mirror image of [`chars_head_end`], walking backward from the end.
fn chars_tail_start(text: &str, n: usize) -> usize {
    let mut pos = text.len();
    let mut remaining = n;
    // INVARIANT: `pos` is a char boundary and text[pos..] holds n - remaining characters.
    while remaining > 0 && pos > 0 {
        let mut start = ceil_boundary(text, pos.saturating_sub(remaining));
        if start == pos {
            start = floor_boundary(text, pos - 1);
        }
        let counted = text
            .get(start..pos)
            .map_or(0, |chunk| chunk.chars().count());
        remaining -= counted.min(remaining);
        pos = start;
    }
    pos
}

// `str::floor_char_boundary` / `ceil_char_boundary` do exactly this but are stable only since
// Rust 1.91, above the crate's MSRV (1.88). A UTF-8 character is at most 4 bytes, so each loop
// runs at most 3 times.

/// The largest char boundary ≤ `index` (clamped to the text).
pub fn floor_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary ≥ `index` (clamped to the text).
pub fn ceil_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Converts a byte count to the u64 the budget arithmetic uses (lossless on every supported
/// target).
pub(crate) fn to_u64(value: usize) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}

/// Converts a budget number to an index, saturating: a limit larger than memory means "all".
pub(crate) fn to_usize(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use BudgetUnit::{Bytes, Chars};
    use proptest::prelude::*;

    #[test]
    fn measures_in_both_units() {
        let table = [
            ("", 0, 0),
            ("abc", 3, 3),
            ("é", 1, 2),
            ("日本", 2, 6),
            ("🙂", 1, 4),
            ("e\u{301}", 2, 3),
        ];
        for (text, chars, bytes) in table {
            assert_eq!(measure(text, Chars), chars, "{text:?}");
            assert_eq!(measure(text, Bytes), bytes, "{text:?}");
        }
    }

    #[test]
    fn heads_and_tails_in_chars() {
        let table = [
            ("héllo", 0, "", ""),
            ("héllo", 2, "hé", "lo"),
            ("héllo", 5, "héllo", "héllo"),
            ("héllo", 99, "héllo", "héllo"),
            ("日本語🙂", 3, "日本語", "本語🙂"),
            ("🙂🙂🙂", 1, "🙂", "🙂"),
        ];
        for (text, n, want_head, want_tail) in table {
            assert_eq!(head(text, n, Chars), want_head, "head {text:?} {n}");
            assert_eq!(tail(text, n, Chars), want_tail, "tail {text:?} {n}");
        }
    }

    #[test]
    fn heads_and_tails_in_bytes_never_split_a_character() {
        let table = [
            ("héllo", 1, "h", "o"),
            ("héllo", 2, "h", "lo"),
            ("héllo", 3, "hé", "llo"),
            ("日本", 5, "日", "本"),
            ("日本", 2, "", ""),
            ("🙂", 3, "", ""),
            ("🙂", 4, "🙂", "🙂"),
        ];
        for (text, n, want_head, want_tail) in table {
            assert_eq!(head(text, n, Bytes), want_head, "head {text:?} {n}");
            assert_eq!(tail(text, n, Bytes), want_tail, "tail {text:?} {n}");
        }
    }

    fn mixed_text() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "a",
            "Z",
            " ",
            "\n",
            "é",
            "ß",
            "日",
            "本",
            "🙂",
            "👩\u{200d}💻",
            "e\u{301}",
            "\u{10ffff}",
        ]);
        prop::collection::vec(pieces, 0..80).prop_map(|parts| parts.concat())
    }

    proptest! {
        #[test]
        fn head_is_the_longest_prefix_within_n(text in mixed_text(), n in 0u64..200) {
            for unit in [Chars, Bytes] {
                let prefix = head(&text, n, unit);
                prop_assert!(text.starts_with(prefix));
                prop_assert!(measure(prefix, unit) <= n);
                // One more character would exceed n (unless the prefix is the whole text).
                if let Some(next) = text[prefix.len()..].chars().next() {
                    let longer = &text[..prefix.len() + next.len_utf8()];
                    prop_assert!(measure(longer, unit) > n);
                }
            }
        }

        #[test]
        fn tail_is_the_longest_suffix_within_n(text in mixed_text(), n in 0u64..200) {
            for unit in [Chars, Bytes] {
                let suffix = tail(&text, n, unit);
                prop_assert!(text.ends_with(suffix));
                prop_assert!(measure(suffix, unit) <= n);
                let start = text.len() - suffix.len();
                if let Some(prev) = text[..start].chars().next_back() {
                    let longer = &text[start - prev.len_utf8()..];
                    prop_assert!(measure(longer, unit) > n);
                }
            }
        }
    }
}
