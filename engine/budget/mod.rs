//! Result budgets: the per-call producer stage and the batch finalizer (water-fill, fit,
//! hard cap).
