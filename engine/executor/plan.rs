//! Planning a batch without running anything (`toolgate plan`): the groups, and per call its
//! tool, input problems, decision with the rules behind it (and the hooks that would be
//! asked), resolved timeout and budget. Pure: no hook, handler or approver is run.

use std::borrow::Cow;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde_json::Value;

use crate::model::contract::Overflow;
use crate::model::hook::HookEvent;
use crate::model::{BudgetUnit, CallId, Decision, ModeName, ToolName};
use crate::pipeline::ToolCall;
use crate::policy::decide::{Reason, combine};
use crate::policy::rules::{CallFacts, RuleDecision};
use crate::schedule::{Concurrency, group};
use crate::snapshot::{ResolvedContract, Snapshot, Tool};
use crate::timeout::{TimeoutParams, resolve};

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

/// The plan of one call.
///
/// Its id and tool name are borrowed from the batch, the canonical name is shared by the
/// calls that name the same tool, and the reasons of a call that no rule matched are a
/// shared static list: a large plan allocates little per call and is quick to free.
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
    pub reasons: Cow<'static, [Reason]>,
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
    /// Why the call cannot run, if it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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

/// Calls planned per claim of a thread.
const PLAN_CHUNK: usize = 256;

/// A batch is planned on several threads only when each gets at least this many calls.
const PLAN_PARALLEL_PER_THREAD: usize = 1024;

/// Plans a batch (the batch was checked: unique ids, declared modes).
///
/// The calls are planned in chunks (on every core for a large batch); each chunk looks up
/// and resolves each distinct tool name once, and reads inputs in place (only a JSON string
/// input is parsed), so the cost per call is its validation and decision. Groups are formed
/// once all calls are classified.
pub fn plan<'b>(snapshot: &Snapshot, batch: &'b Batch, modes: &[ModeName]) -> Plan<'b> {
    plan_checking(snapshot, batch, modes, || ()).0
}

/// [`plan`], running `check` alongside: on a thread of its own while a large batch is
/// planned (the thread then plans what is left), else first. `Engine::plan` checks the
/// batch's ids this way.
pub fn plan_checking<'b, R: Send>(
    snapshot: &Snapshot,
    batch: &'b Batch,
    modes: &[ModeName],
    check: impl FnOnce() -> R + Send,
) -> (Plan<'b>, R) {
    let engine = &snapshot.engine;
    let calls = &batch.calls;
    let threads = if calls.len() < 2 * PLAN_PARALLEL_PER_THREAD {
        1
    } else {
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        cores.min(calls.len() / PLAN_PARALLEL_PER_THREAD)
    };
    let (mut planned_calls, checked) = if threads > 1 {
        plan_on_threads(snapshot, modes, calls, threads, check)
    } else {
        let checked = check();
        let mut all = Vec::with_capacity(calls.len());
        plan_chunk(snapshot, modes, calls, &mut all);
        (all, checked)
    };
    let classes: Vec<Concurrency> = planned_calls.iter().map(|call| call.scheduling).collect();
    let ranges = group(&classes, engine.max_concurrency);
    for (index, range) in ranges.iter().enumerate() {
        for call in &mut planned_calls[range.clone()] {
            call.group = index;
        }
    }
    let plan = Plan {
        generation: snapshot.generation,
        modes: modes.iter().map(|m| m.to_string()).collect(),
        groups: ranges
            .iter()
            .map(|range| calls[range.clone()].iter().map(|c| &c.id).collect())
            .collect(),
        calls: planned_calls,
    };
    (plan, checked)
}

/// The plans of consecutive calls (their groups are set once all are planned).
type Chunk<'b> = Vec<PlannedCall<'b>>;

/// Plans a large batch on `threads` threads, in chunks of [`PLAN_CHUNK`] calls. The calling
/// thread takes chunks from the front and plans them straight into the result; the other
/// threads take chunks from the back, and their plans are appended once all are done. So the
/// work stays balanced however busy each core is, and only the other threads' share of the
/// (large) plans is moved once more. The first other thread runs `check` before it takes
/// chunks.
fn plan_on_threads<'b, R: Send>(
    snapshot: &Snapshot,
    modes: &[ModeName],
    calls: &'b [ToolCall],
    threads: usize,
    check: impl FnOnce() -> R + Send,
) -> (Chunk<'b>, R) {
    let chunks = calls.len().div_ceil(PLAN_CHUNK);
    let slice =
        |index: usize| &calls[index * PLAN_CHUNK..calls.len().min((index + 1) * PLAN_CHUNK)];
    // INVARIANT: chunks `..front` are taken by the calling thread, `back..` by the others.
    let unclaimed = Mutex::new((0, chunks));
    let claim = |from_front: bool| {
        let mut range = unclaimed.lock().unwrap_or_else(PoisonError::into_inner);
        let (front, back) = &mut *range;
        if *front == *back {
            None
        } else if from_front {
            *front += 1;
            Some(*front - 1)
        } else {
            *back -= 1;
            Some(*back)
        }
    };
    let mut all = Chunk::with_capacity(calls.len());
    let work = || {
        let mut done = Vec::new();
        while let Some(index) = claim(false) {
            let part = slice(index);
            let mut chunk = Chunk::with_capacity(part.len());
            plan_chunk(snapshot, modes, part, &mut chunk);
            done.push((index, chunk));
        }
        done
    };
    let (checked, mut others): (R, Vec<(usize, Chunk)>) = std::thread::scope(|scope| {
        let checker = scope.spawn(|| (check(), work()));
        let workers: Vec<_> = (2..threads).map(|_| scope.spawn(work)).collect();
        while let Some(index) = claim(true) {
            plan_chunk(snapshot, modes, slice(index), &mut all);
        }
        let (checked, mut others) = joined(checker.join());
        for worker in workers {
            others.extend(joined(worker.join()));
        }
        (checked, others)
    });
    others.sort_unstable_by_key(|(index, _)| *index);
    for (_, mut chunk) in others {
        all.append(&mut chunk);
    }
    (all, checked)
}

/// What a worker thread returned; a worker only panics if planning (or the check) does, and
/// the panic is raised again here.
fn joined<T>(result: std::thread::Result<T>) -> T {
    match result {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// What planning a call needs of its tool, worked out once per chunk and tool name.
struct ToolEntry<'s, 'b> {
    /// The name as written.
    written: &'b str,
    /// `None` for an unknown tool.
    known: Option<KnownTool<'s>>,
    class: Concurrency,
}

struct KnownTool<'s> {
    tool: &'s Tool,
    contract: Cow<'s, Arc<ResolvedContract>>,
    canonical: ToolName,
    hooks: Vec<String>,
    timeout: TimeoutParams,
}

/// At most this many distinct tool names are remembered per chunk (a linear search beats
/// hashing for the few names a batch uses); the calls of any further name look it up each.
const TOOLS_PER_CHUNK: usize = 16;

/// Plans consecutive calls of a batch, in order, at the end of `chunk`.
fn plan_chunk<'b>(
    snapshot: &Snapshot,
    modes: &[ModeName],
    calls: &'b [ToolCall],
    chunk: &mut Chunk<'b>,
) {
    let budget_unit = snapshot.engine.budget_unit;
    let mut tools: Vec<ToolEntry<'_, 'b>> = Vec::new();
    for call in calls {
        let remembered = tools.iter().position(|entry| entry.written == call.tool);
        let fresh;
        let entry = match remembered {
            Some(index) => &tools[index],
            None if tools.len() < TOOLS_PER_CHUNK => {
                tools.push(tool_entry(snapshot, modes, &call.tool));
                &tools[tools.len() - 1]
            }
            None => {
                fresh = tool_entry(snapshot, modes, &call.tool);
                &fresh
            }
        };
        plan_call(snapshot, modes, call, entry, budget_unit, chunk);
    }
}

/// Looks a tool name up and resolves what its calls share.
fn tool_entry<'s, 'b>(
    snapshot: &'s Snapshot,
    modes: &[ModeName],
    written: &'b str,
) -> ToolEntry<'s, 'b> {
    let Some(tool) = snapshot.lookup(written) else {
        return ToolEntry {
            written,
            known: None,
            class: Concurrency::from_flags(false, false, false),
        };
    };
    let engine = &snapshot.engine;
    let contract = tool.contract_for(modes, engine);
    let class = Concurrency::from_flags(
        true,
        contract.concurrency.destructive,
        contract.concurrency.concurrent_safe,
    );
    // A name of its own per chunk: the threads planning a batch share no reference count.
    let canonical = ToolName::new(tool.name.as_str());
    let hooks = snapshot
        .hooks
        .iter()
        .filter(|hook| {
            hook.applies(HookEvent::PreToolUse, Some(&tool.name), modes)
                || hook.applies(HookEvent::PermissionRequest, Some(&tool.name), modes)
        })
        .map(|hook| hook.spec.name.clone())
        .collect();
    let timeout = TimeoutParams {
        disabled: contract.timeout.disabled,
        default: contract.timeout.default,
        max: contract.timeout.max,
        override_field: contract.timeout.override_field.clone(),
        cleanup_grace: contract.timeout.cleanup_grace,
        engine_default: engine.default_timeout,
    };
    ToolEntry {
        written,
        known: Some(KnownTool {
            tool,
            contract,
            canonical,
            hooks,
            timeout,
        }),
        class,
    }
}

/// Plans one call, at the end of `planned` (filled in place: a plan is a large value).
fn plan_call<'b>(
    snapshot: &Snapshot,
    modes: &[ModeName],
    call: &'b ToolCall,
    entry: &ToolEntry<'_, 'b>,
    budget_unit: BudgetUnit,
    planned: &mut Vec<PlannedCall<'b>>,
) {
    planned.push(PlannedCall {
        id: &call.id,
        tool: entry.written,
        canonical_tool: None,
        group: 0,
        scheduling: entry.class,
        decision: PlannedDecision::Error,
        reasons: Cow::Borrowed(&[]),
        hooks: Vec::new(),
        timeout_ms: None,
        budget: None,
        budget_unit,
        overflow: None,
        error: None,
    });
    let Some(planned) = planned.last_mut() else {
        return;
    };
    match &entry.known {
        Some(known) => plan_known(snapshot, modes, call, known, planned),
        None => planned.error = Some(format!("unknown tool `{}`", call.tool)),
    }
}

/// Fills in the plan of a call whose tool is known.
fn plan_known(
    snapshot: &Snapshot,
    modes: &[ModeName],
    call: &ToolCall,
    known: &KnownTool<'_>,
    planned: &mut PlannedCall<'_>,
) {
    let KnownTool {
        tool,
        contract,
        canonical,
        hooks,
        timeout,
    } = known;
    planned.canonical_tool = Some(canonical.clone());
    planned.budget = Some(contract.budget.limit);
    planned.overflow = Some(contract.budget.overflow);
    planned.hooks.clone_from(hooks);
    let input: Cow<'_, Value> = match &call.input {
        Value::String(text) => Cow::Owned(serde_json::from_str(text).unwrap_or(Value::Null)),
        Value::Null => Cow::Owned(Value::Object(Default::default())),
        other => Cow::Borrowed(other),
    };
    if !input.is_object() {
        planned.error = Some("the input is not a JSON object".into());
        return;
    }
    if let Some(validator) = &tool.input_schema
        && !validator.is_valid(&input)
    {
        let problems: Vec<String> = validator
            .iter_errors(&input)
            .map(|e| {
                let at = e.instance_path().to_string();
                format!("`{}`: {e}", if at.is_empty() { "/" } else { &at })
            })
            .collect();
        planned.error = Some(format!("invalid input: {}", problems.join("; ")));
        return;
    }
    match resolve(timeout, &input) {
        Ok(timeout) => {
            planned.timeout_ms =
                timeout.map(|t| u64::try_from(t.budget.as_millis()).unwrap_or(u64::MAX));
        }
        Err(error) => {
            planned.error = Some(format!("invalid input: {error}"));
            return;
        }
    }
    let facts = CallFacts {
        tool: &tool.name,
        input: &input,
        modes,
        flags: &contract.concurrency,
    };
    let rules = snapshot
        .rules
        .decide(&facts, &snapshot.match_ctx, contract.default_permission);
    let (decision, reasons) = match default_only(&rules, contract.always_ask) {
        Some(shared) => shared,
        None => {
            let permission = combine(rules, &[], contract.always_ask);
            (permission.decision, Cow::Owned(permission.reasons))
        }
    };
    planned.decision = decision.into();
    planned.reasons = reasons;
}

static DEFAULT_ALLOW: [Reason; 1] = [Reason::Default {
    decision: Decision::Allow,
}];
static DEFAULT_ASK: [Reason; 1] = [Reason::Default {
    decision: Decision::Ask,
}];
static DEFAULT_DENY: [Reason; 1] = [Reason::Default {
    decision: Decision::Deny,
}];
static ALWAYS_ASK_OVER_DEFAULT_ALLOW: [Reason; 2] = [
    Reason::AlwaysAsk,
    Reason::Default {
        decision: Decision::Allow,
    },
];

/// The permission `combine(rules, &[], always_ask)` gives when no rule matched (the common
/// case), with its reasons borrowed from a static list instead of allocated per call.
/// `None` when a rule matched.
fn default_only(
    rules: &RuleDecision,
    always_ask: bool,
) -> Option<(Decision, Cow<'static, [Reason]>)> {
    if !rules.rules.is_empty() {
        return None;
    }
    Some(match (rules.decision, always_ask) {
        (Decision::Allow, true) => (Decision::Ask, Cow::Borrowed(&ALWAYS_ASK_OVER_DEFAULT_ALLOW)),
        (Decision::Allow, false) => (Decision::Allow, Cow::Borrowed(&DEFAULT_ALLOW)),
        (Decision::Ask, _) => (Decision::Ask, Cow::Borrowed(&DEFAULT_ASK)),
        (Decision::Deny, _) => (Decision::Deny, Cow::Borrowed(&DEFAULT_DENY)),
    })
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
            "{} calls in {} groups\n",
            self.calls.len(),
            self.groups.len()
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
                let tool = match &call.canonical_tool {
                    Some(canonical) if canonical.as_str() != call.tool => {
                        format!("{} ({canonical})", call.tool)
                    }
                    _ => call.tool.to_string(),
                };
                let timeout = call
                    .timeout_ms
                    .map_or_else(|| "no timeout".to_owned(), |ms| format!("timeout {ms}ms"));
                match &call.error {
                    Some(error) => {
                        out.push_str(&format!("  {:<10} {:<14} ERROR  {error}\n", call.id, tool))
                    }
                    None => {
                        let budget = call.budget.map_or_else(String::new, |b| {
                            format!(
                                ", budget {b} {} ({})",
                                call.budget_unit,
                                call.overflow.map_or("", overflow_name)
                            )
                        });
                        let why: Vec<String> = call.reasons.iter().map(Reason::label).collect();
                        out.push_str(&format!(
                            "  {:<10} {:<14} {:<5}  by {}; {timeout}{budget}\n",
                            call.id,
                            tool,
                            call.decision,
                            why.join(", ")
                        ));
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

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::policy::rules::MatchedRule;
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

    /// Calls of every kind planning tells apart: known tools, an alias, unknown names (more
    /// distinct names than a chunk remembers), secrets, bad inputs, string inputs, timeout
    /// overrides.
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
        kinds.extend((0..TOOLS_PER_CHUNK).map(|i| (format!("Nope{i}"), json!({}))));
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
    fn a_batch_on_several_threads_plans_like_its_calls_alone() {
        // Over 2 × 1 024 calls: planned in chunks on every core.
        let picks: Vec<usize> = (0..2 * PLAN_PARALLEL_PER_THREAD + 77)
            .map(|i| i * 7 + i / 13)
            .collect();
        for names in [&[][..], &["plan", "offpeak"]] {
            assert_plans_like_each_call_alone(&batch_of(&picks), &modes(names));
        }
        // The fixtures reach the plan: hooks, and a contract the mode patches.
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

    #[test]
    fn shared_default_reasons_are_what_combine_gives() {
        for decision in [Decision::Allow, Decision::Ask, Decision::Deny] {
            for always_ask in [false, true] {
                let rules = RuleDecision {
                    decision,
                    rules: Vec::new(),
                };
                let combined = combine(rules.clone(), &[], always_ask);
                assert_eq!(
                    default_only(&rules, always_ask),
                    Some((combined.decision, Cow::Owned(combined.reasons))),
                    "{decision:?} always_ask {always_ask}"
                );
            }
        }
        let matched = RuleDecision {
            decision: Decision::Deny,
            rules: vec![MatchedRule {
                name: "r".into(),
                decision: Decision::Deny,
                priority: 0,
                enforced: false,
                reason: None,
                location: None,
                detail: None,
            }],
        };
        assert_eq!(default_only(&matched, false), None);
    }
}
