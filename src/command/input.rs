//! The one input path (§3.8, §3.9): what a user typed becomes either a built-in for the front
//! end to carry out or a [`Message`], and a message becomes the text of a turn. The chat UI,
//! the plain (piped) chat and `reasonix run` all go through [`interpret`] and
//! [`Message::prepare`], so the same line means the same thing in each.
//!
//! Interpreting is cheap and never blocks; preparing may (it renders MCP prompts and reads
//! `@` references), so the chat UI runs it off its own thread.
//!
//! `@` references are resolved only in what the user typed: the message, or the arguments of
//! a custom command or an MCP prompt. A template's own text (a command file, which the
//! repository may have written, a skill, a server's rendered prompt) keeps its `@` words
//! literal, so no template can make us read local files into the conversation; and every path
//! a typed reference names passes [`refs::admit`] (the workspace boundary, the home, the hidden
//! paths) within the session's sandbox.

use std::collections::BTreeMap;
use std::path::Path;

use super::mcp::map_prompt_arguments;
use super::{custom, refs, split_invocation, Builtin, Catalog, CommandError, Kind};
use crate::mcp::host::{McpHost, PromptInfo};
use crate::sandbox::Policy;

/// What a line of input asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A built-in command and the text after it.
    Builtin(Builtin, String),
    /// Something for the model.
    Message(Message),
    /// `/<profile> TASK`: a subagent profile the front end runs host-side (an isolated
    /// child session whose final answer returns), never a request for the model to call
    /// `task`. `task` is the text after the name, as typed.
    Profile { name: String, task: String },
}

/// A message on its way to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// What the transcript shows: the input as typed (trimmed).
    pub display: String,
    source: Source,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// Text to send, with the part the user typed, where `@` references are resolved: the
    /// whole of a message, the arguments of a custom command.
    Text { text: String, typed: String },
    /// An MCP prompt to render; `typed` is the argument text, where references are resolved.
    Prompt {
        prompt: PromptInfo,
        arguments: BTreeMap<String, String>,
        typed: String,
    },
}

/// The text of a turn, ready to send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Turn {
    pub text: String,
    /// The references that became blocks (`@src/main.rs`), for the transcript.
    pub attached: Vec<String>,
    /// References that could not be read; the turn goes ahead without them.
    pub notices: Vec<String>,
}

/// Interprets one input. `None` for blank input. A `/name` that is no command, or an MCP
/// prompt's arguments that do not fit it, is an error; `/usr/bin/env is missing` is a
/// message (the first word holds another slash).
pub fn interpret(typed: &str, catalog: &Catalog) -> Option<Result<Input, CommandError>> {
    let typed = typed.trim();
    if typed.is_empty() {
        return None;
    }
    let display = typed.to_string();
    let Some((name, args)) = split_invocation(typed) else {
        return Some(Ok(Input::Message(Message {
            display,
            source: Source::Text {
                text: typed.to_string(),
                typed: typed.to_string(),
            },
        })));
    };
    let source = match catalog.lookup(name).map(|entry| &entry.kind) {
        None => return Some(Err(CommandError::Unknown(name.to_string()))),
        Some(Kind::Builtin(builtin)) => {
            return Some(Ok(Input::Builtin(*builtin, args.to_string())));
        }
        Some(Kind::Custom(command)) if command.profile => {
            return Some(Ok(Input::Profile {
                name: command.name.clone(),
                task: args.trim().to_string(),
            }));
        }
        Some(Kind::Custom(command)) => Source::Text {
            text: custom::render(&command.body, args),
            typed: args.to_string(),
        },
        Some(Kind::McpPrompt(prompt)) => match map_prompt_arguments(prompt, args) {
            Ok(arguments) => Source::Prompt {
                prompt: prompt.clone(),
                arguments,
                typed: args.to_string(),
            },
            Err(err) => return Some(Err(err)),
        },
    };
    Some(Ok(Input::Message(Message { display, source })))
}

impl Message {
    /// Renders the prompt and resolves the references into the text of a turn, reading only
    /// what `sandbox` lets a reference attach. Blocks while it talks to MCP servers and reads
    /// files.
    pub fn prepare(
        self,
        cwd: &Path,
        sandbox: &Policy,
        mcp: &dyn McpHost,
    ) -> Result<Turn, CommandError> {
        let resolved = match self.source {
            Source::Text { text, typed } => refs::resolve_typed(&text, &typed, cwd, sandbox, mcp),
            Source::Prompt {
                prompt,
                arguments,
                typed,
            } => {
                let text = mcp
                    .get_prompt(&prompt.server, &prompt.name, &arguments)
                    .map_err(|source| CommandError::Prompt {
                        command: prompt.command_name(),
                        source,
                    })?;
                refs::resolve_typed(&text, &typed, cwd, sandbox, mcp)
            }
        };
        Ok(Turn {
            text: resolved.text,
            attached: resolved.attached,
            notices: resolved.notices,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::custom::CustomCommand;
    use super::*;
    use crate::mcp::host::{PromptArg, ResourceInfo, ServerInfo};
    use crate::mcp::McpError;
    use std::sync::Mutex;

    /// One connected server `srv` with a prompt `greet (name, extra)` that echoes its
    /// arguments, a resource `file:///a.txt`, and a record of the rendered arguments.
    #[derive(Default)]
    struct Srv(Mutex<Vec<BTreeMap<String, String>>>);

    impl McpHost for Srv {
        fn servers(&self) -> Vec<ServerInfo> {
            vec![ServerInfo {
                name: "srv".into(),
                status: "connected".into(),
                tools: 0,
                prompts: 1,
                resources: 1,
            }]
        }
        fn prompts(&self) -> Vec<PromptInfo> {
            vec![PromptInfo {
                server: "srv".into(),
                name: "greet".into(),
                description: String::new(),
                arguments: ["name", "extra"]
                    .iter()
                    .map(|n| PromptArg {
                        name: n.to_string(),
                        description: String::new(),
                        required: *n == "name",
                    })
                    .collect(),
            }]
        }
        fn get_prompt(
            &self,
            _: &str,
            _: &str,
            arguments: &BTreeMap<String, String>,
        ) -> Result<String, McpError> {
            self.0.lock().unwrap().push(arguments.clone());
            Ok(format!(
                "Hello {} ({}) @srv:file:///a.txt",
                arguments["name"], arguments["extra"]
            ))
        }
        fn resources(&self) -> Vec<ResourceInfo> {
            Vec::new()
        }
        fn read_resource(&self, _: &str, uri: &str) -> Result<String, McpError> {
            Ok(format!("content of {uri}"))
        }
    }

    fn catalog(mcp: &Srv) -> Catalog {
        let review = CustomCommand {
            name: "review".into(),
            description: String::new(),
            argument_hint: String::new(),
            body: "Review $1, then $2.".into(),
            path: "/c/review.md".into(),
            profile: false,
        };
        Catalog::new(vec![review], mcp.prompts())
    }

    fn turn(typed: &str, mcp: &Srv) -> Result<Turn, CommandError> {
        match interpret(typed, &catalog(mcp)).expect("not blank")? {
            Input::Message(message) => {
                let cwd = Path::new("/nonexistent");
                message.prepare(cwd, &Policy::workspace_only(cwd), mcp)
            }
            Input::Builtin(builtin, _) => Err(CommandError::NeedsChat(builtin)),
            Input::Profile { name, .. } => Err(CommandError::ProfileHere(name)),
        }
    }

    #[test]
    fn builtins_blank_input_and_unknown_commands() {
        let mcp = Srv::default();
        let catalog = catalog(&mcp);
        assert_eq!(
            interpret(" /model  a/b ", &catalog).unwrap().unwrap(),
            Input::Builtin(Builtin::Model, "a/b".into())
        );
        assert_eq!(
            interpret("/quit", &catalog).unwrap().unwrap(),
            Input::Builtin(Builtin::Exit, String::new())
        );
        assert!(interpret("  \n", &catalog).is_none());
        let err = interpret("/nope x", &catalog).unwrap().unwrap_err();
        assert_eq!(
            err.to_string(),
            "command: unknown command /nope; /help lists the commands"
        );
        let text = turn("/usr/bin/env is missing", &mcp).unwrap().text;
        assert_eq!(text, "/usr/bin/env is missing");
    }

    #[test]
    fn prompt_arguments_follow_the_quoting_rule_and_server_text_is_not_resolved() {
        let mcp = Srv::default();
        let sent = turn("/mcp__srv__greet \"two words\" x @srv:file:///b.txt", &mcp).unwrap();
        let bound = mcp.0.lock().unwrap()[0].clone();
        assert_eq!(bound["name"], "two words");
        assert_eq!(bound["extra"], "x @srv:file:///b.txt");
        // The reference the user typed is attached; the one in the server's text is not.
        assert_eq!(sent.attached, vec!["@srv:file:///b.txt"]);
        assert_eq!(
            sent.text,
            "<resource ref=\"srv:file:///b.txt\">\ncontent of file:///b.txt\n</resource>\n\n\
             Hello two words (x @srv:file:///b.txt) @srv:file:///a.txt"
        );
        let err = turn("/mcp__srv__greet", &mcp).unwrap_err();
        assert_eq!(
            err.to_string(),
            "command: /mcp__srv__greet needs name; usage: /mcp__srv__greet NAME [EXTRA]"
        );
    }

    #[test]
    fn custom_commands_and_messages_resolve_their_references() {
        let mcp = Srv::default();
        let sent = turn("/review \"my file\" @srv:file:///a.txt", &mcp).unwrap();
        assert_eq!(
            sent.text,
            "<resource ref=\"srv:file:///a.txt\">\ncontent of file:///a.txt\n</resource>\n\n\
             Review my file, then @srv:file:///a.txt."
        );
        let sent = turn("look at @srv:file:///a.txt", &mcp).unwrap();
        assert!(sent
            .text
            .ends_with("</resource>\n\nlook at @srv:file:///a.txt"));
        assert!(sent.notices.is_empty());
    }

    #[test]
    fn a_command_templates_own_references_stay_literal() {
        let mcp = Srv::default();
        let planted = CustomCommand {
            name: "planted".into(),
            description: String::new(),
            argument_hint: String::new(),
            body: "Look @srv:file:///a.txt and $ARGUMENTS".into(),
            path: "/c/planted.md".into(),
            profile: false,
        };
        let catalog = Catalog::new(vec![planted], mcp.prompts());
        let Input::Message(message) = interpret("/planted @srv:file:///b.txt", &catalog)
            .expect("not blank")
            .expect("a command")
        else {
            panic!("a message")
        };
        let cwd = Path::new("/nonexistent");
        let sent = message
            .prepare(cwd, &Policy::workspace_only(cwd), &mcp)
            .unwrap();
        assert_eq!(sent.attached, vec!["@srv:file:///b.txt"]);
        assert!(
            !sent.text.contains("content of file:///a.txt"),
            "{}",
            sent.text
        );
    }
}
