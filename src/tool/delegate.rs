//! The delegation seam: what the `task` tools ask of whoever can start a child agent. The
//! tool layer defines it and the CLI implements it (it alone holds the provider settings,
//! the gate and the session directory), as `collab::Interact` does for the person.

use std::sync::Arc;

use crate::provider::Usage;

use super::{Tool, ToolContext};

/// One child run, as a tool call asked for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskSpec {
    /// The child's only user message.
    pub prompt: String,
    /// A subagent profile (a `runAs: subagent` skill or a built-in), resolved at run time.
    pub profile: Option<String>,
    /// Readers only: the child gets the read-only registry.
    pub read_only: bool,
    /// The call's model and effort, below per-profile config in the precedence.
    pub model: Option<String>,
    pub effort: Option<String>,
    /// Where a writer may write, relative to the workspace; `None` is anywhere a writer of the
    /// parent may. Ignored for readers.
    pub write_paths: Option<Vec<String>>,
    /// Its place in the calling tool's task list (0 for a single task).
    pub index: usize,
}

/// What a finished child hands back. A child that failed still returns an outcome (its
/// failure is the parent's tool result, not the parent's error).
#[derive(Debug, Clone, Default)]
pub struct TaskOutcome {
    /// The child's final answer, or what stopped it.
    pub answer: String,
    /// Whether the child ended with an answer.
    pub ok: bool,
    /// The child session file, for resuming it.
    pub session_path: String,
    pub usage: Usage,
    pub requests: u32,
    pub tool_rounds: u32,
}

/// Starts child agents. `Err` means no child could be started (unknown profile, no room
/// for the session); everything after the start is in the outcome.
pub trait Delegate: Send + Sync {
    fn run(&self, task: &TaskSpec, parent: &ToolContext) -> Result<TaskOutcome, String>;

    /// The parent starts a new round of tool calls: children count afresh against the
    /// per-round budget (see `agent::scheduler`).
    fn begin_round(&self) {}

    /// The MCP tools the parent is offered as it starts children (its composition's
    /// selection, current as of this round): the children take theirs from these, the same
    /// tools of the same running servers, never a server of their own.
    fn offer_mcp(&self, _tools: Vec<Arc<dyn Tool>>) {}
}
