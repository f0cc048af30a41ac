//! What a change can do to decisions: each change of the semantic diff gets one [`Effect`]
//! and a sentence naming it ("deny rule `no-secrets` no longer applies to tool `Read`"). The
//! risk of an effect is data (the `review:` section); this file only decides the effect.
//!
//! "Can widen" is decided from the patterns where that is decidable ([`super::contain`]);
//! where it is not, the effect is [`Effect::MayWiden`] and the decision diff is the evidence.

use serde_json::Value;

use super::contain::{Containment, match_within, tool_within};
use super::{ChangeKind, Subject};
use crate::model::Decision;
use crate::model::review::Effect;

/// An effect and the sentence that names it.
#[derive(Clone, Debug, PartialEq)]
pub struct Classified {
    /// The effect.
    pub effect: Effect,
    /// What it does, for a reviewer.
    pub reason: String,
}

fn classified(effect: Effect, reason: impl Into<String>) -> Classified {
    Classified {
        effect,
        reason: reason.into(),
    }
}

fn decision(value: Option<&Value>) -> Option<Decision> {
    match value.and_then(Value::as_str)? {
        "allow" => Some(Decision::Allow),
        "ask" => Some(Decision::Ask),
        "deny" => Some(Decision::Deny),
        _ => None,
    }
}

/// `deny rule `x``, `allow rule `x``.
fn rule_label(item: &Value, name: &str) -> String {
    match decision(item.get("decision")) {
        Some(d) => format!("{d} rule `{name}`"),
        None => format!("rule `{name}`"),
    }
}

/// Whether a rule holds calls back from `allow` (deny and ask rules).
fn holds_back(item: &Value) -> bool {
    matches!(
        decision(item.get("decision")),
        Some(Decision::Deny | Decision::Ask)
    )
}

/// Whether a rule decides: not disabled and `enforcement` absent or `enforce`.
fn staged(item: &Value) -> Option<&str> {
    item.get("enforcement")
        .and_then(Value::as_str)
        .filter(|e| *e != "enforce")
}

fn list(value: Option<&Value>) -> Option<Vec<String>> {
    value.and_then(Value::as_array).map(|items| {
        items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    })
}

fn codes(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the sets around an added or removed tool say of it.
#[derive(Clone, Copy, Default)]
pub struct Around<'a> {
    /// An allow rule of the new set whose tools cover it.
    pub allowed_by: Option<&'a str>,
    /// Agents' calls reach it: an MCP tool's name (`mcp__…`), or a tool an agent's tool maps
    /// onto in the old set.
    pub called_by_agents: bool,
}

/// The effect of an added or removed item.
pub fn item(
    subject: Subject,
    kind: ChangeKind,
    name: &str,
    value: &Value,
    around: Around<'_>,
) -> Classified {
    let disabled = value.get("disabled") == Some(&Value::Bool(true));
    match (subject, kind) {
        (Subject::Rule, _) if disabled => classified(
            Effect::Cosmetic,
            format!("disabled rule `{name}` {}", verb(kind)),
        ),
        (Subject::Rule, _) if staged(value).is_some() => classified(
            Effect::Cosmetic,
            format!(
                "rule `{name}` (`{}`, not enforced) {}: it decides nothing",
                staged(value).unwrap_or_default(),
                verb(kind)
            ),
        ),
        (Subject::Rule, ChangeKind::Added) => {
            let label = rule_label(value, name);
            match decision(value.get("decision")) {
                Some(Decision::Allow) => classified(
                    Effect::Widens,
                    format!("{label} added: the calls it matches are allowed"),
                ),
                Some(Decision::Ask)
                    if value.get("priority").and_then(Value::as_i64).unwrap_or(0) > 0 =>
                {
                    classified(
                        Effect::MayWiden,
                        format!("{label} added above priority 0: it may outrank deny rules"),
                    )
                }
                Some(Decision::Ask | Decision::Deny) | None => {
                    classified(Effect::Narrows, format!("{label} added"))
                }
            }
        }
        (Subject::Rule, ChangeKind::Removed | ChangeKind::Changed) => {
            let label = rule_label(value, name);
            if holds_back(value) {
                classified(
                    Effect::Widens,
                    format!("{label} removed: the calls it matched fall to lower rules"),
                )
            } else {
                classified(Effect::Narrows, format!("{label} removed"))
            }
        }
        (Subject::Hook, ChangeKind::Added) => hook_added(name, value),
        (Subject::Hook, ChangeKind::Removed | ChangeKind::Changed) => classified(
            Effect::Widens,
            format!("hook `{name}` removed: the calls it denied or asked about no longer are"),
        ),
        (Subject::Tool, ChangeKind::Added) => {
            let default = decision(value.pointer("/permission/default"));
            // A mode may allow what the tool asks about elsewhere (`modes.automation.permission`).
            let allowing_mode = value
                .get("modes")
                .and_then(Value::as_object)
                .and_then(|modes| {
                    modes.iter().find(|(_, patch)| {
                        decision(patch.pointer("/permission/default")) == Some(Decision::Allow)
                    })
                })
                .map(|(mode, _)| mode.clone());
            if default == Some(Decision::Allow) {
                classified(
                    Effect::Widens,
                    format!("tool `{name}` added with permission `allow`"),
                )
            } else if let Some(mode) = allowing_mode {
                classified(
                    Effect::Widens,
                    format!("tool `{name}` added with permission `allow` in mode `{mode}`"),
                )
            } else if let Some(rule) = around.allowed_by {
                // Its calls were unknown (an agent's hook left them to the agent); the rule
                // now decides them.
                classified(
                    Effect::MayWiden,
                    format!(
                        "tool `{name}` added: allow rule `{rule}` covers it, so its calls may now be allowed"
                    ),
                )
            } else if value.get("handler").is_some() {
                // Whatever allows it (a rule for `docs_*`), its handler now runs.
                classified(
                    Effect::RunsDifferently,
                    format!("tool `{name}` added with a handler: what its calls run is new"),
                )
            } else {
                classified(Effect::Schedule, format!("tool `{name}` added"))
            }
        }
        (Subject::Tool, ChangeKind::Removed | ChangeKind::Changed) => {
            let allowed = decision(value.pointer("/permission/default")) == Some(Decision::Allow);
            if allowed || !around.called_by_agents {
                classified(Effect::Narrows, format!("tool `{name}` removed"))
            } else {
                classified(
                    Effect::MayWiden,
                    format!(
                        "tool `{name}` removed: its calls are no longer judged here (an agent's hook leaves them to the agent's own rules; `run` refuses them)"
                    ),
                )
            }
        }
        (Subject::McpServer, ChangeKind::Added) => classified(
            Effect::RunsDifferently,
            format!("MCP server `{name}` added: what runs for the tools that name it is new"),
        ),
        (Subject::McpServer, ChangeKind::Removed | ChangeKind::Changed) => classified(
            Effect::Narrows,
            format!("MCP server `{name}` removed: the tools that name it fail"),
        ),
        (Subject::Gate | Subject::Mode, _) => classified(
            Effect::Schedule,
            format!("{} `{name}` {}", subject_word(subject), verb(kind)),
        ),
        (Subject::Engine | Subject::Commands | Subject::Agents | Subject::Review, _) => classified(
            Effect::Schedule,
            format!("{} {}", subject_word(subject), verb(kind)),
        ),
    }
}

fn hook_added(name: &str, value: &Value) -> Classified {
    let event = value.get("event").and_then(Value::as_str).unwrap_or("");
    match event {
        // Only these hooks answer for permission or input; the others observe.
        "PreToolUse" | "PermissionRequest" | "pre_tool_use" | "permission_request" => classified(
            Effect::HookCanAllow,
            format!("hook `{name}` added on `{event}`: it can allow calls or rewrite their input"),
        ),
        _ => classified(Effect::RunsDifferently, format!("hook `{name}` added")),
    }
}

fn verb(kind: ChangeKind) -> &'static str {
    match kind {
        ChangeKind::Added => "added",
        ChangeKind::Removed => "removed",
        ChangeKind::Changed => "changed",
    }
}

fn subject_word(subject: Subject) -> &'static str {
    match subject {
        Subject::Engine => "engine",
        Subject::Tool => "tool",
        Subject::Rule => "rule",
        Subject::Hook => "hook",
        Subject::Gate => "gate",
        Subject::Mode => "mode",
        Subject::Commands => "command table",
        Subject::Agents => "agent tool maps",
        Subject::Review => "review table",
        Subject::McpServer => "MCP server",
    }
}

/// The values of a changed field, with the whole items around them.
pub struct FieldChange<'a> {
    /// What kind of item.
    pub subject: Subject,
    /// Its name.
    pub name: &'a str,
    /// The dotted field.
    pub path: &'a str,
    /// The value before.
    pub before: Option<&'a Value>,
    /// The value after.
    pub after: Option<&'a Value>,
    /// The item before.
    pub item_before: &'a Value,
    /// The item after.
    pub item_after: &'a Value,
    /// The factor past which a raised limit counts.
    pub limit_factor: f64,
    /// Strings to try regular expressions on.
    pub samples: &'a [String],
}

/// The effect of a changed field.
pub fn field(change: &FieldChange<'_>) -> Classified {
    match change.subject {
        Subject::Rule => rule_field(change),
        Subject::Tool => tool_field(change),
        Subject::Engine => engine_field(change),
        Subject::Hook => hook_field(change),
        Subject::Review => classified(
            Effect::ReviewChanged,
            format!(
                "the review table's `{}` changed: it rates every other change",
                change.path
            ),
        ),
        Subject::Commands => commands_field(change),
        Subject::McpServer => mcp_server_field(change),
        Subject::Agents => classified(
            Effect::MayWiden,
            format!(
                "agent tool maps: `{}` changed: an agent's calls may be judged as another tool",
                change.path
            ),
        ),
        Subject::Gate | Subject::Mode => classified(
            Effect::Schedule,
            format!(
                "{} `{}`: `{}` changed",
                subject_word(change.subject),
                change.name,
                change.path
            ),
        ),
    }
}

fn rule_field(c: &FieldChange<'_>) -> Classified {
    let label = rule_label(c.item_after, c.name);
    let back = holds_back(c.item_after);
    let top = c.path.split('.').next().unwrap_or(c.path);
    // A rule not enforced on either side decides nothing either way; one that was enforced
    // is judged by its `enforcement` change, as it was (a deny switched to `audit` and to
    // `allow` at once lets through what it denied).
    if top != "enforcement"
        && staged(c.item_before).is_some()
        && let Some(enforcement) = staged(c.item_after)
    {
        return classified(
            Effect::Cosmetic,
            format!(
                "{label} (`{enforcement}`, not enforced): `{}` changed; it decides nothing",
                c.path
            ),
        );
    }
    match top {
        "decision" => {
            let (b, a) = (decision(c.before), decision(c.after));
            match (b, a) {
                (Some(b), Some(a)) if a < b => classified(
                    Effect::Widens,
                    format!("rule `{}` now decides `{a}` instead of `{b}`", c.name),
                ),
                _ => classified(
                    Effect::Narrows,
                    format!("rule `{}` now decides `{}`", c.name, show(c.after)),
                ),
            }
        }
        "disabled" => {
            let now_off = c.after == Some(&Value::Bool(true));
            // Switched off: what it did before is lost; switched on: what it does now counts.
            let back = if now_off {
                holds_back(c.item_before)
            } else {
                back
            };
            match (now_off, back) {
                (true, true) => classified(
                    Effect::Widens,
                    format!("{label} disabled: the calls it matched fall to lower rules"),
                ),
                (false, false) => classified(Effect::Widens, format!("{label} enabled again")),
                (true, false) => classified(Effect::Narrows, format!("{label} disabled")),
                (false, true) => classified(Effect::Narrows, format!("{label} enabled again")),
            }
        }
        "enforcement" => {
            fn name(value: Option<&Value>) -> &str {
                value.and_then(Value::as_str).unwrap_or("enforce")
            }
            let (before, after) = (name(c.before), name(c.after));
            // No longer enforced: what it did before is lost; now enforced: what it does now.
            let back = if before == "enforce" {
                holds_back(c.item_before)
            } else {
                back
            };
            match (before == "enforce", after == "enforce", back) {
                (true, false, true) => classified(
                    Effect::Widens,
                    format!(
                        "{label} no longer enforced (`{after}`): the calls it denied or asked about fall to lower rules"
                    ),
                ),
                (false, true, false) => classified(
                    Effect::Widens,
                    format!(
                        "{label} now enforced (was `{before}`): the calls it matches are allowed"
                    ),
                ),
                (true, false, false) => classified(
                    Effect::Narrows,
                    format!("{label} no longer enforced (`{after}`)"),
                ),
                (false, true, true) => classified(
                    Effect::Narrows,
                    format!("{label} now enforced (was `{before}`)"),
                ),
                _ => classified(
                    Effect::Cosmetic,
                    format!(
                        "{label}: enforcement `{before}` → `{after}` (not enforced either way)"
                    ),
                ),
            }
        }
        "tools" => rule_tools(c, &label, back),
        "modes" => rule_modes(c, &label, back),
        "priority" => {
            let (b, a) = (
                c.before.and_then(Value::as_i64).unwrap_or(0),
                c.after.and_then(Value::as_i64).unwrap_or(0),
            );
            let lowered = a < b;
            // An ask rule stands between: raised, it may outrank a deny (`deny` → `ask`);
            // lowered, allow rules may now decide first.
            if decision(c.item_after.get("decision")) == Some(Decision::Ask) {
                let what = if lowered {
                    "allow rules it ranked above may now decide first"
                } else {
                    "it may now outrank deny rules it ranked below, which then ask"
                };
                return classified(
                    Effect::MayWiden,
                    format!("{label}: priority `{b}` → `{a}`: {what}"),
                );
            }
            if lowered == back {
                let what = if back {
                    "rules of higher priority now decide first"
                } else {
                    "it now decides before rules it ranked below"
                };
                classified(
                    Effect::Widens,
                    format!("{label}: priority `{b}` → `{a}`: {what}"),
                )
            } else {
                classified(Effect::Narrows, format!("{label}: priority `{b}` → `{a}`"))
            }
        }
        "when" => {
            let condition = c.path.strip_prefix("when.").unwrap_or("when");
            let added = c.before.is_none() && c.after.is_some();
            let removed = c.before.is_some() && c.after.is_none();
            match (back, added, removed) {
                (true, _, true) | (false, true, _) => classified(
                    Effect::Narrows,
                    format!(
                        "{label}: condition `{condition}` {}",
                        if removed { "dropped" } else { "added" }
                    ),
                ),
                (false, _, true) => classified(
                    Effect::Widens,
                    format!("{label} no longer requires `{condition}`: it matches more calls"),
                ),
                _ => classified(
                    Effect::MayWiden,
                    format!(
                        "{label} now applies only when `{condition}` is `{}`",
                        show(c.after)
                    ),
                ),
            }
        }
        "match" => rule_match(c, &label, back),
        "reason" | "examples" | "name" => {
            classified(Effect::Cosmetic, format!("{label}: `{}` changed", c.path))
        }
        _ => classified(Effect::MayWiden, format!("{label}: `{}` changed", c.path)),
    }
}

fn rule_tools(c: &FieldChange<'_>, label: &str, back: bool) -> Classified {
    let all = || vec!["*".to_owned()];
    let before = list(c.before).unwrap_or_else(all);
    let after = list(c.after).unwrap_or_else(all);
    // A deny rule must still cover every tool it covered; an allow rule may not cover more.
    let (inner, outer) = if back {
        (&before, &after)
    } else {
        (&after, &before)
    };
    let uncovered: Vec<String> = inner
        .iter()
        .filter(|t| !tool_within(t, outer))
        .cloned()
        .collect();
    if uncovered.is_empty() {
        return classified(
            Effect::Narrows,
            format!("{label}: tools {} → {}", codes(&before), codes(&after)),
        );
    }
    let tools = match uncovered.len() {
        1 => format!("tool {}", codes(&uncovered)),
        _ => format!("tools {}", codes(&uncovered)),
    };
    if back {
        classified(
            Effect::Widens,
            format!("{label} no longer applies to {tools}"),
        )
    } else {
        classified(Effect::Widens, format!("{label} now applies to {tools}"))
    }
}

fn rule_modes(c: &FieldChange<'_>, label: &str, back: bool) -> Classified {
    let (before, after) = (list(c.before), list(c.after));
    // `None` is every mode.
    let dropped = |from: &Option<Vec<String>>, to: &Option<Vec<String>>| -> Option<String> {
        match (from, to) {
            (_, None) => None,
            (None, Some(to)) => Some(format!("outside modes {}", codes(to))),
            (Some(from), Some(to)) => {
                let gone: Vec<String> = from.iter().filter(|m| !to.contains(m)).cloned().collect();
                (!gone.is_empty()).then(|| format!("in modes {}", codes(&gone)))
            }
        }
    };
    if back {
        match dropped(&before, &after) {
            Some(where_) => classified(
                Effect::Widens,
                format!("{label} no longer applies {where_}"),
            ),
            None => classified(Effect::Narrows, format!("{label} applies in more modes")),
        }
    } else {
        match dropped(&after, &before) {
            Some(where_) => classified(Effect::Widens, format!("{label} now applies {where_}")),
            None => classified(Effect::Narrows, format!("{label} applies in fewer modes")),
        }
    }
}

fn rule_match(c: &FieldChange<'_>, label: &str, back: bool) -> Classified {
    // A deny rule's new match must hold for every call the old one did; an allow rule's new
    // match for no call the old one did not.
    let answer = if back {
        match_within(c.before, c.after, c.samples)
    } else {
        match_within(c.after, c.before, c.samples)
    };
    match answer {
        Containment::Within => classified(
            Effect::Narrows,
            format!(
                "{label} {} (its `match` changed)",
                if back {
                    "matches at least what it did"
                } else {
                    "matches at most what it did"
                }
            ),
        ),
        Containment::Beyond { field, witness } => {
            let example = witness
                .map(|w| format!(", e.g. `{field}` = `{w}`"))
                .unwrap_or_else(|| format!(" on `{field}`"));
            let what = if back {
                "no longer matches calls it matched"
            } else {
                "now matches calls it did not match"
            };
            classified(Effect::Widens, format!("{label} {what}{example}"))
        }
        Containment::Redirection { field } => classified(
            Effect::Widens,
            format!("{label} now lets commands in `{field}` redirect output to files"),
        ),
        Containment::Unknown { why } => {
            classified(Effect::MayWiden, format!("{label} may widen: {why}"))
        }
    }
}

fn show(value: Option<&Value>) -> String {
    match value {
        None => "(unset)".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// A limit in comparable units: durations in milliseconds, sizes and counts as numbers.
fn magnitude(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => crate::model::Duration::parse(s)
            .ok()
            .map(|d| d.0.as_secs_f64() * 1000.0)
            .or_else(|| crate::model::Size::parse(s).ok().map(|size| size.0 as f64)),
        _ => None,
    }
}

/// A limit changed: removed (a timeout) or raised past the factor is its own effect.
fn limit(c: &FieldChange<'_>, what: &str) -> Classified {
    let is_timeout = c.path.contains("timeout");
    if is_timeout
        && (c.after.and_then(Value::as_str) == Some("none")
            || (c.before.is_some() && c.after.is_none() && c.path.ends_with("max")))
    {
        return classified(
            Effect::TimeoutRemoved,
            format!("{what}: `{}` removed: calls may run for ever", c.path),
        );
    }
    let off = |value: Option<&Value>| {
        value.and_then(Value::as_str) == Some("none") || value.and_then(Value::as_f64) == Some(0.0)
    };
    if c.path.contains("budget") && off(c.after) && !off(c.before) {
        return classified(
            Effect::LimitRaised,
            format!("{what}: `{}` switched off (`{}`)", c.path, show(c.after)),
        );
    }
    match (magnitude(c.before), magnitude(c.after)) {
        (Some(b), Some(a)) if b > 0.0 && a > b * c.limit_factor => classified(
            Effect::LimitRaised,
            format!("{what}: `{}` raised more than {}×", c.path, c.limit_factor),
        ),
        _ => classified(Effect::Schedule, format!("{what}: `{}` changed", c.path)),
    }
}

fn tool_field(c: &FieldChange<'_>) -> Classified {
    let what = format!("tool `{}`", c.name);
    // Mode patches (`modes.plan.permission.default`) are judged like the contract's fields.
    let path = match c.path.strip_prefix("modes.") {
        Some(rest) => rest.split_once('.').map_or(rest, |(_, field)| field),
        None => c.path,
    };
    let turned_off = c.before == Some(&Value::Bool(true)) && c.after != Some(&Value::Bool(true));
    let turned_on = c.before != Some(&Value::Bool(true)) && c.after == Some(&Value::Bool(true));
    match path {
        "permission.default" => match (decision(c.before), decision(c.after)) {
            (Some(b), Some(a)) if a < b => classified(
                Effect::Widens,
                format!("{what}: default permission `{b}` → `{a}`"),
            ),
            (None, Some(Decision::Allow)) => classified(
                Effect::Widens,
                format!("{what}: default permission set to `allow`"),
            ),
            // Unset (a mode's patch dropped too): what lies below decides, maybe `allow`.
            (Some(b @ (Decision::Deny | Decision::Ask)), None) => classified(
                Effect::MayWiden,
                format!(
                    "{what}: default permission `{b}` unset (`{}`): the default below decides",
                    c.path
                ),
            ),
            _ => classified(
                Effect::Narrows,
                format!(
                    "{what}: default permission `{}` → `{}`",
                    show(c.before),
                    show(c.after)
                ),
            ),
        },
        "permission.always_ask" if turned_off => classified(
            Effect::Widens,
            format!("{what}: `always_ask` dropped: its calls may run without approval"),
        ),
        "locked" => {
            let (b, a) = (
                list(c.before).unwrap_or_default(),
                list(c.after).unwrap_or_default(),
            );
            let unlocked: Vec<String> = b.into_iter().filter(|f| !a.contains(f)).collect();
            if unlocked.is_empty() {
                classified(Effect::Narrows, format!("{what}: more fields locked"))
            } else {
                classified(
                    Effect::Widens,
                    format!(
                        "{what}: {} no longer locked: later layers may loosen them",
                        codes(&unlocked)
                    ),
                )
            }
        }
        "concurrency.concurrent_safe" if turned_on => {
            let read_only =
                c.item_after.pointer("/concurrency/read_only") == Some(&Value::Bool(true));
            let scope = c
                .item_after
                .pointer("/concurrency/side_effect_scope")
                .and_then(Value::as_str)
                .unwrap_or("workspace");
            if read_only || scope == "none" {
                classified(
                    Effect::Schedule,
                    format!("{what}: may now run concurrently"),
                )
            } else {
                classified(
                    Effect::ConcurrentSideEffects,
                    format!(
                        "{what} (side effects on the `{scope}`) may now run concurrently with other calls"
                    ),
                )
            }
        }
        "concurrency.destructive" if turned_off => classified(
            Effect::ConcurrentSideEffects,
            format!("{what}: no longer `destructive`: it may share a group"),
        ),
        "concurrency.read_only" if turned_on => classified(
            Effect::MayWiden,
            format!("{what}: now `read_only`: rules for read-only tools (plan mode) may allow it"),
        ),
        "concurrency.side_effect_scope" => classified(
            Effect::MayWiden,
            format!(
                "{what}: side effects on the `{}` instead of the `{}`: rules conditioned on them (`when: side_effect_scope`) may no longer apply",
                show(c.after),
                show(c.before)
            ),
        ),
        p if p.starts_with("handler") => classified(
            Effect::RunsDifferently,
            format!(
                "{what}: `{}` changed: what runs for its calls changed",
                c.path
            ),
        ),
        "timeout.override_field"
            if c.after.is_some() && c.item_after.pointer("/timeout/max").is_none() =>
        {
            classified(
                Effect::TimeoutRemoved,
                format!(
                    "{what}: `timeout.override_field` set with no `timeout.max`: a call may choose any timeout"
                ),
            )
        }
        "budget.batch_exempt" if turned_on => classified(
            Effect::LimitRaised,
            format!("{what}: exempt from the batch budget: its output is not counted"),
        ),
        p if p.starts_with("timeout") || p.starts_with("budget") || p.starts_with("admission") => {
            limit(c, &what)
        }
        p if p.starts_with("concurrency")
            || p.starts_with("turn_control")
            || p.starts_with("on_failure") =>
        {
            classified(Effect::Schedule, format!("{what}: `{}` changed", c.path))
        }
        "aliases" => classified(
            Effect::MayWiden,
            format!("{what}: aliases changed: rules naming a tool by alias may apply differently"),
        ),
        "input_schema" => classified(
            Effect::MayWiden,
            format!("{what}: input schema changed: inputs it refused may now reach the rules"),
        ),
        _ => classified(Effect::Cosmetic, format!("{what}: `{}` changed", c.path)),
    }
}

fn engine_field(c: &FieldChange<'_>) -> Classified {
    match c.path {
        "default_permission" => match (decision(c.before), decision(c.after)) {
            (Some(b), Some(a)) if a < b => classified(
                Effect::Widens,
                format!("engine: default permission `{b}` → `{a}`"),
            ),
            _ => classified(
                Effect::Narrows,
                format!(
                    "engine: default permission `{}` → `{}`",
                    show(c.before),
                    show(c.after)
                ),
            ),
        },
        "approval_expiry" if c.after.and_then(Value::as_str) == Some("allow") => classified(
            Effect::Widens,
            "engine: an unanswered approval now allows the call",
        ),
        "approval_timeout"
            if c.item_after.get("approval_expiry").and_then(Value::as_str) == Some("allow")
                && lowered(c) =>
        {
            classified(
                Effect::Widens,
                format!(
                    "engine: an unanswered approval allows the call after {} instead of {}: asked calls run sooner without an answer",
                    show(c.after),
                    show(c.before)
                ),
            )
        }
        p if (p.ends_with("redact_fields") || p.ends_with("secret_patterns"))
            && p.starts_with("decision_log")
            && fewer(c) =>
        {
            classified(
                Effect::MayWiden,
                format!("engine: `{p}` lost entries: the decision log may record secrets in clear"),
            )
        }
        p if p.starts_with("messages") => classified(
            Effect::Schedule,
            format!("engine: `{p}` changed: what the model is told about decisions changed"),
        ),
        // The time of every hook without one of its own: one that fails open (the default)
        // lets the call through sooner.
        "hook_timeout" if lowered(c) || c.after.is_none() => classified(
            Effect::MayWiden,
            format!(
                "engine: `hook_timeout` shortened ({} → {}): a hook without a timeout of its own that times out lets the call through",
                show(c.before),
                show(c.after)
            ),
        ),
        _ => limit(c, "engine"),
    }
}

/// Whether a limit got smaller (a shorter time, a smaller size); `none` is no limit, so
/// any value after it is smaller.
fn lowered(c: &FieldChange<'_>) -> bool {
    let unlimited = |value: Option<&Value>| value.and_then(Value::as_str) == Some("none");
    let before = magnitude(c.before).or(unlimited(c.before).then_some(f64::INFINITY));
    matches!((before, magnitude(c.after)), (Some(b), Some(a)) if a < b)
}

/// Whether a list lost entries (or was removed).
fn fewer(c: &FieldChange<'_>) -> bool {
    let after = list(c.after).unwrap_or_default();
    list(c.before).is_some_and(|before| before.iter().any(|entry| !after.contains(entry)))
}

fn hook_field(c: &FieldChange<'_>) -> Classified {
    let what = format!("hook `{}`", c.name);
    match c.path {
        "disabled" if c.after == Some(&Value::Bool(true)) => classified(
            Effect::Widens,
            format!("{what} disabled: the calls it denied or asked about no longer are"),
        ),
        "on_error" if c.after.and_then(Value::as_str) != Some("fail_closed") => classified(
            Effect::Widens,
            format!("{what}: a failing hook no longer blocks the call"),
        ),
        "event" => {
            let gates = |event: Option<&Value>| {
                matches!(
                    event.and_then(Value::as_str),
                    Some(
                        "PreToolUse" | "PermissionRequest" | "pre_tool_use" | "permission_request"
                    )
                )
            };
            if gates(c.before) && !gates(c.after) {
                classified(
                    Effect::Widens,
                    format!(
                        "{what}: event `{}` → `{}`: it no longer answers for calls before they run (the calls it denied or asked about no longer are)",
                        show(c.before),
                        show(c.after)
                    ),
                )
            } else {
                let added = hook_added(c.name, c.item_after);
                classified(
                    added.effect,
                    format!("{what}: event `{}` → `{}`", show(c.before), show(c.after)),
                )
            }
        }
        "tools" | "modes" => classified(
            Effect::MayWiden,
            format!(
                "{what}: `{}` changed: it may no longer see some calls",
                c.path
            ),
        ),
        "command" | "env" => classified(
            Effect::RunsDifferently,
            format!("{what}: `{}` changed: what runs changed", c.path),
        ),
        // Shortened, or dropped for the engine's `hook_timeout`, which may be shorter.
        p if p.contains("timeout")
            && c.item_after.get("on_error").and_then(Value::as_str) != Some("fail_closed")
            && (lowered(c) || c.after.is_none()) =>
        {
            classified(
                Effect::Widens,
                format!(
                    "{what}: `{p}` shortened ({} → {}): a hook that times out lets the call through",
                    show(c.before),
                    show(c.after)
                ),
            )
        }
        _ => limit(c, &what),
    }
}

fn mcp_server_field(c: &FieldChange<'_>) -> Classified {
    let what = format!("MCP server `{}`", c.name);
    let top = c.path.split('.').next().unwrap_or(c.path);
    match top {
        "trust_annotations" if c.after == Some(&Value::Bool(true)) => classified(
            Effect::Widens,
            format!(
                "{what}: its tools' own annotations now fill their contracts' flags (`read_only`…): rules for read-only tools may allow them"
            ),
        ),
        "command" | "url" | "env" | "set_env" | "cwd" | "headers" => classified(
            Effect::RunsDifferently,
            format!(
                "{what}: `{}` changed: what runs for its tools changed",
                c.path
            ),
        ),
        "description" => classified(Effect::Cosmetic, format!("{what}: description changed")),
        _ => limit(c, &what),
    }
}

fn commands_field(c: &FieldChange<'_>) -> Classified {
    let loosened = c.path.ends_with("read_only") && c.after == Some(&Value::Bool(true))
        || c.path.starts_with("env.") && c.after.and_then(Value::as_str) == Some("harmless");
    if loosened {
        classified(
            Effect::Widens,
            format!(
                "command table: `{}` now `{}`: rules may allow more command lines",
                c.path,
                show(c.after)
            ),
        )
    } else {
        classified(
            Effect::MayWiden,
            format!(
                "command table: `{}` changed: shell rules may judge command lines differently",
                c.path
            ),
        )
    }
}
