//! Embedding toolgate: load policies, register a native tool, answer approvals, stream
//! events, and execute a batch.
//!
//! Run with `cargo run --example embedding`.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::json;
use toolgate::approval::{ApprovalAnswer, ApprovalBroker, ApprovalRequest};
use toolgate::diagnostics::render::{HumanOptions, render_human};
use toolgate::events::Event;
use toolgate::executor::{Batch, Engine, Turn};
use toolgate::handler::{CallContext, HandlerError, HandlerFuture, HandlerOutput};
use toolgate::pipeline::ToolCall;
use toolgate::snapshot::{LayerOptions, LoadOptions, load};

/// The native tool: counts words, reporting progress and honouring cancellation.
fn word_count(input: serde_json::Value, ctx: CallContext) -> HandlerFuture {
    Box::pin(async move {
        let text = input["text"]
            .as_str()
            .ok_or_else(|| HandlerError::business("`text` must be a string"))?;
        ctx.progress
            .message(format!("counting {} bytes", text.len()));
        if ctx.is_cancelled() {
            return Err(HandlerError::Cancelled);
        }
        Ok(HandlerOutput::text(format!(
            "{} words",
            text.split_whitespace().count()
        )))
    })
}

/// An approver that allows a request when its input is shorter than 300 characters.
struct LengthApprover;

impl ApprovalBroker for LengthApprover {
    fn request(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        let length = request.input["text"].as_str().map_or(0, str::len);
        Box::pin(async move {
            if length < 300 {
                ApprovalAnswer::Allow { reason: None }
            } else {
                ApprovalAnswer::Deny {
                    reason: Some(format!("{length} characters is too long for this demo")),
                }
            }
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let layers = LayerOptions {
        policies: vec!["examples/embedding/policy.yaml".into()],
        ..LayerOptions::default()
    };
    let outcome = load(&LoadOptions::new(layers), 1);
    let Some(snapshot) = outcome.snapshot else {
        eprint!(
            "{}",
            render_human(&outcome.diagnostics, &HumanOptions::default())
        );
        std::process::exit(1);
    };

    let engine = Engine::builder(snapshot)
        .native("WordCount", word_count)
        .sink(Arc::new(|event: Event| {
            if let Ok(line) = serde_json::to_string(&event) {
                println!("event: {line}");
            }
        }))
        .build();

    let batch = Batch::new(vec![
        ToolCall::new("short", "WordCount", json!({"text": "the quick brown fox"})),
        ToolCall::new("medium", "WordCount", json!({"text": "word ".repeat(50)})),
        ToolCall::new("long", "WordCount", json!({"text": "word ".repeat(80)})),
        ToolCall::new("typo", "WordCount", json!({"txt": "no such field"})),
    ]);
    let turn = Turn {
        approver: Some(Arc::new(LengthApprover)),
        ..Turn::default()
    };
    let outcome = engine.execute_batch(batch, &turn).await?;
    println!();
    for result in &outcome.results {
        println!(
            "{:<7} {:<9} {}",
            result.call_id,
            result.status.as_str(),
            result.model_text()
        );
    }
    Ok(())
}
