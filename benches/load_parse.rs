//! Headline figure for the loader's syntax and schema stages: 100 files holding 1 000 tool
//! contracts and 10 000 rules (about 2 MB), parsed into JSON values with span tables and
//! checked against the generated policy schema. The target for a whole load is well under
//! 150 ms.

// Test code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::Value;
use toolgate::SourceFile;
use toolgate::diagnostics::Format;
use toolgate::load::{ParsedDocument, SchemaChecker, parse_document};

// The allocator the `toolgate` binary uses (see the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

const FILES: usize = 100;
const TOOLS_PER_FILE: usize = 10;
const RULES_PER_FILE: usize = 100;

fn yaml_file(file: usize) -> String {
    let mut text = String::from("version: 1\ntools:\n");
    for tool in 0..TOOLS_PER_FILE {
        text.push_str(&format!(
            "  Tool{file}_{tool}:\n    aliases: [t{file}x{tool}]\n    concurrency: {{ concurrent_safe: true, side_effect_scope: none }}\n    timeout: {{ default: 2m, max: 10m, override_field: timeout }}\n    budget: {{ max_model: 30000, overflow: artifact, keep: tail }}\n    permission: {{ default: ask }}\n    handler: {{ kind: command, argv: [bash, -c, \"{{{{input.command}}}}\"] }}\n    input_schema:\n      type: object\n      required: [command]\n      properties:\n        command: {{ type: string }}\n"
        ));
    }
    text.push_str("rules:\n");
    for rule in 0..RULES_PER_FILE {
        text.push_str(&format!(
            "  - name: rule-{file}-{rule}\n    tools: [Tool{file}_{}]\n    match:\n      command: {{ shell: [\"git status\", \"git diff *\"] }}\n    decision: allow\n    priority: {rule}\n",
            rule % TOOLS_PER_FILE
        ));
    }
    text
}

fn toml_file(file: usize) -> String {
    let mut text = String::from("version = 1\n");
    for tool in 0..TOOLS_PER_FILE {
        text.push_str(&format!(
            "[tools.Tool{file}_{tool}]\naliases = [\"t{file}x{tool}\"]\nconcurrency = {{ concurrent_safe = true, side_effect_scope = \"none\" }}\ntimeout = {{ default = \"2m\", max = \"10m\", override_field = \"timeout\" }}\nbudget = {{ max_model = 30000, overflow = \"artifact\", keep = \"tail\" }}\npermission = {{ default = \"ask\" }}\nhandler = {{ kind = \"command\", argv = [\"bash\", \"-c\", \"{{{{input.command}}}}\"] }}\ninput_schema = {{ type = \"object\", required = [\"command\"], properties = {{ command = {{ type = \"string\" }} }} }}\n"
        ));
    }
    for rule in 0..RULES_PER_FILE {
        text.push_str(&format!(
            "[[rules]]\nname = \"rule-{file}-{rule}\"\ntools = [\"Tool{file}_{}\"]\nmatch = {{ command = {{ shell = [\"git status\", \"git diff *\"] }} }}\ndecision = \"allow\"\npriority = {rule}\n",
            rule % TOOLS_PER_FILE
        ));
    }
    text
}

fn sources(format: Format) -> Vec<Arc<SourceFile>> {
    (0..FILES)
        .map(|file| match format {
            Format::Yaml => SourceFile::in_memory(format!("f{file}.yaml"), yaml_file(file), format),
            Format::Toml => SourceFile::in_memory(format!("f{file}.toml"), toml_file(file), format),
        })
        .collect()
}

fn parse_all(sources: &[Arc<SourceFile>]) -> Vec<ParsedDocument> {
    sources
        .iter()
        .map(|source| parse_document(Arc::clone(source)).expect("generated files parse"))
        .collect()
}

fn checker() -> SchemaChecker {
    let text = std::fs::read_to_string("schemas/policy.schema.json").unwrap_or_else(|_| {
        include_str!("../tests/fixtures/load/schema/test.schema.json").to_owned()
    });
    let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    SchemaChecker::new(&schema).expect("schema compiles")
}

#[divan::bench(args = [Format::Yaml, Format::Toml])]
fn parse_100_files(bencher: divan::Bencher, format: Format) {
    let sources = sources(format);
    bencher.bench(|| parse_all(&sources));
}

#[divan::bench(args = [Format::Yaml, Format::Toml])]
fn parse_and_check_100_files(bencher: divan::Bencher, format: Format) {
    let sources = sources(format);
    let checker = checker();
    bencher.bench(|| {
        let documents = parse_all(&sources);
        documents
            .iter()
            .map(|document| checker.check_document(document).len())
            .sum::<usize>()
    });
}

#[divan::bench]
fn check_100_valid_documents(bencher: divan::Bencher) {
    let documents = parse_all(&sources(Format::Yaml));
    let checker = checker();
    bencher.bench(|| {
        documents
            .iter()
            .map(|document| checker.check_document(document).len())
            .sum::<usize>()
    });
}

/// The YAML parser's own cost (events only, no values, no spans): the floor for
/// `parse_100_files(yaml)`.
#[divan::bench]
fn yaml_events_only(bencher: divan::Bencher) {
    let sources = sources(Format::Yaml);
    bencher.bench(|| {
        let mut events = 0usize;
        for source in &sources {
            events += rlsp_yaml_parser::parse_events(source.text())
                .take_while(Result::is_ok)
                .count();
        }
        events
    });
}
