//! Model-facing error texts (SPEC §7.3). Every text comes from an `engine.messages`
//! template; this module only picks the template and fills it, projects unexpected errors
//! through their cause chain, and builds the failures every stage shares (a rejected call, a
//! cancelled one).

use std::error::Error;

use super::{CallEnv, CallState, ErrorCode, Failure};
use crate::assess::{Rejection, RejectionKind};
use crate::events::{CancelReason, EventKind, FailureStage, HookFailed};
use crate::hooks::HookError;
use crate::model::CallId;
use crate::model::engine_config::MessageKey;
use crate::model::hook::HookEvent;
use crate::model::resolved::ResolvedEngine;
use crate::snapshot::{SnapshotHook, Tool};

/// Renders a message template with its placeholders.
pub fn message(engine: &ResolvedEngine, key: MessageKey, values: &[(&str, &str)]) -> String {
    engine.messages.render(key, values)
}

/// Projects an unexpected error into one line for the model: the messages of its cause chain
/// (at most `engine.error_projection.max_cause_depth` levels), skipping empty messages and
/// mere wrappers — a level whose text is already contained in an outer one — joined with
/// `: `, whitespace folded to single spaces, cut to `max_chars` characters. A cut text ends
/// with a marker that says how much was left out (`… [N more characters]`).
pub fn project(engine: &ResolvedEngine, error: &(dyn Error + 'static)) -> String {
    project_with(error, engine.max_cause_depth, engine.max_error_chars)
}

/// [`project`], and whether the text was cut.
pub fn project_marked(engine: &ResolvedEngine, error: &(dyn Error + 'static)) -> (String, bool) {
    project_with_cut(error, engine.max_cause_depth, engine.max_error_chars)
}

/// [`project`] with explicit limits.
pub fn project_with(error: &(dyn Error + 'static), max_depth: usize, max_chars: usize) -> String {
    project_with_cut(error, max_depth, max_chars).0
}

/// [`project_with`], and whether the text was cut.
pub fn project_with_cut(
    error: &(dyn Error + 'static),
    max_depth: usize,
    max_chars: usize,
) -> (String, bool) {
    let mut kept: Vec<String> = Vec::new();
    let mut current: Option<&(dyn Error + 'static)> = Some(error);
    let mut depth = 0;
    while let Some(level) = current {
        if depth >= max_depth.max(1) {
            break;
        }
        let text = fold_whitespace(&level.to_string());
        let wrapper = text.is_empty() || kept.iter().any(|outer| outer.contains(&text));
        if !wrapper {
            // An outer message that only restates this one (`x: <this>`) is kept as it is;
            // this one adds nothing new.
            kept.push(text);
        }
        current = level.source();
        depth += 1;
    }
    let joined = kept.join(": ");
    let joined = if joined.is_empty() {
        "unknown error".to_owned()
    } else {
        joined
    };
    cut_marked(&joined, max_chars)
}

/// `text` cut to at most `max` characters; a cut text ends with `… [N more characters]`
/// (within the `max`), or with just `…` where that marker would take more than half of
/// `max`. Returns whether it was cut.
pub fn cut_marked(text: &str, max: usize) -> (String, bool) {
    let total = text.chars().count();
    if total <= max {
        return (text.to_owned(), false);
    }
    // The marker's number has at most as many digits as `total`.
    let widest = format!(" … [{total} more characters]").chars().count();
    if widest * 2 > max {
        let mut kept = cut_chars(text, max.saturating_sub(1));
        if max > 0 {
            kept.push('…');
        }
        return (kept, true);
    }
    let keep = max - widest;
    let kept = cut_chars(text, keep);
    let kept = kept.trim_end();
    let left_out = total - kept.chars().count();
    (format!("{kept} … [{left_out} more characters]"), true)
}

pub use crate::diagnostics::diagnostic::fold_whitespace;

/// The first `max` characters of `text`, never splitting one.
pub fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

/// The failure of a call the engine refuses before it runs (unknown tool, bad input), at the
/// stage that found it.
pub fn rejected(rejection: Rejection) -> Failure {
    let (stage, code) = match rejection.kind {
        RejectionKind::UnknownTool => (FailureStage::Lookup, ErrorCode::ToolNotFound),
        RejectionKind::NotAnObject => (FailureStage::Normalize, ErrorCode::InputValidation),
        RejectionKind::SchemaViolation | RejectionKind::BadTimeoutOverride => {
            (FailureStage::Validate, ErrorCode::InputValidation)
        }
    };
    Failure::error(stage, code, rejection.message)
}

/// The text of a failed hook run (for `HookFailed` events and `fail_closed` denials): a
/// process error is projected through its cause chain.
pub fn hook_error(engine: &ResolvedEngine, error: &HookError) -> String {
    match error {
        HookError::Process(inner) => project(engine, inner),
        HookError::NoCommand
        | HookError::Argv(_)
        | HookError::TimedOut(_)
        | HookError::BadAnswer(_)
        | HookError::Exit { .. }
        | HookError::Signal => error.to_string(),
    }
}

/// The failure for a cancelled call, with its machine-readable reason and the message for it:
/// the sibling or turn-stop templates, else the contract's `cancellation_message`, else the
/// generic template.
pub fn cancellation(
    env: &CallEnv<'_>,
    state: &CallState<'_>,
    tool: Option<&Tool>,
    stage: FailureStage,
    reason: CancelReason,
) -> Failure {
    let engine = &env.prepared.snapshot.engine;
    let name = tool.map_or(state.call.tool.as_str(), |t| t.name.as_str());
    let contract_message = tool.and_then(|t| t.resolved.timeout.cancellation_message.clone());
    let text = match reason {
        CancelReason::SiblingFailed => {
            let by = state
                .cancel_reason(env)
                .1
                .map(|id| id.to_string())
                .unwrap_or_default();
            message(
                engine,
                MessageKey::SiblingFailed,
                &[("tool", name), ("call_id", &by)],
            )
        }
        CancelReason::TurnStopped => message(engine, MessageKey::TurnStopped, &[("tool", name)]),
        CancelReason::Timeout | CancelReason::UserInterrupt | CancelReason::Policy => {
            contract_message.unwrap_or_else(|| {
                message(
                    engine,
                    MessageKey::Cancelled,
                    &[("tool", name), ("reason", reason.as_str())],
                )
            })
        }
    };
    Failure::cancelled(stage, reason, text)
}

/// Reports a hook that failed (`HookFailed`).
pub fn report_hook_failure(
    env: &CallEnv<'_>,
    call: &CallId,
    hook: &SnapshotHook,
    event: HookEvent,
    error: &str,
) {
    env.emit(
        Some(call),
        EventKind::HookFailed(HookFailed {
            hook: hook.spec.name.clone(),
            event: crate::hooks::event_name(event).to_owned(),
            error: error.to_owned(),
            fail_closed: crate::hooks::fails_closed(hook),
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    #[derive(Debug)]
    struct Layer {
        message: String,
        source: Option<Box<Layer>>,
    }

    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(&self.message)
        }
    }

    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.source.as_deref().map(|s| s as &(dyn Error + 'static))
        }
    }

    fn chain(messages: &[&str]) -> Layer {
        let mut current: Option<Box<Layer>> = None;
        for message in messages.iter().rev() {
            current = Some(Box::new(Layer {
                message: (*message).to_owned(),
                source: current,
            }));
        }
        *current.unwrap()
    }

    #[test]
    fn wrappers_are_skipped_and_context_is_kept() {
        let error = chain(&[
            "request failed",
            "",
            "connect: connection refused",
            "connection refused",
        ]);
        assert_eq!(
            project_with(&error, 12, 500),
            "request failed: connect: connection refused"
        );
    }

    #[test]
    fn depth_and_length_are_bounded_and_whitespace_folded() {
        let messages: Vec<String> = (0..20).map(|i| format!("level{i}\n\t end")).collect();
        let refs: Vec<&str> = messages.iter().map(String::as_str).collect();
        let error = chain(&refs);
        let projected = project_with(&error, 12, 500);
        assert_eq!(projected.matches("level").count(), 12);
        assert!(!projected.contains('\n'));
        assert!(projected.starts_with("level0 end: level1 end"));
        assert_eq!(project_with(&error, 12, 10).chars().count(), 10);
        assert!(project_with(&error, 12, 10).ends_with('…'));
    }

    #[test]
    fn a_cut_says_how_much_was_left_out() {
        let body = "x".repeat(50_000);
        let (text, cut) = cut_marked(&body, 500);
        assert!(cut);
        assert_eq!(text.chars().count(), 500);
        let kept = text.chars().take_while(|c| *c == 'x').count();
        assert!(text.ends_with(&format!(" … [{} more characters]", 50_000 - kept)));
        assert_eq!(cut_marked("abcdefghij", 5), ("abcd…".to_owned(), true));
        assert_eq!(cut_marked("short", 500), ("short".to_owned(), false));
    }

    #[test]
    fn cutting_never_splits_a_character() {
        assert_eq!(cut_chars("héllo wörld", 2), "hé");
        assert_eq!(cut_chars("日本語", 5), "日本語");
    }
}
