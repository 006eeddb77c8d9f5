//! Slash commands (§3.8): the built-in table, custom Markdown commands (`custom`), MCP
//! prompts (`mcp`, a hook the MCP client fills) and `@` references (`refs`). This layer
//! decides what an input means and produces text; carrying out a built-in (clearing the
//! session, switching the model) is the chat front end's job.

pub mod custom;
pub mod mcp;
pub mod refs;

use custom::CustomCommand;
use mcp::PromptInfo;

pub struct Builtin {
    pub name: &'static str,
    pub description: &'static str,
    pub argument_hint: &'static str,
}

/// The built-in commands, in the order `/help` lists them.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "help",
        description: "Show commands and keys",
        argument_hint: "",
    },
    Builtin {
        name: "new",
        description: "Save this conversation and start a fresh one",
        argument_hint: "",
    },
    Builtin {
        name: "clear",
        description: "Discard this conversation (asks first)",
        argument_hint: "",
    },
    Builtin {
        name: "compact",
        description: "Summarise older turns to free context",
        argument_hint: "",
    },
    Builtin {
        name: "model",
        description: "Show configured models or switch to one",
        argument_hint: "[provider|model|provider/model]",
    },
    Builtin {
        name: "effort",
        description: "Show or set the reasoning effort",
        argument_hint: "[low|medium|high|max|default]",
    },
    Builtin {
        name: "mcp",
        description: "Show MCP servers and what they offer",
        argument_hint: "",
    },
    Builtin {
        name: "tools",
        description: "List the tools the model can call",
        argument_hint: "",
    },
    Builtin {
        name: "cost",
        description: "Tokens and cost of this session",
        argument_hint: "",
    },
    Builtin {
        name: "status",
        description: "Model, session, permissions and context",
        argument_hint: "",
    },
    Builtin {
        name: "resume",
        description: "Pick an earlier conversation of this workspace",
        argument_hint: "",
    },
    Builtin {
        name: "verbose",
        description: "Toggle showing reasoning and long tool output",
        argument_hint: "",
    },
    Builtin {
        name: "exit",
        description: "Leave the chat",
        argument_hint: "",
    },
];

/// What a command name refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Builtin,
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
        for builtin in BUILTINS {
            catalog.entries.push(Entry {
                name: builtin.name.into(),
                description: builtin.description.into(),
                argument_hint: builtin.argument_hint.into(),
                kind: Kind::Builtin,
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

    pub fn lookup(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Commands whose name starts with `prefix`; `quit` is an alias of `exit`.
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
        };
        let prompt = PromptInfo {
            server: "gh".into(),
            name: "triage".into(),
            description: "Triage".into(),
            arguments: vec![mcp::PromptArg {
                name: "issue".into(),
                description: String::new(),
                required: true,
            }],
        };
        let catalog = Catalog::new(vec![custom("help"), custom("review")], vec![prompt]);
        assert_eq!(catalog.lookup("help").unwrap().kind, Kind::Builtin);
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
        assert_eq!(names, vec!["model", "mcp", "mcp__gh__triage"]);
    }
}
