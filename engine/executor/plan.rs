//! Planning a batch without running anything (`toolgate plan`): the groups, and per call its
//! tool, input problems, decision with the rules behind it (and the hooks that would be
//! asked), resolved timeout and budget. Each call is decided by [`assess`], as a run decides
//! it. Pure: no hook, handler or approver is run.

use rayon::prelude::*;
use serde::Serialize;

use crate::assess::{Assessment, Resolved, ToolCall, assess};
use crate::diagnostics::escape_controls;
use crate::model::contract::Overflow;
use crate::model::{BudgetUnit, CallId, Decision, ModeName, ToolName};
use crate::policy::decide::{Reason, Staged};
use crate::schedule::{Concurrency, group};
use crate::snapshot::Snapshot;

use super::Batch;

/// The plan of a batch. It borrows the call ids and tool names of the batch it plans.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan<'b> {
    /// Snapshot generation.
    pub generation: u64,
    /// Modes.
    pub modes: Vec<String>,
    /// Call ids per group, in execution order.
    pub groups: Vec<Vec<&'b CallId>>,
    /// Per call, in batch order.
    pub calls: Vec<PlannedCall<'b>>,
}

/// The plan of one call: what [`assess`] decided, as `toolgate plan` shows it. Its id and tool
/// name are borrowed from the batch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlannedCall<'b> {
    /// Call id.
    pub id: &'b CallId,
    /// Tool as written.
    pub tool: &'b str,
    /// Canonical tool, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canonical_tool: Option<ToolName>,
    /// Index of its group.
    pub group: usize,
    /// `shared` or `alone`.
    pub scheduling: Concurrency,
    /// `allow`, `ask`, `deny`, or `error` when the call cannot run (unknown tool, bad input).
    pub decision: PlannedDecision,
    /// The rules (and defaults) behind the decision.
    pub reasons: Vec<Reason>,
    /// Rules not enforced yet (`warn`, `audit`) that would change the decision.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub staged: Vec<Staged>,
    /// PreToolUse / PermissionRequest hooks that would run for it (their answers may change
    /// the decision at run time).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<String>,
    /// Resolved timeout with grace, in milliseconds (`null`: no timeout).
    pub timeout_ms: Option<u64>,
    /// Effective model budget of the call (`min(max_model, max_inline)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<u64>,
    /// Budget unit (`chars` or `bytes`).
    pub budget_unit: BudgetUnit,
    /// What happens to output over the budget (`artifact` or `truncate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overflow: Option<Overflow>,
    /// Why the call cannot run, if it cannot: the text the model would be told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The contract flags an MCP server's tool annotations filled (`trust_annotations`),
    /// like `read_only from readOnlyHint: true`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub from_annotations: Vec<String>,
}

/// What planning found a call's permission would be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlannedDecision {
    /// Runs without asking.
    Allow,
    /// Asks the approver first.
    Ask,
    /// Refused.
    Deny,
    /// Cannot run: unknown tool or invalid input.
    Error,
}

impl PlannedDecision {
    /// `allow`, `ask`, `deny` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlannedDecision::Allow => "allow",
            PlannedDecision::Ask => "ask",
            PlannedDecision::Deny => "deny",
            PlannedDecision::Error => "error",
        }
    }
}

impl From<Decision> for PlannedDecision {
    fn from(decision: Decision) -> Self {
        match decision {
            Decision::Allow => PlannedDecision::Allow,
            Decision::Ask => PlannedDecision::Ask,
            Decision::Deny => PlannedDecision::Deny,
        }
    }
}

impl std::fmt::Display for PlannedDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad` honours width and alignment (the human rendering aligns decisions).
        f.pad(self.as_str())
    }
}

/// A decision compares equal to its name (`plan.calls[0].decision == "deny"`).
impl PartialEq<&str> for PlannedDecision {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Plans a batch (the batch was checked: unique ids, declared modes): each call is decided by
/// [`assess`], the code a run decides it with; groups are formed once all calls are
/// classified.
pub fn plan<'b>(snapshot: &Snapshot, batch: &'b Batch, modes: &[ModeName]) -> Plan<'b> {
    // Calls are decided independently, so a large batch is decided on every core (rayon
    // keeps the batch order).
    let mut calls: Vec<PlannedCall<'b>> = batch
        .calls
        .par_iter()
        .map(|call| plan_call(snapshot, modes, call))
        .collect();
    let classes: Vec<Concurrency> = calls.iter().map(|call| call.scheduling).collect();
    let ranges = group(&classes, snapshot.engine.max_concurrency);
    for (index, range) in ranges.iter().enumerate() {
        for call in &mut calls[range.clone()] {
            call.group = index;
        }
    }
    Plan {
        generation: snapshot.generation,
        modes: modes.iter().map(|m| m.to_string()).collect(),
        groups: ranges
            .iter()
            .map(|range| batch.calls[range.clone()].iter().map(|c| &c.id).collect())
            .collect(),
        calls,
    }
}

/// The scheduling class of a call from what its name resolved to: `destructive` → alone,
/// else `concurrent_safe` decides; a call whose tool is unknown shares a group (it fails at
/// lookup anyway). A batch is grouped with it both when planned and when run.
pub fn scheduling(resolved: Option<&Resolved<'_>>) -> Concurrency {
    match resolved {
        Some(resolved) => {
            let flags = &resolved.contract.concurrency;
            Concurrency::from_flags(true, flags.destructive, flags.concurrent_safe)
        }
        None => Concurrency::from_flags(false, false, false),
    }
}

/// Plans one call (its group is set once all are planned).
fn plan_call<'b>(snapshot: &Snapshot, modes: &[ModeName], call: &'b ToolCall) -> PlannedCall<'b> {
    let Assessment { tool, outcome } = assess(snapshot, modes, call);
    let mut planned = PlannedCall {
        id: &call.id,
        tool: &call.tool,
        canonical_tool: None,
        group: 0,
        scheduling: scheduling(tool.as_ref()),
        decision: PlannedDecision::Error,
        reasons: Vec::new(),
        staged: Vec::new(),
        hooks: Vec::new(),
        timeout_ms: None,
        budget: None,
        budget_unit: snapshot.engine.budget_unit,
        overflow: None,
        error: None,
        from_annotations: Vec::new(),
    };
    if let Some(resolved) = &tool {
        planned.canonical_tool = Some(ToolName::new(resolved.tool.name_for_call(&call.tool)));
        planned.from_annotations = resolved
            .tool
            .from_annotations
            .iter()
            .map(|(flag, hint)| format!("{flag} from {hint}"))
            .collect();
        planned.budget = Some(resolved.contract.budget.limit);
        planned.overflow = Some(resolved.contract.budget.overflow);
        planned.hooks = resolved
            .hooks_asked(snapshot, modes)
            .into_iter()
            .map(str::to_owned)
            .collect();
    }
    match outcome {
        Ok(settled) => {
            planned.timeout_ms = settled.timeout_ms();
            planned.decision = settled.permission.decision.into();
            planned.reasons = settled.permission.reasons;
            planned.staged = settled.permission.staged;
        }
        Err(rejection) => planned.error = Some(rejection.message),
    }
    planned
}

fn overflow_name(overflow: Overflow) -> &'static str {
    match overflow {
        Overflow::Artifact => "artifact",
        Overflow::Truncate => "truncate",
    }
}

impl Plan<'_> {
    /// The human rendering: groups with their calls, one line each.
    pub fn render_human(&self) -> String {
        let mut out = String::new();
        if !self.modes.is_empty() {
            out.push_str(&format!("modes: {}\n", self.modes.join(", ")));
        }
        out.push_str(&format!(
            "{} in {}\n",
            crate::cli::count(self.calls.len(), "call", "calls"),
            crate::cli::count(self.groups.len(), "group", "groups")
        ));
        let by_id: std::collections::HashMap<&str, &PlannedCall> =
            self.calls.iter().map(|c| (c.id.as_str(), c)).collect();
        for (index, group) in self.groups.iter().enumerate() {
            let kind = if group.len() > 1 {
                "concurrent"
            } else {
                "alone"
            };
            out.push_str(&format!("\ngroup {} ({kind})\n", index + 1));
            for id in group {
                let Some(&call) = by_id.get(id.as_str()) else {
                    continue;
                };
                // What the call named is escaped (see `escape_controls`).
                let tool = match &call.canonical_tool {
                    Some(canonical) if canonical.as_str() != call.tool => {
                        format!("{} ({canonical})", call.tool)
                    }
                    _ => call.tool.to_string(),
                };
                let tool = escape_controls(&tool);
                let id = escape_controls(call.id.as_str());
                let timeout = call
                    .timeout_ms
                    .map_or_else(|| "no timeout".to_owned(), |ms| format!("timeout {ms}ms"));
                match &call.error {
                    Some(error) => {
                        let error = escape_controls(error);
                        out.push_str(&format!("  {id:<10} {tool:<14} ERROR  {error}\n"));
                    }
                    None => {
                        let budget = call.budget.map_or_else(String::new, |b| {
                            format!(
                                ", budget {b} {} ({})",
                                call.budget_unit,
                                call.overflow.map_or("", overflow_name)
                            )
                        });
                        let why: Vec<String> = call
                            .reasons
                            .iter()
                            .map(|reason| match reason.part() {
                                Some(part) => format!("{} (`{part}`)", reason.label()),
                                None => reason.label(),
                            })
                            .collect();
                        out.push_str(&format!(
                            "  {id:<10} {tool:<14} {:<5}  by {}; {timeout}{budget}\n",
                            call.decision,
                            escape_controls(&why.join(", "))
                        ));
                        for reason in &call.reasons {
                            if let Reason::Analysis { reason, .. }
                            | Reason::Untrusted { reason, .. } = reason
                            {
                                let reason = escape_controls(reason);
                                out.push_str(&format!("  {:<10} {:<14} {reason}\n", "", ""));
                            }
                        }
                        for staged in &call.staged {
                            out.push_str(&format!(
                                "  {:<10} {:<14} not enforced yet: rule `{}` ({}) would make it {}\n",
                                "",
                                "",
                                staged.rule,
                                staged.enforcement.as_str(),
                                staged.decision
                            ));
                        }
                        if !call.hooks.is_empty() {
                            out.push_str(&format!(
                                "  {:<10} {:<14} hooks asked first: {}\n",
                                "",
                                "",
                                call.hooks.join(", ")
                            ));
                        }
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::snapshot::{LayerOptions, LoadOptions, load};

    /// The built-in policies, the executor fixtures (aliases, a contract patched by the
    /// `offpeak` mode, timeouts, defaults of every kind) and hooks for some tools and modes.
    fn snapshot() -> Arc<Snapshot> {
        static SNAPSHOT: std::sync::OnceLock<Arc<Snapshot>> = std::sync::OnceLock::new();
        Arc::clone(SNAPSHOT.get_or_init(|| {
            let hooks = tempfile::tempdir().unwrap();
            std::fs::write(
                hooks.path().join("hooks.yaml"),
                "version: 1\nhooks:\n  - name: audit\n    event: PreToolUse\n    tools: [Bash, Read]\n    modes: [offpeak]\n    command: [./audit.sh]\n  - name: gatekeeper\n    event: PermissionRequest\n    tools: [Edit]\n    command: [./gate.sh]\n",
            )
            .unwrap();
            let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/executor/base");
            let mut options = LoadOptions::new(LayerOptions {
                policies: vec![fixtures, hooks.path().to_path_buf()],
                ..LayerOptions::default()
            });
            options.workspace_root = PathBuf::from("/ws");
            let outcome = load(&options, 1);
            outcome
                .snapshot
                .unwrap_or_else(|| panic!("{:#?}", outcome.diagnostics))
        }))
    }

    fn modes(names: &[&str]) -> Vec<ModeName> {
        names.iter().map(|m| ModeName::new(*m)).collect()
    }

    /// Calls of every kind planning tells apart: known tools, an alias, unknown names,
    /// secrets, bad inputs, string inputs, timeout overrides.
    fn kinds() -> Vec<(String, Value)> {
        let mut kinds: Vec<(String, Value)> = vec![
            ("Read".into(), json!({"file_path": "src/main.rs"})),
            ("read".into(), json!({"file_path": "src/lib.rs"})),
            ("Timed".into(), json!({"timeout_ms": 90000})),
            (
                "Untimed".into(),
                json!("{\"path\": \"given as a JSON string\"}"),
            ),
            ("Ask".into(), json!({})),
            ("Denied".into(), json!({})),
            ("Nuke".into(), json!({})),
            ("Read".into(), json!({"file_path": "a/../.env"})),
            ("Read".into(), json!({})),
            ("Read".into(), json!("{\"file_path\": \"x\"}")),
            ("Read".into(), json!("not json")),
            ("Read".into(), Value::Null),
            ("Write".into(), json!({"file_path": "x", "content": "y"})),
            (
                "Edit".into(),
                json!({"file_path": "x", "old_string": "a", "new_string": "b"}),
            ),
            ("Bash".into(), json!({"command": "git status"})),
            ("Bash".into(), json!({"command": "git push --force"})),
            ("Bash".into(), json!({"command": "ls", "timeout": 5000})),
            ("Bash".into(), json!({"command": "ls", "timeout": -1})),
            ("shell".into(), json!({"command": "rm -rf /"})),
            ("bash".into(), json!({"command": "ls"})),
            ("Glob".into(), json!({"pattern": "**/*.rs"})),
            ("Grep".into(), json!({"pattern": "fn main"})),
            (
                "WebFetch".into(),
                json!({"url": "https://example.com", "prompt": "p"}),
            ),
            ("WebSearch".into(), json!({"query": "q"})),
            ("Agent".into(), json!({"description": "d", "prompt": "p"})),
            ("TodoWrite".into(), json!({"todos": []})),
        ];
        kinds.extend((0..16).map(|i| (format!("Nope{i}"), json!({}))));
        kinds
    }

    fn batch_of(picks: &[usize]) -> Batch {
        let kinds = kinds();
        Batch::new(
            picks
                .iter()
                .enumerate()
                .map(|(i, &pick)| {
                    let (tool, input) = &kinds[pick % kinds.len()];
                    ToolCall::new(format!("c{i}"), tool.as_str(), input.clone())
                })
                .collect(),
        )
    }

    /// The plan of a batch is the plan of each of its calls alone (but for its group), its
    /// groups are the grouping of its calls' classes, and each call's group index is the
    /// group it is listed in.
    fn assert_plans_like_each_call_alone(batch: &Batch, modes: &[ModeName]) {
        let snapshot = snapshot();
        let plan = plan(&snapshot, batch, modes);
        assert_eq!(plan.calls.len(), batch.calls.len());
        for (planned, call) in plan.calls.iter().zip(&batch.calls) {
            let one = Batch::new(vec![call.clone()]);
            let mut alone = super::plan(&snapshot, &one, modes).calls.remove(0);
            alone.group = planned.group;
            assert_eq!(planned, &alone, "{}", call.id);
        }
        let classes: Vec<Concurrency> = plan.calls.iter().map(|c| c.scheduling).collect();
        let ranges = group(&classes, snapshot.engine.max_concurrency);
        assert_eq!(plan.groups.len(), ranges.len());
        for (index, (ids, range)) in plan.groups.iter().zip(&ranges).enumerate() {
            let expected: Vec<&CallId> = batch.calls[range.clone()].iter().map(|c| &c.id).collect();
            assert_eq!(ids, &expected);
            assert!(plan.calls[range.clone()].iter().all(|c| c.group == index));
        }
    }

    #[test]
    fn the_fixtures_reach_the_plan() {
        // Hooks, and a contract the mode patches.
        let read = batch_of(&[0, 8]);
        let plain = plan(&snapshot(), &read, &[]);
        let offpeak = plan(&snapshot(), &read, &modes(&["offpeak"]));
        assert_eq!(plain.calls[0].scheduling, Concurrency::Shared);
        assert_eq!(offpeak.calls[0].scheduling, Concurrency::Alone);
        assert!(plain.calls[0].hooks.is_empty());
        assert_eq!(offpeak.calls[0].hooks, ["audit"]);
    }

    proptest! {
        #[test]
        fn a_batch_plans_like_its_calls_alone(
            picks in proptest::collection::vec(0usize..64, 0..80),
            plan_mode in any::<bool>(),
            offpeak in any::<bool>(),
        ) {
            let names: Vec<&str> = [("plan", plan_mode), ("offpeak", offpeak)]
                .into_iter()
                .filter_map(|(name, on)| on.then_some(name))
                .collect();
            assert_plans_like_each_call_alone(&batch_of(&picks), &modes(&names));
        }
    }
}
