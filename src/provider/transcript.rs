//! [`Transcript`]: a conversation with each message's request JSON encoded once, when the
//! message is added, so that a request body is assembled by copying bytes instead of
//! re-serialising the history every round (cost per round independent of the history's
//! length). It also keeps the FNV state of the body at the end of every message, so the
//! body's hash rolls forward over new messages only.
//!
//! The encoded bytes are the only copy of the history it keeps per message: the structured
//! [`Message`]s are decoded from them when first asked for, which halves what a long session
//! holds in memory.
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
    /// The messages' JSON joined by commas: the inside of the body's `messages` array.
    bytes: Vec<u8>,
    /// Where each message's JSON ends in `bytes` (its comma, if any, comes after).
    ends: Vec<usize>,
    /// The structured messages, once someone asked for them; from then on kept in step with
    /// `bytes`, so asking every round costs only what was appended.
    decoded: OnceLock<Vec<Message>>,
    /// FNV states at the message ends, for the body head that leads up to the array.
    chain: Mutex<Chain>,
}

/// FNV states of `head ++ bytes[..ends[i]]` for one head state (`seed`).
#[derive(Clone, Default)]
struct Chain {
    seed: u64,
    states: Vec<u64>,
}

impl Clone for Encoded {
    fn clone(&self) -> Self {
        Encoded {
            bytes: self.bytes.clone(),
            ends: self.ends.clone(),
            decoded: self.decoded.clone(),
            chain: Mutex::new(
                self.chain
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone(),
            ),
        }
    }
}

/// Appends `message`'s request JSON to `bytes`.
fn encode(bytes: &mut Vec<u8>, message: &Message) {
    // A Value serialises without failing; the fallback keeps the body valid JSON.
    if serde_json::to_writer(&mut *bytes, &message_json(message)).is_err() {
        bytes.extend_from_slice(b"null");
    }
}

impl Encoded {
    fn push(&mut self, mut message: Message) {
        if !self.ends.is_empty() {
            self.bytes.push(b',');
        }
        encode(&mut self.bytes, &message);
        self.ends.push(self.bytes.len());
        if let Some(decoded) = self.decoded.get_mut() {
            shrink(&mut message);
            decoded.push(message);
        }
    }

    /// Drops every message from `len` on, with its bytes and hash states.
    fn truncate(&mut self, len: usize) {
        if len >= self.ends.len() {
            return;
        }
        self.ends.truncate(len);
        self.bytes.truncate(self.ends.last().copied().unwrap_or(0));
        if let Some(decoded) = self.decoded.get_mut() {
            decoded.truncate(len);
        }
        let chain = self.chain.get_mut().unwrap_or_else(PoisonError::into_inner);
        chain.states.truncate(len);
    }

    /// Message `i`'s JSON.
    fn slice(&self, i: usize) -> &[u8] {
        // Past the comma that ends the message before.
        let start = match i {
            0 => 0,
            _ => self.ends[i - 1] + 1,
        };
        &self.bytes[start..self.ends[i]]
    }

    /// Whether message `i` is `message`, judged by its encoding (which tells messages apart).
    fn holds(&self, i: usize, message: &Message, scratch: &mut Vec<u8>) -> bool {
        if i >= self.ends.len() {
            return false;
        }
        scratch.clear();
        encode(scratch, message);
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
    /// the history is not decoded for it.
    pub fn has_reasoning(&self) -> bool {
        let key = b"\"reasoning_content\":";
        self.0.bytes.windows(key.len()).any(|w| w == key)
    }

    /// The inside of the body's `messages` array: every message's JSON, comma-separated.
    pub fn bytes(&self) -> &[u8] {
        &self.0.bytes
    }

    /// The FNV-1a state after `head_state` (the state at the opening `[`) and all of
    /// [`Transcript::bytes`]. Only messages not hashed before for the same head are read.
    pub fn hash_after(&self, head_state: u64) -> u64 {
        let encoded = &*self.0;
        let mut chain = encoded.chain.lock().unwrap_or_else(PoisonError::into_inner);
        if chain.seed != head_state {
            chain.seed = head_state;
            chain.states.clear();
        }
        while chain.states.len() < encoded.ends.len() {
            let i = chain.states.len();
            let (start, state) = match i {
                0 => (0, head_state),
                _ => (encoded.ends[i - 1], chain.states[i - 1]),
            };
            let next = fnv_continue(state, &encoded.bytes[start..encoded.ends[i]]);
            chain.states.push(next);
        }
        chain.states.last().copied().unwrap_or(head_state)
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
        let bytes: usize = messages.iter().map(|m| m.content.len() + 64).sum();
        encoded.bytes.reserve(bytes);
        for message in messages {
            encoded.push(message);
        }
        Transcript(Arc::new(encoded))
    }
}

impl PartialEq for Transcript {
    /// Equal encodings are equal messages.
    fn eq(&self, other: &Self) -> bool {
        self.0.bytes == other.0.bytes && self.0.ends == other.0.ends
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
        let before = transcript.bytes().to_vec();
        // Message 4 differs from message 2 only in `Some("")` against `None`.
        let mut changed = history();
        changed[4].reasoning_content = None;
        transcript.replace(changed.clone());
        let prefix = transcript.0.ends[3];
        assert_eq!(transcript.bytes()[..prefix], before[..prefix]);
        assert_ne!(transcript.bytes(), &before[..]);
        assert_eq!(transcript.messages(), &changed[..]);
        assert_ne!(transcript, Transcript::from(history()));
        let mut shorter = history();
        shorter.truncate(3);
        shorter.push(Message::tool_result("c1", "other"));
        transcript.replace(shorter.clone());
        assert_eq!(transcript.messages(), &shorter[..]);
        assert_eq!(transcript, Transcript::from(shorter));
    }
}
