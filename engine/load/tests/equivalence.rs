//! The same content written in YAML and in TOML loads to the same JSON value (SPEC §2.1),
//! and the SPEC's example file passes the generated policy schema in both formats.

// Test code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::ReadLimits;
use crate::load::{SchemaChecker, parse_document, read_source};
use serde_json::Value;

fn load(path: &str) -> Value {
    let source = read_source(Path::new(path), &ReadLimits::default())
        .unwrap_or_else(|d| panic!("{path}: {d}"));
    match parse_document(source) {
        Ok(document) => document.value,
        Err(diagnostics) => panic!("{path}: {diagnostics:?}"),
    }
}

#[test]
fn yaml_and_toml_load_to_the_same_value() {
    for name in ["spec_example", "rules"] {
        let yaml = load(&format!("tests/fixtures/load/equivalence/{name}.yaml"));
        let toml = load(&format!("tests/fixtures/load/equivalence/{name}.toml"));
        assert_eq!(yaml, toml, "{name}");
    }
}

#[test]
fn numbers_keep_their_kind_in_both_formats() {
    for ext in ["yaml", "toml"] {
        let value = load(&format!("tests/fixtures/load/equivalence/rules.{ext}"));
        let rule = &value["rules"][1];
        assert!(rule["priority"].is_i64(), "{ext}");
        assert!(rule["limit"].is_i64(), "{ext}");
        assert!(rule["huge"].is_u64(), "{ext}");
        assert!(rule["weight"].is_f64(), "{ext}");
        assert_eq!(rule["released"], "2024-05-01", "{ext}");
        assert_eq!(rule["when_text"], "yes", "{ext}");
    }
}

#[test]
fn the_spec_example_passes_the_policy_schema() {
    let Ok(text) = std::fs::read_to_string("schemas/policy.schema.json") else {
        // The generated schema lives with the model; nothing to check without it.
        return;
    };
    let schema: Value = serde_json::from_str(&text).expect("policy schema is JSON");
    let checker = SchemaChecker::new(&schema).expect("policy schema compiles");
    for ext in ["yaml", "toml"] {
        let path = format!("tests/fixtures/load/equivalence/spec_example.{ext}");
        let source = read_source(Path::new(&path), &ReadLimits::default()).expect("readable");
        let document = parse_document(source).expect("parses");
        let diagnostics = checker.check_document(&document);
        assert!(diagnostics.is_empty(), "{path}: {diagnostics:#?}");
    }
}
