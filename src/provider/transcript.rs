//! [`Transcript`]: a conversation with each message's request JSON encoded once, when the
//! message is added, so that a request body is assembled by copying bytes instead of
//! re-serialising the history every round (cost per round independent of the history's
//! length). It also keeps the FNV state of the body after the last message hashed, so the
//! body's hash rolls forward over new messages only.
//!
//! The encoded bytes are the only copy of the history it keeps per message: the structured
//! [`Message`]s are decoded from them when first asked for, which halves what a long session
//! holds in memory. They live in fixed-capacity segments rather than one growing buffer: a
//! buffer that doubles is copied on every growth and leaves its old copy behind on the heap
//! (and half its capacity unused on average), which made a long session's memory grow by
//! about twice its history.
//!
//! The encoding is the one the request body has always had (`openai::message_json`, keys in
//! canonical order); `openai::request_body` builds the same bytes from scratch and a debug
//! assertion in the provider holds the two together.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::openai::message_json;
use super::Message;
use crate::hash::fnv_continue;

/// The capacity of a segment of encoded messages; a larger message gets a segment of its own,
/// of its exact size. Small in unit tests, so they cross segment boundaries.
const SEGMENT: usize = if cfg!(test) { 256 } else { 64 * 1024 };

/// A closed segment with at least this much capacity unused is shrunk to its length.
const SHRINK_AT: usize = if cfg!(test) { 64 } else { 4096 };

/// A history shared cheaply between the session and the request being sent: cloning it
/// copies a pointer. Appending to a transcript that a request still holds copies it first,
/// so callers drop requests before the history grows.
#[derive(Clone, Default)]
pub struct Transcript(Arc<Encoded>);

/// The encoded messages are the history; the structured form is decoded from them only when
/// asked for (compaction, a resumed session's repair, the interface). Keeping both for every
/// message would hold the history twice, in the larger form.
#[derive(Default)]
struct Encoded {
    /// The inside of the body's `messages` array (the messages' JSON joined by commas), cut
    /// into segments that are never reallocated once full. A message never straddles two:
    /// the comma before it travels with it.
    segments: Vec<Vec<u8>>,
    /// Where each segment starts in the joined bytes.
    starts: Vec<usize>,
    /// Where each message's JSON ends in the joined bytes (its comma, if any, comes after).
    ends: Vec<usize>,
    /// The structured messages, once someone asked for them; from then on kept in step with
    /// the bytes, so asking every round costs only what was appended.
    decoded: OnceLock<Vec<Message>>,
    /// The FNV state after the body head and the messages hashed so far.
    chain: Mutex<Chain>,
}

/// The FNV state of `head ++ bytes` up to the end of message `hashed - 1`, for one head
/// state (`seed`); `None` before anything was hashed.
#[derive(Clone, Copy, Default)]
struct Chain {
    seed: Option<u64>,
    hashed: usize,
    state: u64,
}

impl Clone for Encoded {
    fn clone(&self) -> Self {
        Encoded {
            segments: self.segments.clone(),
            starts: self.starts.clone(),
            ends: self.ends.clone(),
            decoded: self.decoded.clone(),
            chain: Mutex::new(*self.chain.lock().unwrap_or_else(PoisonError::into_inner)),
        }
    }
}

/// Appends `value` (a message's request JSON) to `bytes`, as `serde_json::to_writer` writes
/// it. Writing a `Value` into memory cannot fail; `null` keeps the bytes JSON if it ever did.
fn encode_value(bytes: &mut Vec<u8>, value: &serde_json::Value) {
    let len = bytes.len();
    if serde_json::to_writer(&mut *bytes, value).is_err() {
        bytes.truncate(len);
        bytes.extend_from_slice(b"null");
    }
}

impl Encoded {
    fn push(&mut self, mut message: Message) {
        let comma = !self.ends.is_empty();
        // Encoded once, into a buffer of its own, and then copied (a copy, not a second
        // encoding): into the last segment's spare capacity when it fits there, never
        // growing it, else into a segment of its own.
        let mut encoded = Vec::new();
        encode_value(&mut encoded, &message_json(&message));
        let len = usize::from(comma) + encoded.len();
        match self.segments.last_mut() {
            Some(segment) if segment.capacity() - segment.len() >= len => {
                if comma {
                    segment.push(b',');
                }
                segment.extend_from_slice(&encoded);
            }
            _ => self.open_segment(comma, &encoded),
        }
        let (start, segment) = (self.starts.last(), self.segments.last());
        self.ends
            .push(start.copied().unwrap_or(0) + segment.map_or(0, Vec::len));
        if let Some(decoded) = self.decoded.get_mut() {
            shrink(&mut message);
            decoded.push(message);
        }
    }

    /// Starts a segment holding `encoded` (a message's JSON, after a comma if `comma`):
    /// [`SEGMENT`] bytes, or exactly the message when it is larger. The full segment before
    /// it is closed.
    fn open_segment(&mut self, comma: bool, encoded: &[u8]) {
        if let Some(last) = self.segments.last_mut() {
            if last.capacity() - last.len() >= SHRINK_AT {
                last.shrink_to_fit();
            }
        }
        let start =
            self.starts.last().copied().unwrap_or(0) + self.segments.last().map_or(0, Vec::len);
        let len = usize::from(comma) + encoded.len();
        let mut segment = Vec::with_capacity(len.max(SEGMENT));
        if comma {
            segment.push(b',');
        }
        segment.extend_from_slice(encoded);
        self.segments.push(segment);
        self.starts.push(start);
    }

    /// Drops every message from `len` on, with its bytes; the hash rolls from the start again
    /// if it had covered any of them.
    fn truncate(&mut self, len: usize) {
        if len >= self.ends.len() {
            return;
        }
        self.ends.truncate(len);
        let total = self.ends.last().copied().unwrap_or(0);
        // Segments that start at or past the new end hold only dropped messages (the first
        // segment stays, emptied, when nothing is kept).
        let keep = self.starts.partition_point(|&start| start < total).max(1);
        self.segments.truncate(keep);
        self.starts.truncate(keep);
        if let (Some(segment), Some(start)) = (self.segments.last_mut(), self.starts.last()) {
            segment.truncate(total - start);
        }
        if let Some(decoded) = self.decoded.get_mut() {
            decoded.truncate(len);
        }
        let chain = self.chain.get_mut().unwrap_or_else(PoisonError::into_inner);
        if chain.hashed > len {
            *chain = Chain::default();
        }
    }

    /// Message `i`'s JSON, preceded by its comma unless it is the first.
    fn raw(&self, i: usize) -> &[u8] {
        // The comma that ends the message before is this message's first byte.
        let from = match i {
            0 => 0,
            _ => self.ends[i - 1],
        };
        let segment = self.starts.partition_point(|&start| start <= from) - 1;
        let start = self.starts[segment];
        &self.segments[segment][from - start..self.ends[i] - start]
    }

    /// Message `i`'s JSON.
    fn slice(&self, i: usize) -> &[u8] {
        let raw = self.raw(i);
        match i {
            0 => raw,
            _ => &raw[1..],
        }
    }

    /// Whether message `i` is `message`, judged by its encoding (which tells messages apart).
    fn holds(&self, i: usize, message: &Message, scratch: &mut Vec<u8>) -> bool {
        if i >= self.ends.len() {
            return false;
        }
        scratch.clear();
        encode_value(scratch, &message_json(message));
        scratch[..] == *self.slice(i)
    }

    fn decode(&self, i: usize) -> Message {
        // The bytes are a `Message` serialised by us, so they always decode; should that
        // ever fail, an empty system message beats a panic.
        serde_json::from_slice(self.slice(i)).unwrap_or_else(|_| Message::system(""))
    }

    fn messages(&self) -> &[Message] {
        self.decoded
            .get_or_init(|| (0..self.ends.len()).map(|i| self.decode(i)).collect())
    }
}

/// Drops the spare capacity a message's strings grew while it streamed in: a session keeps
/// every message, so slack would be paid for as long as the history lives.
fn shrink(message: &mut Message) {
    message.content.shrink_to_fit();
    for text in [
        &mut message.reasoning_content,
        &mut message.tool_call_id,
        &mut message.name,
    ]
    .into_iter()
    .flatten()
    {
        text.shrink_to_fit();
    }
    message.tool_calls.shrink_to_fit();
    for call in &mut message.tool_calls {
        call.id.shrink_to_fit();
        call.kind.shrink_to_fit();
        call.function.name.shrink_to_fit();
        call.function.arguments.shrink_to_fit();
    }
}

impl Transcript {
    pub fn new() -> Transcript {
        Transcript::default()
    }

    pub fn push(&mut self, message: Message) {
        Arc::make_mut(&mut self.0).push(message);
    }

    /// Whether another handle (a request still being sent) holds this history, in which case
    /// the next append copies it.
    pub fn is_shared(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }

    /// Replaces the history, re-encoding only from the first message that differs, so a
    /// rewrite late in a long history costs what it changed.
    pub fn replace(&mut self, messages: Vec<Message>) {
        let mut scratch = Vec::new();
        let same = messages
            .iter()
            .enumerate()
            .take_while(|(i, message)| self.0.holds(*i, message, &mut scratch))
            .count();
        let encoded = Arc::make_mut(&mut self.0);
        encoded.truncate(same);
        for message in messages.into_iter().skip(same) {
            encoded.push(message);
        }
    }

    /// The structured messages, decoded on the first call (see [`Encoded`]).
    pub fn messages(&self) -> &[Message] {
        self.0.messages()
    }

    /// How many messages there are, without decoding them.
    pub fn len(&self) -> usize {
        self.0.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.ends.is_empty()
    }

    /// Whether a message carries `reasoning_content` (even empty): the provider that answered
    /// it sent reasoning. Read from the bytes, where only a key has the quotes unescaped, so
    /// the history is not decoded for it. No message straddles two segments, so neither
    /// does a key.
    pub fn has_reasoning(&self) -> bool {
        let key = b"\"reasoning_content\":";
        self.segments()
            .any(|segment| segment.windows(key.len()).any(|w| w == key))
    }

    /// The inside of the body's `messages` array (every message's JSON, comma-separated) as
    /// consecutive slices, sent in order without joining them.
    pub fn segments(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.0.segments.iter().map(Vec::as_slice)
    }

    /// [`Transcript::segments`] joined into one buffer, for tests and debug checks.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.segments().collect::<Vec<_>>().concat()
    }

    /// The FNV-1a state after `head_state` (the state at the opening `[`) and all of the
    /// message bytes. Only messages not hashed before for the same head are read.
    pub fn hash_after(&self, head_state: u64) -> u64 {
        let encoded = &*self.0;
        let mut chain = encoded.chain.lock().unwrap_or_else(PoisonError::into_inner);
        if chain.seed != Some(head_state) {
            *chain = Chain {
                seed: Some(head_state),
                hashed: 0,
                state: head_state,
            };
        }
        while chain.hashed < encoded.ends.len() {
            chain.state = fnv_continue(chain.state, encoded.raw(chain.hashed));
            chain.hashed += 1;
        }
        chain.state
    }
}

impl Deref for Transcript {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        self.0.messages()
    }
}

impl From<Vec<Message>> for Transcript {
    fn from(messages: Vec<Message>) -> Self {
        let mut encoded = Encoded::default();
        for message in messages {
            encoded.push(message);
        }
        Transcript(Arc::new(encoded))
    }
}

impl PartialEq for Transcript {
    /// Equal encodings are equal messages.
    fn eq(&self, other: &Self) -> bool {
        // Two equal histories may be cut into segments differently.
        self.0.ends == other.0.ends && self.segments().flatten().eq(other.segments().flatten())
    }
}

impl fmt::Debug for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.messages()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    fn history() -> Vec<Message> {
        let mut without_reasoning = Message::assistant("");
        without_reasoning
            .tool_calls
            .push(ToolCall::new("c1", "read_file", r#"{"path":"a.txt"}"#));
        let mut empty_reasoning = without_reasoning.clone();
        empty_reasoning.reasoning_content = Some(String::new());
        let mut reasoning = without_reasoning.clone();
        reasoning.reasoning_content = Some("think \"quoted\" \u{1f600}".into());
        vec![
            Message::system("sys"),
            Message::user("héllo\n\t\"x\""),
            without_reasoning,
            Message::tool_result("c1", "1\thello\n"),
            empty_reasoning,
            Message::tool_result("c1", ""),
            reasoning,
            Message::assistant("done"),
        ]
    }

    #[test]
    fn messages_decode_from_the_bytes_exactly_as_they_were_pushed() {
        let mut transcript = Transcript::new();
        for message in history() {
            transcript.push(message);
        }
        assert_eq!(transcript.len(), history().len());
        assert_eq!(transcript.messages(), &history()[..]);
        // Once decoded, later pushes keep the decoded form in step.
        transcript.push(Message::user("more"));
        let mut expected = history();
        expected.push(Message::user("more"));
        assert_eq!(transcript.messages(), &expected[..]);
        assert_eq!(Transcript::from(expected.clone()).messages(), &expected[..]);
    }

    #[test]
    fn reasoning_is_found_as_a_key_never_in_text() {
        assert!(Transcript::from(history()).has_reasoning());
        let mut without = history();
        without.retain(|m| m.reasoning_content.is_none());
        without.push(Message::user("\"reasoning_content\": in a message"));
        assert!(!Transcript::from(without).has_reasoning());
    }

    #[test]
    fn replace_keeps_the_bytes_of_the_unchanged_prefix_and_tells_none_from_empty_reasoning() {
        let mut transcript = Transcript::from(history());
        let before = transcript.to_bytes();
        // Message 4 differs from message 2 only in `Some("")` against `None`.
        let mut changed = history();
        changed[4].reasoning_content = None;
        transcript.replace(changed.clone());
        let prefix = transcript.0.ends[3];
        assert_eq!(transcript.to_bytes()[..prefix], before[..prefix]);
        assert_ne!(transcript.to_bytes(), before);
        assert_eq!(transcript.messages(), &changed[..]);
        assert_ne!(transcript, Transcript::from(history()));
        let mut shorter = history();
        shorter.truncate(3);
        shorter.push(Message::tool_result("c1", "other"));
        transcript.replace(shorter.clone());
        assert_eq!(transcript.messages(), &shorter[..]);
        assert_eq!(transcript, Transcript::from(shorter));
    }

    /// The joined bytes of `messages` as the body has always carried them.
    fn joined(messages: &[Message]) -> Vec<u8> {
        let parts: Vec<Vec<u8>> = messages
            .iter()
            .map(|m| serde_json::to_vec(&message_json(m)).unwrap())
            .collect();
        parts.join(&b","[..])
    }

    /// Messages of every size around the (test) segment capacity, one larger than it.
    fn sized_history() -> Vec<Message> {
        [
            0,
            10,
            150,
            230,
            250,
            3,
            SEGMENT,
            2 * SEGMENT + 7,
            1,
            90,
            200,
            40,
        ]
        .iter()
        .enumerate()
        .map(|(i, &n)| Message::tool_result(format!("c{i}"), "x".repeat(n)))
        .collect()
    }

    #[test]
    fn segments_join_to_the_body_bytes_and_are_never_grown_or_moved() {
        let history = sized_history();
        let mut transcript = Transcript::new();
        let mut seen: Vec<(*const u8, usize)> = Vec::new();
        for (i, message) in history.iter().enumerate() {
            transcript.push(message.clone());
            assert_eq!(transcript.to_bytes(), joined(&history[..=i]), "after {i}");
            let segments: Vec<&[u8]> = transcript.segments().collect();
            // A full segment keeps its place and its bytes: nothing is copied as it grows.
            // (The open one may be shrunk when it closes, which may move it.)
            let closed = seen.len().saturating_sub(1);
            for (k, &(ptr, len)) in seen.iter().enumerate().take(closed) {
                assert_eq!(segments[k].as_ptr(), ptr, "segment {k} moved");
                assert!(segments[k].len() >= len);
            }
            seen = segments.iter().map(|s| (s.as_ptr(), s.len())).collect();
            for (k, segment) in transcript.0.segments.iter().enumerate() {
                let largest = history.iter().map(|m| m.content.len() + 64).max().unwrap();
                assert!(segment.capacity() <= SEGMENT.max(largest), "segment {k}");
            }
        }
        assert!(transcript.segments().count() > 3);
        assert_eq!(transcript.messages(), &history[..]);
        assert_eq!(transcript, Transcript::from(history.clone()));
    }

    /// A message with escapes that fills the last segment's spare capacity to the byte goes
    /// into it without growing it; one byte more opens a segment. So the measured length is
    /// the encoded length, escapes included.
    #[test]
    fn a_message_that_exactly_fills_the_spare_capacity_goes_into_it() {
        for extra in [0, 1] {
            let mut transcript = Transcript::from(vec![Message::system("s")]);
            let spare = {
                let segment = &transcript.0.segments[0];
                segment.capacity() - segment.len()
            };
            // `,{"content":"…","role":"user"}` around escaped text: `\"` is two bytes.
            let frame = ",{\"content\":\"\",\"role\":\"user\"}".len();
            let fill = spare - frame + extra;
            // Escapes of every length, then plain bytes up to the exact size.
            let quoted_len = |text: &str| serde_json::to_vec(text).unwrap().len();
            let mut text = String::new();
            for c in "\"\n\u{1}é".chars().cycle() {
                if quoted_len(&text) + 6 > fill + 2 {
                    break;
                }
                text.push(c);
            }
            text.push_str(&"x".repeat(fill + 2 - quoted_len(&text)));
            let (capacity, len) = {
                let segment = &transcript.0.segments[0];
                (segment.capacity(), segment.len())
            };
            let mut history = vec![Message::system("s"), Message::user(text)];
            transcript.push(history[1].clone());
            assert_eq!(transcript.0.segments.len(), 1 + extra, "extra {extra}");
            if extra == 0 {
                assert_eq!(transcript.0.segments[0].capacity(), capacity);
            } else {
                // Closed (and shrunk) as it was: the message went to a segment of its own.
                assert_eq!(transcript.0.segments[0].len(), len);
            }
            assert_eq!(transcript.to_bytes(), joined(&history));
            history.push(Message::assistant("after"));
            transcript.push(history[2].clone());
            assert_eq!(transcript.to_bytes(), joined(&history));
            assert_eq!(transcript.messages(), &history[..]);
        }
    }

    #[test]
    fn the_rolling_hash_and_the_bytes_survive_truncation_at_every_length() {
        let history = sized_history();
        let head = crate::hash::fnv1a(b"{\"messages\":[");
        for keep in 0..=history.len() {
            let mut transcript = Transcript::from(history.clone());
            transcript.hash_after(head);
            let mut changed = history[..keep].to_vec();
            changed.push(Message::user("after the cut"));
            changed.push(Message::tool_result("z", "y".repeat(SEGMENT / 2)));
            transcript.replace(changed.clone());
            assert_eq!(transcript.to_bytes(), joined(&changed), "keeping {keep}");
            assert_eq!(
                transcript.hash_after(head),
                fnv_continue(head, &joined(&changed)),
                "keeping {keep}"
            );
            assert_eq!(Transcript::from(changed.clone()).messages(), &changed[..]);
            assert_eq!(transcript.messages(), &changed[..]);
            // Hashed up to `keep`, then rolled forward over what is appended after it.
            let mut growing = Transcript::from(history[..keep].to_vec());
            growing.hash_after(head);
            growing.replace(history.clone());
            assert_eq!(
                growing.hash_after(head),
                fnv_continue(head, &joined(&history))
            );
        }
    }
}
