//! Plan mode in the agent loop (SPEC §3.7 "Relationship to plan mode"). The state lives in
//! `ToolContext::workflow`; this module owns what the loop does with it:
//!
//! - at the start of a turn: auto-plan (a task that looks complex enters plan mode), the
//!   approved-plan window closes (the user spoke), and a turn that starts in plan mode gets a
//!   short instruction block appended to its user message, stored with it, so the tool list
//!   and the system prompt (the cache-stable prefix) are the same in both modes and a replay
//!   of the session is byte-stable;
//! - before the permission gate: while planning, MCP writers and destructive tools and MCP
//!   readers the user has not trusted are hard-blocked (no approval releases them), and
//!   `complete_step`, which belongs to carrying out an approved plan, is refused;
//! - after each round: the reviews `exit_plan_mode` left are reported and acted on (posture,
//!   the gate's window), the window closes when the task list it opened on completes, and a
//!   plan no one could review ends the run;
//! - at the end of the turn: the window closes.
//!
//! The review itself is `tool::builtin::plan`'s; showing it is the front end's.

use std::sync::{Mutex, PoisonError};

use super::events::{Event, EventSink, NoticeLevel};
use super::runner::Finish;
use crate::permission::{Gate, Posture};
use crate::tool::builtin::todo::{TodoItem, TodoStatus};
use crate::tool::collab::{PlanOutcome, Workflow};

/// The tool that records progress on an approved plan; refused while planning.
const COMPLETE_STEP: &str = "complete_step";

/// Appended to the user message of a turn that starts in plan mode. Its bytes never change,
/// so a replayed session sends exactly what was sent.
pub const INSTRUCTION: &str = "\n\n<plan-mode>\nYou are in plan mode. Research before \
changing anything: read files, search and run commands that change nothing. Make no edits \
and no other changes yet. MCP tools that write, and MCP readers the user has not trusted, \
are blocked until a plan is approved. When you understand the task, call exit_plan_mode \
with the complete plan (the steps, the files each touches, how you will verify the result) \
for the user to review, and stop there.\n</plan-mode>";

/// Plan-mode configuration from `[agent]` and `[[plugins]]`.
#[derive(Debug, Clone, Default)]
pub struct PlanSettings {
    /// `[agent] auto_plan`: a turn whose task looks complex starts in plan mode.
    pub auto_plan: bool,
    /// `[agent] plan_mode_allowed_tools`: full `mcp__server__tool` names trusted as
    /// read-only while planning (the legacy alias of `trusted_read_only_tools`).
    pub trusted_tools: Vec<String>,
}

/// The loop's plan-mode bookkeeping.
#[derive(Debug, Default)]
pub struct Planner {
    settings: PlanSettings,
    /// The plan mode consumers were last told about ([`Event::PlanMode`]).
    reported: bool,
    /// The task list as it was when the approved-plan window opened: the window closes when
    /// the list completes, and a list that was already complete must not close it at once.
    window_todos: Option<Vec<TodoItem>>,
}

impl Planner {
    pub fn new(settings: PlanSettings) -> Planner {
        Planner {
            settings,
            ..Planner::default()
        }
    }

    /// A front end changed plan mode itself (`/plan`, `--plan`) and reports it itself.
    pub fn reported(&mut self, planning: bool) {
        self.reported = planning;
    }

    /// The user spoke: the window closes, auto-plan may enter plan mode, and the text of the
    /// user message is returned, with the plan-mode block when the turn plans.
    pub fn start_turn(
        &mut self,
        input: String,
        workflow: &Mutex<Workflow>,
        gate: &dyn Gate,
        sink: &mut dyn EventSink,
    ) -> String {
        let planning = {
            let mut workflow = lock(workflow);
            workflow.plan_window = false;
            workflow.proposed = None;
            if self.settings.auto_plan && !workflow.planning && looks_complex(&input) {
                workflow.planning = true;
                sink.emit(Event::Notice {
                    level: NoticeLevel::Info,
                    message: "auto-plan: this task looks complex, so plan mode is on: the \
                              model researches and proposes a plan for you to review first"
                        .into(),
                });
            }
            workflow.planning
        };
        self.window_todos = None;
        gate.set_plan_window(false);
        self.report(planning, sink);
        if planning {
            input + INSTRUCTION
        } else {
            input
        }
    }

    /// Why `tool` may not run now, before the permission gate is asked; `None` lets the gate
    /// decide. Only planning blocks anything.
    pub fn check(&self, tool: &str, workflow: &Mutex<Workflow>, gate: &dyn Gate) -> Option<String> {
        if !lock(workflow).planning {
            return None;
        }
        if tool == COMPLETE_STEP {
            return Some(
                "refused while planning: complete_step records progress on an approved plan; \
                 finish the plan and hand it in with exit_plan_mode first"
                    .into(),
            );
        }
        let policy = gate.mcp_policy(tool);
        if policy.is_none() && !tool.starts_with("mcp__") {
            return None;
        }
        let listed = self.settings.trusted_tools.iter().any(|t| t == tool);
        let why = match policy {
            Some(p) if p.destructive => "is marked destructive by its MCP server",
            Some(p) if p.trusted_read_only => return None,
            _ if listed => return None,
            Some(p) if !p.read_only => "is an MCP tool that may change things",
            Some(_) => {
                "is an MCP reader the user has not trusted (its server's readOnlyHint alone \
                 does not count; `trusted_read_only_tools` in its [[plugins]] entry does)"
            }
            None => "is an MCP tool this run knows nothing about",
        };
        Some(format!(
            "blocked while planning: `{tool}` {why}; it becomes available after the plan is \
             approved. Do not retry it now: research with other tools and put this step in \
             the plan"
        ))
    }

    /// After a round: reports and acts on the reviews, keeps the gate's window in step with
    /// the workflow, and ends the run with a plan no one could review.
    pub fn after_round(
        &mut self,
        workflow: &Mutex<Workflow>,
        todos: &Mutex<Vec<TodoItem>>,
        gate: &dyn Gate,
        sink: &mut dyn EventSink,
    ) -> Option<Finish> {
        let (decisions, planning, proposed) = {
            let mut workflow = lock(workflow);
            let decisions = std::mem::take(&mut workflow.decisions);
            (decisions, workflow.planning, workflow.proposed.take())
        };
        for decision in decisions {
            if decision.outcome == PlanOutcome::ApprovedAcceptEdits {
                gate.set_posture(Posture::Auto);
                sink.emit(Event::Notice {
                    level: NoticeLevel::Info,
                    message: "tool approvals are auto for the rest of this session".into(),
                });
            }
            sink.emit(Event::Plan {
                plan: decision.plan,
                outcome: decision.outcome,
            });
        }
        self.report(planning, sink);
        let open = self.track_window(workflow, todos, sink);
        gate.set_plan_window(open);
        proposed.map(Finish::Plan)
    }

    /// The turn is over: the window closes, whatever was left of the plan.
    pub fn end_turn(&mut self, workflow: &Mutex<Workflow>, gate: &dyn Gate) {
        lock(workflow).plan_window = false;
        self.window_todos = None;
        gate.set_plan_window(false);
    }

    /// Whether the window stays open: it closes once the task list it opened on has changed
    /// into a list with every item completed.
    fn track_window(
        &mut self,
        workflow: &Mutex<Workflow>,
        todos: &Mutex<Vec<TodoItem>>,
        sink: &mut dyn EventSink,
    ) -> bool {
        let mut workflow = lock(workflow);
        if !workflow.plan_window {
            self.window_todos = None;
            return false;
        }
        let todos = lock(todos).clone();
        let Some(opened_on) = &self.window_todos else {
            self.window_todos = Some(todos);
            return true;
        };
        let done = !todos.is_empty()
            && todos.iter().all(|t| t.status == TodoStatus::Completed)
            && *opened_on != todos;
        if done {
            workflow.plan_window = false;
            self.window_todos = None;
            sink.emit(Event::Notice {
                level: NoticeLevel::Info,
                message: "the approved plan's task list is complete; edits ask again".into(),
            });
        }
        !done
    }

    fn report(&mut self, planning: bool, sink: &mut dyn EventSink) {
        if planning != self.reported {
            self.reported = planning;
            sink.emit(Event::PlanMode { planning });
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Words that mark a task as broad. Matched as lowercase substrings, so "refactoring" and
/// "migrated" count too.
const BROAD: &[&str] = &[
    "refactor",
    "migrate",
    "migration",
    "redesign",
    "re-architect",
    "rearchitect",
    "overhaul",
    "across the codebase",
    "across the code base",
    "throughout the codebase",
    "multiple files",
    "several files",
    "many files",
    "every file",
    "重构",
    "迁移",
    "重新设计",
    "多个文件",
    "整个代码库",
];

/// A task text at least this long (in characters) counts as complex.
const LONG_TASK: usize = 600;

/// A task with at least this many list items (numbered or bulleted lines) counts as complex.
const MANY_STEPS: usize = 3;

/// Auto-plan's deterministic test of whether a task looks complex: it is long
/// ([`LONG_TASK`] characters or more), lists [`MANY_STEPS`] or more steps (lines starting
/// with `1.`, `2)`, `-`, `*` or `•`), or uses a word of broad change ([`BROAD`]: refactor,
/// migrate, redesign, across the codebase, multiple files, ...).
pub fn looks_complex(text: &str) -> bool {
    if text.chars().count() >= LONG_TASK {
        return true;
    }
    let steps = text.lines().filter(|line| is_list_item(line)).count();
    if steps >= MANY_STEPS {
        return true;
    }
    let lower = text.to_lowercase();
    BROAD.iter().any(|word| lower.contains(word))
}

/// `1. x`, `12) x`, `- x`, `* x`, `• x`.
fn is_list_item(line: &str) -> bool {
    let line = line.trim_start();
    if let Some(rest) = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .or_else(|| line.strip_prefix("• "))
    {
        return !rest.trim().is_empty();
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    digits > 0
        && matches!(
            line[digits..].strip_prefix(['.', ')']),
            Some(rest) if rest.starts_with(' ') && !rest.trim().is_empty()
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApprovalMode;
    use crate::permission::{McpToolPolicy, Verdict};
    use crate::tool::Profile;
    use serde_json::Value;

    #[test]
    fn the_complexity_test_is_a_table() {
        let long = "word ".repeat(130);
        let cases: &[(&str, bool)] = &[
            ("fix the typo in README", false),
            ("what does src/main.rs do?", false),
            ("add a --verbose flag to the run command", false),
            ("refactor the session module", true),
            ("Migrate the config loader to toml 0.9", true),
            ("redesign the output formats", true),
            ("rename Foo to Bar across the codebase", true),
            ("this touches multiple files", true),
            ("把会话模块重构一下", true),
            ("1. add a flag\n2. document it\n3. test it", true),
            ("- add a flag\n- document it", false),
            ("- add a flag\n* document it\n• test it", true),
            ("2024. was a year\n3.5 apples\n10)no space", false),
            (long.as_str(), true),
        ];
        for (text, complex) in cases {
            assert_eq!(looks_complex(text), *complex, "{text:?}");
        }
    }

    /// A gate that knows a few MCP tools and remembers what it was told.
    #[derive(Default)]
    struct FakeGate {
        window: Mutex<Vec<bool>>,
        posture: Mutex<Option<Posture>>,
    }

    impl Gate for FakeGate {
        fn check_declared(&self, _: &str, _: Profile, _: &Value) -> Verdict {
            Verdict::allow()
        }
        fn mcp_policy(&self, tool: &str) -> Option<McpToolPolicy> {
            let (destructive, read_only, trusted_read_only) = match tool {
                "mcp__s__rm" => (true, false, true),
                "mcp__s__write" => (false, false, false),
                "mcp__s__hinted" => (false, true, false),
                "mcp__s__trusted" => (false, true, true),
                "mcp__s__legacy" => (false, true, false),
                _ => return None,
            };
            Some(McpToolPolicy {
                destructive,
                read_only,
                trusted_read_only,
                mode: ApprovalMode::Auto,
                auto_review: false,
            })
        }
        fn set_plan_window(&self, open: bool) {
            self.window.lock().unwrap().push(open);
        }
        fn set_posture(&self, posture: Posture) {
            *self.posture.lock().unwrap() = Some(posture);
        }
    }

    #[test]
    fn planning_blocks_mcp_writers_and_untrusted_readers_only() {
        let planner = Planner::new(PlanSettings {
            auto_plan: false,
            trusted_tools: vec!["mcp__s__legacy".into(), "mcp__gone__x".into()],
        });
        let gate = FakeGate::default();
        let workflow = Mutex::new(Workflow::default());
        for tool in ["mcp__s__write", "complete_step", "read_file"] {
            assert_eq!(planner.check(tool, &workflow, &gate), None, "{tool}");
        }
        lock(&workflow).planning = true;
        let cases = [
            ("mcp__s__rm", Some("destructive")),
            ("mcp__s__write", Some("may change things")),
            ("mcp__s__hinted", Some("has not trusted")),
            ("mcp__unknown__x", Some("knows nothing")),
            ("complete_step", Some("approved plan")),
            ("mcp__s__trusted", None),
            ("mcp__s__legacy", None),
            ("mcp__gone__x", None),
            ("write_file", None),
            ("bash", None),
        ];
        for (tool, expected) in cases {
            let got = planner.check(tool, &workflow, &gate);
            match (expected, &got) {
                (None, None) => {}
                (Some(part), Some(message)) => {
                    assert!(message.contains(part), "{tool}: {message}");
                    if tool.starts_with("mcp__") {
                        assert!(message.starts_with("blocked while planning"), "{message}");
                        assert!(message.contains("after the plan is approved"), "{message}");
                    }
                }
                _ => panic!("{tool}: expected {expected:?}, got {got:?}"),
            }
        }
    }

    /// Built from JSON, as `todo_write` would store it, so the test does not depend on
    /// every field the list keeps.
    fn item(id: &str, status: TodoStatus) -> TodoItem {
        serde_json::from_value(serde_json::json!({"id": id, "content": id, "status": status}))
            .unwrap()
    }

    #[test]
    fn the_window_follows_approval_and_closes_when_the_new_list_completes() {
        let mut planner = Planner::new(PlanSettings::default());
        let gate = FakeGate::default();
        let workflow = Mutex::new(Workflow {
            planning: true,
            ..Workflow::default()
        });
        // A list left complete by an earlier task.
        let todos = Mutex::new(vec![item("old", TodoStatus::Completed)]);
        let mut events = Vec::new();
        let mut sink = |e: Event| events.push(e);
        let text = planner.start_turn("do it".into(), &workflow, &gate, &mut sink);
        assert_eq!(text, format!("do it{INSTRUCTION}"));
        {
            let mut w = lock(&workflow);
            w.planning = false;
            w.plan_window = true;
            w.decisions.push(crate::tool::collab::PlanDecision {
                plan: "p".into(),
                outcome: PlanOutcome::ApprovedAcceptEdits,
            });
        }
        assert_eq!(
            planner.after_round(&workflow, &todos, &gate, &mut sink),
            None
        );
        assert_eq!(*gate.posture.lock().unwrap(), Some(Posture::Auto));
        *lock(&todos) = vec![
            item("a", TodoStatus::Completed),
            item("b", TodoStatus::InProgress),
        ];
        planner.after_round(&workflow, &todos, &gate, &mut sink);
        assert!(lock(&workflow).plan_window);
        *lock(&todos) = vec![
            item("a", TodoStatus::Completed),
            item("b", TodoStatus::Completed),
        ];
        planner.after_round(&workflow, &todos, &gate, &mut sink);
        assert!(!lock(&workflow).plan_window);
        assert_eq!(
            *gate.window.lock().unwrap(),
            [false, true, true, false],
            "closed at the start, open after approval, closed when the list completed"
        );
        let kinds: Vec<String> = events
            .iter()
            .map(|e| match e {
                Event::PlanMode { planning } => format!("plan_mode {planning}"),
                Event::Plan { outcome, .. } => format!("plan {}", outcome.as_str()),
                Event::Notice { .. } => "notice".into(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "plan_mode true",
                "notice",
                "plan approved_accept_edits",
                "plan_mode false",
                "notice"
            ]
        );
    }

    #[test]
    fn auto_plan_enters_plan_mode_for_a_complex_task_only() {
        let mut planner = Planner::new(PlanSettings {
            auto_plan: true,
            trusted_tools: Vec::new(),
        });
        let gate = FakeGate::default();
        let workflow = Mutex::new(Workflow::default());
        let mut sink = |_: Event| {};
        let text = planner.start_turn("fix the typo in README".into(), &workflow, &gate, &mut sink);
        assert_eq!(text, "fix the typo in README");
        assert!(!lock(&workflow).planning);
        let text = planner.start_turn("refactor the loader".into(), &workflow, &gate, &mut sink);
        assert!(text.ends_with(INSTRUCTION));
        assert!(lock(&workflow).planning);
    }
}
