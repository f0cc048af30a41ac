//! Tool annotations as contract defaults (issue 21): for an MCP server declared with
//! `trust_annotations: true`, the `readOnlyHint`, `destructiveHint` and `openWorldHint` of
//! its tools fill the concurrency flags a contract leaves unset. A flag the contract sets is
//! never changed, so an annotation cannot loosen what a contract says.
//!
//! | annotation | flag it fills |
//! | --- | --- |
//! | `readOnlyHint` | `read_only` |
//! | `destructiveHint` | `destructive` |
//! | `openWorldHint: true` | `side_effect_scope: external` |
//! | `openWorldHint: false` with `readOnlyHint: true` | `side_effect_scope: none` |
//!
//! `idempotentHint` fills nothing (no contract flag means it). A tool claiming to be both
//! read-only and destructive is taken as destructive only.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::ToolAnnotations;

use super::{Snapshot, Tool};
use crate::model::contract::{ConcurrencySpec, SideEffectScope, ToolContract};
use crate::model::handler::HandlerSpec;
use crate::model::mcp::{split_tool_name, wildcard_name, wildcard_server};

/// The annotations of one server's tools, by tool name.
pub type ServerHints = Arc<HashMap<String, ToolAnnotations>>;

impl Snapshot {
    /// The snapshot with the flags the annotations of `hints` (by server) fill, for the
    /// servers it declares with `trust_annotations: true` (the others' hints are ignored).
    /// Replaces what an earlier call filled.
    pub fn with_hints(&self, hints: &HashMap<String, ServerHints>) -> Snapshot {
        let mut hinted = HashMap::default();
        let trusted = |server: &str| {
            self.mcp_servers
                .get(server)
                .is_some_and(crate::model::mcp::McpServer::trusts_annotations)
        };
        // Exact contracts of a server's tools.
        for tool in self.tools.values() {
            if wildcard_server(tool.name.as_str()).is_some() {
                continue;
            }
            let HandlerSpec::Mcp(handler) = &tool.resolved.handler else {
                continue;
            };
            if !trusted(&handler.server) {
                continue;
            }
            let Some(server_hints) = hints.get(&handler.server) else {
                continue;
            };
            let Some(server_tool) = crate::model::mcp::server_tool(
                tool.name.as_str(),
                &handler.server,
                handler.tool.as_deref(),
            ) else {
                continue;
            };
            if let Some(annotations) = server_hints.get(&server_tool)
                && let Some(filled) = self.filled(tool, annotations)
            {
                hinted.insert(tool.name.to_string(), Arc::new(filled));
            }
        }
        // The tools a wildcard covers.
        for (server, server_hints) in hints {
            if !trusted(server) {
                continue;
            }
            let Some(wildcard) = self.tools.get(wildcard_name(server).as_str()) else {
                continue;
            };
            for (name, annotations) in server_hints.iter() {
                let called = format!("mcp__{server}__{name}");
                if split_tool_name(&called).is_none()
                    || self.names.canonical_of(&called).is_some()
                    || self.run_by_contract.contains_key(&called)
                {
                    continue;
                }
                if let Some(filled) = self.filled(wildcard, annotations) {
                    hinted.insert(called, Arc::new(filled));
                }
            }
        }
        Snapshot {
            hinted,
            ..self.clone()
        }
    }

    /// `tool` with the flags its contract leaves unset filled from `annotations`, or `None`
    /// when they fill nothing.
    fn filled(&self, tool: &Tool, annotations: &ToolAnnotations) -> Option<Tool> {
        let mut contract: ToolContract = tool.contract.clone();
        let flags = contract
            .concurrency
            .get_or_insert_with(ConcurrencySpec::default);
        let sources = fill(flags, annotations);
        if sources.is_empty() {
            return None;
        }
        let mut filled = Tool::new(
            tool.name.clone(),
            contract,
            &self.engine,
            tool.input_schema.clone(),
            tool.output_schema.clone(),
        );
        filled.from_annotations = sources;
        Some(filled)
    }
}

/// Fills the unset flags of `flags` from `annotations`; returns what it filled, each flag
/// with the hint it came from.
fn fill(flags: &mut ConcurrencySpec, annotations: &ToolAnnotations) -> Vec<(&'static str, String)> {
    let mut filled = Vec::new();
    let destructive = annotations.destructive_hint == Some(true);
    if flags.destructive.is_none()
        && let Some(hint) = annotations.destructive_hint
    {
        flags.destructive = Some(hint);
        filled.push(("destructive", format!("destructiveHint: {hint}")));
    }
    if flags.read_only.is_none()
        && let Some(hint) = annotations.read_only_hint
        && !(hint && destructive)
    {
        flags.read_only = Some(hint);
        filled.push(("read_only", format!("readOnlyHint: {hint}")));
    }
    if flags.side_effect_scope.is_none() {
        // Read-only as the contract has it now (its own flag wins over the hint).
        match (annotations.open_world_hint, flags.read_only) {
            (Some(true), _) => {
                flags.side_effect_scope = Some(SideEffectScope::External);
                filled.push(("side_effect_scope", "openWorldHint: true".to_owned()));
            }
            (Some(false), Some(true)) if !destructive => {
                flags.side_effect_scope = Some(SideEffectScope::None);
                filled.push((
                    "side_effect_scope",
                    "openWorldHint: false, readOnlyHint: true".to_owned(),
                ));
            }
            _ => {}
        }
    }
    filled
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(
        read_only: Option<bool>,
        destructive: Option<bool>,
        open: Option<bool>,
    ) -> ToolAnnotations {
        let mut hints = ToolAnnotations::new();
        hints.read_only_hint = read_only;
        hints.destructive_hint = destructive;
        hints.open_world_hint = open;
        hints
    }

    #[test]
    fn hints_fill_only_unset_flags() {
        let mut flags = ConcurrencySpec {
            read_only: Some(false),
            ..ConcurrencySpec::default()
        };
        let filled = fill(&mut flags, &hints(Some(true), None, Some(false)));
        // The contract's `read_only: false` stays, and so the tool is no closed read-only
        // tool: nothing is filled.
        assert_eq!(flags.read_only, Some(false));
        assert_eq!(flags.side_effect_scope, None);
        assert!(filled.is_empty());
        let mut unset = ConcurrencySpec::default();
        let filled = fill(&mut unset, &hints(Some(true), None, Some(false)));
        assert_eq!(unset.read_only, Some(true));
        assert_eq!(unset.side_effect_scope, Some(SideEffectScope::None));
        assert_eq!(filled.len(), 2);
        let mut set = ConcurrencySpec {
            destructive: Some(true),
            side_effect_scope: Some(SideEffectScope::Workspace),
            ..ConcurrencySpec::default()
        };
        let filled = fill(&mut set, &hints(None, Some(false), Some(true)));
        assert_eq!(set.destructive, Some(true));
        assert_eq!(set.side_effect_scope, Some(SideEffectScope::Workspace));
        assert!(filled.is_empty());
    }

    #[test]
    fn a_read_only_destructive_claim_is_destructive() {
        let mut flags = ConcurrencySpec::default();
        let filled = fill(&mut flags, &hints(Some(true), Some(true), Some(false)));
        assert_eq!(flags.destructive, Some(true));
        assert_eq!(flags.read_only, None);
        assert_eq!(flags.side_effect_scope, None);
        assert_eq!(filled.len(), 1);
    }
}
