//! Output budgets, the finalizer and the artifact store.

mod artifact_faults;
mod artifact_store;
mod engine;
mod finalizer;
mod producer;
