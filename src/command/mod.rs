//! Slash commands (§3.8) and the one input path: [`input`] turns what a user typed into a
//! built-in to carry out or a message to send, the same way for the chat UI, the plain chat
//! and `reasonix run`. Here also the built-in table ([`Builtin`]), custom Markdown commands
//! (`custom`), MCP prompts as commands (`mcp`), `@` references (`refs`) and the one quoting
//! rule (`words`). This layer decides what an input means and produces text; carrying out a
//! built-in (clearing the session, switching the model) is the front end's job.

pub mod custom;
pub mod input;
pub mod mcp;
pub mod refs;
pub mod words;

use std::fmt;

use crate::i18n::Ui;
use crate::mcp::host::PromptInfo;
use crate::mcp::McpError;
use custom::CustomCommand;

/// The built-in commands. Front ends `match` on it, so a new one cannot be left unhandled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    Help,
    New,
    Clear,
    Compact,
    Model,
    Effort,
    Mcp,
    Tools,
    Cost,
    Status,
    Resume,
    Memory,
    Rewind,
    Verbose,
    Plan,
    Goal,
    Replan,
    Agent,
    Persona,
    Exit,
}

impl Builtin {
    /// Every built-in, in the order `/help` lists them.
    pub const ALL: [Builtin; 20] = [
        Builtin::Help,
        Builtin::New,
        Builtin::Clear,
        Builtin::Compact,
        Builtin::Model,
        Builtin::Effort,
        Builtin::Mcp,
        Builtin::Tools,
        Builtin::Cost,
        Builtin::Status,
        Builtin::Resume,
        Builtin::Memory,
        Builtin::Rewind,
        Builtin::Verbose,
        Builtin::Plan,
        Builtin::Goal,
        Builtin::Replan,
        Builtin::Agent,
        Builtin::Persona,
        Builtin::Exit,
    ];

    /// The name without the slash.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Help => "help",
            Builtin::New => "new",
            Builtin::Clear => "clear",
            Builtin::Compact => "compact",
            Builtin::Model => "model",
            Builtin::Effort => "effort",
            Builtin::Mcp => "mcp",
            Builtin::Tools => "tools",
            Builtin::Cost => "cost",
            Builtin::Status => "status",
            Builtin::Resume => "resume",
            Builtin::Memory => "memory",
            Builtin::Rewind => "rewind",
            Builtin::Verbose => "verbose",
            Builtin::Plan => "plan",
            Builtin::Goal => "goal",
            Builtin::Replan => "replan",
            Builtin::Agent => "agent",
            Builtin::Persona => "persona",
            Builtin::Exit => "exit",
        }
    }

    /// The one-line description in the interface language (`/help`, the command menu).
    pub fn description(self) -> &'static str {
        crate::i18n::tr(match self {
            Builtin::Help => Ui::CmdHelp,
            Builtin::New => Ui::CmdNew,
            Builtin::Clear => Ui::CmdClear,
            Builtin::Compact => Ui::CmdCompact,
            Builtin::Model => Ui::CmdModel,
            Builtin::Effort => Ui::CmdEffort,
            Builtin::Mcp => Ui::CmdMcp,
            Builtin::Tools => Ui::CmdTools,
            Builtin::Cost => Ui::CmdCost,
            Builtin::Status => Ui::CmdStatus,
            Builtin::Resume => Ui::CmdResume,
            Builtin::Memory => Ui::CmdMemory,
            Builtin::Rewind => Ui::CmdRewind,
            Builtin::Verbose => Ui::CmdVerbose,
            Builtin::Plan => Ui::CmdPlan,
            Builtin::Goal => Ui::CmdGoal,
            Builtin::Replan => Ui::CmdReplan,
            Builtin::Agent => Ui::CmdAgent,
            Builtin::Persona => Ui::CmdPersona,
            Builtin::Exit => Ui::CmdExit,
        })
    }

    pub fn argument_hint(self) -> &'static str {
        match self {
            Builtin::Model => "[provider|model|provider/model]",
            Builtin::Effort => "[low|medium|high|max|default]",
            Builtin::Goal => "[--research|--simple] OBJECTIVE | clear",
            Builtin::Replan => "[what to plan instead]",
            Builtin::Agent => "[ID]",
            Builtin::Persona => "[prefix TEXT | suffix TEXT | clear]",
            _ => "",
        }
    }

    /// The built-in a typed name means; `quit` is an alias of `exit`.
    pub fn from_name(name: &str) -> Option<Builtin> {
        if name == "quit" {
            return Some(Builtin::Exit);
        }
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Whether it has to wait for a running turn: it replaces the conversation, or changes
    /// the model or effort mid-answer (`args` non-empty).
    pub fn needs_idle(self, args: &str) -> bool {
        match self {
            Builtin::New
            | Builtin::Clear
            | Builtin::Compact
            | Builtin::Resume
            | Builtin::Rewind
            | Builtin::Replan
            // Plan and goal mode are part of a turn's setup; a running turn keeps its mode.
            | Builtin::Plan
            | Builtin::Goal => true,
            Builtin::Model | Builtin::Effort => !args.is_empty(),
            Builtin::Agent | Builtin::Persona => !args.is_empty(),
            Builtin::Help
            | Builtin::Mcp
            | Builtin::Tools
            | Builtin::Cost
            | Builtin::Status
            | Builtin::Memory
            | Builtin::Verbose
            | Builtin::Exit => false,
        }
    }
}

/// Why an input could not become a message.
#[derive(Debug)]
pub enum CommandError {
    /// `/name` is neither a built-in, a custom command nor a prompt of a connected server.
    Unknown(String),
    /// A built-in typed where only messages can go (`reasonix run`, the plain chat).
    NeedsChat(Builtin),
    /// A subagent profile's `/NAME` typed where no profile runs host-side (a goal's
    /// objective, `reasonix run`, which never reinterprets a slash as a profile).
    ProfileHere(String),
    /// An MCP prompt command without its required arguments.
    MissingArguments { missing: Vec<String>, usage: String },
    /// Words beyond the last argument of an MCP prompt that takes none.
    ExtraArguments { command: String, extra: String },
    /// The server could not render the prompt.
    Prompt { command: String, source: McpError },
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::Unknown(name) => {
                f.write_str(&crate::i18n::trf(Ui::CommandUnknown, &[name]))
            }
            CommandError::NeedsChat(builtin) => {
                f.write_str(&crate::i18n::trf(Ui::CommandNeedsChat, &[&builtin.name()]))
            }
            CommandError::ProfileHere(name) => write!(
                f,
                "command: /{name} runs the `{name}` subagent, which cannot start from here; type \
                 it on its own line in the chat, or use `reasonix subagent run {name} TASK`"
            ),
            CommandError::MissingArguments { missing, usage } => {
                let command = usage.split(' ').next().unwrap_or(usage);
                f.write_str(&crate::i18n::trf(
                    Ui::CommandMissing,
                    &[&command, &missing.join(", "), usage],
                ))
            }
            CommandError::ExtraArguments { command, extra } => {
                f.write_str(&crate::i18n::trf(Ui::CommandExtra, &[command, extra]))
            }
            CommandError::Prompt { command, source } => f.write_str(&crate::i18n::trf(
                Ui::CommandFailed,
                &[command, &source.to_string().trim_start_matches("mcp: ")],
            )),
        }
    }
}

impl std::error::Error for CommandError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CommandError::Prompt { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What a command name refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Builtin(Builtin),
    Custom(CustomCommand),
    McpPrompt(PromptInfo),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Without the slash.
    pub name: String,
    pub description: String,
    pub argument_hint: String,
    pub kind: Kind,
}

/// Every command the chat knows, looked up by name and listed for completion.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    entries: Vec<Entry>,
    /// Custom commands hidden by a built-in of the same name.
    pub notices: Vec<String>,
}

impl Catalog {
    /// Built-ins first; a custom command cannot shadow a built-in (a notice says so); MCP
    /// prompts live in their own `mcp__` namespace.
    pub fn new(custom: Vec<CustomCommand>, prompts: Vec<PromptInfo>) -> Catalog {
        let mut catalog = Catalog::default();
        for builtin in Builtin::ALL {
            catalog.entries.push(Entry {
                name: builtin.name().into(),
                description: builtin.description().into(),
                argument_hint: builtin.argument_hint().into(),
                kind: Kind::Builtin(builtin),
            });
        }
        for command in custom {
            if catalog.lookup(&command.name).is_some() {
                catalog.notices.push(format!(
                    "custom command /{} ({}) is hidden by the built-in of the same name; rename the file",
                    command.name,
                    command.path.display()
                ));
                continue;
            }
            catalog.entries.push(Entry {
                name: command.name.clone(),
                description: command.description.clone(),
                argument_hint: command.argument_hint.clone(),
                kind: Kind::Custom(command),
            });
        }
        for prompt in prompts {
            catalog.entries.push(Entry {
                name: prompt.command_name(),
                description: prompt.description.clone(),
                argument_hint: prompt
                    .arguments
                    .iter()
                    .map(|a| format!("[{}]", a.name))
                    .collect::<Vec<_>>()
                    .join(" "),
                kind: Kind::McpPrompt(prompt),
            });
        }
        catalog
    }

    /// The command `name` means; `quit` finds `exit`.
    pub fn lookup(&self, name: &str) -> Option<&Entry> {
        let name = if name == "quit" { "exit" } else { name };
        self.entries.iter().find(|e| e.name == name)
    }

    /// Commands whose name starts with `prefix`.
    pub fn matching(&self, prefix: &str) -> Vec<&Entry> {
        self.entries
            .iter()
            .filter(|e| e.name.starts_with(prefix))
            .collect()
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
}

/// Splits `/name args` into the name and the argument text. Input that does not start with
/// a slash, or whose first word contains another slash (`/usr/bin/env is missing`), is not a
/// command.
pub fn split_invocation(input: &str) -> Option<(&str, &str)> {
    let rest = input.strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    if name.is_empty() || name.contains('/') {
        return None;
    }
    Some((name, rest[end..].trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_is_listed_once_and_found_by_name() {
        for builtin in Builtin::ALL {
            assert_eq!(Builtin::from_name(builtin.name()), Some(builtin));
            assert!(!builtin.description().is_empty());
        }
        assert_eq!(Builtin::from_name("quit"), Some(Builtin::Exit));
        assert_eq!(Builtin::from_name("nope"), None);
        assert!(Builtin::Model.needs_idle("x") && !Builtin::Model.needs_idle(""));
    }

    #[test]
    fn error_messages_name_the_area_and_the_fix() {
        assert_eq!(
            CommandError::Unknown("nope".into()).to_string(),
            "command: unknown command /nope; /help lists the commands"
        );
        assert_eq!(
            CommandError::NeedsChat(Builtin::Help).to_string(),
            "command: /help needs the interactive chat (a terminal)"
        );
        let err = CommandError::Prompt {
            command: "mcp__s__p".into(),
            source: McpError::NotConnected("s".into()),
        };
        assert_eq!(
            err.to_string(),
            "command: /mcp__s__p failed: server `s` is not connected"
        );
        assert!(std::error::Error::source(&err).is_some());
    }

    #[test]
    fn invocation_splitting() {
        assert_eq!(split_invocation("/help"), Some(("help", "")));
        assert_eq!(
            split_invocation("/git:commit  fix the bug "),
            Some(("git:commit", "fix the bug"))
        );
        assert_eq!(split_invocation("/usr/bin/env is missing"), None);
        assert_eq!(split_invocation("hello"), None);
        assert_eq!(split_invocation("/"), None);
    }

    #[test]
    fn builtins_win_over_custom_commands_and_prompts_are_namespaced() {
        let custom = |name: &str| CustomCommand {
            name: name.into(),
            description: "d".into(),
            argument_hint: String::new(),
            body: "b".into(),
            path: format!("/p/{name}.md").into(),
            profile: false,
        };
        let prompt = PromptInfo {
            server: "gh".into(),
            name: "triage".into(),
            description: "Triage".into(),
            arguments: vec![crate::mcp::host::PromptArg {
                name: "issue".into(),
                description: String::new(),
                required: true,
            }],
        };
        let catalog = Catalog::new(vec![custom("help"), custom("review")], vec![prompt]);
        assert_eq!(
            catalog.lookup("help").unwrap().kind,
            Kind::Builtin(Builtin::Help)
        );
        assert_eq!(
            catalog.lookup("quit").unwrap().kind,
            Kind::Builtin(Builtin::Exit)
        );
        assert!(catalog.notices[0].contains("/help"));
        assert!(matches!(
            catalog.lookup("review").unwrap().kind,
            Kind::Custom(_)
        ));
        let mcp = catalog.lookup("mcp__gh__triage").unwrap();
        assert_eq!(mcp.argument_hint, "[issue]");
        let names: Vec<&str> = catalog
            .matching("m")
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, vec!["model", "mcp", "memory", "mcp__gh__triage"]);
    }
}
