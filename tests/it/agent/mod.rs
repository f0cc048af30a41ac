//! `toolgate hook <agent>` as the agents run it: a real subprocess fed the agent's hook JSON
//! on stdin (fixtures written from the agents' published schemas and docs, see
//! `tests/fixtures/agents/README.md`), with the exact answer and exit code snapshotted.

mod decision_log;
mod maps;
mod protocols;
mod server;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::check::{Run, normalise, run_with_stdin};

/// The fixtures folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents")
}

/// A project whose `.toolgate/policies` holds `policy` (a fixture file name), in a temporary
/// folder.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    /// A project with the fixture policy `policy`.
    pub fn with(policy: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let policies = dir.path().join(".toolgate/policies");
        std::fs::create_dir_all(&policies).unwrap();
        std::fs::copy(fixtures().join(policy), policies.join(policy)).unwrap();
        Self { dir }
    }

    /// The project with the test policy (`project.yaml`).
    pub fn standard() -> Self {
        Self::with("project.yaml")
    }

    /// Its root.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A fixture payload with `{{PROJECT}}` replaced by the project's root.
    pub fn payload(&self, fixture: &str) -> String {
        let text = std::fs::read_to_string(fixtures().join(fixture)).unwrap();
        text.replace("{{PROJECT}}", &self.path().display().to_string())
    }

    /// Runs `toolgate [args…] hook <agent> [hook_args…]` with a fixture payload on stdin,
    /// from a folder outside the project (the project is found from the payload's `cwd`).
    pub fn hook(&self, agent: &str, fixture: &str, args: &[&str], hook_args: &[&str]) -> Run {
        run_hook(agent, self.payload(fixture).as_bytes(), args, hook_args)
    }

    /// The run's transcript with the project's root as `[PROJECT]`.
    pub fn transcript(&self, run: &Run) -> String {
        normalise(&run.transcript()).replace(&self.path().display().to_string(), "[PROJECT]")
    }
}

/// The configuration folder (trust store) of these tests, shared by all of them.
pub fn config() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// Runs `toolgate [args…] hook <agent> [hook_args…]` with `stdin`, from the system's temporary
/// folder. The project the payload's `cwd` names is trusted first, as it is now: a user who
/// installs the hook trusts the projects the agent works in (`toolgate trust`; the trust
/// tests cover untrusted projects).
pub fn run_hook(agent: &str, stdin: &[u8], args: &[&str], hook_args: &[&str]) -> Run {
    run_hook_with_env(agent, stdin, args, hook_args, &[])
}

/// [`run_hook`] with `env` set: the agents' project variables (`CLAUDE_PROJECT_DIR`…) and
/// `CDPATH` are removed unless given here, so that a test run from inside an agent (or a
/// shell that sets them) does not change.
pub fn run_hook_with_env(
    agent: &str,
    stdin: &[u8],
    args: &[&str],
    hook_args: &[&str],
    env: &[(&str, &Path)],
) -> Run {
    let cwd = serde_json::from_slice::<serde_json::Value>(stdin)
        .ok()
        .and_then(|payload| payload.get("cwd")?.as_str().map(PathBuf::from))
        .filter(|cwd| cwd.join(".toolgate/policies").is_dir());
    if let Some(cwd) = cwd {
        // A project whose files cannot be read stays untrusted; its hook run shows that.
        let _ = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .arg("trust")
            .arg(&cwd)
            .env("TOOLGATE_CONFIG_DIR", config())
            .output();
    }
    run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(args)
            .arg("hook")
            .arg(agent)
            .args(hook_args)
            .current_dir(std::env::temp_dir())
            .env("TOOLGATE_CONFIG_DIR", config())
            .env("NO_COLOR", "1")
            .env("COLUMNS", "100")
            .env_remove("TOOLGATE_LOG")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("GEMINI_PROJECT_DIR")
            .env_remove("QWEN_PROJECT_DIR")
            .env_remove("CDPATH")
            .envs(env.iter().copied()),
        stdin,
    )
}

/// The enforced layer with the `PreToolUse` rewrite and `PostToolUse` context hooks.
pub fn hooks_layer() -> String {
    fixtures().join("hooks.yaml").display().to_string()
}
