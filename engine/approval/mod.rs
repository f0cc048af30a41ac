//! Approval: how a call whose permission is `ask` gets an answer (SPEC §6 step 5, §5.4).
//!
//! An [`ApprovalBroker`] is whatever asks a human or a host (the terminal prompt of
//! `toolgate run --approve prompt`, the `permission/request` of the stdio server, an
//! embedder's UI). [`wait`] runs one approval: it races the broker against the
//! `PermissionRequest` hooks (first answer wins; the loser's future is dropped, which cancels
//! it), bounds the wait by `engine.approval_timeout` with its declared expiry outcome, and
//! stops when the call is cancelled. The request carries the exact input the handler will
//! receive: what is approved is what runs.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::model::engine_config::ApprovalExpiry;
use crate::model::{BatchId, CallId, ModeName, ToolName};
use crate::policy::decide::Reason;

/// One approval request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ApprovalRequest {
    /// The batch.
    pub batch_id: BatchId,
    /// The call.
    pub call_id: CallId,
    /// The canonical tool.
    pub tool: ToolName,
    /// The exact input that runs if approved.
    pub input: Value,
    /// Why approval is needed (the rules, hooks or defaults that asked).
    pub reasons: Vec<Reason>,
    /// Active modes.
    pub modes: Vec<ModeName>,
    /// 1 for the first request, 2 when `approval_expiry: ask_again` asks once more.
    pub attempt: u32,
}

/// An answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ApprovalAnswer {
    /// Run the call.
    Allow {
        /// Optional comment.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Do not run it.
    Deny {
        /// Optional reason, told to the model.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Do not run it; the reviewer's comment is feedback for the model (`denied_with_feedback`).
    DenyWithFeedback {
        /// The comment.
        feedback: String,
    },
}

/// Something that answers approval requests.
pub trait ApprovalBroker: Send + Sync {
    /// Asks for an answer. Dropping the returned future withdraws the request.
    fn request(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer>;
}

/// Answers every request the same way (`--approve allow|deny`).
#[derive(Clone, Debug)]
pub struct FixedAnswer(pub ApprovalAnswer);

impl ApprovalBroker for FixedAnswer {
    fn request(&self, _request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        let answer = self.0.clone();
        Box::pin(async move { answer })
    }
}

impl<F> ApprovalBroker for F
where
    F: Fn(ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> + Send + Sync,
{
    fn request(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalAnswer> {
        self(request)
    }
}

/// Who gave the final answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnsweredBy {
    /// The broker.
    Broker,
    /// A `PermissionRequest` hook (by name).
    Hook(String),
    /// The approval timeout expired.
    Expiry,
    /// No broker is configured.
    NoClient,
}

/// The outcome of one approval wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalOutcome {
    /// Answered (by the broker, a hook, or expiry).
    Answered {
        /// The answer.
        answer: ApprovalAnswer,
        /// Who answered.
        by: AnsweredBy,
    },
    /// The call was cancelled while waiting.
    Cancelled,
}

/// How to wait.
#[derive(Clone, Debug)]
pub struct WaitPolicy {
    /// `engine.approval_timeout` (`None` = wait until cancelled).
    pub timeout: Option<Duration>,
    /// `engine.approval_expiry`.
    pub expiry: ApprovalExpiry,
}

/// A `PermissionRequest` hook answer racing the broker: resolves to `Some((hook, answer))`
/// when a hook decides, or `None` when no hook decides (then only the broker counts).
pub type HookRace = BoxFuture<'static, Option<(String, ApprovalAnswer)>>;

/// Waits for an approval. See the module documentation.
pub async fn wait(
    broker: Option<&Arc<dyn ApprovalBroker>>,
    request: ApprovalRequest,
    hooks: Option<HookRace>,
    policy: &WaitPolicy,
    cancel: &CancellationToken,
) -> ApprovalOutcome {
    let no_client = || ApprovalOutcome::Answered {
        answer: ApprovalAnswer::Deny { reason: None },
        by: AnsweredBy::NoClient,
    };
    if broker.is_none() && hooks.is_none() {
        return no_client();
    }
    let mut hooks = hooks;
    let mut attempt = 1;
    loop {
        // One request per attempt: the same broker future is polled until it answers, the
        // attempt expires or the call is cancelled, even when the hooks give up meanwhile
        // (asking again would show a human the same question twice).
        let mut asked = broker.map(|broker| {
            broker.request(ApprovalRequest {
                attempt,
                ..request.clone()
            })
        });
        let expiry = sleep(policy.timeout);
        tokio::pin!(expiry);
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return ApprovalOutcome::Cancelled,
                answer = optional(&mut asked) => {
                    return ApprovalOutcome::Answered { answer, by: AnsweredBy::Broker };
                }
                found = race(&mut hooks) => match found {
                    Some((hook, answer)) => {
                        return ApprovalOutcome::Answered { answer, by: AnsweredBy::Hook(hook) };
                    }
                    // No hook decides: only the broker is left, if there is one.
                    None if broker.is_none() => return no_client(),
                    None => {}
                },
                () = &mut expiry => break,
            }
        }
        let answer = match policy.expiry {
            ApprovalExpiry::Deny => ApprovalAnswer::Deny { reason: None },
            ApprovalExpiry::Allow => ApprovalAnswer::Allow { reason: None },
            ApprovalExpiry::AskAgain if attempt == 1 => {
                attempt += 1;
                continue;
            }
            ApprovalExpiry::AskAgain => ApprovalAnswer::Deny { reason: None },
        };
        return ApprovalOutcome::Answered {
            answer,
            by: AnsweredBy::Expiry,
        };
    }
}

/// The broker's answer; without a broker, never.
async fn optional(future: &mut Option<BoxFuture<'static, ApprovalAnswer>>) -> ApprovalAnswer {
    match future {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

/// The hooks' answer; once they have given up (`None`), later calls wait forever.
async fn race(hooks: &mut Option<HookRace>) -> Option<(String, ApprovalAnswer)> {
    match hooks.as_mut() {
        Some(future) => {
            let found = future.await;
            *hooks = None;
            found
        }
        None => std::future::pending().await,
    }
}

async fn sleep(limit: Option<Duration>) {
    match limit {
        Some(limit) => tokio::time::sleep(limit).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            batch_id: BatchId::new("b"),
            call_id: CallId::new("c"),
            tool: ToolName::new("Bash"),
            input: serde_json::json!({"command": "ls"}),
            reasons: Vec::new(),
            modes: Vec::new(),
            attempt: 1,
        }
    }

    fn never() -> Arc<dyn ApprovalBroker> {
        Arc::new(|_: ApprovalRequest| -> BoxFuture<'static, ApprovalAnswer> {
            Box::pin(std::future::pending())
        })
    }

    fn policy(timeout: Option<u64>, expiry: ApprovalExpiry) -> WaitPolicy {
        WaitPolicy {
            timeout: timeout.map(Duration::from_secs),
            expiry,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn no_broker_denies_as_no_client() {
        let out = wait(
            None,
            request(),
            None,
            &policy(None, ApprovalExpiry::Deny),
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(
            out,
            ApprovalOutcome::Answered {
                answer: ApprovalAnswer::Deny { reason: None },
                by: AnsweredBy::NoClient
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_broker_answers() {
        let broker: Arc<dyn ApprovalBroker> =
            Arc::new(FixedAnswer(ApprovalAnswer::Allow { reason: None }));
        let out = wait(
            Some(&broker),
            request(),
            None,
            &policy(None, ApprovalExpiry::Deny),
            &CancellationToken::new(),
        )
        .await;
        assert!(matches!(
            out,
            ApprovalOutcome::Answered {
                by: AnsweredBy::Broker,
                answer: ApprovalAnswer::Allow { .. }
            }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn expiry_outcomes_follow_the_policy() {
        let broker = never();
        for (expiry, allowed) in [(ApprovalExpiry::Deny, false), (ApprovalExpiry::Allow, true)] {
            let out = wait(
                Some(&broker),
                request(),
                None,
                &policy(Some(30), expiry),
                &CancellationToken::new(),
            )
            .await;
            let ApprovalOutcome::Answered { answer, by } = out else {
                panic!("cancelled")
            };
            assert_eq!(by, AnsweredBy::Expiry);
            assert_eq!(matches!(answer, ApprovalAnswer::Allow { .. }), allowed);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn ask_again_asks_exactly_once_more() {
        let asked = Arc::new(AtomicU32::new(0));
        let seen = Arc::clone(&asked);
        let broker: Arc<dyn ApprovalBroker> = Arc::new(
            move |req: ApprovalRequest| -> BoxFuture<'static, ApprovalAnswer> {
                seen.fetch_add(1, Ordering::SeqCst);
                assert_eq!(req.attempt, seen.load(Ordering::SeqCst));
                Box::pin(std::future::pending())
            },
        );
        let start = tokio::time::Instant::now();
        let out = wait(
            Some(&broker),
            request(),
            None,
            &policy(Some(10), ApprovalExpiry::AskAgain),
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(asked.load(Ordering::SeqCst), 2);
        assert_eq!(start.elapsed(), Duration::from_secs(20));
        assert!(matches!(
            out,
            ApprovalOutcome::Answered {
                by: AnsweredBy::Expiry,
                answer: ApprovalAnswer::Deny { .. }
            }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_hook_answer_beats_a_slow_broker() {
        let broker = never();
        let race: HookRace = Box::pin(async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Some((
                "approve-ci".to_owned(),
                ApprovalAnswer::Allow { reason: None },
            ))
        });
        let out = wait(
            Some(&broker),
            request(),
            Some(race),
            &policy(None, ApprovalExpiry::Deny),
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(
            out,
            ApprovalOutcome::Answered {
                answer: ApprovalAnswer::Allow { reason: None },
                by: AnsweredBy::Hook("approve-ci".into())
            }
        );
    }

    /// A broker that counts its requests, answers `allow` after `after`, and records whether
    /// a request's future was dropped before it answered.
    fn counting(after: Duration) -> (Arc<dyn ApprovalBroker>, Arc<AtomicU32>, Arc<AtomicU32>) {
        struct Withdrawn(Arc<AtomicU32>, bool);
        impl Drop for Withdrawn {
            fn drop(&mut self) {
                if !self.1 {
                    self.0.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        let asked = Arc::new(AtomicU32::new(0));
        let dropped = Arc::new(AtomicU32::new(0));
        let (a, d) = (Arc::clone(&asked), Arc::clone(&dropped));
        let broker: Arc<dyn ApprovalBroker> = Arc::new(
            move |_req: ApprovalRequest| -> BoxFuture<'static, ApprovalAnswer> {
                a.fetch_add(1, Ordering::SeqCst);
                let guard = Withdrawn(Arc::clone(&d), false);
                Box::pin(async move {
                    // Own the whole guard (a closure capturing only `guard.1` would copy
                    // the flag and drop the guard right away).
                    let mut guard = guard;
                    tokio::time::sleep(after).await;
                    guard.1 = true;
                    ApprovalAnswer::Allow { reason: None }
                })
            },
        );
        (broker, asked, dropped)
    }

    #[tokio::test(start_paused = true)]
    async fn hooks_without_an_answer_leave_the_first_request_standing() {
        // Regression: when the hooks gave up, the broker was asked a second time (a human
        // saw the same prompt twice) and the approval timeout started over.
        let (broker, asked, dropped) = counting(Duration::from_secs(5));
        let race: HookRace = Box::pin(async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            None
        });
        let start = tokio::time::Instant::now();
        let out = wait(
            Some(&broker),
            request(),
            Some(race),
            &policy(None, ApprovalExpiry::Deny),
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(
            out,
            ApprovalOutcome::Answered {
                answer: ApprovalAnswer::Allow { reason: None },
                by: AnsweredBy::Broker
            }
        );
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn the_approval_timeout_is_not_reset_when_the_hooks_give_up() {
        let (broker, asked, _) = counting(Duration::from_secs(100));
        let race: HookRace = Box::pin(async {
            tokio::time::sleep(Duration::from_secs(20)).await;
            None
        });
        let start = tokio::time::Instant::now();
        let out = wait(
            Some(&broker),
            request(),
            Some(race),
            &policy(Some(30), ApprovalExpiry::Deny),
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(
            out,
            ApprovalOutcome::Answered {
                answer: ApprovalAnswer::Deny { reason: None },
                by: AnsweredBy::Expiry
            }
        );
        assert_eq!(start.elapsed(), Duration::from_secs(30));
        assert_eq!(asked.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_losing_broker_request_is_dropped() {
        let (broker, asked, dropped) = counting(Duration::from_secs(60));
        let race: HookRace = Box::pin(async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Some(("ci".to_owned(), ApprovalAnswer::Deny { reason: None }))
        });
        let out = wait(
            Some(&broker),
            request(),
            Some(race),
            &policy(None, ApprovalExpiry::Deny),
            &CancellationToken::new(),
        )
        .await;
        assert!(matches!(
            out,
            ApprovalOutcome::Answered {
                by: AnsweredBy::Hook(_),
                ..
            }
        ));
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn hooks_without_a_broker() {
        let allow: HookRace =
            Box::pin(async { Some(("ci".to_owned(), ApprovalAnswer::Allow { reason: None })) });
        let out = wait(
            None,
            request(),
            Some(allow),
            &policy(None, ApprovalExpiry::Deny),
            &CancellationToken::new(),
        )
        .await;
        assert!(matches!(
            out,
            ApprovalOutcome::Answered {
                by: AnsweredBy::Hook(_),
                answer: ApprovalAnswer::Allow { .. }
            }
        ));
        let silent: HookRace = Box::pin(async { None });
        let out = wait(
            None,
            request(),
            Some(silent),
            &policy(None, ApprovalExpiry::Deny),
            &CancellationToken::new(),
        )
        .await;
        assert!(matches!(
            out,
            ApprovalOutcome::Answered {
                by: AnsweredBy::NoClient,
                ..
            }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn cancellation_ends_the_wait() {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            trigger.cancel();
        });
        let out = wait(
            Some(&never()),
            request(),
            None,
            &policy(None, ApprovalExpiry::Deny),
            &cancel,
        )
        .await;
        assert_eq!(out, ApprovalOutcome::Cancelled);
    }
}
