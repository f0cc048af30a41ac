//! The terminal approver of `toolgate run --approve prompt`: shows the exact input that will
//! run and the rules that asked, and reads the answer from the terminal. Requests are asked
//! one at a time even when calls run concurrently.

use std::io::{BufRead, Write};
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::approval::{ApprovalAnswer, ApprovalBroker, ApprovalRequest};
use crate::policy::decide::Reason;

/// Asks on stderr, reads answers from stdin.
#[derive(Clone, Default)]
pub struct TerminalApprover {
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl TerminalApprover {
    /// A new approver.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The text shown for a request.
pub fn describe(request: &ApprovalRequest) -> String {
    let input =
        serde_json::to_string_pretty(&request.input).unwrap_or_else(|_| request.input.to_string());
    let mut text = format!(
        "\napproval needed: {} (call {})\n",
        request.tool, request.call_id
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
                ..
            } => format!(
                "rule `{name}` says {decision}{}{}",
                reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default(),
                location
                    .as_deref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default()
            ),
            Reason::Default { decision } => {
                format!("no rule matched; the contract default is {decision}")
            }
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
        };
        text.push_str(&format!("  why: {line}\n"));
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
        let turn = Arc::clone(&self.turn);
        Box::pin(async move {
            let _one_at_a_time = turn.lock().await;
            let asked = tokio::task::spawn_blocking(move || {
                let stdin = std::io::stdin();
                let mut stderr = std::io::stderr();
                let mut prompt = describe(&request);
                loop {
                    let _ = stderr.write_all(prompt.as_bytes());
                    let _ = stderr.flush();
                    let mut line = String::new();
                    match stdin.lock().read_line(&mut line) {
                        Ok(0) | Err(_) => {
                            return ApprovalAnswer::Deny {
                                reason: Some("no answer: the terminal closed".into()),
                            };
                        }
                        Ok(_) => {
                            if let Some(answer) = interpret(&line) {
                                return answer;
                            }
                            prompt = "please answer `y`, `n [reason]` or `f <feedback>`: ".into();
                        }
                    }
                }
            })
            .await;
            asked.unwrap_or(ApprovalAnswer::Deny {
                reason: Some("the prompt failed".into()),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
