//! The files a git repository tracks, read from its index (`.git/index`): what `git show`,
//! `git log -p` and `git diff` may print, whatever the work tree holds.
//!
//! The index format is git's own (`Documentation/gitformat-index.txt`): a header (`DIRC`,
//! version 2, 3 or 4, the number of entries), then one entry per tracked path, sorted, with
//! its stat data, object name and flags; in versions 2 and 3 the path is NUL-terminated and
//! padded to eight bytes, in version 4 it is stored as the number of bytes to drop from the
//! previous path and the rest. Extensions after the entries are not read. Nothing here runs
//! git: a repository's configuration can run code.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::disk;
use super::git_config::{self, find_repository};

/// The largest index read: past it, what a repository tracks is not judged file by file.
pub const MAX_INDEX_BYTES: u64 = 64 * 1024 * 1024;

/// How many tracked files are judged one by one at most; past it, the call asks.
pub const MAX_TRACKED: usize = 50_000;

/// A repository's work tree and the paths its index tracks (relative to the work tree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracked {
    pub root: PathBuf,
    pub paths: Vec<String>,
    /// What the index recorded of each path's file (none for a submodule's files and for
    /// a path in conflict, listed more than once).
    stats: Vec<Option<Stat>>,
    /// When the index was written: a file changed in the same moment may differ from what
    /// its stat data says (git's "racily clean" entries, which git compares by content).
    written: Option<(i64, i64)>,
}

/// The stat data the index keeps of a file: git takes a file whose data still match as
/// unchanged, without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    ctime: (u32, u32),
    mtime: (u32, u32),
    ino: u32,
    size: u32,
}

impl Tracked {
    /// Whether the file of `paths[at]` in the work tree is as the index recorded it, so that
    /// `git diff` (work tree against index) prints nothing of it: its change time,
    /// modification time (to the nanosecond), inode and size (each as the index's 32 bits
    /// keep it) are the index's, and it was last modified before the index was written.
    /// Anything else — a file changed, missing, in conflict, or changed in the moment the
    /// index was written — may be printed.
    pub fn unchanged_in_work_tree(&self, at: usize) -> bool {
        use std::os::unix::fs::MetadataExt;
        let (Some(Some(stat)), Some(written), Some(path)) =
            (self.stats.get(at), self.written, self.paths.get(at))
        else {
            return false;
        };
        let Ok(meta) = disk::symlink_metadata(self.root.join(path)) else {
            return false;
        };
        // The index keeps the low 32 bits of each number.
        let low = |value: i64| value as u32;
        let mtime = (meta.mtime(), meta.mtime_nsec());
        (low(meta.ctime()), low(meta.ctime_nsec())) == stat.ctime
            && (low(mtime.0), low(mtime.1)) == stat.mtime
            && low(meta.ino() as i64) == stat.ino
            && low(meta.size() as i64) == stat.size
            && mtime < written
    }
}

/// The repository `folder` lies in (its `.git` folder, or a `.git` file naming one, found
/// there or in a folder above) and the paths it tracks; `Ok(None)` outside any repository.
/// `Err` says why the index cannot be read (too large, not an index).
pub fn tracked_files(folder: &Path) -> Result<Option<Tracked>, String> {
    let Some((root, git_dir)) = find_repository(folder) else {
        return Ok(None);
    };
    let written = disk::metadata(git_dir.join("index")).ok().map(|meta| {
        use std::os::unix::fs::MetadataExt;
        (meta.mtime(), meta.mtime_nsec())
    });
    let entries = tracked_in(&root, &git_dir, SUBMODULE_DEPTH)?;
    let (paths, stats) = entries.into_iter().unzip();
    Ok(Some(Tracked {
        root,
        paths,
        stats,
        written,
    }))
}

/// How deep submodules inside submodules are read.
const SUBMODULE_DEPTH: usize = 3;

/// The paths the repository with the work tree `root` and git folder `git_dir` tracks,
/// with those of its submodules (`git show --submodule=diff` prints their files too), to
/// `depth` levels.
fn tracked_in(
    root: &Path,
    git_dir: &Path,
    depth: usize,
) -> Result<Vec<(String, Option<Stat>)>, String> {
    let index = git_dir.join("index");
    let paths = match disk::metadata(&index) {
        // A repository without an index tracks nothing yet.
        Err(_) => Vec::new(),
        Ok(meta) if meta.len() > MAX_INDEX_BYTES => {
            return Err(format!(
                "`{}` is larger than {} MiB",
                index.display(),
                MAX_INDEX_BYTES / 1024 / 1024
            ));
        }
        Ok(_) => {
            // Only a regular file, and no more of it than the limit (a submodule's `.git`
            // file may name a folder the agent wrote, whose `index` may be a FIFO).
            let mut bytes = Vec::new();
            super::content::open_regular(&index)
                .ok_or_else(|| format!("`{}` is not a regular file", index.display()))?
                .take(MAX_INDEX_BYTES)
                .read_to_end(&mut bytes)
                .map_err(|err| format!("`{}` cannot be read: {err}", index.display()))?;
            let sha256 = super::content::read_regular(&git_dir.join("config"), 1 << 20)
                .is_some_and(|config| {
                    config.lines().any(|line| {
                        line.replace(' ', "")
                            .eq_ignore_ascii_case("objectformat=sha256")
                    })
                });
            let hash = if sha256 { 32 } else { 20 };
            read_index(&bytes, hash).map_err(|why| format!("`{}` {why}", index.display()))?
        }
    };
    // Each index read counts against the decision's walks, submodules' as they are read
    // (submodules linked back to the same repositories multiply their entries).
    if !disk::walked(paths.len()) {
        return Err(disk::walked_too_much());
    }
    let mut tracked = Vec::with_capacity(paths.len());
    for (path, mode, stat) in paths {
        match mode & 0o170000 {
            // A sparse index lists a folder it leaves out as one entry.
            0o040000 => {
                return Err(format!(
                    "`{}` is sparse: the files below `{path}` are not listed",
                    index.display()
                ));
            }
            // A submodule: its own files, below it.
            0o160000 => {
                let sub = root.join(&path);
                let found = find_repository(&sub).filter(|(r, _)| *r == sub);
                if let Some((sub_root, sub_git)) = found {
                    if depth == 0 {
                        return Err(format!("`{path}` holds submodules too deep to read"));
                    }
                    let below = tracked_in(&sub_root, &sub_git, depth - 1)?;
                    if tracked.len() + below.len() > MAX_TRACKED {
                        return Err(format!(
                            "`{path}` and the submodules below it track more than {MAX_TRACKED} files"
                        ));
                    }
                    tracked.extend(
                        below
                            .into_iter()
                            .map(|(p, _)| (format!("{path}/{p}"), None)),
                    );
                }
                tracked.push((path, None));
            }
            _ => tracked.push((path, stat)),
        }
    }
    Ok(tracked)
}

/// The repository config of `folder` when it holds a credential (see
/// [`holds_credentials`]). Its path when so; `None` when it holds none or there is no
/// repository.
pub fn config_with_credentials(folder: &Path) -> Option<PathBuf> {
    let (_, git_dir) = find_repository(folder)?;
    // Remotes kept the old way are read by `git remote get-url` and `git fetch` too.
    let legacy = ["remotes", "branches"].into_iter().flat_map(|kept| {
        std::fs::read_dir(git_dir.join(kept))
            .into_iter()
            .flatten()
            .flatten()
            .take(100)
            .map(|entry| entry.path())
    });
    ["config", "config.worktree"]
        .into_iter()
        .map(|name| git_dir.join(name))
        .chain(legacy)
        .find(|config| holds_credentials(config))
}

/// The user's or the system's git config when one holds a credential (see
/// [`holds_credentials`]): git reads them in every repository, and their `insteadOf`
/// sections rewrite the remotes' URLs that `git remote -v` prints.
pub fn user_config_with_credentials(home: Option<&Path>) -> Option<PathBuf> {
    let in_home = home
        .into_iter()
        .flat_map(|home| [home.join(".gitconfig"), home.join(".config/git/config")]);
    in_home
        .chain(std::iter::once(PathBuf::from("/etc/gitconfig")))
        .find(|config| holds_credentials(config))
}

/// Whether the git config file `config` holds a credential: a URL with a user and password
/// or token in it (`https://x-access-token:ghp_…@github.com/…`, `ssh://git:pw@host/…`, in a
/// remote's `url` or an `insteadOf` section's name), an HTTP header set for git's requests
/// (`http.extraheader`, where a CI checkout keeps its token), a setting named as a password
/// or token (`sendemail.smtpPass`, `imap.pass`, `github.token`, `hub.oauthtoken`), or a
/// credential helper written inline with its `password=`. The files it includes are read
/// as git reads them (see [`git_config::with_includes`]), since their settings are the
/// config's.
fn holds_credentials(config: &Path) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    git_config::with_includes(config, home.as_deref())
        .iter()
        .any(|(_, text)| text.as_deref().is_some_and(credential_in))
}

/// Whether a config's text holds a credential (see [`holds_credentials`]): each setting as
/// git reads it (continued lines joined, quotes and escapes removed), and each line as
/// written (a header's URL, a spelling the settings reader does not take).
fn credential_in(text: &str) -> bool {
    let setting = |(key, value): &(String, String)| {
        let name = key.rsplit('.').next().unwrap_or_default();
        url_with_credential(key)
            || url_with_credential(value)
            || ["pass", "password", "token", "secret", "extraheader"]
                .iter()
                .any(|secret| name.ends_with(secret))
            || value.to_ascii_lowercase().contains("password=")
    };
    git_config::settings(text).iter().any(setting)
        || text.lines().any(|line| {
            let line = line.trim().to_ascii_lowercase();
            url_with_credential(&line) || line.starts_with("extraheader")
        })
}

/// Whether `text` holds a URL with a credential: an http(s) one with a user part (a token
/// may be the user), any other with a user and a password (`ssh://git@host` names a user,
/// no secret).
fn url_with_credential(text: &str) -> bool {
    text.match_indices("://").any(|(at, _)| {
        let scheme_start = text[..at]
            .rfind(|c: char| !c.is_ascii_alphanumeric() && !matches!(c, '+' | '-' | '.'))
            .map_or(0, |i| i + 1);
        let scheme = text[scheme_start..at].to_ascii_lowercase();
        // (A quote or a space may be part of a user or a password: `x:p\"w@host`.)
        let authority = text[at + 3..]
            .split(['/', '?', '#', '\n'])
            .next()
            .unwrap_or("");
        match authority.rsplit_once('@') {
            Some((user, _)) => scheme.starts_with("http") || user.contains(':'),
            None => false,
        }
    })
}

/// Whether `path` (through links too) is a git config that holds a credential (see
/// [`holds_credentials`]): a repository's (`.git/config`, `config.worktree`, a submodule's
/// in `.git/modules/`), a user's (`~/.gitconfig`, `~/.config/git/config`, or a
/// `.gitconfig` an `include.path` names), the system's (`/etc/gitconfig`), a
/// `.gitmodules` file.
pub fn is_config_with_credentials(path: &Path) -> bool {
    const NAMES: [&str; 5] = [
        "config",
        "config.worktree",
        ".gitconfig",
        "gitconfig",
        ".gitmodules",
    ];
    // A remote kept the old way (`.git/remotes/NAME`, `.git/branches/NAME`) names its URL.
    let legacy_remote = |path: &Path| {
        let folder = path.parent();
        folder
            .and_then(Path::file_name)
            .is_some_and(|name| name == "remotes" || name == "branches")
            && folder
                .and_then(Path::parent)
                .and_then(Path::file_name)
                .is_some_and(|name| name.to_string_lossy().ends_with(".git"))
    };
    if !path
        .file_name()
        .is_some_and(|name| NAMES.iter().any(|known| name == *known))
        && !legacy_remote(path)
    {
        return false;
    }
    let Ok(real) = disk::canonicalize(path) else {
        return false;
    };
    let is_config = match real.file_name().and_then(|name| name.to_str()) {
        _ if legacy_remote(&real) => true,
        Some(".gitconfig" | "gitconfig" | ".gitmodules") => true,
        // Inside a `.git` folder (a submodule's and a worktree's are deeper), a bare
        // repository's (`mirror.git/config`), or in git's own folder of the user's
        // configuration.
        Some("config" | "config.worktree") => {
            let parent = real.parent().and_then(Path::file_name);
            parent
                .is_some_and(|folder| folder == "git" || folder.to_string_lossy().ends_with(".git"))
                || real
                    .ancestors()
                    .any(|dir| dir.file_name().is_some_and(|n| n == ".git"))
        }
        _ => false,
    };
    is_config && holds_credentials(&real)
}

/// Whether `path` is a git config holding a credential (see [`is_config_with_credentials`]),
/// or a file of any name git reads as one (`read_by_git`, asked only then: a config the
/// repository's or the user's config includes, `conf/remote.inc`, `~/.gitcreds`) that holds
/// one.
pub fn config_file_with_credentials(path: &Path, read_by_git: impl FnOnce() -> bool) -> bool {
    is_config_with_credentials(path) || (read_by_git() && holds_credentials(path))
}

/// The work tree of the repository `folder` lies in: the nearest folder, from `folder` up,
/// holding a `.git` folder or file.
pub fn work_tree(folder: &Path) -> Option<PathBuf> {
    find_repository(folder).map(|(root, _)| root)
}

/// The paths of an index's entries with their modes and stat data (none for a path listed
/// more than once: in conflict); `hash` is the length of an object name. A split index (its
/// `link` extension: the entries are in another file) is an error.
fn read_index(bytes: &[u8], hash: usize) -> Result<Vec<(String, u32, Option<Stat>)>, String> {
    let not_an_index = |what: &str| Err(format!("is not a git index ({what})"));
    if bytes.len() < 12 || &bytes[..4] != b"DIRC" {
        return not_an_index("no `DIRC` header");
    }
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    let (Some(version), Some(count)) = (word(4), word(8)) else {
        return not_an_index("a short header");
    };
    if !(2..=4).contains(&version) {
        return not_an_index(&format!("version {version}"));
    }
    // Stat data (40 bytes), the object name, the flags.
    let fixed = 40 + hash + 2;
    let mut paths: Vec<(String, u32, Option<Stat>)> = Vec::new();
    let mut at = 12;
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let Some(flags) = bytes
            .get(start + fixed - 2..start + fixed)
            .map(|f| u16::from_be_bytes([f[0], f[1]]))
        else {
            return not_an_index("an entry past its end");
        };
        let mode = word(start + 24).unwrap_or(0);
        let stat = |at: usize| word(start + at).unwrap_or(0);
        let stat = Stat {
            ctime: (stat(0), stat(4)),
            mtime: (stat(8), stat(12)),
            ino: stat(20),
            size: stat(36),
        };
        at = start + fixed;
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
        }
        let path = if version == 4 {
            let Some((drop, after)) = varint(bytes, at) else {
                return not_an_index("a bad path prefix");
            };
            let Some(len) = bytes
                .get(after..)
                .and_then(|rest| rest.iter().position(|&b| b == 0))
            else {
                return not_an_index("an unterminated path");
            };
            let Some(kept) = previous.len().checked_sub(drop) else {
                return not_an_index("a bad path prefix");
            };
            let mut path = previous[..kept].to_vec();
            path.extend_from_slice(&bytes[after..after + len]);
            at = after + len + 1;
            path
        } else {
            let Some(len) = bytes
                .get(at..)
                .and_then(|rest| rest.iter().position(|&b| b == 0))
            else {
                return not_an_index("an unterminated path");
            };
            let path = bytes[at..at + len].to_vec();
            // NUL-terminated and padded to a multiple of eight bytes from the entry's start.
            let entry = at + len - start;
            at = start + (entry + 8) / 8 * 8;
            path
        };
        // A path that is not UTF-8 is judged by its readable form. A path in conflict is
        // listed once for each side.
        let readable = String::from_utf8_lossy(&path).into_owned();
        match paths.last_mut() {
            Some(last) if last.0 == readable => last.2 = None,
            _ => paths.push((readable, mode, Some(stat))),
        }
        previous = path;
    }
    // Extensions: a signature, a size, the data; the index's checksum ends the file.
    while at + 8 + hash <= bytes.len() {
        let (signature, Some(size)) = (&bytes[at..at + 4], word(at + 4)) else {
            break;
        };
        if signature == b"link" {
            return Err(
                "is split (`core.splitIndex`): most of what it tracks is in another file"
                    .to_owned(),
            );
        }
        at += 8 + size as usize;
    }
    Ok(paths)
}

/// A version 4 path prefix length (git's offset encoding) at `at`, and where it ends.
fn varint(bytes: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let mut byte = *bytes.get(at)?;
    at += 1;
    let mut value = usize::from(byte & 0x7f);
    while byte & 0x80 != 0 {
        byte = *bytes.get(at)?;
        at += 1;
        value = value.checked_add(1)?.checked_mul(128)? + usize::from(byte & 0x7f);
    }
    Some((value, at))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::process::Command;

    use super::*;

    fn git(dir: &Path, args: &[&str]) -> bool {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .is_ok_and(|out| out.status.success())
    }

    /// The index git writes, in each version, lists what `git ls-files` lists.
    #[test]
    fn the_index_lists_the_tracked_files() {
        let dir = tempfile::tempdir().unwrap();
        if !git(dir.path(), &["init", "-q"]) {
            eprintln!("skipped: git is not installed");
            return;
        }
        let files = [
            ".env",
            "src/main.rs",
            "src/a/b/deep.rs",
            "README.md",
            "ü.txt",
        ];
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        std::fs::write(dir.path().join("untracked.txt"), "x").unwrap();
        assert!(git(
            dir.path(),
            &["add", ".env", "src", "README.md", "ü.txt"]
        ));
        let mut expected: Vec<String> = files.iter().map(|f| (*f).to_owned()).collect();
        expected.sort();
        for version in ["2", "3", "4"] {
            assert!(git(
                dir.path(),
                &["update-index", "--index-version", version]
            ));
            let tracked = tracked_files(&dir.path().join("src/a")).unwrap().unwrap();
            assert_eq!(tracked.root, dir.path());
            let mut paths = tracked.paths;
            paths.sort();
            assert_eq!(paths, expected, "index version {version}");
        }
    }

    /// A file is unchanged in the work tree while its stat data are the index's and it was
    /// modified before the index was written; any write, or a conflict, changes that.
    #[test]
    fn files_unchanged_since_they_were_added() {
        let dir = tempfile::tempdir().unwrap();
        if !git(dir.path(), &["init", "-q"]) {
            eprintln!("skipped: git is not installed");
            return;
        }
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for file in ["a.txt", "b.txt", "c.txt"] {
            let path = dir.path().join(file);
            std::fs::write(&path, "x").unwrap();
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(hour_ago)
                .unwrap();
        }
        assert!(git(dir.path(), &["add", "a.txt", "b.txt", "c.txt"]));
        // Rewritten (a new time), and rewritten with its old time put back (a new change
        // time).
        std::fs::write(dir.path().join("b.txt"), "y").unwrap();
        let c = std::fs::File::options()
            .write(true)
            .open(dir.path().join("c.txt"))
            .unwrap();
        std::io::Write::write_all(&mut &c, b"z").unwrap();
        c.set_modified(hour_ago).unwrap();
        let tracked = tracked_files(dir.path()).unwrap().unwrap();
        let unchanged = |name: &str| {
            let at = tracked.paths.iter().position(|p| p == name).unwrap();
            tracked.unchanged_in_work_tree(at)
        };
        assert!(unchanged("a.txt"));
        assert!(!unchanged("b.txt"));
        assert!(!unchanged("c.txt"));
        std::fs::remove_file(dir.path().join("a.txt")).unwrap();
        assert!(!unchanged("a.txt"));
    }

    /// A split index keeps most entries in another file: it cannot be judged from the index
    /// alone. A submodule's files are listed below it.
    #[test]
    fn split_indexes_and_submodules() {
        let dir = tempfile::tempdir().unwrap();
        if !git(dir.path(), &["init", "-q"]) {
            eprintln!("skipped: git is not installed");
            return;
        }
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        assert!(git(dir.path(), &["add", "a.txt"]));
        let sub = dir.path().join("lib");
        std::fs::create_dir(&sub).unwrap();
        assert!(git(&sub, &["init", "-q"]));
        std::fs::write(sub.join(".env"), "K=1").unwrap();
        assert!(git(&sub, &["add", ".env"]));
        let gitlink = "160000,4b825dc642cb6eb9a060e54bf8d69288fbee4904,lib";
        assert!(git(
            dir.path(),
            &["update-index", "--add", "--cacheinfo", gitlink]
        ));
        let mut paths = tracked_files(dir.path()).unwrap().unwrap().paths;
        paths.sort();
        assert_eq!(paths, ["a.txt", "lib", "lib/.env"]);
        assert!(git(dir.path(), &["update-index", "--split-index"]));
        let err = tracked_files(dir.path()).unwrap_err();
        assert!(err.contains("split"), "{err}");
    }

    /// Submodules linked to the same repositories multiply their entries level by level:
    /// they count against the decision's walks as they are read, and the listing stops
    /// (three levels of a hundred links each made a million entries, gigabytes, and aborted
    /// the hook).
    #[test]
    fn submodules_linked_many_times_stop_at_the_decisions_budget() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let repos: Vec<PathBuf> = (0..4).map(|n| root.join(format!("r{n}"))).collect();
        for repo in &repos {
            std::fs::create_dir(repo).unwrap();
            if !git(repo, &["init", "-q"]) {
                eprintln!("skipped: git is not installed");
                return;
            }
        }
        std::fs::write(repos[3].join("a.txt"), "x").unwrap();
        assert!(git(&repos[3], &["add", "a.txt"]));
        // Each level holds 60 submodules, all links to the next repository: 60³ entries.
        for level in 0..3 {
            for n in 0..60 {
                let name = format!("g{n}");
                std::os::unix::fs::symlink(&repos[level + 1], repos[level].join(&name)).unwrap();
                let gitlink = format!("160000,4b825dc642cb6eb9a060e54bf8d69288fbee4904,{name}");
                assert!(git(
                    &repos[level],
                    &["update-index", "--add", "--cacheinfo", &gitlink]
                ));
            }
        }
        let listed = disk::recorded(|| tracked_files(&repos[0]).map(|t| t.map(|t| t.paths.len())));
        // Stopped while the submodules are read, not after listing them all.
        let err = listed.unwrap_err();
        assert!(err.contains("track more than"), "{err}");
    }

    #[test]
    fn credentials_in_a_config_are_found_in_any_url_and_headers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let config = dir.path().join(".git/config");
        let holds = |text: &str| {
            std::fs::write(&config, text).unwrap();
            config_with_credentials(dir.path()).is_some()
        };
        for text in [
            "[remote \"origin\"]\n\turl = https://x-access-token:ghp_1@github.com/a/b.git\n",
            "[remote \"origin\"]\n\tpushurl = https://tok@github.com/a/b.git\n",
            "[url \"https://user:pw@git.example.com/\"]\n\tinsteadOf = https://git.example.com/\n",
            "[http \"https://github.com/\"]\n\textraHeader = AUTHORIZATION: basic eA==\n",
            // Read as git reads it: a continued line, a quoted part.
            "[remote \"origin\"]\n\turl = https://x-access-token:ghs_1\\\n@github.com/a/b\n",
            "[remote \"origin\"]\n\turl = https://x-access-token:\"ghs_1\"@github.com/a/b\n",
            "[remote \"origin\"]\n\turl = ssh://git:pw@host/x\n",
            "[sendemail]\n\tsmtpPass = hunter2\n",
            "[imap]\n\tpass = hunter2\n",
            "[github]\n\ttoken = ghp_1\n",
            "[hub]\n\toauthtoken = x\n",
            "[credential]\n\thelper = \"!f() { echo password=hunter2; }; f\"\n",
            // A quote or a space in the password.
            "[remote \"origin\"]\n\turl = https://x:p\\\"w@github.com/a/b\n",
            "[remote \"origin\"]\n\turl = \"https://x:p w@github.com/a/b\"\n",
        ] {
            assert!(holds(text), "{text}");
        }
        // Remotes kept the old way.
        std::fs::write(&config, "[core]\n\tbare = false\n").unwrap();
        std::fs::create_dir(dir.path().join(".git/remotes")).unwrap();
        std::fs::write(
            dir.path().join(".git/remotes/legacy"),
            "URL: https://x-access-token:ghs_1@github.com/a/b\n",
        )
        .unwrap();
        assert!(config_with_credentials(dir.path()).is_some());
        assert!(is_config_with_credentials(
            &dir.path().join(".git/remotes/legacy")
        ));
        std::fs::remove_dir_all(dir.path().join(".git/remotes")).unwrap();
        // A bare repository's config.
        std::fs::create_dir(dir.path().join("mirror.git")).unwrap();
        let bare = dir.path().join("mirror.git/config");
        std::fs::write(
            &bare,
            "[remote \"origin\"]\n\turl = https://tok@github.com/a/b\n",
        )
        .unwrap();
        assert!(is_config_with_credentials(&bare));
        for text in [
            "[remote \"origin\"]\n\turl = https://github.com/a/b.git\n",
            "[remote \"origin\"]\n\turl = git@github.com:a/b.git\n",
            "[remote \"origin\"]\n\turl = ssh://git@github.com/a/b.git\n",
            "[user]\n\temail = dev@example.com\n",
            "[credential]\n\thelper = store\n",
            "[http]\n\tsslCertPasswordProtected = true\n",
        ] {
            assert!(!holds(text), "{text}");
        }
        assert_eq!(config_with_credentials(&dir.path().join("none")), None);
    }

    #[test]
    fn credentials_in_an_included_config_are_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write(
            "creds.inc",
            "[url \"https://tok@github.com/\"]\n\tinsteadOf = https://github.com/\n",
        );
        write("plain.inc", "[core]\n\tautocrlf = false\n");
        let holds = |text: &str| {
            write(".git/config", text);
            config_with_credentials(dir.path()).is_some()
        };
        assert!(holds("[include]\n\tpath = ../creds.inc\n"));
        assert!(holds(
            "[includeIf \"gitdir:/nowhere/\"]\n  path = \"../creds.inc\"\n"
        ));
        // Through a chain of includes.
        write("chain.inc", "[include]\n\tpath = creds.inc\n");
        assert!(holds("[include]\n\tpath = ../chain.inc\n"));
        assert!(!holds("[include]\n\tpath = ../plain.inc\n"));
        assert!(!holds("[include]\n\tpath = ../missing.inc\n"));
        // A `path` outside an include section names no file to read.
        assert!(!holds("[core]\n\tpath = ../creds.inc\n"));
        // A config including itself ends at git's depth.
        write("loop.inc", "[include]\n\tpath = loop.inc\n");
        assert!(!holds("[include]\n\tpath = ../loop.inc\n"));
    }

    #[test]
    fn a_folder_outside_a_repository_tracks_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(tracked_files(dir.path()).unwrap(), None);
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let tracked = tracked_files(dir.path()).unwrap().unwrap();
        assert!(tracked.paths.is_empty());
    }

    #[test]
    fn what_is_not_an_index_is_an_error() {
        for bytes in [
            &b"DIRC"[..],
            b"XXXX\0\0\0\x02\0\0\0\x01",
            b"DIRC\0\0\0\x02\0\0\0\x05",
        ] {
            assert!(read_index(bytes, 20).is_err(), "{bytes:?}");
        }
        assert_eq!(
            read_index(b"DIRC\0\0\0\x02\0\0\0\0", 20).unwrap(),
            Vec::<(String, u32, Option<Stat>)>::new()
        );
    }
}
