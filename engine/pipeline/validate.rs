//! Stage 3, validate: the input against the contract's JSON Schema, every violation listed
//! with its JSON pointer; and the timeout the call asks for, where a bad override value is an
//! input error, never silently clamped.

use serde_json::Value;

use super::errors::message;
use super::{CallEnv, ErrorCode, Failure};
use crate::events::FailureStage;
use crate::model::engine_config::MessageKey;
use crate::model::resolved::ResolvedContract;
use crate::snapshot::Tool;
use crate::timeout::{ResolvedTimeout, TimeoutParams, resolve};

/// Checks the input against the contract's `input_schema`.
pub fn validate_input(env: &CallEnv<'_>, tool: &Tool, input: &Value) -> Result<(), Failure> {
    let Some(validator) = &tool.input_schema else {
        return Ok(());
    };
    if validator.is_valid(input) {
        return Ok(());
    }
    let mut problems: Vec<(String, String)> = validator
        .iter_errors(input)
        .map(|error| (error.instance_path().to_string(), error.to_string()))
        .collect();
    problems.sort();
    problems.dedup();
    let details = problems
        .iter()
        .map(|(pointer, text)| {
            let at = if pointer.is_empty() {
                "/".to_owned()
            } else {
                pointer.clone()
            };
            format!("`{at}`: {text}")
        })
        .collect::<Vec<_>>()
        .join("; ");
    Err(invalid(env, tool, details))
}

fn invalid(env: &CallEnv<'_>, tool: &Tool, details: String) -> Failure {
    let engine = &env.prepared.snapshot.engine;
    let text = message(
        engine,
        MessageKey::InputValidation,
        &[("tool", tool.name.as_str()), ("details", &details)],
    );
    Failure::error(FailureStage::Validate, ErrorCode::InputValidation, text)
}

/// Resolves the call's timeout (SPEC §5.1); `None` means no timeout.
pub fn resolve_timeout(
    env: &CallEnv<'_>,
    tool: &Tool,
    contract: &ResolvedContract,
    input: &Value,
) -> Result<Option<ResolvedTimeout>, Failure> {
    let timeout = &contract.timeout;
    let params = TimeoutParams {
        disabled: timeout.disabled,
        default: timeout.default,
        max: timeout.max,
        override_field: timeout.override_field.clone(),
        cleanup_grace: timeout.cleanup_grace,
        engine_default: env.prepared.snapshot.engine.default_timeout,
    };
    resolve(&params, input).map_err(|error| invalid(env, tool, error.to_string()))
}
