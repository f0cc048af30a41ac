//! Rule evaluation (SPEC §7.2): an index from tool to the rules that can apply to it,
//! already in precedence order, so that deciding a call walks a short list and stops at the
//! first precedence level that matches. Rules that are each one `regex` (or `glob`) list over
//! the same field are matched together (module `groups`). A call with a command line is
//! decided part by part by [`super::parts`], which asks this index about each part.

use std::collections::HashMap;
use std::sync::Arc;

use super::commands::CommandTable;
use super::groups::ToolRules;
use super::matcher::{CompiledArgMatchers, ParseCache};
use super::path::MatchContext;
use super::pattern::CommandKeys;
use super::rule::{CallFacts, CompiledRule, MatchedRule, PartOutcome, RuleReason};
use crate::model::rule::Enforcement;
use crate::model::{Decision, ToolName};

/// Rules by tool, looked up on every decision: a seeded fast hash (tool names are short).
type ToolIndex = HashMap<ToolName, ToolRules, foldhash::fast::RandomState>;

/// One command of a command line, judged on its own (see `policy::parts`).
pub(crate) struct LinePart<'a> {
    /// The command's text, named in the reasons; `None` when it is the whole line.
    pub label: Option<&'a str>,
    /// The command line.
    pub line: &'a str,
    /// What the command's command word is compared with.
    pub keys: CommandKeys<'a>,
}

/// Every rule of a snapshot, indexed by tool.
#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    rules: Vec<CompiledRule>,
    // INVARIANT: each tool's rules are sorted by `CompiledRule::precedence`, ties in
    // definition order.
    /// Per tool, its rules and the groups of those matched together (see [`super::groups`]).
    by_tool: ToolIndex,
    /// Per tool, the first rule that reads an argument as a command line (`shell`,
    /// `read_only`): such calls are decided part by part, by the line that rule reads.
    command_lines: HashMap<ToolName, u32, foldhash::fast::RandomState>,
    /// The command table the command lines are read with.
    commands: Arc<CommandTable>,
    /// Every rule deciding, `warn` and `audit` ones included; only when there are such.
    staged: Option<Box<RuleSet>>,
}

impl RuleSet {
    /// Indexes compiled rules, reading command lines with `commands`. Only `enforce` rules
    /// decide; when some rule is `warn` or `audit`, a second index holds every rule (see
    /// [`RuleSet::with_staged`]).
    pub fn new(rules: Vec<CompiledRule>, commands: Arc<CommandTable>) -> Self {
        let staged = rules
            .iter()
            .any(|rule| rule.enforcement != Enforcement::Enforce)
            .then(|| Box::new(Self::index(rules.clone(), Arc::clone(&commands), true)));
        Self {
            staged,
            ..Self::index(rules, commands, false)
        }
    }

    fn index(rules: Vec<CompiledRule>, commands: Arc<CommandTable>, with_staged: bool) -> Self {
        let decides = |rule: &CompiledRule| with_staged || rule.enforcement == Enforcement::Enforce;
        let mut by_tool: HashMap<ToolName, Vec<u32>> = HashMap::new();
        for (index, rule) in rules.iter().enumerate().filter(|(_, r)| decides(r)) {
            for tool in &rule.tools {
                by_tool.entry(tool.clone()).or_default().push(index as u32);
            }
        }
        let by_tool: ToolIndex = by_tool
            .into_iter()
            .map(|(tool, mut list)| {
                list.sort_by_key(|&i| rules[i as usize].precedence());
                let indexed = ToolRules::new(list, &rules);
                (tool, indexed)
            })
            .collect();
        let mut command_lines = HashMap::default();
        for (index, rule) in rules.iter().enumerate().filter(|(_, r)| decides(r)) {
            if rule
                .matchers
                .as_ref()
                .is_some_and(CompiledArgMatchers::reads_command_line)
            {
                for tool in &rule.tools {
                    command_lines.entry(tool.clone()).or_insert(index as u32);
                }
            }
        }
        Self {
            rules,
            by_tool,
            command_lines,
            commands,
            staged: None,
        }
    }

    /// The same rules with the `warn` and `audit` ones deciding too: what calls would get
    /// once those are enforced. `None` when every rule is enforced.
    pub fn with_staged(&self) -> Option<&RuleSet> {
        self.staged.as_deref()
    }

    /// Whether calls of `tool` are decided part by part (its rules read a command line).
    pub fn reads_command_lines(&self, tool: &ToolName) -> bool {
        self.command_lines.contains_key(tool)
    }

    /// The command line of `call` that its tool's rules read, if they read one.
    pub fn command_line<'c>(&self, call: &CallFacts<'c>) -> Option<&'c str> {
        let &index = self.command_lines.get(call.tool)?;
        self.rules
            .get(index as usize)?
            .matchers
            .as_ref()?
            .command_line(call.input)
    }

    /// The command table command lines are read with.
    pub fn commands(&self) -> &Arc<CommandTable> {
        &self.commands
    }

    /// Every rule, in definition order.
    pub fn rules(&self) -> &[CompiledRule] {
        &self.rules
    }

    /// A rule by name.
    pub fn get(&self, name: &str) -> Option<&CompiledRule> {
        self.rules.iter().find(|rule| rule.name.as_str() == name)
    }

    /// The rules that can apply to a tool, in precedence order.
    pub fn for_tool<'a>(&'a self, tool: &ToolName) -> impl Iterator<Item = &'a CompiledRule> + 'a {
        self.by_tool
            .get(tool)
            .map(ToolRules::order)
            .unwrap_or(&[])
            .iter()
            .filter_map(|&i| self.rules.get(i as usize))
    }

    /// Decides a call as one whole, or as one part of its command line (already seeded in
    /// `cache`).
    pub(crate) fn decide_whole(
        &self,
        call: &CallFacts<'_>,
        ctx: &MatchContext,
        default: Decision,
        cache: &mut ParseCache,
        part: Option<&LinePart<'_>>,
    ) -> PartOutcome {
        let label = part.and_then(|part| part.label);
        let mut winner: Option<(bool, std::cmp::Reverse<i32>, std::cmp::Reverse<Decision>)> = None;
        let mut matched = Vec::new();
        let visited = self
            .by_tool
            .get(call.tool)
            .into_iter()
            .flat_map(|tool| tool.visit(&self.rules, call.input));
        for (rule, matchers_hold) in visited {
            let level = rule.precedence();
            if winner.is_some_and(|w| w != level) {
                break;
            }
            // Most rules walked past do not match: decide cheaply, and build the
            // explanation only for the rules that decide. A rule matched with its group
            // (`matchers_hold`) needs only its modes and `when` checked.
            let ruled_out = || {
                part.zip(rule.matchers.as_ref())
                    .is_some_and(|(part, matchers)| {
                        matchers.ruled_out_for(call.input, part.line, &part.keys, cache.table())
                    })
            };
            let holds = if matchers_hold {
                rule.applies(call)
            } else {
                !ruled_out() && rule.holds_with_cache(call, ctx, cache)
            };
            if holds {
                winner = Some(level);
                matched.push(RuleReason::Rule(matched_rule(
                    rule, call, ctx, cache, label,
                )));
            }
        }
        // An enforced layer's ask holds against the allow of a later layer, whatever its
        // priority: the allow is not the decision.
        let allowed_below_enforcement = matched
            .first()
            .and_then(RuleReason::rule)
            .is_some_and(|first| first.decision == Decision::Allow && !first.enforced);
        let enforced_asks = self
            .by_tool
            .get(call.tool)
            .map_or(&[][..], ToolRules::enforced_asks)
            .iter()
            .filter_map(|&index| self.rules.get(index as usize));
        if allowed_below_enforcement
            && let Some(ask) = enforced_asks
                .into_iter()
                .find(|rule| rule.holds_with_cache(call, ctx, cache))
        {
            matched = vec![RuleReason::Rule(matched_rule(ask, call, ctx, cache, label))];
        }
        match matched.first().and_then(RuleReason::rule) {
            Some(first) => PartOutcome {
                decision: first.decision,
                reasons: matched,
                by_rule: true,
                neutral: false,
            },
            None => PartOutcome {
                decision: default,
                reasons: vec![RuleReason::Default {
                    decision: default,
                    part: label.map(str::to_owned),
                }],
                by_rule: false,
                neutral: false,
            },
        }
    }
}

/// Why `rule` matched `call` (or the part `label` of its command line).
fn matched_rule(
    rule: &CompiledRule,
    call: &CallFacts<'_>,
    ctx: &MatchContext,
    cache: &mut ParseCache,
    label: Option<&str>,
) -> MatchedRule {
    let outcome = rule
        .matchers
        .as_ref()
        .map(|matchers| matchers.matches_with_cache(call.input, ctx, rule.match_mode(), cache));
    MatchedRule {
        part: label.map(str::to_owned),
        name: rule.name.clone(),
        decision: rule.decision,
        priority: rule.priority,
        enforced: rule.origin.enforced,
        reason: rule.reason.clone(),
        location: rule.origin.location.clone(),
        detail: outcome
            .filter(|o| !o.selectors.is_empty())
            .map(|o| o.to_string()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use indexmap::IndexMap;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::model::ModeName;
    use crate::model::contract::SideEffectScope;
    use crate::model::resolved::ResolvedConcurrency;
    use crate::model::rule::Rule;
    use crate::policy::parts::FileTools;
    use crate::policy::rule::{RuleOrigin, ToolNames, compile_rule};

    impl RuleSet {
        /// The same set, every rule walked one by one.
        fn without_groups(&self) -> Self {
            let mut set = self.clone();
            for tool in set.by_tool.values_mut() {
                *tool = tool.without_groups();
            }
            set
        }
    }

    /// Regexes of the random rules: some match the random texts, one is too big to build.
    const REGEXES: &[&str] = &[
        "^git",
        "status$",
        r"rm\s+-rf",
        "a|b",
        "^$",
        r"\bx\b",
        "(?i)GIT",
        "[0-9]+",
        ".",
        r"\.rs$",
        r"\w{1000}",
    ];
    const GLOBS: &[&str] = &[
        "git *", "*.rs", "src/**", "*", "?", "[ab]*", "{x,y}*", "", "*..", "**/..",
    ];
    const TEXTS: &[&str] = &[
        "git status",
        "rm -rf /",
        "src/a.rs",
        "x",
        "",
        "GIT log",
        "a/b.rs",
        "..",
        "src/..",
        "b 42",
    ];
    const FIELDS: &[&str] = &["cmd", "path", "/opt/x"];

    fn patterns(pool: &'static [&'static str]) -> impl Strategy<Value = Vec<&'static str>> {
        // The last pool entry (the regex too big to build) is rare.
        let common = &pool[..pool.len() - 1];
        prop_oneof![
            40 => prop::collection::vec(prop::sample::select(common), 1..3),
            1 => prop::collection::vec(prop::sample::select(pool), 1..3),
        ]
    }

    /// A rule's `match`: mostly one `regex` or one `glob` list over one field (what groups
    /// hold), else shapes that are walked one by one.
    fn matchers() -> impl Strategy<Value = Option<Value>> {
        let field = prop::sample::select(FIELDS);
        prop_oneof![
            6 => (field.clone(), patterns(REGEXES))
                .prop_map(|(f, p)| Some(json!({ f: { "regex": p } }))),
            4 => (field.clone(), patterns(GLOBS))
                .prop_map(|(f, p)| Some(json!({ f: { "glob": p } }))),
            1 => (field.clone(), patterns(REGEXES), patterns(GLOBS))
                .prop_map(|(f, r, g)| Some(json!({ f: { "regex": r, "glob": g } }))),
            1 => (patterns(REGEXES), patterns(GLOBS))
                .prop_map(|(r, g)| Some(json!({ "cmd": { "regex": r }, "path": { "glob": g } }))),
            1 => field.clone().prop_map(|f| Some(json!({ f: { "exists": true } }))),
            1 => Just(None),
        ]
    }

    fn rule() -> impl Strategy<Value = (Value, bool)> {
        (
            prop::sample::select(vec![
                json!(["A"]),
                json!(["B"]),
                json!(["A", "B"]),
                json!("*"),
            ]),
            prop::sample::select(vec!["allow", "ask", "deny"]),
            -1..3i32,
            matchers(),
            prop::option::weighted(0.2, Just(json!(["plan"]))),
            prop::option::weighted(0.2, any::<bool>()),
            prop::bool::weighted(0.1),
        )
            .prop_map(
                |(tools, decision, priority, matchers, modes, read_only, enforced)| {
                    let mut rule =
                        json!({ "name": "r", "decision": decision, "priority": priority });
                    if tools != json!("*") {
                        rule["tools"] = tools;
                    }
                    if let Some(matchers) = matchers {
                        rule["match"] = matchers;
                    }
                    if let Some(modes) = modes {
                        rule["modes"] = modes;
                    }
                    if let Some(read_only) = read_only {
                        rule["when"] = json!({ "read_only": read_only });
                    }
                    (rule, enforced)
                },
            )
    }

    /// A field's value: mostly a string, else an array, a number or nothing.
    fn value() -> impl Strategy<Value = Option<Value>> {
        let text = prop::sample::select(TEXTS).prop_map(|t| json!(t));
        prop_oneof![
            6 => text.clone().prop_map(Some),
            2 => prop::collection::vec(text, 0..3).prop_map(|items| Some(json!(items))),
            1 => Just(Some(json!(7))),
            1 => Just(None),
        ]
    }

    fn input() -> impl Strategy<Value = Value> {
        (value(), value(), value()).prop_map(|(cmd, path, x)| {
            let mut input = json!({});
            if let Some(cmd) = cmd {
                input["cmd"] = cmd;
            }
            if let Some(path) = path {
                input["path"] = path;
            }
            if let Some(x) = x {
                input["opt"] = json!({ "x": x });
            }
            input
        })
    }

    fn compile_set(rules: &[(Value, bool)]) -> RuleSet {
        let tools = ToolNames::new(vec![ToolName::new("A"), ToolName::new("B")], HashMap::new());
        let mut modes = IndexMap::new();
        modes.insert("plan".to_owned(), crate::model::file::Mode::default());
        let compiled = rules
            .iter()
            .enumerate()
            .map(|(index, (value, enforced))| {
                let mut value = value.clone();
                value["name"] = json!(format!("r{index}"));
                let rule: Rule = serde_json::from_value(value).unwrap();
                let origin = RuleOrigin {
                    index,
                    enforced: *enforced,
                    location: None,
                };
                compile_rule(&rule, origin, &tools, &modes).unwrap()
            })
            .collect();
        RuleSet::new(compiled, Arc::new(CommandTable::default()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Rules matched with their group decide every call exactly as rules walked one by
        /// one: the same decision and the same reasons (deciding rules and their details).
        #[test]
        fn grouped_rules_decide_as_rules_walked_one_by_one(
            rules in prop::collection::vec(rule(), 1..40),
            calls in prop::collection::vec(
                (prop::sample::select(vec!["A", "B"]), input(), any::<bool>(), any::<bool>()),
                1..8,
            ),
        ) {
            let grouped = compile_set(&rules);
            let reference = grouped.without_groups();
            let ctx = MatchContext::new("/ws");
            for (tool, input, plan, read_only) in &calls {
                let tool = ToolName::new(*tool);
                let modes = if *plan { vec![ModeName::new("plan")] } else { Vec::new() };
                let flags = ResolvedConcurrency {
                    concurrent_safe: false,
                    destructive: false,
                    read_only: *read_only,
                    side_effect_scope: SideEffectScope::Workspace,
                };
                let call = CallFacts { tool: &tool, input, modes: &modes, flags: &flags };
                let files = FileTools::default();
                prop_assert_eq!(
                    grouped.decide(&call, &ctx, Decision::Ask, &files),
                    reference.decide(&call, &ctx, Decision::Ask, &files),
                    "tool {} input {}", tool.as_str(), input
                );
            }
        }
    }

    #[test]
    fn a_group_member_too_big_to_build_fails_closed_on_its_own() {
        let set = compile_set(&[
            (
                json!({"name": "r", "tools": ["A"], "match": {"cmd": {"regex": "^git"}}, "decision": "allow"}),
                false,
            ),
            (
                json!({"name": "r", "tools": ["A"], "match": {"cmd": {"regex": ["^rm", r"\w{1000}"]}}, "decision": "ask", "priority": -1}),
                false,
            ),
            (
                json!({"name": "r", "tools": ["A"], "match": {"cmd": {"regex": "^ls"}}, "decision": "deny", "priority": -2}),
                false,
            ),
        ]);
        let tool = ToolName::new("A");
        assert_eq!(set.by_tool[&tool].group_sizes(), [3]);
        let flags = ResolvedConcurrency {
            concurrent_safe: false,
            destructive: false,
            read_only: false,
            side_effect_scope: SideEffectScope::Workspace,
        };
        let decide = |input: Value| {
            let call = CallFacts {
                tool: &tool,
                input: &input,
                modes: &[],
                flags: &flags,
            };
            let decision = set.decide(
                &call,
                &MatchContext::new("/ws"),
                Decision::Allow,
                &FileTools::default(),
            );
            let names: Vec<String> = decision.rules().map(|rule| rule.name.to_string()).collect();
            (decision.decision, names)
        };
        // The other members are matched together; the one whose patterns cannot be built
        // holds for every call (an ask rule fails closed), even without the field.
        assert_eq!(
            decide(json!({"cmd": "git status"})),
            (Decision::Allow, vec!["r0".to_owned()])
        );
        assert_eq!(
            decide(json!({"cmd": "ls"})),
            (Decision::Ask, vec!["r1".to_owned()])
        );
        assert_eq!(decide(json!({})), (Decision::Ask, vec!["r1".to_owned()]));
    }

    #[test]
    fn rules_with_one_pattern_list_on_one_field_are_grouped() {
        let set = compile_set(&[
            (
                json!({"name": "r", "tools": ["A"], "match": {"cmd": {"regex": "^a"}}, "decision": "allow"}),
                false,
            ),
            (
                json!({"name": "r", "tools": ["A"], "match": {"cmd": {"regex": ["^b", "c"]}}, "decision": "deny"}),
                false,
            ),
            (
                json!({"name": "r", "tools": ["A"], "match": {"cmd": {"glob": "x*"}}, "decision": "deny"}),
                false,
            ),
            (
                json!({"name": "r", "tools": ["A"], "match": {"cmd": {"glob": "*y"}}, "decision": "ask"}),
                false,
            ),
            (
                json!({"name": "r", "tools": ["A"], "match": {"path": {"regex": "^a"}}, "decision": "ask"}),
                false,
            ),
            (
                json!({"name": "r", "tools": ["A"], "match": {"cmd": {"regex": "^a", "glob": "*"}}, "decision": "ask"}),
                false,
            ),
        ]);
        let tool = &set.by_tool[&ToolName::new("A")];
        assert_eq!(
            tool.group_sizes(),
            [2, 2],
            "regex and glob over `cmd`; the rest walked"
        );
    }
}
