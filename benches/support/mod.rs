//! What several benches share: the allocator name they print and a snapshot loaded from one
//! policy text.
//!
//! Each bench uses part of it.
#![allow(dead_code)]

use std::sync::Arc;

use toolgate::{LayerOptions, LoadOptions, Snapshot, load};

/// Which allocator the figures were measured with (the `toolgate` binary uses mimalloc; see
/// the `mimalloc` feature).
pub const ALLOCATOR: &str = if cfg!(feature = "mimalloc") {
    "mimalloc (as the binary runs)"
} else {
    "system malloc"
};

/// The snapshot of `policy` (one YAML file) alone, without the built-in layer, with the
/// file's directory as the workspace root.
pub fn snapshot_of(policy: &str) -> Arc<Snapshot> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bench.yaml"), policy).unwrap();
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        policies: vec![dir.path().to_path_buf()],
        ..LayerOptions::default()
    });
    options.workspace_root = dir.path().to_path_buf();
    let outcome = load(&options, 1);
    outcome
        .snapshot
        .unwrap_or_else(|| panic!("{:#?}", outcome.diagnostics))
}

/// The snapshot of `policy` (a policy document, written as one TOML file) on top of the
/// engine defaults, with the built-in layer (whose command table `shell` rules read) or
/// without it, for a workspace at `/home/dev/project`.
pub fn snapshot_of_value(policy: &serde_json::Value, builtin: bool) -> Arc<Snapshot> {
    snapshot_of_value_in(policy, builtin, std::path::Path::new("/home/dev/project"))
}

/// Like [`snapshot_of_value`], for the workspace `workspace`.
pub fn snapshot_of_value_in(
    policy: &serde_json::Value,
    builtin: bool,
    workspace: &std::path::Path,
) -> Arc<Snapshot> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bench.toml"),
        toml::to_string(policy).unwrap(),
    )
    .unwrap();
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: !builtin,
        policies: vec![dir.path().to_path_buf()],
        ..LayerOptions::default()
    });
    options.workspace_root = workspace.to_path_buf();
    let outcome = load(&options, 1);
    outcome
        .snapshot
        .unwrap_or_else(|| panic!("{:#?}", outcome.diagnostics))
}
