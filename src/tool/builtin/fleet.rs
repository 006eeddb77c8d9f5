//! `fleet` and `parallel_tasks`: many subagents from one call. Every task gets its own thread
//! and asks the session's scheduler (in the delegate) for a place, so the caps on children
//! running at once and on writers, and the rule that overlapping writers never run together,
//! hold across this call and every other delegation of the session. A task that fails is
//! reported in its place; the others go on. `parallel_tasks` is the read-only form.

use serde_json::{json, Value};

use super::task::{render, spec, task_properties};
use crate::tool::delegate::{TaskOutcome, TaskSpec};
use crate::tool::{args, Family, Subjects, Tool, ToolContext, ToolError};

/// The smallest and largest number of tasks in one call.
pub const MIN_TASKS: usize = 2;
pub const MAX_TASKS: usize = 64;

pub struct Fleet;

pub struct ParallelTasks;

const FLEET: &str = "\
Runs 2 to 64 independent jobs at once, each in its own subagent (a fresh agent with the same \
tools and permissions that works in its own context), and returns every final answer. Use \
it when a job splits into parts that do not depend on each other. Each prompt must say \
everything its subagent needs; they cannot see this conversation or each other. Give \
writers `write_paths` so that they can run side by side (writers whose paths overlap wait \
for each other); mark research-only tasks `read_only`.";

const PARALLEL_TASKS: &str = "\
Runs 2 to 64 independent research jobs at once, each in a read-only subagent that can only \
read and search files, and returns every final answer. Each prompt must say everything its \
subagent needs; they cannot see this conversation or each other.";

fn schema(writer: bool) -> Value {
    let mut item = task_properties(writer);
    if writer {
        item["read_only"] =
            json!({"type": "boolean", "description": "The subagent only reads (default: false)"});
    }
    json!({
        "type": "object",
        "properties": {
            "tasks": {
                "type": "array",
                "minItems": MIN_TASKS,
                "maxItems": MAX_TASKS,
                "items": {"type": "object", "properties": item, "required": ["prompt"]}
            }
        },
        "required": ["tasks"]
    })
}

/// The tasks of a call, numbered; `read_only` makes every one a reader.
fn tasks(args: &Value, read_only: bool) -> Result<Vec<TaskSpec>, ToolError> {
    let items = args::required_array(args, "tasks")?;
    if !(MIN_TASKS..=MAX_TASKS).contains(&items.len()) {
        return Err(ToolError::InvalidArgs(format!(
            "`tasks` has {} entries; give {MIN_TASKS} to {MAX_TASKS} (use `task` for one)",
            items.len()
        )));
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            if !item.is_object() {
                return Err(ToolError::InvalidArgs(format!(
                    "`tasks[{index}]` must be an object with a `prompt`"
                )));
            }
            let reader = read_only || args::optional_bool(item, "read_only")?.unwrap_or(false);
            let mut task = spec(item, reader).map_err(|e| match e {
                ToolError::InvalidArgs(m) => ToolError::InvalidArgs(format!("tasks[{index}]: {m}")),
                other => other,
            })?;
            task.index = index;
            Ok(task)
        })
        .collect()
}

/// Runs every task on a thread of its own and renders the answers in task order.
fn run_all(tasks: &[TaskSpec], ctx: &ToolContext) -> Result<String, ToolError> {
    let delegate = ctx.delegate.as_ref().ok_or_else(|| {
        ToolError::Failed("subagents cannot be started here; do the tasks yourself".into())
    })?;
    let outcomes: Vec<Result<TaskOutcome, String>> = std::thread::scope(|scope| {
        let running: Vec<_> = tasks
            .iter()
            .map(|task| {
                std::thread::Builder::new()
                    .name(format!("subagent-{}", task.index))
                    .spawn_scoped(scope, || delegate.run(task, ctx))
                    .map_err(|e| format!("cannot start a thread for it: {e}"))
            })
            .collect();
        running
            .into_iter()
            .map(|handle| {
                handle.and_then(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("the subagent crashed".into()))
                })
            })
            .collect()
    });
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let finished = outcomes
        .iter()
        .filter(|o| o.as_ref().is_ok_and(|o| o.ok))
        .count();
    let mut out = format!(
        "{finished} of {} subagents finished with an answer.\n",
        tasks.len()
    );
    for (task, outcome) in tasks.iter().zip(&outcomes) {
        let label = crate::text::one_line(task.prompt.lines().next().unwrap_or(""), 80);
        out.push_str(&format!("\n## Task {}: {label}\n", task.index + 1));
        match outcome {
            Ok(outcome) => out.push_str(&render(outcome)),
            Err(why) => out.push_str(&format!("It could not start: {why}")),
        }
        out.push('\n');
    }
    Ok(out)
}

impl Tool for Fleet {
    fn name(&self) -> &str {
        "fleet"
    }

    fn description(&self) -> &str {
        FLEET
    }

    fn schema(&self) -> Value {
        schema(true)
    }

    fn family(&self) -> Family {
        Family::Other
    }

    fn subjects(&self) -> Subjects {
        Subjects::Nothing
    }

    fn reports_live(&self) -> bool {
        true
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        run_all(&tasks(args, false)?, ctx)
    }
}

impl Tool for ParallelTasks {
    fn name(&self) -> &str {
        "parallel_tasks"
    }

    fn description(&self) -> &str {
        PARALLEL_TASKS
    }

    fn schema(&self) -> Value {
        schema(false)
    }

    fn family(&self) -> Family {
        Family::Other
    }

    fn read_only(&self) -> bool {
        true
    }

    fn subjects(&self) -> Subjects {
        Subjects::Nothing
    }

    fn reports_live(&self) -> bool {
        true
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        run_all(&tasks(args, true)?, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_are_numbered_and_counted() {
        let two = json!({"tasks": [{"prompt": "a"}, {"prompt": "b", "read_only": true,
                                     "write_paths": ["src"]}]});
        let tasks = tasks(&two, false).unwrap();
        assert_eq!(tasks.len(), 2);
        assert_eq!((tasks[0].index, tasks[1].index), (0, 1));
        assert!(!tasks[0].read_only && tasks[1].read_only);
        // A reader's write_paths mean nothing: it writes nowhere.
        assert_eq!(tasks[1].write_paths, None);
        let one = json!({"tasks": [{"prompt": "a"}]});
        assert!(
            matches!(super::tasks(&one, false), Err(ToolError::InvalidArgs(m)) if m.contains("2 to 64"))
        );
        let many = json!({"tasks": vec![json!({"prompt": "x"}); 65]});
        assert!(super::tasks(&many, true).is_err());
        let empty = json!({"tasks": [{"prompt": "a"}, {"prompt": " "}]});
        assert!(
            matches!(super::tasks(&empty, true), Err(ToolError::InvalidArgs(m)) if m.starts_with("tasks[1]"))
        );
    }

    #[test]
    fn parallel_tasks_makes_every_task_a_reader() {
        let args = json!({"tasks": [{"prompt": "a", "read_only": false}, {"prompt": "b"}]});
        assert!(tasks(&args, true).unwrap().iter().all(|t| t.read_only));
    }
}
