//! `grep`: searches file contents with a regex-lite pattern through the shared walker.
//!
//! Lines are matched one at a time (so `^`, `$` and `\s` never cross a line break) unless
//! `multiline` is set. regex-lite has no literal optimisations, so we supply them: a pattern
//! without regex syntax is a plain substring search, and for any other pattern we read off
//! literals one of which every match must contain (`_mut(` in `fn \w+_mut\(`); only lines
//! holding one reach the regex engine. Patterns beyond that reading get one whole-file test
//! first. Files whose first 8 KiB hold a NUL byte are binary and skipped. Output is in walk
//! order (sorted paths), so the same tree gives the same bytes.
//!
//! Files are opened through `read_limit` (regular files only, no kernel pseudo-files) and
//! streamed in blocks of whole lines ([`BLOCK_BYTES`]) through one buffer reused for every
//! file, so memory does not depend on file size; context lines reach across blocks. A
//! multiline pattern sees the first [`MULTILINE_WINDOW_BYTES`] of each file.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fs::{self, File};
use std::path::Path;

use regex_lite::{Regex, RegexBuilder};
use serde_json::{json, Value};

use crate::tool::args::{optional_bool, optional_str, optional_u64, required_str};
use crate::tool::glob::{Dialect, Glob};
use crate::tool::read_limit::{self, LineBlocks};
use crate::tool::walk::{display_path, EntryKind, Options, Walk};
use crate::tool::{Family, Subjects, Tool, ToolContext, ToolError};

const DEFAULT_LINE_LIMIT: usize = 200;
const DEFAULT_FILE_LIMIT: usize = 500;
const MAX_CONTEXT: usize = 50;
/// Longer lines are shown as a window around the first match.
const MAX_LINE_BYTES: usize = 400;
const BINARY_PROBE_BYTES: usize = 8192;
/// Files are read in blocks of whole lines this large, so memory does not grow with the file;
/// a longer line is searched in its first this-many bytes and the rest of it is skipped.
const BLOCK_BYTES: usize = 1024 * 1024;
/// A multiline pattern may span any lines, so it sees each file as one block: only this much
/// of a file is searched, and the output names the files cut short.
const MULTILINE_WINDOW_BYTES: usize = 4 * 1024 * 1024;

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

    fn read_only(&self) -> bool {
        true
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
        let mut buffer = vec![0; request.block_bytes()];
        if meta.is_dir() {
            search_dir(&target, &request, &mut report, &mut buffer, ctx)?;
        } else {
            let file = read_limit::open(&target)
                .map_err(|refusal| ToolError::Failed(refusal.describe(&shown_target)))?;
            let scanned = scan(&target, file, &request, &mut report, &mut buffer, ctx)?;
            match scanned {
                Scanned::Text => {}
                Scanned::Binary => {
                    return Ok(format!(
                        "{shown_target} is a binary file; grep skips binary files"
                    ))
                }
                Scanned::Unreadable(e) => return Ok(format!("cannot read {shown_target}: {e}")),
            }
        }
        Ok(report.finish(&request, &shown_target))
    }
}

/// Validated arguments.
struct Request {
    pattern: String,
    matcher: LineMatcher,
    multiline: bool,
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
        let matcher = LineMatcher::new(&pattern, case_insensitive, multiline)?;
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
            multiline,
            include,
            mode,
            before: clamp(before),
            after: clamp(after),
            limit,
        })
    }
}

impl Request {
    /// The block a file is read in: lines one at a time need only a window of whole lines,
    /// a multiline pattern needs as much of the file at once as it may span.
    fn block_bytes(&self) -> usize {
        match self.multiline {
            true => MULTILINE_WINDOW_BYTES,
            false => BLOCK_BYTES,
        }
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

enum LineMatcher {
    /// No regex syntax: a plain substring search.
    Literal(Needles),
    PerLine {
        regex: Regex,
        hint: Hint,
    },
    Multiline {
        regex: Regex,
        hint: Hint,
    },
}

/// How to avoid running the (slow, literal-unaware) regex engine over every byte.
enum Hint {
    /// Every match contains one of these strings (lowercased when `fold`): only lines holding
    /// one are tried.
    Needles(Needles),
    /// No literal to go on, but a whole-file test finds no false negatives.
    WholeText,
    /// `\A` or `\z`: whole-text and per-line searches disagree, so every line is tried.
    EveryLine,
}

impl LineMatcher {
    fn new(pattern: &str, case_insensitive: bool, multiline: bool) -> Result<Self, ToolError> {
        let plain = !pattern.contains([
            '\\', '.', '+', '*', '?', '(', ')', '|', '[', ']', '{', '}', '^', '$', '\n',
        ]);
        if plain && !multiline {
            let needle = match case_insensitive {
                true => pattern.to_ascii_lowercase(),
                false => pattern.to_string(),
            };
            return Ok(LineMatcher::Literal(Needles {
                needles: vec![needle],
                fold: case_insensitive,
            }));
        }
        let regex = RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .multi_line(true)
            .crlf(true)
            .dot_matches_new_line(multiline)
            .build()
            .map_err(|e| {
                ToolError::InvalidArgs(format!(
                    "`pattern` is not a valid regular expression: {e}; put a backslash before \
                     ( ) [ ] {{ }} . * + ? | ^ $ to match them literally"
                ))
            })?;
        let hint = match required_literals(pattern, case_insensitive) {
            Some(needles) => Hint::Needles(needles),
            None if pattern.contains("\\A") || pattern.contains("\\z") => Hint::EveryLine,
            None => Hint::WholeText,
        };
        Ok(match multiline {
            true => LineMatcher::Multiline { regex, hint },
            false => LineMatcher::PerLine { regex, hint },
        })
    }

    /// Indices of the matching lines of `text`, ascending.
    fn matching_lines(&self, text: &str) -> Vec<usize> {
        match self {
            LineMatcher::Literal(needles) => needles
                .candidate_lines(text)
                .into_iter()
                .map(|(index, _)| index)
                .collect(),
            LineMatcher::PerLine { regex, hint } => match hint {
                Hint::Needles(needles) => needles
                    .candidate_lines(text)
                    .into_iter()
                    .filter(|&(_, line)| regex.is_match(line))
                    .map(|(index, _)| index)
                    .collect(),
                Hint::WholeText if !regex.is_match(text) => Vec::new(),
                Hint::WholeText | Hint::EveryLine => indices_where(text, |l| regex.is_match(l)),
            },
            LineMatcher::Multiline { regex, hint } => match hint {
                Hint::Needles(needles) if !needles.any_in(text) => Vec::new(),
                _ => multiline_matches(regex, text),
            },
        }
    }

    /// Whether `text` has any match; cheaper than `matching_lines` past the result cap.
    fn any_match(&self, text: &str) -> bool {
        match self {
            LineMatcher::Literal(needles) => needles.any_in(text),
            LineMatcher::PerLine { regex, hint } => match hint {
                Hint::Needles(needles) => needles
                    .candidate_lines(text)
                    .into_iter()
                    .any(|(_, line)| regex.is_match(line)),
                Hint::WholeText if !regex.is_match(text) => false,
                Hint::WholeText | Hint::EveryLine => lines(text).any(|l| regex.is_match(l)),
            },
            LineMatcher::Multiline { regex, hint } => match hint {
                Hint::Needles(needles) if !needles.any_in(text) => false,
                _ => regex.is_match(text),
            },
        }
    }

    /// Byte offset of the first match in one line, to centre a clipped long line on it.
    fn first_match_in(&self, line: &str) -> usize {
        match self {
            LineMatcher::Literal(needles) => {
                let line = fold_case(line, needles.fold);
                needles
                    .needles
                    .iter()
                    .find_map(|n| line.find(n.as_str()))
                    .unwrap_or(0)
            }
            LineMatcher::PerLine { regex, .. } | LineMatcher::Multiline { regex, .. } => {
                regex.find(line).map_or(0, |m| m.start())
            }
        }
    }
}

/// Literal strings one of which every match must contain.
#[derive(Debug, PartialEq, Eq)]
struct Needles {
    needles: Vec<String>,
    /// Needles are lowercase and the text is ASCII-lowercased before searching; exact, since
    /// regex-lite's case-insensitivity is ASCII-only.
    fold: bool,
}

impl Needles {
    fn any_in(&self, text: &str) -> bool {
        let haystack = fold_case(text, self.fold);
        self.needles.iter().any(|n| haystack.contains(n.as_str()))
    }

    /// `(index, line)` of each line holding a needle, ascending, lines without terminators.
    fn candidate_lines<'t>(&self, text: &'t str) -> Vec<(usize, &'t str)> {
        let haystack = fold_case(text, self.fold);
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for needle in &self.needles {
            let mut from = 0;
            while let Some(found) = haystack[from..].find(needle.as_str()) {
                let at = from + found;
                let start = haystack[..at].rfind('\n').map_or(0, |i| i + 1);
                let end = haystack[at..].find('\n').map_or(haystack.len(), |i| at + i);
                spans.push((start, end));
                if end >= haystack.len() {
                    break;
                }
                from = end + 1;
            }
        }
        spans.sort_unstable();
        spans.dedup();
        let mut out = Vec::with_capacity(spans.len());
        let (mut counted_to, mut index) = (0, 0);
        for (start, end) in spans {
            index += text.as_bytes()[counted_to..start]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            counted_to = start;
            let line = &text[start..end];
            out.push((index, line.strip_suffix('\r').unwrap_or(line)));
        }
        out
    }
}

/// A set of literals, one of which every match of `pattern` contains, or `None` when the
/// pattern is beyond this deliberately small reading of the syntax. Each top-level
/// alternative contributes its longest run of characters that must appear verbatim.
fn required_literals(pattern: &str, case_insensitive: bool) -> Option<Needles> {
    let mut chars: Vec<char> = pattern.chars().collect();
    let mut fold = case_insensitive;
    if let Some(flags) = leading_flags(&chars) {
        if flags.contains('x') || flags.contains('-') {
            return None;
        }
        fold |= flags.contains('i');
        chars.drain(..flags.chars().count() + 3);
    }
    let mut needles = Vec::new();
    for alternative in split_alternatives(&chars)? {
        let literal = longest_required_run(alternative)?;
        if literal.is_empty() {
            return None;
        }
        needles.push(match fold {
            true => literal.to_ascii_lowercase(),
            false => literal,
        });
    }
    needles.sort();
    needles.dedup();
    Some(Needles { needles, fold })
}

/// The letters of a leading `(?flags)` group.
fn leading_flags(chars: &[char]) -> Option<String> {
    if chars.len() < 3 || chars[0] != '(' || chars[1] != '?' {
        return None;
    }
    let close = chars.iter().position(|&c| c == ')')?;
    let flags: String = chars[2..close].iter().collect();
    flags
        .chars()
        .all(|c| "imsRUx-".contains(c))
        .then_some(flags)
        .filter(|f| !f.is_empty())
}

/// Splits on `|` outside groups and classes; `None` on anything unbalanced.
fn split_alternatives(chars: &[char]) -> Option<Vec<&[char]>> {
    let mut parts = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '[' => i = skip_class(chars, i)?,
            '(' => i = skip_group(chars, i)?,
            '|' => {
                parts.push(&chars[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    parts.push(chars.get(start..)?);
    Some(parts)
}

/// The longest run of characters one alternative must match verbatim.
fn longest_required_run(chars: &[char]) -> Option<String> {
    let mut best = String::new();
    let mut run = String::new();
    let mut i = 0;
    while i < chars.len() {
        let (literal, next) = match chars[i] {
            '\\' => {
                let c = *chars.get(i + 1)?;
                if "xupPU".contains(c) || (c == 'b' && chars.get(i + 2) == Some(&'{')) {
                    return None;
                }
                let literal = (c.is_ascii_punctuation() && c != '<' && c != '>').then_some(c);
                (literal, i + 2)
            }
            '[' => (None, skip_class(chars, i)?),
            '(' => {
                let end = skip_group(chars, i)?;
                if chars.get(i + 1) == Some(&'?') && chars[i + 1..end].iter().all(|c| *c != ':') {
                    return None; // an inline flag change such as `(?i)` mid-pattern
                }
                (None, end)
            }
            '.' | '^' | '$' => (None, i + 1),
            '*' | '+' | '?' | '{' | ')' => return None, // a quantifier without an atom
            c => (Some(c), i + 1),
        };
        let (quantifier, after) = quantifier_at(chars, next)?;
        match (literal, quantifier) {
            (Some(c), Quantifier::None) => run.push(c),
            (Some(c), Quantifier::OneOrMore) => {
                run.push(c);
                keep_longest(&mut best, &mut run);
            }
            _ => keep_longest(&mut best, &mut run),
        }
        i = after;
    }
    keep_longest(&mut best, &mut run);
    Some(best)
}

fn keep_longest(best: &mut String, run: &mut String) {
    if run.len() > best.len() {
        *best = std::mem::take(run);
    } else {
        run.clear();
    }
}

enum Quantifier {
    None,
    /// `+`: the atom appears at least once, but what follows need not be adjacent to it.
    OneOrMore,
    /// `*`, `?`, `{n,m}`: the atom may be absent.
    Optional,
}

/// The quantifier starting at `i` (with an optional lazy `?`) and the index after it.
fn quantifier_at(chars: &[char], i: usize) -> Option<(Quantifier, usize)> {
    let (quantifier, mut next) = match chars.get(i) {
        Some('+') => (Quantifier::OneOrMore, i + 1),
        Some('*') | Some('?') => (Quantifier::Optional, i + 1),
        Some('{') => {
            let close = chars[i..].iter().position(|&c| c == '}')?;
            (Quantifier::Optional, i + close + 1)
        }
        _ => return Some((Quantifier::None, i)),
    };
    if chars.get(next) == Some(&'?') {
        next += 1;
    }
    Some((quantifier, next))
}

/// Index just past the class opening at `open`, nested classes included.
fn skip_class(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' => {
                depth += 1;
                // A `]` right after `[` or `[^` is a literal member, not the end.
                if chars.get(i + 1) == Some(&'^') {
                    i += 1;
                }
                if chars.get(i + 1) == Some(&']') {
                    i += 1;
                }
            }
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Index just past the group opening at `open`.
fn skip_group(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' => {
                i = skip_class(chars, i)?;
                continue;
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// ASCII lowercasing keeps byte offsets, so line numbers and offsets stay valid.
fn fold_case(text: &str, fold: bool) -> Cow<'_, str> {
    if fold {
        Cow::Owned(text.to_ascii_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

fn indices_where(text: &str, mut test: impl FnMut(&str) -> bool) -> Vec<usize> {
    lines(text)
        .enumerate()
        .filter(|(_, line)| test(line))
        .map(|(i, _)| i)
        .collect()
}

/// The lines of `text` without their terminators; a final newline does not start a line.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .take(if text.is_empty() { 0 } else { usize::MAX })
}

/// Every line a match touches counts as a matching line.
fn multiline_matches(regex: &Regex, text: &str) -> Vec<usize> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |offset: usize| starts.partition_point(|&s| s <= offset).saturating_sub(1);
    let last_line = lines(text).count().saturating_sub(1);
    let mut found = Vec::new();
    for m in regex.find_iter(text) {
        let first = line_of(m.start()).min(last_line);
        let last = line_of(m.end().saturating_sub(1).max(m.start())).min(last_line);
        found.extend(first..=last);
    }
    found.sort_unstable();
    found.dedup();
    found
}

fn search_dir(
    root: &Path,
    request: &Request,
    report: &mut Report,
    buffer: &mut Vec<u8>,
    ctx: &ToolContext,
) -> Result<(), ToolError> {
    let options = Options {
        exclude: ctx.sandbox.forbid_read.clone(),
        veto: Some(ctx.walk_veto("grep")),
        ..Options::with_user_excludes()
    };
    let mut opener = read_limit::Opener::default();
    for entry in Walk::new(root, options) {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        if entry.kind != EntryKind::File {
            continue;
        }
        if let Some(include) = &request.include {
            let rel = entry.path.strip_prefix(root).unwrap_or(&entry.path);
            if !include.admits(&rel.to_string_lossy()) {
                continue;
            }
        }
        // Files that cannot or must not be read (pseudo-files, a file swapped for a FIFO since
        // the listing) are skipped like binary ones.
        if let Ok(file) = opener.open_listed(&entry.path) {
            scan(&entry.path, file, request, report, buffer, ctx)?;
        }
    }
    Ok(())
}

/// How a file's search ended.
enum Scanned {
    Text,
    /// Its first [`BINARY_PROBE_BYTES`] hold a NUL byte; nothing was searched.
    Binary,
    /// A read failed part-way; matches before the failure are reported.
    Unreadable(std::io::Error),
}

/// Searches one open file, streaming it through `buffer` (kept for the next file) a block of
/// whole lines at a time, so memory does not grow with the file. Only cancellation is an error.
fn scan(
    path: &Path,
    file: File,
    request: &Request,
    report: &mut Report,
    buffer: &mut Vec<u8>,
    ctx: &ToolContext,
) -> Result<Scanned, ToolError> {
    let mut blocks = LineBlocks::new(file, std::mem::take(buffer));
    let mut state = FileScan::new(path);
    let scanned = scan_blocks(&mut blocks, &mut state, request, report, ctx);
    *buffer = blocks.into_buffer();
    report.end_file(&mut state, request, ctx);
    match scanned {
        Ok(scanned) => Ok(scanned),
        Err(ScanStop::Cancelled) => Err(ToolError::Cancelled),
        Err(ScanStop::Io(e)) => Ok(Scanned::Unreadable(e)),
    }
}

enum ScanStop {
    Cancelled,
    Io(std::io::Error),
}

impl From<std::io::Error> for ScanStop {
    fn from(e: std::io::Error) -> ScanStop {
        ScanStop::Io(e)
    }
}

fn scan_blocks(
    blocks: &mut LineBlocks,
    state: &mut FileScan,
    request: &Request,
    report: &mut Report,
    ctx: &ToolContext,
) -> Result<Scanned, ScanStop> {
    if blocks.peek(BINARY_PROBE_BYTES)?.contains(&0) {
        return Ok(Scanned::Binary);
    }
    let mut first = true;
    while let Some(block) = blocks.next_block()? {
        // A file of one block (most source files) needs no check of its own: the walk checks
        // between files.
        if !first && ctx.cancel.is_cancelled() {
            return Err(ScanStop::Cancelled);
        }
        first = false;
        // from_utf8 validates much faster than from_utf8_lossy's chunked walk, and almost
        // every block is valid.
        let text = match std::str::from_utf8(block.bytes) {
            Ok(text) => Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(block.bytes),
        };
        if report.add_block(state, &text, request, ctx) == Next::Stop {
            break;
        }
        drop(text);
        if request.multiline {
            if !blocks.at_end()? {
                report.partial.push(display_path(&state.path, &ctx.cwd));
            }
            break;
        }
    }
    Ok(Scanned::Text)
}

/// Whether a file's remaining blocks are worth reading.
#[derive(PartialEq, Eq)]
enum Next {
    Continue,
    Stop,
}

/// Where the search of one file stands between blocks.
struct FileScan {
    path: std::path::PathBuf,
    /// The path as printed, made once the file has something to print.
    shown: Option<String>,
    /// Lines in the blocks before the current one.
    lines_before: usize,
    /// Matching lines so far.
    matches: usize,
    /// The last line printed (0-based, in the whole file).
    printed_to: Option<usize>,
    /// Context after a match reaches this line, possibly in a later block.
    after_until: Option<usize>,
    /// The last lines of the earlier blocks, as printed for context, for a match at the start
    /// of a block to show its before-context.
    tail: VecDeque<(usize, String)>,
}

impl FileScan {
    fn new(path: &Path) -> FileScan {
        FileScan {
            path: path.to_path_buf(),
            shown: None,
            lines_before: 0,
            matches: 0,
            printed_to: None,
            after_until: None,
            tail: VecDeque::new(),
        }
    }

    fn shown(&mut self, ctx: &ToolContext) -> String {
        self.shown
            .get_or_insert_with(|| display_path(&self.path, &ctx.cwd))
            .clone()
    }

    /// The first line not printed yet.
    fn unprinted(&self) -> usize {
        self.printed_to.map_or(0, |p| p + 1)
    }

    /// Keeps the last `keep` lines of a block (whose lines end before line `end`) for the
    /// before-context of a match in the next block.
    fn remember_tail(&mut self, text: &str, end: usize, keep: usize) {
        let body = text.strip_suffix('\n').unwrap_or(text);
        let last: Vec<&str> = body.rsplit('\n').take(keep).collect();
        for (i, line) in last.iter().rev().enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            self.tail
                .push_back((end - last.len() + i, clip(line, 0).into_owned()));
            if self.tail.len() > keep {
                self.tail.pop_front();
            }
        }
    }
}

/// The number of lines of `text` as [`lines`] counts them.
fn line_count(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    match text.ends_with('\n') {
        true => newlines,
        false => newlines + 1,
    }
}

/// The output being built, with the counts needed for the closing notes.
struct Report {
    out: String,
    shown: usize,
    omitted: usize,
    files_matched: usize,
    lines_matched: usize,
    /// Whether a context group has been printed, so the next one is preceded by `--`.
    grouped: bool,
    mode: Mode,
    /// Files a multiline search saw only the start of.
    partial: Vec<String>,
    /// Context lines were asked for, so groups are separated by `--`.
    with_context: bool,
}

impl Report {
    fn new(request: &Request) -> Report {
        Report {
            out: String::new(),
            shown: 0,
            omitted: 0,
            files_matched: 0,
            lines_matched: 0,
            grouped: false,
            mode: request.mode,
            partial: Vec::new(),
            with_context: request.before > 0 || request.after > 0,
        }
    }

    /// Searches one block of whole lines of the file `state` describes.
    fn add_block(
        &mut self,
        state: &mut FileScan,
        text: &str,
        request: &Request,
        ctx: &ToolContext,
    ) -> Next {
        match self.mode {
            Mode::Files => {
                // Whether the file matches at all is enough; stop at the first matching line.
                if request.matcher.any_match(text) {
                    self.files_matched += 1;
                    let shown = state.shown(ctx);
                    self.add_entry(shown, request.limit);
                    return Next::Stop;
                }
            }
            Mode::Count => state.matches += request.matcher.matching_lines(text).len(),
            Mode::Content => self.add_content(state, text, request, ctx),
        }
        Next::Continue
    }

    /// Closes a file: its count line, in count mode.
    fn end_file(&mut self, state: &mut FileScan, request: &Request, ctx: &ToolContext) {
        if self.mode == Mode::Count && state.matches > 0 {
            self.files_matched += 1;
            self.lines_matched += state.matches;
            let line = format!("{}:{}", state.shown(ctx), state.matches);
            self.add_entry(line, request.limit);
        }
    }

    fn add_entry(&mut self, line: String, limit: usize) {
        if self.shown < limit {
            self.out.push_str(&line);
            self.out.push('\n');
            self.shown += 1;
        } else {
            self.omitted += 1;
        }
    }

    /// Prints the matching lines of one block with their context, which may reach back into
    /// the remembered tail of earlier blocks and on into later ones.
    fn add_content(
        &mut self,
        state: &mut FileScan,
        text: &str,
        request: &Request,
        ctx: &ToolContext,
    ) {
        let base = state.lines_before;
        let count = line_count(text);
        state.lines_before += count;
        let matched = request.matcher.matching_lines(text);
        if !matched.is_empty() && state.matches == 0 {
            self.files_matched += 1;
        }
        state.matches += matched.len();
        self.lines_matched += matched.len();
        let take = matched
            .len()
            .min(request.limit - self.shown.min(request.limit));
        self.omitted += matched.len() - take;
        self.shown += take;
        let carried = state
            .after_until
            .filter(|&until| until >= base && until >= state.unprinted());
        if (take > 0 || carried.is_some()) && count > 0 {
            let all: Vec<&str> = lines(text).collect();
            let last = base + all.len() - 1;
            let print = |report: &mut Report, state: &mut FileScan, index: usize| {
                if index < base {
                    let remembered = state.tail.iter().find(|(i, _)| *i == index);
                    if let Some((_, line)) = remembered {
                        let line = line.clone();
                        report.print_line(state, index, &line, '-', ctx);
                    }
                    return;
                }
                let line = all[index - base];
                let is_match = matched.binary_search(&(index - base)).is_ok();
                let (separator, focus) = match is_match {
                    true => (':', request.matcher.first_match_in(line)),
                    false => ('-', 0),
                };
                report.print_line(state, index, &clip(line, focus), separator, ctx);
            };
            if let Some(until) = carried {
                for index in state.unprinted().max(base)..=until.min(last) {
                    print(self, state, index);
                }
            }
            for &m in &matched[..take] {
                let at = base + m;
                let first = at.saturating_sub(request.before).max(state.unprinted());
                for index in first..=(at + request.after).min(last) {
                    print(self, state, index);
                }
                state.after_until = Some(at + request.after);
            }
        }
        if request.before > 0 {
            state.remember_tail(text, base + count, request.before);
        }
    }

    /// One output line of content mode; a gap since the last printed line starts a new group.
    fn print_line(
        &mut self,
        state: &mut FileScan,
        index: usize,
        line: &str,
        separator: char,
        ctx: &ToolContext,
    ) {
        let gap = state.printed_to.is_none_or(|p| index != p + 1);
        if gap && self.grouped && self.with_context {
            self.out.push_str("--\n");
        }
        self.grouped = true;
        let shown = state.shown(ctx);
        self.out.push_str(&format!(
            "{shown}{separator}{}{separator}{line}\n",
            index + 1
        ));
        state.printed_to = Some(index);
    }

    fn finish(mut self, request: &Request, target: &str) -> String {
        let partial = self.partial_note();
        if self.files_matched == 0 {
            let filter = match &request.include {
                Some(include) => format!(" (files matching `{}`)", include.glob.as_str()),
                None => String::new(),
            };
            return format!(
                "No matches for `{}` in {target}{filter}.{}",
                request.pattern,
                partial.map(|p| format!("\n{p}")).unwrap_or_default()
            );
        }
        if self.mode == Mode::Count {
            self.out.push_str(&format!(
                "({} in {})\n",
                counted(self.lines_matched, "matching line"),
                counted(self.files_matched, "file")
            ));
        }
        if self.omitted > 0 {
            let unit = match self.mode {
                Mode::Content => "matching line",
                Mode::Files | Mode::Count => "file",
            };
            self.out.push_str(&format!(
                "[{} more {} not shown; narrow your search with path or glob, or raise head_limit]\n",
                self.omitted,
                noun(self.omitted, unit)
            ));
        }
        if let Some(partial) = partial {
            self.out.push_str(&partial);
            self.out.push('\n');
        }
        self.out
    }

    /// Names the files a multiline search saw only the start of.
    fn partial_note(&self) -> Option<String> {
        if self.partial.is_empty() {
            return None;
        }
        let listed: Vec<&str> = self.partial.iter().take(10).map(String::as_str).collect();
        let more = match self.partial.len() > 10 {
            true => format!(" and {} more", self.partial.len() - 10),
            false => String::new(),
        };
        Some(format!(
            "[multiline mode searched only the first {} MiB of {}: {}{more}; search the rest \
             without multiline or with bash]",
            MULTILINE_WINDOW_BYTES / (1024 * 1024),
            counted(self.partial.len(), "file"),
            listed.join(", ")
        ))
    }
}

/// `1 file`, `2 files`.
fn counted(n: usize, unit: &str) -> String {
    format!("{n} {}", noun(n, unit))
}

fn noun(n: usize, unit: &str) -> String {
    match n {
        1 => unit.to_string(),
        _ => format!("{unit}s"),
    }
}

/// A long line cut to a window around `focus` (a byte offset), saying how long it was.
fn clip(line: &str, focus: usize) -> Cow<'_, str> {
    if line.len() <= MAX_LINE_BYTES {
        return Cow::Borrowed(line);
    }
    let start = char_floor(line, focus.saturating_sub(MAX_LINE_BYTES / 4));
    let end = char_floor(line, (start + MAX_LINE_BYTES).min(line.len()));
    let head = if start > 0 { "…" } else { "" };
    let tail = if end < line.len() { "…" } else { "" };
    Cow::Owned(format!(
        "{head}{}{tail} [line truncated: {} bytes]",
        &line[start..end],
        line.len()
    ))
}

fn char_floor(s: &str, mut index: usize) -> usize {
    while index > 0 && !s.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_ignore_the_final_newline_and_strip_carriage_returns() {
        assert_eq!(lines("a\r\nb\n").collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(lines("a\n\nb").collect::<Vec<_>>(), vec!["a", "", "b"]);
        assert_eq!(lines("").count(), 0);
        assert_eq!(lines("\n").collect::<Vec<_>>(), vec![""]);
    }

    #[test]
    fn literal_and_regex_matchers_agree_on_line_numbers() {
        let text = "alpha\nBeta\r\ngamma beta\n";
        let literal = LineMatcher::new("beta", true, false).unwrap();
        assert!(matches!(literal, LineMatcher::Literal(_)));
        assert_eq!(literal.matching_lines(text), vec![1, 2]);
        let regex = LineMatcher::new("(?i)beta$", false, false).unwrap();
        assert_eq!(regex.matching_lines(text), vec![1, 2]);
        let anchored = LineMatcher::new("\\Agamma", false, false).unwrap();
        assert_eq!(anchored.matching_lines(text), vec![2]);
        let multi = LineMatcher::new("alpha.Beta", false, true).unwrap();
        assert_eq!(multi.matching_lines(text), vec![0, 1]);
    }

    #[test]
    fn required_literals_table() {
        let needles =
            |pattern: &str, ci: bool| required_literals(pattern, ci).map(|n| (n.needles, n.fold));
        let some = |list: &[&str], fold: bool| {
            Some((list.iter().map(|s| s.to_string()).collect::<Vec<_>>(), fold))
        };
        assert_eq!(needles(r"fn \w+_mut\(", false), some(&["_mut("], false));
        assert_eq!(
            needles(r"(?i)todo|fixme", false),
            some(&["fixme", "todo"], true)
        );
        assert_eq!(needles("TODO|Fixme", true), some(&["fixme", "todo"], true));
        assert_eq!(needles(r"abc*d", false), some(&["ab"], false));
        assert_eq!(needles(r"ab+cde", false), some(&["cde"], false));
        assert_eq!(needles(r"xa?yz", false), some(&["yz"], false));
        assert_eq!(needles(r"a{2}bcd", false), some(&["bcd"], false));
        assert_eq!(needles(r"^impl\s+Foo$", false), some(&["impl"], false));
        assert_eq!(needles(r"foo(bar|baz)+quux", false), some(&["quux"], false));
        assert_eq!(needles(r"[a|b]zz|y\.y", false), some(&["y.y", "zz"], false));
        assert_eq!(needles(r"[]|]x", false), some(&["x"], false));
        assert_eq!(needles(r"(?:a|b)cc", false), some(&["cc"], false));
        assert_eq!(needles(r"\bword\b", false), some(&["word"], false));
        assert_eq!(needles(r"caf\u{e9}", false), None);
        assert_eq!(needles(r"a(?i)bc", false), None);
        assert_eq!(needles(r"(?-i)abc", true), None);
        assert_eq!(needles(r"(?x)a b", false), None);
        assert_eq!(needles(r"foo|", false), None);
        assert_eq!(needles(r"\w+", false), None);
        assert_eq!(needles(r".*", false), None);
    }

    /// The accelerated paths must find exactly the lines a plain per-line regex finds.
    #[test]
    fn accelerated_matching_agrees_with_plain_per_line_regex() {
        let text = "fn get_mut(&mut self)\r\nfn Get(&self)\n// TODO fix\n\
                    todo: later\nlet x = a.b + c;\n\nFIXME!\nimpl Foo\nimpl  Foo for Bar\n\
                    caf\u{e9} au lait\nend";
        let patterns = [
            r"fn \w+_mut\(",
            r"(?i)todo|fixme",
            r"a\.b",
            r"^impl\s+Foo$",
            r"impl\s+Foo",
            r"\bget\b",
            r"(?i)GET",
            r"caf\u{e9}",
            r"[A-Z]{4}",
            r"self\)$",
            r"\Afn",
            r"x|y|z",
            "au lait",
            "",
        ];
        for pattern in patterns {
            for ci in [false, true] {
                let plain = RegexBuilder::new(pattern)
                    .case_insensitive(ci)
                    .multi_line(true)
                    .crlf(true)
                    .build()
                    .unwrap();
                let expected = indices_where(text, |l| plain.is_match(l));
                let matcher = LineMatcher::new(pattern, ci, false).unwrap();
                assert_eq!(
                    matcher.matching_lines(text),
                    expected,
                    "pattern {pattern:?}, case_insensitive {ci}"
                );
                assert_eq!(matcher.any_match(text), !expected.is_empty());
            }
        }
    }

    #[test]
    fn clip_centres_long_lines_on_the_match() {
        let line = format!("{}NEEDLE{}", "x".repeat(1000), "y".repeat(1000));
        let clipped = clip(&line, 1000);
        assert!(clipped.contains("NEEDLE"), "{clipped}");
        assert!(clipped.starts_with('…'));
        assert!(clipped.ends_with("[line truncated: 2006 bytes]"));
        assert_eq!(clip("short", 0), "short");
        let wide = "é".repeat(500);
        assert!(clip(&wide, 3).len() < wide.len());
    }

    /// Runs one grep over `path` with the file streamed through blocks of `block` bytes.
    fn grep_in_blocks(dir: &Path, args: Value, block: usize) -> String {
        let ctx = ToolContext::new(dir.to_path_buf());
        let request = Request::parse(&args).unwrap();
        let mut report = Report::new(&request);
        let mut buffer = vec![0; block];
        let path = dir.join("f.txt");
        let file = read_limit::open(&path).unwrap();
        let scanned = scan(&path, file, &request, &mut report, &mut buffer, &ctx).unwrap();
        assert!(matches!(scanned, Scanned::Text));
        report.finish(&request, "f.txt")
    }

    /// Matches and context that straddle block boundaries print exactly as when the file is
    /// one block.
    #[test]
    fn block_boundaries_do_not_change_the_output() {
        let dir = std::env::temp_dir().join(format!("reasonix-grep-blocks-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let text: String = (1..=60)
            .map(|i| match i % 7 {
                0 | 3 => format!("hit {i}\r\n"),
                _ => format!("line {i}\n"),
            })
            .collect();
        fs::write(dir.join("f.txt"), format!("{text}hit at the end")).unwrap();
        let cases = [
            json!({"pattern": "hit", "output_mode": "content"}),
            json!({"pattern": "hit", "output_mode": "content", "context": 2}),
            json!({"pattern": "hit", "output_mode": "content", "before": 5, "after": 1}),
            json!({"pattern": "h.t", "output_mode": "content", "after": 4, "head_limit": 5}),
            json!({"pattern": "hit", "output_mode": "count"}),
            json!({"pattern": "end$"}),
        ];
        for args in cases {
            let whole = grep_in_blocks(&dir, args.clone(), 1 << 20);
            for block in [16, 23, 40, 97] {
                assert_eq!(
                    grep_in_blocks(&dir, args.clone(), block),
                    whole,
                    "{args} in blocks of {block}"
                );
            }
        }
        let context = grep_in_blocks(
            &dir,
            json!({"pattern": "hit 7$", "output_mode": "content", "context": 1}),
            16,
        );
        assert_eq!(context, "f.txt-6-line 6\nf.txt:7:hit 7\nf.txt-8-line 8\n");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_line_longer_than_a_block_is_searched_in_its_first_block() {
        let dir = std::env::temp_dir().join(format!("reasonix-grep-long-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let long = format!("{}needle{}", "a".repeat(10), "b".repeat(100));
        fs::write(
            dir.join("f.txt"),
            format!("{long}\nneedle too\n{}needle\n", "c".repeat(70)),
        )
        .unwrap();
        let out = grep_in_blocks(
            &dir,
            json!({"pattern": "needle", "output_mode": "content"}),
            64,
        );
        // Line 3 has its needle past the first 64 bytes, which is all a 64-byte block sees.
        assert_eq!(
            out,
            format!("f.txt:1:{}\nf.txt:2:needle too\n", &long[..64])
        );
        let multiline = grep_in_blocks(&dir, json!({"pattern": "too\\n", "multiline": true}), 64);
        assert!(
            multiline.starts_with("No matches") && multiline.contains("searched only the first"),
            "{multiline}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
