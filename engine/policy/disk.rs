//! What one decision asks of the file system, asked once.
//!
//! Deciding a command line asks about the same files several times: a file operand is
//! located (one `lstat` per folder of its path), then looked at for other names (a `stat`),
//! then perhaps opened to see whether it holds a key; the workspace root is resolved for each
//! path; a folder is looked for a repository by every git command of the line. Within
//! [`recorded`], the answers to the questions below are kept for the rest of the decision (on
//! this thread) and given again instead of asking again; outside it, every question goes to
//! the file system.
//!
//! A decision looks at the file system at one moment: a file that changes while a decision
//! runs may be seen before or after the change either way, so keeping an answer for the rest
//! of the decision changes nothing it can tell. The record is dropped when the decision ends
//! and holds at most [`MAX_ANSWERS`] answers of each kind (a search judges up to 10 000 files);
//! past that, questions go to the file system again.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::Metadata;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The most answers of one kind a decision keeps.
pub(super) const MAX_ANSWERS: usize = 4096;

/// The most folder entries a decision keeps, all listings together.
const MAX_LISTED: usize = 20_000;

/// The most entries one decision's walks read, all together: the files below searched
/// folders, the folders looked through for links, the entries of repositories' indexes.
/// Each walk has a bound of its own, and a line may run 256 commands (`find -L dir` a
/// hundred times over a folder of 9 000 links took minutes).
pub(super) const MAX_WALKED: usize = 100_000;

/// An answer: what the file system said, or the kind of error it gave.
type Answer<T> = Result<T, io::ErrorKind>;

/// Answers by path, as written (its bytes: hashing a `Path` walks its components, which cost
/// more than the lookups saved).
type Answers<T> = HashMap<OsString, Answer<T>, foldhash::fast::RandomState>;

/// The answers one decision has been given.
#[derive(Default)]
struct Record {
    /// `lstat`: a path's metadata, not following a last link.
    lstat: Answers<Metadata>,
    /// `stat`: a path's metadata through links.
    stat: Answers<Metadata>,
    /// `readlink`: a link's target.
    link: Answers<PathBuf>,
    /// A folder's entries (see [`list`]).
    listing: Answers<Rc<[Entry]>>,
    /// The entries `listing` holds, all folders together.
    listed: usize,
    /// The entries the decision's walks have read (see [`walked`]).
    walked: usize,
}

/// One entry of a folder: its name and its type (a link's own type: links are not followed).
#[derive(Clone, Debug)]
pub(super) struct Entry {
    /// The entry's name.
    pub name: std::ffi::OsString,
    /// Whether it is a folder (not a link to one).
    pub is_dir: bool,
}

thread_local! {
    /// The record of the decision running on this thread, if one is recorded.
    static RECORD: RefCell<Option<Record>> = const { RefCell::new(None) };
}

/// Runs `decide` with the file system's answers recorded (see the module docs). A decision
/// made inside another keeps to the outer one's record.
pub(super) fn recorded<T>(decide: impl FnOnce() -> T) -> T {
    /// Drops the record when the decision ends, also by unwinding.
    struct Ends;
    impl Drop for Ends {
        fn drop(&mut self) {
            RECORD.with(|record| record.borrow_mut().take());
        }
    }
    let outermost = RECORD.with(|record| {
        let mut record = record.borrow_mut();
        let outermost = record.is_none();
        if outermost {
            *record = Some(Record::default());
        }
        outermost
    });
    // (Made only here: an `Ends` made and dropped would end the outer record.)
    let _ends = if outermost { Some(Ends) } else { None };
    decide()
}

/// The answer kept in `field` of the current record for `path`, else `ask`'s (kept when a
/// decision is recorded and the record has room).
fn answer<T: Clone>(
    field: fn(&mut Record) -> &mut Answers<T>,
    path: &Path,
    ask: impl FnOnce(&Path) -> io::Result<T>,
) -> io::Result<T> {
    let kept = RECORD.with(|record| {
        let mut record = record.borrow_mut();
        field(record.as_mut()?).get(path.as_os_str()).cloned()
    });
    if let Some(kept) = kept {
        return kept.map_err(io::Error::from);
    }
    let given = ask(path);
    RECORD.with(|record| {
        if let Some(record) = record.borrow_mut().as_mut() {
            let answers = field(record);
            if answers.len() < MAX_ANSWERS {
                let kept = given.as_ref().map(T::clone).map_err(io::Error::kind);
                answers.insert(path.as_os_str().to_owned(), kept);
            }
        }
    });
    given
}

/// Counts `entries` more read by a walk of the decision; `false` once the decision's walks
/// have read more than [`MAX_WALKED`] in all (outside a recorded decision, always `true`).
pub(super) fn walked(entries: usize) -> bool {
    RECORD.with(|record| match record.borrow_mut().as_mut() {
        Some(record) => {
            record.walked = record.walked.saturating_add(entries);
            record.walked <= MAX_WALKED
        }
        None => true,
    })
}

/// Why a walk stops when [`walked`] says the decision's budget is spent.
pub(super) fn walked_too_much() -> String {
    format!(
        "the line's walks read more than {MAX_WALKED} entries in all, too many to judge in time"
    )
}

/// [`std::fs::symlink_metadata`], recorded.
pub(super) fn symlink_metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let path = path.as_ref();
    answer(
        |record| &mut record.lstat,
        path,
        |path| std::fs::symlink_metadata(path),
    )
}

/// [`std::fs::metadata`], recorded; the answer of [`symlink_metadata`] where that one shows
/// no link at the path (an error included: a path that cannot be reached without following
/// its last name cannot be reached with it).
pub(super) fn metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let path = path.as_ref();
    let not_a_link = RECORD.with(|record| {
        let record = record.borrow();
        match record.as_ref()?.lstat.get(path.as_os_str())? {
            Ok(meta) if !meta.file_type().is_symlink() => Some(Ok(meta.clone())),
            // The path ends before its last name, or nothing has that name: following a
            // link there changes nothing.
            Err(kind) => Some(Err(*kind)),
            Ok(_) => None,
        }
    });
    if let Some(answer) = not_a_link {
        return answer.map_err(io::Error::from);
    }
    answer(
        |record| &mut record.stat,
        path,
        |path| std::fs::metadata(path),
    )
}

/// [`std::fs::read_link`], recorded.
pub(super) fn read_link(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    let path = path.as_ref();
    answer(
        |record| &mut record.link,
        path,
        |path| std::fs::read_link(path),
    )
}

/// The first `limit` entries of `folder` (`.` and `..` left out), recorded while the record
/// holds fewer than [`MAX_LISTED`] entries of all folders.
pub(super) fn list(folder: impl AsRef<Path>, limit: usize) -> io::Result<Rc<[Entry]>> {
    let folder = folder.as_ref();
    let kept = RECORD.with(|record| {
        let record = record.borrow();
        let kept = record.as_ref()?.listing.get(folder.as_os_str())?;
        // A listing cut shorter than this caller reads is read again.
        match kept {
            Ok(entries) if entries.len() < limit => Some(Ok(Rc::clone(entries))),
            Ok(_) => None,
            Err(kind) => Some(Err(*kind)),
        }
    });
    if let Some(kept) = kept {
        return kept.map_err(io::Error::from);
    }
    let given: io::Result<Rc<[Entry]>> = std::fs::read_dir(folder).map(|entries| {
        entries
            .flatten()
            .take(limit)
            .map(|entry| Entry {
                is_dir: entry.file_type().is_ok_and(|kind| kind.is_dir()),
                name: entry.file_name(),
            })
            .collect()
    });
    RECORD.with(|record| {
        if let Some(record) = record.borrow_mut().as_mut() {
            let size = given.as_ref().map_or(0, |entries| entries.len());
            if record.listing.len() < MAX_ANSWERS && record.listed + size <= MAX_LISTED {
                record.listed += size;
                let kept = given.as_ref().map(Rc::clone).map_err(io::Error::kind);
                record.listing.insert(folder.as_os_str().to_owned(), kept);
            }
        }
    });
    given
}

/// The most links [`canonicalize`] follows, as Linux does before `ELOOP`.
const MAX_LINKS: usize = 40;

/// [`std::fs::canonicalize`] (`realpath`), each folder of the path asked through
/// [`symlink_metadata`] and [`read_link`], so that the folders paths share (the workspace
/// root's) are asked once a decision. A relative path is taken against the current folder.
pub(super) fn canonicalize(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    use std::path::Component;
    let path = path.as_ref();
    let absolute;
    let path = if path.is_absolute() {
        path
    } else {
        absolute = std::env::current_dir()?.join(path);
        &absolute
    };
    // The components still to walk, the next one last: `None` for `..`.
    let mut pending: Vec<Option<std::ffi::OsString>> = Vec::new();
    let push = |pending: &mut Vec<_>, path: &Path| {
        let at = pending.len();
        pending.extend(path.components().filter_map(|component| match component {
            Component::Normal(name) => Some(Some(name.to_owned())),
            Component::ParentDir => Some(None),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        }));
        pending[at..].reverse();
    };
    push(&mut pending, path);
    let mut real = PathBuf::from("/");
    let mut links = 0;
    while let Some(component) = pending.pop() {
        let Some(name) = component else {
            real.pop();
            continue;
        };
        let next = real.join(name);
        let meta = symlink_metadata(&next)?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(io::Error::other("too many levels of symbolic links"));
            }
            // The target is walked from the link's folder (`real`), or from `/`.
            let target = read_link(&next)?;
            if target.is_absolute() {
                real = PathBuf::from("/");
            }
            push(&mut pending, &target);
            continue;
        }
        if !pending.is_empty() && !meta.is_dir() {
            return Err(io::ErrorKind::NotADirectory.into());
        }
        real = next;
    }
    // `folder/` names a folder, as `realpath` requires.
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") && !is_dir(&real) {
        return Err(io::ErrorKind::NotADirectory.into());
    }
    Ok(real)
}

/// Whether something exists at `path` (through links), recorded.
pub(super) fn exists(path: impl AsRef<Path>) -> bool {
    metadata(path).is_ok()
}

/// Whether `path` is a folder (through links), recorded.
pub(super) fn is_dir(path: impl AsRef<Path>) -> bool {
    metadata(path).is_ok_and(|meta| meta.is_dir())
}

/// Whether `path` is a regular file (through links), recorded.
pub(super) fn is_file(path: impl AsRef<Path>) -> bool {
    metadata(path).is_ok_and(|meta| meta.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_decision_is_given_the_first_answer_again_and_forgets_it_after() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        recorded(|| {
            assert!(symlink_metadata(&file).is_err());
            assert!(!exists(&file));
            std::fs::write(&file, "x").unwrap();
            // Within the decision, the first answers stand.
            assert_eq!(
                symlink_metadata(&file).unwrap_err().kind(),
                io::ErrorKind::NotFound
            );
            assert!(!exists(&file));
            // A nested decision keeps to the outer record.
            recorded(|| assert!(!exists(&file)));
            assert!(!exists(&file));
        });
        // After it, the file system is asked again.
        assert!(symlink_metadata(&file).is_ok());
        assert!(exists(&file));
        recorded(|| assert!(is_file(&file)));
    }

    #[test]
    fn metadata_follows_a_link_the_recorded_lstat_shows() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("folder");
        std::fs::create_dir(&target).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        recorded(|| {
            assert!(symlink_metadata(&link).unwrap().file_type().is_symlink());
            assert!(is_dir(&link));
            assert_eq!(read_link(&link).unwrap(), target);
            assert_eq!(
                canonicalize(&link).unwrap(),
                std::fs::canonicalize(&target).unwrap()
            );
        });
    }

    #[test]
    fn the_record_keeps_at_most_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        recorded(|| {
            for n in 0..MAX_ANSWERS + 10 {
                assert!(!exists(dir.path().join(n.to_string())));
            }
            let kept = RECORD.with(|record| record.borrow().as_ref().unwrap().stat.len());
            assert_eq!(kept, MAX_ANSWERS);
        });
    }

    /// A decision's walks share one budget, spent for the rest of the decision and given
    /// again to the next; outside a decision nothing is counted.
    #[test]
    fn the_walks_of_a_decision_share_one_budget() {
        for _ in 0..2 {
            recorded(|| {
                assert!(walked(MAX_WALKED - 1));
                assert!(walked(1));
                assert!(!walked(1));
                assert!(!walked(0));
            });
        }
        assert!(walked(MAX_WALKED * 2));
    }
}
