//! One gate seen from several places. A front end keeps an `Arc` of the session's gate to
//! change its posture (`/yolo`, an approved plan) while the agent checks calls through the
//! same `Arc`; a planner or a subagent gets [`ChecksOnly`], which judges every call the same
//! way but cannot change the posture, the plan window or the permission hook of the session
//! it serves (a child's planner closes its plan window each turn, which must not close the
//! parent's).

use std::sync::Arc;

use serde_json::Value;

use super::gate::{Gate, McpToolPolicy, Posture, RequestHook, Verdict};
use super::guardian::CallContext;
use crate::tool::{Profile, ReadDenials};

impl<G: Gate + ?Sized> Gate for Arc<G> {
    fn check_declared(&self, tool: &str, profile: Profile, args: &Value) -> Verdict {
        (**self).check_declared(tool, profile, args)
    }

    fn check_in_context(
        &self,
        tool: &str,
        profile: Profile,
        args: &Value,
        context: &CallContext,
    ) -> Verdict {
        (**self).check_in_context(tool, profile, args, context)
    }

    fn read_denials(&self) -> Option<Arc<dyn ReadDenials>> {
        (**self).read_denials()
    }

    fn check(&self, tool: &str, read_only: bool, args: &Value) -> Verdict {
        (**self).check(tool, read_only, args)
    }

    fn check_fresh(&self, tool: &str, args: &Value, preview: &str) -> Verdict {
        (**self).check_fresh(tool, args, preview)
    }

    fn mcp_policy(&self, tool: &str) -> Option<McpToolPolicy> {
        (**self).mcp_policy(tool)
    }

    fn set_plan_window(&self, open: bool) {
        (**self).set_plan_window(open)
    }

    fn set_posture(&self, posture: Posture) {
        (**self).set_posture(posture)
    }

    fn set_request_hook(&self, hook: RequestHook) {
        (**self).set_request_hook(hook)
    }
}

/// Another session's gate with its checks only: the posture, plan window and permission hook
/// stay the owner's (the trait's defaults, which change nothing, answer those here).
pub struct ChecksOnly<G: ?Sized>(pub Arc<G>);

impl<G: Gate + ?Sized> Gate for ChecksOnly<G> {
    fn check_declared(&self, tool: &str, profile: Profile, args: &Value) -> Verdict {
        self.0.check_declared(tool, profile, args)
    }

    fn check_in_context(
        &self,
        tool: &str,
        profile: Profile,
        args: &Value,
        context: &CallContext,
    ) -> Verdict {
        self.0.check_in_context(tool, profile, args, context)
    }

    fn read_denials(&self) -> Option<Arc<dyn ReadDenials>> {
        self.0.read_denials()
    }

    fn check(&self, tool: &str, read_only: bool, args: &Value) -> Verdict {
        self.0.check(tool, read_only, args)
    }

    fn check_fresh(&self, tool: &str, args: &Value, preview: &str) -> Verdict {
        self.0.check_fresh(tool, args, preview)
    }

    fn mcp_policy(&self, tool: &str) -> Option<McpToolPolicy> {
        self.0.mcp_policy(tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::{Decision, Policy, PolicyGate};

    fn gate() -> Arc<PolicyGate> {
        let policy = Policy::new(Decision::Ask, "/ws".into(), None);
        Arc::new(PolicyGate::new(policy, Posture::Ask, None))
    }

    #[test]
    fn a_shared_gate_forwards_control_and_a_checks_only_view_does_not() {
        let owner = gate();
        let write = serde_json::json!({"path": "a.txt", "content": "x"});
        let profile = crate::tool::builtin::profile("write_file").unwrap();
        // Headless, an ask under the `ask` posture is allowed; `strict` refuses it.
        let shared: Box<dyn Gate> = Box::new(Arc::clone(&owner));
        let view = ChecksOnly(Arc::clone(&owner));
        view.set_posture(Posture::Strict);
        assert!(owner.check_declared("write_file", profile, &write).allowed);
        shared.set_posture(Posture::Strict);
        assert!(!owner.check_declared("write_file", profile, &write).allowed);
        assert!(
            !view.check_declared("write_file", profile, &write).allowed,
            "same checks"
        );
    }
}
