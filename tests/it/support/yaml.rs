//! Reads a YAML file the tests inspect (a CI workflow, a policy or policy-test file) into a
//! JSON value. Not the engine's loader (that one is internal and checked by its own tests):
//! a plain reader over the same event parser, with the YAML 1.2 core schema for plain
//! scalars, no anchors or tags, for trusted test inputs.

use rlsp_yaml_parser::{Event, ScalarStyle};
use serde_json::{Map, Number, Value};

/// An open collection: a sequence, or a mapping with the key waiting for its value.
enum Open {
    Seq(Vec<Value>),
    Map(Map<String, Value>, Option<String>),
}

/// Parses one YAML document into a JSON value; panics on a syntax error (naming `what`).
pub fn parse(what: &str, text: &str) -> Value {
    let mut stack: Vec<Open> = Vec::new();
    let mut done: Option<Value> = None;
    for next in rlsp_yaml_parser::parse_events(text) {
        let (event, _) = next.unwrap_or_else(|e| panic!("{what} does not parse: {e:?}"));
        let value = match event {
            Event::SequenceStart { .. } => {
                stack.push(Open::Seq(Vec::new()));
                continue;
            }
            Event::MappingStart { .. } => {
                stack.push(Open::Map(Map::new(), None));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(items)) => Value::Array(items),
                Some(Open::Map(map, _)) => Value::Object(map),
                None => panic!("{what}: unbalanced collection"),
            },
            Event::Scalar { value, style, .. } => match style {
                ScalarStyle::Plain => plain(&value),
                _ => Value::String(value.into_owned()),
            },
            Event::Alias { .. } => panic!("{what}: aliases are not read here"),
            _ => continue,
        };
        match stack.last_mut() {
            None => done = Some(value),
            Some(Open::Seq(items)) => items.push(value),
            Some(Open::Map(map, key)) => match key.take() {
                None => {
                    let Value::String(k) = value else {
                        *key = Some(value.to_string());
                        continue;
                    };
                    *key = Some(k);
                }
                Some(k) => {
                    map.insert(k, value);
                }
            },
        }
    }
    done.unwrap_or(Value::Null)
}

/// A plain scalar by the YAML 1.2 core schema.
fn plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => text
            .parse::<i64>()
            .map(Value::from)
            .ok()
            .or_else(|| {
                let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
                let numeric = digits.starts_with(|c: char| c.is_ascii_digit() || c == '.')
                    && digits
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b"._eE+-".contains(&b));
                numeric
                    .then(|| text.parse::<f64>().ok().and_then(Number::from_f64))
                    .flatten()
                    .map(Value::Number)
            })
            .unwrap_or_else(|| Value::String(text.to_owned())),
    }
}
