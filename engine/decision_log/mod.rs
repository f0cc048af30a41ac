//! The decision log: one JSON line per permission decision, appended to a file that several
//! processes may write at once (every `toolgate hook` run is its own process).
//!
//! ```text
//! decision (agent call → toolgate calls → Permission) ─ DecisionRecord::new ─→ redact input
//!          ─ DecisionLog::append ─→ one write(2) of one line with O_APPEND (rotated by size)
//! ```
//!
//! The record ([`DecisionRecord`]) is a stable format: its JSON Schema is
//! `toolgate schema decision-log`, and review tooling replays logged calls against a changed
//! policy. Fields are only ever added; `version` changes if one changes meaning.
//!
//! Concurrent writers never interleave a line: each record is serialised first, then written
//! with a single `write` on a file opened with `O_APPEND`, which the kernel appends as a
//! whole for a regular file. Records are bounded (`max_record`): an input that would make a
//! record larger is logged as its size and digest. Rotation renames the file to `<path>.1`
//! when an append would pass `max_size`; two processes rotating at once may each rename
//! once, so the older of two rotated files can be lost — the log is a record, not a ledger.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::model::Decision;
use crate::model::resolved::ResolvedEngine;
use crate::policy::decide::{Permission, Reason};
use crate::snapshot::Snapshot;

/// The `engine.decision_log` settings: where the log goes, its rotation size, record bound
/// and masks (what [`DecisionLog::new`] takes).
pub use crate::model::engine_config::DecisionLogConfig;
pub use crate::model::units::Size;

pub use crate::model::decision_log::{
    DecidedBy, DecisionRecord, LoggedDecision, MASK, RECORD_VERSION, StagedRecord,
};

/// Who decided a permission, and the reason that decided it.
pub fn decided_by(permission: &Permission) -> (DecidedBy, Option<&Reason>) {
    let deciding = deciding_reason(permission);
    let by = match deciding {
        Some(Reason::Rule { .. }) => DecidedBy::Rule,
        // An untrusted project's notice never decides; it only annotates a decision.
        Some(Reason::Default { .. } | Reason::Untrusted { .. }) | None => DecidedBy::Default,
        Some(Reason::Analysis { .. }) => DecidedBy::Analysis,
        Some(Reason::Hook { .. }) => DecidedBy::Hook,
        Some(Reason::AlwaysAsk) => DecidedBy::AlwaysAsk,
        Some(Reason::Approval { by, .. }) => match by.as_str() {
            "expiry" => DecidedBy::Expiry,
            other if other.starts_with("hook:") => DecidedBy::Hook,
            "no_client" => DecidedBy::Default,
            _ => DecidedBy::Person,
        },
    };
    (by, deciding)
}

/// The reason that decided a permission: the last approval if there was one, else the first
/// reason whose decision is the permission's.
pub fn deciding_reason(permission: &Permission) -> Option<&Reason> {
    if let Some(approval @ Reason::Approval { .. }) = permission.reasons.last() {
        return Some(approval);
    }
    permission
        .reasons
        .iter()
        .find(|reason| reason_decision(reason) == Some(permission.decision))
        .or_else(|| permission.reasons.first())
}

/// The decision a reason stands for (`always_ask`: ask).
pub fn reason_decision(reason: &Reason) -> Option<Decision> {
    match reason {
        Reason::Rule { decision, .. }
        | Reason::Default { decision, .. }
        | Reason::Analysis { decision, .. }
        | Reason::Hook { decision, .. }
        | Reason::Approval { decision, .. } => Some(*decision),
        Reason::AlwaysAsk => Some(Decision::Ask),
        Reason::Untrusted { .. } => None,
    }
}

/// `file:line` of a `file:line:column` location.
pub fn file_and_line(location: &str) -> &str {
    match location.rsplit_once(':') {
        Some((rest, column))
            if column.bytes().all(|b| b.is_ascii_digit()) && rest.contains(':') =>
        {
            rest
        }
        _ => location,
    }
}

impl DecisionRecord {
    /// A record stamped now with a fresh id; the caller fills in the rest.
    pub fn new(
        tool: impl Into<String>,
        input: Value,
        decision: LoggedDecision,
        by: DecidedBy,
    ) -> Self {
        Self {
            version: RECORD_VERSION,
            id: uuid::Uuid::new_v4().to_string(),
            time: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            agent: None,
            session_id: None,
            event: None,
            tool: tool.into(),
            toolgate_tools: Vec::new(),
            input,
            decision,
            decided_by: by,
            rule: None,
            location: None,
            reason: None,
            generation: 0,
            policy_hash: None,
            elapsed_us: 0,
            staged: Vec::new(),
        }
    }

    /// Sets the rule (and its `file:line`) behind a permission, and who decided.
    pub fn with_permission(mut self, permission: &Permission) -> Self {
        let (by, reason) = decided_by(permission);
        self.decided_by = by;
        if let Some(Reason::Rule { name, location, .. }) = reason {
            self.rule = Some(name.clone());
            self.location = location.as_deref().map(|l| file_and_line(l).to_owned());
        }
        self.staged.extend(permission.staged.iter().map(|staged| {
            StagedRecord {
                rule: staged.rule.clone(),
                enforcement: staged.enforcement,
                would: staged.decision.into(),
                location: staged
                    .location
                    .as_deref()
                    .map(|l| file_and_line(l).to_owned()),
            }
        }));
        self
    }

    /// Sets the snapshot's generation and content hash.
    pub fn with_snapshot(mut self, snapshot: &Snapshot) -> Self {
        self.generation = snapshot.generation;
        self.policy_hash = Some(policy_hash(snapshot));
        self
    }
}

/// The reasons of a permission that decided it, as an agent and the decision log are told: `<rule> (<file>:<line>):
/// <reason>` for a rule, the default, an analysis, a hook's reason, each once, joined with
/// `; `. When a command line had several parts, the parts each reason decided are named
/// after it.
pub fn reason_text(permission: &Permission, tool: &str) -> String {
    let several_parts = permission
        .reasons
        .iter()
        .filter_map(Reason::part)
        .collect::<std::collections::HashSet<_>>()
        .len()
        > 1;
    // Each text once, in order, with the parts it was given for.
    let mut texts: Vec<(String, Vec<&str>)> = Vec::new();
    for reason in &permission.reasons {
        // An untrusted project's notice says how to trust it, whatever was decided.
        let notice = matches!(reason, Reason::Untrusted { .. });
        if !notice && reason_decision(reason) != Some(permission.decision) {
            continue;
        }
        let text = match reason {
            Reason::Rule {
                name,
                reason,
                location,
                ..
            } => {
                let place = location
                    .as_deref()
                    .map(|l| format!(" ({})", file_and_line(l)))
                    .unwrap_or_default();
                match reason {
                    Some(why) => format!("{name}{place}: {why}"),
                    None => format!("{name}{place}"),
                }
            }
            Reason::Default { decision, .. } => {
                format!("no rule matched; `{tool}` defaults to {decision}")
            }
            Reason::Analysis { reason, .. } => reason.clone(),
            Reason::Hook { name, reason, .. } => match reason {
                Some(why) => format!("hook `{name}`: {why}"),
                None => format!("hook `{name}`"),
            },
            Reason::AlwaysAsk => format!("`{tool}` always asks (permission.always_ask)"),
            Reason::Untrusted { reason, .. } => reason.clone(),
            Reason::Approval { by, reason, .. } => match reason {
                Some(why) => format!("approval by {by}: {why}"),
                None => format!("approval by {by}"),
            },
        };
        let index = match texts.iter().position(|(t, _)| *t == text) {
            Some(index) => index,
            None => {
                texts.push((text, Vec::new()));
                texts.len() - 1
            }
        };
        if several_parts
            && let Some(part) = reason.part()
            && !texts[index].1.contains(&part)
        {
            texts[index].1.push(part);
        }
    }
    if texts.is_empty() {
        return format!("`{tool}`: {}", permission.decision);
    }
    texts
        .into_iter()
        .map(|(text, parts)| {
            if parts.is_empty() {
                text
            } else {
                let parts: Vec<String> = parts.iter().map(|p| format!("`{p}`")).collect();
                format!("{text} (in {})", parts.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// SHA-256 (hex) of a snapshot's files: each file's path and text, in load order.
pub fn policy_hash(snapshot: &Snapshot) -> String {
    let mut hasher = Sha256::new();
    for file in &snapshot.sources.files {
        let path = file.source.path();
        let text = file.source.text();
        hasher.update((path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update((text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// The decision log of one snapshot, with the snapshot's content hash (computed once).
#[derive(Debug)]
pub struct SnapshotLog {
    /// The log.
    pub log: DecisionLog,
    /// [`policy_hash`] of the snapshot.
    pub policy_hash: String,
}

impl SnapshotLog {
    /// The log of `snapshot`: `log` when given, else the one its engine settings name.
    pub fn for_snapshot(
        snapshot: &Snapshot,
        log: Option<&DecisionLog>,
    ) -> Result<Option<SnapshotLog>, DecisionLogError> {
        let log = match log {
            Some(log) => log.clone(),
            None => {
                match DecisionLog::from_settings(&snapshot.engine, &snapshot.workspace_root, None)?
                {
                    Some(log) => log,
                    None => return Ok(None),
                }
            }
        };
        Ok(Some(SnapshotLog {
            log,
            policy_hash: policy_hash(snapshot),
        }))
    }

    /// The record of a call the engine ran (`event` `run`): the call as given, its
    /// permission, the session, and how long the call took.
    pub fn record(
        &self,
        snapshot: &Snapshot,
        session: &str,
        tool: &str,
        input: &Value,
        permission: &Permission,
        elapsed_ms: u64,
    ) -> DecisionRecord {
        let mut record = DecisionRecord::new(
            tool,
            input.clone(),
            permission.decision.into(),
            DecidedBy::Default,
        )
        .with_permission(permission);
        record.event = Some("run".to_owned());
        record.reason = Some(reason_text(permission, tool));
        record.session_id = Some(session.to_owned());
        record.generation = snapshot.generation;
        record.policy_hash = Some(self.policy_hash.clone());
        record.elapsed_us = elapsed_ms.saturating_mul(1000);
        if let Some(found) = snapshot.lookup(tool) {
            record.toolgate_tools = vec![found.name_for_call(tool).to_owned()];
        }
        record
    }
}

/// Why the decision log cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DecisionLogError {
    /// A secret pattern is not a valid regular expression.
    #[error("decision log secret pattern `{pattern}` is invalid: {error}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// Why.
        error: String,
    },
    /// The record could not be written.
    #[error("cannot write the decision log `{path}`: {error}")]
    Io {
        /// The log file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
}

/// What is masked in a logged input.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// Field names masked at any depth.
    names: Vec<String>,
    /// JSON pointers masked from the input's root.
    pointers: Vec<String>,
    /// Secret-looking text inside strings.
    patterns: Vec<Regex>,
}

impl Redactor {
    /// From the settings' `redact_fields` and `secret_patterns`.
    pub fn new(config: &DecisionLogConfig) -> Result<Self, DecisionLogError> {
        let mut redactor = Redactor::default();
        for field in config.redact_fields.iter().flatten() {
            if field.starts_with('/') {
                redactor.pointers.push(field.clone());
            } else {
                redactor.names.push(field.clone());
            }
        }
        for pattern in config.secret_patterns.iter().flatten() {
            let regex = Regex::new(pattern).map_err(|error| DecisionLogError::Pattern {
                pattern: pattern.clone(),
                error: error.to_string(),
            })?;
            redactor.patterns.push(regex);
        }
        Ok(redactor)
    }

    /// The input with the named fields masked and secret-looking text replaced.
    pub fn redact(&self, input: &Value) -> Value {
        let mut value = input.clone();
        for pointer in &self.pointers {
            if let Some(found) = value.pointer_mut(pointer) {
                *found = Value::from(MASK);
            }
        }
        self.walk(&mut value);
        value
    }

    fn walk(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    if self.names.iter().any(|name| name == key) {
                        *item = Value::from(MASK);
                    } else {
                        self.walk(item);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.walk(item)),
            Value::String(text) => {
                for pattern in &self.patterns {
                    if pattern.is_match(text) {
                        *text = mask(pattern, text);
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// `text` with every match of `pattern` masked: only its `secret` group when the pattern
/// names one (`token=(?P<secret>…)` keeps the word `token`), else the whole match.
fn mask(pattern: &Regex, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for captures in pattern.captures_iter(text) {
        let Some(span) = captures.name("secret").or_else(|| captures.get(0)) else {
            continue;
        };
        out.push_str(&text[last..span.start()]);
        out.push_str(MASK);
        last = span.end();
    }
    out.push_str(&text[last..]);
    out
}

/// An append-only JSON Lines decision log.
#[derive(Clone, Debug)]
pub struct DecisionLog {
    path: PathBuf,
    max_size: u64,
    max_record: u64,
    redactor: Redactor,
}

/// The default record bound when the settings give none.
const DEFAULT_MAX_RECORD: u64 = 64 * 1024;

impl DecisionLog {
    /// A log at `path` with the settings' rotation size, record bound and masks.
    pub fn new(
        path: impl Into<PathBuf>,
        config: &DecisionLogConfig,
    ) -> Result<Self, DecisionLogError> {
        Ok(Self {
            path: path.into(),
            max_size: config.max_size.map_or(u64::MAX, |s| s.0),
            max_record: config
                .max_record
                .map_or(DEFAULT_MAX_RECORD, |s| s.0.max(1024)),
            redactor: Redactor::new(config)?,
        })
    }

    /// The log the engine settings describe (`decision_log.path`, relative to the
    /// workspace root, `~` expanded), or at `path` when given; `None` when neither names one.
    pub(crate) fn from_settings(
        engine: &ResolvedEngine,
        workspace_root: &Path,
        path: Option<&Path>,
    ) -> Result<Option<Self>, DecisionLogError> {
        let config = &engine.decision_log;
        let path = match (path, config.path.as_deref()) {
            (Some(path), _) => path.to_owned(),
            (None, Some(configured)) => resolve_path(configured, workspace_root),
            (None, None) => return Ok(None),
        };
        Self::new(path, config).map(Some)
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The masks this log applies.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Masks the record's input, bounds its size, and appends it as one line with one write.
    pub fn append(&self, record: &DecisionRecord) -> Result<(), DecisionLogError> {
        let mut record = record.clone();
        record.input = self.redactor.redact(&record.input);
        let line = self.line(&mut record);
        self.write(line.as_bytes())
            .map_err(|error| DecisionLogError::Io {
                path: self.path.display().to_string(),
                error,
            })
    }

    /// The record as one line (with its `\n`), its input replaced by size and digest when the
    /// line would pass `max_record`.
    fn line(&self, record: &mut DecisionRecord) -> String {
        let mut line = serde_json::to_string(&*record).unwrap_or_default();
        if line.len() as u64 + 1 > self.max_record {
            let input = serde_json::to_string(&record.input).unwrap_or_default();
            record.input = serde_json::json!({
                "omitted_bytes": input.len(),
                "sha256": hex(&Sha256::digest(input.as_bytes())),
            });
            record.reason = record.reason.take().map(|reason| {
                let cut = crate::diagnostics::source::floor_char_boundary(&reason, 1024);
                reason[..cut].to_owned()
            });
            line = serde_json::to_string(&*record).unwrap_or_default();
        }
        line.push('\n');
        line
    }

    fn write(&self, line: &[u8]) -> std::io::Result<()> {
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        if let Ok(meta) = std::fs::metadata(&self.path)
            && meta.len() > 0
            && meta.len().saturating_add(line.len() as u64) > self.max_size
        {
            let mut rotated = self.path.clone().into_os_string();
            rotated.push(".1");
            match std::fs::rename(&self.path, &rotated) {
                Ok(()) => {}
                // Another process rotated it first.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        let mut options = OpenOptions::new();
        options.append(true).create(true).read(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            // A symlink planted at the log's path must not redirect the appends; a FIFO there
            // must not block the open (it is refused below).
            options.mode(0o600).custom_flags(
                (nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits(),
            );
        }
        let mut file = options.open(&self.path)?;
        if !file.metadata()?.is_file() {
            // A FIFO or a device: reading or writing it may block, or feed another process.
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the path is not a regular file (a FIFO, a device or a folder); a decision log is a regular file",
            ));
        }
        refuse_foreign(&mut file)?;
        // INVARIANT: one `write` per record: with O_APPEND the kernel writes a regular file's
        // bytes of one call at the end as a whole, so lines of concurrent writers never mix.
        let written = file.write(line)?;
        if written != line.len() {
            // Only a full disk or a signal cuts a regular file's write short; finish the line.
            file.write_all(&line[written..])?;
        }
        Ok(())
    }
}

/// Refuses to append to a file that is not a decision log: a path set by mistake (or by a
/// hostile policy) must not turn a shell profile or a source file into a log.
fn refuse_foreign(file: &mut std::fs::File) -> std::io::Result<()> {
    use std::io::Read as _;
    let mut first = [0_u8; 1];
    let read = (&*file).read(&mut first)?;
    if read == 1 && first[0] != b'{' {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the file exists and is not a decision log (its first line is not a JSON record)",
        ));
    }
    Ok(())
}

fn resolve_path(configured: &str, workspace_root: &Path) -> PathBuf {
    if let Some(rest) = configured.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    workspace_root.join(configured)
}

/// The JSON Schema of a record.
pub fn schema() -> Value {
    crate::model::schema::decision_log()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config() -> DecisionLogConfig {
        DecisionLogConfig {
            redact_fields: Some(vec!["password".into(), "/headers/x-key".into()]),
            secret_patterns: Some(vec![
                "sk-[A-Za-z0-9]{8,}".into(),
                "(?i)token=(?P<secret>\\S+)".into(),
            ]),
            ..DecisionLogConfig::default()
        }
    }

    #[test]
    fn named_fields_pointers_and_secret_text_are_masked() {
        let redactor = Redactor::new(&config()).unwrap();
        let input = json!({
            "command": "curl -H 'Authorization: sk-abcdefgh1234' https://x?token=abc",
            "nested": {"password": "hunter2", "keep": "plain"},
            "headers": {"x-key": "v", "other": "w"},
        });
        assert_eq!(
            redactor.redact(&input),
            json!({
                "command": "curl -H 'Authorization: [redacted]' https://x?token=[redacted]",
                "nested": {"password": "[redacted]", "keep": "plain"},
                "headers": {"x-key": "[redacted]", "other": "w"},
            })
        );
    }

    #[test]
    fn staged_rules_that_would_change_the_decision_are_recorded() {
        let permission = Permission {
            decision: Decision::Allow,
            reasons: vec![Reason::Default {
                decision: Decision::Allow,
                part: None,
            }],
            staged: vec![crate::policy::decide::Staged {
                rule: "no-tokens".into(),
                enforcement: crate::model::rule::Enforcement::Audit,
                decision: Decision::Deny,
                reason: Some("tokens".into()),
                location: Some("policies/p.yaml:17:5".into()),
            }],
        };
        let record =
            DecisionRecord::new("Echo", json!({}), LoggedDecision::Allow, DecidedBy::Default)
                .with_permission(&permission);
        let value = serde_json::to_value(&record).unwrap();
        assert_eq!(
            value["staged"],
            json!([{"rule": "no-tokens", "enforcement": "audit", "would": "deny", "location": "policies/p.yaml:17"}])
        );
        // The record still fits the published schema.
        let schema: Value =
            serde_json::from_str(include_str!("../../schemas/decision-log.schema.json")).unwrap();
        assert!(jsonschema::is_valid(&schema, &value));
    }

    #[test]
    fn an_invalid_pattern_is_an_error_naming_it() {
        let config = DecisionLogConfig {
            secret_patterns: Some(vec!["(".into()]),
            ..DecisionLogConfig::default()
        };
        let error = Redactor::new(&config).unwrap_err().to_string();
        assert!(error.contains("`(`"), "{error}");
    }

    #[test]
    fn a_large_input_is_logged_as_size_and_digest_and_the_file_rotates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log/decisions.jsonl");
        let config = DecisionLogConfig {
            max_size: Some(crate::model::Size(3000)),
            max_record: Some(crate::model::Size(2048)),
            ..DecisionLogConfig::default()
        };
        let log = DecisionLog::new(&path, &config).unwrap();
        let big = DecisionRecord::new(
            "Write",
            json!({"content": "x".repeat(5000)}),
            LoggedDecision::Ask,
            DecidedBy::Default,
        );
        log.append(&big).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let logged: DecisionRecord = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(logged.input["omitted_bytes"], json!(5014));
        assert!(text.len() <= 2048);
        for _ in 0..10 {
            log.append(&big).unwrap();
        }
        let current = std::fs::metadata(&path).unwrap().len();
        assert!(current <= 3000, "{current}");
        assert!(dir.path().join("log/decisions.jsonl.1").exists());
    }

    #[test]
    #[cfg(unix)]
    fn a_file_that_is_not_a_log_is_never_appended_to() {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join(".bashrc");
        std::fs::write(&profile, "export PATH=$HOME/bin:$PATH\n").unwrap();
        let log = DecisionLog::new(&profile, &DecisionLogConfig::default()).unwrap();
        let record = DecisionRecord::new(
            "Bash",
            json!({"command": "$(touch x)"}),
            LoggedDecision::Allow,
            DecidedBy::Rule,
        );
        let error = log.append(&record).unwrap_err().to_string();
        assert!(error.contains("not a decision log"), "{error}");
        assert_eq!(
            std::fs::read_to_string(&profile).unwrap(),
            "export PATH=$HOME/bin:$PATH\n"
        );
        // Nor through a symlink.
        let link = dir.path().join("decisions.jsonl");
        std::os::unix::fs::symlink(dir.path().join("elsewhere.jsonl"), &link).unwrap();
        let log = DecisionLog::new(&link, &DecisionLogConfig::default()).unwrap();
        assert!(log.append(&record).is_err());
        assert!(!dir.path().join("elsewhere.jsonl").exists());
    }

    #[test]
    fn file_and_line_drops_only_the_column() {
        assert_eq!(
            file_and_line("policies/rules.yaml:12:5"),
            "policies/rules.yaml:12"
        );
        assert_eq!(file_and_line("rules.yaml:12"), "rules.yaml:12");
    }
}
