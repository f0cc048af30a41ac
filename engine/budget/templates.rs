//! Every text the budget code shows the model, as data: the empty-output placeholder, the
//! truncation notice, the artifact envelope, the finalizer's cut header and markers, and the
//! artifact stubs.
//!
//! The defaults are the SPEC's texts ([`Templates::spec_defaults`]); policy data may replace
//! any of them. Placeholders are written `{name}` and substituted in one pass by [`render`](crate::model::template::render),
//! so a value that itself contains `{path}` is never expanded again.

use serde::{Deserialize, Serialize};

use crate::artifact::Stub;
use crate::model::engine_config::MessageKey;
use crate::model::resolved::ResolvedEngine;

/// The model-facing texts of the producer stage, the finalizer and the artifact stubs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Templates {
    /// Replaces an empty output. Placeholder: `{tool}`.
    pub empty_output: String,
    /// The one line added to a truncated output. Placeholders: `{original}`, `{limit}`,
    /// `{unit}`.
    pub truncation_notice: String,
    /// The notice line when an artifact write failed for a reason that has a stub (invalid
    /// call id, file too large). Placeholders: `{notice}` (the rendered truncation notice),
    /// `{stub}`.
    pub truncation_notice_with_stub: String,
    /// What the model gets instead of an output written to an artifact. Placeholders:
    /// `{original}`, `{unit}`, `{path}`, `{preview_label}`, `{preview_size}` (units kept in
    /// the preview), `{preview}` (the preview with [`Self::preview_omitted`] lines where text
    /// was left out), `{more}` (`\n` + [`Self::preview_omitted`] after a head preview that is
    /// shorter than the output, else empty).
    pub envelope: String,
    /// `{preview_label}` for `keep: head`. Placeholders: `{size}`, `{unit}`.
    pub preview_label_head: String,
    /// `{preview_label}` for `keep: tail`. Placeholders: `{size}`, `{unit}`.
    pub preview_label_tail: String,
    /// `{preview_label}` for `keep: both`. Placeholders: `{head}`, `{tail}`, `{unit}`.
    pub preview_label_both: String,
    /// The line standing for the part of an output a preview leaves out.
    pub preview_omitted: String,
    /// Stub for an artifact that could not be written because the call id cannot name a
    /// file.
    pub invalid_call_id: String,
    /// Stub for an artifact that was not written because it is over the per-file limit.
    pub file_too_large: String,
    /// Starts the text of a slot the finalizer cut.
    pub cut_header: String,
    /// Follows [`Self::cut_header`] when one artifact holds the full output. Placeholder:
    /// `{path}`.
    pub cut_one_artifact: String,
    /// Follows [`Self::cut_header`] when several artifacts hold the full output.
    pub cut_many_artifacts: String,
    /// One per artifact after [`Self::cut_many_artifacts`]. Placeholder: `{path}`.
    pub cut_artifact_item: String,
    /// Ends the cut header. Placeholder: `{sha256}` (hex digest of the slot's full text).
    pub cut_digest: String,
    /// Between the cut header and the preview.
    pub cut_separator: String,
    /// Between the head and the tail of a cut slot's preview.
    pub cut_marker: String,
    /// The shortest complete form of a cut slot, used when the full header does not fit its
    /// share: it names one artifact whole. Placeholder: `{path}`.
    pub cut_short: String,
    /// Follows [`Self::cut_header`] (or a truncation notice) when the full output could not
    /// be kept in an artifact.
    pub output_lost: String,
}

impl Templates {
    /// The texts SPEC §8 defines (the envelope is the seed's layout).
    pub fn spec_defaults() -> Self {
        Self {
            empty_output: "({tool} completed with no output)".into(),
            truncation_notice:
                "[Tool output truncated by resultBudget: {original} → {limit} {unit}]".into(),
            truncation_notice_with_stub: "{notice} {stub}".into(),
            envelope: "<persisted-output>\nOutput too large ({original} {unit}). Full output saved to: {path}\n\nPreview ({preview_label}):\n{preview}{more}\n</persisted-output>".into(),
            preview_label_head: "first {size} {unit}".into(),
            preview_label_tail: "last {size} {unit}".into(),
            preview_label_both: "first {head} and last {tail} {unit}".into(),
            preview_omitted: "...".into(),
            invalid_call_id: "(invalid call id)".into(),
            file_too_large: "(file too large to persist)".into(),
            cut_header: "Tool output truncated.".into(),
            cut_one_artifact: " Persisted tool-output artifact: {path}".into(),
            cut_many_artifacts: " Persisted tool-output artifacts:".into(),
            cut_artifact_item: "\n- {path}".into(),
            cut_digest: "\nFull output sha256: {sha256}".into(),
            cut_separator: "\n\n".into(),
            cut_marker: "\n...\n".into(),
            cut_short: "Truncated; full output: {path}".into(),
            output_lost: " The full output could not be kept.".into(),
        }
    }
}

impl Templates {
    /// The templates of a resolved engine (every budget text comes from `engine.messages`).
    pub(crate) fn from_engine(engine: &ResolvedEngine) -> Self {
        let text = |key: MessageKey| engine.messages.template(key).to_owned();
        Self {
            empty_output: text(MessageKey::EmptyOutput),
            truncation_notice: text(MessageKey::TruncationNotice),
            truncation_notice_with_stub: text(MessageKey::TruncationNoticeWithStub),
            envelope: text(MessageKey::ArtifactEnvelope),
            preview_label_head: text(MessageKey::PreviewLabelHead),
            preview_label_tail: text(MessageKey::PreviewLabelTail),
            preview_label_both: text(MessageKey::PreviewLabelBoth),
            preview_omitted: text(MessageKey::PreviewOmitted),
            invalid_call_id: text(MessageKey::InvalidCallId),
            file_too_large: text(MessageKey::FileTooLarge),
            cut_header: text(MessageKey::CutHeader),
            cut_one_artifact: text(MessageKey::CutOneArtifact),
            cut_many_artifacts: text(MessageKey::CutManyArtifacts),
            cut_artifact_item: text(MessageKey::CutArtifactItem),
            cut_digest: text(MessageKey::CutDigest),
            cut_separator: text(MessageKey::CutSeparator),
            cut_marker: text(MessageKey::CutMarker),
            cut_short: text(MessageKey::CutShort),
            output_lost: text(MessageKey::OutputLost),
        }
    }

    /// The text of an artifact stub.
    pub fn stub(&self, stub: Stub) -> &str {
        match stub {
            Stub::InvalidCallId => &self.invalid_call_id,
            Stub::FileTooLarge => &self.file_too_large,
        }
    }
}

impl Default for Templates {
    fn default() -> Self {
        Self::spec_defaults()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_engine_defaults_are_the_spec_texts() {
        let options = crate::snapshot::LoadOptions::new(crate::snapshot::LayerOptions {
            no_builtin: true,
            ..Default::default()
        });
        let snapshot = crate::snapshot::load(&options, 1).snapshot.unwrap();
        assert_eq!(
            Templates::from_engine(&snapshot.engine),
            Templates::spec_defaults()
        );
    }

    #[test]
    fn defaults_deserialize_from_an_empty_map() {
        let parsed: Templates = serde_json::from_str("{}").unwrap();
        assert_eq!(parsed, Templates::spec_defaults());
    }
}
