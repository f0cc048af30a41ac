//! `toolgate mcp serve` refusing to start: a broken policy set or an undeclared mode is
//! reported on stderr, with a non-zero exit, before any MCP traffic (stdout stays empty).

use std::process::Stdio;

use super::support::{command, fixtures};

fn start(root: &str, args: &[&str]) -> String {
    let workspace = tempfile::tempdir().unwrap();
    let output = command(workspace.path(), &fixtures().join(root), args)
        .current_dir(fixtures())
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    format!(
        "exit: {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
            .replace(&fixtures().display().to_string(), "<fixtures>")
    )
}

#[test]
fn a_broken_policy_set_is_reported_before_serving() {
    insta::assert_snapshot!(start("broken", &[]));
}

#[test]
fn an_undeclared_mode_is_refused() {
    insta::assert_snapshot!(start("policies", &["--mode", "yolo"]));
}

#[test]
fn sigterm_stops_the_server_with_its_exit_code() {
    let (dir, root) = super::support::scratch();
    let mut server = super::support::http_server(dir.path(), &root, &[], &[]);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(server.child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = server.child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
}
