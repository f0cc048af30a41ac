//! `toolgate mcp check [SERVER]`: connects to the declared servers (or one) and compares
//! their tool lists with the contracts whose handlers call them. `toolgate check` stays
//! offline and fast, so this is where a server is asked: a contract naming a tool the server
//! does not list is an error; a contract flag that contradicts the server's annotation is a
//! warning (the annotation is only a claim, but one of the two is wrong), reported at the
//! flag.

use rmcp::model::Tool;

use super::GlobalOptions;
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::mcp::Server;
use crate::model::handler::HandlerSpec;
use crate::snapshot::{Snapshot, load};

/// Why the check could not run.
#[derive(Debug, thiserror::Error)]
pub enum McpCheckError {
    /// The policy set does not load.
    #[error("the policy set does not load")]
    Invalid(Vec<Diagnostic>),
    /// No such server.
    #[error("no MCP server `{0}` under `mcp_servers`")]
    UnknownServer(String),
}

/// Loads the policy set, lists each server's tools and compares them with the contracts.
pub async fn run(
    global: &GlobalOptions,
    only: Option<&str>,
) -> Result<Vec<Diagnostic>, McpCheckError> {
    let outcome = load(&global.load_options(), 1);
    let Some(snapshot) = outcome.snapshot else {
        return Err(McpCheckError::Invalid(outcome.diagnostics));
    };
    if let Some(name) = only
        && !snapshot.mcp_servers.contains_key(name)
    {
        return Err(McpCheckError::UnknownServer(name.to_owned()));
    }
    let mut diagnostics = Vec::new();
    for (name, entry) in &snapshot.mcp_servers {
        if only.is_some_and(|only| only != name) {
            continue;
        }
        let listed = match crate::handler::mcp::spec(name, entry, &snapshot.workspace_root) {
            Ok(spec) => {
                let server = Server::new(spec);
                let listed = server.list_tools().await.map_err(|error| error.to_string());
                server.shutdown().await;
                listed
            }
            Err(why) => Err(why),
        };
        match listed {
            Ok(tools) => diagnostics.extend(compare(&snapshot, name, &tools)),
            Err(why) => {
                let mut diagnostic = Diagnostic::new(
                    Code::SemanticUnknownReference,
                    format!("cannot list the tools of MCP server `{name}`: {why}"),
                )
                .with_help("start the server by hand to see why, or fix its entry");
                if let Some(location) = snapshot
                    .sources
                    .locate(&snapshot.provenance, &pointer(&["mcp_servers", name]))
                {
                    diagnostic = diagnostic.with_location(location);
                }
                diagnostics.push(diagnostic);
            }
        }
    }
    crate::diagnostics::diagnostic::sort(&mut diagnostics);
    Ok(diagnostics)
}

fn pointer(tokens: &[&str]) -> String {
    tokens.iter().fold(String::new(), |pointer, token| {
        crate::load::spans::join_pointer(&pointer, token)
    })
}

/// The problems of the contracts that call `server`, given the tools it lists.
pub fn compare(snapshot: &Snapshot, server: &str, tools: &[Tool]) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    for (name, tool) in &snapshot.tools {
        let HandlerSpec::Mcp(handler) = &tool.resolved.handler else {
            continue;
        };
        if handler.server != server {
            continue;
        }
        // A wildcard names no tool of its own: each call names one.
        let Some(remote) =
            crate::model::mcp::server_tool(name.as_str(), &handler.server, handler.tool.as_deref())
        else {
            continue;
        };
        let remote = remote.as_str();
        let at = |tokens: &[&str]| {
            let mut all = vec!["tools", name.as_str()];
            all.extend_from_slice(tokens);
            let pointer = pointer(&all);
            snapshot.sources.locate(&snapshot.provenance, &pointer)
        };
        let Some(listed) = tools.iter().find(|tool| tool.name == remote) else {
            let mut diagnostic = Diagnostic::new(
                Code::SemanticUnknownReference,
                format!("MCP server `{server}` lists no tool `{remote}` (the handler of `{name}`)"),
            )
            .with_help(format!(
                "the server lists: {}",
                tools
                    .iter()
                    .map(|tool| format!("`{}`", tool.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            if let Some(location) = at(&["handler", "tool"]).or_else(|| at(&["handler"])) {
                diagnostic = diagnostic.with_location(location);
            }
            diagnostics.push(diagnostic);
            continue;
        };
        let Some(hints) = &listed.annotations else {
            continue;
        };
        let effective = snapshot.effective.value();
        let set = |field: &str| {
            effective
                .pointer(&pointer(&["tools", name.as_str(), "concurrency", field]))
                .cloned()
        };
        let mut contradictions = Vec::new();
        if let (Some(serde_json::Value::Bool(read_only)), Some(hint)) =
            (set("read_only"), hints.read_only_hint)
            && read_only != hint
        {
            contradictions.push((
                "read_only",
                format!("`read_only: {read_only}`"),
                format!("readOnlyHint: {hint}"),
            ));
        }
        if let (Some(serde_json::Value::Bool(destructive)), Some(hint)) =
            (set("destructive"), hints.destructive_hint)
            && destructive != hint
        {
            contradictions.push((
                "destructive",
                format!("`destructive: {destructive}`"),
                format!("destructiveHint: {hint}"),
            ));
        }
        if let (Some(serde_json::Value::String(scope)), Some(true)) =
            (set("side_effect_scope"), hints.open_world_hint)
            && scope != "external"
        {
            contradictions.push((
                "side_effect_scope",
                format!("`side_effect_scope: {scope}`"),
                "openWorldHint: true".to_owned(),
            ));
        }
        for (field, flag, hint) in contradictions {
            let mut diagnostic = Diagnostic::new(
                Code::SemanticContradiction,
                format!("{flag} of `{name}` contradicts MCP server `{server}`, which says {hint}"),
            )
            .with_severity(Severity::Warning)
            .with_help("annotations are the server's claims: check what the tool does, then fix the contract or ignore this warning");
            if let Some(location) = at(&["concurrency", field]) {
                diagnostic = diagnostic.with_location(location);
            }
            diagnostics.push(diagnostic);
        }
    }
    diagnostics
}
