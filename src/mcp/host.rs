//! What the chat and the input path need from MCP, as the [`McpHost`] trait with the plain
//! data it returns (servers for `/mcp`, prompts for `/mcp__<server>__<prompt>`, resources for
//! `@<server>:<uri>`), and [`Host`], its implementation over a started [`McpHandle`]: the
//! servers' prompt and resource lists are taken once at startup so the UI's `/` and `@` menus
//! never wait on a server; prompts render and resources read live. [`NoMcp`] stands in until
//! the servers have started.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::adapter::tool_name;
use super::manager::{McpHandle, ServerState};
use super::server::Server;
use super::McpError;

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
    /// The slash command name without the slash: `mcp__<server>__<prompt>`, named like the
    /// server's tools (characters a tool name cannot hold become `_`).
    pub fn command_name(&self) -> String {
        tool_name(&self.server, &self.name)
    }

    /// `/mcp__s__p CITY [STATE]`: required arguments bare, optional ones in brackets.
    pub fn usage(&self) -> String {
        let mut usage = format!("/{}", self.command_name());
        for arg in &self.arguments {
            let name = arg.name.to_ascii_uppercase();
            if arg.required {
                usage.push_str(&format!(" {name}"));
            } else {
                usage.push_str(&format!(" [{name}]"));
            }
        }
        usage
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
    ) -> Result<String, McpError>;
    fn resources(&self) -> Vec<ResourceInfo>;
    /// Reads a resource (`resources/read`) as text.
    fn read_resource(&self, server: &str, uri: &str) -> Result<String, McpError>;
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
    ) -> Result<String, McpError> {
        Err(McpError::NotConnected(server.to_string()))
    }

    fn resources(&self) -> Vec<ResourceInfo> {
        Vec::new()
    }

    fn read_resource(&self, server: &str, _uri: &str) -> Result<String, McpError> {
        Err(McpError::NotConnected(server.to_string()))
    }
}

/// A running set of MCP servers seen through [`McpHost`]. Dropping it shuts them down.
pub struct Host {
    handle: McpHandle,
    prompts: Vec<PromptInfo>,
    resources: Vec<ResourceInfo>,
}

impl Host {
    /// Lists every connected server's prompts and resources, the servers in parallel. A
    /// server that fails to list them simply offers none.
    pub fn new(handle: McpHandle) -> Host {
        let (prompts, resources) = std::thread::scope(|scope| {
            let listing: Vec<_> = handle
                .servers()
                .iter()
                .map(|server| scope.spawn(|| (prompts_of(server), resources_of(server))))
                .collect();
            let mut prompts = Vec::new();
            let mut resources = Vec::new();
            for job in listing {
                let (p, r) = job.join().unwrap_or_default();
                prompts.extend(p);
                resources.extend(r);
            }
            (prompts, resources)
        });
        Host {
            handle,
            prompts,
            resources,
        }
    }

    pub fn handle(&self) -> &McpHandle {
        &self.handle
    }

    fn server(&self, name: &str) -> Result<Arc<Server>, McpError> {
        self.handle
            .server(name)
            .ok_or_else(|| McpError::NotConnected(name.to_string()))
    }
}

/// The server's prompts (`prompts/list`); a prompt without a name is skipped.
fn prompts_of(server: &Server) -> Vec<PromptInfo> {
    let Ok(listed) = server.prompts() else {
        return Vec::new();
    };
    let text = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    listed
        .iter()
        .filter_map(|prompt| {
            let name = prompt.get("name")?.as_str()?;
            let arguments = prompt
                .get("arguments")
                .and_then(Value::as_array)
                .map(|args| {
                    args.iter()
                        .filter_map(|a| {
                            Some(PromptArg {
                                name: a.get("name")?.as_str()?.to_string(),
                                description: text(a, "description"),
                                required: a.get("required").and_then(Value::as_bool) == Some(true),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            Some(PromptInfo {
                server: server.name().to_string(),
                name: name.to_string(),
                description: text(prompt, "description"),
                arguments,
            })
        })
        .collect()
}

fn resources_of(server: &Server) -> Vec<ResourceInfo> {
    let Ok(listed) = server.resources() else {
        return Vec::new();
    };
    listed
        .iter()
        .filter_map(|resource| {
            let uri = resource.get("uri")?.as_str()?;
            let name = resource.get("name").and_then(Value::as_str).unwrap_or(uri);
            Some(ResourceInfo {
                server: server.name().to_string(),
                uri: uri.to_string(),
                name: name.to_string(),
            })
        })
        .collect()
}

impl McpHost for Host {
    fn servers(&self) -> Vec<ServerInfo> {
        self.handle
            .statuses()
            .iter()
            .map(|status| {
                let (status_text, tools) = match (&status.state, self.handle.server(&status.name)) {
                    (ServerState::Connected, Some(server)) => {
                        ("connected".to_string(), server.tools().len())
                    }
                    (ServerState::Connected, None) => ("gone".to_string(), 0),
                    (ServerState::Failed(reason), _) => (format!("failed: {reason}"), 0),
                    (ServerState::Skipped(reason), _) => (format!("not started: {reason}"), 0),
                };
                ServerInfo {
                    name: status.name.clone(),
                    status: status_text,
                    tools,
                    prompts: self
                        .prompts
                        .iter()
                        .filter(|p| p.server == status.name)
                        .count(),
                    resources: self
                        .resources
                        .iter()
                        .filter(|r| r.server == status.name)
                        .count(),
                }
            })
            .collect()
    }

    fn prompts(&self) -> Vec<PromptInfo> {
        self.prompts.clone()
    }

    fn get_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: &BTreeMap<String, String>,
    ) -> Result<String, McpError> {
        let arguments: Map<String, Value> = arguments
            .iter()
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect();
        self.server(server)?.get_prompt(prompt, &arguments)
    }

    fn resources(&self) -> Vec<ResourceInfo> {
        self.resources.clone()
    }

    fn read_resource(&self, server: &str, uri: &str) -> Result<String, McpError> {
        self.server(server)?.read_resource(uri)
    }
}
