//! Merging the files of all layers into one effective document, field by field, recording
//! where every value came from and enforcing the locks of enforced layers.
//!
//! The merge works on the JSON form of the files (already checked against the schema), which
//! keeps it independent of the typed model: objects merge key by key, everything else is
//! replaced. A few objects are atomic — replaced as a whole — because merging their insides
//! would change their meaning: `input_schema`, `output_schema`, a rule's `match` and
//! `examples`, and a `handler` whose `kind` changes. Rules and hooks are matched by `name`.
//!
//! Provenance is recorded where a file writes a value (a new contract, a changed field), not
//! for every node below it: a pointer inside a value resolves to its closest recorded
//! ancestor, whose file holds the rest of the path unchanged. That keeps the table small (one
//! entry per written value instead of one per node) and the merge linear in the input.
//!
//! A contract's `locked` list accumulates across layers instead of being replaced, so the
//! effective contract shows (and the semantic stage checks) every lock with the file that
//! declared it; a later layer cannot make an enforced layer's lock disappear from view.

use std::collections::HashMap;

/// The seeded fast hash for the per-item indexes (one lookup per rule of every file).
type FastHash = foldhash::fast::RandomState;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::provenance::{FileId, Origin, Provenance};
use crate::load::spans::join_pointer as child;

/// Sections of a file that merge key by key, all the way down.
const OBJECT_SECTIONS: [&str; 5] = ["engine", "commands", "agents", "review", "mcp_servers"];
/// Sections of a file that are maps keyed by name.
const MAP_SECTIONS: [&str; 3] = ["tools", "gates", "modes"];
/// Sections of a file that are lists of named items.
const LIST_SECTIONS: [&str; 2] = ["rules", "hooks"];

/// Something a file tried that its layer may not do.
#[derive(Clone, Debug, PartialEq)]
pub enum MergeIssue {
    /// A field locked by an enforced layer was changed; the change was undone.
    LockedField {
        /// Effective pointer of the locked field.
        pointer: String,
        /// Where the lock was declared.
        locked_at: Origin,
        /// Where the change was written.
        written_at: Origin,
    },
    /// A rule's `match` replaced the `match` of a lower layer's deny or ask rule of the
    /// same name (kept: a warning).
    ReplacedMatch {
        /// The rule's name.
        name: String,
        /// The lower rule's decision (`deny` or `ask`).
        decision: String,
        /// Where the replaced `match` was written.
        replaced_at: Origin,
        /// Where the new `match` is written.
        written_at: Origin,
    },
    /// A rule or hook defined by an enforced layer was redefined; the redefinition was
    /// ignored.
    EnforcedItem {
        /// `rules` or `hooks`.
        section: &'static str,
        /// The item's name.
        name: String,
        /// Where the enforced layer defines it.
        defined_at: Origin,
        /// Where the later layer redefines it.
        written_at: Origin,
    },
}

/// A file to merge. The merge takes its document: values move into the effective document
/// instead of being copied.
#[derive(Clone, Debug)]
pub struct FileInput {
    /// The file.
    pub file: FileId,
    /// Its layer's position (lowest first).
    pub layer: usize,
    /// Whether its layer is enforced.
    pub enforced: bool,
    /// Its document (schema-valid).
    pub document: Value,
}

/// What a lock guards.
enum Locked {
    /// A contract field declared in a `locked` list. It guards the field itself and the same
    /// field in every mode patch of the contract (`modes.<mode>.timeout.max`), since a mode
    /// patch changes the effective value while its mode is active.
    Field {
        /// `/tools/<tool>`.
        tool: String,
        /// The field's reference tokens below the contract, escaped (`["timeout", "max"]`).
        path: Vec<String>,
    },
    /// One entry of an agent's settings (`/agents/claude/tools/Bash`) or of the command table
    /// (`/commands/programs/cat`) as it stood when an enforced layer was merged: the enforced
    /// layer's rules are written for the toolgate tools the agents' calls map onto and judge
    /// command lines by the table, so a later layer that remapped `Bash` onto a tool of its
    /// own, or declared `cat`'s operands text, would step around them.
    Entry(String),
}

/// A lock and what its pointers held when it was registered.
struct Lock {
    locked: Locked,
    layer: usize,
    /// What each guarded pointer held when the lock was registered; a pointer not listed
    /// held nothing.
    guarded: HashMap<String, Guarded>,
    locked_at: Origin,
}

struct Guarded {
    state: LockState,
    value: Option<Value>,
    saved: Vec<(String, Origin)>,
}

/// What a locked pointer holds: nothing, a value, or nothing because a parent was replaced
/// by something that is not an object (`timeout: none` replaces every `timeout.*`).
#[derive(Clone, Debug, PartialEq)]
enum LockState {
    Absent,
    Value(Value),
    Replaced(Value),
}

impl Lock {
    /// The pointers this lock guards in the current document: the field, and the field in
    /// every mode patch the contract has now.
    fn pointers(&self, doc: &Map<String, Value>) -> Vec<String> {
        let (tool, path) = match &self.locked {
            Locked::Field { tool, path } => (tool, path),
            Locked::Entry(pointer) => return vec![pointer.clone()],
        };
        let field = |base: &str| {
            path.iter().fold(base.to_owned(), |pointer, token| {
                format!("{pointer}/{token}")
            })
        };
        let mut pointers = vec![field(tool)];
        let modes = format!("{tool}/modes");
        if let Some(Value::Object(patches)) = lookup(doc, &modes) {
            for mode in patches.keys() {
                pointers.push(field(&child(&modes, mode)));
            }
        }
        pointers
    }
}

/// A `locked` entry of an enforced file: the tool, the entry's index and the dotted path.
struct DeclaredLock {
    tool: String,
    index: usize,
    path: String,
}

/// The `locked` entries of a file's contracts.
fn declared_locks(document: &Map<String, Value>) -> Vec<DeclaredLock> {
    let Some(Value::Object(tools)) = document.get("tools") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (tool, contract) in tools {
        let Some(Value::Array(locked)) = contract.get("locked") else {
            continue;
        };
        for (index, path) in locked.iter().enumerate() {
            if let Some(path) = path.as_str() {
                out.push(DeclaredLock {
                    tool: tool.clone(),
                    index,
                    path: path.to_owned(),
                });
            }
        }
    }
    out
}

/// The pointers a later layer may not change once an enforced layer is merged: each agent's
/// tool mappings and modes and its other settings but the description; each program of the
/// command table, its variables (as a whole) and its other settings. New agents, mappings of
/// agent tools not mapped yet, and programs not in the table stay open.
fn enforced_entries(doc: &Map<String, Value>) -> Vec<String> {
    let mut pointers = Vec::new();
    if let Some(Value::Object(agents)) = doc.get("agents") {
        for (agent, settings) in agents {
            if let Value::Object(settings) = settings {
                entries_of(
                    &child("/agents", agent),
                    settings,
                    &["tools", "modes"],
                    &mut pointers,
                );
            }
        }
    }
    if let Some(Value::Object(commands)) = doc.get("commands") {
        // The variables as a whole: a name added exactly (`LD_AUDIT: harmless`) wins over
        // the table's patterns (`LD_*`), so adding one can loosen it.
        entries_of("/commands", commands, &["programs"], &mut pointers);
    }
    pointers
}

/// The pointers of `settings` (at `base`): one per entry of each map named in `maps`, one per
/// other key but `description`.
fn entries_of(base: &str, settings: &Map<String, Value>, maps: &[&str], out: &mut Vec<String>) {
    for (key, value) in settings {
        match value {
            _ if key == "description" => {}
            Value::Object(entries) if maps.contains(&key.as_str()) => {
                let section = child(base, key);
                out.extend(entries.keys().map(|entry| child(&section, entry)));
            }
            _ => out.push(child(base, key)),
        }
    }
}

/// The state of a pointer (see [`LockState`]).
fn lock_state(doc: &Map<String, Value>, pointer: &str) -> LockState {
    let mut tokens = pointer.split('/').skip(1).map(unescape);
    let Some(first) = tokens.next() else {
        return LockState::Absent;
    };
    let Some(mut current) = doc.get(&first) else {
        return LockState::Absent;
    };
    for token in tokens {
        current = match current {
            Value::Object(map) => match map.get(&token) {
                Some(next) => next,
                None => return LockState::Absent,
            },
            other => return LockState::Replaced(other.clone()),
        };
    }
    LockState::Value(current.clone())
}

struct EnforcedItem {
    layer: usize,
    defined_at: Origin,
}

/// Accumulates files in layer order.
pub struct Merger {
    doc: Map<String, Value>,
    provenance: Provenance,
    locks: Vec<Lock>,
    enforced_items: HashMap<(&'static str, String), EnforcedItem, FastHash>,
    item_index: HashMap<(&'static str, String), usize, FastHash>,
}

impl Default for Merger {
    fn default() -> Self {
        Self::new()
    }
}

impl Merger {
    /// An empty effective document.
    pub fn new() -> Self {
        let mut doc = Map::new();
        for section in OBJECT_SECTIONS {
            doc.insert(section.into(), Value::Object(Map::new()));
        }
        for section in MAP_SECTIONS {
            doc.insert(section.into(), Value::Object(Map::new()));
        }
        for section in LIST_SECTIONS {
            doc.insert(section.into(), Value::Array(Vec::new()));
        }
        Self {
            doc,
            provenance: Provenance::default(),
            locks: Vec::new(),
            enforced_items: HashMap::default(),
            item_index: HashMap::default(),
        }
    }

    /// The effective document so far: what the files merged until now make.
    pub fn document(&self) -> &Map<String, Value> {
        &self.doc
    }

    /// Merges one file over what is there, and reports what its layer was not allowed to do.
    pub fn add_file(&mut self, input: FileInput) -> Vec<MergeIssue> {
        let mut issues = Vec::new();
        let FileInput {
            file,
            layer,
            enforced,
            document,
        } = input;
        let Value::Object(mut source) = document else {
            return issues;
        };
        let origin = |pointer: &str| Origin {
            file,
            pointer: Arc::from(pointer),
        };
        // Locks are read before the document's values move into the effective document.
        let locks = if enforced {
            declared_locks(&source)
        } else {
            Vec::new()
        };

        // INVARIANT: `new` created every section with its type and merging never changes the
        // type of a section, so the `let Some(Value::Object(..))` below always bind.
        for section in OBJECT_SECTIONS {
            if let (Some(Value::Object(settings)), Some(Value::Object(target))) =
                (source.remove(section), self.doc.get_mut(section))
            {
                let pointer = format!("/{section}");
                merge_object(
                    target,
                    settings,
                    &pointer,
                    &pointer,
                    &Atomic::None,
                    file,
                    &mut self.provenance,
                );
            }
        }
        for section in MAP_SECTIONS {
            let Some(Value::Object(items)) = source.remove(section) else {
                continue;
            };
            let Some(Value::Object(target)) = self.doc.get_mut(section) else {
                continue;
            };
            let atomic = if section == "tools" {
                Atomic::Contract
            } else {
                Atomic::None
            };
            for (name, value) in items {
                let eff = child(&format!("/{section}"), &name);
                merge_value(
                    target,
                    name,
                    value,
                    &eff,
                    &eff,
                    &atomic,
                    file,
                    &mut self.provenance,
                );
            }
        }
        for section in LIST_SECTIONS {
            let Some(Value::Array(items)) = source.remove(section) else {
                continue;
            };
            for (index, item) in items.into_iter().enumerate() {
                let src = format!("/{section}/{index}");
                let Some(name) = item.get("name").and_then(Value::as_str).map(str::to_owned) else {
                    continue;
                };
                let key = (section, name);
                if let Some(defined) = self.enforced_items.get(&key)
                    && layer > defined.layer
                {
                    issues.push(MergeIssue::EnforcedItem {
                        section,
                        name: key.1,
                        defined_at: defined.defined_at.clone(),
                        written_at: origin(&src),
                    });
                    continue;
                }
                let Some(Value::Array(list)) = self.doc.get_mut(section) else {
                    continue;
                };
                match self.item_index.get(&key) {
                    // A new item moves in whole, with one provenance entry.
                    None => {
                        let eff = format!("/{section}/{}", list.len());
                        self.item_index.insert(key.clone(), list.len());
                        list.push(item);
                        self.provenance.set(eff, origin(&src));
                    }
                    Some(&position) => {
                        let eff = format!("/{section}/{position}");
                        if let (Some(Value::Object(target)), Value::Object(source)) =
                            (list.get_mut(position), item)
                        {
                            if let Some(decision) = replaced_protection(section, target, &source)
                                && let Some((_, replaced_at)) =
                                    self.provenance.nearest(&format!("{eff}/match"))
                            {
                                issues.push(MergeIssue::ReplacedMatch {
                                    name: key.1.clone(),
                                    decision,
                                    replaced_at: replaced_at.clone(),
                                    written_at: origin(&format!("{src}/match")),
                                });
                            }
                            merge_object(
                                target,
                                source,
                                &eff,
                                &src,
                                &Atomic::Item,
                                file,
                                &mut self.provenance,
                            );
                        }
                    }
                }
                if enforced {
                    self.enforced_items.entry(key).or_insert(EnforcedItem {
                        layer,
                        defined_at: origin(&src),
                    });
                }
            }
        }

        self.check_locks(file, layer, enforced, &mut issues);
        let mut locks: Vec<(Locked, Origin)> = locks
            .into_iter()
            .map(|DeclaredLock { tool, index, path }| {
                let src = format!("{}/locked/{index}", child("/tools", &tool));
                let locked = Locked::Field {
                    tool: child("/tools", &tool),
                    path: path
                        .split('.')
                        .map(|part| child("", part)[1..].to_owned())
                        .collect(),
                };
                (locked, origin(&src))
            })
            .collect();
        if enforced {
            // An enforced layer may map agents' tools and extend the command table itself:
            // its entries are guarded from here on, in place of those guarded before.
            self.locks
                .retain(|lock| !matches!(lock.locked, Locked::Entry(_)));
            locks.extend(
                enforced_entries(&self.doc)
                    .into_iter()
                    .map(|pointer| (Locked::Entry(pointer), origin(""))),
            );
        }
        self.register_locks(layer, locks);
        issues
    }

    fn check_locks(
        &mut self,
        file: FileId,
        layer: usize,
        enforced: bool,
        issues: &mut Vec<MergeIssue>,
    ) {
        for lock in &self.locks {
            if layer <= lock.layer || (enforced && matches!(lock.locked, Locked::Entry(_))) {
                continue;
            }
            for pointer in lock.pointers(&self.doc) {
                let registered = lock.guarded.get(&pointer);
                let before = registered.map_or(&LockState::Absent, |g| &g.state);
                if lock_state(&self.doc, &pointer) == *before {
                    continue;
                }
                // Where this file wrote it: inside the field, or the field as part of a value
                // written whole (a new `modes` map), followed down to the field.
                let written_at = self
                    .provenance
                    .subtree(&pointer)
                    .map(|(_, origin)| origin)
                    .find(|origin| origin.file == file)
                    .cloned()
                    .or_else(|| {
                        self.provenance
                            .nearest(&pointer)
                            .map(|(at, origin)| Origin {
                                file: origin.file,
                                pointer: Arc::from(format!(
                                    "{}{}",
                                    origin.pointer,
                                    &pointer[at.len()..]
                                )),
                            })
                    })
                    .unwrap_or(Origin {
                        file,
                        pointer: Arc::from(""),
                    });
                issues.push(MergeIssue::LockedField {
                    pointer: pointer.clone(),
                    locked_at: lock.locked_at.clone(),
                    written_at,
                });
                // Undo the change so that later files and the snapshot see the locked value.
                restore(
                    &mut self.doc,
                    &pointer,
                    registered.and_then(|g| g.value.clone()),
                );
                self.provenance.remove(&pointer);
                self.provenance.clear_below(&pointer);
                for (saved, origin) in registered.map(|g| g.saved.as_slice()).unwrap_or_default() {
                    self.provenance.set(saved.clone(), origin.clone());
                }
            }
        }
    }

    fn register_locks(&mut self, layer: usize, locks: Vec<(Locked, Origin)>) {
        for (locked, locked_at) in locks {
            let mut lock = Lock {
                locked,
                layer,
                guarded: HashMap::new(),
                locked_at,
            };
            for pointer in lock.pointers(&self.doc) {
                let state = lock_state(&self.doc, &pointer);
                if state == LockState::Absent {
                    continue;
                }
                let mut saved: Vec<(String, Origin)> = self
                    .provenance
                    .subtree(&pointer)
                    .map(|(p, o)| (p.to_owned(), o.clone()))
                    .collect();
                // The value's origin may be an ancestor's (a contract written whole): pin it
                // at the pointer, so that undoing a change brings it back.
                if let Some((at, origin)) = self.provenance.nearest(&pointer)
                    && at != pointer
                {
                    let rest = &pointer[at.len()..];
                    saved.push((
                        pointer.clone(),
                        Origin {
                            file: origin.file,
                            pointer: Arc::from(format!("{}{rest}", origin.pointer)),
                        },
                    ));
                }
                let value = lookup(&self.doc, &pointer).cloned();
                lock.guarded.insert(
                    pointer,
                    Guarded {
                        state,
                        value,
                        saved,
                    },
                );
            }
            self.locks.push(lock);
        }
    }

    /// The effective document and the provenance of its values.
    pub fn finish(self) -> (Value, Provenance) {
        (Value::Object(self.doc), self.provenance)
    }
}

/// Which objects are replaced as a whole instead of merged.
enum Atomic {
    None,
    /// Inside a tool contract (pointer relative to the contract).
    Contract,
    /// Inside a rule or hook.
    Item,
}

impl Atomic {
    fn is_atomic(
        &self,
        relative: &[&str],
        old: &Map<String, Value>,
        new: &Map<String, Value>,
    ) -> bool {
        match self {
            Atomic::None => false,
            Atomic::Contract => match relative {
                ["input_schema"] | ["output_schema"] => true,
                ["handler"] | ["modes", _, "handler"] => old.get("kind") != new.get("kind"),
                _ => false,
            },
            Atomic::Item => matches!(relative, ["match"] | ["examples"]),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn merge_value(
    target: &mut Map<String, Value>,
    key: String,
    value: Value,
    eff: &str,
    src: &str,
    atomic: &Atomic,
    file: FileId,
    provenance: &mut Provenance,
) {
    let relative = relative_parts(eff, atomic);
    if let (Atomic::Contract, ["locked"], Some(Value::Array(old)), Value::Array(new)) =
        (atomic, relative.as_slice(), target.get_mut(&key), &value)
    {
        for (index, item) in new.iter().enumerate() {
            if !old.contains(item) {
                provenance.set(
                    format!("{eff}/{}", old.len()),
                    Origin {
                        file,
                        pointer: Arc::from(format!("{src}/{index}").as_str()),
                    },
                );
                old.push(item.clone());
            }
        }
        return;
    }
    match (target.get_mut(&key), value) {
        (Some(Value::Object(old)), Value::Object(new))
            if !atomic.is_atomic(&relative, old, &new) =>
        {
            merge_object(old, new, eff, src, atomic, file, provenance);
        }
        (_, value) => {
            target.insert(key, value);
            provenance.clear_below(eff);
            provenance.set(
                eff.to_owned(),
                Origin {
                    file,
                    pointer: Arc::from(src),
                },
            );
        }
    }
}

fn merge_object(
    target: &mut Map<String, Value>,
    source: Map<String, Value>,
    eff: &str,
    src: &str,
    atomic: &Atomic,
    file: FileId,
    provenance: &mut Provenance,
) {
    // An object no recorded value covers yet (a top-level section) takes this file as its
    // origin; otherwise its origin stays with whoever wrote it.
    if provenance.nearest(eff).is_none() {
        provenance.set(
            eff.to_owned(),
            Origin {
                file,
                pointer: Arc::from(src),
            },
        );
    }
    for (key, value) in source {
        let eff_child = child(eff, &key);
        let src_child = child(src, &key);
        merge_value(
            target, key, value, &eff_child, &src_child, atomic, file, provenance,
        );
    }
}

/// The reference tokens of `eff` below the item it belongs to (a contract, rule or hook),
/// for the atomicity test. Tokens are compared unescaped only for fixed field names, which
/// never need escaping.
fn relative_parts<'a>(eff: &'a str, atomic: &Atomic) -> Vec<&'a str> {
    let parts: Vec<&str> = eff.split('/').skip(1).collect();
    match atomic {
        // /tools/<name>/... and /rules/<i>/...
        Atomic::Contract | Atomic::Item => parts.into_iter().skip(2).collect(),
        Atomic::None => parts,
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// The value at an effective pointer.
pub fn lookup<'a>(doc: &'a Map<String, Value>, pointer: &str) -> Option<&'a Value> {
    let mut parts = pointer.split('/').skip(1);
    let first = unescape(parts.next()?);
    let mut current = doc.get(&first)?;
    for part in parts {
        let token = unescape(part);
        current = match current {
            Value::Object(map) => map.get(&token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

fn restore(doc: &mut Map<String, Value>, pointer: &str, value: Option<Value>) {
    let tokens: Vec<String> = pointer.split('/').skip(1).map(unescape).collect();
    let Some((last, parents)) = tokens.split_last() else {
        return;
    };
    let mut current = doc;
    for token in parents {
        let next = current
            .entry(token.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            if value.is_none() {
                return;
            }
            *next = Value::Object(Map::new());
        }
        current = match next {
            Value::Object(map) => map,
            _ => return,
        };
    }
    match value {
        Some(value) => {
            current.insert(last.clone(), value);
        }
        None => {
            current.remove(last);
        }
    }
}

/// The decision of the deny or ask rule `target` whose `match` the same-named rule `source`
/// of a later layer replaces with another (see [`MergeIssue::ReplacedMatch`]).
fn replaced_protection(
    section: &str,
    target: &Map<String, Value>,
    source: &Map<String, Value>,
) -> Option<String> {
    let decision = target.get("decision")?.as_str()?;
    let protects = matches!(decision, "deny" | "ask")
        && target.get("disabled").and_then(Value::as_bool) != Some(true);
    let replaced = match (target.get("match"), source.get("match")) {
        (Some(before), Some(after)) => before != after,
        _ => false,
    };
    (section == "rules" && protects && replaced).then(|| decision.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn merge(files: &[(u32, usize, bool, Value)]) -> (Value, Provenance, Vec<MergeIssue>) {
        let mut merger = Merger::new();
        let mut issues = Vec::new();
        for (file, layer, enforced, document) in files {
            issues.extend(merger.add_file(FileInput {
                file: FileId(*file),
                layer: *layer,
                enforced: *enforced,
                document: document.clone(),
            }));
        }
        let (value, provenance) = merger.finish();
        (value, provenance, issues)
    }

    /// Where a value was written: its closest recorded ancestor, with the rest of the path.
    fn origin(provenance: &Provenance, pointer: &str) -> (FileId, String) {
        let (at, origin) = provenance.nearest(pointer).expect("recorded");
        (
            origin.file,
            format!("{}{}", origin.pointer, &pointer[at.len()..]),
        )
    }

    #[test]
    fn later_layers_override_field_by_field() {
        let base = json!({"tools": {"Bash": {"timeout": {"default": "2m", "max": "10m"}, "aliases": ["shell"]}}});
        let project = json!({"tools": {"Bash": {"timeout": {"max": "5m"}}}});
        let (value, provenance, issues) = merge(&[(0, 0, false, base), (1, 1, false, project)]);
        assert!(issues.is_empty());
        assert_eq!(
            value["tools"]["Bash"]["timeout"],
            json!({"default": "2m", "max": "5m"})
        );
        assert_eq!(origin(&provenance, "/tools/Bash/timeout/max").0, FileId(1));
        assert_eq!(
            origin(&provenance, "/tools/Bash/timeout/default").0,
            FileId(0)
        );
        assert_eq!(origin(&provenance, "/tools/Bash/aliases/0").0, FileId(0));
    }

    #[test]
    fn input_schemas_and_handlers_of_another_kind_are_replaced_whole() {
        let base = json!({"tools": {"T": {
            "input_schema": {"type": "object", "required": ["a"]},
            "handler": {"kind": "command", "argv": ["x"]}}}});
        let project = json!({"tools": {"T": {
            "input_schema": {"type": "object"},
            "handler": {"kind": "native"}}}});
        let (value, provenance, _) = merge(&[(0, 0, false, base), (1, 1, false, project)]);
        assert_eq!(
            value["tools"]["T"]["input_schema"],
            json!({"type": "object"})
        );
        assert_eq!(value["tools"]["T"]["handler"], json!({"kind": "native"}));
        assert!(provenance.get("/tools/T/handler/argv").is_none());
    }

    #[test]
    fn handlers_of_the_same_kind_merge() {
        let base =
            json!({"tools": {"T": {"handler": {"kind": "command", "argv": ["x"], "cwd": "a"}}}});
        let project = json!({"tools": {"T": {"handler": {"kind": "command", "cwd": "b"}}}});
        let (value, _, _) = merge(&[(0, 0, false, base), (1, 1, false, project)]);
        assert_eq!(
            value["tools"]["T"]["handler"],
            json!({"kind": "command", "argv": ["x"], "cwd": "b"})
        );
    }

    #[test]
    fn rules_merge_by_name_and_keep_their_position() {
        let base = json!({"rules": [
            {"name": "a", "decision": "allow", "match": {"command": {"shell": ["ls *"]}}},
            {"name": "b", "decision": "deny"}]});
        let project = json!({"rules": [
            {"name": "c", "decision": "ask"},
            {"name": "a", "priority": 5, "match": {"path": {"glob": "x"}}}]});
        let (value, provenance, _) = merge(&[(0, 0, false, base), (1, 1, false, project)]);
        let rules = value["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 3);
        assert_eq!(
            rules[0],
            json!({"name": "a", "decision": "allow", "priority": 5, "match": {"path": {"glob": "x"}}})
        );
        assert_eq!(rules[2]["name"], "c");
        assert_eq!(
            origin(&provenance, "/rules/0/priority").1,
            "/rules/1/priority"
        );
        assert!(provenance.get("/rules/0/match/command").is_none());
    }

    #[test]
    fn locked_fields_cannot_be_changed_by_later_layers() {
        let org =
            json!({"tools": {"Bash": {"timeout": {"max": "10m"}, "locked": ["timeout.max"]}}});
        let project = json!({"tools": {"Bash": {"timeout": {"max": "1h", "default": "1m"}}}});
        let (value, provenance, issues) = merge(&[(0, 0, true, org), (1, 1, false, project)]);
        assert_eq!(
            value["tools"]["Bash"]["timeout"],
            json!({"max": "10m", "default": "1m"})
        );
        assert_eq!(origin(&provenance, "/tools/Bash/timeout/max").0, FileId(0));
        assert_eq!(issues.len(), 1);
        let MergeIssue::LockedField {
            pointer,
            locked_at,
            written_at,
        } = &issues[0]
        else {
            panic!("{issues:?}")
        };
        assert_eq!(pointer, "/tools/Bash/timeout/max");
        assert_eq!(&*locked_at.pointer, "/tools/Bash/locked/0");
        assert_eq!(
            (written_at.file, &*written_at.pointer),
            (FileId(1), "/tools/Bash/timeout/max")
        );
    }

    #[test]
    fn agent_maps_are_fixed_for_layers_after_an_enforced_one() {
        let builtin = json!({"agents": {"claude": {
            "description": "Claude Code", "protocol": "claude", "modes": {"plan": "plan"},
            "tools": {"Bash": {"tool": "Bash"}, "Read": {"tool": "Read"}}}},
            "commands": {"file_tools": {"read": "Read"}, "programs": {"cat": {"operands": "read"}},
                "env": {"CI": "harmless"}}});
        // The organisation may map agents' tools itself.
        let org = json!({"agents": {"claude": {"tools": {"Read": {"tool": "OrgRead"}}}}});
        let project = json!({"agents": {
            "claude": {
                "description": "ours", "protocol": "gemini", "modes": {"plan": "yolo", "auto": "x"},
                "tools": {"Bash": {"tool": "Shell2"}, "Read": {"disabled": true}, "Task": {"tool": "T"}}},
            "acme": {"tools": {"shell": {"tool": "Bash"}}}},
            "commands": {"file_tools": {"read": "Glob"}, "programs": {"cat": {"operands": "text"}, "bat": {}},
                "env": {"CI": "effective", "MY_FLAG": "harmless"}}});
        let (value, _, issues) = merge(&[
            (0, 0, false, builtin.clone()),
            (1, 1, true, org),
            (2, 2, false, project.clone()),
        ]);
        let mut changed: Vec<&str> = issues
            .iter()
            .map(|issue| match issue {
                MergeIssue::LockedField {
                    pointer, locked_at, ..
                } => {
                    assert_eq!(locked_at.file, FileId(1));
                    pointer.as_str()
                }
                other => panic!("{other:?}"),
            })
            .collect();
        changed.sort_unstable();
        assert_eq!(
            changed,
            [
                "/agents/claude/modes/plan",
                "/agents/claude/protocol",
                "/agents/claude/tools/Bash",
                "/agents/claude/tools/Read",
                "/commands/env",
                "/commands/file_tools",
                "/commands/programs/cat",
            ]
        );
        assert_eq!(value["commands"]["programs"]["cat"]["operands"], "read");
        assert_eq!(value["commands"]["programs"]["bat"], json!({}));
        assert_eq!(value["commands"]["env"], json!({"CI": "harmless"}));
        let claude = &value["agents"]["claude"];
        assert_eq!(claude["tools"]["Bash"], json!({"tool": "Bash"}));
        assert_eq!(claude["tools"]["Read"], json!({"tool": "OrgRead"}));
        assert_eq!(claude["protocol"], "claude");
        // What no layer below mapped, and the description, stay open.
        assert_eq!(claude["tools"]["Task"], json!({"tool": "T"}));
        assert_eq!(claude["modes"]["auto"], "x");
        assert_eq!(claude["description"], "ours");
        assert_eq!(value["agents"]["acme"]["tools"]["shell"]["tool"], "Bash");

        // Without an enforced layer the project's maps are its own.
        let (_, _, issues) = merge(&[(0, 0, false, builtin), (1, 1, false, project)]);
        assert!(issues.is_empty(), "{issues:?}");
    }

    #[test]
    fn replacing_a_locked_parent_is_a_change() {
        let org =
            json!({"tools": {"Bash": {"timeout": {"max": "10m"}, "locked": ["timeout.max"]}}});
        let project = json!({"tools": {"Bash": {"timeout": "none"}}});
        let (value, _, issues) = merge(&[(0, 0, true, org), (1, 1, false, project)]);
        assert_eq!(issues.len(), 1);
        assert_eq!(value["tools"]["Bash"]["timeout"]["max"], "10m");
    }

    #[test]
    fn setting_a_locked_field_to_its_value_is_allowed() {
        let org = json!({"tools": {"Bash": {"permission": {"always_ask": true}, "locked": ["permission.always_ask"]}}});
        let project =
            json!({"tools": {"Bash": {"permission": {"always_ask": true, "default": "allow"}}}});
        let (_, _, issues) = merge(&[(0, 0, true, org), (1, 1, false, project)]);
        assert!(issues.is_empty(), "{issues:?}");
    }

    #[test]
    fn locked_lists_accumulate_with_their_origins() {
        let org = json!({"tools": {"Bash": {"locked": ["timeout.max", "permission"]}}});
        let project = json!({"tools": {"Bash": {"locked": ["budget.max_model", "permission"]}}});
        let (value, provenance, issues) = merge(&[(0, 0, true, org), (1, 1, false, project)]);
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(
            value["tools"]["Bash"]["locked"],
            json!(["timeout.max", "permission", "budget.max_model"])
        );
        let appended = provenance.get("/tools/Bash/locked/2").unwrap();
        assert_eq!(
            (appended.file, &*appended.pointer),
            (FileId(1), "/tools/Bash/locked/0")
        );
        assert_eq!(origin(&provenance, "/tools/Bash/locked/1").0, FileId(0));
    }

    #[test]
    fn a_mode_patch_cannot_change_a_locked_field() {
        let org = json!({"tools": {"Bash": {
            "timeout": {"max": "10m"},
            "modes": {"plan": {"timeout": {"max": "5m"}}},
            "locked": ["timeout.max"]}}});
        let project = json!({"tools": {"Bash": {"modes": {
            "plan": {"timeout": {"max": "1h"}},
            "offpeak": {"timeout": {"max": "2h", "default": "1m"}},
            "review": {"timeout": "none"},
            "quick": {"timeout": {"default": "1s"}}}}}});
        let (value, _, issues) = merge(&[(0, 0, true, org), (1, 1, false, project)]);
        let pointers: Vec<&str> = issues
            .iter()
            .map(|issue| match issue {
                MergeIssue::LockedField { pointer, .. } => pointer.as_str(),
                MergeIssue::EnforcedItem { .. } | MergeIssue::ReplacedMatch { .. } => "item",
            })
            .collect();
        assert_eq!(
            pointers,
            [
                "/tools/Bash/modes/plan/timeout/max",
                "/tools/Bash/modes/offpeak/timeout/max",
                "/tools/Bash/modes/review/timeout/max",
            ]
        );
        let modes = &value["tools"]["Bash"]["modes"];
        assert_eq!(modes["plan"]["timeout"]["max"], "5m");
        assert_eq!(modes["offpeak"]["timeout"], json!({"default": "1m"}));
        assert_eq!(modes["quick"]["timeout"], json!({"default": "1s"}));
    }

    #[test]
    fn a_lock_on_an_unset_field_guards_against_replacing_its_parent() {
        let org = json!({"tools": {"Bash": {"locked": ["timeout.max"]}}});
        let project = json!({"tools": {"Bash": {"timeout": "none"}}});
        let (_, _, issues) = merge(&[(0, 0, true, org), (1, 1, false, project)]);
        assert_eq!(issues.len(), 1, "{issues:?}");
    }

    #[test]
    fn enforced_rules_cannot_be_redefined() {
        let org = json!({"rules": [{"name": "no-secrets", "decision": "deny"}]});
        let project = json!({"rules": [{"name": "no-secrets", "disabled": true}]});
        let (value, _, issues) = merge(&[(0, 0, true, org), (1, 1, false, project)]);
        assert_eq!(
            value["rules"][0],
            json!({"name": "no-secrets", "decision": "deny"})
        );
        assert!(
            matches!(&issues[0], MergeIssue::EnforcedItem { name, .. } if name == "no-secrets")
        );
    }
}
