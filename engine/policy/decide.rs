//! Combining the rules' decision with the PreToolUse hooks' and the contract's `always_ask`
//! (SPEC §7.2) into the permission of one call, with every reason that produced it.
//!
//! Order: the rules decide (enforced denies first, then priority, then strictness; no match →
//! the contract default). Then the hooks: a hook deny always wins; a hook ask turns allow
//! into ask; a hook allow turns ask into allow, unless an enforced layer's rule asked. Last,
//! `always_ask` turns any allow into ask, so only an explicit approval runs such a call.

use std::sync::Arc;

use serde::Serialize;

use super::rule::{RuleDecision, RuleReason};
use super::rules::RuleSet;
use crate::model::Decision;
use crate::model::rule::Enforcement;

/// What a PreToolUse hook said about permission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookVote {
    /// The hook's name.
    pub hook: Arc<str>,
    /// Its decision.
    pub decision: Decision,
    /// Its reason, if it gave one.
    pub reason: Option<String>,
}

/// One reason behind a permission.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Reason {
    /// A rule matched.
    Rule {
        /// Its name.
        name: String,
        /// Its decision.
        decision: Decision,
        /// Its priority.
        priority: i32,
        /// Whether an enforced layer defines it.
        enforced: bool,
        /// Its reason.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Where it is defined.
        #[serde(skip_serializing_if = "Option::is_none")]
        location: Option<String>,
        /// What its matchers found.
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// The part of the command line it decided, when the line has several.
        #[serde(skip_serializing_if = "Option::is_none")]
        part: Option<String>,
    },
    /// No rule matched; the contract's default applied.
    Default {
        /// The default.
        decision: Decision,
        /// The part of the command line, when the line has several.
        #[serde(skip_serializing_if = "Option::is_none")]
        part: Option<String>,
    },
    /// What the rules cannot judge, and is asked: a command line that does not parse, a
    /// command chosen at run time, a file only known when it runs.
    Analysis {
        /// The decision.
        decision: Decision,
        /// Why.
        reason: String,
        /// The part of the command line it is about.
        #[serde(skip_serializing_if = "Option::is_none")]
        part: Option<String>,
    },
    /// A hook voted.
    Hook {
        /// Its name.
        name: String,
        /// Its decision.
        decision: Decision,
        /// Its reason.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The contract says `always_ask`.
    AlwaysAsk,
    /// The project's policies are not trusted, so what in them could loosen this decision
    /// was ignored; says how to trust them. Added to every decision other than allow.
    Untrusted {
        /// The project root.
        project: String,
        /// The sentence for humans, with the command that trusts the project.
        reason: String,
    },
    /// An ask was answered: by the approver (`approver`), a `PermissionRequest` hook
    /// (`hook:<name>`), the approval timeout (`expiry`) or the lack of an approver
    /// (`no_client`). Always the last reason of a call that asked.
    Approval {
        /// Who answered.
        by: String,
        /// The answer.
        decision: Decision,
        /// The reason or feedback given with it.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl Reason {
    /// The part of a command line this reason is about, when the line was decided part by
    /// part.
    pub fn part(&self) -> Option<&str> {
        match self {
            Reason::Rule { part, .. }
            | Reason::Default { part, .. }
            | Reason::Analysis { part, .. } => part.as_deref(),
            Reason::Hook { .. }
            | Reason::AlwaysAsk
            | Reason::Untrusted { .. }
            | Reason::Approval { .. } => None,
        }
    }

    /// A short label: `rule:<name>`, `default`, `analysis`, `hook:<name>`, `always_ask`,
    /// `untrusted`, `approval:<who>`.
    pub fn label(&self) -> String {
        match self {
            Reason::Rule { name, .. } => format!("rule:{name}"),
            Reason::Default { .. } => "default".to_owned(),
            Reason::Analysis { .. } => "analysis".to_owned(),
            Reason::Hook { name, .. } => format!("hook:{name}"),
            Reason::AlwaysAsk => "always_ask".to_owned(),
            Reason::Untrusted { .. } => "untrusted".to_owned(),
            Reason::Approval { by, .. } => format!("approval:{by}"),
        }
    }
}

/// The permission of one call, with its reasons (the ones that decided first).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Permission {
    /// allow, ask or deny.
    pub decision: Decision,
    /// Why, in the order they applied.
    pub reasons: Vec<Reason>,
    /// The `warn` and `audit` rules that would change the decision once enforced.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub staged: Vec<Staged>,
}

/// A `warn` or `audit` rule that would change a call's decision once enforced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Staged {
    /// The rule.
    pub rule: String,
    /// `warn` or `audit`.
    pub enforcement: Enforcement,
    /// The decision the call would get with the staged rules enforced.
    pub decision: Decision,
    /// The rule's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where the rule is defined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// The staged rules behind `would` (the permission with the `warn` and `audit` rules of
/// `rules` enforced) when it differs from `actual`; none when the decision is the same.
pub fn staged(actual: &Permission, would: &Permission, rules: &RuleSet) -> Vec<Staged> {
    if actual.decision == would.decision {
        return Vec::new();
    }
    let mut found: Vec<Staged> = Vec::new();
    for reason in &would.reasons {
        let Reason::Rule {
            name,
            decision,
            reason,
            location,
            ..
        } = reason
        else {
            continue;
        };
        let Some(rule) = rules.get(name) else {
            continue;
        };
        if *decision == would.decision
            && rule.enforcement != Enforcement::Enforce
            && !found.iter().any(|s| &s.rule == name)
        {
            found.push(Staged {
                rule: name.clone(),
                enforcement: rule.enforcement,
                decision: would.decision,
                reason: reason.clone(),
                location: location.clone(),
            });
        }
    }
    found
}

impl Permission {
    /// The reason the model is told when this permission denies: the deciding hook's or
    /// rule's reason, if one was given.
    pub fn denial_reason(&self) -> Option<&str> {
        self.reasons.iter().find_map(|reason| match reason {
            Reason::Hook {
                decision: Decision::Deny,
                reason,
                ..
            } => reason.as_deref(),
            Reason::Rule {
                decision: Decision::Deny,
                reason,
                ..
            } => reason.as_deref(),
            Reason::Rule { .. }
            | Reason::Hook { .. }
            | Reason::Default { .. }
            | Reason::Analysis { .. }
            | Reason::AlwaysAsk
            | Reason::Untrusted { .. }
            | Reason::Approval { .. } => None,
        })
    }

    /// What produced a denial: the denying hook, else the denying rule, else the default.
    pub fn denial_source(&self) -> Option<&Reason> {
        self.reasons
            .iter()
            .find(|r| {
                matches!(
                    r,
                    Reason::Hook {
                        decision: Decision::Deny,
                        ..
                    }
                )
            })
            .or_else(|| {
                self.reasons.iter().find(|r| {
                    matches!(
                        r,
                        Reason::Rule {
                            decision: Decision::Deny,
                            ..
                        }
                    )
                })
            })
            .or_else(|| {
                self.reasons.iter().find(|r| {
                    matches!(
                        r,
                        Reason::Default {
                            decision: Decision::Deny,
                            ..
                        }
                    )
                })
            })
    }
}

/// Combines the rules' decision, the hooks' votes and `always_ask`.
pub fn combine(rules: RuleDecision, hooks: &[HookVote], always_ask: bool) -> Permission {
    let mut reasons: Vec<Reason> = rules
        .reasons
        .into_iter()
        .map(|reason| match reason {
            RuleReason::Rule(rule) => Reason::Rule {
                name: rule.name.to_string(),
                decision: rule.decision,
                priority: rule.priority,
                enforced: rule.enforced,
                reason: rule.reason,
                location: rule.location.as_deref().map(str::to_owned),
                detail: rule.detail,
                part: rule.part,
            },
            RuleReason::Default { decision, part } => Reason::Default { decision, part },
            RuleReason::Analysis {
                decision,
                part,
                message,
            } => Reason::Analysis {
                decision,
                reason: message,
                part,
            },
        })
        .collect();
    let mut decision = rules.decision;
    let hook_reason = |vote: &HookVote| Reason::Hook {
        name: vote.hook.to_string(),
        decision: vote.decision,
        reason: vote.reason.clone(),
    };
    if let Some(deny) = hooks.iter().find(|vote| vote.decision == Decision::Deny) {
        decision = Decision::Deny;
        reasons.insert(0, hook_reason(deny));
    } else {
        if decision == Decision::Allow
            && let Some(ask) = hooks.iter().find(|vote| vote.decision == Decision::Ask)
        {
            decision = Decision::Ask;
            reasons.insert(0, hook_reason(ask));
        }
        // An ask of an enforced layer's rule holds against a hook's allow, as against the
        // allow rules of other layers.
        let enforced_ask = reasons.iter().any(|reason| {
            matches!(
                reason,
                Reason::Rule {
                    decision: Decision::Ask,
                    enforced: true,
                    ..
                }
            )
        });
        if decision == Decision::Ask
            && !enforced_ask
            && let Some(allow) = hooks.iter().find(|vote| vote.decision == Decision::Allow)
            && !hooks.iter().any(|vote| vote.decision == Decision::Ask)
        {
            decision = Decision::Allow;
            reasons.insert(0, hook_reason(allow));
        }
    }
    if always_ask && decision == Decision::Allow {
        decision = Decision::Ask;
        reasons.insert(0, Reason::AlwaysAsk);
    }
    Permission {
        decision,
        reasons,
        staged: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RuleName;
    use crate::policy::rule::MatchedRule;

    fn rules(decision: Decision) -> RuleDecision {
        RuleDecision {
            decision,
            reasons: vec![RuleReason::Rule(MatchedRule {
                part: None,
                name: RuleName::new("r"),
                decision,
                priority: 0,
                enforced: false,
                reason: Some("because".into()),
                location: None,
                detail: None,
            })],
        }
    }

    fn vote(decision: Decision) -> HookVote {
        HookVote {
            hook: Arc::from("h"),
            decision,
            reason: Some(format!("hook says {decision}")),
        }
    }

    #[test]
    fn table() {
        use Decision::{Allow as A, Ask as Q, Deny as D};
        // (rules, hook votes, always_ask) → decision
        let cases: &[(Decision, &[Decision], bool, Decision)] = &[
            (A, &[], false, A),
            (A, &[], true, Q),
            (Q, &[], false, Q),
            (D, &[], false, D),
            (A, &[D], false, D),
            (A, &[Q], false, Q),
            (Q, &[A], false, A),
            (Q, &[A], true, Q),
            (D, &[A], false, D),
            (A, &[A], true, Q),
            (Q, &[A, Q], false, Q),
            (A, &[A, D], false, D),
        ];
        for (rule, hooks, always_ask, expected) in cases {
            let votes: Vec<_> = hooks.iter().map(|d| vote(*d)).collect();
            let got = combine(rules(*rule), &votes, *always_ask);
            assert_eq!(
                got.decision, *expected,
                "rules {rule}, hooks {hooks:?}, always_ask {always_ask}"
            );
        }
    }

    #[test]
    fn hook_allow_cannot_lift_an_enforced_ask() {
        let mut enforced = rules(Decision::Ask);
        if let RuleReason::Rule(rule) = &mut enforced.reasons[0] {
            rule.enforced = true;
        }
        let got = combine(enforced, &[vote(Decision::Allow)], false);
        assert_eq!(got.decision, Decision::Ask);
        let got = combine(rules(Decision::Ask), &[vote(Decision::Allow)], false);
        assert_eq!(got.decision, Decision::Allow);
    }

    #[test]
    fn hook_allow_cannot_undo_always_ask() {
        // The ask from always_ask is applied after the hooks, so a hook allow cannot skip it.
        let got = combine(rules(Decision::Allow), &[vote(Decision::Allow)], true);
        assert_eq!(got.decision, Decision::Ask);
        assert_eq!(got.reasons[0], Reason::AlwaysAsk);
    }

    #[test]
    fn denial_reason_prefers_the_hook_then_the_rule() {
        let got = combine(rules(Decision::Deny), &[], false);
        assert_eq!(got.denial_reason(), Some("because"));
        let got = combine(rules(Decision::Allow), &[vote(Decision::Deny)], false);
        assert_eq!(got.denial_reason(), Some("hook says deny"));
        let default = RuleDecision {
            decision: Decision::Deny,
            reasons: vec![RuleReason::Default {
                decision: Decision::Deny,
                part: None,
            }],
        };
        let got = combine(default, &[], false);
        assert_eq!(got.denial_reason(), None);
        assert_eq!(
            got.denial_source(),
            Some(&Reason::Default {
                decision: Decision::Deny,
                part: None,
            })
        );
    }
}
