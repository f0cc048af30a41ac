//! Resolved values: the effective engine settings with every value present, and the effective
//! contract of each tool with the engine defaults filled in and mode patches applied. What
//! the executor reads is always a resolved value; the `Option`s of the file model stop here.

use indexmap::IndexMap;

use crate::model::contract::{
    BudgetPolicy, ContractPatch, DisplayKind, DisplayWhen, Keep, OnFailure, Overflow, Retention,
    SideEffectScope, TimeoutSpec, TurnAction, TurnControlEntry,
};
use crate::model::engine_config::{ApprovalExpiry, BatchBudget, MessageKey};
use crate::model::handler::{HandlerSpec, NativeHandlerSpec};
use crate::model::{BudgetUnit, Decision, Duration, EngineConfig, GateName, Limit, ToolContract};

/// Engine settings with every value present.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedEngine {
    /// Most calls per group.
    pub max_concurrency: usize,
    /// Timeout of calls whose contract sets none; `None` = no timeout.
    pub default_timeout: Option<Duration>,
    /// What a failed call does to its siblings.
    pub on_failure: OnFailure,
    /// The batch budget.
    pub batch_budget: BatchBudget,
    /// What budgets count.
    pub budget_unit: BudgetUnit,
    /// Budget defaults.
    pub budget: BudgetPolicy,
    /// Permission when nothing else decides.
    pub default_permission: Decision,
    /// The artifact store.
    pub artifacts: ResolvedArtifacts,
    /// Approval wait; `None` = wait until cancelled.
    pub approval_timeout: Option<Duration>,
    /// What an expired approval becomes.
    pub approval_expiry: ApprovalExpiry,
    /// Timeout of hooks that set none.
    pub hook_timeout: Duration,
    /// Cap on what a command/http handler may produce, in bytes.
    pub max_handler_output: u64,
    /// SIGTERM → SIGKILL delay for cancelled subprocesses.
    pub kill_grace: Duration,
    /// Most messages `serve` queues for its client (at least 1).
    pub serve_queue: usize,
    /// Most batches `serve` runs at once (at least 1).
    pub serve_batches: usize,
    /// At most one `ToolCallProgress` event per stream per this interval.
    pub progress_interval: std::time::Duration,
    /// Most bytes of progress events per call.
    pub progress_max_bytes: u64,
    /// Levels of the cause chain followed when projecting an error.
    pub max_cause_depth: usize,
    /// Longest projected error message, in characters.
    pub max_error_chars: usize,
    /// Every model-facing message template.
    pub messages: ResolvedMessages,
    /// The decision log settings as merged (off without a `path`).
    pub decision_log: crate::model::engine_config::DecisionLogConfig,
}

/// Artifact store settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedArtifacts {
    /// Folder of session folders (may start with `~`).
    pub dir: String,
    /// Largest single artifact, in bytes.
    pub max_file: u64,
    /// Most bytes per session.
    pub max_session: u64,
    /// Most artifact files the batch finalizer writes for one batch.
    pub max_batch_files: u64,
    /// Default retention.
    pub retention: Retention,
    /// Folder for `retention: project`, relative to the workspace root.
    pub project_dir: String,
}

/// Every message template, present.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedMessages {
    templates: Vec<String>,
}

impl ResolvedMessages {
    /// The template for a key.
    pub fn template(&self, key: MessageKey) -> &str {
        MessageKey::ALL
            .iter()
            .position(|k| *k == key)
            .and_then(|i| self.templates.get(i))
            .map_or("", String::as_str)
    }

    /// Fills a template's `{name}` placeholders. Unknown placeholders are left as written
    /// (the loader rejects them, so this only matters for embedders' own templates).
    pub fn render(&self, key: MessageKey, values: &[(&str, &str)]) -> String {
        super::template::render(self.template(key), values)
    }
}

/// A missing engine value, by its dotted path (`engine.max_concurrency`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingSetting(pub String);

impl ResolvedEngine {
    /// Resolves the merged engine section; reports every value no layer set.
    pub fn resolve(config: &EngineConfig) -> Result<Self, Vec<MissingSetting>> {
        let mut missing = Vec::new();
        let mut need = |present: bool, path: &str| {
            if !present {
                missing.push(MissingSetting(format!("engine.{path}")));
            }
        };
        let artifacts = config.artifacts.clone().unwrap_or_default();
        let projection = config.error_projection.clone().unwrap_or_default();
        let messages = config.messages.clone().unwrap_or_default();
        need(config.max_concurrency.is_some(), "max_concurrency");
        need(config.default_timeout.is_some(), "default_timeout");
        need(config.batch_budget.is_some(), "batch_budget");
        need(config.on_failure.is_some(), "on_failure");
        need(config.budget_unit.is_some(), "budget_unit");
        need(config.default_permission.is_some(), "default_permission");
        need(config.approval_timeout.is_some(), "approval_timeout");
        need(config.approval_expiry.is_some(), "approval_expiry");
        need(artifacts.retention.is_some(), "artifacts.retention");
        need(artifacts.project_dir.is_some(), "artifacts.project_dir");
        need(
            config.budget.as_ref().and_then(|b| b.max_model).is_some(),
            "budget.max_model",
        );
        need(
            config.budget.as_ref().and_then(|b| b.overflow).is_some(),
            "budget.overflow",
        );
        need(
            config.budget.as_ref().and_then(|b| b.keep).is_some(),
            "budget.keep",
        );
        need(
            config.budget.as_ref().and_then(|b| b.preview).is_some(),
            "budget.preview",
        );
        need(artifacts.dir.is_some(), "artifacts.dir");
        need(artifacts.max_file.is_some(), "artifacts.max_file");
        need(artifacts.max_session.is_some(), "artifacts.max_session");
        need(
            artifacts.max_batch_files.is_some(),
            "artifacts.max_batch_files",
        );
        need(config.hook_timeout.is_some(), "hook_timeout");
        need(config.max_handler_output.is_some(), "max_handler_output");
        need(config.kill_grace.is_some(), "kill_grace");
        need(config.serve_queue.is_some(), "serve_queue");
        need(config.serve_batches.is_some(), "serve_batches");
        need(
            projection.max_cause_depth.is_some(),
            "error_projection.max_cause_depth",
        );
        need(projection.max_chars.is_some(), "error_projection.max_chars");
        for key in MessageKey::ALL {
            need(
                messages.get(*key).is_some(),
                &format!("messages.{}", key.field()),
            );
        }
        if !missing.is_empty() {
            return Err(missing);
        }
        // INVARIANT: every value below was checked present above; the fallbacks are never used.
        let size = |s: Option<crate::model::Size>| s.map_or(0, |s| s.0);
        Ok(Self {
            max_concurrency: config.max_concurrency.map_or(1, |n| n.max(1) as usize),
            default_timeout: config.default_timeout.and_then(Limit::into_option),
            on_failure: config.on_failure.unwrap_or(OnFailure::Continue),
            batch_budget: config.batch_budget.unwrap_or(BatchBudget::Disabled),
            budget_unit: config.budget_unit.unwrap_or_default(),
            budget: config.budget.clone().unwrap_or_default(),
            default_permission: config.default_permission.unwrap_or(Decision::Ask),
            artifacts: ResolvedArtifacts {
                dir: artifacts.dir.unwrap_or_default(),
                max_file: size(artifacts.max_file),
                max_session: size(artifacts.max_session),
                max_batch_files: artifacts.max_batch_files.unwrap_or(1000),
                retention: artifacts.retention.unwrap_or(Retention::Session),
                project_dir: artifacts
                    .project_dir
                    .unwrap_or_else(|| ".toolgate/artifacts".into()),
            },
            approval_timeout: config.approval_timeout.and_then(Limit::into_option),
            approval_expiry: config.approval_expiry.unwrap_or(ApprovalExpiry::Deny),
            hook_timeout: config.hook_timeout.unwrap_or_default(),
            max_handler_output: size(config.max_handler_output),
            kill_grace: config.kill_grace.unwrap_or_default(),
            serve_queue: config.serve_queue.map_or(1, |n| n.max(1) as usize),
            serve_batches: config.serve_batches.map_or(1, |n| n.max(1) as usize),
            progress_interval: config
                .progress_interval
                .map_or(std::time::Duration::from_millis(100), |d| d.0),
            progress_max_bytes: config.progress_max_bytes.map_or(1024 * 1024, |s| s.0),
            max_cause_depth: projection.max_cause_depth.unwrap_or(1) as usize,
            max_error_chars: projection.max_chars.unwrap_or(1) as usize,
            messages: ResolvedMessages {
                templates: MessageKey::ALL
                    .iter()
                    .map(|key| messages.get(*key).unwrap_or_default().to_owned())
                    .collect(),
            },
            decision_log: config.decision_log.clone().unwrap_or_default(),
        })
    }
}

/// A contract with every value resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedContract {
    /// Scheduling flags.
    pub concurrency: ResolvedConcurrency,
    /// Timeout policy.
    pub timeout: TimeoutPolicy,
    /// Result budget.
    pub budget: ResolvedBudget,
    /// Permission when no rule matches.
    pub default_permission: Decision,
    /// Allows from rules and hooks become asks.
    pub always_ask: bool,
    /// Outcome → action.
    pub turn_control: IndexMap<TurnOutcome, TurnRule>,
    /// Gate to pass before the handler starts.
    pub gate: Option<GateName>,
    /// UI projection.
    pub display: ResolvedDisplay,
    /// What a failure does to siblings.
    pub on_failure: OnFailure,
    /// How the call runs.
    pub handler: HandlerSpec,
}

/// Scheduling flags, resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolvedConcurrency {
    /// May share a group.
    pub concurrent_safe: bool,
    /// Always alone.
    pub destructive: bool,
    /// Declared read-only.
    pub read_only: bool,
    /// Reach of side effects.
    pub side_effect_scope: SideEffectScope,
}

impl ResolvedConcurrency {
    /// Read-only for scheduling purposes: declared read-only and no side effects at all.
    pub fn effectively_read_only(&self) -> bool {
        self.read_only && self.side_effect_scope == SideEffectScope::None
    }
}

/// A contract's timeout policy, resolved against the engine default (the timeout of one call,
/// which also reads the call's override field, is `timeout::ResolvedTimeout`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimeoutPolicy {
    /// `timeout: none`.
    pub disabled: bool,
    /// The contract's `timeout.default`.
    pub default: Option<Duration>,
    /// The engine's `default_timeout`, used when the contract sets no default (`None`: no
    /// timeout).
    pub engine_default: Option<Duration>,
    /// Cap.
    pub max: Option<Duration>,
    /// Input field for per-call overrides.
    pub override_field: Option<String>,
    /// Margin added on top; also the clean-up wait after cancellation.
    pub cleanup_grace: Duration,
    /// Message for cancelled calls.
    pub cancellation_message: Option<String>,
}

/// Budget, resolved against `engine.budget`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedBudget {
    /// `min(max_model, max_inline)`.
    pub limit: u64,
    /// Declared `max_model`.
    pub max_model: u64,
    /// Declared `max_inline`, if any.
    pub max_inline: Option<u64>,
    /// Overflow strategy.
    pub overflow: Overflow,
    /// Kept part.
    pub keep: Keep,
    /// Preview size of artifact envelopes.
    pub preview: u64,
    /// Batch weight.
    pub weight: u32,
    /// Minimum batch share.
    pub min_share: u64,
    /// Never shortened by the batch finalizer.
    pub batch_exempt: bool,
    /// Artifact retention.
    pub retention: Retention,
}

/// Display projection, resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolvedDisplay {
    /// Kind.
    pub kind: DisplayKind,
    /// Size limit in bytes (`None` = no limit).
    pub max_size: Option<u64>,
    /// When produced.
    pub when: DisplayWhen,
}

/// A `turn_control` key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TurnOutcome {
    /// The call succeeded.
    Success,
    /// Permission was denied.
    Denied,
    /// Permission was denied with a reviewer's comment.
    DeniedWithFeedback,
    /// The call failed with this error code.
    Error(String),
    /// A named limit was hit.
    Limit(String),
}

impl TurnOutcome {
    /// Parses a `turn_control` key (the schema has already checked its shape).
    pub fn parse(key: &str) -> Option<Self> {
        match key {
            "success" => Some(Self::Success),
            "denied" => Some(Self::Denied),
            "denied_with_feedback" => Some(Self::DeniedWithFeedback),
            _ => {
                if let Some(code) = key.strip_prefix("error:") {
                    Some(Self::Error(code.to_owned()))
                } else {
                    key.strip_prefix("limit:")
                        .map(|name| Self::Limit(name.to_owned()))
                }
            }
        }
    }
}

/// An action with its optional message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnRule {
    /// The action.
    pub action: TurnAction,
    /// Its message.
    pub message: Option<String>,
}

impl ResolvedContract {
    /// Resolves a merged contract against the engine defaults.
    pub fn resolve(contract: &ToolContract, engine: &ResolvedEngine) -> Self {
        let mut resolved = Self {
            concurrency: ResolvedConcurrency {
                concurrent_safe: false,
                destructive: false,
                read_only: false,
                side_effect_scope: SideEffectScope::Workspace,
            },
            timeout: TimeoutPolicy {
                disabled: false,
                default: None,
                engine_default: engine.default_timeout,
                max: None,
                override_field: None,
                cleanup_grace: Duration::default(),
                cancellation_message: None,
            },
            budget: resolve_budget(&engine.budget, None, engine),
            default_permission: engine.default_permission,
            always_ask: false,
            turn_control: IndexMap::new(),
            gate: None,
            display: ResolvedDisplay {
                kind: DisplayKind::Text,
                max_size: None,
                when: DisplayWhen::Always,
            },
            on_failure: contract.on_failure.unwrap_or(engine.on_failure),
            handler: contract
                .handler
                .clone()
                .unwrap_or(HandlerSpec::Native(NativeHandlerSpec::default())),
        };
        resolved.apply(
            &ContractPatch {
                concurrency: contract.concurrency.clone(),
                timeout: contract.timeout.clone(),
                budget: contract.budget.clone(),
                permission: contract.permission.clone(),
                turn_control: contract.turn_control.clone(),
                admission: contract.admission.clone(),
            },
            engine,
        );
        if let Some(display) = &contract.display {
            if let Some(kind) = display.kind {
                resolved.display.kind = kind;
            }
            resolved.display.max_size = display.max_size.map(|s| s.0);
            if let Some(when) = display.when {
                resolved.display.when = when;
            }
        }
        resolved
    }

    /// Applies a patch (a contract's own fields, or a mode's overrides) over this contract.
    pub fn apply(&mut self, patch: &ContractPatch, engine: &ResolvedEngine) {
        if let Some(c) = &patch.concurrency {
            let flags = &mut self.concurrency;
            flags.concurrent_safe = c.concurrent_safe.unwrap_or(flags.concurrent_safe);
            flags.destructive = c.destructive.unwrap_or(flags.destructive);
            flags.read_only = c.read_only.unwrap_or(flags.read_only);
            flags.side_effect_scope = c.side_effect_scope.unwrap_or(flags.side_effect_scope);
        }
        match &patch.timeout {
            None => {}
            Some(TimeoutSpec::None(_)) => self.timeout.disabled = true,
            Some(TimeoutSpec::Policy(policy)) => {
                let t = &mut self.timeout;
                t.disabled = false;
                t.default = policy.default.or(t.default);
                t.max = policy.max.or(t.max);
                t.override_field = policy.override_field.clone().or(t.override_field.take());
                t.cleanup_grace = policy.cleanup_grace.unwrap_or(t.cleanup_grace);
                t.cancellation_message = policy
                    .cancellation_message
                    .clone()
                    .or(t.cancellation_message.take());
            }
        }
        if let Some(budget) = &patch.budget {
            self.budget = resolve_budget(budget, Some(&self.budget), engine);
        }
        if let Some(permission) = &patch.permission {
            self.default_permission = permission.default.unwrap_or(self.default_permission);
            self.always_ask = permission.always_ask.unwrap_or(self.always_ask);
        }
        if let Some(turn_control) = &patch.turn_control {
            for (key, entry) in turn_control {
                let Some(outcome) = TurnOutcome::parse(key) else {
                    continue;
                };
                let rule = match entry {
                    TurnControlEntry::Action(action) => TurnRule {
                        action: *action,
                        message: None,
                    },
                    TurnControlEntry::Detailed(detail) => TurnRule {
                        action: detail.action,
                        message: detail.message.clone(),
                    },
                };
                self.turn_control.insert(outcome, rule);
            }
        }
        if let Some(admission) = &patch.admission
            && let Some(gate) = &admission.gate
        {
            self.gate = Some(gate.clone());
        }
    }
}

fn resolve_budget(
    policy: &BudgetPolicy,
    base: Option<&ResolvedBudget>,
    engine: &ResolvedEngine,
) -> ResolvedBudget {
    let defaults = &engine.budget;
    let pick = |own: Option<crate::model::Size>,
                inherited: Option<u64>,
                default: Option<crate::model::Size>| {
        own.map(|s| s.0).or(inherited).or(default.map(|s| s.0))
    };
    let max_model = pick(
        policy.max_model,
        base.map(|b| b.max_model),
        defaults.max_model,
    )
    .unwrap_or(u64::MAX);
    let max_inline = pick(
        policy.max_inline,
        base.and_then(|b| b.max_inline),
        defaults.max_inline,
    );
    ResolvedBudget {
        limit: max_inline.map_or(max_model, |inline| inline.min(max_model)),
        max_model,
        max_inline,
        overflow: policy
            .overflow
            .or(base.map(|b| b.overflow))
            .or(defaults.overflow)
            .unwrap_or(Overflow::Truncate),
        keep: policy
            .keep
            .or(base.map(|b| b.keep))
            .or(defaults.keep)
            .unwrap_or(Keep::Head),
        preview: pick(policy.preview, base.map(|b| b.preview), defaults.preview).unwrap_or(0),
        weight: policy
            .weight
            .or(base.map(|b| b.weight))
            .or(defaults.weight)
            .unwrap_or(1)
            .max(1),
        min_share: pick(
            policy.min_share,
            base.map(|b| b.min_share),
            defaults.min_share,
        )
        .unwrap_or(0),
        batch_exempt: policy
            .batch_exempt
            .or(base.map(|b| b.batch_exempt))
            .or(defaults.batch_exempt)
            .unwrap_or(false),
        retention: policy
            .retention
            .or(base.map(|b| b.retention))
            .or(defaults.retention)
            .unwrap_or(engine.artifacts.retention),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_outcomes_parse() {
        assert_eq!(TurnOutcome::parse("success"), Some(TurnOutcome::Success));
        assert_eq!(
            TurnOutcome::parse("error:quota"),
            Some(TurnOutcome::Error("quota".into()))
        );
        assert_eq!(
            TurnOutcome::parse("limit:cron"),
            Some(TurnOutcome::Limit("cron".into()))
        );
        assert_eq!(TurnOutcome::parse("other"), None);
    }
}
