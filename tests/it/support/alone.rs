//! Running one test alone in a process of its own, for a test that measures the whole
//! process (its memory): the other tests of the binary run in parallel threads of the same
//! process and would disturb the figure.

use std::process::Command;

/// Set in the environment of the process started for the test.
const ALONE: &str = "TOOLGATE_TEST_ALONE";

/// Whether the caller should run its body now. In the test binary's own run this starts the
/// binary again with only the test `module_path::name` (under the same name, so the call
/// returns `true` there), asserts that this one test ran and passed, and returns `false`.
pub fn run_alone(module_path: &str, name: &str) -> bool {
    if std::env::var_os(ALONE).is_some() {
        return true;
    }
    // libtest names a test by its module path without the crate.
    let module = module_path.split_once("::").map_or("", |(_, rest)| rest);
    let test = if module.is_empty() {
        name.to_owned()
    } else {
        format!("{module}::{name}")
    };
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &test, "--test-threads=1", "--nocapture"])
        .env(ALONE, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprint!("{stderr}");
    assert!(
        output.status.success() && stdout.contains("test result: ok. 1 passed"),
        "`{test}` in a process of its own: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    false
}
