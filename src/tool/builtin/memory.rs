//! Saved memory: facts kept across sessions as Markdown files under `<state>/memory/`, one
//! file per fact plus a `MEMORY.md` index. `memory` reads (search, list, read), `remember`
//! saves or updates a fact and `forget` moves one to `memory/archive/`, out of the active
//! index. The two writers need a fresh approval from a person on every call (see
//! [`Tool::fresh_approval`]); this module only supplies the preview. The files, the index
//! and the archive are `tool::memory_store`'s job, shared with the chat's `/memory`.

use serde_json::{json, Value};

use super::history::state_paths;
use crate::tool::args::{optional_str, optional_u64, required_str};
use crate::tool::memory_store::{check_name, MemoryError, Saved, Scope, Store};
use crate::tool::{Family, Subjects, Tool, ToolContext, ToolError};

/// Characters of a fact shown in the approval preview.
const PREVIEW_CHARS: usize = 400;
const DEFAULT_LIMIT: u64 = 5;

fn store(ctx: &ToolContext) -> Result<Store, ToolError> {
    Ok(Store::new(&state_paths(ctx)?.memory))
}

fn valid_name(args: &Value) -> Result<&str, ToolError> {
    check_name(required_str(args, "name")?).map_err(failed)
}

/// A store error as the model sees it: the detail without the `memory:` area, plus what to
/// do next where there is something.
fn failed(err: MemoryError) -> ToolError {
    let detail = err.to_string();
    let detail = detail.trim_start_matches("memory: ");
    match err {
        MemoryError::Missing(_) => ToolError::Failed(format!(
            "{detail}; see the saved facts with the memory tool's \"list\" operation"
        )),
        MemoryError::InvalidName(_) | MemoryError::InvalidContent(_) => {
            ToolError::InvalidArgs(detail.to_string())
        }
        _ => ToolError::Failed(detail.to_string()),
    }
}

fn preview(text: &str) -> String {
    let mut out: String = text.chars().take(PREVIEW_CHARS).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

pub struct MemoryTool;

impl Tool for MemoryTool {
    fn name(&self) -> &str {
        "memory"
    }

    fn description(&self) -> &str {
        "Read saved memory: facts kept across sessions. `operation: \"search\"` ranks facts \
         against `query` (weak trailing hits are dropped), `\"list\"` shows every fact's name \
         and description, `\"read\"` returns one fact by `name`. Check here before saving a \
         fact with `remember`. When the exact original wording or tool output matters, search \
         past sessions with `history` instead."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "operation": {
                    "type": "string",
                    "enum": ["search", "list", "read"],
                    "description": "`search` (default), `list` or `read`."
                },
                "query": {"type": "string", "description": "For search: words to look for."},
                "name": {"type": "string", "description": "For read: the fact's name."},
                "limit": {"type": "integer", "description": "For search: most hits, 1-20. Default: 5."}
            }
        })
    }

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
        let store = store(ctx)?;
        match optional_str(args, "operation")?.unwrap_or("search") {
            "search" => search(&store, args),
            "list" => Ok(list(&store)),
            "read" => read(&store, valid_name(args)?),
            other => Err(ToolError::InvalidArgs(format!(
                "unknown operation `{other}`; use \"search\", \"list\" or \"read\""
            ))),
        }
    }
}

fn search(store: &Store, args: &Value) -> Result<String, ToolError> {
    let query = required_str(args, "query")?;
    let limit = optional_u64(args, "limit")?
        .unwrap_or(DEFAULT_LIMIT)
        .clamp(1, 20) as usize;
    let hits = store.search(query, Scope::Active, limit);
    if hits.is_empty() {
        return Ok(format!(
            "No saved memory matches {query:?} ({} facts saved). Retry with rarer terms, see \
             every fact with operation \"list\", or search past sessions with the history tool \
             when the exact original wording or tool output matters.",
            store.active().len()
        ));
    }
    let mut out = String::new();
    for fact in hits {
        out.push_str(&format!(
            "- {} ({}; updated {}): {}\n",
            fact.name,
            fact.description,
            fact.updated,
            preview(
                &fact
                    .content
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        ));
    }
    out.push_str("Read a whole fact with {\"operation\": \"read\", \"name\": ...}; for exact original wording or tool output, use the history tool.");
    Ok(out)
}

fn list(store: &Store) -> String {
    let facts = store.active();
    if facts.is_empty() {
        return "No saved memory yet.".into();
    }
    let mut out = format!("{} saved facts:\n", facts.len());
    for fact in facts {
        out.push_str(&format!("- {}: {}\n", fact.name, fact.description));
    }
    out
}

fn read(store: &Store, name: &str) -> Result<String, ToolError> {
    let fact = store.read(name).map_err(failed)?;
    Ok(format!(
        "{} ({}; updated {})\n\n{}",
        fact.name, fact.description, fact.updated, fact.content
    ))
}

pub struct Remember;

impl Tool for Remember {
    fn name(&self) -> &str {
        "remember"
    }

    fn description(&self) -> &str {
        "Save a fact to memory so later sessions can find it, or update the fact saved under \
         the same `name`. Save durable facts only: user preferences, project conventions, \
         decisions, names and values that will matter again. Every call asks the user for \
         approval, and it is refused in non-interactive runs. Check `memory` first to update \
         rather than duplicate."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Short identifier: lowercase letters, digits, `-`, `_` (e.g. \"test-command\")."},
                "content": {"type": "string", "description": "The fact, in Markdown; at most 8000 bytes."},
                "description": {"type": "string", "description": "One line for the index. Default: the first line of `content`."}
            },
            "required": ["name", "content"]
        })
    }

    fn family(&self) -> Family {
        Family::Other
    }

    fn subjects(&self) -> Subjects {
        Subjects::Nothing
    }

    fn fresh_approval(&self, args: &Value, ctx: &ToolContext) -> Option<String> {
        let name = args.get("name").and_then(Value::as_str).unwrap_or("?");
        let content = args.get("content").and_then(Value::as_str).unwrap_or("");
        let replaces = store(ctx)
            .map(|store| store.fact_path(name).is_file())
            .unwrap_or(false);
        let verb = if replaces {
            "update saved fact"
        } else {
            "save new fact"
        };
        Some(format!("{verb} `{name}`: {}", preview(content)))
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let store = store(ctx)?;
        let name = valid_name(args)?;
        let content = required_str(args, "content")?;
        let description = optional_str(args, "description")?;
        let (saved, path) = store.save(name, content, description).map_err(failed)?;
        let verb = match saved {
            Saved::New => "saved",
            Saved::Updated => "updated",
        };
        Ok(format!("{verb} memory `{name}` ({})", path.display()))
    }
}

pub struct Forget;

impl Tool for Forget {
    fn name(&self) -> &str {
        "forget"
    }

    fn description(&self) -> &str {
        "Remove a stale or wrong fact from memory by `name`. The file is archived, not deleted, \
         and drops out of memory search. Every call asks the user for approval, and it is \
         refused in non-interactive runs."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The name of the saved fact to remove."}
            },
            "required": ["name"]
        })
    }

    fn family(&self) -> Family {
        Family::Other
    }

    fn subjects(&self) -> Subjects {
        Subjects::Nothing
    }

    fn fresh_approval(&self, args: &Value, ctx: &ToolContext) -> Option<String> {
        let name = args.get("name").and_then(Value::as_str).unwrap_or("?");
        let content = store(ctx)
            .ok()
            .and_then(|store| store.read(name).ok())
            .map(|fact| fact.content)
            .unwrap_or_else(|| "(no such fact)".into());
        Some(format!("forget saved fact `{name}`: {}", preview(&content)))
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let name = valid_name(args)?;
        let target = store(ctx)?.forget(name).map_err(failed)?;
        Ok(format!(
            "forgot `{name}`; the file is archived at {}",
            target.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_with_an_argument_error() {
        assert!(valid_name(&json!({"name": "build-command"})).is_ok());
        let err = valid_name(&json!({"name": "../x"}))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "invalid arguments: `name` must be 1-64 lowercase letters, digits, `-` or `_` (e.g. \"build-command\"), got \"../x\""
        );
    }
}
