//! Batch files for `plan` and `run`: YAML or JSON `{modes: [...], calls: [{id, tool, input}]}`,
//! checked against the batch schema, with duplicate call ids, an empty call list and
//! undeclared modes reported at their place in the file.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use crate::diagnostics::{Code, Diagnostic, Format, SourceFile};
use crate::executor::Batch;
use crate::load::read::{Limited, read_limited};
use crate::load::{ParseLimits, ParsedDocument, ReadLimits, SchemaChecker, parse_document};
use crate::model::ModeName;
use crate::model::batch::BatchFile;
use crate::snapshot::Snapshot;

fn checker() -> Result<&'static SchemaChecker, String> {
    static CHECKER: OnceLock<Result<SchemaChecker, String>> = OnceLock::new();
    SchemaChecker::compiled_once(&CHECKER, crate::model::schema::batch_file)
}

/// Reads and checks a batch file against the snapshot's modes. The path `-` reads standard
/// input.
///
/// The file is read through the size limit (a huge file, `/dev/zero` or an endless pipe is
/// refused after 8 MiB, not read whole). A `.json` file, or standard input or a file of
/// another extension that starts with `{` or `[`, is parsed as JSON (in time linear in its
/// size, with JSON's own escapes); anything else as YAML.
pub fn load_batch(
    path: &Path,
    snapshot: &Snapshot,
) -> Result<(Batch, Vec<ModeName>), Vec<Diagnostic>> {
    load_batch_in(Path::new(""), path, snapshot)
}

/// [`load_batch`] for a relative `path` read in the folder `base` (the hook server plans for
/// a client in another folder), shown as given.
pub fn load_batch_in(
    base: &Path,
    path: &Path,
    snapshot: &Snapshot,
) -> Result<(Batch, Vec<ModeName>), Vec<Diagnostic>> {
    let stdin = path.as_os_str() == "-";
    let shown = if stdin {
        "<stdin>".to_owned()
    } else {
        path.display().to_string()
    };
    let cannot_read = |error: &dyn std::fmt::Display| {
        vec![
            Diagnostic::new(
                Code::IoRead,
                format!("cannot read batch file `{shown}`: {error}"),
            )
            .with_help("pass the path of a YAML or JSON batch file, or `-` for standard input"),
        ]
    };
    let max_bytes = ReadLimits::DEFAULT.max_bytes;
    let read = if stdin {
        read_limited(std::io::stdin().lock(), max_bytes, 0)
    } else {
        let file = std::fs::File::open(base.join(path)).map_err(|error| cannot_read(&error))?;
        let metadata = file.metadata().map_err(|error| cannot_read(&error))?;
        if metadata.is_dir() {
            return Err(cannot_read(&"it is a directory"));
        }
        // Devices and pipes (`/dev/stdin`) are read too, through the same limit.
        read_limited(file, max_bytes, metadata.len())
    };
    let text = match read {
        Ok(Limited::Read(bytes)) => bytes,
        Ok(Limited::TooLarge) => {
            return Err(vec![Diagnostic::new(
                Code::SyntaxTooLarge,
                format!("batch file `{shown}` is larger than 8 MiB"),
            )]);
        }
        Err(error) => return Err(cannot_read(&error)),
    };
    let json = is_json(path, &text);
    let source = crate::load::read::source_from_bytes(shown.as_str(), text, Format::Yaml)
        .map_err(|d| vec![d])?;
    if json {
        let document = crate::load::json::parse_json(source, &ParseLimits::DEFAULT)?;
        check(document, snapshot)
    } else {
        parse(source, snapshot)
    }
}

/// Whether a batch is JSON: by its extension, or for standard input and other extensions
/// (but `.yaml`/`.yml`) by its first character.
fn is_json(path: &Path, text: &[u8]) -> bool {
    let extension = path
        .extension()
        .and_then(|ext| ext.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("json") => true,
        Some("yaml" | "yml") => false,
        _ => {
            let text = text.strip_prefix("\u{feff}".as_bytes()).unwrap_or(text);
            text.iter()
                .find(|byte| !byte.is_ascii_whitespace())
                .is_some_and(|&first| first == b'{' || first == b'[')
        }
    }
}

/// Parses and checks a batch held in memory.
pub fn parse(
    source: std::sync::Arc<SourceFile>,
    snapshot: &Snapshot,
) -> Result<(Batch, Vec<ModeName>), Vec<Diagnostic>> {
    check(parse_document(source)?, snapshot)
}

/// Checks a parsed batch against the batch schema and the snapshot's modes.
fn check(
    document: ParsedDocument,
    snapshot: &Snapshot,
) -> Result<(Batch, Vec<ModeName>), Vec<Diagnostic>> {
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
