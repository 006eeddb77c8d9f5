//! `todo_write`: the model's task list. Each call replaces the whole list, which lives in
//! `ToolContext::todos` so the agent and the UI can show it; rendering it for a terminal is
//! the UI's business, this module only offers a plain-text form for the model.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::tool::{args, Family, Subjects, Tool, ToolContext, ToolError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

impl TodoStatus {
    fn parse(text: &str) -> Option<TodoStatus> {
        match text {
            "pending" => Some(TodoStatus::Pending),
            "in_progress" => Some(TodoStatus::InProgress),
            "completed" => Some(TodoStatus::Completed),
            _ => None,
        }
    }

    fn mark(self) -> &'static str {
        match self {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Completed => "[x]",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// The model's id, or the 1-based position when it gave none.
    pub id: String,
    pub content: String,
    pub status: TodoStatus,
    /// Present-continuous wording for a spinner ("Running the tests").
    #[serde(
        rename = "activeForm",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub active_form: Option<String>,
}

pub struct TodoWrite;

const DESCRIPTION: &str = "\
Replaces your task list with `todos`; send the whole list every time. Use it for work with \
three or more steps or when the user asks for several things: plan the steps, mark one \
in_progress before you start it, and mark it completed as soon as it is done, adding tasks \
you discover on the way. At most one task may be in_progress. Skip it for simple one-step \
requests.";

impl Tool for TodoWrite {
    fn name(&self) -> &str {
        "todo_write"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete task list, replacing the previous one",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {
                                "type": "string",
                                "description": "The task in imperative form, e.g. \"Run the tests\""
                            },
                            "status": {
                                "type": "string",
                                "enum": ["pending", "in_progress", "completed"]
                            },
                            "activeForm": {
                                "type": "string",
                                "description": "The task in present-continuous form, e.g. \"Running the tests\""
                            },
                            "id": {
                                "type": "string",
                                "description": "A stable identifier (default: the position in the list)"
                            }
                        },
                        "required": ["content", "status"]
                    }
                }
            },
            "required": ["todos"]
        })
    }

    /// It touches no files or processes, so the permission gate allows it without asking and
    /// it may share a parallel batch with readers. Each call replaces the list whole, so even
    /// two calls in one batch leave one complete list, never a mix.
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
        let items = parse_items(args::required_array(args, "todos")?)?;
        let rendered = render(&items);
        let mut shared = ctx.todos.lock().unwrap_or_else(|e| e.into_inner());
        *shared = items;
        Ok(rendered)
    }
}

fn parse_items(values: &[Value]) -> Result<Vec<TodoItem>, ToolError> {
    let items = values
        .iter()
        .enumerate()
        .map(|(index, value)| parse_item(index, value))
        .collect::<Result<Vec<_>, _>>()?;
    let active: Vec<String> = items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.status == TodoStatus::InProgress)
        .map(|(index, _)| format!("todos[{index}]"))
        .collect();
    if active.len() > 1 {
        return Err(ToolError::InvalidArgs(format!(
            "{} tasks are in_progress ({}); at most one may be in_progress, mark the others \
             pending or completed",
            active.len(),
            active.join(", ")
        )));
    }
    for (index, item) in items.iter().enumerate() {
        if let Some(first) = items[..index].iter().position(|other| other.id == item.id) {
            return Err(ToolError::InvalidArgs(format!(
                "todos[{first}] and todos[{index}] share the id `{}`; ids must be unique",
                item.id
            )));
        }
    }
    Ok(items)
}

fn parse_item(index: usize, value: &Value) -> Result<TodoItem, ToolError> {
    let at = |e: ToolError| match e {
        ToolError::InvalidArgs(detail) => {
            ToolError::InvalidArgs(format!("todos[{index}]: {detail}"))
        }
        other => other,
    };
    if !value.is_object() {
        return Err(ToolError::InvalidArgs(format!(
            "todos[{index}] must be an object with content and status, got {value}"
        )));
    }
    let content = args::required_str(value, "content").map_err(at)?.trim();
    if content.is_empty() {
        return Err(ToolError::InvalidArgs(format!(
            "todos[{index}]: `content` is empty; describe the task"
        )));
    }
    let status_text = args::required_str(value, "status").map_err(at)?;
    let status = TodoStatus::parse(status_text).ok_or_else(|| {
        ToolError::InvalidArgs(format!(
            "todos[{index}]: `status` must be pending, in_progress or completed, got \
             \"{status_text}\""
        ))
    })?;
    // Models often number their tasks; accept a number as the id.
    let id = match value.get("id") {
        None | Some(Value::Null) => (index + 1).to_string(),
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => {
            return Err(ToolError::InvalidArgs(format!(
                "todos[{index}]: `id` must be a non-empty string, got {other}"
            )))
        }
    };
    let active_form = args::optional_str(value, "activeForm")
        .map_err(at)?
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    Ok(TodoItem {
        id,
        content: content.to_string(),
        status,
        active_form,
    })
}

/// The list as the model sees it after an update: a count line, then one line per task.
pub fn render(items: &[TodoItem]) -> String {
    if items.is_empty() {
        return "Todo list cleared.".into();
    }
    let count = |status| items.iter().filter(|i| i.status == status).count();
    let mut out = format!(
        "Todo list updated: {} completed, {} in progress, {} pending.\n",
        count(TodoStatus::Completed),
        count(TodoStatus::InProgress),
        count(TodoStatus::Pending)
    );
    for item in items {
        out.push_str(&format!("{} {}\n", item.status.mark(), item.content));
    }
    out
}
