//! Stage 9, produce: the output budgeted per call (SPEC §8.1) — empty output placeholder,
//! `min(max_model, max_inline)`, artifact or truncation — with structured metadata. The
//! content's length is computed here, as each output arrives, and kept with the result, so
//! that the batch finalizer only touches the text it keeps; a large content is hashed here
//! too, off the async threads (a small one is hashed by the finalizer only if it cuts it).

use crate::budget::{
    ArtifactTarget, Produced, ProducerInput, ProducerPolicy, produce as run_producer,
};
use crate::model::Size;
use crate::snapshot::{ResolvedContract, Tool};

use super::{CallEnv, CallState};

/// Outputs at least this long are measured and hashed on a blocking thread.
const OFFLOAD_BYTES: usize = 256 * 1024;

/// Budgets one output (or error text).
pub async fn produce(
    env: &CallEnv<'_>,
    state: &mut CallState<'_>,
    tool: &Tool,
    contract: &ResolvedContract,
    output: String,
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
    let target = env.store.map(|store| ArtifactTarget {
        store,
        session: env.session,
    });
    let input = ProducerInput {
        tool: &tool.name,
        call_id: &state.call.id,
        output,
    };
    let produced = run_producer(input, &policy, &env.prepared.templates, target).await;
    let meta = &produced.meta;
    state.metadata.truncated = meta.truncated;
    state.metadata.original_size = meta.original_size;
    state.metadata.final_size = meta.final_size;
    state.metadata.policy = Some(meta.policy);
    state.metadata.persisted_files = meta.persisted_files.clone();
    prepare(produced, engine.budget_unit).await
}

/// Measures the content ahead of the finalizer; a large one is also hashed, off the async
/// threads.
async fn prepare(produced: Produced, unit: crate::model::BudgetUnit) -> Produced {
    if produced.content.as_str().len() < OFFLOAD_BYTES {
        produced.content.len(unit);
        return produced;
    }
    let content = produced.content.clone();
    // A failed blocking task only means the finalizer measures the text itself.
    let _ = tokio::task::spawn_blocking(move || content.prepare(unit)).await;
    produced
}
