//! Gemini CLI policy TOML → toolgate rules.
//!
//! A policy file holds `[[rule]]` tables: `toolName` (a name, a list, or a wildcard),
//! `mcpName`, `commandPrefix` (a string or list), `commandRegex`, `argsPattern`, `decision`
//! (`allow`, `deny`, `ask_user`), `priority` (0–999), `modes`, `denyMessage`, `interactive`,
//! `allowRedirection`, `subagent`, `toolAnnotations`. The highest priority wins; files are
//! in tiers (workspace < user < admin) whose base outranks any priority of a lower tier.
//!
//! Tiers become priority offsets: user rules keep their priority, workspace rules lose 1000,
//! admin rules gain 1000 and go to the enforced file (admin policy is organisation policy).
//! The tier is read from where the file is: `/etc/gemini-cli/policies` (and the macOS and
//! Windows system folders) is admin, a `.gemini/policies` folder of a project is workspace,
//! anything else (`~/.gemini/policies`) is user. Note that a rule above priority 100
//! outranks toolgate's own built-in rules, as it outranks Gemini CLI's defaults.
//!
//! Tool names map onto toolgate's tools with a small table of this module (`tool`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{ImportError, Origin, Rule, Translation, prefix_patterns, split_words};

/// A policy file's tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tier {
    Workspace,
    User,
    Admin,
}

impl Tier {
    fn of(path: &Path) -> Self {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        let text = absolute.to_string_lossy().replace('\\', "/");
        if [
            "/etc/gemini-cli/",
            "/Library/Application Support/GeminiCli/",
            "/ProgramData/gemini-cli/",
        ]
        .iter()
        .any(|dir| text.contains(dir))
        {
            return Tier::Admin;
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let in_home_config = home.is_some_and(|home| absolute.starts_with(home.join(".gemini")));
        if text.contains("/.gemini/policies/") && !in_home_config {
            return Tier::Workspace;
        }
        Tier::User
    }

    fn offset(self) -> i32 {
        match self {
            Tier::Workspace => -1000,
            Tier::User => 0,
            Tier::Admin => 1000,
        }
    }
}

/// The toolgate tool a Gemini CLI tool name is decided as, by the built-in tool map of
/// `toolgate hook gemini`; `*` stays every tool.
fn tool(name: &str) -> Option<String> {
    if name == "*" {
        return Some("*".to_owned());
    }
    super::agent_tools("gemini").get(name).cloned()
}

/// Approval modes toolgate's built-in policies do not declare, with what they mean in
/// Gemini CLI.
fn mode_description(mode: &str) -> Option<&'static str> {
    Some(match mode {
        "autoEdit" => "Gemini CLI's autoEdit approval mode: some edits are approved automatically",
        "yolo" => "Gemini CLI's yolo approval mode: every tool is approved automatically",
        _ => return None,
    })
}

/// Translates the policy files.
pub fn translate(sources: &[(PathBuf, String)]) -> Result<Translation, ImportError> {
    let mut out = Translation::default();
    for (path, text) in sources {
        let file = path.display().to_string();
        let table: toml::Table = toml::from_str(text).map_err(|err| {
            let (line, column) = err
                .span()
                .map_or((1, 1), |span| line_column(text, span.start));
            ImportError::Syntax {
                file: file.clone(),
                line,
                column,
                message: err.message().to_owned(),
            }
        })?;
        let tier = Tier::of(path);
        let lines = rule_lines(text);
        for (key, value) in &table {
            if key != "rule" {
                out.skip(
                    Origin {
                        file: file.clone(),
                        place: format!("`{key}`"),
                        text: one_line(&inline(value)),
                    },
                    "only `[[rule]]` tables are imported",
                );
                continue;
            }
            let Some(rules) = value.as_array() else {
                out.skip(
                    Origin {
                        file: file.clone(),
                        place: "`rule`".into(),
                        text: one_line(&inline(value)),
                    },
                    "`rule` is not an array of tables",
                );
                continue;
            };
            for (index, rule) in rules.iter().enumerate() {
                let place = match lines.get(index) {
                    Some(line) => format!("rule {} (line {line})", index + 1),
                    None => format!("rule {}", index + 1),
                };
                let from = Origin {
                    file: file.clone(),
                    place,
                    text: one_line(&inline(rule)),
                };
                let json = serde_json::to_value(rule).unwrap_or(Value::Null);
                match translate_rule(&json, tier, &from, &mut out) {
                    Ok(rule) => out.rules.push(rule),
                    Err(why) => out.skip(from, why),
                }
            }
        }
    }
    Ok(out)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A rule table as one inline table, for its origin comment.
fn inline(value: &toml::Value) -> String {
    match value {
        toml::Value::Table(table) => {
            let parts: Vec<String> = table
                .iter()
                .map(|(key, value)| format!("{key} = {}", inline(value)))
                .collect();
            format!("{{ {} }}", parts.join(", "))
        }
        toml::Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(inline).collect();
            format!("[{}]", parts.join(", "))
        }
        toml::Value::String(s) => Value::from(s.as_str()).to_string(),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
    }
}

/// The 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The line of each `[[rule]]` header, in order.
fn rule_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let line = line.trim();
            line.starts_with("[[")
                && line
                    .trim_start_matches('[')
                    .trim_start()
                    .starts_with("rule")
                && line
                    .trim_start_matches('[')
                    .trim_start()
                    .trim_start_matches("rule")
                    .trim_start()
                    .starts_with(']')
        })
        .map(|(index, _)| index + 1)
        .collect()
}

fn strings(value: Option<&Value>) -> Result<Vec<String>, String> {
    match value {
        None => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| "a list of strings was expected".to_owned())
            })
            .collect(),
        Some(_) => Err("a string or a list of strings was expected".into()),
    }
}

/// The toolgate tool (or glob) for a Gemini tool name, with the MCP server if any.
fn tool_pattern(name: Option<&str>, mcp: Option<&str>) -> Result<String, String> {
    match (mcp, name) {
        (Some("*"), None | Some("*")) => Ok("mcp__*".into()),
        (Some("*"), Some(tool)) => Ok(format!("mcp__*__{tool}")),
        (Some(server), None | Some("*")) => Ok(format!("mcp__{server}__*")),
        (Some(server), Some(tool)) => Ok(format!("[m]cp__{server}__{tool}")),
        (None, Some(name)) if name.starts_with("mcp_") => {
            let rest = &name["mcp_".len()..];
            match rest.split_once('_') {
                _ if rest == "*" => Ok("mcp__*".into()),
                Some((server, "*")) => Ok(format!("mcp__{server}__*")),
                Some((server, tool)) => {
                    if server.contains('*') || tool.contains('*') {
                        Ok(format!("mcp__{server}__{tool}"))
                    } else {
                        Ok(format!("[m]cp__{server}__{tool}"))
                    }
                }
                None => Err(format!("`{name}` names no MCP tool")),
            }
        }
        (None, Some(name)) => {
            tool(name).ok_or_else(|| format!("toolgate has no tool for `{name}`"))
        }
        (None, None) => Ok("*".into()),
    }
}

fn translate_rule(
    rule: &Value,
    tier: Tier,
    from: &Origin,
    out: &mut Translation,
) -> Result<Rule, String> {
    let Value::Object(fields) = rule else {
        return Err("a rule is a table".into());
    };
    let decision = match fields.get("decision").and_then(Value::as_str) {
        Some("allow") => "allow",
        Some("deny") => "deny",
        Some("ask_user") => "ask",
        Some(other) => return Err(format!("unknown decision `{other}`")),
        None => return Err("a rule needs a `decision`".into()),
    };
    let mut inexact = Vec::new();
    let mut matchers = Vec::new();
    for (key, value) in fields {
        match key.as_str() {
            "toolName" | "mcpName" | "decision" | "priority" | "modes" | "commandPrefix"
            | "commandRegex" | "denyMessage" | "deny_message" | "interactive"
            | "allowRedirection" => {}
            "argsPattern" => {
                return Err(
                    "`argsPattern` is a regular expression over the serialised arguments; toolgate matches parsed fields only (write a `match` on the field instead)"
                        .into(),
                );
            }
            "subagent" | "toolAnnotations" if decision == "allow" => {
                return Err(format!(
                    "toolgate cannot tell `{key}` apart, and an allow rule without it would allow more"
                ));
            }
            "subagent" | "toolAnnotations" => inexact.push(format!(
                "`{key}` = {value} is not translated: the rule applies to every call of its tools"
            )),
            other => return Err(format!("unknown field `{other}`")),
        }
    }
    let mcp = fields.get("mcpName").and_then(Value::as_str);
    let mut names = strings(fields.get("toolName"))?;
    let prefixes = strings(fields.get("commandPrefix"))?;
    let regex = fields.get("commandRegex").and_then(Value::as_str);
    if (!prefixes.is_empty() || regex.is_some()) && names.is_empty() && mcp.is_none() {
        names.push("run_shell_command".into());
    }
    let mut tools = Vec::new();
    if names.is_empty() {
        tools.push(tool_pattern(None, mcp)?);
    }
    for name in &names {
        tools.push(tool_pattern(Some(name), mcp)?);
    }
    if !prefixes.is_empty() || regex.is_some() {
        if tools != ["Bash"] {
            return Err(
                "`commandPrefix` and `commandRegex` apply to `run_shell_command` only".into(),
            );
        }
        let redirection = fields.get("allowRedirection") == Some(&Value::Bool(true));
        if !prefixes.is_empty() {
            let mut patterns = Vec::new();
            for prefix in &prefixes {
                let words =
                    split_words(prefix).ok_or("an unterminated quote in `commandPrefix`")?;
                if words.iter().any(|(w, q)| {
                    !q && w.contains(['&', '|', ';', '<', '>', '(', ')', '$', '`', '*'])
                }) {
                    return Err(format!(
                        "`{prefix}` holds shell operators or wildcards: a toolgate pattern is one simple command"
                    ));
                }
                let words: Vec<String> = words.into_iter().map(|(w, _)| w).collect();
                patterns.extend(prefix_patterns(&words));
            }
            let mut matcher = json!({ "shell": patterns });
            if redirection {
                matcher["allow_redirection"] = Value::Bool(true);
            }
            matchers.push(("command".to_owned(), matcher));
        } else if let Some(regex) = regex {
            // A regex judges the whole line: as an allow rule it would allow every command of
            // a line whose start matches (`npm test; wget …`), where Gemini CLI checks each.
            if decision == "allow" {
                return Err(
                    "an allow rule with `commandRegex` would judge a whole command line by its start (toolgate cannot apply a regex to each command of a line); write `commandPrefix`, or a toolgate `shell` pattern".into(),
                );
            }
            if redirection {
                inexact.push("`allowRedirection` has no meaning for a deny or ask rule".into());
            }
            inexact.push(
                "the regex is matched anywhere in the command line as written (Gemini CLI matches it at the start of each command, JSON-escaped), so it holds for more lines".into(),
            );
            matchers.push(("command".to_owned(), json!({ "regex": regex })));
        }
    } else if fields.contains_key("allowRedirection") {
        inexact.push("`allowRedirection` applies to shell commands only".into());
    }
    let mut modes = strings(fields.get("modes"))?;
    if modes.iter().any(|m| m == "default") {
        inexact.push(
            "toolgate has no `default` mode (a batch runs in no mode by default), so the rule applies in every mode".into(),
        );
        modes.clear();
    }
    match fields.get("interactive").and_then(Value::as_bool) {
        Some(false) if modes.is_empty() => modes.push("automation".into()),
        Some(false) => inexact.push(
            "`interactive = false` is not combined with `modes`: the rule applies in its modes whoever is there".into(),
        ),
        Some(true) => inexact.push(
            "`interactive = true` is not translated: toolgate does not know whether a person is there".into(),
        ),
        None => {}
    }
    for mode in &modes {
        match mode.as_str() {
            "plan" | "automation" => {}
            other => match mode_description(other) {
                Some(description) => {
                    out.modes.insert(other.to_owned(), description.to_owned());
                }
                None => return Err(format!("unknown approval mode `{other}`")),
            },
        }
    }
    let priority = fields
        .get("priority")
        .map(|p| p.as_i64().ok_or("`priority` is an integer"))
        .transpose()?
        .unwrap_or(0);
    if !(0..=999).contains(&priority) {
        return Err(format!("priority {priority} is outside 0–999"));
    }
    let hint = match (names.first(), prefixes.first()) {
        (_, Some(prefix)) => prefix.clone(),
        _ if regex.is_some() => format!("regex {}", regex.unwrap_or_default()),
        (Some(name), None) => name.clone(),
        (None, None) => mcp.unwrap_or("all").to_owned(),
    };
    let mut out_rule = Rule::new(hint, tools, decision, from.clone());
    out_rule.matchers = matchers;
    out_rule.modes = modes;
    out_rule.priority = tier.offset() + priority as i32;
    out_rule.reason = fields
        .get("denyMessage")
        .or_else(|| fields.get("deny_message"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    out_rule.inexact = inexact;
    out_rule.enforced = tier == Tier::Admin;
    Ok(out_rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_and_mcp_servers_map_to_tool_patterns() {
        assert_eq!(
            tool_pattern(Some("run_shell_command"), None).unwrap(),
            "Bash"
        );
        assert_eq!(tool_pattern(Some("*"), None).unwrap(), "*");
        assert_eq!(tool_pattern(None, Some("jira")).unwrap(), "mcp__jira__*");
        assert_eq!(
            tool_pattern(Some("search"), Some("jira")).unwrap(),
            "[m]cp__jira__search"
        );
        assert_eq!(tool_pattern(Some("*"), Some("*")).unwrap(), "mcp__*");
        assert_eq!(
            tool_pattern(Some("mcp_jira_search"), None).unwrap(),
            "[m]cp__jira__search"
        );
        assert_eq!(
            tool_pattern(Some("mcp_jira_*"), None).unwrap(),
            "mcp__jira__*"
        );
        assert!(tool_pattern(Some("list_directory"), None).is_err());
    }

    #[test]
    fn rule_headers_are_found_by_line() {
        assert_eq!(
            rule_lines("# x\n[[rule]]\na = 1\n\n[[ rule ]]\n[rules]\n"),
            [2, 5]
        );
    }
}
