//! Layers and their roots (SPEC §2.3): which files make up a policy set, in which order.
//!
//! Order, lowest first: `defaults` (the engine defaults in `policies/engine.yaml` and the
//! review table in `policies/review.yaml`, always loaded so that every engine value has a
//! default in data), `builtin` (the rest of `policies/`, dropped by `--no-builtin`), each
//! `--enforced` root, the user's own policies (when the command line names no `--policies`),
//! each `--policies` root in the order given, then the project's `.toolgate/policies` found
//! from the current directory. Every root is its own layer. Only the found project layer is
//! subject to trust (see [`super::trust`]). Within a directory root, files load
//! in lexicographic order of their relative paths; hidden entries (`.git`, editor swap files)
//! and policy test files (`*.test.yaml`, `*.test.toml`) are skipped.

use std::path::{Path, PathBuf};

/// What kind of layer a root forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LayerKind {
    /// The engine defaults shipped in the binary.
    Defaults,
    /// The built-in tool contracts, rules, gates and modes shipped in the binary.
    Builtin,
    /// An organisation layer whose deny rules always win and whose locks bind later layers.
    Enforced,
    /// The user's own policies (`~/.config/toolgate/policies`): trusted by where it lives.
    User,
    /// A `--policies` root: named on the command line, so trusted.
    Policies,
    /// A project's `.toolgate/policies` found from the current directory rather than named
    /// on the command line: it may loosen policy or run code only once the user trusts the
    /// project (`toolgate trust`); until then it may only tighten.
    Project,
}

impl LayerKind {
    /// Whether the layer's deny rules and locks are enforced.
    pub fn is_enforced(self) -> bool {
        match self {
            LayerKind::Enforced => true,
            LayerKind::Defaults
            | LayerKind::Builtin
            | LayerKind::User
            | LayerKind::Policies
            | LayerKind::Project => false,
        }
    }

    /// A word for humans: `defaults`, `builtin`, `enforced`, `user`, `policies`, `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            LayerKind::Defaults => "defaults",
            LayerKind::Builtin => "builtin",
            LayerKind::Enforced => "enforced",
            LayerKind::User => "user",
            LayerKind::Policies => "policies",
            LayerKind::Project => "project",
        }
    }
}

/// A file shipped inside the binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbeddedFile {
    /// Path relative to the repository (`policies/tools/bash.yaml`).
    pub path: &'static str,
    /// Contents.
    pub text: &'static str,
}

macro_rules! embed {
    ($($path:literal),* $(,)?) => {
        &[$(EmbeddedFile { path: $path, text: include_str!(concat!("../../", $path)) }),*]
    };
}

/// The engine defaults.
pub const DEFAULTS: &[EmbeddedFile] = embed!["policies/engine.yaml", "policies/review.yaml"];

/// The built-in policies other than the engine defaults. A test checks that this list is
/// exactly the files of `policies/`.
pub const BUILTIN: &[EmbeddedFile] = embed![
    "policies/agents.yaml",
    "policies/commands.yaml",
    "policies/modes.yaml",
    "policies/rules.yaml",
    "policies/tools/agent.yaml",
    "policies/tools/bash.yaml",
    "policies/tools/read.yaml",
    "policies/tools/search.yaml",
    "policies/tools/web.yaml",
    "policies/tools/write.yaml",
];

/// A root of a layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Root {
    /// Files shipped in the binary.
    Embedded(&'static [EmbeddedFile]),
    /// A directory or a single file on disk.
    Path(PathBuf),
}

/// One layer: a kind and one root (its files on disk or in the binary; crate-private,
/// [`LayerSpec::name`] says it for humans).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerSpec {
    /// The layer's kind.
    pub kind: LayerKind,
    /// Its root.
    pub(crate) root: Root,
}

impl LayerSpec {
    /// A name for humans: `defaults`, `builtin`, or the root's path.
    pub fn name(&self) -> String {
        match (&self.kind, &self.root) {
            (LayerKind::Defaults, _) => "defaults".into(),
            (LayerKind::Builtin, _) => "builtin".into(),
            (LayerKind::Enforced, Root::Path(path)) => format!("enforced {}", path.display()),
            (LayerKind::User, Root::Path(path)) => format!("user {}", path.display()),
            (LayerKind::Policies, Root::Path(path)) => path.display().to_string(),
            (LayerKind::Project, Root::Path(path)) => format!("project {}", path.display()),
            (
                LayerKind::Enforced | LayerKind::User | LayerKind::Policies | LayerKind::Project,
                Root::Embedded(_),
            ) => "embedded".into(),
        }
    }
}

/// Which layers to load.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LayerOptions {
    /// Drop the built-in layer (the engine defaults stay).
    pub no_builtin: bool,
    /// Enforced roots, lowest first.
    pub enforced: Vec<PathBuf>,
    /// The user's own policy folder, loaded after the enforced roots.
    pub user: Option<PathBuf>,
    /// Policy roots, lowest first.
    pub policies: Vec<PathBuf>,
    /// The project found from the current directory, loaded last; subject to trust.
    pub project: Option<ProjectLayer>,
}

/// A project's policy layer found from the current directory (not named on the command
/// line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectLayer {
    /// The project root (the folder holding `.toolgate`): what the trust store records.
    pub root: PathBuf,
    /// Its policy folder (`.toolgate/policies`).
    pub policies: PathBuf,
}

impl LayerOptions {
    /// The layers, lowest first.
    pub fn layers(&self) -> Vec<LayerSpec> {
        let mut layers = vec![LayerSpec {
            kind: LayerKind::Defaults,
            root: Root::Embedded(DEFAULTS),
        }];
        if !self.no_builtin {
            layers.push(LayerSpec {
                kind: LayerKind::Builtin,
                root: Root::Embedded(BUILTIN),
            });
        }
        for path in &self.enforced {
            layers.push(LayerSpec {
                kind: LayerKind::Enforced,
                root: Root::Path(path.clone()),
            });
        }
        if let Some(path) = &self.user {
            layers.push(LayerSpec {
                kind: LayerKind::User,
                root: Root::Path(path.clone()),
            });
        }
        for path in &self.policies {
            layers.push(LayerSpec {
                kind: LayerKind::Policies,
                root: Root::Path(path.clone()),
            });
        }
        if let Some(project) = &self.project {
            layers.push(LayerSpec {
                kind: LayerKind::Project,
                root: Root::Path(project.policies.clone()),
            });
        }
        layers
    }
}

/// A file found in a root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FoundFile {
    /// An embedded file.
    Embedded(EmbeddedFile),
    /// A file on disk.
    Disk(PathBuf),
}

/// Why a root could not be listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveryError {
    /// The path that failed.
    pub path: PathBuf,
    /// What happened.
    pub kind: DiscoveryErrorKind,
}

/// What went wrong listing a root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiscoveryErrorKind {
    /// The root does not exist.
    NotFound,
    /// A directory could not be read.
    Unreadable(String),
    /// The root holds more than [`MAX_ENTRIES`] entries below it (`-p /`, `-p ~`): it is
    /// not a folder of policy files, and listing it would not end soon.
    TooLarge,
}

/// The most entries a policy root is listed to, all folders below it together.
pub const MAX_ENTRIES: usize = 10_000;

/// Whether a path names a policy file (by extension, not hidden, not a policy test).
///
/// The name is looked at as bytes, not as UTF-8: a file whose name is not valid UTF-8
/// (`r\xe9gles.yaml` written in Latin-1) is a policy file like any other, loaded and shown
/// with its name decoded lossily. Skipping it would silently drop its rules.
pub fn is_policy_file(path: &Path) -> bool {
    let Some(name) = path.file_name() else {
        return false;
    };
    let name = name.as_encoded_bytes();
    if name.starts_with(b".") {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    let is_policy = [".yaml", ".yml", ".toml"]
        .iter()
        .any(|ext| lower.ends_with(ext.as_bytes()));
    let is_test = [".test.yaml", ".test.yml", ".test.toml"]
        .iter()
        .any(|ext| lower.ends_with(ext.as_bytes()));
    is_policy && !is_test
}

/// Lists the files of a root in load order, with every error met on the way.
pub fn discover(root: &Root) -> (Vec<FoundFile>, Vec<DiscoveryError>) {
    match root {
        Root::Embedded(files) => (
            files.iter().copied().map(FoundFile::Embedded).collect(),
            Vec::new(),
        ),
        Root::Path(path) => {
            let mut found = Vec::new();
            let mut errors = Vec::new();
            match std::fs::metadata(path) {
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    errors.push(DiscoveryError {
                        path: path.clone(),
                        kind: DiscoveryErrorKind::NotFound,
                    });
                }
                Err(err) => errors.push(DiscoveryError {
                    path: path.clone(),
                    kind: DiscoveryErrorKind::Unreadable(err.to_string()),
                }),
                // A file named explicitly is loaded whatever its name, so that
                // `-p my-policy.yaml` always does what it says.
                // (Anything but a folder: a FIFO or a device is refused by the reader as
                // not a regular file, never opened.)
                Ok(meta) if !meta.is_dir() => found.push(FoundFile::Disk(path.clone())),
                Ok(_) => {
                    let mut ancestors: Vec<PathBuf> =
                        std::fs::canonicalize(path).into_iter().collect();
                    let mut left = MAX_ENTRIES;
                    if walk(path, &mut found, &mut errors, &mut ancestors, &mut left).is_err() {
                        // What was found on the way is no part of a policy set.
                        found.clear();
                        errors.clear();
                        errors.push(DiscoveryError {
                            path: path.clone(),
                            kind: DiscoveryErrorKind::TooLarge,
                        });
                    }
                }
            }
            (found, errors)
        }
    }
}

/// Lists `dir` recursively. `ancestors` are the canonical paths of the folders being walked,
/// so that a symbolic link back to one of them is reported instead of followed forever.
/// `left` is how many more entries may be listed; `Err` when they run out.
fn walk(
    dir: &Path,
    found: &mut Vec<FoundFile>,
    errors: &mut Vec<DiscoveryError>,
    ancestors: &mut Vec<PathBuf>,
    left: &mut usize,
) -> Result<(), ()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) => {
            errors.push(DiscoveryError {
                path: dir.to_owned(),
                kind: DiscoveryErrorKind::Unreadable(err.to_string()),
            });
            return Ok(());
        }
    };
    let mut paths: Vec<PathBuf> = Vec::new();
    for entry in entries {
        *left = left.checked_sub(1).ok_or(())?;
        match entry {
            Ok(entry) => paths.push(entry.path()),
            Err(err) => errors.push(DiscoveryError {
                path: dir.to_owned(),
                kind: DiscoveryErrorKind::Unreadable(err.to_string()),
            }),
        }
    }
    paths.sort();
    for path in paths {
        let hidden = path
            .file_name()
            .is_some_and(|n| n.as_encoded_bytes().starts_with(b"."));
        if hidden {
            continue;
        }
        // `metadata` follows symlinks: a symlinked policy file or folder is loaded like any other.
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => match std::fs::canonicalize(&path) {
                Ok(canonical) if ancestors.contains(&canonical) => {
                    let target = std::fs::read_link(&path).unwrap_or(canonical);
                    errors.push(DiscoveryError {
                        kind: DiscoveryErrorKind::Unreadable(format!(
                            "it links to `{}`, a folder that contains it (a symbolic link loop), so it is not followed",
                            target.display()
                        )),
                        path,
                    });
                }
                Ok(canonical) => {
                    ancestors.push(canonical);
                    let walked = walk(&path, found, errors, ancestors, left);
                    ancestors.pop();
                    walked?;
                }
                Err(err) => errors.push(DiscoveryError {
                    path,
                    kind: DiscoveryErrorKind::Unreadable(err.to_string()),
                }),
            },
            Ok(_) if is_policy_file(&path) => found.push(FoundFile::Disk(path)),
            Ok(_) => {}
            // Only entries named like policy files matter: a dangling `notes.md` link is no
            // reason to refuse the set, a dangling `rules.yaml` link is.
            Err(_) if !is_policy_file(&path) => {}
            Err(err) => {
                let dangling = err.kind() == std::io::ErrorKind::NotFound
                    && std::fs::symlink_metadata(&path).is_ok();
                let reason = if dangling {
                    "it is a symbolic link whose target does not exist".to_owned()
                } else {
                    err.to_string()
                };
                errors.push(DiscoveryError {
                    path,
                    kind: DiscoveryErrorKind::Unreadable(reason),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_list_is_exactly_the_policies_folder() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
        let (found, errors) = discover(&Root::Path(root.clone()));
        assert!(errors.is_empty(), "{errors:?}");
        let on_disk: Vec<String> = found
            .iter()
            .filter_map(|f| match f {
                FoundFile::Disk(path) => path
                    .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                    .ok()
                    .map(|p| p.display().to_string()),
                FoundFile::Embedded(_) => None,
            })
            .collect();
        let embedded: Vec<String> = DEFAULTS
            .iter()
            .chain(BUILTIN)
            .map(|f| f.path.to_owned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut on_disk_sorted = on_disk.clone();
        on_disk_sorted.sort();
        assert_eq!(
            on_disk_sorted, embedded,
            "embed every file of policies/ in layer.rs"
        );
    }

    #[test]
    fn directories_load_in_lexicographic_order_skipping_hidden_and_tests() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "b.yaml",
            "a.toml",
            "sub/c.yml",
            ".hidden.yaml",
            "x.test.yaml",
            "notes.md",
            ".git/config.yaml",
        ] {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "version: 1\n").unwrap();
        }
        let (found, errors) = discover(&Root::Path(dir.path().to_owned()));
        assert!(errors.is_empty());
        let names: Vec<_> = found
            .iter()
            .map(|f| match f {
                FoundFile::Disk(p) => p.strip_prefix(dir.path()).unwrap().display().to_string(),
                FoundFile::Embedded(e) => e.path.to_owned(),
            })
            .collect();
        assert_eq!(names, ["a.toml", "b.yaml", "sub/c.yml"]);
    }

    #[test]
    fn a_root_with_more_than_max_entries_is_one_error_and_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        // The root's own entry `sub` counts too.
        for i in 0..MAX_ENTRIES - 1 {
            std::fs::write(sub.join(format!("{i}.yaml")), "").unwrap();
        }
        let (found, errors) = discover(&Root::Path(dir.path().to_owned()));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(found.len(), MAX_ENTRIES - 1);
        std::fs::write(sub.join("one-more.yaml"), "").unwrap();
        let (found, errors) = discover(&Root::Path(dir.path().to_owned()));
        assert!(found.is_empty());
        assert!(
            matches!(&errors[..], [error] if matches!(error.kind, DiscoveryErrorKind::TooLarge)),
            "{errors:?}"
        );
    }

    #[test]
    fn a_symbolic_link_loop_is_reported_once_and_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("a.yaml"), "version: 1\n").unwrap();
        std::os::unix::fs::symlink("..", dir.path().join("sub/up")).unwrap();
        let (found, errors) = discover(&Root::Path(dir.path().to_owned()));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].path.ends_with("sub/up"));
        assert!(
            matches!(&errors[0].kind, DiscoveryErrorKind::Unreadable(reason) if reason.contains("symbolic link loop"))
        );
    }

    #[test]
    fn a_file_whose_name_is_not_utf8_is_found() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let name = std::ffi::OsStr::from_bytes(b"r\xe9gles.yaml");
        std::fs::write(dir.path().join(name), "version: 1\n").unwrap();
        std::fs::write(
            dir.path().join(std::ffi::OsStr::from_bytes(b".\xe9.yaml")),
            "",
        )
        .unwrap();
        let (found, errors) = discover(&Root::Path(dir.path().to_owned()));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(found, [FoundFile::Disk(dir.path().join(name))]);
    }

    #[test]
    fn a_missing_root_is_reported() {
        let (found, errors) = discover(&Root::Path(PathBuf::from("/definitely/not/here")));
        assert!(found.is_empty());
        assert_eq!(errors[0].kind, DiscoveryErrorKind::NotFound);
    }

    #[test]
    fn layers_are_ordered_defaults_builtin_enforced_user_policies_project() {
        let options = LayerOptions {
            no_builtin: false,
            enforced: vec!["org".into()],
            user: Some("user".into()),
            policies: vec!["project".into(), "local".into()],
            project: Some(ProjectLayer {
                root: "found".into(),
                policies: "found/.toolgate/policies".into(),
            }),
        };
        let kinds: Vec<_> = options.layers().iter().map(|l| l.kind).collect();
        assert_eq!(
            kinds,
            [
                LayerKind::Defaults,
                LayerKind::Builtin,
                LayerKind::Enforced,
                LayerKind::User,
                LayerKind::Policies,
                LayerKind::Policies,
                LayerKind::Project
            ]
        );
        let no_builtin = LayerOptions {
            no_builtin: true,
            ..options
        };
        assert_eq!(no_builtin.layers()[1].kind, LayerKind::Enforced);
    }
}
