//! SPEC §2.1: the same content in YAML and TOML gives the same `check` and `explain`
//! output. The shipped `policies/` are converted to TOML here (by `toml`'s serialiser), both
//! sets are loaded as policy roots by the binary and compared. The snapshot-level half of
//! this comparison is a unit test of the snapshot (`snapshot::tests::policies_equivalence`).

// Test code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::check::toolgate;
use crate::support::policy_formats::write_both;
use serde_json::Value;

fn parse(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    if path.extension().is_some_and(|e| e == "toml") {
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    } else {
        crate::support::yaml::parse(&path.display().to_string(), &text)
    }
}

#[test]
fn check_and_explain_agree_across_formats() {
    let yaml_dir = tempfile::tempdir().unwrap();
    let toml_dir = tempfile::tempdir().unwrap();
    write_both(yaml_dir.path(), toml_dir.path(), parse);
    let mut outputs = Vec::new();
    for dir in [yaml_dir.path(), toml_dir.path()] {
        let root = dir.to_str().unwrap();
        let check = toolgate(&["--no-builtin", "-p", root, "check"]);
        assert_eq!(check.code, 0, "{}", check.transcript());
        let explain = toolgate(&[
            "--no-builtin",
            "-p",
            root,
            "explain",
            "Bash",
            "--format",
            "json",
        ]);
        assert_eq!(explain.code, 0, "{}", explain.transcript());
        let mut report = explain.json();
        // Values and where they are defined agree; file names and positions differ by format.
        for field in report["fields"].as_array_mut().unwrap() {
            let file = field["file"].as_str().map(|f| {
                Path::new(f)
                    .strip_prefix(dir)
                    .map(|p| p.with_extension("").display().to_string())
                    .unwrap_or_else(|_| f.to_owned())
            });
            let object = field.as_object_mut().unwrap();
            object.insert("file".into(), file.into());
            object.remove("line");
            object.remove("column");
        }
        for rule in report["rules"].as_array_mut().unwrap() {
            rule.as_object_mut().unwrap().remove("location");
        }
        for mapped in report["agent_tools"].as_array_mut().unwrap() {
            mapped.as_object_mut().unwrap().remove("location");
        }
        // The layers name the two roots, which differ by format.
        report.as_object_mut().unwrap().remove("layers");
        outputs.push((check.stdout, report));
    }
    assert_eq!(outputs[0], outputs[1]);
}
