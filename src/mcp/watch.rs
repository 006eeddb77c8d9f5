//! Bringing tool-list changes to the agent: the [`ToolWatch`] a run polls before each model
//! request lists again the tools of every server that announced a change and hands over the
//! whole MCP tool set when any server's list differs from what the agent has.

use std::sync::{Arc, Mutex};

use super::manager::{generations, lock, update_catalog, Catalog};
use super::server::Server;
use super::McpError;
use crate::cancel::CancelToken;
use crate::tool::source::{ToolChange, ToolSource};
use crate::tool::Tool;

/// Brings tool-list changes to the agent: before each request it lists again the tools of
/// every server that sent `notifications/tools/list_changed`, and hands over the whole MCP
/// tool set when any server's list differs from what the agent has.
pub struct ToolWatch {
    pub(super) servers: Vec<Arc<Server>>,
    /// The generations behind the tools the agent has.
    pub(super) seen: Vec<u64>,
    pub(super) catalog: Arc<Mutex<Catalog>>,
}

impl ToolSource for ToolWatch {
    fn poll(&mut self, cancel: &CancelToken, warn: &mut dyn FnMut(String)) -> Option<ToolChange> {
        for server in &self.servers {
            match server.refresh_tools(Some(cancel)) {
                Ok(()) | Err(McpError::Cancelled) => {}
                Err(err) => warn(format!(
                        "mcp: server `{}` announced new tools but listing them failed ({}); its previous tools stay",
                        server.name(),
                        err.to_string().trim_start_matches("mcp: ")
                    ),
                ),
            }
        }
        let current = generations(&self.servers);
        if current == self.seen {
            return None;
        }
        let origins = self
            .servers
            .iter()
            .zip(current.iter().zip(&self.seen))
            .filter(|(_, (now, seen))| now != seen)
            .map(|(server, _)| format!("MCP server `{}`", server.name()))
            .collect();
        update_catalog(&self.catalog, &self.servers, &current);
        self.seen = current;
        Some(ToolChange {
            prefix: "mcp__".into(),
            tools: lock(&self.catalog)
                .tools
                .iter()
                .map(|t| Arc::clone(t) as Arc<dyn Tool>)
                .collect(),
            origins,
        })
    }
}
