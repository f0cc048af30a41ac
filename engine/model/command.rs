//! The command table (`commands:` section): what programs do with their options and
//! operands, so that shell commands are judged by their effect and not by their spelling.
//!
//! The built-in table is `policies/commands.yaml`; a project extends it (a program entry
//! merges field by field with the one below, like the `engine` section).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `commands` section.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandsSection {
    /// Environment variables by name, or by a pattern where `*` stands for any characters
    /// and case is ignored (`"*_TOKEN"`; a name listed exactly wins over patterns, and the
    /// first pattern that matches over later ones). A `harmless` variable set
    /// before a command (`RUST_BACKTRACE=1 cargo test`) does not change what an allow rule
    /// decides; any other assignment must be spelled out by the rule's pattern. A line that
    /// expands a `secret` variable asks.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub env: IndexMap<String, EnvVar>,
    /// The tools whose rules judge the files a shell command reads and writes: a file
    /// operand is decided as a call of `read` (or `write`) with the file's absolute path in
    /// the `file_path` field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_tools: Option<FileTools>,
    /// Programs by command name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub programs: IndexMap<String, Program>,
    /// Folders whose programs are the ones the table names (`/usr/bin`): a command word
    /// that is a path into one of them (`/usr/bin/git`) is read as the program it names. Any
    /// other command word with a `/` (`script/test`, `./ls`, `/tmp/x/git`) runs that file,
    /// which may hold anything: it is a program the table does not know, and no rule allows
    /// it by the name it ends in. Written exactly, without a trailing `/`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub program_folders: Vec<String>,
}

/// How an environment variable set before a command is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EnvVar {
    /// Does not change what the command does to files, code or the network.
    Harmless,
    /// Changes what the command does (`LD_PRELOAD`, `GIT_DIR`, `PAGER`): only a pattern that
    /// names it allows it. The same as not listing the variable; useful to document it.
    Effective,
    /// Holds a secret (a token, a password): a command line that expands it (`echo
    /// $GITHUB_TOKEN`, `curl -H "Authorization: $API_KEY" …`) asks, whatever the rules.
    Secret,
}

/// The tools that judge a shell command's file operands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileTools {
    /// The tool whose rules judge files read (default `Read`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
    /// The tool whose rules judge files written or deleted (default `Write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<String>,
    /// The tool whose rules judge folders searched with everything below them (`grep -r`,
    /// `rg`), given as its `path` (default `Grep`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<String>,
    /// The tool whose rules judge folders listed with everything below them (`find DIR`,
    /// `ls -R DIR`, `tree DIR`: the names of the files, not their content), given as its
    /// `path` with the `pattern` `**` (default `Glob`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<String>,
    /// What the search tool leaves out of a folder it searches when its input names no
    /// `glob` (the agents' search tools are ripgrep with `--hidden`: `[ignored]`). A `glob`
    /// limits the search to the files it matches, hidden and ignored ones included, as
    /// ripgrep's `--glob` does; `no_ignore: true` in its input brings ignored files back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search_skips: Vec<SearchSkip>,
}

/// Entries below a folder that a search of it leaves out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchSkip {
    /// Files and folders whose name starts with `.` (`.env`, `.git`).
    Hidden,
    /// What the ignore files list (`.gitignore` in a git repository, `.git/info/exclude`,
    /// git's global excludes, `.ignore`, `.rgignore`), read as ripgrep reads them.
    Ignored,
    /// What git's own ignore rules list (`.gitignore` in a git repository,
    /// `.git/info/exclude`, git's global excludes) and the repository does not track: what
    /// `git grep --untracked` leaves out. A tracked file is searched even when ignored.
    GitIgnored,
    /// What the repository does not track: plain `git grep` searches its tracked files only
    /// (outside a repository, everything is counted).
    Untracked,
}

/// What one program (or subcommand) does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Program {
    /// One line for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The program only reads (files it is given, the workspace, its own state) unless an
    /// option or operand with an effect is used. Plan mode allows such commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// What running the program does in any case (`rm`: `write`; `curl`: `network`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<Effect>,
    /// Options by their canonical spelling (`-r`, `--output`). Short options may be combined
    /// (`-rf`); a long option's value may follow `=`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub options: IndexMap<String, OptionSpec>,
    /// What the operands (the words that are not options) are, by position; the last role
    /// repeats. A single role applies to every operand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operands: Option<Roles>,
    /// The role of the last operand when there are two or more (`cp a b dest`: `write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_operand: Option<Role>,
    /// Operands of the form `key=value` (`dd if=a of=b`) by key; `*` stands for every key
    /// not listed (make reads any `NAME=value`, `NAME:=value` as a line of its makefile).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub keyed_operands: IndexMap<String, Role>,
    /// How options are spelled (default `gnu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option_style: Option<OptionStyle>,
    /// Subcommands (`git log`): the first operand names one; options before it are the
    /// program's own (`git -C dir log`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub subcommands: IndexMap<String, Program>,
    /// The program's options may also be given after its subcommand, and mean the same
    /// there (npm reads `npm run test --prefix DIR` as `npm --prefix DIR run test`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub options_anywhere: bool,
    /// An operand `@FILE` stands for the arguments FILE holds (argparse's
    /// `fromfile_prefix_chars`, as pytest reads it; binutils): FILE is read, and the
    /// arguments in it, which the line does not show, count as code.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub response_files: bool,
    /// An operand `+CMD` is a command the program runs when it starts (less's `+!cmd` runs
    /// a shell command, `+|cmd` pipes to one): such an operand counts as code.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plus_commands: bool,
    /// Each short option of a cluster that takes a value takes the next word, the letters
    /// after it being options too, as tree reads them (`tree -Lo 1 FILE` is `-L 1 -o FILE`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub short_values_follow: bool,
    /// A short option's value attached after `=` is the value without it, as clap reads it
    /// (`rg -g=.env` is `rg -g .env`); GNU `getopt` keeps the `=`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub short_equals: bool,
    /// The program prints the content of the files a git repository tracks, beyond those
    /// its operands name (`git show`, `git diff`): each tracked file the operands' folders
    /// hold (all of them, given no file) is judged as read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prints_tracked: bool,
    /// The program reads (and may rewrite) the Rust modules its sources declare, wherever a
    /// `#[path]` attribute or a link points them (`cargo fmt`, `rustfmt`): the file each
    /// `#[path]` attribute of the workspace names is judged as its own, and a `.rs` file that
    /// is a link asks (`#[path = "../.env"] mod config;` printed the secret's line in
    /// rustfmt's error).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub follows_modules: bool,
    /// The program may write symbolic links anywhere in the work tree of the repository it
    /// works in (`git checkout REV -- x`, `git stash pop`: the links a revision holds; `npm
    /// ci`: a `file:` dependency's link): a path another command of the line reaches there may lead anywhere (`git checkout
    /// fixtures -- fx && cat fx/credentials` read `~/.aws/credentials` through a committed
    /// link), and asks. An unknown subcommand counts as one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub writes_links: bool,
    /// The program the words after `--` are given to, read with its entry in the table
    /// (`cargo test -- --logfile F` hands them to the test harness, `libtest`, which writes
    /// F). Without it they are operands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_dashes: Option<String>,
    /// Options end at the first operand, as awk reads them (POSIX `getopt`): a word like an
    /// option after it is an operand (`awk PROG -F .env` reads the files `-F` and `.env`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub options_first: bool,
    /// Every option the program has is listed, so one that is not (a misspelling, another
    /// version's, `zip -m` before it was listed) does what no one can tell: it counts as
    /// code, granted only by a pattern that names it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub options_complete: bool,
    /// The program matches `*`, `?` and `[…]` in its operands itself, as 7-Zip does, in
    /// folders below too with `-r` (`7z a x.7z '.en?'` reads `.env`): such an operand stands
    /// for files the line does not show, and asks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub globbed_operands: bool,
    /// The first word after the program may be short options without their `-` (tar's old
    /// style: `tar xzf a.tgz` is `tar -xzf a.tgz`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dashless_first: bool,
    /// The operand used when none is given where the last role is (`rg PATTERN` searches
    /// `.`), judged with that role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_operand: Option<String>,
    /// The default operand is not used when the command's input is given on the line (a
    /// pipe, `<`, a here-document): the program reads that instead (`… | rg PATTERN`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub default_unless_input: bool,
    /// What the program leaves out of a folder it searches (a `tree` operand) unless an
    /// option includes it (`rg`: `[hidden, ignored]`). Below a searched folder, every file
    /// not left out is judged as read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search_skips: Vec<SearchSkip>,
}

/// What using an option does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptionSpec {
    /// Other spellings of the same option (`--recursive`, `-R` for `-r`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// The option takes a value (`-o FILE`, `--output=FILE`), and what the value is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Role>,
    /// The value is given only attached to the option (`git diff -U5`, `--unified=5`,
    /// `git log --pretty=oneline`): alone, the option takes none and the next word is an
    /// operand (`git diff -U .env` reads `.env`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub value_attached: bool,
    /// With this option the operands have these roles instead of the program's (`sed -i`
    /// rewrites its files: `[sed_script, write]`; `git diff --no-index` compares folders
    /// with everything below them: `tree`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operands: Option<Roles>,
    /// The option takes a second value (`jq --rawfile NAME FILE`), and what it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second_value: Option<Role>,
    /// What using the option does (`find -delete`: `write`; `rg --pre`: `exec`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<Effect>,
    /// With this option the first operand role is not used (`grep -e PATTERN FILE…`:
    /// every operand is a file).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replaces_first_operand: bool,
    /// With this option, the operand used when none is given where the last role is
    /// (`grep -r PATTERN` searches `.`; without `-r` grep reads its input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_operand: Option<String>,
    /// What this option makes a folder search include that the program leaves out (`rg
    /// --hidden`: `[hidden]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search_includes: Vec<SearchSkip>,
    /// With this option, the program prints tracked files' content (`git log -p`; see the
    /// program's `prints_tracked`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prints_tracked: bool,
    /// The program expands `{a,b}` and `[a-z]` in the value itself, as curl does in `-T`
    /// (`curl -T '{.env,x}'` sends `.env`): the value is expanded as bash would.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub globbed: bool,
    /// With this option a listing goes on into the folders that links below its folders
    /// point to (`find -L`, `tree -l`, `ls -RL`): each such folder is judged as listed too
    /// (`find -L src` printed the names below `~/.ssh` through a link `src/keys`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub follows_links: bool,
    /// With this option the program may write links anywhere in its work tree (`git reset
    /// --hard`; see the program's `writes_links`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub writes_links: bool,
}

/// One role, or roles by position.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Roles {
    /// Every operand has this role.
    One(Role),
    /// Roles by position; the last repeats.
    Many(Vec<Role>),
}

impl Roles {
    /// The roles by position.
    pub fn as_slice(&self) -> &[Role] {
        match self {
            Roles::One(role) => std::slice::from_ref(role),
            Roles::Many(roles) => roles,
        }
    }
}

/// What a word given to a program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Text with no effect (a pattern, a count, a message).
    Text,
    /// A file or folder that is read (or listed).
    Read,
    /// A file or folder that is written, created, changed or deleted.
    Write,
    /// A folder the program works in (`git -C`, `make -C`): judged as read.
    Dir,
    /// A file that names the project the program works on, in its folder (`cargo
    /// --manifest-path`): judged as read, and its folder as one the program works in.
    Manifest,
    /// A file, or a folder with everything below it, that is read (`grep -r`, `rg`, `diff`,
    /// `cp -r`): judged as read, and as searched by the search tool.
    Tree,
    /// A folder listed with everything below it: the names of its files, not their content
    /// (`find DIR`, `ls -R DIR`, `tree DIR`, `du -a DIR`): judged as read, and as listed by
    /// the list tool (a name under `~/.ssh` is kept from a listing as from `Glob`).
    Listing,
    /// A command line or program the program runs.
    Exec,
    /// A `sed` script: `e`, `w`, `r` and the `e`/`w` flags of `s` are found in it.
    SedScript,
    /// An `awk` program: `system()`, pipes, `getline` and output redirection run or write.
    AwkProgram,
    /// A `jq` program: `import` and `include` read files by a path written inside it.
    JqProgram,
    /// What `man` is given: a page's name, or a file when it holds a `/` (`man ./x.1`),
    /// which man prints with every file its roff includes (`.so /path/.env`): judged as a
    /// file read, and a file (or a word only known when it runs) asks.
    ManPage,
    /// A `yq` program: jq's language (kislyuk's yq hands it to jq) or mikefarah's, whose
    /// `load` functions read files, `env`, `strenv` and `envsubst` the environment, and
    /// `eval` runs a program from the data. mikefarah's yq prints the file it names when
    /// there is one, and reads a `.yq` file as the program: the word is judged as a file
    /// read too.
    YqProgram,
    /// A revision or a path (`git show HEAD:.env`, `git diff a b`): the part after `REV:` is
    /// a file read, and so is a word that is not a revision.
    RevisionOrPath,
    /// A patch (a diff, or mail holding one; `-` is standard input): read, and each file it
    /// names is written, in the folder the program works in (`patch -i`, `git apply`).
    Patch,
    /// An archive the program unpacks (`unzip`): read, and each entry it holds is written in
    /// the folder the program works in (or its `-d` folder). An archive whose entries cannot
    /// be listed (not a zip, missing, written earlier in the line, holding a link) asks.
    Unpack,
    /// A network address.
    Network,
    /// A network address the program saves into a file named after the address's last
    /// path segment, in the folder it works in (wget's default): judged as a write of that
    /// file (`cd .claude && wget https://x/settings.json` writes `.claude/settings.json`).
    Download,
    /// An archive file written or read, which `host:file` names on another machine, reached
    /// by running `rsh` (`tar -f`): judged as written, and such a name reaches the network
    /// and runs a program.
    Archive,
    /// A glob that limits a search to the files it matches (`rg -g '*.rs'`), hidden and
    /// ignored ones included, as ripgrep's `--glob`.
    SearchGlob,
    /// A variable name: bash evaluates a subscript in it (`printf -v 'a[$(cmd)]'`), so one
    /// with `[` is code.
    Variable,
    /// An arithmetic expression (`let`): bash evaluates it, and subscripts in it run code.
    Arithmetic,
    /// What `date` is given: `+FORMAT` is the format it prints with; any other word sets the
    /// machine's clock (`date 010100002030`), which is an effect (`exec`).
    Clock,
    /// Text that may name files the program reads and sends with a `@` (curl's `-d @FILE`,
    /// `--data-urlencode name@FILE`, `-F name=@FILE` or `name=<FILE`, gh's `-F name=@FILE`):
    /// each such file is judged as read, and a value only known when it runs asks.
    Data,
    /// A target the program may create or rewrite as a file (`make`'s built-in rules copy
    /// `x.sh` to `x`): judged as written when it is spelled like a path (`/`, `.`, `~`, a
    /// glob) or names a file that is there; a bare name (`all`, `test`) is not a file.
    Target,
    /// A suffix for the backup copy the program keeps of each file it writes (`sed -i.bak`,
    /// `mv -S .old`): each written file's name with the suffix appended, and, for a suffix
    /// with `*` (GNU sed's `-i 'old/*'`), the suffix with each `*` the file's name, is
    /// judged as written. A suffix only known when it runs writes where no one can tell.
    Suffix,
}

/// An effect beyond reading.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Writes, creates or deletes files.
    Write,
    /// Runs code or commands.
    Exec,
    /// Reaches the network.
    Network,
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Effect::Write => "writes files",
            Effect::Exec => "runs code",
            Effect::Network => "reaches the network",
        })
    }
}

/// How a program spells its options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OptionStyle {
    /// `-a -b` = `-ab`, `--long`, `--long=value`, `--` ends options.
    #[default]
    Gnu,
    /// Every option is a whole word starting with `-` (`find -name x -delete`); options and
    /// operands may mix.
    Words,
    /// As npm's option parser reads them: as `gnu`, and a long option's name may follow one
    /// dash or more (`-script-shell=x` is `--script-shell=x`).
    Npm,
}

impl OptionStyle {
    /// Whether options are spelled as `gnu` says (`npm` too).
    pub fn gnu_like(self) -> bool {
        matches!(self, Self::Gnu | Self::Npm)
    }
}
