//! The collaboration state tools take part in: whether the agent is planning, whether an
//! approved plan's window is open, and the questions only a person can answer (the review of a
//! plan, an `ask` choice card). The chat answers those with modals; a headless run has no one
//! to ask (`ToolContext::interact` is `None`), so `ask` falls back to a stated assumption and
//! a proposed plan ends `reasonix run --plan` (unless `--approve-plan` stands in for the
//! review). No approval posture answers either: they are decisions, not tool approvals.

use crate::cancel::CancelToken;

/// An `ask` call as the person sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub question: String,
    pub options: Vec<String>,
    /// The person may type an answer instead of choosing an option.
    pub allow_free_text: bool,
}

/// A person's answer to a [`Question`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// One of the options, by index.
    Option(usize),
    /// Free text typed by the person.
    Text(String),
    /// The person saw the question and declined to answer it (Esc on the card).
    Dismissed,
}

/// A person's review of a proposed plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanReview {
    /// Leave plan mode and carry the plan out; the approved-plan window opens.
    Approve,
    /// Like `Approve`, and the posture becomes auto for the rest of the session.
    ApproveAcceptEdits,
    /// Stay in plan mode; the feedback goes back to the model.
    KeepPlanning(String),
}

/// What became of a plan `exit_plan_mode` proposed, as the event stream reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanOutcome {
    /// No one could review it (headless `run --plan`): the run ends with it as its result.
    Proposed,
    Approved,
    /// Approved, and the posture becomes auto for the rest of the session.
    ApprovedAcceptEdits,
    /// The person wants more planning; the feedback went back to the model.
    KeepPlanning(String),
    /// No answer came (the turn was cancelled, the chat is closing).
    Cancelled,
}

impl PlanOutcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            PlanOutcome::Proposed => "proposed",
            PlanOutcome::Approved => "approved",
            PlanOutcome::ApprovedAcceptEdits => "approved_accept_edits",
            PlanOutcome::KeepPlanning(_) => "keep_planning",
            PlanOutcome::Cancelled => "cancelled",
        }
    }
}

/// One review of a proposed plan, left by `exit_plan_mode` for the agent, which reports it
/// and acts on it (the posture, the gate's window) after the round: a tool has no event sink
/// and no gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDecision {
    pub plan: String,
    pub outcome: PlanOutcome,
}

/// The person at the other end of a run. Called from the thread running a tool; blocks until
/// the person answers. `None` means no one answered (the turn was cancelled, the chat is
/// closing).
pub trait Interact: Send + Sync {
    fn ask(&self, question: &Question, cancel: &CancelToken) -> Option<Answer>;
    fn review_plan(&self, plan: &str, cancel: &CancelToken) -> Option<PlanReview>;

    /// Whether a person answers (the chat), so waiting is worth a `Notification`; a stand-in
    /// such as `--approve-plan` answers at once and says no.
    fn is_person(&self) -> bool {
        true
    }
}

/// Plan-mode state shared by the agent, the workflow tools and the front end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workflow {
    /// Planning: MCP writers and untrusted MCP readers are hard-blocked and `complete_step`
    /// is refused; everything else follows the ordinary posture and rules.
    pub planning: bool,
    /// An approved plan is being carried out: the writer fallback is allowed without asking
    /// (explicit ask/deny rules, MCP prompt/writes modes and fresh reviews still apply).
    pub plan_window: bool,
    /// A plan the model proposed that no one could review (headless `run --plan`): the run
    /// ends with it as its result.
    pub proposed: Option<String>,
    /// Reviews since the agent last looked, oldest first; the agent drains them.
    pub decisions: Vec<PlanDecision>,
}
