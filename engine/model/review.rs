//! The `review:` section: how `toolgate diff` (and hot reload) rates a change by its effect
//! on decisions. The built-in table is `policies/review.yaml`; a layer overrides one effect's
//! risk or a threshold (the section merges key by key, like `engine`).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `review` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewSection {
    /// The risk of each effect a change can have. An effect not listed is `high`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub risks: IndexMap<Effect, Risk>,
    /// A timeout, size or concurrency limit raised by more than this factor (`2`: to more
    /// than twice its old value) has the effect `limit_raised`; a smaller raise is
    /// `schedule`. Default 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1.0))]
    pub limit_factor: Option<f64>,
}

impl ReviewSection {
    /// The risk of an effect (`high` when the table does not list it: an unknown effect
    /// deserves a look).
    pub fn risk(&self, effect: Effect) -> Risk {
        self.risks.get(&effect).copied().unwrap_or(Risk::High)
    }

    /// The factor past which a raised limit is `limit_raised`.
    pub fn limit_factor(&self) -> f64 {
        self.limit_factor.unwrap_or(2.0)
    }
}

/// What a change can do to the calls the policies judge.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Can move some call toward `allow`, shown from the patterns themselves: a deny or ask
    /// rule narrowed, removed, disabled, restricted or lowered; an allow rule widened, added
    /// or raised; a default moved toward allow; `always_ask` or `locked` dropped.
    Widens,
    /// Might move some call toward `allow`: the change could not be shown to narrow (a
    /// regular expression, a `when` condition, patterns that cannot be compared).
    MayWiden,
    /// Can only move calls away from `allow` (a deny rule added or widened, an allow rule
    /// narrowed or removed, a default moved toward deny).
    Narrows,
    /// A tool with side effects may now run concurrently with others.
    ConcurrentSideEffects,
    /// A timeout removed (`timeout: none`, or a cap dropped).
    TimeoutRemoved,
    /// A timeout, size or concurrency limit raised past `limit_factor`.
    LimitRaised,
    /// A hook added or changed that can allow calls or rewrite their input.
    HookCanAllow,
    /// What runs for a call changed (a handler, a hook's command).
    RunsDifferently,
    /// How or when calls run changed (concurrency, a smaller timeout or limit change,
    /// admission gates, modes).
    Schedule,
    /// The review table itself changed (a change here can hide the risk of others).
    ReviewChanged,
    /// No effect on what runs or how: descriptions, reasons, examples, display.
    Cosmetic,
}

impl Effect {
    /// Every effect, in the order of the documentation's table.
    pub const ALL: [Effect; 11] = [
        Effect::Widens,
        Effect::MayWiden,
        Effect::Narrows,
        Effect::ConcurrentSideEffects,
        Effect::TimeoutRemoved,
        Effect::LimitRaised,
        Effect::HookCanAllow,
        Effect::RunsDifferently,
        Effect::Schedule,
        Effect::ReviewChanged,
        Effect::Cosmetic,
    ];

    /// Its name in policy files.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Widens => "widens",
            Effect::MayWiden => "may_widen",
            Effect::Narrows => "narrows",
            Effect::ConcurrentSideEffects => "concurrent_side_effects",
            Effect::TimeoutRemoved => "timeout_removed",
            Effect::LimitRaised => "limit_raised",
            Effect::HookCanAllow => "hook_can_allow",
            Effect::RunsDifferently => "runs_differently",
            Effect::Schedule => "schedule",
            Effect::ReviewChanged => "review_changed",
            Effect::Cosmetic => "cosmetic",
        }
    }
}

/// How much a change deserves a reviewer's attention.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Tightens policy or changes nothing about what may run.
    Low,
    /// Changes how or when things run.
    Medium,
    /// Loosens what may run, or changes what runs.
    High,
}

impl Risk {
    /// `low`, `medium` or `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}
