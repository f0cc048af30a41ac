//! Semantic diff of two policy sets, with a risk level per change.
//!
//! The diff compares effective documents (what the merged layers say, not how the files are
//! written), so moving a rule between files or reformatting is no change, while a layer that
//! quietly loosens a permission is. Hot reload reports these changes with every new
//! generation; reviewers see the same list for a pull request.
//!
//! Tools, gates and modes are compared by name, rules and hooks by `name`; within an item,
//! leaf fields are compared by dotted path, with JSON Schemas, `match`, `examples` and lists
//! compared as whole values.

use std::collections::{BTreeMap, BTreeSet};

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Map, Value};

/// What changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Something new.
    Added,
    /// Something gone.
    Removed,
    /// A value differs.
    Changed,
}

/// How much a change deserves a reviewer's attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Tightens policy or changes nothing about what may run.
    Low,
    /// Changes how or when things run.
    Medium,
    /// Loosens what may run, or changes what runs.
    High,
}

/// The kind of item a change is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
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
}

/// One change in effect.
#[derive(Clone, Debug, PartialEq, Serialize)]
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
    /// Risk level.
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
pub fn diff(before: &Value, after: &Value) -> Vec<Change> {
    let mut changes = Vec::new();
    let empty = Map::new();
    fields(
        Subject::Engine,
        "",
        object(before, "engine").unwrap_or(&empty),
        object(after, "engine").unwrap_or(&empty),
        &mut changes,
    );
    for (subject, key) in [
        (Subject::Tool, "tools"),
        (Subject::Gate, "gates"),
        (Subject::Mode, "modes"),
    ] {
        items(
            subject,
            &section(before, key),
            &section(after, key),
            &mut changes,
        );
    }
    for (subject, key) in [(Subject::Rule, "rules"), (Subject::Hook, "hooks")] {
        items(subject, &list(before, key), &list(after, key), &mut changes);
    }
    changes
}

fn items(subject: Subject, before: &Items<'_>, after: &Items<'_>, out: &mut Vec<Change>) {
    let empty = Map::new();
    for (&name, &value) in before {
        match after.get(name) {
            None => out.push(Change {
                kind: ChangeKind::Removed,
                subject,
                name: name.to_owned(),
                field: None,
                before: Some(value.clone()),
                after: None,
                risk: item_risk(subject, ChangeKind::Removed, value),
            }),
            Some(&new) if new != value => fields(
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
            out.push(Change {
                kind: ChangeKind::Added,
                subject,
                name: name.to_owned(),
                field: None,
                before: None,
                after: Some(value.clone()),
                risk: item_risk(subject, ChangeKind::Added, value),
            });
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
    subject: Subject,
    name: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    out: &mut Vec<Change>,
) {
    let (old, new) = (leaves(before), leaves(after));
    let paths: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for path in paths {
        let (b, a) = (old.get(path).copied(), new.get(path).copied());
        if b == a {
            continue;
        }
        out.push(Change {
            kind: ChangeKind::Changed,
            subject,
            name: name.to_owned(),
            field: Some(path.clone()),
            before: b.cloned(),
            after: a.cloned(),
            risk: field_risk(subject, path, b, a),
        });
    }
}

fn decision_rank(value: Option<&Value>) -> Option<u8> {
    match value.and_then(Value::as_str) {
        Some("allow") => Some(0),
        Some("ask") => Some(1),
        Some("deny") => Some(2),
        _ => None,
    }
}

fn item_risk(subject: Subject, kind: ChangeKind, value: &Value) -> Risk {
    match (subject, kind) {
        (Subject::Rule, _) => {
            let decision = decision_rank(value.get("decision"));
            let loosens = match kind {
                ChangeKind::Added => decision == Some(0),
                ChangeKind::Removed | ChangeKind::Changed => decision == Some(2),
            };
            if loosens {
                Risk::High
            } else if decision == Some(1) {
                Risk::Medium
            } else {
                Risk::Low
            }
        }
        (Subject::Hook, ChangeKind::Removed)
            if value.get("on_error").and_then(Value::as_str) == Some("fail_closed") =>
        {
            Risk::High
        }
        (Subject::Tool | Subject::Hook, _) => Risk::Medium,
        (Subject::Engine | Subject::Gate | Subject::Mode, _) => Risk::Low,
    }
}

fn field_risk(subject: Subject, path: &str, before: Option<&Value>, after: Option<&Value>) -> Risk {
    let loosened = |b: Option<&Value>, a: Option<&Value>| match (decision_rank(b), decision_rank(a))
    {
        (Some(b), Some(a)) => a < b,
        _ => false,
    };
    let turned_off = before.and_then(Value::as_bool) == Some(true)
        && after.and_then(Value::as_bool) != Some(true);
    match (subject, path) {
        (Subject::Rule, "decision")
        | (Subject::Tool, "permission.default")
        | (Subject::Engine, "default_permission") => {
            if loosened(before, after) {
                Risk::High
            } else {
                Risk::Low
            }
        }
        (Subject::Rule, "disabled") => {
            if after.and_then(Value::as_bool) == Some(true) {
                Risk::High
            } else {
                Risk::Medium
            }
        }
        (Subject::Rule, "match" | "tools" | "modes" | "when" | "priority") => Risk::Medium,
        (Subject::Tool, "permission.always_ask") if turned_off => Risk::High,
        (Subject::Tool, p) if p.starts_with("handler") => Risk::High,
        (Subject::Tool, "concurrency.destructive") if turned_off => Risk::Medium,
        (Subject::Tool, p)
            if p.starts_with("concurrency")
                || p.starts_with("timeout")
                || p.starts_with("admission") =>
        {
            Risk::Medium
        }
        (Subject::Engine, "approval_expiry") if after.and_then(Value::as_str) == Some("allow") => {
            Risk::High
        }
        (Subject::Hook, "disabled" | "command" | "on_error") => Risk::High,
        (Subject::Hook, _) => Risk::Medium,
        _ => Risk::Low,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identical_documents_have_no_changes() {
        let doc = json!({"engine": {"max_concurrency": 10}, "tools": {"A": {"timeout": {"max": "1m"}}}, "rules": []});
        assert!(diff(&doc, &doc).is_empty());
    }

    #[test]
    fn tools_added_removed_and_fields_changed() {
        let before = json!({"tools": {"A": {"timeout": {"max": "1m"}, "permission": {"default": "ask"}}, "Gone": {}}});
        let after = json!({"tools": {"A": {"timeout": {"max": "2m"}, "permission": {"default": "allow"}}, "New": {}}});
        let changes = diff(&before, &after);
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
        assert_eq!(changes[1].risk, Risk::Medium);
    }

    #[test]
    fn rules_are_compared_by_name_not_position() {
        let before = json!({"rules": [{"name": "a", "decision": "deny"}, {"name": "b", "decision": "allow"}]});
        let after = json!({"rules": [{"name": "b", "decision": "allow"}, {"name": "a", "decision": "allow"}]});
        let changes = diff(&before, &after);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].describe(), "rule `a`: decision deny → allow");
        assert_eq!(changes[0].risk, Risk::High);
    }

    #[test]
    fn an_added_allow_rule_is_high_risk_and_an_added_deny_low() {
        let before = json!({"rules": []});
        let after = json!({"rules": [{"name": "x", "decision": "allow"}, {"name": "y", "decision": "deny"}]});
        let risks: Vec<Risk> = diff(&before, &after).iter().map(|c| c.risk).collect();
        assert_eq!(risks, [Risk::High, Risk::Low]);
    }

    #[test]
    fn multi_line_values_are_described_on_one_line() {
        let before = json!({"engine": {"messages": {"cut_marker": "\n...\n"}}});
        let after = json!({"engine": {"messages": {"cut_marker": "[cut]"}}});
        let changes = diff(&before, &after);
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
        let changes = diff(&before, &after);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].field.as_deref(), Some("input_schema"));
    }
}
