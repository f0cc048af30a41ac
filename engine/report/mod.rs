//! Report shapes shared by the command line and the JSON-RPC server: the finalized batch
//! record and the explain report. (The reload records are the `PolicyReloaded` /
//! `PolicyReloadFailed` events, built by `snapshot::reload`.)

pub mod explain;
pub mod finalized;

pub use finalized::finalized_json;
