//! Every tool the model can be offered, in one registry: the built-ins, the delegation tools
//! a session adds when it can run children (`task`, `read_only_task`, `fleet`,
//! `parallel_tasks`), the skill tools a session with skills adds (`skill`,
//! `read_only_skill`) and the coordinator's `plan_status`. `reasonix tools` and the tool
//! contract (`docs/TOOL_CONTRACT.md`) list this set, so a tool cannot reach the model without
//! a documented, tested schema. MCP tools are the servers' own and are not listed.

use std::sync::Arc;

use crate::tool::builtin::{self, fleet, skill, task};
use crate::tool::Registry;

use super::coordinator::PlanStatus;

/// The registry of every tool a session may offer, for listings and the contract.
pub fn every_tool() -> Registry {
    let mut registry = Registry::new();
    for tool in builtin::all() {
        registry.insert(tool);
    }
    registry.insert(Arc::new(task::Task));
    registry.insert(Arc::new(task::ReadOnlyTask));
    registry.insert(Arc::new(fleet::Fleet));
    registry.insert(Arc::new(fleet::ParallelTasks));
    registry.insert(Arc::new(skill::SkillTool));
    registry.insert(Arc::new(skill::ReadOnlySkill));
    registry.insert(Arc::new(PlanStatus::unreported()));
    registry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_added_tools_are_all_listed() {
        let names = every_tool().names();
        for name in [
            "task",
            "read_only_task",
            "fleet",
            "parallel_tasks",
            "skill",
            "read_only_skill",
            "plan_status",
            "read_file",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} missing: {names:?}");
        }
    }

    /// The Claude Code vocabulary lists every tool a session may offer and nothing else, so
    /// a new tool cannot reach a Claude pipeline under an unmapped name by accident.
    #[test]
    fn the_claude_vocabulary_lists_exactly_the_offered_tools() {
        let mut offered = every_tool().names();
        let mut listed: Vec<String> = crate::tool::claude_vocabulary::TOOLS
            .iter()
            .map(|e| e.ours.to_string())
            .collect();
        offered.sort();
        listed.sort();
        assert_eq!(listed, offered);
    }
}
