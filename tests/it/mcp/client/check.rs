//! `toolgate mcp check`: a contract's tool the server does not list, and contract flags that
//! contradict the server's annotations, found by asking the server.

use crate::support::check::toolgate;
use crate::support::mcp_server;

#[test]
fn mcp_check_compares_contracts_with_the_server_tool_list() {
    let dir = tempfile::tempdir().unwrap();
    let server = mcp_server::yaml_entry(&dir.path().join("cancel.log"));
    std::fs::write(
        dir.path().join("server.yaml"),
        format!("version: 1\nmcp_servers:\n  test: {server}\n"),
    )
    .unwrap();
    let run = toolgate(&[
        "--no-builtin",
        "-p",
        dir.path().to_str().unwrap(),
        "-p",
        "tests/fixtures/mcp/check_annotations",
        "mcp",
        "check",
    ]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!("mcp_check_annotations", run.transcript());
}
