//! Limits on a whole policy set (issue 19, defect 10): files, bytes, tool contracts and rules
//! across all layers. A set over a limit does not load, and says which limit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use toolgate::SetLimits;
use toolgate::{LayerOptions, LoadOptions, load};

fn options(dir: &Path, limits: SetLimits) -> LoadOptions {
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        enforced: Vec::new(),
        policies: vec![dir.to_path_buf()],
        ..Default::default()
    });
    options.workspace_root = dir.to_path_buf();
    options.set_limits = limits;
    options
}

fn first_error(options: &LoadOptions) -> String {
    let outcome = load(options, 1);
    assert!(outcome.snapshot.is_none(), "the set must not load");
    outcome
        .diagnostics
        .iter()
        .find(|d| d.is_error())
        .map(|d| d.message.clone())
        .expect("an error")
}

fn tools(count: usize) -> String {
    let mut text = String::from("version: 1\ntools:\n");
    for i in 0..count {
        text.push_str(&format!("  T{i}: {{ handler: {{ kind: native }} }}\n"));
    }
    text
}

#[test]
fn each_limit_stops_the_load_and_names_itself() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), tools(4)).unwrap();
    std::fs::write(
        dir.path().join("b.yaml"),
        "version: 1\nrules:\n  - { name: r1, decision: ask }\n  - { name: r2, decision: ask }\n",
    )
    .unwrap();
    let generous = SetLimits::DEFAULT;
    assert!(load(&options(dir.path(), generous), 1).snapshot.is_some());

    let files = first_error(&options(
        dir.path(),
        SetLimits {
            max_files: 2,
            ..generous
        },
    ));
    assert!(files.contains("more than the 2 a set may have"), "{files}");
    let bytes = first_error(&options(
        dir.path(),
        SetLimits {
            max_bytes: 64,
            ..generous
        },
    ));
    assert!(bytes.contains("bytes of files"), "{bytes}");
    let contracts = first_error(&options(
        dir.path(),
        SetLimits {
            max_tools: 3,
            ..generous
        },
    ));
    assert!(
        contracts.contains("4 tool contracts, more than the 3"),
        "{contracts}"
    );
    let rules = first_error(&options(
        dir.path(),
        SetLimits {
            max_rules: 1,
            ..generous
        },
    ));
    assert!(rules.contains("2 rules, more than the 1"), "{rules}");
}

#[test]
fn a_file_of_many_empty_tools_is_refused_quickly() {
    let dir = tempfile::tempdir().unwrap();
    // Far more contracts than the default limit, in one small file.
    let count = SetLimits::DEFAULT.max_tools + 1;
    let mut text = String::from("version: 1\ntools:\n");
    for i in 0..count {
        text.push_str(&format!("  t{i}: {{}}\n"));
    }
    std::fs::write(dir.path().join("many.yaml"), text).unwrap();
    let message = first_error(&options(dir.path(), SetLimits::DEFAULT));
    assert!(message.contains("tool contracts"), "{message}");
}

/// A set past a limit says so once: the engine settings it never read are not also reported
/// missing (63 `no layer sets engine.…` errors followed the limit); and a file larger than a
/// file may be is refused at its name, not counted into a limit of the set that names none.
#[test]
fn a_limit_is_said_once_and_a_huge_file_at_its_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), tools(4)).unwrap();
    let outcome = load(
        &options(
            dir.path(),
            SetLimits {
                max_bytes: 64,
                ..SetLimits::DEFAULT
            },
        ),
        1,
    );
    let errors: Vec<&str> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");

    let big = tempfile::tempdir().unwrap();
    let huge = format!("version: 1\n# {}\n", "x".repeat(9 * 1024 * 1024));
    std::fs::write(big.path().join("p.yaml"), &huge).unwrap();
    let limits = SetLimits {
        max_bytes: 8 * 1024 * 1024 + 64 * 1024,
        ..SetLimits::DEFAULT
    };
    let outcome = load(&options(big.path(), limits), 1);
    assert!(outcome.snapshot.is_none());
    let located = outcome
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .all(|d| d.location.is_some() && d.message.contains("too large"));
    assert!(located, "{:?}", outcome.diagnostics);
}
