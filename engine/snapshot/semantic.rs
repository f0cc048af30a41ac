//! The semantic stage (SPEC §2.4): checks across files on the merged policy set, and the
//! compilation that goes with them (rules, input and output schemas). Every problem is
//! reported at the file, line and column that set the offending value.
//!
//! Errors: duplicate or shadowing aliases, references to unknown tools, gates and modes,
//! `default > max` timeouts, contradictory flags, invalid globs, regexes, shell patterns and
//! JSON pointers (at the position inside the pattern where it can be told), invalid input or
//! output schemas, rule examples that do not behave as stated, unknown template placeholders,
//! unknown lock paths, and the rule mistakes of `rule_mistakes.rs` beside it (matchers without a
//! condition, selectors the input schema does not define). Warnings (lints): rules that can
//! never match (their tools, flags or `match` against the input schema) or are fully
//! shadowed, budgets where one limit makes the other ineffective, batch-exempt tools without
//! a limit of their own, timeout override fields missing from the input schema, locks outside
//! enforced layers.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

use rayon::prelude::*;
use serde_json::Value;

use super::Sources;
use super::layer::LayerSpec;
use super::provenance::{Origin, Provenance};
use super::rule_mistakes::{self, CoveredTool, Place};
use crate::diagnostics::{Code, Diagnostic, Location, Severity, closest};
use crate::load::spans::{NodeSpan, join_pointer};
use crate::model::contract::{TimeoutSpec, ToolContract};
use crate::model::engine_config::MessageKey;
use crate::model::hook::HookEvent;
use crate::model::resolved::{ResolvedConcurrency, ResolvedContract, ResolvedEngine};
use crate::model::rule::{ExampleCall, RuleWhen};
use crate::model::template;
use crate::model::{Decision, ModeName, PolicyFile, ToolName};
use crate::policy::MatchContext;
use crate::policy::commands::CommandTable;
use crate::policy::matcher::PatternKind;
use crate::policy::rule::{
    CallFacts, CompiledRule, RuleError, RuleOrigin, ToolNames, compile_rule, when_holds,
};
use crate::policy::rules::RuleSet;

/// What the semantic stage looks at.
pub struct Input<'a> {
    /// The files.
    pub sources: &'a Sources,
    /// The layers.
    pub layers: &'a [LayerSpec],
    /// Provenance of the merged set.
    pub provenance: &'a Provenance,
    /// The merged set, typed.
    pub typed: &'a PolicyFile,
    /// The resolved engine settings, if complete.
    pub engine: Option<&'a ResolvedEngine>,
    /// Context for evaluating rule examples.
    pub match_ctx: &'a MatchContext,
    /// Build every rule's automata now (see [`super::LoadOptions::build_all_matchers`]).
    pub build_all_matchers: bool,
}

/// Compiled input and output validators of one tool.
pub type Validators = (
    Option<Arc<jsonschema::Validator>>,
    Option<Arc<jsonschema::Validator>>,
);

/// What the semantic stage produces.
pub struct Output {
    /// Every problem found.
    pub diagnostics: Vec<Diagnostic>,
    /// Canonical tool names and aliases.
    pub names: ToolNames,
    /// The compiled rules (those that compiled).
    pub rules: RuleSet,
    /// Compiled schemas per tool name.
    pub validators: HashMap<String, Validators>,
    /// Enabled hooks with their tools resolved.
    pub hooks: Vec<super::SnapshotHook>,
}

struct Checker<'a> {
    input: &'a Input<'a>,
    diagnostics: Vec<Diagnostic>,
}

impl Input<'_> {
    /// The location that set the value at an effective pointer.
    fn at(&self, pointer: &str) -> Option<Location> {
        self.sources.locate(self.provenance, pointer)
    }

    /// The location of the key of the member at an effective pointer.
    fn at_key(&self, pointer: &str) -> Option<Location> {
        self.sources.locate_key(self.provenance, pointer)
    }

    /// Whether every value at and below an effective pointer comes from the layers shipped in
    /// the binary (the engine defaults and the built-in layer); `true` when nothing is there.
    fn shipped(&self, pointer: &str) -> bool {
        self.sources.shipped(self.layers, self.provenance, pointer)
    }

    /// The layer of the file that set the value at an effective pointer.
    fn layer_of(&self, pointer: &str) -> Option<&LayerSpec> {
        let (_, origin) = self.provenance.nearest(pointer)?;
        self.layer_of_origin(origin)
    }

    /// The layer of the file of an origin.
    fn layer_of_origin(&self, origin: &Origin) -> Option<&LayerSpec> {
        let file = self.sources.files.get(origin.file.0 as usize)?;
        self.layers.get(file.layer)
    }
}

impl Checker<'_> {
    fn at(&self, pointer: &str) -> Option<Location> {
        self.input.at(pointer)
    }

    fn at_key(&self, pointer: &str) -> Option<Location> {
        self.input.at_key(pointer)
    }

    /// A location inside a string value, `offset` bytes into the string's content (as
    /// decoded: escapes and quotes of the source are accounted for).
    fn inside(&self, pointer: &str, offset: usize) -> Option<Location> {
        self.inside_len(pointer, offset, 1)
    }

    /// Like [`Checker::inside`], underlining `len` bytes of the content. Falls back to the
    /// whole value when the position cannot be told for certain (a multi-line value).
    fn inside_len(&self, pointer: &str, offset: usize, len: usize) -> Option<Location> {
        let location = self.at(pointer)?;
        let text = location.source.text();
        let start = location.span.offset;
        let end = location.span.end().max(start).min(text.len());
        let Some(raw) = text.get(start..end) else {
            return Some(location);
        };
        let Some(from) = source_offset(raw, offset) else {
            return Some(location);
        };
        let to = source_offset(raw, offset + len.max(1))
            .filter(|to| *to > from)
            .unwrap_or(from + 1);
        Some(location.source.location_at(start + from, to - from))
    }

    fn push(&mut self, diagnostic: Diagnostic, location: Option<Location>) {
        self.diagnostics.push(match location {
            Some(location) => diagnostic.with_location(location),
            None => diagnostic,
        });
    }

    fn layer_of(&self, pointer: &str) -> Option<&LayerSpec> {
        self.input.layer_of(pointer)
    }
}

/// Runs every semantic check and compiles what the snapshot needs.
pub fn check(input: Input<'_>) -> Output {
    let started = std::time::Instant::now();
    let step = |name: &str| {
        tracing::debug!(
            step = name,
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "semantic check"
        );
    };
    let mut checker = Checker {
        input: &input,
        diagnostics: Vec::new(),
    };
    let names = check_names(&mut checker);
    if let Some(engine) = input.engine {
        check_templates(&mut checker, engine);
    }
    let tools: Vec<(&String, &ToolContract)> = input.typed.tools.iter().collect();
    // Tools often share patterns (a path's `pattern`, say): compile each once per load.
    let patterns = jsonschema::PatternCache::new();
    // Contracts are independent of each other: check each and compile its schemas in one
    // parallel pass (the diagnostics are sorted by place at the end of the load).
    let compiled: Vec<_> = tools
        .par_iter()
        .map(|(name, contract)| {
            let mut own = Checker {
                input: &input,
                diagnostics: Vec::new(),
            };
            check_contract(&mut own, name, contract);
            let validators = compile_schemas(&mut own, &patterns, name, contract);
            (validators, own.diagnostics)
        })
        .collect();
    let mut validators = HashMap::new();
    for ((name, _), (compiled, found)) in tools.iter().zip(compiled) {
        checker.diagnostics.extend(found);
        validators.insert((*name).clone(), compiled);
    }
    step("names, templates, contracts and schemas");
    let mut names = names;
    {
        let typed = checker.input.typed;
        let rule_patterns = typed.rules.iter().map(|rule| rule.tools.as_deref());
        let hook_patterns = typed.hooks.iter().map(|hook| hook.tools.as_deref());
        names.index_globs(
            rule_patterns
                .chain(hook_patterns)
                .flat_map(|tools| tools.unwrap_or(&[]))
                .map(String::as_str)
                .chain(std::iter::once("*")),
        );
    }
    check_mcp_servers(&mut checker);
    let rules = check_rules(&mut checker, &names);
    step("rules");
    let hooks = check_hooks(&mut checker, &names);
    check_agents(&mut checker, &names);
    Output {
        diagnostics: checker.diagnostics,
        names,
        rules,
        validators,
        hooks,
    }
}

/// Aliases: unique, never a tool's name.
fn check_names(checker: &mut Checker<'_>) -> ToolNames {
    let typed = checker.input.typed;
    let canonical: Vec<ToolName> = typed
        .tools
        .keys()
        .map(|name| ToolName::new(name.as_str()))
        .collect();
    let mut aliases: HashMap<String, ToolName> = HashMap::new();
    let mut owner_pointer: HashMap<String, String> = HashMap::new();
    for (name, contract) in &typed.tools {
        for (index, alias) in contract.aliases.iter().flatten().enumerate() {
            let pointer = format!("{}/aliases/{index}", join_pointer("/tools", name));
            if typed.tools.contains_key(alias) {
                let related = checker.at_key(&join_pointer("/tools", alias));
                let mut diagnostic = Diagnostic::new(
                    Code::SemanticAliasConflict,
                    format!("alias `{alias}` of `{name}` is the name of a tool"),
                )
                .with_help("an alias may not shadow a tool: remove it or rename it");
                if let Some(related) = related {
                    diagnostic = diagnostic.with_related("the tool is defined here", related);
                }
                let location = checker.at(&pointer);
                checker.push(diagnostic, location);
                continue;
            }
            if let Some(other) = aliases.get(alias) {
                let mut diagnostic = Diagnostic::new(
                    Code::SemanticAliasConflict,
                    format!("alias `{alias}` is claimed by both `{other}` and `{name}`"),
                )
                .with_help("an alias must name exactly one tool");
                if let Some(first) = owner_pointer.get(alias).and_then(|p| checker.at(p)) {
                    diagnostic = diagnostic.with_related("first claimed here", first);
                }
                let location = checker.at(&pointer);
                checker.push(diagnostic, location);
                continue;
            }
            aliases.insert(alias.clone(), ToolName::new(name.as_str()));
            owner_pointer.insert(alias.clone(), pointer);
        }
    }
    ToolNames::new(canonical, aliases)
}

/// Message templates may use only the placeholders their situation provides.
fn check_templates(checker: &mut Checker<'_>, engine: &ResolvedEngine) {
    for key in MessageKey::ALL {
        let template = engine.messages.template(*key);
        let pointer = format!("/engine/messages/{}", key.field());
        for (offset, name) in template::placeholders(template) {
            if key.placeholders().contains(&name) {
                continue;
            }
            let allowed = key.placeholders();
            let help = if allowed.is_empty() {
                "this message takes no placeholders; write `{{` and `}}` for literal braces"
                    .to_owned()
            } else {
                format!(
                    "this message may use {}; write `{{{{` and `}}}}` for literal braces",
                    allowed
                        .iter()
                        .map(|p| format!("`{{{p}}}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let message = if name.is_empty() {
                format!("message `{}` has an unclosed `{{`", key.field())
            } else {
                format!(
                    "message `{}` uses unknown placeholder `{{{name}}}`",
                    key.field()
                )
            };
            let location = checker.inside_len(&pointer, offset, name.len() + 2);
            checker.push(
                Diagnostic::new(Code::SemanticInvalidTemplate, message).with_help(help),
                location,
            );
        }
    }
}

fn check_contract(checker: &mut Checker<'_>, name: &str, contract: &ToolContract) {
    let base = join_pointer("/tools", name);
    let typed = checker.input.typed;
    if name.contains('*') {
        check_wildcard(checker, name, contract);
    }
    if let Some(flags) = &contract.concurrency {
        let destructive = flags.destructive == Some(true);
        for (other, value) in [
            ("concurrent_safe", flags.concurrent_safe),
            ("read_only", flags.read_only),
        ] {
            if destructive && value == Some(true) {
                let mut diagnostic = Diagnostic::new(
                    Code::SemanticContradiction,
                    format!("tool `{name}` is both `destructive` and `{other}`"),
                )
                .with_help(match other {
                    "concurrent_safe" => "a destructive tool always runs alone; set `concurrent_safe: false` or drop `destructive`",
                    _ => "a tool that destroys is not read-only; drop one of the two flags",
                });
                if let Some(related) = checker.at(&format!("{base}/concurrency/{other}")) {
                    diagnostic = diagnostic.with_related(format!("`{other}` set here"), related);
                }
                let location = checker.at(&format!("{base}/concurrency/destructive"));
                checker.push(diagnostic, location);
            }
        }
    }
    if let Some(TimeoutSpec::Policy(policy)) = &contract.timeout {
        if let (Some(default), Some(max)) = (policy.default, policy.max)
            && default > max
        {
            let mut diagnostic = Diagnostic::new(
                Code::SemanticTimeoutRange,
                format!("timeout default `{default}` of `{name}` is longer than its max `{max}`"),
            )
            .with_help("the default would always be capped; lower the default or raise the max");
            if let Some(related) = checker.at(&format!("{base}/timeout/max")) {
                diagnostic = diagnostic.with_related("max set here", related);
            }
            let location = checker.at(&format!("{base}/timeout/default"));
            checker.push(diagnostic, location);
        }
        if let Some(field) = &policy.override_field
            && let Some(Value::Object(schema)) = &contract.input_schema
            && let Some(Value::Object(properties)) = schema.get("properties")
            && !properties.contains_key(field)
        {
            let location = checker.at(&format!("{base}/timeout/override_field"));
            checker.push(
                Diagnostic::new(
                    Code::SemanticUnknownReference,
                    format!("timeout override field `{field}` is not a property of `{name}`'s input schema"),
                )
                .with_severity(Severity::Warning)
                .with_help("add it to `input_schema.properties` (an integer of milliseconds) or fix the name"),
                location,
            );
        }
    }
    if let Some(budget) = &contract.budget {
        if let (Some(model), Some(inline)) = (budget.max_model, budget.max_inline)
            && model != inline
        {
            let (larger, smaller, value, effective) = if model > inline {
                ("max_model", "max_inline", model, inline)
            } else {
                ("max_inline", "max_model", inline, model)
            };
            let mut diagnostic = Diagnostic::new(
                Code::SemanticBudgetIneffective,
                format!("`{larger}: {value}` of `{name}` has no effect: `{smaller}` limits the output to {effective}"),
            )
            .with_help(format!("the effective limit is the smaller one; set `{larger}` to {effective} or remove it"));
            if let Some(related) = checker.at(&format!("{base}/budget/{smaller}")) {
                diagnostic = diagnostic.with_related(format!("`{smaller}` set here"), related);
            }
            let location = checker.at(&format!("{base}/budget/{larger}"));
            checker.push(diagnostic, location);
        }
        if budget.batch_exempt == Some(true)
            && budget.max_model.is_none()
            && budget.max_inline.is_none()
        {
            let location = checker.at(&format!("{base}/budget/batch_exempt"));
            checker.push(
                Diagnostic::new(
                    Code::SemanticExemptUnbounded,
                    format!("tool `{name}` is exempt from the batch budget but has no size limit of its own"),
                )
                .with_help("set `budget.max_model` so that an exempt output cannot flood the context"),
                location,
            );
        }
    }
    let gate_refs = contract
        .admission
        .iter()
        .map(|a| (format!("{base}/admission/gate"), a.gate.clone()))
        .chain(contract.modes.iter().flatten().filter_map(|(mode, patch)| {
            patch.admission.as_ref().map(|a| {
                (
                    format!(
                        "{}/admission/gate",
                        join_pointer(&format!("{base}/modes"), mode)
                    ),
                    a.gate.clone(),
                )
            })
        }));
    for (pointer, gate) in gate_refs.collect::<Vec<_>>() {
        if let Some(gate) = gate
            && !typed.gates.contains_key(gate.as_str())
        {
            let location = checker.at(&pointer);
            checker.push(unknown("gate", gate.as_str(), typed.gates.keys()), location);
        }
    }
    for mode in contract.modes.iter().flatten().map(|(mode, _)| mode) {
        if !typed.modes.contains_key(mode) {
            let location = checker.at_key(&join_pointer(&format!("{base}/modes"), mode));
            checker.push(unknown("mode", mode, typed.modes.keys()), location);
        }
    }
    check_locks(checker, name, contract);
    check_mode_timeouts(checker, name, contract);
    check_handler_templates(checker, name, contract);
    if let Some(crate::model::handler::HandlerSpec::Command(command)) = &contract.handler {
        check_program(
            checker,
            &format!("{base}/handler/argv"),
            &command.argv,
            command.env.as_deref().unwrap_or_default(),
            command
                .set_env
                .as_ref()
                .and_then(|set| set.get("PATH"))
                .map(String::as_str),
            command.cwd.as_deref(),
            &format!("the handler of `{name}`"),
        );
        check_script_placeholders(
            checker,
            &format!("{base}/handler/argv"),
            &command.argv,
            name,
        );
        for key in command.set_env.iter().flat_map(|set| set.keys()) {
            if key.is_empty() || key.contains(['=', '\0']) {
                let location =
                    checker.at_key(&join_pointer(&format!("{base}/handler/set_env"), key));
                checker.push(
                    Diagnostic::new(
                        Code::SemanticInvalidEnvName,
                        format!(
                            "`set_env` of the handler of `{name}` names the variable `{}`, which no process can be given",
                            key.escape_debug()
                        ),
                    )
                    .with_help("a variable's name is not empty and holds no `=` or NUL byte; write the name alone"),
                    location,
                );
            }
        }
    }
}

/// A program's name as [`runs_code`] knows it: its file name without a version at its end
/// (`python3.12`, `node22`, `php8.2`, `bash5`) and GNU's `g` prefix (`gsed`, `gmake`).
fn program_name(arg: &str) -> String {
    let file = arg.rsplit('/').next().unwrap_or(arg);
    if CODE_PROGRAMS.contains(&file) {
        return file.to_owned();
    }
    let bare = file.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    let bare = if bare.is_empty() { file } else { bare };
    match bare.strip_prefix('g') {
        Some(rest @ ("sed" | "make" | "awk")) => rest.to_owned(),
        _ => bare.to_owned(),
    }
}

/// Whether a program ([`program_name`]) reads an argument as code: a shell (also through
/// `busybox` or `env`), an interpreter or REPL, an editor's or debugger's command line
/// (`vim -c`, `gdb -ex`), a query language's client (`sqlite3`, `psql -c`), a script language
/// the command table knows (`awk`, `sed`, `jq`, `yq`), `make` (whose `NAME=value` operands
/// are makefile lines), a macro processor (`m4`), or a program that hands an argument to a
/// shell (`su -c`, `flock -c`, `script -c`, `nix-shell --run`) or all of them
/// ([`joins_into_shell`]).
fn runs_code(program: &str) -> bool {
    CODE_PROGRAMS.contains(&program) || joins_into_shell(program)
}

/// The programs [`runs_code`] names.
const CODE_PROGRAMS: &[&str] = &[
    "sh",
    "bash",
    "rbash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "ash",
    "fish",
    "csh",
    "tcsh",
    "nu",
    "xonsh",
    "elvish",
    "busybox",
    "env",
    "python",
    "pypy",
    "perl",
    "ruby",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "node",
    "nodejs",
    "deno",
    "bun",
    "php",
    "julia",
    "R",
    "Rscript",
    "erl",
    "escript",
    "elixir",
    "iex",
    "groovy",
    "scala",
    "kotlin",
    "clojure",
    "racket",
    "guile",
    "sbcl",
    "ocaml",
    "swift",
    "ghci",
    "runghc",
    "osascript",
    "pwsh",
    "powershell",
    "expect",
    "awk",
    "mawk",
    "nawk",
    "original-awk",
    "goawk",
    "sed",
    "jq",
    "gojq",
    "jaq",
    "yq",
    "m4",
    "make",
    "vim",
    "vi",
    "nvim",
    "view",
    "ex",
    "emacs",
    "gdb",
    "lldb",
    "sqlite",
    "psql",
    "mysql",
    "mariadb",
    "su",
    "runuser",
    "flock",
    "script",
    "nix-shell",
];

/// Whether a program joins the arguments after it into a line a shell runs (`ssh HOST CMD`,
/// `watch CMD`, GNU `parallel`, `tmux new-session CMD`): a placeholder among them is code even
/// alone in its argument.
fn joins_into_shell(program: &str) -> bool {
    matches!(program, "ssh" | "watch" | "parallel" | "tmux" | "screen")
}

/// Whether `arg`, an option, makes the next argument a script: a shell's or Python's `-c`
/// (also in a cluster, `-ec`), node's `-e`/`-p`/`--eval`/`--print`, perl's and ruby's `-e`
/// (`-ne`, `-lE`), `su -c`, `--command`, `env -S` (which splits it into a command line).
fn script_flag(arg: &str) -> bool {
    match arg.strip_prefix("--") {
        Some(long) => matches!(
            long,
            "eval"
                | "print"
                | "command"
                | "exec"
                | "source"
                | "expression"
                | "split-string"
                | "run"
        ),
        None => arg.strip_prefix('-').is_some_and(|letters| {
            letters.contains(['c', 'e', 'E', 'p', 'S'])
                && letters.chars().all(|c| c.is_ascii_alphanumeric())
        }),
    }
}

/// Whether `text`, the rest of an argument before a placeholder that ends it, glues the value
/// to something that keeps it data: an option's name (`--name=`), a variable's name (`x=`,
/// awk's assignment), or a path of plain names (`./`, `src/`).
fn keeps_data(text: &str) -> bool {
    let name = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    if let Some(option) = text.strip_prefix("--").and_then(|t| t.strip_suffix('=')) {
        return name(option) && !script_flag(&format!("--{option}"));
    }
    if let Some(variable) = text.strip_suffix('=') {
        return name(variable) && !variable.starts_with('-');
    }
    text.strip_suffix('/')
        .is_some_and(|folder| folder.split('/').all(|part| part.is_empty() || name(part)))
}

/// An input placeholder sharing an argument with other text, after a program that reads an
/// argument as code ([`runs_code`]): the value may become code, which no rule judged (an
/// error) — `[bash, -c, "grep '{{input.q}}' src"]`, `[env, sh, -c, …]`, `[awk,
/// "/{{input.q}}/"]`, `[sed, "{{input.n}}p"]`. A placeholder alone in its argument, or glued
/// after an option's or a variable's name or a plain folder path ([`keeps_data`]), is data —
/// except as the script itself (after `-c`, `-e`, … or a shell's first operand after them).
fn check_script_placeholders(
    checker: &mut Checker<'_>,
    pointer: &str,
    argv: &[String],
    name: &str,
) {
    let Some(start) = argv
        .iter()
        .position(|arg| !arg.contains("{{") && runs_code(&program_name(arg)))
    else {
        return;
    };
    // The last program that reads code before an argument is the one that reads it
    // (`env ssh HOST …`).
    let mut program = program_name(&argv[start]);
    // A shell's script is its first operand after a `-c` cluster: options, their values
    // (`-o pipefail`) and `--` may come between.
    let mut script_pending = false;
    let mut values_pending = 0;
    for (at, arg) in argv.iter().enumerate().skip(start + 1) {
        let previous = &argv[at - 1];
        let option = arg.len() > 1 && arg.starts_with(['-', '+']) && values_pending == 0;
        let value = values_pending > 0 && !option;
        let script = script_pending && !option && !value || script_flag(previous);
        if value {
            values_pending -= 1;
        } else if option {
            script_pending |= script_flag(arg);
            if !arg.starts_with("--") {
                values_pending += arg.matches(['o', 'O']).count();
            }
        } else {
            script_pending = false;
        }
        if !option && !arg.contains("{{") && runs_code(&program_name(arg)) {
            program = program_name(arg);
        }
        let Ok(mut templates) = crate::handler::template::parse_argv(std::slice::from_ref(arg))
        else {
            continue;
        };
        let Some(template) = templates.pop() else {
            continue;
        };
        let mut placeholders = template.placeholders();
        let Some(first) = placeholders.next() else {
            continue;
        };
        let alone = first.span == (0..arg.len()) && placeholders.next().is_none();
        // awk, sed, jq and the like read an operand as their program (`s/a/{{input.x}}`),
        // and make reads `NAME=value` as a line of its makefile.
        let prefix = &arg[..first.span.start];
        let program_operand = matches!(
            program.as_str(),
            "awk"
                | "mawk"
                | "nawk"
                | "original-awk"
                | "goawk"
                | "sed"
                | "jq"
                | "gojq"
                | "jaq"
                | "yq"
                | "make"
                | "m4"
        );
        // For them a variable's value is data only as awk's `-v NAME=VALUE` (`s={{x}}` is
        // sed's `s` command, `n={{x}}` an awk program).
        let assignment = !prefix.starts_with('-') && prefix.ends_with('=');
        let glued = first.span.end == arg.len()
            && template.placeholders().count() == 1
            && keeps_data(prefix)
            && !(program_operand && prefix.ends_with('/'))
            && !(program_operand && assignment && !matches!(previous.as_str(), "-v" | "--assign"));
        let joined = joins_into_shell(&program) && !(glued && prefix.starts_with("--"));
        if !joined && (alone || glued && !script) {
            continue;
        }
        let location = checker.inside_len(
            &format!("{pointer}/{at}"),
            first.span.start,
            first.span.len(),
        );
        checker.push(
            Diagnostic::new(
                Code::SemanticInputInScript,
                format!(
                    "`{{{{{}}}}}` shares `argv[{at}]` of the handler of `{name}` with other text, and `{program}` may read that argument as code: the input's value would be part of it",
                    first.expr
                ),
            )
            .with_help(format!(
                "give the value an argument of its own, which a script reads as data: `{program} -c '… \"$1\" …' {program} \"{{{{{}}}}}\"` for a shell (node, perl and ruby read it from `process.argv`, `@ARGV`, `ARGV`; awk from `-v name={{{{{}}}}}`)",
                first.expr, first.expr
            )),
            location,
        );
    }
}

/// A command line that can never start: an argument with a NUL byte (an error: a process
/// argument ends at the first NUL), or a program that is not found (a warning: it may be
/// installed where the policies are used). A relative program path is taken from the
/// workspace (or `cwd` below it), as at run time; a bare name is looked up in the `PATH` the
/// process gets: the engine's when `env` passes `PATH`, `set_env`'s, else the C library's
/// default `/bin:/usr/bin`. A templated program (`{{input.x}}`) is not checked.
fn check_program(
    checker: &mut Checker<'_>,
    pointer: &str,
    argv: &[String],
    env_allow: &[String],
    path_set: Option<&str>,
    cwd: Option<&str>,
    what: &str,
) {
    for (index, arg) in argv.iter().enumerate() {
        if let Some(at) = arg.find('\0') {
            let location = checker.inside(&format!("{pointer}/{index}"), at);
            checker.push(
                Diagnostic::new(
                    Code::SemanticInvalidArgv,
                    format!("`argv[{index}]` of {what} (`{pointer}/{index}`) contains a NUL byte"),
                )
                .with_help("a process argument ends at the first NUL byte, so this command could never start; remove it"),
                location,
            );
        }
    }
    let Some(program) = argv.first() else {
        return;
    };
    if program.is_empty() || program.contains("{{") || program.contains('\0') {
        return;
    }
    let found = if program.contains('/') {
        let mut path = std::path::PathBuf::from(checker.input.match_ctx.workspace_root());
        if let Some(cwd) = cwd {
            path.push(cwd);
        }
        path.push(program);
        is_executable(&path)
    } else {
        let inherited = env_allow
            .iter()
            .any(|name| name == "PATH")
            .then(|| std::env::var("PATH").ok())
            .flatten();
        let search = path_set
            .map(str::to_owned)
            .or(inherited)
            .unwrap_or_else(|| "/bin:/usr/bin".to_owned());
        search
            .split(':')
            .filter(|dir| !dir.is_empty())
            .any(|dir| is_executable(&std::path::Path::new(dir).join(program)))
    };
    if found {
        return;
    }
    let help = if program.starts_with('/') {
        "there is no executable file at this path; check it".to_owned()
    } else if program.contains('/') {
        "a relative path is taken from the workspace root (or the handler's `cwd`); check the path, or use an absolute one".to_owned()
    } else if env_allow.iter().any(|name| name == "PATH") || path_set.is_some() {
        format!(
            "`{program}` is on no folder of the `PATH` the process gets; install it or give its absolute path"
        )
    } else {
        format!(
            "without `PATH` in `env` the process searches only /bin and /usr/bin; add `PATH` to `env`, or give the absolute path of `{program}`"
        )
    };
    let location = checker.at(&format!("{pointer}/0"));
    checker.push(
        Diagnostic::new(
            Code::SemanticMissingExecutable,
            format!("program `{program}` of {what} (`{pointer}/0`) is not found"),
        )
        .with_help(help),
        location,
    );
}

/// Whether `path` is a file with an execute bit.
fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// `default > max` as a mode sees it: a mode patch's timeout fields apply over the contract's,
/// so a patch that only raises `default` can push it past the contract's `max`.
fn check_mode_timeouts(checker: &mut Checker<'_>, name: &str, contract: &ToolContract) {
    let base = join_pointer("/tools", name);
    let base_policy = match &contract.timeout {
        Some(TimeoutSpec::Policy(policy)) => Some(policy),
        Some(TimeoutSpec::None(_)) | None => None,
    };
    for (mode, patch) in contract.modes.iter().flatten() {
        let Some(TimeoutSpec::Policy(policy)) = &patch.timeout else {
            continue;
        };
        if policy.default.is_none() && policy.max.is_none() {
            continue;
        }
        let patch_pointer = format!("{}/timeout", join_pointer(&format!("{base}/modes"), mode));
        let pick = |own: Option<crate::model::units::Duration>,
                    inherited: Option<crate::model::units::Duration>,
                    field: &str| {
            match (own, inherited) {
                (Some(value), _) => Some((value, format!("{patch_pointer}/{field}"))),
                (None, Some(value)) => Some((value, format!("{base}/timeout/{field}"))),
                (None, None) => None,
            }
        };
        let default = pick(
            policy.default,
            base_policy.and_then(|p| p.default),
            "default",
        );
        let max = pick(policy.max, base_policy.and_then(|p| p.max), "max");
        let (Some((default, default_at)), Some((max, max_at))) = (default, max) else {
            continue;
        };
        if default <= max {
            continue;
        }
        // Point at what the mode itself writes; the other value is the related place.
        let (primary, related, label) = if policy.default.is_some() {
            (default_at, max_at, "max set here")
        } else {
            (max_at, default_at, "default set here")
        };
        let mut diagnostic = Diagnostic::new(
            Code::SemanticTimeoutRange,
            format!(
                "in mode `{mode}`, timeout default `{default}` of `{name}` is longer than its max `{max}`"
            ),
        )
        .with_help("a mode's timeout fields apply over the contract's; lower the default or raise the max for this mode");
        if let Some(location) = checker.at(&related) {
            diagnostic = diagnostic.with_related(label, location);
        }
        let location = checker.at(&primary);
        checker.push(diagnostic, location);
    }
}

/// Command handler `argv` and HTTP header templates: well-formed (at the position inside the
/// string), reading only input fields the input schema declares, and only environment
/// variables the handler lists. The handler would otherwise fail every call at run time.
fn check_handler_templates(checker: &mut Checker<'_>, name: &str, contract: &ToolContract) {
    use crate::handler::template::{Source, TemplateErrorKind, parse_argv};
    use crate::model::handler::HandlerSpec;

    let base = join_pointer("/tools", name);
    match &contract.handler {
        Some(HandlerSpec::Command(command)) => {
            let declared = declared_fields(contract.input_schema.as_ref());
            for (index, arg) in command.argv.iter().enumerate() {
                let pointer = format!("{base}/handler/argv/{index}");
                let template = match parse_argv(std::slice::from_ref(arg)) {
                    Ok(mut templates) => templates.pop(),
                    Err(error) => {
                        let location =
                            checker.inside_len(&pointer, error.error.offset, error.error.len);
                        let diagnostic = match &error.error.kind {
                            TemplateErrorKind::NotAllowed { expr, .. } => Diagnostic::new(
                                Code::SemanticInvalidTemplate,
                                format!(
                                    "placeholder `{{{{{expr}}}}}` in `argv[{index}]` of `{name}` reads an environment variable; a command line takes only `input` placeholders"
                                ),
                            )
                            .with_help("list the variable under `handler.env` to pass it to the process, or set it with `handler.set_env`"),
                            _ => Diagnostic::new(
                                Code::SemanticInvalidTemplate,
                                format!(
                                    "invalid template in `argv[{index}]` of `{name}`: {}",
                                    error.error
                                ),
                            )
                            .with_help("placeholders are `{{input.FIELD}}` or `{{input./json/pointer}}`; write `{{{{` for a literal `{{`"),
                        };
                        checker.push(diagnostic, location);
                        continue;
                    }
                };
                let (Some(template), Some(declared)) = (template, &declared) else {
                    continue;
                };
                for placeholder in template.placeholders() {
                    let Source::Input { pointer: field } = &placeholder.source else {
                        continue;
                    };
                    let Some(first) = crate::load::spans::pointer_segments(field)
                        .and_then(|segments| segments.into_iter().next())
                    else {
                        continue;
                    };
                    if declared.iter().any(|d| d.as_str() == first.as_ref()) {
                        continue;
                    }
                    let help = if declared.is_empty() {
                        format!(
                            "the input schema declares no properties; add `{first}` to `input_schema.properties`"
                        )
                    } else {
                        unknown("input field", &first, declared.iter())
                            .help
                            .unwrap_or_default()
                    };
                    let location = checker.inside_len(
                        &pointer,
                        placeholder.span.start,
                        placeholder.span.len(),
                    );
                    checker.push(
                        Diagnostic::new(
                            Code::SemanticInvalidTemplate,
                            format!(
                                "placeholder `{{{{{}}}}}` in `argv[{index}]` of `{name}` reads `{first}`, which the input schema does not declare",
                                placeholder.expr
                            ),
                        )
                        .with_help(help),
                        location,
                    );
                }
            }
        }
        Some(HandlerSpec::Http(http)) => {
            check_header_templates(
                checker,
                &format!("{base}/handler/headers"),
                http.headers.as_ref(),
                http.env.as_deref().unwrap_or_default(),
                &format!("`{name}`"),
                ("the handler's `env`", "handler.env"),
                "the input is sent as the request body; header values may only use `{{env.NAME}}`",
            );
        }
        Some(HandlerSpec::Mcp(mcp)) => {
            let servers = &checker.input.typed.mcp_servers;
            if !servers.contains_key(&mcp.server) {
                let help = match closest(&mcp.server, servers.keys().map(String::as_str)) {
                    Some(candidate) => format!("did you mean `{candidate}`?"),
                    None if servers.is_empty() => "no MCP server is declared; declare it under `mcp_servers`, like `mcp_servers: { NAME: { command: [PROGRAM, ARG] } }`".to_owned(),
                    None => format!(
                        "declared MCP servers: {}",
                        servers.keys().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                    ),
                };
                let location = checker.at(&format!("{base}/handler/server"));
                checker.push(
                    Diagnostic::new(
                        Code::SemanticUnknownReference,
                        format!(
                            "unknown MCP server `{}` in the handler of `{name}`",
                            mcp.server
                        ),
                    )
                    .with_help(help),
                    location,
                );
            }
        }
        Some(HandlerSpec::Native(_)) | None => {}
    }
}

/// A wildcard contract (`mcp__<server>__*`): the one form there is, naming a declared server,
/// with an `mcp` handler for that server and no `tool` (the called name says it) and no
/// aliases (an alias names one tool).
fn check_wildcard(checker: &mut Checker<'_>, name: &str, contract: &ToolContract) {
    use crate::model::handler::HandlerSpec;
    use crate::model::mcp::{server_name_splits, wildcard_server};
    let base = join_pointer("/tools", name);
    let location = checker.at_key(&base);
    let Some(server) = wildcard_server(name) else {
        let inner = name
            .strip_prefix(crate::model::mcp::TOOL_PREFIX)
            .and_then(|rest| rest.strip_suffix("__*"))
            .unwrap_or_default();
        let help = if inner.is_empty() || server_name_splits(inner) {
            "the only wildcard is `mcp__<server>__*`, covering every tool of one server declared under `mcp_servers`".to_owned()
        } else {
            format!(
                "a wildcard needs a server name without `__` that does not end in `_`, so that the server in `mcp__<server>__<tool>` is read back unambiguously; rename server `{inner}`"
            )
        };
        checker.push(
            Diagnostic::new(
                Code::SemanticUnknownReference,
                format!("tool `{name}` is not a wildcard contract"),
            )
            .with_help(help),
            location,
        );
        return;
    };
    let servers = &checker.input.typed.mcp_servers;
    if !servers.contains_key(server) {
        let help = match closest(server, servers.keys().map(String::as_str)) {
            Some(candidate) => format!("did you mean `mcp__{candidate}__*`?"),
            None if servers.is_empty() => "no MCP server is declared; declare it under `mcp_servers`, like `mcp_servers: { NAME: { command: [PROGRAM, ARG] } }`".to_owned(),
            None => format!(
                "declared MCP servers: {}",
                servers.keys().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            ),
        };
        checker.push(
            Diagnostic::new(
                Code::SemanticUnknownReference,
                format!(
                    "wildcard contract `{name}` names MCP server `{server}`, which is not declared"
                ),
            )
            .with_help(help),
            location.clone(),
        );
        return;
    }
    match &contract.handler {
        Some(HandlerSpec::Mcp(mcp)) if mcp.server == server => {
            if let Some(tool) = &mcp.tool {
                let at = checker.at(&format!("{base}/handler/tool"));
                checker.push(
                    Diagnostic::new(
                        Code::SemanticContradiction,
                        format!("wildcard contract `{name}` names one tool, `{tool}`"),
                    )
                    .with_help("a wildcard covers every tool of its server, each called by its own name: drop `handler.tool`, or write an exact contract for that tool"),
                    at,
                );
            }
        }
        _ => {
            let at = checker.at(&format!("{base}/handler")).or(location.clone());
            checker.push(
                Diagnostic::new(
                    Code::SemanticContradiction,
                    format!("wildcard contract `{name}` needs the handler `{{ kind: mcp, server: {server} }}`"),
                )
                .with_help(format!("a wildcard covers the tools of MCP server `{server}` and sends their calls there; set `handler: {{ kind: mcp, server: {server} }}`")),
                at,
            );
        }
    }
    if contract
        .aliases
        .as_ref()
        .is_some_and(|aliases| !aliases.is_empty())
    {
        let at = checker.at(&format!("{base}/aliases"));
        checker.push(
            Diagnostic::new(
                Code::SemanticContradiction,
                format!("wildcard contract `{name}` has aliases"),
            )
            .with_help("an alias names one tool; give it to an exact contract of the tool"),
            at,
        );
    }
}

/// Header templates (of an HTTP handler or an MCP server): well-formed, never reading the
/// input, and reading only the environment variables `allowed` lists (`env_field` says
/// where that list is written).
fn check_header_templates(
    checker: &mut Checker<'_>,
    base: &str,
    headers: Option<&indexmap::IndexMap<String, String>>,
    allowed: &[String],
    owner: &str,
    (env_words, env_field): (&str, &str),
    input_help: &str,
) {
    use crate::handler::template::{Source, parse_template};

    for (header, value) in headers.into_iter().flatten() {
        let pointer = join_pointer(base, header);
        let template = match parse_template(value) {
            Ok(template) => template,
            Err(error) => {
                let location = checker.inside_len(&pointer, error.offset, error.len);
                checker.push(
                    Diagnostic::new(
                        Code::SemanticInvalidTemplate,
                        format!("invalid template in header `{header}` of {owner}: {error}"),
                    )
                    .with_help(
                        "header values may use `{{env.NAME}}`; write `{{{{` for a literal `{{`",
                    ),
                    location,
                );
                continue;
            }
        };
        for placeholder in template.placeholders() {
            let (message, help) = match &placeholder.source {
                Source::Input { .. } => (
                    format!(
                        "header `{header}` of {owner} reads the input with `{{{{{}}}}}`",
                        placeholder.expr
                    ),
                    input_help.to_owned(),
                ),
                Source::Env { name: variable } if !allowed.contains(variable) => (
                    format!(
                        "header `{header}` of {owner} reads environment variable `{variable}`, which {env_words} does not list"
                    ),
                    format!("add `{variable}` to `{env_field}`"),
                ),
                Source::Env { .. } => continue,
            };
            let location =
                checker.inside_len(&pointer, placeholder.span.start, placeholder.span.len());
            checker.push(
                Diagnostic::new(Code::SemanticInvalidTemplate, message).with_help(help),
                location,
            );
        }
    }
}

/// Each `mcp_servers` entry is either a stdio `command` or an HTTP `url`, with only the
/// fields of its kind, and its header templates read only the variables it lists.
fn check_mcp_servers(checker: &mut Checker<'_>) {
    let servers = &checker.input.typed.mcp_servers;
    for (name, server) in servers {
        let base = join_pointer("/mcp_servers", name);
        let misplaced: &[(&str, bool)] = match (&server.command, &server.url) {
            (Some(_), Some(_)) => {
                let location = checker.at(&format!("{base}/url"));
                checker.push(
                    Diagnostic::new(
                        Code::SemanticContradiction,
                        format!("MCP server `{name}` has both a `command` and a `url`"),
                    )
                    .with_help("a server is either started by toolgate (`command`, stdio) or reached over streamable HTTP (`url`); remove one"),
                    location,
                );
                continue;
            }
            (None, None) => {
                let location = checker.at_key(&base);
                checker.push(
                    Diagnostic::new(
                        Code::SemanticContradiction,
                        format!("MCP server `{name}` has neither a `command` nor a `url`"),
                    )
                    .with_help("add `command: [PROGRAM, ARG]` for a stdio server or `url: \"https://…/mcp\"` for a streamable HTTP server"),
                    location,
                );
                continue;
            }
            (Some(_), None) => &[("headers", server.headers.is_some())],
            (None, Some(_)) => &[
                ("set_env", server.set_env.is_some()),
                ("cwd", server.cwd.is_some()),
            ],
        };
        for (field, present) in misplaced {
            if *present {
                let kind = if server.url.is_some() {
                    "an HTTP"
                } else {
                    "a stdio"
                };
                let location = checker.at_key(&format!("{base}/{field}"));
                checker.push(
                    Diagnostic::new(
                        Code::SemanticContradiction,
                        format!("`{field}` has no effect on {kind} MCP server (`{name}`)"),
                    )
                    .with_help("`set_env` and `cwd` apply to a `command`, `headers` to a `url`; remove the field"),
                    location,
                );
            }
        }
        if let Some(url) = &server.url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            let location = checker.at(&format!("{base}/url"));
            checker.push(
                Diagnostic::new(
                    Code::SemanticContradiction,
                    format!("the `url` of MCP server `{name}` is not an http or https URL"),
                )
                .with_help(
                    "write the server's streamable HTTP endpoint, like `http://127.0.0.1:8931/mcp`",
                ),
                location,
            );
        }
        check_header_templates(
            checker,
            &format!("{base}/headers"),
            server.headers.as_ref(),
            server.env.as_deref().unwrap_or_default(),
            &format!("MCP server `{name}`"),
            (
                &format!("`mcp_servers.{name}.env`"),
                &format!("mcp_servers.{name}.env"),
            ),
            "header values may only use `{{env.NAME}}`",
        );
    }
}

/// The top-level input fields a schema declares, when it declares any (`properties`); `None`
/// when the schema says nothing about its fields (absent, `true`, no `properties`).
fn declared_fields(schema: Option<&Value>) -> Option<Vec<String>> {
    let properties = schema?.get("properties")?.as_object()?;
    Some(properties.keys().cloned().collect())
}

/// `locked` paths must name contract fields; outside an enforced layer they do nothing.
fn check_locks(checker: &mut Checker<'_>, name: &str, contract: &ToolContract) {
    let Some(locked) = &contract.locked else {
        return;
    };
    let base = join_pointer("/tools", name);
    let schema = crate::model::schema::policy_file();
    for (index, path) in locked.iter().enumerate() {
        let pointer = format!("{base}/locked/{index}");
        if !lock_path_exists(&schema, path) {
            let location = checker.at(&pointer);
            checker.push(
                Diagnostic::new(Code::SemanticInvalidLock, format!("`{path}` is not a field of a tool contract"))
                    .with_help("write a dotted path of contract fields, like `timeout.max` or `permission.always_ask`"),
                location,
            );
            continue;
        }
        let enforced = checker
            .layer_of(&pointer)
            .is_some_and(|layer| layer.kind.is_enforced());
        if !enforced {
            let location = checker.at(&pointer);
            checker.push(
                Diagnostic::new(
                    Code::SemanticInvalidLock,
                    format!("lock `{path}` of `{name}` has no effect outside an enforced layer"),
                )
                .with_severity(Severity::Warning)
                .with_help("load this file with `--enforced PATH` to make its locks and deny rules binding"),
                location,
            );
        }
    }
}

/// Whether a dotted path names a field of the contract schema (following `$ref`s, any branch
/// of `oneOf`/`anyOf`, and into maps).
fn lock_path_exists(schema: &Value, path: &str) -> bool {
    let defs = schema.get("$defs");
    let resolve = |node: &Value| -> Vec<Value> {
        let mut out = Vec::new();
        let mut stack = vec![node.clone()];
        while let Some(current) = stack.pop() {
            if let Some(reference) = current.get("$ref").and_then(Value::as_str)
                && let Some(name) = reference.strip_prefix("#/$defs/")
                && let Some(target) = defs.and_then(|d| d.get(name))
            {
                stack.push(target.clone());
            }
            for key in ["oneOf", "anyOf", "allOf"] {
                if let Some(Value::Array(branches)) = current.get(key) {
                    stack.extend(branches.iter().cloned());
                }
            }
            out.push(current);
        }
        out
    };
    let Some(contract) = defs.and_then(|d| d.get("ToolContract")) else {
        return false;
    };
    let mut nodes = vec![contract.clone()];
    for part in path.split('.') {
        let mut next = Vec::new();
        for node in nodes.iter().flat_map(resolve) {
            if let Some(child) = node.get("properties").and_then(|p| p.get(part)) {
                next.push(child.clone());
            } else if let Some(child) = node.get("additionalProperties").filter(|v| v.is_object()) {
                next.push(child.clone());
            }
        }
        if next.is_empty() {
            return false;
        }
        nodes = next;
    }
    !path.is_empty()
}

/// Maps a byte offset into the content of a string value to the byte offset in `raw`, the
/// value as written in the source: plain, `'…'` (with `''`), `"…"` (with escapes), or TOML's
/// `'''…'''` and `"""…"""`. `None` when it cannot be told for certain: a value written over
/// several lines (folding rules), an unknown escape, or an offset past the content.
fn source_offset(raw: &str, decoded: usize) -> Option<usize> {
    #[derive(Clone, Copy, PartialEq)]
    enum Quote {
        Plain,
        Single,
        Double,
        TripleSingle,
        TripleDouble,
    }
    let quote = if raw.starts_with("\"\"\"") {
        Quote::TripleDouble
    } else if raw.starts_with("'''") {
        Quote::TripleSingle
    } else if raw.starts_with('"') {
        Quote::Double
    } else if raw.starts_with('\'') {
        Quote::Single
    } else {
        Quote::Plain
    };
    let mut pos = match quote {
        Quote::Plain => 0,
        Quote::Single | Quote::Double => 1,
        Quote::TripleSingle | Quote::TripleDouble => 3,
    };
    let escapes = matches!(quote, Quote::Double | Quote::TripleDouble);
    let mut out = 0;
    loop {
        if out == decoded {
            return Some(pos);
        }
        if out > decoded {
            return None;
        }
        let c = raw.get(pos..)?.chars().next()?;
        match c {
            '\n' | '\r' => return None,
            '"' if quote == Quote::Double => return None,
            '\'' if quote == Quote::Single => {
                if raw.get(pos + 1..)?.starts_with('\'') {
                    out += 1;
                    pos += 2;
                } else {
                    return None;
                }
            }
            '\\' if escapes => {
                let next = raw.get(pos + 1..)?.chars().next()?;
                let hex = |digits: usize| -> Option<(usize, usize)> {
                    let code = raw.get(pos + 2..pos + 2 + digits)?;
                    let produced = char::from_u32(u32::from_str_radix(code, 16).ok()?)?;
                    Some((produced.len_utf8(), 2 + digits))
                };
                let (produced, consumed) = match next {
                    'x' => hex(2)?,
                    'u' => hex(4)?,
                    'U' => hex(8)?,
                    // YAML's next line, non-breaking space, line and paragraph separators.
                    'N' | '_' => (2, 2),
                    'L' | 'P' => (3, 2),
                    '\n' | '\r' | ' ' if quote == Quote::TripleDouble => return None,
                    other if other.is_ascii() && other != '\n' && other != '\r' => (1, 2),
                    _ => return None,
                };
                out += produced;
                pos += consumed;
            }
            c => {
                out += c.len_utf8();
                pos += c.len_utf8();
            }
        }
    }
}

/// The type names of JSON Schema.
const JSON_TYPES: [&str; 7] = [
    "array", "boolean", "integer", "null", "number", "object", "string",
];

/// When the value at `path` inside a schema is a `type` keyword naming an unknown type, that
/// name.
fn bad_type_name(schema: &Value, path: &str) -> Option<String> {
    if !path.ends_with("/type") {
        return None;
    }
    let names: Vec<&str> = match schema.pointer(path)? {
        Value::String(name) => vec![name.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    names
        .into_iter()
        .find(|name| !JSON_TYPES.contains(name))
        .map(str::to_owned)
}

/// Agent tool maps name toolgate tools that exist: a mapping onto a missing tool would leave
/// the agent's tool unjudged (the hook defers it to the agent), so it is a warning at its
/// place, with the closest tool name.
fn check_agents(checker: &mut Checker<'_>, names: &ToolNames) {
    let typed = checker.input.typed;
    for (agent, spec) in &typed.agents {
        for (agent_tool, mapping) in &spec.tools {
            let mapping_pointer = join_pointer(
                &join_pointer(&join_pointer("/agents", agent), "tools"),
                agent_tool,
            );
            if let Some(sources) = &mapping.cd
                && !mapping.input.contains_key("command")
            {
                let source = sources.quoted();
                let diagnostic = Diagnostic::new(
                    Code::SemanticContradiction,
                    format!(
                        "agent `{agent}` runs its tool `{agent_tool}` in the folder its field {source} names, but maps no `command` to run there"
                    ),
                )
                .with_help(format!(
                    "map the agent's command onto `command` under `input`, or remove `cd`; until then every `{agent_tool}` call that names a folder is refused"
                ))
                .with_severity(Severity::Warning);
                let location = checker.at(&format!("{mapping_pointer}/cd"));
                checker.push(diagnostic, location);
            }
            let Some(target) = &mapping.tool else {
                continue;
            };
            if mapping.disabled == Some(true) || names.resolve(target).is_some() {
                continue;
            }
            let pointer = format!("{mapping_pointer}/tool");
            let diagnostic = Diagnostic::new(
                Code::SemanticUnknownReference,
                format!("agent `{agent}` maps its tool `{agent_tool}` onto unknown tool `{target}`"),
            )
            .with_severity(Severity::Warning)
            .with_help(
                match closest(target, names.canonical.iter().map(|t| t.as_str())) {
                    Some(candidate) => format!(
                        "did you mean `{candidate}`? Until it exists, `toolgate hook {agent}` leaves `{agent_tool}` calls to the agent's own rules"
                    ),
                    None => format!(
                        "declare the tool under `tools` or map `{agent_tool}` onto another one; until then `toolgate hook {agent}` leaves its calls to the agent's own rules"
                    ),
                },
            );
            let location = checker.at(&pointer);
            checker.push(diagnostic, location);
        }
    }
}

fn unknown<'a>(what: &str, name: &str, known: impl Iterator<Item = &'a String>) -> Diagnostic {
    let known: Vec<&String> = known.collect();
    let help = match closest(name, known.iter().map(|k| k.as_str())) {
        Some(candidate) => format!("did you mean `{candidate}`?"),
        None if known.is_empty() => format!("no {what} is declared; declare it under `{what}s`"),
        None => format!(
            "declared {what}s: {}",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Diagnostic::new(
        Code::SemanticUnknownReference,
        format!("unknown {what} `{name}`"),
    )
    .with_help(help)
}

/// Checks `input_schema` and `output_schema` against the meta-schema (every violation, at
/// its place inside the schema) and compiles them once. Independent of other tools, so it
/// returns its diagnostics instead of pushing them (tools are compiled in parallel).
/// Compiled `input_schema`s and `output_schema`s by their JSON text, shared by every
/// snapshot of the process: a schema is checked and compiled once however many tools
/// declare it and however often the policy set is reloaded. Entries are weak, so a schema
/// no snapshot uses any more is freed with the last one.
struct CompiledSchemas;

static COMPILED_SCHEMAS: LazyLock<Mutex<SchemaTable>> = LazyLock::new(Mutex::default);

#[derive(Default)]
struct SchemaTable {
    by_text: HashMap<String, Weak<jsonschema::Validator>>,
    /// Size of `by_text` after the last sweep of dead entries.
    after_sweep: usize,
}

impl CompiledSchemas {
    fn get(text: &str) -> Option<Arc<jsonschema::Validator>> {
        let table = COMPILED_SCHEMAS
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        table.by_text.get(text).and_then(Weak::upgrade)
    }

    fn insert(text: String, validator: jsonschema::Validator) -> Arc<jsonschema::Validator> {
        let mut table = COMPILED_SCHEMAS
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Tools are compiled in parallel: another one may have compiled the same schema
        // since `get` missed. Keep the first, so every tool shares one validator.
        if let Some(first) = table.by_text.get(&text).and_then(Weak::upgrade) {
            return first;
        }
        let validator = Arc::new(validator);
        table.by_text.insert(text, Arc::downgrade(&validator));
        // Sweep dead entries whenever the table has doubled since the last sweep, so it
        // stays proportional to the schemas in use.
        if table.by_text.len() > 2 * table.after_sweep.max(64) {
            table.by_text.retain(|_, weak| weak.strong_count() > 0);
            table.after_sweep = table.by_text.len();
        }
        validator
    }
}

fn compile_schemas(
    checker: &mut Checker<'_>,
    patterns: &jsonschema::PatternCache,
    name: &str,
    contract: &ToolContract,
) -> Validators {
    let base = join_pointer("/tools", name);
    let mut compile = |field: &str, schema: &Option<Value>| -> Option<Arc<jsonschema::Validator>> {
        let schema = schema.as_ref()?;
        let key = schema.to_string();
        if let Some(validator) = CompiledSchemas::get(&key) {
            // Compiled before, so valid: nothing to report.
            return Some(validator);
        }
        // Building checks the schema against the meta-schema first (stopping at the first
        // problem), so a schema that builds is valid; only one that does not is checked
        // again, for every problem.
        let error = match jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .with_pattern_cache(patterns.clone())
            .build(schema)
        {
            Ok(validator) => return Some(CompiledSchemas::insert(key, validator)),
            Err(error) => error,
        };
        let pointer = format!("{base}/{field}");
        let meta = jsonschema::draft202012::meta::validator();
        let mut failed = false;
        for error in meta.iter_errors(schema) {
            failed = true;
            let path = error.instance_path().as_str().to_owned();
            let inner = format!("{pointer}{path}");
            let location = checker.at(&inner);
            // The meta-schema writes `type` as an `anyOf` (one name or a list of names), which
            // hides the real cause behind "not valid under any of the schemas"; say it.
            let diagnostic = match bad_type_name(schema, &path) {
                Some(bad) => Diagnostic::new(
                    Code::SemanticInvalidSchema,
                    format!("`{field}` of `{name}` is not a valid JSON Schema: `{bad}` is not a JSON Schema type"),
                )
                .with_help(match closest(&bad, JSON_TYPES.iter().copied()) {
                    Some(close) => format!("did you mean `{close}`?"),
                    None => format!("write one of {}", JSON_TYPES.map(|t| format!("`{t}`")).join(", ")),
                }),
                None => Diagnostic::new(
                    Code::SemanticInvalidSchema,
                    format!("`{field}` of `{name}` is not a valid JSON Schema: {error}"),
                )
                .with_help("input and output schemas follow JSON Schema draft 2020-12"),
            };
            checker.push(diagnostic, location);
        }
        if !failed {
            let inner = format!("{pointer}{}", error.instance_path().as_str());
            let location = checker.at(&inner);
            checker.push(
                Diagnostic::new(
                    Code::SemanticInvalidSchema,
                    format!("`{field}` of `{name}` does not compile: {error}"),
                )
                .with_help("input and output schemas follow JSON Schema draft 2020-12; remote `$ref`s are not fetched, so inline referenced schemas"),
                location,
            );
        }
        None
    };
    let input = compile("input_schema", &contract.input_schema);
    let output = compile("output_schema", &contract.output_schema);
    (input, output)
}

fn check_rules(checker: &mut Checker<'_>, names: &ToolNames) -> RuleSet {
    let input = checker.input;
    let typed = input.typed;
    let enabled: Vec<(usize, &crate::model::rule::Rule)> = typed
        .rules
        .iter()
        .enumerate()
        .filter(|(_, rule)| rule.disabled != Some(true))
        .collect();
    // Compiling matchers (globs, regexes, shell patterns) is most of a load's work, and rules
    // are independent: compile them in parallel, report in order. Glob and regex automata
    // are built on first use, except for rules with `examples` (built, checked against the
    // examples and released again within the rule's own step, so the automata of many rules
    // are never held at once) and for every rule when asked.
    let case = input.match_ctx.path_case();
    let build_all = input.build_all_matchers;
    let name_keys = RuleNameKeys::find(input.sources);
    let commands = Arc::new(CommandTable::new(
        &typed.commands.clone().unwrap_or_default(),
    ));
    // A rule as shipped, read with the shipped command table, has its examples checked by
    // toolgate's own tests, in a workspace whose files they were written for; checking them
    // on every load cost about a tenth of a one-call `toolgate plan` process. A rule a
    // policy file wrote or changed has its examples checked (the command table changes
    // what a `shell` pattern means, so changing it rechecks every rule).
    let commands_shipped = input.shipped("/commands");
    let results: Vec<_> = enabled
        .par_iter()
        .map(|(index, rule)| {
            let origin = rule_origin(input, &name_keys, *index);
            let mut compiled = compile_rule(rule, origin, names, &typed.modes)?;
            let mut examples = Vec::new();
            let check = rule.examples.is_some()
                && !(commands_shipped && input.shipped(&format!("/rules/{index}")));
            if let Some(matchers) = &mut compiled.matchers
                && (build_all || check)
            {
                matchers.build(case).map_err(|errors| {
                    errors
                        .into_iter()
                        .map(RuleError::Pattern)
                        .collect::<Vec<_>>()
                })?;
            }
            if check {
                check_examples(input, &compiled, names, &commands, &mut examples);
            }
            // The tools the rule names (not only covers by a glob), looked up once per rule:
            // a wildcard rule covers every tool.
            let named: Vec<_> = rule
                .tools
                .as_deref()
                .unwrap_or_default()
                .iter()
                .filter_map(|pattern| names.canonical_of(pattern))
                .collect();
            let covered: Vec<CoveredTool<'_>> = compiled
                .tools
                .iter()
                .map(|tool| CoveredTool {
                    name: tool.as_str(),
                    input_schema: typed
                        .tools
                        .get(tool.as_str())
                        .and_then(|contract| contract.input_schema.as_ref()),
                    named: named.contains(&tool),
                })
                .collect();
            let mistakes = rule_mistakes::against_schemas(rule, *index, &covered);
            // The automata built for the examples are released like any other rule's: built
            // again if the rule is ever consulted (unless `check` asked for all of them).
            if !build_all && let Some(matchers) = &mut compiled.matchers {
                matchers.release();
            }
            Ok::<_, Vec<RuleError>>((compiled, examples, mistakes))
        })
        .collect();
    let mut compiled: Vec<CompiledRule> = Vec::with_capacity(enabled.len());
    let mut example_problems = Vec::new();
    for ((index, rule), result) in enabled.iter().zip(results) {
        for finding in rule_mistakes::vacuous_matchers(rule, *index) {
            report_finding(checker, finding);
        }
        match result {
            Ok((rule, examples, mistakes)) => {
                compiled.push(rule);
                example_problems.extend(examples);
                for finding in mistakes {
                    report_finding(checker, finding);
                }
            }
            Err(errors) => {
                let pointer = format!("/rules/{index}");
                for error in errors {
                    report_rule_error(checker, &pointer, &rule.name, rule, error);
                }
            }
        }
    }
    for (diagnostic, location) in example_problems {
        checker.push(diagnostic, location);
    }
    tracing::debug!("rules compiled and examples checked");
    let set = RuleSet::new(compiled, commands);
    // The rules that may shadow others (see `lint_rule`), by tool, each tool's listed once.
    let mut unconditional: HashMap<&ToolName, Vec<&CompiledRule>> = HashMap::new();
    for rule in set.rules() {
        let candidates = rule.tools.first().map_or(&[][..], |tool| {
            unconditional.entry(tool).or_insert_with(|| {
                set.for_tool(tool)
                    .filter(|other| other.matchers.is_none())
                    .collect()
            })
        });
        lint_rule(checker, rule, candidates);
    }
    tracing::debug!("rules indexed and linted");
    set
}

/// Places a finding of [`rule_mistakes`] at the file, line and column it points at.
fn report_finding(checker: &mut Checker<'_>, finding: rule_mistakes::Finding) {
    let locate = |place: &Place| match place {
        Place::Value(pointer) => checker.at(pointer),
        Place::Key(pointer) => checker.at_key(pointer),
    };
    let mut diagnostic = finding.diagnostic;
    for (label, place) in &finding.related {
        if let Some(location) = locate(place) {
            diagnostic = diagnostic.with_related(label.clone(), location);
        }
    }
    let location = locate(&finding.place);
    checker.push(diagnostic, location);
}

/// Where the rule at `index` of the effective rule list comes from.
///
/// Runs for every rule, so it looks provenance up once where it can: the rule's `name`
/// has an origin of its own only when a later layer redefined the rule.
fn rule_origin(input: &Input<'_>, name_keys: &RuleNameKeys, index: usize) -> RuleOrigin {
    let name = format!("/rules/{index}/name");
    let rule = name.strip_suffix("/name").unwrap_or(&name);
    let found = input.provenance.nearest(&name);
    let location = found.and_then(|found| {
        name_keys
            .of_whole_item(input.sources, found, rule)
            .or_else(|| input.sources.locate_key_from(found, &name))
    });
    let rule_origin = match found {
        Some((at, _)) if at.len() > rule.len() => input.provenance.nearest(rule),
        other => other,
    };
    let enforced = rule_origin
        .and_then(|(_, origin)| input.layer_of_origin(origin))
        .is_some_and(|layer| layer.kind.is_enforced());
    RuleOrigin {
        index,
        enforced,
        location: location.map(|l| Arc::from(l.display().as_str())),
    }
}

/// Where the `name` key of every rule of every file is, found in one pass over each file's
/// spans: looking each rule up by pointer costs a few cache misses per step on tables this
/// large, which made finding rule origins a tenth of a large load.
struct RuleNameKeys {
    /// By file, then by the rule's index in its file.
    files: Vec<Vec<Option<NodeSpan>>>,
}

impl RuleNameKeys {
    fn find(sources: &Sources) -> Self {
        Self {
            files: sources
                .files
                .par_iter()
                .map(|file| file.spans.item_members("/rules", "name"))
                .collect(),
        }
    }

    /// The location of the `name` key of the effective rule at `rule` when the provenance
    /// entry `found` says the whole rule came from one file (no later layer changed it);
    /// `None` otherwise, or when the file's rule has no `name` key of its own.
    fn of_whole_item(
        &self,
        sources: &Sources,
        (at, origin): (&str, &Origin),
        rule: &str,
    ) -> Option<Location> {
        if at != rule {
            return None;
        }
        let index: usize = origin.pointer.strip_prefix("/rules/")?.parse().ok()?;
        let node = (*self.files.get(origin.file.0 as usize)?.get(index)?)?;
        let file = sources.files.get(origin.file.0 as usize)?;
        Some(file.source.location(node.label()))
    }
}

fn report_rule_error(
    checker: &mut Checker<'_>,
    pointer: &str,
    name: &str,
    rule: &crate::model::rule::Rule,
    error: RuleError,
) {
    let typed = checker.input.typed;
    match error {
        RuleError::MissingDecision => {
            let location = checker.at_key(&format!("{pointer}/name"));
            checker.push(
                Diagnostic::new(
                    Code::SchemaRequired,
                    format!("rule `{name}` has no `decision`"),
                )
                .with_help("add `decision: allow`, `ask` or `deny`"),
                location,
            );
        }
        RuleError::UnknownTool { index, name: tool } => {
            let location = checker.at(&format!("{pointer}/tools/{index}"));
            let known = typed.tools.keys();
            checker.push(unknown("tool", &tool, known), location);
        }
        RuleError::BadToolGlob { index, message } => {
            let location = checker.at(&format!("{pointer}/tools/{index}"));
            checker.push(
                Diagnostic::new(
                    Code::SemanticInvalidGlob,
                    format!("invalid tool glob in rule `{name}`: {message}"),
                ),
                location,
            );
        }
        RuleError::UnknownMode { index, name: mode } => {
            let location = checker.at(&format!("{pointer}/modes/{index}"));
            checker.push(unknown("mode", &mode, typed.modes.keys()), location);
        }
        RuleError::Pattern(error) => {
            let selector = join_pointer(&format!("{pointer}/match"), &error.selector);
            let (code, field) = match error.kind {
                PatternKind::Glob => (Code::SemanticInvalidGlob, "glob"),
                PatternKind::Regex => (Code::SemanticInvalidRegex, "regex"),
                PatternKind::Shell => (Code::SemanticInvalidShellPattern, "shell"),
                PatternKind::Path => (Code::SemanticInvalidGlob, "path"),
                PatternKind::Pointer => (Code::SemanticInvalidPointer, ""),
            };
            let written_as_list = rule
                .matchers
                .as_ref()
                .and_then(|m| m.get(&error.selector))
                .map(|m| {
                    let v = match error.kind {
                        PatternKind::Glob => &m.glob,
                        PatternKind::Regex => &m.regex,
                        PatternKind::Shell => &m.shell,
                        PatternKind::Path => &m.path,
                        PatternKind::Pointer => &None,
                    };
                    matches!(v, Some(crate::model::rule::OneOrMany::Many(_)))
                })
                .unwrap_or(false);
            let target = match (error.kind, error.pattern_index) {
                (PatternKind::Pointer, _) => selector.clone(),
                (_, Some(i)) if written_as_list => format!("{selector}/{field}/{i}"),
                _ => format!("{selector}/{field}"),
            };
            let location = match (error.kind, error.offset_in_pattern) {
                (PatternKind::Pointer, _) => checker.at_key(&target),
                (_, Some(offset)) => checker.inside(&target, offset),
                (_, None) => checker.at(&target),
            };
            let what = match error.kind {
                PatternKind::Pointer => "selector".to_owned(),
                kind => format!("{kind} pattern"),
            };
            let mut diagnostic = Diagnostic::new(
                code,
                format!("invalid {what} in rule `{name}`: {}", error.message),
            );
            if error.message.contains("size limit") {
                diagnostic = diagnostic.with_help(
                    "the pattern parses, but its automaton is too large to build: lower counted repetitions such as `{1000}`, prefer ASCII classes (`[0-9]`, `(?-u:\\w)`) to Unicode ones, or split it into several patterns",
                );
            }
            checker.push(diagnostic, location);
        }
    }
}

/// A rule's tool glob that picks some of the tools a wildcard contract covers
/// (`mcp__github__delete_*` beside `mcp__github__*`) reaches only the ones with a contract of
/// their own: a call the wildcard covers is a call of the wildcard's contract, which the glob
/// does not match. Said where the glob is written, since such a rule would silently miss
/// those calls: an error for a rule that denies or asks (the set does not load rather than
/// let those calls through), a warning otherwise.
fn lint_wildcard_subsets(
    checker: &mut Checker<'_>,
    what: &str,
    patterns: &[String],
    pointer: &str,
    guards: bool,
) {
    let tools = &checker.input.typed.tools;
    for (index, pattern) in patterns.iter().enumerate() {
        if !is_tool_glob(pattern) {
            continue;
        }
        let Ok(glob) = globset::Glob::new(pattern) else {
            continue;
        };
        let matcher = glob.compile_matcher();
        for wildcard in tools.keys() {
            let Some(server) = crate::model::mcp::wildcard_server(wildcard) else {
                continue;
            };
            let prefix = format!("mcp__{server}__");
            if !pattern.starts_with(&prefix) || matcher.is_match(wildcard) {
                continue;
            }
            let location = checker.at(&format!("{pointer}/tools/{index}"));
            checker.push(
                Diagnostic::new(
                    Code::SemanticRuleNeverMatches,
                    format!(
                        "{what}: `{pattern}` does not apply to the tools wildcard `{wildcard}` covers without a contract of their own"
                    ),
                )
                .with_help(format!(
                    "a call the wildcard covers is a call of `{wildcard}`, which `{pattern}` does not match; give each tool it is for an exact contract (an empty one will do: `{prefix}TOOL: {{}}`), or name `{wildcard}`"
                ))
                .with_severity(if guards {
                    Severity::Error
                } else {
                    Severity::Warning
                }),
                location,
            );
        }
    }
}

/// Whether a rule's tool pattern is a glob (as the rule compiler reads it).
fn is_tool_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}

/// Rules that can never match, and rules fully shadowed by a rule that always decides first.
fn lint_rule(checker: &mut Checker<'_>, rule: &CompiledRule, unconditional: &[&CompiledRule]) {
    let pointer = format!("/rules/{}", rule.origin.index);
    let engine = checker.input.engine;
    let tools = &checker.input.typed.tools;
    lint_wildcard_subsets(
        checker,
        &format!("rule `{}`", rule.name),
        &rule.tool_patterns,
        &pointer,
        rule.decision != Decision::Allow,
    );
    if rule.tools.is_empty() {
        let location = checker.at(&format!("{pointer}/tools"));
        checker.push(
            Diagnostic::new(
                Code::SemanticRuleNeverMatches,
                format!(
                    "rule `{}` applies to no tool: its tool patterns match no contract",
                    rule.name
                ),
            )
            .with_help("fix the tool names or globs, or remove the rule"),
            location,
        );
        return;
    }
    if rule.modes.as_ref().is_some_and(Vec::is_empty) {
        let location = checker.at(&format!("{pointer}/modes"));
        checker.push(
            Diagnostic::new(
                Code::SemanticRuleNeverMatches,
                format!(
                    "rule `{}` can never match: its `modes` list is empty, so it applies in no mode",
                    rule.name
                ),
            )
            .with_help("list the modes the rule is for, or remove `modes` to apply it in every mode"),
            location,
        );
        return;
    }
    if let (Some(when), Some(engine)) = (&rule.when, engine) {
        let any = rule.tools.iter().any(|tool| {
            tools.get(tool.as_str()).is_some_and(|contract| {
                when_may_hold(when, contract, engine)
                    || annotations_fill(checker.input.typed, contract)
            })
        });
        if !any {
            let location = checker.at(&format!("{pointer}/when"));
            checker.push(
                Diagnostic::new(
                    Code::SemanticRuleNeverMatches,
                    format!("rule `{}` can never match: none of its tools has the flags its `when` requires", rule.name),
                )
                .with_help("check the `when` flags against the tools' `concurrency` settings"),
                location,
            );
            return;
        }
    }
    // A rule is shadowed when another rule without conditions of its own (no `match`, and a
    // `when` that holds for every call of the rule's tools) covers all of its tools and modes
    // and always decides first with a different decision. Such a rule applies to the rule's
    // first tool, so only that tool's rules without `match`, `unconditional`, are candidates
    // (not all rules, nor all of the tool's: both were quadratic in the number of rules).
    // An enforced ask holds against a later layer's allow, whatever its priority.
    let ask_over_allow = |ask: &CompiledRule, allow: &CompiledRule| {
        ask.origin.enforced
            && ask.decision == crate::model::Decision::Ask
            && !allow.origin.enforced
            && allow.decision == crate::model::Decision::Allow
    };
    let shadow = unconditional.iter().copied().find(|other| {
        let first = match (
            other.origin.enforced && other.decision == crate::model::Decision::Deny,
            rule.origin.enforced && rule.decision == crate::model::Decision::Deny,
        ) {
            _ if ask_over_allow(other, rule) => true,
            _ if ask_over_allow(rule, other) => false,
            (true, false) => true,
            (false, true) => false,
            _ => {
                other.priority > rule.priority
                    || (other.priority == rule.priority && other.decision > rule.decision)
            }
        };
        first
            && other.decision != rule.decision
            && rule.tools.iter().all(|tool| other.tools.contains(tool))
            && other.when.as_ref().is_none_or(|when| {
                engine.is_some_and(|engine| {
                    rule.tools.iter().all(|tool| {
                        tools.get(tool.as_str()).is_some_and(|contract| {
                            !annotations_fill(checker.input.typed, contract)
                                && when_always_holds(when, contract, engine)
                        })
                    })
                })
            })
            && match (&other.modes, &rule.modes) {
                (None, _) => true,
                (Some(_), None) => false,
                (Some(outer), Some(inner)) => inner.iter().all(|mode| outer.contains(mode)),
            }
    });
    if let Some(other) = shadow {
        let enforced = (other.origin.enforced
            && !rule.origin.enforced
            && other.decision == crate::model::Decision::Deny)
            || ask_over_allow(other, rule);
        let (what, help) = if enforced {
            (
                format!("an enforced {}", other.decision),
                "an enforced deny decides before the rules of every other layer, and an enforced ask before their allows, whatever their priority; remove this rule, or narrow the enforced one",
            )
        } else {
            (
                format!("{}, priority {}", other.decision, other.priority),
                "raise this rule's priority, narrow the other rule, or remove this one",
            )
        };
        let mut diagnostic = Diagnostic::new(
            Code::SemanticRuleShadowed,
            format!(
                "rule `{}` never decides: rule `{}` ({what}) matches every call it could match and takes precedence",
                rule.name, other.name
            ),
        )
        .with_help(help);
        if let Some(location) = checker.at_key(&format!("/rules/{}/name", other.origin.index)) {
            diagnostic = diagnostic.with_related("the shadowing rule", location);
        }
        let location = checker.at_key(&format!("{pointer}/name"));
        checker.push(diagnostic, location);
    }
}

/// A tool's flags as the rules see them: the contract's, and the contract's with each mode's
/// patch applied.
fn flag_variants(contract: &ToolContract, engine: &ResolvedEngine) -> Vec<ResolvedConcurrency> {
    let base = ResolvedContract::resolve(contract, engine);
    let patched = contract.modes.iter().flatten().map(|(_, patch)| {
        let mut resolved = base.clone();
        resolved.apply(patch, engine);
        resolved.concurrency
    });
    std::iter::once(base.concurrency).chain(patched).collect()
}

/// Whether a server's tool annotations may fill the flags the contract leaves unset at run
/// time (its handler's MCP server is declared with `trust_annotations: true`): the flags
/// `check` sees are then not all the flags a call may have.
fn annotations_fill(typed: &PolicyFile, contract: &ToolContract) -> bool {
    matches!(&contract.handler, Some(crate::model::handler::HandlerSpec::Mcp(mcp))
        if typed
            .mcp_servers
            .get(&mcp.server)
            .is_some_and(crate::model::mcp::McpServer::trusts_annotations))
}

/// Whether a `when` can hold for some call of the tool, in some modes. Each flag on its own:
/// modes combine, so values set by different modes can meet (an over-estimate, which keeps
/// the "never matches" lint sure).
fn when_may_hold(when: &RuleWhen, contract: &ToolContract, engine: &ResolvedEngine) -> bool {
    let variants = flag_variants(contract, engine);
    let RuleWhen {
        read_only,
        destructive,
        concurrent_safe,
        side_effect_scope,
    } = when;
    read_only.is_none_or(|v| variants.iter().any(|f| f.read_only == v))
        && destructive.is_none_or(|v| variants.iter().any(|f| f.destructive == v))
        && concurrent_safe.is_none_or(|v| variants.iter().any(|f| f.concurrent_safe == v))
        && side_effect_scope.as_ref().is_none_or(|scopes| {
            variants
                .iter()
                .any(|f| scopes.contains(&f.side_effect_scope))
        })
}

/// Whether a `when` holds for every call of the tool, whatever the modes: it holds on the
/// contract's flags and on each mode's patch of them (a mode sets a flag to a value, so any
/// combination of modes gives each flag a value one of these has).
fn when_always_holds(when: &RuleWhen, contract: &ToolContract, engine: &ResolvedEngine) -> bool {
    flag_variants(contract, engine)
        .iter()
        .all(|flags| when_holds(when, flags))
}

/// Every `examples.match` call must match the rule and every `examples.not_match` call must
/// not: a rule that stops doing what its author meant fails the load.
/// Checks a rule's `examples` against the compiled rule, adding a diagnostic (with its
/// location) for each example that is invalid or does not behave as stated. Pure, so that
/// rules are checked in parallel.
fn check_examples(
    input: &Input<'_>,
    rule: &CompiledRule,
    names: &ToolNames,
    commands: &Arc<CommandTable>,
    problems: &mut Vec<(Diagnostic, Option<Location>)>,
) {
    let typed = input.typed;
    let Some(source) = typed.rules.get(rule.origin.index) else {
        return;
    };
    let Some(examples) = &source.examples else {
        return;
    };
    let Some(engine) = input.engine else {
        return;
    };
    let pointer = format!("/rules/{}/examples", rule.origin.index);
    let lists: [(&str, &Vec<ExampleCall>, bool); 2] = [
        ("match", &examples.matching, true),
        ("not_match", &examples.not_matching, false),
    ];
    for (list, calls, expected) in lists {
        for (index, call) in calls.iter().enumerate() {
            let at = format!("{pointer}/{list}/{index}");
            let Some(tool) = names.resolve(&call.tool) else {
                let location = input.at(&format!("{at}/tool"));
                problems.push((unknown("tool", &call.tool, typed.tools.keys()), location));
                continue;
            };
            let modes: Vec<ModeName> = call
                .modes
                .iter()
                .flatten()
                .map(|m| ModeName::new(m.as_str()))
                .collect();
            if let Some(undeclared) = call
                .modes
                .iter()
                .flatten()
                .position(|m| !typed.modes.contains_key(m))
            {
                let location = input.at(&format!("{at}/modes/{undeclared}"));
                let name = call
                    .modes
                    .iter()
                    .flatten()
                    .nth(undeclared)
                    .cloned()
                    .unwrap_or_default();
                problems.push((unknown("mode", &name, typed.modes.keys()), location));
                continue;
            }
            let Some(contract) = typed.tools.get(tool.as_str()) else {
                continue;
            };
            let resolved = ResolvedContract::resolve(contract, engine);
            let facts = CallFacts {
                tool: &tool,
                input: &call.input,
                modes: &modes,
                flags: &resolved.concurrency,
            };
            let covered = rule.tools.contains(&tool);
            let (holds, outcome) = if covered {
                rule.evaluate_in(&facts, input.match_ctx, commands)
            } else {
                (false, None)
            };
            if holds == expected {
                continue;
            }
            let why = match (&outcome, covered) {
                (_, false) => format!("the rule does not apply to tool `{tool}`"),
                (Some(outcome), true) => outcome.to_string(),
                (None, true) => "its modes or `when` flags decide".to_owned(),
            };
            let message = if expected {
                format!("rule `{}` does not match its example: {why}", rule.name)
            } else {
                format!(
                    "rule `{}` matches an example it must not match: {why}",
                    rule.name
                )
            };
            let location = input.at(&at);
            let mut diagnostic = Diagnostic::new(Code::SemanticExampleFailed, message)
                .with_help("fix the rule, or the example if the rule is right");
            // A later layer (the user's file) that changed what the rule matches is where
            // the example started failing: point at it too.
            for field in ["match", "tools", "modes"] {
                let changed = input.at(&format!("/rules/{}/{field}", rule.origin.index));
                if let (Some(changed), Some(example)) = (changed, &location)
                    && changed.source.path() != example.source.path()
                {
                    diagnostic = diagnostic
                        .with_related(format!("the rule's `{field}` is changed here"), changed);
                }
            }
            problems.push((diagnostic, location));
        }
    }
}

/// Hooks: event and command present, tools and modes known.
fn check_hooks(checker: &mut Checker<'_>, names: &ToolNames) -> Vec<super::SnapshotHook> {
    let typed = checker.input.typed;
    let mut hooks = Vec::new();
    for (index, hook) in typed.hooks.iter().enumerate() {
        if hook.disabled == Some(true) {
            continue;
        }
        let pointer = format!("/hooks/{index}");
        for (field, missing) in [
            ("event", hook.event.is_none()),
            ("command", hook.command.is_none()),
        ] {
            if missing {
                let location = checker.at_key(&format!("{pointer}/name"));
                checker.push(
                    Diagnostic::new(
                        Code::SchemaRequired,
                        format!("hook `{}` has no `{field}`", hook.name),
                    )
                    .with_help(format!("add `{field}` to the hook")),
                    location,
                );
            }
        }
        if let Some(command) = &hook.command {
            check_program(
                checker,
                &format!("{pointer}/command"),
                command,
                hook.env.as_deref().unwrap_or_default(),
                None,
                None,
                &format!("hook `{}`", hook.name),
            );
            lint_workspace_code(checker, &format!("{pointer}/command"), command, &hook.name);
        }
        let patterns = hook.tools.clone().unwrap_or_else(|| vec!["*".to_owned()]);
        // A hook that may deny (or answer an approval) guards its calls like a rule.
        let guards = matches!(
            hook.event,
            Some(HookEvent::PreToolUse | HookEvent::PermissionRequest)
        );
        lint_wildcard_subsets(
            checker,
            &format!("hook `{}`", hook.name),
            &patterns,
            &pointer,
            guards,
        );
        let (tools, errors) = crate::policy::rule::resolve_tools(&patterns, names);
        for error in errors {
            match error {
                RuleError::UnknownTool { index, name } => {
                    let location = checker.at(&format!("{pointer}/tools/{index}"));
                    checker.push(unknown("tool", &name, typed.tools.keys()), location);
                }
                RuleError::BadToolGlob { index, message } => {
                    let location = checker.at(&format!("{pointer}/tools/{index}"));
                    checker.push(
                        Diagnostic::new(
                            Code::SemanticInvalidGlob,
                            format!("invalid tool glob in hook `{}`: {message}", hook.name),
                        ),
                        location,
                    );
                }
                RuleError::MissingDecision
                | RuleError::UnknownMode { .. }
                | RuleError::Pattern(_) => {}
            }
        }
        for (i, mode) in hook.modes.iter().flatten().enumerate() {
            if !typed.modes.contains_key(mode) {
                let location = checker.at(&format!("{pointer}/modes/{i}"));
                checker.push(unknown("mode", mode, typed.modes.keys()), location);
            }
        }
        hooks.push(super::SnapshotHook {
            spec: hook.clone(),
            tools,
        });
    }
    hooks
}

/// The `hook_runs_workspace_code` warning for a hook whose command builds or loads what it
/// runs from the workspace (its words, and those of a script given to a shell).
fn lint_workspace_code(checker: &mut Checker<'_>, pointer: &str, command: &[String], name: &str) {
    let words: Vec<&str> = command
        .iter()
        .flat_map(|word| word.split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|')))
        .filter(|word| !word.is_empty())
        .collect();
    let found = words.windows(2).find_map(|pair| {
        let program = pair[0].rsplit('/').next().unwrap_or(pair[0]);
        let builds = match (program, pair[1]) {
            ("cargo" | "go", "run" | "r" | "build" | "b" | "test" | "t") => true,
            ("npm" | "pnpm" | "yarn" | "bun", "run" | "run-script" | "test" | "start" | "exec") => {
                true
            }
            ("npx" | "pnpx" | "bunx", _) => true,
            ("uv" | "poetry" | "pdm" | "hatch" | "pipenv", "run") => true,
            (python, "-m") => python.starts_with("python"),
            _ => false,
        };
        builds.then(|| format!("{} {}", pair[0], pair[1]))
    });
    let Some(found) = found else {
        return;
    };
    let location = checker.at(pointer);
    checker.push(
        Diagnostic::new(
            Code::SemanticHookRunsWorkspaceCode,
            format!(
                "hook `{name}` runs `{found}`, which takes code from the workspace the agent edits: toolgate protects the files the hook names and their build files, not every source or module the program loads"
            ),
        )
        .with_help(
            "build the hook once and run the binary, kept outside the workspace or in a folder of its own (protected as a whole); for Python, run the script with `python3 -I`",
        ),
        location,
    );
}

#[cfg(test)]
mod tests {
    use super::{keeps_data, program_name, runs_code, script_flag, source_offset};

    #[test]
    fn script_flags_and_glued_data() {
        for flag in [
            "-c",
            "-ec",
            "-lc",
            "--eval",
            "-p",
            "-E",
            "-ne",
            "-lne",
            "--command",
        ] {
            assert!(script_flag(flag), "{flag}");
        }
        for flag in ["--norc", "-x", "-m", "-o", "--", "-"] {
            assert!(!script_flag(flag), "{flag}");
        }
        for text in ["--name=", "x=", "./", "src/lib/", "--target-dir="] {
            assert!(keeps_data(text), "{text}");
        }
        for text in ["--eval=", "-e", "echo ", "./a b/", "'", "$x/", "-x="] {
            assert!(!keeps_data(text), "{text}");
        }
        for program in ["bash", "busybox", "python3.12", "perl", "awk", "ssh", "jq"] {
            assert!(runs_code(&program_name(program)), "{program}");
        }
        for (arg, name) in [
            ("/usr/bin/python3.12", "python"),
            ("node22", "node"),
            ("php8.2", "php"),
            ("bash5", "bash"),
            ("gsed", "sed"),
            ("gmake", "make"),
            ("gawk", "awk"),
            ("m4", "m4"),
            ("sqlite3", "sqlite"),
            ("go", "go"),
        ] {
            assert_eq!(program_name(arg), name, "{arg}");
        }
        for program in ["git", "grep", "cargo", "xargs", "timeout"] {
            assert!(!runs_code(&program_name(program)), "{program}");
        }
    }

    #[test]
    fn offsets_in_string_content_map_to_the_source() {
        // (value as written, offset in its content, expected text in the source there)
        let cases: &[(&str, usize, Option<&str>)] = &[
            ("a(b", 1, Some("(b")),
            ("\"a(b\"", 1, Some("(b\"")),
            ("'a(b'", 1, Some("(b'")),
            (r#""\\d+\t(x""#, 4, Some("(x\"")),
            ("'it''s (x'", 5, Some("(x'")),
            (r#""\u00e9\u00e9 (x""#, 5, Some("(x\"")),
            (r#""\x41("#, 1, Some("(")),
            ("'''a(b'''", 1, Some("(b'''")),
            (r#""""a\t(b""""#, 2, Some("(b\"\"\"")),
            (r#"'\d+ (x'"#, 4, Some("(x'")),
            ("\"ab\ncd\"", 4, None),
            ("\"ab\"", 5, None),
            ("\"\\\\(\"", 1, Some("(\"")),
        ];
        for (raw, offset, expected) in cases {
            let found = source_offset(raw, *offset).map(|at| &raw[at..]);
            assert_eq!(found, *expected, "{raw} at {offset}");
        }
    }

    #[test]
    #[allow(clippy::unwrap_used)]
    fn a_schema_is_compiled_once_for_every_tool_and_reload_that_declares_it() {
        use std::sync::Arc;

        use crate::snapshot::{LayerOptions, LoadOptions, load};

        let dir = tempfile::tempdir().unwrap();
        let schema = "{ type: object, properties: { q: { type: string, minLength: 3 } } }";
        std::fs::write(
            dir.path().join("tools.yaml"),
            format!(
                "version: 1\ntools:\n  A: {{ input_schema: {schema} }}\n  B: {{ input_schema: {schema} }}\n  C: {{ input_schema: {{ type: object }} }}\n"
            ),
        )
        .unwrap();
        let options = LoadOptions::new(LayerOptions {
            no_builtin: true,
            enforced: Vec::new(),
            policies: vec![dir.path().to_owned()],
            ..LayerOptions::default()
        });
        let first = load(&options, 1).snapshot.unwrap();
        let second = load(&options, 2).snapshot.unwrap();
        let validator = |snapshot: &crate::snapshot::Snapshot, tool: &str| {
            Arc::clone(
                snapshot
                    .lookup(tool)
                    .unwrap()
                    .input_schema
                    .as_ref()
                    .unwrap(),
            )
        };
        assert!(Arc::ptr_eq(
            &validator(&first, "A"),
            &validator(&first, "B")
        ));
        assert!(Arc::ptr_eq(
            &validator(&first, "A"),
            &validator(&second, "A")
        ));
        assert!(!Arc::ptr_eq(
            &validator(&first, "A"),
            &validator(&first, "C")
        ));
        // Shared, it still validates as its schema says.
        assert!(validator(&second, "B").is_valid(&serde_json::json!({ "q": "abc" })));
        assert!(!validator(&second, "B").is_valid(&serde_json::json!({ "q": "ab" })));
    }
}
