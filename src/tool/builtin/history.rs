//! `history`: read-only BM25 retrieval over saved session files and compaction archives, so
//! the model can find what was said or produced earlier (in this session before a fold, or in
//! other sessions) and read a bounded window around a hit.
//!
//! Each file's index is built on first use and cached in the process, keyed by path and
//! checked against the file's modification time and length, so a search over many sessions
//! re-reads only what changed. Where the files live is given by [`StatePaths`].

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

use serde_json::{json, Value};

use crate::provider::{Message, Role};
use crate::tool::args::{optional_str, optional_u64, required_str};
use crate::tool::bm25::{self, Index};
use crate::tool::{Family, Subjects, Tool, ToolContext, ToolError};

const DEFAULT_LIMIT: u64 = 8;
const MAX_LIMIT: u64 = 30;
const DEFAULT_RADIUS: u64 = 3;
const MAX_RADIUS: u64 = 10;
/// Bytes of one message shown by `around`.
const AROUND_MESSAGE_BYTES: usize = 1_500;
/// Bytes of a search hit's snippet before and after the matched term.
const SNIPPET_BEFORE: usize = 80;
const SNIPPET_AFTER: usize = 200;
/// Labels of archive files start with this, e.g. `archive/20261202T152037`.
const ARCHIVE_PREFIX: &str = "archive/";

/// Where reasonix keeps state the history and memory tools read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatePaths {
    /// This workspace's sessions (`<state>/projects/<slug>/sessions`).
    pub project_sessions: PathBuf,
    /// The root of every project's state (`<state>/projects`).
    pub projects: PathBuf,
    /// Compaction archives (`<state>/archive`).
    pub archive: PathBuf,
    /// Saved memory (`<state>/memory`).
    pub memory: PathBuf,
}

impl StatePaths {
    pub fn new(state_dir: &Path, project_sessions: PathBuf) -> StatePaths {
        StatePaths {
            project_sessions,
            projects: state_dir.join("projects"),
            archive: state_dir.join("archive"),
            memory: state_dir.join("memory"),
        }
    }
}

/// The state paths of a run, or the error the model sees when there are none.
pub fn state_paths(ctx: &ToolContext) -> Result<&StatePaths, ToolError> {
    ctx.state.as_deref().ok_or_else(|| {
        ToolError::Failed("no state directory is configured for this run, so there are no saved sessions or memory to read".into())
    })
}

pub struct History;

impl Tool for History {
    fn name(&self) -> &str {
        "history"
    }

    fn description(&self) -> &str {
        "Search saved conversation history with BM25 ranking. `operation: \"search\"` finds \
         messages matching `query` (user turns, answers, tool calls and tool output) and returns \
         ranked hits with the session, the message index and a snippet; weak trailing hits are \
         dropped. `scope: \"project\"` (default) searches this workspace's sessions, \
         `\"global\"` every project and the compaction archive, where tool output snipped or \
         folded out of the current context is kept. `operation: \"around\"` reads the messages \
         around a hit (`session` and `index` from a search). Use it to recover exact wording or \
         output that is no longer in context."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "operation": {
                    "type": "string",
                    "enum": ["search", "around"],
                    "description": "`search` (default) or `around`."
                },
                "query": {
                    "type": "string",
                    "description": "For search: words to look for; rare, specific terms (identifiers, file names, error text) rank best."
                },
                "scope": {
                    "type": "string",
                    "enum": ["project", "global"],
                    "description": "For search: `project` (default) or `global`."
                },
                "limit": {
                    "type": "integer",
                    "description": "For search: most hits to return, 1-30. Default: 8."
                },
                "session": {
                    "type": "string",
                    "description": "For around: the session (or `archive/...`) of a search hit."
                },
                "index": {
                    "type": "integer",
                    "description": "For around: the message index of a search hit."
                },
                "radius": {
                    "type": "integer",
                    "description": "For around: messages to show on each side, 0-10. Default: 3."
                }
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
        let paths = state_paths(ctx)?;
        match optional_str(args, "operation")?.unwrap_or("search") {
            "search" => search(args, paths),
            "around" => around(args, paths),
            other => Err(ToolError::InvalidArgs(format!(
                "unknown operation `{other}`; use \"search\" or \"around\""
            ))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Project,
    Global,
}

fn search(args: &Value, paths: &StatePaths) -> Result<String, ToolError> {
    let query = required_str(args, "query")?;
    let scope = match optional_str(args, "scope")?.unwrap_or("project") {
        "project" => Scope::Project,
        "global" => Scope::Global,
        other => {
            return Err(ToolError::InvalidArgs(format!(
                "unknown scope `{other}`; use \"project\" or \"global\""
            )))
        }
    };
    let limit = optional_u64(args, "limit")?
        .unwrap_or(DEFAULT_LIMIT)
        .clamp(1, MAX_LIMIT) as usize;
    if bm25::terms(query).is_empty() {
        return Err(ToolError::InvalidArgs(
            "the query has no searchable words; give identifiers, file names or other specific terms".into(),
        ));
    }
    let files: Vec<Arc<FileIndex>> = sources(paths, scope)
        .iter()
        .filter_map(|path| load(path))
        .collect();
    let indexes: Vec<&Index> = files.iter().map(|f| &f.index).collect();
    let hits = bm25::search(&indexes, query, limit);
    if hits.is_empty() {
        return Ok(no_hits(query, scope, files.len()));
    }
    let terms = bm25::terms(query);
    let mut out = format!(
        "{} for {query:?} ({} scope, searched {}):\n",
        plural(hits.len(), "hit"),
        scope_name(scope),
        plural(files.len(), "file")
    );
    for (rank, hit) in hits.iter().enumerate() {
        let file = &files[hit.source];
        let entry = &file.entries[hit.doc as usize];
        let mut origin = String::new();
        if let Some(session) = entry.session.as_deref().filter(|_| file.is_archive()) {
            origin = format!(", from session {session}");
        }
        out.push_str(&format!(
            "{}. session {} index {} ({}{origin}), score {:.2}\n   {}\n",
            rank + 1,
            file.label,
            entry.position,
            entry.role_label(),
            hit.score,
            snippet(&entry.text, &terms)
        ));
    }
    out.push_str(
        "Read a hit in context with {\"operation\": \"around\", \"session\": ..., \"index\": ...}.",
    );
    Ok(out)
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Project => "project",
        Scope::Global => "global",
    }
}

fn no_hits(query: &str, scope: Scope, files: usize) -> String {
    let widen = match scope {
        Scope::Project => {
            ", or widen the search with scope \"global\" (every project and the compaction archive)"
        }
        Scope::Global => "",
    };
    format!(
        "No matches for {query:?} in {} ({} scope). Retry with rarer, more specific terms (identifiers, file names, exact error text) and fewer common words{widen}.",
        plural(files, "saved file"),
        scope_name(scope)
    )
}

/// The files a scope covers: this project's sessions, or every project's and the archive.
fn sources(paths: &StatePaths, scope: Scope) -> Vec<PathBuf> {
    let mut files = match scope {
        Scope::Project => jsonl_files(&paths.project_sessions),
        Scope::Global => {
            let mut files = Vec::new();
            for project in read_dir_paths(&paths.projects) {
                files.extend(jsonl_files(&project.join("sessions")));
            }
            files.extend(jsonl_files(&paths.archive));
            files
        }
    };
    files.sort();
    files.dedup();
    files
}

fn read_dir_paths(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    read_dir_paths(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect()
}

/// One searchable message.
#[derive(Debug)]
struct Entry {
    /// Index of the message among the file's message lines (0 is a session's system prompt).
    position: usize,
    role: Role,
    /// For tool results: the tool that produced them.
    tool: Option<String>,
    /// The session it belongs to (archives hold several).
    session: Option<String>,
    text: String,
}

impl Entry {
    fn role_label(&self) -> String {
        match (&self.role, &self.tool) {
            (Role::Tool, Some(tool)) => format!("tool `{tool}`"),
            (Role::Tool, None) => "tool".into(),
            (Role::User, _) => "user".into(),
            (Role::Assistant, _) => "assistant".into(),
            (Role::System, _) => "system".into(),
        }
    }
}

/// One file's messages and their index.
#[derive(Debug)]
struct FileIndex {
    /// The session id, or `archive/<stem>` for an archive.
    label: String,
    entries: Vec<Entry>,
    /// Messages beyond the indexed entries (system prompts), for `around` bounds.
    messages: usize,
    index: Index,
}

impl FileIndex {
    fn is_archive(&self) -> bool {
        self.label.starts_with(ARCHIVE_PREFIX)
    }
}

struct Cached {
    stamp: (SystemTime, u64),
    index: Arc<FileIndex>,
}

fn cache() -> &'static Mutex<HashMap<PathBuf, Cached>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Cached>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The file's index, from the cache when the file has not changed since it was built.
fn load(path: &Path) -> Option<Arc<FileIndex>> {
    let meta = fs::metadata(path).ok()?;
    let stamp = (meta.modified().ok()?, meta.len());
    if let Some(cached) = cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(path)
        .filter(|c| c.stamp == stamp)
    {
        return Some(Arc::clone(&cached.index));
    }
    let text = fs::read_to_string(path).ok()?;
    let index = Arc::new(build(path, &text));
    cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(
            path.to_path_buf(),
            Cached {
                stamp,
                index: Arc::clone(&index),
            },
        );
    Some(index)
}

/// Indexes a session file (header, then messages) or an archive (header lines naming the
/// session before each batch of messages). Unreadable lines are skipped. A `/rewind` marker
/// (`{"type":"rewind","to":N}`) drops what came after the first N messages, as the session
/// itself does, so a search never brings back a turn the user took back.
fn build(path: &Path, text: &str) -> FileIndex {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let in_archive = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d == "archive");
    let mut label = if in_archive {
        format!("{ARCHIVE_PREFIX}{stem}")
    } else {
        stem
    };
    let mut session: Option<String> = None;
    let mut entries: Vec<Entry> = Vec::new();
    let mut tools: HashMap<String, String> = HashMap::new();
    let mut position = 0;
    for line in text.lines() {
        let Ok(message) = serde_json::from_str::<Message>(line) else {
            if let Ok(header) = serde_json::from_str::<Value>(line) {
                if header.get("type").and_then(Value::as_str) == Some("rewind") {
                    if let Some(kept) = header.get("to").and_then(Value::as_u64) {
                        let kept = kept as usize;
                        entries.retain(|e| e.position < kept);
                        position = position.min(kept);
                    }
                    continue;
                }
                let id = header.get("session_id").or_else(|| header.get("id"));
                session = id.and_then(Value::as_str).map(str::to_string);
                if !in_archive {
                    label = session.clone().unwrap_or(label);
                }
            }
            continue;
        };
        for call in &message.tool_calls {
            tools.insert(call.id.clone(), call.name().to_string());
        }
        if message.role != Role::System {
            let text = searchable_text(&message);
            entries.push(Entry {
                position,
                role: message.role,
                tool: message
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| tools.get(id).cloned()),
                session: session.clone(),
                text,
            });
        }
        position += 1;
    }
    let mut index = Index::new();
    for entry in &entries {
        index.add(&entry.text);
    }
    FileIndex {
        label,
        entries,
        messages: position,
        index,
    }
}

fn searchable_text(message: &Message) -> String {
    let mut text = message.content.clone();
    for call in &message.tool_calls {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("{} {}", call.name(), call.arguments()));
    }
    text
}

/// Whitespace-collapsed text around the first query term found, on char boundaries.
fn snippet(text: &str, terms: &[String]) -> String {
    let lower = text.to_ascii_lowercase();
    let at = terms
        .iter()
        .filter_map(|t| lower.find(t.as_str()))
        .min()
        .unwrap_or(0);
    let mut start = at.saturating_sub(SNIPPET_BEFORE);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + SNIPPET_AFTER).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    let body = text[start..end]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let lead = if start > 0 { "…" } else { "" };
    let trail = if end < text.len() { "…" } else { "" };
    format!("{lead}{body}{trail}")
}

fn around(args: &Value, paths: &StatePaths) -> Result<String, ToolError> {
    let session = required_str(args, "session")?;
    let index = optional_u64(args, "index")?.ok_or_else(|| {
        ToolError::InvalidArgs(
            "`index` is required for around: the message index of a search hit".into(),
        )
    })? as usize;
    let radius = optional_u64(args, "radius")?
        .unwrap_or(DEFAULT_RADIUS)
        .min(MAX_RADIUS) as usize;
    let path = locate(session, paths)?;
    let file =
        load(&path).ok_or_else(|| ToolError::Failed(format!("cannot read {}", path.display())))?;
    if index >= file.messages {
        return Err(ToolError::InvalidArgs(format!(
            "index {index} is past the end of {session}, which has {} messages",
            file.messages
        )));
    }
    let (first, last) = (index.saturating_sub(radius), index + radius);
    let mut out = format!(
        "{} messages {first}-{} of {}:\n",
        file.label,
        last.min(file.messages - 1),
        file.messages
    );
    for entry in file
        .entries
        .iter()
        .filter(|e| (first..=last).contains(&e.position))
    {
        let mark = if entry.position == index {
            " <- hit"
        } else {
            ""
        };
        out.push_str(&format!(
            "[{} {}{mark}] {}\n",
            entry.position,
            entry.role_label(),
            clip(&entry.text, AROUND_MESSAGE_BYTES)
        ));
    }
    Ok(out)
}

/// The file of a session id (this project first, then any project) or an archive label.
fn locate(session: &str, paths: &StatePaths) -> Result<PathBuf, ToolError> {
    let (dirs, name) = match session.strip_prefix(ARCHIVE_PREFIX) {
        Some(stem) => (vec![paths.archive.clone()], stem),
        None => {
            let mut dirs = vec![paths.project_sessions.clone()];
            dirs.extend(
                read_dir_paths(&paths.projects)
                    .into_iter()
                    .map(|p| p.join("sessions")),
            );
            (dirs, session)
        }
    };
    let safe = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.');
    if safe {
        let file = format!("{name}.jsonl");
        if let Some(found) = dirs.iter().map(|d| d.join(&file)).find(|p| p.is_file()) {
            return Ok(found);
        }
    }
    Err(ToolError::InvalidArgs(format!(
        "no saved session `{session}`; pass the session exactly as a search hit shows it"
    )))
}

fn clip(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} [... {} more bytes]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewind_marker_drops_the_turns_taken_back() {
        let lines = [
            r#"{"session_id":"s1","created":"x"}"#,
            r#"{"role":"system","content":"sys"}"#,
            r#"{"role":"user","content":"first zebra question"}"#,
            r#"{"role":"assistant","content":"first answer"}"#,
            r#"{"role":"user","content":"second giraffe question"}"#,
            r#"{"role":"assistant","content":"second answer"}"#,
            r#"{"type":"rewind","to":3,"at":"now"}"#,
            r#"{"role":"user","content":"third okapi question"}"#,
        ];
        let file = build(Path::new("/s/s1.jsonl"), &lines.join("\n"));
        let texts: Vec<&str> = file.entries.iter().map(|e| e.text.as_str()).collect();
        assert!(texts.iter().any(|t| t.contains("zebra")), "{texts:?}");
        assert!(texts.iter().any(|t| t.contains("okapi")), "{texts:?}");
        assert!(!texts.iter().any(|t| t.contains("giraffe")), "{texts:?}");
        let positions: Vec<usize> = file.entries.iter().map(|e| e.position).collect();
        assert_eq!(positions, [1, 2, 3]);
        assert_eq!(file.messages, 4);
    }

    #[test]
    fn snippets_centre_on_the_first_term() {
        let text = format!(
            "{} the needle is here {}",
            "x ".repeat(100),
            "y ".repeat(200)
        );
        let s = snippet(&text, &["needle".to_string()]);
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("the needle is here"), "{s}");
        assert_eq!(snippet("short", &["zzz".to_string()]), "short");
    }

    #[test]
    fn locate_rejects_path_tricks() {
        let paths = StatePaths::new(Path::new("/nonexistent"), PathBuf::from("/nonexistent/s"));
        for bad in ["../etc/passwd", "archive/../x", "", ".hidden", "a/b"] {
            assert!(locate(bad, &paths).is_err(), "{bad}");
        }
    }
}
