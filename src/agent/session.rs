//! Sessions as append-only JSONL: a header line, then one message per line, exactly the bytes
//! the provider was sent. Lines are written as messages arrive and fsynced at every turn
//! boundary, so a killed run loses nothing it had received and a resumed run replays the same
//! prefix byte for byte.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::provider::{Message, Role};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always "session"; tells the header apart from message lines.
    #[serde(rename = "type")]
    pub kind: String,
    pub schema: u32,
    pub id: String,
    pub provider: String,
    pub model: String,
    pub cwd: String,
    pub started_at: String,
}

impl Header {
    pub fn new(id: String, provider: &str, model: &str, cwd: &Path) -> Header {
        Header {
            kind: "session".into(),
            schema: SCHEMA_VERSION,
            id,
            provider: provider.into(),
            model: model.into(),
            cwd: cwd.display().to_string(),
            started_at: crate::clock::rfc3339(SystemTime::now()),
        }
    }
}

#[derive(Debug)]
pub enum SessionError {
    Io {
        path: PathBuf,
        source: io::Error,
    },
    Corrupt {
        path: PathBuf,
        line: usize,
        detail: String,
    },
    NotFound(String),
    Ambiguous {
        reference: String,
        matches: Vec<String>,
    },
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Io { path, source } => {
                write!(f, "session: {}: {source}", path.display())
            }
            SessionError::Corrupt { path, line, detail } => {
                write!(f, "session: {}:{line}: {detail}", path.display())
            }
            SessionError::NotFound(what) => write!(f, "session: {what}"),
            SessionError::Ambiguous { reference, matches } => write!(
                f,
                "session: `{reference}` matches {} sessions ({}); give more of the id",
                matches.len(),
                matches.join(", ")
            ),
        }
    }
}

impl std::error::Error for SessionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SessionError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SessionError + '_ {
    move |source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub struct Session {
    pub header: Header,
    messages: Vec<Message>,
    path: PathBuf,
    file: File,
    /// Whether the directory entry of a new session file has been made durable.
    dir_synced: bool,
}

impl Session {
    /// Creates `<dir>/<id>.jsonl` and writes the header.
    pub fn create(dir: &Path, header: Header) -> Result<Session, SessionError> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let path = dir.join(format!("{}.jsonl", header.id));
        let mut file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(io_err(&path))?;
        let mut line = serde_json::to_string(&header).unwrap_or_default();
        line.push('\n');
        file.write_all(line.as_bytes()).map_err(io_err(&path))?;
        // Durability waits for the first turn boundary (see `sync`): an fsync here would sit
        // between start-up and the first request.
        Ok(Session {
            header,
            messages: Vec::new(),
            path,
            file,
            dir_synced: false,
        })
    }

    /// Loads a session for resuming. A torn last line (a crash mid-write) is dropped, and tool
    /// calls left without results by a hard kill get a synthetic result, so the history sent
    /// next is always valid.
    pub fn open(path: &Path) -> Result<Session, SessionError> {
        let (header, messages, valid_len) = read(path)?;
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(io_err(path))?;
        if file.metadata().map_err(io_err(path))?.len() != valid_len {
            file.set_len(valid_len).map_err(io_err(path))?;
        }
        let mut session = Session {
            header,
            messages: Vec::new(),
            path: path.to_path_buf(),
            file,
            dir_synced: true,
        };
        session.messages = messages;
        session.repair_unpaired_calls()?;
        Ok(session)
    }

    pub fn id(&self) -> &str {
        &self.header.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Appends a message in memory and on disk (not yet fsynced; see [`Session::sync`]).
    pub fn push(&mut self, message: Message) -> Result<(), SessionError> {
        let mut line = serde_json::to_string(&message).unwrap_or_default();
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .map_err(io_err(&self.path))?;
        self.messages.push(message);
        Ok(())
    }

    /// Makes everything pushed so far durable: called at each turn boundary.
    pub fn sync(&mut self) -> Result<(), SessionError> {
        self.file.sync_data().map_err(io_err(&self.path))?;
        if !self.dir_synced {
            if let Some(dir) = self.path.parent() {
                crate::fsutil::sync_dir(dir).map_err(io_err(dir))?;
            }
            self.dir_synced = true;
        }
        Ok(())
    }

    /// Replaces the whole message list (context compaction). The file is swapped atomically,
    /// so a crash leaves either the old history or the new one; callers archive what they
    /// drop before calling this.
    pub fn rewrite(&mut self, messages: Vec<Message>) -> Result<(), SessionError> {
        let mut text = serde_json::to_string(&self.header).unwrap_or_default();
        text.push('\n');
        for message in &messages {
            text.push_str(&serde_json::to_string(message).unwrap_or_default());
            text.push('\n');
        }
        crate::fsutil::write_atomic(&self.path, text.as_bytes(), None)
            .map_err(io_err(&self.path))?;
        // The old handle points at the replaced inode; appends must go to the new file.
        self.file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(io_err(&self.path))?;
        self.messages = messages;
        Ok(())
    }

    fn repair_unpaired_calls(&mut self) -> Result<(), SessionError> {
        let missing = unanswered_calls(&self.messages);
        if missing.is_empty() {
            return Ok(());
        }
        for id in missing {
            self.push(Message::tool_result(
                id,
                "error: no result was recorded for this call (the previous run was interrupted)",
            ))?;
        }
        self.sync()
    }
}

/// Ids of tool calls in the trailing assistant message that have no result after it.
pub fn unanswered_calls(messages: &[Message]) -> Vec<String> {
    let Some(last_call) = messages
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    else {
        return Vec::new();
    };
    let answered: Vec<&str> = messages[last_call + 1..]
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    messages[last_call]
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(&c.id.as_str()))
        .map(|c| c.id.clone())
        .collect()
}

/// Reads header and messages; returns the byte length of the well-formed prefix.
fn read(path: &Path) -> Result<(Header, Vec<Message>, u64), SessionError> {
    let file = File::open(path).map_err(io_err(path))?;
    let mut reader = BufReader::new(file);
    let mut header: Option<Header> = None;
    let mut messages = Vec::new();
    let mut valid_len = 0u64;
    let mut line = String::new();
    let mut number = 0;
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        number += 1;
        // A final line without its newline was torn by a crash mid-write; what precedes it
        // is intact, so resume from there.
        if !line.ends_with('\n') {
            break;
        }
        let text = line.trim_end();
        let parsed = if header.is_none() {
            serde_json::from_str::<Header>(text).map(|h| header = Some(h))
        } else {
            serde_json::from_str::<Message>(text).map(|m| messages.push(m))
        };
        if let Err(err) = parsed {
            return Err(SessionError::Corrupt {
                path: path.to_path_buf(),
                line: number,
                detail: err.to_string(),
            });
        }
        valid_len += n as u64;
    }
    let header = header.ok_or_else(|| SessionError::Corrupt {
        path: path.to_path_buf(),
        line: 1,
        detail: "missing session header".into(),
    })?;
    Ok((header, messages, valid_len))
}

/// A new session id: a sortable UTC stamp plus random bits, e.g. `20261202T152037-9f3a1c`.
pub fn new_id() -> String {
    let mut bytes = [0u8; 3];
    let random = File::open("/dev/urandom")
        .and_then(|mut f| io::Read::read_exact(&mut f, &mut bytes))
        .is_ok();
    if !random {
        let nanos = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
            ^ std::process::id();
        bytes.copy_from_slice(&nanos.to_le_bytes()[..3]);
    }
    format!(
        "{}-{:02x}{:02x}{:02x}",
        crate::clock::compact_stamp(SystemTime::now()),
        bytes[0],
        bytes[1],
        bytes[2]
    )
}

fn session_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect()
}

/// The most recently written session in `dir` (this workspace's sessions).
pub fn latest(dir: &Path) -> Option<PathBuf> {
    session_files(dir)
        .into_iter()
        .filter_map(|p| Some((fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p)
}

/// Resolves `--resume ID|PATH|unique-prefix`. Ids are looked up in this workspace's
/// directory first, then in every project under `projects_root`.
pub fn find(
    reference: &str,
    project_dir: &Path,
    projects_root: &Path,
) -> Result<PathBuf, SessionError> {
    let as_path = Path::new(reference);
    if reference.contains('/') || reference.ends_with(".jsonl") {
        return if as_path.is_file() {
            Ok(as_path.to_path_buf())
        } else {
            Err(SessionError::NotFound(format!(
                "no session file at {reference}"
            )))
        };
    }
    let matching = |dir: &Path| -> Vec<PathBuf> {
        session_files(dir)
            .into_iter()
            .filter(|p| {
                p.file_stem()
                    .is_some_and(|s| s.to_string_lossy().starts_with(reference))
            })
            .collect()
    };
    let mut found = matching(project_dir);
    if found.is_empty() {
        if let Ok(projects) = fs::read_dir(projects_root) {
            for project in projects.filter_map(|e| e.ok()) {
                found.extend(matching(&project.path().join("sessions")));
            }
        }
    }
    if let Some(exact) = found
        .iter()
        .find(|p| p.file_stem().is_some_and(|s| s == reference))
    {
        return Ok(exact.clone());
    }
    found.sort();
    found.dedup();
    match found.len() {
        0 => Err(SessionError::NotFound(format!(
            "no session matches `{reference}`; `reasonix run --continue` resumes the newest one here"
        ))),
        1 => Ok(found.remove(0)),
        _ => Err(SessionError::Ambiguous {
            reference: reference.to_string(),
            matches: found
                .iter()
                .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("reasonix-session-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn header(id: &str) -> Header {
        Header::new(id.into(), "fake", "m", Path::new("/w"))
    }

    #[test]
    fn round_trips_messages_byte_for_byte() {
        let dir = scratch("roundtrip");
        let mut s = Session::create(&dir, header("a1")).unwrap();
        let mut call = Message::assistant("");
        call.tool_calls = vec![ToolCall::new("c1", "ls", "{\"path\":\".\"}")];
        call.reasoning_content = Some("think".into());
        let msgs = vec![
            Message::system("sys"),
            Message::user("hi ✓"),
            call,
            Message::tool_result("c1", "out"),
        ];
        for m in &msgs {
            s.push(m.clone()).unwrap();
        }
        s.sync().unwrap();
        let path = s.path().to_path_buf();
        drop(s);
        let reopened = Session::open(&path).unwrap();
        assert_eq!(reopened.messages(), &msgs[..]);
        assert_eq!(reopened.header.id, "a1");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn torn_last_line_is_dropped_and_unanswered_calls_get_results() {
        let dir = scratch("torn");
        let mut s = Session::create(&dir, header("b2")).unwrap();
        s.push(Message::user("go")).unwrap();
        let mut call = Message::assistant("");
        call.tool_calls = vec![
            ToolCall::new("c1", "bash", "{}"),
            ToolCall::new("c2", "ls", "{}"),
        ];
        s.push(call).unwrap();
        s.push(Message::tool_result("c1", "done")).unwrap();
        let path = s.path().to_path_buf();
        drop(s);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"role\":\"tool\",\"content\":\"half")
            .unwrap();
        drop(f);
        let reopened = Session::open(&path).unwrap();
        let last = reopened.messages().last().unwrap();
        assert_eq!(last.tool_call_id.as_deref(), Some("c2"));
        assert!(last.content.contains("interrupted"));
        assert!(unanswered_calls(reopened.messages()).is_empty());
        // The repaired file parses cleanly again.
        drop(reopened);
        assert_eq!(Session::open(&path).unwrap().messages().len(), 4);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn rewrite_replaces_the_file_and_later_pushes_append_to_it() {
        let dir = scratch("rewrite");
        let mut s = Session::create(&dir, header("r1")).unwrap();
        for text in ["one", "two", "three"] {
            s.push(Message::user(text)).unwrap();
        }
        s.rewrite(vec![Message::system("sys"), Message::user("three")])
            .unwrap();
        s.push(Message::assistant("four")).unwrap();
        s.sync().unwrap();
        let path = s.path().to_path_buf();
        drop(s);
        let reopened = Session::open(&path).unwrap();
        let contents: Vec<&str> = reopened
            .messages()
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(contents, vec!["sys", "three", "four"]);
        assert_eq!(reopened.header.id, "r1");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn find_resolves_prefixes_and_reports_ambiguity() {
        let root = scratch("find");
        let here = root.join("proj-a").join("sessions");
        let other = root.join("proj-b").join("sessions");
        Session::create(&here, header("20261201T000000-aaaaaa")).unwrap();
        Session::create(&here, header("20261201T000000-aaaabb")).unwrap();
        Session::create(&other, header("20261130T000000-cccccc")).unwrap();
        assert!(find("20261201T000000-aaaaaa", &here, &root)
            .unwrap()
            .ends_with("20261201T000000-aaaaaa.jsonl"));
        assert!(find("20261130", &here, &root)
            .unwrap()
            .ends_with("20261130T000000-cccccc.jsonl"));
        let err = find("20261201", &here, &root).unwrap_err().to_string();
        assert!(err.contains("matches 2 sessions"), "{err}");
        assert!(find("zzz", &here, &root)
            .unwrap_err()
            .to_string()
            .contains("no session matches `zzz`"));
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn ids_are_unique_and_sortable() {
        let a = new_id();
        let b = new_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), "20261202T152037-9f3a1c".len());
    }
}
