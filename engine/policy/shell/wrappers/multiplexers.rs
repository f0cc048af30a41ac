//! Terminal multiplexers: `tmux` and `screen` start commands in sessions that outlive the
//! line. What they are told to run is judged as a command run by a runner; what they could
//! be made to run later and out of sight (keys typed into a pane, a configuration file,
//! key bindings, hooks) asks.

use super::super::shell_word;
use super::{Analysis, Inner, Outcome, Transparency, Word, malformed, unknown};

/// What a tmux command does with its operands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Acts {
    /// Runs nothing: lists, selects, resizes, kills.
    Inert,
    /// Its operands are a command started in a new pane, window or session (one word is
    /// run by the shell, several are run as they are).
    Spawns,
    /// `run-shell`: its first operand is a script; the others fill the script's formats.
    RunsShell,
    /// Runs something the line does not show: keys typed into a pane, a configuration file,
    /// tmux commands bound to keys or hooks, options that name commands.
    Unseen,
}

/// One tmux command: its name, its alias, its options (as tmux's `getopt`-like string:
/// a letter followed by `:` takes a value) and what it does.
struct TmuxCommand {
    name: &'static str,
    alias: &'static str,
    options: &'static str,
    acts: Acts,
}

const fn tmux(
    name: &'static str,
    alias: &'static str,
    options: &'static str,
    acts: Acts,
) -> TmuxCommand {
    TmuxCommand {
        name,
        alias,
        options,
        acts,
    }
}

/// tmux's commands (from its `cmd-*.c` entries). A command not listed here asks.
const TMUX_COMMANDS: &[TmuxCommand] = &[
    tmux("attach-session", "attach", "c:dEf:rt:x", Acts::Inert),
    tmux("break-pane", "breakp", "abdPF:n:s:t:Wx:X:y:Y:", Acts::Inert),
    tmux(
        "capture-pane",
        "capturep",
        "ab:CeE:FHJLMNpPqRS:Tt:",
        Acts::Inert,
    ),
    tmux("clear-history", "clearhist", "Ht:", Acts::Inert),
    tmux("clock-mode", "", "t:", Acts::Inert),
    tmux("copy-mode", "", "dekHMqSs:t:u", Acts::Inert),
    tmux("delete-buffer", "deleteb", "b:", Acts::Inert),
    tmux("display-message", "display", "aCc:d:lINpt:F:v", Acts::Inert),
    tmux("find-window", "findw", "CiNrt:TZ", Acts::Inert),
    tmux("has-session", "has", "t:", Acts::Inert),
    tmux("join-pane", "joinp", "bdfhvp:l:s:t:", Acts::Inert),
    tmux("kill-pane", "killp", "af:t:", Acts::Inert),
    tmux("kill-server", "", "", Acts::Inert),
    tmux("kill-session", "", "aCgf:t:", Acts::Inert),
    tmux("kill-window", "killw", "af:t:", Acts::Inert),
    tmux("last-pane", "lastp", "det:Z", Acts::Inert),
    tmux("last-window", "last", "t:", Acts::Inert),
    tmux("link-window", "linkw", "abdks:t:", Acts::Inert),
    tmux("list-buffers", "lsb", "F:f:O:r", Acts::Inert),
    tmux("list-clients", "lsc", "F:f:O:rt:", Acts::Inert),
    tmux("list-commands", "lscm", "F:", Acts::Inert),
    tmux("list-keys", "lsk", "1aF:NO:P:rT:", Acts::Inert),
    tmux("list-panes", "lsp", "aF:f:O:rst:", Acts::Inert),
    tmux("list-sessions", "ls", "F:f:O:r", Acts::Inert),
    tmux("list-windows", "lsw", "aF:f:O:rt:", Acts::Inert),
    tmux("move-window", "movew", "abdkrs:t:", Acts::Inert),
    tmux("next-layout", "nextl", "t:", Acts::Inert),
    tmux("next-window", "next", "at:", Acts::Inert),
    tmux("previous-layout", "prevl", "t:", Acts::Inert),
    tmux("previous-window", "prev", "at:", Acts::Inert),
    tmux("rename-session", "rename", "t:", Acts::Inert),
    tmux("rename-window", "renamew", "t:", Acts::Inert),
    tmux("resize-window", "resizew", "aADLRt:Ux:y:", Acts::Inert),
    tmux("rotate-window", "rotatew", "Dt:UZ", Acts::Inert),
    tmux("select-layout", "selectl", "Enopt:", Acts::Inert),
    tmux("select-pane", "selectp", "DdegLlMmP:RT:t:UZ", Acts::Inert),
    tmux("select-window", "selectw", "lnpTt:", Acts::Inert),
    tmux("show-buffer", "showb", "b:", Acts::Inert),
    tmux("show-hooks", "", "BF:gpt:w", Acts::Inert),
    tmux("show-messages", "showmsgs", "JTt:", Acts::Inert),
    tmux("show-options", "show", "AgF:Hpqst:vw", Acts::Inert),
    tmux("show-window-options", "showw", "F:gvt:", Acts::Inert),
    tmux("start-server", "start", "", Acts::Inert),
    tmux("swap-pane", "swapp", "dDs:t:UZ", Acts::Inert),
    tmux("swap-window", "swapw", "ds:t:", Acts::Inert),
    tmux("switch-client", "switchc", "c:EFlnO:pt:rT:Z", Acts::Inert),
    tmux("unbind-key", "unbind", "anqT:", Acts::Inert),
    tmux("unlink-window", "unlinkw", "kt:", Acts::Inert),
    tmux("wait-for", "wait", "EF:LSUlvw:", Acts::Inert),
    tmux(
        "new-session",
        "new",
        "Ac:dDe:EF:f:n:Ps:t:x:Xy:",
        Acts::Spawns,
    ),
    tmux("new-window", "neww", "abc:de:EF:kn:PSt:", Acts::Spawns),
    tmux(
        "new-pane",
        "newp",
        "AbB:Cc:de:EfF:hIkl:KLMm:Op:PR:s:S:t:T:vWx:X:y:Y:Z",
        Acts::Spawns,
    ),
    tmux(
        "split-window",
        "splitw",
        "bB:c:de:EfF:hIkl:m:p:PR:s:S:t:T:vWZ",
        Acts::Spawns,
    ),
    tmux("respawn-pane", "respawnp", "c:e:Ekt:", Acts::Spawns),
    tmux("respawn-window", "respawnw", "c:e:Ekt:", Acts::Spawns),
    tmux(
        "display-popup",
        "popup",
        "Bb:Cc:d:e:Eh:kNs:S:t:T:w:x:y:",
        Acts::Spawns,
    ),
    tmux("pipe-pane", "pipep", "IOot:", Acts::Spawns),
    tmux("run-shell", "run", "bd:Ct:Es:c:", Acts::RunsShell),
    tmux("bind-key", "bind", "", Acts::Unseen),
    tmux("choose-buffer", "", "", Acts::Unseen),
    tmux("choose-client", "", "", Acts::Unseen),
    tmux("choose-tree", "", "", Acts::Unseen),
    tmux("clear-prompt-history", "clearphist", "", Acts::Unseen),
    tmux("command-prompt", "", "", Acts::Unseen),
    tmux("confirm-before", "confirm", "", Acts::Unseen),
    tmux("customize-mode", "", "", Acts::Unseen),
    tmux("detach-client", "detach", "", Acts::Unseen),
    tmux("display-menu", "menu", "", Acts::Unseen),
    tmux("display-panes", "displayp", "", Acts::Unseen),
    tmux("if-shell", "if", "", Acts::Unseen),
    tmux("load-buffer", "loadb", "", Acts::Unseen),
    tmux("lock-client", "lockc", "", Acts::Unseen),
    tmux("lock-server", "lock", "", Acts::Unseen),
    tmux("lock-session", "locks", "", Acts::Unseen),
    tmux("move-pane", "movep", "", Acts::Unseen),
    tmux("paste-buffer", "pasteb", "", Acts::Unseen),
    tmux("refresh-client", "refresh", "", Acts::Unseen),
    tmux("resize-pane", "resizep", "", Acts::Unseen),
    tmux("save-buffer", "saveb", "", Acts::Unseen),
    tmux("send-keys", "send", "", Acts::Unseen),
    tmux("send-prefix", "", "", Acts::Unseen),
    tmux("server-access", "", "", Acts::Unseen),
    tmux("set-buffer", "setb", "", Acts::Unseen),
    tmux("set-environment", "setenv", "", Acts::Unseen),
    tmux("set-hook", "", "", Acts::Unseen),
    tmux("set-option", "set", "", Acts::Unseen),
    tmux("set-window-option", "setw", "", Acts::Unseen),
    // Prints the environment, secrets among it.
    tmux("show-environment", "showenv", "", Acts::Unseen),
    tmux("show-prompt-history", "showphist", "", Acts::Unseen),
    tmux("source-file", "source", "", Acts::Unseen),
    tmux("suspend-client", "suspendc", "", Acts::Unseen),
    tmux("switch-mode", "", "", Acts::Unseen),
];

/// The command `name` names as tmux finds it: an alias, the whole name, or a prefix of
/// exactly one name (`run-s` is `run-shell`).
fn tmux_command(name: &str) -> Option<&'static TmuxCommand> {
    if let Some(command) = TMUX_COMMANDS
        .iter()
        .find(|c| c.name == name || (!c.alias.is_empty() && c.alias == name))
    {
        return Some(command);
    }
    let mut prefixed = TMUX_COMMANDS.iter().filter(|c| c.name.starts_with(name));
    match (prefixed.next(), prefixed.next()) {
        (Some(command), None) if !name.is_empty() => Some(command),
        _ => None,
    }
}

/// Whether option letter `letter` of `options` takes a value; `None` when it is not one.
fn takes_value(options: &str, letter: char) -> Option<bool> {
    let at = options.find(letter).filter(|_| letter != ':')?;
    Some(options[at + letter.len_utf8()..].starts_with(':'))
}

/// `tmux [options] [command [flags] [args…]] [; command…]`: the commands are split at a
/// word that ends in an unescaped `;`, as tmux splits its arguments.
pub(super) fn tmux_analyse(args: &[Word]) -> Outcome {
    let mut texts = Vec::with_capacity(args.len());
    for word in args {
        texts.push(word.literal().ok_or_else(|| malformed("tmux"))?);
    }
    if texts.iter().any(|t| t.contains("#(")) {
        // A format's `#(…)` runs a shell command.
        return Err(malformed("tmux"));
    }
    let mut inners = Vec::new();
    let mut i = 0;
    // tmux's own options.
    while let Some(&text) = texts.get(i) {
        if text == "--" {
            i += 1;
            break;
        }
        let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) else {
            break;
        };
        for (at, letter) in cluster.char_indices() {
            match takes_value("2c:CDdf:hlL:NqS:T:uUvV", letter) {
                // Control mode runs the commands it reads from standard input.
                None | Some(false) if letter == 'C' => return Err(unknown("tmux", "-C")),
                None => return Err(unknown("tmux", &format!("-{letter}"))),
                Some(false) => continue,
                Some(true) => {}
            }
            let rest = &cluster[at + letter.len_utf8()..];
            let value = if rest.is_empty() {
                i += 1;
                *texts.get(i).ok_or_else(|| malformed("tmux"))?
            } else {
                rest
            };
            match letter {
                // `-c` runs a script in the default shell.
                'c' => inners.push(spawned(None, &[], &[value])),
                // A configuration file runs the tmux commands it holds.
                'f' => return Err(unknown("tmux", "-f")),
                _ => {}
            }
            break;
        }
        i += 1;
    }
    for words in split_tmux_commands(&texts[i.min(texts.len())..]) {
        if let Some(inner) = tmux_one(&words)? {
            inners.push(inner);
        }
    }
    if inners.is_empty() {
        return Ok(Analysis::NotAWrapper);
    }
    Ok(Analysis::Wraps {
        wrapper: "tmux".to_owned(),
        inners,
        transparency: Transparency::Runner,
    })
}

/// tmux's commands of `words`: a word ending in `;` ends a command (`\;` is a `;` kept).
fn split_tmux_commands(words: &[&str]) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut current = Vec::new();
    for word in words {
        match word.strip_suffix(';') {
            Some(kept) if kept.ends_with('\\') => {
                current.push(format!("{};", &kept[..kept.len() - 1]));
            }
            Some(last) => {
                if !last.is_empty() {
                    current.push(last.to_owned());
                }
                commands.push(std::mem::take(&mut current));
            }
            None => current.push((*word).to_owned()),
        }
    }
    commands.push(current);
    commands.retain(|c| !c.is_empty());
    commands
}

/// One tmux command: the command it starts, if any.
fn tmux_one(words: &[String]) -> Result<Option<Inner>, super::UnresolvedReason> {
    let Some((name, args)) = words.split_first() else {
        return Ok(None);
    };
    let label = format!("tmux {name}");
    let command = tmux_command(name).ok_or_else(|| malformed(&label))?;
    if command.acts == Acts::Unseen {
        return Err(malformed(&format!("tmux {}", command.name)));
    }
    // The options given, with their values (empty for a flag).
    let mut values: Vec<(char, &str)> = Vec::new();
    let mut i = 0;
    while let Some(text) = args.get(i) {
        if text == "--" {
            i += 1;
            break;
        }
        let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) else {
            break;
        };
        for (at, letter) in cluster.char_indices() {
            match takes_value(command.options, letter) {
                None => return Err(unknown(&label, &format!("-{letter}"))),
                Some(false) => {
                    values.push((letter, ""));
                    continue;
                }
                Some(true) => {}
            }
            let rest = &cluster[at + letter.len_utf8()..];
            let value = if rest.is_empty() {
                i += 1;
                args.get(i).ok_or_else(|| malformed(&label))?.as_str()
            } else {
                rest
            };
            values.push((letter, value));
            break;
        }
        i += 1;
    }
    let operands: Vec<&str> = args[i.min(args.len())..]
        .iter()
        .map(String::as_str)
        .collect();
    let formats = || {
        operands
            .iter()
            .chain(values.iter().map(|(_, v)| v))
            .any(|t| t.contains("#{"))
    };
    let value = |letter: char| {
        values
            .iter()
            .rev()
            .find(|(l, _)| *l == letter)
            .map(|(_, v)| *v)
    };
    let environment: Vec<&str> = values
        .iter()
        .filter(|(l, _)| *l == 'e')
        .map(|(_, v)| *v)
        .collect();
    match command.acts {
        Acts::Inert | Acts::Unseen => Ok(None),
        Acts::Spawns => {
            if operands.is_empty() {
                // The default shell, for a person to type into; variables given to it
                // (`-e PROMPT_COMMAND=…`) may run commands in it.
                return if environment.is_empty() {
                    Ok(None)
                } else {
                    Err(malformed(&label))
                };
            }
            if formats() {
                // Formats fill in text the line does not show (`#{pane_current_path}`).
                return Err(malformed(&label));
            }
            // `display-popup -c` names a client; its folder is `-d`.
            let folder = if command.name == "display-popup" {
                value('d')
            } else if command.name == "pipe-pane" {
                None
            } else {
                value('c')
            };
            Ok(Some(spawned(folder, &environment, &operands)))
        }
        Acts::RunsShell => {
            if values.iter().any(|(l, _)| matches!(l, 'C' | 's')) {
                // `-C` runs tmux commands; `-s` is not documented.
                return Err(malformed(&label));
            }
            match operands.first() {
                None => Ok(None),
                Some(_) if formats() => Err(malformed(&label)),
                Some(script) => Ok(Some(spawned(value('c'), &[], &[script]))),
            }
        }
    }
}

/// The command a multiplexer starts: one word is a script for the shell, several are the
/// command's words. Its folder and environment are given to `env`, which is judged through.
fn spawned(folder: Option<&str>, environment: &[&str], operands: &[&str]) -> Inner {
    let mut words = Vec::new();
    if folder.is_some() || !environment.is_empty() {
        words.push("env");
        if let Some(folder) = folder {
            words.extend(["-C", folder]);
        }
        words.extend(environment.iter().copied());
    }
    if let [script] = operands {
        words.extend(["sh", "-c", script]);
    } else {
        words.extend(operands.iter().copied());
    }
    Inner {
        words: words
            .iter()
            .map(|w| Word::literal_from(&shell_word(w), w))
            .collect(),
        assignments: Vec::new(),
    }
}

/// `screen [options] [command [args…]]`: the command runs as it is, in a new window.
/// Reattaching (`-r`, `-x`, `-d`, `-D`, `-R` without `-m`) and listing run nothing; a
/// configuration file (`-c`), another shell (`-s`), a command sent to a session (`-X`) or a
/// log file (`-Logfile`) asks.
pub(super) fn screen_analyse(args: &[Word]) -> Outcome {
    let mut i = 0;
    let mut detached = false;
    let mut reattaches = false;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else {
            if word.raw.starts_with('-') {
                return Err(malformed("screen"));
            }
            break;
        };
        match text {
            "--" => {
                i += 1;
                break;
            }
            "-ls" | "-list" | "-wipe" | "--version" | "--help" => return Ok(Analysis::NotAWrapper),
            "-fn" | "-fa" | "-ln" => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) else {
            break;
        };
        for (at, letter) in cluster.char_indices() {
            match letter {
                'm' => detached = true,
                'd' | 'D' | 'r' | 'R' | 'x' => reattaches = true,
                'a' | 'A' | 'f' | 'i' | 'l' | 'L' | 'O' | 'q' | 'Q' | 'U' | 'v' => {}
                'e' | 'h' | 'p' | 'S' | 't' | 'T' => {
                    if cluster[at + 1..].is_empty() {
                        i += 1;
                        args.get(i).ok_or_else(|| malformed("screen"))?;
                    }
                    break;
                }
                _ => return Err(unknown("screen", &format!("-{letter}"))),
            }
        }
        i += 1;
    }
    let operands = &args[i.min(args.len())..];
    if reattaches && !detached {
        // `screen -r [session]`: the operand names a session.
        return if operands.len() <= 1 {
            Ok(Analysis::NotAWrapper)
        } else {
            Err(malformed("screen"))
        };
    }
    if operands.is_empty() {
        return Ok(Analysis::NotAWrapper);
    }
    Ok(Analysis::Wraps {
        wrapper: "screen".to_owned(),
        inners: vec![Inner {
            words: operands.to_vec(),
            assignments: Vec::new(),
        }],
        transparency: Transparency::Runner,
    })
}
