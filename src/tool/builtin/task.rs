//! `task` and `read_only_task`: hand a self-contained job to a child agent that works in its
//! own conversation and session and returns only its final answer. The child is started by
//! the context's [`Delegate`](crate::tool::delegate::Delegate); which profiles exist is
//! resolved there at run time, so no profile name ever enters a schema or this description.

use serde_json::{json, Value};

use crate::tool::delegate::{TaskOutcome, TaskSpec};
use crate::tool::{args, Family, Subjects, Tool, ToolContext, ToolError};

/// `task`: the child gets the full registry under the parent's gate. It is not read-only, so
/// the gate judges it like any other non-reading tool (it asks under the ask posture) and it
/// never runs in a parallel batch; each of the child's own calls is judged again.
pub struct Task;

/// `read_only_task`: the child gets only the reading tools, so it may run beside other
/// readers and is allowed by default.
pub struct ReadOnlyTask;

const TASK: &str = "\
Delegates a self-contained job to a subagent: a fresh agent with the same tools and \
permissions that works in its own context and returns only its final answer. Use it for \
work whose intermediate steps you do not need to see. The prompt must say everything the \
subagent needs; it cannot see this conversation. Give `write_paths` when the job should \
change only some files. `profile` only when the user names one.";

const READ_ONLY_TASK: &str = "\
Delegates a research job to a read-only subagent: a fresh agent that can only read and \
search files (its shell cannot write), works in its own context and returns only its final \
answer. Use it to investigate a question without filling this conversation with what it \
read. The prompt must say everything it needs; it cannot see this conversation.";

/// The properties of one task; `writer` adds what only a writer-capable task takes.
pub fn task_properties(writer: bool) -> Value {
    let mut properties = json!({
        "prompt": {"type": "string", "description": "The complete task for the subagent"},
        "profile": {"type": "string", "description": "A subagent profile the user named (default: none)"}
    });
    if writer {
        properties["write_paths"] = json!({
            "type": "array",
            "items": {"type": "string"},
            "description": "Files or directories (relative to the workspace) the subagent may change; it can write nowhere else (default: anywhere you may)"
        });
        properties["model"] = json!({"type": "string", "description": "Model for the subagent (default: configured)"});
        properties["effort"] = json!({"type": "string", "description": "Reasoning effort for the subagent (default: configured)"});
    }
    properties
}

fn schema(writer: bool) -> Value {
    json!({"type": "object", "properties": task_properties(writer), "required": ["prompt"]})
}

/// One task from its JSON object; `read_only` tasks ignore the writer's fields.
pub fn spec(args: &Value, read_only: bool) -> Result<TaskSpec, ToolError> {
    let prompt = args::required_str(args, "prompt")?.trim().to_string();
    if prompt.is_empty() {
        return Err(ToolError::InvalidArgs("`prompt` is empty".into()));
    }
    let text = |key| -> Result<Option<String>, ToolError> {
        Ok(args::optional_str(args, key)?
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string))
    };
    let write_paths = match args.get("write_paths") {
        Some(paths) if !read_only && !paths.is_null() => Some(string_list(paths, "write_paths")?),
        _ => None,
    };
    Ok(TaskSpec {
        prompt,
        profile: text("profile")?,
        read_only,
        model: if read_only { None } else { text("model")? },
        effort: if read_only { None } else { text("effort")? },
        write_paths,
        index: 0,
    })
}

fn string_list(value: &Value, key: &str) -> Result<Vec<String>, ToolError> {
    let wrong = || ToolError::InvalidArgs(format!("`{key}` must be an array of strings"));
    value
        .as_array()
        .ok_or_else(wrong)?
        .iter()
        .map(|v| v.as_str().map(str::to_string).ok_or_else(wrong))
        .collect()
}

/// Runs `task` through the context's delegate and renders the outcome for the parent.
pub fn delegate(task: &TaskSpec, ctx: &ToolContext) -> Result<String, ToolError> {
    let delegate = ctx.delegate.as_ref().ok_or_else(|| {
        ToolError::Failed("subagents cannot be started here; do the task yourself".into())
    })?;
    let outcome = delegate.run(task, ctx).map_err(ToolError::Failed)?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    Ok(render(&outcome))
}

/// The child's answer, then one line naming its session.
pub fn render(outcome: &TaskOutcome) -> String {
    let head = if outcome.ok {
        ""
    } else {
        "The subagent did not finish: "
    };
    format!(
        "{head}{}\n\n[subagent session: {} ({} requests, {} tool rounds, {} tokens)]",
        outcome.answer.trim_end(),
        outcome.session_path,
        outcome.requests,
        outcome.tool_rounds,
        outcome.usage.prompt_tokens + outcome.usage.completion_tokens
    )
}

impl Tool for Task {
    fn name(&self) -> &str {
        "task"
    }

    fn description(&self) -> &str {
        TASK
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
        delegate(&spec(args, false)?, ctx)
    }
}

impl Tool for ReadOnlyTask {
    fn name(&self) -> &str {
        "read_only_task"
    }

    fn description(&self) -> &str {
        READ_ONLY_TASK
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
        delegate(&spec(args, true)?, ctx)
    }
}
