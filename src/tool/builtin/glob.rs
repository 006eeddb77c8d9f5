//! `glob`: finds files by name pattern below a directory, honouring .gitignore.
//!
//! Anchoring follows ripgrep's `--glob` (and gitignore): a pattern without `/` matches file
//! names at any depth, a pattern with `/` matches the whole path relative to the base. The
//! pattern's leading literal directories (`src/` in `src/**/*.rs`) become the walk root, so a
//! narrow pattern never walks the whole workspace.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{json, Value};

use super::ls::check_directory;
use crate::tool::args::{optional_str, required_str};
use crate::tool::glob::{has_meta, Dialect, Glob};
use crate::tool::walk::{display_path, EntryKind, Options, Walk};
use crate::tool::{Family, Subjects, Tool, ToolContext, ToolError};

const MAX_RESULTS: usize = 500;

pub struct GlobTool;

#[derive(Clone, Copy, PartialEq, Eq)]
enum SortBy {
    Modified,
    Path,
}

impl Tool for GlobTool {
    fn name(&self) -> &str {
        "glob"
    }

    fn description(&self) -> &str {
        "Find files by name pattern. `*` matches within one path segment, `?` one character, \
         `[abc]`/`[a-z]`/`[!a-z]` a class, `**` any number of directories, `{ts,tsx}` either \
         alternative. A pattern without `/` matches file names at any depth (`*.rs` finds every \
         Rust file); a pattern with `/` matches the path relative to `path` (`src/*.rs` only \
         direct children of src, `src/**/*.rs` everything below it). Files ignored by \
         .gitignore and directories like .git and node_modules are skipped. Returns matching \
         file paths, newest first by default, at most 500."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Glob pattern, e.g. \"**/*.rs\", \"src/**/*.{ts,tsx}\", \"Cargo.toml\"."
                },
                "path": {
                    "type": "string",
                    "description": "Directory to search in. Default: the workspace."
                },
                "sort": {
                    "type": "string",
                    "enum": ["modified", "path"],
                    "description": "\"modified\": most recently modified first (default); \"path\": alphabetical."
                }
            },
            "required": ["pattern"]
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
        let pattern = required_str(args, "pattern")?;
        let base = ctx.resolve_read(optional_str(args, "path")?.unwrap_or("."))?;
        let sort = match optional_str(args, "sort")? {
            None | Some("modified") => SortBy::Modified,
            Some("path") => SortBy::Path,
            Some(other) => {
                return Err(ToolError::InvalidArgs(format!(
                    "`sort` must be \"modified\" or \"path\", got \"{other}\""
                )))
            }
        };
        check_directory(&base, &ctx.cwd)?;
        let query = Query::parse(pattern, &base)?;
        let found = query.run(ctx)?;
        Ok(render(found, sort, pattern, &base, ctx))
    }
}

/// A pattern split into the directory to walk and the part that still needs matching.
struct Query {
    root: PathBuf,
    glob: Glob,
    anchored: bool,
}

impl Query {
    fn parse(pattern: &str, base: &Path) -> Result<Query, ToolError> {
        let mut pattern = pattern.trim();
        while let Some(rest) = pattern.strip_prefix("./") {
            pattern = rest;
        }
        if pattern.is_empty() {
            return Err(ToolError::InvalidArgs(
                "`pattern` must not be empty; use \"**/*\" to list every file".to_string(),
            ));
        }
        let anchored = pattern.contains('/');
        let mut segments: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
        let literal_dirs = segments
            .iter()
            .take(segments.len().saturating_sub(1))
            .take_while(|s| !has_meta(s))
            .count();
        // `/usr/include/**/*.h` names a directory; a bare `/*.rs` is anchored to the base
        // (gitignore style) rather than a walk of the whole filesystem.
        let mut root = if pattern.starts_with('/') && literal_dirs > 0 {
            PathBuf::from("/")
        } else {
            base.to_path_buf()
        };
        for segment in segments.drain(..literal_dirs) {
            root.push(segment);
        }
        let rest = segments.join("/");
        let glob = Glob::new(&rest, Dialect::Glob).map_err(|e| {
            ToolError::InvalidArgs(format!("`pattern` is not a valid glob pattern: {e}"))
        })?;
        Ok(Query {
            root,
            glob,
            anchored,
        })
    }

    fn run(&self, ctx: &ToolContext) -> Result<Vec<PathBuf>, ToolError> {
        if !self.root.is_dir() {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        let options = Options {
            exclude: ctx.sandbox.forbid_read.clone(),
            veto: Some(ctx.walk_veto("glob")),
            ..Options::with_user_excludes()
        };
        for entry in Walk::new(&self.root, options) {
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            if !matches!(entry.kind, EntryKind::File | EntryKind::Symlink) {
                continue;
            }
            let Ok(rel) = entry.path.strip_prefix(&self.root) else {
                continue;
            };
            let rel = rel.to_string_lossy();
            let subject = if self.anchored {
                rel.as_ref()
            } else {
                rel.rsplit('/').next().unwrap_or(&rel)
            };
            if self.glob.is_match(subject) {
                found.push(entry.path);
            }
        }
        Ok(found)
    }
}

fn render(
    mut found: Vec<PathBuf>,
    sort: SortBy,
    pattern: &str,
    base: &Path,
    ctx: &ToolContext,
) -> String {
    if found.is_empty() {
        return format!(
            "No files match `{pattern}` under {} (files ignored by .gitignore are skipped).",
            display_path(base, &ctx.cwd)
        );
    }
    match sort {
        SortBy::Path => found.sort(),
        SortBy::Modified => sort_newest_first(&mut found),
    }
    let total = found.len();
    let mut out = String::new();
    for path in found.iter().take(MAX_RESULTS) {
        out.push_str(&display_path(path, &ctx.cwd));
        out.push('\n');
    }
    if total > MAX_RESULTS {
        out.push_str(&format!(
            "({} more files not shown; narrow the pattern or path)\n",
            total - MAX_RESULTS
        ));
    }
    out
}

/// Newest first; equal times (and unreadable ones) fall back to path order so the output is
/// deterministic.
fn sort_newest_first(paths: &mut Vec<PathBuf>) {
    let mut keyed: Vec<(SystemTime, PathBuf)> = paths
        .drain(..)
        .map(|p| {
            let modified = fs::symlink_metadata(&p)
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            (modified, p)
        })
        .collect();
    keyed.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    paths.extend(keyed.into_iter().map(|(_, p)| p));
}
