//! Bringing tool-list changes to the agent: the [`ToolWatch`] a run polls before each model
//! request lists again the tools of every server that announced a change and hands over the
//! whole MCP tool set when any server's list differs from what the agent has.

use std::sync::{Arc, Mutex};

use super::manager::{generations, lock, take_warnings, update_catalog, Catalog, Unshown};
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
    /// Servers that joined after a login; their tools are handed over like a change.
    pub(super) late: super::login_later::Late,
    /// The generations behind the tools the agent has.
    pub(super) seen: Vec<u64>,
    pub(super) catalog: Arc<Mutex<Catalog>>,
    /// Server events no UI shows: their warnings become notices here, before the next
    /// request (a headless run's declined request for input).
    pub(super) unshown: Option<Unshown>,
}

impl ToolSource for ToolWatch {
    fn poll(&mut self, cancel: &CancelToken, warn: &mut dyn FnMut(String)) -> Option<ToolChange> {
        for warning in take_warnings(self.unshown.as_ref()) {
            warn(warning);
        }
        let servers: Vec<Arc<Server>> = self
            .servers
            .iter()
            .chain(
                self.late
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .iter(),
            )
            .cloned()
            .collect();
        for server in &servers {
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
        let current = generations(&servers);
        if current == self.seen {
            return None;
        }
        let origins = servers
            .iter()
            .zip(
                current
                    .iter()
                    .map(Some)
                    .zip(self.seen.iter().map(Some).chain(std::iter::repeat(None))),
            )
            .filter(|(_, (now, seen))| now != seen)
            .map(|(server, _)| format!("MCP server `{}`", server.name()))
            .collect();
        update_catalog(&self.catalog, &servers, &current);
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
