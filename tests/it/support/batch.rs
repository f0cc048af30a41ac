//! An engine whose tools are native handlers recording what they receive, and running a
//! batch of `(tool, input)` calls on it; shared by the hooks and the permission tests.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use toolgate::ApprovalBroker;
use toolgate::ModeName;
use toolgate::ToolCall;
use toolgate::{Batch, BatchOutcome, Engine, EngineBuilder, Turn};
use toolgate::{CallContext, HandlerFuture, HandlerOutput};

/// The `(tool, input)` pairs the recording handlers received, in order.
pub type Calls = Arc<Mutex<Vec<(String, Value)>>>;

/// Adds to `builder` a native handler for each of `tools` that records its call in `calls`
/// and answers `reply(tool, input)` as text.
pub fn recording(
    mut builder: EngineBuilder,
    tools: &[&str],
    calls: &Calls,
    reply: fn(&str, &Value) -> String,
) -> EngineBuilder {
    for tool in tools {
        let seen = Arc::clone(calls);
        let name = (*tool).to_owned();
        builder = builder.native(
            tool,
            move |input: Value, _ctx: CallContext| -> HandlerFuture {
                let text = reply(&name, &input);
                seen.lock().unwrap().push((name.clone(), input));
                Box::pin(async move { Ok(HandlerOutput::text(text)) })
            },
        );
    }
    builder
}

/// Runs `calls` (ids `c0`, `c1`, …) as one batch in `modes`.
pub async fn run_with(
    engine: &Engine,
    calls: &[(&str, Value)],
    modes: &[&str],
    approver: Option<Arc<dyn ApprovalBroker>>,
) -> BatchOutcome {
    let batch = Batch::new(
        calls
            .iter()
            .enumerate()
            .map(|(i, (tool, input))| ToolCall::new(format!("c{i}"), *tool, input.clone()))
            .collect(),
    );
    let turn = Turn {
        modes: modes.iter().map(|m| ModeName::new(*m)).collect(),
        approver,
        ..Turn::default()
    };
    engine.execute_batch(batch, &turn).await.unwrap()
}
