//! `toolgate schema [NAME]`: print one of the JSON Schemas toolgate publishes.

use serde_json::Value;

/// The schemas by short name: `policy`, `batch`, `policy-test`, and `diff` (the report of
/// `toolgate diff --format json`).
pub fn schemas() -> Vec<(&'static str, &'static str, Value)> {
    crate::model::schema::all()
        .into_iter()
        .chain([("diff.schema.json", crate::review::report::schema())])
        .map(|(file, schema)| (file.trim_end_matches(".schema.json"), file, schema))
        .collect()
}

/// The schema with a short name or file name, pretty-printed.
pub fn schema(name: &str) -> Option<String> {
    schemas()
        .into_iter()
        .find(|(short, file, _)| *short == name || *file == name)
        .and_then(|(_, _, schema)| serde_json::to_string_pretty(&schema).ok())
        .map(|text| text + "\n")
}

/// The list shown when no name is given.
pub fn list() -> String {
    let mut out = String::from("schemas (print one with `toolgate schema NAME`):\n");
    for (short, file, schema) in schemas() {
        let title = schema
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.push_str(&format!("  {short:<12} {file:<26} {title}\n"));
    }
    out
}
