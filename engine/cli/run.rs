//! `toolgate run BATCH`: executes a batch under the policies and reports every event.
//!
//! `--format jsonl` prints one event per line (`{"type": …}`), and last a `BatchFinalized`
//! line with one result per call in batch order (`call_id`, `tool`, `status`,
//! `model_content`, `metadata`). `--format human` is a live view: calls as they start and
//! end, group by group, a spinner line while calls run (on a terminal), and a summary that
//! says per call how much was cut and where the full output lives.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalAnswer, ApprovalBroker, FixedAnswer};
use crate::diagnostics::render::{HumanOptions, render_human};
use crate::diagnostics::{Diagnostic, escape_controls};
use crate::events::{CallStatus, ChannelSink, Event, EventKind};
use crate::executor::{BatchOutcome, Engine, Turn, artifact_store_for};
use crate::model::CallId;
use crate::report::finalized_json;
use crate::snapshot::load;

use super::{Exit, GlobalOptions};

/// Who answers approval requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approve {
    /// Every request is denied (the default: nothing runs without a decision).
    Deny,
    /// Every request is allowed.
    Allow,
    /// Ask on the terminal, showing the exact input.
    Prompt,
}

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunFormat {
    /// The live view.
    Human,
    /// One JSON event per line.
    Jsonl,
}

/// Options of `run`.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// Approvals.
    pub approve: Approve,
    /// Output format.
    pub format: RunFormat,
    /// ANSI colours in human output.
    pub color: bool,
    /// Redraw a spinner line (only on a terminal).
    pub live: bool,
    /// Exit 1 when any call did not succeed.
    pub fail_on_error: bool,
}

/// Runs a batch file, writing the report to `out` and problems to `err`.
pub async fn run(
    global: &GlobalOptions,
    batch_path: &Path,
    options: RunOptions,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
) -> Exit {
    let loaded = load(&global.load_options(), 1);
    let Some(snapshot) = loaded.snapshot else {
        let _ = err.write_all(render_diagnostics(&loaded.diagnostics, options.color).as_bytes());
        return Exit::Problems;
    };
    let (batch, modes) = match super::batch_file::load_batch(batch_path, &snapshot) {
        Ok(found) => found,
        Err(diagnostics) => {
            let _ = err.write_all(render_diagnostics(&diagnostics, options.color).as_bytes());
            return Exit::Usage;
        }
    };
    let store = Arc::new(artifact_store_for(&snapshot));
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<Event>();
    let approver: Arc<dyn ApprovalBroker> = match options.approve {
        Approve::Deny => Arc::new(FixedAnswer(ApprovalAnswer::Deny { reason: None })),
        Approve::Allow => Arc::new(FixedAnswer(ApprovalAnswer::Allow { reason: None })),
        Approve::Prompt => Arc::new(super::prompt::TerminalApprover::new()),
    };
    let engine = Engine::builder(Arc::clone(&snapshot))
        .sink(Arc::new(ChannelSink(sender)))
        .artifact_store(store.clone())
        .build();
    // SIGINT, SIGTERM and SIGHUP all cancel the batch: every running call ends `cancelled`
    // (its processes killed) and the final result is still written.
    let mut termination = match super::signals::Termination::listen() {
        Ok(termination) => termination,
        Err(error) => {
            let _ = writeln!(err, "error: cannot listen for signals: {error}");
            return Exit::Usage;
        }
    };
    let cancel = CancellationToken::new();
    let interrupt = cancel.clone();
    let unreported = cancel.clone();
    let mut out = Reported { out, error: None };
    let out = &mut out;
    let received = Arc::new(AtomicI32::new(0));
    let signalled = Arc::clone(&received);
    let listener = tokio::spawn(async move {
        let signal = termination.recv().await;
        signalled.store(signal, Ordering::SeqCst);
        interrupt.cancel();
    });
    let turn = Turn {
        modes,
        cancel,
        approver: Some(approver),
    };
    let mut view = HumanView::new(options, snapshot.engine.budget_unit);
    let mut ticker = tokio::time::interval(Duration::from_millis(120));
    let outcome = {
        let execution = engine.execute_batch(batch, &turn);
        tokio::pin!(execution);
        loop {
            tokio::select! {
                biased;
                Some(event) = receiver.recv() => {
                    print_event(&mut view, options, &event, out);
                    if out.error.is_some() {
                        // Nobody sees the report: no more side effects go unreported.
                        unreported.cancel();
                    }
                }
                outcome = &mut execution => break outcome,
                _ = ticker.tick(), if options.live && options.format == RunFormat::Human => view.spin(out),
            }
        }
    };
    listener.abort();
    // The MCP servers the batch started end with it.
    engine.shutdown().await;
    drop(engine);
    while let Some(event) = receiver.recv().await {
        print_event(&mut view, options, &event, out);
    }
    view.clear_status(out);
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            let _ = writeln!(err, "error: {error}");
            return Exit::Usage;
        }
    };
    match options.format {
        RunFormat::Jsonl => {
            let _ = writeln!(out, "{}", finalized_json(&outcome));
        }
        RunFormat::Human => {
            let _ = out.write_all(summary(&outcome).as_bytes());
        }
    }
    let _ = out.flush();
    let _ = store.close().await;
    if let Some(error) = &out.error {
        if error.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = writeln!(
                err,
                "error: the report could not be written to standard output ({error}): the calls not started were cancelled"
            );
        }
        return Exit::Usage;
    }
    let signal = received.load(Ordering::SeqCst);
    if signal != 0 {
        return Exit::Signalled(signal);
    }
    if options.fail_on_error && outcome.results.iter().any(|r| r.status != CallStatus::Ok) {
        Exit::Problems
    } else {
        Exit::Success
    }
}

/// Standard output that keeps its first write error (and writes nothing after it): the
/// report is then lost, so `run` cancels the batch and fails.
struct Reported<'o> {
    out: &'o mut (dyn Write + Send),
    error: Option<std::io::Error>,
}

impl Write for Reported<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.error.is_none()
            && let Err(error) = self.out.write_all(buf)
        {
            self.error = Some(error);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.error.is_none()
            && let Err(error) = self.out.flush()
        {
            self.error = Some(error);
        }
        Ok(())
    }
}

fn render_diagnostics(diagnostics: &[Diagnostic], color: bool) -> String {
    render_human(
        diagnostics,
        &HumanOptions {
            color,
            ..HumanOptions::default()
        },
    )
}

fn print_event(
    view: &mut HumanView,
    options: RunOptions,
    event: &Event,
    out: &mut (dyn Write + Send),
) {
    match options.format {
        RunFormat::Jsonl => {
            if let Ok(line) = serde_json::to_string(event) {
                let _ = writeln!(out, "{line}");
            }
        }
        RunFormat::Human => view.event(event, out),
    }
}

/// The live view's state.
struct HumanView {
    options: RunOptions,
    unit: crate::model::BudgetUnit,
    group_of: HashMap<CallId, usize>,
    tool_of: HashMap<CallId, String>,
    group_sizes: Vec<usize>,
    printed_group: Option<usize>,
    running: Vec<(CallId, Instant)>,
    received: HashMap<CallId, usize>,
    frame: usize,
    status_shown: bool,
    id_width: usize,
    tool_width: usize,
}

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

impl HumanView {
    fn new(options: RunOptions, unit: crate::model::BudgetUnit) -> Self {
        Self {
            options,
            unit,
            group_of: HashMap::new(),
            tool_of: HashMap::new(),
            group_sizes: Vec::new(),
            printed_group: None,
            running: Vec::new(),
            received: HashMap::new(),
            frame: 0,
            status_shown: false,
            id_width: 8,
            tool_width: 8,
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.options.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn clear_status(&mut self, out: &mut (dyn Write + Send)) {
        if self.status_shown {
            let _ = write!(out, "\r\x1b[2K");
            self.status_shown = false;
        }
    }

    /// Writes a line; the control characters in it (from tool names, call ids, messages)
    /// are escaped, so a call cannot colour, hide or rewrite what is shown.
    fn line(&mut self, out: &mut (dyn Write + Send), text: &str) {
        self.clear_status(out);
        let _ = writeln!(out, "{}", escape_controls(text));
    }

    /// Like [`Self::line`], in the colour `code`.
    fn painted_line(&mut self, out: &mut (dyn Write + Send), code: &str, text: &str) {
        let painted = self.paint(code, &escape_controls(text));
        self.clear_status(out);
        let _ = writeln!(out, "{painted}");
    }

    fn header(&mut self, out: &mut (dyn Write + Send), call: &CallId) {
        let Some(&group) = self.group_of.get(call) else {
            return;
        };
        if self.printed_group.is_some_and(|printed| printed >= group) {
            return;
        }
        self.printed_group = Some(group);
        let size = self.group_sizes.get(group).copied().unwrap_or(1);
        let kind = if size > 1 {
            format!("{size} calls, concurrent")
        } else {
            "alone".to_owned()
        };
        let title = format!("group {}/{} ({kind})", group + 1, self.group_sizes.len());
        self.painted_line(out, "1", &title);
    }

    fn tool(&self, call: &CallId) -> String {
        self.tool_of.get(call).cloned().unwrap_or_default()
    }

    fn event(&mut self, event: &Event, out: &mut (dyn Write + Send)) {
        let call = event.call_id.clone().unwrap_or_else(|| CallId::new(""));
        match &event.kind {
            EventKind::BatchScheduled(scheduled) => {
                self.group_sizes = scheduled.groups.iter().map(Vec::len).collect();
                self.id_width = scheduled
                    .groups
                    .iter()
                    .flatten()
                    .map(|id| id.as_str().chars().count())
                    .max()
                    .unwrap_or(8);
                for (index, group) in scheduled.groups.iter().enumerate() {
                    for id in group {
                        self.group_of.insert(id.clone(), index);
                    }
                }
                let calls: usize = self.group_sizes.iter().sum();
                let modes = if scheduled.modes.is_empty() {
                    String::new()
                } else {
                    format!(", modes: {}", scheduled.modes.join(", "))
                };
                let text = format!(
                    "batch {} (generation {}): {} in {}{modes}",
                    event.batch_id.as_ref().map_or("", |b| b.as_str()),
                    event.generation,
                    super::count(calls, "call", "calls"),
                    super::count(self.group_sizes.len(), "group", "groups")
                );
                self.line(out, &text);
            }
            EventKind::ToolCallScheduled(scheduled) => {
                self.tool_width = self.tool_width.max(scheduled.tool.chars().count());
                self.tool_of.insert(call, scheduled.tool.clone());
            }
            EventKind::PermissionRequested(request) => {
                self.header(out, &call);
                let (w, t) = (self.id_width, self.tool_width);
                let text = format!(
                    "  ? {call:<w$} {:<t$} needs approval ({})",
                    request.tool,
                    request.reasons.join(", ")
                );
                self.painted_line(out, "33", &text);
            }
            EventKind::PermissionResolved(resolved) => {
                let (w, t) = (self.id_width, self.tool_width);
                let text = format!(
                    "    {call:<w$} {:<t$} approval: {} by {}",
                    self.tool(&call),
                    resolved.decision,
                    resolved.source
                );
                self.line(out, &text);
            }
            EventKind::PermissionDenied(_)
            | EventKind::ToolCallProgress(_)
            | EventKind::PolicyReloaded(_) => {
                if let EventKind::ToolCallProgress(progress) = &event.kind {
                    *self.received.entry(call).or_default() += progress.text.len();
                }
            }
            EventKind::ToolCallStarted(started) => {
                self.header(out, &call);
                let timeout = started
                    .timeout_ms
                    .map_or_else(|| "no timeout".to_owned(), |ms| format!("timeout {ms}ms"));
                let (w, t) = (self.id_width, self.tool_width);
                let text = format!("  ▶ {call:<w$} {:<t$} started ({timeout})", started.tool);
                self.line(out, &text);
                self.running.push((call, Instant::now()));
            }
            EventKind::ToolCallResult(result) => {
                self.header(out, &call);
                self.running.retain(|(id, _)| id != call);
                let cut = if result.truncated {
                    format!(", cut {} → {}", result.original_size, result.final_size)
                } else {
                    String::new()
                };
                let (w, t) = (self.id_width, self.tool_width);
                let text = format!(
                    "  ✓ {call:<w$} {:<t$} ok {}ms ({} {}{cut})",
                    result.tool, result.metrics.total_ms, result.final_size, self.unit
                );
                self.painted_line(out, "32", &text);
            }
            EventKind::ToolCallError(error) => {
                self.header(out, &call);
                self.running.retain(|(id, _)| id != call);
                let first_line = error.message.lines().next().unwrap_or_default();
                let shown: String = first_line.chars().take(110).collect();
                let (w, t) = (self.id_width, self.tool_width);
                let text = format!(
                    "  ✗ {call:<w$} {:<t$} {} {}ms: {shown}",
                    error.tool,
                    error.status.as_str(),
                    error.metrics.total_ms
                );
                let colour = if error.status == CallStatus::Cancelled {
                    "90"
                } else {
                    "31"
                };
                self.painted_line(out, colour, &text);
            }
            EventKind::HookFailed(failed) => {
                let text = format!(
                    "  ! hook `{}` ({}) failed: {}",
                    failed.hook, failed.event, failed.error
                );
                self.line(out, &text);
            }
            EventKind::StagedRuleMatched(staged) => {
                let text = format!(
                    "  ~ {call}: rule `{}` ({}) would make this call {} (it is {})",
                    staged.rule, staged.enforcement, staged.would, staged.decision
                );
                self.line(out, &text);
            }
            EventKind::ArtifactWriteFailed(failed) => {
                let text = format!(
                    "  ! {call}: full output not kept ({} {}): {}",
                    failed.size, self.unit, failed.error
                );
                self.line(out, &text);
            }
            EventKind::DecisionLogFailed(failed) => {
                // The error names the log and says why.
                let text = format!("  ! {}", failed.error);
                self.line(out, &text);
            }
            EventKind::ToolBatchComplete(_) | EventKind::PolicyReloadFailed(_) => {}
        }
    }

    fn spin(&mut self, out: &mut (dyn Write + Send)) {
        if self.running.is_empty() {
            self.clear_status(out);
            return;
        }
        self.frame = (self.frame + 1) % SPINNER.len();
        let calls: Vec<String> = self
            .running
            .iter()
            .map(|(id, since)| {
                let bytes = self.received.get(id).copied().unwrap_or(0);
                format!(
                    "{id} {:.1}s{}",
                    since.elapsed().as_secs_f64(),
                    if bytes > 0 {
                        format!(" {bytes}B")
                    } else {
                        String::new()
                    }
                )
            })
            .collect();
        let _ = write!(
            out,
            "\r\x1b[2K{} running: {}",
            SPINNER[self.frame],
            escape_controls(&calls.join(", "))
        );
        let _ = out.flush();
        self.status_shown = true;
    }
}

/// The tool of a result as the summary shows it: the canonical tool, as the live view shows
/// it, with the name the call used in parentheses when that was an alias.
fn summary_tool(result: &crate::pipeline::CallResult) -> String {
    match &result.canonical_tool {
        Some(canonical) if canonical.as_str() != result.tool => {
            format!("{} ({})", canonical.as_str(), result.tool)
        }
        Some(canonical) => canonical.as_str().to_owned(),
        None => result.tool.clone(),
    }
}

/// The closing summary: counts by status, then per call its status, size, what the budgets
/// cut and where the full output lives.
pub fn summary(outcome: &BatchOutcome) -> String {
    let order = [
        CallStatus::Ok,
        CallStatus::Error,
        CallStatus::Denied,
        CallStatus::TimedOut,
        CallStatus::Cancelled,
    ];
    let parts: Vec<String> = order
        .iter()
        .filter_map(|status| {
            let n = outcome
                .results
                .iter()
                .filter(|r| r.status == *status)
                .count();
            (n > 0).then(|| format!("{n} {}", status.as_str()))
        })
        .collect();
    let w = outcome
        .results
        .iter()
        .map(|r| r.call_id.as_str().chars().count())
        .max()
        .unwrap_or(8);
    let t = outcome
        .results
        .iter()
        .map(|r| summary_tool(r).chars().count())
        .max()
        .unwrap_or(8);
    let mut out = format!("\nsummary: {}\n", parts.join(", "));
    // What the calls named is escaped: a tool name held a whole fake approval prompt.
    if outcome.turn_stopped {
        out.push_str("the turn was stopped by a result; later groups were cancelled\n");
    }
    for result in &outcome.results {
        let unit = result.metadata.unit;
        let meta = &result.metadata;
        let mut line = format!(
            "  {:<w$} {:<t$} {:<9}",
            result.call_id.as_str(),
            summary_tool(result),
            result.status.as_str()
        );
        let cut = outcome
            .finalizer
            .iter()
            .find(|c| c.call_id == result.call_id && c.cut);
        if meta.truncated || cut.is_some() {
            line.push_str(&format!(
                " cut {} → {} {unit}",
                meta.original_size, meta.final_size
            ));
            if cut.is_some() {
                line.push_str(" (batch budget)");
            }
        } else {
            line.push_str(&format!(" {} {unit}", meta.final_size));
        }
        match &meta.persisted_files {
            Some(files) if !files.is_empty() => {
                let shown: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
                line.push_str(&format!("; full output: {}", shown.join(", ")));
            }
            Some(_) if meta.truncated => line.push_str("; full output not kept"),
            _ => {}
        }
        out.push_str(&escape_controls(&line));
        out.push('\n');
    }
    for feedback in &outcome.feedback {
        let feedback = escape_controls(feedback);
        out.push_str(&format!("reviewer feedback for the model: {feedback}\n"));
    }
    out
}
