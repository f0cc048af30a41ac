//! A policy set written into a temporary folder and an engine on it, with its events.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use toolgate::ToolCall;
use toolgate::{Batch, BatchOutcome, Engine, Turn};
use toolgate::{EventKind, VecSink};
use toolgate::{LayerOptions, LoadOptions, Snapshot, load};

/// A temporary workspace with one policy file.
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    /// A workspace whose `policies/policy.yaml` is `yaml`.
    pub fn new(yaml: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("policies")).unwrap();
        std::fs::write(dir.path().join("policies/policy.yaml"), yaml).unwrap();
        Self { dir }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Replaces the policy file.
    pub fn write(&self, yaml: &str) {
        std::fs::write(self.path("policies/policy.yaml"), yaml).unwrap();
    }

    /// Loads the policy set (no built-in layer); panics with the diagnostics when it fails.
    pub fn snapshot(&self, generation: u64) -> Arc<Snapshot> {
        let mut options = LoadOptions::new(LayerOptions {
            no_builtin: true,
            policies: vec![self.path("policies")],
            ..LayerOptions::default()
        });
        options.workspace_root = self.dir.path().to_path_buf();
        let outcome = load(&options, generation);
        match outcome.snapshot {
            Some(snapshot) => snapshot,
            None => panic!("the policies do not load: {:#?}", outcome.diagnostics),
        }
    }

    /// An engine on the policy set, recording its events.
    pub fn engine(&self) -> (Engine, Arc<VecSink>) {
        let sink = VecSink::new();
        let engine = Engine::builder(self.snapshot(1)).sink(sink.clone()).build();
        (engine, sink)
    }
}

/// Runs one call.
pub async fn call(engine: &Engine, tool: &str, input: Value) -> BatchOutcome {
    let batch = Batch::new(vec![ToolCall::new("c1", tool, input)]);
    engine.execute_batch(batch, &Turn::default()).await.unwrap()
}

/// The text of every `ToolCallProgress` event.
pub fn progress(sink: &VecSink) -> Vec<String> {
    sink.events()
        .into_iter()
        .filter_map(|event| match event.kind {
            EventKind::ToolCallProgress(progress) => Some(progress.text),
            _ => None,
        })
        .collect()
}

/// The lines of a file, or none when it does not exist.
pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}
