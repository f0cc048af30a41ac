//! The producer stage (SPEC §8.1): what one call's output becomes before the model sees it.
//!
//! In order:
//! 1. An empty output (nothing but whitespace) becomes `({tool} completed with no output)`,
//!    so the model does not read a silent success as a missing result.
//! 2. An output within `min(max_model, max_inline)` passes unchanged.
//! 3. `overflow: artifact` with a store: the full output is written once and the model gets
//!    the envelope (original size, path, preview). The preview is `preview` units, clamped so
//!    the whole envelope fits the limit; a head preview is cut at its last newline when that
//!    newline lies in its second half (a tail preview, symmetrically, starts after its first
//!    newline when that lies in its first half); `keep: both` shows the first fifth and the
//!    last four fifths, each cut the same way.
//! 4. Otherwise (`overflow: truncate`, no store, or a failed write): the head, tail or both
//!    ends are kept and the one-line notice is put where the text was cut (after a head,
//!    before a tail, between the two ends). The notice counts against the limit: the content
//!    never exceeds it. A failed write never fails the call; when the failure has a stub
//!    (invalid call id, file too large) the stub follows the notice on the same line.
//!
//! The result carries [`BudgetMeta`]; `persisted_files` is `None` when the output passed
//! unchanged (the finalizer may still need to persist it), `Some([])` when it was cut and
//! nothing reusable was written, `Some([path])` when the artifact holds the full output.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ArtifactTarget;
use super::fit::HEAD_DIVISOR;
use super::measure::{head, measure, tail};
use super::slot::SlotText;
use super::templates::Templates;
use crate::artifact::{ArtifactError, ArtifactRequest, Retention};
use crate::model::CallId;
pub use crate::model::contract::{Keep, Overflow};
use crate::model::template::render;
use crate::model::units::{BudgetUnit, Size};

/// A contract's resolved `budget` as the producer stage needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerPolicy {
    /// Largest model content; `None` = no limit of its own.
    pub max_model: Option<Size>,
    /// Largest inline output; `None` = no limit of its own.
    pub max_inline: Option<Size>,
    /// What happens to output over the limit.
    pub overflow: Overflow,
    /// Which part is kept.
    pub keep: Keep,
    /// Size of the preview in an artifact envelope.
    pub preview: Size,
    /// What sizes count.
    pub unit: BudgetUnit,
    /// Retention of the artifact.
    pub retention: Retention,
}

impl ProducerPolicy {
    #[cfg(test)]
    /// SPEC §8.1's built-in defaults: 100 000 characters, `truncate`, `head`, preview 2000,
    /// `session` retention.
    pub fn spec_defaults() -> Self {
        Self {
            max_model: Some(Size(100_000)),
            max_inline: None,
            overflow: Overflow::Truncate,
            keep: Keep::Head,
            preview: Size(2000),
            unit: BudgetUnit::Chars,
            retention: Retention::Session,
        }
    }

    /// The effective limit: the smaller of `max_model` and `max_inline`.
    pub fn limit(&self) -> Option<u64> {
        match (self.max_model, self.max_inline) {
            (Some(a), Some(b)) => Some(a.0.min(b.0)),
            (Some(a), None) | (None, Some(a)) => Some(a.0),
            (None, None) => None,
        }
    }
}

/// The policy a result was budgeted with, as recorded in its metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AppliedPolicy {
    /// The overflow actually applied (`truncate` when an artifact write failed).
    pub overflow: Overflow,
    /// Which part was kept.
    pub keep: Keep,
    /// The effective limit; `None` = unlimited.
    pub limit: Option<u64>,
}

/// Structured budget metadata of one result (SPEC §8.1). Decisions downstream read this,
/// never the text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BudgetMeta {
    /// Whether the model content is shorter than the output.
    pub truncated: bool,
    /// The output's size, in `unit`.
    pub original_size: u64,
    /// The model content's size, in `unit`.
    pub final_size: u64,
    /// What the sizes count.
    pub unit: BudgetUnit,
    /// The policy applied.
    pub policy: AppliedPolicy,
    /// `None`: no decision yet; `Some([])`: decided, nothing reusable; `Some(paths)`: the
    /// artifacts holding the full output.
    pub persisted_files: Option<Vec<PathBuf>>,
}

/// One call's output as it enters the producer stage.
#[derive(Clone, Debug)]
pub struct ProducerInput<'a> {
    /// The tool the call ran (for the empty-output placeholder).
    pub tool: &'a str,
    /// The call id (names the artifact).
    pub call_id: &'a CallId,
    /// The handler's output formatted as model content. Passed through as is (shared, with
    /// any measurement already cached) when it fits.
    pub output: SlotText,
}

/// The producer stage's result.
#[derive(Clone, Debug)]
pub struct Produced {
    /// What the model gets.
    pub content: SlotText,
    /// The budget metadata.
    pub meta: BudgetMeta,
    /// Why the artifact was not written, when a write was attempted and failed.
    pub artifact_error: Option<ArtifactError>,
}

/// Runs the producer stage for one output; see the module documentation.
pub async fn produce(
    input: ProducerInput<'_>,
    policy: &ProducerPolicy,
    templates: &Templates,
    artifacts: Option<ArtifactTarget<'_>>,
) -> Produced {
    let input = match produce_without_io(input, policy, templates, artifacts.is_some()) {
        Ok(produced) => return produced,
        Err(input) => input,
    };
    let unit = policy.unit;
    let original_size = input.output.len(unit);
    // `produce_without_io` hands the output back only when it is over a limit.
    let limit_units = policy.limit().unwrap_or(original_size);
    let mut artifact_error = None;
    if let (Overflow::Artifact, Some(target)) = (policy.overflow, artifacts) {
        let request = ArtifactRequest {
            session: target.session.clone(),
            call_id: input.call_id.clone(),
            content: input.output.shared(),
            retention: policy.retention,
        };
        match target.store.write(request).await {
            Ok(artifact) => {
                let text = envelope(
                    &input.output,
                    original_size,
                    limit_units,
                    policy,
                    &artifact.path,
                    templates,
                );
                let final_size = measure(&text, unit);
                return Produced {
                    content: SlotText::new(text),
                    meta: budget_meta(
                        policy,
                        original_size,
                        true,
                        final_size,
                        Overflow::Artifact,
                        Some(vec![artifact.path]),
                    ),
                    artifact_error: None,
                };
            }
            Err(err) => {
                tracing::warn!(call_id = %input.call_id, error = %err, "artifact write failed; truncating instead");
                artifact_error = Some(err);
            }
        }
    }
    truncated(&input, policy, templates, limit_units, artifact_error)
}

/// The producer stage when it writes nothing: an empty output, an output within the limit,
/// or one over it that is truncated (`overflow: truncate`, or no store). An output over the
/// limit that goes to an artifact store (`has_store`) is handed back, for [`produce`] to
/// write.
pub fn produce_without_io<'a>(
    input: ProducerInput<'a>,
    policy: &ProducerPolicy,
    templates: &Templates,
    has_store: bool,
) -> Result<Produced, ProducerInput<'a>> {
    let unit = policy.unit;
    let original_size = input.output.len(unit);
    if input.output.trim().is_empty() {
        let placeholder = render(&templates.empty_output, &[("tool", input.tool)]);
        let final_size = measure(&placeholder, unit);
        return Ok(Produced {
            content: SlotText::new(placeholder),
            meta: budget_meta(
                policy,
                original_size,
                false,
                final_size,
                policy.overflow,
                None,
            ),
            artifact_error: None,
        });
    }
    let Some(limit_units) = policy.limit().filter(|&l| original_size > l) else {
        return Ok(Produced {
            content: input.output,
            meta: budget_meta(
                policy,
                original_size,
                false,
                original_size,
                policy.overflow,
                None,
            ),
            artifact_error: None,
        });
    };
    if policy.overflow == Overflow::Artifact && has_store {
        return Err(input);
    }
    Ok(truncated(&input, policy, templates, limit_units, None))
}

/// The output cut to `limit_units` with the notice (and the stub of a failed write).
fn truncated(
    input: &ProducerInput<'_>,
    policy: &ProducerPolicy,
    templates: &Templates,
    limit_units: u64,
    artifact_error: Option<ArtifactError>,
) -> Produced {
    let unit = policy.unit;
    let original_size = input.output.len(unit);
    // A failed write says why when it has a stub (invalid call id, file too large), and
    // otherwise (disk full, session cap, ...) that the full output could not be kept.
    let stub = artifact_error.as_ref().map(|error| {
        error
            .stub()
            .map_or(templates.output_lost.trim_start(), |stub| {
                templates.stub(stub)
            })
    });
    let text = truncate(
        &input.output,
        original_size,
        limit_units,
        policy,
        stub,
        templates,
    );
    let final_size = measure(&text, unit);
    Produced {
        content: SlotText::new(text),
        meta: budget_meta(
            policy,
            original_size,
            true,
            final_size,
            Overflow::Truncate,
            Some(Vec::new()),
        ),
        artifact_error,
    }
}

fn budget_meta(
    policy: &ProducerPolicy,
    original_size: u64,
    truncated: bool,
    final_size: u64,
    overflow: Overflow,
    persisted_files: Option<Vec<PathBuf>>,
) -> BudgetMeta {
    BudgetMeta {
        truncated,
        original_size,
        final_size,
        unit: policy.unit,
        policy: AppliedPolicy {
            overflow,
            keep: policy.keep,
            limit: policy.limit(),
        },
        persisted_files,
    }
}

/// The truncated content: kept text plus the notice line, within `limit` units.
fn truncate(
    text: &str,
    original: u64,
    limit: u64,
    policy: &ProducerPolicy,
    stub: Option<&str>,
    templates: &Templates,
) -> String {
    let unit = policy.unit;
    let mut notice = render(
        &templates.truncation_notice,
        &[
            ("original", &original.to_string()),
            ("limit", &limit.to_string()),
            ("unit", &unit.to_string()),
        ],
    );
    if let Some(stub) = stub {
        notice = render(
            &templates.truncation_notice_with_stub,
            &[("notice", &notice), ("stub", stub)],
        );
    }
    let line_breaks: u64 = match policy.keep {
        Keep::Head | Keep::Tail => 1,
        Keep::Both => 2,
    };
    let Some(room) = limit.checked_sub(measure(&notice, unit) + line_breaks) else {
        return head(&notice, limit, unit).to_owned();
    };
    match policy.keep {
        Keep::Head => format!("{}\n{notice}", head(text, room, unit)),
        Keep::Tail => format!("{notice}\n{}", tail(text, room, unit)),
        Keep::Both => {
            let head_len = room / HEAD_DIVISOR;
            format!(
                "{}\n{notice}\n{}",
                head(text, head_len, unit),
                tail(text, room - head_len, unit)
            )
        }
    }
}

/// A preview of `size` units as the envelope shows it.
struct Preview {
    body: String,
    more: String,
    label: String,
    size: u64,
}

fn preview(text: &str, size: u64, keep: Keep, unit: BudgetUnit, templates: &Templates) -> Preview {
    let omitted = &templates.preview_omitted;
    let unit_name = unit.to_string();
    match keep {
        Keep::Head => {
            let part = head_at_newline(text, size, unit);
            let kept = measure(part, unit);
            let more = if part.len() < text.len() {
                format!("\n{omitted}")
            } else {
                String::new()
            };
            Preview {
                body: part.to_owned(),
                more,
                label: render(
                    &templates.preview_label_head,
                    &[("size", &kept.to_string()), ("unit", &unit_name)],
                ),
                size: kept,
            }
        }
        Keep::Tail => {
            let part = tail_at_newline(text, size, unit);
            let kept = measure(part, unit);
            let body = if part.len() < text.len() {
                format!("{omitted}\n{part}")
            } else {
                part.to_owned()
            };
            Preview {
                body,
                more: String::new(),
                label: render(
                    &templates.preview_label_tail,
                    &[("size", &kept.to_string()), ("unit", &unit_name)],
                ),
                size: kept,
            }
        }
        Keep::Both => {
            let head_size = size / HEAD_DIVISOR;
            let first = head_at_newline(text, head_size, unit);
            let last = tail_at_newline(text, size - head_size, unit);
            let (first_len, last_len) = (measure(first, unit), measure(last, unit));
            Preview {
                body: format!("{first}\n{omitted}\n{last}"),
                more: String::new(),
                label: render(
                    &templates.preview_label_both,
                    &[
                        ("head", &first_len.to_string()),
                        ("tail", &last_len.to_string()),
                        ("unit", &unit_name),
                    ],
                ),
                size: first_len + last_len,
            }
        }
    }
}

/// The first `size` units, cut at the last newline when it lies in their second half —
/// unless they already end at the end of a line (or of the text): then no line is cut.
fn head_at_newline(text: &str, size: u64, unit: BudgetUnit) -> &str {
    let part = head(text, size, unit);
    let rest = &text[part.len()..];
    if rest.is_empty() || rest.starts_with('\n') {
        return part;
    }
    match part.rfind('\n') {
        Some(at) if 2 * measure(&part[..at], unit) > measure(part, unit) => &part[..at],
        Some(_) | None => part,
    }
}

/// The last `size` units, starting after the first newline when it lies in their first half
/// — unless they already start at the beginning of a line (or of the text).
fn tail_at_newline(text: &str, size: u64, unit: BudgetUnit) -> &str {
    let part = tail(text, size, unit);
    let before = &text[..text.len() - part.len()];
    if before.is_empty() || before.ends_with('\n') {
        return part;
    }
    match part.find('\n') {
        Some(at) if 2 * measure(&part[at + 1..], unit) > measure(part, unit) => &part[at + 1..],
        Some(_) | None => part,
    }
}

/// The envelope for an output written to `path`, within `limit` units when at all possible.
fn envelope(
    text: &str,
    original: u64,
    limit: u64,
    policy: &ProducerPolicy,
    path: &std::path::Path,
    templates: &Templates,
) -> String {
    let unit = policy.unit;
    let path = path.display().to_string();
    let unit_name = unit.to_string();
    let original = original.to_string();
    let render_with = |p: &Preview| {
        render(
            &templates.envelope,
            &[
                ("original", &original),
                ("unit", &unit_name),
                ("path", &path),
                ("preview_label", &p.label),
                ("preview_size", &p.size.to_string()),
                ("preview", &p.body),
                ("more", &p.more),
            ],
        )
    };
    let mut size = policy.preview.0.min(limit);
    // Shrinking the preview by the overshoot converges in a step or two (only the digits of
    // the sizes in the label change); the bound keeps a pathological template from looping.
    for _ in 0..8 {
        let rendered = render_with(&preview(text, size, policy.keep, unit, templates));
        let len = measure(&rendered, unit);
        if len <= limit {
            return rendered;
        }
        if size == 0 {
            break;
        }
        size = size.saturating_sub(len - limit);
    }
    // Even an empty preview does not fit: a limit smaller than the envelope's own text.
    let text = render_with(&preview(text, 0, policy.keep, unit, templates));
    head(&text, limit, unit).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_cuts_apply_only_in_the_far_half() {
        let unit = BudgetUnit::Chars;
        assert_eq!(head_at_newline("abc\ndefgh", 8, unit), "abc\ndefg");
        assert_eq!(head_at_newline("abcde\nfgh", 8, unit), "abcde");
        assert_eq!(tail_at_newline("abcde\nfgh", 8, unit), "bcde\nfgh");
        assert_eq!(tail_at_newline("abc\ndefgh", 8, unit), "defgh");
        // A part that already ends (starts) at a line boundary loses no line.
        assert_eq!(head_at_newline("ab\ncd\nef", 5, unit), "ab\ncd");
        assert_eq!(tail_at_newline("ab\ncd\nef", 5, unit), "cd\nef");
        assert_eq!(head_at_newline("ab\ncd", 5, unit), "ab\ncd");
        assert_eq!(tail_at_newline("ab\ncd", 5, unit), "ab\ncd");
    }

    #[test]
    fn limits_take_the_smaller() {
        let mut policy = ProducerPolicy::spec_defaults();
        assert_eq!(policy.limit(), Some(100_000));
        policy.max_inline = Some(Size(10_000));
        assert_eq!(policy.limit(), Some(10_000));
        policy.max_model = None;
        policy.max_inline = None;
        assert_eq!(policy.limit(), None);
    }
}
