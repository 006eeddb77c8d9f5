//! Saved memory: facts kept across sessions as Markdown files under `<state>/memory/`, one
//! file per fact plus a `MEMORY.md` index. `memory` reads (search, list, read), `remember`
//! saves or updates a fact and `forget` moves one to `memory/archive/`, out of the active
//! index. The two writers need a fresh approval from a person on every call (see
//! [`Tool::fresh_approval`]); this module only supplies the preview.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{json, Value};

use super::history::state_paths;
use crate::tool::args::{optional_str, optional_u64, required_str};
use crate::tool::bm25::{self, Index};
use crate::tool::{Family, Subjects, Tool, ToolContext, ToolError};

const INDEX_FILE: &str = "MEMORY.md";
const ARCHIVE_DIR: &str = "archive";
const MAX_NAME: usize = 64;
const MAX_CONTENT: usize = 8_000;
const MAX_DESCRIPTION: usize = 200;
/// Characters of a fact shown in the approval preview.
const PREVIEW_CHARS: usize = 400;
const DEFAULT_LIMIT: u64 = 5;

/// One saved fact.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fact {
    name: String,
    description: String,
    updated: String,
    content: String,
}

impl Fact {
    fn render(&self) -> String {
        format!(
            "---\nname: {}\ndescription: {}\nupdated: {}\n---\n{}\n",
            self.name,
            self.description,
            self.updated,
            self.content.trim_end()
        )
    }

    /// Reads the front matter written by [`Fact::render`]; a file without it is all content.
    fn parse(name: &str, text: &str) -> Fact {
        let mut fact = Fact {
            name: name.to_string(),
            description: String::new(),
            updated: String::new(),
            content: text.to_string(),
        };
        let Some(rest) = text.strip_prefix("---\n") else {
            return fact;
        };
        let Some((front, body)) = rest.split_once("\n---\n") else {
            return fact;
        };
        for line in front.lines() {
            match line.split_once(": ") {
                Some(("description", value)) => fact.description = value.to_string(),
                Some(("updated", value)) => fact.updated = value.to_string(),
                _ => {}
            }
        }
        fact.content = body.trim_end().to_string();
        fact
    }
}

fn memory_dir(ctx: &ToolContext) -> Result<&Path, ToolError> {
    Ok(&state_paths(ctx)?.memory)
}

fn fact_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.md"))
}

fn valid_name(args: &Value) -> Result<&str, ToolError> {
    let name = required_str(args, "name")?;
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(name)
    } else {
        Err(ToolError::InvalidArgs(format!(
            "`name` must be 1-{MAX_NAME} lowercase letters, digits, `-` or `_` (e.g. \"build-command\"), got {name:?}"
        )))
    }
}

/// Every active fact, sorted by name.
fn active_facts(dir: &Path) -> Vec<Fact> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut facts: Vec<Fact> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .filter(|p| p.file_name().is_some_and(|n| n != INDEX_FILE))
        .filter_map(|p| {
            let name = p.file_stem()?.to_string_lossy().into_owned();
            Some(Fact::parse(&name, &fs::read_to_string(&p).ok()?))
        })
        .collect();
    facts.sort_by(|a, b| a.name.cmp(&b.name));
    facts
}

/// Rewrites `MEMORY.md` from the active facts.
fn write_index(dir: &Path) -> Result<(), ToolError> {
    let mut text = String::from("# Memory\n\nSaved facts, one file each. Managed by reasonix.\n\n");
    for fact in active_facts(dir) {
        text.push_str(&format!(
            "- [{0}]({0}.md): {1}\n",
            fact.name, fact.description
        ));
    }
    crate::fsutil::write_atomic(&dir.join(INDEX_FILE), text.as_bytes(), None)
        .map_err(|e| ToolError::Failed(format!("cannot write the memory index: {e}")))
}

fn preview(text: &str) -> String {
    let mut out: String = text.chars().take(PREVIEW_CHARS).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

fn now() -> String {
    crate::clock::rfc3339(SystemTime::now())
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
        let dir = memory_dir(ctx)?;
        match optional_str(args, "operation")?.unwrap_or("search") {
            "search" => search(dir, args),
            "list" => Ok(list(dir)),
            "read" => read(dir, valid_name(args)?),
            other => Err(ToolError::InvalidArgs(format!(
                "unknown operation `{other}`; use \"search\", \"list\" or \"read\""
            ))),
        }
    }
}

fn search(dir: &Path, args: &Value) -> Result<String, ToolError> {
    let query = required_str(args, "query")?;
    let limit = optional_u64(args, "limit")?
        .unwrap_or(DEFAULT_LIMIT)
        .clamp(1, 20) as usize;
    let facts = active_facts(dir);
    let mut index = Index::new();
    for fact in &facts {
        index.add(&format!(
            "{} {} {}",
            fact.name, fact.description, fact.content
        ));
    }
    let hits = bm25::search(&[&index], query, limit);
    if hits.is_empty() {
        return Ok(format!(
            "No saved memory matches {query:?} ({} facts saved). Retry with rarer terms, see \
             every fact with operation \"list\", or search past sessions with the history tool \
             when the exact original wording or tool output matters.",
            facts.len()
        ));
    }
    let mut out = String::new();
    for hit in hits {
        let fact = &facts[hit.doc as usize];
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

fn list(dir: &Path) -> String {
    let facts = active_facts(dir);
    if facts.is_empty() {
        return "No saved memory yet.".into();
    }
    let mut out = format!("{} saved facts:\n", facts.len());
    for fact in facts {
        out.push_str(&format!("- {}: {}\n", fact.name, fact.description));
    }
    out
}

fn read(dir: &Path, name: &str) -> Result<String, ToolError> {
    let text = fs::read_to_string(fact_path(dir, name)).map_err(|_| missing(name))?;
    let fact = Fact::parse(name, &text);
    Ok(format!(
        "{} ({}; updated {})\n\n{}",
        fact.name, fact.description, fact.updated, fact.content
    ))
}

fn missing(name: &str) -> ToolError {
    ToolError::Failed(format!(
        "no saved memory named `{name}`; see the saved facts with the memory tool's \"list\" operation"
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
        let replaces = memory_dir(ctx)
            .map(|dir| fact_path(dir, name).is_file())
            .unwrap_or(false);
        let verb = if replaces {
            "update saved fact"
        } else {
            "save new fact"
        };
        Some(format!("{verb} `{name}`: {}", preview(content)))
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let dir = memory_dir(ctx)?;
        let name = valid_name(args)?;
        let content = required_str(args, "content")?.trim();
        if content.is_empty() || content.len() > MAX_CONTENT {
            return Err(ToolError::InvalidArgs(format!(
                "`content` must be 1-{MAX_CONTENT} bytes, got {}; save one focused fact",
                content.len()
            )));
        }
        let path = fact_path(dir, name);
        let existing = fs::read_to_string(&path)
            .ok()
            .map(|text| Fact::parse(name, &text));
        // An update without a description keeps the one the fact had.
        let description = match (optional_str(args, "description")?, &existing) {
            (Some(given), _) => given.to_string(),
            (None, Some(old)) if !old.description.is_empty() => old.description.clone(),
            (None, _) => content.lines().next().unwrap_or("").to_string(),
        };
        let description: String = description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(MAX_DESCRIPTION)
            .collect();
        fs::create_dir_all(dir)
            .map_err(|e| ToolError::Failed(format!("cannot create {}: {e}", dir.display())))?;
        let existed = existing.is_some();
        let fact = Fact {
            name: name.to_string(),
            description,
            updated: now(),
            content: content.to_string(),
        };
        crate::fsutil::write_atomic(&path, fact.render().as_bytes(), None)
            .map_err(|e| ToolError::Failed(format!("cannot write {}: {e}", path.display())))?;
        write_index(dir)?;
        let verb = if existed { "updated" } else { "saved" };
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
        let content = memory_dir(ctx)
            .ok()
            .filter(|_| valid_name(args).is_ok())
            .and_then(|dir| fs::read_to_string(fact_path(dir, name)).ok())
            .map(|text| Fact::parse(name, &text).content)
            .unwrap_or_else(|| "(no such fact)".into());
        Some(format!("forget saved fact `{name}`: {}", preview(&content)))
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let dir = memory_dir(ctx)?;
        let name = valid_name(args)?;
        let path = fact_path(dir, name);
        if !path.is_file() {
            return Err(missing(name));
        }
        let archive = dir.join(ARCHIVE_DIR);
        fs::create_dir_all(&archive)
            .map_err(|e| ToolError::Failed(format!("cannot create {}: {e}", archive.display())))?;
        let target = archive.join(format!(
            "{name}-{}.md",
            crate::clock::compact_stamp(SystemTime::now())
        ));
        fs::rename(&path, &target)
            .map_err(|e| ToolError::Failed(format!("cannot archive {}: {e}", path.display())))?;
        write_index(dir)?;
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
    fn facts_round_trip_through_their_file_format() {
        let fact = Fact {
            name: "port".into(),
            description: "the dev server port".into(),
            updated: "2026-12-02T10:00:00Z".into(),
            content: "The dev server listens on 8080.\n\n---\nnot front matter".into(),
        };
        assert_eq!(Fact::parse("port", &fact.render()), fact);
        let plain = Fact::parse("x", "just text");
        assert_eq!(plain.content, "just text");
    }

    #[test]
    fn names_are_checked() {
        for good in ["a", "build-command", "v2_notes"] {
            assert!(valid_name(&json!({"name": good})).is_ok(), "{good}");
        }
        for bad in ["", "Build", "../x", "a b", "-x", &"x".repeat(65)] {
            assert!(valid_name(&json!({"name": bad})).is_err(), "{bad}");
        }
    }
}
