//! Planning a batch without running anything (`toolgate plan`): the groups, and per call its
//! tool, input problems, decision with the rules behind it (and the hooks that would be
//! asked), resolved timeout and budget. Pure: no hook, handler or approver is run.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::events::decision_name;
use crate::model::contract::Overflow;
use crate::model::hook::HookEvent;
use crate::model::{BudgetUnit, CallId, ModeName};
use crate::pipeline::ToolCall;
use crate::policy::decide::{Reason, combine};
use crate::policy::rules::CallFacts;
use crate::schedule::{Concurrency, group};
use crate::snapshot::{ResolvedContract, Snapshot, Tool, parallel};
use crate::timeout::{TimeoutParams, resolve};

use super::Batch;

/// The plan of a batch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// Snapshot generation.
    pub generation: u64,
    /// Modes.
    pub modes: Vec<String>,
    /// Call ids per group, in execution order.
    pub groups: Vec<Vec<CallId>>,
    /// Per call, in batch order.
    pub calls: Vec<PlannedCall>,
}

/// The plan of one call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlannedCall {
    /// Call id.
    pub id: CallId,
    /// Tool as written.
    pub tool: String,
    /// Canonical tool, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canonical_tool: Option<String>,
    /// Index of its group.
    pub group: usize,
    /// `shared` or `alone`.
    pub scheduling: &'static str,
    /// `allow`, `ask`, `deny`, or `error` when the call cannot run (unknown tool, bad input).
    pub decision: &'static str,
    /// The rules (and defaults) behind the decision.
    pub reasons: Vec<Reason>,
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
    pub budget_unit: &'static str,
    /// What happens to output over the budget (`artifact` or `truncate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overflow: Option<&'static str>,
    /// Why the call cannot run, if it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Calls planned per claim of a worker thread.
const PLAN_CHUNK: usize = 256;

/// A batch is planned on several threads only when each gets at least this many calls.
const PLAN_PARALLEL_PER_THREAD: usize = 1024;

/// Plans a batch (the batch was checked: unique ids, declared modes).
///
/// Every call is looked up and its contract resolved once; inputs are read in place (only a
/// JSON string input is parsed), so the cost per call is the decision itself.
pub fn plan(snapshot: &Snapshot, batch: &Batch, modes: &[ModeName]) -> Plan {
    let engine = &snapshot.engine;
    type Found<'s> = Option<(&'s Arc<Tool>, Cow<'s, Arc<ResolvedContract>>)>;
    let resolved: Vec<Found<'_>> =
        parallel::map_chunks(&batch.calls, PLAN_CHUNK, PLAN_PARALLEL_PER_THREAD, |call| {
            snapshot
                .lookup(&call.tool)
                .map(|tool| (tool, tool.contract_for(modes, engine)))
        });
    let classes: Vec<Concurrency> = resolved
        .iter()
        .map(|found| match found {
            Some((_, contract)) => Concurrency::from_flags(
                true,
                contract.concurrency.destructive,
                contract.concurrency.concurrent_safe,
            ),
            None => Concurrency::from_flags(false, false, false),
        })
        .collect();
    let ranges = group(&classes, engine.max_concurrency);
    let mut group_of = vec![0; batch.calls.len()];
    for (index, range) in ranges.iter().enumerate() {
        for slot in &mut group_of[range.clone()] {
            *slot = index;
        }
    }
    let budget_unit = unit_name(engine.budget_unit);
    let indices: Vec<usize> = (0..batch.calls.len()).collect();
    let calls = parallel::map_chunks(&indices, PLAN_CHUNK, PLAN_PARALLEL_PER_THREAD, |&index| {
        let (call, class, found) = (&batch.calls[index], &classes[index], &resolved[index]);
        let mut planned = PlannedCall {
            id: call.id.clone(),
            tool: call.tool.clone(),
            canonical_tool: None,
            group: group_of[index],
            scheduling: match class {
                Concurrency::Shared => "shared",
                Concurrency::Alone => "alone",
            },
            decision: "error",
            reasons: Vec::new(),
            hooks: Vec::new(),
            timeout_ms: None,
            budget: None,
            budget_unit,
            overflow: None,
            error: None,
        };
        let Some((tool, contract)) = found else {
            planned.error = Some(format!("unknown tool `{}`", call.tool));
            return planned;
        };
        plan_known(snapshot, modes, call, tool, contract, &mut planned);
        planned
    });
    Plan {
        generation: snapshot.generation,
        modes: modes.iter().map(|m| m.to_string()).collect(),
        groups: ranges
            .iter()
            .map(|range| {
                batch.calls[range.clone()]
                    .iter()
                    .map(|c| c.id.clone())
                    .collect()
            })
            .collect(),
        calls,
    }
}

/// Fills in the plan of a call whose tool is known.
fn plan_known(
    snapshot: &Snapshot,
    modes: &[ModeName],
    call: &ToolCall,
    tool: &Tool,
    contract: &ResolvedContract,
    planned: &mut PlannedCall,
) {
    let engine = &snapshot.engine;
    planned.canonical_tool = Some(tool.name.to_string());
    planned.budget = Some(contract.budget.limit);
    planned.overflow = Some(overflow_name(contract.budget.overflow));
    if !snapshot.hooks.is_empty() {
        planned.hooks = snapshot
            .hooks
            .iter()
            .filter(|hook| {
                hook.applies(HookEvent::PreToolUse, Some(&tool.name), modes)
                    || hook.applies(HookEvent::PermissionRequest, Some(&tool.name), modes)
            })
            .map(|hook| hook.spec.name.clone())
            .collect();
    }
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
    let params = TimeoutParams {
        disabled: contract.timeout.disabled,
        default: contract.timeout.default,
        max: contract.timeout.max,
        override_field: contract.timeout.override_field.clone(),
        cleanup_grace: contract.timeout.cleanup_grace,
        engine_default: engine.default_timeout,
    };
    match resolve(&params, &input) {
        Ok(timeout) => {
            planned.timeout_ms =
                timeout.map(|t| u64::try_from(t.total.as_millis()).unwrap_or(u64::MAX));
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
    let permission = combine(rules, &[], contract.always_ask);
    planned.decision = decision_name(permission.decision);
    planned.reasons = permission.reasons;
}

fn unit_name(unit: BudgetUnit) -> &'static str {
    match unit {
        BudgetUnit::Chars => "chars",
        BudgetUnit::Bytes => "bytes",
    }
}

fn overflow_name(overflow: Overflow) -> &'static str {
    match overflow {
        Overflow::Artifact => "artifact",
        Overflow::Truncate => "truncate",
    }
}

impl Plan {
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
                    Some(canonical) if canonical != &call.tool => {
                        format!("{} ({canonical})", call.tool)
                    }
                    _ => call.tool.clone(),
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
                                call.overflow.unwrap_or("")
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
