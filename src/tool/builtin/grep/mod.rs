//! `grep`: searches file contents with a regex-lite pattern through the shared walker. This
//! module owns the tool itself: its schema, its arguments and their validation, and the choice
//! between searching one file and searching a tree. The work is split by job:
//! - `literals` reads off the pattern the literals every match must contain;
//! - `bytes` finds those literals and newlines fast;
//! - `matcher` decides which lines of a block match, prefiltering with the literals;
//! - `scan` streams one file through a fixed-size buffer (giant lines in overlapping windows);
//! - `parallel` walks a tree on one thread and searches files on the others;
//! - `report` assembles the output in walk order, so the same tree always gives the same bytes.
//!
//! Lines are matched one at a time (so `^`, `$` and `\s` never cross a line break) unless
//! `multiline` is set. Files whose first 8 KiB hold a NUL byte are binary and skipped; files
//! are opened through `read_limit` (regular files only, no kernel pseudo-files).

mod bytes;
mod literals;
mod matcher;
mod parallel;
mod report;
mod scan;

use std::fs;

use serde_json::{json, Value};

use crate::tool::args::{optional_bool, optional_str, optional_u64, required_str};
use crate::tool::glob::{Dialect, Glob};
use crate::tool::read_limit;
use crate::tool::walk::display_path;
use crate::tool::{Family, Subjects, Tool, ToolContext, ToolError};
use matcher::Matcher;
use report::Report;
use scan::{Ended, Searcher};

const DEFAULT_LINE_LIMIT: usize = 200;
const DEFAULT_FILE_LIMIT: usize = 500;
const MAX_CONTEXT: usize = 50;

pub struct Grep;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Content,
    Files,
    Count,
}

impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        "Search file contents with a regular expression (Rust regex syntax: `\\bfoo\\(`, \
         `fn \\w+`, `(?i)todo`; escape literal `(`, `.`, `{`). Searches `path` (a file or a \
         directory, recursively), skipping binary files, files ignored by .gitignore and \
         directories like .git and node_modules. output_mode \"files_with_matches\" (default) \
         lists matching files; \"content\" prints `path:line:text` for each matching line \
         (`path-line-text` for context lines, `--` between groups); \"count\" prints \
         `path:count` of matching lines. Results are capped (head_limit); narrow a broad search \
         with `path` or `glob`."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression to search for."
                },
                "path": {
                    "type": "string",
                    "description": "File or directory to search. Default: the workspace."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files matching this glob, e.g. \"*.rs\" or \"src/**/*.{ts,tsx}\". Without `/` it matches file names at any depth."
                },
                "output_mode": {
                    "type": "string",
                    "enum": ["files_with_matches", "content", "count"],
                    "description": "What to print. Default: \"files_with_matches\"."
                },
                "context": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Lines of context before and after each match (content mode)."
                },
                "before": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Lines of context before each match (content mode); overrides `context`."
                },
                "after": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Lines of context after each match (content mode); overrides `context`."
                },
                "case_insensitive": {
                    "type": "boolean",
                    "description": "Ignore case. Default: false."
                },
                "multiline": {
                    "type": "boolean",
                    "description": "Let the pattern span lines (`.` also matches a newline). Default: false."
                },
                "head_limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Maximum results: matching lines in content mode (default 200), files otherwise (default 500)."
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
        let request = Request::parse(args)?;
        let target = ctx.resolve_read(optional_str(args, "path")?.unwrap_or("."))?;
        let shown_target = display_path(&target, &ctx.cwd);
        let meta = fs::metadata(&target).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ToolError::Failed(format!(
                "path not found: {shown_target}; check the spelling or search a parent directory"
            )),
            _ => ToolError::Failed(format!("cannot read {shown_target}: {e}")),
        })?;
        let mut report = Report::new(&request);
        if meta.is_dir() {
            parallel::search_tree(&target, &request, &mut report, ctx)?;
        } else {
            let file = read_limit::open(&target)
                .map_err(|refusal| ToolError::Failed(refusal.describe(&shown_target)))?;
            let outcome = Searcher::new(&request)
                .search(file, request.limit, &ctx.cancel)
                .map_err(|_| ToolError::Cancelled)?;
            match &outcome.ended {
                Ended::Text => report.add(&outcome, &shown_target),
                Ended::Binary => {
                    return Ok(format!(
                        "{shown_target} is a binary file; grep skips binary files"
                    ))
                }
                Ended::Unreadable(e) => return Ok(format!("cannot read {shown_target}: {e}")),
            }
        }
        Ok(report.finish(&request, &shown_target))
    }
}

/// Validated arguments.
struct Request {
    pattern: String,
    matcher: Matcher,
    include: Option<Include>,
    mode: Mode,
    before: usize,
    after: usize,
    limit: usize,
}

impl Request {
    fn parse(args: &Value) -> Result<Request, ToolError> {
        let pattern = required_str(args, "pattern")?.to_string();
        let case_insensitive = first_bool(args, &["case_insensitive", "-i"])?.unwrap_or(false);
        let multiline = optional_bool(args, "multiline")?.unwrap_or(false);
        let matcher = Matcher::new(&pattern, case_insensitive, multiline)?;
        let include = optional_str(args, "glob")?.map(Include::new).transpose()?;
        let mode = match optional_str(args, "output_mode")? {
            None | Some("files_with_matches") => Mode::Files,
            Some("content") => Mode::Content,
            Some("count") => Mode::Count,
            Some(other) => {
                return Err(ToolError::InvalidArgs(format!(
                    "`output_mode` must be \"files_with_matches\", \"content\" or \"count\", got \"{other}\""
                )))
            }
        };
        let context = first_u64(args, &["context", "-C"])?.unwrap_or(0);
        let before = first_u64(args, &["before", "-B"])?.unwrap_or(context);
        let after = first_u64(args, &["after", "-A"])?.unwrap_or(context);
        let default_limit = match mode {
            Mode::Content => DEFAULT_LINE_LIMIT,
            Mode::Files | Mode::Count => DEFAULT_FILE_LIMIT,
        };
        let limit = match optional_u64(args, "head_limit")? {
            None | Some(0) => default_limit,
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let clamp = |n: u64| usize::try_from(n).unwrap_or(usize::MAX).min(MAX_CONTEXT);
        Ok(Request {
            pattern,
            matcher,
            include,
            mode,
            before: clamp(before),
            after: clamp(after),
            limit,
        })
    }
}

/// The first of several accepted spellings (ours, then ripgrep-style flags models also use).
fn first_u64(args: &Value, keys: &[&str]) -> Result<Option<u64>, ToolError> {
    for key in keys {
        if let Some(value) = optional_u64(args, key)? {
            return Ok(Some(value));
        }
    }
    Ok(None)
}

fn first_bool(args: &Value, keys: &[&str]) -> Result<Option<bool>, ToolError> {
    for key in keys {
        if let Some(value) = optional_bool(args, key)? {
            return Ok(Some(value));
        }
    }
    Ok(None)
}

/// The `glob` filter, anchored like ripgrep's `--glob`.
struct Include {
    glob: Glob,
    anchored: bool,
}

impl Include {
    fn new(pattern: &str) -> Result<Include, ToolError> {
        let pattern = pattern.trim().trim_start_matches("./");
        let anchored = pattern.contains('/');
        let glob = Glob::new(pattern.trim_start_matches('/'), Dialect::Glob)
            .map_err(|e| ToolError::InvalidArgs(format!("`glob` is not a valid pattern: {e}")))?;
        Ok(Include { glob, anchored })
    }

    fn admits(&self, rel: &str) -> bool {
        let subject = if self.anchored {
            rel
        } else {
            rel.rsplit('/').next().unwrap_or(rel)
        };
        self.glob.is_match(subject)
    }
}
