//! The MCP client as the chat's [`McpHost`]: a started [`McpHandle`] with its servers' prompt
//! and resource lists taken once at startup, so the UI's `/` and `@` menus never wait on a
//! server. Prompts render and resources read live.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::manager::{McpHandle, PromptCommand, Server, ServerState};
use super::McpError;
use crate::command::mcp::{McpHost, PromptArg, PromptInfo, ResourceInfo, ServerInfo};

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
                .map(|server| scope.spawn(|| resources_of(server)))
                .collect();
            let prompts = handle
                .prompt_commands()
                .into_iter()
                .map(prompt_info)
                .collect();
            let resources = listing
                .into_iter()
                .flat_map(|job| job.join().unwrap_or_default())
                .collect();
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

    fn server(&self, name: &str) -> Result<&Arc<Server>, String> {
        self.handle
            .server(name)
            .ok_or_else(|| format!("MCP server `{name}` is not connected"))
    }
}

fn prompt_info(command: PromptCommand) -> PromptInfo {
    PromptInfo {
        server: command.server,
        name: command.prompt,
        description: command.description,
        arguments: command
            .arguments
            .into_iter()
            .map(|(name, required)| PromptArg {
                name,
                description: String::new(),
                required,
            })
            .collect(),
    }
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

/// An MCP error for a person: the `mcp: ` prefix is implied by the context.
fn detail(err: McpError) -> String {
    err.to_string().trim_start_matches("mcp: ").to_string()
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
    ) -> Result<String, String> {
        let arguments: Map<String, Value> = arguments
            .iter()
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect();
        self.server(server)?
            .get_prompt(prompt, &arguments)
            .map_err(detail)
    }

    fn resources(&self) -> Vec<ResourceInfo> {
        self.resources.clone()
    }

    fn read_resource(&self, server: &str, uri: &str) -> Result<String, String> {
        self.server(server)?.read_resource(uri).map_err(detail)
    }
}
