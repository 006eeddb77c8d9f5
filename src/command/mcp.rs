//! What the chat needs from MCP, as a trait the MCP client implements: connected servers for
//! `/mcp`, prompts for `/mcp__<server>__<prompt>`, resources for `@<server>:<uri>`, and the
//! interactive launch grant for project-declared servers. `crate::mcp::Host` implements it
//! over the running servers; the chat uses [`NoMcp`] until they have started. Nothing here
//! talks to a server.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    pub name: String,
    /// `connected`, `failed: <reason>`, `not started: <reason>` (no launch grant, declined).
    pub status: String,
    pub tools: usize,
    pub prompts: usize,
    pub resources: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptArg {
    pub name: String,
    pub description: String,
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptInfo {
    pub server: String,
    pub name: String,
    pub description: String,
    pub arguments: Vec<PromptArg>,
}

impl PromptInfo {
    /// The slash command name without the slash: `mcp__<server>__<prompt>`, spaces as `_`.
    pub fn command_name(&self) -> String {
        format!(
            "mcp__{}__{}",
            self.server.replace(' ', "_"),
            self.name.replace(' ', "_")
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    pub server: String,
    pub uri: String,
    pub name: String,
}

impl ResourceInfo {
    /// How it is referenced in chat: `@<server>:<uri>` without the `@`.
    pub fn reference(&self) -> String {
        format!("{}:{}", self.server, self.uri)
    }
}

/// The MCP side of the chat. Calls may block (they talk to servers); the UI makes them off
/// its own thread.
pub trait McpHost: Send + Sync {
    fn servers(&self) -> Vec<ServerInfo>;
    fn prompts(&self) -> Vec<PromptInfo>;
    /// Renders a prompt (`prompts/get`) to the text of a user turn.
    fn get_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: &BTreeMap<String, String>,
    ) -> Result<String, String>;
    fn resources(&self) -> Vec<ResourceInfo>;
    /// Reads a resource (`resources/read`) as text.
    fn read_resource(&self, server: &str, uri: &str) -> Result<String, String>;
}

/// No MCP servers: every list is empty and every call fails politely.
pub struct NoMcp;

impl McpHost for NoMcp {
    fn servers(&self) -> Vec<ServerInfo> {
        Vec::new()
    }

    fn prompts(&self) -> Vec<PromptInfo> {
        Vec::new()
    }

    fn get_prompt(
        &self,
        server: &str,
        _prompt: &str,
        _arguments: &BTreeMap<String, String>,
    ) -> Result<String, String> {
        Err(format!("MCP server `{server}` is not connected"))
    }

    fn resources(&self) -> Vec<ResourceInfo> {
        Vec::new()
    }

    fn read_resource(&self, server: &str, _uri: &str) -> Result<String, String> {
        Err(format!("MCP server `{server}` is not connected"))
    }
}

/// A project-declared server asking to be started (§3.3 launch grants).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchRequest {
    pub server: String,
    /// The file that declared it (`reasonix.toml`, `.mcp.json`).
    pub origin: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// The command line (environment values elided) or the URL that would be started or
    /// contacted.
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchAnswer {
    /// Start it for this session only.
    Session,
    /// Start it and remember the grant for this workspace.
    Always,
    Deny,
}

/// The interactive side of launch grants: the chat UI implements it with a modal,
/// `reasonix mcp` with a terminal question; [`crate::mcp::start`] consults it.
pub trait LaunchApprover: Send + Sync {
    fn approve_launch(&self, request: &LaunchRequest) -> LaunchAnswer;
}

/// Maps typed arguments onto a prompt's declared arguments: `name=value` tokens by name,
/// the rest by position into the arguments not yet filled. Tokens beyond the last argument
/// are joined onto it. Missing required arguments are an error naming them.
pub fn map_prompt_arguments(
    prompt: &PromptInfo,
    typed: &str,
) -> Result<BTreeMap<String, String>, String> {
    let mut named = BTreeMap::new();
    let mut positional = Vec::new();
    for token in typed.split_whitespace() {
        match token.split_once('=') {
            Some((name, value)) if prompt.arguments.iter().any(|a| a.name == name) => {
                named.insert(name.to_string(), value.to_string());
            }
            _ => positional.push(token),
        }
    }
    let open: Vec<&PromptArg> = prompt
        .arguments
        .iter()
        .filter(|a| !named.contains_key(&a.name))
        .collect();
    for (i, arg) in open.iter().enumerate() {
        if i >= positional.len() {
            break;
        }
        let value = if i + 1 == open.len() {
            positional[i..].join(" ")
        } else {
            positional[i].to_string()
        };
        named.insert(arg.name.clone(), value);
    }
    if open.is_empty() && !positional.is_empty() {
        return Err(format!(
            "`/{}` takes no more arguments; got `{}`",
            prompt.command_name(),
            positional.join(" ")
        ));
    }
    let missing: Vec<&str> = prompt
        .arguments
        .iter()
        .filter(|a| a.required && !named.contains_key(&a.name))
        .map(|a| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "`/{}` needs {}; pass them in order or as name=value",
            prompt.command_name(),
            missing.join(", ")
        ));
    }
    Ok(named)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(args: &[(&str, bool)]) -> PromptInfo {
        PromptInfo {
            server: "my server".into(),
            name: "review code".into(),
            description: String::new(),
            arguments: args
                .iter()
                .map(|(n, r)| PromptArg {
                    name: n.to_string(),
                    description: String::new(),
                    required: *r,
                })
                .collect(),
        }
    }

    #[test]
    fn names_normalise_spaces() {
        assert_eq!(prompt(&[]).command_name(), "mcp__my_server__review_code");
    }

    #[test]
    fn arguments_map_by_name_and_position() {
        let p = prompt(&[("file", true), ("focus", false), ("style", false)]);
        let m = map_prompt_arguments(&p, "style=terse a.rs security bugs").unwrap();
        assert_eq!(m["file"], "a.rs");
        assert_eq!(m["focus"], "security bugs");
        assert_eq!(m["style"], "terse");
        let m = map_prompt_arguments(&p, "focus=perf main.rs").unwrap();
        assert_eq!(m["file"], "main.rs");
        assert!(!m.contains_key("style"));
        let err = map_prompt_arguments(&p, "focus=x").unwrap_err();
        assert!(err.contains("needs file"), "{err}");
        let none = prompt(&[]);
        assert!(map_prompt_arguments(&none, "").unwrap().is_empty());
        assert!(map_prompt_arguments(&none, "stray").is_err());
        // An unknown name=value is just a positional word.
        let m = map_prompt_arguments(&p, "x=1").unwrap();
        assert_eq!(m["file"], "x=1");
    }
}
