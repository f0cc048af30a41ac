//! The shipped `policies/` written twice, as YAML (copied) and as TOML (converted by
//! `toml`'s serialiser), for the tests that compare the two formats: the integration test
//! (`check` and `explain` through the binary) and the snapshot's unit test (which includes
//! this file), so the TOML set can never drift from the YAML one.

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every policy file under `policies/`, relative to it, in load order.
pub fn shipped() -> Vec<PathBuf> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                out.push(path.strip_prefix(base).unwrap().to_owned());
            }
        }
    }
    let base = Path::new(ROOT).join("policies");
    let mut out = Vec::new();
    walk(&base, &base, &mut out);
    out
}

/// Writes the shipped set as YAML (copied) and as TOML (converted) into two folders, reading
/// each file with `parse` (YAML or TOML to its value); returns how many files there are.
pub fn write_both(yaml_dir: &Path, toml_dir: &Path, parse: fn(&Path) -> Value) -> usize {
    let files = shipped();
    assert!(files.len() >= 8, "policies/ holds the shipped set");
    for relative in &files {
        let original = Path::new(ROOT).join("policies").join(relative);
        assert_eq!(
            original.extension().and_then(|e| e.to_str()),
            Some("yaml"),
            "the shipped policies are YAML; convert the other way for {}",
            relative.display()
        );
        let yaml_path = yaml_dir.join(relative);
        std::fs::create_dir_all(yaml_path.parent().unwrap()).unwrap();
        std::fs::copy(&original, &yaml_path).unwrap();

        let value = parse(&original);
        let text = toml::to_string(&value)
            .unwrap_or_else(|e| panic!("{} as TOML: {e}", relative.display()));
        let toml_path = toml_dir.join(relative).with_extension("toml");
        std::fs::create_dir_all(toml_path.parent().unwrap()).unwrap();
        std::fs::write(&toml_path, &text).unwrap();
        // The conversion itself is lossless.
        assert_eq!(
            parse(&toml_path),
            value,
            "{} round trip\n{text}",
            relative.display()
        );
    }
    files.len()
}
