//! `todo_write`: the model's task list. Each call replaces the whole list, which lives in
//! `ToolContext::todos` so the agent and the UI can show it; rendering it for a terminal is
//! the UI's business, this module only offers a plain-text form for the model.
//!
//! A list has one or two levels: phases (level 0) and their sub-steps (level 1, listed under
//! their phase). This module owns the rules every new list must keep (see [`check_list`]);
//! `complete_step` (in `step`) moves through a list that keeps them.

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

    fn word(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        }
    }

    /// `[ ]`, `[>]` or `[x]`, as the model and the plain-text front ends show it.
    pub fn mark(self) -> &'static str {
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
    /// 0 for a phase (or an item of a flat list), 1 for a sub-step of the phase above it.
    #[serde(default)]
    pub level: u8,
}

pub struct TodoWrite;

const DESCRIPTION: &str = "\
Replaces your task list with `todos`; send the whole list every time. Use it for work with \
three or more steps or when the user asks for several things: plan the steps, mark one \
in_progress before you start it, and mark it completed as soon as it is done (or call \
complete_step with evidence, which also starts the next), adding tasks you discover on the \
way. At most one task may be in_progress. Skip it for simple one-step requests.

Big work can use two levels: phases (level 0) with sub-steps (level 1) listed right under \
their phase. Then the active sub-step is the in_progress item while its phase stays \
pending; a phase's sub-steps complete in order, and the phase itself becomes in_progress \
and completes only after all of them have.";

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
                            },
                            "level": {
                                "type": "integer",
                                "enum": [0, 1],
                                "description": "0 for a phase or a plain task (default), 1 for a sub-step of the phase above it"
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
    for (index, item) in items.iter().enumerate() {
        if let Some(first) = items[..index].iter().position(|other| other.id == item.id) {
            return Err(ToolError::InvalidArgs(format!(
                "todos[{first}] and todos[{index}] share the id `{}`; ids must be unique",
                item.id
            )));
        }
    }
    check_list(&items)?;
    Ok(items)
}

/// The rules every list keeps, checked on each new one. At most one item is in_progress. A
/// flat list (every item level 0) is otherwise free. A sub-step (level 1) belongs to the
/// nearest phase (level 0) above it, so one with no phase above it is refused; a phase may
/// not be in_progress or completed while one of its sub-steps is not completed (its active
/// sub-step is the in_progress item, the phase stays pending); and a phase's sub-steps
/// complete in order, so none is completed or in_progress after one that is not completed.
pub fn check_list(items: &[TodoItem]) -> Result<(), ToolError> {
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
    if let Some(first) = items.first().filter(|item| item.level > 0) {
        return Err(ToolError::InvalidArgs(format!(
            "todos[0] (\"{}\") is a sub-step (level 1) with no phase (level 0) above it; put \
             its phase first",
            first.content
        )));
    }
    for (phase, steps) in phases(items) {
        let item = &items[phase];
        let open = steps
            .clone()
            .find(|&step| items[step].status != TodoStatus::Completed);
        if let Some(open) = open {
            if item.status != TodoStatus::Pending {
                return Err(ToolError::InvalidArgs(format!(
                    "todos[{phase}] (\"{}\") is {} but its sub-step todos[{open}] (\"{}\") is not \
                     completed; a phase stays pending while its sub-steps run and becomes \
                     in_progress only after all of them are completed",
                    item.content,
                    item.status.word(),
                    items[open].content
                )));
            }
            let late = steps
                .clone()
                .skip_while(|&step| step <= open)
                .find(|&step| items[step].status != TodoStatus::Pending);
            if let Some(late) = late {
                return Err(ToolError::InvalidArgs(format!(
                    "todos[{late}] (\"{}\") is {} but todos[{open}] (\"{}\") before it is not \
                     completed; the sub-steps of a phase complete in order",
                    items[late].content,
                    items[late].status.word(),
                    items[open].content
                )));
            }
        }
    }
    Ok(())
}

/// Each phase's index with the range of its sub-steps (the level-1 items right below it).
pub fn phases(items: &[TodoItem]) -> Vec<(usize, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    for (index, item) in items.iter().enumerate() {
        if item.level == 0 {
            let end = items[index + 1..]
                .iter()
                .position(|next| next.level == 0)
                .map_or(items.len(), |n| index + 1 + n);
            out.push((index, index + 1..end));
        }
    }
    out
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
    let level = match value.get("level") {
        None | Some(Value::Null) => 0,
        Some(level) => match level
            .as_u64()
            .or_else(|| level.as_str()?.trim().parse().ok())
        {
            Some(n @ (0 | 1)) => n as u8,
            _ => {
                return Err(ToolError::InvalidArgs(format!(
                    "todos[{index}]: `level` must be 0 (a phase) or 1 (a sub-step), got {level}"
                )))
            }
        },
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
        level,
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
        let indent = if item.level > 0 { "  " } else { "" };
        out.push_str(&format!(
            "{indent}{} {}\n",
            item.status.mark(),
            item.content
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `spec`: one item per entry, `level` then status (`.` pending, `>` in progress, `x`
    /// completed), e.g. "0. 1> 1." is a phase with its active first sub-step.
    fn list(spec: &str) -> Value {
        let todos: Vec<Value> = spec
            .split_whitespace()
            .enumerate()
            .map(|(i, item)| {
                let status = match &item[1..] {
                    "." => "pending",
                    ">" => "in_progress",
                    _ => "completed",
                };
                json!({"content": format!("step {i}"), "status": status, "level": item[..1].parse::<u8>().unwrap()})
            })
            .collect();
        Value::Array(todos)
    }

    fn check(spec: &str) -> Result<Vec<TodoItem>, ToolError> {
        parse_items(list(spec).as_array().unwrap())
    }

    #[test]
    fn two_level_lists_keep_the_serial_rules() {
        let valid = [
            "",
            "0. 0> 0x",             // flat lists are free
            "0x 0. 0> 0x 0.",       // in any order
            "0. 1> 1.",             // the active sub-step, its phase pending
            "0. 1x 1> 1.",          // in order
            "0> 1x 1x 0.",          // the phase signs off after all its sub-steps
            "0x 1x 1x 0. 1. 0> 0.", // phases without sub-steps are free
            "0. 1. 1.",             // nothing started yet
            "0x 1x 0. 1> 0.",
        ];
        for spec in valid {
            check(spec).unwrap_or_else(|e| panic!("`{spec}` refused: {e}"));
        }
        let invalid = [
            (
                "1.",
                "todos[0] (\"step 0\") is a sub-step (level 1) with no phase",
            ),
            ("1> 0.", "with no phase (level 0) above it"),
            ("0. 0> 1>", "2 tasks are in_progress (todos[1], todos[2])"),
            (
                "0> 1.",
                "todos[0] (\"step 0\") is in_progress but its sub-step todos[1]",
            ),
            (
                "0x 1x 1.",
                "todos[0] (\"step 0\") is completed but its sub-step todos[2]",
            ),
            (
                "0. 1. 1>",
                "todos[2] (\"step 2\") is in_progress but todos[1]",
            ),
            (
                "0. 1> 1x",
                "todos[2] (\"step 2\") is completed but todos[1] (\"step 1\") before it",
            ),
            ("0. 1. 1x 0.", "complete in order"),
        ];
        for (spec, expected) in invalid {
            match check(spec) {
                Ok(_) => panic!("`{spec}` accepted"),
                Err(err) => {
                    let err = err.to_string();
                    assert!(err.contains(expected), "`{spec}`: {err}");
                }
            }
        }
    }

    #[test]
    fn levels_default_to_phases_and_only_zero_or_one_is_accepted() {
        let items = parse_items(&[json!({"content": "a", "status": "pending"})]).unwrap();
        assert_eq!(items[0].level, 0);
        let err = parse_items(&[json!({"content": "a", "status": "pending", "level": 2})])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("todos[0]: `level` must be 0 (a phase) or 1 (a sub-step), got 2"),
            "{err}"
        );
        let items =
            parse_items(&[json!({"content": "a", "status": "pending", "level": "0"})]).unwrap();
        assert_eq!(items[0].level, 0);
    }

    #[test]
    fn sub_steps_render_indented_and_items_serialise_their_level() {
        let items = check("0. 1> 0.").unwrap();
        assert_eq!(
            render(&items),
            "Todo list updated: 0 completed, 1 in progress, 2 pending.\n[ ] step 0\n  [>] step 1\n[ ] step 2\n"
        );
        let value = serde_json::to_value(&items[1]).unwrap();
        assert_eq!(value["level"], 1);
        assert_eq!(serde_json::to_value(&items[0]).unwrap()["level"], 0);
    }
}
