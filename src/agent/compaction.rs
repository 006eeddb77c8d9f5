//! Context maintenance (SPEC §3.6): when the prompt nears the model's window, stale tool
//! results are snipped, then pruned, and as a last resort the assistant/tool work before the
//! recent tail is folded into a digest written by the model.
//!
//! Every rewrite changes the request prefix, which costs the provider's prompt cache every
//! byte after the first change, so maintenance works with hysteresis: it starts only when a
//! threshold is crossed and then goes down to a low watermark (half the snip threshold) in
//! one rewrite, shortening every stale result at once, so the next rewrite is a long stretch
//! of append-only requests away. A result the model has not answered yet is never shortened
//! (it reaches the model once in full), user messages and earlier digests are never changed,
//! and a summary call only runs when shortening cannot bring the prompt below the compact
//! threshold.
//!
//! This module owns the decisions and the message transforms, the summary request and the
//! archive of dropped originals. The loop in `runner` measures the context, sends the summary
//! request and rewrites the session.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::json;

use super::tokens::estimate_text;
use crate::provider::{Message, Request, Role};
use crate::text::collapse_whitespace;

/// Tool results up to this size are never snipped: the saving would not pay for a cache reset.
const SNIP_MIN_BYTES: usize = 1024;
/// What a snipped result keeps of its beginning and end.
const SNIP_HEAD_BYTES: usize = 480;
const SNIP_TAIL_BYTES: usize = 240;
/// Results up to this size are left alone by pruning: a placeholder would not be shorter.
const PRUNE_MIN_BYTES: usize = 240;
const SNIP_MARK: &str = "[snipped tool result:";
const PRUNE_MARK: &str = "[pruned tool result";
const DIGEST_OPEN: &str = "<digest";
const DIGEST_CLOSE: &str = "</digest>";
/// The recent tail a rewrite never touches: a tenth of the window, at most this many tokens,
/// besides what the model has not seen yet. Everything after a rewrite's first change is
/// sent again uncached, so a large tail would cost the cache at every rewrite.
const MAX_TAIL_TOKENS: u64 = 48_000;
/// Per-message byte caps of the transcript the summarizer reads; halved until it fits.
const TRANSCRIPT_CAP_START: usize = 2_000;
const TRANSCRIPT_CAP_MIN: usize = 200;
/// The digest the summarizer may write, at most.
const MAX_DIGEST_TOKENS: u64 = 2_048;

/// The context-management settings of a run; `window = 0` turns maintenance off.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextOptions {
    pub window: u64,
    pub snip_ratio: f64,
    pub compact_ratio: f64,
    pub force_ratio: f64,
    /// Where dropped originals go (`<state>/archive`); `None` keeps no archive.
    pub archive_dir: Option<PathBuf>,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            window: 0,
            snip_ratio: 0.6,
            compact_ratio: 0.8,
            force_ratio: 0.9,
            archive_dir: None,
        }
    }
}

/// The thresholds of one window, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub window: u64,
    pub snip_at: u64,
    pub compact_at: u64,
    pub force_at: u64,
    /// The most recent history worth this many tokens is never rewritten, nor is anything
    /// the model has not seen yet, whatever its size.
    pub tail: u64,
    /// The smallest saving that justifies a cache reset short of the low watermark.
    pub batch: u64,
    /// The low watermark: once a threshold is crossed, maintenance brings the prompt down to
    /// here when it can (half the snip threshold), so the next rewrite is that much growth
    /// away.
    pub relief: u64,
}

impl Limits {
    /// `None` when the window is 0 (maintenance off).
    pub fn new(options: &ContextOptions) -> Option<Limits> {
        (options.window > 0).then(|| Limits::for_window(options.window, options))
    }

    /// The limits `/compact` uses; it works even with automatic maintenance off.
    pub fn manual(options: &ContextOptions) -> Limits {
        const FALLBACK_WINDOW: u64 = 128_000;
        let window = if options.window > 0 {
            options.window
        } else {
            FALLBACK_WINDOW
        };
        Limits::for_window(window, options)
    }

    fn for_window(window: u64, options: &ContextOptions) -> Limits {
        let at = |ratio: f64| (window as f64 * ratio.clamp(0.0, 1.0)) as u64;
        let snip_at = at(options.snip_ratio);
        Limits {
            window,
            snip_at,
            relief: snip_at / 2,
            compact_at: at(options.compact_ratio),
            force_at: at(options.force_ratio),
            tail: (window / 10).min(MAX_TAIL_TOKENS),
            batch: (window / 10).max(256),
        }
    }
}

/// Why maintenance ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// A threshold was crossed.
    Auto,
    /// The force ratio was crossed: fold whatever can be folded.
    Force,
    /// `/compact`.
    Manual,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Force => "force",
            Trigger::Manual => "manual",
        }
    }
}

/// How stale tool results are shortened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shorten {
    /// Head and tail kept around a marker.
    Snip,
    /// Replaced by a one-line placeholder (snipped results are upgraded).
    Prune,
}

impl Shorten {
    pub fn as_str(self) -> &'static str {
        match self {
            Shorten::Snip => "snip",
            Shorten::Prune => "prune",
        }
    }
}

/// Which rewrite a compaction made, as events report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Snip,
    Prune,
    /// Earlier work folded into a digest by a summary call.
    Fold,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Snip => "snip",
            Tier::Prune => "prune",
            Tier::Fold => "fold",
        }
    }
}

impl From<Shorten> for Tier {
    fn from(shorten: Shorten) -> Tier {
        match shorten {
            Shorten::Snip => Tier::Snip,
            Shorten::Prune => Tier::Prune,
        }
    }
}

/// What to do before the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub trigger: Trigger,
    pub shorten: Shorten,
    pub fold: bool,
}

/// Decides the maintenance for a prompt of `used` tokens. `costs` holds each message's
/// (calibrated) token estimate.
///
/// Every rewrite resets the provider's prompt cache from its first change, and whatever
/// follows that change is sent again uncached, so a rewrite shortens every stale result at
/// once (one change instead of one per round) and picks the mildest tier that reaches the
/// low watermark [`Limits::relief`]. When none does (the tail, the unseen results and the
/// user's messages alone are above it), the deepest shortening worth [`Limits::batch`] runs.
/// A fold (a summary call) runs only past the compact threshold when pruning cannot bring the
/// prompt below it, and then only when it removes a batch; past the force ratio it removes
/// whatever it can.
pub fn plan(limits: &Limits, used: u64, history: &[Message], costs: &[u64]) -> Option<Plan> {
    if used < limits.snip_at {
        return None;
    }
    let tail = tail_start(history, costs, limits.tail);
    let (stale, stale_costs) = (&history[..tail], &costs[..tail]);
    let snip = shortening_saving(stale, stale_costs, Shorten::Snip);
    let prune = shortening_saving(stale, stale_costs, Shorten::Prune);
    let after = |saving: u64| used.saturating_sub(saving);
    let forced = used >= limits.force_at;
    let trigger = if forced {
        Trigger::Force
    } else {
        Trigger::Auto
    };
    let shorten = |mode| {
        Some(Plan {
            trigger,
            shorten: mode,
            fold: false,
        })
    };
    if snip > 0 && after(snip) <= limits.relief {
        return shorten(Shorten::Snip);
    }
    if prune > 0 && after(prune) <= limits.relief {
        return shorten(Shorten::Prune);
    }
    if used >= limits.compact_at && after(prune) >= limits.compact_at {
        // What a fold would remove once the results it covers are pruned.
        let foldable = fold_saving(history, costs, tail).saturating_sub(prune);
        if foldable >= limits.batch || (forced && foldable > 0) {
            return Some(Plan {
                trigger,
                shorten: Shorten::Prune,
                fold: true,
            });
        }
    }
    // The low watermark is out of reach: the deepest cut that pays for the reset. Pruning
    // changes the prompt from the oldest snipped result, snipping from the oldest full one,
    // so pruning must buy a batch more than snipping.
    if prune.saturating_sub(snip) >= limits.batch || (forced && prune > snip) {
        shorten(Shorten::Prune)
    } else if snip >= limits.batch || (forced && snip > 0) {
        shorten(Shorten::Snip)
    } else {
        None
    }
}

/// Index of the first message of the recent tail: the newest messages worth at least
/// `budget` tokens and everything the model has not seen yet, moved back so the tail never
/// starts with a tool result (its call would be outside). Never below 1, so the system prompt
/// is never part of a rewrite's tail logic.
pub fn tail_start(history: &[Message], costs: &[u64], budget: u64) -> usize {
    let mut start = history.len();
    let mut sum = 0;
    while start > 1 && sum < budget {
        start -= 1;
        sum += costs[start];
    }
    start = start.min(unseen_start(history));
    // With a zero budget the tail is empty (start == len): nothing to align.
    while start > 1 && start < history.len() && history[start].role == Role::Tool {
        start -= 1;
    }
    start.max(1).min(history.len())
}

/// The first message no request has been answered with: everything after the last assistant
/// message (this round's tool results, the new user turn). Each request's reply is appended
/// as an assistant message, so what precedes it has reached the model.
pub fn unseen_start(history: &[Message]) -> usize {
    history
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(1, |i| i + 1)
}

fn shortening_saving(stale: &[Message], costs: &[u64], mode: Shorten) -> u64 {
    stale
        .iter()
        .zip(costs)
        .filter_map(|(m, cost)| {
            let shorter = shortened(m, mode, "")?;
            let ratio = shorter.len() as f64 / m.content.len().max(1) as f64;
            Some(cost - (*cost as f64 * ratio) as u64)
        })
        .sum()
}

/// Tokens of the messages a fold would replace (before pruning).
fn fold_saving(history: &[Message], costs: &[u64], tail: usize) -> u64 {
    (1..tail)
        .filter(|&i| !kept_by_fold(&history[i]))
        .map(|i| costs[i])
        .sum()
}

pub fn is_digest(message: &Message) -> bool {
    message.role == Role::User && message.content.starts_with(DIGEST_OPEN)
}

pub fn is_snipped(message: &Message) -> bool {
    message.role == Role::Tool && message.content.starts_with(SNIP_MARK)
}

pub fn is_pruned(message: &Message) -> bool {
    message.role == Role::Tool && message.content.starts_with(PRUNE_MARK)
}

/// Error and blocked results stay as they are: they explain why the model changed course.
fn is_error(message: &Message) -> bool {
    message.content.starts_with("error: ")
}

/// A fold keeps every user message verbatim, however long (what the user said is the task's
/// ground truth and never the model's to paraphrase), earlier digests and system messages.
fn kept_by_fold(message: &Message) -> bool {
    match message.role {
        Role::System | Role::User => true,
        Role::Assistant | Role::Tool => false,
    }
}

/// The shortened content of a stale tool result, or `None` when it is left alone.
fn shortened(message: &Message, mode: Shorten, tool: &str) -> Option<String> {
    if message.role != Role::Tool || is_error(message) || is_pruned(message) {
        return None;
    }
    match mode {
        Shorten::Snip if is_snipped(message) => None,
        Shorten::Snip if message.content.len() <= SNIP_MIN_BYTES => None,
        Shorten::Snip => Some(snip(&message.content)),
        Shorten::Prune if message.content.len() <= PRUNE_MIN_BYTES => None,
        Shorten::Prune => Some(prune_placeholder(message, tool)),
    }
}

/// Head and tail of `content` around a marker; the same input always gives the same bytes.
fn snip(content: &str) -> String {
    let head_end = line_cut_before(content, SNIP_HEAD_BYTES);
    let tail_start = line_cut_after(content, content.len() - SNIP_TAIL_BYTES);
    let lines = content.lines().count();
    format!(
        "{SNIP_MARK} kept the first {head_end} and last {} of {} bytes ({lines} lines); the full text is archived, search it with the history tool]\n{}\n[...]\n{}",
        content.len() - tail_start,
        content.len(),
        &content[..head_end],
        &content[tail_start..]
    )
}

/// A cut at or before `limit`, at the end of a line when one ends in its second half.
fn line_cut_before(content: &str, limit: usize) -> usize {
    let mut end = limit.min(content.len());
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    match content[..end].rfind('\n') {
        Some(newline) if newline >= end / 2 => newline,
        _ => end,
    }
}

/// A cut at or after `from`, at the start of a line when one starts in the first half.
fn line_cut_after(content: &str, from: usize) -> usize {
    let mut start = from;
    while !content.is_char_boundary(start) {
        start += 1;
    }
    let span = content.len() - start;
    match content[start..].find('\n') {
        Some(offset) if offset < span / 2 => start + offset + 1,
        _ => start,
    }
}

fn prune_placeholder(message: &Message, tool: &str) -> String {
    let size = original_size(&message.content)
        .unwrap_or_else(|| (message.content.len(), message.content.lines().count()));
    let tool = if tool.is_empty() {
        String::new()
    } else {
        format!(" of `{tool}`")
    };
    format!(
        "{PRUNE_MARK}{tool}: {} bytes, {} lines; the full text is archived, search it with the history tool]",
        size.0, size.1
    )
}

/// (bytes, lines) a snipped result had before it was snipped.
fn original_size(content: &str) -> Option<(usize, usize)> {
    let header = content.strip_prefix(SNIP_MARK)?.lines().next()?;
    let words: Vec<&str> = header.split_whitespace().collect();
    let bytes = words
        .iter()
        .position(|w| *w == "bytes")
        .and_then(|i| words.get(i.checked_sub(1)?)?.parse().ok())?;
    let lines = words.iter().position(|w| *w == "lines);").and_then(|i| {
        words
            .get(i.checked_sub(1)?)?
            .trim_start_matches('(')
            .parse()
            .ok()
    })?;
    Some((bytes, lines))
}

/// Shortens every stale tool result before `tail` in place; returns the originals of the
/// messages that changed, with their indexes.
pub fn shorten_stale(history: &mut [Message], tail: usize, mode: Shorten) -> Vec<(usize, Message)> {
    let names = call_names(history);
    let mut changed = Vec::new();
    for (i, message) in history.iter_mut().enumerate().take(tail) {
        let tool = message
            .tool_call_id
            .as_deref()
            .and_then(|id| names.get(id))
            .map_or("", String::as_str);
        if let Some(content) = shortened(message, mode, tool) {
            let original = std::mem::replace(&mut message.content, content);
            let mut archived = message.clone();
            archived.content = original;
            changed.push((i, archived));
        }
    }
    changed
}

fn call_names(history: &[Message]) -> HashMap<String, String> {
    history
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|c| (c.id.clone(), c.name().to_string()))
        .collect()
}

/// Which messages before the tail a fold keeps verbatim and which it folds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fold {
    /// The first message of the tail.
    pub tail: usize,
    /// Indexes (before the tail, after the system prompt) kept verbatim, in order.
    pub kept: Vec<usize>,
    /// Indexes folded into the digest, in order.
    pub folded: Vec<usize>,
}

/// Partitions the history before `tail`. `None` when nothing would be folded.
pub fn partition(history: &[Message], tail: usize) -> Option<Fold> {
    let (kept, folded): (Vec<usize>, Vec<usize>) =
        (1..tail).partition(|&i| kept_by_fold(&history[i]));
    (!folded.is_empty()).then_some(Fold { tail, kept, folded })
}

/// The system prompt of the summary request.
pub const SUMMARY_SYSTEM_PROMPT: &str = "You compact the earlier part of a coding agent's session so it fits the context window. \
The user's own messages and earlier digests are kept verbatim elsewhere; your digest replaces the assistant and tool work shown to you. \
Write terse bullet points under these headings, leaving out a heading with nothing under it:\n\
## Facts and constraints\nEverything stated in the work that still matters: names, paths, identifiers, versions, numbers, exact values, in their original wording.\n\
## Done\nFiles read or changed and how, commands run and their outcomes, decisions and why.\n\
## Errors\nProblems met and whether they were fixed.\n\
## Next\nWhat was in progress and the next concrete step.\n\
Preserve identifiers, paths and numbers exactly. Do not invent anything that is not in the transcript.";

/// The summary request: the folded messages as a transcript, no tools.
pub fn summary_request(history: &[Message], fold: &Fold, limits: &Limits) -> Request {
    let budget = limits.window / 2;
    let mut cap = TRANSCRIPT_CAP_START;
    let mut transcript = render_transcript(history, fold, cap);
    while estimate_text(&transcript) > budget && cap > TRANSCRIPT_CAP_MIN {
        cap /= 2;
        transcript = render_transcript(history, fold, cap);
    }
    let user = format!(
        "Write the digest of the assistant and tool work in this transcript. Messages marked \
         (kept) stay verbatim in the session and are shown only for context; do not repeat \
         them.\n\n<transcript>\n{transcript}</transcript>"
    );
    Request {
        messages: vec![Message::system(SUMMARY_SYSTEM_PROMPT), Message::user(user)].into(),
        tools: Default::default(),
        temperature: Some(0.0),
        max_tokens: Some(MAX_DIGEST_TOKENS.min(limits.window / 8).max(256)),
        reasoning_effort: None,
    }
}

fn render_transcript(history: &[Message], fold: &Fold, cap: usize) -> String {
    let mut indexes: Vec<usize> = fold.kept.iter().chain(&fold.folded).copied().collect();
    indexes.sort_unstable();
    let mut out = String::new();
    for i in indexes {
        let message = &history[i];
        if message.role == Role::System {
            continue;
        }
        let kept = if fold.kept.contains(&i) {
            " (kept)"
        } else {
            ""
        };
        let role = message.role.as_str();
        if !message.content.is_empty() {
            out.push_str(&format!(
                "[{i} {role}{kept}] {}\n",
                clip(&message.content, cap)
            ));
        }
        for call in &message.tool_calls {
            out.push_str(&format!(
                "[{i} {role} calls {}] {}\n",
                call.name(),
                clip(call.arguments(), cap)
            ));
        }
    }
    out
}

/// The first `cap` bytes and a note, on a char boundary.
fn clip(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} [... {} more bytes]", &text[..end], text.len() - end)
}

/// The digest message that replaces the folded messages.
pub fn digest_message(summary: &str, folded: usize) -> Message {
    Message::user(format!(
        "{DIGEST_OPEN} folded=\"{folded}\">\nDigest of earlier assistant and tool work in this session, written when the context was compacted. The user's own messages are kept verbatim; the originals are archived (search them with the history tool).\n{}\n{DIGEST_CLOSE}",
        summary.trim()
    ))
}

/// A digest made without the model, used when the summary request fails: what was asked
/// and which tools ran, so the work is at least traceable.
pub fn mechanical_summary(history: &[Message], fold: &Fold) -> String {
    const LIMIT: usize = 4_000;
    let mut out = String::from("(The summarizer was unavailable; this is a mechanical list.)\n");
    for &i in &fold.folded {
        let message = &history[i];
        let line = match message.role {
            Role::Assistant if !message.tool_calls.is_empty() => message
                .tool_calls
                .iter()
                .map(|c| format!("- ran `{}` {}", c.name(), clip(c.arguments(), 120)))
                .collect::<Vec<_>>()
                .join("\n"),
            Role::Assistant => format!(
                "- said: {}",
                clip(&collapse_whitespace(&message.content), 160)
            ),
            Role::User | Role::Tool | Role::System => continue,
        };
        if out.len() + line.len() > LIMIT {
            out.push_str("- ...\n");
            break;
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The history after a fold: system prompt, kept messages, the digest, then the tail.
pub fn folded_history(history: &[Message], fold: &Fold, digest: Message) -> Vec<Message> {
    let mut out = Vec::with_capacity(1 + fold.kept.len() + 1 + history.len() - fold.tail);
    out.extend(history.first().cloned());
    out.extend(fold.kept.iter().map(|&i| history[i].clone()));
    out.push(digest);
    out.extend_from_slice(&history[fold.tail..]);
    out
}

/// Appends `messages` to `<dir>/<stamp>.jsonl` after a header line naming the session and
/// the reason, and makes it durable. Returns the file.
pub fn archive(
    dir: &Path,
    session_id: &str,
    reason: &str,
    messages: &[Message],
) -> io::Result<PathBuf> {
    // Archives hold session content: as private as the sessions.
    crate::fsutil::create_private_dir(dir)?;
    let now = SystemTime::now();
    let path = dir.join(format!("{}.jsonl", crate::clock::compact_stamp(now)));
    let mut text = json!({
        "type": "archive",
        "session_id": session_id,
        "reason": reason,
        "archived_at": crate::clock::rfc3339(now),
    })
    .to_string();
    text.push('\n');
    for message in messages {
        text.push_str(&serde_json::to_string(message).map_err(io::Error::other)?);
        text.push('\n');
    }
    let mut file =
        crate::platform::create_mode(OpenOptions::new().create(true).append(true), 0o600)
            .open(&path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    crate::fsutil::sync_dir(dir)?;
    Ok(path)
}

#[cfg(test)]
mod tail_tests {
    use super::*;

    #[test]
    fn a_zero_budget_gives_an_empty_tail_without_panicking() {
        let mut history = vec![
            Message::system("s"),
            Message::user("u"),
            Message::assistant("a"),
        ];
        assert_eq!(tail_start(&history, &[1, 1, 1], 0), 3);
        // Nothing was answered yet: all of it is unseen, so all of it is tail.
        history.pop();
        history.push(Message::tool_result("c", "r"));
        assert_eq!(tail_start(&history, &[1, 1, 1], 0), 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tokens::estimate_message;
    use crate::fsutil::scratch::TempDir;
    use crate::provider::ToolCall;
    use std::fs;

    fn costs(history: &[Message]) -> Vec<u64> {
        history.iter().map(estimate_message).collect()
    }

    fn round(history: &mut Vec<Message>, id: &str, output: &str) {
        let mut call = Message::assistant("");
        call.tool_calls = vec![ToolCall::new(id, "read_file", "{\"path\":\"a\"}")];
        history.push(call);
        history.push(Message::tool_result(id, output));
    }

    fn options(window: u64) -> ContextOptions {
        ContextOptions {
            window,
            ..ContextOptions::default()
        }
    }

    fn big(n: usize) -> String {
        (0..n).map(|i| format!("line {i} of output\n")).collect()
    }

    #[test]
    fn snip_is_deterministic_and_keeps_head_and_tail() {
        let content = big(200);
        let a = snip(&content);
        assert_eq!(a, snip(&content));
        assert!(a.starts_with(SNIP_MARK), "{a}");
        assert!(a.contains("line 0 of output"), "{a}");
        assert!(a.contains("line 199 of output"), "{a}");
        assert!(!a.contains("line 100 of output"), "{a}");
        assert!(a.len() < 1000, "{}", a.len());
        let m = Message::tool_result("c", a);
        assert_eq!(original_size(&m.content), Some((content.len(), 200)));
        let pruned = prune_placeholder(&m, "read_file");
        assert!(
            pruned.starts_with(&format!(
                "[pruned tool result of `read_file`: {} bytes, 200 lines;",
                content.len()
            )),
            "{pruned}"
        );
    }

    #[test]
    fn snip_handles_multibyte_text_without_newlines() {
        let content = "é".repeat(2000);
        let s = snip(&content);
        assert!(s.contains("[...]"));
        assert!(s.len() < content.len());
    }

    #[test]
    fn shorten_keeps_errors_tail_and_pairing_and_upgrades_snips() {
        let mut history = vec![Message::system("sys"), Message::user("go")];
        round(&mut history, "c1", &big(100));
        round(&mut history, "c2", &format!("error: {}", big(100)));
        round(&mut history, "c3", "short");
        round(&mut history, "c4", &big(100));
        let len = history.len();
        let snipped = shorten_stale(&mut history, len - 2, Shorten::Snip);
        let indexes: Vec<usize> = snipped.iter().map(|(i, _)| *i).collect();
        assert_eq!(indexes, vec![3]);
        assert_eq!(snipped[0].1.content, big(100));
        assert!(is_snipped(&history[3]));
        assert!(history[5].content.starts_with("error: "));
        assert_eq!(history[7].content, "short");
        assert_eq!(history[9].content, big(100), "the tail is untouched");
        // Snipping again changes nothing; pruning upgrades the snip and leaves the rest.
        assert!(shorten_stale(&mut history, len - 2, Shorten::Snip).is_empty());
        let pruned = shorten_stale(&mut history, len - 2, Shorten::Prune);
        assert_eq!(pruned.len(), 1);
        assert!(is_pruned(&history[3]), "{}", history[3].content);
        assert!(shorten_stale(&mut history, len - 2, Shorten::Prune).is_empty());
        assert_eq!(history.len(), len, "no message is removed");
    }

    #[test]
    fn tail_never_starts_with_a_tool_result() {
        let mut history = vec![Message::system("sys"), Message::user("go")];
        round(&mut history, "c1", &big(10));
        round(&mut history, "c2", &big(10));
        let costs = costs(&history);
        let last = *costs.last().unwrap();
        let start = tail_start(&history, &costs, last);
        assert_eq!(start, history.len() - 2);
        assert_eq!(history[start].role, Role::Assistant);
        assert_eq!(tail_start(&history, &costs, u64::MAX), 1);
    }

    #[test]
    fn thresholds_choose_the_tiers() {
        let limits = Limits::new(&options(10_000)).unwrap();
        assert_eq!(
            (limits.snip_at, limits.compact_at, limits.force_at),
            (6_000, 8_000, 9_000)
        );
        assert!(Limits::new(&options(0)).is_none());
        let mut history = vec![Message::system("sys"), Message::user("go")];
        for i in 0..30 {
            round(&mut history, &format!("c{i}"), &big(60));
            history.push(Message::assistant("done"));
            history.push(Message::user(format!("fact {i}")));
        }
        let short_costs = costs(&history);
        assert_eq!(limits.relief, 3_000, "the low watermark");
        assert_eq!(plan(&limits, 5_999, &history, &short_costs), None);
        // Snipping these short results would save little: pruning reaches the watermark.
        let prune = plan(&limits, 6_500, &history, &short_costs).unwrap();
        assert_eq!((prune.shorten, prune.fold), (Shorten::Prune, false));
        let forced = plan(&limits, 9_500, &history, &short_costs).unwrap();
        assert_eq!(
            (forced.trigger, forced.shorten, forced.fold),
            (Trigger::Force, Shorten::Prune, false),
            "pruning is enough even past the force ratio"
        );
        // Long results: snipping reaches the watermark, so the milder tier runs.
        let mut long = vec![Message::system("sys"), Message::user("go")];
        for i in 0..3 {
            round(&mut long, &format!("c{i}"), &big(400));
            long.push(Message::assistant("done"));
        }
        let snip = plan(&limits, 6_500, &long, &costs(&long)).unwrap();
        assert_eq!((snip.shorten, snip.fold), (Shorten::Snip, false));
        // Nothing to shorten, much assistant work: past the compact ratio it folds.
        let mut talk = vec![Message::system("sys"), Message::user("go")];
        for i in 0..40 {
            talk.push(Message::user(format!("fact {i}")));
            talk.push(Message::assistant(big(12)));
        }
        let talk_costs = costs(&talk);
        assert_eq!(plan(&limits, 7_900, &talk, &talk_costs), None);
        let fold = plan(&limits, 8_100, &talk, &talk_costs).unwrap();
        assert_eq!((fold.trigger, fold.fold), (Trigger::Auto, true));
        let force = plan(&limits, 9_500, &talk, &talk_costs).unwrap();
        assert_eq!((force.trigger, force.fold), (Trigger::Force, true));
    }

    #[test]
    fn small_savings_do_not_reset_the_cache() {
        let limits = Limits::new(&options(2_000)).unwrap();
        let mut history = vec![Message::system("sys"), Message::user("go")];
        round(&mut history, "c1", &big(30));
        for i in 0..40 {
            history.push(Message::user(format!("tiny turn {i}")));
            history.push(Message::assistant("ok"));
        }
        let costs = costs(&history);
        assert_eq!(plan(&limits, 1_300, &history, &costs), None);
        assert_eq!(plan(&limits, 1_700, &history, &costs), None);
        // Forced: whatever can be folded is.
        assert!(plan(&limits, 1_850, &history, &costs).unwrap().fold);
    }

    #[test]
    fn fold_keeps_user_turns_and_digests_and_moves_off_tool_results() {
        let mut history = vec![
            Message::system("sys"),
            Message::user("fact: the port is 8080"),
        ];
        round(&mut history, "c1", &big(50));
        history.push(digest_message("earlier digest", 3));
        history.push(Message::user(format!("paste {}", big(800))));
        round(&mut history, "c2", &big(50));
        history.push(Message::user("fact: the name is Ada"));
        round(&mut history, "c3", &big(5));
        let costs = costs(&history);
        let tail = tail_start(&history, &costs, costs[10]);
        assert_eq!(tail, 9, "moved back from the tool result to its call");
        let fold = partition(&history, tail).unwrap();
        assert_eq!(
            fold.kept,
            vec![1, 4, 5, 8],
            "user messages are kept, however long"
        );
        assert_eq!(fold.folded, vec![2, 3, 6, 7]);
        let request = summary_request(&history, &fold, &Limits::manual(&options(0)));
        assert!(request.tools.is_empty());
        let transcript = &request.messages[1].content;
        assert!(
            transcript.contains("[1 user (kept)] fact: the port is 8080"),
            "{transcript}"
        );
        assert!(
            transcript.contains("[2 assistant calls read_file]"),
            "{transcript}"
        );
        assert!(transcript.contains("[5 user (kept)] paste"), "{transcript}");
        let digest = digest_message("new digest", fold.folded.len());
        assert!(is_digest(&digest));
        let after = folded_history(&history, &fold, digest);
        let roles: Vec<Role> = after.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            vec![
                Role::System,
                Role::User,
                Role::User,
                Role::User,
                Role::User,
                Role::User,
                Role::Assistant,
                Role::Tool
            ]
        );
        assert_eq!(after[1].content, "fact: the port is 8080");
        assert!(after[3].content.starts_with("paste line 0 of output"));
        assert_eq!(after[4].content, "fact: the name is Ada");
        assert!(after[5].content.contains("new digest"));
    }

    #[test]
    fn archive_appends_a_header_and_one_message_per_line() {
        let scratch = TempDir::new("archive");
        // Not there yet: archiving creates it.
        let dir = scratch.join("archive");
        let messages = vec![Message::user("a"), Message::tool_result("c", "b\nc")];
        let path = archive(&dir, "s1", "fold", &messages).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].contains("\"session_id\":\"s1\""));
        let back: Message = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(back, messages[1]);
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&dir), mode(&path)), (0o700, 0o600));
    }
}

/// The planner driven the way the runner drives it, over a scripted chat: every turn is a
/// user message, a `read_file` call, its (large) result and a short answer, with the plan
/// applied before each of the turn's two requests.
#[cfg(test)]
mod hysteresis_tests {
    use super::*;
    use crate::agent::tokens::estimate_message;
    use crate::provider::ToolCall;

    struct Sim {
        limits: Limits,
        history: Vec<Message>,
        /// What each request carried.
        requests: Vec<Vec<Message>>,
        /// (request index, tier, prompt tokens after the rewrite)
        rewrites: Vec<(usize, &'static str, u64)>,
        /// The result every turn reads.
        result: String,
    }

    fn costs(history: &[Message]) -> Vec<u64> {
        history.iter().map(estimate_message).collect()
    }

    /// Text of about `tokens` estimated tokens, unique per `seed`.
    fn output(tokens: u64, seed: usize) -> String {
        let mut text = String::new();
        let mut i = 0;
        while estimate_text(&text) < tokens {
            text.push_str(&format!(
                "row {seed}-{i}: checksum {:08x} status ok\n",
                i * 7919
            ));
            i += 1;
        }
        text
    }

    fn fact(turn: usize) -> String {
        format!("Turn {turn}: the code word is word{}x.", turn * 31 % 997)
    }

    impl Sim {
        fn new(window: u64, result_tokens: u64) -> Sim {
            let options = ContextOptions {
                window,
                ..ContextOptions::default()
            };
            Sim {
                limits: Limits::new(&options).unwrap(),
                // About what the system prompt and a few tool definitions take.
                history: vec![Message::system(output(2_000, 99))],
                requests: Vec::new(),
                rewrites: Vec::new(),
                result: output(result_tokens, 0),
            }
        }

        fn used(&self) -> u64 {
            costs(&self.history).iter().sum()
        }

        /// Maintenance as `runner::Agent::maintain_context` does it, then the request.
        fn request(&mut self) {
            let costs = costs(&self.history);
            let used = costs.iter().sum();
            if let Some(plan) = plan(&self.limits, used, &self.history, &costs) {
                let tail = tail_start(&self.history, &costs, self.limits.tail);
                let fold = plan.fold.then(|| partition(&self.history, tail)).flatten();
                let tier = match fold {
                    Some(fold) => {
                        let digest = digest_message("## Done\n- read files", fold.folded.len());
                        self.history = folded_history(&self.history, &fold, digest);
                        "fold"
                    }
                    None => {
                        shorten_stale(&mut self.history, tail, plan.shorten);
                        plan.shorten.as_str()
                    }
                };
                self.rewrites.push((self.requests.len(), tier, self.used()));
            }
            assert_eq!(pairing(&self.history), Vec::<String>::new());
            self.requests.push(self.history.clone());
        }

        fn turn(&mut self, turn: usize) {
            self.history.push(Message::user(fact(turn)));
            self.request();
            let id = format!("call_{turn}");
            let mut call = Message::assistant("");
            call.tool_calls = vec![ToolCall::new(&id, "read_file", "{\"path\":\"data\"}")];
            self.history.push(call);
            // Every result differs, so no two are alike by accident.
            let result = format!("file {turn}\n{}", self.result);
            self.history.push(Message::tool_result(&id, result));
            self.request();
            self.history.push(Message::assistant("Noted."));
        }

        /// Indexes of the requests that do not start with every message of the one before.
        fn breaks(&self) -> Vec<usize> {
            (1..self.requests.len())
                .filter(|&i| {
                    let (before, after) = (&self.requests[i - 1], &self.requests[i]);
                    after.len() < before.len() || after[..before.len()] != before[..]
                })
                .collect()
        }
    }

    /// Problems with tool-call pairing: a call without its result or a result without its call.
    fn pairing(history: &[Message]) -> Vec<String> {
        let mut problems = Vec::new();
        let mut open: Vec<String> = Vec::new();
        for (i, message) in history.iter().enumerate() {
            match message.role {
                Role::Tool => {
                    let id = message.tool_call_id.clone().unwrap_or_default();
                    match open.iter().position(|o| *o == id) {
                        Some(at) => {
                            open.remove(at);
                        }
                        None => problems.push(format!("orphan result {id} at {i}")),
                    }
                }
                _ => {
                    problems.extend(open.drain(..).map(|id| format!("unanswered call {id}")));
                    open.extend(message.tool_calls.iter().map(|c| c.id.clone()));
                }
            }
        }
        problems
    }

    #[test]
    fn a_compaction_goes_down_to_the_low_watermark_so_the_next_is_turns_away() {
        let mut sim = Sim::new(128_000, 12_000);
        for turn in 0..60 {
            sim.turn(turn);
        }
        assert!(sim.rewrites.len() >= 3, "{:?}", sim.rewrites);
        let limits = sim.limits;
        assert_eq!(limits.relief, limits.snip_at / 2, "{limits:?}");
        // Each request grows the prompt by at most one result and a few short messages.
        let growth = 12_000 + 200;
        let promised = ((limits.snip_at - limits.relief) / growth) as usize;
        assert!(promised >= 2, "{promised}");
        for (request, tier, after) in &sim.rewrites {
            assert!(
                *after <= limits.relief,
                "request {request}: {tier} left {after} tokens, above the low watermark {}",
                limits.relief
            );
        }
        let breaks = sim.breaks();
        let rewrites: Vec<usize> = sim.rewrites.iter().map(|r| r.0).collect();
        assert_eq!(
            breaks, rewrites,
            "every prefix change is a reported rewrite"
        );
        for pair in breaks.windows(2) {
            assert!(
                pair[1] - pair[0] > promised,
                "prefix changes at requests {} and {}: fewer than {promised} append-only requests between",
                pair[0],
                pair[1]
            );
        }
    }

    #[test]
    fn a_small_window_snips_seen_results_instead_of_asking_for_summaries() {
        let mut sim = Sim::new(16_000, 6_000);
        for turn in 0..40 {
            sim.turn(turn);
        }
        let folds = sim.rewrites.iter().filter(|r| r.1 == "fold").count();
        assert!(folds <= 4, "{folds} folds in 40 turns: {:?}", sim.rewrites);
        let peak = sim
            .requests
            .iter()
            .map(|r| costs(r).iter().sum::<u64>())
            .max();
        assert!(peak < Some(16_000), "{peak:?}");
    }

    #[test]
    fn a_result_reaches_the_model_in_full_before_it_is_shortened() {
        for (window, result) in [(128_000, 12_000), (16_000, 6_000), (8_000, 3_000)] {
            let mut sim = Sim::new(window, result);
            for turn in 0..30 {
                sim.turn(turn);
            }
            // Request 2k+1 is the first to carry turn k's result; it must be there in full.
            for (turn, request) in sim.requests.iter().skip(1).step_by(2).enumerate() {
                let id = format!("call_{turn}");
                let sent = request
                    .iter()
                    .find(|m| m.tool_call_id.as_deref() == Some(&id))
                    .unwrap_or_else(|| panic!("window {window}: result {turn} missing"));
                assert!(
                    sent.content.starts_with(&format!("file {turn}\n")) && !is_snipped(sent),
                    "window {window}: turn {turn}'s result was shortened before the model saw it: {}",
                    &sent.content[..80.min(sent.content.len())]
                );
            }
        }
    }

    #[test]
    fn the_unseen_results_are_part_of_the_tail_whatever_its_budget() {
        let mut history = vec![Message::system("sys"), Message::user("go")];
        let mut call = Message::assistant("");
        call.tool_calls = vec![
            ToolCall::new("a", "read_file", "{}"),
            ToolCall::new("b", "read_file", "{}"),
        ];
        history.push(call);
        history.push(Message::tool_result("a", output(2_000, 1)));
        history.push(Message::tool_result("b", output(2_000, 2)));
        let costs = costs(&history);
        // Not seen yet: nothing after the last assistant message can be rewritten, and the
        // tail starts at that message so the calls keep their results.
        assert_eq!(tail_start(&history, &costs, 0), 2);
        assert!(shorten_stale(&mut history.clone(), 2, Shorten::Prune).is_empty());
        history.push(Message::assistant("seen both"));
        history.push(Message::user("next"));
        let costs = super::hysteresis_tests::costs(&history);
        assert_eq!(tail_start(&history, &costs, 0), 6);
    }

    #[test]
    fn user_messages_survive_every_fold_verbatim_however_long() {
        let mut sim = Sim::new(8_000, 1_500);
        let paste = format!("Remember the port 8080. {}", output(900, 9));
        sim.history.push(Message::user(paste.clone()));
        for turn in 0..40 {
            sim.turn(turn);
        }
        assert!(
            sim.rewrites.iter().any(|r| r.1 == "fold"),
            "{:?}",
            sim.rewrites
        );
        let users: Vec<&str> = sim
            .history
            .iter()
            .filter(|m| m.role == Role::User && !is_digest(m))
            .map(|m| m.content.as_str())
            .collect();
        let mut expected = vec![paste.as_str()];
        let facts: Vec<String> = (0..40).map(fact).collect();
        expected.extend(facts.iter().map(String::as_str));
        assert_eq!(users, expected);
    }
}
