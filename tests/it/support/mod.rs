//! Helpers shared by the test modules.

pub mod alone;
pub mod batch;
pub mod budget;
pub mod check;
pub mod conformance_fixture;
pub mod executor;
pub mod hooks;
pub mod lines;
pub mod mcp_server;
pub mod node;
pub mod policy_formats;
pub mod reload;
pub mod serve;
pub mod yaml;

/// Copies a folder tree (files and folders only).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
