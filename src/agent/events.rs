//! The events the agent loop produces. Every front end (text, json, stream-json, the chat UI)
//! is a consumer of this one stream; adding a front end never touches the loop.

use crate::provider::{Retry, Usage};

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
        /// The static policy's decision: "allow", "ask" or "deny".
        decision: String,
        /// How it was resolved: "rule", "mode", "auto", "yolo", "strict", "headless",
        /// "session-grant", "user-once", "user-session", "user-always" or "user-deny".
        resolution: String,
        /// Whether the tool runs.
        allowed: bool,
        rule: Option<String>,
        /// "ask", "auto", "yolo" or "strict".
        posture: String,
    },
    /// One provider request finished; `usage` is that request's, not the running total.
    Usage {
        usage: Usage,
        cost_usd: Option<f64>,
    },
    Notice {
        level: NoticeLevel,
        message: String,
    },
    /// A provider request failed in a way worth another try, which comes after `wait`.
    /// Front ends show it as a warning notice (stream-json: `"kind": "retry"`).
    Retry(Retry),
    /// Context maintenance rewrote the history: stale tool results were snipped or pruned
    /// and, for `tier = "fold"`, earlier assistant/tool work was folded into a digest.
    Compaction {
        /// "auto", "force" or "manual" (`/compact`).
        trigger: String,
        /// "snip", "prune" or "fold".
        tier: String,
        before_tokens: u64,
        after_tokens: u64,
        /// Messages replaced by the digest (0 unless folding).
        messages_folded: usize,
        /// Tool results snipped or pruned.
        results_shortened: usize,
        /// The archive file the originals were appended to.
        archive: Option<String>,
    },
    /// The request prefix changed, so the provider's prompt cache restarts from
    /// `first_changed` (an index into the messages). Compaction does this, and so does a
    /// change of the tool list (tool definitions precede every message, so `first_changed`
    /// is 0).
    CachePrefixChanged {
        /// "snip", "prune", "fold" or "tools".
        reason: String,
        first_changed: usize,
    },
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
