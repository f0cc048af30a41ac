//! Stage 8, output: the handler's output validated against the contract's `output_schema`
//! (a mismatch is non-recoverable) and serialised into model content.

use serde_json::Value;

use super::errors::message;
use super::{CallEnv, ErrorCode, Failure};
use crate::budget::SlotText;
use crate::events::FailureStage;
use crate::handler::{HandlerOutput, OutputContent};
use crate::model::engine_config::MessageKey;
use crate::snapshot::Tool;

/// The handler's output, serialised.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedOutput {
    /// The model content before budgeting: text as is, JSON compact.
    pub text: SlotText,
    /// What a display shows: text as is (the same shared buffer as `text`), JSON
    /// pretty-printed.
    pub display_source: SlotText,
    /// Non-text parts.
    pub parts: Vec<Value>,
}

/// Validates and serialises the output; `name` is the tool the call ran
/// ([`Tool::name_for_call`]).
pub fn check_output(
    env: &CallEnv<'_>,
    tool: &Tool,
    name: &str,
    output: HandlerOutput,
) -> Result<CheckedOutput, Failure> {
    if let Some(validator) = &tool.output_schema {
        let value = match &output.content {
            OutputContent::Json(value) => Some(value.clone()),
            OutputContent::Text(text) => serde_json::from_str::<Value>(text).ok(),
        };
        let problems: Vec<String> = match &value {
            Some(value) => validator
                .iter_errors(value)
                .map(|error| {
                    let at = error.instance_path().to_string();
                    format!("`{}`: {error}", if at.is_empty() { "/" } else { &at })
                })
                .collect(),
            None => vec!["the output is not JSON".to_owned()],
        };
        if !problems.is_empty() {
            let engine = &env.prepared.snapshot.engine;
            let details = problems.join("; ");
            let text = message(
                engine,
                MessageKey::OutputSchema,
                &[("tool", name), ("details", &details)],
            );
            return Err(Failure::error(
                FailureStage::Output,
                ErrorCode::OutputSchema,
                text,
            ));
        }
    }
    // A text output is shared, not copied: it can be megabytes long, and the producer stage,
    // the display and the batch finalizer all read the same buffer.
    let (text, display_source) = match output.content {
        OutputContent::Text(text) => {
            let text = SlotText::from(text);
            (text.clone(), text)
        }
        OutputContent::Json(value) => (
            SlotText::from(value.to_string()),
            SlotText::from(
                serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string()),
            ),
        ),
    };
    Ok(CheckedOutput {
        text,
        display_source,
        parts: output.parts,
    })
}
