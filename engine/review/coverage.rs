//! Rule coverage (`toolgate test --coverage`): which rules the policy tests and the rules' own
//! `examples` exercise, and which of those never decide a tested call.
//!
//! Every call is decided by [`crate::executor::plan::plan`], as `toolgate test` decides its
//! cases. A rule is **exercised** when it matches some call: it is among the rules behind the
//! call's decision, or it holds for the call as a whole even though a rule of higher
//! precedence decided. It **decides** when it is behind a call's decision with the decision
//! the call got. Counted are the rules a team wrote: rules defined (or changed) outside the
//! layers shipped in the binary, whose examples are checked when toolgate is built.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde::Serialize;

use super::decisions::{CorpusCall, examples, plan_corpus};
use crate::assess::{self, Resolved};
use crate::executor::plan::PlannedDecision;
use crate::model::{Decision, ModeName, RuleName};
use crate::policy::decide::Reason;
use crate::policy::rule::{CallFacts, CompiledRule};
use crate::snapshot::Snapshot;

/// What the tested calls cover.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Coverage {
    /// Rules counted (those not shipped in the binary).
    pub rules: usize,
    /// Of those, the rules some tested call exercises.
    pub exercised: usize,
    /// `exercised / rules` in percent, rounded down to a tenth; 100 when there is no rule.
    pub percent: f64,
    /// Calls decided: the test cases and every rule's examples.
    pub calls: usize,
    /// Rules no test case and no example exercises, in definition order.
    pub unexercised: Vec<CoveredRule>,
    /// Rules that are exercised but never decide a tested call (another rule's decision
    /// always wins), in definition order.
    pub never_decides: Vec<CoveredRule>,
}

/// A rule named in a coverage report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CoveredRule {
    /// Its name.
    pub name: String,
    /// Its decision.
    pub decision: Decision,
    /// `file:line:column` of its definition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

impl Coverage {
    /// Whether the coverage reaches `min` percent.
    pub fn reaches(&self, min: f64) -> bool {
        self.percent >= min
    }
}

/// The coverage of the rules of `snapshot` by `tested` (the test cases) and by every rule's
/// examples.
pub fn coverage(snapshot: &Snapshot, tested: &[CorpusCall]) -> Coverage {
    let mut corpus = tested.to_vec();
    corpus.extend(examples(&snapshot.effective.value()));
    let counted: Vec<&CompiledRule> = snapshot
        .rules
        .rules()
        .iter()
        .filter(|rule| !snapshot.shipped(&format!("/rules/{}", rule.origin.index)))
        .collect();
    let mut exercised = BTreeSet::new();
    let mut decided = BTreeSet::new();
    for call in &corpus {
        for name in holding(snapshot, &counted, call) {
            exercised.insert(name);
        }
    }
    plan_corpus(snapshot, &corpus, |_, planned| {
        let decision = match planned.decision {
            PlannedDecision::Allow => Some(Decision::Allow),
            PlannedDecision::Ask => Some(Decision::Ask),
            PlannedDecision::Deny => Some(Decision::Deny),
            PlannedDecision::Error => None,
        };
        for reason in &planned.reasons {
            if let Reason::Rule {
                name,
                decision: rule_decision,
                ..
            } = reason
            {
                exercised.insert(RuleName::new(name.as_str()));
                if Some(*rule_decision) == decision {
                    decided.insert(RuleName::new(name.as_str()));
                }
            }
        }
    });
    let counted: Vec<CoveredRule> = counted
        .into_iter()
        .map(|rule| CoveredRule {
            name: rule.name.to_string(),
            decision: rule.decision,
            location: rule.origin.location.as_deref().map(str::to_owned),
        })
        .collect();
    let unexercised: Vec<CoveredRule> = counted
        .iter()
        .filter(|rule| !exercised.contains(rule.name.as_str()))
        .cloned()
        .collect();
    let never_decides = counted
        .iter()
        .filter(|rule| {
            exercised.contains(rule.name.as_str()) && !decided.contains(rule.name.as_str())
        })
        .cloned()
        .collect();
    let covered = counted.len() - unexercised.len();
    Coverage {
        rules: counted.len(),
        exercised: covered,
        percent: percent(covered, counted.len()),
        calls: corpus.len(),
        unexercised,
        never_decides,
    }
}

/// The names of the rules of `rules` that hold for `call` as a whole, whatever else decides
/// it (none when the call cannot run).
fn holding(snapshot: &Snapshot, rules: &[&CompiledRule], call: &CorpusCall) -> Vec<RuleName> {
    let modes: Vec<ModeName> = call
        .modes
        .iter()
        .map(|m| ModeName::new(m.as_str()))
        .filter(|m| snapshot.modes.contains_key(m))
        .collect();
    let Ok(admitted) = assess::admit(snapshot, &modes, &call.tool, Cow::Borrowed(&call.input))
    else {
        return Vec::new();
    };
    let Resolved { tool, contract } = &admitted.resolved;
    let facts = CallFacts {
        tool: &tool.name,
        input: &admitted.input,
        modes: &modes,
        flags: &contract.concurrency,
    };
    rules
        .iter()
        .filter(|rule| rule.tools.contains(&tool.name))
        .filter(|rule| {
            rule.evaluate_in(&facts, &snapshot.match_ctx, snapshot.rules.commands())
                .0
        })
        .map(|rule| rule.name.clone())
        .collect()
}

/// `part / whole` in percent, rounded down to a tenth (so 99.96 % does not read as 100 %).
fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        return 100.0;
    }
    ((part * 1000) / whole) as f64 / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_rounds_down_and_is_full_without_rules() {
        assert_eq!(percent(0, 0), 100.0);
        assert_eq!(percent(1, 3), 33.3);
        assert_eq!(percent(2, 3), 66.6);
        assert_eq!(percent(9999, 10000), 99.9);
        assert_eq!(percent(4, 4), 100.0);
    }
}
