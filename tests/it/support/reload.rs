//! Shared by the reload tests: policy texts that carry their save number, the invalid saves
//! that alternate with them, an engine wired to a reloader, and a memory probe.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use toolgate::Engine;
use toolgate::Reloader;
use toolgate::{CallContext, HandlerFuture, HandlerOutput};
use toolgate::{Event, EventSink};
use toolgate::{LayerOptions, LoadOptions, Snapshot, load};

/// The policy of save `k`: `Probe` is described as `save k` and allowed only for the token
/// `k` (denied by default otherwise), so a call's outcome tells which save it ran under.
pub fn probe_policy(k: u64) -> String {
    format!(
        r#"version: 1
tools:
  Probe:
    description: "save {k}"
    input_schema:
      type: object
      required: [token]
      properties:
        token: {{ type: string }}
    concurrency: {{ concurrent_safe: true, read_only: true, side_effect_scope: none }}
    permission: {{ default: deny }}
    handler: {{ kind: native }}
rules:
  - name: allow-current
    tools: [Probe]
    match:
      token: {{ equals: "{k}" }}
    decision: allow
"#
    )
}

/// An invalid save; which mistake depends on `k` (syntax, schema, semantics in turn).
pub fn invalid_policy(k: u64) -> String {
    match k % 3 {
        0 => format!("version: 1\ntools:\n  Probe: [\n    description: \"save {k}\"\n"),
        1 => probe_policy(k).replace("default: deny", "default: maybe"),
        _ => probe_policy(k).replace(
            "    handler: { kind: native }",
            "    timeout: { default: 2m, max: 1m }\n    handler: { kind: native }",
        ),
    }
}

/// The save number a snapshot was built from (`Probe`'s description).
pub fn save_of(snapshot: &Snapshot) -> u64 {
    snapshot.effective()["tools"]["Probe"]["description"]
        .as_str()
        .and_then(|d| d.strip_prefix("save "))
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("no save number in generation {}", snapshot.generation()))
}

/// Load options for one policy root, without the built-in layer.
pub fn options(root: &Path) -> LoadOptions {
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        policies: vec![root.to_path_buf()],
        ..LayerOptions::default()
    });
    options.workspace_root = if root.is_dir() {
        root.to_path_buf()
    } else {
        root.parent().unwrap().to_path_buf()
    };
    options
}

/// The Probe handler: answers with the token it got.
pub fn probe(input: Value, _ctx: CallContext) -> HandlerFuture {
    Box::pin(async move {
        tokio::task::yield_now().await;
        Ok(HandlerOutput::text(format!("ran {}", input["token"])))
    })
}

/// An engine and a reloader over one policy root, with every event kept, and the save number
/// of every generation recorded before it is installed.
pub struct Rig {
    pub root: PathBuf,
    pub engine: Engine,
    pub reloader: Arc<Reloader>,
    pub events: Arc<Mutex<Vec<Event>>>,
    /// Generation → save number.
    pub saves: Arc<Mutex<HashMap<u64, u64>>>,
}

struct Keep(Arc<Mutex<Vec<Event>>>);

impl EventSink for Keep {
    fn emit(&self, event: Event) {
        self.0.lock().unwrap().push(event);
    }
}

impl Rig {
    /// Loads `root` as generation 1 and wires the reloader to the engine, keeping every
    /// event. `build` registers native handlers.
    pub fn new(
        root: &Path,
        build: impl FnOnce(toolgate::EngineBuilder) -> toolgate::EngineBuilder,
    ) -> Self {
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink: Arc<dyn EventSink> = Arc::new(Keep(Arc::clone(&events)));
        Self::with_sink(root, sink, events, build)
    }

    /// Like [`Rig::new`], with events going to `sink` (`events` stays as given).
    pub fn with_sink(
        root: &Path,
        sink: Arc<dyn EventSink>,
        events: Arc<Mutex<Vec<Event>>>,
        build: impl FnOnce(toolgate::EngineBuilder) -> toolgate::EngineBuilder,
    ) -> Self {
        let options = options(root);
        let loaded = load(&options, 1);
        let snapshot = loaded
            .snapshot
            .unwrap_or_else(|| panic!("the initial set loads: {:?}", loaded.diagnostics));
        let saves = Arc::new(Mutex::new(HashMap::new()));
        if snapshot.effective()["tools"]["Probe"].is_object() {
            saves.lock().unwrap().insert(1, save_of(&snapshot));
        }
        let engine = build(Engine::builder(Arc::clone(&snapshot)).sink(Arc::clone(&sink))).build();
        let installer = engine.clone();
        let recorded = Arc::clone(&saves);
        let reloader = Arc::new(Reloader::new(
            options,
            Some(snapshot),
            // INVARIANT: the save number is recorded before the generation is installed, so
            // any batch that ran on a generation finds it.
            Box::new(move |next: Arc<Snapshot>| {
                if next.effective()["tools"]["Probe"].is_object() {
                    recorded
                        .lock()
                        .unwrap()
                        .insert(next.generation(), save_of(&next));
                }
                installer.install(next);
            }),
            sink,
        ));
        Self {
            root: root.to_path_buf(),
            engine,
            reloader,
            events,
            saves,
        }
    }

    /// The save number generation `generation` was built from.
    pub fn save_of_generation(&self, generation: u64) -> u64 {
        self.saves.lock().unwrap()[&generation]
    }

    /// The events of one batch.
    pub fn batch_events(&self, batch: &str) -> Vec<Event> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.batch_id.as_ref().is_some_and(|b| b.as_str() == batch))
            .cloned()
            .collect()
    }
}

/// Replaces `path` the way editors save: a temporary file in the same folder renamed over it.
pub fn save_by_rename(path: &Path, text: &str) {
    let tmp = path.with_extension("yaml.saving");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Resident set size of this process, in bytes (Linux).
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}
