//! Shared by the `pipeline::hooks` tests.
//!
//! A fixture is a temporary workspace holding a copy of `tests/fixtures/hooks/scripts/`
//! (hooks run with the workspace as working directory, so they may write there), the policy
//! set `tools.yaml` + one hook file, and an engine whose tools are native handlers that
//! record what they receive. Only the hooks are real processes.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::batch::{Calls, recording, run_with};
use serde_json::{Value, json};
use tempfile::TempDir;
use toolgate::ApprovalBroker;
use toolgate::CallResult;
use toolgate::events::HookFailed;
use toolgate::{BatchOutcome, Engine};
use toolgate::{CallContext, HandlerError, HandlerFuture};
use toolgate::{Event, EventKind, VecSink};
use toolgate::{LayerOptions, LoadOptions, load};

const TOOLS: &[&str] = &[
    "Bash",
    "Strict",
    "Hasty",
    "HastyStrict",
    "Read",
    "Deploy",
    "mcp__github__create_issue",
    "Slow",
    "Quiet",
    "Refused",
];

pub struct Fixture {
    pub dir: TempDir,
    pub engine: Engine,
    pub sink: Arc<VecSink>,
    pub calls: Calls,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hooks")
}

/// A workspace with the hook scripts and an engine on `tools.yaml` + `hooks` (a file name
/// under `tests/fixtures/hooks/policies/`).
pub fn fixture(hooks: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let scripts = dir.path().join("scripts");
    std::fs::create_dir(&scripts).unwrap();
    for entry in std::fs::read_dir(fixtures().join("scripts")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), scripts.join(entry.file_name())).unwrap();
    }
    let policies = fixtures().join("policies");
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        enforced: Vec::new(),
        policies: vec![policies.join("tools.yaml"), policies.join(hooks)],
        ..Default::default()
    });
    options.workspace_root = dir.path().to_owned();
    let outcome = load(&options, 1);
    let Some(snapshot) = outcome.snapshot else {
        panic!("hook fixtures must load: {:#?}", outcome.diagnostics);
    };
    let calls: Calls = Arc::default();
    let sink = VecSink::new();
    let builder = recording(
        Engine::builder(snapshot).sink(sink.clone()),
        TOOLS,
        &calls,
        |name, input| format!("{name} ran with {input}"),
    );
    let builder = builder.native(
        "Fail",
        |_input: Value, _ctx: CallContext| -> HandlerFuture {
            Box::pin(async move { Err(HandlerError::business("the handler failed")) })
        },
    );
    Fixture {
        dir,
        engine: builder.build(),
        sink,
        calls,
    }
}

impl Fixture {
    pub async fn run(
        &self,
        calls: &[(&str, Value)],
        modes: &[&str],
        approver: Option<Arc<dyn ApprovalBroker>>,
    ) -> BatchOutcome {
        run_with(&self.engine, calls, modes, approver).await
    }

    pub async fn one(&self, tool: &str, input: Value) -> CallResult {
        self.run(&[(tool, input)], &[], None)
            .await
            .results
            .into_iter()
            .next()
            .unwrap()
    }

    pub fn events(&self) -> Vec<Event> {
        self.sink.events()
    }

    /// `HookFailed` events, in order.
    pub fn hook_failures(&self) -> Vec<HookFailed> {
        self.events()
            .into_iter()
            .filter_map(|event| match event.kind {
                EventKind::HookFailed(failed) => Some(failed),
                _ => None,
            })
            .collect()
    }

    /// The commands the `Bash`/`Strict` handlers received.
    pub fn ran(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|(tool, input)| {
                format!("{tool}: {}", input.get("command").unwrap_or(&json!(null)))
            })
            .collect()
    }
}
