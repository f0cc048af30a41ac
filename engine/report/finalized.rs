//! The `BatchFinalized` record: a batch's results as JSON, printed by `run --format jsonl`
//! and answered by `serve`'s `execute`.

use serde_json::{Value, json};

use crate::executor::BatchOutcome;
use crate::pipeline::CallResult;

/// The result JSON of one call, as `BatchFinalized.results[]` and the stdio server give it.
pub fn result_json(result: &CallResult) -> Value {
    let mut value = json!({
        "call_id": result.call_id.as_str(),
        "tool": result.tool,
        "status": result.status.as_str(),
        "model_content": result.model_text(),
        "metadata": result.metadata,
    });
    if let Value::Object(map) = &mut value {
        let extra = [
            (
                "canonical_tool",
                serde_json::to_value(&result.canonical_tool),
            ),
            ("error", serde_json::to_value(&result.error)),
            ("permission", serde_json::to_value(&result.permission)),
            ("display", serde_json::to_value(&result.display)),
            ("turn", serde_json::to_value(&result.turn)),
        ];
        for (key, item) in extra {
            if let Ok(item) = item
                && !item.is_null()
            {
                map.insert(key.to_owned(), item);
            }
        }
        if !result.parts.is_empty() {
            map.insert("parts".into(), Value::Array(result.parts.clone()));
        }
    }
    value
}

/// The final `BatchFinalized` record.
pub fn finalized_json(outcome: &BatchOutcome) -> Value {
    let mut value = json!({
        "type": "BatchFinalized",
        "batch_id": outcome.batch_id.as_str(),
        "generation": outcome.generation,
        "turn_stopped": outcome.turn_stopped,
        "results": outcome.results.iter().map(result_json).collect::<Vec<_>>(),
    });
    if let Value::Object(map) = &mut value {
        if let Some(context) = &outcome.batch_context {
            map.insert("batch_context".into(), json!(context));
        }
        if !outcome.feedback.is_empty() {
            map.insert("feedback".into(), json!(outcome.feedback));
        }
    }
    value
}
