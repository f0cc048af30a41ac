//! Rules matched together: of a tool's rules, those whose only matcher is one `regex` (or
//! one `glob`) list over the same field form a group, whose patterns are matched as one
//! automaton, once per decision, instead of rule after rule.
//!
//! A policy converted from another tool can hold thousands of such rules on one tool (one
//! regex per command it allows or denies). Deciding a call walks a tool's rules in
//! precedence order ([`ToolRules::visit`]); with groups, it visits the other rules one by
//! one and, of each group, only the members whose patterns match the field's value (a member
//! whose patterns do not match cannot hold), so the cost of a group is one automaton search
//! plus the members that match. A member that matches is answered as its own matcher would
//! answer (some pattern matches a string value), and its modes and `when` are checked as on
//! the one-by-one path.
//!
//! What a group cannot answer stays with each rule's own matcher: an array value (whose
//! semantics depend on the rule's mode), and members whose automaton cannot be built. A
//! group's automata (one per run of up to a thousand members) are built on first use; one
//! that exceeds a size limit is split in halves, down to single rules, and a rule whose own patterns exceed it fails closed on its
//! own path, as it did before groups. An automaton within the limits has every subset of its
//! patterns within them, so the group never answers for a rule whose own matcher would fail
//! closed.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::OnceLock;

use globset::GlobSet;
use regex::{RegexSet, RegexSetBuilder};
use serde_json::Value;

use super::glob::build_parsed_glob_set;
use super::matcher::PatternListKind;
use super::rule::CompiledRule;

/// The fewest rules that make a group: one rule gains nothing from a union.
const MIN_MEMBERS: usize = 2;

/// The most rules one automaton covers. One automaton over 10 000 patterns was measured
/// thousands of times slower a search (its lazy DFA's states, which track every pattern,
/// most likely outgrow its cache); automata over a thousand stay fast, and most are ruled
/// out by one quick search (`is_match`).
/// (Four in unit tests, so that the property test's groups span several automata.)
const PART_MEMBERS: u32 = if cfg!(test) { 4 } else { 1024 };

/// The cache each regex automaton of a group may fill (its states hold every pattern's
/// progress); the default is sized for one regex.
const PART_DFA_CACHE: usize = 16 << 20;

/// The rules of one tool, in precedence order, with its groups.
#[derive(Clone, Debug)]
pub(crate) struct ToolRules {
    // INVARIANT: sorted by precedence, ties in definition order (see `RuleSet::new`).
    /// Every rule that can apply to the tool (indexes into the set's rules).
    order: Box<[u32]>,
    /// Positions in `order` of the rules visited one by one (in no group), ascending; empty
    /// when the tool has no group (every rule is then walked from `order`).
    walked: Box<[u32]>,
    /// The groups, by the position of their first member.
    groups: Box<[Group]>,
    /// The rules of enforced layers that ask (indexes into the set's rules), in precedence
    /// order: an allow of a later layer is checked against them alone, not every rule.
    enforced_asks: Box<[u32]>,
}

/// Rules with one pattern list of the same kind over the same selector.
#[derive(Clone, Debug)]
struct Group {
    kind: PatternListKind,
    /// Positions in `order` of the members, ascending.
    members: Box<[u32]>,
    /// The automata over the members' patterns, built on first use.
    union: OnceLock<Union>,
}

/// A group's patterns compiled: automata over runs of consecutive members, and the members
/// whose own patterns cannot be built.
#[derive(Clone, Debug, Default)]
struct Union {
    parts: Vec<Part>,
    /// Members (indexes into `Group::members`) left to their own matcher.
    unbuilt: Vec<u32>,
}

/// One automaton over the patterns of consecutive members.
#[derive(Clone, Debug)]
struct Part {
    automaton: Automaton,
    /// For each pattern of the automaton, the member it belongs to.
    owners: Box<[u32]>,
    /// The members it covers (indexes into `Group::members`).
    members: std::ops::Range<u32>,
}

#[derive(Clone, Debug)]
enum Automaton {
    Regex(RegexSet),
    Glob(GlobSet),
}

impl Automaton {
    /// Built as a rule's own matcher builds its list (see `matcher`), so that each pattern
    /// means the same; `None` when it exceeds a size limit (the patterns already parse).
    fn build(kind: PatternListKind, patterns: &[String]) -> Option<Self> {
        match kind {
            PatternListKind::Regex => RegexSetBuilder::new(patterns)
                .dfa_size_limit(PART_DFA_CACHE)
                .build()
                .ok()
                .map(Self::Regex),
            PatternListKind::Glob => build_parsed_glob_set(patterns, false, false)
                .ok()
                .map(Self::Glob),
        }
    }

    /// Adds the indexes of the patterns that match `text` to `found`.
    fn matches_into(&self, text: &str, found: &mut Vec<usize>) {
        match self {
            // Most texts match none of a part's patterns: ask the quick question first.
            Self::Regex(set) => {
                if set.is_match(text) {
                    found.extend(set.matches(text).iter());
                }
            }
            Self::Glob(set) => found.extend(set.matches(text)),
        }
    }
}

impl ToolRules {
    /// Indexes a tool's rules, `order` already in precedence order, and groups those whose
    /// only matcher is one pattern list.
    pub(crate) fn new(order: Vec<u32>, rules: &[CompiledRule]) -> Self {
        let mut by_list: HashMap<(&str, PatternListKind), Vec<u32>> = HashMap::new();
        for (position, &index) in order.iter().enumerate() {
            let list = rules[index as usize]
                .matchers
                .as_ref()
                .and_then(|matchers| matchers.pattern_list());
            if let Some((selector, kind, _)) = list {
                by_list
                    .entry((selector.as_ref(), kind))
                    .or_default()
                    .push(position as u32);
            }
        }
        let mut groups: Vec<Group> = by_list
            .into_iter()
            .filter(|(_, members)| members.len() >= MIN_MEMBERS)
            .map(|((_, kind), members)| Group {
                kind,
                members: members.into_boxed_slice(),
                union: OnceLock::new(),
            })
            .collect();
        groups.sort_by_key(|group| group.members[0]);
        let walked = if groups.is_empty() {
            Box::default()
        } else {
            let mut grouped = vec![false; order.len()];
            for group in &groups {
                for &position in &group.members {
                    grouped[position as usize] = true;
                }
            }
            (0..order.len() as u32)
                .filter(|&position| !grouped[position as usize])
                .collect()
        };
        let enforced_asks = order
            .iter()
            .copied()
            .filter(|&index| {
                let rule = &rules[index as usize];
                rule.origin.enforced && rule.decision == crate::model::Decision::Ask
            })
            .collect();
        Self {
            order: order.into_boxed_slice(),
            walked,
            groups: groups.into_boxed_slice(),
            enforced_asks,
        }
    }

    /// The rules of enforced layers that ask, in precedence order (indexes into the set's
    /// rules).
    pub(crate) fn enforced_asks(&self) -> &[u32] {
        &self.enforced_asks
    }

    /// The same rules, each visited one by one (no group): the reference the groups are
    /// tested against.
    #[cfg(test)]
    pub(crate) fn without_groups(&self) -> Self {
        Self {
            order: self.order.clone(),
            walked: Box::default(),
            groups: Box::default(),
            enforced_asks: self.enforced_asks.clone(),
        }
    }

    /// How many rules each group holds, by first member.
    #[cfg(test)]
    pub(crate) fn group_sizes(&self) -> Vec<usize> {
        self.groups
            .iter()
            .map(|group| group.members.len())
            .collect()
    }

    /// Every rule that can apply to the tool (indexes into the set's rules), in precedence
    /// order.
    pub(crate) fn order(&self) -> &[u32] {
        &self.order
    }

    /// The rules a decision on `input` must consider, in precedence order, each with
    /// whether its matchers are already known to hold (a group member whose patterns
    /// match); the others are asked themselves. Group members that cannot hold are skipped.
    pub(crate) fn visit<'a>(
        &'a self,
        rules: &'a [CompiledRule],
        input: &'a Value,
    ) -> impl Iterator<Item = (&'a CompiledRule, bool)> + 'a {
        // Most tools have no group: their rules are walked as they are.
        let plain = self.groups.is_empty().then(|| {
            self.order
                .iter()
                .map(move |&index| (&rules[index as usize], false))
        });
        let merged = (!self.groups.is_empty()).then(|| {
            let visit = Visit {
                tool: self,
                rules,
                input,
                next_walked: 0,
                next_group: 0,
                pending: BinaryHeap::new(),
            };
            visit.map(move |(position, known)| (self.rule(rules, position), known))
        });
        plain
            .into_iter()
            .flatten()
            .chain(merged.into_iter().flatten())
    }

    /// The rule at `position` in precedence order.
    // INVARIANT: positions index `order`, and `order` indexes the set's rules.
    fn rule<'a>(&self, rules: &'a [CompiledRule], position: u32) -> &'a CompiledRule {
        &rules[self.order[position as usize] as usize]
    }
}

/// The merge, in precedence order, of the rules visited one by one and the candidates of
/// each group, a group being matched when the walk reaches its first member (a decision
/// that stops earlier never searches it).
struct Visit<'a> {
    tool: &'a ToolRules,
    rules: &'a [CompiledRule],
    input: &'a Value,
    next_walked: usize,
    next_group: usize,
    /// Candidates of the groups reached: (position, matchers known to hold).
    pending: BinaryHeap<Reverse<(u32, bool)>>,
}

impl Iterator for Visit<'_> {
    type Item = (u32, bool);

    fn next(&mut self) -> Option<(u32, bool)> {
        loop {
            let walked = self.tool.walked.get(self.next_walked).copied();
            let pending = self.pending.peek().map(|Reverse((position, _))| *position);
            let next = match (walked, pending) {
                (Some(w), Some(p)) => Some(w.min(p)),
                (w, p) => w.or(p),
            };
            // Positions are distinct: a rule is in at most one group, or walked.
            if let Some(group) = self.tool.groups.get(self.next_group)
                && next.is_none_or(|next| group.members[0] < next)
            {
                self.next_group += 1;
                group.candidates(self.tool, self.rules, self.input, &mut self.pending);
                continue;
            }
            let next = next?;
            if walked == Some(next) {
                self.next_walked += 1;
                return Some((next, false));
            }
            return self.pending.pop().map(|Reverse(item)| item);
        }
    }
}

impl Group {
    /// Adds to `pending` the members that can hold for `input`.
    fn candidates(
        &self,
        tool: &ToolRules,
        rules: &[CompiledRule],
        input: &Value,
        pending: &mut BinaryHeap<Reverse<(u32, bool)>>,
    ) {
        let union = self.union.get_or_init(|| self.build(tool, rules));
        let position = |member: u32| self.members[member as usize];
        for &member in &union.unbuilt {
            pending.push(Reverse((position(member), false)));
        }
        // Every member reads the same selector.
        let value = tool
            .rule(rules, self.members[0])
            .matchers
            .as_ref()
            .and_then(|matchers| matchers.first_value(input));
        match value {
            Some(Value::String(text)) => {
                let mut found = Vec::new();
                let mut matched: Vec<u32> = Vec::new();
                for part in &union.parts {
                    found.clear();
                    part.automaton.matches_into(text, &mut found);
                    matched.extend(found.iter().map(|&pattern| part.owners[pattern]));
                }
                matched.sort_unstable();
                matched.dedup();
                pending.extend(matched.into_iter().map(|m| Reverse((position(m), true))));
            }
            // All or any elements, by the rule's mode: each member judges for itself.
            Some(Value::Array(_)) => {
                for part in &union.parts {
                    pending.extend(part.members.clone().map(|m| Reverse((position(m), false))));
                }
            }
            // A missing field, or one that is not a string: no pattern list holds.
            None | Some(_) => {}
        }
    }

    /// Builds the automata over the members' patterns, in runs of at most
    /// [`PART_MEMBERS`], halving a run whose automaton exceeds a size limit.
    fn build(&self, tool: &ToolRules, rules: &[CompiledRule]) -> Union {
        let lists: Vec<&[String]> = self
            .members
            .iter()
            .map(|&position| {
                tool.rule(rules, position)
                    .matchers
                    .as_ref()
                    .and_then(|matchers| matchers.pattern_list())
                    .map_or(&[][..], |(_, _, patterns)| patterns)
            })
            .collect();
        let mut union = Union::default();
        let members = lists.len() as u32;
        for start in (0..members).step_by(PART_MEMBERS as usize) {
            let end = members.min(start + PART_MEMBERS);
            self.build_run(&lists, start..end, &mut union);
        }
        union
    }

    fn build_run(&self, lists: &[&[String]], run: std::ops::Range<u32>, union: &mut Union) {
        let mut patterns = Vec::new();
        let mut owners = Vec::new();
        for member in run.clone() {
            for pattern in lists[member as usize] {
                patterns.push(pattern.clone());
                owners.push(member);
            }
        }
        match Automaton::build(self.kind, &patterns) {
            Some(automaton) => union.parts.push(Part {
                automaton,
                owners: owners.into_boxed_slice(),
                members: run,
            }),
            None if run.len() == 1 => union.unbuilt.push(run.start),
            None => {
                let middle = run.start + (run.end - run.start) / 2;
                self.build_run(lists, run.start..middle, union);
                self.build_run(lists, middle..run.end, union);
            }
        }
    }
}
