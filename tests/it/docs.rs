//! Every example in `README.md` and `docs/*.md` is checked, so the documentation cannot drift
//! from the code: each fenced code block declares its kind in its info string, and a block
//! of an unknown kind fails, so a new example cannot dodge the check. Relative links must
//! point at files that exist.
//!
//! Kinds (the first word is the language, the second the kind):
//! - `yaml policy`, `toml policy`: a complete policy file. It is loaded with the built-in
//!   policies (`toolgate -p FILE check --deny-warnings`) and must check clean. A policy
//!   block that names a built-in rule overrides it; that is only allowed when the block
//!   says so (`yaml policy overrides`), so an example cannot redefine `no-secrets` by accident.
//!   `yaml policy enforced` is loaded as an enforced root (`--enforced FILE`).
//! - `yaml batch`, `json batch`: a batch file; `toolgate plan` must accept it, with the
//!   built-ins and every policy block of the same page as project roots.
//! - `yaml test`: a policy-test file; `toolgate test` must pass it, with the built-ins and
//!   every policy block of the same page as project roots (in page order).
//! - `json`: one JSON document. `json rpc`: a JSON-RPC session, one message per line,
//!   optionally prefixed with `→ ` (client to server) or `← ` (server to client); each line
//!   must be a JSON-RPC 2.0 object.
//! - `json hooks`: an agent's hook configuration (Claude Code or Gemini CLI `settings.json`,
//!   Codex `hooks.json`); every `command` in it is checked as a shell command, and one of
//!   them must run `toolgate hook`.
//! - `json decision-log`: decision log records, one per line; each must fit
//!   `toolgate schema decision-log`.
//! - `toml config`: a TOML file for another tool (an editor); it must parse as TOML.
//! - `yaml workflow`: a CI workflow; every `run:` line is checked as a shell command.
//! - `sh`: shell commands; `console`: a transcript whose commands start with `$ `. Every
//!   `toolgate` (or `cargo run … --`) command must name a real subcommand, and every long
//!   option it uses must appear in that subcommand's `--help`.
//! - `text synopsis`: a usage line; its long options must appear in `toolgate --help`.
//! - `<lang> excerpt=PATH`: lines taken from a file of the repository; every non-blank line
//!   must appear (trimmed) in that file, which is itself built or tested elsewhere (the Rust
//!   example `examples/embedding.rs` is compiled as a cargo example).
//!
//! There is no "fragment" kind: every example in the docs is a complete, loadable file.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One fenced code block of a page.
#[derive(Debug, Clone)]
struct Block {
    /// The page, relative to the repository root.
    page: String,
    /// 1-based line of the opening fence.
    line: usize,
    /// The info string after the fence, split on whitespace.
    info: Vec<String>,
    /// The block's text (without the fences).
    text: String,
}

impl Block {
    fn place(&self) -> String {
        format!("{}:{}", self.page, self.line)
    }

    fn attribute(&self, name: &str) -> Option<&str> {
        let prefix = format!("{name}=");
        self.info.iter().find_map(|word| word.strip_prefix(&prefix))
    }

    fn has_word(&self, word: &str) -> bool {
        self.info.iter().skip(1).any(|w| w == word)
    }
}

/// The pages checked: the README and every `docs/*.md`.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.expect("docs/ is readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| {
            path.strip_prefix(ROOT)
                .expect("docs/ is in the repository")
                .to_path_buf()
        })
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn read_page(page: &Path) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(page))
        .unwrap_or_else(|err| panic!("{}: {err}", page.display()))
}

/// Every fenced block of `text` (backtick fences of three or more, closed by a fence at
/// least as long).
fn blocks(page: &Path, text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<(usize, usize, Vec<String>, String)> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let ticks = trimmed.chars().take_while(|c| *c == '`').count();
        match &mut open {
            None if ticks >= 3 => {
                let info = trimmed[ticks..]
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                open = Some((index + 1, ticks, info, String::new()));
            }
            None => {}
            Some((start, fence, info, body)) => {
                if ticks >= *fence && trimmed[ticks..].trim().is_empty() {
                    found.push(Block {
                        page: page.display().to_string(),
                        line: *start,
                        info: std::mem::take(info),
                        text: std::mem::take(body),
                    });
                    open = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    assert!(
        open.is_none(),
        "{}: a code block is never closed",
        page.display()
    );
    found
}

fn all_blocks() -> Vec<Block> {
    pages()
        .iter()
        .flat_map(|page| blocks(page, &read_page(page)))
        .collect()
}

/// One run of the binary.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn transcript(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

fn toolgate(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(ROOT)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env_remove("RUST_LOG")
        .output()
        .expect("the toolgate binary runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Writes a block to `dir` under a name derived from its place, with `extension`.
fn write_block(dir: &Path, block: &Block, extension: &str) -> PathBuf {
    let stem = block.page.replace(['/', '.'], "_");
    let path = dir.join(format!("{stem}_{}.{extension}", block.line));
    std::fs::write(&path, &block.text).expect("the temporary folder is writable");
    path
}

/// The syntax of a policy block.
#[derive(Clone, Copy)]
enum Format {
    Yaml,
    Toml,
}

/// The `name`s of the rules a policy file defines.
fn rule_names(path: &str, text: &str, format: Format) -> Vec<String> {
    let document: Value = match format {
        Format::Yaml => crate::support::yaml::parse(path, text),
        Format::Toml => {
            toml::from_str(text).unwrap_or_else(|e| panic!("{path} does not parse: {e}"))
        }
    };
    document["rules"]
        .as_array()
        .map(|rules| {
            rules
                .iter()
                .filter_map(|rule| rule["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The names of the built-in rules, read from `policies/`.
fn builtin_rule_names() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut stack = vec![Path::new(ROOT).join("policies")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("policies/ is readable") {
            let path = entry.expect("policies/ is readable").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "yaml") {
                let text = std::fs::read_to_string(&path).expect("a built-in policy reads");
                names.extend(rule_names(&path.display().to_string(), &text, Format::Yaml));
            }
        }
    }
    assert!(names.contains("no-secrets"), "built-in rules: {names:?}");
    names
}

fn policy_format(block: &Block) -> Format {
    match block.info[0].as_str() {
        "yaml" => Format::Yaml,
        "toml" => Format::Toml,
        other => panic!(
            "{}: a policy block is yaml or toml, not `{other}`",
            block.place()
        ),
    }
}

/// Checks one policy block; returns the file it was written to.
fn check_policy(dir: &Path, block: &Block, builtin_rules: &BTreeSet<String>) -> PathBuf {
    let format = policy_format(block);
    let path = write_block(dir, block, &block.info[0]);
    let path_text = path.display().to_string();
    let redefined: Vec<String> = rule_names(&block.place(), &block.text, format)
        .into_iter()
        .filter(|name| builtin_rules.contains(name))
        .collect();
    if !redefined.is_empty() && !block.has_word("overrides") {
        panic!(
            "{}: the example redefines the built-in rule(s) {redefined:?}; pick a new name, or \
             mark the block `{} policy overrides` if changing the built-in is the point",
            block.place(),
            block.info[0]
        );
    }
    // An enforced layer's `locked` fields only mean something in an enforced root.
    let root = if block.has_word("enforced") {
        "--enforced"
    } else {
        "-p"
    };
    let mut run = toolgate(&[root, &path_text, "check", "--deny-warnings"]);
    if run.code != 0 && only_missing_programs(&[root, &path_text, "check", "--format", "json"]) {
        // An example names the reader's programs (`./hooks/audit.sh`), which this checkout
        // does not have: that warning is expected here.
        run.code = 0;
    }
    assert_eq!(
        run.code,
        0,
        "{}: the policy example does not check clean:\n{}",
        block.place(),
        run.transcript()
    );
    path
}

/// Whether `check` (JSON) reports nothing but `missing_executable` warnings.
fn only_missing_programs(args: &[&str]) -> bool {
    let run = toolgate(args);
    let Ok(report) = serde_json::from_str::<serde_json::Value>(&run.stdout) else {
        return false;
    };
    report["diagnostics"].as_array().is_some_and(|all| {
        all.iter().all(|d| {
            d["code"] == "toolgate::semantic::missing_executable" && d["severity"] == "warning"
        })
    })
}

/// `toolgate SUB --help` for every subcommand asked, cached.
struct Helps {
    cache: Mutex<HashMap<String, Option<String>>>,
}

impl Helps {
    fn new() -> Self {
        Helps {
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The help text of `sub` (`""` for the top level), or `None` if it is no subcommand.
    fn help(&self, sub: &str) -> Option<String> {
        let mut cache = self.cache.lock().expect("the cache is not poisoned");
        cache
            .entry(sub.to_owned())
            .or_insert_with(|| {
                // `sub` may be a nested subcommand (`mcp serve`).
                let mut args: Vec<&str> = sub.split_whitespace().collect();
                args.push("--help");
                let run = toolgate(&args);
                (run.code == 0).then_some(run.stdout)
            })
            .clone()
    }
}

/// Global options that take a value.
const GLOBAL_WITH_VALUE: &[&str] = &["-p", "--policies", "--enforced", "--workspace"];

/// Checks one shell command line: every `toolgate …` (or `cargo run … -- …`) in it.
fn check_command(place: &str, line: &str, helps: &Helps) {
    let line = line.split(" # ").next().unwrap_or(line);
    // Quotes only group words here (`hyperfine 'toolgate check'`): drop them.
    let words: Vec<&str> = line
        .split_whitespace()
        .map(|word| word.trim_matches(|c| c == '\'' || c == '"'))
        .collect();
    let mut index = 0;
    while index < words.len() {
        let word = words[index];
        let start = if word == "toolgate" || word.ends_with("/toolgate") {
            Some(index + 1)
        } else if word == "cargo" && words.get(index + 1) == Some(&"run") {
            // Only `cargo run` of the binary passes arguments after `--`.
            let rest = &words[index + 2..];
            let is_example = rest.contains(&"--example");
            rest.iter()
                .position(|w| *w == "--")
                .filter(|_| !is_example)
                .map(|dash| index + 2 + dash + 1)
        } else {
            None
        };
        let Some(mut at) = start else {
            index += 1;
            continue;
        };
        // Skip the global options.
        let mut globals = Vec::new();
        while let Some(word) = words.get(at) {
            if GLOBAL_WITH_VALUE.contains(word) {
                globals.push(*word);
                at += 2;
            } else if word.starts_with('-') {
                globals.push(*word);
                at += 1;
            } else {
                break;
            }
        }
        let top = helps.help("").expect("`toolgate --help` works");
        for option in &globals {
            assert!(
                top.contains(option),
                "{place}: `{option}` is not a global option of toolgate:\n{line}"
            );
        }
        let Some(sub) = words.get(at) else {
            panic!("{place}: `toolgate` without a subcommand:\n{line}");
        };
        let mut help = helps
            .help(sub)
            .unwrap_or_else(|| panic!("{place}: `{sub}` is not a toolgate subcommand:\n{line}"));
        let mut sub = (*sub).to_owned();
        let mut end = at + 1;
        // A command with subcommands of its own (`toolgate mcp serve`): check the options
        // against the nested one's help.
        if help.contains("\nCommands:\n")
            && let Some(nested) = words.get(end).filter(|w| !w.starts_with('-'))
        {
            let name = format!("{sub} {nested}");
            help = helps.help(&name).unwrap_or_else(|| {
                panic!("{place}: `{name}` is not a toolgate subcommand:\n{line}")
            });
            sub = name;
            end += 1;
        }
        while let Some(word) = words.get(end) {
            if ["|", "&&", "||", ";"].contains(word) {
                break;
            }
            if let Some(option) = word.strip_prefix("--") {
                let option = option.split('=').next().unwrap_or(option);
                let long = format!("--{option}");
                assert!(
                    help.contains(&long) || top.contains(&long),
                    "{place}: `toolgate {sub}` has no option `{long}`:\n{line}"
                );
            }
            end += 1;
        }
        index = end;
    }
}

/// Every string under a `command` key, at any depth.
fn collect_commands(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                match (key.as_str(), item) {
                    ("command", Value::String(command)) => out.push(command.clone()),
                    _ => collect_commands(item, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_commands(item, out)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// The relative link targets of a page: `[text](target)` and `[label]: target`.
fn relative_links(text: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    let mut in_code = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut targets = Vec::new();
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(close) = after.find(')') else { break };
            targets.push(after[..close].to_owned());
            rest = &after[close..];
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with('[')
            && let Some(at) = trimmed.find("]: ")
        {
            targets.push(trimmed[at + 3..].trim().to_owned());
        }
        for target in targets {
            let target = target.split_whitespace().next().unwrap_or("").to_owned();
            if target.is_empty()
                || target.starts_with('#')
                || target.contains("://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            links.push((index + 1, target));
        }
    }
    links
}

#[test]
fn every_relative_link_points_at_a_file() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = read_page(&page);
        let base = Path::new(ROOT)
            .join(&page)
            .parent()
            .expect("a page is in a folder")
            .to_path_buf();
        for (line, target) in relative_links(&text) {
            let file = target.split('#').next().unwrap_or(&target);
            if !base.join(file).exists() {
                broken.push(format!("{}:{line}: {target}", page.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to missing files:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_link_check_sees_links() {
    let links = relative_links(
        "See [a](docs/a.md) and [b](https://x.y/b), [c](#c).\n```sh\n[d](nope.md)\n```\n[e]: e.md\n",
    );
    assert_eq!(
        links,
        vec![(1, "docs/a.md".to_owned()), (5, "e.md".to_owned())]
    );
}

#[test]
fn every_page_has_examples_and_the_readme_starts_with_the_two_commands() {
    let blocks = all_blocks();
    for page in pages() {
        let page = page.display().to_string();
        if page == "docs/README.md" {
            continue;
        }
        assert!(
            blocks.iter().any(|block| block.page == page),
            "{page} has no example"
        );
    }
    let first = blocks
        .iter()
        .find(|block| block.page == "README.md")
        .expect("the README has examples");
    assert!(
        first.text.contains("run examples/batches/demo.yaml") && first.text.contains("cargo test"),
        "the README's first block must run the demo and the tests:\n{}",
        first.text
    );
}

#[test]
fn every_example_checks() {
    let blocks = all_blocks();
    assert!(blocks.len() > 20, "only {} blocks found", blocks.len());
    let builtin_rules = builtin_rule_names();
    let helps = Helps::new();
    let dir = tempfile::tempdir().expect("a temporary folder");

    // Policies first: batches and tests of a page are checked against its policies.
    let mut page_policies: HashMap<String, Vec<PathBuf>> = HashMap::new();
    let mut unknown = Vec::new();
    for block in &blocks {
        let kind = block.info.get(1).map(String::as_str).unwrap_or("");
        let lang = block.info.first().map(String::as_str).unwrap_or("");
        if kind == "policy" {
            let path = check_policy(dir.path(), block, &builtin_rules);
            if block.has_word("enforced") {
                continue;
            }
            page_policies
                .entry(block.page.clone())
                .or_default()
                .push(path);
            continue;
        }
        if let Some(file) = block.attribute("excerpt") {
            let source = std::fs::read_to_string(Path::new(ROOT).join(file))
                .unwrap_or_else(|err| panic!("{}: excerpt of `{file}`: {err}", block.place()));
            let lines: BTreeSet<&str> = source.lines().map(str::trim).collect();
            for line in block.text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                assert!(
                    lines.contains(line),
                    "{}: this line is not in `{file}`:\n{line}",
                    block.place()
                );
            }
            continue;
        }
        match (lang, kind) {
            ("yaml", "batch" | "test") | ("json", "batch") => {} // below, with the policies
            ("json", "") => {
                serde_json::from_str::<Value>(&block.text).unwrap_or_else(|err| {
                    panic!("{}: not JSON ({err}):\n{}", block.place(), block.text)
                });
            }
            ("json", "rpc") => {
                for line in block.text.lines().filter(|l| !l.trim().is_empty()) {
                    let message = line
                        .strip_prefix("→ ")
                        .or_else(|| line.strip_prefix("← "))
                        .unwrap_or(line);
                    let value: Value = serde_json::from_str(message).unwrap_or_else(|err| {
                        panic!("{}: not JSON ({err}):\n{line}", block.place())
                    });
                    assert_eq!(
                        value["jsonrpc"],
                        "2.0",
                        "{}: not a JSON-RPC 2.0 message:\n{line}",
                        block.place()
                    );
                }
            }
            ("json", "hooks") => {
                let value: Value = serde_json::from_str(&block.text).unwrap_or_else(|err| {
                    panic!("{}: not JSON ({err}):\n{}", block.place(), block.text)
                });
                let mut commands = Vec::new();
                collect_commands(&value, &mut commands);
                assert!(
                    commands.iter().any(|c| c.starts_with("toolgate hook ")),
                    "{}: a hook configuration that never runs `toolgate hook`",
                    block.place()
                );
                for command in commands {
                    check_command(&block.place(), &command, &helps);
                }
            }
            ("json", "decision-log") => {
                let validator = jsonschema::validator_for(&toolgate::decision_log::schema())
                    .expect("the decision log schema compiles");
                for line in block.text.lines().filter(|l| !l.trim().is_empty()) {
                    let record: Value = serde_json::from_str(line).unwrap_or_else(|err| {
                        panic!("{}: not JSON ({err}):\n{line}", block.place())
                    });
                    let errors: Vec<String> = validator
                        .iter_errors(&record)
                        .map(|e| e.to_string())
                        .collect();
                    assert!(
                        errors.is_empty(),
                        "{}: not a decision log record: {errors:?}",
                        block.place()
                    );
                }
            }
            ("toml", "config") => {
                toml::from_str::<toml::Table>(&block.text).unwrap_or_else(|err| {
                    panic!("{}: not TOML ({err}):\n{}", block.place(), block.text)
                });
            }
            ("yaml", "workflow") => {
                for (index, line) in block.text.lines().enumerate() {
                    if let Some(command) = line.trim_start().strip_prefix("- run: ") {
                        let place = format!("{}:{}", block.page, block.line + 1 + index);
                        check_command(&place, command, &helps);
                    }
                }
            }
            ("sh", "") => {
                for (index, line) in block.text.lines().enumerate() {
                    let place = format!("{}:{}", block.page, block.line + 1 + index);
                    check_command(&place, line, &helps);
                }
            }
            ("console", "") => {
                let mut commands = 0;
                for (index, line) in block.text.lines().enumerate() {
                    if let Some(command) = line.strip_prefix("$ ") {
                        let place = format!("{}:{}", block.page, block.line + 1 + index);
                        check_command(&place, command, &helps);
                        commands += 1;
                    }
                }
                assert!(
                    commands > 0,
                    "{}: a console block without a `$ ` command",
                    block.place()
                );
            }
            ("text", "synopsis") => {
                let top = helps.help("").expect("`toolgate --help` works");
                for word in block.text.split_whitespace() {
                    let word = word.trim_matches(|c| c == '[' || c == ']' || c == '…');
                    if word.starts_with("--") {
                        assert!(
                            top.contains(word),
                            "{}: `{word}` is not a global option",
                            block.place()
                        );
                    }
                }
            }
            _ => unknown.push(format!("{}: ```{}", block.place(), block.info.join(" "))),
        }
    }
    assert!(
        unknown.is_empty(),
        "code blocks of no known kind (see the top of tests/docs_examples.rs):\n{}",
        unknown.join("\n")
    );

    for block in &blocks {
        let kind = block.info.get(1).map(String::as_str).unwrap_or("");
        if kind != "batch" && kind != "test" {
            continue;
        }
        let mut args: Vec<String> = Vec::new();
        for path in page_policies.get(&block.page).into_iter().flatten() {
            args.push("-p".into());
            args.push(path.display().to_string());
        }
        let extension = if kind == "test" {
            "test.yaml"
        } else {
            block.info[0].as_str()
        };
        let file = write_block(dir.path(), block, extension);
        args.push(if kind == "test" { "test" } else { "plan" }.into());
        args.push(file.display().to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = toolgate(&args);
        assert_eq!(
            run.code,
            0,
            "{}: `toolgate {}` fails:\n{}",
            block.place(),
            args.join(" "),
            run.transcript()
        );
    }
}
