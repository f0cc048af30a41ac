//! The review of a policy change as a reviewer reads it: a verdict, the counts by risk, the
//! changes sorted by risk with the effect of each, and the decision diff. Rendered as text,
//! Markdown (a pull-request comment), JSON (`toolgate schema diff`) or GitHub annotations.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::decisions::{DecisionChange, DecisionDiff, Outcome};
use super::{Change, ChangeKind, Risk};
use crate::diagnostics::render::github::{escape_data, escape_property};

/// A change with the place that sets it: in HEAD, or in BASE for removals.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct LocatedChange {
    /// The change.
    #[serde(flatten)]
    pub change: Change,
    /// The file that sets it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Its line (from 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Its column (from 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
}

/// Changes per risk level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RiskCounts {
    /// High-risk changes.
    pub high: usize,
    /// Medium-risk changes.
    pub medium: usize,
    /// Low-risk changes.
    pub low: usize,
}

/// The review of BASE → HEAD.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Review {
    /// The highest risk found (`null`: no change in effect). A call that moves toward
    /// `allow` in the decision diff makes it `high` whatever the changes were rated.
    pub verdict: Option<Risk>,
    /// Changes per risk.
    pub counts: RiskCounts,
    /// The changes, highest risk first (stable within a level).
    pub changes: Vec<LocatedChange>,
    /// The calls decided differently.
    pub decisions: DecisionDiff,
    /// Lines of the replayed decision log that could not be replayed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replay_skipped: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How many decision changes the Markdown and human renderings list.
const SHOWN_DECISIONS: usize = 50;

impl Review {
    /// Builds the review: sorts the changes, counts them, sets the verdict.
    pub fn new(mut changes: Vec<LocatedChange>, decisions: DecisionDiff) -> Self {
        changes.sort_by_key(|c| std::cmp::Reverse(c.change.risk));
        let mut counts = RiskCounts::default();
        for change in &changes {
            match change.change.risk {
                Risk::High => counts.high += 1,
                Risk::Medium => counts.medium += 1,
                Risk::Low => counts.low += 1,
            }
        }
        let evidence = (decisions.loosened() > 0).then_some(Risk::High);
        let verdict = changes.iter().map(|c| c.change.risk).chain(evidence).max();
        Review {
            verdict,
            counts,
            changes,
            decisions,
            replay_skipped: 0,
        }
    }

    /// Whether the review reaches a risk level (for `--fail-on`).
    pub fn reaches(&self, level: Risk) -> bool {
        self.verdict.is_some_and(|v| v >= level)
    }

    /// The one-line verdict: `high risk: 3 changes (…); 2 of 140 calls decided differently,
    /// 2 toward allow`.
    pub fn verdict_line(&self) -> String {
        match self.verdict {
            None => "no change in effect".to_owned(),
            Some(verdict) => format!("{} risk: {}", verdict.as_str(), self.summary()),
        }
    }

    fn summary(&self) -> String {
        let RiskCounts { high, medium, low } = self.counts;
        let mut line = format!(
            "{} ({high} high, {medium} medium, {low} low)",
            count(self.changes.len(), "change", "changes"),
        );
        let changed = self.decisions.changes.len();
        if changed > 0 {
            line.push_str(&format!(
                "; {changed} of {} decided differently, {} toward allow",
                count(self.decisions.evaluated, "call", "calls"),
                self.decisions.loosened()
            ));
        }
        line
    }

    /// `deny → allow: 3, allow → ask: 1`.
    fn directions(&self) -> String {
        self.decisions
            .directions
            .iter()
            .map(|d| format!("{}: {}", d.direction, d.count))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Plain text: the verdict, one block per change, then the changed calls.
    pub fn render_human(&self) -> String {
        if self.verdict.is_none() {
            return "no change in effect\n".into();
        }
        let mut out = String::new();
        for c in &self.changes {
            let place = location(c).map(|p| format!("  ({p})")).unwrap_or_default();
            out.push_str(&format!(
                "{:<6} {}{place}\n",
                c.change.risk.as_str(),
                c.change.reason
            ));
            if let Some(values) = values(&c.change, false) {
                out.push_str(&format!("       {values}\n"));
            }
        }
        if !self.decisions.changes.is_empty() {
            out.push_str(&format!("\ndecisions: {}\n", self.directions()));
            for d in self.decisions.changes.iter().take(SHOWN_DECISIONS) {
                out.push_str(&format!(
                    "  {:<14} {} {}{}  ({} → {})  [{}]\n",
                    d.direction,
                    d.tool,
                    d.input,
                    modes(d),
                    outcome(&d.before, &d.after, false),
                    outcome(&d.after, &d.before, false),
                    origins(&d.origins)
                ));
            }
            if let Some(rest) = self
                .decisions
                .changes
                .len()
                .checked_sub(SHOWN_DECISIONS)
                .filter(|n| *n > 0)
            {
                out.push_str(&format!("  … and {rest} more\n"));
            }
        }
        if !self.decisions.staged.is_empty() {
            out.push_str(&format!(
                "\nnot enforced yet: rules that would change {} once enforced\n",
                count(self.decisions.staged.len(), "call", "calls")
            ));
            for s in self.decisions.staged.iter().take(SHOWN_DECISIONS) {
                out.push_str(&format!(
                    "  {} → {}  {} {}  by {}  [{}]\n",
                    s.decision,
                    s.would,
                    s.tool,
                    s.input,
                    s.rules.join(", "),
                    origins(&s.origins)
                ));
            }
        }
        out.push_str(&format!("{}\n", self.verdict_line()));
        out
    }

    /// A pull-request comment.
    pub fn render_markdown(&self) -> String {
        let Some(verdict) = self.verdict else {
            return "**toolgate diff**: no change in effect.\n".into();
        };
        let mut out = format!(
            "**toolgate diff: {} risk** — {}\n\n",
            verdict.as_str(),
            self.summary()
        );
        let RiskCounts { high, medium, low } = self.counts;
        out.push_str(&format!(
            "| risk | changes |\n| --- | --- |\n| high | {high} |\n| medium | {medium} |\n| low | {low} |\n"
        ));
        if !self.changes.is_empty() {
            out.push_str("\n### Changes\n\n| risk | change | where |\n| --- | --- | --- |\n");
            for c in &self.changes {
                let mut text = cell(&c.change.reason);
                if let Some(values) = values(&c.change, true) {
                    text.push_str("<br>");
                    text.push_str(&cell(&values));
                }
                let at = location(c).map(|p| format!("`{p}`")).unwrap_or_default();
                out.push_str(&format!("| {} | {text} | {at} |\n", c.change.risk.as_str()));
            }
            for c in &self.changes {
                let (Some(item), ChangeKind::Added | ChangeKind::Removed) = (
                    c.change.after.as_ref().or(c.change.before.as_ref()),
                    c.change.kind,
                ) else {
                    continue;
                };
                if c.change.field.is_some() {
                    continue;
                }
                out.push_str(&format!(
                    "\n<details><summary>{}</summary>\n\n```json\n{}\n```\n\n</details>\n",
                    html(&c.change.describe()),
                    serde_json::to_string_pretty(item).unwrap_or_default()
                ));
            }
        }
        if !self.decisions.changes.is_empty() {
            out.push_str(&format!(
                "\n### Decisions\n\n{} of {} decided differently: {}\n\n",
                self.decisions.changes.len(),
                count(self.decisions.evaluated, "call", "calls"),
                self.directions()
                    .split(", ")
                    .map(|d| format!("`{d}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            out.push_str(
                "| change | call | before | after | from |\n| --- | --- | --- | --- | --- |\n",
            );
            for d in self.decisions.changes.iter().take(SHOWN_DECISIONS) {
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} |\n",
                    cell(&format!("`{}`", d.direction)),
                    cell(&format!("`{} {}`{}", d.tool, d.input, modes(d))),
                    cell(&outcome(&d.before, &d.after, true)),
                    cell(&outcome(&d.after, &d.before, true)),
                    cell(&origins(&d.origins)),
                ));
            }
            if let Some(rest) = self
                .decisions
                .changes
                .len()
                .checked_sub(SHOWN_DECISIONS)
                .filter(|n| *n > 0)
            {
                out.push_str(&format!(
                    "\n… and {rest} more (`--format json` lists them all).\n"
                ));
            }
        }
        if !self.decisions.staged.is_empty() {
            out.push_str(&format!(
                "\n### Not enforced yet\n\nRules with `enforcement: warn` or `audit` would change {} once enforced:\n\n| change | call | by | from |\n| --- | --- | --- | --- |\n",
                count(self.decisions.staged.len(), "call", "calls")
            ));
            for s in self.decisions.staged.iter().take(SHOWN_DECISIONS) {
                out.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    cell(&format!("`{} → {}`", s.decision, s.would)),
                    cell(&format!("`{} {}`", s.tool, s.input)),
                    cell(
                        &s.rules
                            .iter()
                            .map(|r| format!("`{r}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    cell(&origins(&s.origins)),
                ));
            }
        }
        if self.replay_skipped > 0 {
            out.push_str(&format!(
                "\n{} of the decision log could not be replayed.\n",
                count(self.replay_skipped, "line", "lines")
            ));
        }
        out
    }

    /// The JSON form (`toolgate schema diff`).
    pub fn render_json(&self) -> String {
        format!(
            "{}\n",
            serde_json::to_string_pretty(self).unwrap_or_default()
        )
    }

    /// GitHub workflow annotations: one per change at its line in HEAD (errors for high
    /// risk), and one for the calls that move toward allow.
    pub fn render_github(&self) -> String {
        let mut out = String::new();
        for c in &self.changes {
            let level = match c.change.risk {
                Risk::High => "error",
                Risk::Medium => "warning",
                Risk::Low => "notice",
            };
            let title = escape_property(&format!("toolgate diff: {} risk", c.change.risk.as_str()));
            let place = match (&c.file, c.line, c.column) {
                (Some(file), Some(line), Some(column)) => {
                    format!(" file={},line={line},col={column},", escape_property(file))
                }
                _ => " ".to_owned(),
            };
            let mut message = c.change.reason.clone();
            if let Some(values) = values(&c.change, false) {
                message.push_str(&format!(" ({values})"));
            }
            out.push_str(&format!(
                "::{level}{place}title={title}::{}\n",
                escape_data(&message)
            ));
        }
        let loosened = self.decisions.loosened();
        if loosened > 0 {
            let examples: Vec<String> = self
                .decisions
                .changes
                .iter()
                .filter(|d| d.loosens)
                .take(3)
                .map(|d| format!("{} {} {}", d.direction, d.tool, d.input))
                .collect();
            out.push_str(&format!(
                "::error title={}::{}\n",
                escape_property("toolgate diff: decisions"),
                escape_data(&format!(
                    "{} toward allow, e.g. {}",
                    count(loosened, "call moves", "calls move"),
                    examples.join("; ")
                ))
            ));
        }
        out
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn location(c: &LocatedChange) -> Option<String> {
    match (&c.file, c.line, c.column) {
        (Some(file), Some(line), Some(column)) => Some(format!("{file}:{line}:{column}")),
        _ => None,
    }
}

fn modes(d: &DecisionChange) -> String {
    if d.modes.is_empty() {
        String::new()
    } else {
        format!(" in mode {}", d.modes.join(", "))
    }
}

/// Where the calls of a row come from.
fn origins(origins: &[super::decisions::Origin]) -> String {
    origins
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// An outcome: its decision and rule, and its timeout and group where they differ from the
/// other side's.
fn outcome(o: &Outcome, other: &Outcome, code: bool) -> String {
    let quote = |s: &str| if code { format!("`{s}`") } else { s.to_owned() };
    let mut text = o.decision.clone();
    if let Some(rule) = &o.rule {
        text.push_str(&format!(" by {}", quote(rule)));
    }
    if o.timeout_ms != other.timeout_ms {
        match o.timeout_ms {
            Some(ms) => text.push_str(&format!(", timeout {ms}ms")),
            None => text.push_str(", no timeout"),
        }
    }
    if o.group != other.group {
        text.push_str(&format!(", {}", o.group));
    }
    text
}

/// A Markdown table cell: pipes escaped, line breaks as `<br>`.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', "<br>")
}

fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `field: before → after` for a changed value, values readable (a `match` as its patterns);
/// `None` for added and removed items.
fn values(change: &Change, code: bool) -> Option<String> {
    let field = change.field.as_deref()?;
    let show = |v: &Option<Value>| match v {
        None => "(unset)".to_owned(),
        Some(value) if field == "match" => readable_match(value, code),
        Some(value) if field == "examples" => {
            let n = |key: &str| value.get(key).and_then(Value::as_array).map_or(0, Vec::len);
            format!("{} to match, {} not to match", n("match"), n("not_match"))
        }
        Some(value) => span(&compact(value), code),
    };
    Some(format!(
        "{}: {} → {}",
        span(field, code),
        show(&change.before),
        show(&change.after)
    ))
}

fn span(text: &str, code: bool) -> String {
    if code {
        // A backtick inside needs a longer fence.
        if text.contains('`') {
            format!("`` {text} ``")
        } else {
            format!("`{text}`")
        }
    } else {
        text.to_owned()
    }
}

/// A value on one line: strings without quotes unless they hold control characters.
fn compact(value: &Value) -> String {
    match value {
        Value::String(s) if !s.chars().any(char::is_control) => s.clone(),
        other => other.to_string(),
    }
}

/// A rule's `match` as its arguments and patterns: `command: shell `sleep *`, `seq *``.
pub fn readable_match(value: &Value, code: bool) -> String {
    let Some(fields) = value.as_object() else {
        return span(&compact(value), code);
    };
    fields
        .iter()
        .map(|(field, matcher)| {
            let kinds: Vec<String> = match matcher.as_object() {
                Some(kinds) => kinds
                    .iter()
                    .map(|(kind, patterns)| {
                        let patterns: Vec<String> = match patterns {
                            Value::Array(items) => {
                                items.iter().map(|p| span(&compact(p), code)).collect()
                            }
                            other => vec![span(&compact(other), code)],
                        };
                        format!("{kind} {}", patterns.join(", "))
                    })
                    .collect(),
                None => vec![span(&compact(matcher), code)],
            };
            format!("{field}: {}", kinds.join("; "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The JSON Schema of `toolgate diff --format json`, as the model generates it now.
pub fn generated_schema() -> Value {
    crate::model::schema::generate::<Review>(
        "diff.schema.json",
        "toolgate diff report",
        "The review of a policy change: verdict, changes rated by effect, and the calls decided differently.",
    )
}

/// The published schema of `toolgate diff --format json` (`schemas/diff.schema.json`).
pub fn schema() -> Value {
    serde_json::from_str(include_str!("../../schemas/diff.schema.json"))
        .unwrap_or_else(|_| generated_schema())
}
