//! Batch files for `plan` and `run`: YAML or JSON `{modes: [...], calls: [{id, tool, input}]}`,
//! checked against the batch schema, with duplicate call ids, an empty call list and
//! undeclared modes reported at their place in the file.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use crate::diagnostics::{Code, Diagnostic, Format, SourceFile};
use crate::executor::Batch;
use crate::load::{ReadLimits, SchemaChecker, parse_document};
use crate::model::ModeName;
use crate::model::batch::BatchFile;
use crate::snapshot::Snapshot;

fn checker() -> Result<&'static SchemaChecker, String> {
    static CHECKER: OnceLock<Result<SchemaChecker, String>> = OnceLock::new();
    SchemaChecker::compiled_once(&CHECKER, crate::model::schema::batch_file)
}

/// Reads and checks a batch file against the snapshot's modes.
pub fn load_batch(
    path: &Path,
    snapshot: &Snapshot,
) -> Result<(Batch, Vec<ModeName>), Vec<Diagnostic>> {
    let shown = path.display().to_string();
    let text = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) => {
            return Err(vec![
                Diagnostic::new(
                    Code::IoRead,
                    format!("cannot read batch file `{shown}`: {error}"),
                )
                .with_help("pass the path of a YAML or JSON batch file"),
            ]);
        }
    };
    if text.len() as u64 > ReadLimits::DEFAULT.max_bytes {
        return Err(vec![Diagnostic::new(
            Code::SyntaxTooLarge,
            format!("batch file `{shown}` is larger than 8 MiB"),
        )]);
    }
    // JSON is YAML, so one parser reads both and reports positions for either.
    let source = crate::load::read::source_from_bytes(shown.as_str(), text, Format::Yaml)
        .map_err(|d| vec![d])?;
    parse(source, snapshot)
}

/// Parses and checks a batch held in memory.
pub fn parse(
    source: std::sync::Arc<SourceFile>,
    snapshot: &Snapshot,
) -> Result<(Batch, Vec<ModeName>), Vec<Diagnostic>> {
    let document = parse_document(source)?;
    let checker =
        checker().map_err(|message| vec![Diagnostic::new(Code::SchemaInvalid, message)])?;
    let problems = checker.check_document(&document);
    if problems.iter().any(Diagnostic::is_error) {
        return Err(problems);
    }
    let file: BatchFile = serde_json::from_value(document.value.clone()).map_err(|error| {
        vec![Diagnostic::new(
            Code::BatchInvalid,
            format!("invalid batch: {error}"),
        )]
    })?;
    let at = |pointer: &str| {
        document
            .spans
            .nearest(pointer)
            .map(|node| document.source.location(node.value))
    };
    let mut diagnostics = Vec::new();
    if file.calls.is_empty() {
        let mut diagnostic = Diagnostic::new(Code::BatchEmpty, "the batch has no calls")
            .with_help("add at least one `{id, tool, input}` under `calls`");
        if let Some(location) = at("/calls") {
            diagnostic = diagnostic.with_location(location);
        }
        diagnostics.push(diagnostic);
    }
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (index, call) in file.calls.iter().enumerate() {
        if let Some(&earlier) = first.get(call.id.as_str()) {
            let mut diagnostic = Diagnostic::new(
                Code::BatchDuplicateCallId,
                format!("call id `{}` is used by more than one call", call.id),
            )
            .with_help("give every call of a batch its own id");
            if let Some(location) = at(&format!("/calls/{index}/id")) {
                diagnostic = diagnostic.with_location(location);
            }
            if let Some(location) = at(&format!("/calls/{earlier}/id")) {
                diagnostic = diagnostic.with_related("first used here", location);
            }
            diagnostics.push(diagnostic);
        } else {
            first.insert(call.id.as_str(), index);
        }
    }
    for (index, mode) in file.modes.iter().enumerate() {
        if !snapshot.modes.contains_key(mode.as_str()) {
            let declared: Vec<String> = snapshot.modes.keys().map(|m| format!("`{m}`")).collect();
            let mut diagnostic = Diagnostic::new(
                Code::BatchUnknownMode,
                format!("mode `{mode}` is not declared"),
            )
            .with_help(format!("declared modes: {}", declared.join(", ")));
            if let Some(location) = at(&format!("/modes/{index}")) {
                diagnostic = diagnostic.with_location(location);
            }
            diagnostics.push(diagnostic);
        }
    }
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    Ok(Batch::from_file(file))
}
