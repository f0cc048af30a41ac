//! The tools `toolgate mcp serve` lists: one MCP tool per tool of the policy set that this
//! process can run, with the contract's description and input schema, and annotations from
//! the contract's flags where they map.
//!
//! [`exposed_tools`] is the one place that decides what a client sees; tools that come from
//! MCP servers (wildcard contracts) are tools of the snapshot like any other and appear here
//! without further work.

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
pub fn exposed_tools(snapshot: &Snapshot) -> Vec<Tool> {
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
        .collect()
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
