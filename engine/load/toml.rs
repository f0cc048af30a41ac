//! TOML → JSON value + span table, from the `toml` crate's spanned document tree.
//!
//! The syntax stage for `.toml` files. `toml::de::DeTable::parse_recoverable` gives a span
//! for every key and value; this module converts that tree into the same JSON value the
//! YAML stage builds for the same content: datetimes become strings, integers stay
//! integers (`u64` above `i64::MAX` is accepted so both formats agree), and `nan`/`inf` are
//! rejected like YAML's `.nan`/`.inf`.
//!
//! Syntax errors are positioned by the span `toml` reports. Only the first error is kept
//! (later ones are usually consequences of it), except duplicate keys, which are independent
//! and all reported, each with the place of the first definition when it can be found.

use std::sync::Arc;

use ::toml::Spanned;
use ::toml::de::{DeTable, DeValue};
use serde_json::{Map, Number, Value};

use super::MAX_STRING_BYTES;
use super::ParseLimits;
use super::spans::{NodeId, NodeSpan, SpanTable, SpanTableBuilder};
use crate::diagnostics::{Code, Diagnostic, SourceFile, Span, fold_whitespace, lowercase_first};

/// The most items one TOML list may hold. Converting a list costs a node and a span per
/// item; no policy needs a longer one.
pub const MAX_COLLECTION_ITEMS: usize = 100_000;

/// Parses a TOML source into a JSON value and the span of every node.
pub fn parse_toml(
    source: &Arc<SourceFile>,
    limits: &ParseLimits,
) -> Result<(Value, SpanTable), Vec<Diagnostic>> {
    let text: &str = source.text();
    let (document, errors) = DeTable::parse_recoverable(text);
    if !errors.is_empty() {
        return Err(syntax_errors(source, document.get_ref(), &errors));
    }
    let table = document.get_ref();
    if table.is_empty() {
        return Err(vec![super::empty_file(source)]);
    }
    let mut converter = Converter {
        source,
        limits,
        spans: SpanTableBuilder::new(source),
        errors: Vec::new(),
    };
    let first = table
        .iter()
        .map(|(key, _)| key.span().start)
        .min()
        .unwrap_or(0);
    let root = converter
        .spans
        .root(source.first_line_span(first, source.line_end(first)));
    let value = converter.table(table, root, 1);
    if converter.errors.is_empty() {
        Ok((value, converter.spans.build()))
    } else {
        Err(converter.errors)
    }
}

struct Converter<'a> {
    source: &'a Arc<SourceFile>,
    limits: &'a ParseLimits,
    spans: SpanTableBuilder,
    errors: Vec<Diagnostic>,
}

impl Converter<'_> {
    fn span(&self, range: std::ops::Range<usize>) -> Span {
        self.source.first_line_span(range.start, range.end)
    }

    fn table(&mut self, table: &DeTable<'_>, node: NodeId, depth: usize) -> Value {
        let mut map = Map::with_capacity(table.len());
        for (key, value) in table {
            let span = NodeSpan {
                key: Some(self.span(key.span())),
                value: self.span(value.span()),
            };
            let child = self.spans.member(node, key.get_ref(), span);
            let converted = self.value(value, child, span.value, depth + 1);
            map.insert(key.get_ref().to_string(), converted);
        }
        Value::Object(map)
    }

    fn value(
        &mut self,
        value: &Spanned<DeValue<'_>>,
        node: NodeId,
        span: Span,
        depth: usize,
    ) -> Value {
        if depth > self.limits.max_depth {
            if self.errors.is_empty() {
                self.errors.push(
                    Diagnostic::new(
                        Code::SyntaxLimit,
                        format!(
                            "the document nests deeper than {} levels",
                            self.limits.max_depth
                        ),
                    )
                    .at(self.source, span)
                    .with_help("flatten the structure"),
                );
            }
            return Value::Null;
        }
        match value.get_ref() {
            DeValue::String(text) if text.len() > MAX_STRING_BYTES => {
                self.errors.push(
                    Diagnostic::new(
                        Code::SyntaxLimit,
                        format!(
                            "a string of {} bytes is longer than the {} MiB a policy string may hold",
                            text.len(),
                            MAX_STRING_BYTES / (1024 * 1024)
                        ),
                    )
                    .at(self.source, span)
                    .with_help("shorten it, or split it up"),
                );
                Value::Null
            }
            DeValue::String(text) => Value::String(text.to_string()),
            DeValue::Boolean(b) => Value::Bool(*b),
            DeValue::Datetime(datetime) => Value::String(datetime.to_string()),
            DeValue::Integer(integer) => {
                let digits = integer.as_str();
                let radix = integer.radix();
                if let Ok(i) = i64::from_str_radix(digits, radix) {
                    Value::Number(i.into())
                } else if let Ok(u) = u64::from_str_radix(digits, radix) {
                    Value::Number(u.into())
                } else {
                    self.errors.push(
                        Diagnostic::new(
                            Code::SyntaxUnsupported,
                            format!("the integer `{integer}` does not fit in 64 bits"),
                        )
                        .at(self.source, span)
                        .with_help("use a smaller number, or quote it to make it a string"),
                    );
                    Value::Null
                }
            }
            DeValue::Float(float) => {
                let text = float.as_str();
                match text.parse::<f64>().ok().and_then(Number::from_f64) {
                    Some(number) => Value::Number(number),
                    None => {
                        self.errors.push(
                            Diagnostic::new(
                                Code::SyntaxUnsupported,
                                format!("`{text}` is not a finite number"),
                            )
                            .at(self.source, span)
                            .with_help(
                                "policy values must be finite numbers; quote it to make it a string",
                            ),
                        );
                        Value::Null
                    }
                }
            }
            DeValue::Array(items) if items.len() > MAX_COLLECTION_ITEMS => {
                self.errors.push(
                    Diagnostic::new(
                        Code::SyntaxLimit,
                        format!(
                            "a list of {} items is longer than the {MAX_COLLECTION_ITEMS} a policy list may hold",
                            items.len()
                        ),
                    )
                    .at(self.source, span)
                    .with_help("shorten it, or split it up"),
                );
                Value::Null
            }
            DeValue::Array(items) => {
                let mut array = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    let item_span = self.span(item.span());
                    let child = self.spans.item(node, index, item_span);
                    array.push(self.value(item, child, item_span, depth + 1));
                }
                Value::Array(array)
            }
            DeValue::Table(table) => self.table(table, node, depth),
        }
    }
}

/// Diagnostics for `toml`'s parse errors: every duplicate key, plus the first other error.
fn syntax_errors(
    source: &Arc<SourceFile>,
    recovered: &DeTable<'_>,
    errors: &[::toml::de::Error],
) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    let mut seen_other = false;
    let mut seen_offsets = Vec::new();
    // After a table header is reported as a duplicate, the keys under it collide with the
    // first table's keys: those are consequences, not separate mistakes.
    let mut redefined_section: Option<std::ops::Range<usize>> = None;
    for error in errors {
        let range = error.span().unwrap_or(0..0);
        if seen_offsets.contains(&range.start) {
            continue;
        }
        let message = error.message();
        let span = source.span_of(range.start, range.end);
        if message == "duplicate key" {
            if redefined_section
                .as_ref()
                .is_some_and(|section| section.contains(&range.start))
            {
                continue;
            }
            seen_offsets.push(range.start);
            let key = key_text(source, span);
            let mut diagnostic =
                Diagnostic::new(Code::SyntaxDuplicateKey, format!("duplicate key `{key}`"))
                    .at(source, span)
                    .with_help("remove one of them: a key or table can be defined only once");
            let first = match earlier_header(source, span) {
                Some(first) => {
                    redefined_section = Some(range.start..section_end(source, span));
                    Some(first)
                }
                None => {
                    let section_start = section_start(source, span);
                    first_definition(recovered, &key, range.start, 0)
                        .filter(|first| first.start >= section_start)
                }
            };
            if let Some(first) = first {
                diagnostic = diagnostic.with_related(
                    "first defined here",
                    source.location(source.span_of(first.start, first.end)),
                );
            }
            out.push(diagnostic);
        } else if !seen_other {
            seen_other = true;
            seen_offsets.push(range.start);
            let (code, help) = toml_help(message);
            out.push(
                Diagnostic::new(code, lowercase_first(&fold_whitespace(message)))
                    .at(source, span)
                    .with_help(help),
            );
        }
    }
    if out.is_empty() {
        out.push(
            Diagnostic::new(Code::SyntaxToml, "the file is not valid TOML")
                .at(source, source.span(0, 0))
                .with_help("fix the TOML syntax"),
        );
    }
    out
}

/// Whether a line is a table header (`[a]` or `[[a]]`).
fn is_header(line: &str) -> bool {
    line.trim_start().starts_with('[')
}

/// The start of the table section holding `span`: its header line, or the file start.
fn section_start(source: &SourceFile, span: Span) -> usize {
    (1..=span.line)
        .rev()
        .filter_map(|line| source.line_range(line))
        .find(|range| {
            range.start < span.offset && source.text().get(range.clone()).is_some_and(is_header)
        })
        .map_or(0, |range| range.start)
}

/// The end of the table section holding `span`: the next header line, or the file end.
fn section_end(source: &SourceFile, span: Span) -> usize {
    let lines = u32::try_from(source.line_count()).unwrap_or(u32::MAX);
    (span.line.saturating_add(1)..=lines)
        .filter_map(|line| source.line_range(line))
        .find(|range| source.text().get(range.clone()).is_some_and(is_header))
        .map_or(source.text().len(), |range| range.start)
}

/// The key named by a duplicate-key error, without quotes.
fn key_text(source: &SourceFile, span: Span) -> String {
    let text = source.text().get(span.offset..span.end()).unwrap_or("");
    text.trim_matches(|c| c == '"' || c == '\'').to_owned()
}

/// For a duplicate inside a table header (`[a]` written twice), the same header earlier in
/// the file: the recovered tree keeps only the last header's span.
fn earlier_header(source: &SourceFile, span: Span) -> Option<std::ops::Range<usize>> {
    let normalize = |line: &str| line.split_whitespace().collect::<String>();
    let line = source.line_range(span.line)?;
    let header = normalize(source.text().get(line)?);
    if !header.starts_with('[') {
        return None;
    }
    let offset_in_line = span
        .offset
        .checked_sub(source.line_range(span.line)?.start)?;
    (1..span.line).rev().find_map(|earlier| {
        let range = source.line_range(earlier)?;
        let text = source.text().get(range.clone())?;
        (normalize(text) == header).then(|| {
            let start = range.start + offset_in_line.min(text.len());
            start..start + span.len
        })
    })
}

/// The last key named `key` that starts before `before` in the recovered document: the
/// definition a duplicate collides with.
fn first_definition(
    table: &DeTable<'_>,
    key: &str,
    before: usize,
    depth: usize,
) -> Option<std::ops::Range<usize>> {
    // The recovered tree is bounded by `toml`'s own nesting limit; stay well clear of the
    // stack anyway.
    if depth > 256 {
        return None;
    }
    let mut best: Option<std::ops::Range<usize>> = None;
    let mut consider = |candidate: Option<std::ops::Range<usize>>| {
        if let Some(candidate) = candidate
            && candidate.start < before
            && best.as_ref().is_none_or(|b| candidate.start > b.start)
        {
            best = Some(candidate);
        }
    };
    for (name, value) in table {
        if name.get_ref() == key {
            consider(Some(name.span()));
        }
        consider(first_in_value(value.get_ref(), key, before, depth + 1));
    }
    best
}

fn first_in_value(
    value: &DeValue<'_>,
    key: &str,
    before: usize,
    depth: usize,
) -> Option<std::ops::Range<usize>> {
    match value {
        DeValue::Table(table) => first_definition(table, key, before, depth),
        DeValue::Array(items) => items
            .iter()
            .filter_map(|item| first_in_value(item.get_ref(), key, before, depth + 1))
            .max_by_key(|range| range.start),
        DeValue::String(_)
        | DeValue::Integer(_)
        | DeValue::Float(_)
        | DeValue::Boolean(_)
        | DeValue::Datetime(_) => None,
    }
}

/// The code and help text for a `toml` parse error message.
fn toml_help(message: &str) -> (Code, &'static str) {
    if message.contains("recursion limit") {
        return (Code::SyntaxLimit, "flatten the structure");
    }
    let help = if message.contains("must be quoted") {
        "quote the string: `key = \"value\"`"
    } else if message.contains("unquoted key") {
        "quote the key, e.g. `\"my key\" = 1`, or use letters, digits, `-` and `_` only"
    } else if message.contains("comma") {
        "separate the items with `,`"
    } else if message.contains("unclosed") {
        "close the bracket or quote"
    } else {
        "fix the TOML syntax at this position"
    };
    (Code::SyntaxToml, help)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::source::Format;
    use serde_json::json;

    fn parse(text: &str) -> Result<(Value, SpanTable), Vec<Diagnostic>> {
        let source = SourceFile::in_memory("t.toml", text, Format::Toml);
        parse_toml(&source, &ParseLimits::default())
    }

    #[test]
    fn long_strings_and_lists_are_refused_with_their_place() {
        let long = format!("a = \"{}\"\nb = 1\n", "x".repeat(MAX_STRING_BYTES + 1));
        let errors = parse(&long).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].code, Code::SyntaxLimit);
        assert!(errors[0].message.contains("1 MiB"), "{}", errors[0].message);
        let items = vec!["1"; MAX_COLLECTION_ITEMS + 1].join(",");
        let errors = parse(&format!("a = [{items}]\n")).unwrap_err();
        assert_eq!(errors[0].code, Code::SyntaxLimit);
        assert!(parse(&format!("a = \"{}\"\n", "x".repeat(1000))).is_ok());
    }

    #[test]
    fn values_convert_to_json() {
        let (value, _) = parse(
            "a = 1_000\nb.c = 'x'\nh = 0xff\nbig = 18446744073709551615\nf = 2.5e3\ndt = 1979-05-27T07:32:00Z\nd = 1979-05-27\n[[r]]\nn = true\n",
        )
        .unwrap();
        assert_eq!(
            value,
            json!({
                "a": 1000, "b": {"c": "x"}, "h": 255, "big": 18446744073709551615u64,
                "f": 2500.0, "dt": "1979-05-27T07:32:00Z", "d": "1979-05-27",
                "r": [{"n": true}]
            })
        );
    }

    #[test]
    fn rejected_documents() {
        let table = [
            ("a = inf", Code::SyntaxUnsupported),
            ("a = nan", Code::SyntaxUnsupported),
            ("a = 1e999", Code::SyntaxUnsupported),
            ("a = 99999999999999999999", Code::SyntaxUnsupported),
            ("a = 1\na = 2", Code::SyntaxDuplicateKey),
            ("a = [1,\nb = 2", Code::SyntaxToml),
            ("a = b", Code::SyntaxToml),
            ("", Code::SyntaxEmpty),
            ("# comment\n\n", Code::SyntaxEmpty),
        ];
        for (text, code) in table {
            let codes: Vec<Code> = parse(text)
                .err()
                .unwrap_or_default()
                .iter()
                .map(|d| d.code)
                .collect();
            assert_eq!(codes.first(), Some(&code), "{text:?}");
        }
    }

    #[test]
    fn duplicate_keys_point_at_both_definitions() {
        let Err(errors) = parse("[a]\nx = 1\n[b]\nx = 1\nx = 2\n") else {
            panic!("expected errors");
        };
        assert_eq!(errors.len(), 1);
        let location = errors[0].location.as_ref().unwrap();
        assert_eq!((location.span.line, location.span.column), (5, 1));
        assert_eq!(errors[0].message, "duplicate key `x`");
        let first = &errors[0].related[0].location.span;
        assert_eq!((first.line, first.column), (4, 1));
    }

    #[test]
    fn redefined_tables_are_duplicates() {
        let Err(errors) = parse("[a]\nx = 1\n[a]\ny = 1\n") else {
            panic!("expected errors");
        };
        assert_eq!(errors[0].code, Code::SyntaxDuplicateKey);
        assert_eq!(errors[0].message, "duplicate key `a`");
        assert_eq!(errors[0].related[0].location.span.line, 1);
    }

    #[test]
    fn spans_of_keys_and_values() {
        let text = "version = 1\n[tools.Bash]\ntimeout = { default = \"2m\", max = \"10m\" }\nargv = [\"bash\",\n  \"-c\"]\n[[rules]]\nname = \"a\"\n[[rules]]\nname = \"ö\"\nsub.key = 3\n";
        let (_, spans) = parse(text).unwrap();
        let at = |pointer: &str| {
            let node = spans.get(pointer).unwrap_or_else(|| panic!("{pointer}"));
            let key = node.key.map(|k| (k.line, k.column, k.len));
            (key, (node.value.line, node.value.column, node.value.len))
        };
        assert_eq!(at("/version"), (Some((1, 1, 7)), (1, 11, 1)));
        assert_eq!(at("/tools/Bash"), (Some((2, 8, 4)), (2, 1, 12)));
        assert_eq!(
            at("/tools/Bash/timeout/max"),
            (Some((3, 29, 3)), (3, 35, 5))
        );
        assert_eq!(at("/tools/Bash/argv"), (Some((4, 1, 4)), (4, 8, 8)));
        assert_eq!(at("/tools/Bash/argv/1"), (None, (5, 3, 4)));
        assert_eq!(at("/rules/1"), (None, (8, 1, 9)));
        assert_eq!(at("/rules/1/name"), (Some((9, 1, 4)), (9, 8, 4)));
        assert_eq!(at("/rules/1/sub/key"), (Some((10, 5, 3)), (10, 11, 1)));
        assert_eq!(at(""), (None, (1, 1, 11)));
    }
}
