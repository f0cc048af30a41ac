//! Property tests: random bytes and mutated valid documents (YAML and TOML) fed to the
//! syntax stage and the schema checker never panic, and every failure comes with at least
//! one diagnostic whose location lies inside the file.

// Test code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, OnceLock};

use crate::diagnostics::Format;
use crate::load::read::source_from_bytes;
use crate::load::{SchemaChecker, parse_document};
use crate::{Diagnostic, SourceFile};
use proptest::prelude::*;
use serde_json::Value;

/// Valid documents the mutations start from.
const SEEDS: &[(&str, Format)] = &[
    (
        include_str!("../../../tests/fixtures/load/equivalence/spec_example.yaml"),
        Format::Yaml,
    ),
    (
        include_str!("../../../tests/fixtures/load/equivalence/spec_example.toml"),
        Format::Toml,
    ),
    (
        include_str!("../../../tests/fixtures/load/equivalence/rules.yaml"),
        Format::Yaml,
    ),
    (
        include_str!("../../../tests/fixtures/load/equivalence/rules.toml"),
        Format::Toml,
    ),
    (
        include_str!("../../../tests/fixtures/load/schema/tagged_oneof.yaml"),
        Format::Yaml,
    ),
    (
        include_str!("../../../tests/fixtures/load/schema/deep_types.toml"),
        Format::Toml,
    ),
    (
        "a: &x [1, {b: 2}]\nc: *x\nd: |\n  text\n  more\ne: 'é'\n",
        Format::Yaml,
    ),
];

/// Characters that matter to the two syntaxes, plus some multi-byte ones.
const ALPHABET: &[char] = &[
    ':', '-', '[', ']', '{', '}', '"', '\'', '#', '\n', ' ', ' ', '\t', '&', '*', '!', '=', ',',
    '.', '?', '|', '>', '~', '%', '@', '`', '\\', '0', '1', '9', 'a', 'z', 'é', '日', '\r',
    '\u{85}', '\u{2028}', '\u{feff}',
];

fn checker() -> &'static SchemaChecker {
    static CHECKER: OnceLock<SchemaChecker> = OnceLock::new();
    CHECKER.get_or_init(|| {
        let schema: Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/load/schema/test.schema.json"
        ))
        .expect("test schema is JSON");
        SchemaChecker::new(&schema).expect("test schema compiles")
    })
}

/// Checks that a diagnostic points inside its file.
fn assert_located(diagnostic: &Diagnostic) {
    let location = diagnostic
        .location
        .as_ref()
        .unwrap_or_else(|| panic!("no location: {diagnostic}"));
    let source = &location.source;
    let span = location.span;
    assert!(span.end() <= source.text().len(), "{diagnostic}");
    assert!(source.text().is_char_boundary(span.offset), "{diagnostic}");
    assert!(source.text().is_char_boundary(span.end()), "{diagnostic}");
    assert!(span.line >= 1 && span.column >= 1, "{diagnostic}");
    assert!(span.line as usize <= source.line_count(), "{diagnostic}");
    assert_eq!(
        source.line_col(span.offset),
        (span.line, span.column),
        "{diagnostic}"
    );
    for related in &diagnostic.related {
        assert!(related.location.span.end() <= related.location.source.text().len());
    }
}

/// Runs both stages on a source and checks the invariants.
fn run(source: Arc<SourceFile>) {
    match parse_document(Arc::clone(&source)) {
        Err(diagnostics) => {
            assert!(!diagnostics.is_empty(), "a failure without diagnostics");
            diagnostics.iter().for_each(assert_located);
        }
        Ok(document) => {
            for (pointer, node) in document.spans.iter() {
                for span in node.key.iter().chain(std::iter::once(&node.value)) {
                    assert!(span.end() <= source.text().len(), "{pointer}");
                }
            }
            checker()
                .check_document(&document)
                .iter()
                .for_each(assert_located);
        }
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, text: String },
    DuplicateLine { line: usize },
    SwapLines { a: usize, b: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..8).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (
            any::<usize>(),
            proptest::collection::vec(proptest::sample::select(ALPHABET), 1..6)
        )
            .prop_map(|(at, chars)| Mutation::Insert {
                at,
                text: chars.into_iter().collect()
            }),
        any::<usize>().prop_map(|line| Mutation::DuplicateLine { line }),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines { a, b }),
    ]
}

fn apply(text: &str, mutation: &Mutation) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    match mutation {
        Mutation::Delete { at, len } => {
            if !chars.is_empty() {
                let start = at % chars.len();
                let end = (start + len).min(chars.len());
                chars.drain(start..end);
            }
            chars.into_iter().collect()
        }
        Mutation::Insert { at, text } => {
            let index = at % (chars.len() + 1);
            chars.splice(index..index, text.chars());
            chars.into_iter().collect()
        }
        Mutation::DuplicateLine { line } => {
            let mut lines: Vec<&str> = text.split('\n').collect();
            let index = line % lines.len();
            lines.insert(index, lines[index]);
            lines.join("\n")
        }
        Mutation::SwapLines { a, b } => {
            let mut lines: Vec<&str> = text.split('\n').collect();
            let len = lines.len();
            lines.swap(a % len, b % len);
            lines.join("\n")
        }
    }
}

proptest! {
    // 256 cases by default; `PROPTEST_CASES=20000` for a longer run.
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn random_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
        toml in any::<bool>(),
    ) {
        let format = if toml { Format::Toml } else { Format::Yaml };
        match source_from_bytes("fuzz", bytes, format) {
            Ok(source) => run(source),
            Err(diagnostic) => assert_located(&diagnostic),
        }
    }

    #[test]
    fn random_text_never_panics(
        chars in proptest::collection::vec(proptest::sample::select(ALPHABET), 0..128),
        toml in any::<bool>(),
    ) {
        let format = if toml { Format::Toml } else { Format::Yaml };
        run(SourceFile::in_memory("fuzz", chars.into_iter().collect::<String>(), format));
    }

    #[test]
    fn mutated_documents_never_panic(
        seed in 0..SEEDS.len(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let (text, format) = SEEDS[seed];
        let mutated = mutations.iter().fold(text.to_owned(), |text, m| apply(&text, m));
        run(SourceFile::in_memory("fuzz", mutated, format));
    }
}

#[test]
fn seeds_are_valid_documents() {
    for (text, format) in SEEDS {
        let source = SourceFile::in_memory("seed", *text, *format);
        assert!(parse_document(source).is_ok(), "{text}");
    }
}

/// A byte-order mark on a line of its own trips an assertion inside the YAML parser (found
/// by `random_text_never_panics`): the error points at it.
#[test]
fn a_parser_failure_points_at_the_byte_order_mark() {
    run(SourceFile::in_memory(
        "bom",
        "\n\u{feff}\n".to_owned(),
        Format::Yaml,
    ));
}
