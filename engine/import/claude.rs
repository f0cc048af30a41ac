//! Claude Code `settings.json` → toolgate rules.
//!
//! Read: `permissions.allow`, `permissions.ask`, `permissions.deny` (rule strings `Tool` or
//! `Tool(specifier)`), `permissions.defaultMode` and `permissions.additionalDirectories`, from
//! user (`~/.claude/settings.json`), project (`.claude/settings.json`), local
//! (`.claude/settings.local.json`) and managed (`managed-settings.json`) files. Claude Code
//! merges the rules of every file and decides deny, then ask, then allow; toolgate decides by
//! priority, then deny > ask > allow, so imported denies get priority 100 (level with the
//! built-in denies, which they tie with and so never lose to), asks 1 (above the built-in
//! allows at 0 and 1) and allows 0 (below every built-in deny). Managed rules go to the
//! enforced file. Of `defaultMode`, the highest scope's value counts (managed > local >
//! project > user), as in Claude Code.
//!
//! Tool names map onto toolgate's built-in tools with a small table of this module
//! (`tool`); `Edit(...)` rules cover toolgate's `Write` and `Edit`, `Read(...)` rules
//! `Read` (by `file_path`) and, for deny and ask, `Grep` and `Glob` (by `path`), as Claude
//! Code applies them to its search tools too.

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use super::{ImportError, Origin, Rule, Translation, prefix_patterns, shell_word, split_words};

/// Priorities of imported rules by decision (see the module docs).
const DENY: i32 = 100;
const ASK: i32 = 1;
const ALLOW: i32 = 0;

/// Where a settings file sits among Claude Code's scopes, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Scope {
    User,
    Project,
    Local,
    Managed,
}

impl Scope {
    fn of(path: &Path) -> Self {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "managed-settings.json" {
            return Scope::Managed;
        }
        if name == "settings.local.json" {
            return Scope::Local;
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        match home {
            Some(home) if absolute == home.join(".claude").join("settings.json") => Scope::User,
            _ => Scope::Project,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
            Scope::Managed => "managed",
        }
    }
}

/// The toolgate tools a Claude Code tool name in a permission rule covers, by the built-in
/// tool map of `toolgate hook claude`. `Edit` rules cover every file-editing tool (Claude
/// Code's documented meaning: `Edit`, `MultiEdit`, `NotebookEdit` and `Write`), so they
/// cover what those tools are decided as.
fn tool(name: &str) -> Option<Vec<String>> {
    let map = super::agent_tools("claude");
    let single = [name];
    let names: &[&str] = match name {
        "Edit" => &["Write", "Edit", "MultiEdit", "NotebookEdit"],
        _ => &single,
    };
    let mut tools: Vec<String> = Vec::new();
    for name in names {
        if let Some(target) = map.get(*name)
            && !tools.contains(target)
        {
            tools.push(target.clone());
        }
    }
    (!tools.is_empty()).then_some(tools)
}

/// Translates the settings files.
pub fn translate(sources: &[(PathBuf, String)]) -> Result<Translation, ImportError> {
    let mut out = Translation::default();
    let mut mode: Option<(Scope, String, Origin)> = None;
    let mut directories: Vec<(Scope, PathBuf, String, Origin)> = Vec::new();
    let mut modes_seen: Vec<(Scope, String, Origin)> = Vec::new();
    for (path, text) in sources {
        let file = path.display().to_string();
        // A key given twice (a second `deny` list) is an error: Claude Code keeps the last
        // one, and which the user meant cannot be told.
        let settings = crate::load::json::parse_text(&file, text).map_err(|problem| {
            let (line, column) = problem
                .location
                .as_ref()
                .map_or((1, 1), |l| (l.span.line as usize, l.span.column as usize));
            ImportError::Syntax {
                file: file.clone(),
                line,
                column,
                message: problem.message,
            }
        })?;
        let scope = Scope::of(path);
        let root = project_root(path, scope);
        let Some(permissions) = settings.get("permissions") else {
            continue;
        };
        let Value::Object(permissions) = permissions else {
            out.skip(
                origin(&file, "permissions", &permissions.to_string()),
                "`permissions` is not an object",
            );
            continue;
        };
        for (key, value) in permissions {
            match key.as_str() {
                "allow" | "ask" | "deny" => {
                    let Value::Array(items) = value else {
                        out.skip(
                            origin(&file, &format!("permissions.{key}"), &value.to_string()),
                            "not a list of rules",
                        );
                        continue;
                    };
                    for (index, item) in items.iter().enumerate() {
                        let place = format!("permissions.{key}[{index}]");
                        let Some(text) = item.as_str() else {
                            out.skip(origin(&file, &place, &item.to_string()), "not a string");
                            continue;
                        };
                        let decision = match key.as_str() {
                            "allow" => "allow",
                            "ask" => "ask",
                            _ => "deny",
                        };
                        let from = origin(&file, &place, &format!("{text:?}"));
                        match rule(decision, text, scope, &from) {
                            Ok(rules) => out.rules.extend(rules),
                            Err(why) => out.skip(from, why),
                        }
                    }
                }
                "defaultMode" => {
                    let from = origin(&file, "permissions.defaultMode", &value.to_string());
                    match value.as_str() {
                        Some(value) => {
                            modes_seen.push((scope, value.to_owned(), from.clone()));
                            if mode.as_ref().is_none_or(|(s, _, _)| scope >= *s) {
                                mode = Some((scope, value.to_owned(), from));
                            }
                        }
                        None => out.skip(from, "`defaultMode` is not a string"),
                    }
                }
                "additionalDirectories" => {
                    let items = value.as_array().cloned().unwrap_or_default();
                    for (index, item) in items.iter().enumerate() {
                        let place = format!("permissions.additionalDirectories[{index}]");
                        let from = origin(&file, &place, &item.to_string());
                        match item.as_str() {
                            Some(dir) => directories.push((
                                scope,
                                resolve_dir(dir, &root),
                                dir.to_owned(),
                                from,
                            )),
                            None => out.skip(from, "not a string"),
                        }
                    }
                }
                other => out.skip(
                    origin(&file, &format!("permissions.{other}"), &value.to_string()),
                    "toolgate has no equivalent of this setting",
                ),
            }
        }
    }
    for (scope, value, from) in &modes_seen {
        if mode
            .as_ref()
            .is_some_and(|(s, v, o)| (s, v, o) != (scope, value, from))
        {
            out.skip(
                from.clone(),
                format!(
                    "overridden by the `defaultMode` of a higher scope ({} settings)",
                    mode.as_ref().map_or("", |(s, _, _)| s.as_str())
                ),
            );
        }
    }
    let accept_edits = match mode {
        None => false,
        Some((_, value, from)) => default_mode(&value, from, &mut out),
    };
    for (scope, dir, written, from) in directories {
        let pattern = format!("{}/**", dir.display());
        let mut read = Rule::new(
            format!("additional-directory-{written}"),
            vec!["Read".into()],
            "allow",
            from.clone(),
        );
        read.matchers = vec![("file_path".into(), json!({ "path": [pattern] }))];
        read.priority = ALLOW;
        read.enforced = scope == Scope::Managed;
        read.inexact.push(
            "reads outside the workspace are allowed by toolgate's defaults anyway; this rule records the directory".into(),
        );
        out.rules.push(read);
        if accept_edits {
            let mut edit = Rule::new(
                format!("accept-edits-{written}"),
                vec!["Write".into(), "Edit".into()],
                "allow",
                from,
            );
            edit.matchers = vec![("file_path".into(), json!({ "path": [pattern] }))];
            // Above the built-in `outside-workspace-writes` ask (priority 0), below every
            // built-in deny.
            edit.priority = 1;
            edit.enforced = scope == Scope::Managed;
            out.rules.push(edit);
        }
    }
    Ok(out)
}

/// `defaultMode`: `acceptEdits` becomes an allow rule for edits inside the workspace (its
/// return value says so, for the additional directories); the others are notes.
fn default_mode(value: &str, from: Origin, out: &mut Translation) -> bool {
    match value {
        "acceptEdits" => {
            let mut rule = Rule::new(
                "accept-edits",
                vec!["Write".into(), "Edit".into()],
                "allow",
                from,
            );
            rule.matchers = vec![("file_path".into(), json!({ "workspace": "inside" }))];
            rule.inexact.push(
                "Claude Code's acceptEdits also accepts `mkdir`, `touch`, `mv` and `cp` in the working directories; those Bash commands still ask".into(),
            );
            out.rules.push(rule);
            true
        }
        "default" => false,
        "plan" => {
            out.skip(
                from,
                "toolgate chooses modes per batch: pass `modes: [plan]` (or the agent's plan mode) instead of a default",
            );
            false
        }
        "bypassPermissions" => {
            out.skip(
                from,
                "toolgate never turns every rule off; allow what should run without asking with rules",
            );
            false
        }
        other => {
            out.skip(from, format!("toolgate has no `{other}` mode"));
            false
        }
    }
}

fn origin(file: &str, place: &str, text: &str) -> Origin {
    Origin {
        file: file.to_owned(),
        place: place.to_owned(),
        text: text.to_owned(),
    }
}

/// The project root a settings file's `/path` rules and relative directories are taken
/// against: the folder holding `.claude` for project and local files.
fn project_root(path: &Path, scope: Scope) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let dir = absolute.parent().unwrap_or(Path::new("/")).to_owned();
    match scope {
        Scope::Project | Scope::Local if dir.file_name() == Some(".claude".as_ref()) => {
            dir.parent().unwrap_or(&dir).to_owned()
        }
        _ => dir,
    }
}

/// An additional directory, absolute: `~/x` stays under the home folder (`~` is kept for
/// toolgate to expand), relative ones are taken against the project root.
fn resolve_dir(dir: &str, root: &Path) -> PathBuf {
    let dir = dir.trim_end_matches('/');
    if dir.starts_with("~/") || dir.starts_with('/') {
        return PathBuf::from(dir);
    }
    let mut out = PathBuf::new();
    for part in root.join(dir).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// One rule string → toolgate rules, or why it cannot be translated.
fn rule(
    decision: &'static str,
    text: &str,
    scope: Scope,
    from: &Origin,
) -> Result<Vec<Rule>, String> {
    let text = text.trim();
    let (name, specifier) = match text.split_once('(') {
        Some((name, rest)) => match rest.strip_suffix(')') {
            Some(specifier) => (name, Some(specifier)),
            None => return Err("a rule with `(` must end with `)`".into()),
        },
        None => (text, None),
    };
    let priority = match decision {
        "deny" => DENY,
        "ask" => ASK,
        _ => ALLOW,
    };
    let new = |hint: &str, tools: Vec<String>| {
        let mut rule = Rule::new(hint.to_owned(), tools, decision, from.clone());
        rule.priority = priority;
        rule.enforced = scope == Scope::Managed;
        rule
    };
    if let Some(server) = name.strip_prefix("mcp__") {
        if specifier.is_some() {
            return Err("MCP rules take no specifier".into());
        }
        return Ok(vec![mcp_rule(server, new)?]);
    }
    let specifier = specifier
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "*");
    let Some(specifier) = specifier else {
        let tools = tool(name).ok_or_else(|| format!("toolgate has no tool for `{name}`"))?;
        return Ok(vec![new(name, tools)]);
    };
    match name {
        "Bash" => {
            let (patterns, inexact) = bash_patterns(specifier)?;
            let mut rule = new(&format!("bash {specifier}"), tools_of("Bash")?);
            rule.matchers = vec![("command".into(), json!({ "shell": patterns }))];
            rule.inexact = inexact;
            Ok(vec![rule])
        }
        "Read" | "Edit" | "Write" => {
            let (pattern, inexact) = path_pattern(specifier, scope)?;
            let mut rule = new(&format!("{name} {specifier}"), tools_of(name)?);
            rule.matchers = vec![("file_path".into(), json!({ "path": [pattern] }))];
            rule.inexact = inexact.clone();
            let mut rules = vec![rule];
            if name == "Read" && decision != "allow" {
                let mut tools = tools_of("Grep")?;
                tools.extend(tools_of("Glob")?);
                let mut search = new(&format!("search {specifier}"), tools);
                search.matchers = vec![("path".into(), json!({ "path": [pattern] }))];
                search.inexact = inexact;
                rules.push(search);
            }
            Ok(rules)
        }
        "WebFetch" => {
            let domain = specifier
                .strip_prefix("domain:")
                .ok_or("a WebFetch specifier other than `domain:` has no documented meaning")?;
            let host = if let Some(rest) = domain.strip_prefix("*.") {
                format!(r"(?:[^/@:?#]+\.)?{}", regex::escape(rest))
            } else {
                regex::escape(domain)
            };
            let mut rule = new(&format!("webfetch {domain}"), tools_of("WebFetch")?);
            rule.matchers = vec![(
                "url".into(),
                json!({ "regex": format!(r"(?i)^[a-z][a-z0-9+.-]*://(?:[^/@?#]*@)?{host}(?::[0-9]+)?(?:[/?#]|$)") }),
            )];
            Ok(vec![rule])
        }
        other => Err(match tool(other) {
            Some(_) => format!("a `{other}(...)` specifier has no toolgate matcher"),
            None => format!("toolgate has no tool for `{other}`"),
        }),
    }
}

/// [`tool`], or why there is none.
fn tools_of(name: &str) -> Result<Vec<String>, String> {
    tool(name).ok_or_else(|| format!("toolgate has no tool for `{name}`"))
}

/// `mcp__server`, `mcp__server__*`, `mcp__server__tool` → a tool glob. An exact tool name is
/// written as a one-character class (`[m]cp__server__tool`): a glob may name a tool no
/// contract declares yet (the agent's MCP tools are not toolgate contracts), a plain name may
/// not.
fn mcp_rule(
    server_and_tool: &str,
    new: impl Fn(&str, Vec<String>) -> Rule,
) -> Result<Rule, String> {
    let (server, tool) = match server_and_tool.split_once("__") {
        Some((server, tool)) => (server, Some(tool)),
        None => (server_and_tool, None),
    };
    if server.is_empty() || server.contains(['*', '?', '[', '{']) {
        return Err("an MCP rule names one server".into());
    }
    let glob = match tool {
        None | Some("*") => format!("mcp__{server}__*"),
        Some(tool) if tool.contains(['*', '?', '[', '{']) => {
            return Err("an MCP rule names one tool or all tools (`*`) of a server".into());
        }
        Some(tool) => format!("[m]cp__{server}__{tool}"),
    };
    let mut rule = new(&format!("mcp {server_and_tool}"), vec![glob]);
    rule.inexact.push(
        "applies once the MCP tool is a toolgate tool (the hook's tool map or a contract)".into(),
    );
    Ok(rule)
}

/// `Bash(...)` specifier → `shell` patterns. `cmd:*` (legacy) is a prefix; otherwise the
/// specifier is a command whose unquoted `*` words stand for any words.
fn bash_patterns(specifier: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let mut inexact = Vec::new();
    if let Some(prefix) = specifier.strip_suffix(":*") {
        let words = split_words(prefix).ok_or("an unterminated quote")?;
        check_words(&words)?;
        let words: Vec<String> = words.into_iter().map(|(w, _)| w).collect();
        if words.is_empty() {
            return Err("an empty command prefix".into());
        }
        return Ok((prefix_patterns(&words), inexact));
    }
    let words = split_words(specifier).ok_or("an unterminated quote")?;
    check_words(&words)?;
    let mut tokens = Vec::new();
    for (word, quoted) in &words {
        if !quoted && word == "*" {
            tokens.push("*".to_owned());
        } else if !quoted && word.contains('*') {
            if word.ends_with('*') && !word[..word.len() - 1].contains('*') {
                inexact.push(format!(
                    "`{word}` matches words starting with `{}`; in Claude Code the `*` may also run on into the following words",
                    &word[..word.len() - 1]
                ));
            } else {
                inexact.push(format!(
                    "the `*` of `{word}` matches within one word in toolgate"
                ));
            }
            // A glob token: quote everything but the stars.
            let parts: Vec<String> = word
                .split('*')
                .map(|part| {
                    if part.is_empty() {
                        String::new()
                    } else {
                        shell_word(part)
                    }
                })
                .collect();
            tokens.push(parts.join("*"));
        } else {
            tokens.push(shell_word(word));
        }
    }
    if tokens.is_empty() {
        return Err("an empty command".into());
    }
    Ok((vec![tokens.join(" ")], inexact))
}

/// Shell operators cannot be part of a toolgate pattern (one simple command).
fn check_words(words: &[(String, bool)]) -> Result<(), String> {
    for (word, quoted) in words {
        if !quoted && word.contains(['&', '|', ';', '<', '>', '(', ')', '$', '`']) {
            return Err(format!(
                "`{word}` is a shell operator or expansion: a toolgate pattern is one simple command (each part of a command line is judged on its own)"
            ));
        }
    }
    Ok(())
}

/// A `Read`/`Edit` specifier (gitignore style with Claude Code's anchors) → a toolgate
/// `path` pattern.
fn path_pattern(specifier: &str, scope: Scope) -> Result<(String, Vec<String>), String> {
    let mut inexact = Vec::new();
    let mut pattern = if let Some(rest) = specifier.strip_prefix("//") {
        format!("/{rest}")
    } else if specifier.starts_with("~/") {
        specifier.to_owned()
    } else if let Some(rest) = specifier.strip_prefix('/') {
        if matches!(scope, Scope::User | Scope::Managed) {
            inexact.push(format!(
                "`/` patterns of {} settings are taken relative to the workspace",
                scope.as_str()
            ));
        }
        rest.to_owned()
    } else if let Some(rest) = specifier.strip_prefix("./") {
        rest.to_owned()
    } else if specifier.starts_with("~") {
        return Err("`~user` paths are not supported".into());
    } else if !specifier.trim_end_matches('/').contains('/') {
        // gitignore: a pattern without a slash matches at any depth.
        format!("**/{specifier}")
    } else {
        specifier.to_owned()
    };
    if pattern.ends_with('/') {
        pattern.push_str("**");
    }
    if pattern.is_empty() {
        return Err("an empty path".into());
    }
    Ok((pattern, inexact))
}
