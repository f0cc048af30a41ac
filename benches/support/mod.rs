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
