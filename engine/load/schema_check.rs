//! The schema stage: checks a parsed document against a JSON Schema (draft 2020-12) and
//! reports every violation as a [`Diagnostic`] at the exact span of the offending value.
//!
//! It sits between the syntax stage (which produced the value and its [`SpanTable`]) and
//! the typed deserialisation. The mechanism is generic: it knows nothing about toolgate's
//! model beyond the custom formats `duration` and `size`, whose parsing it borrows from
//! `crate::model::units`.
//!
//! `jsonschema` reports `anyOf`/`oneOf` failures as one top-level error; this stage digs into
//! the branches so the user sees the real problem:
//! - tagged alternatives (every branch fixes a discriminator such as `kind` with `const`):
//!   the errors of the branch whose tag matches, or one error on the tag listing the valid
//!   ones;
//! - otherwise the branch that got furthest (deepest errors, then fewest), ignoring branches
//!   whose type does not even fit (so `anyOf [T, null]` reports `T`'s errors);
//! - when no branch's type fits, one type error naming all the types allowed.

use std::sync::{Arc, OnceLock};

use jsonschema::error::{ValidationError, ValidationErrorKind};
use serde_json::Value;

use super::ParsedDocument;
use super::spans::{SpanTable, join_pointer};
use crate::diagnostics::source::floor_char_boundary;
use crate::diagnostics::{
    Code, Diagnostic, Format, SourceFile, Span, closest, fold_whitespace, lowercase_first,
};
use crate::model::units::{Duration, Size};

/// Help text for an invalid duration.
const DURATION_HELP: &str = "write a duration with a unit, like `500ms`, `30s`, `2m`";
/// Help text for an invalid size.
const SIZE_HELP: &str = "write an integer, or a number with a unit, like `30 KB`, `50 MiB`";
/// How many allowed keys or values a help text lists before eliding the rest.
const MAX_LISTED: usize = 12;
/// How many `$ref` hops are followed when reading the schema for help texts.
const MAX_REF_HOPS: usize = 16;

/// A schema that could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON Schema: {message}")]
pub struct SchemaBuildError {
    /// What `jsonschema` reported.
    pub message: String,
}

/// A compiled JSON Schema with the custom formats registered, ready to check documents.
///
/// Compile once and reuse: checking is `&self` and the checker is `Send + Sync`.
pub struct SchemaChecker {
    schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for SchemaChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaChecker").finish_non_exhaustive()
    }
}

/// Which part of a node a problem is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// The value itself.
    Value,
    /// The key naming the node (unknown keys, bad property names).
    Key,
    /// The node as a whole, for a missing child: its key if it has one, else its value.
    Node,
}

/// One violation, before it is placed in the source.
#[derive(Clone, Debug)]
struct Issue {
    code: Code,
    pointer: String,
    target: Target,
    message: String,
    help: Option<String>,
}

impl Issue {
    fn new(code: Code, pointer: impl Into<String>, target: Target, message: String) -> Self {
        Self {
            code,
            pointer: pointer.into(),
            target,
            message,
            help: None,
        }
    }

    fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    fn depth(&self) -> usize {
        self.pointer.matches('/').count()
    }
}

impl SchemaChecker {
    /// The checker of `schema()`, compiled on first use into `cell` (the caller's static)
    /// and kept for the process.
    pub fn compiled_once(
        cell: &'static OnceLock<Result<SchemaChecker, String>>,
        schema: fn() -> Value,
    ) -> Result<&'static SchemaChecker, String> {
        cell.get_or_init(|| SchemaChecker::new(&schema()).map_err(|err| err.message))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Compiles a schema (draft 2020-12, format assertions on, formats `duration` and `size`
    /// registered).
    pub fn new(schema: &Value) -> Result<SchemaChecker, SchemaBuildError> {
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .with_format("duration", |text: &str| {
                text.trim() == "none" || Duration::parse(text).is_ok()
            })
            .with_format("size", |text: &str| Size::parse(text).is_ok())
            .build(schema)
            .map_err(|err| SchemaBuildError {
                message: err.to_string(),
            })?;
        Ok(SchemaChecker {
            schema: schema.clone(),
            validator,
        })
    }

    /// Checks a parsed document.
    pub fn check_document(&self, document: &ParsedDocument) -> Vec<Diagnostic> {
        self.check(&document.source, &document.value, &document.spans)
    }

    /// Checks `value` (parsed from `source`, with `spans`) and returns every violation,
    /// sorted by position and de-duplicated, each at the span of the offending value (or key,
    /// for unknown keys and bad property names; or the object, for missing keys).
    pub fn check(
        &self,
        source: &Arc<SourceFile>,
        value: &Value,
        spans: &SpanTable,
    ) -> Vec<Diagnostic> {
        if self.validator.is_valid(value) {
            return Vec::new();
        }
        let mut issues = Vec::new();
        for error in self.validator.iter_errors(value) {
            self.collect(&error, &mut issues);
        }
        let mut placed: Vec<(Span, Issue)> = issues
            .into_iter()
            .map(|issue| (place(source, spans, &issue), issue))
            .collect();
        placed.sort_by(|(a, x), (b, y)| {
            (a.offset, a.len, x.code, &x.message).cmp(&(b.offset, b.len, y.code, &y.message))
        });
        placed.dedup_by(|(a, x), (b, y)| {
            a.offset == b.offset && x.code == y.code && x.message == y.message
        });
        placed
            .into_iter()
            .map(|(span, issue)| {
                let code = if is_version_issue(&issue) {
                    Code::SchemaVersion
                } else {
                    issue.code
                };
                let help = if code == Code::SchemaVersion {
                    Some(self.version_help(source.format()))
                } else {
                    issue.help
                };
                let diagnostic = Diagnostic::new(code, issue.message).at(source, span);
                match help {
                    Some(help) => diagnostic.with_help(help),
                    None => diagnostic,
                }
            })
            .collect()
    }

    /// Turns one `jsonschema` error into issues, digging into alternatives.
    fn collect(&self, error: &ValidationError<'_>, out: &mut Vec<Issue>) {
        let pointer = error.instance_path().as_str();
        let schema_path = error.schema_path().as_str();
        let instance: &Value = error.instance();
        match error.kind() {
            ValidationErrorKind::AnyOf { context }
            | ValidationErrorKind::OneOfNotValid { context } => {
                self.alternatives(pointer, schema_path, instance, context, out);
            }
            ValidationErrorKind::PropertyNames { error: inner } => {
                if let Value::String(key) = inner.instance().as_ref() {
                    let key_pointer = join_pointer(pointer, key);
                    let mut issue = self.describe(inner, key_pointer);
                    issue.target = Target::Key;
                    issue.message = format!("the key {}", issue.message);
                    out.push(issue);
                } else {
                    out.push(self.describe(inner, pointer.to_owned()));
                }
            }
            ValidationErrorKind::AdditionalProperties { unexpected }
            | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                let allowed = self.allowed_keys(parent_path(schema_path));
                for key in unexpected {
                    out.push(unknown_key(pointer, key, &allowed));
                }
            }
            _ => out.push(self.describe(error, pointer.to_owned())),
        }
    }

    /// Issues for a failed `anyOf`/`oneOf`.
    fn alternatives(
        &self,
        pointer: &str,
        schema_path: &str,
        instance: &Value,
        context: &[Vec<ValidationError<'static>>],
        out: &mut Vec<Issue>,
    ) {
        let branches: Vec<Option<&Value>> = match self.schema_at(schema_path) {
            Some(Value::Array(branches)) => {
                branches.iter().map(|b| Some(self.resolve(b))).collect()
            }
            _ => vec![None; context.len()],
        };

        if let (Some((discriminator, tags)), Value::Object(object)) =
            (discriminator(&branches), instance)
        {
            match object.get(discriminator) {
                Some(Value::String(tag)) => {
                    if let Some(index) = tags.iter().position(|t| t.as_deref() == Some(tag))
                        && let Some(errors) = context.get(index)
                    {
                        for error in errors {
                            self.collect(error, out);
                        }
                        return;
                    }
                    let valid: Vec<&str> = tags.iter().flatten().map(String::as_str).collect();
                    let mut issue = Issue::new(
                        Code::SchemaEnum,
                        join_pointer(pointer, discriminator),
                        Target::Value,
                        format!("`{tag}` is not one of {}", list(&valid)),
                    );
                    if let Some(close) = closest(tag, valid.iter().copied()) {
                        issue = issue.help(format!("did you mean `{close}`?"));
                    }
                    out.push(issue);
                    return;
                }
                None => {
                    let valid: Vec<&str> = tags.iter().flatten().map(String::as_str).collect();
                    out.push(
                        Issue::new(
                            Code::SchemaRequired,
                            pointer,
                            Target::Node,
                            format!("missing required key `{discriminator}`"),
                        )
                        .help(format!("set `{discriminator}` to one of {}", list(&valid))),
                    );
                    return;
                }
                // A tag of the wrong type: the branches' own errors say so.
                Some(_) => {}
            }
        }

        // Untagged: convert every branch, then keep the most relevant one. A branch whose
        // very shape does not fit (wrong type, or not the literal it requires) is the least
        // relevant: `anyOf [T, null]` reports `T`'s errors.
        let mut candidates: Vec<(bool, Vec<Issue>)> = Vec::with_capacity(context.len());
        let mut expected: Vec<String> = Vec::new();
        for errors in context {
            let mut issues = Vec::new();
            let at_top: Vec<&ValidationError<'static>> = errors
                .iter()
                .filter(|error| error.instance_path().as_str() == pointer)
                .collect();
            let wrong_type = at_top
                .iter()
                .any(|error| matches!(error.kind(), ValidationErrorKind::Type { .. }));
            let wrong_literal = !errors.is_empty()
                && at_top.len() == errors.len()
                && errors.iter().all(|error| {
                    matches!(
                        error.kind(),
                        ValidationErrorKind::Enum { .. } | ValidationErrorKind::Constant { .. }
                    )
                });
            if wrong_type || wrong_literal {
                for error in &at_top {
                    for name in self.expectations(error) {
                        if !expected.contains(&name) {
                            expected.push(name);
                        }
                    }
                }
            }
            for error in errors {
                self.collect(error, &mut issues);
            }
            candidates.push((wrong_type || wrong_literal, issues));
        }
        let best = candidates
            .into_iter()
            .filter(|(mismatch, issues)| !mismatch && !issues.is_empty())
            .max_by(|(_, a), (_, b)| {
                let depth = |issues: &[Issue]| issues.iter().map(Issue::depth).max().unwrap_or(0);
                depth(a)
                    .cmp(&depth(b))
                    // Fewer issues is better; on a tie the earlier branch wins (`max_by`
                    // keeps the last maximum, so compare reversed positions via `Less`).
                    .then_with(|| b.len().cmp(&a.len()))
                    .then(std::cmp::Ordering::Greater)
            });
        match best {
            Some((_, issues)) => out.extend(issues),
            None => {
                let expected = if expected.is_empty() {
                    "a different value".to_owned()
                } else {
                    join_or(&expected)
                };
                out.push(Issue::new(
                    Code::SchemaType,
                    pointer,
                    Target::Value,
                    format!("expected {expected}, found {}", describe_value(instance)),
                ));
            }
        }
    }

    /// What a top-level `type`, `enum` or `const` error wanted, for a combined message:
    /// `a list`, `` `none` ``.
    fn expectations(&self, error: &ValidationError<'_>) -> Vec<String> {
        match error.kind() {
            ValidationErrorKind::Type { .. } => self.type_names(error),
            ValidationErrorKind::Enum { options } => match options.as_ref() {
                Value::Array(values) => values.iter().map(|v| format!("`{}`", show(v))).collect(),
                other => vec![format!("`{}`", show(other))],
            },
            ValidationErrorKind::Constant { expected_value } => {
                vec![format!("`{}`", show(expected_value))]
            }
            _ => Vec::new(),
        }
    }

    /// An issue for a single-keyword error.
    fn describe(&self, error: &ValidationError<'_>, pointer: String) -> Issue {
        let instance: &Value = error.instance();
        let schema_path = error.schema_path().as_str();
        let shown = show(instance);
        let issue =
            |code, message: String| Issue::new(code, pointer.clone(), Target::Value, message);
        match error.kind() {
            ValidationErrorKind::Type { .. } => {
                let expected = join_or(&self.type_names(error));
                let mut result = issue(
                    Code::SchemaType,
                    format!("expected {expected}, found {}", describe_value(instance)),
                );
                let wants = self.type_names(error);
                if wants.iter().any(|t| t == "a list") && !instance.is_array() {
                    result = result.help(format!("write a list: `[{shown}]`"));
                } else if wants.iter().any(|t| t == "a string")
                    && matches!(instance, Value::Number(_) | Value::Bool(_))
                {
                    result = result.help(format!("quote the value: `\"{shown}\"`"));
                }
                result
            }
            ValidationErrorKind::Required { property } => {
                let name = property
                    .as_str()
                    .map_or_else(|| property.to_string(), str::to_owned);
                let mut result = Issue::new(
                    Code::SchemaRequired,
                    pointer.clone(),
                    Target::Node,
                    format!("missing required key `{name}`"),
                );
                let description = self
                    .schema_at(parent_path(schema_path))
                    .and_then(|object| self.property_schema(object, &name))
                    .and_then(|property| self.description(property))
                    .map(first_sentence);
                result = match description {
                    Some(description) => result.help(format!("add `{name}`: {description}")),
                    None => result.help(format!("add `{name}`")),
                };
                result
            }
            ValidationErrorKind::Enum { options } => {
                let values: Vec<String> = match options.as_ref() {
                    Value::Array(values) => values.iter().map(show).collect(),
                    other => vec![show(other)],
                };
                let refs: Vec<&str> = values.iter().map(String::as_str).collect();
                let mut result = issue(
                    Code::SchemaEnum,
                    format!("`{shown}` is not one of {}", list(&refs)),
                );
                if let Some(close) = closest(&shown, refs.iter().copied()) {
                    result = result.help(format!("did you mean `{close}`?"));
                }
                result
            }
            ValidationErrorKind::Constant { expected_value } => {
                let message = if same_kind(instance, expected_value) {
                    format!(
                        "`{shown}` is not the expected value `{}`",
                        show(expected_value)
                    )
                } else {
                    format!(
                        "expected {}, found {}",
                        describe_value(expected_value),
                        describe_value(instance)
                    )
                };
                issue(Code::SchemaEnum, message)
            }
            ValidationErrorKind::Format { format } => self.format_issue(issue, format, &shown),
            ValidationErrorKind::Pattern { pattern } => {
                let sibling_format = self
                    .schema_at(parent_path(schema_path))
                    .and_then(|node| node.get("format"))
                    .and_then(Value::as_str);
                match sibling_format {
                    Some("duration") if shown.trim() == "none" => issue(
                        Code::SchemaFormat,
                        "`none` is not allowed here: a limit is required".to_owned(),
                    )
                    .help(DURATION_HELP),
                    Some(format @ ("duration" | "size")) => {
                        self.format_issue(issue, format, &shown)
                    }
                    _ => {
                        let mut result = issue(
                            Code::SchemaPattern,
                            format!("`{shown}` does not match the pattern `{pattern}`"),
                        );
                        if let Some(description) = self
                            .schema_at(parent_path(schema_path))
                            .and_then(|node| self.description(node))
                        {
                            result = result.help(first_sentence(description));
                        }
                        result
                    }
                }
            }
            ValidationErrorKind::Minimum { limit } => issue(
                Code::SchemaRange,
                format!("`{shown}` is less than the minimum `{limit}`"),
            ),
            ValidationErrorKind::Maximum { limit } => issue(
                Code::SchemaRange,
                format!("`{shown}` is greater than the maximum `{limit}`"),
            ),
            ValidationErrorKind::ExclusiveMinimum { limit } => issue(
                Code::SchemaRange,
                format!("`{shown}` must be greater than `{limit}`"),
            ),
            ValidationErrorKind::ExclusiveMaximum { limit } => issue(
                Code::SchemaRange,
                format!("`{shown}` must be less than `{limit}`"),
            ),
            ValidationErrorKind::MultipleOf { .. } => issue(
                Code::SchemaRange,
                format!("`{shown}` is not an allowed multiple"),
            ),
            ValidationErrorKind::MinLength { .. } if shown.is_empty() => {
                issue(Code::SchemaRange, "the value must not be empty".to_owned())
            }
            ValidationErrorKind::MinLength { limit } => issue(
                Code::SchemaRange,
                format!(
                    "`{shown}` is shorter than {limit} {}",
                    plural(*limit, "character")
                ),
            ),
            ValidationErrorKind::MaxLength { limit } => issue(
                Code::SchemaRange,
                format!(
                    "`{}` is longer than {limit} {}",
                    truncate(&shown),
                    plural(*limit, "character")
                ),
            ),
            ValidationErrorKind::MinItems { limit } => issue(
                Code::SchemaRange,
                format!(
                    "expected at least {limit} {}, found {}",
                    plural(*limit, "item"),
                    instance.as_array().map_or(0, Vec::len)
                ),
            ),
            ValidationErrorKind::MaxItems { limit } => issue(
                Code::SchemaRange,
                format!(
                    "expected at most {limit} {}, found {}",
                    plural(*limit, "item"),
                    instance.as_array().map_or(0, Vec::len)
                ),
            ),
            ValidationErrorKind::MinProperties { limit } => issue(
                Code::SchemaRange,
                format!("expected at least {limit} {}", plural(*limit, "key")),
            ),
            ValidationErrorKind::MaxProperties { limit } => issue(
                Code::SchemaRange,
                format!("expected at most {limit} {}", plural(*limit, "key")),
            ),
            ValidationErrorKind::AdditionalItems { limit } => issue(
                Code::SchemaRange,
                format!("expected at most {limit} {}", plural(*limit as u64, "item")),
            ),
            ValidationErrorKind::UnevaluatedItems { unexpected } => issue(
                Code::SchemaRange,
                format!(
                    "unexpected {} in the list",
                    plural(unexpected.len() as u64, "item")
                ),
            ),
            ValidationErrorKind::UniqueItems => issue(
                Code::SchemaInvalid,
                "the list has duplicate items".to_owned(),
            )
            .help("remove the duplicates"),
            ValidationErrorKind::FalseSchema => {
                if parent_path(schema_path).ends_with("/properties") {
                    let key = pointer.rsplit('/').next().unwrap_or_default().to_owned();
                    Issue::new(
                        Code::SchemaUnknownKey,
                        pointer.clone(),
                        Target::Key,
                        format!("the key `{key}` is not allowed here"),
                    )
                    .help("remove it")
                } else {
                    issue(Code::SchemaInvalid, "no value is allowed here".to_owned())
                        .help("remove it")
                }
            }
            ValidationErrorKind::OneOfMultipleValid { .. } => issue(
                Code::SchemaInvalid,
                "the value matches more than one alternative".to_owned(),
            )
            .help("make it match exactly one alternative"),
            ValidationErrorKind::Not { .. } => issue(
                Code::SchemaInvalid,
                "this value is not allowed here".to_owned(),
            ),
            ValidationErrorKind::Contains => issue(
                Code::SchemaInvalid,
                "the list has no item of the required shape".to_owned(),
            ),
            ValidationErrorKind::Custom { message, .. } => {
                issue(Code::SchemaInvalid, lowercase_first(message))
            }
            // Nested alternatives and property names reach here only when `collect` was
            // bypassed; their generic message is still accurate.
            _ => issue(
                Code::SchemaInvalid,
                lowercase_first(&fold_whitespace(&error.to_string())),
            ),
        }
    }

    fn format_issue(
        &self,
        issue: impl Fn(Code, String) -> Issue,
        format: &str,
        shown: &str,
    ) -> Issue {
        match format {
            "duration" => issue(
                Code::SchemaFormat,
                format!("`{shown}` is not a valid duration"),
            )
            .help(DURATION_HELP),
            "size" => {
                issue(Code::SchemaFormat, format!("`{shown}` is not a valid size")).help(SIZE_HELP)
            }
            other => issue(
                Code::SchemaFormat,
                format!("`{shown}` is not a valid `{other}`"),
            ),
        }
    }

    /// The readable names of the types a `type` error expected (`an integer`, `a list`).
    fn type_names(&self, error: &ValidationError<'_>) -> Vec<String> {
        let from_schema = self
            .schema_at(error.schema_path().as_str())
            .map(|node| match node {
                Value::String(name) => vec![type_name(name)],
                Value::Array(names) => names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(type_name)
                    .collect(),
                _ => Vec::new(),
            });
        match from_schema {
            Some(names) if !names.is_empty() => names,
            _ => match error.kind() {
                ValidationErrorKind::Type { kind } => match kind {
                    jsonschema::error::TypeKind::Single(t) => vec![type_name(&t.to_string())],
                    jsonschema::error::TypeKind::Multiple(set) => {
                        set.iter().map(|t| type_name(&t.to_string())).collect()
                    }
                },
                _ => Vec::new(),
            },
        }
    }

    /// The keys the object schema at `path` allows: its `properties`, and those of the
    /// schemas it extends with `$ref` or `allOf`.
    fn allowed_keys(&self, path: &str) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        let mut pending: Vec<&Value> = self.schema.pointer(path).into_iter().collect();
        let mut visited = 0;
        while let Some(node) = pending.pop() {
            visited += 1;
            if visited > MAX_REF_HOPS * 4 {
                break;
            }
            if let Some(Value::Object(properties)) = node.get("properties") {
                for key in properties.keys() {
                    if !keys.contains(key) {
                        keys.push(key.clone());
                    }
                }
            }
            if let Some(target) = self.deref(node) {
                pending.push(target);
            }
            if let Some(Value::Array(parts)) = node.get("allOf") {
                pending.extend(parts.iter().rev());
            }
        }
        keys
    }

    /// The schema of property `name` of an object schema.
    fn property_schema<'s>(&'s self, object: &'s Value, name: &str) -> Option<&'s Value> {
        object
            .get("properties")
            .and_then(|properties| properties.get(name))
    }

    /// The `description` of a schema node, or of the schema its `$ref` points to.
    fn description<'s>(&'s self, node: &'s Value) -> Option<&'s str> {
        node.get("description")
            .or_else(|| self.resolve(node).get("description"))
            .and_then(Value::as_str)
    }

    /// The schema node at a (canonical, `$ref`-free) schema path.
    fn schema_at(&self, path: &str) -> Option<&Value> {
        self.schema.pointer(path).map(|node| self.resolve(node))
    }

    /// The target of a node's local `$ref` (`#/...`), one hop.
    fn deref<'s>(&'s self, node: &'s Value) -> Option<&'s Value> {
        let reference = node.get("$ref").and_then(Value::as_str)?;
        let pointer = reference.strip_prefix('#')?;
        self.schema.pointer(pointer)
    }

    /// Follows local `$ref`s from a node whose other keywords are only annotations
    /// (`description`, `title`, ...), as schemars writes documented references.
    fn resolve<'s>(&'s self, mut node: &'s Value) -> &'s Value {
        for _ in 0..MAX_REF_HOPS {
            let only_annotations = node.as_object().is_some_and(|object| {
                object.keys().all(|key| {
                    matches!(
                        key.as_str(),
                        "$ref"
                            | "description"
                            | "title"
                            | "examples"
                            | "default"
                            | "$comment"
                            | "deprecated"
                            | "readOnly"
                            | "writeOnly"
                    )
                })
            });
            match self.deref(node) {
                Some(target) if only_annotations => node = target,
                _ => break,
            }
        }
        node
    }

    fn version_help(&self, format: Format) -> String {
        let expected = self
            .schema
            .pointer("/properties/version")
            .map(|node| self.resolve(node))
            .and_then(|node| {
                node.get("const")
                    .or_else(|| node.get("enum").and_then(|e| e.get(0)))
            })
            .map(show)
            .unwrap_or_else(|| "1".to_owned());
        match format {
            Format::Yaml => format!("write `version: {expected}` at the top of the file"),
            Format::Toml => format!("write `version = {expected}` at the top of the file"),
        }
    }
}

/// Whether an issue is about the file's format version (`/version`, or its absence).
fn is_version_issue(issue: &Issue) -> bool {
    issue.pointer == "/version"
        || (issue.pointer.is_empty()
            && issue.code == Code::SchemaRequired
            && issue.message == "missing required key `version`")
}

/// The span an issue is reported at.
fn place(source: &Arc<SourceFile>, spans: &SpanTable, issue: &Issue) -> Span {
    let exact = spans.get(&issue.pointer);
    match (exact, issue.target) {
        (Some(node), Target::Value) => node.value,
        (Some(node), Target::Key) => node.key.unwrap_or(node.value),
        (Some(node), Target::Node) => node.label(),
        (None, _) => spans
            .nearest(&issue.pointer)
            .map_or_else(|| source.span(0, 0), |node| node.label()),
    }
}

/// The issue for an unknown key, with a suggestion.
fn unknown_key(pointer: &str, key: &str, allowed: &[String]) -> Issue {
    let issue = Issue::new(
        Code::SchemaUnknownKey,
        join_pointer(pointer, key),
        Target::Key,
        format!("unknown key `{key}`"),
    );
    if let Some(close) = closest(key, allowed.iter().map(String::as_str)) {
        issue.help(format!("did you mean `{close}`?"))
    } else if allowed.is_empty() {
        issue.help("no keys are allowed here; remove it")
    } else {
        let refs: Vec<&str> = allowed.iter().map(String::as_str).collect();
        issue.help(format!("allowed keys here: {}", list(&refs)))
    }
}

/// `a`, `b` and `c` as a backticked list, eliding after [`MAX_LISTED`].
fn list(items: &[&str]) -> String {
    let mut shown: Vec<String> = items
        .iter()
        .take(MAX_LISTED)
        .map(|item| format!("`{item}`"))
        .collect();
    if items.len() > MAX_LISTED {
        shown.push(format!("and {} more", items.len() - MAX_LISTED));
    }
    shown.join(", ")
}

/// `a`, `b` or `c`.
fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The readable name of a JSON Schema type.
fn type_name(name: &str) -> String {
    match name {
        "object" => "a map",
        "array" => "a list",
        "string" => "a string",
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "a boolean",
        "null" => "null",
        other => return format!("`{other}`"),
    }
    .to_owned()
}

/// A value as the user wrote it, for messages: `a map`, `a string `x``.
fn describe_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("a boolean `{b}`"),
        Value::Number(n) if n.is_f64() => format!("a number `{n}`"),
        Value::Number(n) => format!("an integer `{n}`"),
        Value::String(s) => format!("a string `{}`", truncate(s)),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "a map".to_owned(),
    }
}

/// Whether two values are of the same JSON kind (integers and floats both count as numbers).
fn same_kind(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// A scalar's text for messages (strings without quotes), truncated.
fn show(value: &Value) -> String {
    match value {
        Value::String(s) => truncate(s),
        Value::Array(_) => "[…]".to_owned(),
        Value::Object(_) => "{…}".to_owned(),
        other => other.to_string(),
    }
}

/// Cuts long text for a one-line message, never inside a character, and folds line breaks.
fn truncate(text: &str) -> String {
    const MAX: usize = 60;
    let single = if text.contains(['\n', '\r']) {
        fold_whitespace(text)
    } else {
        text.to_owned()
    };
    if single.len() <= MAX {
        return single;
    }
    let cut = floor_char_boundary(&single, MAX);
    format!("{}…", &single[..cut])
}

fn plural(count: u64, word: &str) -> String {
    if count == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}

/// The pointer without its last segment.
fn parent_path(path: &str) -> &str {
    path.rfind('/').map_or("", |index| &path[..index])
}

/// The first sentence of a description, lowercased, without a trailing period.
fn first_sentence(text: &str) -> String {
    let sentence = text
        .split(". ")
        .next()
        .unwrap_or(text)
        .trim()
        .trim_end_matches('.');
    lowercase_first(&fold_whitespace(sentence))
}

/// The discriminator of tagged alternatives: a property every (non-null) branch fixes with
/// a string `const` (or a one-value `enum`), and each branch's tag (`None` for a null
/// branch).
fn discriminator<'s>(branches: &[Option<&'s Value>]) -> Option<(&'s str, Vec<Option<String>>)> {
    let tagged: Vec<Option<&'s Value>> = branches
        .iter()
        .map(|branch| branch.filter(|schema| !is_null_schema(schema)))
        .collect();
    let first = tagged.iter().flatten().next()?;
    let candidates: Vec<&'s str> = match first.get("properties") {
        Some(Value::Object(properties)) => properties
            .iter()
            .filter(|(_, schema)| fixed_string(schema).is_some())
            .map(|(name, _)| name.as_str())
            .collect(),
        _ => return None,
    };
    if tagged.iter().flatten().count() < 2 {
        return None;
    }
    candidates.into_iter().find_map(|name| {
        let mut tags = Vec::with_capacity(tagged.len());
        for branch in &tagged {
            match branch {
                None => tags.push(None),
                Some(schema) => {
                    let tag = schema
                        .get("properties")
                        .and_then(|properties| properties.get(name))
                        .and_then(fixed_string)?;
                    tags.push(Some(tag.to_owned()));
                }
            }
        }
        Some((name, tags))
    })
}

/// The string a schema fixes with `const` or a one-value `enum`.
fn fixed_string(schema: &Value) -> Option<&str> {
    if let Some(Value::String(tag)) = schema.get("const") {
        return Some(tag);
    }
    match schema.get("enum") {
        Some(Value::Array(values)) if values.len() == 1 => values[0].as_str(),
        _ => None,
    }
}

/// Whether a schema only accepts null (`{type: null}` or `{const: null}`).
fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const") == Some(&Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::source::Format;
    use crate::load::parse_document;
    use serde_json::json;

    fn check(schema: &Value, text: &str, format: Format) -> Vec<Diagnostic> {
        let checker = SchemaChecker::new(schema).unwrap();
        let source = SourceFile::in_memory("t", text, format);
        let document = parse_document(source).unwrap();
        checker.check_document(&document)
    }

    fn summary(diagnostics: &[Diagnostic]) -> Vec<(String, u32, u32, String)> {
        diagnostics
            .iter()
            .map(|d| {
                let span = d.location.as_ref().unwrap().span;
                (
                    d.code.as_str().to_owned(),
                    span.line,
                    span.column,
                    d.message.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn list_elides_long_lists() {
        let items: Vec<String> = (0..15).map(|i| format!("k{i}")).collect();
        let refs: Vec<&str> = items.iter().map(String::as_str).collect();
        assert!(list(&refs).ends_with("`k11`, and 3 more"));
        assert_eq!(join_or(&["a".into(), "b".into(), "c".into()]), "a, b or c");
    }

    #[test]
    fn valid_documents_have_no_diagnostics() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        assert!(check(&schema, "a: 1\n", Format::Yaml).is_empty());
    }

    #[test]
    fn invalid_schemas_are_rejected() {
        assert!(SchemaChecker::new(&json!({"type": "strng"})).is_err());
    }

    #[test]
    fn unknown_keys_point_at_the_key() {
        let schema = json!({
            "type": "object", "additionalProperties": false,
            "properties": {"timeout": {"type": "string"}, "handler": {"type": "object"}}
        });
        let found = check(&schema, "handler: {}\ntimout: 1s\nzzz: 2\n", Format::Yaml);
        assert_eq!(
            summary(&found),
            [
                (
                    "toolgate::schema::unknown_key".into(),
                    2,
                    1,
                    "unknown key `timout`".into()
                ),
                (
                    "toolgate::schema::unknown_key".into(),
                    3,
                    1,
                    "unknown key `zzz`".into()
                ),
            ]
        );
        assert_eq!(found[0].help.as_deref(), Some("did you mean `timeout`?"));
        assert_eq!(
            found[1].help.as_deref(),
            Some("allowed keys here: `timeout`, `handler`")
        );
    }
}
