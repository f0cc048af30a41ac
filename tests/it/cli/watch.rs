//! `toolgate watch`, the real binary: the initial check, then one record per save — as JSON
//! lines, and as the human report (snapshotted, with the scratch folder's path normalised).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::Value;

const WAIT: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/reload/diff")
            .join(name),
    )
    .unwrap()
}

fn save_by_rename(path: &Path, text: &str) {
    let tmp = path.with_extension("yaml.saving");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

struct Watch {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
    dir: tempfile::TempDir,
    file: PathBuf,
}

impl Watch {
    fn start(format: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("policy.yaml");
        std::fs::write(&file, fixture("v1.yaml")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["--no-builtin", "--color", "never", "-p"])
            .arg(dir.path())
            .args(["watch", "--format", format])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let lines = crate::support::lines::lines(stdout);
        Self {
            child,
            lines,
            seen: Vec::new(),
            dir,
            file,
        }
    }

    /// Reads lines up to and including the first that satisfies `last`.
    fn until(&mut self, what: &str, last: impl Fn(&str) -> bool) -> String {
        loop {
            match self.lines.recv_timeout(WAIT) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if last(&line) {
                        return line;
                    }
                }
                Err(_) => panic!("no {what}; output so far:\n{}", self.seen.join("\n")),
            }
        }
    }

    fn record(&mut self) -> Value {
        let line = self.until("JSON record", |_| true);
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Interrupts it like Ctrl-C; returns the exit code.
    fn interrupt(&mut self) -> Option<i32> {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    self.seen.push(line);
                }
                return status.code();
            }
            assert!(std::time::Instant::now() < deadline, "watch did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn jsonl_prints_the_initial_record_then_one_per_save() {
    let mut watch = Watch::start("jsonl");
    let initial = watch.record();
    assert_eq!(initial["type"], "PolicyReloaded", "{initial}");
    assert_eq!(initial["generation"], 1);
    // The engine defaults, the review table and the watched file.
    assert_eq!(initial["files"].as_array().unwrap().len(), 3, "{initial}");

    save_by_rename(&watch.file, &fixture("v2.yaml"));
    let second = watch.record();
    assert_eq!(second["type"], "PolicyReloaded", "{second}");
    assert_eq!(second["generation"], 2);
    let changes = second["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 7, "{second}");
    assert!(changes.iter().any(|c| c["kind"] == "changed"
        && c["name"] == "Read"
        && c["field"] == "timeout.max"
        && c["before"] == "1m"
        && c["after"] == "5m"));

    save_by_rename(&watch.file, &fixture("invalid.yaml"));
    let failed = watch.record();
    assert_eq!(failed["type"], "PolicyReloadFailed", "{failed}");
    assert_eq!(
        failed["generation"], 2,
        "the generation that stays in force"
    );
    let diagnostic = &failed["diagnostics"][0];
    assert!(
        diagnostic["file"]
            .as_str()
            .unwrap()
            .ends_with("policy.yaml")
    );
    assert_eq!(diagnostic["line"], 10);
    assert_eq!(diagnostic["column"], 15);
    assert_eq!(diagnostic["severity"], "error");

    // Saved whole (a write in place may be seen half done on a busy machine, and then
    // reported as the save it is; the reload tests cover those).
    save_by_rename(&watch.file, &fixture("v1.yaml"));
    let back = watch.record();
    assert_eq!(back["type"], "PolicyReloaded", "{back}");
    assert_eq!(back["generation"], 3);

    assert_eq!(watch.interrupt(), Some(0));
    // No other line came: one record per save.
    assert_eq!(watch.seen.len(), 4, "{:#?}", watch.seen);
}

#[test]
fn human_output_shows_the_change_list_and_rejected_saves() {
    let mut watch = Watch::start("human");
    watch.until("the watching line", |l| l.starts_with("watching "));
    save_by_rename(&watch.file, &fixture("v2.yaml"));
    watch.until("generation 2", |l| l.starts_with("generation 2 "));
    save_by_rename(&watch.file, &fixture("invalid.yaml"));
    watch.until("the rejection", |l| l.starts_with("rejected:"));
    save_by_rename(&watch.file, &fixture("warning.yaml"));
    watch.until("generation 3", |l| l.starts_with("generation 3 "));
    watch.until("the warning", |l| l.contains("1 warning"));
    assert_eq!(watch.interrupt(), Some(0));
    let dir = watch.dir.path().display().to_string();
    let transcript = watch.seen.join("\n").replace(&dir, "[DIR]");
    insta::assert_snapshot!("watch_human", transcript);
}

#[test]
fn a_missing_root_is_an_error_not_a_watch_of_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nonexistent");
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["--no-builtin", "--color", "never", "-p"])
        .arg(&missing)
        .args(["watch", "--format", "jsonl"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(output.stdout.is_empty());
    assert!(
        stderr.contains(&format!(
            "error: policy root `{}` does not exist",
            missing.display()
        )),
        "{stderr}"
    );
}
