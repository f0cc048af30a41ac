//! Resolving a call's timeout (SPEC §5.1): a pure function of the contract's timeout policy,
//! the engine default and the call's input.
//!
//! Order, first that applies: `timeout: none` → no timeout; the call's override field (in
//! milliseconds) if the contract names one and the input carries it; the contract's
//! `default`; the engine default (whose `none` means no timeout). The requested time is capped
//! at `max` and raised to at least 1 ms: that is the call's deadline, the time the model is
//! told about. `cleanup_grace` is the engine's own: after the deadline the handler is told to
//! stop (SIGTERM) and gets the grace to clean up before it is killed.
//!
//! A bad override value is never clamped into range: it is an [`OverrideError`] carrying the
//! JSON pointer of the field, which the pipeline reports as an input validation error so the
//! model can correct its call.

use std::time::Duration as StdDuration;

use serde_json::Value;

pub use crate::model::resolved::TimeoutPolicy;

/// The largest override a call may request: 365 days, in milliseconds.
///
/// Why this bound: no tool call means to run for a year, so a larger number is a unit mistake
/// (seconds since the epoch, microseconds, nanoseconds) that should be reported, not obeyed.
/// It also keeps every accepted value exact in an `f64` (below 2^53) and well inside the
/// range tokio's timer handles without clamping (about two years). Values between a
/// contract's `max` and this bound are capped at `max`, as SPEC §5.1 asks.
pub const MAX_OVERRIDE_MS: u64 = 365 * 24 * 60 * 60 * 1000;

/// Where the requested time of a resolved timeout came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeoutSource {
    /// The call's override field.
    Override,
    /// The contract's `timeout.default`.
    ContractDefault,
    /// The engine's `default_timeout`.
    EngineDefault,
}

/// A resolved timeout: the budget the tool asked for (capped, at least 1 ms), which is what
/// the deadline runs for and what the model is told; the cleanup grace after it; and their
/// sum, the latest time the handler is killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolvedTimeout {
    /// The requested time after capping at `max` and raising to at least 1 ms.
    pub budget: StdDuration,
    /// The contract's `cleanup_grace`.
    pub grace: StdDuration,
    /// `budget + grace`: the running time after which a handler that ignores the deadline
    /// is killed.
    pub total: StdDuration,
    /// Where the requested time came from.
    pub source: TimeoutSource,
    /// Whether the requested time was reduced to `max`.
    pub capped: bool,
}

/// A call's timeout override that cannot be obeyed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("timeout override `{pointer}` {problem}")]
pub struct OverrideError {
    /// JSON pointer of the offending field in the call's input (`/timeout`).
    pub pointer: String,
    /// What is wrong with its value.
    pub problem: OverrideProblem,
}

/// What is wrong with an override value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OverrideProblem {
    /// A string, boolean, object or array.
    #[error("must be a number of milliseconds, not {0}")]
    NotANumber(&'static str),
    /// Below zero.
    #[error("must be a positive number of milliseconds, not `{0}`")]
    Negative(String),
    /// Exactly zero.
    #[error("must be at least 1 millisecond, not `0`")]
    Zero,
    /// Not a whole number.
    #[error("must be a whole number of milliseconds, not `{0}`")]
    Fractional(String),
    /// Above [`MAX_OVERRIDE_MS`].
    #[error(
        "is `{0}` milliseconds, more than the limit of {MAX_OVERRIDE_MS} (365 days); give the timeout in milliseconds"
    )]
    TooLarge(String),
}

/// Resolves the timeout of one call; `Ok(None)` means the call runs without a timeout.
///
/// An override field that is absent or `null` falls through to the defaults (models often
/// send `null` for an optional field they do not mean to set).
pub fn resolve(
    params: &TimeoutPolicy,
    input: &Value,
) -> Result<Option<ResolvedTimeout>, OverrideError> {
    if params.disabled {
        return Ok(None);
    }
    let override_ms = match &params.override_field {
        Some(field) => read_override(field, input)?,
        None => None,
    };
    let (requested, source) = match (override_ms, params.default, params.engine_default) {
        (Some(ms), _, _) => (StdDuration::from_millis(ms), TimeoutSource::Override),
        (None, Some(default), _) => (default.0, TimeoutSource::ContractDefault),
        (None, None, Some(engine)) => (engine.0, TimeoutSource::EngineDefault),
        (None, None, None) => return Ok(None),
    };
    let (capped_time, capped) = match params.max {
        Some(max) if requested > max.0 => (max.0, true),
        Some(_) | None => (requested, false),
    };
    let budget = capped_time.max(StdDuration::from_millis(1));
    let grace = params.cleanup_grace.0;
    Ok(Some(ResolvedTimeout {
        budget,
        grace,
        total: budget.saturating_add(grace),
        source,
        capped,
    }))
}

/// Reads and checks the override value; `Ok(None)` when the input does not set it.
fn read_override(field: &str, input: &Value) -> Result<Option<u64>, OverrideError> {
    // A plain name is read directly (no pointer is built on the hot path); the pointer is
    // only spelled out for an error.
    let found = if field.starts_with('/') {
        input.pointer(field)
    } else {
        crate::policy::matcher::field(input, field)
    };
    let value = match found {
        None | Some(Value::Null) => return Ok(None),
        Some(value) => value,
    };
    let fail = |problem| OverrideError {
        pointer: field_pointer(field),
        problem,
    };
    let number = match value {
        Value::Number(number) => number,
        Value::Null => return Ok(None),
        Value::Bool(_) => return Err(fail(OverrideProblem::NotANumber("a boolean"))),
        Value::String(_) => return Err(fail(OverrideProblem::NotANumber("a string"))),
        Value::Array(_) => return Err(fail(OverrideProblem::NotANumber("an array"))),
        Value::Object(_) => return Err(fail(OverrideProblem::NotANumber("an object"))),
    };
    let shown = number.to_string();
    if let Some(ms) = number.as_u64() {
        return match ms {
            0 => Err(fail(OverrideProblem::Zero)),
            ms if ms > MAX_OVERRIDE_MS => Err(fail(OverrideProblem::TooLarge(shown))),
            ms => Ok(Some(ms)),
        };
    }
    if number.is_i64() {
        // as_u64 failed, so the integer is negative.
        return Err(fail(OverrideProblem::Negative(shown)));
    }
    // A float. JSON does not distinguish `1000` from `1000.0`, and JSON Schema's `integer`
    // accepts both, so a whole float is taken at its value.
    let float = number.as_f64().unwrap_or(f64::NAN);
    if float < 0.0 {
        Err(fail(OverrideProblem::Negative(shown)))
    } else if float.fract() != 0.0 || float.is_nan() {
        Err(fail(OverrideProblem::Fractional(shown)))
    } else if float == 0.0 {
        Err(fail(OverrideProblem::Zero))
    } else if float > MAX_OVERRIDE_MS as f64 {
        Err(fail(OverrideProblem::TooLarge(shown)))
    } else {
        // INVARIANT: 1 <= float <= MAX_OVERRIDE_MS < 2^53 and whole, so the cast is exact.
        Ok(Some(float as u64))
    }
}

/// The JSON pointer of the override field: a plain name is a top-level property.
fn field_pointer(field: &str) -> String {
    if field.starts_with('/') {
        field.to_owned()
    } else {
        format!("/{}", field.replace('~', "~0").replace('/', "~1"))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::Duration;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    fn params() -> TimeoutPolicy {
        TimeoutPolicy {
            disabled: false,
            default: Some(ms(120_000)),
            max: Some(ms(600_000)),
            override_field: Some("timeout".into()),
            cleanup_grace: ms(6_000),
            engine_default: Some(ms(300_000)),
            cancellation_message: None,
        }
    }

    /// (case, params, input, expected (budget ms, total ms, source, capped) or None)
    type Row = (
        &'static str,
        TimeoutPolicy,
        Value,
        Option<(u64, u64, TimeoutSource, bool)>,
    );

    #[test]
    fn resolution_order_cap_floor_and_grace() {
        use TimeoutSource::{ContractDefault, EngineDefault, Override};
        let table: Vec<Row> = vec![
            (
                "none disables even with an override",
                TimeoutPolicy {
                    disabled: true,
                    ..params()
                },
                json!({"timeout": 5}),
                None,
            ),
            (
                "override wins",
                params(),
                json!({"timeout": 5_000}),
                Some((5_000, 11_000, Override, false)),
            ),
            (
                "override as a whole float",
                params(),
                json!({"timeout": 5_000.0}),
                Some((5_000, 11_000, Override, false)),
            ),
            (
                "override above max is capped",
                params(),
                json!({"timeout": 900_000}),
                Some((600_000, 606_000, Override, true)),
            ),
            (
                "absent override falls to the contract default",
                params(),
                json!({"command": "ls"}),
                Some((120_000, 126_000, ContractDefault, false)),
            ),
            (
                "null override falls to the contract default",
                params(),
                json!({"timeout": null}),
                Some((120_000, 126_000, ContractDefault, false)),
            ),
            (
                "non-object input has no override",
                params(),
                json!("text"),
                Some((120_000, 126_000, ContractDefault, false)),
            ),
            (
                "no override field: the input value is ignored",
                TimeoutPolicy {
                    override_field: None,
                    ..params()
                },
                json!({"timeout": "garbage"}),
                Some((120_000, 126_000, ContractDefault, false)),
            ),
            (
                "no contract default: engine default",
                TimeoutPolicy {
                    default: None,
                    ..params()
                },
                json!({}),
                Some((300_000, 306_000, EngineDefault, false)),
            ),
            (
                "engine default is capped too",
                TimeoutPolicy {
                    default: None,
                    max: Some(ms(60_000)),
                    ..params()
                },
                json!({}),
                Some((60_000, 66_000, EngineDefault, true)),
            ),
            (
                "engine default none: no timeout",
                TimeoutPolicy {
                    default: None,
                    engine_default: None,
                    ..params()
                },
                json!({}),
                None,
            ),
            (
                "engine default none but an override is given",
                TimeoutPolicy {
                    default: None,
                    engine_default: None,
                    ..params()
                },
                json!({"timeout": 42}),
                Some((42, 6_042, Override, false)),
            ),
            (
                "no max: no cap",
                TimeoutPolicy {
                    max: None,
                    ..params()
                },
                json!({"timeout": 3_600_000}),
                Some((3_600_000, 3_606_000, Override, false)),
            ),
            (
                "zero default is raised to 1 ms",
                TimeoutPolicy {
                    default: Some(ms(0)),
                    cleanup_grace: ms(0),
                    ..params()
                },
                json!({}),
                Some((1, 1, ContractDefault, false)),
            ),
            (
                "zero max caps and is raised to 1 ms",
                TimeoutPolicy {
                    max: Some(ms(0)),
                    ..params()
                },
                json!({}),
                Some((1, 6_001, ContractDefault, true)),
            ),
            (
                "pointer override field",
                TimeoutPolicy {
                    override_field: Some("/options/timeout_ms".into()),
                    ..params()
                },
                json!({"options": {"timeout_ms": 7}}),
                Some((7, 6_007, Override, false)),
            ),
            (
                "largest accepted override, no max",
                TimeoutPolicy {
                    max: None,
                    cleanup_grace: ms(0),
                    ..params()
                },
                json!({"timeout": MAX_OVERRIDE_MS}),
                Some((MAX_OVERRIDE_MS, MAX_OVERRIDE_MS, Override, false)),
            ),
        ];
        for (case, params, input, expected) in table {
            let got = resolve(&params, &input)
                .unwrap_or_else(|err| panic!("{case}: {err}"))
                .map(|r| {
                    (
                        r.budget.as_millis() as u64,
                        r.total.as_millis() as u64,
                        r.source,
                        r.capped,
                    )
                });
            assert_eq!(got, expected, "{case}");
        }
    }

    #[test]
    fn bad_overrides_are_errors_with_the_field_pointer() {
        let too_large = MAX_OVERRIDE_MS + 1;
        let table: Vec<(Value, OverrideProblem)> = vec![
            (json!(-5), OverrideProblem::Negative("-5".into())),
            (json!(-0.5), OverrideProblem::Negative("-0.5".into())),
            (json!(0), OverrideProblem::Zero),
            (json!(0.0), OverrideProblem::Zero),
            (json!(1.5), OverrideProblem::Fractional("1.5".into())),
            (json!("5000"), OverrideProblem::NotANumber("a string")),
            (json!(true), OverrideProblem::NotANumber("a boolean")),
            (json!([1]), OverrideProblem::NotANumber("an array")),
            (json!({"ms": 1}), OverrideProblem::NotANumber("an object")),
            (
                json!(too_large),
                OverrideProblem::TooLarge(too_large.to_string()),
            ),
            (
                json!(u64::MAX),
                OverrideProblem::TooLarge(u64::MAX.to_string()),
            ),
            (json!(1e300), OverrideProblem::TooLarge("1e+300".into())),
            (
                json!(1_700_000_000_000_u64),
                OverrideProblem::TooLarge("1700000000000".into()),
            ),
        ];
        for (value, problem) in table {
            let input = json!({ "timeout": value });
            assert_eq!(
                resolve(&params(), &input),
                Err(OverrideError {
                    pointer: "/timeout".into(),
                    problem,
                }),
                "{value}"
            );
        }
    }

    #[test]
    fn field_names_are_escaped_into_pointers() {
        let params = TimeoutPolicy {
            override_field: Some("a~b".into()),
            ..params()
        };
        let err = resolve(&params, &json!({"a~b": "x"})).unwrap_err();
        assert_eq!(err.pointer, "/a~0b");
    }

    #[test]
    fn error_messages_name_the_field_and_the_fix() {
        let err = resolve(&params(), &json!({"timeout": "30s"})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "timeout override `/timeout` must be a number of milliseconds, not a string"
        );
        let err = resolve(&params(), &json!({"timeout": 1.25})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "timeout override `/timeout` must be a whole number of milliseconds, not `1.25`"
        );
    }
}
