//! JSON Schemas generated from the model. `schemas/` holds their rendered form, for editors and
//! for the loader: a test regenerates them and fails when the files are stale, so the text
//! compiled into the binary is what the model generates, and a process reads that text rather
//! than generating the schemas again (generating the policy schema was about a tenth of a
//! `toolgate plan` process's work).

use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

use super::file::PolicyFile;

/// Base URL of the published schemas (their `$id`).
pub const SCHEMA_BASE_URL: &str = "https://toolgate.dev/schemas/";

/// The schemas toolgate publishes, by file name in `schemas/`, as published.
pub fn all() -> Vec<(&'static str, Value)> {
    vec![
        ("policy.schema.json", policy_file()),
        ("batch.schema.json", batch_file()),
        ("policy-test.schema.json", policy_test_file()),
        ("decision-log.schema.json", decision_log()),
    ]
}

/// The schemas as the model generates them now, by file name in `schemas/`: what the
/// published files must equal.
#[cfg(test)]
pub fn generated() -> Vec<(&'static str, Value)> {
    vec![
        ("policy.schema.json", generate_policy_file()),
        ("batch.schema.json", generate_batch_file()),
        ("policy-test.schema.json", generate_policy_test_file()),
        ("decision-log.schema.json", generate_decision_log()),
    ]
}

/// The JSON Schema of one decision log record (one line of the JSON Lines file).
pub fn decision_log() -> Value {
    published(
        include_str!("../../schemas/decision-log.schema.json"),
        generate_decision_log,
    )
}

fn generate_decision_log() -> Value {
    generate::<super::decision_log::DecisionRecord>(
        "decision-log.schema.json",
        "toolgate decision log record",
        "One line of the toolgate decision log (JSON Lines): a decision and the rule behind it.",
    )
}

/// The JSON Schema of a batch file.
pub fn batch_file() -> Value {
    published(
        include_str!("../../schemas/batch.schema.json"),
        generate_batch_file,
    )
}

/// The JSON Schema of a policy test file.
pub fn policy_test_file() -> Value {
    published(
        include_str!("../../schemas/policy-test.schema.json"),
        generate_policy_test_file,
    )
}

/// The JSON Schema of a policy file.
pub fn policy_file() -> Value {
    published(
        include_str!("../../schemas/policy.schema.json"),
        generate_policy_file,
    )
}

/// A published schema's text, parsed; generated instead should the text not parse (it
/// always does: the drift test compares it with the generated schema).
fn published(text: &str, generate: fn() -> Value) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| generate())
}

fn generate_batch_file() -> Value {
    generate::<super::batch::BatchFile>(
        "batch.schema.json",
        "toolgate batch",
        "A batch of tool calls in the model's order, with the modes of the turn.",
    )
}

fn generate_policy_test_file() -> Value {
    generate::<super::batch::PolicyTestFile>(
        "policy-test.schema.json",
        "toolgate policy tests",
        "Calls with the decision, timeout, budget or scheduling the policies must give them.",
    )
}

fn generate_policy_file() -> Value {
    generate::<PolicyFile>(
        "policy.schema.json",
        "toolgate policy file",
        "A toolgate policy file: engine settings, tool contracts, permission rules, hooks, gates and modes.",
    )
}

/// Generates the draft 2020-12 schema of `T`, with optional fields not nullable and
/// documented unit-variant enums flattened to `enum` (so editors and the validator give
/// "expected one of" rather than a `oneOf` of constants).
pub fn generate<T: JsonSchema>(file_name: &str, title: &str, description: &str) -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.root_schema_for::<T>();
    StripNull.transform(&mut schema);
    DescribeTags.transform(&mut schema);
    FlattenConstEnums.transform(&mut schema);
    BoundIntegers.transform(&mut schema);
    let mut value = schema.to_value();
    if let Value::Object(map) = &mut value {
        let mut ordered = Map::new();
        ordered.insert(
            "$schema".into(),
            Value::from("https://json-schema.org/draft/2020-12/schema"),
        );
        ordered.insert(
            "$id".into(),
            Value::from(format!("{SCHEMA_BASE_URL}{file_name}")),
        );
        ordered.insert("title".into(), Value::from(title));
        ordered.insert("description".into(), Value::from(description));
        for (key, item) in std::mem::take(map) {
            if !ordered.contains_key(&key) {
                ordered.insert(key, item);
            }
        }
        *map = ordered;
    }
    value
}

/// Removes the `null` alternative schemars adds for `Option` fields: an absent key already
/// means "not set", and a written `null` should be an error, not a silent default.
struct StripNull;

impl Transform for StripNull {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        if let Some(Value::Array(types)) = object.get_mut("type") {
            types.retain(|t| t != "null");
            if types.len() == 1 {
                let only = types.remove(0);
                object.insert("type".into(), only);
            }
        }
        let Some(Value::Array(branches)) = object.get_mut("anyOf") else {
            return;
        };
        let before = branches.len();
        branches.retain(|b| b.get("type").is_none_or(|t| t != "null"));
        if branches.len() == 1 && before > 1 {
            let Some(Value::Object(only)) = branches.pop() else {
                return;
            };
            object.remove("anyOf");
            for (key, item) in only {
                object.entry(key).or_insert(item);
            }
        }
    }
}

/// Adds the range of fixed-width integers (`format: uint32` …) as `minimum`/`maximum`:
/// validators do not check those formats, so without the bounds `weight: 5000000000` passed
/// the schema and failed only in deserialisation, without the schema stage's positions.
struct BoundIntegers;

impl Transform for BoundIntegers {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        let (min, max): (Value, Value) = match object.get("format").and_then(Value::as_str) {
            Some("uint8") => (0.into(), u8::MAX.into()),
            Some("uint16") => (0.into(), u16::MAX.into()),
            Some("uint32") => (0.into(), u32::MAX.into()),
            Some("int8") => (i8::MIN.into(), i8::MAX.into()),
            Some("int16") => (i16::MIN.into(), i16::MAX.into()),
            Some("int32") => (i32::MIN.into(), i32::MAX.into()),
            // 64-bit values are bounded already: the loaders refuse integers that do not fit.
            _ => return,
        };
        object.entry("minimum").or_insert(min);
        object.entry("maximum").or_insert(max);
    }
}

/// Documents the discriminator property of internally tagged enums (`kind: command`),
/// which schemars leaves without a description.
struct DescribeTags;

impl Transform for DescribeTags {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(Value::Object(props)) =
            schema.as_object_mut().and_then(|o| o.get_mut("properties"))
        else {
            return;
        };
        for prop in props.values_mut() {
            let Value::Object(prop) = prop else { continue };
            if prop.contains_key("description") {
                continue;
            }
            if let Some(Value::String(tag)) = prop.get("const") {
                let text = format!("`{tag}` selects this variant.");
                prop.insert("description".into(), Value::from(text));
            }
        }
    }
}

/// Rewrites `oneOf: [{const, description}, …]` into `enum` plus a description that lists
/// each value's meaning.
struct FlattenConstEnums;

impl Transform for FlattenConstEnums {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        let Some(Value::Array(branches)) = object.get("oneOf") else {
            return;
        };
        let mut values = Vec::new();
        let mut lines = Vec::new();
        for branch in branches {
            let Some(constant) = branch.get("const") else {
                return;
            };
            let only_docs = branch.as_object().is_some_and(|b| {
                b.keys()
                    .all(|k| matches!(k.as_str(), "const" | "type" | "description"))
            });
            if !only_docs {
                return;
            }
            if let Some(text) = branch.get("description").and_then(Value::as_str) {
                let shown = constant
                    .as_str()
                    .map_or_else(|| constant.to_string(), str::to_owned);
                lines.push(format!("`{shown}`: {text}"));
            }
            values.push(constant.clone());
        }
        object.remove("oneOf");
        let all_strings = values.iter().all(Value::is_string);
        if all_strings {
            object.insert("type".into(), Value::from("string"));
        }
        object.insert("enum".into(), Value::Array(values));
        if !lines.is_empty() {
            let joined = lines.join("\n");
            let description = match object.get("description").and_then(Value::as_str) {
                Some(existing) => format!("{existing}\n\n{joined}"),
                None => joined,
            };
            object.insert("description".into(), Value::from(description));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every property of every object schema carries a `description`, so editors can show
    /// hover docs for every field.
    #[test]
    fn every_property_is_documented() {
        fn walk(value: &Value, path: &str, missing: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::Object(props)) = map.get("properties") {
                        for (name, prop) in props {
                            let has_doc = prop.get("description").is_some()
                                || prop
                                    .get("$ref")
                                    .is_some_and(|_| prop.get("description").is_some());
                            if !has_doc {
                                missing.push(format!("{path}/properties/{name}"));
                            }
                        }
                    }
                    for (key, item) in map {
                        walk(item, &format!("{path}/{key}"), missing);
                    }
                }
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        walk(item, &format!("{path}/{i}"), missing);
                    }
                }
                _ => {}
            }
        }
        for (name, schema) in all() {
            let mut missing = Vec::new();
            walk(&schema, "", &mut missing);
            assert!(
                missing.is_empty(),
                "{name}: undocumented properties: {missing:#?}"
            );
        }
    }
}
