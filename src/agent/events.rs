//! The events the agent loop produces. Every front end (text, json, stream-json, the chat UI)
//! is a consumer of this one stream; adding a front end never touches the loop.

use super::compaction::{Tier, Trigger};
use crate::permission::{Decision, Posture, Resolution};
use crate::provider::{Retry, Usage};
use crate::tool::builtin::ask::Asked;
use crate::tool::builtin::todo::TodoItem;
use crate::tool::collab::PlanOutcome;
use crate::tool::Family;

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The run is set up and about to send its first request.
    Init {
        session_id: String,
        model: String,
        provider: String,
        tools: Vec<String>,
        cwd: String,
    },
    TextDelta(String),
    ReasoningDelta(String),
    /// The model asked for a tool; emitted before permission checks and execution.
    ToolUse {
        id: String,
        name: String,
        /// Raw JSON text of the arguments as the model sent them.
        arguments: String,
        /// What the tool does, as it declares it (`Other` for a name no tool has).
        family: Family,
    },
    ToolResult {
        id: String,
        name: String,
        output: String,
        is_error: bool,
        duration_ms: u64,
    },
    /// The permission gate decided a call by anything other than a plain allow: a deny, or an
    /// Ask resolved by the posture, a session grant, the user or (headless) without a user.
    Permission {
        tool: String,
        subject: Option<String>,
        /// The static policy's decision.
        decision: Decision,
        /// How it was resolved (a rule, the mode, the posture, a grant, the user...).
        resolution: Resolution,
        /// Whether the tool runs.
        allowed: bool,
        rule: Option<String>,
        /// `None` for gates without a posture.
        posture: Option<Posture>,
        /// The Guardian reviewer's reason (`resolution` `guardian`), or why it gave no verdict.
        reason: Option<String>,
    },
    /// One provider request finished; `usage` is that request's, not the running total.
    Usage {
        usage: Usage,
        cost_usd: Option<f64>,
    },
    /// A Guardian review's request finished: the session's tokens and cost, never its
    /// context (the reviewer has its own).
    ReviewerUsage {
        model: String,
        usage: Usage,
        cost_usd: Option<f64>,
    },
    Notice {
        level: NoticeLevel,
        message: String,
    },
    /// A request has produced nothing for `silent_ms` (the first notice after
    /// [`crate::agent::waiting::FIRST_NOTICE`], then every
    /// [`crate::agent::waiting::NOTICE_EVERY`]): the run is waiting for the model, not stuck
    /// in silence. `received`: part of the reply had arrived before the pause. Front ends
    /// show it as a status line (stream-json: a `notice` with `"kind": "waiting"`).
    Waiting {
        silent_ms: u64,
        received: bool,
        /// The provider gives up after this much silence (`idle_seconds`), when known.
        idle_limit_ms: Option<u64>,
    },
    /// A provider request failed in a way worth another try, which comes after `wait`.
    /// Front ends show it as a warning notice (stream-json: `"kind": "retry"`).
    Retry(Retry),
    /// The primary model stayed overloaded (or failed with a server error) and this turn goes on with
    /// the fallback model (`--fallback-model`); the next turn tries the primary again. Front
    /// ends show it as a warning (Claude stream-json: `system`/`model_fallback`).
    ModelFallback {
        /// `overloaded`, `server_error` or `model_not_found`.
        trigger: &'static str,
        from: String,
        to: String,
        /// The primary's last error.
        reason: String,
    },
    /// Context maintenance rewrote the history: stale tool results were snipped or pruned
    /// and, for `tier = "fold"`, earlier assistant/tool work was folded into a digest.
    Compaction {
        trigger: Trigger,
        tier: Tier,
        before_tokens: u64,
        after_tokens: u64,
        /// Messages replaced by the digest (0 unless folding).
        messages_folded: usize,
        /// Tool results snipped or pruned.
        results_shortened: usize,
        /// The archive file the originals were appended to.
        archive: Option<String>,
    },
    /// The task list changed (`todo_write`, `complete_step`); the whole list, as it is now.
    Todo {
        items: Vec<TodoItem>,
    },
    /// A hook ran. `outcome` is `ok`, `blocked`, `ask` or `error`; `message` says why.
    Hook {
        event: &'static str,
        command: String,
        /// The tool call it ran for, for tool events.
        tool: Option<String>,
        outcome: &'static str,
        message: Option<String>,
        duration_ms: u64,
    },
    /// An `ask` call finished: the person's answer, their dismissal, or (headless) the
    /// assumption the model goes on with instead.
    Ask(Asked),
    /// Plan mode was entered or left: by the user, auto-plan, or an approved plan.
    PlanMode {
        planning: bool,
    },
    /// `exit_plan_mode` proposed a plan and this is what became of it (proposed with no one
    /// to review it, approved, sent back with feedback, or not answered).
    Plan {
        plan: String,
        outcome: PlanOutcome,
    },
    /// The request prefix changed, so the provider's prompt cache restarts from
    /// `first_changed` (an index into the messages). Compaction does this, and so does a
    /// change of the tool list (tool definitions precede every message, so `first_changed`
    /// is 0).
    CachePrefixChanged {
        reason: PrefixChange,
        first_changed: usize,
    },
    /// A subagent (`task`, `read_only_task`, a subagent skill) finished; reported after the
    /// round that ran it, before the parent's next request.
    Subagent {
        /// The call that started it (`None` where no call did: `reasonix subagent`).
        parent_tool_use_id: Option<String>,
        /// Its place in that call's task list (0 for a single task).
        task: usize,
        /// The child session file, for `--resume`.
        session_path: String,
        profile: Option<String>,
        read_only: bool,
        /// Whether it ended with an answer.
        ok: bool,
        requests: u32,
        tool_rounds: u32,
        usage: Usage,
        /// `None` when no prices are known for its model, as in the run's result.
        cost_usd: Option<f64>,
        elapsed_ms: u64,
    },
    /// A subagent is waiting for a place in the session's scheduler, or has started.
    SubagentStatus {
        parent_tool_use_id: Option<String>,
        task: usize,
        profile: Option<String>,
        /// The task in a few words (its prompt's first line), for a status line.
        label: String,
        state: ChildState,
    },
    /// Something a running subagent did, relayed while the call that started it runs.
    Child {
        parent_tool_use_id: String,
        task: usize,
        event: Box<Event>,
    },
}

/// Where a subagent is before it finishes (its end is [`Event::Subagent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildState {
    /// Waiting for the scheduler: the concurrency or writer cap, or an overlapping writer.
    Queued,
    Running,
}

impl ChildState {
    pub fn as_str(self) -> &'static str {
        match self {
            ChildState::Queued => "queued",
            ChildState::Running => "running",
        }
    }
}

/// Why the request prefix changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixChange {
    Compaction(Tier),
    /// The tool list changed.
    Tools,
}

impl PrefixChange {
    pub fn as_str(self) -> &'static str {
        match self {
            PrefixChange::Compaction(tier) => tier.as_str(),
            PrefixChange::Tools => "tools",
        }
    }
}

/// The one wording of [`Event::Waiting`], shared by every front end: "waiting for the
/// model: 40 s, nothing received yet; idle limit 120 s".
pub fn waiting_message(silent_ms: u64, received: bool, idle_limit_ms: Option<u64>) -> String {
    let what = if received {
        " since its last output"
    } else {
        ", nothing received yet"
    };
    let mut message = format!("waiting for the model: {} s{what}", silent_ms / 1000);
    if let Some(limit) = idle_limit_ms {
        message.push_str(&format!("; idle limit {} s", limit / 1000));
    }
    message
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    Info,
    Warning,
}

impl NoticeLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeLevel::Info => "info",
            NoticeLevel::Warning => "warning",
        }
    }
}

/// Where events go. Called on the thread running the loop, in order.
///
/// `emit` does not fail, so the many producers (the loop, MCP start-up, compaction) need no
/// error path. A sink whose reader is gone (stdout a closed pipe) stops the run instead: it
/// cancels the run's [`crate::cancel::CancelToken`], which the loop checks before every
/// request and tool round (and which aborts a streaming request or running tool), drops the
/// rest, and its owner reports the closed output in the exit status.
pub trait EventSink {
    fn emit(&mut self, event: Event);
}

impl<F: FnMut(Event)> EventSink for F {
    fn emit(&mut self, event: Event) {
        self(event)
    }
}
