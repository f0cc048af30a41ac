//! One compiled rule (SPEC §7.1): its tool list resolved to canonical tools, its argument
//! matchers compiled once, whether it applies to a call, and the decision with reasons that
//! matching rules give — for a whole call or for one part of a command line.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use globset::{Glob, GlobSetBuilder};
use indexmap::IndexMap;
use serde_json::Value;

use super::commands::CommandTable;
use super::matcher::{CompiledArgMatchers, MatchOutcome, ParseCache, PatternError};
use super::mode::MatchMode;
use super::path::MatchContext;
use crate::model::resolved::ResolvedConcurrency;
use crate::model::rule::{Enforcement, Rule, RuleWhen};
use crate::model::{Decision, ModeName, RuleName, ToolName};

/// What the rule compiler needs to know about the tools of the policy set.
#[derive(Clone, Debug, Default)]
pub struct ToolNames {
    /// Canonical names, in definition order.
    pub canonical: Vec<ToolName>,
    /// Alias → canonical name.
    pub aliases: HashMap<String, ToolName>,
    /// Names and aliases → canonical name; asked on every call with the name the model
    /// wrote, hence a fast (seeded) hash.
    by_name: HashMap<String, ToolName, foldhash::fast::RandomState>,
    /// Tool-name globs of the set → the tools each matches (canonical names first, in
    /// definition order, then those reached through an alias), built by
    /// [`ToolNames::index_globs`] with one `GlobSet` for all globs.
    globs: HashMap<String, Vec<ToolName>, foldhash::fast::RandomState>,
}

impl ToolNames {
    /// Indexes canonical names and aliases.
    pub fn new(canonical: Vec<ToolName>, aliases: HashMap<String, ToolName>) -> Self {
        let mut by_name: HashMap<String, ToolName, _> = canonical
            .iter()
            .map(|tool| (tool.as_str().to_owned(), tool.clone()))
            .collect();
        for (alias, tool) in &aliases {
            by_name.entry(alias.clone()).or_insert_with(|| tool.clone());
        }
        Self {
            canonical,
            aliases,
            by_name,
            globs: HashMap::default(),
        }
    }

    /// Matches every tool-name glob of the set (rules' and hooks' `tools`) at once: one
    /// `GlobSet` asked once per tool name and alias, instead of each glob tried against every
    /// tool (thousands of `mcp_server7_*` rules over thousands of tools were quadratic).
    /// Globs that do not compile are left out; [`resolve_tools`] reports them.
    pub fn index_globs<'a>(&mut self, patterns: impl IntoIterator<Item = &'a str>) {
        let mut globs: Vec<&str> = Vec::new();
        let mut builder = GlobSetBuilder::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for pattern in patterns {
            if is_glob(pattern)
                && !self.globs.contains_key(pattern)
                && seen.insert(pattern)
                && let Ok(glob) = Glob::new(pattern)
            {
                builder.add(glob);
                globs.push(pattern);
            }
        }
        if globs.is_empty() {
            return;
        }
        let Ok(set) = builder.build() else { return };
        let mut matched: Vec<Vec<ToolName>> = vec![Vec::new(); globs.len()];
        let mut hits = Vec::new();
        for tool in &self.canonical {
            set.matches_into(tool.as_str(), &mut hits);
            for &index in &hits {
                matched[index].push(tool.clone());
            }
        }
        for (alias, tool) in &self.aliases {
            set.matches_into(alias.as_str(), &mut hits);
            for &index in &hits {
                matched[index].push(tool.clone());
            }
        }
        for (pattern, tools) in globs.into_iter().zip(matched) {
            self.globs.insert(pattern.to_owned(), tools);
        }
    }

    /// The canonical tool a name or alias refers to. Names are case-sensitive: `bash` is not
    /// `Bash`, so a differently cased name is an unknown tool, never a way around a rule.
    pub fn resolve(&self, name: &str) -> Option<ToolName> {
        self.canonical_of(name).cloned()
    }

    /// Like [`ToolNames::resolve`], borrowing the canonical name.
    pub fn canonical_of(&self, name: &str) -> Option<&ToolName> {
        self.by_name.get(name)
    }
}

/// Where a rule comes from, for reasons and `explain`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleOrigin {
    /// Position of the rule in the effective rule list.
    pub index: usize,
    /// Whether its layer is enforced.
    pub enforced: bool,
    /// `file:line:column` of its definition.
    pub location: Option<Arc<str>>,
}

/// A compiled rule.
#[derive(Clone, Debug)]
pub struct CompiledRule {
    /// Its name.
    pub name: RuleName,
    /// Its decision.
    pub decision: Decision,
    /// Its priority.
    pub priority: i32,
    /// Why, for the model and for humans.
    pub reason: Option<String>,
    /// Where it comes from.
    pub origin: RuleOrigin,
    /// The tools it applies to (canonical).
    pub tools: Vec<ToolName>,
    /// The tool entries as written.
    pub tool_patterns: Vec<String>,
    /// Modes it is limited to.
    pub modes: Option<Vec<ModeName>>,
    /// Contract flags it requires.
    pub when: Option<RuleWhen>,
    /// Its argument matchers.
    pub matchers: Option<CompiledArgMatchers>,
    /// How it takes effect: only `enforce` rules decide.
    pub enforcement: Enforcement,
}

/// The facts of one call a rule looks at.
#[derive(Clone, Copy, Debug)]
pub struct CallFacts<'a> {
    /// Canonical tool.
    pub tool: &'a ToolName,
    /// The (normalised, validated) input.
    pub input: &'a Value,
    /// Active modes.
    pub modes: &'a [ModeName],
    /// The contract's flags, modes applied.
    pub flags: &'a ResolvedConcurrency,
}

impl CompiledRule {
    /// The matcher mode of this rule: allow rules need every part of an argument to match;
    /// ask and deny rules need one.
    pub fn match_mode(&self) -> MatchMode {
        match self.decision {
            Decision::Allow => MatchMode::All,
            Decision::Ask | Decision::Deny => MatchMode::Any,
        }
    }

    /// Whether the rule matches the call (tool already known to be covered), with the
    /// matcher detail when it has argument matchers.
    #[cfg(test)]
    pub fn evaluate(
        &self,
        call: &CallFacts<'_>,
        ctx: &MatchContext,
    ) -> (bool, Option<MatchOutcome>) {
        self.evaluate_with_cache(call, ctx, &mut ParseCache::default())
    }

    /// Like [`evaluate`](Self::evaluate), reading command lines with `commands`.
    pub fn evaluate_in(
        &self,
        call: &CallFacts<'_>,
        ctx: &MatchContext,
        commands: &Arc<CommandTable>,
    ) -> (bool, Option<MatchOutcome>) {
        self.evaluate_with_cache(call, ctx, &mut ParseCache::with_table(Arc::clone(commands)))
    }

    /// Like [`evaluate`](Self::evaluate), reusing the command lines of this call already
    /// parsed by other rules.
    pub fn evaluate_with_cache(
        &self,
        call: &CallFacts<'_>,
        ctx: &MatchContext,
        cache: &mut ParseCache,
    ) -> (bool, Option<MatchOutcome>) {
        if !self.applies(call) {
            return (false, None);
        }
        match &self.matchers {
            None => (true, None),
            Some(matchers) => {
                let outcome =
                    matchers.matches_with_cache(call.input, ctx, self.match_mode(), cache);
                (outcome.matched, Some(outcome))
            }
        }
    }

    /// Whether the rule matches the call (tool already known to be covered), without the
    /// matcher detail. Always equal to `evaluate_with_cache(…).0`.
    pub fn holds_with_cache(
        &self,
        call: &CallFacts<'_>,
        ctx: &MatchContext,
        cache: &mut ParseCache,
    ) -> bool {
        self.applies(call)
            && self.matchers.as_ref().is_none_or(|matchers| {
                matchers.holds_with_cache(call.input, ctx, self.match_mode(), cache)
            })
    }

    /// Whether the call's modes and flags satisfy the rule's `modes` and `when` (its
    /// matchers aside).
    pub(super) fn applies(&self, call: &CallFacts<'_>) -> bool {
        self.modes
            .as_ref()
            .is_none_or(|modes| modes.iter().any(|mode| call.modes.contains(mode)))
            && self
                .when
                .as_ref()
                .is_none_or(|when| when_holds(when, call.flags))
    }

    /// The precedence key: enforced denies first, then higher priority, then stricter.
    pub(super) fn precedence(&self) -> (bool, std::cmp::Reverse<i32>, std::cmp::Reverse<Decision>) {
        let enforced_deny = self.origin.enforced && self.decision == Decision::Deny;
        (
            !enforced_deny,
            std::cmp::Reverse(self.priority),
            std::cmp::Reverse(self.decision),
        )
    }
}

/// Whether the contract flags satisfy a rule's `when`.
pub fn when_holds(when: &RuleWhen, flags: &ResolvedConcurrency) -> bool {
    when.read_only.is_none_or(|v| v == flags.read_only)
        && when.destructive.is_none_or(|v| v == flags.destructive)
        && when
            .concurrent_safe
            .is_none_or(|v| v == flags.concurrent_safe)
        && when
            .side_effect_scope
            .as_ref()
            .is_none_or(|scopes| scopes.contains(&flags.side_effect_scope))
}

/// Why a rule did not compile.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleError {
    /// The rule has no decision (no layer gave one).
    MissingDecision,
    /// A tool name or alias that no contract defines.
    UnknownTool {
        /// Index in the rule's `tools`.
        index: usize,
        /// The name.
        name: String,
    },
    /// A tool glob that does not compile.
    BadToolGlob {
        /// Index in the rule's `tools`.
        index: usize,
        /// The glob's error.
        message: String,
    },
    /// A mode that is not declared.
    UnknownMode {
        /// Index in the rule's `modes`.
        index: usize,
        /// The name.
        name: String,
    },
    /// An argument matcher that does not compile.
    Pattern(PatternError),
}

fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}

/// Resolves tool names, aliases and globs (`mcp__github__*`, `*`) to canonical tools, in
/// definition order without repeats; unknown names and bad globs are reported by index.
pub fn resolve_tools(patterns: &[String], tools: &ToolNames) -> (Vec<ToolName>, Vec<RuleError>) {
    // In order of first mention; a set beside it keeps a glob that matches every one of
    // thousands of tools linear.
    let mut covered: Vec<ToolName> = Vec::new();
    let mut seen: HashSet<ToolName, foldhash::fast::RandomState> = HashSet::default();
    let mut errors = Vec::new();
    let mut add = |tool: &ToolName, covered: &mut Vec<ToolName>| {
        if seen.insert(tool.clone()) {
            covered.push(tool.clone());
        }
    };
    for (index, pattern) in patterns.iter().enumerate() {
        if let Some(matched) = tools.globs.get(pattern.as_str()) {
            for tool in matched {
                add(tool, &mut covered);
            }
        } else if is_glob(pattern) {
            match Glob::new(pattern) {
                Ok(glob) => {
                    let mut builder = GlobSetBuilder::new();
                    builder.add(glob);
                    let Ok(set) = builder.build() else { continue };
                    for tool in &tools.canonical {
                        if set.is_match(tool.as_str()) {
                            add(tool, &mut covered);
                        }
                    }
                    for (alias, tool) in &tools.aliases {
                        if set.is_match(alias) {
                            add(tool, &mut covered);
                        }
                    }
                }
                Err(err) => errors.push(RuleError::BadToolGlob {
                    index,
                    message: err.kind().to_string(),
                }),
            }
        } else {
            match tools.resolve(pattern) {
                Some(tool) => add(&tool, &mut covered),
                None => errors.push(RuleError::UnknownTool {
                    index,
                    name: pattern.clone(),
                }),
            }
        }
    }
    // The list lives as long as the snapshot: most rules name one tool, and a `Vec` grown
    // by `push` keeps room for four.
    covered.shrink_to_fit();
    (covered, errors)
}

/// Compiles one rule against the tools and modes of the set.
pub fn compile_rule(
    rule: &Rule,
    origin: RuleOrigin,
    tools: &ToolNames,
    modes: &IndexMap<String, crate::model::file::Mode>,
) -> Result<CompiledRule, Vec<RuleError>> {
    let mut errors = Vec::new();
    let decision = rule.decision;
    if decision.is_none() {
        errors.push(RuleError::MissingDecision);
    }
    let patterns = rule.tools.clone().unwrap_or_else(|| vec!["*".to_owned()]);
    let (covered, tool_errors) = resolve_tools(&patterns, tools);
    errors.extend(tool_errors);
    let mut rule_modes = None;
    if let Some(names) = &rule.modes {
        let mut list = Vec::new();
        for (index, name) in names.iter().enumerate() {
            if modes.contains_key(name) {
                list.push(ModeName::new(name.as_str()));
            } else {
                errors.push(RuleError::UnknownMode {
                    index,
                    name: name.clone(),
                });
            }
        }
        rule_modes = Some(list);
    }
    let matchers = match &rule.matchers {
        None => None,
        Some(map) => match CompiledArgMatchers::compile(map) {
            Ok(compiled) => Some(compiled),
            Err(bad) => {
                errors.extend(bad.into_iter().map(RuleError::Pattern));
                None
            }
        },
    };
    match decision {
        Some(decision) if errors.is_empty() => Ok(CompiledRule {
            name: RuleName::new(rule.name.as_str()),
            decision,
            priority: rule.priority.unwrap_or(0),
            reason: rule.reason.clone(),
            origin,
            tools: covered,
            tool_patterns: patterns,
            modes: rule_modes,
            when: rule.when.clone(),
            matchers,
            enforcement: rule.enforcement.unwrap_or_default(),
        }),
        _ => Err(errors),
    }
}

/// A rule that matched a call.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchedRule {
    /// The part of a command line it decided (`None`: the whole call).
    pub part: Option<String>,
    /// Its name.
    pub name: RuleName,
    /// Its decision.
    pub decision: Decision,
    /// Its priority.
    pub priority: i32,
    /// Whether it comes from an enforced layer.
    pub enforced: bool,
    /// Its reason.
    pub reason: Option<String>,
    /// `file:line:column` of its definition.
    pub location: Option<Arc<str>>,
    /// What its matchers found, when it has any.
    pub detail: Option<String>,
}

/// One reason behind the rules' decision.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleReason {
    /// A rule matched.
    Rule(MatchedRule),
    /// No rule matched (the call, or a part of its command line): the contract default.
    Default {
        /// The default.
        decision: Decision,
        /// The part of the command line, if the decision is about one.
        part: Option<String>,
    },
    /// What the rules cannot judge, and is asked: a command line that does not parse, a
    /// command chosen at run time, a file only known when it runs.
    Analysis {
        /// The decision (ask).
        decision: Decision,
        /// The part of the command line, if it is about one.
        part: Option<String>,
        /// Why.
        message: String,
    },
}

impl RuleReason {
    /// The matched rule, if this reason is one.
    pub fn rule(&self) -> Option<&MatchedRule> {
        match self {
            RuleReason::Rule(rule) => Some(rule),
            RuleReason::Default { .. } | RuleReason::Analysis { .. } => None,
        }
    }
}

/// The decision of the rules for one call.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleDecision {
    /// allow, ask or deny.
    pub decision: Decision,
    /// Why: the rules that decided (all matching rules of the winning precedence level), or
    /// the default; for a command line, those of every part, the deciding parts first.
    pub reasons: Vec<RuleReason>,
}

impl RuleDecision {
    /// The matched rules among the reasons.
    #[cfg(test)]
    pub fn rules(&self) -> impl Iterator<Item = &MatchedRule> {
        self.reasons.iter().filter_map(RuleReason::rule)
    }
}

/// The decision on one part of a call (or the whole call).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PartOutcome {
    pub decision: Decision,
    pub reasons: Vec<RuleReason>,
    /// A rule decided (not the default).
    pub by_rule: bool,
    /// The part does not take part in the decision (a wrapper judged through what it runs).
    pub neutral: bool,
}

impl PartOutcome {
    pub(crate) fn neutral() -> Self {
        Self {
            decision: Decision::Allow,
            reasons: Vec::new(),
            by_rule: false,
            neutral: true,
        }
    }

    pub(crate) fn analysis(part: Option<&str>, message: String) -> Self {
        Self::analyses(part, vec![message])
    }

    /// What cannot be known, with a reason per message: asked.
    pub(crate) fn analyses(part: Option<&str>, messages: Vec<String>) -> Self {
        let findings = messages
            .into_iter()
            .map(|message| (Decision::Ask, message))
            .collect();
        Self::findings(part, findings)
    }

    /// What an analysis found, each with its decision: the strictest decides.
    pub(crate) fn findings(part: Option<&str>, findings: Vec<(Decision, String)>) -> Self {
        Self {
            decision: findings
                .iter()
                .map(|(decision, _)| *decision)
                .max()
                .unwrap_or(Decision::Ask),
            reasons: findings
                .into_iter()
                .map(|(decision, message)| RuleReason::Analysis {
                    decision,
                    part: part.map(str::to_owned),
                    message,
                })
                .collect(),
            by_rule: false,
            neutral: false,
        }
    }

    /// Adds what cannot be known about this part: it asks at least.
    pub(crate) fn add_analysis(&mut self, part: &str, message: String) {
        self.raise(Decision::Ask);
        // The same finding reached twice (a file named two ways) is said once.
        let said = self.reasons.iter().any(|reason| {
            matches!(reason, RuleReason::Analysis { message: said, .. } if *said == message)
        });
        if said {
            return;
        }
        self.reasons.insert(
            0,
            RuleReason::Analysis {
                decision: Decision::Ask,
                part: Some(part.to_owned()),
                message,
            },
        );
    }

    /// Adds the decision on a file the part reads or writes (a deny or an ask by a rule).
    pub(crate) fn add_file_outcome(&mut self, part: &str, file: PartOutcome, how: String) {
        self.raise(file.decision);
        let reasons = file.reasons.into_iter().map(|reason| match reason {
            RuleReason::Rule(mut rule) => {
                rule.part = Some(part.to_owned());
                rule.detail = Some(match rule.detail {
                    Some(detail) => format!("{how}: {detail}"),
                    None => how.clone(),
                });
                RuleReason::Rule(rule)
            }
            other => other,
        });
        // The same rule on two candidate locations of one file is said once.
        let reasons: Vec<RuleReason> = reasons
            .filter(|reason| match reason {
                RuleReason::Rule(rule) => !self.reasons.iter().any(|known| {
                    known
                        .rule()
                        .is_some_and(|k| k.name == rule.name && k.part == rule.part)
                }),
                RuleReason::Default { .. } | RuleReason::Analysis { .. } => true,
            })
            .collect();
        self.reasons.splice(0..0, reasons);
    }

    fn raise(&mut self, decision: Decision) {
        if self.neutral {
            self.neutral = false;
            self.decision = decision;
            self.reasons.clear();
        } else if decision > self.decision {
            self.decision = decision;
        }
        self.by_rule = true;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_covered_once_in_order_of_first_mention() {
        let canonical: Vec<ToolName> = (0..500).map(|i| ToolName::new(format!("T{i}"))).collect();
        let aliases = HashMap::from([("short".to_owned(), ToolName::new("T7"))]);
        let tools = ToolNames::new(canonical.clone(), aliases);
        let patterns = ["T3", "short", "T*", "T3"].map(str::to_owned);
        let (covered, errors) = resolve_tools(&patterns, &tools);
        assert!(errors.is_empty());
        let mut expected = vec![ToolName::new("T3"), ToolName::new("T7")];
        expected.extend(
            canonical
                .into_iter()
                .filter(|tool| !matches!(tool.as_str(), "T3" | "T7")),
        );
        assert_eq!(covered, expected);
    }

    #[test]
    fn indexed_globs_resolve_like_each_glob_alone() {
        let canonical: Vec<ToolName> = (0..40)
            .map(|i| ToolName::new(format!("mcp_server{}_{}", i % 4, i)))
            .collect();
        let aliases = HashMap::from([
            ("s1".to_owned(), ToolName::new("mcp_server1_1")),
            (
                "mcp_server3_alias".to_owned(),
                ToolName::new("mcp_server0_0"),
            ),
        ]);
        let plain = ToolNames::new(canonical.clone(), aliases.clone());
        let mut indexed = ToolNames::new(canonical, aliases);
        let lists: Vec<Vec<String>> = vec![
            vec!["mcp_server3_*".into()],
            vec!["s1".into(), "mcp_server1_*".into()],
            vec!["*".into()],
            vec!["mcp_server[02]_*".into(), "mcp_server{1,3}_1*".into()],
            vec!["[".into(), "nope".into()],
        ];
        indexed.index_globs(lists.iter().flatten().map(String::as_str));
        assert_eq!(indexed.globs.len(), 5, "every valid glob is indexed once");
        for patterns in &lists {
            assert_eq!(
                resolve_tools(patterns, &indexed),
                resolve_tools(patterns, &plain),
                "{patterns:?}"
            );
        }
    }
}
