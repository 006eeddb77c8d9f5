//! Tool sets that change while a run goes on: MCP servers announce new tool lists. The agent
//! polls a [`ToolSource`] before each model request and swaps in the [`ToolChange`]; the
//! source (the MCP client) decides what changed. It sits with the tools so `mcp` can offer
//! one without reaching up into `agent`.

use std::sync::Arc;

use super::Tool;
use crate::cancel::CancelToken;

pub trait ToolSource: Send {
    /// Polled before every model request; returns the source's whole current set when it
    /// changed since the last poll. Problems (a server that could not list its tools again)
    /// go to `warn`, one line each, for the caller to show.
    fn poll(&mut self, cancel: &CancelToken, warn: &mut dyn FnMut(String)) -> Option<ToolChange>;
}

/// A new tool set from a [`ToolSource`].
pub struct ToolChange {
    /// The registry names the source owns: every tool whose name starts with it gives way to
    /// `tools`.
    pub prefix: String,
    pub tools: Vec<Arc<dyn Tool>>,
    /// Who changed them, for the notice ("MCP server `docs`").
    pub origins: Vec<String>,
}
