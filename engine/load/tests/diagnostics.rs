//! Snapshot tests of the diagnostics of the syntax and schema stages, rendered in the human
//! and JSON formats (and, for a few, GitHub annotations and SARIF): one fixture file per
//! code under `tests/fixtures/load/`.

// Test code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::OnceLock;

use crate::ReadLimits;
use crate::load::{SchemaChecker, parse_document, read_source};
use crate::{Code, Diagnostic};
use crate::{HumanOptions, render_github, render_human, render_json, render_sarif};
use serde_json::Value;

const FIXTURES: &str = "tests/fixtures/load";

/// The hand-written schema the schema fixtures are checked against.
fn checker() -> &'static SchemaChecker {
    static CHECKER: OnceLock<SchemaChecker> = OnceLock::new();
    CHECKER.get_or_init(|| {
        let text = std::fs::read_to_string(format!("{FIXTURES}/schema/test.schema.json"))
            .expect("test schema");
        let schema: Value = serde_json::from_str(&text).expect("test schema is JSON");
        SchemaChecker::new(&schema).expect("test schema compiles")
    })
}

/// Reads, parses and (when `schema`) schema-checks one fixture.
fn diagnose(relative: &str, limits: &ReadLimits, schema: bool) -> Vec<Diagnostic> {
    let path = format!("{FIXTURES}/{relative}");
    let source = match read_source(Path::new(&path), limits) {
        Ok(source) => source,
        Err(diagnostic) => return vec![diagnostic],
    };
    match parse_document(source) {
        Err(diagnostics) => diagnostics,
        Ok(document) if schema => checker().check_document(&document),
        Ok(_) => Vec::new(),
    }
}

fn human(diagnostics: &[Diagnostic]) -> String {
    render_human(diagnostics, &HumanOptions::default())
}

/// Snapshots the human and JSON renderings of a fixture's diagnostics and returns them.
fn snapshot(name: &str, relative: &str, limits: &ReadLimits, schema: bool) -> Vec<Diagnostic> {
    let diagnostics = diagnose(relative, limits, schema);
    assert!(!diagnostics.is_empty(), "{relative}: expected diagnostics");
    insta::assert_snapshot!(format!("{name}_human"), human(&diagnostics));
    insta::assert_snapshot!(format!("{name}_json"), render_json(&diagnostics));
    diagnostics
}

fn codes(diagnostics: &[Diagnostic]) -> Vec<&'static str> {
    diagnostics.iter().map(|d| d.code.as_str()).collect()
}

/// Every location must be inside its file.
fn assert_in_file(diagnostics: &[Diagnostic]) {
    for diagnostic in diagnostics {
        let location = diagnostic.location.as_ref().expect("positioned");
        let source = &location.source;
        assert!(location.span.end() <= source.text().len(), "{diagnostic}");
        assert!(
            location.span.line >= 1 && location.span.column >= 1,
            "{diagnostic}"
        );
        assert!(
            location.span.line as usize <= source.line_count(),
            "{diagnostic}"
        );
    }
}

macro_rules! syntax_case {
    ($test:ident, $file:literal, [$($code:expr),+ $(,)?]) => {
        #[test]
        fn $test() {
            let diagnostics = snapshot(stringify!($test), $file, &ReadLimits::default(), false);
            assert_in_file(&diagnostics);
            let expected: Vec<&str> = vec![$($code.as_str()),+];
            assert_eq!(codes(&diagnostics), expected);
        }
    };
}

macro_rules! schema_case {
    ($test:ident, $file:literal, [$($code:expr),+ $(,)?]) => {
        #[test]
        fn $test() {
            let diagnostics = snapshot(stringify!($test), $file, &ReadLimits::default(), true);
            assert_in_file(&diagnostics);
            let expected: Vec<&str> = vec![$($code.as_str()),+];
            assert_eq!(codes(&diagnostics), expected);
        }
    };
}

// ---- I/O ----

#[test]
fn io_not_found() {
    let diagnostics = snapshot(
        "io_not_found",
        "io/missing.yaml",
        &ReadLimits::default(),
        false,
    );
    assert_eq!(codes(&diagnostics), [Code::IoNotFound.as_str()]);
}

#[test]
fn io_directory() {
    let diagnostics = snapshot(
        "io_directory",
        "io/directory.yaml",
        &ReadLimits::default(),
        false,
    );
    assert_eq!(codes(&diagnostics), [Code::IoRead.as_str()]);
}

#[test]
fn io_unknown_extension() {
    let diagnostics = snapshot(
        "io_unknown_extension",
        "io/notes.txt",
        &ReadLimits::default(),
        false,
    );
    assert_eq!(codes(&diagnostics), [Code::SyntaxUnsupported.as_str()]);
}

#[test]
fn syntax_too_large() {
    let diagnostics = snapshot(
        "syntax_too_large",
        "syntax/large.yaml",
        &ReadLimits { max_bytes: 64 },
        false,
    );
    assert_eq!(codes(&diagnostics), [Code::SyntaxTooLarge.as_str()]);
}

// ---- syntax ----

syntax_case!(
    syntax_yaml_unclosed_flow,
    "syntax/yaml_unclosed_flow.yaml",
    [Code::SyntaxYaml]
);
syntax_case!(
    syntax_yaml_bad_mapping,
    "syntax/yaml_bad_mapping.yaml",
    [Code::SyntaxYaml]
);
syntax_case!(
    syntax_yaml_tab_indent,
    "syntax/yaml_tab_indent.yaml",
    [Code::SyntaxYaml]
);
syntax_case!(
    syntax_toml_unquoted,
    "syntax/toml_unquoted.toml",
    [Code::SyntaxToml]
);
syntax_case!(
    syntax_toml_unclosed_array,
    "syntax/toml_unclosed_array.toml",
    [Code::SyntaxToml]
);
syntax_case!(
    syntax_duplicate_key_yaml,
    "syntax/duplicate_key.yaml",
    [Code::SyntaxDuplicateKey, Code::SyntaxDuplicateKey]
);
syntax_case!(
    syntax_duplicate_key_toml,
    "syntax/duplicate_key.toml",
    [Code::SyntaxDuplicateKey]
);
syntax_case!(
    syntax_duplicate_table_toml,
    "syntax/duplicate_table.toml",
    [Code::SyntaxDuplicateKey]
);
syntax_case!(
    syntax_encoding,
    "syntax/non_utf8.yaml",
    [Code::SyntaxEncoding]
);
syntax_case!(syntax_empty_yaml, "syntax/empty.yaml", [Code::SyntaxEmpty]);
syntax_case!(syntax_empty_toml, "syntax/empty.toml", [Code::SyntaxEmpty]);
syntax_case!(
    syntax_comments_only_yaml,
    "syntax/comments_only.yaml",
    [Code::SyntaxEmpty]
);
syntax_case!(
    syntax_comments_only_toml,
    "syntax/comments_only.toml",
    [Code::SyntaxEmpty]
);
syntax_case!(
    syntax_document_marker_only,
    "syntax/document_marker_only.yaml",
    [Code::SyntaxEmpty]
);
syntax_case!(
    syntax_alias_bomb,
    "syntax/alias_bomb.yaml",
    [Code::SyntaxLimit]
);
syntax_case!(
    syntax_alias_copies,
    "syntax/alias_copies.yaml",
    [Code::SyntaxLimit]
);
syntax_case!(
    syntax_deep_nesting,
    "syntax/deep_nesting.yaml",
    [Code::SyntaxLimit]
);
syntax_case!(
    syntax_deep_nesting_block,
    "syntax/deep_nesting_block.yaml",
    [Code::SyntaxLimit]
);
syntax_case!(
    syntax_multi_document,
    "syntax/multi_document.yaml",
    [Code::SyntaxUnsupported]
);
syntax_case!(
    syntax_unsupported_yaml,
    "syntax/unsupported.yaml",
    [
        Code::SyntaxUnsupported,
        Code::SyntaxUnsupported,
        Code::SyntaxUnsupported,
        Code::SyntaxUnsupported,
        Code::SyntaxUnsupported,
        Code::SyntaxUnsupported,
        Code::SyntaxUnsupported,
    ]
);
syntax_case!(
    syntax_unsupported_toml,
    "syntax/unsupported.toml",
    [
        Code::SyntaxUnsupported,
        Code::SyntaxUnsupported,
        Code::SyntaxUnsupported
    ]
);

// ---- schema ----

schema_case!(
    schema_unknown_keys,
    "schema/unknown_keys.yaml",
    [
        Code::SchemaUnknownKey,
        Code::SchemaUnknownKey,
        Code::SchemaRequired,
        Code::SchemaUnknownKey,
        Code::SchemaRequired,
        Code::SchemaUnknownKey,
        Code::SchemaUnknownKey,
    ]
);
schema_case!(
    schema_missing_required,
    "schema/missing_required.yaml",
    [
        Code::SchemaVersion,
        Code::SchemaRequired,
        Code::SchemaRequired
    ]
);
schema_case!(
    schema_deep_types,
    "schema/deep_types.yaml",
    [
        Code::SchemaType,
        Code::SchemaType,
        Code::SchemaType,
        Code::SchemaType,
        Code::SchemaType
    ]
);
schema_case!(
    schema_deep_types_toml,
    "schema/deep_types.toml",
    [
        Code::SchemaType,
        Code::SchemaRequired,
        Code::SchemaType,
        Code::SchemaEnum,
        Code::SchemaType
    ]
);
schema_case!(
    schema_tagged_oneof,
    "schema/tagged_oneof.yaml",
    [
        Code::SchemaRequired,
        Code::SchemaRequired,
        Code::SchemaUnknownKey,
        Code::SchemaRequired,
        Code::SchemaEnum,
        Code::SchemaRequired,
        Code::SchemaRange,
    ]
);
schema_case!(
    schema_anyof_size,
    "schema/anyof_size.yaml",
    [
        Code::SchemaFormat,
        Code::SchemaRange,
        Code::SchemaEnum,
        Code::SchemaType,
    ]
);
schema_case!(
    schema_formats,
    "schema/formats.yaml",
    [
        Code::SchemaFormat,
        Code::SchemaRange,
        Code::SchemaFormat,
        Code::SchemaType
    ]
);
schema_case!(
    schema_patterns,
    "schema/patterns.yaml",
    [
        Code::SchemaPattern,
        Code::SchemaPattern,
        Code::SchemaInvalid,
        Code::SchemaRange
    ]
);
schema_case!(schema_version, "schema/version.yaml", [Code::SchemaVersion]);
schema_case!(
    schema_version_toml,
    "schema/version_string.toml",
    [Code::SchemaVersion]
);

// ---- other formats ----

#[test]
fn github_annotations() {
    let mut diagnostics = diagnose("syntax/duplicate_key.yaml", &ReadLimits::default(), false);
    diagnostics.extend(diagnose(
        "schema/unknown_keys.yaml",
        &ReadLimits::default(),
        true,
    ));
    insta::assert_snapshot!("github_annotations", render_github(&diagnostics));
}

#[test]
fn sarif_log() {
    let mut diagnostics = diagnose("syntax/duplicate_key.toml", &ReadLimits::default(), false);
    diagnostics.extend(diagnose(
        "schema/formats.yaml",
        &ReadLimits::default(),
        true,
    ));
    let sarif = render_sarif(&diagnostics);
    let version = env!("CARGO_PKG_VERSION");
    insta::assert_snapshot!(
        "sarif_log",
        sarif.replace(
            &format!("\"version\": \"{version}\""),
            "\"version\": \"[version]\""
        )
    );
}
