//! Command-line entry: global flags, the subcommand table, help, and turning errors into one
//! line on stderr plus an exit code. This is the only layer that prints.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use crate::cli::error::{exit, Error};

pub mod agent_cmd;
pub mod chat;
pub mod completions;
pub mod doctor;
pub mod error;
pub mod flags;
pub mod goal;
pub mod helpdoc;
pub mod lex;
pub mod man;
pub mod mcp;
pub mod models;
pub mod output;
pub mod run;
pub mod serve;
pub mod session_archive;
pub mod setup;
mod setup_server;
pub mod skills;
pub mod stdout_buffer;
pub mod subagent;
pub mod subagent_edit;
pub mod tools;
pub mod trust;
mod welcome;

use lex::{Arg, Lexer};

/// Flags accepted before the subcommand and by every subcommand.
#[derive(Debug, Clone, Default)]
pub struct Global {
    /// `--config FILE`: layered above the project config.
    pub config: Option<PathBuf>,
    /// `-C/--cd DIR`: the directory to work in.
    pub cd: Option<PathBuf>,
}

impl Global {
    /// Consumes `arg` if it is a global flag. Returns false for anything else.
    pub fn accept(&mut self, arg: &Arg, lexer: &mut Lexer) -> Result<bool, Error> {
        match arg {
            Arg::Long(name) if name == "config" => {
                self.config = Some(PathBuf::from(
                    lexer.value("--config").map_err(Error::Usage)?,
                ));
            }
            Arg::Long(name) if name == "cd" => {
                self.cd = Some(PathBuf::from(lexer.value("--cd").map_err(Error::Usage)?));
            }
            Arg::Short('C') => {
                self.cd = Some(PathBuf::from(lexer.value("-C").map_err(Error::Usage)?));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Applies `-C`: everything after this runs relative to that directory.
    pub fn enter_dir(&self) -> Result<(), Error> {
        if let Some(dir) = &self.cd {
            std::env::set_current_dir(dir).map_err(|e| {
                Error::Usage(format!("cannot change to directory {}: {e}", dir.display()))
            })?;
        }
        Ok(())
    }
}

impl Global {
    /// For commands that only read configuration (`skills`, `subagent list`): enters `-C`,
    /// then loads the layered config of the working directory, its warnings on stderr.
    /// Returns the canonical working directory, the home and what was loaded.
    pub fn load_workspace(&self) -> Result<(PathBuf, PathBuf, crate::config::Loaded), Error> {
        self.enter_dir()?;
        let cwd = std::env::current_dir()
            .and_then(|d| d.canonicalize())
            .map_err(|e| Error::io("reading the working directory", e))?;
        let options = crate::config::LoadOptions::from_env(cwd.clone(), self.config.clone())?;
        let loaded = crate::config::load(&options)?;
        for warning in &loaded.warnings {
            eprintln!("reasonix: warning: {warning}");
        }
        Ok((cwd, options.home, loaded))
    }
}

type Handler = fn(Global, &mut Lexer) -> Result<i32, Error>;

pub struct Command {
    pub name: &'static str,
    pub summary: &'static str,
    /// Full help text shown by `reasonix help NAME`.
    pub help: &'static str,
    handler: Handler,
}

/// Every subcommand, in the order `reasonix help` lists them.
pub const COMMANDS: &[Command] = &[
    Command {
        name: "chat",
        summary: "Open the interactive chat (the default on a terminal)",
        help: chat::HELP,
        handler: chat::main,
    },
    Command {
        name: "run",
        summary: "Run the agent on one task without a chat (for CI and scripts)",
        help: run::HELP,
        handler: run::main,
    },
    Command {
        name: "print",
        summary: "Claude Code's print mode (`reasonix -p`): claude -p flags, output and tool names",
        help: crate::claude::HELP,
        handler: crate::claude::main,
    },
    Command {
        name: "serve",
        summary: "Serve the agent to a browser (token or password auth beyond localhost)",
        help: serve::HELP,
        handler: serve::main,
    },
    Command {
        name: "setup",
        summary: "Write a config (DeepSeek preset, or --base-url for any OpenAI-compatible server)",
        help: setup::HELP,
        handler: setup::main,
    },
    Command {
        name: "models",
        summary: "List the models a provider offers",
        help: models::HELP,
        handler: models::main,
    },
    Command {
        name: "doctor",
        summary: "Check config, keys and endpoint reachability",
        help: doctor::HELP,
        handler: doctor::main,
    },
    Command {
        name: "tools",
        summary: "List the built-in tools (--markdown prints the tool contract)",
        help: tools::HELP,
        handler: tools::main,
    },
    Command {
        name: "skills",
        summary: "List the skills this workspace sees, with their sources and problems",
        help: skills::HELP,
        handler: skills::main,
    },
    Command {
        name: "subagent",
        summary: "List subagent profiles, or run one on a task (try: read-only)",
        help: subagent::HELP,
        handler: subagent::main,
    },
    Command {
        name: "agent",
        summary: "Manage agent compositions (persona + tool selection): list, show, create, ...",
        help: agent_cmd::HELP,
        handler: agent_cmd::main,
    },
    Command {
        name: "mcp",
        summary: "List the MCP servers or call one of their tools",
        help: mcp::HELP,
        handler: mcp::main,
    },
    Command {
        name: "session",
        summary: "Export a saved session as a portable JSON archive, or import one",
        help: session_archive::HELP,
        handler: session_archive::main,
    },
    Command {
        name: "trust",
        summary: "Trust this workspace's reasonix.toml to loosen your settings (--list, --revoke)",
        help: trust::HELP,
        handler: trust::main,
    },
    Command {
        name: "completions",
        summary: "Print a shell completion script (bash, zsh or fish)",
        help: completions::HELP,
        handler: completions::main,
    },
    Command {
        name: "man",
        summary: "Print the manual page reasonix(1) as roff",
        help: man::HELP,
        handler: man::main,
    },
    Command {
        name: "help",
        summary: "Show help for reasonix or one command",
        help: "Usage: reasonix help [COMMAND]\n\nShows the command list, or the full help of COMMAND.\n",
        handler: help_main,
    },
    Command {
        name: "version",
        summary: "Print the version, git commit and target",
        help: "Usage: reasonix version\n\nPrints the version, the git commit and the target triple of this build.\n",
        handler: version_main,
    },
];

const GLOBAL_HELP: &str = "\
Global flags:
  --config FILE   Extra config file, layered above ./reasonix.toml
  -C, --cd DIR    Work in DIR instead of the current directory
  -h, --help      Show help
  -V, --version   Print the version
";

pub fn version_line() -> String {
    // The target triple tells a packager which archive a binary came from.
    let target = option_env!("REASONIX_TARGET");
    match (crate::GIT_COMMIT, target) {
        (Some(commit), Some(target)) => format!("reasonix {} ({commit} {target})", crate::VERSION),
        (Some(commit), None) => format!("reasonix {} ({commit})", crate::VERSION),
        (None, Some(target)) => format!("reasonix {} ({target})", crate::VERSION),
        (None, None) => format!("reasonix {}", crate::VERSION),
    }
}

fn overview() -> String {
    let mut text = format!(
        "{}\nA terminal coding agent for OpenAI-compatible models.\n\nUsage: reasonix [GLOBAL FLAGS] <COMMAND> [ARGS]\n       reasonix [CHAT FLAGS]   (the chat, on a terminal)\n       reasonix -p [PRINT FLAGS] PROMPT   (Claude Code's print mode: `reasonix help print`)\n\nCommands:\n",
        version_line()
    );
    for cmd in COMMANDS {
        text.push_str(&format!("  {:<11} {}\n", cmd.name, cmd.summary));
    }
    text.push('\n');
    text.push_str(GLOBAL_HELP);
    text.push_str("\nRun `reasonix help COMMAND` for a command's flags.\n");
    text
}

fn find(name: &str) -> Option<&'static Command> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// The closest command name, for "did you mean" hints.
fn suggest(name: &str) -> Option<&'static str> {
    COMMANDS
        .iter()
        .map(|c| (edit_distance(name, c.name), c.name))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The error for a flag a command does not know, with the hint users need.
pub fn unknown_flag(command: &str, arg: &Arg) -> Error {
    let shown = arg.shown();
    let help = find(command).map_or("", |c| c.help);
    // `--help` and `--version` only work before a command: not worth suggesting after one.
    let candidates = documented_flags(help)
        .into_iter()
        .chain(documented_flags(GLOBAL_HELP))
        .filter(|flag| !matches!(*flag, "help" | "version"));
    let hint = did_you_mean(arg, candidates);
    Error::Usage(format!(
        "unknown flag `{shown}` for `reasonix {command}`; {hint}run `reasonix help {command}` for its flags"
    ))
}

/// "did you mean `--model`? " when one of the long flags `candidates` is close to `arg`,
/// else nothing.
fn did_you_mean<'a>(arg: &Arg, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let Arg::Long(name) = arg else {
        return String::new();
    };
    let typed = name.to_ascii_lowercase();
    let close = candidates
        .into_iter()
        .map(|flag| (edit_distance(&typed, &flag.to_ascii_lowercase()), flag))
        .filter(|(d, _)| *d <= 2 && *d < typed.len())
        .min();
    match close {
        Some((_, flag)) => format!("did you mean `--{flag}`? "),
        None => String::new(),
    }
}

/// The long flags a help text documents: each `--name` in it, without the dashes. Taken from
/// the help so a suggestion is always a flag the user can look up.
fn documented_flags(help: &str) -> Vec<&str> {
    help.split(|c: char| c.is_whitespace() || matches!(c, ',' | '/' | '(' | ')' | '`' | '='))
        .filter_map(|word| word.strip_prefix("--"))
        .filter(|name| !name.is_empty())
        .collect()
}

/// Config warnings on stderr, one line each.
pub fn print_warnings<'a>(warnings: impl IntoIterator<Item = &'a String>) {
    for warning in warnings {
        eprintln!("reasonix: warning: {warning}");
    }
}

/// Prints to stdout; a closed pipe (`reasonix ... | head`) is not an error.
pub fn print_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

fn help_main(_global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    match lexer.next().map_err(Error::Usage)? {
        None => print_out(&overview()),
        Some(Arg::Value(name)) => match find(&name) {
            Some(cmd) => print_out(&format!("{}\n{GLOBAL_HELP}", cmd.help)),
            None => return Err(unknown_command(&name)),
        },
        Some(other) => return Err(unknown_flag("help", &other)),
    }
    Ok(exit::OK)
}

fn version_main(_global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    if let Some(arg) = lexer.next().map_err(Error::Usage)? {
        return Err(unknown_flag("version", &arg));
    }
    print_out(&format!("{}\n", version_line()));
    Ok(exit::OK)
}

fn unknown_command(name: &str) -> Error {
    let hint = match suggest(name) {
        Some(close) => format!("did you mean `{close}`? "),
        None => String::new(),
    };
    Error::Usage(format!(
        "unknown command `{name}`; {hint}run `reasonix help` for the list"
    ))
}

/// Parses global flags up to the subcommand and dispatches to it. Bare `reasonix` is the
/// chat, so a chat flag before any command (`reasonix -c`) opens the chat with it.
fn dispatch(args: Vec<String>) -> Result<i32, Error> {
    let print_mode = crate::claude::requested(&args);
    let mut lexer = Lexer::new(args);
    let mut global = Global::default();
    loop {
        let Some(arg) = lexer.next().map_err(Error::Usage)? else {
            // Bare `reasonix` on a terminal is the chat; piped, it explains itself.
            if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
                return bare_chat(global, &mut lexer);
            }
            print_out(&overview());
            return Ok(exit::OK);
        };
        if global.accept(&arg, &mut lexer)? {
            continue;
        }
        match arg {
            Arg::Long(name) if name == "help" => return help_main(global, &mut lexer),
            Arg::Short('h') => return help_main(global, &mut lexer),
            Arg::Long(name) if name == "version" => return version_main(global, &mut lexer),
            Arg::Short('V') => return version_main(global, &mut lexer),
            // `reasonix "task" -p`: with print mode asked for, a word that names no command
            // is its prompt, as `claude` reads it.
            Arg::Value(name) if print_mode && find(&name).is_none() => {
                lexer.push_back(Arg::Value(name));
                return crate::claude::main(global, &mut lexer);
            }
            Arg::Value(name) => {
                let cmd = find(&name).ok_or_else(|| unknown_command(&name))?;
                if lexer.asks_for_help() {
                    // `reasonix run --help` is `reasonix help run`, whatever else is given.
                    print_out(&format!("{}\n{GLOBAL_HELP}", cmd.help));
                    return Ok(exit::OK);
                }
                return (cmd.handler)(global, &mut lexer);
            }
            // `reasonix -p ...` or `--output-format ...` before any command: Claude Code's
            // print mode, whatever flag came first.
            other if print_mode => {
                lexer.push_back(other);
                return crate::claude::main(global, &mut lexer);
            }
            other if is_chat_flag(&other) => {
                lexer.push_back(other);
                return chat::main(global, &mut lexer);
            }
            other => {
                let candidates = [GLOBAL_HELP, chat::HELP]
                    .into_iter()
                    .flat_map(documented_flags);
                let hint = did_you_mean(&other, candidates);
                return Err(Error::Usage(format!(
                    "unknown flag `{}`; {hint}run `reasonix help` for the global flags",
                    other.shown()
                )));
            }
        }
    }
}

/// Whether `arg` is one of the flags `reasonix chat` documents.
fn is_chat_flag(arg: &Arg) -> bool {
    match arg {
        Arg::Long(name) => documented_flags(chat::HELP).contains(&name.as_str()),
        Arg::Short(c) => chat::HELP.contains(&format!("  -{c}, --")),
        Arg::Value(_) => false,
    }
}

/// Bare `reasonix` on a terminal: the chat, or on a first run without a key, a welcome that
/// says how to get one instead of an authentication error.
fn bare_chat(global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    if let Some(welcome) = welcome::first_run(&global) {
        print_out(&welcome);
        return Ok(exit::OK);
    }
    chat::main(global, lexer)
}

/// Runs the CLI and returns the process exit code. Errors become one line on stderr.
pub fn main(args: Vec<String>) -> i32 {
    match dispatch(args) {
        Ok(code) => code,
        Err(err) => {
            // Errors can carry server-supplied text (a provider's error body).
            let message = crate::term::sanitize::sanitize(&err.to_string());
            let _ = writeln!(std::io::stderr(), "reasonix: {message}");
            err.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_command_names() {
        assert_eq!(suggest("rn"), Some("run"));
        assert_eq!(suggest("doctr"), Some("doctor"));
        assert_eq!(suggest("zzzzzzzz"), None);
    }

    #[test]
    fn suggests_documented_flags_for_unknown_long_flags() {
        let hint = |name: &str| {
            let candidates = [run::HELP, GLOBAL_HELP]
                .into_iter()
                .flat_map(documented_flags);
            did_you_mean(&Arg::Long(name.into()), candidates)
        };
        assert_eq!(hint("modle"), "did you mean `--model`? ");
        assert_eq!(hint("allowed-tools"), "did you mean `--allowedTools`? ");
        assert_eq!(hint("max-step"), "did you mean `--max-steps`? ");
        assert_eq!(hint("confg"), "did you mean `--config`? ");
        assert_eq!(hint("frobnicate"), "");
        assert_eq!(
            did_you_mean(&Arg::Short('z'), documented_flags(run::HELP)),
            ""
        );
    }

    #[test]
    fn chat_flags_are_known_from_the_chat_help() {
        for flag in ["model", "continue", "resume", "fork-session", "effort"] {
            assert!(is_chat_flag(&Arg::Long(flag.into())), "{flag}");
        }
        assert!(is_chat_flag(&Arg::Short('c')) && is_chat_flag(&Arg::Short('m')));
        assert!(!is_chat_flag(&Arg::Long("max-steps".into())));
        assert!(!is_chat_flag(&Arg::Short('p')));
    }
}
