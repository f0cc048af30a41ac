//! JSON documents (batches, agents' settings files): parsed by `serde_json` (JSON's own
//! escapes, surrogate pairs included, and time linear in the input however long its lines),
//! with a span table built by one linear scan of the already-validated text, so that schema
//! and batch errors still point at their place in the file, and a key given twice is an
//! error (`serde_json` keeps the last, silently).

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use crate::diagnostics::{Code, Diagnostic, Location, SourceFile, Span};
use crate::load::spans::{NodeId, NodeSpan, SpanTableBuilder};
use crate::load::{ParseLimits, ParsedDocument};

/// Parses the JSON text `text` (named `name` in diagnostics: an agent's settings file, a
/// request line) into its value, or its first problem, placed.
pub fn parse_text(name: &str, text: &str) -> Result<Value, Diagnostic> {
    let source = Arc::new(SourceFile::new(
        name,
        text,
        crate::diagnostics::Format::Yaml,
    ));
    parse_json(source, &ParseLimits::DEFAULT)
        .map(|document| document.value)
        .map_err(|mut problems| problems.swap_remove(0))
}

/// `value` read as `T`; the error says `what` was wrong and, when the fault lies in a field,
/// names it (`` `tool_name`: invalid type … ``).
pub fn deserialize_as<T: serde::de::DeserializeOwned>(
    value: &Value,
    what: &str,
) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if path == "." {
            format!("{what}: {inner}")
        } else {
            format!("{what}: `{path}`: {inner}")
        }
    })
}

/// Parses a JSON document into a JSON value and the span of every node.
pub fn parse_json(
    source: Arc<SourceFile>,
    limits: &ParseLimits,
) -> Result<ParsedDocument, Vec<Diagnostic>> {
    let text: &str = source.text();
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(error) => return Err(vec![syntax_error(&source, &error)]),
    };
    let mut scan = Scan {
        bytes: text.as_bytes(),
        text,
        at: 0,
        spans: SpanTableBuilder::new(&source),
        source: Arc::clone(&source),
        limits,
        problems: Vec::new(),
    };
    scan.skip_blank();
    let root = scan.spans.root(Span::default());
    scan.value(root, 0);
    if !scan.problems.is_empty() {
        return Err(scan.problems);
    }
    let spans = scan.spans.build();
    Ok(ParsedDocument {
        source,
        value,
        spans,
    })
}

/// The diagnostic for text `serde_json` rejected, at the line and column it names.
fn syntax_error(source: &Arc<SourceFile>, error: &serde_json::Error) -> Diagnostic {
    let message = error.to_string();
    // `serde_json` appends " at line L column C"; the location carries those.
    let message = message
        .rfind(" at line ")
        .map_or(message.as_str(), |cut| &message[..cut]);
    let line = u32::try_from(error.line()).unwrap_or(u32::MAX);
    let offset = source
        .line_range(line)
        .map_or(source.text().len(), |range| {
            // `serde_json` counts columns in bytes, 1-based.
            (range.start + error.column().saturating_sub(1)).min(range.end)
        });
    let (code, help) = if message.contains("recursion limit") {
        (Code::SyntaxLimit, "flatten the structure")
    } else {
        (
            Code::BatchInvalid,
            "the file must be JSON (a batch named `.yaml` may be written in YAML)",
        )
    };
    Diagnostic::new(code, format!("not valid JSON: {message}"))
        .at(source, source.span(offset, 0))
        .with_help(help)
}

/// One pass over text `serde_json` accepted: records the span of every key and value.
struct Scan<'t, 'l> {
    bytes: &'t [u8],
    text: &'t str,
    at: usize,
    spans: SpanTableBuilder,
    source: Arc<SourceFile>,
    limits: &'l ParseLimits,
    problems: Vec<Diagnostic>,
}

impl<'t> Scan<'t, '_> {
    fn peek(&self) -> u8 {
        self.bytes.get(self.at).copied().unwrap_or(0)
    }

    fn skip_blank(&mut self) {
        while matches!(self.peek(), b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    /// Scans the value at the cursor (blanks skipped), recording its span on `id`.
    fn value(&mut self, id: NodeId, depth: usize) {
        let start = self.at;
        match self.peek() {
            b'{' => {
                if depth >= self.limits.max_depth {
                    return self.too_deep(start);
                }
                self.object(id, depth);
            }
            b'[' => {
                if depth >= self.limits.max_depth {
                    return self.too_deep(start);
                }
                self.array(id, depth);
            }
            b'"' => {
                self.string();
            }
            _ => {
                while !matches!(
                    self.peek(),
                    b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r' | 0
                ) {
                    self.at += 1;
                }
            }
        }
        let span = self.first_line(start, self.at);
        self.spans.set_value(id, span);
    }

    fn object(&mut self, id: NodeId, depth: usize) {
        self.at += 1;
        let mut seen: HashSet<Cow<'t, str>> = HashSet::new();
        loop {
            self.skip_blank();
            match self.peek() {
                b'}' => {
                    self.at += 1;
                    return;
                }
                b',' => {
                    self.at += 1;
                    continue;
                }
                b'"' => {}
                // Unreachable for text `serde_json` accepted; stop rather than loop.
                _ => return,
            }
            let key_start = self.at;
            let key = self.string();
            let key_span = self.span(key_start, self.at);
            self.skip_blank();
            if self.peek() == b':' {
                self.at += 1;
            }
            self.skip_blank();
            let child = self.spans.member(
                id,
                &key,
                NodeSpan {
                    key: Some(key_span),
                    value: Span::default(),
                },
            );
            if let Some(first) = seen.get(&key) {
                let first = first.clone().into_owned();
                let mut diagnostic = Diagnostic::new(
                    Code::SyntaxDuplicateKey,
                    format!("the key `{first}` is defined twice"),
                )
                .with_location(self.spans_source_location(key_span))
                .with_help("remove one of them: keys must be unique in an object");
                if let Some(earlier) = self.spans.find_member(id, &first) {
                    diagnostic = diagnostic.with_related(
                        "first defined here",
                        self.spans_source_location(earlier.label()),
                    );
                }
                self.problems.push(diagnostic);
            } else {
                seen.insert(key);
            }
            self.value(child, depth + 1);
        }
    }

    fn array(&mut self, id: NodeId, depth: usize) {
        self.at += 1;
        let mut index = 0;
        loop {
            self.skip_blank();
            match self.peek() {
                b']' | 0 => {
                    self.at += 1;
                    return;
                }
                b',' => {
                    self.at += 1;
                    continue;
                }
                _ => {}
            }
            let child = self.spans.item(id, index, Span::default());
            index += 1;
            self.value(child, depth + 1);
        }
    }

    /// Scans a string token at the cursor and returns its unescaped text (borrowed when it
    /// has no escapes).
    fn string(&mut self) -> Cow<'t, str> {
        let start = self.at;
        self.at += 1;
        let mut escaped = false;
        loop {
            match self.peek() {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    self.at += 2;
                }
                0 if self.at >= self.bytes.len() => break,
                _ => self.at += 1,
            }
        }
        self.at += 1;
        let raw = self
            .text
            .get(start..self.at.min(self.text.len()))
            .unwrap_or("");
        if escaped {
            serde_json::from_str::<String>(raw).map_or(Cow::Borrowed(raw), Cow::Owned)
        } else {
            Cow::Borrowed(raw.get(1..raw.len().saturating_sub(1)).unwrap_or(""))
        }
    }

    fn too_deep(&mut self, start: usize) {
        let location = self.spans_source_location(self.span(start, start + 1));
        self.problems.push(
            Diagnostic::new(
                Code::SyntaxLimit,
                format!(
                    "the batch nests deeper than {} levels",
                    self.limits.max_depth
                ),
            )
            .with_location(location)
            .with_help("flatten the structure"),
        );
        // Skip the nested value without recording it: serde_json already checked it.
        let mut level = 0usize;
        while self.at < self.bytes.len() {
            match self.peek() {
                b'"' => {
                    self.string();
                    continue;
                }
                b'[' | b'{' => level += 1,
                b']' | b'}' => {
                    level = level.saturating_sub(1);
                    if level == 0 {
                        self.at += 1;
                        return;
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
    }

    /// The span of `start..end` without line and column: the table stores only offsets, and
    /// computing a column per node would cost the length of the line each time.
    fn span(&self, start: usize, end: usize) -> Span {
        Span {
            offset: start,
            len: end.saturating_sub(start),
            line: 0,
            column: 0,
        }
    }

    /// Like [`Scan::span`], cut at the first line break (a collection is labelled by its
    /// first line only). Scans only the node's own text, so the whole pass stays linear
    /// (times the nesting depth).
    fn first_line(&self, start: usize, end: usize) -> Span {
        let end = end.min(self.bytes.len());
        let cut = self
            .bytes
            .get(start..end)
            .and_then(|node| memchr::memchr(b'\n', node))
            .map_or(end, |newline| start + newline);
        let mut cut = cut;
        while cut > start && matches!(self.bytes.get(cut - 1), Some(b' ' | b'\t' | b'\r')) {
            cut -= 1;
        }
        self.span(start, cut)
    }

    fn spans_source_location(&self, span: Span) -> Location {
        self.source.location_at(span.offset, span.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::Format;

    fn parse(text: &str) -> Result<ParsedDocument, Vec<Diagnostic>> {
        parse_json(
            SourceFile::in_memory("b.json", text, Format::Yaml),
            &ParseLimits::DEFAULT,
        )
    }

    #[test]
    fn surrogate_pairs_are_read_as_one_character() {
        let document =
            parse(r#"{"calls": [{"id": "a", "tool": "Echo", "input": {"text": "\ud83d\ude00"}}]}"#)
                .expect("valid JSON");
        assert_eq!(document.value["calls"][0]["input"]["text"], "\u{1F600}");
    }

    #[test]
    fn spans_point_at_keys_and_values() {
        let text = "{\n  \"calls\": [\n    {\"id\": \"a\", \"tool\": \"x\"},\n    {\"id\": \"b\\u0041\"}\n  ]\n}\n";
        let document = parse(text).expect("valid JSON");
        let id = document
            .spans
            .get("/calls/1/id")
            .expect("span of the second id");
        let key = id.key.expect("a member has a key span");
        assert_eq!((key.line, key.column), (4, 6));
        assert_eq!(&text[id.value.offset..id.value.end()], "\"b\\u0041\"");
        let tool = document
            .spans
            .get("/calls/0/tool")
            .expect("span of the tool");
        assert_eq!((tool.value.line, tool.value.column), (3, 25));
        let calls = document.spans.get("/calls").expect("span of the list");
        assert_eq!(&text[calls.value.offset..calls.value.end()], "[");
        assert_eq!(document.value["calls"][1]["id"], "bA");
    }

    #[test]
    fn syntax_errors_are_positioned() {
        let problems = parse("{\"calls\": [\n  {\"id\": }\n]}").expect_err("invalid JSON");
        let location = problems[0].location.as_ref().expect("a location");
        assert_eq!((location.span.line, location.span.column), (2, 10));
        assert_eq!(problems[0].code, Code::BatchInvalid);
    }

    #[test]
    fn duplicate_keys_are_reported() {
        let problems = parse(r#"{"calls": [], "calls": []}"#).expect_err("duplicate key");
        assert_eq!(problems[0].code, Code::SyntaxDuplicateKey);
    }

    #[test]
    fn nesting_is_capped() {
        let text = format!("{}{}", "[".repeat(140), "]".repeat(140));
        let problems = parse(&text).expect_err("too deep");
        assert!(
            problems
                .iter()
                .any(|problem| problem.code == Code::SyntaxLimit)
        );
    }
}
