//! Print mode's permission semantics, Claude Code's rather than `reasonix run`'s: with no
//! one to ask, a call that would need a permission and is not pre-allowed (`--allowedTools`,
//! allow rules) is denied and listed in `permission_denials`, where `run` would allow it.
//! `acceptEdits` allows the file edits among them. The Agent SDK lane replaces this approver
//! with one that asks the SDK's `can_use_tool`.

use crate::permission::{ApprovalAnswer, ApprovalRequest, Approver};
use crate::tool::Family;

use super::flags::ClaudeMode;

/// Answers the gate's asks as Claude Code's print mode does without a permission prompt.
pub struct Headless {
    pub mode: ClaudeMode,
}

impl Approver for Headless {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        // An explicit ask rule (`request.rule`) still needs a person, in every mode.
        let edit = request.family == Family::Writer && request.rule.is_none();
        match self.mode {
            ClaudeMode::AcceptEdits if edit => ApprovalAnswer::Once,
            _ => ApprovalAnswer::Deny,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(family: Family, rule: Option<&str>) -> ApprovalRequest {
        ApprovalRequest {
            tool: "t".into(),
            family,
            subject: None,
            args: serde_json::Value::Null,
            rule: rule.map(str::to_string),
            scopes: Vec::new(),
        }
    }

    #[test]
    fn only_accept_edits_allows_and_only_the_edit_fallback() {
        let edits = Headless {
            mode: ClaudeMode::AcceptEdits,
        };
        assert_eq!(
            edits.approve(&request(Family::Writer, None)),
            ApprovalAnswer::Once
        );
        assert_eq!(
            edits.approve(&request(Family::Shell, None)),
            ApprovalAnswer::Deny
        );
        assert_eq!(
            edits.approve(&request(Family::Writer, Some("Edit(src/**)"))),
            ApprovalAnswer::Deny
        );
        for mode in [ClaudeMode::Default, ClaudeMode::DontAsk, ClaudeMode::Plan] {
            let headless = Headless { mode };
            assert_eq!(
                headless.approve(&request(Family::Writer, None)),
                ApprovalAnswer::Deny
            );
        }
    }
}
