//! The tools `toolgate mcp serve` lists: one MCP tool per tool of the policy set that this
//! process can run, with the contract's description and input schema, and annotations from
//! the contract's flags where they map.
//!
//! [`exposed_tools`] decides what a client sees of the contracts; [`listed_tools`] adds the
//! tools wildcard contracts (`mcp__<server>__*`) cover, asked of their servers when a client
//! lists the tools: a tool a server adds later is listed (and callable) without a reload.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

use crate::model::contract::SideEffectScope;
use crate::model::handler::HandlerSpec;
use crate::snapshot::Snapshot;

/// The MCP tools of a snapshot, in definition order.
///
/// A tool whose handler is `native` is left out: such a handler is a function of the program
/// that embeds the engine (an agent host), which `toolgate mcp serve` does not have, so every
/// call of it would fail.
/// Wildcard contracts are not tools a client can call: [`listed_tools`] lists the tools they
/// cover.
pub fn exposed_tools(snapshot: &Snapshot) -> Vec<Tool> {
    contract_tools(snapshot)
        .filter(|tool| !tool.name.ends_with('*'))
        .collect()
}

/// The tools of every runnable contract, wildcards included (what a reload compares).
pub(super) fn contract_tools(snapshot: &Snapshot) -> impl Iterator<Item = Tool> + '_ {
    snapshot
        .tools
        .values()
        .filter(|tool| runnable(&tool.resolved.handler))
        .map(|tool| {
            let contract = &tool.contract;
            let mut exposed = Tool::new_with_raw(
                tool.name.as_str().to_owned(),
                contract.description.clone().map(Into::into),
                Arc::new(input_schema(contract.input_schema.as_ref())),
            );
            if let Some(annotations) = annotations(contract.concurrency.as_ref()) {
                exposed = exposed.with_annotations(annotations);
            }
            exposed
        })
}

/// What `tools/list` answers: [`exposed_tools`], then for each wildcard contract the tools its
/// server lists that it covers (no contract has their name, and no exact contract runs them
/// under another: `Snapshot::lookup`), named `mcp__<server>__<tool>`. Such a
/// tool has the server's description and input schema unless the wildcard declares its own
/// (an exact contract without an input schema gets the server's too). A server that cannot be
/// reached adds nothing (its calls fail with the reason).
pub async fn listed_tools(engine: &crate::executor::Engine, snapshot: &Snapshot) -> Vec<Tool> {
    let mut tools = exposed_tools(snapshot);
    for wildcard in snapshot.tools.values() {
        let Some(server_name) = crate::model::mcp::wildcard_server(wildcard.name.as_str()) else {
            continue;
        };
        let Some(server) = engine.mcp_server(server_name) else {
            continue;
        };
        let served = match server.list_tools().await {
            Ok(served) => served,
            Err(error) => {
                tracing::warn!(server = server_name, %error, "cannot list the tools of an mcp server");
                continue;
            }
        };
        for tool in served {
            let name = format!("mcp__{server_name}__{}", tool.name);
            if crate::model::mcp::split_tool_name(&name).is_none() {
                continue;
            }
            match snapshot.lookup(&name) {
                Some(own) if own.name.as_str() == name => {
                    // Listed already; give it the server's schema when it declares none.
                    if own.contract.input_schema.is_none()
                        && let Some(listed) = tools.iter_mut().find(|t| t.name == name)
                    {
                        listed.input_schema = Arc::clone(&tool.input_schema);
                    }
                    continue;
                }
                Some(covering) if covering.name == wildcard.name => {}
                // Another contract's alias, or a tool an exact contract runs (listed under
                // that contract's name).
                _ => continue,
            }
            let contract = &wildcard.contract;
            let schema = match &contract.input_schema {
                Some(schema) => Arc::new(input_schema(Some(schema))),
                None => Arc::clone(&tool.input_schema),
            };
            let description = contract
                .description
                .clone()
                .map(Into::into)
                .or(tool.description.clone());
            let mut listed = Tool::new_with_raw(name, description, schema);
            listed.output_schema = tool.output_schema.clone();
            if let Some(annotations) = annotations(contract.concurrency.as_ref()) {
                listed = listed.with_annotations(annotations);
            }
            tools.push(listed);
        }
    }
    tools
}

/// Whether this process can run a handler.
fn runnable(handler: &HandlerSpec) -> bool {
    match handler {
        HandlerSpec::Command(_) | HandlerSpec::Http(_) | HandlerSpec::Mcp(_) => true,
        HandlerSpec::Native(_) => false,
    }
}

/// The contract's input schema; an object schema that accepts any object when it sets none
/// (MCP requires `type: object` at the top).
fn input_schema(schema: Option<&Value>) -> JsonObject {
    match schema {
        Some(Value::Object(schema)) => schema.clone(),
        Some(_) | None => {
            let mut any = JsonObject::new();
            any.insert("type".into(), Value::from("object"));
            any
        }
    }
}

/// The hints the contract's flags give; only flags the contract sets (the hints are claims a
/// client may act on, so nothing is claimed from a default).
fn annotations(flags: Option<&crate::model::contract::ConcurrencySpec>) -> Option<ToolAnnotations> {
    let flags = flags?;
    let mut hints = ToolAnnotations::new();
    let mut any = false;
    if let Some(read_only) = flags.read_only {
        hints = hints.read_only(read_only);
        any = true;
    }
    if let Some(destructive) = flags.destructive {
        hints = hints.destructive(destructive);
        any = true;
    }
    if let Some(scope) = flags.side_effect_scope {
        // `external` reaches beyond the machine: the open world of MCP's hint.
        let open_world = match scope {
            SideEffectScope::External => true,
            SideEffectScope::None | SideEffectScope::Session | SideEffectScope::Workspace => false,
        };
        hints = hints.open_world(open_world);
        any = true;
    }
    any.then_some(hints)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::contract::ConcurrencySpec;

    #[test]
    fn only_the_flags_a_contract_sets_become_hints() {
        assert_eq!(annotations(None), None);
        assert_eq!(annotations(Some(&ConcurrencySpec::default())), None);
        let flags = ConcurrencySpec {
            read_only: Some(false),
            destructive: Some(true),
            side_effect_scope: Some(SideEffectScope::External),
            ..ConcurrencySpec::default()
        };
        let hints = annotations(Some(&flags)).unwrap();
        assert_eq!(hints.read_only_hint, Some(false));
        assert_eq!(hints.destructive_hint, Some(true));
        assert_eq!(hints.open_world_hint, Some(true));
        assert_eq!(hints.idempotent_hint, None);
        let local = ConcurrencySpec {
            side_effect_scope: Some(SideEffectScope::Workspace),
            ..ConcurrencySpec::default()
        };
        let hints = annotations(Some(&local)).unwrap();
        assert_eq!(hints.open_world_hint, Some(false));
        assert_eq!(hints.read_only_hint, None);
    }

    #[test]
    fn a_contract_without_an_object_schema_accepts_any_object() {
        let any = Value::Object(input_schema(None));
        assert_eq!(any, json!({"type": "object"}));
        let given = json!({"type": "object", "required": ["a"]});
        assert_eq!(Value::Object(input_schema(Some(&given))), given);
    }
}
