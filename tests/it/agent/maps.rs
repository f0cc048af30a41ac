//! Agent tool maps are checked when the policies load: a mapping onto a tool the policy set
//! does not declare is a warning at its place, with the closest tool name, since the hook
//! would leave such calls unjudged.

use crate::support::check::toolgate_in;

#[test]
fn a_map_onto_a_missing_tool_is_a_positioned_warning() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("maps.yaml"),
        "version: 1\nagents:\n  claude:\n    tools:\n      Fetchy: { tool: WebFetchh, input: { url: url } }\n      Off: { tool: Nowhere, disabled: true }\n",
    )
    .unwrap();
    let run = toolgate_in(dir.path(), &["-p", "maps.yaml", "check"]);
    assert_eq!(run.code, 0, "a warning does not fail check: {}", run.stdout);
    assert!(run.stdout.contains("maps.yaml:5:23"), "{}", run.stdout);
    assert!(
        run.stdout.contains("did you mean `WebFetch`?"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("unknown tool `Nowhere`"),
        "a disabled mapping is not checked: {}",
        run.stdout
    );
    insta::assert_snapshot!(run.stdout);
    let strict = toolgate_in(dir.path(), &["-p", "maps.yaml", "check", "--deny-warnings"]);
    assert_eq!(strict.code, 1, "{}", strict.stdout);
}

#[test]
fn a_folder_field_without_a_command_is_a_positioned_warning_and_such_calls_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("maps.yaml"),
        "version: 1\nagents:\n  acme:\n    protocol: claude\n    tools:\n      shell: { tool: Bash, cd: workdir, input: { description: text } }\n",
    )
    .unwrap();
    let run = toolgate_in(dir.path(), &["-p", "maps.yaml", "check"]);
    assert_eq!(run.code, 0, "a warning does not fail check: {}", run.stdout);
    assert!(run.stdout.contains("maps.yaml:6:32"), "{}", run.stdout);
    insta::assert_snapshot!(run.stdout);
    // The hook refuses such a call rather than judging it without its folder.
    let payload = serde_json::json!({
        "session_id": "s",
        "cwd": dir.path(),
        "hook_event_name": "PreToolUse",
        "tool_name": "shell",
        "tool_input": {"workdir": "/", "description": "clean"}
    });
    let hook = super::run_hook(
        "acme",
        payload.to_string().as_bytes(),
        &["-p", &dir.path().join("maps.yaml").display().to_string()],
        &[],
    );
    assert_eq!(hook.code, 0, "{}", hook.transcript());
    let answer = hook.json();
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
    assert!(
        answer["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("no command to run there"),
        "{answer}"
    );
}
