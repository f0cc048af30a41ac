//! The loader on the same content in YAML and in TOML: 100 files holding 1 000 tool
//! contracts and 10 000 rules (about 2 MB), loaded with [`toolgate::load`] as one policy
//! root (no built-in layer): read, parsed into JSON values with span tables, checked against
//! the policy schema, merged, checked for meaning and compiled. The two figures differ by the
//! parser's cost (the later stages see the same values); `yaml_events_only` is the YAML
//! parser's own floor (events only, no values, no spans). The target for a whole load is well
//! under 150 ms.
//!
//! Run with `cargo bench --bench load_parse`; divan prints `load_100_files` for `yaml` and
//! `toml`, and `yaml_events_only`.

// Test code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use toolgate::{LayerOptions, LoadOptions, load};

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

/// The syntax of the generated files.
#[derive(Clone, Copy, Debug)]
enum Format {
    Yaml,
    Toml,
}

/// The 100 files in `format`, written into a fresh folder.
fn write_set(format: Format) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in 0..FILES {
        let (name, text) = match format {
            Format::Yaml => (format!("f{file:03}.yaml"), yaml_file(file)),
            Format::Toml => (format!("f{file:03}.toml"), toml_file(file)),
        };
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn load_dir(dir: &Path) -> usize {
    let mut options = LoadOptions::new(LayerOptions {
        no_builtin: true,
        policies: vec![dir.to_path_buf()],
        ..LayerOptions::default()
    });
    options.workspace_root = dir.to_path_buf();
    let outcome = load(&options, 1);
    assert!(
        outcome.snapshot.is_some(),
        "the generated set loads: {:?}",
        outcome.diagnostics.first()
    );
    outcome.diagnostics.len()
}

#[divan::bench(args = [Format::Yaml, Format::Toml], sample_count = 20, sample_size = 1)]
fn load_100_files(bencher: divan::Bencher, format: Format) {
    let dir = write_set(format);
    bencher.bench(|| load_dir(dir.path()));
}

/// The YAML parser's own cost (events only, no values, no spans): the floor for
/// `parse_100_files(yaml)`.
#[divan::bench]
fn yaml_events_only(bencher: divan::Bencher) {
    let texts: Vec<String> = (0..FILES).map(yaml_file).collect();
    bencher.bench(|| {
        let mut events = 0usize;
        for text in &texts {
            events += rlsp_yaml_parser::parse_events(text)
                .take_while(Result::is_ok)
                .count();
        }
        events
    });
}
