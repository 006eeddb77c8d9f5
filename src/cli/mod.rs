//! Command-line entry: global flags, the subcommand table, help, and turning errors into one
//! line on stderr plus an exit code. This is the only layer that prints.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use crate::error::{exit, Error};

pub mod assemble;
pub mod chat;
pub mod doctor;
pub mod lex;
pub mod mcp;
pub mod models;
pub mod output;
pub mod run;
pub mod setup;
mod stdout_buffer;
pub mod tools;
pub mod trust;

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
        name: "setup",
        summary: "Write a default config (DeepSeek preset) and store a provider key",
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
        name: "mcp",
        summary: "List the MCP servers or call one of their tools",
        help: mcp::HELP,
        handler: mcp::main,
    },
    Command {
        name: "trust",
        summary: "Trust this workspace's reasonix.toml to loosen your settings (--list, --revoke)",
        help: trust::HELP,
        handler: trust::main,
    },
    Command {
        name: "help",
        summary: "Show help for reasonix or one command",
        help: "Usage: reasonix help [COMMAND]\n\nShows the command list, or the full help of COMMAND.\n",
        handler: help_main,
    },
    Command {
        name: "version",
        summary: "Print the version and git commit",
        help: "Usage: reasonix version\n\nPrints the version and the git commit of this build.\n",
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
    match crate::GIT_COMMIT {
        Some(commit) => format!("reasonix {} ({commit})", crate::VERSION),
        None => format!("reasonix {}", crate::VERSION),
    }
}

fn overview() -> String {
    let mut text = format!(
        "{}\nA terminal coding agent for OpenAI-compatible models.\n\nUsage: reasonix [GLOBAL FLAGS] <COMMAND> [ARGS]\n\nCommands:\n",
        version_line()
    );
    for cmd in COMMANDS {
        text.push_str(&format!("  {:<9} {}\n", cmd.name, cmd.summary));
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
    Error::Usage(format!(
        "unknown flag `{shown}` for `reasonix {command}`; run `reasonix help {command}` for its flags"
    ))
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

/// Parses global flags up to the subcommand and dispatches to it.
fn dispatch(args: Vec<String>) -> Result<i32, Error> {
    let mut lexer = Lexer::new(args);
    let mut global = Global::default();
    loop {
        let Some(arg) = lexer.next().map_err(Error::Usage)? else {
            // Bare `reasonix` on a terminal is the chat; piped, it explains itself.
            if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
                return chat::main(global, &mut lexer);
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
            Arg::Value(name) => {
                let cmd = find(&name).ok_or_else(|| unknown_command(&name))?;
                return (cmd.handler)(global, &mut lexer);
            }
            other => {
                return Err(Error::Usage(format!(
                    "unknown flag `{}`; run `reasonix help` for the global flags",
                    other.shown()
                )));
            }
        }
    }
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
}
