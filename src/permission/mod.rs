//! Per-call permission gating (SPEC §3.7): rules (`rules`), the shell analysis Bash rules need
//! (`shell`), the static policy with its precedence (`policy`) and the gate that resolves Ask
//! through the posture, session grants and an approver (`gate`), and what the Guardian
//! reviewer is asked and answers (`guardian`). The agent consults a [`Gate`]
//! before executing each tool; confining what an allowed tool can touch is the sandbox's job.

pub mod gate;
pub mod guardian;
pub mod policy;
pub mod rules;
pub mod shared;
pub mod shell;

pub use gate::{
    parse_posture, AllowAll, ApprovalAnswer, ApprovalRequest, Approver, Gate, McpLookup,
    McpToolPolicy, Persist, PolicyGate, Posture, Resolution, Verdict,
};
pub use guardian::{CallContext, Review, ReviewOutcome, ReviewRequest, ReviewSpend, Reviewer};
pub use policy::{Basis, Decision, Policy, Ruling};
pub use rules::{
    claude_tool_list, split_rule_list, Call, MatchContext, Polarity, Rule, RuleError, Subject,
};
pub use shared::ChecksOnly;
