//! From an agent's tool call to toolgate calls, by the agent's tool map (`agents:` section):
//! the toolgate tool, its input fields taken from the agent's input, and the splitting of a
//! call into one toolgate call per edit, per file of a patch, or per URL. Pure.

use crate::policy::shell::single_quoted;
use serde_json::{Map, Value};

use crate::model::agent::{AgentSpec, FieldNames, ToolMapping};
use crate::snapshot::Snapshot;

/// What the tool map makes of an agent's call.
#[derive(Clone, Debug, PartialEq)]
pub enum Mapped<'a> {
    /// The policy has no toolgate tool for it: the agent's own rules decide.
    Unknown {
        /// Why, for the agent.
        reason: String,
    },
    /// Its mapping cannot be applied (a patch that names no file, an empty list to split):
    /// nothing can be judged, so it is refused.
    Invalid {
        /// Why.
        reason: String,
    },
    /// A part of it cannot be read as the agent reads it (a word of a `web_fetch` prompt
    /// with `://` that is no URL): what it does is unknown, so it is asked about.
    Unreadable {
        /// Why.
        reason: String,
    },
    /// One or more toolgate calls.
    Calls {
        /// The mapping used (`None`: an MCP tool of the same name).
        mapping: Option<&'a ToolMapping>,
        /// The calls, in order.
        calls: Vec<MappedCall>,
    },
}

/// One toolgate call made from an agent's call.
#[derive(Clone, Debug, PartialEq)]
pub struct MappedCall {
    /// The toolgate tool (name or alias).
    pub tool: String,
    /// Its input.
    pub input: Value,
    /// What part of the agent's call it is (a file of a patch, a URL), when it was split.
    pub label: Option<String>,
}

/// Maps an agent's call. `mcp_name` is the `mcp__<server>__<tool>` name of an MCP tool when
/// the agent names it otherwise (Gemini CLI's `mcp_context`).
pub fn map_call<'a>(
    snapshot: &Snapshot,
    agent: &str,
    spec: &'a AgentSpec,
    tool: &str,
    input: &Value,
    mcp_name: Option<&str>,
) -> Mapped<'a> {
    match spec.tools.get(tool) {
        Some(mapping) if mapping.disabled != Some(true) => {
            let Some(target) = mapping.tool.as_deref() else {
                return Mapped::Unknown {
                    reason: unknown_reason(agent, tool, "its mapping names no toolgate tool"),
                };
            };
            if snapshot.lookup(target).is_none() {
                return Mapped::Unknown {
                    reason: unknown_reason(
                        agent,
                        tool,
                        &format!("it maps onto `{target}`, which the policy does not define"),
                    ),
                };
            }
            let calls = split(mapping, input).and_then(|items| {
                items
                    .into_iter()
                    .map(|(label, item)| {
                        Ok(MappedCall {
                            tool: target.to_owned(),
                            input: fields(mapping, &item)?,
                            label,
                        })
                    })
                    .collect::<Result<Vec<_>, Unsplit>>()
            });
            match calls {
                Ok(calls) => Mapped::Calls {
                    mapping: Some(mapping),
                    calls,
                },
                Err(Unsplit::Invalid(reason)) => Mapped::Invalid { reason },
                Err(Unsplit::Unreadable(reason)) => Mapped::Unreadable { reason },
            }
        }
        Some(_) | None => {
            let name = mcp_name.unwrap_or(tool);
            if name.starts_with("mcp__") && snapshot.lookup(name).is_some() {
                return Mapped::Calls {
                    mapping: None,
                    calls: vec![MappedCall {
                        tool: name.to_owned(),
                        input: input.clone(),
                        label: None,
                    }],
                };
            }
            if let Some(contract) = snapshot.contract_running(name) {
                return Mapped::Invalid {
                    reason: format!(
                        "`{name}` names an MCP server tool that only `{contract}` runs: call it by that name"
                    ),
                };
            }
            Mapped::Unknown {
                reason: unknown_reason(agent, tool, "the policy has no mapping for it"),
            }
        }
    }
}

fn unknown_reason(agent: &str, tool: &str, why: &str) -> String {
    format!(
        "`{tool}` is left to the agent's own permission rules: {why} under `agents.{agent}.tools`"
    )
}

/// The most parts one call is split into. Each is judged as a call of its own (a search of a
/// folder, for `read_many_files`), so a call naming thousands of paths would take seconds
/// to judge: it is refused, and the agent splits it.
const MAX_ITEMS: usize = 256;

/// Refuses a call that splits into more than [`MAX_ITEMS`] parts.
fn at_most_max_items(count: usize, what: &str) -> Result<(), String> {
    if count > MAX_ITEMS {
        return Err(format!(
            "the call names {count} {what}, more than the {MAX_ITEMS} toolgate judges in one call: make several calls of at most {MAX_ITEMS}"
        ));
    }
    Ok(())
}

/// Why a call is not split into toolgate calls.
#[derive(Debug, PartialEq)]
enum Unsplit {
    /// The mapping cannot be applied to it ([`Mapped::Invalid`]).
    Invalid(String),
    /// A part of it cannot be read as the agent reads it ([`Mapped::Unreadable`]).
    Unreadable(String),
}

impl From<String> for Unsplit {
    fn from(reason: String) -> Self {
        Self::Invalid(reason)
    }
}

/// The items a call splits into, each with its label; one unlabelled item when the mapping
/// does not split.
fn split(mapping: &ToolMapping, input: &Value) -> Result<Vec<(Option<String>, Value)>, Unsplit> {
    let Some(each) = &mapping.each else {
        return Ok(vec![(None, input.clone())]);
    };
    match (&each.items, &each.patch, &each.urls) {
        (Some(sources), None, None) => {
            let sources = sources.as_slice();
            let names = sources
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(" or ");
            // A source given as something else than a list (`include: ".env"`) may still be
            // read by the agent: it cannot be judged item by item, so the call is refused.
            if let Some(source) = sources.iter().find(|source| {
                !matches!(
                    get(input, source),
                    None | Some(Value::Array(_) | Value::Null)
                )
            }) {
                return Err(format!(
                    "`{source}` is not a list: the call cannot be judged item by item"
                )
                .into());
            }
            let lists: Vec<(&String, &Vec<Value>)> = sources
                .iter()
                .filter_map(|source| match get(input, source) {
                    Some(Value::Array(elements)) => Some((source, elements)),
                    _ => None,
                })
                .collect();
            if lists.is_empty() {
                return Err(format!("the input has no list {names} to judge item by item").into());
            }
            if lists.iter().all(|(_, elements)| elements.is_empty()) {
                return Err(format!("the list {names} is empty: nothing to judge").into());
            }
            let count = lists.iter().map(|(_, elements)| elements.len()).sum();
            at_most_max_items(count, &format!("items in {names}"))?;
            let mut shared = input.clone();
            for source in sources {
                shared = Value::Object(without(&shared, source));
            }
            let Value::Object(shared) = shared else {
                return Err("the input is not an object".to_owned().into());
            };
            let mut items = Vec::new();
            for (source, element, index) in lists.iter().flat_map(|(source, elements)| {
                elements
                    .iter()
                    .enumerate()
                    .map(move |(index, element)| (*source, element, index))
            }) {
                let label = match element {
                    Value::String(text) => text.clone(),
                    _ => format!("{source}[{index}]"),
                };
                let mut item = shared.clone();
                match element {
                    Value::Object(fields) => {
                        // A field the element and the call both give may be read from either
                        // by the agent (Claude's MultiEdit edits one `file_path`, whatever an
                        // edit says): the item is judged with each value.
                        let mut from_call = item.clone();
                        item.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
                        for (k, v) in fields {
                            from_call.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                        if from_call != item {
                            items.push((Some(label.clone()), Value::Object(from_call)));
                        }
                    }
                    other => {
                        item.insert("item".into(), other.clone());
                    }
                }
                items.push((Some(label), Value::Object(item)));
            }
            Ok(items)
        }
        (None, Some(source), None) => {
            let Some(Value::String(patch)) = get(input, source) else {
                return Err(format!("the input has no patch text in `{source}`").into());
            };
            let files = patch_files(patch);
            if files.is_empty() {
                return Err(
                    "the patch names no file (`*** Add File:`, `*** Update File:`, `*** Delete File:`): nothing toolgate can judge"
                        .to_owned().into(),
                );
            }
            at_most_max_items(files.len(), "files in its patch")?;
            let shared = without(input, source);
            Ok(files
                .into_iter()
                .map(|file| {
                    let mut item = shared.clone();
                    item.insert("path".into(), Value::from(file.path.clone()));
                    item.insert("kind".into(), Value::from(file.kind.as_str()));
                    item.insert("removed".into(), Value::from(file.removed));
                    item.insert("added".into(), Value::from(file.added));
                    (Some(file.path), Value::Object(item))
                })
                .collect())
        }
        (None, None, Some(source)) => {
            let text = get(input, source)
                .and_then(Value::as_str)
                .unwrap_or_default();
            let mut urls = urls(text).map_err(Unsplit::Unreadable)?;
            // A `url` the call gives itself is fetched too (Gemini CLI's direct fetch takes
            // it and leaves the prompt's): it is judged first, read the same way.
            if let Some(own) = input.get("url").and_then(Value::as_str)
                && !own.is_empty()
            {
                let own = fetched_url(own).map_err(Unsplit::Unreadable)?;
                if !urls.contains(&own) {
                    urls.insert(0, own);
                }
            }
            if urls.is_empty() {
                return Ok(vec![(None, input.clone())]);
            }
            at_most_max_items(urls.len(), "URLs")?;
            Ok(urls
                .into_iter()
                .map(|url| {
                    let mut item = input.as_object().cloned().unwrap_or_default();
                    item.insert("url".into(), Value::from(url.clone()));
                    (Some(url), Value::Object(item))
                })
                .collect())
        }
        _ => Err(
            "the mapping's `each` must name exactly one of `items`, `patch` and `urls`"
                .to_owned()
                .into(),
        ),
    }
}

/// The call's fields but the one being split: each item carries what the call says besides
/// it (a copy of the whole list or patch per item would make splitting quadratic).
fn without(input: &Value, source: &str) -> Map<String, Value> {
    let mut fields = input.as_object().cloned().unwrap_or_default();
    fields.remove(source.trim_start_matches('/'));
    fields
}

/// The toolgate input of one item: the `set` fields, then every `input` field the item has,
/// then the `cd` folder put in front of the command; refused for keys typed into a terminal
/// ([`ToolMapping::typed_when`]) that hold a tab.
fn fields(mapping: &ToolMapping, item: &Value) -> Result<Value, String> {
    let mut out = Map::new();
    for (field, value) in &mapping.set {
        out.insert(field.clone(), value.clone());
    }
    for (field, sources) in &mapping.input {
        if let Some(value) = one_value(item, sources)? {
            out.insert(field.clone(), value.clone());
        }
    }
    if let Some(sources) = &mapping.typed_when
        && one_value(item, sources)?.is_some()
        && let Some(Value::String(keys)) = out.get("command")
        && let Some(key) = keys.chars().find(|c| matches!(c, '\t' | '!'))
    {
        let what = match key {
            '\t' => {
                "a tab, with which a terminal's line editor completes a name the text does not show"
            }
            _ => {
                "`!`, with which a pager or editor running there (`less`, `vi`, `man`) runs a shell command and an interactive shell recalls an earlier one"
            }
        };
        return Err(format!(
            "the keys typed into the running program (the call sends {}) hold {what}",
            sources.quoted()
        ));
    }
    if let Some(sources) = &mapping.cd
        && let Some(folder) = one_value(item, sources)?
    {
        let source = sources.quoted();
        let command = match (folder, out.get("command")) {
            (Value::String(folder), _) if folder.is_empty() => None,
            (Value::String(folder), Some(Value::String(command))) => {
                Some(behind_cd(folder, command))
            }
            (Value::String(_), _) => {
                return Err(format!(
                    "the call names a folder in {source} but no command to run there"
                ));
            }
            _ => {
                return Err(format!(
                    "{source} (the folder the command runs in) is not a string"
                ));
            }
        };
        if let Some(command) = command {
            out.insert("command".to_owned(), Value::String(command));
        }
    }
    Ok(Value::Object(out))
}

/// Calls made in the agent's working folder `cwd` when that is not the workspace root: a
/// command is judged as `cd '<cwd>' && <command>`, a relative `file_path` or `path` as
/// one under `cwd` (where the agent's tool takes it), and a call without the field its
/// mapping [defaults to the working folder](ToolMapping::defaults_to_cwd) with `cwd` in it.
pub fn in_folder(
    calls: Vec<MappedCall>,
    mapping: Option<&ToolMapping>,
    cwd: &str,
    root: &str,
) -> Vec<MappedCall> {
    if cwd.trim_end_matches('/') == root.trim_end_matches('/') {
        return calls;
    }
    calls
        .into_iter()
        .map(|mut call| {
            if let Value::Object(fields) = &mut call.input {
                if let Some(field) = mapping.and_then(|m| m.defaults_to_cwd.as_ref())
                    && fields.get(field).is_none_or(|value| value == "")
                {
                    fields.insert(field.clone(), Value::String(cwd.to_owned()));
                }
                if let Some(Value::String(command)) = fields.get_mut("command") {
                    *command = behind_cd(cwd, command);
                }
                for field in ["file_path", "path"] {
                    if let Some(Value::String(path)) = fields.get_mut(field)
                        && !path.is_empty()
                        && !path.starts_with(['/', '~', '$'])
                    {
                        *path = format!("{}/{path}", cwd.trim_end_matches('/'));
                    }
                }
            }
            call
        })
        .collect()
}

/// `command` as run in `folder`: `cd '<folder>' && <command>`.
fn behind_cd(folder: &str, command: &str) -> String {
    format!("cd {} && {command}", single_quoted(folder))
}

/// A field of the input by name, or a value by JSON pointer.
/// The value the agent gave under any of `sources` (the names of one field), or none; two
/// names given different values are an error (which the agent's tool reads is not known).
fn one_value<'v>(input: &'v Value, sources: &FieldNames) -> Result<Option<&'v Value>, String> {
    let mut found: Option<(&str, &Value)> = None;
    for source in sources.as_slice() {
        let Some(value) = get(input, source) else {
            continue;
        };
        match found {
            Some((first, seen)) if seen != value => {
                return Err(format!(
                    "the call gives `{first}` and `{source}`, two names of one field, different values: which one the tool uses is not known"
                ));
            }
            Some(_) => {}
            None => found = Some((source, value)),
        }
    }
    Ok(found.map(|(_, value)| value))
}

fn get<'v>(input: &'v Value, source: &str) -> Option<&'v Value> {
    if source.starts_with('/') {
        input.pointer(source)
    } else {
        input.get(source)
    }
}

/// The agent's input with a toolgate hook's rewrite of `rewritten` carried back through the
/// mapping: each mapped field takes the rewritten value (or is removed when the rewrite
/// dropped it). `None` when the mapping splits calls or takes fields by pointer, so a
/// rewrite cannot be carried back.
pub fn carry_back(
    mapping: Option<&ToolMapping>,
    agent_input: &Value,
    rewritten: &Value,
) -> Option<Value> {
    let Some(mapping) = mapping else {
        // An MCP tool of the same name: the input is the agent's own.
        return Some(rewritten.clone());
    };
    // A rewrite of a command judged behind a `cd` cannot be given back without the `cd`
    // (the agent would run it in its folder again).
    let moved = mapping.cd.as_ref().is_some_and(|sources| {
        sources
            .as_slice()
            .iter()
            .any(|source| get(agent_input, source).is_some())
    });
    let by_pointer = mapping
        .input
        .values()
        .flat_map(FieldNames::as_slice)
        .any(|source| source.starts_with('/'));
    if moved || mapping.each.is_some() || by_pointer {
        return None;
    }
    let mut out = agent_input.as_object().cloned().unwrap_or_default();
    for (field, sources) in &mapping.input {
        // The rewrite goes back under the name the agent used (the first name when it sent
        // none); the field's other names are dropped.
        let sources = sources.as_slice();
        let used = sources
            .iter()
            .find(|source| out.contains_key(source.as_str()))
            .or(sources.first());
        for source in sources.iter().filter(|source| Some(*source) != used) {
            out.shift_remove(source);
        }
        if let Some(used) = used {
            match rewritten.get(field) {
                Some(value) => out.insert(used.clone(), value.clone()),
                None => out.shift_remove(used),
            };
        }
    }
    Some(Value::Object(out))
}

/// What a patch does to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchFile {
    /// The file.
    pub path: String,
    /// What happens to it.
    pub kind: PatchKind,
    /// The lines taken out (`-` lines of an update), joined with `\n`.
    pub removed: String,
    /// The lines put in (an added file's lines, `+` lines of an update), joined with `\n`.
    pub added: String,
}

/// What a patch does to a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    /// Creates it.
    Add,
    /// Changes it in place.
    Update,
    /// Removes it.
    Delete,
    /// Moves it (the old and the new path are each one item).
    Move,
}

impl PatchKind {
    /// `add`, `update`, `delete`, `move`.
    pub fn as_str(self) -> &'static str {
        match self {
            PatchKind::Add => "add",
            PatchKind::Update => "update",
            PatchKind::Delete => "delete",
            PatchKind::Move => "move",
        }
    }
}

/// The files a patch in Codex's `apply_patch` format touches, in order. Lines outside a file
/// section are ignored; a section header without a path is skipped.
pub fn patch_files(patch: &str) -> Vec<PatchFile> {
    let mut files: Vec<PatchFile> = Vec::new();
    let mut removed: Vec<&str> = Vec::new();
    let mut added: Vec<&str> = Vec::new();
    let mut current: Option<PatchFile> = None;
    let mut move_target: Option<String> = None;
    for line in patch.lines() {
        // Codex trims each line before it reads a header (`  *** Add File: x` is one).
        let line = line.strip_suffix('\r').unwrap_or(line);
        let trimmed = line.trim_start();
        let header = |prefix: &str| {
            let line = trimmed;
            line.strip_prefix(prefix)
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
        };
        let started = header("*** Add File:")
            .map(|p| (p, PatchKind::Add))
            .or_else(|| header("*** Update File:").map(|p| (p, PatchKind::Update)))
            .or_else(|| header("*** Delete File:").map(|p| (p, PatchKind::Delete)));
        if let Some((path, kind)) = started {
            finish(
                &mut current,
                &mut move_target,
                &mut removed,
                &mut added,
                &mut files,
            );
            current = Some(PatchFile {
                path,
                kind,
                removed: String::new(),
                added: String::new(),
            });
            continue;
        }
        if let Some(target) = header("*** Move to:") {
            move_target = Some(target);
            continue;
        }
        if line.starts_with("*** End Patch") {
            finish(
                &mut current,
                &mut move_target,
                &mut removed,
                &mut added,
                &mut files,
            );
            continue;
        }
        let Some(file) = &current else { continue };
        match file.kind {
            PatchKind::Add => {
                if let Some(text) = line.strip_prefix('+') {
                    added.push(text);
                }
            }
            PatchKind::Update | PatchKind::Move => {
                if let Some(text) = line.strip_prefix('+') {
                    added.push(text);
                } else if let Some(text) = line.strip_prefix('-') {
                    removed.push(text);
                }
            }
            PatchKind::Delete => {}
        }
    }
    finish(
        &mut current,
        &mut move_target,
        &mut removed,
        &mut added,
        &mut files,
    );
    files
}

/// Ends the current file section: pushes it (a moved update as two items, the old and the
/// new path).
fn finish(
    current: &mut Option<PatchFile>,
    move_target: &mut Option<String>,
    removed: &mut Vec<&str>,
    added: &mut Vec<&str>,
    files: &mut Vec<PatchFile>,
) {
    if let Some(mut file) = current.take() {
        file.removed = removed.join("\n");
        file.added = added.join("\n");
        match move_target.take() {
            Some(target) => {
                file.kind = PatchKind::Move;
                let new = PatchFile {
                    path: target,
                    kind: PatchKind::Move,
                    removed: String::new(),
                    added: file.added.clone(),
                };
                files.push(file);
                files.push(new);
            }
            None => files.push(file),
        }
    }
    removed.clear();
    added.clear();
}

/// The URLs an agent fetches for a text, read as Gemini CLI reads its `web_fetch` prompt:
/// every word (between JavaScript's white space) that holds `://`, parsed by a WHATWG URL
/// parser and kept as it writes the URL out (`https:evil.net/?a=://` is
/// `https://evil.net/?a=://`, `HTTPS://Docs.RS/` is `https://docs.rs/`), in order, without
/// repeats. Nothing around a URL is trimmed: `(https://x.org/y).` is one word. A word with
/// `://` that does not parse is the error: the agent's parser may read an address in it.
pub fn urls(text: &str) -> Result<Vec<String>, String> {
    let mut found: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for word in text.split(is_js_white_space) {
        if word.contains("://") {
            let url = fetched_url(word)?;
            if seen.insert(url.clone()) {
                found.push(url);
            }
        }
    }
    Ok(found)
}

/// The URL an agent fetches for `text`, as a WHATWG URL parser (JavaScript's `new URL`)
/// writes it out: scheme and host lowercased, `\` read as `/` in an `http(s)` URL, the
/// host after any user info, the default port dropped.
fn fetched_url(text: &str) -> Result<String, String> {
    url::Url::parse(text).map(String::from).map_err(|error| {
        format!(
            "`{text}` is not a URL toolgate can read ({error}): which address the agent fetches for it is unknown"
        )
    })
}

/// JavaScript's `\s`, at which Gemini CLI splits a prompt into words: Unicode's white space
/// but U+0085, and U+FEFF.
fn is_js_white_space(c: char) -> bool {
    c == '\u{feff}' || (c.is_whitespace() && c != '\u{85}')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_patch_names_every_file_it_touches_with_its_lines() {
        let patch = "*** Begin Patch\n*** Add File: docs/new.md\n+hello\n+world\n*** Update File: src/lib.rs\n*** Move to: src/core.rs\n@@ fn main\n-old\n+new\n context\n*** Delete File: .env\n*** End Patch\n";
        let files = patch_files(patch);
        let summary: Vec<(&str, &str, &str, &str)> = files
            .iter()
            .map(|f| {
                (
                    f.path.as_str(),
                    f.kind.as_str(),
                    f.removed.as_str(),
                    f.added.as_str(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("docs/new.md", "add", "", "hello\nworld"),
                ("src/lib.rs", "move", "old", "new"),
                ("src/core.rs", "move", "", "new"),
                (".env", "delete", "", ""),
            ]
        );
    }

    /// Codex trims a line before it reads a header: an indented header names a file too.
    #[test]
    fn an_indented_header_names_a_file() {
        let patch = "*** Begin Patch\n*** Add File: src/a.rs\n+x\n  *** Add File: .git/config\n+y\n\t*** Delete File: .env\n\u{a0}*** Update File: policies/p.yaml\n*** End Patch\n";
        let paths: Vec<String> = patch_files(patch).into_iter().map(|f| f.path).collect();
        assert_eq!(
            paths,
            ["src/a.rs", ".git/config", ".env", "policies/p.yaml"]
        );
    }

    /// An element's field that the call gives too is judged with both values, and no item
    /// carries the list it was split from.
    #[test]
    fn an_item_is_judged_with_the_call_s_fields_and_its_own() {
        let mapping: ToolMapping = serde_json::from_value(json!({
            "tool": "Edit",
            "each": { "items": "edits" },
            "input": { "file_path": "file_path", "old_string": "old_string" }
        }))
        .unwrap();
        let input = json!({
            "file_path": ".env",
            "edits": [
                { "file_path": "src/x.rs", "old_string": "a" },
                { "old_string": "b" }
            ]
        });
        let items = split(&mapping, &input).unwrap();
        let paths: Vec<&str> = items
            .iter()
            .map(|(_, item)| item["file_path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, [".env", "src/x.rs", ".env"]);
        assert!(items.iter().all(|(_, item)| item.get("edits").is_none()));
    }

    /// A list source given as a string (`include: ".env"` beside `paths: [...]`) refuses the
    /// call: the agent may read it, and it was left out of the items.
    #[test]
    fn a_source_that_is_not_a_list_refuses_the_call() {
        let mapping: ToolMapping = serde_json::from_value(json!({
            "tool": "Grep",
            "each": { "items": ["include", "paths"] },
            "input": { "path": "item" }
        }))
        .unwrap();
        let input = json!({ "paths": ["src/main.rs"], "include": ".env" });
        assert_eq!(
            split(&mapping, &input).unwrap_err(),
            Unsplit::Invalid(
                "`include` is not a list: the call cannot be judged item by item".to_owned()
            )
        );
        let input = json!({ "paths": ["src/main.rs"], "include": null });
        assert_eq!(split(&mapping, &input).unwrap().len(), 1);
    }

    /// A call naming more parts than toolgate judges in one call is refused with the count,
    /// before any part is built.
    #[test]
    fn a_call_splits_into_at_most_max_items_parts() {
        let mapping: ToolMapping = serde_json::from_value(json!({
            "tool": "Grep",
            "each": { "items": ["include", "paths"] },
            "input": { "path": "item" }
        }))
        .unwrap();
        let paths = |n: usize| -> Vec<String> { (0..n).map(|i| format!("f{i}")).collect() };
        let input = json!({ "include": paths(MAX_ITEMS - 1), "paths": ["x"] });
        assert_eq!(split(&mapping, &input).unwrap().len(), MAX_ITEMS);
        let input = json!({ "include": paths(MAX_ITEMS), "paths": ["x"] });
        assert_eq!(
            split(&mapping, &input).unwrap_err(),
            Unsplit::Invalid("the call names 257 items in `include` or `paths`, more than the 256 toolgate judges in one call: make several calls of at most 256".to_owned())
        );
        let patch: String = (0..=MAX_ITEMS)
            .map(|i| format!("*** Add File: f{i}\n+x\n"))
            .collect();
        let mapping: ToolMapping = serde_json::from_value(json!({
            "tool": "Write", "each": { "patch": "input" }, "input": { "file_path": "path" }
        }))
        .unwrap();
        assert!(matches!(
            split(&mapping, &json!({ "input": patch })),
            Err(Unsplit::Invalid(reason)) if reason.starts_with("the call names 257 files in its patch")
        ));
    }

    #[test]
    fn text_without_file_headers_is_no_patch() {
        assert!(patch_files("rm -rf /").is_empty());
        assert!(patch_files("*** Begin Patch\n*** Update File:\n*** End Patch").is_empty());
    }

    /// Every word with `://` is a URL, as a WHATWG URL parser writes it out, with the
    /// punctuation around it (Gemini CLI trims none); a word without `://` is none.
    #[test]
    fn urls_are_the_words_with_a_scheme_separator_as_a_url_parser_reads_them() {
        assert_eq!(
            urls("Summarise https://example.com/a?b=1, and https://example.com/a?b=1, again")
                .unwrap(),
            ["https://example.com/a?b=1,"]
        );
        assert!(
            urls("no links here, nor in example.com/x")
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            urls("see https://docs.example.com/a HTTPS://Evil.Example.NET:443/x?d=1").unwrap(),
            [
                "https://docs.example.com/a",
                "https://evil.example.net/x?d=1"
            ]
        );
    }

    /// The host is the one the agent contacts: `https:` without slashes, with one slash or
    /// with backslashes, after user info written with a quote, or escaped.
    #[test]
    fn a_url_is_judged_under_the_host_the_agent_contacts() {
        let read = |word: &str| urls(word).unwrap();
        assert_eq!(
            read("https:evil.net/c?k=1&x=://"),
            ["https://evil.net/c?k=1&x=://"]
        );
        assert_eq!(
            read("https:/evil.net/c?x=://"),
            ["https://evil.net/c?x=://"]
        );
        assert_eq!(
            read(r"http:\\evil.net/c?x=://"),
            ["http://evil.net/c?x=://"]
        );
        assert_eq!(read("https:///evil.net/"), ["https://evil.net/"]);
        assert_eq!(
            read("https://example.com'@evil.net/x"),
            ["https://example.com'@evil.net/x"]
        );
        assert_eq!(
            read("https://example.com\"@evil.net/x"),
            ["https://example.com%22@evil.net/x"]
        );
        assert_eq!(
            read("https://example.com`@evil.net/x"),
            ["https://example.com%60@evil.net/x"]
        );
        assert_eq!(
            read("https://example.com<@evil.net/x"),
            ["https://example.com%3C@evil.net/x"]
        );
        assert_eq!(read("https://%65vil.net/"), ["https://evil.net/"]);
        assert_eq!(read("https://0x7f.1/"), ["https://127.0.0.1/"]);
        assert_eq!(read("https://ß.de/"), ["https://xn--zca.de/"]);
        assert_eq!(read("ftp://x/y"), ["ftp://x/y"]);
    }

    /// Words are split where JavaScript's `\s` splits them: at U+FEFF, not at U+0085.
    #[test]
    fn words_are_split_at_javascript_s_white_space() {
        assert_eq!(
            urls("https://docs.rs/\u{feff}https:evil.net/?x=://").unwrap(),
            ["https://docs.rs/", "https://evil.net/?x=://"]
        );
        assert_eq!(
            urls("https://docs.rs/a\u{85}https:evil.net/").unwrap(),
            ["https://docs.rs/a%C2%85https:evil.net/"]
        );
    }

    /// A word with `://` that does not parse is no URL toolgate can judge: the call is asked
    /// about, not split without it.
    #[test]
    fn a_word_with_a_scheme_separator_that_does_not_parse_is_asked_about() {
        for word in ["(https://x.org/y).", "://x", "https://", "https://[x/"] {
            assert!(
                urls(&format!("see https://docs.rs/ {word}"))
                    .unwrap_err()
                    .starts_with(&format!("`{word}` is not a URL toolgate can read (")),
                "{word}"
            );
        }
        let mapping: ToolMapping = serde_json::from_value(json!({
            "tool": "WebFetch", "each": { "urls": "prompt" }, "input": { "url": "url" }
        }))
        .unwrap();
        assert!(matches!(
            split(
                &mapping,
                &json!({ "prompt": "read https://docs.rs/ and (https://x.org/y)." })
            ),
            Err(Unsplit::Unreadable(_))
        ));
        assert!(matches!(
            split(
                &mapping,
                &json!({ "prompt": "read https://docs.rs/", "url": "https://" })
            ),
            Err(Unsplit::Unreadable(_))
        ));
    }

    /// The call's own `url` is read as the prompt's are, and judged once.
    #[test]
    fn the_call_s_own_url_is_read_as_the_prompt_s() {
        let mapping: ToolMapping = serde_json::from_value(json!({
            "tool": "WebFetch", "each": { "urls": "prompt" }, "input": { "url": "url" }
        }))
        .unwrap();
        let input =
            json!({ "prompt": "read HTTPS://docs.rs/x https:evil.net/", "url": "https:evil.net" });
        let labels: Vec<String> = split(&mapping, &input)
            .unwrap()
            .into_iter()
            .map(|(label, item)| {
                assert_eq!(Some(item["url"].as_str().unwrap()), label.as_deref());
                label.unwrap()
            })
            .collect();
        assert_eq!(labels, ["https://evil.net/", "https://docs.rs/x"]);
    }

    #[test]
    fn a_rewrite_is_carried_back_field_by_field() {
        let mapping = ToolMapping {
            tool: Some("Bash".into()),
            input: [
                ("command".to_owned(), "command".into()),
                ("run_in_background".to_owned(), "is_background".into()),
            ]
            .into_iter()
            .collect(),
            ..ToolMapping::default()
        };
        let agent = json!({"command": "ls", "is_background": true, "description": "list"});
        let rewritten = json!({"command": "ls -la"});
        assert_eq!(
            carry_back(Some(&mapping), &agent, &rewritten),
            Some(json!({"command": "ls -la", "description": "list"}))
        );
    }

    #[test]
    fn a_field_is_read_under_any_of_its_names() {
        let mapping = ToolMapping {
            tool: Some("Glob".into()),
            input: [
                ("pattern".to_owned(), "pattern".into()),
                (
                    "path".to_owned(),
                    FieldNames::Many(vec!["dir_path".into(), "path".into()]),
                ),
            ]
            .into_iter()
            .collect(),
            ..ToolMapping::default()
        };
        // The older name is read as the newer one: a search of `~/.ssh` is judged there,
        // not in the project root.
        for agent in [
            json!({"pattern": "*", "path": "/home/u/.ssh"}),
            json!({"pattern": "*", "dir_path": "/home/u/.ssh"}),
            json!({"pattern": "*", "dir_path": "/home/u/.ssh", "path": "/home/u/.ssh"}),
        ] {
            assert_eq!(
                fields(&mapping, &agent).unwrap(),
                json!({"pattern": "*", "path": "/home/u/.ssh"})
            );
        }
        assert_eq!(
            fields(&mapping, &json!({"pattern": "*"})).unwrap(),
            json!({"pattern": "*"})
        );
        // Two names with different values: which one the tool reads is not guessed.
        let error = fields(
            &mapping,
            &json!({"pattern": "*", "dir_path": "src", "path": "/home/u/.ssh"}),
        )
        .unwrap_err();
        assert!(error.contains("`dir_path` and `path`"), "{error}");
        // A rewrite goes back under the name the agent used.
        assert_eq!(
            carry_back(
                Some(&mapping),
                &json!({"pattern": "*", "path": "src"}),
                &json!({"pattern": "*", "path": "src/engine"})
            ),
            Some(json!({"pattern": "*", "path": "src/engine"}))
        );
        assert_eq!(
            carry_back(
                Some(&mapping),
                &json!({"pattern": "*"}),
                &json!({"pattern": "*", "path": "src"})
            ),
            Some(json!({"pattern": "*", "dir_path": "src"}))
        );
    }

    fn shell_mapping() -> ToolMapping {
        ToolMapping {
            tool: Some("Bash".into()),
            input: [("command".to_owned(), "command".into())]
                .into_iter()
                .collect(),
            cd: Some(FieldNames::Many(vec![
                "dir_path".into(),
                "directory".into(),
            ])),
            ..ToolMapping::default()
        }
    }

    #[test]
    fn a_command_is_judged_in_the_folder_it_runs_in() {
        let mapping = shell_mapping();
        let moved = json!({"command": "cat .env", "dir_path": "../other repo/it's"});
        assert_eq!(
            fields(&mapping, &moved).unwrap(),
            json!({"command": "cd '../other repo/it'\\''s' && cat .env"})
        );
        // No folder, or an empty one: the project root, as the agent does.
        for input in [
            json!({"command": "ls"}),
            json!({"command": "ls", "dir_path": ""}),
        ] {
            assert_eq!(fields(&mapping, &input).unwrap(), json!({"command": "ls"}));
        }
        // A folder that is not a string, or a folder without a command, is not guessed.
        assert!(fields(&mapping, &json!({"command": "ls", "dir_path": 3})).is_err());
        assert!(fields(&mapping, &json!({"dir_path": "/"})).is_err());
        // A rewrite cannot be carried back past the `cd`.
        assert_eq!(
            carry_back(Some(&mapping), &moved, &json!({"command": "ls"})),
            None
        );
        assert_eq!(
            carry_back(
                Some(&mapping),
                &json!({"command": "ls"}),
                &json!({"command": "ls -a"})
            ),
            Some(json!({"command": "ls -a"}))
        );
    }
}
