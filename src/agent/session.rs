//! Sessions as append-only JSONL: a header line, then one message per line, exactly the bytes
//! the provider was sent. Lines are written as messages arrive and fsynced at every turn
//! boundary, so a killed run loses nothing it had received and a resumed run replays the same
//! prefix byte for byte.
//!
//! One process at a time owns a session: it holds an exclusive `flock` on the file for as
//! long as the session is open, and the kernel drops the lock when the process exits, however
//! it exits. Loading a session checks the whole history (every tool call answered right after
//! it, no result without its call, no two assistant messages in a row, no prompt left without
//! a reply) and repairs what a crash or an older version left behind before anything is sent;
//! what the repair did is kept for the front end to report. Files are 0600 in 0700 directories.
//!
//! Rewinding (`/rewind`) never rewrites the file: it appends a marker line
//! `{"type":"rewind","to":N,"at":...}` that keeps the first N messages, and every reader applies
//! the markers in order, so later messages follow the marker and the file stays a log of what
//! happened. A torn marker line is dropped like any torn line: the rewind did not happen.
//! A compaction's rewrite writes the applied history, so markers before it disappear with the
//! messages they cut.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::compaction::is_digest;
use super::round_caps;
use super::tokens::Estimates;
use crate::provider::{Message, Role, Transcript};

pub const SCHEMA_VERSION: u32 = 1;

/// The schema of a session bound to an agent composition: readers that do not know it
/// refuse the file instead of continuing it with another tool set.
pub const BOUND_SCHEMA_VERSION: u32 = 2;

/// The `type` of a rewind marker line.
const REWIND: &str = "rewind";

/// A line that truncates the history read so far to its first `to` messages.
#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    #[serde(rename = "type")]
    kind: String,
    to: usize,
    at: String,
}

/// Session files hold prompts, file contents and command output: for the owner only.
const FILE_MODE: u32 = 0o600;

/// The result given to a tool call whose result was never recorded.
pub const INTERRUPTED_RESULT: &str =
    "error: no result was recorded for this call (the previous run was interrupted)";

/// The reply put after a prompt that never got one, so the model knows it went unanswered
/// instead of reading it run together with the next prompt.
pub const NO_REPLY_NOTE: &str =
    "[no reply: the run that received this message was interrupted or failed before the model answered]";

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
    /// The session this one was copied from (`--fork-session`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
    /// Two-model collaboration: the planner session that plans for this executor session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<String>,
    /// Two-model collaboration: the executor session this planner session plans for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<String>,
    /// The agent composition this conversation is bound to: local metadata, never sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composition: Option<crate::composition::resolve::Binding>,
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
            forked_from: None,
            planner: None,
            executor: None,
            composition: None,
        }
    }

    /// Binds the session to a composition, which takes the bound schema.
    pub fn bind(&mut self, binding: crate::composition::resolve::Binding) {
        self.composition = Some(binding);
        self.schema = BOUND_SCHEMA_VERSION;
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
    /// Another process holds the session's lock.
    Locked {
        id: String,
    },
    /// A rewind to more messages than the history has.
    RewindPast {
        to: usize,
        len: usize,
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
            SessionError::Locked { id } => write!(
                f,
                "session: {id} is in use by another reasonix process; wait for it to finish, \
                 or add `--fork-session` to continue a copy under a new id"
            ),
            SessionError::RewindPast { to, len } => write!(
                f,
                "session: cannot rewind to {to} messages, the history has {len}"
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
    /// The messages with their request JSON, encoded once as they arrive.
    messages: Transcript,
    /// Their token estimates, kept in step so measuring never re-reads old messages.
    estimates: Estimates,
    path: PathBuf,
    /// Open for appending, and holding the session's exclusive lock.
    file: File,
    /// Whether the directory entry of a new session file has been made durable.
    dir_synced: bool,
    /// What loading had to repair, one phrase each; empty for a sound history.
    repairs: Vec<String>,
    /// How many user turns the history holds (see [`is_turn`]), kept in step with it.
    turns: usize,
    /// The decoded bytes of the history's images, kept in step with it (every request
    /// carries them all; `view_image` refuses what would pass the request's cap).
    image_bytes: u64,
}

impl Session {
    /// Creates `<dir>/<id>.jsonl` (0600, in directories created 0700) and writes the header.
    pub fn create(dir: &Path, header: Header) -> Result<Session, SessionError> {
        crate::fsutil::create_private_dir(dir).map_err(io_err(dir))?;
        let path = dir.join(format!("{}.jsonl", header.id));
        let mut file = crate::platform::create_mode(
            OpenOptions::new().create_new(true).append(true),
            FILE_MODE,
        )
        .open(&path)
        .map_err(io_err(&path))?;
        lock(&file, &path, &header.id)?;
        let mut line = serde_json::to_string(&header).unwrap_or_default();
        line.push('\n');
        file.write_all(line.as_bytes()).map_err(io_err(&path))?;
        // Durability waits for the first turn boundary (see `sync`): an fsync here would sit
        // between start-up and the first request.
        Ok(Session {
            header,
            messages: Transcript::new(),
            estimates: Estimates::default(),
            path,
            file,
            dir_synced: false,
            repairs: Vec::new(),
            turns: 0,
            image_bytes: 0,
        })
    }

    /// Loads a session for resuming and locks it; fails at once with
    /// [`SessionError::Locked`] when another process has it. A torn last line (a crash
    /// mid-write) is dropped and the history is repaired (see [`repair`]) and written back,
    /// so the history sent next is always valid.
    pub fn open(path: &Path) -> Result<Session, SessionError> {
        let file = open_locked(path)?;
        let (header, messages, valid_len) = read(&file, path)?;
        if file.metadata().map_err(io_err(path))?.len() != valid_len {
            file.set_len(valid_len).map_err(io_err(path))?;
        }
        let mut session = Session {
            header,
            turns: messages.iter().filter(|m| is_turn(m)).count(),
            image_bytes: image_bytes_of(&messages),
            estimates: Estimates::of(&messages),
            messages: messages.into(),
            path: path.to_path_buf(),
            file,
            dir_synced: true,
            repairs: Vec::new(),
        };
        session.repair()?;
        Ok(session)
    }

    /// Starts a new session in `dir` under `header` with a copy of the history at `source`,
    /// repaired like [`Session::open`] does. The source is read without its lock, so a run
    /// that is still writing it is left alone: the copy holds what was on disk, up to its
    /// last whole line.
    pub fn fork(source: &Path, dir: &Path, mut header: Header) -> Result<Session, SessionError> {
        let (original, messages) = load(source)?;
        header.forked_from = Some(original.id);
        // A copy keeps the exact binding rather than today's default.
        if let Some(binding) = original.composition {
            header.bind(binding);
        }
        let repaired = repair(&messages);
        let mut session = Session::create(dir, header)?;
        for message in repaired.messages {
            session.push(message)?;
        }
        session.repairs = repaired.notes;
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

    /// The history as requests carry it (a shared handle, not a copy).
    pub fn transcript(&self) -> &Transcript {
        &self.messages
    }

    /// How many user turns the history holds: the number of the turn in progress, from 1.
    /// Compaction keeps every user message, so a turn keeps its number until a rewind.
    pub fn turns(&self) -> usize {
        self.turns
    }

    /// The decoded bytes of the images the history carries (what every request repeats).
    pub fn image_bytes(&self) -> u64 {
        self.image_bytes
    }

    /// Per-message token estimates of [`Session::messages`].
    pub fn estimates(&self) -> &Estimates {
        &self.estimates
    }

    /// What loading repaired, as one sentence for the user; `None` when nothing was wrong.
    pub fn repair_notice(&self) -> Option<String> {
        (!self.repairs.is_empty()).then(|| {
            format!(
                "session {}: repaired the history before continuing: {}",
                self.header.id,
                self.repairs.join("; ")
            )
        })
    }

    /// Appends a message in memory and on disk (not yet fsynced; see [`Session::sync`]).
    pub fn push(&mut self, message: Message) -> Result<(), SessionError> {
        let mut line =
            serde_json::to_vec(&message).map_err(|e| io_err(&self.path)(io::Error::from(e)))?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(io_err(&self.path))?;
        self.estimates.push(&message);
        self.turns += usize::from(is_turn(&message));
        self.image_bytes = self
            .image_bytes
            .saturating_add(round_caps::image_bytes(&message));
        self.messages.push(message);
        Ok(())
    }

    /// Keeps the first `to` messages by appending a rewind marker (made durable before the
    /// history changes). The kept messages are the same values, so the transcript keeps
    /// their encoded bytes as they were and the next request repeats the old prefix exactly.
    pub fn rewind(&mut self, to: usize) -> Result<(), SessionError> {
        let len = self.messages.len();
        if to > len {
            return Err(SessionError::RewindPast { to, len });
        }
        let marker = Marker {
            kind: REWIND.into(),
            to,
            at: crate::clock::rfc3339(SystemTime::now()),
        };
        let mut line = serde_json::to_string(&marker).unwrap_or_default();
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .map_err(io_err(&self.path))?;
        self.sync()?;
        let kept = self.messages[..to].to_vec();
        self.estimates = Estimates::of(&kept);
        self.turns = kept.iter().filter(|m| is_turn(m)).count();
        self.image_bytes = image_bytes_of(&kept);
        self.messages.replace(kept);
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

    /// Records the MCP tool contracts of the conversation's binding once they are known (the
    /// interactive chat starts its servers after the header is written). The header is
    /// rewritten atomically with the history, so a later run compares against them.
    pub fn record_mcp_contracts(
        &mut self,
        contracts: std::collections::BTreeMap<String, String>,
    ) -> Result<(), SessionError> {
        let Some(binding) = self.header.composition.as_mut() else {
            return Ok(());
        };
        if binding.mcp_contracts == contracts {
            return Ok(());
        }
        binding.mcp_contracts = contracts;
        let messages = self.messages().to_vec();
        self.rewrite(messages)
    }

    /// Replaces the whole message list (context compaction, repair). The new file is written
    /// beside the old one, locked before it is renamed over it, so a crash leaves either the
    /// old history or the new one and no other process can take the session in between;
    /// callers archive what they drop before calling this.
    pub fn rewrite(&mut self, messages: Vec<Message>) -> Result<(), SessionError> {
        let mut text = serde_json::to_string(&self.header).unwrap_or_default();
        text.push('\n');
        let mut text = text.into_bytes();
        for message in &messages {
            serde_json::to_writer(&mut text, message)
                .map_err(|e| io_err(&self.path)(io::Error::from(e)))?;
            text.push(b'\n');
        }
        let dir = match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let temp = dir.join(format!(
            ".{}.jsonl.rewrite-{}",
            self.header.id,
            std::process::id()
        ));
        let written = (|| {
            let _ = fs::remove_file(&temp);
            let mut file = crate::platform::create_mode(
                OpenOptions::new().create_new(true).append(true),
                FILE_MODE,
            )
            .open(&temp)
            .map_err(io_err(&temp))?;
            lock(&file, &temp, &self.header.id)?;
            file.write_all(&text).map_err(io_err(&temp))?;
            file.sync_all().map_err(io_err(&temp))?;
            fs::rename(&temp, &self.path).map_err(io_err(&self.path))?;
            crate::fsutil::sync_dir(&dir).map_err(io_err(&dir))?;
            Ok(file)
        })();
        let file = written.inspect_err(|_| {
            let _ = fs::remove_file(&temp);
        })?;
        // The old handle (and its lock) belongs to the replaced inode; appends and the lock
        // now live with the new file.
        self.file = file;
        self.estimates = Estimates::of(&messages);
        self.turns = messages.iter().filter(|m| is_turn(m)).count();
        self.image_bytes = image_bytes_of(&messages);
        self.messages.replace(messages);
        Ok(())
    }

    /// Repairs the loaded history and writes the result back: appended when only something
    /// was added at the end (the file and the provider's prompt cache keep their prefix),
    /// rewritten otherwise.
    fn repair(&mut self) -> Result<(), SessionError> {
        if validate(&self.messages).is_empty() {
            return Ok(());
        }
        let repaired = repair(&self.messages);
        if repaired.notes.is_empty() {
            return Ok(());
        }
        let old = self.messages.len();
        if repaired.messages.len() >= old && repaired.messages[..old] == self.messages[..] {
            for message in repaired.messages[old..].iter().cloned() {
                self.push(message)?;
            }
            self.sync()?;
        } else {
            self.rewrite(repaired.messages)?;
        }
        self.repairs = repaired.notes;
        Ok(())
    }
}

/// The decoded bytes of the images `messages` carry.
fn image_bytes_of(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(round_caps::image_bytes)
        .fold(0, u64::saturating_add)
}

impl Drop for Session {
    /// Releases the lock now: a child forked by another thread shares our descriptor until it
    /// execs, and the lock would last until then if closing ours were all.
    fn drop(&mut self) {
        crate::sandbox::sys::unlock(&self.file);
    }
}

/// Takes the session's exclusive lock on `file`, without waiting.
fn lock(file: &File, path: &Path, id: &str) -> Result<(), SessionError> {
    match crate::sandbox::sys::try_lock_exclusive(file) {
        Ok(true) => Ok(()),
        Ok(false) => Err(SessionError::Locked { id: id.to_string() }),
        Err(source) => Err(SessionError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Opens `path` for appending and locks it. A run that compacts replaces the file by a
/// rename; if that happens between our open and our lock we would hold the lock of a file
/// nobody reads any more, so the lock only counts while the path still names the same file.
fn open_locked(path: &Path) -> Result<File, SessionError> {
    let id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    for _ in 0..3 {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(io_err(path))?;
        lock(&file, path, &id)?;
        let held = file.metadata().map_err(io_err(path))?;
        let named = fs::metadata(path).map_err(io_err(path))?;
        if crate::platform::file_id(&held) == crate::platform::file_id(&named) {
            return Ok(file);
        }
    }
    // Replaced three times in a row: some other process is busy with it.
    Err(SessionError::Locked { id })
}

/// Header and messages of a session file, without taking its lock or changing it (for
/// inspection and `--fork-session`). A torn last line is left out.
pub fn load(path: &Path) -> Result<(Header, Vec<Message>), SessionError> {
    let file = File::open(path).map_err(io_err(path))?;
    let (header, messages, _) = read(&file, path)?;
    Ok((header, messages))
}

/// A repaired history and what was done to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Repair {
    pub messages: Vec<Message>,
    /// One phrase per kind of repair; empty when the history was already valid.
    pub notes: Vec<String>,
}

/// Why `messages` cannot be sent as they are, one sentence each (messages numbered from 1);
/// empty for a valid history. Valid means: the results of an assistant message's tool calls
/// follow it directly, one per call; every tool result answers a call of the assistant
/// message before its block; no assistant message follows another; and the history does not
/// end on a user message, which the next prompt would follow unanswered. Consecutive user
/// messages are fine: compaction keeps the user's own turns side by side on purpose.
pub fn validate(messages: &[Message]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut open_calls: Vec<&str> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let n = i + 1;
        if message.role != Role::Tool && !open_calls.is_empty() {
            problems.push(format!(
                "message {n}: tool calls {} of the assistant message before have no result",
                open_calls.join(", ")
            ));
            open_calls.clear();
        }
        match message.role {
            Role::Tool => {
                let id = message.tool_call_id.as_deref().unwrap_or("");
                match open_calls.iter().position(|c| *c == id) {
                    Some(at) => {
                        open_calls.remove(at);
                    }
                    None => problems.push(format!(
                        "message {n}: tool result for `{id}` answers no call of the assistant message before it"
                    )),
                }
            }
            Role::Assistant => {
                if i > 0 && messages[i - 1].role == Role::Assistant {
                    problems.push(format!("message {n}: assistant message after another"));
                }
                open_calls = message.tool_calls.iter().map(|c| c.id.as_str()).collect();
            }
            Role::System | Role::User => {}
        }
    }
    if !open_calls.is_empty() {
        problems.push(format!(
            "end: tool calls {} have no result",
            open_calls.join(", ")
        ));
    }
    if messages.last().is_some_and(is_turn) {
        problems.push("end: the last user message got no reply".into());
    }
    problems
}

/// Makes `history` valid (see [`validate`]) while keeping everything it can, the same way
/// every time: a tool result found later in the history is moved back after its call, a call
/// with no result anywhere gets [`INTERRUPTED_RESULT`], results that answer no call are
/// dropped, an assistant message right after another is merged into it, and a final user
/// message without a reply gets [`NO_REPLY_NOTE`]. Results already in place keep their
/// order, so a valid history comes back unchanged.
pub fn repair(history: &[Message]) -> Repair {
    let mut out: Vec<Message> = Vec::with_capacity(history.len() + 1);
    let mut used = vec![false; history.len()];
    let (mut moved, mut interrupted, mut dropped, mut merged) = (0usize, 0usize, 0usize, 0usize);
    for (i, message) in history.iter().enumerate() {
        if used[i] {
            continue;
        }
        match message.role {
            Role::Tool => dropped += 1,
            Role::Assistant => {
                let mut message = message.clone();
                // An assistant message with calls is always followed by their results in
                // `out`, so one directly before this one has none and can absorb it.
                if out.last().is_some_and(|m| m.role == Role::Assistant) {
                    if let Some(previous) = out.pop() {
                        message = merge_assistant(previous, message);
                        merged += 1;
                    }
                }
                let mut pending: Vec<String> =
                    message.tool_calls.iter().map(|c| c.id.clone()).collect();
                out.push(message);
                let block_end = (i + 1..history.len())
                    .find(|&j| history[j].role != Role::Tool)
                    .unwrap_or(history.len());
                for j in i + 1..block_end {
                    if let Some(at) = answered(&pending, &history[j]) {
                        pending.remove(at);
                        used[j] = true;
                        out.push(history[j].clone());
                    }
                }
                for id in pending {
                    let later = (block_end..history.len()).find(|&j| {
                        !used[j]
                            && history[j].role == Role::Tool
                            && history[j].tool_call_id.as_deref() == Some(id.as_str())
                    });
                    match later {
                        Some(j) => {
                            used[j] = true;
                            moved += 1;
                            out.push(history[j].clone());
                        }
                        None => {
                            interrupted += 1;
                            out.push(Message::tool_result(id, INTERRUPTED_RESULT));
                        }
                    }
                }
            }
            Role::System | Role::User => out.push(message.clone()),
        }
    }
    let mut notes = Vec::new();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if moved > 0 {
        notes.push(format!(
            "moved {moved} tool result{} back after {} call",
            plural(moved),
            if moved == 1 { "its" } else { "their" }
        ));
    }
    if dropped > 0 {
        notes.push(format!(
            "dropped {dropped} tool result{} that {} no call",
            plural(dropped),
            if dropped == 1 { "answers" } else { "answer" }
        ));
    }
    if merged > 0 {
        notes.push(format!(
            "merged {merged} assistant message{} into the one before",
            plural(merged)
        ));
    }
    if interrupted > 0 {
        notes.push(format!(
            "gave {interrupted} tool call{} without a result an \"interrupted\" result",
            plural(interrupted)
        ));
    }
    if out.last().is_some_and(is_turn) {
        out.push(Message::assistant(NO_REPLY_NOTE));
        notes.push("noted that the last user message got no reply".into());
    }
    Repair {
        messages: out,
        notes,
    }
}

/// Which of the `pending` call ids `message` answers, if it is a tool result.
fn answered(pending: &[String], message: &Message) -> Option<usize> {
    let id = message.tool_call_id.as_deref()?;
    (message.role == Role::Tool)
        .then(|| pending.iter().position(|p| p == id))
        .flatten()
}

/// One assistant message from two in a row: texts joined, the second one's tool calls.
fn merge_assistant(first: Message, second: Message) -> Message {
    let join = |a: String, b: String| match (a.is_empty(), b.is_empty()) {
        (true, _) => b,
        (_, true) => a,
        _ => format!("{a}\n\n{b}"),
    };
    let reasoning = join(
        first.reasoning_content.unwrap_or_default(),
        second.reasoning_content.unwrap_or_default(),
    );
    Message {
        content: join(first.content, second.content),
        reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
        ..second
    }
}

/// Reads header and messages from the start of `file`; returns the byte length of the
/// well-formed prefix.
fn read(file: &File, path: &Path) -> Result<(Header, Vec<Message>, u64), SessionError> {
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
            serde_json::from_str::<Header>(text)
                .map_err(|err| err.to_string())
                .and_then(|h| {
                    if h.schema > BOUND_SCHEMA_VERSION {
                        return Err(format!(
                            "session schema {} was written by a newer reasonix; this one reads up to {BOUND_SCHEMA_VERSION}",
                            h.schema
                        ));
                    }
                    header = Some(h);
                    Ok(())
                })
        } else {
            read_line(text, &mut messages)
        };
        if let Err(detail) = parsed {
            return Err(SessionError::Corrupt {
                path: path.to_path_buf(),
                line: number,
                detail,
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

/// Applies one line after the header: a message is appended, a rewind marker truncates.
fn read_line(text: &str, messages: &mut Vec<Message>) -> Result<(), String> {
    let err = match serde_json::from_str::<Message>(text) {
        Ok(message) => {
            messages.push(message);
            return Ok(());
        }
        Err(err) => err,
    };
    match serde_json::from_str::<Marker>(text) {
        Ok(marker) if marker.kind == REWIND && marker.to <= messages.len() => {
            messages.truncate(marker.to);
            Ok(())
        }
        Ok(marker) if marker.kind == REWIND => Err(format!(
            "rewind marker keeps {} messages but only {} precede it",
            marker.to,
            messages.len()
        )),
        _ => Err(err.to_string()),
    }
}

/// Whether `message` starts a user turn: a user message that is neither a compaction digest
/// nor the images `view_image` attached after a round's results (part of the turn it is in).
pub fn is_turn(message: &Message) -> bool {
    message.role == Role::User
        && !is_digest(message)
        && !crate::tool::builtin::view_image::is_attachment(message)
}

/// A point a conversation can be rewound to: the start of one user turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserTurn {
    /// The turn's number, from 1 (see [`Session::turns`]).
    pub number: usize,
    /// Index of its user message; rewinding keeps the messages before it.
    pub index: usize,
    /// What the user said.
    pub text: String,
}

/// What the model reads after a host-side profile turn's `/<profile> TASK`.
fn profile_note(profile: &str) -> String {
    format!(
        "\n\n[The user ran the `{profile}` subagent on this task; its final answer is the reply below.]"
    )
}

/// The user message of a `/<profile> TASK` turn run host-side: what was typed, and a note that
/// tells the model the reply below is the profile's answer.
pub fn profile_turn(profile: &str, task: &str) -> Message {
    Message::user(format!("/{profile} {task}{}", profile_note(profile)))
}

/// What the user typed for the turn `message` opens: a host-side profile turn without the note
/// only the model reads.
pub fn typed_text(message: &Message) -> &str {
    let text = message.content.as_str();
    let profile = text
        .strip_prefix('/')
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_default();
    if profile.is_empty() {
        return text;
    }
    text.strip_suffix(&profile_note(profile)).unwrap_or(text)
}

/// The turns of `messages` that can be rewound to, oldest first: those after the last
/// compaction digest. A digest sums up the work of every turn it folded at once, so no history
/// "before" one of those turns exists any more.
pub fn user_turns(messages: &[Message]) -> Vec<UserTurn> {
    let after = messages.iter().rposition(is_digest).map_or(0, |i| i + 1);
    let mut number = messages[..after].iter().filter(|m| is_turn(m)).count();
    let mut turns = Vec::new();
    for (index, message) in messages.iter().enumerate().skip(after) {
        if is_turn(message) {
            number += 1;
            turns.push(UserTurn {
                number,
                index,
                text: typed_text(message).to_string(),
            });
        }
    }
    turns
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

/// One conversation as a listing shows it (`/resume`).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub id: String,
    pub path: PathBuf,
    /// When it started, to the minute: `YYYY-MM-DD HH:MM` (UTC, from the header).
    pub started: String,
    /// The first user message on one line, at most [`PREVIEW_CHARS`] characters. Not
    /// sanitized: a terminal front end does that.
    pub preview: String,
}

/// How much of the first user message a [`Summary`] keeps.
pub const PREVIEW_CHARS: usize = 70;
/// How many message lines are read looking for the first user message: it comes right after
/// the system prompt, so a longer search only costs time on a damaged file.
const PREVIEW_SCAN: usize = 200;

/// The sessions in `dir` (one workspace's) worth resuming, newest written first: those with
/// a user message. Files that cannot be read or have no header are left out.
pub fn list(dir: &Path) -> Vec<Summary> {
    let mut found: Vec<(SystemTime, Summary)> = session_files(dir)
        .into_iter()
        .filter_map(|path| {
            let modified = fs::metadata(&path).ok()?.modified().ok()?;
            Some((modified, summarize(&path)?))
        })
        .collect();
    // Ids sort by creation time, which breaks ties between files written in the same tick.
    found.sort_by(|(a, x), (b, y)| b.cmp(a).then_with(|| y.id.cmp(&x.id)));
    found.into_iter().map(|(_, summary)| summary).collect()
}

/// The header and first user message of a session file, read without taking its lock (the
/// session may be open in another chat). Rewind markers further on can cut that message off,
/// so the rest of the file is scanned for them (a cheap test of each line's start).
fn summarize(path: &Path) -> Option<Summary> {
    let mut lines = BufReader::new(File::open(path).ok()?).split(b'\n');
    let header: Header = serde_json::from_slice(&lines.next()?.ok()?).ok()?;
    let rewind_start = format!("{{\"type\":\"{REWIND}\"");
    // The first user message and its index; `count` messages are in the history so far.
    let mut first: Option<(usize, Message)> = None;
    let (mut count, mut scanned) = (0usize, 0usize);
    for line in lines.map_while(Result::ok) {
        if line.starts_with(rewind_start.as_bytes()) {
            if let Ok(marker) = serde_json::from_slice::<Marker>(&line) {
                count = count.min(marker.to);
                first = first.filter(|(at, _)| *at < marker.to);
            }
            continue;
        }
        if first.is_none() && scanned < PREVIEW_SCAN {
            scanned += 1;
            if let Ok(message) = serde_json::from_slice::<Message>(&line) {
                if is_turn(&message) {
                    first = Some((count, message));
                }
            }
        }
        count += 1;
    }
    let (_, first) = first?;
    // A planner/executor pair's first turn is a plan handoff: the listing shows its request.
    let shown = super::coordinator::shown_request(&first.content);
    let words: Vec<&str> = shown.split_whitespace().collect();
    Some(Summary {
        id: header.id,
        path: path.to_path_buf(),
        started: header
            .started_at
            .chars()
            .take(16)
            .collect::<String>()
            .replacen('T', " ", 1),
        preview: words.join(" ").chars().take(PREVIEW_CHARS).collect(),
    })
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
    use crate::fsutil::scratch::TempDir;
    use crate::provider::ToolCall;

    /// Opens a session this test just dropped. Another test thread may be between fork and
    /// exec right now, its child holding a copy of our (close-on-exec) lock descriptor for a
    /// moment; the lock is free once that child execs.
    fn reopen(path: &Path) -> Session {
        (0..1_000_000)
            .find_map(|_| {
                Session::open(path).ok().or_else(|| {
                    std::thread::yield_now();
                    None
                })
            })
            .expect("the lock is released once the session is dropped")
    }

    fn header(id: &str) -> Header {
        Header::new(id.into(), "fake", "m", Path::new("/w"))
    }

    #[test]
    fn a_bound_header_takes_schema_2_and_a_newer_schema_is_refused() {
        let dir = TempDir::new("bound-schema");
        let mut h = header("b1");
        h.bind(crate::composition::resolve::Binding {
            id: "user:x".into(),
            revision: 4,
            name: String::new(),
            persona: Default::default(),
            persona_digest: "p".into(),
            modules: Default::default(),
            modules_digest: "m".into(),
            workspace: None,
            mcp: Default::default(),
            mcp_contracts: Default::default(),
            needs_vision: false,
            imported: false,
            retained: None,
        });
        let s = Session::create(dir.path(), h.clone()).unwrap();
        let path = s.path().to_path_buf();
        drop(s);
        let (loaded, _) = load(&path).unwrap();
        assert_eq!((loaded.schema, loaded.composition), (2, h.composition));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("\"schema\":2", "\"schema\":3", 1)).unwrap();
        let err = load(&path).unwrap_err();
        assert!(err.to_string().contains("newer reasonix"), "{err}");
    }

    #[test]
    fn round_trips_messages_byte_for_byte() {
        let dir = TempDir::new("roundtrip");
        let mut s = Session::create(dir.path(), header("a1")).unwrap();
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
        let reopened = reopen(&path);
        assert_eq!(reopened.messages(), &msgs[..]);
        assert_eq!(reopened.header.id, "a1");
    }

    #[test]
    fn torn_last_line_is_dropped_and_unanswered_calls_get_results() {
        let dir = TempDir::new("torn");
        let mut s = Session::create(dir.path(), header("b2")).unwrap();
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
        let reopened = reopen(&path);
        let last = reopened.messages().last().unwrap();
        assert_eq!(last.tool_call_id.as_deref(), Some("c2"));
        assert!(last.content.contains("interrupted"));
        assert_eq!(validate(reopened.messages()), Vec::<String>::new());
        // The repaired file parses cleanly again.
        drop(reopened);
        assert_eq!(reopen(&path).messages().len(), 4);
    }

    #[test]
    fn rewrite_replaces_the_file_and_later_pushes_append_to_it() {
        let dir = TempDir::new("rewrite");
        let mut s = Session::create(dir.path(), header("r1")).unwrap();
        for text in ["one", "two", "three"] {
            s.push(Message::user(text)).unwrap();
        }
        s.rewrite(vec![Message::system("sys"), Message::user("three")])
            .unwrap();
        s.push(Message::assistant("four")).unwrap();
        s.sync().unwrap();
        let path = s.path().to_path_buf();
        drop(s);
        let reopened = reopen(&path);
        let contents: Vec<&str> = reopened
            .messages()
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(contents, vec!["sys", "three", "four"]);
        assert_eq!(reopened.header.id, "r1");
    }

    fn call(id: &str) -> ToolCall {
        ToolCall::new(id, "ls", "{}")
    }

    fn asking(text: &str, ids: &[&str]) -> Message {
        let mut message = Message::assistant(text);
        message.tool_calls = ids.iter().map(|id| call(id)).collect();
        message
    }

    #[test]
    fn a_valid_history_passes_and_is_left_byte_for_byte_alone() {
        let history = vec![
            Message::system("sys"),
            Message::user("fact one"),
            // Compaction keeps the user's turns side by side: that is valid.
            Message::user("digest"),
            asking("", &["a", "b"]),
            // Results in another order than the calls are still paired.
            Message::tool_result("b", "rb"),
            Message::tool_result("a", "ra"),
            Message::assistant("done"),
            Message::user("next"),
            Message::assistant("ok"),
        ];
        assert_eq!(validate(&history), Vec::<String>::new());
        let repaired = repair(&history);
        assert_eq!(repaired.messages, history);
        assert!(repaired.notes.is_empty());
        assert_eq!(validate(&[]), Vec::<String>::new());
    }

    #[test]
    fn validation_names_each_kind_of_problem() {
        let history = vec![
            Message::system("sys"),
            Message::tool_result("x", "orphan"),
            Message::user("go"),
            asking("", &["a", "b"]),
            Message::tool_result("a", "ra"),
            Message::assistant("one"),
            Message::assistant("two"),
            Message::user("dangling"),
        ];
        assert_eq!(
            validate(&history),
            vec![
                "message 2: tool result for `x` answers no call of the assistant message before it",
                "message 6: tool calls b of the assistant message before have no result",
                "message 7: assistant message after another",
                "end: the last user message got no reply",
            ]
        );
    }

    #[test]
    fn repair_moves_results_to_their_calls_fills_gaps_drops_strays_and_merges() {
        // Two runs appending to one file at once.
        let history = vec![
            Message::system("sys"),
            Message::user("run a"),
            Message::user("run b"),
            asking("", &["a1"]),
            asking("", &["b1"]),
            Message::tool_result("a1", "ra1"),
            Message::tool_result("b1", "rb1"),
            Message::tool_result("zz", "stray"),
            Message::tool_result("b1", "duplicate"),
            Message::assistant("done a"),
            asking("more", &["b2", "b3"]),
            Message::tool_result("b3", "rb3"),
        ];
        assert_eq!(validate(&history).len(), 7, "{:?}", validate(&history));
        let repaired = repair(&history);
        assert_eq!(validate(&repaired.messages), Vec::<String>::new());
        let mut merged = asking("done a\n\nmore", &["b2", "b3"]);
        merged.reasoning_content = None;
        assert_eq!(
            repaired.messages,
            vec![
                Message::system("sys"),
                Message::user("run a"),
                Message::user("run b"),
                asking("", &["a1"]),
                Message::tool_result("a1", "ra1"),
                asking("", &["b1"]),
                Message::tool_result("b1", "rb1"),
                merged,
                // Results in place first, then what had to be supplied.
                Message::tool_result("b3", "rb3"),
                Message::tool_result("b2", INTERRUPTED_RESULT),
            ]
        );
        assert_eq!(
            repaired.notes,
            vec![
                "moved 1 tool result back after its call",
                "dropped 2 tool results that answer no call",
                "merged 1 assistant message into the one before",
                "gave 1 tool call without a result an \"interrupted\" result",
            ]
        );
        // Repairing is idempotent.
        assert_eq!(repair(&repaired.messages).messages, repaired.messages);
    }

    #[test]
    fn a_prompt_without_a_reply_gets_a_note() {
        let history = vec![Message::system("sys"), Message::user("go")];
        let repaired = repair(&history);
        assert_eq!(
            repaired.messages,
            vec![
                Message::system("sys"),
                Message::user("go"),
                Message::assistant(NO_REPLY_NOTE)
            ]
        );
        assert_eq!(
            repaired.notes,
            vec!["noted that the last user message got no reply"]
        );
    }

    #[test]
    fn a_locked_session_cannot_be_opened_twice_and_is_free_once_closed() {
        let dir = TempDir::new("lock");
        let mut s = Session::create(dir.path(), header("l1")).unwrap();
        s.push(Message::user("hi")).unwrap();
        s.push(Message::assistant("hello")).unwrap();
        let path = s.path().to_path_buf();
        let err = Session::open(&path).err().expect("locked");
        assert_eq!(
            err.to_string(),
            "session: l1 is in use by another reasonix process; wait for it to finish, or add `--fork-session` to continue a copy under a new id"
        );
        // A rewrite moves the lock to the new file.
        s.rewrite(vec![Message::user("hi"), Message::assistant("again")])
            .unwrap();
        assert!(matches!(
            Session::open(&path),
            Err(SessionError::Locked { .. })
        ));
        // A fork reads without the lock and starts its own file.
        let fork = Session::fork(&path, dir.path(), header("l2")).unwrap();
        assert_eq!(fork.messages(), s.messages());
        assert_eq!(fork.header.forked_from.as_deref(), Some("l1"));
        drop(s);
        let reopened = reopen(&path);
        assert_eq!(reopened.messages().len(), 2);
    }

    #[test]
    fn a_profile_turn_gives_back_only_what_was_typed() {
        let turn = profile_turn("fixer", "bump the version");
        assert!(
            turn.content.contains("subagent on this task"),
            "{}",
            turn.content
        );
        assert_eq!(typed_text(&turn), "/fixer bump the version");
        let typed = Message::user("/fixer by hand, no note");
        assert_eq!(typed_text(&typed), "/fixer by hand, no note");
        assert_eq!(typed_text(&Message::user("plain")), "plain");
        assert_eq!(typed_text(&Message::user("/")), "/");
        let turns = user_turns(&[Message::system("s"), turn]);
        assert_eq!(turns[0].text, "/fixer bump the version");
    }

    /// A child process forked by another thread (a tool's command, an MCP server) shares the
    /// session file's descriptor until it execs; closing ours must still free the session.
    #[test]
    fn a_closed_session_is_free_while_a_forked_copy_of_its_descriptor_lives() {
        let dir = TempDir::new("lock-dup");
        let s = Session::create(dir.path(), header("d1")).unwrap();
        let path = s.path().to_path_buf();
        let forked_copy = s.file.try_clone().unwrap();
        drop(s);
        let reopened = Session::open(&path);
        assert!(reopened.is_ok(), "{:?}", reopened.err());
        drop(forked_copy);
    }

    #[test]
    fn files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new("private");
        let nested = dir.join("a/b");
        let mut s = Session::create(&nested, header("p1")).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(s.path()), 0o600);
        assert_eq!(mode(&nested), 0o700);
        assert_eq!(mode(&dir.join("a")), 0o700);
        s.rewrite(vec![Message::user("x")]).unwrap();
        assert_eq!(mode(s.path()), 0o600);
    }

    #[test]
    fn find_resolves_prefixes_and_reports_ambiguity() {
        let root = TempDir::new("find");
        let here = root.join("proj-a").join("sessions");
        let other = root.join("proj-b").join("sessions");
        Session::create(&here, header("20261201T000000-aaaaaa")).unwrap();
        Session::create(&here, header("20261201T000000-aaaabb")).unwrap();
        Session::create(&other, header("20261130T000000-cccccc")).unwrap();
        assert!(find("20261201T000000-aaaaaa", &here, root.path())
            .unwrap()
            .ends_with("20261201T000000-aaaaaa.jsonl"));
        assert!(find("20261130", &here, root.path())
            .unwrap()
            .ends_with("20261130T000000-cccccc.jsonl"));
        let err = find("20261201", &here, root.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("matches 2 sessions"), "{err}");
        assert!(find("zzz", &here, root.path())
            .unwrap_err()
            .to_string()
            .contains("no session matches `zzz`"));
    }

    #[test]
    fn list_shows_sessions_with_a_user_message_newest_first() {
        let dir = TempDir::new("list");
        let write = |id: &str, messages: &[Message], age: u64| {
            let mut session = Session::create(dir.path(), header(id)).unwrap();
            for message in messages {
                session.push(message.clone()).unwrap();
            }
            session.sync().unwrap();
            let path = session.path().to_path_buf();
            drop(session);
            let when = SystemTime::now() - std::time::Duration::from_secs(age);
            File::options()
                .append(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
            path
        };
        let long = format!("fix\n  the   bug {}", "x".repeat(100));
        let older = write(
            "b-older",
            &[Message::system("sys"), Message::user("first")],
            60,
        );
        let newer = write(
            "a-newer",
            &[
                Message::system("sys"),
                Message::user(long),
                Message::assistant("ok"),
            ],
            10,
        );
        write("c-empty", &[Message::system("sys")], 0);
        fs::write(dir.join("torn.jsonl"), "{not json\n").unwrap();
        fs::write(dir.join("notes.txt"), "not a session").unwrap();

        let listed = list(dir.path());
        let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, vec!["a-newer", "b-older"], "{listed:?}");
        assert_eq!(listed[0].path, newer);
        assert_eq!(listed[1].path, older);
        assert_eq!(listed[1].preview, "first");
        let expected: String = format!("fix the bug {}", "x".repeat(100))
            .chars()
            .take(PREVIEW_CHARS)
            .collect();
        assert_eq!(listed[0].preview, expected);
        let started = &listed[0].started;
        assert_eq!(started.len(), 16, "{started}");
        assert_eq!(&started[10..11], " ", "{started}");
        assert!(list(&dir.join("missing")).is_empty());
    }

    /// sys, then `turns` user turns each answered by one assistant message.
    fn conversation(dir: &Path, id: &str, turns: usize) -> Session {
        let mut s = Session::create(dir, header(id)).unwrap();
        s.push(Message::system("sys")).unwrap();
        for n in 1..=turns {
            s.push(Message::user(format!("turn {n}"))).unwrap();
            s.push(Message::assistant(format!("reply {n}"))).unwrap();
        }
        s.sync().unwrap();
        s
    }

    fn contents(messages: &[Message]) -> Vec<&str> {
        messages.iter().map(|m| m.content.as_str()).collect()
    }

    #[test]
    fn a_rewind_appends_a_marker_and_later_messages_follow_it() {
        let dir = TempDir::new("rewind");
        let mut s = conversation(dir.path(), "w1", 1);
        let prefix = s.transcript().to_bytes();
        s.push(Message::user("turn 2")).unwrap();
        s.push(Message::assistant("reply 2")).unwrap();
        let before = fs::read_to_string(s.path()).unwrap();
        assert_eq!(s.turns(), 2);
        s.rewind(3).unwrap();
        assert_eq!(contents(s.messages()), ["sys", "turn 1", "reply 1"]);
        assert_eq!(s.turns(), 1);
        assert_eq!(s.estimates().len(), 3);
        // The kept history is the old prefix byte for byte: the prompt cache still holds it.
        assert_eq!(s.transcript().to_bytes(), prefix);
        let after = fs::read_to_string(s.path()).unwrap();
        assert!(after.starts_with(&before), "the file was rewritten");
        let marker = after[before.len()..].trim_end();
        assert!(
            marker.starts_with("{\"type\":\"rewind\",\"to\":3,\"at\":\""),
            "{marker}"
        );
        s.push(Message::user("turn 2 again")).unwrap();
        s.push(Message::assistant("reply 2 again")).unwrap();
        s.sync().unwrap();
        let path = s.path().to_path_buf();
        drop(s);
        let expected = ["sys", "turn 1", "reply 1", "turn 2 again", "reply 2 again"];
        assert_eq!(contents(&load(&path).unwrap().1), expected);
        let reopened = reopen(&path);
        assert_eq!(contents(reopened.messages()), expected);
        assert_eq!(reopened.turns(), 2);
        assert!(reopened.repair_notice().is_none());
        // A fork copies the rewound conversation.
        let fork = Session::fork(&path, dir.path(), header("w2")).unwrap();
        assert_eq!(contents(fork.messages()), expected);
    }

    #[test]
    fn rewinding_twice_applies_both_markers_in_order() {
        let dir = TempDir::new("rewind-twice");
        let mut s = conversation(dir.path(), "w3", 3);
        s.rewind(5).unwrap();
        s.push(Message::user("turn 3b")).unwrap();
        s.push(Message::assistant("reply 3b")).unwrap();
        s.rewind(3).unwrap();
        s.push(Message::user("turn 2c")).unwrap();
        s.push(Message::assistant("reply 2c")).unwrap();
        s.sync().unwrap();
        let path = s.path().to_path_buf();
        drop(s);
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("\"type\":\"rewind\"").count(), 2, "{text}");
        assert_eq!(
            contents(reopen(&path).messages()),
            ["sys", "turn 1", "reply 1", "turn 2c", "reply 2c"]
        );
        // Rewinding to before the first turn leaves nothing to list.
        let mut s = reopen(&path);
        s.rewind(1).unwrap();
        drop(s);
        assert!(list(dir.path()).is_empty(), "{:?}", list(dir.path()));
        let mut s = reopen(&path);
        s.push(Message::user("a fresh start")).unwrap();
        s.push(Message::assistant("ok")).unwrap();
        drop(s);
        assert_eq!(list(dir.path())[0].preview, "a fresh start");
    }

    #[test]
    fn a_torn_marker_line_is_a_rewind_that_did_not_happen() {
        let dir = TempDir::new("rewind-torn");
        let s = conversation(dir.path(), "w4", 2);
        let path = s.path().to_path_buf();
        drop(s);
        let whole = fs::read_to_string(&path).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"type\":\"rewind\",\"to\":3,\"at\":\"2026-")
            .unwrap();
        drop(f);
        let mut reopened = reopen(&path);
        assert_eq!(reopened.messages().len(), 5);
        assert_eq!(fs::read_to_string(&path).unwrap(), whole, "torn tail cut");
        reopened.rewind(3).unwrap();
        drop(reopened);
        assert_eq!(reopen(&path).messages().len(), 3);
        // A marker that keeps more than precedes it is damage, not a rewind.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"type\":\"rewind\",\"to\":9,\"at\":\"x\"}\n")
            .unwrap();
        drop(f);
        let err = load(&path).unwrap_err().to_string();
        assert!(
            err.ends_with(":8: rewind marker keeps 9 messages but only 3 precede it"),
            "{err}"
        );
    }

    #[test]
    fn rewinding_past_the_end_is_refused() {
        let dir = TempDir::new("rewind-past");
        let mut s = conversation(dir.path(), "w5", 1);
        let err = s.rewind(4).unwrap_err().to_string();
        assert_eq!(
            err,
            "session: cannot rewind to 4 messages, the history has 3"
        );
        assert_eq!(s.messages().len(), 3);
    }

    #[test]
    fn after_a_compaction_only_turns_after_the_digest_can_be_rewound_to() {
        let dir = TempDir::new("rewind-compacted");
        let mut s = conversation(dir.path(), "w6", 3);
        let digest = super::super::compaction::digest_message("did things", 4);
        // A fold keeps the user's messages and replaces the work before the tail.
        s.rewrite(vec![
            Message::system("sys"),
            Message::user("turn 1"),
            Message::user("turn 2"),
            digest.clone(),
            Message::user("turn 3"),
            Message::assistant("reply 3"),
        ])
        .unwrap();
        s.push(Message::user("turn 4")).unwrap();
        s.push(Message::assistant("reply 4")).unwrap();
        assert_eq!(s.turns(), 4);
        let turns = user_turns(s.messages());
        let listed: Vec<(usize, usize, &str)> = turns
            .iter()
            .map(|t| (t.number, t.index, t.text.as_str()))
            .collect();
        assert_eq!(listed, [(3, 4, "turn 3"), (4, 6, "turn 4")]);
        // Back to before turn 3: the digest closes the history, which is valid as it is.
        s.rewind(4).unwrap();
        assert_eq!(s.turns(), 2);
        assert_eq!(s.messages().last(), Some(&digest));
        assert_eq!(validate(s.messages()), Vec::<String>::new());
        let path = s.path().to_path_buf();
        drop(s);
        let reopened = reopen(&path);
        assert_eq!(reopened.messages().len(), 4);
        assert!(reopened.repair_notice().is_none());
        drop(reopened);
        // A later compaction writes the applied history: the marker goes with what it cut.
        let mut s = reopen(&path);
        let kept = s.messages().to_vec();
        s.rewrite(kept.clone()).unwrap();
        drop(s);
        assert!(!fs::read_to_string(&path).unwrap().contains("\"rewind\""));
        assert_eq!(reopen(&path).messages(), &kept[..]);
    }

    #[test]
    fn ids_are_unique_and_sortable() {
        let a = new_id();
        let b = new_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), "20261202T152037-9f3a1c".len());
    }

    #[test]
    fn the_images_view_image_attaches_are_not_a_turn() {
        let history = vec![
            Message::system("s"),
            Message::user("look"),
            Message::assistant("a"),
        ];
        assert_eq!(user_turns(&history).len(), 1);
        let mut attached = Message::user("[view_image: a.png]");
        attached.images.push("data:image/png;base64,AA==".into());
        assert!(!is_turn(&attached));
        let mut with = history.clone();
        with.insert(2, attached);
        assert_eq!(user_turns(&with).len(), 1);
    }
}
