//! Entry points for the `cargo fuzz` targets in `fuzz/` (feature `fuzzing`): each takes the
//! raw fuzz input, drives one part of the engine with it, and panics only on a bug (a
//! violated invariant). Not a stable API.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::budget::finalizer::{
    BatchBudget, Budgeting, FinalizeConfig, FinalizeItem, ItemStatus, Slot, SlotKind, hard_cap,
};
use crate::budget::measure::measure;
use crate::budget::templates::Templates;
use crate::cli::GlobalOptions;
use crate::diagnostics::render::OutputFormat;
use crate::diagnostics::{Format, SourceFile};
use crate::load::ParseLimits;
use crate::model::BudgetUnit;
use crate::model::contract::Retention;
use crate::policy::MatchContext;
use crate::policy::mode::MatchMode;
use crate::policy::path::PathCase;
use crate::policy::path::PathMatcher;
use crate::policy::pattern::{RedirectionPolicy, ShellMatcher};
use crate::snapshot::{LayerOptions, LoadOptions, Snapshot, load};

/// Puts the standard panic hook back in place of libfuzzer's, which aborts on every panic,
/// also one the engine contains: the YAML parser's own panics are caught and become a
/// syntax error of the file (see `load::yaml`), which is the behaviour under test, not a
/// bug. A panic that escapes the engine still ends the run: libfuzzer-sys aborts when the
/// target unwinds.
fn contained_panics_are_not_bugs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| drop(std::panic::take_hook()));
}

/// Splits fuzz input into at most `n` parts at NUL bytes, each lossily decoded as UTF-8.
fn parts(data: &[u8], n: usize) -> Vec<String> {
    data.splitn(n, |&b| b == 0)
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect()
}

/// A YAML policy file: parsing never panics, and a parse that succeeds spans its nodes.
pub fn yaml(data: &[u8]) {
    contained_panics_are_not_bugs();
    let text = String::from_utf8_lossy(data);
    let source = SourceFile::in_memory("fuzz.yaml", text.as_ref(), Format::Yaml);
    let _ = crate::load::yaml::parse_yaml(&source, &ParseLimits::default());
}

/// A TOML policy file.
pub fn toml(data: &[u8]) {
    contained_panics_are_not_bugs();
    let text = String::from_utf8_lossy(data);
    let source = SourceFile::in_memory("fuzz.toml", text.as_ref(), Format::Toml);
    let _ = crate::load::toml::parse_toml(&source, &ParseLimits::default());
}

/// The whole `check` pipeline on a folder: the input is up to eight files separated by NUL
/// bytes, each `NAME\nCONTENT` (a name ending in `.toml` is TOML, anything else YAML),
/// written into a temporary folder loaded on top of the built-in layer; every output format
/// is rendered.
pub fn check_folder(data: &[u8]) {
    contained_panics_are_not_bugs();
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    for (index, file) in parts(data, 8).iter().enumerate() {
        let (name, content) = file.split_once('\n').unwrap_or(("", file));
        let extension = if name.ends_with(".toml") {
            "toml"
        } else {
            "yaml"
        };
        // The name only picks the format: the folder layout is the engine's concern, not
        // the fuzzer's (and must stay inside the temporary folder).
        let path = dir.path().join(format!("f{index}.{extension}"));
        if std::fs::write(&path, content).is_err() {
            return;
        }
    }
    let global = GlobalOptions {
        policies: vec![dir.path().to_owned()],
        workspace: Some(PathBuf::from("/ws")),
        ..GlobalOptions::default()
    };
    let report = crate::cli::check::check(&global, false);
    for format in [
        OutputFormat::Human,
        OutputFormat::Json,
        OutputFormat::Github,
        OutputFormat::Sarif,
    ] {
        let _ = report.render(format, false);
    }
}

/// The built-in policy set, loaded once.
fn builtin() -> Option<&'static Arc<Snapshot>> {
    static SNAPSHOT: OnceLock<Option<Arc<Snapshot>>> = OnceLock::new();
    SNAPSHOT
        .get_or_init(|| {
            let mut options = LoadOptions::new(LayerOptions::default());
            options.workspace_root = PathBuf::from("/ws");
            load(&options, 1).snapshot
        })
        .as_ref()
}

/// A batch file (YAML, or JSON in YAML's flow syntax) checked against the built-in set.
pub fn batch(data: &[u8]) {
    contained_panics_are_not_bugs();
    let Some(snapshot) = builtin() else {
        return;
    };
    let text = String::from_utf8_lossy(data);
    let source = SourceFile::in_memory("fuzz-batch.yaml", text.as_ref(), Format::Yaml);
    let _ = crate::cli::batch_file::parse(source, snapshot);
}

/// The shell matcher: the input is patterns (one a line), a NUL byte, then a command line.
pub fn shell(data: &[u8]) {
    contained_panics_are_not_bugs();
    let parts = parts(data, 2);
    let patterns: Vec<String> = parts[0].lines().take(32).map(str::to_owned).collect();
    let line = parts.get(1).map_or("", String::as_str);
    if let Ok(matcher) = ShellMatcher::compile(&patterns, RedirectionPolicy::Forbidden) {
        for mode in [MatchMode::All, MatchMode::Any] {
            let _ = matcher.evaluate(line, mode).to_string();
        }
    }
    // A command line alone goes through the parser the matchers use.
    let _ = crate::policy::shell::parse_script(line);
}

/// The path matcher: glob patterns (one a line), a NUL byte, then a path as a call gives it.
pub fn path(data: &[u8]) {
    contained_panics_are_not_bugs();
    let parts = parts(data, 2);
    let patterns: Vec<String> = parts[0].lines().take(32).map(str::to_owned).collect();
    let raw = parts.get(1).map_or("", String::as_str);
    let ctx = MatchContext::new("/ws");
    if let Ok(matcher) = PathMatcher::compile(&patterns) {
        for case in [PathCase::Sensitive, PathCase::Insensitive] {
            if matcher.build(case).is_ok() {
                let _ = matcher.matches(raw, &ctx);
            }
        }
    }
    let _ = crate::policy::path::locate(raw, &ctx);
}

/// The finalizer (SPEC §8.3) on random results and budgets: the first 8 bytes are the
/// budget, the next the unit; the rest is results separated by NUL bytes, each its first
/// byte (weight, exemption, slot kinds) and its text split into slots at `\x01`. Asserts
/// the budget invariants: the counted total after is ≤ the budget and is what the items
/// measure, the order and ids of the results are kept, exempt results are untouched, a
/// result is only shortened, and every text is whole UTF-8 (cuts fall on character
/// boundaries; a cut inside a character would panic when slicing).
pub fn finalizer(data: &[u8]) {
    contained_panics_are_not_bugs();
    if data.len() < 9 {
        return;
    }
    let budget = u64::from_le_bytes(data[..8].try_into().unwrap_or([0; 8])) % 4096;
    let unit = if data[8] & 1 == 0 {
        BudgetUnit::Chars
    } else {
        BudgetUnit::Bytes
    };
    let templates = Templates::spec_defaults();
    let mut items = Vec::new();
    for (index, part) in data[9..].split(|&b| b == 0).take(64).enumerate() {
        let (flags, text) = part.split_first().unwrap_or((&0, &[]));
        let text = String::from_utf8_lossy(text);
        let kinds = [SlotKind::Text, SlotKind::Output, SlotKind::Error];
        let slots = text
            .split('\u{1}')
            .take(4)
            .enumerate()
            .map(|(n, t)| Slot::new(kinds[(usize::from(*flags) + n) % 3], t))
            .collect();
        let mut item = FinalizeItem::new(format!("c{index}"), slots);
        item.weight = u32::from(flags % 4);
        item.min_share = u64::from(flags >> 4) * 8;
        if flags & 0x08 != 0 {
            item.budgeting = Budgeting::Exempt;
        }
        items.push(item);
    }
    let config = FinalizeConfig {
        budget: BatchBudget::Units(budget),
        unit,
        templates: &templates,
        retention: Retention::Session,
        max_files: None,
    };
    let outcome = hard_cap(&items, &config);
    assert_eq!(
        outcome.items.len(),
        items.len(),
        "a result was lost or added"
    );
    let mut counted = 0;
    for ((before, after), report) in items.iter().zip(&outcome.items).zip(&outcome.reports) {
        assert_eq!(
            before.call_id, after.call_id,
            "the order of the results changed"
        );
        assert_eq!(
            report.call_id, before.call_id,
            "the reports are out of order"
        );
        let size = |item: &FinalizeItem| -> u64 {
            item.slots
                .iter()
                .map(|slot| measure(slot.text.as_str(), unit))
                .sum()
        };
        match before.budgeting {
            Budgeting::Exempt => {
                assert_eq!(before, after, "an exempt result was changed");
            }
            Budgeting::Counted => {
                counted += size(after);
                if report.status == ItemStatus::Untouched {
                    assert_eq!(before.slots, after.slots, "an untouched result changed");
                }
            }
        }
    }
    assert_eq!(
        counted, outcome.total_after,
        "total_after is not what the items measure"
    );
    if budget > 0 {
        assert!(
            outcome.total_after <= budget,
            "total {} over the budget {budget}",
            outcome.total_after
        );
    }
}

/// The JSON-RPC server of `serve --stdio`, fed the input as its stdin, with an empty policy
/// set (no built-in layer, so no handler can run whatever a fuzzed batch asks for).
pub fn serve_lines(data: &[u8]) {
    contained_panics_are_not_bugs();
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let options = crate::serve::ServeOptions {
        load: GlobalOptions {
            no_builtin: true,
            workspace: Some(PathBuf::from("/ws")),
            ..GlobalOptions::default()
        }
        .load_options(),
        watch: false,
        debounce: std::time::Duration::from_millis(50),
    };
    let input = data.to_vec();
    let _ = runtime.block_on(crate::serve::serve(
        std::io::Cursor::new(input),
        tokio::io::sink(),
        options,
    ));
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
}
