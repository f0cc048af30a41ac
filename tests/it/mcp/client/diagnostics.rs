//! What `check` says about `mcp_servers` entries and `mcp` handlers.

use crate::support::check::toolgate;

#[test]
fn check_reports_mcp_mistakes_where_they_are_written() {
    let run = toolgate(&[
        "--no-builtin",
        "-p",
        "tests/fixtures/mcp/check_errors",
        "check",
    ]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!("mcp_check_errors", run.transcript());
}
