//! Layers, merging with provenance, semantic checks, and the immutable [`Snapshot`] that
//! every batch runs against; hot reload swaps whole snapshots.
//!
//! ```
//! use toolgate::snapshot::{LayerOptions, LoadOptions, load};
//!
//! let outcome = load(&LoadOptions::new(LayerOptions::default()), 1);
//! let snapshot = outcome.snapshot.expect("the built-in policies load");
//! let bash = snapshot.lookup("shell").expect("`shell` is an alias of Bash");
//! assert_eq!(bash.name.as_str(), "Bash");
//! assert_eq!(bash.resolved.timeout.max.map(|d| d.as_millis()), Some(600_000));
//! ```

pub mod build;
pub mod layer;
pub mod merge;
pub mod parallel;
pub mod provenance;
pub mod reload;
pub mod semantic;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use serde_json::Value;

pub use build::{LoadOptions, LoadOutcome, load};
pub use layer::{LayerKind, LayerOptions, LayerSpec};
pub use provenance::{FileId, Origin, Provenance};

use crate::diagnostics::SourceFile;
use crate::load::SpanTable;
use crate::model::contract::ContractPatch;
use crate::model::file::{Gate, Mode};
use crate::model::hook::Hook;
use crate::model::resolved::{ResolvedContract, ResolvedEngine};
use crate::model::{GateName, ModeName, ToolContract, ToolName};
use crate::policy::MatchContext;
use crate::policy::rules::{RuleSet, ToolNames};

/// A file that is part of a snapshot.
#[derive(Clone, Debug)]
pub struct LoadedFile {
    /// Its index.
    pub id: FileId,
    /// Its layer's position.
    pub layer: usize,
    /// Its text.
    pub source: Arc<SourceFile>,
    /// Where each of its values is.
    pub spans: SpanTable,
}

/// The files of a snapshot, to resolve provenance to file, line and column.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// In load order.
    pub files: Vec<LoadedFile>,
}

/// One tool of a snapshot: its effective contract, resolved, with its input and output
/// schemas compiled.
#[derive(Debug)]
pub struct Tool {
    /// Canonical name.
    pub name: ToolName,
    /// The merged contract as written.
    pub contract: ToolContract,
    /// The contract with defaults filled in (no modes active).
    pub resolved: Arc<ResolvedContract>,
    /// Compiled `input_schema` (absent: any object).
    pub input_schema: Option<Arc<jsonschema::Validator>>,
    /// Compiled `output_schema`.
    pub output_schema: Option<Arc<jsonschema::Validator>>,
    mode_patches: Vec<(ModeName, ContractPatch)>,
    mode_cache: Mutex<HashMap<Vec<ModeName>, Arc<ResolvedContract>>>,
}

impl Tool {
    fn new(
        name: ToolName,
        contract: ToolContract,
        resolved: ResolvedContract,
        input_schema: Option<Arc<jsonschema::Validator>>,
        output_schema: Option<Arc<jsonschema::Validator>>,
    ) -> Self {
        let mode_patches = contract
            .modes
            .iter()
            .flatten()
            .map(|(mode, patch)| (ModeName::new(mode.as_str()), patch.clone()))
            .collect();
        Self {
            name,
            contract,
            resolved: Arc::new(resolved),
            input_schema,
            output_schema,
            mode_patches,
            mode_cache: Mutex::new(HashMap::new()),
        }
    }

    /// The contract as it applies while `modes` are active: the mode patches of the active
    /// modes applied in the order the contract lists them.
    pub fn resolved_for(
        &self,
        modes: &[ModeName],
        engine: &ResolvedEngine,
    ) -> Arc<ResolvedContract> {
        self.contract_for(modes, engine).into_owned()
    }

    /// Like [`Tool::resolved_for`], borrowing the contract when no active mode patches it
    /// (the common case): planning a large batch on several threads then touches no shared
    /// reference count per call.
    pub fn contract_for(
        &self,
        modes: &[ModeName],
        engine: &ResolvedEngine,
    ) -> std::borrow::Cow<'_, Arc<ResolvedContract>> {
        use std::borrow::Cow;
        if !self
            .mode_patches
            .iter()
            .any(|(mode, _)| modes.contains(mode))
        {
            return Cow::Borrowed(&self.resolved);
        }
        let active: Vec<ModeName> = self
            .mode_patches
            .iter()
            .filter(|(mode, _)| modes.contains(mode))
            .map(|(mode, _)| mode.clone())
            .collect();
        if let Ok(cache) = self.mode_cache.lock()
            && let Some(hit) = cache.get(&active)
        {
            return Cow::Owned(Arc::clone(hit));
        }
        let mut resolved = (*self.resolved).clone();
        for (mode, patch) in &self.mode_patches {
            if active.contains(mode) {
                resolved.apply(patch, engine);
            }
        }
        let resolved = Arc::new(resolved);
        if let Ok(mut cache) = self.mode_cache.lock() {
            cache.insert(active, Arc::clone(&resolved));
        }
        Cow::Owned(resolved)
    }
}

/// A hook with the tools it applies to resolved.
#[derive(Clone, Debug)]
pub struct SnapshotHook {
    /// The hook as merged.
    pub spec: Hook,
    /// The canonical tools it runs for.
    pub tools: Vec<ToolName>,
}

impl SnapshotHook {
    /// Whether the hook runs for this event, tool and modes.
    pub fn applies(
        &self,
        event: crate::model::hook::HookEvent,
        tool: Option<&ToolName>,
        modes: &[ModeName],
    ) -> bool {
        self.spec.event == Some(event)
            && tool.is_none_or(|tool| self.tools.contains(tool))
            && self
                .spec
                .modes
                .as_ref()
                .is_none_or(|wanted| wanted.iter().any(|m| modes.iter().any(|a| a.as_str() == m)))
    }
}

/// The merged document of a snapshot, kept as compact JSON text.
///
/// Running a batch never reads it: only `explain`, `diff` and the change report of a reload
/// do, once each. As a tree it would be the largest part of a snapshot (an object node
/// costs far more than its text), so it is stored as text and parsed on demand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectiveDocument {
    json: Box<str>,
}

impl EffectiveDocument {
    /// Stores a merged document.
    pub fn new(value: &Value) -> Self {
        // `to_string` (not `Display`, which goes through a formatter per token): writing a
        // `Value` into bytes cannot fail.
        Self {
            json: serde_json::to_string(value)
                .unwrap_or_default()
                .into_boxed_str(),
        }
    }

    /// The document as a tree (parsed on every call: keep the result if you need it twice).
    pub fn value(&self) -> Value {
        // INVARIANT: `json` was written by `serde_json` from a `Value`, so it parses back to
        // the same tree (keys keep their order: `preserve_order` is on).
        serde_json::from_str(&self.json).unwrap_or(Value::Null)
    }

    /// The value at a JSON pointer, if any.
    pub fn pointer(&self, pointer: &str) -> Option<Value> {
        self.value().pointer(pointer).cloned()
    }

    /// The compact JSON text.
    pub fn as_json(&self) -> &str {
        &self.json
    }
}

/// An immutable, validated policy set: what every batch runs against.
#[derive(Debug)]
pub struct Snapshot {
    /// Increases with every successful reload.
    pub generation: u64,
    /// The files it was built from.
    pub sources: Sources,
    /// Its layers, lowest first.
    pub layers: Vec<LayerSpec>,
    /// The merged document (the semantic diff compares these), kept compact.
    pub effective: EffectiveDocument,
    /// Where each effective value came from.
    pub provenance: Provenance,
    /// Engine settings.
    pub engine: ResolvedEngine,
    /// Tools by canonical name, in definition order.
    pub tools: IndexMap<ToolName, Arc<Tool>, foldhash::fast::RandomState>,
    /// Canonical names and aliases.
    pub names: ToolNames,
    /// Compiled rules.
    pub rules: RuleSet,
    /// Enabled hooks, in order.
    pub hooks: Vec<SnapshotHook>,
    /// Admission gates.
    pub gates: IndexMap<GateName, Gate>,
    /// Declared modes.
    pub modes: IndexMap<ModeName, Mode>,
    /// Warnings of the load that built it.
    pub warnings: Vec<crate::diagnostics::Diagnostic>,
    /// The workspace root.
    pub workspace_root: PathBuf,
    /// Matching context (workspace root, path case) for rules.
    pub match_ctx: MatchContext,
}

impl Snapshot {
    /// The tool a name or alias refers to. Names are case-sensitive.
    pub fn lookup(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.get(self.names.canonical_of(name)?)
    }

    /// Where an effective value was set, as `file:line:column`.
    pub fn origin_of(&self, pointer: &str) -> Option<String> {
        self.sources
            .locate(&self.provenance, pointer)
            .map(|location| location.display())
    }

    /// The workspace root.
    pub fn workspace_root(&self) -> &Path {
        &self.workspace_root
    }
}
