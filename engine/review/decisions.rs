//! The decision diff: a corpus of calls evaluated under both policy sets, listing every call
//! whose decision, deciding rule, timeout or scheduling group changes — the evidence behind a
//! risk rating.
//!
//! Each call is decided by [`crate::executor::plan::plan`], the function `toolgate plan`
//! and `toolgate test` decide with; there is no second decision path here. The corpus holds
//! every rule's `examples` (of both sets), the calls given by the caller (policy tests, a
//! replayed decision log), and probes: calls built from the strings a changed rule's patterns
//! newly admit or no longer catch.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::contain::{samples, shell_samples};
use super::{Change, ChangeKind, Subject};
use crate::assess::ToolCall;
use crate::executor::Batch;
use crate::executor::plan::{PlannedCall, PlannedDecision, plan};
use crate::model::{Decision, ModeName};
use crate::policy::decide::Reason;
use crate::snapshot::Snapshot;

/// Where a corpus call comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// An example of a rule.
    Example {
        /// The rule.
        rule: String,
    },
    /// A policy test case.
    Test {
        /// The test's name.
        name: String,
    },
    /// A line of a replayed decision log.
    Replay {
        /// Its line number (from 1).
        line: usize,
    },
    /// A probe built from a changed rule's patterns.
    Probe {
        /// The rule.
        rule: String,
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Example { rule } => write!(f, "example of `{rule}`"),
            Origin::Test { name } => write!(f, "test `{name}`"),
            Origin::Replay { line } => write!(f, "log line {line}"),
            Origin::Probe { rule } => write!(f, "probe of `{rule}`"),
        }
    }
}

/// A call to decide under both sets.
#[derive(Clone, Debug, PartialEq)]
pub struct CorpusCall {
    /// The tool as written.
    pub tool: String,
    /// Its input.
    pub input: Value,
    /// The active modes.
    pub modes: Vec<String>,
    /// Where it comes from.
    pub origin: Origin,
}

/// How one set decides a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Outcome {
    /// `allow`, `ask`, `deny`, or `error` when the call cannot run.
    pub decision: String,
    /// The rule that decided (`default`, `analysis`, `always_ask` or a hook's label when no
    /// rule did).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The resolved timeout in milliseconds (`null`: none).
    pub timeout_ms: Option<u64>,
    /// `shared` or `alone`.
    pub group: String,
}

/// A call that is decided differently.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct DecisionChange {
    /// The tool as written.
    pub tool: String,
    /// Its input.
    pub input: Value,
    /// The active modes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<String>,
    /// Where the call comes from (every origin, when several gave the same call).
    pub origins: Vec<Origin>,
    /// Under BASE.
    pub before: Outcome,
    /// Under HEAD.
    pub after: Outcome,
    /// `deny → allow`, or `same` when only the rule, timeout or group changed.
    pub direction: String,
    /// Whether the call moves toward `allow` (deny → ask, ask → allow, …).
    pub loosens: bool,
}

/// The decision diff.
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct DecisionDiff {
    /// Calls evaluated (after removing duplicates).
    pub evaluated: usize,
    /// Changed calls by direction (`deny → allow`: 3), most loosening first.
    pub directions: Vec<DirectionCount>,
    /// Every changed call, loosening ones first.
    pub changes: Vec<DecisionChange>,
    /// Calls whose decision under HEAD rules not enforced yet (`warn`, `audit`) would change
    /// once they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub staged: Vec<StagedCall>,
}

/// A call that a HEAD rule not enforced yet would decide differently.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct StagedCall {
    /// The tool as written.
    pub tool: String,
    /// Its input.
    pub input: Value,
    /// The active modes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<String>,
    /// Where the call comes from.
    pub origins: Vec<Origin>,
    /// Its decision under HEAD.
    pub decision: String,
    /// Its decision once the rules are enforced.
    pub would: String,
    /// The rules, each as `name (audit)` or `name (warn)`.
    pub rules: Vec<String>,
}

/// How many calls changed in one direction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DirectionCount {
    /// `deny → allow`, `allow → ask`, … or `same` (only the rule, timeout or group changed).
    pub direction: String,
    /// How many calls.
    pub count: usize,
}

impl DecisionDiff {
    /// How many changed calls move toward `allow`.
    pub fn loosened(&self) -> usize {
        self.changes.iter().filter(|c| c.loosens).count()
    }
}

/// Every example of every rule in an effective document.
pub fn examples(effective: &Value) -> Vec<CorpusCall> {
    let mut out = Vec::new();
    for rule in effective
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = rule.get("name").and_then(Value::as_str) else {
            continue;
        };
        for key in ["match", "not_match"] {
            for example in rule
                .pointer(&format!("/examples/{key}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(call) = call_of(example, Origin::Example { rule: name.into() }) {
                    out.push(call);
                }
            }
        }
    }
    out
}

/// A call from a `{tool, input, modes}` value.
pub fn call_of(value: &Value, origin: Origin) -> Option<CorpusCall> {
    Some(CorpusCall {
        tool: value.get("tool")?.as_str()?.to_owned(),
        input: value
            .get("input")
            .cloned()
            .unwrap_or(Value::Object(Map::new())),
        modes: value
            .get("modes")
            .and_then(Value::as_array)
            .map(|modes| {
                modes
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        origin,
    })
}

/// The rules of a document by name.
fn rules_by_name(doc: &Value) -> BTreeMap<&str, &Value> {
    doc.get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|rule| Some((rule.get("name")?.as_str()?, rule)))
        .collect()
}

/// Probe calls for the changed rules: for each argument a changed `match` constrains, the
/// strings its patterns (old and new) admit, put into the rule's first example that has the
/// argument (or an input with that argument alone), for every tool the rule names.
pub fn probes(changes: &[Change], before: &Value, after: &Value) -> Vec<CorpusCall> {
    let (old, new) = (rules_by_name(before), rules_by_name(after));
    let mut out = Vec::new();
    let changed: Vec<&str> = changes
        .iter()
        .filter(|c| c.subject == Subject::Rule && c.kind != ChangeKind::Added)
        .map(|c| c.name.as_str())
        .chain(
            changes
                .iter()
                .filter(|c| c.subject == Subject::Rule && c.kind == ChangeKind::Added)
                .map(|c| c.name.as_str()),
        )
        .collect();
    for name in changed {
        let versions: Vec<&Value> = [old.get(name), new.get(name)]
            .into_iter()
            .flatten()
            .copied()
            .collect();
        let mut tools: Vec<String> = Vec::new();
        for rule in &versions {
            for tool in rule
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !tool.contains(['*', '?', '[']) && !tools.iter().any(|t| t == tool) {
                    tools.push(tool.to_owned());
                }
            }
        }
        let template = |field: &str| -> Option<(String, Value)> {
            versions.iter().find_map(|rule| {
                rule.pointer("/examples/match")?
                    .as_array()?
                    .iter()
                    .find(|e| e.pointer(&format!("/input/{field}")).is_some())
                    .map(|e| {
                        (
                            e.get("tool")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned(),
                            e.get("input").cloned().unwrap_or(Value::Null),
                        )
                    })
            })
        };
        for rule in &versions {
            let Some(matchers) = rule.get("match").and_then(Value::as_object) else {
                continue;
            };
            for (field, matcher) in matchers {
                let strings = probe_strings(matcher);
                if strings.is_empty() {
                    continue;
                }
                let (example_tool, base) =
                    template(field).unwrap_or_else(|| (String::new(), Value::Object(Map::new())));
                let mut targets = tools.clone();
                if targets.is_empty() && !example_tool.is_empty() {
                    targets.push(example_tool);
                }
                for tool in &targets {
                    for text in &strings {
                        let mut input = match &base {
                            Value::Object(map) => map.clone(),
                            _ => Map::new(),
                        };
                        if field.starts_with('/') {
                            continue;
                        }
                        input.insert(field.clone(), Value::String(text.clone()));
                        out.push(CorpusCall {
                            tool: tool.clone(),
                            input: Value::Object(input),
                            modes: Vec::new(),
                            origin: Origin::Probe { rule: name.into() },
                        });
                    }
                }
            }
        }
    }
    out
}

/// The most strings taken from one argument matcher.
const MAX_PROBES_PER_MATCHER: usize = 24;

fn probe_strings(matcher: &Value) -> Vec<String> {
    let list = |key: &str| -> Vec<String> {
        match matcher.get(key) {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut out: Vec<String> = Vec::new();
    for pattern in list("glob").iter().chain(&list("path")) {
        out.extend(samples(pattern).into_iter().take(2));
    }
    let redirects = matcher.get("allow_redirection") == Some(&Value::Bool(true));
    for pattern in list("shell") {
        for line in shell_samples(&pattern) {
            // What `allow_redirection` lets through: the same command writing a file.
            if redirects {
                out.push(format!("{line} > out.txt"));
            }
            out.push(line);
        }
    }
    if let Some(Value::String(s)) = matcher.get("equals") {
        out.push(s.clone());
    }
    out.dedup();
    out.truncate(MAX_PROBES_PER_MATCHER);
    out
}

/// The label of the reason that decided: the first rule, default or analysis reason with the
/// final decision, else the first reason.
fn deciding(planned: &PlannedCall<'_>) -> Option<String> {
    let decision = match planned.decision {
        PlannedDecision::Allow => Decision::Allow,
        PlannedDecision::Ask => Decision::Ask,
        PlannedDecision::Deny => Decision::Deny,
        PlannedDecision::Error => return None,
    };
    planned
        .reasons
        .iter()
        .find(|reason| match reason {
            Reason::Rule { decision: d, .. }
            | Reason::Default { decision: d, .. }
            | Reason::Analysis { decision: d, .. }
            | Reason::Hook { decision: d, .. } => *d == decision,
            Reason::AlwaysAsk => decision == Decision::Ask,
            // A notice that an untrusted project's rules were left out: it decides nothing.
            Reason::Untrusted { .. } | Reason::Approval { .. } => false,
        })
        .or(planned.reasons.first())
        .map(|reason| match reason {
            Reason::Rule { name, .. } => name.clone(),
            Reason::Default { .. }
            | Reason::Analysis { .. }
            | Reason::Hook { .. }
            | Reason::AlwaysAsk
            | Reason::Untrusted { .. }
            | Reason::Approval { .. } => reason.label(),
        })
}

fn outcome(planned: &PlannedCall<'_>) -> Outcome {
    Outcome {
        decision: planned.decision.as_str().to_owned(),
        rule: deciding(planned),
        timeout_ms: planned.timeout_ms,
        group: planned.scheduling.as_str().to_owned(),
    }
}

fn rank(decision: &str) -> Option<u8> {
    match decision {
        "allow" => Some(0),
        "ask" => Some(1),
        "deny" => Some(2),
        _ => None,
    }
}

/// Plans every call of `corpus` under one set, calls grouped by their modes (modes the set
/// does not declare are left out, as a host would not activate them), and hands each planned
/// call to `each` with its index in `corpus`.
pub fn plan_corpus(
    snapshot: &Snapshot,
    corpus: &[CorpusCall],
    mut each: impl FnMut(usize, &PlannedCall<'_>),
) {
    let mut by_modes: BTreeMap<Vec<String>, Vec<usize>> = BTreeMap::new();
    for (index, call) in corpus.iter().enumerate() {
        by_modes.entry(call.modes.clone()).or_default().push(index);
    }
    for (modes, indexes) in by_modes {
        let modes: Vec<ModeName> = modes
            .iter()
            .map(|m| ModeName::new(m.as_str()))
            .filter(|m| snapshot.modes.contains_key(m))
            .collect();
        let batch = Batch::new(
            indexes
                .iter()
                .map(|&i| {
                    ToolCall::new(
                        format!("c{i}"),
                        corpus[i].tool.clone(),
                        corpus[i].input.clone(),
                    )
                })
                .collect(),
        );
        let planned = plan(snapshot, &batch, &modes);
        for (&index, call) in indexes.iter().zip(&planned.calls) {
            each(index, call);
        }
    }
}

/// Decides every call under one set.
fn decide_all(snapshot: &Snapshot, corpus: &[CorpusCall]) -> Vec<Outcome> {
    let mut outcomes: Vec<Option<Outcome>> = vec![None; corpus.len()];
    plan_corpus(snapshot, corpus, |index, call| {
        outcomes[index] = Some(outcome(call));
    });
    outcomes
        .into_iter()
        .map(|o| {
            o.unwrap_or_else(|| Outcome {
                decision: "error".into(),
                rule: None,
                timeout_ms: None,
                group: "shared".into(),
            })
        })
        .collect()
}

/// The modes named by changed rules (before or after): every corpus call is also decided
/// in each of them, so that a rule restricted to fewer modes shows its effect.
pub fn changed_modes(changes: &[Change]) -> Vec<String> {
    let mut modes = Vec::new();
    for change in changes.iter().filter(|c| c.subject == Subject::Rule) {
        for value in [&change.before, &change.after].into_iter().flatten() {
            let list = match value {
                Value::Array(items) if change.field.as_deref() == Some("modes") => Some(items),
                Value::Object(_) => value.get("modes").and_then(Value::as_array),
                _ => None,
            };
            for mode in list.into_iter().flatten().filter_map(Value::as_str) {
                if !modes.iter().any(|m| m == mode) {
                    modes.push(mode.to_owned());
                }
            }
        }
    }
    modes
}

/// Evaluates the corpus (duplicates removed, each call also in every mode of `extra_modes`)
/// under both sets and lists the calls decided differently.
pub fn decision_diff(
    base: &Snapshot,
    head: &Snapshot,
    corpus: Vec<CorpusCall>,
    extra_modes: &[String],
) -> DecisionDiff {
    // One entry per distinct call; the origins of its duplicates are kept with it.
    let mut unique: Vec<CorpusCall> = Vec::new();
    let mut origins: Vec<Vec<Origin>> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let with_modes = corpus.into_iter().flat_map(|call| {
        let mut variants = vec![call.clone()];
        for mode in extra_modes {
            if !call.modes.contains(mode) {
                let mut variant = call.clone();
                variant.modes = vec![mode.clone()];
                variants.push(variant);
            }
        }
        variants
    });
    for call in with_modes {
        let key = format!("{}\u{0}{}\u{0}{:?}", call.tool, call.input, call.modes);
        match seen.get(&key) {
            Some(&index) => {
                if !origins[index].contains(&call.origin) {
                    origins[index].push(call.origin);
                }
            }
            None => {
                seen.insert(key, unique.len());
                origins.push(vec![call.origin.clone()]);
                unique.push(call);
            }
        }
    }
    let (before, after) = (decide_all(base, &unique), decide_all(head, &unique));
    let mut staged = Vec::new();
    plan_corpus(head, &unique, |index, planned| {
        let Some(first) = planned.staged.first() else {
            return;
        };
        staged.push(StagedCall {
            tool: unique[index].tool.clone(),
            input: unique[index].input.clone(),
            modes: unique[index].modes.clone(),
            origins: origins[index].clone(),
            decision: planned.decision.as_str().to_owned(),
            would: first.decision.to_string(),
            rules: planned
                .staged
                .iter()
                .map(|s| format!("{} ({})", s.rule, s.enforcement.as_str()))
                .collect(),
        });
    });
    let mut changes: Vec<DecisionChange> = unique
        .into_iter()
        .zip(origins)
        .zip(before.into_iter().zip(after))
        .filter(|(_, (b, a))| b != a)
        .map(|((call, origins), (before, after))| {
            let (direction, loosens) = if before.decision == after.decision {
                ("same".to_owned(), false)
            } else {
                let loosens = matches!(
                    (rank(&before.decision), rank(&after.decision)),
                    (Some(b), Some(a)) if a < b
                ) || (before.decision == "error" && after.decision == "allow");
                (format!("{} → {}", before.decision, after.decision), loosens)
            };
            DecisionChange {
                tool: call.tool,
                input: call.input,
                modes: call.modes,
                origins,
                before,
                after,
                direction,
                loosens,
            }
        })
        .collect();
    changes.sort_by_key(|c| (!c.loosens, c.direction == "same"));
    let mut counts: BTreeMap<&str, (bool, usize)> = BTreeMap::new();
    for change in &changes {
        let entry = counts
            .entry(change.direction.as_str())
            .or_insert((change.loosens, 0));
        entry.1 += 1;
    }
    let mut directions: Vec<(bool, DirectionCount)> = counts
        .into_iter()
        .map(|(direction, (loosens, count))| {
            (
                loosens,
                DirectionCount {
                    direction: direction.to_owned(),
                    count,
                },
            )
        })
        .collect();
    directions
        .sort_by_key(|(loosens, d)| (!loosens, d.direction == "same", std::cmp::Reverse(d.count)));
    DecisionDiff {
        evaluated: seen.len(),
        directions: directions.into_iter().map(|(_, d)| d).collect(),
        changes,
        staged,
    }
}

/// Removes probes built for tools neither set knows (a rule's `tools` may name tools that
/// only another layer declares); calls from tests and logs are kept, unknown or not.
pub fn known_tools(corpus: Vec<CorpusCall>, base: &Snapshot, head: &Snapshot) -> Vec<CorpusCall> {
    corpus
        .into_iter()
        .filter(|call| {
            !matches!(call.origin, Origin::Probe { .. })
                || base.lookup(&call.tool).is_some()
                || head.lookup(&call.tool).is_some()
        })
        .collect()
}
