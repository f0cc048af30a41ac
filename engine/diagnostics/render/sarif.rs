//! SARIF 2.1.0 output, for code-scanning dashboards: one run of the tool `toolgate`, one
//! rule per code used (with its documentation), one result per diagnostic with its physical
//! location and related locations.
//!
//! Columns are Unicode code points (`columnKind: unicodeCodePoints`), matching the columns
//! of every other format.

use serde_json::{Map, Value, json};

use crate::diagnostics::Code;
use crate::diagnostics::{Diagnostic, Location, Severity};

/// The SARIF schema URI.
const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The diagnostics as a SARIF log.
pub fn to_sarif(diagnostics: &[Diagnostic]) -> Value {
    let mut codes: Vec<Code> = diagnostics.iter().map(|d| d.code).collect();
    codes.sort();
    codes.dedup();
    let rules: Vec<Value> = codes
        .iter()
        .map(|code| {
            json!({
                "id": code.as_str(),
                "shortDescription": { "text": code.summary() },
                "fullDescription": { "text": explanation(code.docs()) },
                "help": { "text": code.docs(), "markdown": code.docs() },
                "defaultConfiguration": { "level": level(code.default_severity()) },
            })
        })
        .collect();
    let results: Vec<Value> = diagnostics
        .iter()
        .map(|diagnostic| {
            let mut message = diagnostic.message.clone();
            if let Some(help) = &diagnostic.help {
                message.push_str("\nhelp: ");
                message.push_str(help);
            }
            let mut result = Map::new();
            result.insert("ruleId".into(), json!(diagnostic.code.as_str()));
            result.insert(
                "ruleIndex".into(),
                json!(codes.binary_search(&diagnostic.code).unwrap_or(0)),
            );
            result.insert("level".into(), json!(level(diagnostic.severity)));
            result.insert("message".into(), json!({ "text": message }));
            if let Some(location) = &diagnostic.location {
                result.insert(
                    "locations".into(),
                    json!([{ "physicalLocation": physical(location) }]),
                );
            }
            if !diagnostic.related.is_empty() {
                let related: Vec<Value> = diagnostic
                    .related
                    .iter()
                    .enumerate()
                    .map(|(index, related)| {
                        json!({
                            "id": index,
                            "message": { "text": related.message },
                            "physicalLocation": physical(&related.location),
                        })
                    })
                    .collect();
                result.insert("relatedLocations".into(), Value::Array(related));
            }
            Value::Object(result)
        })
        .collect();
    json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "toolgate",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    })
}

/// The SARIF log, pretty-printed with a final newline.
pub fn render_sarif(diagnostics: &[Diagnostic]) -> String {
    let mut text =
        serde_json::to_string_pretty(&to_sarif(diagnostics)).unwrap_or_else(|_| "{}".to_owned());
    text.push('\n');
    text
}

/// The "What it means" paragraph of a code's documentation.
fn explanation(docs: &str) -> &str {
    docs.strip_prefix("## What it means\n")
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or(docs)
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

fn physical(location: &Location) -> Value {
    let span = location.span;
    let (end_line, end_column) = location.source.line_col(span.end());
    json!({
        "artifactLocation": { "uri": location.source.path().replace('\\', "/") },
        "region": {
            "startLine": span.line,
            "startColumn": span.column,
            "endLine": end_line,
            "endColumn": end_column,
            "byteOffset": span.offset,
            "byteLength": span.len,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::{Format, SourceFile};

    #[test]
    fn one_rule_per_code_used() {
        let source = SourceFile::in_memory("a.yaml", "a: 1\nb: 2\n", Format::Yaml);
        let list = [
            Diagnostic::new(Code::SchemaType, "x").with_location(source.location_at(3, 1)),
            Diagnostic::new(Code::SchemaType, "y").with_location(source.location_at(8, 1)),
            Diagnostic::new(Code::SemanticRuleShadowed, "z"),
        ];
        let log = to_sarif(&list);
        let run = &log["runs"][0];
        assert_eq!(run["tool"]["driver"]["rules"].as_array().unwrap().len(), 2);
        assert_eq!(run["results"][1]["ruleIndex"], 0);
        assert_eq!(run["results"][2]["ruleIndex"], 1);
        assert_eq!(run["results"][2]["level"], "warning");
        let region = &run["results"][1]["locations"][0]["physicalLocation"]["region"];
        assert_eq!(
            (region["startLine"].as_u64(), region["endColumn"].as_u64()),
            (Some(2), Some(5))
        );
    }
}
