//! The per-call permission gate the agent consults before executing a tool. The rule parser,
//! policy and approvers arrive with the permissions work; until then the gate allows all.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// The tool must not run; the model is told which rule blocked it.
    Deny {
        reason: String,
    },
}

pub trait Gate: Send + Sync {
    fn check(&self, tool: &str, read_only: bool, args: &Value) -> Verdict;
}

/// The pass-through gate.
pub struct AllowAll;

impl Gate for AllowAll {
    fn check(&self, _tool: &str, _read_only: bool, _args: &Value) -> Verdict {
        Verdict::Allow
    }
}
