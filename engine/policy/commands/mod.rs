//! The command table compiled for matching, and what it says one simple command does.
//!
//! [`CommandTable`] is built from the `commands:` section (built-in `policies/commands.yaml`
//! plus the project's additions). [`CommandTable::analyse`] reads one [`SimpleCommand`]
//! with it into [`CommandFacts`]: the program and subcommand, every option in its canonical
//! spelling (short clusters split, aliases resolved, values attached), the operands with
//! their roles, and the effects beyond reading (writes, code, network) with the word that
//! causes each. The `shell` matcher uses the facts to match options by meaning, to refuse an
//! allow whose `*` would grant an effect, and the rule set to judge file operands.
//!
//! A program the table does not know has no facts beyond its words: its operands are not
//! judged as files, and only its spelling decides.

mod scripts;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::model::command::{
    CommandsSection, Effect, EnvVar, OptionSpec, OptionStyle, Program, Role, SearchSkip,
};

use super::shell::{
    Expansion, InputFrom, RedirectEffect, Script, ShellParseError, SimpleCommand, Word, WordKind,
    parse_script,
};

/// The compiled command table.
#[derive(Debug, Default)]
pub struct CommandTable {
    /// Identifies this table in caches that outlive one call (patterns analysed with it).
    id: u64,
    programs: HashMap<String, CompiledProgram>,
    env: HashMap<String, EnvVar>,
    /// Variables given by a pattern (`*_TOKEN`), upper-cased.
    env_patterns: Vec<(String, EnvVar)>,
    /// The tool that judges files read.
    pub read_tool: Option<String>,
    /// The tool that judges files written.
    pub write_tool: Option<String>,
    /// The tool that judges folders searched with everything below them.
    pub search_tool: Option<String>,
    /// The tool that judges folders listed with everything below them.
    pub list_tool: Option<String>,
    /// What the search tool leaves out of a folder it searches (with no `glob`).
    pub search_skips: Vec<SearchSkip>,
    /// The folders whose programs are the ones the table names.
    program_folders: Vec<String>,
}

impl PartialEq for CommandTable {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

#[derive(Debug, Default)]
struct CompiledProgram {
    read_only: bool,
    effects: Vec<Effect>,
    /// Every spelling (canonical and aliases) → the option.
    options: HashMap<String, Arc<OptionInfo>>,
    roles: Vec<Role>,
    last: Option<Role>,
    keyed: HashMap<String, Role>,
    style: OptionStyle,
    subcommands: HashMap<String, CompiledProgram>,
    /// Some option writes, runs code, reaches the network or changes which files are read
    /// (`grep -r`): a word that expands at run time to an option could be one of them.
    risky_options: bool,
    /// Its only risky options make a listing recursive: a glob word is judged by the names
    /// it expands to rather than asked about.
    globs_checked: bool,
    default_operand: Option<String>,
    default_unless_input: bool,
    search_skips: Vec<SearchSkip>,
    dashless_first: bool,
    options_first: bool,
    options_complete: bool,
    globbed_operands: bool,
    /// Some short option has several letters (zip's `-TT`, `-lf`).
    long_shorts: bool,
    /// Some option takes a variable's name or an arithmetic expression (`test -v`, `printf
    /// -v`, `wait -p`), which bash evaluates, subscripts included.
    variable_options: bool,
    short_equals: bool,
    short_values_follow: bool,
    response_files: bool,
    plus_commands: bool,
    after_dashes: Option<String>,
    prints_tracked: bool,
    follows_modules: bool,
    writes_links: bool,
}

/// One option of a program, as the table describes it.
#[derive(Debug, PartialEq, Eq)]
pub struct OptionInfo {
    /// Its canonical spelling.
    pub canonical: String,
    /// What its value is, when it takes one.
    pub value: Option<Role>,
    /// Whether its value is only given attached (`-U5`, `--unified=5`).
    value_attached: bool,
    /// The operands' roles when the option is used, in place of the program's.
    operands: Option<Vec<Role>>,
    /// What its second value is, when it takes two.
    pub second_value: Option<Role>,
    /// What using it does.
    pub effects: Vec<Effect>,
    replaces_first_operand: bool,
    default_operand: Option<String>,
    search_includes: Vec<SearchSkip>,
    /// Using it prints the content of the files the repository tracks (`git log -p`).
    pub prints_tracked: bool,
    /// The program expands braces and brackets in its value itself (curl's `-T`).
    globbed: bool,
    /// A listing with it goes into the folders links below point to (`find -L`).
    follows_links: bool,
    /// With it the program may write links anywhere in its work tree (`git reset --hard`).
    writes_links: bool,
}

/// `value` as npm's option parser reads it, when that is a long option written with one
/// dash or three or more (`-script-shell=x`, `---prefix=x` are `--script-shell=x`,
/// `--prefix=x`); `None` for any other word, and for a cluster of the program's one-letter
/// options (`-gs`).
fn npm_spelling(program: &CompiledProgram, value: &str) -> Option<String> {
    let dashes = value.len() - value.trim_start_matches('-').len();
    let name = &value[dashes..];
    let key = name.split('=').next().unwrap_or(name);
    let letters = key.chars().count() <= 1
        || key
            .chars()
            .all(|c| program.options.contains_key(&format!("-{c}")));
    match dashes {
        1 if !letters => Some(format!("--{name}")),
        3.. if !key.is_empty() => Some(format!("--{name}")),
        _ => None,
    }
}

/// make's archive member target `ARCHIVE(MEMBER …)`: the archive and the members.
fn archive_members(target: &str) -> Option<(&str, &str)> {
    let (archive, members) = target.strip_suffix(')')?.split_once('(')?;
    (!archive.is_empty()).then_some((archive, members))
}

/// Whether `text` matches `pattern`, where `*` stands for any characters.
fn wildcard(pattern: &str, text: &str) -> bool {
    let mut pieces = pattern.split('*');
    let first = pieces.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else {
        // No `*`: the whole text must be the pattern.
        return rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl CompiledProgram {
    /// `inherited`: the options of a program above whose options may follow its subcommand,
    /// and how it spells them.
    fn compile(
        program: &Program,
        inherited: (&HashMap<String, Arc<OptionInfo>>, Option<OptionStyle>),
    ) -> Self {
        let (inherited, inherited_style) = inherited;
        let mut options = inherited.clone();
        for (canonical, spec) in &program.options {
            let info = Arc::new(option_info(canonical, spec));
            for alias in &spec.aliases {
                options.insert(alias.clone(), Arc::clone(&info));
            }
            options.insert(canonical.clone(), info);
        }
        let long_shorts = options
            .keys()
            .any(|spelling| !spelling.starts_with("--") && spelling.chars().count() > 2);
        let variable_options = options.values().any(|info| {
            matches!(info.value, Some(Role::Variable | Role::Arithmetic))
                || matches!(info.second_value, Some(Role::Variable | Role::Arithmetic))
        });
        // (An option that changes what the operands are, or reads a folder when none is
        // given, changes which files are read: `grep "$X" API` with `X=-r` searches `.`.)
        let risky = |info: &OptionInfo| {
            !info.effects.is_empty()
                || info.operands.is_some()
                || info.default_operand.is_some()
                || matches!(info.value, Some(Role::Write | Role::Exec))
                || matches!(info.second_value, Some(Role::Write | Role::Exec))
        };
        let risky_options = options.values().any(|info| risky(info));
        // An option that only makes a listing recursive (`ls -R`) and nothing else: a glob
        // that may spell it is judged by the names it expands to (see the file judging in
        // `parts`), not asked about for the names it might.
        let listing_only = |info: &OptionInfo| {
            info.operands.as_deref() == Some(&[Role::Listing][..])
                && info.effects.is_empty()
                && !matches!(info.value, Some(Role::Write | Role::Exec))
                && !matches!(info.second_value, Some(Role::Write | Role::Exec))
        };
        let globs_checked = risky_options
            && options
                .values()
                .all(|info| !risky(info) || listing_only(info));
        let style = program.option_style.or(inherited_style);
        let passed_down = if program.options_anywhere {
            (&options, style)
        } else {
            (inherited, inherited_style)
        };
        let subcommands = program
            .subcommands
            .iter()
            .map(|(name, sub)| (name.clone(), Self::compile(sub, passed_down)))
            .collect();
        Self {
            read_only: program.read_only.unwrap_or(false),
            effects: program.effects.clone(),
            options,
            roles: program
                .operands
                .as_ref()
                .map(|roles| roles.as_slice().to_vec())
                .unwrap_or_default(),
            last: program.last_operand,
            keyed: program
                .keyed_operands
                .iter()
                .map(|(key, role)| (key.clone(), *role))
                .collect(),
            style: style.unwrap_or_default(),
            risky_options,
            globs_checked,
            subcommands,
            default_operand: program.default_operand.clone(),
            default_unless_input: program.default_unless_input,
            search_skips: program.search_skips.clone(),
            dashless_first: program.dashless_first,
            options_first: program.options_first,
            options_complete: program.options_complete,
            globbed_operands: program.globbed_operands,
            variable_options,
            long_shorts,
            short_equals: program.short_equals,
            short_values_follow: program.short_values_follow,
            response_files: program.response_files,
            plus_commands: program.plus_commands,
            after_dashes: program.after_dashes.clone(),
            prints_tracked: program.prints_tracked,
            follows_modules: program.follows_modules,
            writes_links: program.writes_links,
        }
    }
}

impl CompiledProgram {
    /// The long option `spelling` (`--name`) names: the option of that spelling, else the one
    /// option it abbreviates. GNU `getopt_long`, git and npm accept any unambiguous prefix of
    /// a long option (`--out=FILE` is `--output=FILE`); a prefix of several different options
    /// is an error to them, and names none here.
    fn long_option(&self, spelling: &str) -> Option<Arc<OptionInfo>> {
        if let Some(info) = self.options.get(spelling) {
            return Some(Arc::clone(info));
        }
        if spelling.len() <= 2 {
            return None;
        }
        let mut found: Option<&Arc<OptionInfo>> = None;
        for (name, info) in &self.options {
            if !(name.starts_with("--") && name.starts_with(spelling)) {
                continue;
            }
            match found {
                Some(other) if other.canonical != info.canonical => return None,
                _ => found = Some(info),
            }
        }
        found.cloned()
    }
}

fn option_info(canonical: &str, spec: &OptionSpec) -> OptionInfo {
    OptionInfo {
        canonical: canonical.to_owned(),
        value: spec.value,
        value_attached: spec.value_attached,
        operands: spec
            .operands
            .as_ref()
            .map(|roles| roles.as_slice().to_vec()),
        second_value: spec.second_value,
        effects: spec.effects.clone(),
        replaces_first_operand: spec.replaces_first_operand,
        default_operand: spec.default_operand.clone(),
        search_includes: spec.search_includes.clone(),
        prints_tracked: spec.prints_tracked,
        globbed: spec.globbed,
        follows_links: spec.follows_links,
        writes_links: spec.writes_links,
    }
}

/// An option as used in a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsedOption {
    /// Its canonical spelling (as written when the table does not know it).
    pub canonical: String,
    /// Its value, when it takes one.
    pub value: Option<Word>,
    /// Its second value, when it takes two.
    pub second: Option<Word>,
    /// What the table says it is (`None`: unknown option).
    pub info: Option<Arc<OptionInfo>>,
    /// Whether it is the program's own option, before the subcommand (`git -C dir`).
    pub before_subcommand: bool,
}

/// A word of a command the table gives a role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleWord {
    /// The role.
    pub role: Role,
    /// The word (for keyed operands, the value after `key=`).
    pub word: Word,
    /// Where it comes from, for messages (`-o FILE`, `if=…`, the operand).
    pub source: String,
}

/// One effect beyond reading and the word that causes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectSource {
    /// The effect.
    pub effect: Effect,
    /// The option, operand or program that causes it, as written.
    pub cause: String,
    /// Where the effect comes from.
    pub from: EffectFrom,
}

/// Where an effect comes from: a pattern that names the program grants the program's own
/// effects; only a pattern that names an option grants that option's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EffectFrom {
    /// The program or subcommand itself.
    Program,
    /// An option (canonical spelling).
    Option(String),
    /// An operand or option value whose content runs or writes (a sed script, a variable
    /// name with a subscript).
    Content,
}

/// What the command table says one simple command does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandFacts {
    /// The program, when the command word names one the table knows (see
    /// [`CommandTable::program_name`]).
    pub program: Option<String>,
    /// The subcommand, when the program has subcommands and the command names a known one.
    pub subcommand: Option<String>,
    /// Options in canonical spelling, in order.
    pub options: Vec<UsedOption>,
    /// Operands (words that are neither options nor option values), in order.
    pub operands: Vec<Word>,
    /// Words with a role: files read or written, folders, code, network addresses.
    pub roles: Vec<RoleWord>,
    /// Effects beyond reading.
    pub effects: Vec<EffectSource>,
    /// The program only reads, as far as the table knows (no effect, known program).
    pub read_only: bool,
    /// What the program leaves out of a folder it searches (a `tree` role).
    pub search_skips: Vec<SearchSkip>,
    /// It prints the content of the files its repository tracks (see
    /// [`Program::prints_tracked`](crate::model::command::Program::prints_tracked)).
    pub prints_tracked: bool,
    /// It reads the Rust modules its sources declare (see
    /// [`Program::follows_modules`](crate::model::command::Program::follows_modules)).
    pub follows_modules: bool,
    /// Its listings go into the folders links below them point to (an option with
    /// [`OptionSpec::follows_links`](crate::model::command::OptionSpec::follows_links)).
    pub follows_links: bool,
    /// It may write links anywhere in its repository's work tree (see
    /// [`Program::writes_links`](crate::model::command::Program::writes_links)).
    pub writes_links: bool,
    /// The words given to a program the table does not know that may name a file it reads
    /// or writes (its operands and the values inside its words, see [`unlisted_words`]).
    pub unlisted: Vec<RoleWord>,
    /// What a program whose last operand is written puts there (`cp a b DIR`, `mv x DIR`,
    /// `ln -s x DIR`, `cp -t DIR a`): when that is a folder, each is written into it under
    /// its own name.
    pub copies: Option<Copies>,
}

/// The operands a program puts into its last operand (or its `-t` folder), see
/// [`CommandFacts::copies`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copies {
    /// The last operand, or the `-t` option's value.
    pub into: Word,
    /// The other operands.
    pub sources: Vec<Word>,
}

/// The operand a program uses when none is given (`rg PATTERN` searches `.`).
struct DefaultOperand {
    operand: RoleWord,
    /// Not used when the command's input is given (a pipe, `<`, a here-document).
    unless_input: bool,
}

/// How many letters of a cluster of short options (`-fo`) are taken as options whose value
/// may follow them: clusters are short, and each further letter judges another word.
const MAX_CLUSTER: usize = 8;

/// The words given to a program the table does not know that may name a file it reads:
/// its operands, the values of its options (`--config=FILE`, `-f=FILE`, `-fFILE`),
/// and response files (`@FILE`, which gcc and javac read arguments from). Which of them are
/// files is decided where they are judged (spelled like a path, or naming a file).
fn unlisted_words(words: &[Word]) -> Vec<RoleWord> {
    let mut found = Vec::new();
    for word in words {
        let Some(literal) = word.literal() else {
            // Only known when it runs, and judged as such: the word, or what follows an
            // option's letter (`-X"$HOME/x"`); an option other than `--name=…` may take no
            // file at all.
            let attached = word
                .raw
                .strip_prefix('-')
                .filter(|rest| !rest.starts_with('-'))
                .and_then(|rest| rest.char_indices().nth(1))
                .map(|(at, _)| &word.raw[1 + at..]);
            match (&word.kind, attached) {
                _ if !word.raw.starts_with('-') || word.raw.contains('=') => {
                    found.push(word.clone());
                }
                (WordKind::Dynamic(expansion) | WordKind::Opaque(expansion), Some(rest)) => {
                    found.push(Word::dynamic(rest, *expansion));
                }
                _ => {}
            }
            continue;
        };
        match literal.strip_prefix('-') {
            Some(option) => {
                match option.split_once('=') {
                    Some((_, value)) => {
                        found.extend(Some(value).filter(|v| !v.is_empty()).map(option_value))
                    }
                    // `-fVALUE`, `-foVALUE`: the letters after any of the first few may be
                    // the value of the one before them (`strace -fo.git/config`).
                    None if !option.starts_with('-') => {
                        let letters = option
                            .char_indices()
                            .take_while(|(_, c)| c.is_ascii_alphanumeric())
                            .take(MAX_CLUSTER);
                        for (at, letter) in letters {
                            let rest = &option[at + letter.len_utf8()..];
                            if !rest.is_empty() {
                                found.push(option_value(rest));
                            }
                        }
                    }
                    None => {}
                }
            }
            None => {
                found.push(word.clone());
                found.extend(literal.strip_prefix('@').map(option_value));
                // `NAME=FILE` operands (`make CONFIG=.env`, dd's `if=FILE`).
                found.extend(
                    literal
                        .split_once('=')
                        .map(|(_, value)| option_value(value)),
                );
            }
        }
    }
    found
        .into_iter()
        .map(|word| RoleWord {
            role: Role::Read,
            source: word.raw.clone(),
            word,
        })
        .collect()
}

/// A value a program takes from inside one of its words. The shell leaves a `~` there as it
/// is, but programs commonly expand it in their own option values (git, ssh, cargo): it is
/// judged as the home folder.
fn option_value(value: &str) -> Word {
    if value.starts_with('~') {
        Word::dynamic(value, Expansion::Tilde)
    } else {
        Word::literal_from(value, value)
    }
}

impl CommandTable {
    /// An empty table (every program unknown).
    pub fn empty() -> Self {
        Self {
            id: next_id(),
            ..Self::default()
        }
    }

    /// The empty table shared by matching that has no table (every program unknown).
    pub fn none() -> &'static CommandTable {
        static NONE: std::sync::OnceLock<CommandTable> = std::sync::OnceLock::new();
        NONE.get_or_init(CommandTable::empty)
    }

    /// Compiles the `commands:` section.
    pub fn new(section: &CommandsSection) -> Self {
        let tools = section.file_tools.as_ref();
        Self {
            id: next_id(),
            programs: section
                .programs
                .iter()
                .map(|(name, program)| {
                    (
                        name.clone(),
                        CompiledProgram::compile(program, (&HashMap::new(), None)),
                    )
                })
                .collect(),
            env: section
                .env
                .iter()
                .filter(|(name, _)| !name.contains('*'))
                .map(|(name, kind)| (name.clone(), *kind))
                .collect(),
            env_patterns: section
                .env
                .iter()
                .filter(|(name, _)| name.contains('*'))
                .map(|(name, kind)| (name.to_ascii_uppercase(), *kind))
                .collect(),
            read_tool: tools.and_then(|t| t.read.clone()),
            write_tool: tools.and_then(|t| t.write.clone()),
            search_tool: tools.and_then(|t| t.search.clone()),
            list_tool: tools.and_then(|t| t.list.clone()),
            search_skips: tools.map(|t| t.search_skips.clone()).unwrap_or_default(),
            program_folders: section.program_folders.clone(),
        }
    }

    /// The program a command word names: the word itself, or the last component of a path
    /// into one of the table's `program_folders`. `None` for any other path (`script/test`,
    /// `./ls`): that file is run, whatever its name.
    pub fn program_name<'w>(&self, command_word: &'w str) -> Option<&'w str> {
        match command_word.rsplit_once('/') {
            None => Some(command_word),
            Some((folder, name)) => self
                .program_folders
                .iter()
                .any(|listed| listed == folder)
                .then_some(name),
        }
    }

    /// A number that identifies this table among the tables of this process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// What the table says of the variable `name`: its entry by name, else the first
    /// pattern it matches (ignoring case).
    fn env_kind(&self, name: &str) -> Option<EnvVar> {
        if let Some(kind) = self.env.get(name) {
            return Some(*kind);
        }
        if self.env_patterns.is_empty() {
            return None;
        }
        let upper = name.to_ascii_uppercase();
        self.env_patterns
            .iter()
            .find(|(pattern, _)| wildcard(pattern, &upper))
            .map(|(_, kind)| *kind)
    }

    /// Whether an environment variable set before a command is harmless.
    pub fn harmless_env(&self, name: &str) -> bool {
        self.env_kind(name) == Some(EnvVar::Harmless)
    }

    /// Whether the table names setting `name` as changing what commands do.
    pub fn effective_env(&self, name: &str) -> bool {
        self.env_kind(name) == Some(EnvVar::Effective)
    }

    /// Whether the variable `name` holds a secret.
    pub fn secret_env(&self, name: &str) -> bool {
        self.env_kind(name) == Some(EnvVar::Secret)
    }

    /// What `command` does, read with the table.
    pub fn analyse(&self, command: &SimpleCommand) -> CommandFacts {
        let words: Vec<Option<&str>> = command.words.iter().map(Word::literal).collect();
        let (mut facts, default) = self.analyse_words(&command.words, &words);
        if command.wraps && !facts.unlisted.is_empty() {
            // The words it hands on are another command's, judged on its own (`nice echo
            // "$(…)"`); its own are still its files (`flock .git/index.lock cmd`, `script -c
            // CMD ~/.bashrc`, `strace -o FILE cmd`).
            let own: Vec<Word> = command
                .words
                .iter()
                .enumerate()
                .skip(1)
                .filter(|(at, _)| !command.passed_on.contains(at))
                .map(|(_, word)| word.clone())
                .collect();
            facts.unlisted = unlisted_words(&own);
        }
        if let Some(default) = default {
            // A device (`< /dev/null`, a terminal) is no input to read: ripgrep searches its
            // folder then.
            let input_given = command.piped
                || command.redirections.iter().any(|r| match &r.effect {
                    RedirectEffect::Input {
                        from: InputFrom::File(file),
                    } => !file.literal().is_some_and(|f| f.starts_with("/dev/")),
                    RedirectEffect::Input { .. } => true,
                    _ => false,
                });
            if !(default.unless_input && input_given) {
                facts.roles.push(default.operand);
            }
        }
        if command.file_writes().next().is_some() {
            facts.read_only = false;
        }
        // An extended glob (`.@(env)`, `*(…)`) names files no expansion here reads, and in
        // zsh the same spelling is a glob qualifier, which can run code (`*(e.id.)`).
        for word in command.words.iter().skip(1) {
            // `echo ${CDPATH:=~}` sets the variable as it expands.
            for name in scripts::assigned_variables(&word.raw) {
                if self.effective_env(name) {
                    facts.read_only = false;
                    facts.effects.push(EffectSource {
                        effect: Effect::Exec,
                        cause: format!("{} (it sets `{name}`)", word.raw),
                        from: EffectFrom::Content,
                    });
                }
            }
            if is_extended_glob(&word.raw) {
                facts.read_only = false;
                facts.effects.push(EffectSource {
                    effect: Effect::Exec,
                    cause: format!(
                        "{} (an extended glob, or in zsh a glob qualifier, which can run code)",
                        word.raw
                    ),
                    from: EffectFrom::Content,
                });
            }
        }
        facts
    }

    /// Reads words (the command word first) with the table. `literals[i]` is the literal
    /// value of `words[i]`, if it has one. Also gives the operand the program uses when no
    /// operand is given in its place.
    fn analyse_words(
        &self,
        words: &[Word],
        literals: &[Option<&str>],
    ) -> (CommandFacts, Option<DefaultOperand>) {
        let mut facts = CommandFacts::default();
        let Some(Some(command_word)) = literals.first() else {
            return (facts, None);
        };
        let Some((name, mut program)) = self
            .program_name(command_word)
            .and_then(|name| Some((name, self.programs.get(name)?)))
        else {
            facts.unlisted = unlisted_words(&words[1..]);
            return (facts, None);
        };
        facts.program = Some(name.to_owned());
        let mut has_subcommands = !program.subcommands.is_empty();
        let mut end_of_options = false;
        let mut operands: Vec<(usize, &Word)> = Vec::new();
        // What the words after `--` do, given to another program (`after_dashes`).
        let mut given: Option<CommandFacts> = None;
        // tar's old style: the first word's letters are options (`tar xzf a.tgz`).
        if program.dashless_first
            && let Some(Some(letters)) = literals.get(1)
            && !letters.is_empty()
            && !letters.starts_with('-')
        {
            let words = dashless_words(program, words, letters);
            let literals: Vec<Option<&str>> = words.iter().map(Word::literal).collect();
            return self.analyse_words(&words, &literals);
        }
        let mut i = 1;
        while i < words.len() {
            let word = &words[i];
            let literal = literals[i];
            i += 1;
            // awk reads no option after its first operand (`awk PROG -F .env` reads the file
            // `-F`, then `.env`).
            if program.options_first && !operands.is_empty() {
                end_of_options = true;
            }
            let Some(value) = literal else {
                if !end_of_options {
                    let options = dynamic_options(program, word);
                    // The word may expand to an option, or the cluster it starts may spell
                    // more options with its expanded end (`-n$X`).
                    let may_spell_option = match options.last() {
                        Some(last) => {
                            last.value.is_some()
                                && last.info.as_ref().is_none_or(|info| info.value.is_none())
                        }
                        None => may_expand_to_option(word),
                    };
                    // One that takes a variable's name, given one only known when it runs
                    // (`test "${x:--v}" "$y"`, `y` a subscript that runs code).
                    if program.variable_options
                        && may_spell_option
                        && words.get(i).is_some_and(|next| next.literal().is_none())
                    {
                        facts.effects.push(EffectSource {
                            effect: Effect::Exec,
                            cause: format!(
                                "{} {} (it may expand to an option taking a variable's name, and the name is only known when it runs)",
                                word.raw, words[i].raw
                            ),
                            from: EffectFrom::Content,
                        });
                    }
                    let glob_judged = program.globs_checked
                        && word.kind == WordKind::Dynamic(super::shell::Expansion::Glob);
                    if program.risky_options && may_spell_option && !glob_judged {
                        facts.effects.push(EffectSource {
                            effect: Effect::Exec,
                            cause: format!(
                                "{} (it may expand to an option that writes or runs code)",
                                word.raw
                            ),
                            from: EffectFrom::Content,
                        });
                    }
                    if !options.is_empty() {
                        let before_subcommand = has_subcommands && facts.subcommand.is_none();
                        facts
                            .options
                            .extend(options.into_iter().map(|option| UsedOption {
                                before_subcommand,
                                ..option
                            }));
                        continue;
                    }
                }
                operands.push((operands.len(), word));
                continue;
            };
            // npm reads a long option's name after any number of dashes (`-script-shell=x`).
            let respelled = (program.style == OptionStyle::Npm)
                .then(|| npm_spelling(program, value))
                .flatten();
            let value = respelled.as_deref().unwrap_or(value);
            let option_like = !end_of_options && value.len() > 1 && value.starts_with('-');
            if !option_like {
                if has_subcommands && operands.is_empty() {
                    // A subcommand may have subcommands of its own (`git remote add`): the
                    // facts name the whole path.
                    let path = match &facts.subcommand {
                        Some(outer) => format!("{outer} {value}"),
                        None => value.to_owned(),
                    };
                    match program.subcommands.get(value) {
                        Some(sub) => {
                            facts.subcommand = Some(path);
                            program = sub;
                        }
                        None => {
                            // An unknown subcommand: nothing more is known about it. Its
                            // words are kept as operands, so that a pattern compares them
                            // word by word (`git stash list` is not `git stash list -p`),
                            // and are judged as an unknown program's are (`gh secret set
                            // X -f .env` reads `.env`).
                            facts.subcommand = Some(path.clone());
                            facts.unlisted = unlisted_words(&words[i..]);
                            facts.read_only = false;
                            facts.writes_links = true;
                            facts.effects.push(EffectSource {
                                effect: Effect::Exec,
                                cause: format!("{name} {path}"),
                                from: EffectFrom::Program,
                            });
                            facts.operands.extend(words[i..].iter().cloned());
                            return (facts, None);
                        }
                    }
                    has_subcommands = !program.subcommands.is_empty();
                    continue;
                }
                operands.push((operands.len(), word));
                continue;
            }
            let before_subcommand = has_subcommands && facts.subcommand.is_none();
            if program.style.gnu_like() && value == "--" {
                if let Some(inner) = &program.after_dashes {
                    // The rest is the other program's command line.
                    let mut rest = vec![Word::literal_from(inner, inner)];
                    rest.extend(words[i..].iter().cloned());
                    let literals: Vec<Option<&str>> = rest.iter().map(Word::literal).collect();
                    given = Some(self.analyse_words(&rest, &literals).0);
                    break;
                }
                end_of_options = true;
                continue;
            }
            let mut push = |canonical: String,
                            value: Option<Word>,
                            second: Option<Word>,
                            info: Option<Arc<OptionInfo>>| {
                facts.options.push(UsedOption {
                    canonical,
                    value,
                    second,
                    info,
                    before_subcommand,
                });
            };
            let next_word = |i: &mut usize| {
                let value = words.get(*i).cloned();
                if value.is_some() {
                    *i += 1;
                }
                value
            };
            let second = |info: &Option<Arc<OptionInfo>>, i: &mut usize| {
                let wanted = info
                    .as_ref()
                    .is_some_and(|info| info.second_value.is_some());
                if wanted { next_word(i) } else { None }
            };
            // A short option of several letters that the table lists (zip's `-lf FILE`) is
            // that option, not a cluster.
            // Its value may follow `=` (`-lf=FILE`).
            let (whole, inline) = match value.split_once('=') {
                Some((whole, inline)) if program.style.gnu_like() => (whole, Some(inline)),
                _ => (value, None),
            };
            let listed_whole = program.style == OptionStyle::Words
                || (whole.len() > 2
                    && !whole.starts_with("--")
                    && program.options.contains_key(whole));
            if listed_whole {
                let value = if program.style == OptionStyle::Words {
                    value
                } else {
                    whole
                };
                let info = program.options.get(value).cloned();
                let option_value = match (info.as_ref().and_then(|info| info.value), inline) {
                    (Some(_), Some(inline)) if value == whole => {
                        Some(Word::literal_from(inline, inline))
                    }
                    (Some(_), _) => next_word(&mut i),
                    (None, _) => None,
                };
                let canonical = info
                    .as_ref()
                    .map_or_else(|| value.to_owned(), |info| info.canonical.clone());
                let second = second(&info, &mut i);
                push(canonical, option_value, second, info);
            } else if value.starts_with("--") {
                let (spelling, inline) = match value.split_once('=') {
                    Some((spelling, inline)) => (spelling, Some(inline)),
                    None => (value, None),
                };
                let info = program.long_option(spelling);
                let separate = info
                    .as_ref()
                    .is_some_and(|info| info.value.is_some() && !info.value_attached);
                // An abbreviation of a listed option that takes the next word may as well be
                // an option of that exact name the table does not list, which does not
                // (`grep --binary` is not `--binary-files`): the next word may be a file
                // or a program.
                if let Some(info) = info.as_ref().filter(|_| {
                    separate && inline.is_none() && !program.options.contains_key(spelling)
                }) {
                    facts.effects.push(EffectSource {
                        effect: Effect::Exec,
                        cause: format!(
                            "{spelling} (read as {}, which takes the next word; an option of that exact name may not)",
                            info.canonical
                        ),
                        from: EffectFrom::Content,
                    });
                }
                let option_value = match inline {
                    Some(inline) => Some(Word::literal_from(inline, inline)),
                    None if separate => next_word(&mut i),
                    None => None,
                };
                let canonical = info
                    .as_ref()
                    .map_or_else(|| spelling.to_owned(), |info| info.canonical.clone());
                let second = second(&info, &mut i);
                push(canonical, option_value, second, info);
            } else {
                // A cluster of short options (`-rf`, `-n5`, `-uf`).
                let letters: Vec<(usize, char)> = value.char_indices().skip(1).collect();
                // Inside a leading count (`-5`), whose digits are one option.
                let mut counting = false;
                let mut unknown_seen = false;
                // The end of a listed option of several letters read inside the cluster.
                let mut listed_until = 0;
                for (index, &(at, letter)) in letters.iter().enumerate() {
                    if counting && letter.is_ascii_digit() || at < listed_until {
                        continue;
                    }
                    counting = false;
                    // A short option of several letters the table lists, at the cluster's
                    // start or inside it, its value attached after it or after `=`, as zip
                    // reads them: `-TTcmd`, `-qTT CMD` and `-TqTTcmd` run CMD (read letter
                    // by letter, `-T -T -t …`, they ran it unseen).
                    if let Some((letters, info)) = program
                        .long_shorts
                        .then(|| listed_within(program, &value[at..]))
                        .flatten()
                    {
                        let canonical = info.canonical.clone();
                        let info = Some(info);
                        if info.as_ref().is_some_and(|info| info.value.is_some()) {
                            let rest = &value[at + letters..];
                            let rest = rest.strip_prefix('=').unwrap_or(rest);
                            let option_value = if rest.is_empty() {
                                next_word(&mut i)
                            } else {
                                Some(Word::literal_from(rest, rest))
                            };
                            let second = second(&info, &mut i);
                            push(canonical, option_value, second, info);
                            break;
                        }
                        push(canonical, None, None, info);
                        listed_until = at + letters;
                        continue;
                    }
                    let spelling = format!("-{letter}");
                    let info = program.options.get(&spelling).cloned();
                    let canonical = info
                        .as_ref()
                        .map_or_else(|| spelling.clone(), |info| info.canonical.clone());
                    if program.short_values_follow
                        && info.as_ref().is_some_and(|info| info.value.is_some())
                    {
                        // The value is the next word; the letters after it are options.
                        let option_value = next_word(&mut i);
                        let second = second(&info, &mut i);
                        push(canonical, option_value, second, info);
                        continue;
                    }
                    if info.as_ref().is_some_and(|info| info.value.is_some()) {
                        let rest = &value[at + letter.len_utf8()..];
                        let rest = match rest.strip_prefix('=') {
                            Some(after) if program.short_equals => after,
                            _ => rest,
                        };
                        let attached = info.as_ref().is_some_and(|info| info.value_attached);
                        let option_value = match (rest.is_empty(), attached) {
                            (false, _) => Some(Word::literal_from(rest, rest)),
                            (true, false) => next_word(&mut i),
                            (true, true) => None,
                        };
                        let second = second(&info, &mut i);
                        push(canonical, option_value, second, info);
                        break;
                    }
                    let rest = &value[at + letter.len_utf8()..];
                    if index == 0 && letter.is_ascii_digit() && info.is_none() {
                        // `-5` (a count); letters after it are options (`-5O cmd`).
                        push(canonical, None, None, info);
                        counting = true;
                    } else if info.is_none() && !unknown_seen && !rest.is_empty() {
                        // An option the table does not know, with letters after it:
                        // they may be its value (`git blame -S.env`), judged as such
                        // as well as read as options.
                        unknown_seen = true;
                        push(canonical, Some(Word::literal_from(rest, rest)), None, info);
                    } else {
                        push(canonical, None, None, info);
                    }
                }
            }
        }
        // A value the shell may split (`-name $(cat f)`, xargs' input after `-name`): its
        // later words are options and operands the line does not show.
        for option in &facts.options {
            if let Some(value) = option.value.as_ref().filter(|value| value.may_split()) {
                facts.effects.push(EffectSource {
                    effect: Effect::Exec,
                    cause: format!(
                        "{} {} (it may split into several words: options and files the line does not show)",
                        option.canonical, value.raw
                    ),
                    from: EffectFrom::Content,
                });
            }
        }
        facts.read_only = program.read_only;
        facts.prints_tracked = program.prints_tracked;
        facts.follows_modules = program.follows_modules;
        facts.writes_links = program.writes_links;
        let (program_name, program_effects) = (
            match &facts.subcommand {
                Some(sub) => format!("{name} {sub}"),
                None => name.to_owned(),
            },
            &program.effects,
        );
        for effect in program_effects {
            facts.effects.push(EffectSource {
                effect: *effect,
                cause: program_name.clone(),
                from: EffectFrom::Program,
            });
        }
        // Options: their effects, and their values' roles.
        let mut skip_first = false;
        let mut operand_roles: &[Role] = &program.roles;
        let mut option_values: Vec<RoleWord> = Vec::new();
        let mut default_operand = program.default_operand.as_deref();
        facts.search_skips.clone_from(&program.search_skips);
        for option in &facts.options {
            let Some(info) = &option.info else {
                // An option the table does not know, written `--name=VALUE`: the value may
                // name a file the program reads (`git blame --ignore-revs-file=.env`), so
                // it is judged as one, as the same value in the next word would be.
                if let Some(value) = &option.value {
                    facts.roles.push(RoleWord {
                        role: Role::Read,
                        word: value.clone(),
                        source: format!("{}={}", option.canonical, value.raw),
                    });
                }
                if program.options_complete {
                    // Not one of the program's options: what it does is not known (before
                    // a script, one that takes the next word would make the script another
                    // word: `jq --argfile x f env` runs `env`, not `f`).
                    let effect = EffectSource {
                        effect: Effect::Exec,
                        cause: format!(
                            "{} (an option the command table does not list for {name})",
                            option.canonical
                        ),
                        from: EffectFrom::Option(option.canonical.clone()),
                    };
                    if !facts.effects.contains(&effect) {
                        facts.effects.push(effect);
                    }
                }
                continue;
            };
            skip_first |= info.replaces_first_operand;
            if let Some(roles) = &info.operands {
                operand_roles = roles;
            }
            if let Some(default) = &info.default_operand {
                default_operand = Some(default);
            }
            facts
                .search_skips
                .retain(|skip| !info.search_includes.contains(skip));
            facts.prints_tracked |= info.prints_tracked;
            facts.follows_links |= info.follows_links;
            facts.writes_links |= info.writes_links;
            for effect in &info.effects {
                let effect = EffectSource {
                    effect: *effect,
                    cause: option.canonical.clone(),
                    from: EffectFrom::Option(option.canonical.clone()),
                };
                if !facts.effects.contains(&effect) {
                    facts.effects.push(effect);
                }
            }
            if let (Some(role), Some(value)) = (info.value, &option.value) {
                // A value the program globs itself is expanded as bash would expand it.
                let word = match value.literal() {
                    Some(text) if info.globbed && text.contains(['{', '[']) => {
                        Word::dynamic(text, super::shell::Expansion::Brace)
                    }
                    _ => value.clone(),
                };
                let role_word = RoleWord {
                    role,
                    word,
                    source: format!("{} {}", option.canonical, value.raw),
                };
                // What an option's value does is the option's doing when the table says the
                // option does it (`--compress-program=PROG` runs code): naming the option
                // grants it. Anything more (a sed script's `e`, an archive on `host:`) is
                // the content's, granted only by a pattern without `*`: `sed -e *` does
                // not allow `sed -e '1e id'`, nor `tar -tf *` `tar -tf host:x`.
                for mut effect in scripts::content_effects(&role_word, |n| self.effective_env(n)) {
                    if info.effects.contains(&effect.effect) {
                        effect.from = EffectFrom::Option(option.canonical.clone());
                    }
                    if !facts
                        .effects
                        .iter()
                        .any(|e| e.effect == effect.effect && e.from == effect.from)
                    {
                        facts.effects.push(effect);
                    }
                }
                option_values.push(role_word.clone());
                facts.roles.push(role_word);
            }
            if let (Some(role), Some(value)) = (info.second_value, &option.second) {
                let role_word = RoleWord {
                    role,
                    word: value.clone(),
                    source: format!("{} … {}", option.canonical, value.raw),
                };
                option_values.push(role_word.clone());
                facts.roles.push(role_word);
            }
        }
        // Operands by position; keyed operands by key.
        let count = operands.len();
        let offset = usize::from(skip_first);
        // No operand given where the last role is: the program's default stands there.
        let default = default_operand
            .zip(operand_roles.last())
            .filter(|_| count + offset < operand_roles.len())
            .map(|(word, &role)| DefaultOperand {
                operand: RoleWord {
                    role,
                    word: Word::literal_from(word, word),
                    source: format!("{word} (no operand: the program's default)"),
                },
                unless_input: program.default_unless_input,
            });
        for (position, word) in operands {
            let keyed = match word.literal() {
                Some(value) => value.split_once('=').and_then(|(key, rest)| {
                    let role = program.keyed.get(key).or_else(|| program.keyed.get("*"))?;
                    Some((*role, rest))
                }),
                // A word only known when it runs may be any `NAME=value` (`X?=y` is a glob
                // that matches nothing, so bash passes it on as written).
                None => program
                    .keyed
                    .get("*")
                    .map(|role| (*role, word.raw.as_str())),
            };
            let role_word = match keyed {
                Some((role, rest)) => Some(RoleWord {
                    role,
                    word: Word::literal_from(rest, rest),
                    source: word.raw.clone(),
                }),
                None => {
                    let role = if position + 1 == count && count >= 2 && program.last.is_some() {
                        program.last
                    } else {
                        operand_roles
                            .get(position + offset)
                            .or(operand_roles.last())
                            .copied()
                    };
                    role.map(|role| RoleWord {
                        role,
                        word: word.clone(),
                        source: word.raw.clone(),
                    })
                }
            };
            facts.operands.push(word.clone());
            let names_file = role_word.as_ref().is_some_and(|r| names_files(r.role));
            if let Some(role_word) = role_word {
                // make's `ARCHIVE(MEMBER …)` target: `ar` writes ARCHIVE, the members read
                // into it (`make -C .git 'config(x)'`).
                if role_word.role == Role::Target
                    && let Some((archive, members)) = word.literal().and_then(archive_members)
                {
                    let pieces = std::iter::once((Role::Write, archive))
                        .chain(members.split_whitespace().map(|m| (Role::Read, m)));
                    for (role, piece) in pieces {
                        facts.roles.push(RoleWord {
                            role,
                            word: Word::literal_from(piece, piece),
                            source: word.raw.clone(),
                        });
                    }
                }
                facts.roles.push(role_word);
            }
            // gawk reads a file operand `/inet/tcp/0/HOST/PORT` from the network, however the
            // line spells it (`/ine{t..t}/tcp/…`, `/in'et'/…`); a brace that cannot be
            // written out may be one.
            let network_file = |word: &Word| {
                let network = |text: &str| {
                    ["/inet/", "/inet4/", "/inet6/"]
                        .iter()
                        .any(|prefix| text.starts_with(prefix))
                };
                // The word's value (`$'/in\x65t/…'` decoded), and each of its brace
                // expansions with its quotes taken out (`$'/ine'{t,}/…`).
                if word.literal().is_some_and(network) {
                    return true;
                }
                let Ok(spellings) = super::shell::wildcard::expand_braces(&word.raw) else {
                    return true;
                };
                spellings.iter().any(|spelling| {
                    let plain: String = spelling
                        .chars()
                        .filter(|c| !matches!(c, '\'' | '"' | '\\' | '$'))
                        .collect();
                    network(&plain)
                })
            };
            if program.roles.first() == Some(&Role::AwkProgram) && network_file(word) {
                facts.effects.push(EffectSource {
                    effect: Effect::Network,
                    cause: format!("{} (a network connection gawk opens)", word.raw),
                    from: EffectFrom::Content,
                });
            }
            // An operand that may split into several words (`grep $X`, `test ${x:--v …}`,
            // `grep "${a[@]}"`): the later ones are options and operands the line does not
            // show — files, where the program reads some, or a variable's name, which bash
            // evaluates with its subscript. And a word with a subscript that runs code where
            // an expanded word may make it a variable's name (`test "$x" 'a[$(id)]'`).
            // (A word that is a file itself is judged as one only known when it runs.)
            let files_follow = operand_roles
                .iter()
                .chain(program.last.iter())
                .any(|role| names_files(*role));
            if word.may_split()
                && !word.is_process_substitution()
                && !names_file
                && (files_follow || program.variable_options)
            {
                facts.effects.push(EffectSource {
                    effect: Effect::Exec,
                    cause: format!(
                        "{} (it may split into several words: options and files the line does not show)",
                        word.raw
                    ),
                    from: EffectFrom::Content,
                });
            }
            if program.variable_options
                && word
                    .literal()
                    .is_some_and(|text| text.contains('[') && text.contains(['$', '`']))
            {
                facts.effects.push(EffectSource {
                    effect: Effect::Exec,
                    cause: format!(
                        "{} (a subscript that runs code, should a word before it expand to an option taking a variable's name)",
                        word.raw
                    ),
                    from: EffectFrom::Content,
                });
            }
            // A wildcard the program matches itself (see `Program::globbed_operands`).
            if program.globbed_operands
                && word
                    .literal()
                    .is_some_and(|text| text.contains(['*', '?', '[']))
            {
                facts.effects.push(EffectSource {
                    effect: Effect::Exec,
                    cause: format!(
                        "{} (the program matches its wildcards itself: files the line does not show)",
                        word.raw
                    ),
                    from: EffectFrom::Content,
                });
            }
            // `+CMD` is a command the program runs (a word only known when it runs may be one).
            let plus = word.literal().unwrap_or(&word.raw).starts_with('+');
            if program.plus_commands && plus {
                facts.effects.push(EffectSource {
                    effect: Effect::Exec,
                    cause: format!("{} (a command it runs when it starts)", word.raw),
                    from: EffectFrom::Content,
                });
            }
            // `@FILE` stands for the arguments FILE holds.
            if let Some(file) = word
                .literal()
                .and_then(|value| value.strip_prefix('@'))
                .filter(|file| program.response_files && !file.is_empty())
            {
                facts.roles.push(RoleWord {
                    role: Role::Read,
                    word: Word::literal_from(file, file),
                    source: word.raw.clone(),
                });
                facts.effects.push(EffectSource {
                    effect: Effect::Exec,
                    cause: format!("{} (its arguments are read from the file)", word.raw),
                    from: EffectFrom::Content,
                });
            }
        }
        if program.last == Some(Role::Write) {
            let target_folder = facts
                .options
                .iter()
                .find(|o| o.canonical == "-t")
                .and_then(|o| o.value.clone());
            facts.copies = match (target_folder, facts.operands.split_last()) {
                (Some(into), _) => Some(Copies {
                    into,
                    sources: facts.operands.clone(),
                }),
                (None, Some((into, sources))) if !sources.is_empty() => Some(Copies {
                    into: into.clone(),
                    sources: sources.to_vec(),
                }),
                _ => None,
            };
        }
        backup_copies(&mut facts);
        // Words whose content runs code or writes.
        let mut content = Vec::new();
        for role_word in facts.roles.iter().filter(|r| !option_values.contains(r)) {
            content.extend(scripts::content_effects(role_word, |n| {
                self.effective_env(n)
            }));
        }
        facts.effects.extend(content);
        // Files a sed script or awk program reads or writes itself (`1r .env`, `w
        // ~/.bashrc`, `print > ".git/config"`), and those a `data` value sends (`curl -d
        // @.env`), are judged as the command's own.
        let script_files: Vec<RoleWord> = facts
            .roles
            .iter()
            .filter_map(|r| r.word.literal().map(|text| (r.role, text, &r.source)))
            .flat_map(|(role, text, source)| {
                let files = match role {
                    Role::SedScript => scripts::sed_files(text),
                    Role::AwkProgram => scripts::awk_files(text),
                    Role::Data => scripts::data_files(text),
                    _ => Vec::new(),
                };
                files.into_iter().map(move |(role, file)| RoleWord {
                    role,
                    word: Word::literal_from(&file, &file),
                    source: format!("{file} (in the script {source})"),
                })
            })
            .collect();
        facts.roles.extend(script_files);
        // A `data` value only known when it runs may name a file (`-d "$X"`, X=`@.env`): it
        // is judged as one, which asks.
        let unknown_data: Vec<RoleWord> = facts
            .roles
            .iter()
            .filter(|r| r.role == Role::Data && r.word.literal().is_none())
            .map(|r| RoleWord {
                role: Role::Read,
                ..r.clone()
            })
            .collect();
        facts.roles.extend(unknown_data);
        // A `file:` URL reads the file (`curl file:///etc/shadow`); a download is saved into a
        // file named after the address.
        let url_files: Vec<RoleWord> = facts
            .roles
            .iter()
            .filter(|r| matches!(r.role, Role::Network | Role::Download))
            .flat_map(|r| {
                let read = scripts::url_file(&r.word).map(|word| RoleWord {
                    role: Role::Read,
                    word,
                    source: r.source.clone(),
                });
                let saved = (r.role == Role::Download).then(|| RoleWord {
                    role: Role::Write,
                    word: scripts::download_file(&r.word),
                    source: format!("{} (saved under its name)", r.source),
                });
                read.into_iter().chain(saved)
            })
            .collect();
        facts.roles.extend(url_files);
        if let Some(given) = given {
            facts.roles.extend(given.roles);
            facts.effects.extend(given.effects);
            facts.unlisted.extend(given.unlisted);
        }
        // A word the program writes (`uniq in out`, `cp a b`) is judged as a file write, and
        // the command is not read-only.
        if !facts.effects.is_empty() || facts.roles.iter().any(|r| r.role == Role::Write) {
            facts.read_only = false;
        }
        (facts, default)
    }

    /// The canonical form of a pattern's words (see [`CommandTable::analyse`]), when the
    /// pattern names a program the table knows: `None` otherwise. Words that are `None` are
    /// the pattern's `*`.
    pub fn analyse_pattern(&self, tokens: &[PatternWord<'_>]) -> Option<CommandFacts> {
        let mut words = Vec::with_capacity(tokens.len());
        let mut literals = Vec::with_capacity(tokens.len());
        for token in tokens {
            match token {
                PatternWord::Literal(value) => {
                    words.push(Word::literal_from(value, value));
                    literals.push(Some(*value));
                }
                PatternWord::Other(raw) => {
                    words.push(Word::dynamic(raw, super::shell::Expansion::Glob));
                    literals.push(None);
                }
            }
        }
        let (facts, _) = self.analyse_words(&words, &literals);
        facts.program.is_some().then_some(facts)
    }
}

/// The words of a command whose first word is short options without their `-` (`tar xfC
/// a.tar dir`), with each option written out and followed by its value, taken from the
/// words after the first in order (`tar -x -f a.tar -C dir`).
fn dashless_words(program: &CompiledProgram, words: &[Word], letters: &str) -> Vec<Word> {
    let mut rest = words.iter().skip(2);
    let mut out: Vec<Word> = words.iter().take(1).cloned().collect();
    for letter in letters.chars() {
        let spelling = format!("-{letter}");
        let takes_value = program
            .options
            .get(&spelling)
            .is_some_and(|info| info.value.is_some() && !info.value_attached);
        out.push(Word::literal_from(&spelling, &spelling));
        if takes_value && let Some(value) = rest.next() {
            out.push(value.clone());
        }
    }
    out.extend(rest.cloned());
    out
}

/// Whether a word holds an extended glob or a zsh glob qualifier outside quotes: `?(`,
/// `*(`, `+(`, `@(` or `!(`.
fn is_extended_glob(raw: &str) -> bool {
    if raw.starts_with(['\'', '"']) {
        return false;
    }
    raw.as_bytes()
        .windows(2)
        .any(|pair| pair[1] == b'(' && matches!(pair[0], b'?' | b'*' | b'+' | b'@' | b'!'))
}

/// An option written with a value expanded at run time (`--output=~/x`, `-o$FILE`): its
/// name is literal, so it is read like a literal option whose value is dynamic.
/// The options a word expanded at run time spells with its literal start: `--name=$X`, or a
/// cluster of short options whose letters come before the expansion (`-ni$X` is `-n -i…`,
/// `-uo$HOME/x` is `-u -o $HOME/x`). Empty when it starts with no option.
fn dynamic_options(program: &CompiledProgram, word: &Word) -> Vec<UsedOption> {
    let raw = word.raw.as_str();
    // The value keeps the word's expansion: `--from-file={}` in what `find -exec` runs is
    // an argument supplied at run time, not the text `{}`.
    let expansion = match word.kind {
        WordKind::Dynamic(expansion) | WordKind::Opaque(expansion) => expansion,
        WordKind::Literal(_) => super::shell::Expansion::Parameter,
    };
    if raw.starts_with("--") || !program.style.gnu_like() || !raw.starts_with('-') {
        return dynamic_option(program, raw, expansion)
            .into_iter()
            .collect();
    }
    let mut options = Vec::new();
    let mut at = 1;
    for letter in raw[1..].chars() {
        if !letter.is_ascii_alphanumeric() {
            break;
        }
        let end = at + letter.len_utf8();
        let Some(option) = dynamic_option(program, &format!("-{letter}{}", &raw[end..]), expansion)
        else {
            break;
        };
        let takes_value = option
            .info
            .as_ref()
            .is_some_and(|info| info.value.is_some());
        if takes_value || end >= raw.len() {
            options.push(option);
            return options;
        }
        options.push(UsedOption {
            value: None,
            ..option
        });
        at = end;
    }
    // What is left after the letters is only known when it runs: it may spell more
    // options, so the last letter keeps it as a value.
    if let Some(last) = options.last_mut() {
        last.value = Some(Word::dynamic(&raw[at..], expansion));
    }
    options
}

fn dynamic_option(
    program: &CompiledProgram,
    raw: &str,
    expansion: super::shell::Expansion,
) -> Option<UsedOption> {
    let (spelling, rest) = if raw.starts_with("--") {
        raw.split_once('=')?
    } else if program.style.gnu_like() && raw.starts_with('-') {
        let letter = raw[1..].chars().next()?;
        (
            raw.get(..1 + letter.len_utf8())?,
            raw.get(1 + letter.len_utf8()..)?,
        )
    } else {
        return None;
    };
    if !spelling[1..]
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return None;
    }
    let info = if spelling.starts_with("--") && program.style.gnu_like() {
        program.long_option(spelling)
    } else {
        program.options.get(spelling).cloned()
    };
    let canonical = info
        .as_ref()
        .map_or_else(|| spelling.to_owned(), |info| info.canonical.clone());
    let value = Word::dynamic(rest, expansion);
    Some(UsedOption {
        canonical,
        value: Some(value),
        second: None,
        info,
        before_subcommand: false,
    })
}

/// Whether a word expanded at run time could become an option (`$OPT`, `"$X"`, `$(…)`,
/// `*`), rather than text that starts with a literal non-dash.
fn may_expand_to_option(word: &Word) -> bool {
    // `<(cmd)` is a `/dev/fd/N` path; find's `{}` starts with a starting point.
    !word.is_process_substitution()
        && word.kind != WordKind::Dynamic(super::shell::Expansion::FoundPath)
        && !word
            .raw
            .trim_start_matches(['"', '\''])
            .starts_with(|c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '_' | '~'))
}

/// A parsed command line with what the table says each of its commands does.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysed {
    /// The parse.
    pub script: Result<Script, ShellParseError>,
    /// The facts of each command of the script, in the same order (empty when it did not
    /// parse).
    pub facts: Vec<CommandFacts>,
}

impl Analysed {
    /// Parses and analyses a command line.
    pub fn new(line: &str, table: &CommandTable) -> Self {
        Self::of(parse_script(line), table)
    }

    /// Analyses a parse.
    pub fn of(script: Result<Script, ShellParseError>, table: &CommandTable) -> Self {
        let facts = match &script {
            Ok(script) => script.commands.iter().map(|c| table.analyse(c)).collect(),
            Err(_) => Vec::new(),
        };
        Self { script, facts }
    }

    /// The commands of the script with their facts.
    pub fn commands(&self) -> impl Iterator<Item = (&SimpleCommand, &CommandFacts)> {
        let commands = match &self.script {
            Ok(script) => &script.commands[..],
            Err(_) => &[],
        };
        commands.iter().zip(&self.facts)
    }
}

/// A word of a pattern, for [`CommandTable::analyse_pattern`].
#[derive(Debug, Clone, Copy)]
pub enum PatternWord<'a> {
    /// A literal word.
    Literal(&'a str),
    /// `*` or a glob token (its source).
    Other(&'a str),
}

/// The longest short option of two or more letters `program` lists whose letters `rest` (a
/// cluster from one of its letters on) starts with, with how many bytes its letters take.
fn listed_within(program: &CompiledProgram, rest: &str) -> Option<(usize, Arc<OptionInfo>)> {
    (2..=rest.len().min(15))
        .rev()
        .filter(|&end| rest.is_char_boundary(end))
        .find_map(|end| {
            let info = program.options.get(&format!("-{}", &rest[..end]))?;
            Some((end, Arc::clone(info)))
        })
}

/// Whether a word of this role names a file the program reads or writes.
fn names_files(role: Role) -> bool {
    matches!(
        role,
        Role::Read
            | Role::Write
            | Role::Dir
            | Role::Manifest
            | Role::Tree
            | Role::Listing
            | Role::RevisionOrPath
            | Role::Patch
            | Role::Unpack
            | Role::Archive
            | Role::Target
            | Role::YqProgram
            | Role::ManPage
    )
}

/// Judges the backup copies a suffix (a [`Role::Suffix`] value: `sed -i.bak`, `mv -b -S .old`)
/// makes of the files the command writes, as files it writes: each name with the suffix
/// appended and, for a suffix with `*`, the suffix with each `*` the file's name as given
/// (GNU sed: `-i 'old/*'` renames `d/f` to `old/d/f`) or its base name in its folder (as
/// sed's manual says). A file moved or copied into a folder is written there under its base
/// name. A written file only known when it runs gets a copy no one can name: that asks, and
/// so do copies whose names would be too long to judge (`-S` with thousands of `*`).
///
/// The programs use the last suffix given (`sed -i.a -i.b` keeps `.b`).
fn backup_copies(facts: &mut CommandFacts) {
    /// The most text the copies' names may hold together.
    const MAX_NAMES: usize = 1 << 20;
    let Some(suffix) = facts
        .roles
        .iter()
        .rev()
        .find(|r| r.role == Role::Suffix)
        .and_then(|r| r.word.literal())
        .map(str::to_owned)
    else {
        return;
    };
    let mut written: Vec<&Word> = facts
        .roles
        .iter()
        .filter(|r| r.role == Role::Write)
        .map(|r| &r.word)
        .collect();
    let mut into_folder = Vec::new();
    if let Some(copies) = &facts.copies {
        for source in &copies.sources {
            match (copies.into.literal(), source.literal()) {
                (Some(into), Some(source)) => {
                    let base = source
                        .trim_end_matches('/')
                        .rsplit('/')
                        .next()
                        .unwrap_or("");
                    let name = format!("{}/{base}", into.trim_end_matches('/'));
                    into_folder.push(Word::literal_from(&name, &name));
                }
                _ => written.push(source),
            }
        }
    }
    written.extend(into_folder.iter());
    let mut copies = Vec::new();
    let mut unknown = Vec::new();
    let mut size = 0;
    for word in written {
        let Some(name) = word.literal() else {
            unknown.push(word.raw.clone());
            continue;
        };
        let (folder, base) = match name.rsplit_once('/') {
            Some((folder, base)) => (format!("{folder}/"), base),
            None => (String::new(), name),
        };
        let stars = suffix.matches('*').count();
        size += name.len() + suffix.len() + stars * (name.len() + base.len());
        if size > MAX_NAMES {
            copies.clear();
            unknown.push(format!("{} …", word.raw));
            break;
        }
        let mut names = vec![format!("{name}{suffix}")];
        if stars > 0 {
            names.push(suffix.replace('*', name));
            names.push(format!("{folder}{}", suffix.replace('*', base)));
        }
        for copy in names {
            copies.push(RoleWord {
                role: Role::Write,
                word: Word::literal_from(&copy, &copy),
                source: format!("{name} (its backup copy, with the suffix `{suffix}`)"),
            });
        }
    }
    facts.roles.extend(copies);
    for raw in unknown {
        facts.effects.push(EffectSource {
            effect: Effect::Write,
            cause: format!("{raw} (a backup copy of it is written where only the run knows)"),
            from: EffectFrom::Content,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::shell::parse_script;

    #[test]
    fn environment_variables_are_named_or_matched_by_patterns() {
        let section: CommandsSection = serde_json::from_value(serde_json::json!({
            "env": {"TOKENIZERS_PARALLELISM": "harmless", "*TOKEN*": "secret", "*_ID": "harmless", "DB_URL": "secret"}
        }))
        .expect("section");
        let table = CommandTable::new(&section);
        for (name, secret, harmless) in [
            ("GITHUB_TOKEN", true, false),
            ("github_token", true, false),
            ("TOKEN", true, false),
            ("TOKENIZERS_PARALLELISM", false, true),
            ("DB_URL", true, false),
            ("CLIENT_ID", false, true),
            ("TOKEN_ID", true, false),
            ("HOME", false, false),
        ] {
            assert_eq!(table.secret_env(name), secret, "{name}");
            assert_eq!(table.harmless_env(name), harmless, "{name}");
        }
        for (pattern, text, matches) in [
            ("*_TOKEN", "A_TOKEN", true),
            ("*_TOKEN", "A_TOKENS", false),
            ("A*B*C", "AXBYC", true),
            ("A*B*C", "ABC", true),
            ("A*B*C", "AC", false),
            ("AB*BA", "ABA", false),
            ("*", "", true),
        ] {
            assert_eq!(wildcard(pattern, text), matches, "{pattern} {text}");
        }
    }

    /// A few programs, spelled as in `policies/commands.yaml` (the shipped table is tested
    /// through the engine in the integration tests).
    fn table() -> CommandTable {
        let section: CommandsSection = serde_json::from_value(serde_json::json!({
            "programs": {
                "rm": {"effects": ["write"], "operands": "write", "options": {
                    "-r": {"aliases": ["-R", "--recursive"]}, "-f": {"aliases": ["--force"]}}},
                "git": {"options": {"-C": {"value": "dir"}, "-c": {"value": "text", "effects": ["exec"]}},
                    "subcommands": {
                        "status": {"read_only": true, "operands": "read"},
                        "log": {"read_only": true, "operands": "revision_or_path",
                            "options": {"--output": {"value": "write", "effects": ["write"]}}},
                        "push": {"effects": ["network"], "options": {
                            "-f": {"aliases": ["--force"]}, "-u": {"aliases": ["--set-upstream"]}}}}},
                "sort": {"read_only": true, "operands": "read", "options": {
                    "-o": {"value": "write", "effects": ["write"], "aliases": ["--output"]}}},
                "rg": {"read_only": true, "operands": ["text", "read"], "options": {
                    "--pre": {"value": "exec", "effects": ["exec"]}}},
                "find": {"read_only": true, "option_style": "words", "operands": "read", "options": {
                    "-name": {"value": "text"}, "-delete": {"effects": ["write"]}}},
                "sed": {"read_only": true, "operands": ["sed_script", "read"], "options": {
                    "-n": {}, "-e": {"value": "sed_script", "replaces_first_operand": true},
                    "-i": {"value": "suffix", "value_attached": true, "effects": ["write"],
                        "operands": ["sed_script", "write"], "aliases": ["--in-place"]}}},
                "printf": {"read_only": true, "operands": "text", "options": {"-v": {"value": "variable"}}},
                "grep": {"read_only": true, "operands": ["text", "read"], "options": {
                    "-e": {"value": "text", "replaces_first_operand": true}, "-n": {}}},
                "cp": {"operands": "read", "last_operand": "write"},
                "dd": {"keyed_operands": {"if": "read", "of": "write"}},
                "head": {"read_only": true, "operands": "read", "options": {"-c": {"value": "text"}}},
                "xargs": {"read_only": true, "options": {"-a": {"value": "read"}}}
            }
        }))
        .expect("the test table fits the model");
        CommandTable::new(&section)
    }

    fn facts(line: &str) -> CommandFacts {
        let script = parse_script(line).expect("parses");
        table().analyse(&script.commands[0])
    }

    /// The files a command writes, as written.
    fn written(line: &str) -> Vec<String> {
        facts(line)
            .roles
            .into_iter()
            .filter(|r| r.role == Role::Write)
            .filter_map(|r| r.word.literal().map(str::to_owned))
            .collect()
    }

    #[test]
    fn backup_copies_are_written_where_the_last_suffix_puts_them() {
        assert_eq!(written("sed -i -e p d/f"), ["d/f"]);
        assert_eq!(written("sed -i.bak -e p d/f"), ["d/f", "d/f.bak"]);
        assert_eq!(written("sed -i.a --in-place=.b -e p f"), ["f", "f.b"]);
        // `*` is the name as given (GNU sed) or the base name in its folder.
        assert_eq!(
            written("sed -i'old/*' -e p d/f"),
            ["d/f", "d/fold/*", "old/d/f", "d/old/f"]
        );
        // A written file only known when it runs.
        let dynamic = facts("sed -i.bak -e p $F");
        assert!(
            dynamic
                .effects
                .iter()
                .any(|e| e.effect == Effect::Write && e.from == EffectFrom::Content),
            "{:?}",
            dynamic.effects
        );
    }

    #[test]
    fn backup_names_too_long_to_judge_are_not_made() {
        let line = format!("sed -i'{}' -e p{}", "*".repeat(20_000), " a".repeat(20_000));
        let facts = facts(&line);
        let roles = facts.roles.iter().filter(|r| r.role == Role::Write).count();
        assert_eq!(roles, 20_000, "only the files themselves");
        assert!(
            facts
                .effects
                .iter()
                .any(|e| e.effect == Effect::Write && e.from == EffectFrom::Content)
        );
    }

    fn canonical(line: &str) -> Vec<String> {
        facts(line)
            .options
            .into_iter()
            .map(|o| o.canonical)
            .collect()
    }

    #[test]
    fn spellings_of_the_same_options_agree() {
        for line in [
            "rm -rf /",
            "rm -r -f /",
            "rm -Rf /",
            "rm --recursive --force /",
        ] {
            let mut options = canonical(line);
            options.sort();
            assert_eq!(options, ["-f", "-r"], "{line}");
        }
        let push = facts("git -C . push -uf origin main");
        assert_eq!(push.subcommand.as_deref(), Some("push"));
        let options: Vec<_> = push
            .options
            .iter()
            .map(|o| (o.canonical.as_str(), o.before_subcommand))
            .collect();
        assert_eq!(options, [("-C", true), ("-u", false), ("-f", false)]);
    }

    #[test]
    fn options_with_effects_are_found() {
        let effects = |line: &str| -> Vec<Effect> {
            facts(line).effects.into_iter().map(|e| e.effect).collect()
        };
        assert_eq!(effects("git log --output=x"), [Effect::Write]);
        assert_eq!(effects("sort -ofile a"), [Effect::Write]);
        assert_eq!(effects("rg --pre sh x"), [Effect::Exec]);
        assert_eq!(effects("find . -delete"), [Effect::Write]);
        assert_eq!(effects("sed -n '1e id'"), [Effect::Exec]);
        assert_eq!(effects("sed -n 'w out'"), [Effect::Write]);
        assert_eq!(effects("printf -v 'x[$(id)]' 1"), [Effect::Exec]);
        assert!(effects("sed -n 1,5p file").is_empty());
        assert!(effects("git status").is_empty());
        assert!(facts("git -C engine status").read_only);
        assert!(!facts("git -c core.pager=sh status").read_only);
    }

    /// With no path, `rg` searches `.` unless its input is given, and `grep -r` searches it
    /// in any case; options bring back what `rg` leaves out.
    #[test]
    fn default_operands_and_search_skips() {
        let section: CommandsSection = serde_json::from_value(serde_json::json!({
            "programs": {
                "rg": {"operands": ["text", "tree"], "default_operand": ".",
                    "default_unless_input": true, "search_skips": ["hidden", "ignored"],
                    "options": {
                        "-e": {"value": "text", "replaces_first_operand": true},
                        "--hidden": {"search_includes": ["hidden"]},
                        "-u": {"search_includes": ["hidden", "ignored"]}}},
                "grep": {"operands": ["text", "tree"], "options": {
                    "-r": {"default_operand": "."}}}
            }
        }))
        .expect("the test table fits the model");
        let table = CommandTable::new(&section);
        let searched = |line: &str| -> Vec<(Vec<String>, Vec<SearchSkip>)> {
            let script = parse_script(line).expect("parses");
            script
                .commands
                .iter()
                .map(|command| {
                    let facts = table.analyse(command);
                    let trees = facts
                        .roles
                        .iter()
                        .filter(|r| r.role == Role::Tree)
                        .map(|r| r.word.raw.clone())
                        .collect();
                    (trees, facts.search_skips)
                })
                .collect()
        };
        let both = vec![SearchSkip::Hidden, SearchSkip::Ignored];
        assert_eq!(searched("rg KEY"), [(vec![".".to_owned()], both.clone())]);
        assert_eq!(
            searched("rg -e KEY"),
            [(vec![".".to_owned()], both.clone())]
        );
        assert_eq!(
            searched("rg KEY src"),
            [(vec!["src".to_owned()], both.clone())]
        );
        assert_eq!(
            searched("rg -e KEY src"),
            [(vec!["src".to_owned()], both.clone())]
        );
        assert_eq!(searched("rg KEY < notes")[0].0, Vec::<String>::new());
        assert_eq!(searched("rg KEY <<< text")[0].0, Vec::<String>::new());
        assert_eq!(searched("cat notes | rg KEY")[1].0, Vec::<String>::new());
        assert_eq!(searched("cat notes | grep -r KEY")[1].0, ["."]);
        assert_eq!(searched("grep KEY")[0].0, Vec::<String>::new());
        assert_eq!(searched("rg --hidden KEY")[0].1, [SearchSkip::Ignored]);
        assert_eq!(searched("rg -u KEY")[0].1, []);
    }

    #[test]
    fn operands_get_their_roles() {
        let roles = |line: &str| -> Vec<(Role, String)> {
            facts(line)
                .roles
                .into_iter()
                .map(|r| (r.role, r.word.raw))
                .collect()
        };
        assert_eq!(
            roles("grep -n foo a b"),
            [
                (Role::Text, "foo".into()),
                (Role::Read, "a".into()),
                (Role::Read, "b".into())
            ]
        );
        assert_eq!(
            roles("grep -e foo a"),
            [(Role::Text, "foo".into()), (Role::Read, "a".into())]
        );
        assert_eq!(
            roles("cp a b dest"),
            [
                (Role::Read, "a".into()),
                (Role::Read, "b".into()),
                (Role::Write, "dest".into())
            ]
        );
        assert_eq!(
            roles("dd if=/dev/sda of=x"),
            [(Role::Read, "/dev/sda".into()), (Role::Write, "x".into())]
        );
        assert_eq!(
            roles("head -c 4096 ~/.aws/credentials"),
            [
                (Role::Text, "4096".into()),
                (Role::Read, "~/.aws/credentials".into())
            ]
        );
        assert_eq!(roles("git log -1 x"), [(Role::RevisionOrPath, "x".into())]);
        assert_eq!(
            roles("xargs -a ~/.ssh/id_rsa echo"),
            [(Role::Read, "~/.ssh/id_rsa".into())]
        );
    }
}
