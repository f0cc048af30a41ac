//! SPEC §2.1 (the `check`/`explain` half is in the integration tests, `load::policies_equivalence`): the same content in YAML and TOML loads to the same snapshot. Tested on the whole
//! shipped `policies/`: every file is converted to TOML here (by `toml`'s serialiser, from the
//! value the YAML loads to), so the TOML set can never drift from the YAML one, and both sets
//! are loaded as policy roots and compared: effective document, tools (as written and
//! resolved), rules, hooks, gates, modes and engine settings, and the warnings.

// Test code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
use crate::ReadLimits;
use crate::load::{parse_document, read_source};
use crate::{LayerOptions, LoadOptions, Snapshot, load};

#[path = "../../../tests/it/support/policy_formats.rs"]
mod formats;
use formats::write_both;

fn parse(path: &Path) -> Value {
    let source = read_source(path, &ReadLimits::default())
        .unwrap_or_else(|d| panic!("{}: {d}", path.display()));
    parse_document(source)
        .unwrap_or_else(|d| panic!("{}: {d:?}", path.display()))
        .value
}

fn load_root(root: &Path) -> (Arc<Snapshot>, Vec<(String, String)>) {
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        enforced: Vec::new(),
        policies: vec![root.to_owned()],
        ..Default::default()
    });
    options.workspace_root = PathBuf::from("/workspace");
    let outcome = load(&options, 1);
    let diagnostics: Vec<(String, String)> = outcome
        .diagnostics
        .iter()
        .map(|d| (d.code.as_str().to_owned(), d.message.clone()))
        .collect();
    let snapshot = outcome
        .snapshot
        .unwrap_or_else(|| panic!("{} does not load: {diagnostics:#?}", root.display()));
    (snapshot, diagnostics)
}

/// What a compiled rule decides on, without its source location.
fn rule_facts(snapshot: &Snapshot) -> Vec<String> {
    snapshot
        .rules
        .rules()
        .iter()
        .map(|rule| {
            format!(
                "{} {} {} {:?} {:?} {:?} {:?} {:?} {} {} {:?}",
                rule.name,
                rule.decision,
                rule.priority,
                rule.reason,
                rule.tools,
                rule.tool_patterns,
                rule.modes,
                rule.when,
                rule.origin.index,
                rule.origin.enforced,
                rule.matchers,
            )
        })
        .collect()
}

#[test]
fn shipped_policies_load_to_the_same_snapshot_from_yaml_and_toml() {
    let yaml_dir = tempfile::tempdir().unwrap();
    let toml_dir = tempfile::tempdir().unwrap();
    let count = write_both(yaml_dir.path(), toml_dir.path(), parse);

    let (yaml, yaml_diagnostics) = load_root(yaml_dir.path());
    let (toml, toml_diagnostics) = load_root(toml_dir.path());

    // Every file of the root is loaded (plus the always-loaded engine defaults and review
    // table).
    let defaults = crate::snapshot::layer::DEFAULTS.len();
    assert_eq!(yaml.sources.files.len(), count + defaults);
    assert_eq!(toml.sources.files.len(), count + defaults);
    assert!(
        toml.sources
            .files
            .iter()
            .skip(defaults)
            .all(|f| f.source.path().ends_with(".toml"))
    );

    assert_eq!(yaml_diagnostics, toml_diagnostics, "warnings");
    assert_eq!(
        yaml.effective.value(),
        toml.effective.value(),
        "effective document"
    );
    // Lists keep their order too (TOML writes a table's plain keys before its sub-tables,
    // so only the order of keys inside an object may differ, which carries no meaning).
    let rule_names = |s: &Snapshot| {
        s.effective.value()["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(rule_names(&yaml), rule_names(&toml), "rule order");
    let names = |s: &Snapshot| s.tools.keys().map(|t| t.to_string()).collect::<Vec<_>>();
    assert_eq!(names(&yaml), names(&toml), "tool order");
    assert!(names(&yaml).len() >= 10);
    for (name, tool) in &yaml.tools {
        let other = &toml.tools[name];
        assert_eq!(tool.contract, other.contract, "contract of {name}");
        assert_eq!(tool.resolved, other.resolved, "resolved contract of {name}");
        assert_eq!(
            tool.input_schema.is_some(),
            other.input_schema.is_some(),
            "{name}"
        );
    }
    assert_eq!(yaml.engine, toml.engine, "engine");
    assert_eq!(rule_facts(&yaml), rule_facts(&toml), "rules");
    assert!(!rule_facts(&yaml).is_empty());
    assert_eq!(yaml.gates, toml.gates, "gates");
    assert_eq!(yaml.modes, toml.modes, "modes");
    let hooks = |s: &Snapshot| {
        s.hooks
            .iter()
            .map(|h| format!("{:?} {:?}", h.spec, h.tools))
            .collect::<Vec<_>>()
    };
    assert_eq!(hooks(&yaml), hooks(&toml), "hooks");
    let aliases = |s: &Snapshot| {
        s.tools
            .keys()
            .flat_map(|t| {
                s.tools[t]
                    .contract
                    .aliases
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| (a.clone(), s.lookup(&a).map(|t| t.name.to_string())))
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(aliases(&yaml), aliases(&toml), "aliases");
}

#[test]
fn the_files_on_disk_load_like_the_embedded_builtin_layer() {
    let mut options = LoadOptions::new(LayerOptions::default());
    options.workspace_root = PathBuf::from("/workspace");
    let embedded = load(&options, 1)
        .snapshot
        .expect("the built-in layer loads");
    let (on_disk, _) = load_root(&Path::new(ROOT).join("policies"));
    assert_eq!(embedded.effective.value(), on_disk.effective.value());
    assert_eq!(rule_facts(&embedded), rule_facts(&on_disk));
}
