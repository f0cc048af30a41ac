//! Stage 9, produce: the output budgeted per call (SPEC §8.1) — empty output placeholder,
//! `min(max_model, max_inline)`, artifact or truncation — with structured metadata. The
//! content's length is computed here, as each output arrives, and kept with the result, so
//! that the batch finalizer only touches the text it keeps; a large content is hashed here
//! too, off the async threads (a small one is hashed by the finalizer only if it cuts it).

use crate::budget::{
    ArtifactTarget, Measurement, Produced, ProducerInput, ProducerPolicy, SlotText, measure_all,
    produce as run_producer, produce_without_io,
};
use crate::events::{ArtifactStage, ArtifactWriteFailed, EventKind};
use crate::model::Size;
use crate::model::resolved::ResolvedContract;
use crate::snapshot::Tool;

use super::{CallEnv, CallState, rare};

/// Outputs at least this long are measured and hashed on a blocking thread.
const OFFLOAD_BYTES: usize = 256 * 1024;

/// Budgets one output (or error text).
pub async fn produce(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    contract: &ResolvedContract,
    output: SlotText,
) -> Produced {
    let engine = &env.prepared.snapshot.engine;
    let budget = &contract.budget;
    let policy = ProducerPolicy {
        max_model: Some(Size(budget.max_model)),
        max_inline: budget.max_inline.map(Size),
        overflow: budget.overflow,
        keep: budget.keep,
        preview: Size(budget.preview),
        unit: engine.budget_unit,
        retention: budget.retention,
    };
    let unit = engine.budget_unit;
    let templates = &env.prepared.templates;
    // The producer reads the output's length first; for a large output count it off the async
    // threads. Only the content that reaches the model is also hashed (for the finalizer's
    // header): the length and digest of an output that passes unchanged are computed once,
    // here, and travel with it.
    let produced = if output.as_str().len() < OFFLOAD_BYTES {
        // A small output needing no artifact write (most of them) is budgeted without
        // awaiting anything.
        measure_all(&[&output], Measurement::Length(unit));
        let input = ProducerInput {
            tool: tool.name_for_call(&state.call.tool),
            call_id: &state.call.id,
            output,
        };
        match produce_without_io(input, &policy, templates, env.store.is_some()) {
            Ok(produced) => produced,
            Err(input) => rare(run_producer(input, &policy, templates, target(env))).await,
        }
    } else {
        let output = rare(off_thread(output, Measurement::Length(unit))).await;
        let input = ProducerInput {
            tool: tool.name_for_call(&state.call.tool),
            call_id: &state.call.id,
            output,
        };
        rare(run_producer(input, &policy, templates, target(env))).await
    };
    if let Some(error) = &produced.artifact_error {
        env.emit(
            Some(&state.call.id),
            EventKind::ArtifactWriteFailed(ArtifactWriteFailed {
                stage: ArtifactStage::Producer,
                error: error.to_string(),
                size: produced.meta.original_size,
            }),
        );
    }
    let meta = &produced.meta;
    state.metadata.truncated = meta.truncated;
    state.metadata.original_size = meta.original_size;
    state.metadata.final_size = meta.final_size;
    state.metadata.policy = Some(meta.policy);
    state.metadata.persisted_files = meta.persisted_files.clone();
    // The content's length is kept with it; a large content is hashed here too, off the
    // async threads (a small one is hashed by the finalizer only if it cuts it).
    if produced.content.as_str().len() < OFFLOAD_BYTES {
        measure_all(&[&produced.content], Measurement::Length(unit));
    } else {
        rare(async {
            let content = off_thread(produced.content.clone(), Measurement::Length(unit)).await;
            off_thread(content, Measurement::Digest).await;
        })
        .await;
    }
    produced
}

fn target<'a>(env: &CallEnv<'a>) -> Option<ArtifactTarget<'a>> {
    env.store.map(|store| ArtifactTarget {
        store,
        session: env.session,
    })
}

/// Computes and caches `what` for `text` (shared with every clone), on a blocking thread
/// when the text is large.
async fn off_thread(text: SlotText, what: Measurement) -> SlotText {
    if text.as_str().len() < OFFLOAD_BYTES {
        measure_all(&[&text], what);
        return text;
    }
    let shared = text.clone();
    // A failed blocking task only means the text is measured later, where it is needed.
    let _ = tokio::task::spawn_blocking(move || measure_all(&[&shared], what)).await;
    text
}
