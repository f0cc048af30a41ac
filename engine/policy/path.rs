//! The `path` matcher: file-path arguments, normalised, then matched by glob.
//!
//! A path argument is normalised before matching (SPEC §7.1), so that `./a/../.env` cannot
//! dodge a `**/.env` rule:
//! - repeated slashes are folded and `.` components dropped;
//! - a relative path is taken against the workspace root of the [`MatchContext`];
//! - `..` is resolved lexically (it removes the previous component; at `/` it stays at `/`);
//! - the path is then matched in its absolute form and, when it lies inside the workspace,
//!   in its workspace-relative form too. A path whose `..` climbs out of the workspace has
//!   only its absolute form, so a relative pattern such as `src/**` cannot match it.
//!
//! Globs are [`globset`] globs with `literal_separator`: `*` and `?` do not cross `/`, `**`
//! spans directories (`**/.env` matches `.env`, `sub/.env` and `/abs/workspace/.env`;
//! `dir/**` matches what is under `dir`, not `dir` itself). Leading `./` and repeated slashes
//! in patterns are folded like paths. Matching is case-sensitive unless the context says the
//! file system is not ([`PathCase`]; by default insensitive on macOS and Windows, where
//! `.ENV` opens `.env`). `~` is not expanded: tools receive it literally.
//!
//! # Symlinks are not resolved
//! Normalisation is purely lexical: nothing on disk is read. This keeps matching pure,
//! deterministic and free of time-of-check/time-of-use races (a check that followed a link
//! could be raced by replacing the link before the tool opens the file), and lets a policy be
//! evaluated for paths that do not exist yet. What it means for rule authors: a rule
//! matches the *name* a tool is given, not the file it reaches. A symlink `notes -> .env`
//! inside the workspace is read through `notes`, which `**/.env` does not match, and
//! `link/../x` is judged as `x` although the kernel would resolve `link` first. Deny rules on
//! paths are a guard against mistakes, not a sandbox: confine a tool that must never reach a
//! file with operating-system permissions or a sandbox.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::glob::GlobList;

use super::glob::{GlobSyntaxError, parse_globs};

/// A path argument after normalisation: its absolute form, and its workspace-relative form
/// (a suffix of the absolute one, so both live in one buffer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalisedPath {
    absolute: String,
    /// Where the relative form starts in `absolute`.
    relative_at: Option<usize>,
}

impl NormalisedPath {
    /// The absolute form (relative only if the workspace root itself is relative).
    pub fn absolute(&self) -> &str {
        &self.absolute
    }

    /// The workspace-relative form, when the path lies strictly inside the workspace.
    pub fn relative(&self) -> Option<&str> {
        self.relative_at.and_then(|at| self.absolute.get(at..))
    }
}

/// Folds `.`, `..` and repeated slashes of a `/`-separated path, lexically.
pub(crate) fn lexical(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut folded = String::with_capacity(path.len() + 1);
    push_components(&mut folded, path, absolute);
    finish_components(folded, absolute)
}

/// Appends the components of `path` to `out`, each as `/component`, folding `.`, `..` and
/// empty components against what `out` already holds. One buffer, no intermediate list:
/// every permission check of a path argument goes through here.
fn push_components(out: &mut String, path: &str, absolute: bool) {
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => match out.rfind('/') {
                Some(last) if &out[last + 1..] != ".." => out.truncate(last),
                // `/..` is `/`; a relative path keeps leading `..`.
                _ if absolute => {}
                _ => out.push_str("/.."),
            },
            other => {
                out.push('/');
                out.push_str(other);
            }
        }
    }
}

/// The path [`push_components`] built: `/` when an absolute path folded to nothing, and
/// without the leading `/` of the first component when the path is relative.
fn finish_components(mut folded: String, absolute: bool) -> String {
    if absolute {
        if folded.is_empty() {
            folded.push('/');
        }
    } else if !folded.is_empty() {
        folded.remove(0);
    }
    folded
}

/// Normalises a path argument against the context's workspace root. `None` for an empty
/// path, which names no file.
pub fn normalise(raw: &str, ctx: &MatchContext) -> Option<NormalisedPath> {
    if raw.is_empty() {
        return None;
    }
    let root = ctx.workspace_root();
    // `raw` when it is absolute, else `root/raw`, folded in one buffer.
    let mut folded = String::with_capacity(root.len() + raw.len() + 2);
    let absolute = if raw.starts_with('/') {
        push_components(&mut folded, raw, true);
        true
    } else {
        let absolute = root.starts_with('/');
        // The root is folded already (the `MatchContext` invariant), and most relative paths
        // are too (`src/main.rs`): those are appended as they are, without splitting.
        match root {
            "/" | "." => {}
            _ if absolute => folded.push_str(root),
            _ => {
                folded.push('/');
                folded.push_str(root);
            }
        }
        if is_folded_relative(raw) {
            folded.push('/');
            folded.push_str(raw);
        } else {
            push_components(&mut folded, raw, absolute);
        }
        absolute
    };
    let absolute = finish_components(folded, absolute);
    let relative_at = if root == "/" {
        absolute.strip_prefix('/')
    } else {
        absolute
            .strip_prefix(root)
            .and_then(|rest| rest.strip_prefix('/'))
    }
    .filter(|rest| !rest.is_empty())
    .map(|rest| absolute.len() - rest.len());
    Some(NormalisedPath {
        absolute,
        relative_at,
    })
}

/// Whether `path` is relative and has nothing to fold: no empty, `.` or `..` component.
fn is_folded_relative(path: &str) -> bool {
    !path.is_empty()
        && path
            .as_bytes()
            .split(|&byte| byte == b'/')
            .all(|component| !matches!(component, b"" | b"." | b".."))
}

/// Folds a pattern like a path (leading `./`, repeated slashes), keeping its glob syntax.
fn fold_pattern(pattern: &str) -> String {
    let mut folded = pattern.to_owned();
    while folded.contains("//") {
        folded = folded.replace("//", "/");
    }
    while let Some(rest) = folded.strip_prefix("./") {
        folded = rest.to_owned();
    }
    folded
}

/// Whether path comparison ignores case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathCase {
    /// `.ENV` and `.env` are different files.
    Sensitive,
    /// `.ENV` and `.env` are the same file (default file systems of macOS and Windows).
    Insensitive,
}

impl PathCase {
    /// The usual behaviour of the platform this was built for.
    pub fn native() -> Self {
        if cfg!(any(target_os = "macos", target_os = "windows")) {
            Self::Insensitive
        } else {
            Self::Sensitive
        }
    }
}

/// What matching needs to know about the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchContext {
    // INVARIANT: lexically normalised (no `.`, `..` after the first component, no trailing
    // or doubled slash).
    workspace_root: String,
    path_case: PathCase,
}

impl MatchContext {
    /// A context for a workspace root, which should be absolute (a relative root is used as
    /// given, and then so are the "absolute" forms of paths). Path case follows
    /// [`PathCase::native`].
    pub fn new(workspace_root: impl AsRef<Path>) -> Self {
        let root = workspace_root.as_ref().to_string_lossy();
        let mut normalised = lexical(&root);
        if normalised.is_empty() {
            normalised.push('.');
        }
        Self {
            workspace_root: normalised,
            path_case: PathCase::native(),
        }
    }

    /// The same context with another path-case behaviour.
    #[must_use]
    pub fn with_path_case(mut self, path_case: PathCase) -> Self {
        self.path_case = path_case;
        self
    }

    /// The normalised workspace root.
    pub fn workspace_root(&self) -> &str {
        &self.workspace_root
    }

    /// The home folder `~` and `$HOME` stand for.
    pub fn home_dir(&self) -> Option<String> {
        std::env::var("HOME")
            .ok()
            .filter(|home| home.starts_with('/'))
    }

    /// How paths compare.
    pub fn path_case(&self) -> PathCase {
        self.path_case
    }
}

/// The compiled `path` matcher of one argument.
///
/// Compiling validates every pattern (syntax errors are reported with their offsets); the
/// glob automaton for a path case is built the first time a context with that case asks,
/// since building automata is most of the cost of a rule and most rules of a large policy
/// set are never consulted by a given process. [`PathMatcher::build`] builds it up front.
#[derive(Debug, Clone)]
pub struct PathMatcher {
    folded: Vec<String>,
    sensitive: OnceLock<Result<FormSets, String>>,
    insensitive: OnceLock<Result<FormSets, String>>,
}

/// The patterns of one case variant as one set, tried against both forms of a path.
///
/// A pattern starting with a literal other than `/` cannot match the absolute form (which
/// starts with `/`), and one starting with `/` cannot match the relative form (which never
/// does): a form no pattern could match is not tried. One set rather than one per form, so a
/// pattern starting with a wildcard (which belongs to both) is compiled once.
#[derive(Debug, Clone)]
struct FormSets {
    set: GlobList,
    /// Some pattern may match the relative form: one not starting with `/`.
    relative: bool,
    /// Some pattern may match the absolute form: one starting with `/` or with a wildcard,
    /// class, alternation or escape (which may produce the `/`).
    absolute: bool,
    /// Per pattern, a run of characters every path it matches contains (see
    /// [`required_literal`]); `None` when some pattern has none, or for case-insensitive
    /// sets. A form containing none of them matches no pattern, so the automaton is not run:
    /// most paths a rule sees match none of its patterns.
    literals: Option<Box<[memchr::memmem::Finder<'static>]>>,
}

impl FormSets {
    fn build(folded: &[String], case_insensitive: bool) -> Result<Self, String> {
        let literals = if case_insensitive {
            None
        } else {
            folded
                .iter()
                .map(|pattern| {
                    required_literal(pattern)
                        .map(|literal| memchr::memmem::Finder::new(literal).into_owned())
                })
                .collect::<Option<Box<[_]>>>()
        };
        Ok(Self {
            set: GlobList::build(folded, true, case_insensitive)?,
            relative: folded.iter().any(|p| !p.starts_with('/')),
            absolute: folded
                .iter()
                .any(|p| p.starts_with(['/', '*', '?', '[', '{', '\\'])),
            literals,
        })
    }

    /// Whether some pattern may match `form`: false only when `form` lacks the required
    /// literal of every pattern.
    fn may_match(&self, form: &str) -> bool {
        self.literals.as_ref().is_none_or(|literals| {
            literals
                .iter()
                .any(|literal| literal.find(form.as_bytes()).is_some())
        })
    }

    /// The first pattern (by index in the rule's list) the path matches in either form.
    fn first_match(&self, path: &NormalisedPath) -> Option<usize> {
        // The relative form is a suffix of the absolute one: a path whose absolute form lacks
        // every required literal matches in neither form (the usual case, one search).
        if !self.may_match(&path.absolute) {
            return None;
        }
        let relative = path
            .relative()
            .filter(|form| self.relative && self.may_match(form))
            .and_then(|form| self.set.first_match(form));
        let absolute = if self.absolute {
            self.set.first_match(&path.absolute)
        } else {
            None
        };
        match (relative, absolute) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (found, None) | (None, found) => found,
        }
    }
}

/// The longest run of literal characters of a glob: characters outside wildcards (`*`,
/// `?`), classes (`[…]`), alternations (`{…}`) and escapes, not crossing a `/` (a `**/`
/// may match nothing, so the separators around it are not required). A path the glob
/// matches contains the run. `None` when there is no such run, or when the pattern cannot
/// be scanned (an unterminated class or alternation, which the glob parser refuses anyway,
/// or a class inside an alternation).
fn required_literal(pattern: &str) -> Option<&str> {
    let bytes = pattern.as_bytes();
    let mut best: &str = "";
    let mut start = 0;
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        let next = match byte {
            b'*' | b'?' | b'/' => i + 1,
            // The escaped character (possibly several bytes long) is skipped too.
            b'\\' => {
                let escaped = pattern.get(i + 1..)?.chars().next()?;
                i + 1 + escaped.len_utf8()
            }
            b'[' => {
                // `]` right after `[`, `[!` or `[^` is a member, not the end.
                let mut j = i + 1;
                if matches!(bytes.get(j), Some(b'!' | b'^')) {
                    j += 1;
                }
                if bytes.get(j) == Some(&b']') {
                    j += 1;
                }
                j + bytes.get(j..)?.iter().position(|&b| b == b']')? + 1
            }
            b'{' => {
                let mut depth = 0usize;
                let mut j = i;
                loop {
                    match bytes.get(j)? {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break j + 1;
                            }
                        }
                        b'\\' => j += 1,
                        // A class inside an alternation may hold `}` or `,`: too rare to
                        // scan, so such a pattern gets no prefilter.
                        b'[' => return None,
                        _ => {}
                    }
                    j += 1;
                }
            }
            _ => {
                i += 1;
                continue;
            }
        };
        let run = pattern.get(start..i)?;
        if run.len() > best.len() {
            best = run;
        }
        i = next;
        start = next;
    }
    let run = pattern.get(start..)?;
    if run.len() > best.len() {
        best = run;
    }
    (!best.is_empty()).then_some(best)
}

/// What a [`PathMatcher`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathVerdict {
    /// The first pattern (by index) that matched, if any.
    pub pattern: Option<usize>,
    /// The normalised path (`None` for an empty path), shared with the call's cache.
    pub path: Option<Arc<NormalisedPath>>,
}

impl PathMatcher {
    /// Compiles the patterns (both case variants, so the context can choose).
    ///
    /// # Errors
    /// Every pattern that does not compile, with its index and best offset.
    pub fn compile(patterns: &[String]) -> Result<Self, Vec<(usize, GlobSyntaxError)>> {
        // Validate as written, so offsets point into what the author wrote; folding only
        // removes `./` and doubled slashes and cannot make a valid glob invalid.
        parse_globs(patterns, true, false)?;
        Ok(Self {
            folded: patterns.iter().map(|p| fold_pattern(p)).collect(),
            sensitive: OnceLock::new(),
            insensitive: OnceLock::new(),
        })
    }

    /// Builds the automaton for `case` now (it is otherwise built on first use).
    ///
    /// # Errors
    /// Why it cannot be built: the patterns parse, but the automaton exceeds a size limit.
    pub fn build(&self, case: PathCase) -> Result<(), String> {
        self.sets(case).map(|_| ())
    }

    /// Drops the built sets; they are built again on first use.
    pub fn release(&mut self) {
        self.sensitive.take();
        self.insensitive.take();
    }

    /// The sets for `case`, built on first use.
    fn sets(&self, case: PathCase) -> Result<&FormSets, String> {
        let cell = match case {
            PathCase::Sensitive => &self.sensitive,
            PathCase::Insensitive => &self.insensitive,
        };
        cell.get_or_init(|| FormSets::build(&self.folded, case == PathCase::Insensitive))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Normalises `raw` and matches it.
    ///
    /// ```
    /// use toolgate::policy::MatchContext;
    /// use toolgate::policy::path::PathMatcher;
    ///
    /// let ctx = MatchContext::new("/work/app");
    /// let m = PathMatcher::compile(&["**/.env".into()]).unwrap();
    /// assert!(m.matches("./a/../.env", &ctx).pattern.is_some());
    /// assert!(m.matches("/work/app/.env", &ctx).pattern.is_some());
    /// assert!(m.matches(".envrc", &ctx).pattern.is_none());
    /// ```
    pub fn matches(&self, raw: &str, ctx: &MatchContext) -> PathVerdict {
        let path = normalise(raw, ctx).map(Arc::new);
        PathVerdict {
            pattern: path
                .as_deref()
                .and_then(|p| self.matches_normalised(p, ctx)),
            path,
        }
    }

    /// The first pattern (by index) an already normalised path matches, in its relative or
    /// its absolute form; `None` also when the automaton cannot be built (see
    /// [`PathMatcher::build`], which callers that must fail closed ask first).
    pub fn matches_normalised(&self, path: &NormalisedPath, ctx: &MatchContext) -> Option<usize> {
        self.sets(ctx.path_case()).ok()?.first_match(path)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::policy::glob::build_glob_set;
    use globset::GlobBuilder;

    #[test]
    fn folds_lexically() {
        let table = [
            ("/a/b/../c", "/a/c"),
            ("/a//b/./c/", "/a/b/c"),
            ("/..", "/"),
            ("/../../x", "/x"),
            ("a/../../b", "../b"),
            ("./x", "x"),
            ("", ""),
        ];
        for (input, expected) in table {
            assert_eq!(lexical(input), expected, "path {input}");
        }
    }

    /// The folding rules stated on components: a stack where `..` pops a name, is dropped
    /// at the root of an absolute path, and is kept at the start of a relative one.
    fn lexical_model(path: &str) -> String {
        let absolute = path.starts_with('/');
        let mut stack: Vec<&str> = Vec::new();
        for component in path.split('/') {
            match component {
                "" | "." => {}
                ".." if stack.last().is_some_and(|last| *last != "..") => {
                    stack.pop();
                }
                ".." if absolute => {}
                other => stack.push(other),
            }
        }
        let joined = stack.join("/");
        if absolute {
            format!("/{joined}")
        } else {
            joined
        }
    }

    #[test]
    fn finds_the_literal_a_glob_requires() {
        let table: &[(&str, Option<&str>)] = &[
            ("**/.env", Some(".env")),
            ("**/secrets/**", Some("secrets")),
            ("src/**/*.rs", Some("src")),
            ("lib/**/*.toml", Some(".toml")),
            ("docs/**/*.md", Some("docs")),
            ("*", None),
            ("**", None),
            ("[abc]x", Some("x")),
            ("[]abc]", None),
            ("[!]x]yz", Some("yz")),
            ("{alpha,beta}.txt", Some(".txt")),
            ("{a,{bb,cc}}", None),
            ("{x,[}]}yz", None),
            ("[{]yz", Some("yz")),
            ("\\*star", Some("star")),
            ("é\\éxy", Some("é")),
            ("unclosed[ab", None),
        ];
        for (pattern, expected) in table {
            assert_eq!(required_literal(pattern), *expected, "pattern {pattern}");
        }
    }

    /// Glob pieces, each with texts it may match (so that generated paths often match).
    const PIECES: &[(&str, &[&str])] = &[
        ("a", &["a"]),
        ("b", &["b"]),
        ("é", &["é"]),
        (".env", &[".env"]),
        ("secrets", &["secrets"]),
        ("*", &["", "a", "xé"]),
        ("**", &["", "a/b", "c"]),
        ("?", &["q", "é"]),
        ("/", &["/"]),
        ("[ab]", &["a", "b"]),
        ("[!a]", &["b", "-"]),
        ("[]a]", &["]", "a"]),
        ("{a,b}", &["a", "b"]),
        ("{a,}", &["a", ""]),
        ("{x,[}]}", &["x", "}"]),
        ("{[ab],c}", &["a", "c"]),
        ("[{]", &["{"]),
        ("[,}]", &[",", "}"]),
        ("\\*", &["*"]),
        ("\\a", &["a"]),
        ("-", &["-"]),
    ];

    proptest::proptest! {
        /// The prefilter never hides a match: a path a glob matches contains the glob's
        /// required literal. Paths are drawn from what each piece of the pattern may match
        /// (most match), with some pieces replaced by an arbitrary one (most do not).
        #[test]
        fn a_matching_path_contains_the_required_literal(
            pieces in proptest::collection::vec(
                (0..PIECES.len(), 0usize..3, proptest::option::weighted(0.1, 0..PIECES.len())),
                1..7,
            ),
        ) {
            let pattern: String = pieces.iter().map(|&(piece, _, _)| PIECES[piece].0).collect();
            let path: String = pieces
                .iter()
                .map(|&(piece, choice, other)| {
                    let texts = PIECES[other.unwrap_or(piece)].1;
                    texts[choice % texts.len()]
                })
                .collect();
            let Ok(glob) = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
            else {
                return Ok(());
            };
            if glob.compile_matcher().is_match(&path)
                && let Some(literal) = required_literal(&pattern)
            {
                proptest::prop_assert!(
                    path.contains(literal),
                    "{pattern} matches {path} without {literal}"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn folds_like_the_component_model(
            absolute in proptest::bool::ANY,
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["", ".", "..", "a", "b", "..a", ".b", "c d"]),
                0..10,
            ),
            relative in proptest::collection::vec(
                proptest::sample::select(vec!["", ".", "..", "x", "..."]),
                0..6,
            ),
        ) {
            let path = format!("{}{}", if absolute { "/" } else { "" }, parts.join("/"));
            proptest::prop_assert_eq!(lexical(&path), lexical_model(&path));
            // `normalise` folds `root/raw` without building that string first.
            let raw = relative.join("/");
            let ctx = MatchContext::new(&path);
            let root = ctx.workspace_root().to_owned();
            if let Some(normalised) = normalise(&raw, &ctx) {
                let expected = if raw.starts_with('/') {
                    lexical_model(&raw)
                } else {
                    lexical_model(&format!("{root}/{raw}"))
                };
                proptest::prop_assert_eq!(normalised.absolute(), expected);
            }
        }
    }

    /// [`normalise`] as it was before its shortcuts: every component of the root and of the
    /// path folded one by one.
    fn normalise_by_components(raw: &str, ctx: &MatchContext) -> Option<NormalisedPath> {
        if raw.is_empty() {
            return None;
        }
        let root = ctx.workspace_root();
        let mut folded = String::new();
        let absolute = if raw.starts_with('/') {
            push_components(&mut folded, raw, true);
            true
        } else {
            let absolute = root.starts_with('/');
            push_components(&mut folded, root, absolute);
            push_components(&mut folded, raw, absolute);
            absolute
        };
        let absolute = finish_components(folded, absolute);
        let relative_at = if root == "/" {
            absolute.strip_prefix('/')
        } else {
            absolute
                .strip_prefix(root)
                .and_then(|rest| rest.strip_prefix('/'))
        }
        .filter(|rest| !rest.is_empty())
        .map(|rest| absolute.len() - rest.len());
        Some(NormalisedPath {
            absolute,
            relative_at,
        })
    }

    proptest::proptest! {
        #[test]
        fn normalising_takes_folded_parts_as_they_are(
            raw in "[ab./]{0,12}",
            root in proptest::sample::select(vec!["/", "/ws/app", "/ws/../x", ".", "", "rel/dir", "../up", "a/../..", "//ws//"]),
        ) {
            let ctx = MatchContext::new(root);
            proptest::prop_assert_eq!(normalise(&raw, &ctx), normalise_by_components(&raw, &ctx));
        }
    }

    #[test]
    fn normalises_against_the_workspace() {
        let ctx = MatchContext::new("/ws/app/");
        type Expected<'a> = Option<(&'a str, Option<&'a str>)>;
        let table: &[(&str, Expected<'_>)] = &[
            (".env", Some(("/ws/app/.env", Some(".env")))),
            ("./.env", Some(("/ws/app/.env", Some(".env")))),
            (".//.env", Some(("/ws/app/.env", Some(".env")))),
            ("a/../.env", Some(("/ws/app/.env", Some(".env")))),
            (
                "/ws/app/sub/.env",
                Some(("/ws/app/sub/.env", Some("sub/.env"))),
            ),
            ("../other/.env", Some(("/ws/other/.env", None))),
            ("/ws/application/x", Some(("/ws/application/x", None))),
            (".", Some(("/ws/app", None))),
            ("/etc/passwd", Some(("/etc/passwd", None))),
            ("", None),
        ];
        for (raw, expected) in table {
            let actual = normalise(raw, &ctx);
            let actual = actual.as_ref().map(|p| (p.absolute(), p.relative()));
            assert_eq!(actual, *expected, "path {raw:?}");
        }
        let root = MatchContext::new("/");
        assert_eq!(
            normalise("x/y", &root)
                .as_ref()
                .and_then(NormalisedPath::relative),
            Some("x/y")
        );
    }

    #[test]
    fn matches_with_literal_separators() {
        let ctx = MatchContext::new("/ws").with_path_case(PathCase::Sensitive);
        let m = PathMatcher::compile(&[
            "**/.env".into(),
            "**/secrets/**".into(),
            "./docs/*.md".into(),
        ])
        .unwrap();
        let table: &[(&str, Option<usize>)] = &[
            (".env", Some(0)),
            ("./.env", Some(0)),
            ("a/../.env", Some(0)),
            (".//.env", Some(0)),
            ("/ws/.env", Some(0)),
            ("sub/.env", Some(0)),
            ("/elsewhere/.env", Some(0)),
            ("foo/./secrets/x", Some(1)),
            ("secrets/a/b", Some(1)),
            ("docs/a.md", Some(2)),
            ("docs/sub/a.md", None),
            (".envrc", None),
            ("docs/env.txt", None),
            (".ENV", None),
            ("secrets", None),
        ];
        for (raw, expected) in table {
            assert_eq!(m.matches(raw, &ctx).pattern, *expected, "path {raw:?}");
        }
        let insensitive = MatchContext::new("/ws").with_path_case(PathCase::Insensitive);
        assert_eq!(m.matches(".ENV", &insensitive).pattern, Some(0));
    }

    #[test]
    fn both_cases_match_like_one_fresh_set_over_both_forms() {
        let patterns: Vec<String> = [
            "/abs/**",
            "**/x",
            "*/x",
            "{/ws,src}/**",
            "?ws/**",
            "[/]ws/x",
            "\\/ws/x",
            "src/**",
            "x",
            "*",
            "**",
            "/ws",
            "./src/*.rs",
            "//ws//x",
        ]
        .map(String::from)
        .to_vec();
        let matcher = PathMatcher::compile(&patterns).unwrap();
        let folded: Vec<String> = patterns.iter().map(|p| fold_pattern(p)).collect();
        for case in [PathCase::Sensitive, PathCase::Insensitive] {
            let reference = build_glob_set(&folded, true, case == PathCase::Insensitive).unwrap();
            let ctx = MatchContext::new("/ws").with_path_case(case);
            for raw in [
                "x",
                "src/x",
                "src/a.rs",
                "/ws/x",
                "/abs/x",
                "/x",
                "a/x",
                "/ws",
                "ws/x",
                ".",
                "../x",
                "/elsewhere/src/x",
                "SRC/A.RS",
            ] {
                let path = normalise(raw, &ctx).unwrap();
                let expected = path
                    .relative()
                    .into_iter()
                    .chain(std::iter::once(path.absolute()))
                    .filter_map(|form| reference.matches(form).into_iter().min())
                    .min();
                assert_eq!(
                    matcher.matches_normalised(&path, &ctx),
                    expected,
                    "{raw:?} {case:?}"
                );
            }
        }
    }

    proptest::proptest! {
        /// With the literal prefilter on (case-sensitive, every pattern has a literal), the
        /// matcher finds what a fresh set finds over both forms, whatever the root.
        #[test]
        fn prefiltered_matching_is_matching_both_forms(
            raw in "(/?(ws|src|\\.env|secrets|a\\.rs|\\.\\.|x)){1,5}",
            root in proptest::sample::select(vec!["/", "/ws", "/ws/src", "ws", "."]),
        ) {
            let patterns: Vec<String> =
                ["**/.env", "**/secrets/**", "src/*.rs", "/ws/s*/x", "ws/x"].map(String::from).to_vec();
            let matcher = PathMatcher::compile(&patterns).unwrap();
            let reference = build_glob_set(&patterns, true, false).unwrap();
            let ctx = MatchContext::new(root).with_path_case(PathCase::Sensitive);
            if let Some(path) = normalise(&raw, &ctx) {
                let expected = path
                    .relative()
                    .into_iter()
                    .chain(std::iter::once(path.absolute()))
                    .filter_map(|form| reference.matches(form).into_iter().min())
                    .min();
                proptest::prop_assert_eq!(matcher.matches_normalised(&path, &ctx), expected);
            }
        }
    }

    #[test]
    fn reports_glob_errors_with_offsets() {
        let errors =
            PathMatcher::compile(&["ok/**".into(), "a/[bc".into(), "x{a,b".into()]).unwrap_err();
        let summary: Vec<(usize, Option<usize>)> =
            errors.iter().map(|(i, e)| (*i, e.offset)).collect();
        assert_eq!(summary, [(1, Some(2)), (2, Some(1))]);
    }
}
