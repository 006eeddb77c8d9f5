//! `ls`: lists a directory, optionally recursively, through the shared walker.

use std::fs;
use std::path::Path;

use serde_json::{json, Value};

use crate::tool::args::{optional_bool, optional_str};
use crate::tool::walk::{display_path, Entry, EntryKind, Ignores, Options, Walk};
use crate::tool::{Family, Subjects, Tool, ToolContext, ToolError};

/// Entries shown before the listing is cut.
const MAX_ENTRIES: usize = 1000;
/// Past the cap we keep counting so the note is exact, but not without end.
const MAX_COUNTED: usize = 100_000;

pub struct Ls;

impl Tool for Ls {
    fn name(&self) -> &str {
        "ls"
    }

    fn description(&self) -> &str {
        "List a directory. One entry per line, sorted by name, directories with a trailing `/`, \
         symbolic links as `name -> target`; paths are relative to `path`. `.git`, \
         `node_modules`, `.venv`, `__pycache__`, `.hg` and `.svn` are never listed. With \
         `recursive: true` the whole tree is listed depth-first and files ignored by .gitignore \
         are left out. At most 1000 entries are shown; for large trees prefer `glob`."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Directory to list, absolute or relative to the workspace. Default: the workspace."
                },
                "recursive": {
                    "type": "boolean",
                    "description": "List the whole tree below `path` instead of its direct children. Default: false."
                },
                "ignore": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Extra patterns to leave out, in .gitignore syntax (e.g. [\"*.lock\", \"fixtures/\"])."
                }
            }
        })
    }

    fn family(&self) -> Family {
        Family::Reader
    }

    fn subjects(&self) -> Subjects {
        Subjects::Paths {
            keys: &["path"],
            default: Some("."),
        }
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let path = optional_str(args, "path")?.unwrap_or(".");
        let recursive = optional_bool(args, "recursive")?.unwrap_or(false);
        let ignore = optional_str_list(args, "ignore")?;
        let dir = ctx.resolve_read(path)?;
        check_directory(&dir, &ctx.cwd)?;
        let options = if recursive {
            Options {
                overrides: ignore,
                exclude: ctx.sandbox.forbid_read.clone(),
                veto: Some(ctx.walk_veto("ls")),
                ..Options::with_user_excludes()
            }
        } else {
            Options {
                max_depth: Some(1),
                ignores: Ignores::Disregard,
                overrides: ignore,
                exclude: ctx.sandbox.forbid_read.clone(),
                veto: Some(ctx.walk_veto("ls")),
                ..Options::default()
            }
        };
        list(&dir, options, ctx)
    }
}

fn list(dir: &Path, options: Options, ctx: &ToolContext) -> Result<String, ToolError> {
    let mut walk = Walk::new(dir, options);
    let mut out = String::new();
    let mut shown = 0;
    let mut more = 0;
    for entry in walk.by_ref() {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        if shown < MAX_ENTRIES {
            out.push_str(&entry_line(&entry, dir));
            out.push('\n');
            shown += 1;
        } else {
            more += 1;
            if more == MAX_COUNTED {
                break;
            }
        }
    }
    if shown == 0 {
        out.push_str("(empty directory)\n");
    }
    if more >= MAX_COUNTED {
        out.push_str(&format!(
            "... more than {MAX_COUNTED} more entries; narrow the path or use glob\n"
        ));
    } else if more > 0 {
        let unit = if more == 1 { "entry" } else { "entries" };
        out.push_str(&format!(
            "... {more} more {unit}; narrow the path or use glob\n"
        ));
    }
    if walk.unreadable() > 0 {
        out.push_str(&format!(
            "({} directories could not be read)\n",
            walk.unreadable()
        ));
    }
    Ok(out)
}

fn entry_line(entry: &Entry, dir: &Path) -> String {
    let rel = display_path(&entry.path, dir);
    match entry.kind {
        EntryKind::Dir => format!("{rel}/"),
        EntryKind::Symlink => match fs::read_link(&entry.path) {
            Ok(target) => format!("{rel} -> {}", target.to_string_lossy()),
            Err(_) => rel,
        },
        EntryKind::File | EntryKind::Other => rel,
    }
}

/// A directory the model asked for must exist and be a directory; say which it is not.
pub(super) fn check_directory(dir: &Path, cwd: &Path) -> Result<(), ToolError> {
    let shown = display_path(dir, cwd);
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(ToolError::Failed(format!(
            "{shown} is a file, not a directory; use read_file to read it"
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ToolError::Failed(format!(
            "path not found: {shown}; check the spelling or list its parent directory"
        ))),
        Err(e) => Err(ToolError::Failed(format!("cannot read {shown}: {e}"))),
    }
}

/// An optional list of strings; a single string is accepted as a one-item list.
fn optional_str_list(args: &Value, key: &str) -> Result<Vec<String>, ToolError> {
    let wrong = |got: &Value| {
        ToolError::InvalidArgs(format!("`{key}` must be an array of strings, got {got}"))
    };
    match args.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_string).ok_or_else(|| wrong(item)))
            .collect(),
        Some(other) => Err(wrong(other)),
    }
}
