//! The files a repository's git config makes git run, read without running git: a config it
//! includes (`include.path`, `includeIf.<condition>.path`), the hooks folder
//! (`core.hooksPath`), a hook in `.git/hooks` that is a link (to where it leads), and the
//! files named in settings whose value is a command (`core.fsmonitor`, `core.pager`,
//! `diff.<driver>.textconv`, `filter.<driver>.clean`, `alias.<name> = !…`, …).
//!
//! Any of them written by an agent runs at a later `git status` or `git diff` that looks
//! read-only: `git_runs: true` matches them (see the `git-run-writes` rule).
//!
//! The config syntax read is git's (`git help config`): `[section]`, `[section "sub"]` and
//! `[section.sub]` headers (a setting may follow on the same line), `key = value` lines,
//! continued after a trailing backslash, `#` and `;` comments, double quotes and backslash
//! escapes in values. A value's words are taken as paths when they hold a `/` or name a file
//! that is there (taken in the work tree, as git runs these commands there).
//!
//! Where a repository is ([`find_repository`]) and a config with the files it includes
//! ([`with_includes`]) are read here for the module that reads the index too.

use std::path::{Path, PathBuf};

use super::disk;

/// Git stops following includes at this depth (its `MAX_INCLUDE_DEPTH`).
const MAX_INCLUDE_DEPTH: usize = 10;

/// The most files a config and its includes are read as (distinct files; real configs
/// include a few).
const MAX_INCLUDED_FILES: usize = 64;

/// How much of a config file is read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Settings whose value is a command git runs (`section.key`, or `section.*.key` for every
/// subsection), lowercased as git compares them.
const COMMAND_SETTINGS: &[&str] = &[
    "core.fsmonitor",
    "core.pager",
    "core.editor",
    "core.sshcommand",
    "core.askpass",
    "sequence.editor",
    "diff.external",
    "diff.*.textconv",
    "diff.*.command",
    "merge.*.driver",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "gpg.program",
    "gpg.*.program",
    "credential.helper",
    "credential.*.helper",
    "pager.*",
    "interactive.difffilter",
    "uploadpack.packobjectshook",
    "alias.*",
    "difftool.*.cmd",
    "mergetool.*.cmd",
    "core.gitproxy",
    "remote.*.uploadpack",
    "remote.*.receivepack",
    "gpg.ssh.defaultkeycommand",
    "browser.*.cmd",
    "browser.*.path",
    "sendemail.smtpserver",
    "sendemail.*.smtpserver",
];

/// The files and folders in or out of the work tree that the config of the repository
/// `folder` lies in makes git run (see the module docs); empty outside a repository.
pub fn run_by_git(folder: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let Some((root, git_dir)) = find_repository(folder) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    // The user's configs apply in every repository: what they name runs here too.
    let user = home
        .into_iter()
        .flat_map(|home| [home.join(".gitconfig"), home.join(".config/git/config")]);
    let repository = ["config", "config.worktree"].map(|name| git_dir.join(name));
    for config in user.chain(repository) {
        read_config(&config, &root, home, &mut found);
    }
    // A hook that is a link runs what it leads to.
    if let Ok(hooks) = std::fs::read_dir(git_dir.join("hooks")) {
        for hook in hooks.flatten() {
            if hook.file_type().is_ok_and(|kind| kind.is_symlink())
                && let Ok(target) = disk::canonicalize(hook.path())
            {
                found.push(target);
            }
        }
    }
    found
}

/// Reads one config file and the files it includes: those files, and the paths its settings
/// name.
fn read_config(config: &Path, root: &Path, home: Option<&Path>, found: &mut Vec<PathBuf>) {
    let files = with_includes(config, home);
    // The included files (not the config itself, which is the repository's or the user's).
    found.extend(files.iter().skip(1).map(|(path, _)| path.clone()));
    for (_, text) in &files {
        for (key, value) in text.as_deref().map(settings).unwrap_or_default() {
            if key == "core.hookspath" {
                found.push(place(&value, root, home));
            } else if COMMAND_SETTINGS
                .iter()
                .any(|setting| matches_setting(setting, &key))
            {
                found.extend(command_paths(&value, root, home));
            }
        }
    }
}

/// The repository `folder` lies in: the nearest folder, from `folder` up, holding a `.git`
/// folder (the work tree and that folder) or a `.git` file (a worktree or submodule: the
/// work tree and the git folder the file names).
pub(super) fn find_repository(folder: &Path) -> Option<(PathBuf, PathBuf)> {
    for root in folder.ancestors() {
        let dot_git = root.join(".git");
        let Ok(meta) = disk::metadata(&dot_git) else {
            continue;
        };
        if meta.is_dir() {
            return Some((root.to_path_buf(), dot_git));
        }
        if let Some(text) = super::content::read_regular(&dot_git, 4096)
            && let Some(git_dir) = text.trim().strip_prefix("gitdir:")
        {
            return Some((root.to_path_buf(), root.join(git_dir.trim())));
        }
    }
    None
}

/// The config file `config` and every file it includes (`include.path`,
/// `includeIf.<condition>.path`, whatever the condition: any may hold), followed as git
/// follows them, ten deep, each with its text — `None` when it cannot be read (an include may
/// name a file not there yet). A path is taken against the including file's folder, `~/`
/// from `home`.
pub(super) fn with_includes(config: &Path, home: Option<&Path>) -> Vec<(PathBuf, Option<String>)> {
    fn collect(
        config: &Path,
        home: Option<&Path>,
        depth: usize,
        files: &mut Vec<(PathBuf, Option<String>)>,
    ) {
        // A file is read once, however often it is included (a config including itself
        // four times, ten deep, was read a million times), and at most
        // [`MAX_INCLUDED_FILES`] are read.
        let seen = |path: &Path| files.iter().any(|(file, _)| file == path);
        if seen(config) || files.len() >= MAX_INCLUDED_FILES {
            return;
        }
        let text = super::content::read_regular(config, MAX_CONFIG_BYTES);
        let includes: Vec<PathBuf> = text
            .as_deref()
            .map(settings)
            .unwrap_or_default()
            .into_iter()
            .filter(|(key, _)| {
                let section = key.split('.').next().unwrap_or_default();
                (section == "include" || section == "includeif") && key.ends_with(".path")
            })
            .map(|(_, value)| place(&value, config.parent().unwrap_or(config), home))
            .collect();
        files.push((config.to_path_buf(), text));
        if depth < MAX_INCLUDE_DEPTH {
            for included in includes {
                collect(&included, home, depth + 1, files);
            }
        }
    }
    let mut files = Vec::new();
    collect(config, home, 0, &mut files);
    files
}

/// The settings of a config's text, in order: the full key (`section.subsection.key`,
/// lowercased) and the value (quotes, escapes and comments removed).
pub(crate) fn settings(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    for line in logical_lines(text) {
        let mut line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            section = section_name(header);
            // A setting may follow the header on its line (`[core]fsmonitor = x`).
            line = header.split_once(']').map_or("", |(_, rest)| rest.trim());
        }
        if let Some((key, value)) = line.split_once('=') {
            let key = format!("{section}.{}", key.trim().to_ascii_lowercase());
            out.push((key, unquote(value.trim())));
        }
    }
    out
}

/// The lines of a config with continuations joined: a line ending in a backslash goes on
/// on the next one (`fsmonitor = scripts/\` then `fsm`).
fn logical_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trailing = line.len() - line.trim_end_matches('\\').len();
        if trailing % 2 == 1 {
            current.push_str(&line[..line.len() - 1]);
        } else {
            current.push_str(line);
            lines.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// `core` for `core]`, `diff.lockb` for `diff "lockb"]` or `diff.lockb]` (lowercased but
/// for a quoted subsection, which git compares as written; here both are lowercased, which
/// only finds more).
fn section_name(header: &str) -> String {
    let header = header.split(']').next().unwrap_or_default().trim();
    match header.split_once(char::is_whitespace) {
        Some((name, sub)) => format!(
            "{}.{}",
            name.to_ascii_lowercase(),
            unquote(sub.trim()).to_ascii_lowercase()
        ),
        None => header.to_ascii_lowercase(),
    }
}

/// Whether `key` (`diff.lockb.textconv`) is the setting `pattern` (`diff.*.textconv`).
fn matches_setting(pattern: &str, key: &str) -> bool {
    match pattern.split_once(".*") {
        // `pager.*`, `alias.*`: any key of the section.
        Some((section, "")) => key
            .strip_prefix(section)
            .is_some_and(|rest| rest.starts_with('.')),
        Some((section, name)) => {
            key.starts_with(&format!("{section}."))
                && key.ends_with(name)
                && key.len() > section.len() + name.len() + 1
        }
        None => key == pattern,
    }
}

/// A value without its comment, quotes and escapes (`"sh x.sh" # y` → `sh x.sh`).
fn unquote(value: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(match next {
                        'n' => '\n',
                        't' => '\t',
                        other => other,
                    });
                }
            }
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

/// A path as git reads it in a config: `~/` from the home folder, else against `base`.
fn place(value: &str, base: &Path, home: Option<&Path>) -> PathBuf {
    match (value.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => base.join(value),
    }
}

/// The words of a command setting's value that name files: with a `/` (but for a folder), or
/// there in the work tree or in a folder the value names (`sh tools/conv.sh`, `./fsmonitor`,
/// `!scripts/x`, `cd scripts && sh run`, `-c core.pager=scripts/p`); options and program
/// names are not.
pub(crate) fn command_paths(value: &str, root: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let words: Vec<&str> = value
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '\'' | '(' | ')'))
        .map(|word| word.trim_start_matches('!'))
        // A setting given on the command line: its value (`core.pager=scripts/p`).
        .map(|word| word.rsplit_once('=').map_or(word, |(_, value)| value))
        .filter(|word| !word.is_empty() && !word.starts_with('-'))
        .collect();
    // Each word where it leads in the work tree, and whether that is a folder.
    let placed: Vec<(&str, PathBuf, bool)> = words
        .iter()
        .map(|word| {
            let path = place(word, root, home);
            let is_dir = disk::is_dir(&path);
            (*word, path, is_dir)
        })
        .collect();
    let folders: Vec<&Path> = std::iter::once(root)
        .chain(
            placed
                .iter()
                .filter(|(_, _, is_dir)| *is_dir)
                .map(|(_, path, _)| path.as_path()),
        )
        .collect();
    let mut paths = Vec::new();
    for (word, path, is_dir) in placed.iter() {
        if word.contains('/') && !is_dir {
            paths.push(path.clone());
        } else if let Some(file) = folders
            .iter()
            .map(|folder| place(word, folder, home))
            .find(|path| disk::is_file(path))
        {
            paths.push(file);
        }
    }
    paths
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn what_a_repository_config_runs_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("tools")).unwrap();
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::write(root.join("tools/conv.sh"), "cat\n").unwrap();
        std::fs::write(root.join("scripts/pre-commit"), "true\n").unwrap();
        std::fs::write(
            root.join("tools/team.gitconfig"),
            "[core]\n\tpager = less\n[include]\n\tpath = ../shared/more.gitconfig\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "../../scripts/pre-commit",
            root.join(".git/hooks/pre-commit"),
        )
        .unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\tbare = false ; comment\n\thooksPath = scripts/git-hooks\n\
             [include]\n\tpath = ../tools/team.gitconfig\n\
             [includeIf \"gitdir:/nowhere/\"]\n\tpath = ../.gitconfig.shared\n\
             [diff \"lockb\"]\n\ttextconv = \"sh tools/conv.sh\"\n\
             [filter.lfs]\n\tclean = git-lfs clean -- %f\n\
             [alias]\n\tst = !./bin/st --short\n",
        )
        .unwrap();
        let mut found = run_by_git(&root.join("tools"), None);
        found.sort();
        let mut expected: Vec<PathBuf> = [
            ".gitconfig.shared",
            "bin/st",
            "scripts/git-hooks",
            "scripts/pre-commit",
            "shared/more.gitconfig",
            "tools/conv.sh",
            "tools/team.gitconfig",
        ]
        .iter()
        .map(|p| root.join(p))
        .collect();
        expected.sort();
        // Paths are kept as git would join them; compare them normalised.
        let normalised: Vec<PathBuf> = found
            .iter()
            .map(|p| {
                p.components().fold(PathBuf::new(), |mut out, c| {
                    match c {
                        std::path::Component::ParentDir => {
                            out.pop();
                        }
                        std::path::Component::CurDir => {}
                        other => out.push(other),
                    }
                    out
                })
            })
            .collect();
        let mut normalised = normalised;
        normalised.sort();
        normalised.dedup();
        assert_eq!(normalised, expected);
        // Outside a repository, nothing.
        assert!(run_by_git(&root.parent().unwrap().join("elsewhere"), None).is_empty());
    }

    /// Git's other spellings: a setting on its section's line, a value continued on the next
    /// line, a script run after a `cd`, a setting given to an alias with `-c`, a tool's
    /// command, and the user's config naming a file of the work tree.
    #[test]
    fn spellings_git_reads_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("ws");
        let home = dir.path().canonicalize().unwrap().join("home");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(root.join("scripts/run"), "true\n").unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]fsmonitor = scripts/fsm3\n\
             [core]\n\tpager = scripts/\\\nfsm4\n\
             [core]\n\tsshCommand = cd scripts && sh run\n\
             [alias]\n\tx = -c core.pager=scripts/alp log\n\
             [difftool \"mine\"]\n\tcmd = tools/difftool.sh $LOCAL $REMOTE\n",
        )
        .unwrap();
        std::fs::write(
            home.join(".gitconfig"),
            format!("[core]\n\tfsmonitor = {}/hooks/fsm\n", root.display()),
        )
        .unwrap();
        let found = run_by_git(&root, Some(&home));
        for expected in [
            "scripts/fsm3",
            "scripts/fsm4",
            "scripts/run",
            "scripts/alp",
            "tools/difftool.sh",
            "hooks/fsm",
        ] {
            assert!(
                found.contains(&root.join(expected)),
                "{expected}: {found:?}"
            );
        }
    }

    #[test]
    fn settings_are_matched_by_section_and_key() {
        assert!(matches_setting("diff.*.textconv", "diff.lockb.textconv"));
        assert!(!matches_setting("diff.*.textconv", "diff.textconv"));
        assert!(matches_setting("alias.*", "alias.st"));
        assert!(!matches_setting("alias.*", "aliases.st"));
        assert!(matches_setting("core.pager", "core.pager"));
        assert_eq!(section_name("diff \"LockB\"]"), "diff.lockb");
        assert_eq!(section_name("Core]"), "core");
        assert_eq!(unquote("\"sh x.sh\" # note"), "sh x.sh");
    }

    /// A config that includes itself, or files that include each other many ways, is read
    /// once per file, and at most [`MAX_INCLUDED_FILES`] files are read (a config including
    /// itself eight times, ten deep, never finished).
    #[test]
    fn each_included_file_is_read_once_and_their_number_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let config = root.join(".gitconfig");
        let own = "[include]\n\tpath = .gitconfig\n".repeat(8);
        std::fs::write(&config, format!("{own}[include]\n\tpath = a.inc\n")).unwrap();
        std::fs::write(root.join("a.inc"), "[include]\n\tpath = .gitconfig\n").unwrap();
        let files = with_includes(&config, None);
        let names: Vec<_> = files.iter().map(|(path, _)| path.clone()).collect();
        assert_eq!(names, [config.clone(), root.join("a.inc")]);
        // Many distinct files: no more than the bound are read.
        let many: String = (0..200)
            .map(|n| format!("[include]\n\tpath = f{n}.inc\n"))
            .collect();
        std::fs::write(&config, many).unwrap();
        for n in 0..200 {
            std::fs::write(root.join(format!("f{n}.inc")), "").unwrap();
        }
        assert_eq!(with_includes(&config, None).len(), MAX_INCLUDED_FILES);
    }
}
