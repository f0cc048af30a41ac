//! Output budgets, the finalizer and the artifact store.

mod artifact_store;
