//! Rule mistakes that would silently change what a rule decides, found by reading a rule's
//! `match` on its own and against the input schemas of the tools it covers. Part of the
//! semantic stage ([`super::semantic`] places each finding at the pointer it names).
//!
//! - **A matcher that holds for every call** (an error, `empty_matcher`): an empty pattern
//!   list (`shell: []`), an empty `match: {}`, or a selector whose matcher sets no condition
//!   (`file_path: {}`). An allow rule written so would allow every call of its tools.
//! - **A selector the input schema does not define** (`unknown_field`): `comand` on Bash
//!   never resolves, so a deny rule on it never fires. An error when every covered tool's
//!   schema rules the field out (`additionalProperties: false`, or a parent that is never an
//!   object); a warning when a schema leaves it open, a tool has no input schema, or only
//!   some covered tools define it (then only for the tools the rule names: those a glob such
//!   as `*` reaches may well lack it).
//! - **A text pattern on a path or a URL** (a `loose_pattern` warning): `glob` or `regex`
//!   on `file_path`, `path` or `*_path` compares the text, not the place (`src/**` matches
//!   `src/../../x`); a wildcard in a URL glob's host (`https://docs.rs*`) matches other hosts.
//! - **A matcher that can never hold on a field the schema defines** (a `rule_never_matches`
//!   warning): `equals` a value of the wrong type or outside the field's `enum`, `exists:
//!   false` on a required field, string patterns on a field that is never a string. Inputs
//!   are validated against the schema before rules are consulted, so such a value never
//!   reaches the rule.
//!
//! The schema is read as far as it can be told for certain (`properties`, `required`,
//! `patternProperties`, `additionalProperties`, `items`, `prefixItems`, local `$ref`s,
//! `allOf`/`anyOf`/`oneOf`, `type`, `enum`, `const`); anything else counts as "may hold", so
//! every finding is sure.

use std::borrow::Cow;

use serde_json::Value;

use crate::diagnostics::{Code, Diagnostic, Severity, closest};
use crate::load::spans::{join_pointer, pointer_segments};
use crate::model::rule::{ArgMatcher, OneOrMany, Rule};
use crate::policy::matcher::json_eq;

/// Where in the merged set a finding points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Place {
    /// The value at this effective pointer.
    Value(String),
    /// The key of the member at this effective pointer.
    Key(String),
}

/// A diagnostic, the place it is about, and related places with their labels.
#[derive(Debug)]
pub(super) struct Finding {
    pub diagnostic: Diagnostic,
    pub place: Place,
    pub related: Vec<(String, Place)>,
}

/// A tool a rule covers.
#[derive(Debug, Clone, Copy)]
pub(super) struct CoveredTool<'a> {
    /// Its canonical name.
    pub name: &'a str,
    /// Its input schema, if it has one.
    pub input_schema: Option<&'a Value>,
    /// Whether the rule's `tools` names it (by name or alias) rather than reaching it only
    /// through a glob such as the default `*`: a tool a glob reaches may well lack the field.
    pub named: bool,
}

/// Matchers that hold for every call: an empty `match`, an empty pattern list, a selector
/// with no condition. `index` is the rule's place in the merged rule list.
pub(super) fn vacuous_matchers(rule: &Rule, index: usize) -> Vec<Finding> {
    let mut findings = Vec::new();
    let Some(matchers) = &rule.matchers else {
        return findings;
    };
    let base = format!("/rules/{index}/match");
    let name = &rule.name;
    if matchers.is_empty() {
        findings.push(Finding {
            diagnostic: Diagnostic::new(
                Code::SemanticEmptyMatcher,
                format!("rule `{name}` has an empty `match`, which holds for every call"),
            )
            .with_help("name the argument conditions the rule is meant to require, or remove `match` if the rule is meant for every call of its tools"),
            place: Place::Value(base),
            related: Vec::new(),
        });
        return findings;
    }
    for (selector, matcher) in matchers {
        let at = join_pointer(&base, selector);
        let conditions = conditions(matcher);
        for condition in &conditions {
            if let Condition::Patterns(kind, []) = condition {
                findings.push(Finding {
                    diagnostic: Diagnostic::new(
                        Code::SemanticEmptyMatcher,
                        format!("empty `{kind}` list on `{selector}` in rule `{name}`: a matcher without patterns holds for every call"),
                    )
                    .with_help(format!("list at least one pattern, or remove `{kind}`")),
                    place: Place::Value(format!("{at}/{kind}")),
                    related: Vec::new(),
                });
            }
        }
        // (An empty pattern list is a condition of its own, reported above.)
        if conditions.is_empty() {
            findings.push(Finding {
                diagnostic: Diagnostic::new(
                    Code::SemanticEmptyMatcher,
                    format!("the matcher on `{selector}` in rule `{name}` sets no condition, so it holds for every call"),
                )
                .with_help("give it a condition (`equals`, `exists`, `glob`, `regex`, `reaches`, `path`, `shell`, `read_only`, `workspace`, `policy_files` or `git_runs`; `equals: null` reads as no `equals`), or remove the selector"),
                place: Place::Value(at),
                related: Vec::new(),
            });
        }
    }
    findings
}

/// One condition of a matcher.
enum Condition<'a> {
    Equals(&'a Value),
    Exists(bool),
    /// A pattern kind (`glob`, `regex`, `path`, `shell`) and its patterns.
    Patterns(&'static str, &'a [String]),
    /// Another condition on string values, without a pattern list (`read_only`: the value,
    /// read as a command line, only reads; `workspace`, `policy_files`, `git_runs`: where
    /// the location it names lies).
    OnStrings(&'static str),
}

/// The conditions a matcher sets (modifiers such as `allow_redirection` are not conditions).
fn conditions(matcher: &ArgMatcher) -> Vec<Condition<'_>> {
    // Every field named: a matcher kind added to the model must be classified here.
    let ArgMatcher {
        glob,
        regex,
        reaches,
        equals,
        exists,
        path,
        shell,
        read_only,
        workspace,
        policy_files,
        git_runs,
        allow_redirection: _,
        reaches_from: _,
    } = matcher;
    let mut conditions = Vec::new();
    if let Some(value) = equals {
        conditions.push(Condition::Equals(value));
    }
    if let Some(exists) = exists {
        conditions.push(Condition::Exists(*exists));
    }
    let on_strings = [
        ("read_only", read_only.is_some()),
        ("workspace", workspace.is_some()),
        ("policy_files", policy_files.is_some()),
        ("git_runs", git_runs.is_some()),
    ];
    for (kind, set) in on_strings {
        if set {
            conditions.push(Condition::OnStrings(kind));
        }
    }
    let patterns = [
        ("glob", glob),
        ("regex", regex),
        ("reaches", reaches),
        ("path", path),
        ("shell", shell),
    ];
    for (kind, list) in patterns {
        if let Some(list) = list {
            conditions.push(Condition::Patterns(kind, OneOrMany::as_slice(list)));
        }
    }
    conditions
}

/// Selectors the covered tools' input schemas do not define, and matchers that can never
/// hold on the fields they do define.
pub(super) fn against_schemas(
    rule: &Rule,
    index: usize,
    tools: &[CoveredTool<'_>],
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let Some(matchers) = &rule.matchers else {
        return findings;
    };
    if tools.is_empty() {
        return findings;
    }
    let base = format!("/rules/{index}/match");
    for (selector, matcher) in matchers {
        let Some(segments) = selector_segments(selector) else {
            // A malformed pointer is reported where the rule is compiled.
            continue;
        };
        let at = join_pointer(&base, selector);
        let fields: Vec<(&str, Field<'_>)> = tools
            .iter()
            .map(|tool| {
                let field = tool
                    .input_schema
                    .map_or(Field::NoSchema, |schema| lookup(schema, &segments));
                (tool.name, field)
            })
            .collect();
        if let Some((diagnostic, lacking)) =
            unknown_field(&rule.name, selector, &segments, &fields, tools)
        {
            findings.push(Finding {
                diagnostic,
                place: Place::Key(at.clone()),
                related: schemas_of(lacking.into_iter(), tools),
            });
        }
        let allows = rule.decision == Some(crate::model::Decision::Allow);
        if let Some((diagnostic, kind)) =
            loose_pattern(&rule.name, allows, selector, &segments, matcher)
        {
            findings.push(Finding {
                diagnostic,
                place: Place::Value(format!("{at}/{kind}")),
                related: Vec::new(),
            });
        }
        if let Some((diagnostic, kind, tool)) = never_holds(&rule.name, selector, matcher, &fields)
        {
            findings.push(Finding {
                diagnostic,
                place: Place::Value(format!("{at}/{kind}")),
                related: schemas_of(std::iter::once(tool), tools),
            });
        }
    }
    findings
}

/// The `loose_pattern` warning for a `glob` or `regex` on a field that names a file or a web
/// address, and the matcher kind it is about.
fn loose_pattern(
    rule: &str,
    allows: bool,
    selector: &str,
    segments: &[Cow<'_, str>],
    matcher: &ArgMatcher,
) -> Option<(Diagnostic, &'static str)> {
    let field = segments.last()?.as_ref();
    let names_path = field == "path" || field.ends_with("_path") || field.ends_with("Path");
    let names_url = field == "url" || field.ends_with("_url");
    let names_command = field == "command" || field == "cmd" || field.ends_with("_command");
    if let Some(finding) = odd_path_pattern(rule, matcher) {
        return Some(finding);
    }
    // An empty list is `empty_matcher`'s to report.
    let listed = |patterns: &Option<OneOrMany<String>>| {
        patterns.as_ref().is_some_and(|p| !p.as_slice().is_empty())
    };
    let kind = if listed(&matcher.glob) {
        "glob"
    } else if listed(&matcher.regex) {
        "regex"
    } else if names_path && matcher.equals.as_ref().is_some_and(|v| v.is_string()) {
        "equals"
    } else {
        return None;
    };
    // A deny's unanchored regex is a net anywhere in the line (`curl.*\| *sh`), on top of
    // what the commands are judged by; anchored, or in an allow, it judges the spelling.
    let spelled = allows
        || kind == "glob"
        || matcher
            .regex
            .as_ref()
            .is_some_and(|r| r.as_slice().iter().any(|re| re.starts_with('^')));
    if names_command && spelled {
        let message = format!(
            "rule `{rule}`: `{kind}` compares the text of the whole command line `{selector}`, not the commands it runs (`true; curl x`, `\\curl x`, `/usr/bin/curl x` and `$(curl x)` spell `curl x` otherwise)"
        );
        let help = "match commands with `shell:` (each simple command of the line, its options in every spelling)";
        return Some((loose_warning(message, help), kind));
    }
    if names_path {
        let example = if kind == "equals" {
            "`./src/x`, its absolute path and a link to it are other texts"
        } else {
            "`src/**` matches `src/../../etc/passwd`"
        };
        let message = format!(
            "rule `{rule}`: `{kind}` compares the text of `{selector}`, not the file it names ({example})"
        );
        let help = "match the location with `path:` (anchored at the workspace, `..` and links resolved) or `workspace: inside`";
        return Some((loose_warning(message, help), kind));
    }
    let globs = matcher.glob.as_ref().filter(|_| names_url)?;
    let loose = globs.as_slice().iter().find(|glob| {
        glob.split_once("://").is_some_and(|(_, rest)| {
            let host = rest.split('/').next().unwrap_or(rest);
            host.contains(['*', '?', '[', '{'])
        })
    })?;
    let message = format!(
        "rule `{rule}`: the host of `{loose}` has a wildcard, which also matches other hosts (`…evil.example/`, `…@10.0.0.1/`)"
    );
    let help = "end the host with `/` (`https://docs.rs/*`), or name each host";
    Some((loose_warning(message, help), "glob"))
}

/// The `loose_pattern` warning with `message` and `help`.
fn loose_warning(message: String, help: &str) -> Diagnostic {
    Diagnostic::new(Code::SemanticLoosePattern, message).with_help(help)
}

/// A `path` pattern that names less than it seems to: a folder written with a trailing `/`
/// (not the files in it), white space at an end, `~user`, a variable other than `$HOME`, a
/// backslash before a character that needs no escape (`conf\\db.yml`: a separator to
/// Windows, an escape in a pattern).
fn odd_path_pattern(rule: &str, matcher: &ArgMatcher) -> Option<(Diagnostic, &'static str)> {
    let patterns = matcher.path.as_ref()?;
    patterns.as_slice().iter().find_map(|pattern| {
        let home_variable = ["$HOME", "${HOME}"]
            .iter()
            .any(|home| pattern.starts_with(home));
        let (why, help) = if pattern.len() > 1 && pattern.ends_with('/') {
            (
                "names the folder itself, not the files in it".to_owned(),
                format!(
                    "write `{pattern}**` for what it holds (and keep `{}` for the folder)",
                    pattern.trim_end_matches('/')
                ),
            )
        } else if pattern.trim() != pattern {
            (
                "has white space at an end, which the paths it is meant for do not".to_owned(),
                "remove the white space".to_owned(),
            )
        } else if pattern.starts_with('~') && !pattern.starts_with("~/") && pattern != "~" {
            (
                "starts with `~user`, which patterns do not expand".to_owned(),
                "write the folder's absolute path, or `~/…` for the home folder".to_owned(),
            )
        } else if pattern.contains('$') && !(home_variable && pattern.matches('$').count() == 1) {
            (
                "holds a variable, which patterns do not expand (only a leading `$HOME`)"
                    .to_owned(),
                "write the path it stands for".to_owned(),
            )
        } else if pattern
            .split('\\')
            .skip(1)
            .any(|after| !after.starts_with(['[', ']', '{', '}', '*', '?', '\\', ',']))
        {
            (
                "holds a backslash, which escapes the next character in a pattern".to_owned(),
                "separate folders with `/`".to_owned(),
            )
        } else {
            return None;
        };
        let message = format!("rule `{rule}`: the path pattern `{pattern}` {why}");
        Some((loose_warning(message, &help), "path"))
    })
}

/// Related places for a finding about these tools' input: each one's input schema, or the
/// tool itself when it has none (the first few tools).
fn schemas_of<'a>(
    names: impl Iterator<Item = &'a str>,
    tools: &[CoveredTool<'_>],
) -> Vec<(String, Place)> {
    const SHOWN: usize = 3;
    names
        .take(SHOWN)
        .map(|name| {
            let tool = join_pointer("/tools", name);
            let has_schema = tools
                .iter()
                .any(|tool| tool.name == name && tool.input_schema.is_some());
            if has_schema {
                (
                    format!("the input schema of `{name}`"),
                    Place::Key(format!("{tool}/input_schema")),
                )
            } else {
                (format!("`{name}` is defined here"), Place::Key(tool))
            }
        })
        .collect()
}

/// A selector's path from the input's root: one field name, or a JSON pointer's tokens.
fn selector_segments(selector: &str) -> Option<Vec<Cow<'_, str>>> {
    if selector.starts_with('/') {
        pointer_segments(selector)
    } else {
        Some(vec![Cow::Borrowed(selector)])
    }
}

/// The `unknown_field` diagnostic for a selector, if a covered tool does not define it, and
/// the tools it names.
fn unknown_field<'a>(
    rule: &str,
    selector: &str,
    segments: &[Cow<'_, str>],
    fields: &[(&'a str, Field<'_>)],
    tools: &[CoveredTool<'_>],
) -> Option<(Diagnostic, Vec<&'a str>)> {
    let mut lacking: Vec<&(&str, Field<'_>)> = fields
        .iter()
        .filter(|(_, field)| !matches!(field, Field::Defined { .. }))
        .collect();
    let some_define = lacking.len() < fields.len();
    if some_define {
        // Only the tools the rule names count: those a glob reaches may lack the field.
        let named = |name: &str| tools.iter().any(|tool| tool.name == name && tool.named);
        lacking.retain(|(tool, _)| named(tool));
    }
    if lacking.is_empty() {
        return None;
    }
    let names: Vec<&'a str> = lacking.iter().map(|(tool, _)| *tool).collect();
    let tools = quoted_list(names.iter().copied());
    let not_defined = if selector.starts_with('/') {
        format!("`{selector}` names no place in the input of {tools}")
    } else {
        format!("`{selector}` is not an input field of {tools}")
    };
    let all = |test: fn(&Field<'_>) -> bool| lacking.iter().all(|(_, field)| test(field));
    let suggestion = suggestion(segments, fields).map(|close| format!("did you mean `{close}`?"));
    let (message, help, severity) = if some_define {
        (
            format!(
                "{not_defined}: rule `{rule}` covers {} but never matches {} calls",
                if lacking.len() == 1 { "it" } else { "them" },
                if lacking.len() == 1 { "its" } else { "their" },
            ),
            "narrow the rule's `tools` to the tools that have the field, or write a rule per tool"
                .to_owned(),
            Severity::Warning,
        )
    } else if all(|field| matches!(field, Field::Forbidden { .. })) {
        let help = suggestion.unwrap_or_else(|| match known_names(fields).as_slice() {
            [] => "the input schema declares no fields here; fix the selector or the schema"
                .to_owned(),
            known => format!(
                "the input schema declares {}",
                quoted_list(known.iter().copied())
            ),
        });
        (
            format!("{not_defined}, so the matcher of rule `{rule}` never sees a value"),
            help,
            Severity::Error,
        )
    } else if all(|field| matches!(field, Field::NoSchema)) {
        let has = if lacking.len() == 1 { "has" } else { "have" };
        (
            format!("{tools} {has} no input schema, so `{selector}` in rule `{rule}` cannot be checked"),
            "declare an `input_schema` (with `additionalProperties: false`) so that a misspelt selector is an error".to_owned(),
            Severity::Warning,
        )
    } else {
        (
            format!("{not_defined}: the matcher of rule `{rule}` sees a value only if a call passes a field the schema does not list"),
            suggestion.unwrap_or_else(|| {
                "declare the field in the input schema (and set `additionalProperties: false` so that misspelt fields are errors), or fix the selector".to_owned()
            }),
            Severity::Warning,
        )
    };
    let diagnostic = Diagnostic::new(Code::SemanticUnknownField, message)
        .with_help(help)
        .with_severity(severity);
    Some((diagnostic, names))
}

/// A declared name close to the segment where the lookup failed.
fn suggestion<'s>(segments: &[Cow<'_, str>], fields: &[(&str, Field<'s>)]) -> Option<&'s str> {
    fields.iter().find_map(|(_, field)| match field {
        Field::Forbidden { depth, candidates } | Field::Open { depth, candidates } => segments
            .get(*depth)
            .and_then(|segment| closest(segment, candidates.iter().copied())),
        Field::Defined { .. } | Field::NoSchema => None,
    })
}

/// The names declared where the lookup failed, across tools, without repeats.
fn known_names<'s>(fields: &[(&str, Field<'s>)]) -> Vec<&'s str> {
    let mut known: Vec<&str> = Vec::new();
    for (_, field) in fields {
        if let Field::Forbidden { candidates, .. } | Field::Open { candidates, .. } = field {
            for name in candidates {
                if !known.contains(name) {
                    known.push(name);
                }
            }
        }
    }
    known
}

/// `` `a`, `b` `` (at most five names, then how many more).
fn quoted_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    const SHOWN: usize = 5;
    let names: Vec<&str> = names.collect();
    let mut text = names
        .iter()
        .take(SHOWN)
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// The `rule_never_matches` diagnostic when the matcher can hold for no covered tool, with
/// the matcher kind to point at.
fn never_holds<'a>(
    rule: &str,
    selector: &str,
    matcher: &ArgMatcher,
    fields: &[(&'a str, Field<'_>)],
) -> Option<(Diagnostic, &'static str, &'a str)> {
    let conditions = conditions(matcher);
    let mut first_failure = None;
    for (tool, field) in fields {
        match field {
            Field::Open { .. } | Field::NoSchema => return None,
            // Never present: only `exists: false` holds.
            Field::Forbidden { .. } => {
                if conditions
                    .iter()
                    .all(|condition| matches!(condition, Condition::Exists(false)))
                {
                    return None;
                }
            }
            Field::Defined { exact: false, .. } => return None,
            Field::Defined {
                schemas,
                required,
                exact: true,
            } => {
                let failure = conditions
                    .iter()
                    .find_map(|condition| fails(condition, schemas, *required));
                match failure {
                    None => return None,
                    Some(failure) => {
                        first_failure.get_or_insert((*tool, failure));
                    }
                }
            }
        }
    }
    // Only a field some tool defines: an undefined one is `unknown_field`'s to report.
    let (tool, failure) = first_failure?;
    let (message, help, kind) = match failure {
        Failure::Equals(value, allowed) => (
            format!("rule `{rule}` can never match: `{selector}` never equals `{value}`, the input schema of `{tool}` allows only {allowed}"),
            "inputs are validated against the tool's input schema before rules are consulted; match a value the schema allows".to_owned(),
            "equals",
        ),
        Failure::Required => (
            format!("rule `{rule}` can never match: the input schema of `{tool}` requires `{selector}`, so `exists: false` never holds"),
            "a call without a required field fails validation before rules are consulted; remove the condition or the rule".to_owned(),
            "exists",
        ),
        Failure::NotAString(kind, allowed) => (
            format!("rule `{rule}` can never match: `{kind}` matches strings, and `{selector}` of `{tool}` is {allowed}"),
            "match other values with `equals`".to_owned(),
            kind,
        ),
    };
    Some((
        Diagnostic::new(Code::SemanticRuleNeverMatches, message).with_help(help),
        kind,
        tool,
    ))
}

/// Why a condition can never hold on a field.
enum Failure {
    /// `equals` a value the schema rejects: the value, and what the schema allows.
    Equals(String, String),
    /// `exists: false` on a required field.
    Required,
    /// A pattern kind on a field that is never a string (nor a list of strings).
    NotAString(&'static str, String),
}

/// Why `condition` can never hold on a field with these schemas (any of them may apply),
/// or `None` when it may hold.
fn fails(condition: &Condition<'_>, schemas: &[Schema<'_>], required: bool) -> Option<Failure> {
    let describe = || {
        schemas
            .first()
            .and_then(|schema| schema.describe())
            .unwrap_or_else(|| "other values".to_owned())
    };
    match condition {
        Condition::Equals(value) => schemas
            .iter()
            .all(|schema| !schema.may_admit(value))
            .then(|| Failure::Equals(value.to_string(), describe())),
        Condition::Exists(false) => required.then_some(Failure::Required),
        Condition::Exists(true) => None,
        Condition::Patterns(kind, _) | Condition::OnStrings(kind) => schemas
            .iter()
            .all(|schema| !schema.may_be_string_or_array())
            .then(|| Failure::NotAString(kind, describe())),
    }
}

/// What an input schema says about the member a selector names.
#[derive(Debug)]
enum Field<'s> {
    /// The schema describes it; the value satisfies at least one of `schemas` (all of them
    /// when they come from `allOf`: reading them as alternatives only errs towards "may
    /// hold"). `required`: every step of the way is required. `exact`: no alternative of the
    /// schema left the member open, so `schemas` tell everything the value can be.
    Defined {
        schemas: Vec<Schema<'s>>,
        required: bool,
        exact: bool,
    },
    /// The schema rejects every input that has it: at segment `depth`, where `candidates`
    /// are the names declared.
    Forbidden {
        depth: usize,
        candidates: Vec<&'s str>,
    },
    /// The schema neither describes nor forbids it: at segment `depth`, where `candidates`
    /// are the names declared.
    Open {
        depth: usize,
        candidates: Vec<&'s str>,
    },
    /// The tool has no input schema.
    NoSchema,
}

/// A schema node and the root its `$ref`s resolve against.
#[derive(Debug, Clone, Copy)]
struct Schema<'s> {
    root: &'s Value,
    node: &'s Value,
}

/// Local `$ref`s followed at most this deep (a cycle is not followed for ever).
const MAX_REFS: usize = 32;

/// What one schema node says about one member.
enum Member<'s> {
    Defined {
        schemas: Vec<Schema<'s>>,
        required: bool,
        exact: bool,
    },
    Forbidden,
    Open,
}

/// Looks a selector's segments up in an input schema.
fn lookup<'s>(root: &'s Value, segments: &[Cow<'_, str>]) -> Field<'s> {
    let mut current = vec![Schema { root, node: root }];
    let mut required = true;
    let mut exact = true;
    for (depth, segment) in segments.iter().enumerate() {
        let mut next = Vec::new();
        let mut step_required = true;
        let mut open = false;
        for schema in &current {
            match schema.member(segment, 0) {
                Member::Defined {
                    schemas,
                    required,
                    exact: member_exact,
                } => {
                    next.extend(schemas);
                    step_required &= required;
                    exact &= member_exact;
                }
                Member::Open => open = true,
                Member::Forbidden => {}
            }
        }
        if next.is_empty() {
            let mut candidates = Vec::new();
            for schema in &current {
                schema.names(&mut candidates, 0);
            }
            return if open {
                Field::Open { depth, candidates }
            } else {
                Field::Forbidden { depth, candidates }
            };
        }
        exact &= !open;
        required &= step_required;
        current = next;
    }
    Field::Defined {
        schemas: current,
        required,
        exact,
    }
}

impl<'s> Schema<'s> {
    fn at(self, node: &'s Value) -> Self {
        Self { node, ..self }
    }

    /// The node with local `$ref`s followed; `None` for a reference that cannot be
    /// followed (remote, missing, too deep).
    fn resolved(self) -> Option<Self> {
        let mut node = self.node;
        for _ in 0..MAX_REFS {
            let Some(reference) = node.get("$ref").and_then(Value::as_str) else {
                return Some(self.at(node));
            };
            // Siblings of `$ref` also apply (2020-12); reading only the target keeps every
            // conclusion sure only while there are none.
            if node.as_object().is_some_and(|map| map.len() > 1) {
                return None;
            }
            let pointer = reference.strip_prefix('#')?;
            node = self.root.pointer(pointer)?;
        }
        None
    }

    /// The `allOf`, `anyOf` and `oneOf` branches of a node.
    fn branches(self, keyword: &str) -> impl Iterator<Item = Schema<'s>> {
        self.node
            .get(keyword)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(move |branch| self.at(branch))
    }

    /// What this node says about the member `segment` of the value it describes.
    fn member(self, segment: &str, depth: usize) -> Member<'s> {
        if depth > MAX_REFS {
            return Member::Open;
        }
        let Some(this) = self.resolved() else {
            return Member::Open;
        };
        let map = match this.node {
            Value::Bool(true) => return Member::Open,
            Value::Bool(false) => return Member::Forbidden,
            Value::Object(map) => map,
            _ => return Member::Open,
        };
        let mut schemas = Vec::new();
        let mut required = false;
        let mut exact = true;
        // An index past `prefixItems` with `items: false` is never there.
        let mut no_such_item = false;
        if let Some(index) = array_index(segment) {
            let prefix = map.get("prefixItems").and_then(Value::as_array);
            match prefix.and_then(|items| items.get(index)) {
                Some(item) => schemas.push(this.at(item)),
                None => match map.get("items") {
                    Some(Value::Bool(false)) => no_such_item = true,
                    None => {}
                    Some(items) => schemas.push(this.at(items)),
                },
            }
        }
        if let Some(child) = map.get("properties").and_then(|p| p.get(segment)) {
            schemas.push(this.at(child));
            required = map
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|names| names.iter().any(|name| name == segment));
        }
        // `patternProperties` only when `properties` does not name it: its patterns are
        // compiled here, once per lookup.
        if schemas.is_empty()
            && let Some(Value::Object(patterns)) = map.get("patternProperties")
        {
            for (pattern, child) in patterns {
                match regex::Regex::new(pattern) {
                    Ok(pattern) if pattern.is_match(segment) => schemas.push(this.at(child)),
                    Ok(_) => {}
                    // A pattern we cannot read might name it.
                    Err(_) => return Member::Open,
                }
            }
        }
        // Every `allOf` branch applies: one that defines the member adds its schema, one
        // that forbids it forbids it.
        let mut forbidden = false;
        for branch in this.branches("allOf") {
            match branch.member(segment, depth + 1) {
                Member::Defined {
                    schemas: more,
                    required: branch_required,
                    exact: branch_exact,
                } => {
                    schemas.extend(more);
                    required |= branch_required;
                    exact &= branch_exact;
                }
                Member::Forbidden => forbidden = true,
                Member::Open => {}
            }
        }
        // One of the `anyOf`/`oneOf` branches applies: the member is forbidden only if every
        // branch forbids it, and required only if every branch requires it (not tracked).
        for keyword in ["anyOf", "oneOf"] {
            let mut any = false;
            let mut all_forbid = true;
            for branch in this.branches(keyword) {
                any = true;
                match branch.member(segment, depth + 1) {
                    Member::Defined { schemas: more, .. } => {
                        schemas.extend(more);
                        all_forbid = false;
                    }
                    Member::Forbidden => {}
                    Member::Open => {
                        all_forbid = false;
                        exact = false;
                    }
                }
            }
            forbidden |= any && all_forbid;
        }
        if !schemas.is_empty() {
            return Member::Defined {
                schemas,
                required,
                exact,
            };
        }
        let closed = |keyword: &str| map.get(keyword) == Some(&Value::Bool(false));
        if forbidden || closed("additionalProperties") || closed("unevaluatedProperties") {
            return Member::Forbidden;
        }
        // A value that is never an object (nor, for an index, an array) has no members.
        let container = if array_index(segment).is_some() {
            this.may_be("object") || (this.may_be("array") && !no_such_item)
        } else {
            this.may_be("object")
        };
        if container {
            Member::Open
        } else {
            Member::Forbidden
        }
    }

    /// The member names a node declares (in `properties`, also in its branches).
    fn names(self, out: &mut Vec<&'s str>, depth: usize) {
        if depth > MAX_REFS {
            return;
        }
        let Some(this) = self.resolved() else {
            return;
        };
        if let Some(Value::Object(properties)) = this.node.get("properties") {
            for name in properties.keys() {
                if !out.contains(&name.as_str()) {
                    out.push(name);
                }
            }
        }
        for keyword in ["allOf", "anyOf", "oneOf"] {
            for branch in this.branches(keyword) {
                branch.names(out, depth + 1);
            }
        }
    }

    /// The types the node's own `type` keyword allows; `None` when it has none (or it
    /// cannot be read).
    fn types(self) -> Option<Vec<&'s str>> {
        match self.resolved()?.node.get("type")? {
            Value::String(name) => Some(vec![name.as_str()]),
            Value::Array(names) => names.iter().map(Value::as_str).collect(),
            _ => None,
        }
    }

    /// Whether a value of JSON type `name` may satisfy the node's `type`.
    fn may_be(self, name: &str) -> bool {
        self.types().is_none_or(|types| {
            types
                .iter()
                .any(|t| *t == name || (*t == "integer" && name == "number"))
        })
    }

    /// Whether `value` may satisfy the node, judged on `type`, `enum` and `const` (of the
    /// node and its `allOf` branches).
    fn may_admit(self, value: &Value) -> bool {
        self.may_admit_at(value, 0)
    }

    fn may_admit_at(self, value: &Value, depth: usize) -> bool {
        if depth > MAX_REFS {
            return true;
        }
        let Some(this) = self.resolved() else {
            return true;
        };
        let node = this.node;
        if node == &Value::Bool(false) {
            return false;
        }
        if let Some(types) = this.types()
            && !types.iter().any(|name| has_type(value, name))
        {
            return false;
        }
        if let Some(Value::Array(allowed)) = node.get("enum")
            && !allowed.iter().any(|allowed| json_eq(allowed, value))
        {
            return false;
        }
        if let Some(constant) = node.get("const")
            && !json_eq(constant, value)
        {
            return false;
        }
        this.branches("allOf")
            .all(|branch| branch.may_admit_at(value, depth + 1))
    }

    /// Whether the value may be a string or an array (what pattern kinds match).
    fn may_be_string_or_array(self) -> bool {
        self.may_be("string") || self.may_be("array")
    }

    /// What the node allows, for a message: ``one of `a`, `b` ``, `a boolean`.
    fn describe(self) -> Option<String> {
        let this = self.resolved()?;
        if let Some(Value::Array(allowed)) = this.node.get("enum") {
            let values: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Some(match values.as_slice() {
                [one] => format!("`{one}`"),
                _ => format!("one of {}", quoted_list(values.iter().map(String::as_str))),
            });
        }
        if let Some(constant) = this.node.get("const") {
            return Some(format!("`{constant}`"));
        }
        let types = this.types()?;
        let named: Vec<String> = types.iter().map(|t| article(t)).collect();
        Some(named.join(" or "))
    }
}

/// `a string`, `an integer`.
fn article(type_name: &str) -> String {
    match type_name {
        "array" | "integer" | "object" => format!("an {type_name}"),
        "null" => "null".to_owned(),
        other => format!("a {other}"),
    }
}

/// Whether a JSON value has the JSON Schema type `name`.
fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|n| n.fract() == 0.0)
        }
        // An unknown type name is reported by the schema check.
        _ => true,
    }
}

/// An array index in a JSON pointer token: decimal digits, no sign, no leading zero.
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::{Value, json};

    use super::*;

    fn rule(yaml_like: Value) -> Rule {
        serde_json::from_value(yaml_like).unwrap()
    }

    fn field_of(schema: &Value, selector: &str) -> String {
        let segments = selector_segments(selector).unwrap();
        match lookup(schema, &segments) {
            Field::Defined {
                required, exact, ..
            } => format!("defined required={required} exact={exact}"),
            Field::Forbidden { depth, candidates } => {
                format!("forbidden at {depth} ({})", candidates.join(","))
            }
            Field::Open { .. } => "open".to_owned(),
            Field::NoSchema => "no schema".to_owned(),
        }
    }

    #[test]
    fn schemas_are_read_as_far_as_they_can_be_told() {
        let bash = json!({
            "type": "object", "required": ["command"], "additionalProperties": false,
            "properties": { "command": { "type": "string" }, "timeout": { "type": "integer" } }
        });
        let nested = json!({
            "type": "object",
            "$defs": { "opts": { "type": "object", "properties": { "path": { "type": "string" } }, "additionalProperties": false } },
            "properties": {
                "options": { "$ref": "#/$defs/opts" },
                "files": { "type": "array", "items": { "type": "object", "required": ["name"], "properties": { "name": { "type": "string" } } } },
                "pair": { "type": "array", "prefixItems": [{ "type": "string" }], "items": false },
                "any": {}
            },
            "patternProperties": { "^x-": { "type": "string" } }
        });
        let composed = json!({
            "anyOf": [
                { "type": "object", "properties": { "a": { "type": "string" } }, "additionalProperties": false },
                { "type": "object", "properties": { "b": { "type": "string" } }, "additionalProperties": false }
            ]
        });
        let cases: &[(&Value, &str, &str)] = &[
            (&bash, "command", "defined required=true exact=true"),
            (&bash, "timeout", "defined required=false exact=true"),
            (&bash, "comand", "forbidden at 0 (command,timeout)"),
            (&bash, "/command", "defined required=true exact=true"),
            (&bash, "/command/x", "forbidden at 1 ()"),
            (
                &nested,
                "/options/path",
                "defined required=false exact=true",
            ),
            (&nested, "/options/paht", "forbidden at 1 (path)"),
            (
                &nested,
                "/files/0/name",
                "defined required=false exact=true",
            ),
            (&nested, "/files/x", "forbidden at 1 ()"),
            (&nested, "/pair/0", "defined required=false exact=true"),
            (&nested, "/pair/1", "forbidden at 1 ()"),
            (&nested, "x-trace", "defined required=false exact=true"),
            (&nested, "/any/deep", "open"),
            (&nested, "unlisted", "open"),
            (&composed, "a", "defined required=false exact=true"),
            (&composed, "c", "forbidden at 0 (a,b)"),
            (&json!(true), "anything", "open"),
            (
                &json!({ "$ref": "https://example.com/s.json" }),
                "x",
                "open",
            ),
        ];
        for (schema, selector, expected) in cases {
            assert_eq!(
                field_of(schema, selector),
                *expected,
                "{selector} in {schema}"
            );
        }
    }

    fn codes(findings: &[Finding]) -> Vec<(String, Severity, Place)> {
        findings
            .iter()
            .map(|f| {
                (
                    f.diagnostic.code.as_str().to_owned(),
                    f.diagnostic.severity,
                    f.place.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn vacuous_matchers_are_found_at_their_place() {
        let empty_list = rule(json!({ "name": "r", "match": { "command": { "shell": [] } } }));
        let empty_map = rule(json!({ "name": "r", "match": {} }));
        let no_condition = rule(json!({ "name": "r", "match": { "file_path": {} } }));
        let modifier_only =
            rule(json!({ "name": "r", "match": { "command": { "allow_redirection": true } } }));
        let fine = rule(
            json!({ "name": "r", "match": { "command": { "shell": ["ls"] }, "x": { "exists": false } } }),
        );
        let error = |at: &str| {
            (
                "toolgate::semantic::empty_matcher".to_owned(),
                Severity::Error,
                Place::Value(at.to_owned()),
            )
        };
        assert_eq!(
            codes(&vacuous_matchers(&empty_list, 3)),
            [error("/rules/3/match/command/shell")]
        );
        assert_eq!(
            codes(&vacuous_matchers(&empty_map, 0)),
            [error("/rules/0/match")]
        );
        assert_eq!(
            codes(&vacuous_matchers(&no_condition, 0)),
            [error("/rules/0/match/file_path")]
        );
        assert_eq!(
            codes(&vacuous_matchers(&modifier_only, 0)),
            [error("/rules/0/match/command")]
        );
        assert!(vacuous_matchers(&fine, 0).is_empty());
    }

    #[test]
    fn selectors_are_checked_against_every_covered_tool() {
        let bash = json!({
            "type": "object", "required": ["command"], "additionalProperties": false,
            "properties": { "command": { "type": "string" }, "run_in_background": { "type": "boolean" } }
        });
        let read = json!({
            "type": "object", "additionalProperties": false,
            "properties": { "file_path": { "type": "string" }, "mode": { "enum": ["text", "bytes"] } }
        });
        let open = json!({ "type": "object", "properties": { "q": { "type": "string" } } });
        let check = |matchers: Value, tools: &[(&str, Option<&Value>)]| {
            let rule = rule(json!({ "name": "r", "match": matchers }));
            let tools: Vec<CoveredTool<'_>> = tools
                .iter()
                .map(|&(name, input_schema)| CoveredTool {
                    name,
                    input_schema,
                    named: true,
                })
                .collect();
            let findings = against_schemas(&rule, 0, &tools);
            findings
                .iter()
                .map(|f| {
                    format!(
                        "{} {} {:?} | {}",
                        f.diagnostic
                            .code
                            .as_str()
                            .trim_start_matches("toolgate::semantic::"),
                        f.diagnostic.severity,
                        f.place,
                        f.diagnostic.help.clone().unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
        };
        let unknown_key = |severity: &str, help: &str| {
            format!("unknown_field {severity} Key(\"/rules/0/match/comand\") | {help}")
        };
        assert_eq!(
            check(
                json!({ "comand": { "shell": ["rm *"] } }),
                &[("Bash", Some(&bash))]
            ),
            [unknown_key("error", "did you mean `command`?")]
        );
        assert_eq!(
            check(
                json!({ "comand": { "exists": true } }),
                &[("Q", Some(&open))]
            )[0]
            .split(" | ")
            .next()
            .unwrap(),
            "unknown_field warning Key(\"/rules/0/match/comand\")"
        );
        assert_eq!(
            check(json!({ "comand": { "exists": true } }), &[("Q", None)])[0]
                .split(" | ")
                .next()
                .unwrap(),
            "unknown_field warning Key(\"/rules/0/match/comand\")"
        );
        // Some covered tools define it: a warning naming the others.
        let some = check(
            json!({ "file_path": { "path": ["**/.env"] } }),
            &[("Read", Some(&read)), ("Bash", Some(&bash))],
        );
        assert_eq!(some.len(), 1);
        assert!(some[0].starts_with("unknown_field warning"), "{some:?}");
        // Defined everywhere: nothing.
        assert!(
            check(
                json!({ "command": { "shell": ["ls"] } }),
                &[("Bash", Some(&bash))]
            )
            .is_empty()
        );
        // Matchers that can never hold on a defined field.
        let never = |matchers: Value, kind: &str| {
            let found = check(matchers, &[("Bash", Some(&bash)), ("Read", Some(&read))]);
            let wanted = "rule_never_matches warning Value(\"/rules/0/match/";
            assert!(
                found
                    .iter()
                    .any(|f| f.starts_with(wanted) && f.contains(&format!("/{kind}\")"))),
                "{found:?}"
            );
        };
        never(
            json!({ "run_in_background": { "equals": "yes" } }),
            "equals",
        );
        // On Read calls `command` is absent, so `exists: false` holds there; on Bash alone
        // it never does.
        assert!(
            check(
                json!({ "command": { "exists": false } }),
                &[("Bash", Some(&bash)), ("Read", Some(&read))]
            )
            .iter()
            .all(|f| !f.starts_with("rule_never_matches"))
        );
        assert_eq!(
            check(
                json!({ "command": { "exists": false } }),
                &[("Bash", Some(&bash))]
            ),
            [
                "rule_never_matches warning Value(\"/rules/0/match/command/exists\") | a call without a required field fails validation before rules are consulted; remove the condition or the rule"
            ]
        );
        never(json!({ "run_in_background": { "glob": ["t*"] } }), "glob");
        never(
            json!({ "run_in_background": { "read_only": true } }),
            "read_only",
        );
        let read_only = |matchers: Value| check(matchers, &[("Read", Some(&read))]);
        assert_eq!(read_only(json!({ "mode": { "equals": "lines" } })).len(), 1);
        assert!(read_only(json!({ "mode": { "equals": "text" } })).is_empty());
        assert!(read_only(json!({ "file_path": { "exists": false } })).is_empty());
    }
}
