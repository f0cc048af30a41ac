//! `examples/client.py` runs end to end against the real binary: initialize, a batch with
//! two approval round trips (one allowed, one denied with feedback), events, shutdown.
//! Skipped when `python3` is not on the machine.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn the_python_client_example_runs() {
    let python = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !python.is_ok_and(|s| s.success()) {
        eprintln!("skipped: python3 is not available");
        return;
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let mut child = Command::new("python3")
        .current_dir(root)
        .args(["examples/client.py", "--", env!("CARGO_BIN_EXE_toolgate")])
        .args(["-p", "examples/policies", "serve", "--stdio"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("examples/client.py did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let version = format!("toolgate {}, generation 1", env!("CARGO_PKG_VERSION"));
    for expected in [
        version.as_str(),
        "← permission/request permission-1",
        "→ response permission-1 {\"decision\": \"allow\"",
        "→ response permission-2 {\"decision\": \"deny\"",
        "event PermissionResolved ask-touch",
        "  ask-touch  ok ",
        "  ask-rm     denied    do not run `rm -rf target/toolgate-demo`",
        "server exited with 0",
    ] {
        assert!(
            stdout.contains(expected),
            "`{expected}` missing in:\n{stdout}\n{stderr}"
        );
    }
}
