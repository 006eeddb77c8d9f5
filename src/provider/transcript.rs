//! [`Transcript`]: a conversation with each message's request JSON encoded once, when the
//! message is added, so that a request body is assembled by copying bytes instead of
//! re-serialising the history every round (cost per round independent of the history's
//! length). It also keeps the FNV state of the body at the end of every message, so the
//! body's hash rolls forward over new messages only.
//!
//! The encoding is the one the request body has always had (`openai::message_json`, keys in
//! canonical order); `openai::request_body` builds the same bytes from scratch and a debug
//! assertion in the provider holds the two together.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError};

use super::openai::message_json;
use super::Message;
use crate::hash::fnv_continue;

/// A history shared cheaply between the session and the request being sent: cloning it
/// copies a pointer. Appending to a transcript that a request still holds copies it first,
/// so callers drop requests before the history grows.
#[derive(Clone, Default)]
pub struct Transcript(Arc<Encoded>);

#[derive(Default)]
struct Encoded {
    messages: Vec<Message>,
    /// The messages' JSON joined by commas: the inside of the body's `messages` array.
    bytes: Vec<u8>,
    /// Where each message's JSON ends in `bytes` (its comma, if any, comes after).
    ends: Vec<usize>,
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
            messages: self.messages.clone(),
            bytes: self.bytes.clone(),
            ends: self.ends.clone(),
            chain: Mutex::new(
                self.chain
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone(),
            ),
        }
    }
}

impl Encoded {
    fn push(&mut self, mut message: Message) {
        shrink(&mut message);
        if !self.ends.is_empty() {
            self.bytes.push(b',');
        }
        // A Value serialises without failing; the fallback keeps the body valid JSON.
        if serde_json::to_writer(&mut self.bytes, &message_json(&message)).is_err() {
            self.bytes.extend_from_slice(b"null");
        }
        self.ends.push(self.bytes.len());
        self.messages.push(message);
    }

    /// Drops every message from `len` on, with its bytes and hash states.
    fn truncate(&mut self, len: usize) {
        if len >= self.messages.len() {
            return;
        }
        self.messages.truncate(len);
        self.ends.truncate(len);
        self.bytes.truncate(self.ends.last().copied().unwrap_or(0));
        let chain = self.chain.get_mut().unwrap_or_else(PoisonError::into_inner);
        chain.states.truncate(len);
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
        let same = self
            .0
            .messages
            .iter()
            .zip(&messages)
            .take_while(|(a, b)| a == b)
            .count();
        let encoded = Arc::make_mut(&mut self.0);
        encoded.truncate(same);
        for message in messages.into_iter().skip(same) {
            encoded.push(message);
        }
    }

    pub fn messages(&self) -> &[Message] {
        &self.0.messages
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
        &self.0.messages
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
    fn eq(&self, other: &Self) -> bool {
        self.0.messages == other.0.messages
    }
}

impl fmt::Debug for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.0.messages).finish()
    }
}
