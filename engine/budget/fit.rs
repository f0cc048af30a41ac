//! Fitting one cut slot into its allocation (SPEC §8.3 step 4), byte for byte.
//!
//! A cut slot becomes a header naming where the full output lives and its SHA-256 digest,
//! then a head/tail preview of the text:
//!
//! ```text
//! Tool output truncated. Persisted tool-output artifact: <path>
//! Full output sha256: <hex>
//!
//! <first 1/5 of the preview>
//! ...
//! <last 4/5 of the preview>
//! ```
//!
//! The lengths of the separator (`\n\n`, 2 units) and the marker (`\n...\n`, 5 units) are
//! measured from the templates, so replacing them keeps the arithmetic right. Pure and
//! synchronous; the finalizer and the hard cap both call it.

use std::path::PathBuf;

use super::measure::{head, measure, tail};
use super::slot::SlotText;
use super::templates::Templates;
use crate::model::template::render;
use crate::model::units::BudgetUnit;

/// The share of the preview (after the marker) that goes to the head: 1/5 (SPEC §8.3).
pub(crate) const HEAD_DIVISOR: u64 = 5;

#[cfg(test)]
/// The header of a cut slot: `Tool output truncated.`, the artifact path(s) if any, and the
/// digest line.
pub fn cut_header(text: &SlotText, paths: &[PathBuf], templates: &Templates) -> String {
    cut_header_with(text, paths, false, templates)
}

/// Like [`cut_header`]; when `lost`, the header also says the full output could not be kept
/// (its artifact write failed, or there is no store).
pub fn cut_header_with(
    text: &SlotText,
    paths: &[PathBuf],
    lost: bool,
    templates: &Templates,
) -> String {
    let mut header = templates.cut_header.clone();
    if lost {
        header.push_str(&templates.output_lost);
    }
    match paths {
        [] => {}
        [one] => header.push_str(&render(
            &templates.cut_one_artifact,
            &[("path", &one.display().to_string())],
        )),
        several => {
            header.push_str(&templates.cut_many_artifacts);
            for path in several {
                header.push_str(&render(
                    &templates.cut_artifact_item,
                    &[("path", &path.display().to_string())],
                ));
            }
        }
    }
    header.push_str(&render(
        &templates.cut_digest,
        &[("sha256", &text.sha256().to_string())],
    ));
    header
}

/// Fits `text` into `max` units: unchanged when it already fits, otherwise the cut form of
/// SPEC §8.3 step 4. `lost` says the full output could not be kept (see
/// [`cut_header_with`]).
///
/// The result is exactly `max` units long unless only the header fits or (in `bytes`) a
/// character boundary forces it shorter; it is never longer. It never shows part of a path:
/// when the full header does not fit, a shorter notice stands in for it ([`short_notice`]).
pub fn fit_slot(
    text: &SlotText,
    max: u64,
    unit: BudgetUnit,
    paths: &[PathBuf],
    lost: bool,
    templates: &Templates,
) -> String {
    if text.len(unit) <= max {
        return text.as_str().to_owned();
    }
    let full_header = cut_header_with(text, paths, lost, templates);
    let full_len = measure(&full_header, unit);
    let (header, header_len) = if full_len <= max {
        (full_header, full_len)
    } else {
        let short = short_notice(max, unit, paths, lost, templates);
        let short_len = measure(&short, unit);
        (short, short_len)
    };
    if header_len >= max {
        return header;
    }
    let separator_len = measure(&templates.cut_separator, unit);
    let marker_len = measure(&templates.cut_marker, unit);
    let Some(preview) = (max - header_len)
        .checked_sub(separator_len)
        .filter(|&p| p > 0)
    else {
        return header;
    };
    let full = text.as_str();
    let mut out = String::with_capacity(header.len() + templates.cut_separator.len());
    out.push_str(&header);
    out.push_str(&templates.cut_separator);
    if preview <= marker_len {
        out.push_str(head(full, preview, unit));
        return out;
    }
    let content = preview - marker_len;
    let head_len = content / HEAD_DIVISOR;
    let tail_len = content - head_len;
    let head_part = head(full, head_len, unit);
    let tail_part = tail(full, tail_len, unit);
    out.reserve(head_part.len() + templates.cut_marker.len() + tail_part.len());
    out.push_str(head_part);
    out.push_str(&templates.cut_marker);
    out.push_str(tail_part);
    out
}

/// The notice of a cut slot whose full header does not fit `max`: the shortest complete form
/// naming the first artifact whole (`cut_short`) if it fits, else the header's text without
/// any path or digest (`cut_header`, plus `output_lost` when the output was lost), cut to
/// `max` if need be. A path is shown whole or not at all. The preview follows it as it
/// follows the full header.
pub fn short_notice(
    max: u64,
    unit: BudgetUnit,
    paths: &[PathBuf],
    lost: bool,
    templates: &Templates,
) -> String {
    if let Some(first) = paths.first() {
        let short = render(
            &templates.cut_short,
            &[("path", &first.display().to_string())],
        );
        if measure(&short, unit) <= max {
            return short;
        }
    }
    let mut bare = templates.cut_header.clone();
    if lost {
        bare.push_str(&templates.output_lost);
    }
    head(&bare, max, unit).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use BudgetUnit::{Bytes, Chars};

    fn t() -> Templates {
        Templates::spec_defaults()
    }

    fn digest(text: &str) -> String {
        SlotText::from(text).sha256().to_string()
    }

    #[test]
    fn header_names_no_one_or_several_artifacts() {
        let text = SlotText::from("x");
        let d = digest("x");
        let table: [(&[&str], String); 3] = [
            (
                &[],
                format!("Tool output truncated.\nFull output sha256: {d}"),
            ),
            (
                &["/a/b.txt"],
                format!(
                    "Tool output truncated. Persisted tool-output artifact: /a/b.txt\nFull output sha256: {d}"
                ),
            ),
            (
                &["/a/1.txt", "/a/2.txt"],
                format!(
                    "Tool output truncated. Persisted tool-output artifacts:\n- /a/1.txt\n- /a/2.txt\nFull output sha256: {d}"
                ),
            ),
        ];
        for (paths, want) in table {
            let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
            assert_eq!(cut_header(&text, &paths, &t()), want);
        }
    }

    #[test]
    fn every_branch_of_the_fit() {
        let text: String = ('a'..='z').cycle().take(1000).collect();
        let slot = SlotText::from(text.as_str());
        let header = format!(
            "Tool output truncated.\nFull output sha256: {}",
            digest(&text)
        );
        let h = header.len() as u64;
        // "Tool output truncated." (22) + "\nFull output sha256: " (21) + 64 hex digits.
        assert_eq!(h, 107);
        // (max, expected)
        let table: Vec<(u64, String)> = vec![
            // Fits: unchanged.
            (1000, text.clone()),
            // Full header longer than max: its opening words (no digest), cut to max, then a
            // preview when there is room.
            (10, "Tool outpu".to_owned()),
            (22, "Tool output truncated.".to_owned()),
            (24, "Tool output truncated.".to_owned()),
            (30, "Tool output truncated.\n\n\n...\nl".to_owned()),
            (
                h - 1,
                format!(
                    "Tool output truncated.\n\n{}\n...\n{}",
                    &text[..15],
                    &text[1000 - 62..]
                ),
            ),
            (h, header.clone()),
            // No room for a preview after the separator: the header alone.
            (h + 1, header.clone()),
            (h + 2, header.clone()),
            // Preview of at most 5 units: header, separator, first `preview` units.
            (h + 3, format!("{header}\n\na")),
            (h + 7, format!("{header}\n\nabcde")),
            // preview 6 → content 1 → head 0, tail 1.
            (h + 8, format!("{header}\n\n\n...\nl")),
            // preview 57 → content 52 → head 10, tail 42.
            (
                h + 59,
                format!("{header}\n\n{}\n...\n{}", &text[..10], &text[1000 - 42..]),
            ),
        ];
        for (max, want) in table {
            let got = fit_slot(&slot, max, Chars, &[], false, &t());
            assert_eq!(got, want, "max {max}");
            assert_eq!(
                fit_slot(&slot, max, Bytes, &[], false, &t()),
                want,
                "bytes, max {max}"
            );
            if max > h + 2 || (25..h).contains(&max) {
                assert_eq!(measure(&got, Chars), max.min(1000), "length at max {max}");
            }
        }
    }

    #[test]
    fn a_header_that_does_not_fit_never_shows_part_of_a_path() {
        let text: String = "x".repeat(1000);
        let slot = SlotText::from(text.as_str());
        let path = PathBuf::from("/home/u/.toolgate/artifacts/session-1/call-0001.txt");
        let paths = [path.clone()];
        let short = format!("Truncated; full output: {}", path.display());
        let header = cut_header(&slot, &paths, &t());
        let h = header.len() as u64;
        let s = short.len() as u64;
        for max in 0..h {
            let got = fit_slot(&slot, max, Chars, &paths, false, &t());
            assert!(measure(&got, Chars) <= max, "max {max}: {got}");
            if max >= s {
                assert!(got.starts_with(&short), "max {max}: {got}");
            } else if max >= 22 {
                assert!(
                    got.starts_with("Tool output truncated."),
                    "max {max}: {got}"
                );
                assert!(!got.contains("/home"), "max {max}: {got}");
            } else {
                assert!(
                    "Tool output truncated.".starts_with(&got),
                    "max {max}: {got}"
                );
            }
            if max >= 25 && !(s..s + 3).contains(&max) {
                assert_eq!(measure(&got, Chars), max, "max {max}");
            }
        }
        assert!(fit_slot(&slot, h, Chars, &paths, false, &t()).contains(&*path.to_string_lossy()));
    }

    #[test]
    fn a_lost_output_is_said_to_be_lost() {
        let text: String = "x".repeat(1000);
        let slot = SlotText::from(text.as_str());
        let got = fit_slot(&slot, 300, Chars, &[], true, &t());
        assert!(
            got.starts_with(
                "Tool output truncated. The full output could not be kept.\nFull output sha256: "
            ),
            "{got}"
        );
        let got = fit_slot(&slot, 40, Chars, &[], true, &t());
        assert_eq!(got, "Tool output truncated. The full output c");
    }

    #[test]
    fn multibyte_previews_are_exact_in_chars_and_never_split_in_bytes() {
        let text = "日本語🙂".repeat(200);
        let slot = SlotText::from(text.as_str());
        let header = cut_header(&slot, &[], &t());
        let h_chars = measure(&header, Chars);
        for extra in 3..80 {
            let max = h_chars + extra;
            let got = fit_slot(&slot, max, Chars, &[], false, &t());
            assert_eq!(measure(&got, Chars), max, "chars, max {max}");
        }
        for max in 0..400 {
            let got = fit_slot(&slot, max, Bytes, &[], false, &t());
            assert!(measure(&got, Bytes) <= max, "bytes, max {max}");
            // The header whole (and a preview), or, when it does not fit, a prefix of it
            // that stops before the digest.
            assert!(
                got.starts_with(head(&header, max, Bytes))
                    || got.starts_with("Tool output truncated.\n\n")
                    || "Tool output truncated.".starts_with(&got),
                "bytes, max {max}: {got}"
            );
        }
    }
}
