//! What `policy_files` matches besides the policy files and folders themselves: the files
//! they lead to and the files they run (see [`policy_locations`]), found when the set is
//! built.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Sources;
use super::build::LoadOptions;
use super::layer::{LayerSpec, Root};
use crate::model::PolicyFile;

/// What `policy_files` matches, as locations (each, and the policy files below one) and
/// folders (everything below each). Locations: the roots of the layers read from disk
/// (policy files and folders); each policy file below a root that leads out of it (a link
/// to a file kept elsewhere: editing the target edits the policy); the files the policies
/// run — the program and file arguments of hooks and command handlers
/// (`./hooks/audit.sh`, `[sh, .toolgate/hooks/check.sh]`, the scripts of `sh -c '…'`, the
/// module of `python3 -m tools.gate`), taken against the workspace root as they run: a
/// hook's answer is a decision, so rewriting its script rewrites the policy; the scripts
/// the agents' own settings run as hooks (see [`agent_hook_scripts`]); and the decision log
/// the engine settings name (the record of what was decided); the `package.json` files node
/// reads for a script (see [`package_scopes`]) and the build files of a build tool a hook
/// runs (see [`build_files`]). Folders: the folder of each such script (see
/// [`script_folder`]) and of `make -C`, and the configuration folder with the trust store
/// and the user layer, wherever the environment puts it.
pub(super) fn policy_locations(
    options: &LoadOptions,
    layers: &[LayerSpec],
    sources: &Sources,
    typed: &PolicyFile,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let workspace_root = options.workspace_root.as_path();
    let absolute = |path: &Path| std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut locations: Vec<PathBuf> = layers
        .iter()
        .filter_map(|layer| match &layer.root {
            Root::Path(path) => Some(absolute(path)),
            Root::Embedded(_) => None,
        })
        .collect();
    let roots: Vec<Option<PathBuf>> = layers
        .iter()
        .map(|layer| match &layer.root {
            Root::Path(path) => std::fs::canonicalize(path).ok(),
            Root::Embedded(_) => None,
        })
        .collect();
    for file in &sources.files {
        let Some(Some(root)) = roots.get(file.layer) else {
            continue;
        };
        let path = Path::new(&**file.source.path());
        if let Ok(real) = std::fs::canonicalize(path)
            && !real.starts_with(root)
        {
            locations.push(real);
        }
    }
    let hooks = typed
        .hooks
        .iter()
        .filter_map(|hook| Some((hook.command.as_deref()?, workspace_root.to_owned())));
    let handlers = typed.tools.values().filter_map(|tool| match &tool.handler {
        Some(crate::model::handler::HandlerSpec::Command(handler)) => Some((
            handler.argv.as_slice(),
            workspace_root.join(handler.cwd.as_deref().unwrap_or("")),
        )),
        _ => None,
    });
    let home = options.home.as_deref();
    let mut scripts = Vec::new();
    let mut folders = Vec::new();
    for (argv, folder) in hooks.chain(handlers) {
        let words: Vec<&str> = argv
            .iter()
            .flat_map(|word| {
                word.split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|'))
            })
            .filter(|word| !word.is_empty())
            .collect();
        for run_folder in run_folders(&words, &folder) {
            let (files, build_folders) = build_files(&words, &run_folder);
            scripts.extend(files);
            folders.extend(build_folders);
        }
        let make = argv
            .first()
            .is_some_and(|program| program == "make" || program.ends_with("/make"));
        for (at, arg) in argv.iter().enumerate() {
            let option = at.checked_sub(1).map(|before| argv[before].as_str());
            if make && matches!(option, Some("-C" | "--directory")) {
                folders.push(absolute(&folder.join(arg)));
            }
            if arg.starts_with('-') || arg.contains("{{") || arg.is_empty() {
                continue;
            }
            if option == Some("-m") {
                scripts.extend(python_module(arg, &folder));
            }
            // A script for a shell (`sh -c 'python3 hooks/x.py'`): the files it names.
            if arg.contains(char::is_whitespace) {
                scripts.extend(crate::policy::git_config::command_paths(arg, &folder, home));
                continue;
            }
            // A path not there yet counts too: the agent could write the script it names. A
            // folder given to a hook (`src/`) is what it reads, not what it runs.
            let path = folder.join(arg);
            if (arg.contains('/') && !path.is_dir()) || path.is_file() {
                scripts.push(absolute(&path));
            }
        }
    }
    let (agent_scripts, agent_folders) = agent_hook_scripts(workspace_root, home);
    scripts.extend(agent_scripts);
    folders.extend(agent_folders);
    folders.extend(
        scripts
            .iter()
            .filter_map(|script| script_folder(script, workspace_root, home)),
    );
    folders.extend(scripts.iter().flat_map(|script| node_modules(script, home)));
    let scopes: Vec<PathBuf> = scripts.iter().flat_map(|s| package_scopes(s)).collect();
    locations.extend(scripts);
    locations.extend(scopes);
    folders.extend(super::trust::config_dir().map(|dir| absolute(&dir)));
    let log = typed
        .engine
        .as_ref()
        .and_then(|engine| engine.decision_log.as_ref())
        .and_then(|log| log.path.as_deref());
    if let Some(log) = log {
        let path = match (log.strip_prefix("~/"), &options.home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => workspace_root.join(log),
        };
        // A full log is renamed to `<path>.1`.
        let mut rotated = path.clone().into_os_string();
        rotated.push(".1");
        locations.push(absolute(&path));
        locations.push(absolute(Path::new(&rotated)));
    }
    (locations, folders)
}

/// The folder of a script a hook runs, whose every file counts as policy: a script loads
/// what lies beside it (Python imports from the script's folder first, so a `json.py`
/// there replaces the standard module; node resolves `./x` and `node_modules`; a shell
/// script sources its neighbours). Not a folder that holds the workspace root or the home
/// folder: a script in the workspace root is protected alone.
fn script_folder(script: &Path, workspace_root: &Path, home: Option<&Path>) -> Option<PathBuf> {
    // As written, with `.` and `..` resolved (`tools/../check.py` lies in the root).
    let mut lexical = PathBuf::new();
    for component in script.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other),
        }
    }
    let folder = lexical.parent()?;
    let holds = |other: &Path| other.starts_with(folder);
    (!holds(workspace_root) && !home.is_some_and(holds)).then(|| folder.to_owned())
}

/// The folders node (and bun, deno) look in for the packages a JavaScript or TypeScript
/// script loads: `node_modules` in the script's folder and in each folder above it, and
/// `~/.node_modules`, `~/.node_libraries` (a package written into the workspace root's
/// `node_modules` replaced one a hook's script in `tools/` required).
fn node_modules(script: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    if !runs_javascript(script) {
        return Vec::new();
    }
    let above = script
        .ancestors()
        .skip(1)
        .map(|folder| folder.join("node_modules"));
    let in_home = home
        .into_iter()
        .flat_map(|home| [home.join(".node_modules"), home.join(".node_libraries")]);
    above.chain(in_home).collect()
}

/// The `package.json` of the script's folder and of each folder above it: node looks there
/// before `node_modules`, and the nearest one whose `name` is what the script requires
/// (`require("chalk")`) with `exports` (or `imports`, for `#x`) decides which file that is —
/// a package file in the workspace root named `chalk` made a hook load the agent's code.
fn package_scopes(script: &Path) -> Vec<PathBuf> {
    if !runs_javascript(script) {
        return Vec::new();
    }
    // A TypeScript runner (`tsx`, `ts-node`) also reads the nearest `tsconfig.json`'s `paths`.
    let typescript = runs(
        script,
        &["ts", "mts", "cts"],
        &["tsx", "ts-node", "deno", "bun"],
    );
    script
        .ancestors()
        .skip(1)
        .flat_map(|folder| {
            std::iter::once(folder.join("package.json"))
                .chain(typescript.then(|| folder.join("tsconfig.json")))
        })
        .collect()
}

/// Whether node (or bun, deno, a TypeScript runner) runs the script: by its extension, or,
/// without one, by its `#!` line (`#!/usr/bin/env node`).
fn runs_javascript(script: &Path) -> bool {
    runs(
        script,
        &["js", "mjs", "cjs", "ts", "mts", "cts"],
        &["node", "bun", "deno", "tsx", "ts-node"],
    )
}

/// Whether the script has one of `extensions`, or none and a `#!` line naming one of
/// `runners`.
fn runs(script: &Path, extensions: &[&str], runners: &[&str]) -> bool {
    match script.extension().and_then(|ext| ext.to_str()) {
        Some(ext) => extensions.contains(&ext),
        None => crate::policy::content::read_regular(script, 256).is_some_and(|head| {
            let first = head.lines().next().unwrap_or_default();
            first.starts_with("#!") && runners.iter().any(|runner| first.contains(runner))
        }),
    }
}

/// The build files of a program a hook runs that takes what it runs from the folder it runs
/// in, and the folders it loads from: `make`'s makefiles and the files they include; the
/// `package.json` whose scripts `npm run` (pnpm, yarn, bun) runs, the package managers' own
/// settings (`.npmrc`'s `script-shell`, `.yarnrc.yml`'s `yarnPath`, `.pnpmfile.cjs`) and
/// the `node_modules` whose programs they and `npx` run; the configuration prettier and
/// eslint load (JavaScript, or naming plugins that are); `pyproject.toml` and `setup.py`,
/// which `uv run` (poetry, pdm, hatch) builds the project from, the interpreter it picks
/// (`.python-version`) and the `.venv` it runs in; `Cargo.toml`, `build.rs`,
/// `.cargo/config.toml` and the toolchain file for `cargo`. Rewriting one rewrites what the
/// hook does (a Makefile written in the workspace root made a `make` hook answer allow).
/// The program's own sources cannot all be protected: keep such a hook's program outside
/// the workspace.
fn build_files(words: &[&str], folder: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    const CONFIG_EXTENSIONS: [&str; 11] = [
        "", ".js", ".cjs", ".mjs", ".ts", ".mts", ".cts", ".json", ".json5", ".yaml", ".yml",
    ];
    let mut files = Vec::new();
    let mut folders = Vec::new();
    for word in words {
        let program = word.rsplit('/').next().unwrap_or(word);
        let names: Vec<String> = match program {
            "make" | "gmake" => {
                let makefiles = ["GNUmakefile", "makefile", "Makefile"];
                let included = makefiles
                    .iter()
                    .flat_map(|name| make_includes(&folder.join(name)));
                files.extend(included.map(|name| folder.join(name)));
                makefiles.map(String::from).to_vec()
            }
            "npm" | "pnpm" | "yarn" | "bun" | "npx" | "pnpx" | "bunx" => {
                folders.push(folder.join("node_modules"));
                let settings = [
                    ".npmrc",
                    ".yarnrc",
                    ".yarnrc.yml",
                    ".pnp.cjs",
                    ".pnp.loader.mjs",
                    ".pnpmfile.cjs",
                    "bunfig.toml",
                ];
                let scripts = (!program.ends_with('x')).then_some("package.json");
                settings
                    .into_iter()
                    .chain(scripts)
                    .map(String::from)
                    .collect()
            }
            "prettier" | "eslint" => CONFIG_EXTENSIONS
                .iter()
                .flat_map(|ext| {
                    [
                        format!("{program}.config{ext}"),
                        format!(".{program}rc{ext}"),
                    ]
                })
                .chain([".prettierrc.toml".to_owned()])
                .collect(),
            "uv" | "poetry" | "pdm" | "hatch" | "pipenv" => {
                folders.push(folder.join(".venv"));
                [
                    "pyproject.toml",
                    "setup.py",
                    "setup.cfg",
                    "uv.toml",
                    "Pipfile",
                    "hatch.toml",
                    ".python-version",
                    ".pdm-python",
                ]
                .map(String::from)
                .to_vec()
            }
            "cargo" => [
                "Cargo.toml",
                "build.rs",
                ".cargo/config.toml",
                ".cargo/config",
                "rust-toolchain",
                "rust-toolchain.toml",
            ]
            .map(String::from)
            .to_vec(),
            _ => continue,
        };
        files.extend(names.iter().map(|name| folder.join(name)));
    }
    (files, folders)
}

/// The files a makefile includes (`include`, `-include`, `sinclude` lines; names with a
/// variable or a wildcard are not followed), as written.
fn make_includes(makefile: &Path) -> Vec<String> {
    let Some(text) = crate::policy::content::read_regular(makefile, MAX_SETTINGS_BYTES) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let (directive, rest) = line.split_once(char::is_whitespace)?;
            matches!(directive, "include" | "-include" | "sinclude").then_some(rest)
        })
        .flat_map(str::split_whitespace)
        .filter(|name| !name.contains(['$', '*', '?', '[']))
        .map(str::to_owned)
        .collect()
}

/// The folders a hook's command may run a build tool in: `root`, and each folder its words
/// name (`cd tools && make`, `make -C tools`, `-Ctools`, `npm --prefix=tools`).
fn run_folders(words: &[&str], root: &Path) -> Vec<PathBuf> {
    let named = words
        .iter()
        .map(|word| {
            let value = word.split_once('=').map_or(*word, |(_, value)| value);
            value
                .strip_prefix("-C")
                .filter(|dir| !dir.is_empty())
                .unwrap_or(value)
        })
        .filter(|word| !word.is_empty())
        .map(|word| root.join(word))
        .filter(|path| path.is_dir());
    let mut folders = vec![root.to_owned()];
    for folder in named {
        if !folders.contains(&folder) {
            folders.push(folder);
        }
    }
    folders
}

/// The files `python -m MODULE` may run, in `folder`: `a/b.py` for `a.b`, or the package's
/// `a/b/__main__.py` (their folders then count, [`script_folder`]).
fn python_module(module: &str, folder: &Path) -> Vec<PathBuf> {
    if module.is_empty() || !module.split('.').all(|part| !part.is_empty()) {
        return Vec::new();
    }
    let path = folder.join(module.replace('.', "/"));
    let mut file = path.clone().into_os_string();
    file.push(".py");
    vec![PathBuf::from(file), path.join("__main__.py")]
}

/// The agents' settings files that run commands (hooks, a status line, helpers printing
/// keys, MCP servers), in the project and in the home folder.
const AGENT_SETTINGS: [&str; 7] = [
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".gemini/settings.json",
    ".qwen/settings.json",
    ".mcp.json",
    ".codex/hooks.json",
    ".codex/config.toml",
];

/// Keys whose string value is a command: hooks' and the status line's `command`, Claude
/// Code's helpers (`apiKeyHelper`, …); and keys whose list holds a command's words (an MCP
/// server's `args`, Codex's `notify`).
const COMMAND_KEYS: [&str; 5] = [
    "command",
    "apiKeyHelper",
    "awsAuthRefresh",
    "awsCredentialExport",
    "otelHeadersHelper",
];
const WORD_LIST_KEYS: [&str; 2] = ["args", "notify"];

/// How much of an agent's settings file is read (they are a few kilobytes).
const MAX_SETTINGS_BYTES: u64 = 8 << 20;

/// The scripts the agents' own settings run (see [`AGENT_SETTINGS`], and the hooks of Gemini
/// CLI's extensions): such a hook gates the agent (it may be the one that runs `toolgate
/// hook`), so rewriting its script rewrites the policy. A command's words that name files —
/// with a `/`, or there in the project or in a folder the command names (`node a.js`, `cd
/// scripts && sh c`) — are the scripts, taken in the project (where the agents run them),
/// with the project-folder variables and `~` expanded and quotes and backslashes removed.
/// Comments are allowed in the JSON files (Gemini CLI strips them); a file that does not
/// parse names none.
fn agent_hook_scripts(workspace_root: &Path, home: Option<&Path>) -> (Vec<PathBuf>, Vec<PathBuf>) {
    fn commands(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match value {
                        Value::String(command) if COMMAND_KEYS.contains(&key.as_str()) => {
                            out.push(command.clone());
                        }
                        Value::Array(words) if WORD_LIST_KEYS.contains(&key.as_str()) => {
                            let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
                            out.push(words.join(" "));
                        }
                        other => commands(other, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| commands(item, out)),
            _ => {}
        }
    }
    let root = workspace_root.to_string_lossy();
    let mut files: Vec<PathBuf> = std::iter::once(workspace_root)
        .chain(home)
        .flat_map(|folder| AGENT_SETTINGS.map(|name| folder.join(name)))
        .collect();
    if let Some(home) = home
        && let Ok(extensions) = std::fs::read_dir(home.join(".gemini/extensions"))
    {
        files.extend(extensions.flatten().take(256).flat_map(|ext| {
            [
                ext.path().join("hooks/hooks.json"),
                ext.path().join("gemini-extension.json"),
            ]
        }));
    }
    let mut scripts = Vec::new();
    let mut folders = Vec::new();
    for settings in files {
        // A settings file that is a FIFO is never waited on (the load would hang).
        let Some(text) = crate::policy::content::read_regular(&settings, MAX_SETTINGS_BYTES) else {
            continue;
        };
        let value = if settings.extension().is_some_and(|ext| ext == "toml") {
            toml::from_str::<Value>(&text).ok()
        } else {
            serde_json::from_str::<Value>(&without_comments(&text)).ok()
        };
        let Some(value) = value else {
            continue;
        };
        let mut found = Vec::new();
        commands(&value, &mut found);
        for command in found {
            let mut expanded = command.clone();
            for variable in [
                "CLAUDE_PROJECT_DIR",
                "GEMINI_PROJECT_DIR",
                "QWEN_PROJECT_DIR",
            ] {
                expanded = expanded
                    .replace(&format!("${{{variable}}}"), &root)
                    .replace(&format!("${variable}"), &root);
            }
            // Quotes and backslashes removed as the shell removes them
            // (`"$CLAUDE_PROJECT_DIR"/x.sh`, `scr\ipts/x`).
            let unquoted: String = expanded
                .chars()
                .filter(|c| !matches!(c, '"' | '\'' | '\\'))
                .collect();
            scripts.extend(crate::policy::git_config::command_paths(
                &unquoted,
                workspace_root,
                home,
            ));
            let words: Vec<&str> = unquoted
                .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')'))
                .filter(|word| !word.is_empty())
                .collect();
            for pair in words.windows(2) {
                if pair[0] == "-m" {
                    scripts.extend(python_module(pair[1], workspace_root));
                }
            }
            let make = words
                .iter()
                .any(|word| matches!(word.rsplit('/').next(), Some("make" | "gmake")));
            for folder in run_folders(&words, workspace_root) {
                let (files, build_folders) = build_files(&words, &folder);
                scripts.extend(files);
                folders.extend(build_folders);
                // Everything a makefile there may include, as for a policy hook's `make -C`.
                if make && script_folder(&folder.join("Makefile"), workspace_root, home).is_some() {
                    folders.push(folder);
                }
            }
        }
    }
    (scripts, folders)
}

/// JSON with comments (`//` to the end of a line, `/* … */`) as JSON: the comments removed,
/// strings left as they are.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for next in chars.by_ref() {
                    if next == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for next in chars.by_ref() {
                    if last == '*' && next == '/' {
                        break;
                    }
                    last = next;
                }
            }
            _ => out.push(c),
        }
    }
    out
}
