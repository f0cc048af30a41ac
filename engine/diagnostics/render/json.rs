//! The JSON format of `toolgate check --format json`:
//! `{"diagnostics": [{"code", "severity", "message", "file", "line", "column", "help"}]}`.
//!
//! Exactly those keys, `line`/`column` 1-based, `help` null when absent (and `file`, `line`,
//! `column` null for a diagnostic without a location). Related places are folded into the
//! message (`… (first defined here: a.yaml:1:1)`) because the shape has no room for them.

use serde_json::{Value, json};

use crate::diagnostics::Diagnostic;

/// The diagnostics as a JSON value.
pub fn to_json(diagnostics: &[Diagnostic]) -> Value {
    let list: Vec<Value> = diagnostics
        .iter()
        .map(|diagnostic| {
            let location = diagnostic.location.as_ref();
            json!({
                "code": diagnostic.code.as_str(),
                "severity": diagnostic.severity.as_str(),
                "message": diagnostic.flat_message(),
                "file": location.map(|l| l.source.path().to_string()),
                "line": location.map(|l| l.span.line),
                "column": location.map(|l| l.span.column),
                "help": diagnostic.help,
            })
        })
        .collect();
    json!({ "diagnostics": list })
}

/// The diagnostics as pretty-printed JSON, with a final newline.
pub fn render_json(diagnostics: &[Diagnostic]) -> String {
    let mut text = serde_json::to_string_pretty(&to_json(diagnostics))
        .unwrap_or_else(|_| "{\"diagnostics\": []}".to_owned());
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::Code;
    use crate::diagnostics::{Format, SourceFile};

    #[test]
    fn exactly_the_documented_keys() {
        let source = SourceFile::in_memory("a.yaml", "a: 1\n", Format::Yaml);
        let located =
            Diagnostic::new(Code::SchemaType, "m").with_location(source.location_at(3, 1));
        let bare = Diagnostic::new(Code::BatchEmpty, "n").with_help("h");
        let value = to_json(&[located, bare]);
        let list = value["diagnostics"].as_array().unwrap();
        let keys: Vec<&str> = list[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "code", "severity", "message", "file", "line", "column", "help"
            ]
        );
        assert_eq!(list[0]["line"], 1);
        assert_eq!(list[0]["column"], 4);
        assert_eq!(list[0]["help"], Value::Null);
        assert_eq!(list[1]["file"], Value::Null);
        assert_eq!(list[1]["help"], "h");
    }
}
