//! The pinned npm packages of the MCP tests (`tests/node/`: the reference servers, the
//! TypeScript SDK and the conformance suite), installed with `npm ci --prefix tests/node`.
//! A test that needs them calls [`packages`] and returns early when it says they are absent,
//! after printing that it skipped and why.

use std::path::PathBuf;
use std::process::Command;

/// `tests/node/node_modules` when `node` runs and the packages are installed; otherwise
/// `None`, after printing `skipped: …` with what to install.
pub fn packages(test: &str) -> Option<PathBuf> {
    let modules = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/node/node_modules");
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|out| out.status.success()) {
        eprintln!("skipped {test}: `node` is not available (install Node.js and npm)");
        return None;
    }
    if !modules.join("@modelcontextprotocol").is_dir() {
        eprintln!(
            "skipped {test}: the MCP test packages are not installed (run `npm ci --prefix tests/node`)"
        );
        return None;
    }
    Some(modules)
}

/// The executable `name` from the packages' `.bin` folder.
pub fn bin(modules: &std::path::Path, name: &str) -> PathBuf {
    modules.join(".bin").join(name)
}
