//! `PermissionRequest` hooks racing the approver (SPEC §6 step 5; issue 5 item 5): the first
//! decisive answer wins and the loser is cancelled cleanly — a slow approver's request
//! future is dropped, a slow hook's process is killed. A hook without an opinion leaves the
//! answer to the approver, which is asked once. Hooks are real `/bin/sh` processes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use crate::support::hooks::fixture;
use futures::future::BoxFuture;
use serde_json::json;
use toolgate::events::PermissionResolved;
use toolgate::{ApprovalAnswer, ApprovalBroker, ApprovalRequest, FixedAnswer};
use toolgate::{CallStatus, EventKind};

/// Sets its flag when dropped: shows that a request future was withdrawn.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// An approver that never answers; counts requests and flags when one is dropped.
fn never_answers() -> (Arc<dyn ApprovalBroker>, Arc<AtomicU32>, Arc<AtomicBool>) {
    let asked = Arc::new(AtomicU32::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let (a, d) = (Arc::clone(&asked), Arc::clone(&dropped));
    let broker: Arc<dyn ApprovalBroker> = Arc::new(
        move |_request: ApprovalRequest| -> BoxFuture<'static, ApprovalAnswer> {
            a.fetch_add(1, Ordering::SeqCst);
            let flag = DropFlag(Arc::clone(&d));
            Box::pin(async move {
                let _flag = flag;
                std::future::pending().await
            })
        },
    );
    (broker, asked, dropped)
}

fn resolutions(f: &crate::support::hooks::Fixture) -> Vec<PermissionResolved> {
    f.events()
        .into_iter()
        .filter_map(|event| match event.kind {
            EventKind::PermissionResolved(resolved) => Some(resolved),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_hook_answer_wins_and_the_slow_approver_is_dropped() {
    let f = fixture("permission.yaml");
    let (approver, asked, dropped) = never_answers();
    let outcome = f
        .run(
            &[("Deploy", json!({"target": "prod"}))],
            &[],
            Some(approver),
        )
        .await;
    let result = &outcome.results[0];
    assert_eq!(result.status, CallStatus::Ok, "{}", result.model_content);
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the approver's request was not withdrawn"
    );
    let resolved = resolutions(&f);
    assert_eq!(resolved.len(), 1);
    assert_eq!(
        (resolved[0].decision.as_str(), resolved[0].source.as_str()),
        ("allow", "hook:approve-ci")
    );
    assert_eq!(
        resolved[0].reason.as_deref(),
        Some("approved by the CI hook")
    );
}

#[tokio::test]
async fn without_an_approver_a_hook_may_still_answer() {
    let f = fixture("permission.yaml");
    let outcome = f
        .run(
            &[
                ("Deploy", json!({"target": "prod"})),
                // No opinion and nobody else to ask: no permission client.
                ("Quiet", json!({})),
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(outcome.results[0].status, CallStatus::Ok);
    assert_eq!(outcome.results[1].status, CallStatus::Denied);
    assert_eq!(
        outcome.results[1].model_content,
        "No permission client configured"
    );
}

/// Whether the process `pid` has ended (gone, or a zombie waiting to be reaped).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            // `pid (comm) S …`: the state follows the last `)`.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            state.starts_with('Z') || state.starts_with('X')
        }
    }
}

#[tokio::test]
async fn an_approver_answer_wins_and_the_slow_hook_is_killed() {
    let f = fixture("permission.yaml");
    let pid_file = f.dir.path().join("slow-hook.pid");
    // The approver answers once the hook is running (it has written its pid), so the race
    // is decided by the approver, whatever the machine's speed.
    let watched = pid_file.clone();
    let approver: Arc<dyn ApprovalBroker> = Arc::new(
        move |_request: ApprovalRequest| -> BoxFuture<'static, ApprovalAnswer> {
            let watched = watched.clone();
            Box::pin(async move {
                while !has_pid(&watched) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                ApprovalAnswer::Allow {
                    reason: Some("looks fine".into()),
                }
            })
        },
    );
    let outcome = f.run(&[("Slow", json!({}))], &[], Some(approver)).await;
    assert_eq!(outcome.results[0].status, CallStatus::Ok);
    let resolved = resolutions(&f);
    assert_eq!(
        (resolved[0].decision.as_str(), resolved[0].source.as_str()),
        ("allow", "approver")
    );
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The hook's process group was killed when its future was dropped; wait (bounded) for
    // the kernel to finish it off.
    let mut waited = 0;
    while !ended(pid) && waited < 500 {
        std::thread::sleep(Duration::from_millis(20));
        waited += 1;
    }
    assert!(ended(pid), "the losing hook (pid {pid}) is still running");
    assert!(f.hook_failures().is_empty());
}

fn has_pid(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| text.trim().parse::<u32>().is_ok())
}

#[tokio::test]
async fn a_hook_without_an_opinion_leaves_the_answer_to_the_approver() {
    let f = fixture("permission.yaml");
    let asked = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&asked);
    // The approver answers late, after the hook has given up.
    let approver: Arc<dyn ApprovalBroker> = Arc::new(
        move |_request: ApprovalRequest| -> BoxFuture<'static, ApprovalAnswer> {
            counter.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(500)).await;
                ApprovalAnswer::Deny {
                    reason: Some("the approver says no".into()),
                }
            })
        },
    );
    let outcome = f.run(&[("Quiet", json!({}))], &[], Some(approver)).await;
    assert_eq!(outcome.results[0].status, CallStatus::Denied);
    assert_eq!(
        outcome.results[0].model_content,
        "Permission to use Quiet was denied by the person reviewing the request: the approver says no"
    );
    // Asked exactly once: the request stands while the hook gives up.
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn exit_code_2_denies_with_stderr() {
    let f = fixture("permission.yaml");
    let (approver, _, dropped) = never_answers();
    let outcome = f.run(&[("Refused", json!({}))], &[], Some(approver)).await;
    assert_eq!(outcome.results[0].status, CallStatus::Denied);
    assert_eq!(
        outcome.results[0].model_content,
        "refused by the permission hook"
    );
    assert!(dropped.load(Ordering::SeqCst));
    let resolved = resolutions(&f);
    assert_eq!(
        (resolved[0].decision.as_str(), resolved[0].source.as_str()),
        ("deny", "hook:refuse")
    );
}

#[tokio::test]
async fn calls_that_need_no_approval_never_ask() {
    let f = fixture("permission.yaml");
    let allow: Arc<dyn ApprovalBroker> =
        Arc::new(FixedAnswer(ApprovalAnswer::Allow { reason: None }));
    let outcome = f
        .run(&[("Read", json!({"file_path": "a"}))], &[], Some(allow))
        .await;
    assert_eq!(outcome.results[0].status, CallStatus::Ok);
    assert!(resolutions(&f).is_empty());
}
