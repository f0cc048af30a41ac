//! The SPEC §8.3 finalizer and the §8.1 notice re-derived from the SPEC text alone, so the
//! end-to-end tests compare the engine's output with strings computed independently of
//! `toolgate::budget` (no function of the crate is used here).

#![allow(dead_code)]

use sha2::{Digest, Sha256};

/// The budget unit, as the tests spell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Chars,
    Bytes,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Chars => "chars",
            Unit::Bytes => "bytes",
        }
    }
}

/// The length of `text` in `unit`.
pub fn len(text: &str, unit: Unit) -> u64 {
    match unit {
        Unit::Chars => text.chars().count() as u64,
        Unit::Bytes => text.len() as u64,
    }
}

/// The first `n` units of `text`; in bytes, the longest prefix of whole characters.
pub fn first(text: &str, n: u64, unit: Unit) -> &str {
    match unit {
        Unit::Chars => match text.char_indices().nth(n as usize) {
            Some((at, _)) => &text[..at],
            None => text,
        },
        Unit::Bytes => {
            let mut end = (n as usize).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            &text[..end]
        }
    }
}

/// The last `n` units of `text`; in bytes, the longest suffix of whole characters.
pub fn last(text: &str, n: u64, unit: Unit) -> &str {
    match unit {
        Unit::Chars => {
            let count = text.chars().count();
            let skip = count.saturating_sub(n as usize);
            match text.char_indices().nth(skip) {
                Some((at, _)) => &text[at..],
                None => "",
            }
        }
        Unit::Bytes => {
            let mut start = text.len().saturating_sub(n as usize);
            while !text.is_char_boundary(start) {
                start += 1;
            }
            &text[start..]
        }
    }
}

/// SPEC §8.3 step 2, literally: max-min water-fill with the leftover to the earliest slots.
pub fn water_fill(lengths: &[u64], budget: u64) -> Vec<u64> {
    let total: u64 = lengths.iter().sum();
    if total <= budget {
        return lengths.to_vec();
    }
    let mut alloc = vec![0; lengths.len()];
    let mut active: Vec<usize> = (0..lengths.len()).collect();
    let mut remaining = budget;
    while !active.is_empty() {
        let share = remaining / active.len() as u64;
        let (fits, rest): (Vec<usize>, Vec<usize>) =
            active.iter().partition(|&&i| lengths[i] <= share);
        if fits.is_empty() {
            for &i in &rest {
                alloc[i] = share;
            }
            let leftover = remaining - share * rest.len() as u64;
            for &i in rest.iter().take(leftover as usize) {
                alloc[i] += 1;
            }
            break;
        }
        for &i in &fits {
            alloc[i] = lengths[i];
            remaining -= lengths[i];
        }
        active = rest;
    }
    alloc
}

/// Lowercase hex SHA-256 of `text`.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// SPEC §8.3 step 4: the header naming the artifacts and the digest of the full text.
pub fn header(full: &str, paths: &[String]) -> String {
    let mut header = "Tool output truncated.".to_owned();
    match paths {
        [] => {}
        [one] => header.push_str(&format!(" Persisted tool-output artifact: {one}")),
        several => {
            header.push_str(" Persisted tool-output artifacts:");
            for path in several {
                header.push_str(&format!("\n- {path}"));
            }
        }
    }
    header.push_str(&format!("\nFull output sha256: {}", sha256_hex(full)));
    header
}

/// SPEC §8.3 step 4: a slot of full text `full` cut to `max` units.
pub fn cut_slot(full: &str, max: u64, unit: Unit, paths: &[String]) -> String {
    if len(full, unit) <= max {
        return full.to_owned();
    }
    let header = header(full, paths);
    let header_len = len(&header, unit);
    if header_len >= max {
        return first(&header, max, unit).to_owned();
    }
    let preview = max as i64 - header_len as i64 - 2;
    if preview <= 0 {
        return header;
    }
    let preview = preview as u64;
    if preview <= 5 {
        return format!("{header}\n\n{}", first(full, preview, unit));
    }
    let content = preview - 5;
    let head = content / 5;
    let tail = content - head;
    format!(
        "{header}\n\n{}\n...\n{}",
        first(full, head, unit),
        last(full, tail, unit)
    )
}

/// SPEC §8.1: the one-line truncation notice.
pub fn notice(original: u64, limit: u64, unit: Unit) -> String {
    format!(
        "[Tool output truncated by resultBudget: {original} → {limit} {}]",
        unit.name()
    )
}

/// Multi-byte text of about `n` characters: ASCII, accents, CJK, emoji and a combining mark,
/// in lines, labelled by `tag` so outputs differ.
pub fn mixed_text(tag: &str, n: usize) -> String {
    let pieces = [
        "héllo wörld ",
        "日本語のテキスト ",
        "emoji 🙂🚀 ",
        "e\u{301}tude ",
        "plain ascii text ",
    ];
    let mut text = String::new();
    let mut line = 0;
    while text.chars().count() < n {
        text.push_str(&format!("{tag}{line:03} {}\n", pieces[line % pieces.len()]));
        line += 1;
    }
    text.chars().take(n).collect()
}
