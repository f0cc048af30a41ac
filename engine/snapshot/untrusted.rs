//! What an untrusted project layer may do: only tighten.
//!
//! A project's `.toolgate/policies` found from the current directory comes with the
//! repository. Until the user trusts the project ([`super::trust`]), each of its files is
//! cut down before it is merged, against the set the trusted layers below it already make:
//!
//! - kept: new `deny` rules; new `ask` rules, with their priority lowered to that of the
//!   lowest trusted deny rule (so no ask can outrank a deny and turn it into an ask);
//!   declarations of new modes;
//! - ignored: `allow` rules, rules that change or switch off a rule of a lower layer (by
//!   name), `ask` rules that could cover a tool whose default is `deny` (they would turn that
//!   default into an ask), rules naming tools the trusted layers do not define, every hook,
//!   every tool contract (new tools and changes alike: timeouts, concurrency, budgets,
//!   permission defaults and handlers can all loosen or run code), gates, the `commands`
//!   table, engine settings, and any other section.
//!
//! Every ignored entry is listed (its pointer and what it is), so `check` can show them and
//! decisions can say the project is not trusted.

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::{Map, Value};

/// An entry of an untrusted file that was not loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ignored {
    /// Its JSON pointer in the file.
    pub pointer: String,
    /// What it is and why it was ignored, for humans (`allow rule `x``).
    pub what: String,
}

/// A file of an untrusted layer, cut down to what only tightens.
#[derive(Clone, Debug)]
pub struct Restricted {
    /// The document that is merged.
    pub document: Value,
    /// The indices in the original `rules` list of the rules kept, in order: the kept rule
    /// `j` is the original rule `kept_rules[j]`.
    pub kept_rules: Vec<usize>,
    /// What was left out.
    pub ignored: Vec<Ignored>,
}

/// The project layer that was loaded without the user's trust, and what it lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UntrustedProject {
    /// The project root (what `toolgate trust` takes).
    pub root: PathBuf,
    /// Every entry that was ignored, as `file:line:column: what`.
    pub ignored: Vec<String>,
}

impl UntrustedProject {
    /// The sentence a decision carries when the project's ignored entries could have changed
    /// it.
    pub fn notice(&self) -> String {
        format!(
            "project `{root}` is not trusted, so its allow rules, hooks and other loosening settings were ignored; review its `.toolgate/policies` and run `toolgate trust {root}` to trust it",
            root = self.root.display()
        )
    }
}

/// What the trusted layers below the untrusted one define, as far as the cut needs it.
pub struct Trusted {
    rule_names: HashSet<String>,
    hook_names: HashSet<String>,
    tool_names: HashSet<String>,
    mode_names: HashSet<String>,
    /// The lowest priority of any trusted deny rule, if there is one.
    lowest_deny: Option<i64>,
    /// Tools whose permission default is `deny` (in any mode).
    deny_default_tools: HashSet<String>,
    /// The engine's default permission is `deny`: every tool without its own default denies.
    deny_default_engine: bool,
}

impl Trusted {
    /// Reads the merged document of the trusted layers.
    pub fn from_merged(doc: &Map<String, Value>) -> Self {
        let items = |section: &str| -> Vec<&Value> {
            match doc.get(section) {
                Some(Value::Array(items)) => items.iter().collect(),
                _ => Vec::new(),
            }
        };
        let keys = |section: &str| -> HashSet<String> {
            match doc.get(section) {
                Some(Value::Object(map)) => map.keys().cloned().collect(),
                _ => HashSet::new(),
            }
        };
        let name = |item: &Value| item.get("name").and_then(Value::as_str).map(str::to_owned);
        let rules = items("rules");
        let lowest_deny = rules
            .iter()
            .filter(|rule| rule.get("disabled") != Some(&Value::Bool(true)))
            .filter(|rule| rule.get("decision").and_then(Value::as_str) == Some("deny"))
            .map(|rule| rule.get("priority").and_then(Value::as_i64).unwrap_or(0))
            .min();
        let mut tool_names = keys("tools");
        let mut deny_default_tools = HashSet::new();
        if let Some(Value::Object(tools)) = doc.get("tools") {
            for (tool, contract) in tools {
                if let Some(Value::Array(aliases)) = contract.get("aliases") {
                    tool_names.extend(aliases.iter().filter_map(Value::as_str).map(str::to_owned));
                }
                let denies = |patch: &Value| {
                    patch.pointer("/permission/default").and_then(Value::as_str) == Some("deny")
                };
                let in_modes = contract
                    .get("modes")
                    .and_then(Value::as_object)
                    .is_some_and(|modes| modes.values().any(denies));
                if denies(contract) || in_modes {
                    deny_default_tools.insert(tool.clone());
                }
            }
        }
        Self {
            rule_names: rules.iter().filter_map(|rule| name(rule)).collect(),
            hook_names: items("hooks")
                .iter()
                .filter_map(|hook| name(hook))
                .collect(),
            tool_names,
            mode_names: keys("modes"),
            lowest_deny,
            deny_default_tools,
            deny_default_engine: doc
                .get("engine")
                .and_then(|engine| engine.get("default_permission"))
                .and_then(Value::as_str)
                == Some("deny"),
        }
    }
}

/// Cuts one file of an untrusted layer down to what only tightens.
pub fn restrict(document: &Value, trusted: &Trusted) -> Restricted {
    let mut ignored = Vec::new();
    let mut kept_rules = Vec::new();
    let mut out = Map::new();
    let Value::Object(map) = document else {
        return Restricted {
            document: document.clone(),
            kept_rules,
            ignored,
        };
    };
    for (section, value) in map {
        match section.as_str() {
            "version" | "$schema" => {
                out.insert(section.clone(), value.clone());
            }
            "rules" => {
                let Value::Array(rules) = value else { continue };
                let mut kept = Vec::new();
                for (index, rule) in rules.iter().enumerate() {
                    match keep_rule(rule, trusted) {
                        Ok(rule) => {
                            kept.push(rule);
                            kept_rules.push(index);
                        }
                        Err(why) => ignored.push(Ignored {
                            pointer: format!("/rules/{index}"),
                            what: why,
                        }),
                    }
                }
                out.insert(section.clone(), Value::Array(kept));
            }
            "modes" => {
                let Value::Object(modes) = value else {
                    continue;
                };
                let mut kept = Map::new();
                for (mode, spec) in modes {
                    if trusted.mode_names.contains(mode) {
                        ignored.push(Ignored {
                            pointer: crate::load::spans::join_pointer("/modes", mode),
                            what: format!("mode `{mode}` redefined"),
                        });
                    } else {
                        kept.insert(mode.clone(), spec.clone());
                    }
                }
                out.insert(section.clone(), Value::Object(kept));
            }
            "tools" => {
                let Value::Object(tools) = value else {
                    continue;
                };
                for tool in tools.keys() {
                    let what = if trusted.tool_names.contains(tool) {
                        format!("changes to the contract of tool `{tool}`")
                    } else {
                        format!("new tool `{tool}`")
                    };
                    ignored.push(Ignored {
                        pointer: crate::load::spans::join_pointer("/tools", tool),
                        what,
                    });
                }
            }
            "hooks" => {
                let Value::Array(hooks) = value else { continue };
                for (index, hook) in hooks.iter().enumerate() {
                    let name = hook.get("name").and_then(Value::as_str).unwrap_or("?");
                    let what = if trusted.hook_names.contains(name) {
                        format!("changes to hook `{name}`")
                    } else {
                        format!("hook `{name}`")
                    };
                    ignored.push(Ignored {
                        pointer: format!("/hooks/{index}"),
                        what,
                    });
                }
            }
            other => {
                let what = match other {
                    "engine" => "engine settings".to_owned(),
                    "commands" => "the `commands` table".to_owned(),
                    "gates" => "gates".to_owned(),
                    "mcp_servers" => "MCP servers (they run programs)".to_owned(),
                    other => format!("the `{other}` section"),
                };
                ignored.push(Ignored {
                    pointer: crate::load::spans::join_pointer("", other),
                    what,
                });
            }
        }
    }
    Restricted {
        document: Value::Object(out),
        kept_rules,
        ignored,
    }
}

/// The rule as it is kept, or why it is ignored.
fn keep_rule(rule: &Value, trusted: &Trusted) -> Result<Value, String> {
    let name = rule.get("name").and_then(Value::as_str).unwrap_or("?");
    if trusted.rule_names.contains(name) {
        return Err(format!(
            "rule `{name}`, which changes a rule of a lower layer"
        ));
    }
    if rule.get("disabled") == Some(&Value::Bool(true)) {
        return Err(format!("disabled rule `{name}`"));
    }
    let decision = rule.get("decision").and_then(Value::as_str).unwrap_or("");
    let tools: Vec<&str> = match rule.get("tools") {
        Some(Value::Array(tools)) => tools.iter().filter_map(Value::as_str).collect(),
        _ => vec!["*"],
    };
    let is_glob = |tool: &str| tool.contains(['*', '?', '[', '{']);
    if let Some(unknown) = tools
        .iter()
        .find(|tool| !is_glob(tool) && !trusted.tool_names.contains(**tool))
    {
        return Err(format!(
            "{decision} rule `{name}`, which names tool `{unknown}` the trusted layers do not define"
        ));
    }
    match decision {
        "deny" => Ok(rule.clone()),
        "ask" => {
            let covers_deny_default = trusted.deny_default_engine
                || (!trusted.deny_default_tools.is_empty()
                    && tools
                        .iter()
                        .any(|tool| is_glob(tool) || trusted.deny_default_tools.contains(*tool)));
            if covers_deny_default {
                return Err(format!(
                    "ask rule `{name}`, which could turn a tool's default deny into an ask"
                ));
            }
            let mut rule = rule.clone();
            let priority = rule.get("priority").and_then(Value::as_i64).unwrap_or(0);
            if let Some(lowest) = trusted.lowest_deny
                && priority > lowest
                && let Value::Object(map) = &mut rule
            {
                map.insert("priority".into(), Value::from(lowest));
            }
            Ok(rule)
        }
        "" => Err(format!("rule `{name}` without a decision")),
        _ => Err(format!("{decision} rule `{name}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn trusted() -> Trusted {
        let doc = json!({
            "engine": {"default_permission": "ask"},
            "tools": {
                "Bash": {"aliases": ["shell"], "permission": {"default": "ask"}},
                "Secret": {"permission": {"default": "deny"}},
            },
            "rules": [
                {"name": "no-rm", "tools": ["Bash"], "decision": "deny", "priority": 10},
                {"name": "off", "decision": "deny", "priority": -5, "disabled": true},
                {"name": "git", "tools": ["Bash"], "decision": "allow"},
            ],
            "hooks": [{"name": "audit"}],
            "modes": {"plan": {}},
        });
        Trusted::from_merged(doc.as_object().unwrap())
    }

    #[test]
    fn only_new_deny_and_ask_rules_and_new_modes_are_kept() {
        let file = json!({
            "version": 1,
            "engine": {"max_concurrency": 100},
            "tools": {"Bash": {"timeout": {"max": "1h"}}, "Mine": {}},
            "hooks": [{"name": "audit", "disabled": true}, {"name": "marker"}],
            "commands": {},
            "modes": {"plan": {"description": "x"}, "fast": {}},
            "rules": [
                {"name": "rm-all", "tools": ["Bash"], "decision": "allow"},
                {"name": "no-curl", "tools": ["shell"], "decision": "deny", "priority": 1000},
                {"name": "ask-push", "tools": ["Bash"], "decision": "ask", "priority": 50},
                {"name": "ask-low", "tools": ["Bash"], "decision": "ask", "priority": -1},
                {"name": "no-rm", "decision": "ask"},
                {"name": "git", "disabled": true},
                {"name": "mine", "tools": ["Mine"], "decision": "deny"},
                {"name": "ask-all", "decision": "ask"},
            ],
        });
        let restricted = restrict(&file, &trusted());
        assert_eq!(restricted.kept_rules, [1, 2, 3]);
        assert_eq!(
            restricted.document,
            json!({
                "version": 1,
                "modes": {"fast": {}},
                "rules": [
                    {"name": "no-curl", "tools": ["shell"], "decision": "deny", "priority": 1000},
                    {"name": "ask-push", "tools": ["Bash"], "decision": "ask", "priority": 10},
                    {"name": "ask-low", "tools": ["Bash"], "decision": "ask", "priority": -1},
                ],
            })
        );
        let ignored: Vec<(&str, &str)> = restricted
            .ignored
            .iter()
            .map(|i| (i.pointer.as_str(), i.what.as_str()))
            .collect();
        assert_eq!(
            ignored,
            [
                ("/engine", "engine settings"),
                ("/tools/Bash", "changes to the contract of tool `Bash`"),
                ("/tools/Mine", "new tool `Mine`"),
                ("/hooks/0", "changes to hook `audit`"),
                ("/hooks/1", "hook `marker`"),
                ("/commands", "the `commands` table"),
                ("/modes/plan", "mode `plan` redefined"),
                ("/rules/0", "allow rule `rm-all`"),
                (
                    "/rules/4",
                    "rule `no-rm`, which changes a rule of a lower layer"
                ),
                (
                    "/rules/5",
                    "rule `git`, which changes a rule of a lower layer"
                ),
                (
                    "/rules/6",
                    "deny rule `mine`, which names tool `Mine` the trusted layers do not define"
                ),
                (
                    "/rules/7",
                    "ask rule `ask-all`, which could turn a tool's default deny into an ask"
                ),
            ]
        );
    }

    #[test]
    fn no_ask_rule_is_kept_when_the_engine_default_denies() {
        let doc = json!({"engine": {"default_permission": "deny"}, "tools": {"Bash": {}}});
        let trusted = Trusted::from_merged(doc.as_object().unwrap());
        let file = json!({"version": 1, "rules": [
            {"name": "ask-bash", "tools": ["Bash"], "decision": "ask"},
            {"name": "deny-bash", "tools": ["Bash"], "decision": "deny"},
        ]});
        let restricted = restrict(&file, &trusted);
        assert_eq!(restricted.kept_rules, [1]);
        assert_eq!(restricted.ignored.len(), 1);
    }

    #[test]
    fn an_untrusted_project_declares_no_mcp_server() {
        let trusted = Trusted::from_merged(json!({}).as_object().unwrap());
        let file = json!({"version": 1, "mcp_servers": {"evil": {"command": ["sh", "-c", "x"]}}});
        let restricted = restrict(&file, &trusted);
        assert_eq!(restricted.document.get("mcp_servers"), None);
        assert_eq!(
            restricted.ignored,
            [Ignored {
                pointer: "/mcp_servers".to_owned(),
                what: "MCP servers (they run programs)".to_owned()
            }]
        );
    }
}
