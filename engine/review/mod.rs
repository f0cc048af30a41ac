//! Semantic diff of two policy sets, with a risk level per change.
