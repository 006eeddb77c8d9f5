//! `complete_step`: signs off the task-list item in progress with the evidence that it is
//! done and starts the next one, so a model carrying out a plan moves through the list one
//! checked step at a time. The list and its rules belong to `todo`; this module only moves
//! through a list that keeps them. During planning it refuses itself: it belongs to carrying
//! out an approved plan.

use std::sync::PoisonError;

use serde_json::{json, Value};

use super::todo::{self, TodoItem, TodoStatus};
use crate::tool::{args, Family, Subjects, Tool, ToolContext, ToolError};

pub struct CompleteStep;

const DESCRIPTION: &str = "\
Marks the task-list item that is in_progress as completed and starts the next one; returns \
the list and the next step. Give the item's `id` and the `evidence` that it is done (a test \
that passed, output you saw, the change you made). In a two-level list the next sub-step of \
the phase starts; after a phase's last sub-step the phase itself is in progress, to be signed \
off with its own complete_step; after a phase the next phase (or its first sub-step) starts.";

/// The answer while planning: the step list is carried out only after the plan is approved.
pub const PLANNING_REFUSAL: &str = "complete_step belongs to carrying out an approved plan; \
finish planning with exit_plan_mode first";

impl Tool for CompleteStep {
    fn name(&self) -> &str {
        "complete_step"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {
                    "type": "string",
                    "description": "The id of the item that is in_progress"
                },
                "evidence": {
                    "type": "string",
                    "description": "What shows the step is done"
                }
            },
            "required": ["id", "evidence"]
        })
    }

    /// It changes only the task list, like `todo_write`.
    fn read_only(&self) -> bool {
        true
    }

    fn family(&self) -> Family {
        Family::Other
    }

    fn subjects(&self) -> Subjects {
        Subjects::Nothing
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let planning = ctx
            .workflow
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .planning;
        if planning {
            return Err(ToolError::Failed(PLANNING_REFUSAL.into()));
        }
        // Models number their steps; a number names the same id as its text.
        let id = match args.get("id") {
            Some(Value::Number(n)) => n.to_string(),
            _ => args::required_str(args, "id")?.trim().to_string(),
        };
        let evidence = args::required_str(args, "evidence")?.trim();
        if evidence.is_empty() {
            return Err(ToolError::InvalidArgs(
                "`evidence` is empty; say what shows the step is done (a test that passed, \
                 output you saw, the change you made)"
                    .into(),
            ));
        }
        let mut shared = ctx.todos.lock().unwrap_or_else(PoisonError::into_inner);
        let next = complete(&mut shared, &id)?;
        let mut out = todo::render(&shared);
        match next {
            Some(index) => out.push_str(&format!("Next: {}", shared[index].content)),
            None => out.push_str("All steps are complete."),
        }
        Ok(out)
    }
}

/// Completes the in_progress item `id` and starts the one after it; returns the index of the
/// item now in progress, `None` when none is left to do.
pub fn complete(items: &mut [TodoItem], id: &str) -> Result<Option<usize>, ToolError> {
    let current = items
        .iter()
        .position(|item| item.status == TodoStatus::InProgress)
        .ok_or_else(|| no_current(items))?;
    if items[current].id != id {
        return Err(ToolError::Failed(format!(
            "`{id}` is not the step in progress; the current step is `{}` (\"{}\"): finish \
             it first, or change the list with todo_write",
            items[current].id, items[current].content
        )));
    }
    items[current].status = TodoStatus::Completed;
    let next = next_step(items, current);
    if let Some(next) = next {
        items[next].status = TodoStatus::InProgress;
    }
    Ok(next)
}

fn no_current(items: &[TodoItem]) -> ToolError {
    let message = if items.is_empty() {
        "there is no task list; make one with todo_write first"
    } else if items.iter().all(|i| i.status == TodoStatus::Completed) {
        "every step is already completed"
    } else {
        "no step is in_progress; mark the one you are working on in_progress with todo_write"
    };
    ToolError::Failed(message.into())
}

/// What starts after `done` completes: the next sub-step of its phase, else (after the last
/// sub-step) the phase itself; after a phase or a flat item, the first unfinished item after
/// it (a phase with unfinished sub-steps starts with its first one), then from the top.
fn next_step(items: &[TodoItem], done: usize) -> Option<usize> {
    let phases = todo::phases(items);
    let open = |index: &usize| items[*index].status != TodoStatus::Completed;
    if items[done].level > 0 {
        let (phase, steps) = phases.iter().find(|(_, steps)| steps.contains(&done))?;
        return steps.clone().find(open).or(Some(*phase));
    }
    let start = |phase: usize| {
        phases
            .iter()
            .find(|(p, _)| *p == phase)
            .and_then(|(_, steps)| steps.clone().find(open))
            .unwrap_or(phase)
    };
    let after = phases.iter().map(|(p, _)| *p).filter(|p| *p > done);
    let before = phases.iter().map(|(p, _)| *p).filter(|p| *p < done);
    after.chain(before).find(|p| open(p)).map(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::collab::Workflow;

    fn list(spec: &[(&str, u8, TodoStatus)]) -> Vec<TodoItem> {
        spec.iter()
            .map(|(id, level, status)| TodoItem {
                id: (*id).into(),
                content: format!("do {id}"),
                status: *status,
                active_form: None,
                level: *level,
            })
            .collect()
    }

    fn statuses(items: &[TodoItem]) -> String {
        items
            .iter()
            .map(|i| match i.status {
                TodoStatus::Pending => '.',
                TodoStatus::InProgress => '>',
                TodoStatus::Completed => 'x',
            })
            .collect()
    }

    use TodoStatus::{Completed as C, InProgress as I, Pending as P};

    #[test]
    fn completing_steps_walks_phases_and_their_sub_steps_in_order() {
        let mut items = list(&[
            ("a", 0, P),
            ("a1", 1, I),
            ("a2", 1, P),
            ("b", 0, P),
            ("c", 0, P),
            ("c1", 1, P),
        ]);
        let walk = [
            ("a1", Some(2), ".x>..."),
            ("a2", Some(0), ">xx..."),
            ("a", Some(3), "xxx>.."),
            ("b", Some(5), "xxxx.>"),
            ("c1", Some(4), "xxxx>x"),
            ("c", None, "xxxxxx"),
        ];
        for (id, next, after) in walk {
            assert_eq!(complete(&mut items, id), Ok(next), "completing {id}");
            assert_eq!(statuses(&items), after, "after {id}");
            todo::check_list(&items).unwrap_or_else(|e| panic!("after {id}: {e}"));
        }
        assert_eq!(
            complete(&mut items, "c"),
            Err(ToolError::Failed("every step is already completed".into()))
        );
    }

    #[test]
    fn a_flat_list_moves_to_the_next_unfinished_item_then_wraps() {
        let mut items = list(&[("1", 0, P), ("2", 0, I), ("3", 0, C), ("4", 0, P)]);
        assert_eq!(complete(&mut items, "2"), Ok(Some(3)));
        assert_eq!(complete(&mut items, "4"), Ok(Some(0)));
        assert_eq!(complete(&mut items, "1"), Ok(None));
        assert_eq!(statuses(&items), "xxxx");
    }

    #[test]
    fn only_the_step_in_progress_can_be_completed() {
        let mut items = list(&[("a", 0, P), ("a1", 1, I), ("a2", 1, P)]);
        let err = complete(&mut items, "a2").unwrap_err().to_string();
        assert!(err.contains("`a2` is not the step in progress"), "{err}");
        assert!(
            err.contains("the current step is `a1` (\"do a1\")"),
            "{err}"
        );
        assert_eq!(statuses(&items), ".>.", "nothing changed");
        let err = complete(&mut list(&[("a", 0, P)]), "a").unwrap_err();
        assert!(err.to_string().contains("no step is in_progress"), "{err}");
        let err = complete(&mut [], "a").unwrap_err();
        assert!(err.to_string().contains("no task list"), "{err}");
    }

    fn run(ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
        CompleteStep.execute(&args, ctx)
    }

    #[test]
    fn the_tool_reports_the_next_step_and_wants_evidence() {
        let ctx = ToolContext::new(std::env::temp_dir());
        *ctx.todos.lock().unwrap() = list(&[("a", 0, P), ("a1", 1, I), ("b", 0, P)]);
        let err = run(&ctx, json!({"id": "a1", "evidence": "  "})).unwrap_err();
        assert!(err.to_string().contains("`evidence` is empty"), "{err}");
        let out = run(&ctx, json!({"id": "a1", "evidence": "tests pass"})).unwrap();
        assert!(out.contains("\n[>] do a\n  [x] do a1\n[ ] do b\n"), "{out}");
        assert!(out.ends_with("Next: do a"), "{out}");
        run(&ctx, json!({"id": "a", "evidence": "done"})).unwrap();
        let out = run(&ctx, json!({"id": "b", "evidence": "done"})).unwrap();
        assert!(out.ends_with("All steps are complete."), "{out}");
    }

    #[test]
    fn planning_refuses_it() {
        let ctx = ToolContext::new(std::env::temp_dir());
        *ctx.todos.lock().unwrap() = list(&[("a", 0, I)]);
        *ctx.workflow.lock().unwrap() = Workflow {
            planning: true,
            ..Workflow::default()
        };
        assert_eq!(
            run(&ctx, json!({"id": "a", "evidence": "done"})),
            Err(ToolError::Failed(PLANNING_REFUSAL.into()))
        );
        assert_eq!(statuses(&ctx.todos.lock().unwrap()), ">");
    }
}
