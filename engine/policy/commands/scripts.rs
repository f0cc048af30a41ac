//! Effects hidden in the content of a word: `sed` scripts, `awk` programs, variable names
//! with subscripts, arithmetic, commands given as option values.
//!
//! The scanners over-approximate: a script they cannot read is code.

use crate::model::command::{Effect, Role};

use super::{EffectFrom, EffectSource, RoleWord};
use crate::policy::shell::{Expansion, Word, name_length};

/// The effects of a word's content, by its role. `effective` says whether setting a variable
/// changes what later commands do (the table's `env` section).
pub(super) fn content_effects(
    role_word: &RoleWord,
    effective: impl Fn(&str) -> bool,
) -> Vec<EffectSource> {
    let effect = |effect: Effect| EffectSource {
        effect,
        cause: role_word.source.clone(),
        from: EffectFrom::Content,
    };
    let Some(text) = role_word.word.literal() else {
        // A script or variable name chosen at run time can do anything.
        return match role_word.role {
            Role::SedScript
            | Role::AwkProgram
            | Role::JqProgram
            | Role::YqProgram
            | Role::Variable
            | Role::Arithmetic
            | Role::Exec => vec![effect(Effect::Exec)],
            // `+FORMAT` prints; anything else may set the clock.
            Role::Clock
                if !role_word
                    .word
                    .raw
                    .trim_start_matches(['"', '\''])
                    .starts_with('+') =>
            {
                vec![effect(Effect::Exec)]
            }
            Role::Clock => Vec::new(),
            Role::Suffix => vec![effect(Effect::Write)],
            Role::ManPage => vec![effect(Effect::Exec)],
            Role::Text
            | Role::Read
            | Role::Write
            | Role::Dir
            | Role::Manifest
            | Role::Tree
            | Role::Listing
            | Role::RevisionOrPath
            | Role::Network
            | Role::Download
            | Role::Archive
            | Role::Patch
            | Role::Unpack
            | Role::Target
            | Role::Data
            | Role::SearchGlob => Vec::new(),
        };
    };
    match role_word.role {
        Role::Exec | Role::Arithmetic => vec![effect(Effect::Exec)],
        // `date MMDDhhmm` sets the machine's clock.
        Role::Clock if !text.starts_with('+') => vec![effect(Effect::Exec)],
        Role::Clock => Vec::new(),
        // `host:file` (a `:` before any `/`) is reached through `rsh`.
        Role::Archive
            if text
                .split_once(':')
                .is_some_and(|(host, _)| !host.contains('/')) =>
        {
            vec![effect(Effect::Network), effect(Effect::Exec)]
        }
        Role::Variable if text.contains('[') => vec![effect(Effect::Exec)],
        // `printf -v HOME …`, `read PATH`, `export CDPATH=…`: what later commands do changes.
        Role::Variable if effective(variable_name(text)) => vec![effect(Effect::Exec)],
        Role::SedScript => sed_effects(text).into_iter().map(effect).collect(),
        Role::AwkProgram => awk_effects(text).into_iter().map(effect).collect(),
        // Modules are files read by a path the program names (`import "../x" as $c`), and
        // `env` / `$ENV` read the environment, secrets included (as awk's `ENVIRON`).
        Role::JqProgram
            if text.contains("import") || text.contains("include") || reads_environment(text) =>
        {
            vec![effect(Effect::Exec)]
        }
        Role::JqProgram => Vec::new(),
        // Either language: jq's modules and environment, mikefarah's `load*` (files read by
        // a path written inside), `env`, `strenv`, `envsubst` (the environment), by name
        // anywhere in the text.
        // mikefarah's `yq eval PROGRAM FILE` (the program is the next word) and its `eval`
        // operator (a program taken from the data), and a `.yq` file, which mikefarah reads
        // as the program.
        Role::YqProgram
            if ["import", "include", "load", "env", "ENV", "eval"]
                .iter()
                .any(|name| text.contains(name))
                || ["e", "ea"].contains(&text)
                || text.ends_with(".yq") =>
        {
            vec![effect(Effect::Exec)]
        }
        Role::YqProgram => Vec::new(),
        Role::ManPage if text.contains('/') => vec![effect(Effect::Exec)],
        Role::ManPage => Vec::new(),
        Role::Variable
        | Role::Text
        | Role::Read
        | Role::Write
        | Role::Dir
        | Role::Manifest
        | Role::Tree
        | Role::Listing
        | Role::RevisionOrPath
        | Role::Network
        | Role::Download
        | Role::Archive
        | Role::Patch
        | Role::Unpack
        | Role::Target
        | Role::Data
        | Role::Suffix
        | Role::SearchGlob => Vec::new(),
    }
}

/// `text` after the white space and `#` comments at its start, which jq skips between tokens.
fn skip_blanks_and_comments(mut text: &str) -> &str {
    loop {
        text = text.trim_start();
        match text.strip_prefix('#') {
            Some(comment) => text = comment.split_once('\n').map_or("", |(_, after)| after),
            None => return text,
        }
    }
}

/// Whether a jq program reads the environment: `$ENV` (jq 1.6 also reads `$ ENV`, blanks
/// and comments between), or the `env` builtin as a word.
fn reads_environment(program: &str) -> bool {
    let dollar_env = program.match_indices('$').any(|(at, _)| {
        let rest = skip_blanks_and_comments(&program[at + 1..]);
        rest.strip_prefix("ENV")
            .is_some_and(|after| !after.starts_with(crate::policy::shell::name_char))
    });
    dollar_env
        || program.match_indices("env").any(|(at, _)| {
            let before = program[..at].chars().next_back();
            let after = program[at + 3..].chars().next();
            let part_of_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
            // `.env` and `"env"` are a key and a string, `$env` a variable.
            !before.is_some_and(|c| part_of_name(c) || matches!(c, '.' | '$' | '"'))
                && !after.is_some_and(part_of_name)
        })
}

/// The variable a `variable` word names: `NAME`, `NAME=value`, `NAME+=value`.
fn variable_name(text: &str) -> &str {
    let end = text.find(['=', '+', '[']).unwrap_or(text.len());
    &text[..end]
}

/// The variables a word assigns as it expands: `${NAME:=value}`, `${NAME=value}` and the
/// same of an element, `${NAME[0]:=value}` (element 0 is the variable's value).
pub(super) fn assigned_variables(raw: &str) -> impl Iterator<Item = &str> {
    raw.match_indices("${").filter_map(|(at, _)| {
        let rest = &raw[at + 2..];
        let end = name_length(rest);
        let mut after = &rest[end..];
        if let Some(subscript) = after.strip_prefix('[') {
            after = subscript.split_once(']').map_or("", |(_, tail)| tail);
        }
        (end > 0 && (after.starts_with(":=") || after.starts_with('='))).then(|| &rest[..end])
    })
}

/// The effects of a `sed` script: `e` and the `e` flag of `s` run commands; `w`, `W` and
/// the `w` flag write files. `r`/`R` read files (not an effect: reading is judged by the
/// file rules only when the file is an operand, so a script that reads is treated as code).
///
/// Seds disagree on where a regular expression ends: GNU sed reads a delimiter inside a
/// bracket expression (`s/[/]/x/`) as part of it, others end the expression there. A script
/// has the effects of either reading.
pub(crate) fn sed_effects(script: &str) -> Vec<Effect> {
    let mut files = Vec::new();
    let mut effects = scan_sed(script, Brackets::Contain, &mut files);
    for effect in scan_sed(script, Brackets::Plain, &mut files) {
        if !effects.contains(&effect) {
            effects.push(effect);
        }
    }
    effects
}

/// The files a `data` value names for the program to read and send: `@FILE` at its start
/// (curl's `-d`, `-H`), after a name with no `=` (`--data-urlencode name@FILE`), or after
/// any `=` as `@FILE` or `<FILE` (`-F name=@FILE`, `-F 'name=x;headers=@FILE'`); each also
/// without a `;type=…` suffix, out of the double quotes `-F` allows around it, and split at
/// `,` (several files to one field). `@-` is standard input.
pub(crate) fn data_files(text: &str) -> Vec<(Role, String)> {
    let mut named: Vec<&str> = Vec::new();
    if let Some((name, file)) = text.split_once('@')
        && !name.contains('=')
    {
        named.push(file);
    }
    for (at, _) in text.match_indices('=') {
        if let Some(file) = text[at + 1..].strip_prefix(['@', '<']) {
            named.push(file);
        }
    }
    let mut files: Vec<(Role, String)> = Vec::new();
    // curl's `-w '%output{FILE}'` writes what follows to FILE (`%output{>>FILE}` appends).
    for (at, _) in text.match_indices("%output{") {
        let rest = &text[at + "%output{".len()..];
        let file = rest.split('}').next().unwrap_or_default();
        let file = file.strip_prefix(">>").unwrap_or(file);
        if !file.is_empty() {
            files.push((Role::Write, file.to_owned()));
        }
    }
    for file in named {
        let unquoted = file
            .strip_prefix('"')
            .and_then(|quoted| quoted.split_once('"'))
            .map(|(inside, _)| inside);
        let pieces = [Some(file), file.split_once(';').map(|(f, _)| f), unquoted];
        for piece in pieces.into_iter().flatten() {
            for piece in std::iter::once(piece).chain(piece.split(',')) {
                let piece = piece.strip_prefix('@').unwrap_or(piece);
                let known = files.iter().any(|(_, f)| f == piece);
                if !piece.is_empty() && piece != "-" && !known {
                    files.push((Role::Read, piece.to_owned()));
                }
            }
        }
    }
    files
}

/// The file a network address reads when it is a `file:` URL (`curl file:///etc/shadow`,
/// `file://localhost/…`, any case), its `%XX` escapes decoded as curl decodes them. A URL
/// curl expands itself (`{a,b}`, `[a-z]`), and an address only known when it runs that may
/// be such a URL (`$URL`, `"file://$PWD/.env"`), is a file only known when it runs.
pub(crate) fn url_file(address: &Word) -> Option<Word> {
    let unknown = || Some(Word::dynamic(&address.raw, Expansion::RuntimeArguments));
    let Some(text) = address.literal() else {
        let unquoted = address.raw.trim_start_matches(['"', '\'']);
        let scheme = unquoted
            .get(..5)
            .is_some_and(|s| s.eq_ignore_ascii_case("file:"));
        return (scheme || unquoted.starts_with(['$', '`']))
            .then(unknown)
            .flatten();
    };
    let rest = text
        .get(..5)
        .filter(|scheme| scheme.eq_ignore_ascii_case("file:"))
        .map(|_| &text[5..])?;
    let path = match rest.strip_prefix("//") {
        // `file://HOST/path`: the path starts at the first `/` after the host.
        Some(host_and_path) => host_and_path
            .find('/')
            .map_or("/", |at| &host_and_path[at..]),
        None => rest,
    };
    // A query or fragment is no part of the file's name (`file:///x/.env?x` reads `.env`).
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let path = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
    if path.contains(['{', '[']) {
        return unknown();
    }
    Some(Word::literal_from(&path, &path))
}

/// The file a download of `address` is saved into, named as wget names it: the last
/// segment of the address's path, its `%XX` escapes decoded, without the query
/// (`index.html` when the path ends in `/` or has none); an address only known when it runs
/// names a file only known when it runs.
pub(crate) fn download_file(address: &Word) -> Word {
    let Some(text) = address.literal() else {
        return Word::dynamic(&address.raw, Expansion::RuntimeArguments);
    };
    let after_scheme = text.split_once("://").map_or(text, |(_, rest)| rest);
    let path = after_scheme
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .split_once('/')
        .map_or("", |(_, path)| path);
    let name = path.rsplit('/').next().unwrap_or_default();
    let name = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
    let name = if name.is_empty() {
        "index.html".into()
    } else {
        name
    };
    Word::literal_from(&name, &name)
}

/// The files a sed script reads (`r FILE`, `R FILE`) and writes (`w FILE`, `W FILE`,
/// `s/…/…/w FILE`) itself, in either reading of its brackets; the standard streams are not
/// files.
pub(crate) fn sed_files(script: &str) -> Vec<(Role, String)> {
    let mut files = Vec::new();
    scan_sed(script, Brackets::Contain, &mut files);
    scan_sed(script, Brackets::Plain, &mut files);
    files
}

/// Records the file named from `i` to the end of the line, for `role`; whether it is a file
/// (not a standard stream).
fn sed_file(chars: &[char], i: usize, role: Role, files: &mut Vec<(Role, String)>) -> bool {
    let name: String = chars[i.min(chars.len())..end_of_line(chars, i)]
        .iter()
        .collect::<String>()
        .trim_start()
        .to_owned();
    let standard = is_standard_stream(&name, role);
    if !standard && !files.contains(&(role, name.clone())) {
        files.push((role, name));
    }
    !standard
}

/// Whether a file name a script writes or reads (`role`) is a standard stream (or none), not
/// a file. Standard input is one only to read: written, gawk, mawk and busybox sed open again
/// the file it comes from (`print > "/dev/stdin"` with `< .git/config` rewrote the config).
fn is_standard_stream(name: &str, role: Role) -> bool {
    match role {
        Role::Write => matches!(name, "" | "/dev/stdout" | "/dev/stderr"),
        _ => matches!(name, "" | "/dev/stdout" | "/dev/stderr" | "/dev/stdin"),
    }
}

/// Whether a delimiter inside a bracket expression of a regular expression ends it.
#[derive(Clone, Copy, PartialEq)]
enum Brackets {
    /// Not inside a bracket expression (GNU sed).
    Contain,
    /// Everywhere (POSIX seds without that extension).
    Plain,
}

fn scan_sed(script: &str, brackets: Brackets, files: &mut Vec<(Role, String)>) -> Vec<Effect> {
    let mut effects = Vec::new();
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let add = |effect: Effect, effects: &mut Vec<Effect>| {
        if !effects.contains(&effect) {
            effects.push(effect);
        }
    };
    while i < chars.len() {
        // Separators and addresses.
        while i < chars.len() && matches!(chars[i], ' ' | '\t' | '\n' | ';' | '{' | '}' | '!') {
            i += 1;
        }
        i = skip_address(&chars, i, brackets);
        while i < chars.len() && matches!(chars[i], ' ' | '\t' | '!') {
            i += 1;
        }
        let Some(&command) = chars.get(i) else { break };
        i += 1;
        match command {
            's' | 'y' => {
                let Some(&delimiter) = chars.get(i) else {
                    add(Effect::Exec, &mut effects);
                    break;
                };
                i += 1;
                let start = i;
                i = if command == 's' {
                    skip_regex(&chars, i, delimiter, brackets)
                } else {
                    skip_delimited(&chars, i, delimiter)
                };
                i = skip_delimited(&chars, i, delimiter);
                // sed ends a command at a newline no `\` escapes: one inside its parts is
                // not sed's reading (a text command's line read as `s,x,` ate the next
                // lines): fail closed.
                if has_bare_newline(&chars[start..i.min(chars.len())]) {
                    add(Effect::Exec, &mut effects);
                    break;
                }
                if command == 's' {
                    while let Some(&flag) = chars.get(i) {
                        match flag {
                            'e' => add(Effect::Exec, &mut effects),
                            'w' => {
                                if sed_file(&chars, i + 1, Role::Write, files) {
                                    add(Effect::Write, &mut effects);
                                }
                                i = end_of_line(&chars, i);
                                break;
                            }
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => {}
                            _ => break,
                        }
                        i += 1;
                    }
                }
            }
            'e' => {
                add(Effect::Exec, &mut effects);
                i = end_of_line(&chars, i);
            }
            'w' | 'W' => {
                if sed_file(&chars, i, Role::Write, files) {
                    add(Effect::Write, &mut effects);
                }
                i = end_of_line(&chars, i);
            }
            'r' | 'R' => {
                add(Effect::Exec, &mut effects);
                sed_file(&chars, i, Role::Read, files);
                i = end_of_line(&chars, i);
            }
            // A label, or `v`'s version: GNU sed ends it at a blank or `;` and reads what
            // follows as the next command (`:x w FILE` writes FILE).
            ':' | 'b' | 't' | 'T' | 'v' => i = end_of_label(&chars, i),
            // An exit code or line length: digits only; sed reads on after them.
            'q' | 'Q' | 'l' | 'L' => {
                while chars
                    .get(i)
                    .is_some_and(|c| matches!(c, ' ' | '\t' | '0'..='9'))
                {
                    i += 1;
                }
            }
            // Text to the end of the line, `\`-newlines included (`1a foo;s,x,` is text):
            // GNU sed's one-line form and `a\` with its lines.
            'a' | 'i' | 'c' => i = end_of_text(&chars, i),
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | 'z' | '=' | 'F' => {}
            // A block after an address (`/x/{p;n}`): its commands follow.
            '{' | '}' => {}
            '#' => i = end_of_line(&chars, i),
            _ => {
                // Not a sed command toolgate knows: fail closed.
                add(Effect::Exec, &mut effects);
                break;
            }
        }
    }
    effects
}

fn skip_address(chars: &[char], mut i: usize, brackets: Brackets) -> usize {
    loop {
        match chars.get(i) {
            Some('0'..='9' | '$' | ',' | '~' | '+' | ' ') => i += 1,
            Some('/') => i = skip_regex(chars, i + 1, '/', brackets),
            Some('\\') => match chars.get(i + 1) {
                Some(&delimiter) => i = skip_regex(chars, i + 2, delimiter, brackets),
                None => return i + 1,
            },
            Some('I' | 'M') if i > 0 && chars.get(i - 1) == Some(&'/') => i += 1,
            _ => return i,
        }
    }
}

/// The index after the next unescaped `delimiter` from `i`.
fn skip_delimited(chars: &[char], mut i: usize, delimiter: char) -> usize {
    while let Some(&c) = chars.get(i) {
        i += 1;
        if c == '\\' {
            i += 1;
        } else if c == delimiter {
            break;
        }
    }
    i
}

/// The index after the regular expression that ends at the next unescaped `delimiter` from
/// `i` (with [`Brackets::Contain`], not one inside a bracket expression: `[/]`, `[^]/]`,
/// `[[:alpha:]/]`).
fn skip_regex(chars: &[char], mut i: usize, delimiter: char, brackets: Brackets) -> usize {
    while let Some(&c) = chars.get(i) {
        i += 1;
        if c == delimiter {
            break;
        } else if c == '\\' {
            i += 1;
        } else if c == '[' && brackets == Brackets::Contain {
            i = skip_bracket(chars, i);
        }
    }
    i
}

/// The index after the bracket expression whose `[` is just before `i`: a `]` first (after
/// an optional `^`) is a member, and `[:class:]`, `[=x=]`, `[.x.]` hold their own `]`.
fn skip_bracket(chars: &[char], mut i: usize) -> usize {
    if chars.get(i) == Some(&'^') {
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        i += 1;
    }
    while let Some(&c) = chars.get(i) {
        i += 1;
        match (c, chars.get(i)) {
            (']', _) => return i,
            ('[', Some(&kind @ (':' | '=' | '.'))) => {
                // To the `kind]` that closes it.
                i += 1;
                while i < chars.len() && !(chars[i] == kind && chars.get(i + 1) == Some(&']')) {
                    i += 1;
                }
                i += 2;
            }
            _ => {}
        }
    }
    i
}

fn end_of_line(chars: &[char], i: usize) -> usize {
    chars[i.min(chars.len())..]
        .iter()
        .position(|&c| c == '\n')
        .map_or(chars.len(), |at| i + at)
}

/// The index after a label (or `v`'s version) that starts after blanks at `i`: it ends at
/// a blank, a newline or `;`, as GNU sed reads it.
fn end_of_label(chars: &[char], mut i: usize) -> usize {
    while chars.get(i).is_some_and(|c| matches!(c, ' ' | '\t')) {
        i += 1;
    }
    while chars
        .get(i)
        .is_some_and(|c| !matches!(c, ' ' | '\t' | '\n' | ';'))
    {
        i += 1;
    }
    i
}

/// The index of the first newline from `i` that no `\` escapes (or the end).
fn end_of_text(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '\n' => return i,
            _ => i += 1,
        }
    }
    chars.len()
}

/// Whether `chars` hold a newline no `\` escapes.
fn has_bare_newline(chars: &[char]) -> bool {
    end_of_text(chars, 0) < chars.len()
}

/// The effects of an `awk` program: `system()`, a pipe to or from a command, and output
/// redirected to a file. A program that reads a file the table cannot judge (`getline <
/// file`, or files chosen through `ARGV`) is code, as `sed`'s `r` is.
///
/// awk's grammar cannot be read reliably from outside (whether a `/` divides or starts a
/// regular expression, where a statement goes on over a newline, gawk's `@name` calls), so
/// the program is judged by what its text holds anywhere, strings included: a `>` after the
/// first `print` writes unless it names a standard stream alone (`$3 > 5 {print}` does
/// not), `getline` with a `<` anywhere reads a file, an `@` before a name calls a function
/// only known when it runs.
pub(crate) fn awk_effects(program: &str) -> Vec<Effect> {
    let mut effects = Vec::new();
    let without_or = program.replace("||", "");
    let reads_a_file = program.contains("getline") && program.contains('<');
    if program.contains("system")
        || without_or.contains('|')
        || program.contains("ENVIRON")
        || program.contains("ARGV")
        || program.contains("ARGC")
        // gawk's tables of every variable and function, and of the process (`SYMTAB["ARGV"]`).
        || program.contains("SYMTAB")
        || program.contains("FUNCTAB")
        || program.contains("PROCINFO")
        // gawk's network files (`"/inet/tcp/0/host/80" |& getline`).
        || program.contains("/inet")
        || reads_a_file
        || indirect_call(program)
    {
        effects.push(Effect::Exec);
    }
    let writes = program.find("print").is_some_and(|first| {
        program[first..].match_indices('>').any(|(at, _)| {
            let at = first + at;
            let compares = program[at + 1..].starts_with('=');
            // `print > "/dev/stderr";`: a standard stream, the whole target.
            let to_stream = redirection_target(program, at).is_some_and(|(name, after)| {
                is_standard_stream(name, Role::Write)
                    && !name.is_empty()
                    && after
                        .trim_start_matches([' ', '\t'])
                        .chars()
                        .next()
                        .is_none_or(|c| matches!(c, ';' | '}' | '\n'))
            });
            !compares && !to_stream
        })
    });
    if writes {
        effects.push(Effect::Write);
    }
    effects
}

/// `program` as awk's lexer would read it, offsets kept — only to name the files a program
/// redirects to, beside its statements as written (its effects do not rest on it): what its
/// strings and regular expressions hold is blanked (each byte an `x`), and comments and
/// `\`-newlines are spaces, so every `;`, `{`, `}`, `<`, `>` and `|` left is the program's own. A `/` starts a regular expression
/// unless it follows an operand (a name other than a keyword, a number, a string, a regular
/// expression, `)`, `]`, `$`, or `++`/`--` after one), as awk reads it.
fn awk_code(program: &str) -> String {
    const KEYWORDS: [&str; 8] = [
        "print", "printf", "return", "in", "case", "do", "else", "getline",
    ];
    let bytes = program.as_bytes();
    let mut code = bytes.to_vec();
    let mut after_operand = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    let width = if bytes[i] == b'\\' { 2 } else { 1 };
                    for byte in code.iter_mut().skip(i).take(width) {
                        *byte = b'x';
                    }
                    i += width;
                }
                i += 1;
                after_operand = true;
            }
            b'/' if !after_operand => {
                i += 1;
                let mut bracket = false;
                while i < bytes.len() && (bracket || bytes[i] != b'/') && bytes[i] != b'\n' {
                    let width = if bytes[i] == b'\\' { 2 } else { 1 };
                    match bytes[i] {
                        b'[' => bracket = true,
                        b']' => bracket = false,
                        _ => {}
                    }
                    for byte in code.iter_mut().skip(i).take(width) {
                        *byte = b'x';
                    }
                    i += width;
                }
                i += 1;
                after_operand = true;
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    code[i] = b' ';
                    i += 1;
                }
            }
            b'\\' if matches!(bytes.get(i + 1), Some(b'\n' | b'\r')) => {
                code[i] = b' ';
                code[i + 1] = b' ';
                i += 2;
            }
            b'+' | b'-' if bytes.get(i + 1) == Some(&b) => {
                // Postfix after an operand, prefix before one: the state stays.
                i += 2;
            }
            _ if b.is_ascii_alphanumeric() || b == b'_' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                after_operand = !KEYWORDS.contains(&&program[start..i]);
            }
            _ => {
                if !b.is_ascii_whitespace() {
                    after_operand = matches!(b, b')' | b']' | b'$');
                }
                i += 1;
            }
        }
    }
    // Only ASCII bytes were replaced, each whole character at a time or by an ASCII byte.
    String::from_utf8(code).unwrap_or_else(|_| program.to_owned())
}

/// The files an awk program names as string literals: written by `print … > "file"` (or
/// `>>`), read by `getline … < "file"`. The redirections are those awk's lexer reads
/// ([`awk_code`]); a name with an escape (`"\x2eenv"`) is not taken as written.
pub(crate) fn awk_files(program: &str) -> Vec<(Role, String)> {
    let code = awk_code(program);
    let mut files = Vec::new();
    // Statements as written and as the lexer reads them: either may name the file.
    let readings = [program, code.as_str()];
    let redirections = readings
        .iter()
        .flat_map(|text| text.char_indices().map(move |(at, c)| (*text, at, c)));
    for (text, at, c) in redirections {
        let role = match c {
            '>' if in_print_statement(&text[..at]) => Role::Write,
            '<' if in_getline_statement(&text[..at]) => Role::Read,
            _ => continue,
        };
        let Some((name, _)) = redirection_target(program, at) else {
            continue;
        };
        let name = name.to_owned();
        if !name.contains('\\')
            && !is_standard_stream(&name, role)
            && !files.contains(&(role, name.clone()))
        {
            files.push((role, name));
        }
    }
    files
}

/// The string literal the redirection at `at` (`>`, `>>`, `<`) names, alone or in
/// parentheses, and the text after it: `print > "out"; n++` gives `("out", "; n++")`, and so
/// does `print > ("out"); n++`.
fn redirection_target(program: &str, at: usize) -> Option<(&str, &str)> {
    let rest = program[at + 1..].trim_start_matches(['>', ' ', '\t']);
    match rest.strip_prefix('(') {
        Some(inner) => {
            let (name, after) = inner.trim_start().strip_prefix('"')?.split_once('"')?;
            Some((name, after.trim_start().strip_prefix(')')?))
        }
        None => rest.strip_prefix('"')?.split_once('"'),
    }
}

/// Whether the text before a `<` is inside a `getline` statement.
fn in_getline_statement(before: &str) -> bool {
    let start = before.rfind(['{', '}', ';', '\n']).map_or(0, |at| at + 1);
    before[start..].contains("getline")
}

/// Whether the text before a `>` is inside a `print` or `printf` statement.
fn in_print_statement(before: &str) -> bool {
    let start = before.rfind(['{', '}', ';', '\n']).map_or(0, |at| at + 1);
    before[start..].contains("print")
}

/// Whether the program may call a function through a variable (gawk's `@name(…)`, also
/// `@ name`, `@awk::name`), whose name, and so what it does (`system`), is only known when it
/// runs — or load an extension or a file (`@load`, `@include`): an `@` before a name.
fn indirect_call(program: &str) -> bool {
    program.match_indices('@').any(|(at, _)| {
        // Blanks and `\`-newlines may come between (`@\⏎f(…)`).
        program[at + 1..]
            .trim_start_matches(|c: char| c.is_whitespace() || c == '\\')
            .starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == ':')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_data_sends() {
        let files = |text: &str| -> Vec<String> {
            data_files(text).into_iter().map(|(_, file)| file).collect()
        };
        assert_eq!(files("@.env"), [".env"]);
        assert_eq!(files("name@.env"), [".env"]);
        assert_eq!(files("f=@.env"), [".env"]);
        assert_eq!(files("f=<.env"), [".env"]);
        assert_eq!(
            files("f=@.env;type=text/plain"),
            [".env;type=text/plain", ".env"]
        );
        assert_eq!(
            files("f=@\".env\";type=x"),
            ["\".env\";type=x", "\".env\"", ".env"]
        );
        assert_eq!(files("f=@a.txt,.env"), ["a.txt,.env", "a.txt", ".env"]);
        assert_eq!(files("a=b;headers=@.env"), [".env"]);
        assert_eq!(files("a=x;type=t;headers=<.env"), [".env"]);
        assert_eq!(
            data_files("%output{>>.git/hooks/pre-commit}#!/bin/sh"),
            [(Role::Write, ".git/hooks/pre-commit".to_owned())]
        );
        // Text, an address after `=`, standard input.
        assert!(files("{\"a\": 1}").is_empty());
        assert!(files("email=a@b.com").is_empty());
        assert!(files("@-").is_empty());
        assert!(files("f=@").is_empty());
    }

    #[test]
    fn downloads_are_saved_under_the_address_name() {
        let saved = |url: &str| download_file(&Word::literal_from(url, url)).raw;
        assert_eq!(saved("https://e.com/a/settings.json"), "settings.json");
        assert_eq!(saved("https://e.com/a/%2Eenv?x=1#y"), ".env");
        assert_eq!(saved("https://e.com/"), "index.html");
        assert_eq!(saved("e.com"), "index.html");
        let unknown = download_file(&Word::dynamic("$URL", Expansion::Parameter));
        assert!(unknown.literal().is_none());
    }

    #[test]
    fn file_urls() {
        let file = |raw: &str, literal: bool| {
            let word = if literal {
                Word::literal_from(raw, raw)
            } else {
                Word::dynamic(raw, Expansion::Parameter)
            };
            url_file(&word).map(|w| (w.raw.clone(), w.literal().is_some()))
        };
        let read = |path: &str| Some((path.to_owned(), true));
        assert_eq!(file("file:///etc/shadow", true), read("/etc/shadow"));
        assert_eq!(
            file("FILE://localhost/etc/shadow", true),
            read("/etc/shadow")
        );
        assert_eq!(file("file:/etc/shadow", true), read("/etc/shadow"));
        assert_eq!(file("file:///etc/%73hadow", true), read("/etc/shadow"));
        assert_eq!(file("file://host", true), read("/"));
        assert_eq!(file("file:///etc/shadow?x", true), read("/etc/shadow"));
        assert_eq!(file("file:///etc/shadow#x", true), read("/etc/shadow"));
        // curl expands these itself; a value only known when it runs may be a file URL.
        let unknown = |raw: &str| Some((raw.to_owned(), false));
        assert_eq!(
            file("file:///x/.e{n,x}v", true),
            unknown("file:///x/.e{n,x}v")
        );
        assert_eq!(
            file("file:///x/.e[n-n]v", true),
            unknown("file:///x/.e[n-n]v")
        );
        assert_eq!(file("file://$PWD/.env", false), unknown("file://$PWD/.env"));
        assert_eq!(file("\"$URL\"", false), unknown("\"$URL\""));
        assert_eq!(file("`cat u`", false), unknown("`cat u`"));
        // Other addresses are not files.
        assert_eq!(file("https://example.com/x", true), None);
        assert_eq!(file("https://$HOST/x", false), None);
        assert_eq!(file("example.com", true), None);
    }

    #[test]
    fn sed_scripts() {
        for (script, expected) in [
            ("p", vec![]),
            ("1,5p", vec![]),
            ("s/a/b/g", vec![]),
            ("/start/,/end/d", vec![]),
            ("s|a|b|", vec![]),
            ("1e id", vec![Effect::Exec]),
            ("s/x/id/e", vec![Effect::Exec]),
            ("w out", vec![Effect::Write]),
            ("w /dev/stdout", vec![]),
            ("w /dev/stdin", vec![Effect::Write]),
            ("s/a/b/w /dev/stderr", vec![]),
            ("s/a/b/w /tmp/x", vec![Effect::Write]),
            ("$!N;P;D", vec![]),
            ("1r /etc/passwd", vec![Effect::Exec]),
            ("2q", vec![]),
            ("s/[a-z]*/X/g", vec![]),
            ("/[0-9]/p", vec![]),
            // A delimiter inside brackets: GNU sed reads on to the real end of the
            // expression (these ran `id`, wrote and read files before).
            ("s/[/]/x/;e id", vec![Effect::Exec]),
            ("s/[[:alpha:]/]/x/;e id", vec![Effect::Exec]),
            ("s/[/]/x/w /tmp/x", vec![Effect::Write]),
            ("s/[/]/x/;r /etc/passwd", vec![Effect::Exec]),
            ("/[/]/e id", vec![Effect::Exec]),
            // …and seds without that extension end it at the first delimiter.
            ("s/[/x/w out;]/y/", vec![Effect::Write]),
            // Labels and `v`'s version end at a blank or `;`: what follows is a command
            // (GNU sed 4.9 writes, reads and runs these).
            (":x w .git/config", vec![Effect::Write]),
            (": x w out", vec![Effect::Write]),
            (":x\tw out", vec![Effect::Write]),
            ("bx;:x w out", vec![Effect::Write]),
            ("v 4.2 w out", vec![Effect::Write]),
            ("b x w out", vec![Effect::Write]),
            ("t x w out", vec![Effect::Write]),
            ("T x;w out", vec![Effect::Write]),
            (":a e id", vec![Effect::Exec]),
            (":a s/.*/id/e", vec![Effect::Exec]),
            (":a r .env", vec![Effect::Exec]),
            ("q 0 w out", vec![Effect::Write]),
            // Everyday loops stay plain.
            (":a;N;$!ba;s/\\n/ /g", vec![]),
            (":a\nN\n$!ba\ns/\\n/ /g", vec![]),
            // A text command's text runs to the end of its line (`\`-newlines included):
            // read as commands, `s,x,` ate the lines after it (GNU sed 4.9 ran `id`, wrote
            // `.git/config` and printed `.env` from these).
            ("1a foo;s,x,\n1e id\ns,y,z,", vec![Effect::Exec]),
            ("1a\\\ns,x,\n1e id\ns,y,z,", vec![Effect::Exec]),
            ("1a foo;s,x,\nw .git/config\ns,y,z,", vec![Effect::Write]),
            ("1i foo}s,x,\n1r .env\ns,y,z,", vec![Effect::Exec]),
            ("1a foo\\\nbar\n1e id", vec![Effect::Exec]),
            ("1a hello; world", vec![]),
            ("$a\\\nlast line", vec![]),
            // A newline no `\` escapes ends a command: inside one, it is not sed's reading.
            ("s,x,\n1e id\n,", vec![Effect::Exec]),
            ("/x/{:l;n;bl}", vec![]),
            ("10q", vec![]),
            ("l 40", vec![]),
        ] {
            assert_eq!(sed_effects(script), expected, "{script}");
        }
    }

    #[test]
    fn words_that_assign_as_they_expand() {
        let names: Vec<&str> = assigned_variables("${A:=x}${B=y}${C:-z}${D}$E ${F_1:=}").collect();
        assert_eq!(names, ["A", "B", "F_1"]);
        let names: Vec<&str> = assigned_variables("${CDPATH[0]:=~}${H[1]=x}${K[2]:-z}").collect();
        assert_eq!(names, ["CDPATH", "H"]);
        assert_eq!(variable_name("PATH+=/x"), "PATH");
        assert_eq!(variable_name("a[1]=2"), "a");
        assert_eq!(variable_name("HOME"), "HOME");
    }

    #[test]
    fn files_an_awk_program_names() {
        assert_eq!(
            awk_files("{print > \".git/hooks/pre-commit\"}"),
            [(Role::Write, ".git/hooks/pre-commit".to_owned())]
        );
        assert_eq!(
            awk_files("{print $1 >> \"log\"; printf \"x\" > \"/dev/stderr\"}"),
            [(Role::Write, "log".to_owned())]
        );
        assert_eq!(
            awk_files("BEGIN{while((getline l < \".env\")>0) print l}"),
            [(Role::Read, ".env".to_owned())]
        );
        assert!(awk_files("$3 > 5 {print \"big\"}").is_empty());
        // Named in parentheses or after a string holding `;`; one with an escape, or joined
        // to another string, is not taken as written.
        assert_eq!(
            awk_files("BEGIN{print \";\" > (\".git/config\")}"),
            [(Role::Write, ".git/config".to_owned())]
        );
        assert_eq!(
            awk_files("BEGIN{while((getline a[\";\"] < \".env\")>0) n++}"),
            [(Role::Read, ".env".to_owned())]
        );
        assert!(awk_files("BEGIN{print > \".git/con\\x66ig\"}").is_empty());
        assert!(awk_files("BEGIN{print > (\".git/co\" \"nfig\")}").is_empty());
    }

    #[test]
    fn files_a_sed_script_names() {
        let files = |script: &str| sed_files(script);
        assert_eq!(files("1r .env"), [(Role::Read, ".env".to_owned())]);
        assert_eq!(
            files("R  notes.txt\np"),
            [(Role::Read, "notes.txt".to_owned())]
        );
        assert_eq!(
            files("w out; p"),
            [(Role::Write, "out; p".to_owned())],
            "a file name runs to the end of the line"
        );
        assert_eq!(
            files("s/a/b/gw log.txt"),
            [(Role::Write, "log.txt".to_owned())]
        );
        assert_eq!(files("s/[/]/x/w f"), [(Role::Write, "f".to_owned())]);
        assert!(files("w /dev/stdout").is_empty());
        assert!(files("s/w/r/g;p").is_empty());
    }

    #[test]
    fn jq_programs_that_read_the_environment() {
        for (program, reads) in [
            ("env", true),
            ("env.HOME", true),
            ("$ENV.AWS_SECRET_ACCESS_KEY", true),
            ("[env[]]", true),
            (".env", false),
            (".config.env_file", false),
            ("select(.name == \"env\")", false),
            ("$env", false),
            ("environment", false),
        ] {
            assert_eq!(reads_environment(program), reads, "{program}");
        }
    }

    #[test]
    fn awk_programs() {
        assert!(awk_effects("{print $1}").is_empty());
        assert!(awk_effects("$3 > 5 {print}").is_empty());
        assert!(awk_effects("NR>1 || NF {print}").is_empty());
        assert_eq!(awk_effects("{system(\"id\")}"), [Effect::Exec]);
        assert_eq!(awk_effects("{print | \"sh\"}"), [Effect::Exec]);
        assert_eq!(awk_effects("{print > \"out\"}"), [Effect::Write]);
        // The standard streams are not files; anything joined to the name makes one.
        assert!(awk_effects("{print > \"/dev/stderr\"}").is_empty());
        assert!(awk_effects("{print $1 >> \"/dev/stdout\"; n++}").is_empty());
        assert_eq!(
            awk_effects("{print > \"/dev/stderr\" \"x\"}"),
            [Effect::Write]
        );
        assert_eq!(
            awk_effects("{print > \"/dev/stderr\"; print > \"out\"}"),
            [Effect::Write]
        );
        assert_eq!(awk_effects("@load \"x\"; {print}"), [Effect::Exec]);
        // Output redirected to a field or a variable, and functions called by name.
        assert_eq!(awk_effects("{print $1 > $2}"), [Effect::Write]);
        assert_eq!(awk_effects("{print > $1}"), [Effect::Write]);
        assert_eq!(
            awk_effects("{printf \"%s\", $0 > (d \"/x\")}"),
            [Effect::Write]
        );
        assert!(awk_effects("$3 > $2 {print $1}").is_empty());
        assert!(awk_effects("{if ($2 >= $3) print}").is_empty());
        assert_eq!(awk_effects("BEGIN{@s(\"id\")}"), [Effect::Exec]);
        assert_eq!(
            awk_effects("BEGIN{f=\"sys\" \"tem\"; @f (\"id\")}"),
            [Effect::Exec]
        );
        // An `@` before a name may call a function only known when it runs, in a string too.
        assert_eq!(awk_effects("{print \"user@host\"}"), [Effect::Exec]);
        assert!(awk_effects("{print $1 \"@\" $2}").is_empty());
        assert!(awk_effects("{ while ((getline line) > 0) n++ } END {print n}").is_empty());
        // What a string, a regular expression or a comment holds is not the program's: a
        // `;` or `}` in one hid the statement's redirection, and so did a `\`-newline.
        for program in [
            "BEGIN{c=\"x\"; print c \";\" > (\".git/config\")}",
            "BEGIN{print \"{\" > (\".git/config\")}",
            "BEGIN{print \"}\" \"x\" > (\"a\")}",
            "/;/ {print > (\"out\")}",
            "{x = /\"/; print \";\" > (\".git/config\")}",
            "{# a \"b\nprint \";\" > (\"out\")}",
        ] {
            assert!(awk_effects(program).contains(&Effect::Write), "{program}");
        }
        // gawk's indirect calls in any spelling (these ran `id`), and what awk's grammar
        // reads differently from a lexer outside it: whether a `/` divides, a statement
        // going on after `,` or a `\`-CRLF (these printed `.env` and wrote `.git/config`).
        for program in [
            "BEGIN{f=\"sys\" \"tem\"; @awk::f(\"id\")}",
            "BEGIN{f=\"system\"; @ f(\"id\")}",
            "BEGIN{x = $/\"/; getline a[\";\"] < \".env\"; print a[\";\"]}",
            "BEGIN{getline / 1; getline a[\";\"] < \".env\"}",
            "BEGIN{getline a[1,\n2] < \".env\"; print a[1,2]}",
            "BEGIN{getline l \\\r\n< \".env\"}",
            "BEGIN{f=\"sys\" \"tem\"; @\\\nf(\"id\")}",
            "@\\\ninclude \"x.awk\"",
            "{print} BEGIN{SYMTAB[\"AR\" \"GV\"][1]=\".env\"}",
            "BEGIN{print SYMTAB[\"ENV\" \"IRON\"][\"TOKEN\"]}",
            "BEGIN{\"/inet/tcp/0/example.com/80\" |& getline l}",
        ] {
            assert!(awk_effects(program).contains(&Effect::Exec), "{program}");
        }
        assert!(
            awk_effects("BEGIN{printf \"%s\",\n\"x\" > (\".git/config\")}")
                .contains(&Effect::Write)
        );
        // Written, standard input is the file it comes from.
        assert_eq!(
            awk_effects("BEGIN{print \"x\" > \"/dev/stdin\"}"),
            [Effect::Write]
        );
        assert_eq!(
            awk_files("BEGIN{print \"x\" > \"/dev/stdin\"}"),
            [(Role::Write, "/dev/stdin".to_owned())]
        );
        for program in [
            "BEGIN{while((getline a[\";\"] < \".env\")>0) print a[\";\"]}",
            "BEGIN{getline l \\\n< \".env\"; print l}",
            "BEGIN{x = \"}\"; getline l < \".env\"}",
        ] {
            assert!(awk_effects(program).contains(&Effect::Exec), "{program}");
        }
        assert!(awk_effects("{n = $1 / 2; print n}").is_empty());
        // As awk's lexer reads it: division after an operand, a regular expression elsewhere.
        for (program, code) in [
            (
                "{i++ / 2; n = (4) / x[1] / 2}",
                "{i++ / 2; n = (4) / x[1] / 2}",
            ),
            ("$0 ~ /a;b/ {print \"x;y\"}", "$0 ~ /xxx/ {print \"xxx\"}"),
            ("{print /[/]/ # c;\n}", "{print /xxx/     \n}"),
            ("{s = \"a\\\"b;\"}", "{s = \"xxxxx\"}"),
        ] {
            assert_eq!(awk_code(program), code, "{program}");
        }
        // Files read by the program itself.
        for program in [
            "BEGIN{getline l < \"/home/dev/.ssh/id_rsa\"; print l}",
            "BEGIN{while((getline l < f)>0) print l}",
            "BEGIN{ARGV[1]=\".env\"; ARGC=2} {print}",
        ] {
            assert_eq!(awk_effects(program), [Effect::Exec], "{program}");
        }
    }
}
