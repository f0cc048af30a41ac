//! Layers, merging with provenance, semantic checks, and the immutable `Snapshot` that every
//! batch runs against; hot reload swaps whole snapshots.

pub mod layer;
pub mod merge;
pub mod provenance;
pub mod resolve;
