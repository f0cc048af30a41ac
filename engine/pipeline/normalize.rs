//! Stage 2, normalise: an input given as a JSON string is parsed; a missing input (`null`)
//! is the empty object; anything but an object is an input validation error.

use serde_json::{Map, Value};

use super::errors::message;
use super::{CallEnv, ErrorCode, Failure};
use crate::events::FailureStage;
use crate::model::engine_config::MessageKey;
use crate::snapshot::Tool;

/// The call's input as an object.
pub fn normalize(env: &CallEnv<'_>, tool: &Tool, input: &Value) -> Result<Value, Failure> {
    normalize_owned(env, tool, input.clone())
}

/// [`normalize`] taking the input: an object input is passed on as it is, not copied.
pub fn normalize_owned(env: &CallEnv<'_>, tool: &Tool, input: Value) -> Result<Value, Failure> {
    let fail = |details: String| {
        let engine = &env.prepared.snapshot.engine;
        let text = message(
            engine,
            MessageKey::InputValidation,
            &[("tool", tool.name.as_str()), ("details", &details)],
        );
        Failure::error(FailureStage::Normalize, ErrorCode::InputValidation, text)
    };
    match input {
        Value::Object(_) => Ok(input),
        Value::Null => Ok(Value::Object(Map::new())),
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => Ok(Value::Object(map)),
            Ok(other) => Err(fail(format!(
                "the input must be a JSON object, not {}",
                kind(&other)
            ))),
            Err(error) => Err(fail(format!("the input string is not valid JSON: {error}"))),
        },
        other => Err(fail(format!(
            "the input must be a JSON object, not {}",
            kind(&other)
        ))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
