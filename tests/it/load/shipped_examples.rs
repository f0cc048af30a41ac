//! The built-in rules' `examples` are checked by toolgate's own tests, not on every load: a
//! load checks the examples of the rules a policy file wrote or changed, and of every rule
//! when a policy file changes the command table.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use toolgate::{LayerOptions, LoadOptions, load};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn options(workspace: &Path, policies: Vec<PathBuf>, no_builtin: bool) -> LoadOptions {
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin,
        enforced: Vec::new(),
        policies,
        ..Default::default()
    });
    options.workspace_root = workspace.to_path_buf();
    options.home = Some(PathBuf::from("/home/dev"));
    options
}

fn errors(options: &LoadOptions) -> Vec<String> {
    load(options, 1)
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.clone())
        .collect()
}

/// The shipped files loaded as a project's own policies: every example is checked, and
/// every example holds (in an empty workspace, which is what they were written for).
#[test]
fn the_shipped_examples_hold_when_the_files_are_loaded_as_a_project() {
    let workspace = tempfile::tempdir().unwrap();
    let policies = vec![Path::new(ROOT).join("policies")];
    assert_eq!(
        errors(&options(workspace.path(), policies, true)),
        Vec::<String>::new()
    );
}

/// A workspace where a `not_match` example of the secrets rule is a link to a secret: as a
/// project's own rule the example fails (the rule must say what it does here), as shipped
/// the built-in layer loads.
#[test]
fn a_workspace_file_does_not_fail_a_shipped_example() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join(".env"), "TOKEN=x").unwrap();
    std::fs::create_dir(workspace.path().join("src")).unwrap();
    std::os::unix::fs::symlink("../.env", workspace.path().join("src/keys.rs")).unwrap();

    assert_eq!(
        errors(&options(workspace.path(), Vec::new(), false)),
        Vec::<String>::new()
    );
    let as_project = errors(&options(
        workspace.path(),
        vec![Path::new(ROOT).join("policies")],
        true,
    ));
    assert!(
        as_project
            .iter()
            .any(|e| e.contains("`no-secrets`") && e.contains("must not match")),
        "{as_project:#?}"
    );
}

/// `no-secrets` (the read and write tools' `file_path`) and `no-secrets-search` (the search
/// tools' `path`) list the same files, in the same order: a search of a file reads it, so a
/// file in one list only could be searched, or read, without a word.
#[test]
fn the_secret_rules_of_reads_and_searches_list_the_same_files() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("policies/rules.yaml")).unwrap();
    let patterns = |rule: &str| -> Vec<String> {
        let start = text.find(&format!("  - name: {rule}\n")).unwrap();
        let body = &text[start..];
        let end = body.find("    decision:").unwrap();
        body[..end]
            .lines()
            .filter_map(|line| line.trim().strip_prefix("- \""))
            .map(|pattern| pattern.trim_end_matches('"').to_owned())
            .collect()
    };
    let read = patterns("no-secrets");
    assert!(read.len() > 300, "{read:#?}");
    assert_eq!(read, patterns("no-secrets-search"));
}

/// A project that changes the command table changes what every `shell` and `read_only`
/// matcher means: the shipped rules' examples are checked again.
#[test]
fn changing_the_command_table_rechecks_the_shipped_examples() {
    let workspace = tempfile::tempdir().unwrap();
    let policy = workspace.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "version: 1\ncommands:\n  programs:\n    ls: { read_only: false, operands: read }\n",
    )
    .unwrap();
    let errors = errors(&options(workspace.path(), vec![policy], false));
    assert!(
        errors
            .iter()
            .any(|e| e.contains("`read-only-inspection` does not match its example")),
        "{errors:#?}"
    );
}
