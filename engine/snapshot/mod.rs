//! Layers, merging with provenance, semantic checks, and the immutable [`Snapshot`] that
//! every batch runs against; hot reload swaps whole snapshots.
//!
//! ```
//! use toolgate::{LayerOptions, LoadOptions, load};
//!
//! let outcome = load(&LoadOptions::new(LayerOptions::default()), 1);
//! let snapshot = outcome.snapshot.expect("the built-in policies load");
//! assert_eq!(snapshot.generation(), 1);
//! assert!(snapshot.has_tool("Bash"));
//! // The merged document: every layer applied.
//! assert_eq!(snapshot.effective()["tools"]["Bash"]["timeout"]["max"], "10m");
//! ```

pub mod build;
mod hints;
pub mod layer;
mod locations;
pub mod merge;
pub mod provenance;
pub mod reload;
mod rule_mistakes;
pub mod semantic;
pub mod trust;
pub mod untrusted;
mod wildcard;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;

pub use build::{LoadOptions, LoadOutcome, SetLimits, load};
pub use hints::ServerHints;
pub use layer::{LayerKind, LayerOptions, LayerSpec, ProjectLayer};
pub use provenance::Provenance;

use crate::diagnostics::SourceFile;
use crate::load::SpanTable;
use crate::model::contract::ContractPatch;
use crate::model::file::{Gate, Mode};
use crate::model::hook::Hook;
use crate::model::resolved::{ResolvedContract, ResolvedEngine};
use crate::model::{GateName, ModeName, ToolContract, ToolName};
use crate::policy::MatchContext;
use crate::policy::rule::ToolNames;
use crate::policy::rules::RuleSet;

/// A file that is part of a snapshot.
#[derive(Clone, Debug)]
pub struct LoadedFile {
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

/// The most mode patches of one tool whose combinations are all resolved when the snapshot
/// is built: 2^6 = 64 contracts. A tool with more patches (none of the shipped or example
/// policies comes close) has its first six combined up front and the rest applied per call.
const MAX_PRECOMPUTED_PATCHES: usize = 6;

/// One tool of a snapshot: its effective contract, resolved for every combination of the
/// modes that patch it, with its input and output schemas compiled.
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
    /// The contract's mode patches, in the order the contract lists them.
    mode_patches: Vec<(ModeName, ContractPatch)>,
    /// The contract for each set of active patching modes among the first
    /// [`MAX_PRECOMPUTED_PATCHES`]: bit `i` of the index is set when the `i`-th patch's mode is
    /// active.
    // INVARIANT: `by_modes[0]` is `resolved`, and `by_modes.len()` is `2^min(patches, MAX)`.
    by_modes: Vec<Arc<ResolvedContract>>,
    /// The contract flags filled from an MCP server's tool annotations (`trust_annotations`),
    /// each with the hint it came from, like `("read_only", "readOnlyHint: true")`.
    pub from_annotations: Vec<(&'static str, String)>,
}

impl Tool {
    /// The name a call of this tool runs under — in events, hook payloads, approval requests
    /// and results: the canonical name, or for a wildcard contract (`mcp__github__*`) the name
    /// the call was made with (`mcp__github__list_issues`), which says what actually runs.
    pub fn name_for_call<'a>(&'a self, called: &'a str) -> &'a str {
        if self.name.as_str().ends_with('*') {
            called
        } else {
            self.name.as_str()
        }
    }

    fn new(
        name: ToolName,
        contract: ToolContract,
        engine: &ResolvedEngine,
        input_schema: Option<Arc<jsonschema::Validator>>,
        output_schema: Option<Arc<jsonschema::Validator>>,
    ) -> Self {
        let resolved = Arc::new(ResolvedContract::resolve(&contract, engine));
        let mode_patches: Vec<(ModeName, ContractPatch)> = contract
            .modes
            .iter()
            .flatten()
            .map(|(mode, patch)| (ModeName::new(mode.as_str()), patch.clone()))
            .collect();
        let precomputed = mode_patches.len().min(MAX_PRECOMPUTED_PATCHES);
        let mut by_modes = Vec::with_capacity(1 << precomputed);
        by_modes.push(Arc::clone(&resolved));
        for mask in 1..1_usize << precomputed {
            // The set without its highest patch is already resolved: apply that patch on top
            // (patches apply in contract order, and the highest comes last).
            let highest = usize::BITS - 1 - mask.leading_zeros();
            let mut contract = (*by_modes[mask & !(1 << highest)]).clone();
            contract.apply(&mode_patches[highest as usize].1, engine);
            by_modes.push(Arc::new(contract));
        }
        Self {
            name,
            contract,
            resolved,
            input_schema,
            output_schema,
            mode_patches,
            by_modes,
            from_annotations: Vec::new(),
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

    /// Like [`Tool::resolved_for`], borrowing the contract (every combination of up to
    /// [`MAX_PRECOMPUTED_PATCHES`] patching modes was resolved when the snapshot was built).
    pub fn contract_for(
        &self,
        modes: &[ModeName],
        engine: &ResolvedEngine,
    ) -> std::borrow::Cow<'_, Arc<ResolvedContract>> {
        use std::borrow::Cow;
        let (precomputed, rest) = self
            .mode_patches
            .split_at(self.mode_patches.len().min(MAX_PRECOMPUTED_PATCHES));
        let mask = precomputed
            .iter()
            .enumerate()
            .filter(|(_, (mode, _))| modes.contains(mode))
            .fold(0_usize, |mask, (i, _)| mask | 1 << i);
        let Some(base) = self.by_modes.get(mask) else {
            return Cow::Borrowed(&self.resolved);
        };
        if !rest.iter().any(|(mode, _)| modes.contains(mode)) {
            return Cow::Borrowed(base);
        }
        let mut resolved = (**base).clone();
        for (_, patch) in rest.iter().filter(|(mode, _)| modes.contains(mode)) {
            resolved.apply(patch, engine);
        }
        Cow::Owned(Arc::new(resolved))
    }
}

/// A hook with the tools it applies to resolved.
#[derive(Clone, Debug)]
pub struct SnapshotHook {
    /// The hook as merged.
    pub spec: Hook,
    /// The canonical tools it runs for.
    pub(crate) tools: Vec<ToolName>,
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
}

/// An immutable, validated policy set: what every batch runs against.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Increases with every successful reload.
    pub(crate) generation: u64,
    /// The files it was built from.
    pub(crate) sources: Sources,
    /// Its layers, lowest first.
    pub(crate) layers: Vec<LayerSpec>,
    /// The merged document (the semantic diff compares these), kept compact.
    pub(crate) effective: EffectiveDocument,
    /// Where each effective value came from.
    pub(crate) provenance: Provenance,
    /// Engine settings.
    pub(crate) engine: ResolvedEngine,
    /// Tools by canonical name, in definition order.
    pub(crate) tools: IndexMap<ToolName, Arc<Tool>, foldhash::fast::RandomState>,
    /// Canonical names and aliases.
    pub(crate) names: ToolNames,
    /// Compiled rules.
    pub(crate) rules: RuleSet,
    /// Enabled hooks, in order.
    pub(crate) hooks: Vec<SnapshotHook>,
    /// Admission gates.
    pub(crate) gates: IndexMap<GateName, Gate>,
    /// Declared modes.
    pub(crate) modes: IndexMap<ModeName, Mode>,
    /// Agent tool maps by agent name (`toolgate hook <agent>`).
    pub(crate) agents: crate::model::agent::AgentsSection,
    /// MCP servers by name (started by the engine on first use).
    pub(crate) mcp_servers: crate::model::mcp::McpServersSection,
    /// Warnings of the load that built it.
    pub(crate) warnings: Vec<crate::diagnostics::Diagnostic>,
    /// The workspace root.
    pub(crate) workspace_root: PathBuf,
    /// Matching context (workspace root, home, policy files, path case) for rules.
    pub(crate) match_ctx: MatchContext,
    /// The found project layer, when the user does not trust it: what was left out of it.
    pub(crate) untrusted: Option<Arc<untrusted::UntrustedProject>>,
    /// Tools whose contract flags an MCP server's annotations filled (servers declared with
    /// `trust_annotations: true`), by the name a call uses: an exact contract's canonical
    /// name, or a name a wildcard covers. Empty when loaded; the engine fills it as it learns
    /// the servers' tool lists ([`Snapshot::with_hints`]).
    pub(crate) hinted: HashMap<String, Arc<Tool>, foldhash::fast::RandomState>,
    /// The MCP server tools exact contracts run, by the name a wildcard would run them under,
    /// each with the first contract (in definition order) that runs it: `mcp__gh__repo.delete`
    /// → `mcp__gh__repo_delete` for a contract `mcp__gh__repo_delete` whose handler runs tool
    /// `repo.delete` of server `gh`. No wildcard covers these names (see [`Snapshot::lookup`]).
    pub(crate) run_by_contract: HashMap<String, ToolName, foldhash::fast::RandomState>,
}

impl Snapshot {
    /// The tool a name or alias refers to. Names are case-sensitive.
    ///
    /// A name no contract or alias has, of the form `mcp__<server>__<tool>`, refers to the
    /// wildcard contract `mcp__<server>__*` when there is one (exact names first: a name that
    /// has its own contract never pays for the wildcard look-up), unless an exact contract
    /// runs that tool of that server ([`Snapshot::contract_running`]): then it refers to no
    /// tool, so a server tool is only ever run under the contract written for it, never
    /// around that contract's rules under another name. A wildcard's own name refers to no
    /// tool: it is no tool a model can call.
    pub(crate) fn lookup(&self, name: &str) -> Option<&Arc<Tool>> {
        match self.names.canonical_of(name) {
            Some(canonical) if !canonical.as_str().ends_with('*') => {
                if !self.hinted.is_empty()
                    && let Some(tool) = self.hinted.get(canonical.as_str())
                {
                    return Some(tool);
                }
                self.tools.get(canonical)
            }
            Some(_) => None,
            None => {
                if self.run_by_contract.contains_key(name) {
                    return None;
                }
                if !self.hinted.is_empty()
                    && let Some(tool) = self.hinted.get(name)
                {
                    return Some(tool);
                }
                self.wildcard_for(name)
            }
        }
    }

    /// The exact contract that runs the MCP server tool a call named `name` would reach
    /// through a wildcard, when `name` is not that contract's (nor any contract's) own name or
    /// alias: `mcp__gh__repo_delete`, whose handler runs tool `repo.delete` of server `gh`,
    /// for `mcp__gh__repo.delete`. Such a name is no tool (`Snapshot::lookup`); this says
    /// which name is.
    pub fn contract_running(&self, name: &str) -> Option<&ToolName> {
        if self.names.canonical_of(name).is_some() {
            return None;
        }
        self.run_by_contract.get(name)
    }

    /// The wildcard contract that covers `name` (`mcp__github__*` for
    /// `mcp__github__list_issues`), whether or not the name has an exact contract.
    pub(crate) fn wildcard_for(&self, name: &str) -> Option<&Arc<Tool>> {
        let (server, _) = crate::model::mcp::split_tool_name(name)?;
        self.tools
            .get(crate::model::mcp::wildcard_name(server).as_str())
    }

    /// Where an effective value was set, as `file:line:column`.
    pub fn origin_of(&self, pointer: &str) -> Option<String> {
        self.sources
            .locate(&self.provenance, pointer)
            .map(|location| location.display())
    }

    /// Whether every value at and below an effective pointer comes from the layers shipped in
    /// the binary (the engine defaults and the built-in layer).
    pub fn shipped(&self, pointer: &str) -> bool {
        self.sources
            .shipped(&self.layers, &self.provenance, pointer)
    }

    /// The workspace root.
    pub fn workspace_root(&self) -> &Path {
        &self.workspace_root
    }

    /// The generation: 1 for the first load, one more for each reload in force.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The merged policy document (every layer applied), as JSON.
    pub fn effective(&self) -> Value {
        self.effective.value()
    }

    /// The canonical names of the tools, wildcard contracts (`mcp__<server>__*`) included,
    /// in the order they were declared.
    pub fn tool_names(&self) -> impl Iterator<Item = &ToolName> {
        self.tools.keys()
    }

    /// Whether a tool of this canonical name is declared.
    pub fn has_tool(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Whether a gate of this name is declared.
    pub fn has_gate(&self, name: &str) -> bool {
        self.gates.contains_key(name)
    }

    /// How many rules the set has, over every layer.
    pub fn rule_count(&self) -> usize {
        self.rules.rules().len()
    }
}

#[cfg(test)]
mod tests {
    // Moved from the integration tests: they exercise this module's internals.
    mod policies_equivalence;

    use super::*;

    /// The contract for every set of active modes equals the patches of the active modes
    /// applied in contract order, both for the combinations resolved up front and for the
    /// patches beyond [`MAX_PRECOMPUTED_PATCHES`] that are applied per call.
    #[test]
    fn every_mode_combination_resolves_like_the_patches_applied_in_order() {
        let options = LoadOptions::new(LayerOptions {
            no_builtin: true,
            ..Default::default()
        });
        let engine = load(&options, 1).snapshot.unwrap().engine.clone();
        let count = MAX_PRECOMPUTED_PATCHES + 2;
        let modes: serde_json::Map<String, Value> = (0..count)
            .map(|i| {
                // Overlapping patches, so that their order shows in the result.
                let patch = serde_json::json!({
                    "timeout": {"default": format!("{}s", i + 1), "max": format!("{}s", 10 * (i % 3 + 1))},
                    "concurrency": {"concurrent_safe": i % 2 == 0},
                    "permission": {"always_ask": i % 3 == 0},
                });
                (format!("m{i}"), patch)
            })
            .collect();
        let contract: ToolContract =
            serde_json::from_value(serde_json::json!({ "modes": modes })).unwrap();
        let tool = Tool::new(ToolName::new("T"), contract, &engine, None, None);
        assert_eq!(tool.by_modes.len(), 1 << MAX_PRECOMPUTED_PATCHES);
        let names: Vec<ModeName> = (0..count).map(|i| ModeName::new(format!("m{i}"))).collect();
        for mask in 0..1_usize << count {
            let active: Vec<ModeName> = (0..count)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| names[i].clone())
                .collect();
            let mut want = (*tool.resolved).clone();
            for (mode, patch) in &tool.mode_patches {
                if active.contains(mode) {
                    want.apply(patch, &engine);
                }
            }
            assert_eq!(
                **tool.contract_for(&active, &engine),
                want,
                "modes {active:?}"
            );
        }
    }
}
