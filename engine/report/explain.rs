//! `toolgate explain TOOL`: the effective contract of one tool, every value with the file,
//! line and column that set it — a contract field of some layer, an engine default, or the
//! meaning toolgate gives an absent field — and the rules that can apply to it.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::diagnostics::{Code, Diagnostic};
use crate::load::spans::join_pointer;
use crate::model::agent::FieldNames;
use crate::model::contract::TimeoutSpec;
use crate::snapshot::{Snapshot, Tool};

/// Where an effective value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldSource {
    /// The tool's contract (some layer).
    Contract,
    /// An engine default (`engine.budget`, `engine.default_timeout`, …).
    Engine,
    /// What toolgate makes of an absent field (a flag is `false`, the handler `native`, …).
    Default,
    /// A tool annotation of an MCP server declared with `trust_annotations: true` (`setting`
    /// holds the hint, like `readOnlyHint: true`).
    Annotation,
}

/// One effective value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExplainField {
    /// Dotted field path (`timeout.max`).
    pub field: String,
    /// The value.
    pub value: Value,
    /// Where it comes from.
    pub source: FieldSource,
    /// For engine defaults: the engine setting (`engine.budget.preview`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setting: Option<String>,
    /// The file that set it (absent for toolgate's own defaults).
    pub file: Option<String>,
    /// Its 1-based line.
    pub line: Option<u32>,
    /// Its 1-based column.
    pub column: Option<u32>,
}

/// A rule that can apply to the tool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExplainRule {
    /// Name.
    pub name: String,
    /// Decision.
    pub decision: String,
    /// Priority.
    pub priority: i32,
    /// From an enforced layer.
    pub enforced: bool,
    /// Modes it is limited to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modes: Option<Vec<String>>,
    /// Whether it has argument matchers or flag conditions (it decides only some calls).
    pub conditional: bool,
    /// Reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `file:line:column`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// The explanation of one tool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExplainReport {
    /// Canonical name.
    pub tool: String,
    /// Snapshot generation.
    pub generation: u64,
    /// Every effective value, in contract order.
    pub fields: Vec<ExplainField>,
    /// The rules that can apply, in precedence order.
    pub rules: Vec<ExplainRule>,
    /// Summary of the resolved behaviour.
    pub summary: Value,
    /// The agents' tools that map onto this tool (`agents:`), for `toolgate hook`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agent_tools: Vec<ExplainAgentTool>,
    /// The layers of the set, lowest first: where the files shown above come from.
    pub layers: Vec<ExplainLayer>,
    /// The wildcard contract (`mcp__<server>__*`) that covers the tool or that its exact
    /// contract extends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wildcard: Option<ExplainWildcard>,
    /// The MCP server whose tool annotations fill the flags the contract leaves unset
    /// (declared with `trust_annotations: true`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted_annotations: Option<String>,
}

/// How a wildcard contract applies to the explained tool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExplainWildcard {
    /// The wildcard contract's name.
    pub contract: String,
    /// `file:line:column` of its definition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// `covers`: the tool has no contract of its own and runs under the wildcard's;
    /// `extends`: its exact contract takes the fields it does not set from the wildcard's.
    pub applies: &'static str,
    /// The MCP server.
    pub server: String,
    /// The server's tool a call runs.
    pub server_tool: String,
}

/// An agent's tool that maps onto the explained tool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExplainAgentTool {
    /// The agent (`toolgate hook <agent>`).
    pub agent: String,
    /// The agent's tool name.
    pub tool: String,
    /// The input fields, each with the agent's field (or JSON pointer) it is taken from.
    pub input: Value,
    /// Fixed input values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set: Option<Value>,
    /// How a call is split (`items`, `patch` or `urls`, with the field), if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub each: Option<String>,
    /// The agent's field naming the folder a command runs in (judged as a `cd` into it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cd: Option<FieldNames>,
    /// The agent's field whose presence makes the command keys typed into a terminal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub typed_when: Option<FieldNames>,
    /// `file:line:column` of the mapping.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// One layer of the set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExplainLayer {
    /// `defaults`, `builtin`, `enforced`, `user`, `policies` or `project`.
    pub kind: String,
    /// Its name for humans: `builtin`, `enforced org/`, `user ~/.config/toolgate/policies`,
    /// a path, `project …`.
    pub name: String,
    /// Whether it may loosen policy and run code (only a found project that the user has
    /// not trusted may not).
    pub trusted: bool,
}

/// Why `explain` could not explain.
#[derive(Clone, Debug)]
pub enum ExplainError {
    /// The policy set does not load.
    Invalid(Vec<Diagnostic>),
    /// No tool or alias of that name.
    UnknownTool {
        /// The name asked for.
        name: String,
        /// A close name, if any.
        suggestion: Option<String>,
        /// Every tool.
        known: Vec<String>,
    },
}

/// Explains `tool` in a loaded snapshot.
pub fn explain_in(snapshot: &Snapshot, tool: &str) -> Result<ExplainReport, ExplainError> {
    let found = snapshot.lookup(tool).or_else(|| {
        // A wildcard's own name: explain the wildcard contract.
        crate::model::mcp::wildcard_server(tool).and_then(|_| snapshot.tools.get(tool))
    });
    let Some(found) = found else {
        let known: Vec<String> = snapshot.tools.keys().map(|t| t.to_string()).collect();
        // A name that would reach a server tool an exact contract runs: that contract.
        let suggestion = match snapshot.contract_running(tool) {
            Some(contract) => Some(contract.to_string()),
            None => crate::diagnostics::closest(tool, known.iter().map(String::as_str))
                .map(str::to_owned),
        };
        return Err(ExplainError::UnknownTool {
            name: tool.to_owned(),
            suggestion,
            known,
        });
    };
    let base = join_pointer("/tools", found.name.as_str());
    let mut fields = Vec::new();
    // Parsed once: the snapshot keeps it as text.
    let effective = snapshot.effective.value();
    if let Some(Value::Object(contract)) = effective.pointer(&base) {
        walk(snapshot, &base, "", contract, &mut fields);
    }
    add_defaults(snapshot, &effective, found, &mut fields);
    fields.sort_by_key(|f| field_rank(&f.field));
    let rules = snapshot
        .rules
        .for_tool(&found.name)
        .map(|rule| ExplainRule {
            name: rule.name.to_string(),
            decision: rule.decision.to_string(),
            priority: rule.priority,
            enforced: rule.origin.enforced,
            modes: rule
                .modes
                .as_ref()
                .map(|m| m.iter().map(|m| m.to_string()).collect()),
            conditional: rule.matchers.is_some() || rule.when.is_some(),
            reason: rule.reason.clone(),
            location: rule.origin.location.as_deref().map(str::to_owned),
        })
        .collect();
    let wildcard = explain_wildcard(snapshot, tool, found);
    Ok(ExplainReport {
        tool: match &wildcard {
            Some(covering) if covering.applies == "covers" => tool.to_owned(),
            _ => found.name.to_string(),
        },
        wildcard,
        trusted_annotations: match &found.resolved.handler {
            crate::model::handler::HandlerSpec::Mcp(mcp)
                if snapshot
                    .mcp_servers
                    .get(&mcp.server)
                    .is_some_and(crate::model::mcp::McpServer::trusts_annotations) =>
            {
                Some(mcp.server.clone())
            }
            _ => None,
        },
        generation: snapshot.generation,
        fields,
        rules,
        summary: summary(snapshot, found),
        agent_tools: agent_tools(snapshot, found.name.as_str()),
        layers: snapshot
            .layers
            .iter()
            .map(|layer| ExplainLayer {
                kind: layer.kind.as_str().to_owned(),
                name: layer.name(),
                trusted: !(layer.kind == crate::snapshot::LayerKind::Project
                    && snapshot.untrusted.is_some()),
            })
            .collect(),
    })
}

/// The wildcard contract that applies to the tool `asked` found as `found`, if any.
fn explain_wildcard(snapshot: &Snapshot, asked: &str, found: &Tool) -> Option<ExplainWildcard> {
    let (server, server_tool) = crate::model::mcp::split_tool_name(asked)?;
    let wildcard = snapshot.wildcard_for(asked)?;
    let applies = if std::ptr::eq(wildcard.as_ref(), found) {
        "covers"
    } else if found.name.as_str() == asked {
        "extends"
    } else {
        return None;
    };
    let server_tool = match &found.resolved.handler {
        crate::model::handler::HandlerSpec::Mcp(mcp) => {
            mcp.tool.clone().unwrap_or_else(|| server_tool.to_owned())
        }
        _ => server_tool.to_owned(),
    };
    Some(ExplainWildcard {
        contract: wildcard.name.to_string(),
        location: snapshot.origin_of(&join_pointer("/tools", wildcard.name.as_str())),
        applies,
        server: server.to_owned(),
        server_tool,
    })
}

/// The agents' tools whose mapping targets `tool` (by name or alias), in definition order.
fn agent_tools(snapshot: &Snapshot, tool: &str) -> Vec<ExplainAgentTool> {
    let mut out = Vec::new();
    for (agent, spec) in &snapshot.agents {
        for (name, mapping) in &spec.tools {
            let targets = mapping
                .tool
                .as_deref()
                .and_then(|target| snapshot.lookup(target))
                .is_some_and(|target| target.name.as_str() == tool);
            if !targets || mapping.disabled == Some(true) {
                continue;
            }
            let each = mapping.each.as_ref().and_then(|each| {
                let items = each.items.as_ref().map(|items| {
                    let fields: Vec<String> =
                        items.as_slice().iter().map(|f| format!("`{f}`")).collect();
                    format!("items {}", fields.join(", "))
                });
                items.or_else(|| {
                    [("patch", &each.patch), ("urls", &each.urls)]
                        .into_iter()
                        .find_map(|(kind, field)| field.as_ref().map(|f| format!("{kind} `{f}`")))
                })
            });
            let pointer = join_pointer(&join_pointer("/agents", agent), "tools");
            out.push(ExplainAgentTool {
                agent: agent.clone(),
                tool: name.clone(),
                input: serde_json::to_value(&mapping.input).unwrap_or(Value::Null),
                set: (!mapping.set.is_empty())
                    .then(|| serde_json::to_value(&mapping.set).unwrap_or(Value::Null)),
                each,
                cd: mapping.cd.clone(),
                typed_when: mapping.typed_when.clone(),
                location: snapshot.origin_of(&join_pointer(&pointer, name)),
            });
        }
    }
    out
}

/// Contract fields, each leaf with its origin. JSON Schemas and lists are shown whole.
fn walk(
    snapshot: &Snapshot,
    base: &str,
    prefix: &str,
    object: &Map<String, Value>,
    out: &mut Vec<ExplainField>,
) {
    for (key, value) in object {
        let field = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        let pointer = join_pointer(base, key);
        let whole = matches!(key.as_str(), "input_schema" | "output_schema") && prefix.is_empty();
        match value {
            Value::Object(inner) if !whole && !inner.is_empty() => {
                walk(snapshot, &pointer, &field, inner, out)
            }
            _ => out.push(located(
                snapshot,
                field,
                value.clone(),
                FieldSource::Contract,
                None,
                &pointer,
            )),
        }
    }
}

fn located(
    snapshot: &Snapshot,
    field: String,
    value: Value,
    source: FieldSource,
    setting: Option<String>,
    pointer: &str,
) -> ExplainField {
    let location = snapshot.sources.locate(&snapshot.provenance, pointer);
    ExplainField {
        field,
        value,
        source,
        setting,
        file: location.as_ref().map(|l| l.source.path().to_string()),
        line: location.as_ref().map(|l| l.span.line),
        column: location.as_ref().map(|l| l.span.column),
    }
}

/// Values the contract does not set: engine defaults (with their place) and toolgate's
/// meaning of absent fields.
fn add_defaults(snapshot: &Snapshot, effective: &Value, tool: &Tool, out: &mut Vec<ExplainField>) {
    let has = |field: &str| {
        out.iter()
            .any(|f| f.field == field || f.field.starts_with(&format!("{field}.")))
    };
    let mut extra = Vec::new();
    let mut engine = |field: &str, setting: &str| {
        if has(field) {
            return;
        }
        let pointer = format!("/engine/{}", setting.replace('.', "/"));
        if let Some(value) = effective.pointer(&pointer) {
            extra.push(located(
                snapshot,
                field.to_owned(),
                value.clone(),
                FieldSource::Engine,
                Some(format!("engine.{setting}")),
                &pointer,
            ));
        }
    };
    if !matches!(tool.contract.timeout, Some(TimeoutSpec::None(_))) {
        engine("timeout.default", "default_timeout");
    }
    for key in [
        "max_model",
        "max_inline",
        "overflow",
        "keep",
        "preview",
        "weight",
        "min_share",
        "batch_exempt",
        "retention",
    ] {
        engine(&format!("budget.{key}"), &format!("budget.{key}"));
    }
    engine("permission.default", "default_permission");
    engine("on_failure", "on_failure");
    let absent: [(&str, Value); 9] = [
        ("concurrency.concurrent_safe", json!(false)),
        ("concurrency.destructive", json!(false)),
        ("concurrency.read_only", json!(false)),
        ("concurrency.side_effect_scope", json!("workspace")),
        ("permission.always_ask", json!(false)),
        ("timeout.cleanup_grace", json!("0ms")),
        ("display.kind", json!("text")),
        ("display.when", json!("always")),
        ("handler.kind", json!("native")),
    ];
    for (flag, hint) in &tool.from_annotations {
        let field = format!("concurrency.{flag}");
        let value = tool
            .contract
            .concurrency
            .as_ref()
            .and_then(|flags| serde_json::to_value(flags).ok())
            .and_then(|flags| flags.get(*flag).cloned())
            .unwrap_or(Value::Null);
        if !has(&field) {
            extra.push(ExplainField {
                field,
                value,
                source: FieldSource::Annotation,
                setting: Some(hint.clone()),
                file: None,
                line: None,
                column: None,
            });
        }
    }
    for (field, value) in absent {
        let timeout_off = field.starts_with("timeout.")
            && matches!(tool.contract.timeout, Some(TimeoutSpec::None(_)));
        if !has(field) && !extra.iter().any(|f: &ExplainField| f.field == field) && !timeout_off {
            extra.push(ExplainField {
                field: field.to_owned(),
                value,
                source: FieldSource::Default,
                setting: None,
                file: None,
                line: None,
                column: None,
            });
        }
    }
    out.extend(extra);
}

/// Orders fields like the contract documents them.
fn field_rank(field: &str) -> (usize, String) {
    const ORDER: [&str; 16] = [
        "aliases",
        "description",
        "input_schema",
        "output_schema",
        "concurrency",
        "timeout",
        "budget",
        "permission",
        "turn_control",
        "admission",
        "display",
        "on_failure",
        "handler",
        "locked",
        "modes",
        "",
    ];
    let head = field.split('.').next().unwrap_or_default();
    let rank = ORDER.iter().position(|o| *o == head).unwrap_or(ORDER.len());
    (rank, field.to_owned())
}

fn summary(snapshot: &Snapshot, tool: &Tool) -> Value {
    let resolved = &tool.resolved;
    let timeout = if resolved.timeout.disabled {
        json!("none")
    } else {
        json!({
            "default_ms": resolved
                .timeout
                .default
                .or(resolved.timeout.engine_default)
                .map(|d| d.as_millis()),
            "max_ms": resolved.timeout.max.map(|d| d.as_millis()),
            "cleanup_grace_ms": resolved.timeout.cleanup_grace.as_millis(),
            "override_field": resolved.timeout.override_field,
        })
    };
    json!({
        "scheduling": if resolved.concurrency.destructive || !resolved.concurrency.concurrent_safe { "alone" } else { "shared" },
        "timeout": timeout,
        "budget": {
            "limit": resolved.budget.limit,
            "unit": snapshot.engine.budget_unit.to_string(),
            "overflow": resolved.budget.overflow,
            "keep": resolved.budget.keep,
        },
        "permission": {
            "default": resolved.default_permission.to_string(),
            "always_ask": resolved.always_ask,
        },
        "gate": resolved.gate.as_ref().map(|g| g.to_string()),
    })
}

impl ExplainReport {
    /// The human rendering: a table of fields with their origins, then the rules.
    pub fn render_human(&self) -> String {
        let mut out = format!("tool `{}` (generation {})\n", self.tool, self.generation);
        let layers: Vec<String> = self
            .layers
            .iter()
            .map(|layer| match layer.trusted {
                true => layer.name.clone(),
                false => format!("{} (not trusted: it may only tighten)", layer.name),
            })
            .collect();
        if let Some(wildcard) = &self.wildcard {
            let at = wildcard
                .location
                .as_ref()
                .map_or_else(String::new, |at| format!(" ({at})"));
            let line = match wildcard.applies {
                "covers" => format!(
                    "contract: wildcard `{}`{at}; calls run tool `{}` of MCP server `{}`\n",
                    wildcard.contract, wildcard.server_tool, wildcard.server
                ),
                _ => format!(
                    "contract: its own, extending wildcard `{}`{at} (the fields it does not set come from there)\n",
                    wildcard.contract
                ),
            };
            out.push_str(&line);
        }
        if let Some(server) = &self.trusted_annotations {
            out.push_str(&format!(
                "annotations: MCP server `{server}` is trusted (`trust_annotations: true`): at run time its tool annotations fill the concurrency flags this contract leaves unset\n"
            ));
        }
        out.push_str(&format!("layers: {}\n\n", layers.join(", ")));
        let value_text = |value: &Value| match value {
            Value::String(s) => s.clone(),
            Value::Object(map) if map.contains_key("type") || map.contains_key("properties") => {
                let props = map
                    .get("properties")
                    .and_then(Value::as_object)
                    .map_or(0, Map::len);
                format!(
                    "(JSON Schema, {})",
                    crate::cli::count(props, "property", "properties")
                )
            }
            other => other.to_string(),
        };
        let rows: Vec<(String, String, String)> = self
            .fields
            .iter()
            .map(|f| {
                let origin = match (&f.file, f.line, f.column, f.source) {
                    (Some(file), Some(line), Some(column), FieldSource::Engine) => {
                        format!(
                            "{file}:{line}:{column} ({})",
                            f.setting.as_deref().unwrap_or("engine")
                        )
                    }
                    (Some(file), Some(line), Some(column), _) => format!("{file}:{line}:{column}"),
                    (_, _, _, FieldSource::Default) => "toolgate default (field absent)".to_owned(),
                    (_, _, _, FieldSource::Annotation) => format!(
                        "the MCP server's annotation ({})",
                        f.setting.as_deref().unwrap_or("hint")
                    ),
                    _ => String::new(),
                };
                (f.field.clone(), value_text(&f.value), origin)
            })
            .collect();
        let width_field = rows
            .iter()
            .map(|r| r.0.chars().count())
            .max()
            .unwrap_or(5)
            .max(5);
        let width_value = rows
            .iter()
            .map(|r| r.1.chars().count())
            .filter(|&n| n <= WIDE_VALUE)
            .max()
            .unwrap_or(5)
            .max(5);
        out.push_str(&format!(
            "  {:<width_field$}  {:<width_value$}  set by\n",
            "field", "value"
        ));
        for (field, value, origin) in rows {
            out.push_str(&format!(
                "  {field:<width_field$}  {value:<width_value$}  {origin}\n"
            ));
        }
        out.push_str("\nrules that can apply, in precedence order:\n");
        if self.rules.is_empty() {
            out.push_str("  (none: the contract default decides)\n");
        }
        for rule in &self.rules {
            let mut line = format!(
                "  {:<24} {:<5} priority {:<4}",
                rule.name, rule.decision, rule.priority
            );
            if rule.enforced {
                line.push_str(" enforced");
            }
            if let Some(modes) = &rule.modes {
                line.push_str(&format!(" modes [{}]", modes.join(", ")));
            }
            if rule.conditional {
                line.push_str(" (when its matchers hold)");
            }
            if let Some(location) = &rule.location {
                line.push_str(&format!("  {location}"));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if !self.agent_tools.is_empty() {
            out.push_str("\nagent tools decided as this tool (`toolgate hook`):\n");
        }
        for mapped in &self.agent_tools {
            let fields: Vec<String> = mapped
                .input
                .as_object()
                .map(|map| {
                    map.iter()
                        .map(|(field, source)| match source {
                            Value::String(source) if source == field => field.clone(),
                            Value::String(source) => format!("{field} ← {source}"),
                            Value::Array(names) => {
                                let names: Vec<&str> =
                                    names.iter().filter_map(Value::as_str).collect();
                                format!("{field} ← {}", names.join(" or "))
                            }
                            _ => field.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let mut line = format!(
                "  {:<8} {:<20} {}",
                mapped.agent,
                mapped.tool,
                fields.join(", ")
            );
            if let Some(each) = &mapped.each {
                line.push_str(&format!(" (one call per {each})"));
            }
            if let Some(cd) = &mapped.cd {
                line.push_str(&format!(" (run in {})", cd.quoted()));
            }
            if let Some(typed) = &mapped.typed_when {
                line.push_str(&format!(
                    " (keys typed into a terminal when it sends {})",
                    typed.quoted()
                ));
            }
            if let Some(location) = &mapped.location {
                line.push_str(&format!("  {location}"));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Values longer than this do not set the width of the value column.
const WIDE_VALUE: usize = 48;

impl ExplainError {
    /// Diagnostics for the error (for rendering like `check`).
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            ExplainError::Invalid(diagnostics) => diagnostics.clone(),
            ExplainError::UnknownTool {
                name,
                suggestion,
                known,
            } => {
                let help = match suggestion {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("tools: {}", known.join(", ")),
                };
                vec![
                    Diagnostic::new(
                        Code::SemanticUnknownReference,
                        format!("no tool or alias named `{name}`"),
                    )
                    .with_help(help),
                ]
            }
        }
    }
}
