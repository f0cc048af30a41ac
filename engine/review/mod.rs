//! Review of a policy change: the semantic diff of two policy sets, each change rated by its
//! effect on decisions, and the decision diff that shows which calls decide differently.
//!
//! The diff compares effective documents (what the merged layers say, not how the files are
//! written), so moving a rule between files or reformatting is no change, while a layer that
//! quietly loosens a permission is. Hot reload reports these changes with every new
//! generation; reviewers see the same list for a pull request.
//!
//! Tools, gates and modes are compared by name, rules and hooks by `name`; within an item,
//! leaf fields are compared by dotted path, with JSON Schemas, `match`, `examples` and lists
//! compared as whole values. Each change gets an [`Effect`] ([`effect`], deciding "can
//! widen" from the patterns with [`contain`]) and the risk the `review:` section gives that
//! effect. [`decisions`] evaluates a corpus of calls under both sets with the function
//! `toolgate plan` decides with; [`coverage`] tells which rules the tests exercise.

pub mod contain;
pub mod coverage;
pub mod decisions;
pub mod effect;
pub mod replay;
pub mod report;

use std::collections::{BTreeMap, BTreeSet};

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

pub use crate::model::review::{Effect, ReviewSection, Risk};

/// What changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Something new.
    Added,
    /// Something gone.
    Removed,
    /// A value differs.
    Changed,
}

/// The kind of item a change is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    /// The `engine` section.
    Engine,
    /// A tool contract.
    Tool,
    /// A rule.
    Rule,
    /// A hook.
    Hook,
    /// A gate.
    Gate,
    /// A mode.
    Mode,
    /// The `commands` section (the command table).
    Commands,
    /// The `agents` section (the agents' tool maps).
    Agents,
    /// The `review` section (this classification's own table).
    Review,
    /// An MCP server (`mcp_servers`).
    McpServer,
}

/// One change in effect between two policy sets, rated by the `review:` section: what a
/// reload changed ([`crate::ReloadOutcome::Reloaded`]), and what `toolgate diff` and
/// `toolgate watch` list.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Change {
    /// Added, removed or changed.
    pub kind: ChangeKind,
    /// What kind of item.
    pub subject: Subject,
    /// The item's name (empty for the engine).
    pub name: String,
    /// The field, dotted (`timeout.max`), for changed values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The value before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    /// The value after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
    /// What the change can do to decisions.
    pub effect: Effect,
    /// The effect, named for a reviewer (`deny rule `x` no longer applies to tool `Read``).
    pub reason: String,
    /// Risk level: the `review:` section's risk of the effect.
    pub risk: Risk,
}

impl Change {
    /// One line for humans: `high  tool Bash: permission.default ask → allow`.
    pub fn describe(&self) -> String {
        let subject = match self.subject {
            Subject::Engine => "engine".to_owned(),
            Subject::Tool => format!("tool `{}`", self.name),
            Subject::Rule => format!("rule `{}`", self.name),
            Subject::Hook => format!("hook `{}`", self.name),
            Subject::Gate => format!("gate `{}`", self.name),
            Subject::Mode => format!("mode `{}`", self.name),
            Subject::Commands => "command table".to_owned(),
            Subject::Agents => "agent tool maps".to_owned(),
            Subject::Review => "review table".to_owned(),
            Subject::McpServer => format!("MCP server `{}`", self.name),
        };
        // One line per change: a string with line breaks or other control characters is
        // shown quoted and escaped, like JSON.
        let show = |v: &Option<Value>| match v {
            None => "(unset)".to_owned(),
            Some(Value::String(s)) if !s.chars().any(char::is_control) => s.clone(),
            Some(other) => other.to_string(),
        };
        match self.kind {
            ChangeKind::Added => format!("{subject} added"),
            ChangeKind::Removed => format!("{subject} removed"),
            ChangeKind::Changed => format!(
                "{subject}: {} {} → {}",
                self.field.as_deref().unwrap_or(""),
                show(&self.before),
                show(&self.after)
            ),
        }
    }
}

/// Items of a section by name, borrowed from the document.
type Items<'a> = IndexMap<&'a str, &'a Value>;

fn object<'a>(doc: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    doc.get(key).and_then(Value::as_object)
}

/// A map section (`tools`, `gates`, `modes`).
fn section<'a>(doc: &'a Value, key: &str) -> Items<'a> {
    object(doc, key)
        .map(|map| map.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default()
}

/// A list section (`rules`, `hooks`) by the items' `name`.
fn list<'a>(doc: &'a Value, key: &str) -> Items<'a> {
    doc.get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| Some((item.get("name")?.as_str()?, item)))
                .collect()
        })
        .unwrap_or_default()
}

/// The changes from `before` to `after` (effective documents), in a stable order.
///
/// Only the values that end up in a [`Change`] are copied: a reload diffs two whole policy
/// sets, and cloning them cost more than comparing them.
///
/// Risks come from BASE's `review:` section: a change cannot rate itself.
pub fn diff(before: &Value, after: &Value) -> Vec<Change> {
    let table: ReviewSection = before
        .get("review")
        .and_then(|section| serde_json::from_value(section.clone()).ok())
        .unwrap_or_default();
    let samples = example_strings(before, after);
    let context = Context {
        table: &table,
        samples: &samples,
        allow_rules: allow_rules(after),
        mapped: mapped_tools(before),
    };
    let mut changes = Vec::new();
    let empty = Map::new();
    for (subject, key) in [
        (Subject::Engine, "engine"),
        (Subject::Commands, "commands"),
        (Subject::Agents, "agents"),
        (Subject::Review, "review"),
    ] {
        let (b, a) = (
            object(before, key).unwrap_or(&empty),
            object(after, key).unwrap_or(&empty),
        );
        fields(&context, subject, "", b, a, &mut changes);
    }
    for (subject, key) in [
        (Subject::Tool, "tools"),
        (Subject::Gate, "gates"),
        (Subject::Mode, "modes"),
        (Subject::McpServer, "mcp_servers"),
    ] {
        items(
            &context,
            subject,
            &section(before, key),
            &section(after, key),
            &mut changes,
        );
    }
    for (subject, key) in [(Subject::Rule, "rules"), (Subject::Hook, "hooks")] {
        items(
            &context,
            subject,
            &list(before, key),
            &list(after, key),
            &mut changes,
        );
    }
    changes
}

/// What classifying a change needs besides the change.
struct Context<'a> {
    table: &'a ReviewSection,
    samples: &'a [String],
    /// The new set's allow rules that decide: each name with the tools it covers.
    allow_rules: Vec<(String, Vec<String>)>,
    /// The tools the old set's agent tool maps map onto.
    mapped: BTreeSet<String>,
}

/// The toolgate tools `doc`'s agent tool maps map onto.
fn mapped_tools(doc: &Value) -> BTreeSet<String> {
    let agents = doc.get("agents").and_then(Value::as_object);
    agents
        .into_iter()
        .flat_map(|agents| agents.values())
        .filter_map(|agent| agent.get("tools").and_then(Value::as_object))
        .flat_map(|tools| tools.values())
        .filter(|mapping| mapping.get("disabled") != Some(&Value::Bool(true)))
        .filter_map(|mapping| mapping.get("tool").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// The allow rules of `doc` that decide (not disabled, enforced), with their tools (`*`
/// when they name none).
fn allow_rules(doc: &Value) -> Vec<(String, Vec<String>)> {
    doc.get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|rule| rule.get("decision").and_then(Value::as_str) == Some("allow"))
        .filter(|rule| rule.get("disabled") != Some(&Value::Bool(true)))
        .filter(|rule| {
            rule.get("enforcement")
                .and_then(Value::as_str)
                .is_none_or(|e| e == "enforce")
        })
        .map(|rule| {
            let name = rule.get("name").and_then(Value::as_str).unwrap_or("?");
            let tools = match rule.get("tools").and_then(Value::as_array) {
                Some(tools) => tools
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                None => vec!["*".to_owned()],
            };
            (name.to_owned(), tools)
        })
        .collect()
}

/// Every string in the rules' example inputs of both sets: what regular expressions are
/// compared on.
fn example_strings(before: &Value, after: &Value) -> Vec<String> {
    fn collect(value: &Value, out: &mut BTreeSet<String>) {
        match value {
            Value::String(s) => {
                out.insert(s.clone());
            }
            Value::Array(items) => items.iter().for_each(|i| collect(i, out)),
            Value::Object(map) => map.values().for_each(|v| collect(v, out)),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    let mut found = BTreeSet::new();
    for doc in [before, after] {
        for rule in doc
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(examples) = rule.get("examples") {
                collect(examples, &mut found);
            }
        }
    }
    found.into_iter().collect()
}

fn items(
    context: &Context<'_>,
    subject: Subject,
    before: &Items<'_>,
    after: &Items<'_>,
    out: &mut Vec<Change>,
) {
    let empty = Map::new();
    let whole = |kind: ChangeKind, name: &str, value: &Value| {
        let around = effect::Around {
            allowed_by: (subject == Subject::Tool && kind == ChangeKind::Added)
                .then(|| {
                    context
                        .allow_rules
                        .iter()
                        .find(|(_, tools)| contain::tool_within(name, tools))
                        .map(|(rule, _)| rule.as_str())
                })
                .flatten(),
            called_by_agents: name.starts_with("mcp__") || context.mapped.contains(name),
        };
        let classified = effect::item(subject, kind, name, value, around);
        let (before, after) = match kind {
            ChangeKind::Removed => (Some(value.clone()), None),
            ChangeKind::Added | ChangeKind::Changed => (None, Some(value.clone())),
        };
        Change {
            kind,
            subject,
            name: name.to_owned(),
            field: None,
            before,
            after,
            risk: context.table.risk(classified.effect),
            effect: classified.effect,
            reason: classified.reason,
        }
    };
    for (&name, &value) in before {
        match after.get(name) {
            None => out.push(whole(ChangeKind::Removed, name, value)),
            Some(&new) if new != value => fields(
                context,
                subject,
                name,
                value.as_object().unwrap_or(&empty),
                new.as_object().unwrap_or(&empty),
                out,
            ),
            Some(_) => {}
        }
    }
    for (&name, &value) in after {
        if !before.contains_key(name) {
            out.push(whole(ChangeKind::Added, name, value));
        }
    }
}

/// Values compared whole rather than field by field.
fn is_whole(path: &str) -> bool {
    matches!(
        path,
        "input_schema" | "output_schema" | "match" | "examples"
    )
}

/// The leaves of an item by dotted path, sorted by path.
fn flatten<'a>(prefix: &str, value: &'a Value, out: &mut BTreeMap<String, &'a Value>) {
    match value {
        Value::Object(map) if !map.is_empty() && !is_whole(prefix) => {
            for (key, item) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&path, item, out);
            }
        }
        _ => {
            out.insert(prefix.to_owned(), value);
        }
    }
}

fn leaves(map: &Map<String, Value>) -> BTreeMap<String, &Value> {
    let mut leaves = BTreeMap::new();
    for (key, item) in map {
        flatten(key, item, &mut leaves);
    }
    leaves
}

fn fields(
    context: &Context<'_>,
    subject: Subject,
    name: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    out: &mut Vec<Change>,
) {
    let item_before = Value::Object(before.clone());
    let item_after = Value::Object(after.clone());
    let (old, new) = (leaves(before), leaves(after));
    let paths: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for path in paths {
        let (b, a) = (old.get(path).copied(), new.get(path).copied());
        if b == a {
            continue;
        }
        let classified = effect::field(&effect::FieldChange {
            subject,
            name,
            path,
            before: b,
            after: a,
            item_before: &item_before,
            item_after: &item_after,
            limit_factor: context.table.limit_factor(),
            samples: context.samples,
        });
        out.push(Change {
            kind: ChangeKind::Changed,
            subject,
            name: name.to_owned(),
            field: Some(path.clone()),
            before: b.cloned(),
            after: a.cloned(),
            risk: context.table.risk(classified.effect),
            effect: classified.effect,
            reason: classified.reason,
        });
    }
}

#[cfg(test)]
mod tests {
    // Moved from the integration tests: they exercise this module's internals.
    mod shipped;

    use super::*;
    use serde_json::json;

    /// A document with the review table of `policies/review.yaml`.
    fn with_table(mut doc: Value) -> Value {
        doc["review"] = json!({"risks": {
            "widens": "high", "may_widen": "high", "narrows": "low",
            "concurrent_side_effects": "high", "timeout_removed": "high", "limit_raised": "high",
            "hook_can_allow": "high", "runs_differently": "high", "schedule": "medium",
            "review_changed": "high", "cosmetic": "low"
        }});
        doc
    }

    fn changes(before: Value, after: Value) -> Vec<Change> {
        let (before, after) = (with_table(before), with_table(after));
        diff(&before, &after)
    }

    #[test]
    fn identical_documents_have_no_changes() {
        let doc = json!({"engine": {"max_concurrency": 10}, "tools": {"A": {"timeout": {"max": "1m"}}}, "rules": []});
        assert!(changes(doc.clone(), doc).is_empty());
    }

    #[test]
    fn tools_added_removed_and_fields_changed() {
        let before = json!({"tools": {"A": {"timeout": {"max": "1m"}, "permission": {"default": "ask"}}, "Gone": {}}});
        let after = json!({"tools": {"A": {"timeout": {"max": "2m"}, "permission": {"default": "allow"}}, "New": {}}});
        let changes = changes(before, after);
        let described: Vec<String> = changes.iter().map(Change::describe).collect();
        assert_eq!(
            described,
            [
                "tool `A`: permission.default ask → allow",
                "tool `A`: timeout.max 1m → 2m",
                "tool `Gone` removed",
                "tool `New` added",
            ]
        );
        assert_eq!(changes[0].risk, Risk::High);
        assert_eq!(
            changes[0].reason,
            "tool `A`: default permission `ask` → `allow`"
        );
        assert_eq!(changes[1].risk, Risk::Medium);
    }

    /// Changes that loosen what runs or what is allowed without touching a rule: each is
    /// high, with a reason that says so (each was medium, low or missing before).
    #[test]
    fn loosening_outside_the_rules_is_high() {
        let hook = |timeout: &str| json!({"name": "guard", "event": "PreToolUse", "command": ["guard"], "timeout": timeout});
        let cases = [
            // An MCP server: added, its program swapped, its annotations trusted.
            (
                json!({}),
                json!({"mcp_servers": {"docs": {"command": ["docs-server"]}}}),
                "MCP server `docs` added",
            ),
            (
                json!({"mcp_servers": {"docs": {"command": ["docs-server"]}}}),
                json!({"mcp_servers": {"docs": {"command": ["/tmp/other"]}}}),
                "`command` changed: what runs for its tools changed",
            ),
            (
                json!({"mcp_servers": {"docs": {"command": ["docs-server"]}}}),
                json!({"mcp_servers": {"docs": {"command": ["docs-server"], "trust_annotations": true}}}),
                "annotations now fill their contracts' flags",
            ),
            // A mode's side-effect scope, which a rule's `when` may test.
            (
                json!({"tools": {"WebFetch": {"modes": {"automation": {"concurrency": {"side_effect_scope": "external"}}}}}}),
                json!({"tools": {"WebFetch": {"modes": {"automation": {"concurrency": {"side_effect_scope": "session"}}}}}}),
                "rules conditioned on them",
            ),
            // Unanswered approvals allow, sooner.
            (
                json!({"engine": {"approval_expiry": "allow", "approval_timeout": "1h"}}),
                json!({"engine": {"approval_expiry": "allow", "approval_timeout": "1ms"}}),
                "allows the call after 1ms instead of 1h",
            ),
            // A hook that fails open, given less time.
            (
                json!({"hooks": [hook("10s")]}),
                json!({"hooks": [hook("1ms")]}),
                "a hook that times out lets the call through",
            ),
            // …its own time dropped (the engine's may be shorter), or the engine's shortened.
            (
                json!({"hooks": [hook("10s")]}),
                json!({"hooks": [{"name": "guard", "event": "PreToolUse", "command": ["guard"]}]}),
                "a hook that times out lets the call through",
            ),
            (
                json!({"engine": {"hook_timeout": "60s"}}),
                json!({"engine": {"hook_timeout": "200ms"}}),
                "a hook without a timeout of its own that times out",
            ),
            // No limit on an unanswered approval that allows, then one.
            (
                json!({"engine": {"approval_expiry": "allow", "approval_timeout": "none"}}),
                json!({"engine": {"approval_expiry": "allow", "approval_timeout": "1s"}}),
                "allows the call after 1s instead of none",
            ),
            // A tool whose handler runs: whatever rule allows it, what runs is new.
            (
                json!({"tools": {}}),
                json!({"tools": {"docs_purge": {"handler": {"kind": "command", "argv": ["rm", "-rf", "x"]}}}}),
                "added with a handler",
            ),
            // The decision log's masking.
            (
                json!({"engine": {"decision_log": {"redact_fields": ["command"], "secret_patterns": ["ghp_[A-Za-z0-9]+"]}}}),
                json!({"engine": {"decision_log": {"redact_fields": [], "secret_patterns": ["ghp_[A-Za-z0-9]+"]}}}),
                "may record secrets in clear",
            ),
            // An allow pattern naming an option grants its effects.
            (
                json!({"rules": [{"name": "r", "decision": "allow", "match": {"command": {"shell": ["git diff *"]}}}]}),
                json!({"rules": [{"name": "r", "decision": "allow", "match": {"command": {"shell": ["git diff --output *"]}}}]}),
                "may widen",
            ),
            // A tool that denied removed: an agent's hook now leaves its calls to the agent.
            (
                json!({"tools": {"mcp__db__drop": {"permission": {"default": "deny"}}}}),
                json!({"tools": {}}),
                "its calls are no longer judged here",
            ),
            // A tool added under an allow rule that already covers its name.
            (
                json!({"tools": {}, "rules": [{"name": "docs", "tools": ["mcp__docs__*"], "decision": "allow"}]}),
                json!({"tools": {"mcp__docs__delete": {}}, "rules": [{"name": "docs", "tools": ["mcp__docs__*"], "decision": "allow"}]}),
                "allow rule `docs` covers it",
            ),
            // A call that chooses its own timeout, with no maximum.
            (
                json!({"tools": {"A": {"timeout": {"default": "1m"}}}}),
                json!({"tools": {"A": {"timeout": {"default": "1m", "override_field": "timeout_ms"}}}}),
                "a call may choose any timeout",
            ),
            // The batch budget switched off, or a tool exempted from it.
            (
                json!({"engine": {"batch_budget": 100000}}),
                json!({"engine": {"batch_budget": "none"}}),
                "switched off",
            ),
            (
                json!({"tools": {"Bash": {"budget": {"max_chars": 1000}}}}),
                json!({"tools": {"Bash": {"budget": {"max_chars": 1000, "batch_exempt": true}}}}),
                "exempt from the batch budget",
            ),
            // A guard hook moved after the call: it no longer answers for it.
            (
                json!({"hooks": [{"name": "guard", "event": "PreToolUse", "command": ["guard"]}]}),
                json!({"hooks": [{"name": "guard", "event": "PostToolUse", "command": ["guard"]}]}),
                "event `PreToolUse` → `PostToolUse`: it no longer answers",
            ),
        ];
        for (before, after, reason) in cases {
            let found = changes(before, after);
            assert_eq!(found.len(), 1, "{reason}: {found:?}");
            assert_eq!(found[0].risk, Risk::High, "{found:?}");
            assert!(found[0].reason.contains(reason), "{reason}: {found:?}");
        }
        // Longer is not looser; fail-closed hooks block when they time out.
        let found = changes(
            json!({"hooks": [hook("1s")]}),
            json!({"hooks": [hook("1500ms")]}),
        );
        assert_ne!(found[0].risk, Risk::High, "{found:?}");
        let closed = |timeout: &str| json!({"hooks": [{"name": "guard", "event": "PreToolUse", "command": ["guard"], "timeout": timeout, "on_error": "fail_closed"}]});
        let found = changes(closed("10s"), closed("1ms"));
        assert_ne!(found[0].risk, Risk::High, "{found:?}");
        // What the model is told is no longer cosmetic.
        let found = changes(
            json!({"engine": {"messages": {"rule_denied": "denied"}}}),
            json!({"engine": {"messages": {"rule_denied": "retry with sudo"}}}),
        );
        assert_eq!(found[0].risk, Risk::Medium, "{found:?}");
    }

    #[test]
    fn a_limit_raised_past_the_factor_or_removed_is_high() {
        let before = json!({"tools": {"A": {"timeout": {"max": "1m"}}}});
        let raised = json!({"tools": {"A": {"timeout": {"max": "10m"}}}});
        let removed = json!({"tools": {"A": {"timeout": "none"}}});
        let found = changes(before.clone(), raised);
        assert_eq!(
            (found[0].effect, found[0].risk),
            (Effect::LimitRaised, Risk::High)
        );
        let found = changes(before, removed);
        assert!(
            found.iter().any(|c| c.effect == Effect::TimeoutRemoved),
            "{found:?}"
        );
    }

    #[test]
    fn rules_are_compared_by_name_not_position() {
        let before = json!({"rules": [{"name": "a", "decision": "deny"}, {"name": "b", "decision": "allow"}]});
        let after = json!({"rules": [{"name": "b", "decision": "allow"}, {"name": "a", "decision": "allow"}]});
        let changes = changes(before, after);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].describe(), "rule `a`: decision deny → allow");
        assert_eq!(changes[0].risk, Risk::High);
    }

    /// A rule is judged by what it did as well as by what it does: a deny rule switched to
    /// `audit` and to `allow` at once, or disabled and turned to `allow`, lets through what
    /// it denied (both were low); an ask rule raised above deny rules turns their denies into
    /// asks; a tool's default `deny` unset leaves its calls to the default below.
    #[test]
    fn changes_that_undo_what_a_rule_or_default_held_back_are_high() {
        let rule = |extra: Value| {
            let mut rule = json!({"name": "r", "decision": "deny", "tools": ["Read"]});
            for (key, value) in extra.as_object().unwrap() {
                rule[key] = value.clone();
            }
            json!({"rules": [rule]})
        };
        let cases = [
            (
                rule(json!({})),
                rule(json!({"decision": "allow", "enforcement": "audit"})),
                "no longer enforced (`audit`): the calls it denied",
            ),
            (
                rule(json!({})),
                rule(json!({"decision": "allow", "disabled": true})),
                "disabled: the calls it matched fall to lower rules",
            ),
            (
                rule(json!({"decision": "ask"})),
                rule(json!({"decision": "ask", "priority": 200})),
                "it may now outrank deny rules it ranked below",
            ),
            (
                json!({"tools": {"A": {"permission": {"default": "deny"}}}}),
                json!({"tools": {"A": {}}}),
                "default permission `deny` unset",
            ),
            (
                json!({"tools": {"A": {"permission": {"default": "allow"}, "modes": {"ci": {"permission": {"default": "deny"}}}}}}),
                json!({"tools": {"A": {"permission": {"default": "allow"}}}}),
                "default permission `deny` unset (`modes.ci.permission.default`)",
            ),
            // A new tool allowed only in a mode (it went from unknown to allowed under
            // `automation` while rated medium).
            (
                json!({"tools": {}}),
                json!({"tools": {"M": {"permission": {"default": "ask"}, "modes": {"automation": {"permission": {"default": "allow"}}}}}}),
                "tool `M` added with permission `allow` in mode `automation`",
            ),
        ];
        for (before, after, reason) in cases {
            let found = changes(before.clone(), after.clone());
            assert!(
                found
                    .iter()
                    .any(|c| c.risk == Risk::High && c.reason.contains(reason)),
                "{before} → {after}: {found:?}"
            );
        }
    }

    #[test]
    fn an_added_allow_rule_is_high_risk_and_an_added_deny_low() {
        let before = json!({"rules": []});
        let after = json!({"rules": [{"name": "x", "decision": "allow"}, {"name": "y", "decision": "deny"}]});
        let risks: Vec<Risk> = changes(before, after).iter().map(|c| c.risk).collect();
        assert_eq!(risks, [Risk::High, Risk::Low]);
    }

    #[test]
    fn rules_are_rated_by_what_they_do_to_decisions() {
        let deny = json!({"name": "d", "decision": "deny", "tools": ["Read", "Write"],
            "match": {"file_path": {"path": ["**/.env*"]}}});
        let allow = json!({"name": "a", "decision": "allow", "tools": ["Bash"],
            "match": {"command": {"shell": ["npm test", "npm run lint"]}}});
        let base = json!({"rules": [deny.clone(), allow.clone()]});
        let with = |rule: &Value, field: &str, value: Value| {
            let mut rule = rule.clone();
            rule[field] = value;
            rule
        };
        let cases = [
            (
                with(&deny, "modes", json!(["plan"])),
                allow.clone(),
                Risk::High,
                "deny rule `d` no longer applies outside modes `plan`",
            ),
            (
                with(&deny, "tools", json!(["Write"])),
                allow.clone(),
                Risk::High,
                "deny rule `d` no longer applies to tool `Read`",
            ),
            (
                with(&deny, "match", json!({"file_path": {"path": ["**/.env"]}})),
                allow.clone(),
                Risk::High,
                "deny rule `d` no longer matches calls it matched, e.g. `file_path` = `a/.envx`",
            ),
            (
                with(&deny, "priority", json!(-1)),
                allow.clone(),
                Risk::High,
                "deny rule `d`: priority `0` → `-1`: rules of higher priority now decide first",
            ),
            (
                deny.clone(),
                with(&allow, "match", json!({"command": {"shell": ["npm *"]}})),
                Risk::High,
                "allow rule `a` now matches calls it did not match, e.g. `command` = `npm x`",
            ),
            (
                deny.clone(),
                with(
                    &allow,
                    "match",
                    json!({"command": {"shell": ["npm test", "npm run lint"], "allow_redirection": true}}),
                ),
                Risk::High,
                "allow rule `a` now lets commands in `command` redirect output to files",
            ),
            // The narrowing counterparts.
            (
                with(&deny, "tools", json!(["Read", "Write", "Edit"])),
                allow.clone(),
                Risk::Low,
                "deny rule `d`: tools `Read`, `Write` → `Read`, `Write`, `Edit`",
            ),
            (
                with(
                    &deny,
                    "match",
                    json!({"file_path": {"path": ["**/.env*", "**/*.key"]}}),
                ),
                allow.clone(),
                Risk::Low,
                "deny rule `d` matches at least what it did (its `match` changed)",
            ),
            (
                deny.clone(),
                with(&allow, "match", json!({"command": {"shell": ["npm test"]}})),
                Risk::Low,
                "allow rule `a` matches at most what it did (its `match` changed)",
            ),
            (
                deny.clone(),
                with(&allow, "modes", json!(["plan"])),
                Risk::Low,
                "allow rule `a` applies in fewer modes",
            ),
        ];
        for (d, a, risk, reason) in cases {
            let found = changes(base.clone(), json!({"rules": [d, a]}));
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!((found[0].risk, found[0].reason.as_str()), (risk, reason));
        }
    }

    #[test]
    fn a_concurrent_tool_with_side_effects_is_high_and_a_read_only_one_medium() {
        let before = json!({"tools": {"Bash": {"concurrency": {"concurrent_safe": false}},
            "Read": {"concurrency": {"concurrent_safe": false, "read_only": true}}}});
        let after = json!({"tools": {"Bash": {"concurrency": {"concurrent_safe": true}},
            "Read": {"concurrency": {"concurrent_safe": true, "read_only": true}}}});
        let found = changes(before, after);
        assert_eq!(found[0].effect, Effect::ConcurrentSideEffects);
        assert_eq!(found[0].risk, Risk::High);
        assert_eq!(found[1].risk, Risk::Medium);
    }

    #[test]
    fn the_table_of_base_rates_and_a_change_to_it_is_high() {
        let mut before = with_table(json!({"rules": []}));
        before["review"]["risks"]["widens"] = json!("low");
        let mut after = before.clone();
        after["rules"] = json!([{"name": "x", "decision": "allow"}]);
        after["review"]["risks"]["widens"] = json!("high");
        let found = diff(&before, &after);
        let risks: Vec<(Effect, Risk)> = found.iter().map(|c| (c.effect, c.risk)).collect();
        assert_eq!(
            risks,
            [
                (Effect::ReviewChanged, Risk::High),
                (Effect::Widens, Risk::Low)
            ]
        );
    }

    #[test]
    fn multi_line_values_are_described_on_one_line() {
        let before = json!({"engine": {"messages": {"cut_marker": "\n...\n"}}});
        let after = json!({"engine": {"messages": {"cut_marker": "[cut]"}}});
        let changes = changes(before, after);
        assert_eq!(
            changes[0].describe(),
            r#"engine: messages.cut_marker "\n...\n" → [cut]"#
        );
    }

    #[test]
    fn schemas_are_compared_whole() {
        let before =
            json!({"tools": {"A": {"input_schema": {"type": "object", "required": ["a"]}}}});
        let after = json!({"tools": {"A": {"input_schema": {"type": "object"}}}});
        let changes = changes(before, after);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].field.as_deref(), Some("input_schema"));
    }
}
