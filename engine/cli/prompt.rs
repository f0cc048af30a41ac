//! The terminal approver of `toolgate run --approve prompt`: shows the exact input that will
//! run and the rules that asked, and reads the answer from the terminal. Requests are asked
//! one at a time even when calls run concurrently.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use crate::approval::{ApprovalAnswer, ApprovalBroker, ApprovalRequest};
use crate::diagnostics::escape_controls;
use crate::policy::decide::Reason;

/// Where prompts are written.
type Output = Arc<Mutex<Box<dyn Write + Send>>>;

/// Asks on stderr, reads answers from stdin.
///
/// Lines are read by a thread of their own and handed over through a channel, so a request
/// that is withdrawn (a `PermissionRequest` hook answered first, the call was cancelled)
/// stops waiting without consuming the line the user types next, and no read of the
/// terminal is left behind for the runtime to wait for when the program ends.
#[derive(Clone)]
pub struct TerminalApprover {
    // INVARIANT: held for the whole of one prompt, so prompts never interleave.
    lines: Arc<tokio::sync::Mutex<Option<UnboundedReceiver<String>>>>,
    out: Output,
}

impl Default for TerminalApprover {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalApprover {
    /// An approver on the process's stdin and stderr (stdin is read from the first request
    /// on).
    pub fn new() -> Self {
        Self {
            lines: Arc::new(tokio::sync::Mutex::new(None)),
            out: Arc::new(Mutex::new(Box::new(std::io::stderr()))),
        }
    }

    /// An approver reading answers from `lines` (one line each, as typed) and writing
    /// prompts to `out`.
    #[cfg(test)]
    pub fn with_io(lines: UnboundedReceiver<String>, out: impl Write + Send + 'static) -> Self {
        Self {
            lines: Arc::new(tokio::sync::Mutex::new(Some(lines))),
            out: Arc::new(Mutex::new(Box::new(out))),
        }
    }
}

/// Starts the thread that reads stdin line by line. A plain thread, not a blocking task: a
/// runtime waits for its blocking tasks when it shuts down, and a read of a terminal may
/// never return.
fn stdin_lines() -> UnboundedReceiver<String> {
    let (sender, receiver) = unbounded_channel();
    // If the thread cannot start, its closure (and the sender) is dropped: the channel is
    // closed and every request is denied as unanswered.
    let _ = std::thread::Builder::new()
        .name("toolgate-stdin".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut stdin = stdin.lock();
            loop {
                let mut line = String::new();
                match stdin.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if sender.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
    receiver
}

fn write(out: &Output, text: &str) {
    if let Ok(mut out) = out.lock() {
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

/// Tells the user when a prompt they may be looking at no longer needs an answer.
struct Pending {
    out: Output,
    call: String,
    answered: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.answered {
            write(
                &self.out,
                &format!(
                    "\n(the approval request for call {} was withdrawn)\n",
                    escape_controls(&self.call)
                ),
            );
        }
    }
}

/// The text shown for a request.
pub fn describe(request: &ApprovalRequest) -> String {
    let input = crate::diagnostics::escape_invisible(
        &serde_json::to_string_pretty(&request.input).unwrap_or_else(|_| request.input.to_string()),
    );
    // What the call named is escaped: a tool name or a reason quoting the input could
    // otherwise colour, hide or forge the lines a person answers.
    let mut text = format!(
        "\napproval needed: {} (call {})\n",
        escape_controls(request.tool.as_str()),
        escape_controls(request.call_id.as_str())
    );
    if request.attempt > 1 {
        text.push_str("  (asked again: the first request expired)\n");
    }
    text.push_str("  input (exactly what will run):\n");
    for line in input.lines() {
        text.push_str(&format!("    {line}\n"));
    }
    for reason in &request.reasons {
        let line = match reason {
            Reason::Rule {
                name,
                decision,
                location,
                reason,
                part,
                ..
            } => format!(
                "rule `{name}` says {decision}{}{}{}",
                part.as_deref()
                    .map(|p| format!(" for `{p}`"))
                    .unwrap_or_default(),
                reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default(),
                location
                    .as_deref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default()
            ),
            Reason::Default {
                decision,
                part: None,
            } => format!("no rule matched; the contract default is {decision}"),
            Reason::Default {
                decision,
                part: Some(part),
            } => format!("no rule matched `{part}`; the contract default is {decision}"),
            Reason::Analysis {
                decision, reason, ..
            } => format!("{decision}: {reason}"),
            Reason::Hook {
                name,
                decision,
                reason,
            } => format!(
                "hook `{name}` says {decision}{}",
                reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
            Reason::AlwaysAsk => "the contract says always_ask".to_owned(),
            Reason::Untrusted { reason, .. } => reason.clone(),
            Reason::Approval {
                by,
                decision,
                reason,
            } => super::test::approval_line(by, *decision, reason.as_deref()),
        };
        text.push_str(&format!("  why: {}\n", escape_controls(&line)));
        if let Reason::Rule {
            detail: Some(detail),
            ..
        } = reason
        {
            text.push_str(&format!("       {}\n", escape_controls(detail)));
        }
    }
    if !request.modes.is_empty() {
        let modes: Vec<&str> = request.modes.iter().map(|m| m.as_str()).collect();
        text.push_str(&format!("  modes: {}\n", modes.join(", ")));
    }
    text.push_str("allow? [y]es / [n]o / [f]eedback: ");
    text
}

/// Turns a typed line into an answer; `None` asks again.
pub fn interpret(line: &str) -> Option<ApprovalAnswer> {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(ApprovalAnswer::Allow { reason: None }),
        "n" | "no" => Some(ApprovalAnswer::Deny {
            reason: (!rest.trim().is_empty()).then(|| rest.trim().to_owned()),
        }),
        "f" | "feedback" if !rest.trim().is_empty() => Some(ApprovalAnswer::DenyWithFeedback {
            feedback: rest.trim().to_owned(),
        }),
        _ => None,
    }
}

impl ApprovalBroker for TerminalApprover {
    fn request(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        let lines = Arc::clone(&self.lines);
        let out = Arc::clone(&self.out);
        Box::pin(async move {
            let mut lines = lines.lock().await;
            let lines = lines.get_or_insert_with(stdin_lines);
            let mut pending = Pending {
                out: Arc::clone(&out),
                call: request.call_id.to_string(),
                answered: false,
            };
            write(&out, &describe(&request));
            loop {
                // `recv` is cancel-safe: a withdrawn request leaves the next line queued.
                let Some(line) = lines.recv().await else {
                    pending.answered = true;
                    write(&out, "\n");
                    return ApprovalAnswer::Deny {
                        reason: Some("no answer: the terminal closed".into()),
                    };
                };
                if let Some(answer) = interpret(&line) {
                    pending.answered = true;
                    return answer;
                }
                write(&out, "please answer `y`, `n [reason]` or `f <feedback>`: ");
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::model::{BatchId, CallId, Decision, ModeName, ToolName};

    fn request(call: &str, attempt: u32) -> ApprovalRequest {
        ApprovalRequest {
            batch_id: BatchId::new("b1"),
            call_id: CallId::new(call),
            tool: ToolName::new("Bash"),
            input: serde_json::json!({"command": "rm -rf build && make", "timeout": 5000, "description": "clean \"build\"\nthen make"}),
            reasons: vec![
                Reason::AlwaysAsk,
                Reason::Hook {
                    name: "guard".into(),
                    decision: Decision::Ask,
                    reason: Some("the guard wants a human".into()),
                },
                Reason::Rule {
                    name: "ask-rm".into(),
                    decision: Decision::Ask,
                    priority: 20,
                    enforced: false,
                    reason: Some("removals need a look".into()),
                    location: Some("policies/rules.yaml:12:5".into()),
                    detail: Some("`command` shell: `rm -rf build` matched pattern #0".into()),
                    part: None,
                },
                Reason::Default {
                    decision: Decision::Ask,
                    part: None,
                },
            ],
            modes: vec![ModeName::new("plan")],
            attempt,
        }
    }

    #[test]
    fn the_prompt_shows_the_exact_input_and_who_asked() {
        let text = describe(&request("c7", 1));
        // Every byte of the input, as JSON the handler will receive.
        assert!(
            text.contains("\"description\": \"clean \\\"build\\\"\\nthen make\""),
            "{text}"
        );
        insta::assert_snapshot!(text);
        assert!(describe(&request("c7", 2)).contains("asked again"));
    }

    /// Characters that reorder or hide text (a right-to-left override, U+202E, shows what
    /// follows it backwards) are shown as their escapes, which mean the same.
    #[test]
    fn the_prompt_shows_no_character_that_reorders_what_is_read() {
        let mut asked = request("c7", 1);
        asked.input = serde_json::json!({"command": "cat \u{202e}txt.env\u{200b}"});
        let text = describe(&asked);
        assert!(text.contains(r"cat \u202etxt.env\u200b"), "{text}");
        assert!(
            !text.contains('\u{202e}') && !text.contains('\u{200b}'),
            "{text}"
        );
    }

    /// A channel of typed lines and a buffer for what was written.
    fn terminal() -> (
        TerminalApprover,
        tokio::sync::mpsc::UnboundedSender<String>,
        Arc<Mutex<Vec<u8>>>,
    ) {
        #[derive(Clone)]
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let (sender, receiver) = unbounded_channel();
        let written = Arc::new(Mutex::new(Vec::new()));
        let approver = TerminalApprover::with_io(receiver, Shared(Arc::clone(&written)));
        (approver, sender, written)
    }

    fn text(written: &Arc<Mutex<Vec<u8>>>) -> String {
        String::from_utf8(written.lock().unwrap().clone()).unwrap()
    }

    #[tokio::test]
    async fn asks_again_until_the_answer_is_understood() {
        let (approver, typed, written) = terminal();
        typed.send("maybe\n".into()).unwrap();
        typed.send("f use the staging db\n".into()).unwrap();
        let answer = approver.request(request("c1", 1)).await;
        assert_eq!(
            answer,
            ApprovalAnswer::DenyWithFeedback {
                feedback: "use the staging db".into()
            }
        );
        let shown = text(&written);
        assert!(
            shown.starts_with("\napproval needed: Bash (call c1)"),
            "{shown}"
        );
        assert!(shown.ends_with("please answer `y`, `n [reason]` or `f <feedback>`: "));
    }

    #[tokio::test]
    async fn a_withdrawn_request_leaves_the_next_answer_to_the_next_request() {
        let (approver, typed, written) = terminal();
        let first = approver.request(request("c1", 1));
        // Start the first prompt, then withdraw it before anything is typed.
        let polled = tokio::time::timeout(std::time::Duration::from_millis(1), first).await;
        assert!(polled.is_err(), "no line was typed");
        assert!(text(&written).contains("(the approval request for call c1 was withdrawn)"));
        typed.send("n not now\n".into()).unwrap();
        let answer = approver.request(request("c2", 1)).await;
        assert_eq!(
            answer,
            ApprovalAnswer::Deny {
                reason: Some("not now".into())
            }
        );
    }

    #[tokio::test]
    async fn a_closed_terminal_denies() {
        let (approver, typed, _) = terminal();
        drop(typed);
        let answer = approver.request(request("c1", 1)).await;
        assert_eq!(
            answer,
            ApprovalAnswer::Deny {
                reason: Some("no answer: the terminal closed".into())
            }
        );
    }

    #[test]
    fn answers_are_read_leniently() {
        assert_eq!(
            interpret("y\n"),
            Some(ApprovalAnswer::Allow { reason: None })
        );
        assert_eq!(
            interpret("YES"),
            Some(ApprovalAnswer::Allow { reason: None })
        );
        assert_eq!(interpret("n"), Some(ApprovalAnswer::Deny { reason: None }));
        assert_eq!(
            interpret("no not now"),
            Some(ApprovalAnswer::Deny {
                reason: Some("not now".into())
            })
        );
        assert_eq!(
            interpret("f use the staging db"),
            Some(ApprovalAnswer::DenyWithFeedback {
                feedback: "use the staging db".into()
            })
        );
        assert_eq!(interpret("f"), None);
        assert_eq!(interpret("maybe"), None);
    }
}
