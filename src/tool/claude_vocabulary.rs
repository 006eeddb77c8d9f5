//! The one tool vocabulary shared with Claude Code: every tool the model can be offered,
//! with its Claude Code name and input keys where Claude Code has a counterpart
//! (`read_file {path}` is `Read {file_path}`), mapped one to one in both directions.
//!
//! Everything that crosses the boundary to a Claude pipeline goes through here: the tool
//! names and inputs print mode shows (`tool_use` blocks, `init.tools`, `permission_denials`),
//! the names `--allowedTools`/`--disallowedTools` and permission rules accept, and an SDK's
//! `updatedInput` mapped back to our arguments. What the model sees stays ours (the prompt
//! cache and the tool contract do not change); tools without a Claude counterpart keep our
//! names. MCP tools are `mcp__server__tool` on both sides. This module only translates: the
//! permission layer decides what a rule covers, the front ends decide what to print.

use std::fmt;

use serde_json::{Map, Value};

/// One of our tools and what Claude Code calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Our tool name, as the model and the tool contract know it.
    pub ours: &'static str,
    /// Claude Code's name for the same tool, `None` when it has no counterpart.
    pub claude: Option<&'static str>,
    /// Top-level input keys that are spelled differently: `(ours, Claude's)`. Keys not
    /// listed are the same on both sides.
    renames: &'static [(&'static str, &'static str)],
}

/// Every tool the model can be offered (`reasonix tools` lists the same set; a test keeps
/// them in step), in the order of the tool contract.
pub const TOOLS: &[Entry] = &[
    entry("read_file", Some("Read"), &[("path", "file_path")]),
    entry("write_file", Some("Write"), &[("path", "file_path")]),
    entry("edit_file", Some("Edit"), &[("path", "file_path")]),
    entry("multi_edit", Some("MultiEdit"), &[("path", "file_path")]),
    entry("move_file", None, &[]),
    // `timeout` is seconds for us and milliseconds for Claude Code: see `convert_value`.
    entry("bash", Some("Bash"), &[]),
    entry("ls", Some("LS"), &[]),
    entry("glob", Some("Glob"), &[]),
    entry(
        "grep",
        Some("Grep"),
        &[
            ("case_insensitive", "-i"),
            ("after", "-A"),
            ("before", "-B"),
            ("context", "-C"),
        ],
    ),
    entry("view_image", None, &[]),
    entry("todo_write", Some("TodoWrite"), &[]),
    entry("complete_step", None, &[]),
    entry("ask", None, &[]),
    entry("exit_plan_mode", Some("ExitPlanMode"), &[]),
    entry("history", None, &[]),
    entry("memory", None, &[]),
    entry("remember", None, &[]),
    entry("forget", None, &[]),
    // Claude Code's `Task` requires a `description`; ours has none, so one is derived from
    // the prompt on the way out and dropped on the way back.
    entry("task", Some("Task"), &[("profile", "subagent_type")]),
    entry("read_only_task", None, &[]),
    entry("fleet", None, &[]),
    entry("parallel_tasks", None, &[]),
    entry("skill", Some("Skill"), &[("name", "skill")]),
    entry("read_only_skill", None, &[]),
    entry("plan_status", None, &[]),
];

const fn entry(
    ours: &'static str,
    claude: Option<&'static str>,
    renames: &'static [(&'static str, &'static str)],
) -> Entry {
    Entry {
        ours,
        claude,
        renames,
    }
}

/// Claude Code's other name for one of the tools above: `Agent` is what newer releases call
/// `Task`.
const ALIASES: &[(&str, &str)] = &[("Agent", "task")];

/// Claude Code tools reasonix does not have. A pipeline may name them in `--allowedTools`
/// (allowing a tool that is not there grants nothing) or `--disallowedTools` (it is never
/// offered anyway), so they are known names, not errors.
pub const CLAUDE_WITHOUT_COUNTERPART: &[&str] = &[
    "AskUserQuestion",
    "BashOutput",
    "EnterPlanMode",
    "KillBash",
    "KillShell",
    "ListMcpResourcesTool",
    "NotebookEdit",
    "NotebookRead",
    "ReadMcpResourceTool",
    "SlashCommand",
    "TaskOutput",
    "TaskStop",
    "WebFetch",
    "WebSearch",
];

/// The most a Claude Code `Bash.timeout` may say, in milliseconds (ten minutes, as ours).
const BASH_TIMEOUT_MAX_MS: u64 = 600_000;

/// The longest `Task.description` derived from a prompt, in characters.
const TASK_DESCRIPTION_CHARS: usize = 60;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VocabularyError {
    /// A tool name that is neither Claude Code's, ours nor an MCP tool's.
    UnknownTool { name: String, flag: String },
}

impl fmt::Display for VocabularyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VocabularyError::UnknownTool { name, flag } => write!(
                f,
                "tools: unknown tool `{name}` in {flag}; known Claude Code names: {}, mcp__SERVER__TOOL (or one of reasonix's own tool names, see `reasonix tools`)",
                known_claude_names().join(", ")
            ),
        }
    }
}

impl std::error::Error for VocabularyError {}

fn by_ours(name: &str) -> Option<&'static Entry> {
    TOOLS.iter().find(|e| e.ours == name)
}

fn by_claude(name: &str) -> Option<&'static Entry> {
    TOOLS.iter().find(|e| e.claude == Some(name)).or_else(|| {
        let (_, ours) = ALIASES.iter().find(|(alias, _)| *alias == name)?;
        by_ours(ours)
    })
}

/// The name a Claude pipeline sees for our tool `ours`: Claude Code's where it has one, else
/// ours (MCP tools are named alike on both sides).
pub fn claude_name(ours: &str) -> &str {
    by_ours(ours).and_then(|e| e.claude).unwrap_or(ours)
}

/// Claude Code's name for our tool `ours`, only when it has one.
pub fn mapped_claude_name(ours: &str) -> Option<&'static str> {
    by_ours(ours).and_then(|e| e.claude)
}

/// Our tool for a Claude Code tool name (`Write` is `write_file`, `Agent` is `task`); `None`
/// for names Claude Code does not use for one of our tools.
pub fn our_name(claude: &str) -> Option<&'static str> {
    by_claude(claude).map(|e| e.ours)
}

/// Every Claude Code tool name this vocabulary knows, the mapped ones first.
pub fn known_claude_names() -> Vec<&'static str> {
    TOOLS
        .iter()
        .filter_map(|e| e.claude)
        .chain(ALIASES.iter().map(|(alias, _)| *alias))
        .chain(CLAUDE_WITHOUT_COUNTERPART.iter().copied())
        .collect()
}

/// Checks the tool name of one rule given to `flag` (`--allowedTools`, `--disallowedTools`):
/// the text before `(` or `=`. Known are Claude Code's names, `mcp__...` names, and our own
/// tool names; anything else is an error naming the known ones, so a typo never leaves a
/// pipeline unrestricted.
pub fn check_rule_name(rule: &str, flag: &str) -> Result<(), VocabularyError> {
    let end = rule.find(['(', '=']).unwrap_or(rule.len());
    let name = rule[..end].trim();
    let known = name.starts_with("mcp__")
        || by_claude(name).is_some()
        || by_ours(name).is_some()
        || CLAUDE_WITHOUT_COUNTERPART.contains(&name);
    if known {
        Ok(())
    } else {
        Err(VocabularyError::UnknownTool {
            name: name.to_string(),
            flag: flag.to_string(),
        })
    }
}

/// Our tool call (`name` and its JSON arguments) as Claude Code would have made it: its name
/// and input with Claude Code's keys. A tool without a counterpart, and arguments that are
/// not an object, come back as they are.
pub fn to_claude(name: &str, args: &Value) -> (String, Value) {
    let Some(entry) = by_ours(name) else {
        return (name.to_string(), args.clone());
    };
    let Some(claude) = entry.claude else {
        return (name.to_string(), args.clone());
    };
    let Value::Object(object) = args else {
        return (claude.to_string(), args.clone());
    };
    let mut out = Map::new();
    for (key, value) in object {
        let renamed = entry
            .renames
            .iter()
            .find(|(ours, _)| ours == key)
            .map_or(key.as_str(), |(_, theirs)| theirs);
        out.insert(
            renamed.to_string(),
            convert_value(entry.ours, key, value, Direction::Out),
        );
    }
    if entry.ours == "task" && !out.contains_key("description") {
        let prompt = object.get("prompt").and_then(Value::as_str).unwrap_or("");
        out.insert("description".into(), Value::String(describe(prompt)));
    }
    (claude.to_string(), Value::Object(out))
}

/// A Claude Code input for our tool `ours` (an SDK's `updatedInput`, a hook's changed input)
/// as our arguments. Keys we do not know are kept, so the tool refuses them as invalid
/// arguments instead of running without them; the only keys dropped are the ones that add
/// nothing for us (`Task.description`, which `to_claude` derived, and `Grep.-n`: our content
/// mode always numbers lines).
pub fn from_claude(ours: &str, input: &Value) -> Value {
    let Some(entry) = by_ours(ours).filter(|e| e.claude.is_some()) else {
        return input.clone();
    };
    let Value::Object(object) = input else {
        return input.clone();
    };
    let mut out = Map::new();
    for (key, value) in object {
        let dropped = matches!(
            (entry.ours, key.as_str()),
            ("task", "description") | ("grep", "-n")
        );
        if dropped {
            continue;
        }
        let renamed = entry
            .renames
            .iter()
            .find(|(_, theirs)| theirs == key)
            .map_or(key.as_str(), |(ours, _)| ours);
        out.insert(
            renamed.to_string(),
            convert_value(entry.ours, renamed, value, Direction::In),
        );
    }
    Value::Object(out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Ours to Claude Code's.
    Out,
    /// Claude Code's to ours.
    In,
}

/// A value whose unit differs: `bash.timeout` is seconds for us, milliseconds for Claude
/// Code. Milliseconds round up to whole seconds and are bounded to the ten minutes both
/// sides allow; a value that is not a whole number is left for the tool to refuse.
fn convert_value(ours: &str, our_key: &str, value: &Value, direction: Direction) -> Value {
    if (ours, our_key) != ("bash", "timeout") {
        return value.clone();
    }
    let Some(number) = value.as_u64() else {
        return value.clone();
    };
    match direction {
        Direction::Out => Value::from(number.saturating_mul(1000).min(BASH_TIMEOUT_MAX_MS)),
        Direction::In => Value::from(number.min(BASH_TIMEOUT_MAX_MS).div_ceil(1000).max(1)),
    }
}

/// A short description of a task for Claude Code's `Task.description`: the prompt's first
/// line, cut at a character boundary.
fn describe(prompt: &str) -> String {
    let first = prompt.trim().lines().next().unwrap_or("").trim();
    let mut out: String = first.chars().take(TASK_DESCRIPTION_CHARS).collect();
    if first.chars().count() > TASK_DESCRIPTION_CHARS {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_mapped_tool_round_trips_its_name_one_to_one() {
        for entry in TOOLS {
            let shown = claude_name(entry.ours);
            match entry.claude {
                Some(claude) => {
                    assert_eq!(shown, claude);
                    assert_eq!(our_name(claude), Some(entry.ours));
                }
                None => {
                    assert_eq!(shown, entry.ours);
                    assert_eq!(our_name(entry.ours), None, "{}", entry.ours);
                }
            }
        }
        let claude: Vec<_> = TOOLS.iter().filter_map(|e| e.claude).collect();
        let mut unique = claude.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(claude.len(), unique.len(), "one Claude name per tool");
        assert_eq!(our_name("Agent"), Some("task"));
        assert_eq!(claude_name("mcp__srv__tool"), "mcp__srv__tool");
    }

    #[test]
    fn calls_take_claude_codes_keys_and_come_back_as_they_were() {
        let cases = [
            (
                "read_file",
                json!({"path": "a.rs", "offset": 3, "limit": 10}),
                "Read",
                json!({"file_path": "a.rs", "offset": 3, "limit": 10}),
            ),
            (
                "write_file",
                json!({"path": "a", "content": "x"}),
                "Write",
                json!({"file_path": "a", "content": "x"}),
            ),
            (
                "edit_file",
                json!({"path": "a", "old_string": "o", "new_string": "n", "replace_all": true}),
                "Edit",
                json!({"file_path": "a", "old_string": "o", "new_string": "n", "replace_all": true}),
            ),
            (
                "multi_edit",
                json!({"path": "a", "edits": [{"old_string": "o", "new_string": "n"}]}),
                "MultiEdit",
                json!({"file_path": "a", "edits": [{"old_string": "o", "new_string": "n"}]}),
            ),
            (
                "bash",
                json!({"command": "ls", "timeout": 5}),
                "Bash",
                json!({"command": "ls", "timeout": 5000}),
            ),
            (
                "glob",
                json!({"pattern": "*.rs", "path": "src"}),
                "Glob",
                json!({"pattern": "*.rs", "path": "src"}),
            ),
            (
                "grep",
                json!({"pattern": "x", "case_insensitive": true, "after": 1, "before": 2, "context": 3}),
                "Grep",
                json!({"pattern": "x", "-i": true, "-A": 1, "-B": 2, "-C": 3}),
            ),
            (
                "ls",
                json!({"path": "src", "ignore": ["*.o"]}),
                "LS",
                json!({"path": "src", "ignore": ["*.o"]}),
            ),
            (
                "todo_write",
                json!({"todos": [{"content": "a", "status": "pending", "activeForm": "A"}]}),
                "TodoWrite",
                json!({"todos": [{"content": "a", "status": "pending", "activeForm": "A"}]}),
            ),
            (
                "exit_plan_mode",
                json!({"plan": "p"}),
                "ExitPlanMode",
                json!({"plan": "p"}),
            ),
            (
                "skill",
                json!({"name": "s", "args": "x"}),
                "Skill",
                json!({"skill": "s", "args": "x"}),
            ),
            (
                "task",
                json!({"prompt": "Fix the tests\nthen more", "profile": "review"}),
                "Task",
                json!({"prompt": "Fix the tests\nthen more", "subagent_type": "review", "description": "Fix the tests"}),
            ),
            (
                "move_file",
                json!({"source_path": "a", "destination_path": "b"}),
                "move_file",
                json!({"source_path": "a", "destination_path": "b"}),
            ),
            (
                "mcp__srv__get",
                json!({"q": 1}),
                "mcp__srv__get",
                json!({"q": 1}),
            ),
        ];
        for (ours, args, claude, input) in cases {
            let (name, mapped) = to_claude(ours, &args);
            assert_eq!((name.as_str(), &mapped), (claude, &input), "{ours} out");
            assert_eq!(from_claude(ours, &mapped), args, "{ours} back");
        }
    }

    #[test]
    fn an_updated_input_cannot_smuggle_an_unknown_key_past_the_tool() {
        let back = from_claude(
            "bash",
            &json!({"command": "ls", "dangerouslyDisableSandbox": true, "timeout": 999_999_999}),
        );
        assert_eq!(
            back,
            json!({"command": "ls", "dangerouslyDisableSandbox": true, "timeout": 600})
        );
        assert_eq!(
            from_claude("bash", &json!({"command": "x", "timeout": 1})),
            json!({"command": "x", "timeout": 1})
        );
        assert_eq!(
            from_claude("grep", &json!({"pattern": "x", "-n": true})),
            json!({"pattern": "x"})
        );
    }

    #[test]
    fn rule_names_are_claude_codes_ours_or_mcp_and_nothing_else() {
        for rule in [
            "Bash(git log:*)",
            "Read",
            "Edit(src/**)",
            "Write",
            "MultiEdit",
            "Glob",
            "Grep",
            "LS",
            "Task",
            "Agent",
            "TodoWrite",
            "WebFetch",
            "mcp__srv__tool",
            "mcp__srv",
            "read_file",
            "move_file",
            "Bash=ls",
        ] {
            check_rule_name(rule, "--allowedTools").unwrap();
        }
        let err = check_rule_name("Frobnicate(x)", "--disallowedTools").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("tools: unknown tool `Frobnicate` in --disallowedTools; known Claude Code names: Read, Write, Edit, MultiEdit, Bash, LS, Glob, Grep"), "{text}");
        assert!(
            text.contains("WebFetch") && text.contains("mcp__SERVER__TOOL"),
            "{text}"
        );
        assert!(check_rule_name("grep_files", "--allowedTools").is_err());
    }
}
