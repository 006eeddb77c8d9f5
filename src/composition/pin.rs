//! MCP tool contracts pinned at binding. A bound conversation keeps the MCP tools it was
//! bound with: when a server announces a different catalog, the pinned tools stay in the
//! request exactly as they were (same names, order and schemas, so the cached prefix does
//! not move) but their calls are refused with `agent_composition.unavailable`, instead of
//! the model silently getting other schemas.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::Value;

use super::resolve::mcp_server_of;
use super::{digest, Selection};
use crate::cancel::CancelToken;
use crate::tool::source::{ToolChange, ToolSource};
use crate::tool::{Family, Registry, Subjects, Tool, ToolContext, ToolError};

/// A digest of one tool's contract: its name, description and parameter schema.
pub fn contract(tool: &dyn Tool) -> String {
    digest(&(tool.name(), tool.description(), tool.schema()))
}

/// The contracts of the MCP tools in `tools`.
pub fn contracts(tools: &Registry) -> BTreeMap<String, String> {
    tools
        .names()
        .into_iter()
        .filter(|n| n.starts_with("mcp__"))
        .filter_map(|n| tools.get(&n).map(|t| (n.clone(), contract(t.as_ref()))))
        .collect()
}

/// Wraps the MCP tool source of a bound session. [`PinnedSource::guard`] puts the bound
/// MCP tools behind a shared switch in place (same order, same schemas); a changed catalog
/// flips the switch and is never handed on, so the request keeps its bytes and the calls are
/// refused.
pub struct PinnedSource {
    inner: Box<dyn ToolSource>,
    contracts: BTreeMap<String, String>,
    servers: Selection,
    blocked: Arc<AtomicBool>,
}

impl PinnedSource {
    /// Guards the MCP tools of `tools` (the registry as bound) and returns the source that
    /// watches `inner` for changes to their contracts.
    pub fn guard(
        inner: Box<dyn ToolSource>,
        tools: &mut Registry,
        servers: Selection,
    ) -> PinnedSource {
        let blocked = Arc::new(AtomicBool::new(false));
        for name in tools.names().into_iter().filter(|n| n.starts_with("mcp__")) {
            if let Some(tool) = tools.get(&name).cloned() {
                tools.insert(Arc::new(Guarded {
                    inner: tool,
                    blocked: Arc::clone(&blocked),
                }));
            }
        }
        PinnedSource {
            inner,
            contracts: contracts(tools),
            servers,
            blocked,
        }
    }
}

impl PinnedSource {
    /// Blocks the guarded tools from the start: a restored binding whose recorded contracts
    /// differ from what the servers offer now.
    pub fn block(&self) {
        self.blocked.store(true, Ordering::SeqCst);
    }
}

impl ToolSource for PinnedSource {
    fn poll(&mut self, cancel: &CancelToken, warn: &mut dyn FnMut(String)) -> Option<ToolChange> {
        let change = self.inner.poll(cancel, warn)?;
        if self.blocked.load(Ordering::SeqCst) {
            return None;
        }
        let now: BTreeMap<String, String> = change
            .tools
            .iter()
            .filter(|t| mcp_server_of(t.name()).is_some_and(|s| self.servers.keeps(s)))
            .map(|t| (t.name().to_string(), contract(t.as_ref())))
            .collect();
        if now != self.contracts {
            self.blocked.store(true, Ordering::SeqCst);
            warn(format!(
                "agent_composition.unavailable: the MCP tool catalog changed after this \
                 conversation was bound ({}); its MCP tools are blocked instead of taking new \
                 schemas. Start a new conversation to use the new tools",
                change.origins.join(", ")
            ));
        }
        None
    }
}

/// A bound MCP tool: its own contract, refused once its server's catalog changed.
struct Guarded {
    inner: Arc<dyn Tool>,
    blocked: Arc<AtomicBool>,
}

impl Tool for Guarded {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn schema(&self) -> Value {
        self.inner.schema()
    }

    fn family(&self) -> Family {
        self.inner.family()
    }

    fn read_only(&self) -> bool {
        self.inner.read_only()
    }

    fn subjects(&self) -> Subjects {
        self.inner.subjects()
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        if !self.blocked.load(Ordering::SeqCst) {
            return self.inner.execute(args, ctx);
        }
        Err(ToolError::Failed(format!(
            "agent_composition.unavailable: `{}` is blocked: its MCP server changed its tool \
             catalog after this conversation was bound, and a bound conversation never swaps \
             tool schemas. Tell the user; a new conversation will see the new tools.",
            self.inner.name()
        )))
    }
}
