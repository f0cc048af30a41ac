//! Permission rules (SPEC §7.1): which calls get which decision, with examples checked at
//! load time.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Decision;
use super::contract::SideEffectScope;

/// A permission rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Unique name; shown in decisions, denials and `explain`.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Tools the rule applies to: canonical names, aliases, or globs (`mcp__github__*`);
    /// `"*"` (the default) for all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Only in these modes (any of them). Absent: in every mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Vec<String>>,
    /// Contract flags the tool must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<RuleWhen>,
    /// Argument matchers keyed by field name or JSON pointer (starting with `/`); all must
    /// hold.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub matchers: Option<IndexMap<String, ArgMatcher>>,
    /// The decision when the rule matches. Required, unless a lower layer defines a rule of
    /// the same name (a rule is merged field by field with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// Higher priority rules decide first (default 0); at equal priority deny beats ask beats
    /// allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Why; the model sees it when the rule denies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Calls that must match the rule and calls that must not; checked at load time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examples: Option<RuleExamples>,
    /// How the rule takes effect (default `enforce`): `audit` and `warn` rules decide
    /// nothing; a call whose decision they would change records it (events, the decision
    /// log, `test`, `diff`), and `warn` also tells the model. For rolling a rule out in
    /// stages: ship it as `audit`, watch what it would change, then enforce it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforcement: Option<Enforcement>,
    /// Switches off a rule defined by a lower layer (not possible for enforced layers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
}

/// How a rule takes effect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// The rule decides.
    #[default]
    Enforce,
    /// The rule decides nothing; where it would change a decision, the model is told and
    /// the change is recorded.
    Warn,
    /// The rule decides nothing; where it would change a decision, the change is recorded.
    Audit,
}

impl Enforcement {
    /// `enforce`, `warn` or `audit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Enforcement::Enforce => "enforce",
            Enforcement::Warn => "warn",
            Enforcement::Audit => "audit",
        }
    }
}

/// Contract flags a rule may require.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleWhen {
    /// The contract's `concurrency.read_only`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The contract's `concurrency.destructive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// The contract's `concurrency.concurrent_safe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_safe: Option<bool>,
    /// The contract's `concurrency.side_effect_scope` (any of these).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_effect_scope: Option<Vec<SideEffectScope>>,
}

/// Matchers for one argument. Every kind given must hold; within a kind, any pattern may
/// match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgMatcher {
    /// Glob patterns over the string value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<OneOrMany<String>>,
    /// Regular expressions over the string value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<OneOrMany<String>>,
    /// Paths the value, itself a glob (a search tool's file filter), must not reach: holds
    /// when the value's glob matches one of them (`.en?` and `**/.e*` reach `.env`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reaches: Option<OneOrMany<String>>,
    /// With `reaches`: the input field naming the folder the glob is taken in (the
    /// workspace root when the field is absent or empty), for a tool that lists files
    /// (`Glob`). The glob is then compared as a location: its folder part is located as a
    /// path argument is (`~` expanded, `..` resolved, symlinks followed: written and
    /// resolved both count), and the `reaches` paths are taken as locations too (`~/` under
    /// the home folder, a relative one under the workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reaches_from: Option<String>,
    /// The value equals this JSON value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<serde_json::Value>,
    /// The argument is present (`true`) or absent (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// Path globs over the location the value names: `~`/`$HOME` expanded, `.`/`..` resolved,
    /// relative paths taken against the workspace root, symlinks followed (the written and the
    /// resolved location are both judged). A pattern starting with `/` matches absolute
    /// locations, one starting with `~/` locations under the home folder, any other pattern
    /// (`**`, `src/**`, `**/.env`) locations inside the workspace only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<OneOrMany<String>>,
    /// Whether the location the value names (written or resolved) lies inside the workspace
    /// (the root itself included) or outside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceSide>,
    /// Whether the location the value names (written or resolved) is one of the loaded policy
    /// files or lies inside a loaded policy folder (`true`), or not (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_files: Option<bool>,
    /// Whether the location the value names (written or resolved) is a file git runs by the
    /// workspace repository's config — a config it includes, its hooks folder (or what lies
    /// below it), a linked hook's target, a script a command setting names — (`true`), or
    /// not (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_runs: Option<bool>,
    /// Token patterns (`git diff *`) matched against every simple command of the value parsed
    /// as a shell command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<OneOrMany<String>>,
    /// With `shell` in an allow rule: commands may redirect output to files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_redirection: Option<bool>,
    /// `true`: the value, read as a command line, only reads — every command it runs is
    /// classified read-only by the command table (`commands:`), with no option or word that
    /// writes, runs code or reaches the network, no file-writing redirection and only
    /// harmless environment assignments. `false`: it does more than that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
}

/// Which side of the workspace boundary a location lies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceSide {
    /// The workspace root or anything under it.
    Inside,
    /// Anything else.
    Outside,
}

impl WorkspaceSide {
    /// Its name in policy files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inside => "inside",
            Self::Outside => "outside",
        }
    }
}

/// One value or a list of values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// A single value.
    One(T),
    /// A list.
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    /// The values as a slice.
    pub fn as_slice(&self) -> &[T] {
        match self {
            OneOrMany::One(value) => std::slice::from_ref(value),
            OneOrMany::Many(values) => values,
        }
    }
}

/// Example calls checked when the policy set loads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleExamples {
    /// Calls the rule must match.
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    pub matching: Vec<ExampleCall>,
    /// Calls the rule must not match.
    #[serde(default, rename = "not_match", skip_serializing_if = "Vec::is_empty")]
    pub not_matching: Vec<ExampleCall>,
}

/// An example call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExampleCall {
    /// Tool name (or alias).
    pub tool: String,
    /// The call's input.
    #[serde(default)]
    pub input: serde_json::Value,
    /// Modes active for the example.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Vec<String>>,
}
