//! Building a snapshot: every file of every layer read, parsed and schema-checked; the
//! layers merged; the merged set checked for meaning; and the immutable [`Snapshot`] built.
//!
//! ```text
//! roots ─discover─▶ files ─read─▶ parse ─schema─▶ per-root duplicates ─merge─▶ effective set
//!                                                                          │
//!        Snapshot ◀─ compile (contracts, input schemas, rules) ◀─ semantics ┘
//! ```
//!
//! Each stage reports every problem it finds. A file that fails its syntax or schema stage is
//! left out of the merge (its other problems are still reported), so one broken file cannot
//! cascade into a page of confusing semantic errors.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use indexmap::IndexMap;
use rayon::prelude::*;
use serde_json::Value;

use super::EffectiveDocument;
use super::layer::{
    DiscoveryErrorKind, FoundFile, LayerKind, LayerOptions, LayerSpec, ProjectLayer, discover,
};
use super::merge::{FileInput, MergeIssue, Merger};
use super::provenance::{FileId, Origin, Provenance};
use super::semantic;
use super::trust::{self, TrustStore};
use super::untrusted::{self, Trusted, UntrustedProject};
use super::{LoadedFile, Snapshot, Sources, Tool};
use crate::diagnostics::{Code, Diagnostic, Format, SourceFile};
use crate::load::spans::join_pointer;
use crate::load::{ParseLimits, ReadLimits, SchemaChecker, parse_document_with, read_source};
use crate::model::resolved::ResolvedEngine;
use crate::model::{GateName, ModeName, PolicyFile, ToolName};
use crate::policy::MatchContext;

/// What to load and how.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// The layers.
    pub layers: LayerOptions,
    /// The workspace root: relative paths in path rules and handlers are taken against it.
    pub workspace_root: PathBuf,
    /// The home folder `~` and `$HOME` stand for in path rules; `None` when unknown (a `~`
    /// path then fails closed).
    pub home: Option<PathBuf>,
    /// Limits on file size.
    pub read_limits: ReadLimits,
    /// Limits on nesting and aliases.
    pub parse_limits: ParseLimits,
    /// Limits on the whole set: files, bytes, tools, rules.
    pub set_limits: SetLimits,
    /// Build every rule's glob and regex automata during the load, reporting any that cannot
    /// be built. Off by default: automata are built when first needed (rules whose
    /// `examples` the load checks are built to check them); `toolgate check` turns it on.
    pub build_all_matchers: bool,
    /// The user's configuration folder, whose trust store says whether a found project
    /// layer ([`super::layer::LayerKind::Project`]) is trusted; `None`: no project is.
    pub config_dir: Option<PathBuf>,
}

/// Limits on a whole policy set. Every file has its own size limit; these bound what many
/// files, or one file of many small entries, can cost (a file of 700 000 empty tools took
/// seconds and gigabytes before). A set over a limit does not load; its diagnostic says
/// which limit and by how much.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetLimits {
    /// Policy files across all layers.
    pub max_files: usize,
    /// Bytes of policy files across all layers.
    pub max_bytes: u64,
    /// Tool contracts across all files (before merging).
    pub max_tools: usize,
    /// Rules across all files (before merging).
    pub max_rules: usize,
}

impl SetLimits {
    /// The defaults: 2 000 files, 64 MiB, 50 000 tools and 100 000 rules — ten times the
    /// largest sets the benchmarks load.
    pub const DEFAULT: SetLimits = SetLimits {
        max_files: 2_000,
        max_bytes: 64 * 1024 * 1024,
        max_tools: 50_000,
        max_rules: 100_000,
    };
}

impl Default for SetLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The diagnostic for a set over one of its limits.
fn set_limit(what: &str, found: u64, limit: u64) -> Diagnostic {
    Diagnostic::new(
        Code::SyntaxLimit,
        format!("the policy set has {found} {what}, more than the {limit} a set may have"),
    )
    .with_help("split the policies into fewer, smaller sets, or raise `LoadOptions::set_limits` in the program that embeds toolgate")
}

impl LoadOptions {
    /// The built-in layers plus `policies`, with the current directory as workspace root and
    /// the `HOME` environment variable as home folder.
    pub fn new(layers: LayerOptions) -> Self {
        Self {
            layers,
            workspace_root: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            home: std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(PathBuf::from),
            read_limits: ReadLimits::DEFAULT,
            parse_limits: ParseLimits::DEFAULT,
            set_limits: SetLimits::DEFAULT,
            build_all_matchers: false,
            config_dir: None,
        }
    }
}

/// The result of a load: a snapshot when there were no errors, and every diagnostic (errors
/// and warnings) in file and position order.
#[derive(Clone, Debug)]
pub struct LoadOutcome {
    /// The snapshot, absent when any error was found.
    pub snapshot: Option<Arc<Snapshot>>,
    /// Every problem found.
    pub diagnostics: Vec<Diagnostic>,
}

impl LoadOutcome {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// The compiled schema of policy files, built once per process.
fn policy_checker() -> Result<&'static SchemaChecker, String> {
    static CHECKER: OnceLock<Result<SchemaChecker, String>> = OnceLock::new();
    SchemaChecker::compiled_once(&CHECKER, crate::model::schema::policy_file)
}

/// Loads, checks and freezes a policy set.
pub fn load(options: &LoadOptions, generation: u64) -> LoadOutcome {
    let mut diagnostics = Vec::new();
    let started = std::time::Instant::now();
    let phase = |name: &str| {
        tracing::debug!(
            phase = name,
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "load"
        );
    };
    let layers = options.layers.layers();
    let Some((sources, merger, untrusted)) = read_and_merge(&layers, options, &mut diagnostics)
    else {
        // Past a set limit: what the set misses would only repeat it.
        return finish(None, diagnostics);
    };
    let (mut effective, mut provenance) = merger.finish();
    super::wildcard::extend_wildcards(&mut effective, &mut provenance);
    phase("read, parsed, schema-checked and merged");

    // The merged set has no `version` of its own; lend it one for the typed model rather than
    // copying the whole document.
    if let Value::Object(map) = &mut effective {
        map.insert("version".into(), Value::from(1));
    }
    let deserialized = typed_model(&effective);
    if let Value::Object(map) = &mut effective {
        map.shift_remove("version");
    }
    // Nothing reads the merged tree after this point but the snapshot's compact copy of it:
    // write that copy and free the tree, so the tree (the largest thing a load builds) is not
    // held through rule compilation.
    let document = EffectiveDocument::new(&effective);
    drop(effective);
    let typed: PolicyFile = match deserialized {
        Ok(typed) => typed,
        Err(err) => {
            let pointer = path_to_pointer(err.path());
            let mut diagnostic = Diagnostic::new(
                Code::ModelDeserialize,
                format!("the merged policy set does not fit the model: {}", err.inner()),
            )
            .with_help("the layers combine into something no single file could say; check the values set at this place by each layer");
            if let Some(location) = sources.locate(&provenance, &pointer) {
                diagnostic = diagnostic.with_location(location);
            }
            diagnostics.push(diagnostic);
            return finish(None, diagnostics);
        }
    };

    let engine = match ResolvedEngine::resolve(typed.engine.as_ref().unwrap_or(&Default::default()))
    {
        Ok(engine) => Some(engine),
        Err(missing) => {
            for setting in missing {
                diagnostics.push(
                    Diagnostic::new(Code::SemanticIncompleteEngine, format!("no layer sets `{}`", setting.0))
                        .with_help("set it in an `engine` section; the built-in `policies/engine.yaml` sets every engine value"),
                );
            }
            None
        }
    };

    phase("typed");
    let match_ctx = match_context(options, &layers, &sources, &typed);
    let checked = semantic::check(semantic::Input {
        sources: &sources,
        layers: &layers,
        provenance: &provenance,
        typed: &typed,
        engine: engine.as_ref(),
        match_ctx: &match_ctx,
        build_all_matchers: options.build_all_matchers,
    });
    diagnostics.extend(checked.diagnostics);

    phase("semantically checked");
    let has_errors = diagnostics.iter().any(Diagnostic::is_error);
    let Some(engine) = engine else {
        return finish(None, diagnostics);
    };
    if has_errors {
        return finish(None, diagnostics);
    }

    let mut tools = IndexMap::with_hasher(foldhash::fast::RandomState::default());
    let mut validators = checked.validators;
    for (name, contract) in typed.tools {
        let tool_name = ToolName::new(name.as_str());
        let (input_validator, output_validator) = validators.remove(&name).unwrap_or((None, None));
        tools.insert(
            tool_name.clone(),
            Arc::new(Tool::new(
                tool_name,
                contract,
                &engine,
                input_validator,
                output_validator,
            )),
        );
    }
    let warnings: Vec<Diagnostic> = diagnostics.clone();
    let run_by_contract = super::wildcard::run_by_contract(tools.values());
    let snapshot = Snapshot {
        generation,
        sources,
        layers,
        effective: document,
        provenance,
        engine,
        tools,
        names: checked.names,
        rules: checked.rules,
        hooks: checked.hooks,
        gates: typed
            .gates
            .into_iter()
            .map(|(name, gate)| (GateName::new(name), gate))
            .collect(),
        modes: typed
            .modes
            .into_iter()
            .map(|(name, mode)| (ModeName::new(name), mode))
            .collect(),
        agents: typed.agents,
        mcp_servers: typed.mcp_servers,
        warnings,
        workspace_root: options.workspace_root.clone(),
        match_ctx,
        untrusted: untrusted.map(Arc::new),
        hinted: Default::default(),
        run_by_contract,
    };
    phase("snapshot built");
    finish(Some(Arc::new(snapshot)), diagnostics)
}

/// The context path rules are judged in: the workspace root, the home folder, what
/// `policy_files` matches (see [`policy_locations`]) and what `git_runs` matches (the files
/// the workspace repository's config makes git run, read when the set is loaded).
fn match_context(
    options: &LoadOptions,
    layers: &[LayerSpec],
    sources: &Sources,
    typed: &PolicyFile,
) -> MatchContext {
    let (locations, folders) = super::locations::policy_locations(options, layers, sources, typed);
    let git_runs =
        crate::policy::git_config::run_by_git(&options.workspace_root, options.home.as_deref());
    let ctx = MatchContext::new(&options.workspace_root)
        .with_policy_locations(locations)
        .with_policy_folders(folders)
        .with_git_runs(git_runs);
    match &options.home {
        Some(home) => ctx.with_home(home),
        None => ctx,
    }
}

fn finish(snapshot: Option<Arc<Snapshot>>, mut diagnostics: Vec<Diagnostic>) -> LoadOutcome {
    crate::diagnostics::diagnostic::sort(&mut diagnostics);
    LoadOutcome {
        snapshot,
        diagnostics,
    }
}

/// Reads, parses and schema-checks every file of every layer, and merges those that passed
/// in load order (checking each root for duplicate definitions on the way). Files are
/// independent until the merge, so they are read in parallel. The files of a found project
/// layer are merged last, whole when the user trusts the project, else cut down to what only
/// tightens (see [`super::untrusted`]); what was cut is returned. `None` past a limit of
/// the set (said in `diagnostics`).
fn read_and_merge(
    layers: &[LayerSpec],
    options: &LoadOptions,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<(Sources, Merger, Option<UntrustedProject>)> {
    let mut found_files: Vec<(usize, FoundFile)> = Vec::new();
    for (layer_index, layer) in layers.iter().enumerate() {
        let (found, errors) = discover(&layer.root);
        for error in errors {
            diagnostics.push(discovery_diagnostic(error));
        }
        found_files.extend(found.into_iter().map(|file| (layer_index, file)));
    }

    let mut sources = Sources::default();
    let mut merger = Merger::new();
    let mut duplicates = Duplicates::default();
    let limits = &options.set_limits;
    if found_files.len() > limits.max_files {
        diagnostics.push(set_limit(
            "files",
            found_files.len() as u64,
            limits.max_files as u64,
        ));
        return None;
    }
    // A file over the size a file may have counts as only that much: it is refused on its
    // own, at its name.
    let bytes: u64 = found_files
        .iter()
        .map(|(_, file)| match file {
            FoundFile::Embedded(embedded) => embedded.text.len() as u64,
            FoundFile::Disk(path) => std::fs::metadata(path).map_or(0, |meta| {
                meta.len()
                    .min(options.read_limits.max_bytes.saturating_add(1))
            }),
        })
        .sum();
    if bytes > limits.max_bytes {
        diagnostics.push(set_limit("bytes of files", bytes, limits.max_bytes));
        return None;
    }
    let read: Vec<_> = found_files
        .par_iter()
        .map(|(_, file)| read_one(file.clone(), options))
        .collect();
    let (mut tools, mut rules) = (0usize, 0usize);
    let mut project_files = Vec::new();
    let mut project_complete = true;
    for ((layer_index, _), (document, found)) in found_files.iter().zip(read) {
        let in_project = layers
            .get(*layer_index)
            .is_some_and(|layer| layer.kind == LayerKind::Project);
        diagnostics.extend(found);
        let Some(document) = document else {
            project_complete &= !in_project;
            continue;
        };
        let count = |section: &str| match document.value.get(section) {
            Some(Value::Object(map)) => map.len(),
            Some(Value::Array(items)) => items.len(),
            _ => 0,
        };
        tools += count("tools");
        rules += count("rules");
        if tools > limits.max_tools || rules > limits.max_rules {
            let (what, found, limit) = if tools > limits.max_tools {
                ("tool contracts", tools, limits.max_tools)
            } else {
                ("rules", rules, limits.max_rules)
            };
            diagnostics.push(
                set_limit(what, found as u64, limit as u64)
                    .at(&document.source, document.source.span(0, 0)),
            );
            return None;
        }
        let is_project = layers
            .get(*layer_index)
            .is_some_and(|layer| layer.kind == LayerKind::Project);
        if is_project {
            // INVARIANT: the project layer is the last layer, so every trusted file is merged
            // before its files are.
            project_files.push((*layer_index, document));
            continue;
        }
        let id = FileId(sources.files.len() as u32);
        sources.files.push(LoadedFile {
            layer: *layer_index,
            source: document.source,
            spans: document.spans,
        });
        duplicates.check(&sources, id, *layer_index, &document.value, diagnostics);
        let issues = merger.add_file(FileInput {
            file: id,
            layer: *layer_index,
            enforced: layers
                .get(*layer_index)
                .is_some_and(|layer| layer.kind.is_enforced()),
            document: document.value,
        });
        for issue in issues {
            diagnostics.push(merge_issue(&sources, issue));
        }
    }
    let untrusted = match &options.layers.project {
        Some(project) => merge_project(
            project,
            project_files,
            project_complete,
            options,
            (&mut sources, &mut merger, &mut duplicates),
            diagnostics,
        ),
        None => None,
    };
    if let Err(message) = policy_checker() {
        diagnostics.push(Diagnostic::new(
            Code::SchemaInvalid,
            format!("the built-in policy schema does not compile: {message}"),
        ));
    }
    Some((sources, merger, untrusted))
}

/// Merges the files of the found project layer: whole when the trust store holds the digest
/// of exactly these files, else each cut down to what only tightens, with a warning listing
/// what was left out. Returns what was left out when the project is not trusted.
fn merge_project(
    project: &ProjectLayer,
    files: Vec<(usize, crate::load::ParsedDocument)>,
    complete: bool,
    options: &LoadOptions,
    (sources, merger, duplicates): (&mut Sources, &mut Merger, &mut Duplicates),
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<UntrustedProject> {
    let digest = trust::digest(
        &project.policies,
        files.iter().map(|(_, document)| {
            (
                std::path::Path::new(&**document.source.path()),
                &**document.source.text(),
            )
        }),
    );
    let trusted = complete
        && match options.config_dir.as_deref().map(TrustStore::open) {
            Some(Ok(store)) => store.is_trusted(&project.root, &digest),
            Some(Err(error)) => {
                diagnostics.push(
                    Diagnostic::new(Code::TrustUntrustedProject, error.to_string())
                        .with_help("fix or remove the file; until then no project is trusted"),
                );
                false
            }
            None => false,
        };
    let trusted_state = (!trusted).then(|| Trusted::from_merged(merger.document()));
    let mut ignored = Vec::new();
    for (layer_index, document) in files {
        let id = FileId(sources.files.len() as u32);
        sources.files.push(LoadedFile {
            layer: layer_index,
            source: document.source,
            spans: document.spans,
        });
        duplicates.check(sources, id, layer_index, &document.value, diagnostics);
        let value = match &trusted_state {
            None => document.value,
            Some(state) => {
                let restricted = untrusted::restrict(&document.value, state);
                for item in &restricted.ignored {
                    let place = sources.locate_in(id, &item.pointer, true);
                    ignored.push((place, item.what.clone()));
                }
                if let Some(file) = sources.files.get_mut(id.0 as usize) {
                    file.spans = file.spans.renumbered("/rules", &restricted.kept_rules);
                }
                restricted.document
            }
        };
        let issues = merger.add_file(FileInput {
            file: id,
            layer: layer_index,
            enforced: false,
            document: value,
        });
        for issue in issues {
            diagnostics.push(merge_issue(sources, issue));
        }
    }
    if trusted {
        return None;
    }
    let untrusted = UntrustedProject {
        root: project.root.clone(),
        ignored: ignored
            .iter()
            .map(|(place, what)| match place {
                Some(location) => format!("{}: {what}", location.display()),
                None => what.clone(),
            })
            .collect(),
    };
    if !ignored.is_empty() {
        let mut diagnostic = Diagnostic::new(
            Code::TrustUntrustedProject,
            format!(
                "project `{}` is not trusted: {} {} of its policies that could loosen them or run code {} ignored",
                project.root.display(),
                ignored.len(),
                if ignored.len() == 1 { "entry" } else { "entries" },
                if ignored.len() == 1 { "is" } else { "are" },
            ),
        )
        .with_help(format!(
            "review `{}`, then run `toolgate trust {}`; until then its deny and ask rules apply and nothing else",
            project.policies.display(),
            project.root.display()
        ));
        for (place, what) in ignored {
            if let Some(location) = place {
                diagnostic = diagnostic.with_related(format!("ignored: {what}"), location);
            }
        }
        diagnostics.push(diagnostic);
    }
    Some(untrusted)
}

/// The diagnostic for a root or entry that could not be listed.
fn discovery_diagnostic(error: super::layer::DiscoveryError) -> Diagnostic {
    let shown = error.path.display();
    match error.kind {
        DiscoveryErrorKind::NotFound => Diagnostic::new(
            Code::IoNotFound,
            format!("policy root `{shown}` does not exist"),
        )
        .with_help("pass an existing directory or file to `--policies`/`--enforced`"),
        DiscoveryErrorKind::TooLarge => Diagnostic::new(
            Code::IoRead,
            format!(
                "policy root `{shown}` holds more than {} entries below it: it is not a folder of policy files",
                super::layer::MAX_ENTRIES
            ),
        )
        .with_help("pass the folder that holds the policy files (`.toolgate/policies`), or the files themselves"),
        DiscoveryErrorKind::Unreadable(reason) => {
            // Name the entry as a location too, so that GitHub annotations and SARIF point
            // at it.
            let format = Format::from_path(&error.path).unwrap_or(Format::Yaml);
            let entry = SourceFile::in_memory(shown.to_string(), "", format);
            Diagnostic::new(Code::IoRead, format!("cannot read `{shown}`: {reason}"))
                .with_location(entry.location_at(0, 0))
                .with_help("fix or remove the entry, or check the permissions of the folder")
        }
    }
}

/// Reads, parses and schema-checks one file: the document when it passed, and every
/// diagnostic found on the way.
fn read_one(
    file: FoundFile,
    options: &LoadOptions,
) -> (Option<crate::load::ParsedDocument>, Vec<Diagnostic>) {
    let source = match file {
        FoundFile::Embedded(embedded) => {
            let format =
                Format::from_path(std::path::Path::new(embedded.path)).unwrap_or(Format::Yaml);
            SourceFile::in_memory(format!("builtin:{}", embedded.path), embedded.text, format)
        }
        FoundFile::Disk(path) => match read_source(&path, &options.read_limits) {
            Ok(source) => source,
            Err(diagnostic) => return (None, vec![diagnostic]),
        },
    };
    let document = match parse_document_with(source, &options.parse_limits) {
        Ok(document) => document,
        Err(found) => return (None, found),
    };
    let mut diagnostics = Vec::new();
    // The policy schema is compiled on first use (once per process), by whichever worker
    // first has a file parsed, while the others go on parsing; one that fails to compile is
    // reported once, after the files.
    if let Ok(checker) = policy_checker() {
        diagnostics = checker.check_document(&document);
        if diagnostics.iter().any(Diagnostic::is_error) {
            return (None, diagnostics);
        }
    }
    // The typed model is built once, from the merged set: the schema is generated from the
    // model, so a file that passed the schema fits it, and a mismatch (a bug) is still
    // reported there, at the value, through provenance.
    (Some(document), diagnostics)
}

/// A tool, gate, mode, rule or hook defined twice within one layer (one root) is an error
/// that names both places: within a root there is no order that could say which one wins.
/// Files are checked one by one, in load order.
#[derive(Default)]
struct Duplicates {
    /// (layer, section, name) → the first definition: its file and its position in the
    /// section (the pointer is only written for a report).
    seen: HashMap<(usize, &'static str, String), (FileId, Definition), foldhash::fast::RandomState>,
}

/// Where in its file a definition is: a map entry by key, a list item by index.
#[derive(Clone, Copy)]
enum Definition {
    Key,
    Index(usize),
}

impl Definition {
    /// The pointer of the name: the key of a map entry, the `name` of a list item.
    fn pointer(self, section: &str, name: &str) -> String {
        match self {
            Self::Key => join_pointer(&format!("/{section}"), name),
            Self::Index(index) => format!("/{section}/{index}/name"),
        }
    }
}

impl Duplicates {
    fn check(
        &mut self,
        sources: &Sources,
        file: FileId,
        layer: usize,
        document: &Value,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        let mut definitions: Vec<(&'static str, &str, Definition)> = Vec::new();
        for section in ["tools", "gates", "modes"] {
            if let Some(Value::Object(items)) = document.get(section) {
                definitions.extend(
                    items
                        .keys()
                        .map(|name| (section, name.as_str(), Definition::Key)),
                );
            }
        }
        for section in ["rules", "hooks"] {
            if let Some(Value::Array(items)) = document.get(section) {
                for (index, item) in items.iter().enumerate() {
                    if let Some(name) = item.get("name").and_then(Value::as_str) {
                        definitions.push((section, name, Definition::Index(index)));
                    }
                }
            }
        }
        for (section, name, definition) in definitions {
            self.add(
                sources,
                (layer, section, name),
                file,
                definition,
                diagnostics,
            );
        }
    }

    fn add(
        &mut self,
        sources: &Sources,
        (layer, section, name): (usize, &'static str, &str),
        file: FileId,
        definition: Definition,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        let key = (layer, section, name.to_owned());
        let Some((first_file, first)) = self.seen.get(&key) else {
            self.seen.insert(key, (file, definition));
            return;
        };
        let what = match section {
            "tools" => "tool",
            "gates" => "gate",
            "modes" => "mode",
            "rules" => "rule",
            _ => "hook",
        };
        let mut diagnostic = Diagnostic::new(
            Code::SemanticDuplicateName,
            format!("{what} `{name}` is defined twice in the same layer"),
        )
        .with_help(format!(
            "keep one definition; to change a {what} of a lower layer, redefine it in a higher layer"
        ));
        // Map entries are named by their key; rules and hooks by their `name` value.
        let at_key = matches!(section, "tools" | "gates" | "modes");
        let pointer = definition.pointer(section, name);
        if let Some(location) = sources.locate_in(file, &pointer, at_key) {
            diagnostic = diagnostic.with_location(location);
        }
        let first_pointer = first.pointer(section, name);
        if let Some(location) = sources.locate_in(*first_file, &first_pointer, at_key) {
            diagnostic = diagnostic.with_related("first defined here", location);
        }
        diagnostics.push(diagnostic);
    }
}

fn merge_issue(sources: &Sources, issue: MergeIssue) -> Diagnostic {
    match issue {
        MergeIssue::LockedField {
            pointer,
            locked_at,
            written_at,
        } => {
            let (message, help, related) = match enforced_entry(&pointer) {
                Some(("agents", entry)) => (
                    format!(
                        "the agent setting `{entry}` cannot be changed while an enforced layer is loaded: its rules are written for the tools the agents' calls map onto"
                    ),
                    "remove this setting (mapping an agent tool that has no mapping yet, or a new agent, is allowed); the organisation's policy may change it",
                    "the enforced layer",
                ),
                Some((_, entry)) => (
                    format!(
                        "the command table's `{entry}` cannot be changed while an enforced layer is loaded: its rules judge command lines by it"
                    ),
                    "remove this setting (a program the table does not list yet may be added; its variables are the organisation's); the organisation's policy may change it",
                    "the enforced layer",
                ),
                None => (
                    format!(
                        "{} is locked by an enforced layer and cannot be changed",
                        describe_contract_pointer(&pointer)
                    ),
                    "remove this setting; the enforced layer's value stays in force",
                    "locked here",
                ),
            };
            let mut diagnostic =
                Diagnostic::new(Code::SemanticLockedField, message).with_help(help);
            if let Some(location) = sources.locate_origin(&written_at) {
                diagnostic = diagnostic.with_location(location);
            }
            if let Some(location) = sources.locate_origin(&locked_at) {
                diagnostic = diagnostic.with_related(related, location);
            }
            diagnostic
        }
        MergeIssue::ReplacedMatch {
            name,
            decision,
            replaced_at,
            written_at,
        } => {
            let mut diagnostic = Diagnostic::new(
                Code::SemanticRuleReplaced,
                format!(
                    "this `match` replaces the one of the {decision} rule `{name}` of a lower layer: what that rule matched is no longer {} by it",
                    if decision == "deny" { "denied" } else { "asked" }
                ),
            )
            .with_help(format!(
                "to add a rule, give it a name of its own; to replace `{name}` on purpose, switch it off (`disabled: true`) and write yours under a new name"
            ));
            if let Some(location) = sources.locate_origin(&written_at) {
                diagnostic = diagnostic.with_location(location);
            }
            if let Some(location) = sources.locate_origin(&replaced_at) {
                diagnostic = diagnostic.with_related("the rule whose match is replaced", location);
            }
            diagnostic
        }
        MergeIssue::EnforcedItem {
            section,
            name,
            defined_at,
            written_at,
        } => {
            let what = if section == "rules" { "rule" } else { "hook" };
            let mut diagnostic = Diagnostic::new(
                Code::SemanticLockedField,
                format!("{what} `{name}` is defined by an enforced layer and cannot be redefined or disabled"),
            )
            .with_help(format!("give this {what} another name"));
            if let Some(location) = sources.locate_origin(&written_at) {
                diagnostic = diagnostic.with_location(location);
            }
            if let Some(location) = sources.locate_origin(&defined_at) {
                diagnostic = diagnostic.with_related("defined here", location);
            }
            diagnostic
        }
    }
}

/// The section and the dotted entry of a pointer into `agents` or `commands`
/// (`("agents", "claude.tools.Bash")` for `/agents/claude/tools/Bash`); `None` elsewhere.
fn enforced_entry(pointer: &str) -> Option<(&'static str, String)> {
    let parts = crate::load::spans::pointer_segments(pointer)?;
    let (section, rest) = parts.split_first()?;
    let section = ["agents", "commands"]
        .into_iter()
        .find(|known| section == known)?;
    (!rest.is_empty()).then(|| (section, rest.join(".")))
}

/// `/tools/Bash/timeout/max` → "`timeout.max` of tool `Bash`".
fn describe_contract_pointer(pointer: &str) -> String {
    let parts: Vec<String> = crate::load::spans::pointer_segments(pointer)
        .unwrap_or_default()
        .into_iter()
        .map(|part| part.into_owned())
        .collect();
    match parts.as_slice() {
        [section, tool, modes, mode, rest @ ..]
            if section == "tools" && modes == "modes" && !rest.is_empty() =>
        {
            format!("`{}` of tool `{tool}` in mode `{mode}`", rest.join("."))
        }
        [section, tool, rest @ ..] if section == "tools" && !rest.is_empty() => {
            format!("`{}` of tool `{tool}`", rest.join("."))
        }
        _ => format!("`{pointer}`"),
    }
}

/// The typed model of a document. Deserialises without tracking the path first (several
/// times faster); only a document that fails is deserialised again to find where.
fn typed_model(value: &Value) -> Result<PolicyFile, serde_path_to_error::Error<serde_json::Error>> {
    match typed_model_in_parallel(value) {
        Some(typed) => Ok(typed),
        // Something does not fit: deserialise again, tracking the path to report.
        None => serde_path_to_error::deserialize::<_, PolicyFile>(value),
    }
}

/// The typed model, with the tools and the rules (nearly all of a large set) deserialised in
/// parallel; `None` when any part does not fit the model.
fn typed_model_in_parallel(value: &Value) -> Option<PolicyFile> {
    use crate::model::contract::ToolContract;
    use crate::model::rule::Rule;
    use serde::Deserialize as _;

    /// The fewest rules or tools one parallel task deserialises (each one is cheap).
    const CHUNK: usize = 64;
    let Value::Object(map) = value else {
        return None;
    };
    // Everything else, as a shallow document of its own (small: engine, hooks, gates, modes).
    let rest: serde_json::Map<String, Value> = map
        .iter()
        .filter(|(key, _)| !matches!(key.as_str(), "tools" | "rules"))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let mut typed = PolicyFile::deserialize(&Value::Object(rest)).ok()?;
    match map.get("tools") {
        None => {}
        Some(Value::Object(tools)) => {
            let entries: Vec<(&String, &Value)> = tools.iter().collect();
            let contracts: Vec<_> = entries
                .par_iter()
                .with_min_len(CHUNK)
                .map(|(_, contract)| ToolContract::deserialize(*contract).ok())
                .collect();
            typed.tools = entries
                .iter()
                .zip(contracts)
                .map(|((name, _), contract)| Some(((*name).clone(), contract?)))
                .collect::<Option<_>>()?;
        }
        Some(_) => return None,
    }
    match map.get("rules") {
        None => {}
        Some(Value::Array(rules)) => {
            typed.rules = rules
                .par_iter()
                .with_min_len(CHUNK)
                .map(|rule| Rule::deserialize(rule).ok())
                .collect::<Option<_>>()?;
        }
        Some(_) => return None,
    }
    Some(typed)
}

/// Converts a `serde_path_to_error` path into a JSON pointer.
fn path_to_pointer(path: &serde_path_to_error::Path) -> String {
    let mut pointer = String::new();
    for segment in path.iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => pointer.push_str(&format!("/{index}")),
            serde_path_to_error::Segment::Map { key } => pointer = join_pointer(&pointer, key),
            serde_path_to_error::Segment::Enum { variant } => {
                pointer = join_pointer(&pointer, variant)
            }
            serde_path_to_error::Segment::Unknown => {}
        }
    }
    pointer
}

impl Sources {
    /// The location of an effective pointer: the file and place that set its value (or the
    /// closest enclosing value that was set as a whole, such as an `input_schema`).
    pub fn locate(
        &self,
        provenance: &Provenance,
        pointer: &str,
    ) -> Option<crate::diagnostics::Location> {
        let (at, origin) = provenance.nearest(pointer)?;
        let rest = &pointer[at.len()..];
        self.locate_in(origin.file, &format!("{}{rest}", origin.pointer), false)
    }

    /// Like [`Sources::locate`], but at the key of the value (for "defined here" labels).
    pub fn locate_key(
        &self,
        provenance: &Provenance,
        pointer: &str,
    ) -> Option<crate::diagnostics::Location> {
        self.locate_key_from(provenance.nearest(pointer)?, pointer)
    }

    /// Like [`Sources::locate_key`], from the provenance entry `nearest` already found for
    /// `pointer` (the entry at it or at its closest recorded ancestor).
    pub fn locate_key_from(
        &self,
        (at, origin): (&str, &Origin),
        pointer: &str,
    ) -> Option<crate::diagnostics::Location> {
        let rest = pointer.get(at.len()..).unwrap_or_default();
        self.locate_in(origin.file, &format!("{}{rest}", origin.pointer), true)
    }

    /// Whether every value at and below an effective pointer comes from the layers shipped in
    /// the binary (the engine defaults and the built-in layer); `true` when nothing is there.
    pub fn shipped(&self, layers: &[LayerSpec], provenance: &Provenance, pointer: &str) -> bool {
        let shipped = |origin: &Origin| {
            self.files
                .get(origin.file.0 as usize)
                .and_then(|file| layers.get(file.layer))
                .is_some_and(|layer| matches!(layer.kind, LayerKind::Defaults | LayerKind::Builtin))
        };
        provenance.nearest(pointer).is_none_or(|(_, o)| shipped(o))
            && provenance.subtree(pointer).all(|(_, o)| shipped(o))
    }

    /// The location of an origin.
    pub fn locate_origin(&self, origin: &Origin) -> Option<crate::diagnostics::Location> {
        self.locate_in(origin.file, &origin.pointer, false)
    }

    /// The location of a pointer inside one file (the closest node that exists); at its key
    /// when `key` and the node has one.
    pub fn locate_in(
        &self,
        file: FileId,
        pointer: &str,
        key: bool,
    ) -> Option<crate::diagnostics::Location> {
        let loaded = self.files.get(file.0 as usize)?;
        let node = loaded.spans.nearest(pointer)?;
        let span = if key { node.label() } else { node.value };
        Some(loaded.source.location(span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize as _;
    use serde_json::json;

    const DECISIONS: [&str; 3] = ["allow", "ask", "deny"];

    /// A document with enough tools and rules for the parallel path to split them.
    fn large_document() -> Value {
        let tools: serde_json::Map<String, Value> = (0..300)
            .map(|i| {
                (
                    format!("Tool{i}"),
                    json!({
                        "aliases": [format!("t{i}")],
                        "input_schema": {"type": "object"},
                        "concurrency": {"concurrent_safe": i % 2 == 0},
                        "timeout": {"default": "2m", "max": "10m"},
                        "permission": {"default": "ask"},
                        "handler": {"kind": "command", "argv": [format!("tool-{i}")]},
                    }),
                )
            })
            .collect();
        let rules: Vec<Value> = (0..1000)
            .map(|i| {
                json!({
                    "name": format!("rule-{i}"),
                    "tools": [format!("Tool{}", i % 300)],
                    "match": {"path": {"path": [format!("src/r{i}/**")]}},
                    "decision": DECISIONS[i % 3],
                    "priority": i % 7,
                })
            })
            .collect();
        json!({
            "version": 1,
            "engine": {"max_concurrency": 4},
            "tools": tools,
            "rules": rules,
            "modes": {"plan": {"description": "read only"}},
        })
    }

    #[test]
    fn the_parallel_typed_model_equals_the_plain_one() {
        let document = large_document();
        let plain = PolicyFile::deserialize(&document).unwrap();
        assert_eq!(plain.tools.len(), 300);
        assert_eq!(plain.rules.len(), 1000);
        assert_eq!(typed_model_in_parallel(&document), Some(plain.clone()));
        assert_eq!(typed_model(&document).unwrap(), plain);
    }

    #[test]
    fn a_misfit_deep_in_a_rule_is_reported_at_its_path() {
        let mut document = large_document();
        document["rules"][777]["priority"] = json!("high");
        assert_eq!(typed_model_in_parallel(&document), None);
        let error = typed_model(&document).unwrap_err();
        assert_eq!(path_to_pointer(error.path()), "/rules/777/priority");
        let mut document = large_document();
        document["tools"]["Tool250"]["concurrency"]["concurrent_safe"] = json!("yes");
        let error = typed_model(&document).unwrap_err();
        assert_eq!(
            path_to_pointer(error.path()),
            "/tools/Tool250/concurrency/concurrent_safe"
        );
    }
}
