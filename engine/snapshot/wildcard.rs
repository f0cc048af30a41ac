//! Wildcard contracts (`mcp__<server>__*`, issue 21): the exact contract of a tool a wildcard
//! covers extends the wildcard's contract field by field, the way a later layer extends a
//! contract (see [`super::merge`]):
//! - objects merge key by key, every other value is replaced;
//! - `input_schema`, `output_schema` and a `handler` of another `kind` are replaced whole;
//! - `locked` lists accumulate, and a field the wildcard locks keeps the wildcard's value
//!   (in the contract and in every mode patch), so an exact contract is no way around a lock.
//!
//! This runs on the merged document, after the layers are merged and before the typed model
//! is read, so `check`, `explain`, `diff` and the engine all see the extended contract. The
//! fields an exact contract inherits are recorded as coming from the wildcard's files.
//!
//! A wildcard covers no server tool that an exact contract runs ([`run_by_contract`]): a call
//! that reaches such a tool under another name (`mcp__gh__repo.delete` beside the contract
//! `mcp__gh__repo_delete` that `toolgate mcp import` writes for tool `repo.delete`) would
//! otherwise run it under the wildcard's rules rather than its own contract's.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::Tool;
use super::provenance::{Origin, Provenance};
use crate::load::spans::join_pointer;
use crate::model::ToolName;
use crate::model::handler::HandlerSpec;
use crate::model::mcp::{TOOL_PREFIX, server_tool, split_tool_name, wildcard_server};

/// Extends the exact contracts of wildcard-covered tools in the merged document.
pub fn extend_wildcards(effective: &mut Value, provenance: &mut Provenance) {
    let Some(Value::Object(tools)) = effective.get_mut("tools") else {
        return;
    };
    let wildcards: HashMap<String, (String, Map<String, Value>)> = tools
        .iter()
        .filter_map(|(name, contract)| {
            let server = wildcard_server(name)?;
            let Value::Object(contract) = contract else {
                return None;
            };
            Some((server.to_owned(), (name.clone(), contract.clone())))
        })
        .collect();
    if wildcards.is_empty() {
        return;
    }
    for (name, contract) in tools.iter_mut() {
        let Some((server, _)) = split_tool_name(name) else {
            continue;
        };
        let Some((wildcard, base)) = wildcards.get(server) else {
            continue;
        };
        let Value::Object(own) = contract else {
            continue;
        };
        let mut merged = base.clone();
        merge_object(&mut merged, own.clone(), &[]);
        keep_locks(&mut merged, base);
        attribute(
            &merged,
            Some(own),
            &join_pointer("/tools", wildcard),
            &join_pointer("/tools", name),
            provenance,
        );
        *contract = Value::Object(merged);
    }
}

/// The MCP server tools the exact contracts among `tools` run, by the name a wildcard would
/// run each under (`mcp__<server>__<tool>`), with the first contract that runs it. A server
/// tool whose name no wildcard could cover (a server or tool name [`split_tool_name`] does
/// not read back) is left out.
pub(super) fn run_by_contract<'a>(
    tools: impl Iterator<Item = &'a Arc<Tool>>,
) -> HashMap<String, ToolName, foldhash::fast::RandomState> {
    let mut run = HashMap::default();
    for tool in tools {
        let HandlerSpec::Mcp(handler) = &tool.resolved.handler else {
            continue;
        };
        let Some(runs) = server_tool(tool.name.as_str(), &handler.server, handler.tool.as_deref())
        else {
            continue;
        };
        let covered = format!("{TOOL_PREFIX}{}__{runs}", handler.server);
        if split_tool_name(&covered) == Some((handler.server.as_str(), runs.as_str())) {
            run.entry(covered).or_insert_with(|| tool.name.clone());
        }
    }
    run
}

/// Merges `over` into `target` (see the module docs); `path` is where `target` sits in the
/// contract.
fn merge_object(target: &mut Map<String, Value>, over: Map<String, Value>, path: &[&str]) {
    for (key, value) in over {
        let mut here: Vec<&str> = path.to_vec();
        here.push(&key);
        match (target.get_mut(&key), value) {
            (Some(Value::Array(old)), Value::Array(new)) if here == ["locked"] => {
                for item in new {
                    if !old.contains(&item) {
                        old.push(item);
                    }
                }
            }
            (Some(Value::Object(old)), Value::Object(new)) if !atomic(&here, old, &new) => {
                merge_object(old, new, &here);
            }
            (_, value) => {
                target.insert(key, value);
            }
        }
    }
}

/// Whether an object at `path` of a contract is replaced whole rather than merged.
fn atomic(path: &[&str], old: &Map<String, Value>, new: &Map<String, Value>) -> bool {
    match path {
        ["input_schema"] | ["output_schema"] => true,
        ["handler"] | ["modes", _, "handler"] => old.get("kind") != new.get("kind"),
        _ => false,
    }
}

/// Puts back the wildcard's value of every field it locks, in the contract and in each mode
/// patch (a field the wildcard leaves unset stays unset).
fn keep_locks(merged: &mut Map<String, Value>, base: &Map<String, Value>) {
    let Some(Value::Array(locks)) = base.get("locked") else {
        return;
    };
    let mode_names: Vec<String> = match merged.get("modes") {
        Some(Value::Object(modes)) => modes.keys().cloned().collect(),
        _ => Vec::new(),
    };
    for lock in locks.iter().filter_map(Value::as_str) {
        let path: Vec<&str> = lock.split('.').collect();
        restore(merged, &path, get(base, &path));
        for mode in &mode_names {
            let mut in_mode = vec!["modes", mode.as_str()];
            in_mode.extend(&path);
            restore(merged, &in_mode, get(base, &in_mode));
        }
    }
}

fn get<'a>(object: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let value = object.get(*first)?;
    if rest.is_empty() {
        return Some(value);
    }
    match value {
        Value::Object(inner) => get(inner, rest),
        _ => None,
    }
}

fn restore(object: &mut Map<String, Value>, path: &[&str], value: Option<&Value>) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        match value {
            Some(value) => {
                object.insert((*first).to_owned(), value.clone());
            }
            None => {
                object.shift_remove(*first);
            }
        }
        return;
    }
    match object.get_mut(*first) {
        Some(Value::Object(inner)) => restore(inner, rest, value),
        _ if value.is_some() => {
            let mut inner = Map::new();
            restore(&mut inner, rest, value);
            object.insert((*first).to_owned(), Value::Object(inner));
        }
        _ => {}
    }
}

/// Records the origin of every field of `merged` the exact contract (`own`) did not write:
/// the wildcard's file, at the wildcard's field.
fn attribute(
    merged: &Map<String, Value>,
    own: Option<&Map<String, Value>>,
    from: &str,
    to: &str,
    provenance: &mut Provenance,
) {
    for (key, value) in merged {
        let source = join_pointer(from, key);
        let target = join_pointer(to, key);
        match (own.and_then(|own| own.get(key)), value) {
            (None, _) => inherit(&source, &target, provenance),
            // Merged key by key: look inside (a replaced object holds only its own keys, which
            // the recursion finds written).
            (Some(Value::Object(written)), Value::Object(inner)) if inner != written => {
                attribute(inner, Some(written), &source, &target, provenance);
            }
            (Some(_), _) => {}
        }
    }
}

/// Copies the origins of the wildcard's value at `source` to the same field at `target`.
fn inherit(source: &str, target: &str, provenance: &mut Provenance) {
    let mut copies: Vec<(String, Origin)> = Vec::new();
    if let Some((at, origin)) = provenance.nearest(source) {
        let below = &source[at.len()..];
        copies.push((
            target.to_owned(),
            Origin {
                file: origin.file,
                pointer: Arc::from(format!("{}{below}", origin.pointer).as_str()),
            },
        ));
    }
    for (pointer, origin) in provenance.subtree(source) {
        if pointer != source {
            copies.push((
                format!("{target}{}", &pointer[source.len()..]),
                origin.clone(),
            ));
        }
    }
    for (pointer, origin) in copies {
        provenance.set(pointer, origin);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn extended(tools: Value) -> Value {
        let mut document = json!({ "tools": tools });
        extend_wildcards(&mut document, &mut Provenance::default());
        document["tools"].take()
    }

    #[test]
    fn an_exact_contract_extends_its_wildcard_field_by_field() {
        let tools = extended(json!({
            "mcp__github__*": {
                "handler": {"kind": "mcp", "server": "github"},
                "timeout": {"default": "10s", "max": "30s"},
                "input_schema": {"type": "object", "required": ["a"]},
                "permission": {"default": "ask"}
            },
            "mcp__github__create_issue": {
                "timeout": {"default": "20s"},
                "input_schema": {"type": "object"},
                "permission": {"default": "deny"}
            },
            "mcp__gitlab__x": {"description": "another server's tool"}
        }));
        assert_eq!(
            tools["mcp__github__create_issue"],
            json!({
                "handler": {"kind": "mcp", "server": "github"},
                "timeout": {"default": "20s", "max": "30s"},
                "input_schema": {"type": "object"},
                "permission": {"default": "deny"}
            })
        );
        assert_eq!(
            tools["mcp__gitlab__x"],
            json!({"description": "another server's tool"})
        );
    }

    #[test]
    fn a_handler_of_another_kind_replaces_and_locked_fields_stay() {
        let tools = extended(json!({
            "mcp__github__*": {
                "handler": {"kind": "mcp", "server": "github"},
                "timeout": {"max": "30s"},
                "locked": ["timeout.max"]
            },
            "mcp__github__x": {
                "handler": {"kind": "native"},
                "timeout": {"max": "1h"},
                "locked": ["permission"],
                "modes": {"slow": {"timeout": {"max": "2h"}}}
            }
        }));
        assert_eq!(
            tools["mcp__github__x"],
            json!({
                "handler": {"kind": "native"},
                "timeout": {"max": "30s"},
                "locked": ["timeout.max", "permission"],
                "modes": {"slow": {"timeout": {}}}
            })
        );
    }
}
