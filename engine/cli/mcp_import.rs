//! `toolgate mcp import SERVER`: connects to a server declared under `mcp_servers` and writes
//! a reviewable policy file with a contract for every tool it lists, ready for a pull request.
//!
//! Each contract is named `mcp__<server>__<tool>` (the name coding agents give MCP tools, so
//! their hooks find it), runs the tool through `handler: { kind: mcp }`, and takes the input
//! schema the server declares (and its output schema, when it declares one). The server's
//! annotations are claims, not facts: they are written as comments with the contract flags
//! they suggest, for the reviewer to adopt or not. One `ask` rule covers every imported tool,
//! so nothing runs unattended until someone decides otherwise.

use std::fmt::Write as _;
use std::path::PathBuf;

use rmcp::model::Tool;
use serde_json::Value;

use super::GlobalOptions;
use crate::diagnostics::{Diagnostic, closest};
use crate::mcp::{McpError, Server};
use crate::snapshot::load;

/// What `mcp import` writes where.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// The policy file (`-o`); standard output when absent.
    pub output: Option<PathBuf>,
}

/// Why the import failed.
#[derive(Debug, thiserror::Error)]
pub enum McpImportError {
    /// The policy set does not load.
    #[error("the policy set does not load")]
    Invalid(Vec<Diagnostic>),
    /// No such server.
    #[error("no MCP server `{name}` under `mcp_servers`{hint}")]
    UnknownServer {
        /// The name given.
        name: String,
        /// `; did you mean …` or the declared names.
        hint: String,
    },
    /// The server could not be reached or listed.
    #[error(transparent)]
    Server(#[from] McpError),
    /// Its entry cannot be used.
    #[error("{0}")]
    Entry(String),
    /// Tools whose names agents write alike (`repo.delete` and `repo_delete`): one contract
    /// name for several tools, which no file can hold.
    #[error("{}", same_name(server, .collisions))]
    SameName {
        /// The server.
        server: String,
        /// Each contract name with the tools that would share it, sorted.
        collisions: Vec<(String, Vec<String>)>,
    },
    /// Writing failed.
    #[error("cannot write `{path}`: {reason}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// What the command prints.
#[derive(Clone, Debug, Default)]
pub struct ImportReport {
    /// For standard output: the policy file, unless written to a file.
    pub stdout: String,
    /// For standard error: what was written.
    pub stderr: String,
}

/// Loads the policy set, lists the tools of `server` and writes their contracts.
pub async fn run(
    global: &GlobalOptions,
    server: &str,
    options: &ImportOptions,
) -> Result<ImportReport, McpImportError> {
    let outcome = load(&global.load_options(), 1);
    let Some(snapshot) = outcome.snapshot else {
        return Err(McpImportError::Invalid(outcome.diagnostics));
    };
    let Some(entry) = snapshot.mcp_servers.get(server) else {
        let declared = snapshot.mcp_servers.keys().map(String::as_str);
        let hint = match closest(server, declared.clone()) {
            Some(candidate) => format!("; did you mean `{candidate}`?"),
            None if snapshot.mcp_servers.is_empty() => {
                "; declare it first, like `mcp_servers: { NAME: { command: [PROGRAM, ARG] } }`"
                    .to_owned()
            }
            None => format!(
                " (declared: {})",
                declared
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        return Err(McpImportError::UnknownServer {
            name: server.to_owned(),
            hint,
        });
    };
    let spec = crate::handler::mcp::spec(server, entry, &snapshot.workspace_root)
        .map_err(McpImportError::Entry)?;
    let connection = Server::new(spec);
    let listed = connection.list_tools().await;
    connection.shutdown().await;
    let tools = listed?;
    let policy = contracts(server, &tools, entry.trusts_annotations()).map_err(|collisions| {
        McpImportError::SameName {
            server: server.to_owned(),
            collisions,
        }
    })?;
    let mut report = ImportReport::default();
    match &options.output {
        Some(path) => {
            std::fs::write(path, &policy).map_err(|error| McpImportError::Write {
                path: path.clone(),
                reason: error.to_string(),
            })?;
            report.stderr = format!(
                "wrote {} contracts for MCP server `{server}` to {}\n",
                tools.len(),
                path.display()
            );
        }
        None => report.stdout = policy,
    }
    Ok(report)
}

/// The contract name of a server's tool: the name the agents call it by (see
/// [`agent_tool_name`](crate::model::mcp::agent_tool_name)), so that its rules hold for
/// their calls.
pub fn contract_name(server: &str, tool: &str) -> String {
    crate::model::mcp::agent_tool_name(server, tool)
}

/// The policy file for `tools` of `server` (see the module docs). With `trust` (the server's
/// `trust_annotations: true`), the flags the annotations suggest are written as contract
/// values instead of comments. Tools that would share a contract name are refused: the error
/// is each such name with its tools ([`McpImportError::SameName`]).
pub fn contracts(
    server: &str,
    tools: &[Tool],
    trust: bool,
) -> Result<String, Vec<(String, Vec<String>)>> {
    let mut tools: Vec<&Tool> = tools.iter().collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    let mut by_name: indexmap::IndexMap<String, Vec<String>> = indexmap::IndexMap::new();
    for tool in &tools {
        by_name
            .entry(contract_name(server, &tool.name))
            .or_default()
            .push(tool.name.to_string());
    }
    by_name.retain(|_, named| named.len() > 1);
    if !by_name.is_empty() {
        by_name.sort_keys();
        return Err(by_name.into_iter().collect());
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Contracts for the {count} tools of MCP server `{server}`, written by\n\
         # `toolgate mcp import {server}` from the server's tool list. Review before merging:\n\
         # annotations are the server's own claims, shown as comments with the contract flags\n\
         # they suggest; the rule at the end makes every tool ask until you decide.\n\
         version: 1\n\
         tools:",
        count = tools.len()
    );
    for tool in tools {
        let _ = writeln!(out, "  {}:", contract_name(server, &tool.name));
        if let Some(description) = &tool.description {
            let _ = writeln!(out, "    description: {}", quoted(description));
        }
        let handler = format!(
            "{{ kind: mcp, server: {server}, tool: {} }}",
            quoted(&tool.name)
        );
        let _ = writeln!(out, "    handler: {handler}");
        let _ = writeln!(
            out,
            "    input_schema: {}",
            flow(&Value::Object((*tool.input_schema).clone()), 4)
        );
        if let Some(schema) = &tool.output_schema {
            let _ = writeln!(
                out,
                "    output_schema: {}",
                flow(&Value::Object((**schema).clone()), 4)
            );
        }
        if let Some((claims, suggested)) = annotations(tool) {
            let _ = writeln!(out, "    # the server claims: {claims}");
            match suggested {
                Some(flags) if trust => {
                    let _ = writeln!(
                        out,
                        "    # from the annotations (`trust_annotations: true`):\n    concurrency: {{ {flags} }}"
                    );
                }
                Some(flags) => {
                    let _ = writeln!(out, "    # suggested: concurrency: {{ {flags} }}");
                }
                None => {}
            }
        }
    }
    let _ = writeln!(
        out,
        "rules:\n  - name: mcp-{server}-review\n    tools: [\"mcp__{server}__*\"]\n    decision: ask\n    reason: tools of MCP server `{server}` ask before they run until their contracts are reviewed"
    );
    Ok(out)
}

/// The message of [`McpImportError::SameName`].
fn same_name(server: &str, collisions: &[(String, Vec<String>)]) -> String {
    let groups: Vec<String> = collisions
        .iter()
        .map(|(contract, tools)| {
            // As the file would write them: escaped, so that nothing in a name can hide.
            let names: Vec<String> = tools
                .iter()
                .map(|tool| format!("`{}`", quoted(tool).trim_matches('"')))
                .collect();
            let listed = match names.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
                _ => names.concat(),
            };
            format!("{listed} become `{contract}`")
        })
        .collect();
    format!(
        "tools of MCP server `{server}` would share a contract name: {}; coding agents call them by that one name, so no contract can tell them apart. Nothing was written: write their contracts by hand, each naming its tool in `handler.tool`, or have the server rename them",
        groups.join("; ")
    )
}

/// The annotations of a tool in words, and the concurrency flags they suggest (if any).
fn annotations(tool: &Tool) -> Option<(String, Option<String>)> {
    let annotations = tool.annotations.as_ref()?;
    let mut claims = Vec::new();
    let mut flags = Vec::new();
    if let Some(read_only) = annotations.read_only_hint {
        claims.push(format!("readOnlyHint: {read_only}"));
        flags.push(format!("read_only: {read_only}"));
    }
    if let Some(destructive) = annotations.destructive_hint {
        claims.push(format!("destructiveHint: {destructive}"));
        flags.push(format!("destructive: {destructive}"));
    }
    if let Some(idempotent) = annotations.idempotent_hint {
        claims.push(format!("idempotentHint: {idempotent}"));
    }
    if let Some(open_world) = annotations.open_world_hint {
        claims.push(format!("openWorldHint: {open_world}"));
        match (open_world, annotations.read_only_hint) {
            (true, _) => flags.push("side_effect_scope: external".to_owned()),
            (false, Some(true)) => flags.push("side_effect_scope: none".to_owned()),
            (false, _) => {}
        }
    }
    if claims.is_empty() {
        return None;
    }
    Some((
        claims.join(", "),
        (!flags.is_empty()).then(|| flags.join(", ")),
    ))
}

/// A YAML double-quoted scalar (JSON's string syntax is a subset).
fn quoted(text: &str) -> String {
    crate::diagnostics::escape_invisible(
        &serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned()),
    )
}

/// A JSON value as a YAML flow collection, pretty-printed and indented below its key.
fn flow(value: &Value, indent: usize) -> String {
    let pretty = crate::diagnostics::escape_invisible(
        &serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string()),
    );
    let pad = " ".repeat(indent + 2);
    pretty
        .lines()
        .enumerate()
        .map(|(index, line)| {
            if index == 0 {
                line.to_owned()
            } else {
                format!("{pad}{line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_what_a_tool_name_may_hold() {
        assert_eq!(
            contract_name("github", "list_issues"),
            "mcp__github__list_issues"
        );
        assert_eq!(contract_name("fs", "read file/v2"), "mcp__fs__read_file_v2");
    }
}
