//! Decoding a streamed chat completion: SSE events to [`Chunk`]s, with tool-call deltas
//! accumulated by index, reasoning split out (fields or leading `<think>` tags), usage
//! normalised across vendors, and a reply that carries nothing turned into an error.
//! Each event's JSON goes through serde_json into wire types that borrow their text from the
//! event (no copy unless it holds escapes). Every part of a reply is counted against the
//! caps of `limits`; crossing one is an error naming it.
//! Sans-IO: the exchange and the replay provider feed it bytes.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::super::limits::{self, Overflow};
use super::super::{net, sse};
use super::super::{Chunk, Detail, ProviderError, ToolCall, Usage};
use super::body::estimate_tokens;
use super::exchange::overflow_error;

/// Decodes a streamed chat completion from raw body bytes into chunks. Sans-IO: the network
/// thread and the replay provider both feed it.
pub struct StreamParser {
    /// Boxed so that taking it out of `self` for a feed moves a pointer, not the decoder:
    /// the body is fed one chunk at a time, one per token.
    decoder: Option<Box<sse::Decoder>>,
    id_seed: u64,
    prompt_estimate: u64,
    calls: BTreeMap<u64, PartialCall>,
    last_call: Option<u64>,
    calls_emitted: bool,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    /// Text or a tool call arrived: a reply without either is an error, not an answer.
    content_seen: bool,
    think: ThinkSplitter,
    content_bytes: usize,
    reasoning_bytes: usize,
    argument_bytes: usize,
    events: usize,
    /// While no event has been decoded, the body so far (up to
    /// [`limits::UNSTREAMED_BODY`]): it is a whole JSON completion when no event comes.
    sniff: Vec<u8>,
    done: bool,
    /// The cap the reply crossed, if it did.
    overflow: Option<Overflow>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Which field of a delta a piece of text came from.
#[derive(Clone, Copy)]
enum TextField {
    Content,
    ReasoningContent,
    Reasoning,
}

#[derive(Deserialize)]
struct WireChunk<'a> {
    #[serde(borrow)]
    choices: Option<Vec<WireChoice<'a>>>,
    usage: Option<Value>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice<'a> {
    index: Option<u64>,
    #[serde(borrow)]
    delta: Option<WireDelta<'a>>,
    /// Some servers put a whole message in the last chunk, or answer without streaming.
    #[serde(borrow)]
    message: Option<WireDelta<'a>>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta<'a> {
    #[serde(default, borrow)]
    content: WireText<'a>,
    #[serde(default, borrow)]
    reasoning_content: WireText<'a>,
    #[serde(default, borrow)]
    reasoning: WireText<'a>,
    #[serde(borrow)]
    tool_calls: Option<Vec<WireToolDelta<'a>>>,
}

#[derive(Deserialize)]
struct WireToolDelta<'a> {
    index: Option<u64>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: Option<WireFunction<'a>>,
}

#[derive(Deserialize)]
struct WireFunction<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    arguments: Option<Value>,
}

impl StreamParser {
    /// `id_seed` makes synthetic tool-call ids; `prompt_estimate` stands in for the prompt
    /// token count when the server reports no usage.
    pub fn new(id_seed: u64, prompt_estimate: u64) -> StreamParser {
        StreamParser {
            decoder: Some(Box::default()),
            id_seed,
            prompt_estimate,
            calls: BTreeMap::new(),
            last_call: None,
            calls_emitted: false,
            finish_reason: None,
            usage: None,
            content_seen: false,
            think: ThinkSplitter::default(),
            content_bytes: 0,
            reasoning_bytes: 0,
            argument_bytes: 0,
            events: 0,
            sniff: Vec::new(),
            done: false,
            overflow: None,
        }
    }

    /// The cap the reply crossed, once it did.
    pub fn overflow(&self) -> Option<Overflow> {
        self.overflow
    }

    /// Remembers the cap crossed and makes its error.
    fn crossed(&mut self, overflow: Overflow) -> ProviderError {
        self.overflow = Some(overflow);
        overflow_error(overflow)
    }

    /// True once `[DONE]` arrived: the caller may stop reading.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Decodes `bytes`, appending finished chunks to `out` (also the ones before an error).
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if let Some(overflow) = self.overflow {
            return Err(overflow_error(overflow));
        }
        if self.events == 0 {
            if self.sniff.len().saturating_add(bytes.len()) > limits::UNSTREAMED_BODY {
                self.sniff = Vec::new();
                return Err(self.crossed(Overflow::UnstreamedBody));
            }
            self.sniff.extend_from_slice(bytes);
        } else if !self.sniff.is_empty() {
            // An event stream: the body is not kept.
            self.sniff = Vec::new();
        }
        // Out of `self` while it calls back into `self`.
        let mut decoder = self.decoder.take().unwrap_or_default();
        let mut result = Ok(());
        decoder.feed_with(bytes, &mut |event| {
            if result.is_ok() && !self.done {
                self.events += 1;
                result = self.on_event(event, out);
            }
        });
        let overflow = decoder.overflow();
        self.decoder = Some(decoder);
        match overflow {
            Some(overflow) if result.is_ok() => Err(self.crossed(overflow)),
            _ => result,
        }
    }

    /// The body ended. Complete if `[DONE]` or a `finish_reason` arrived; otherwise an error,
    /// and tool calls still being assembled are dropped rather than emitted half-made.
    pub fn finish(&mut self, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if let Some(event) = self.decoder.as_mut().and_then(|d| d.finish()) {
            self.events += 1;
            let event = sse::EventRef {
                event: &event.event,
                data: &event.data,
                id: &event.id,
            };
            self.on_event(event, out)?;
            if self.done {
                return Ok(());
            }
        }
        if self.events == 0 {
            return self.finish_unstreamed(out);
        }
        if self.finish_reason.is_none() {
            return Err(ProviderError::Stream(
                "the reply ended early: no finish_reason and no [DONE] (the server or a proxy \
                 cut the stream)"
                    .into(),
            ));
        }
        self.complete(out)
    }

    fn on_event(
        &mut self,
        event: sse::EventRef<'_>,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let data = crate::text::trim_fast(event.data);
        if event.event == "error" {
            return Err(ProviderError::Stream(
                format!("the server reported an error: {}", net::error_message(data)).into(),
            ));
        }
        if !event.is_message() || data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            return self.complete(out);
        }
        let chunk: WireChunk = serde_json::from_str(data).map_err(|e| {
            let text = format!(
                "malformed JSON in a stream event ({e}): {}",
                crate::text::one_line(data, 120)
            );
            ProviderError::Stream(Detail::caused(text, e))
        })?;
        self.on_chunk(chunk, out)
    }

    fn on_chunk(
        &mut self,
        chunk: WireChunk<'_>,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let message = net::error_message(&error.to_string());
            let message = if message.is_empty() {
                crate::text::one_line(&error.to_string(), 300)
            } else {
                message
            };
            return Err(ProviderError::Stream(
                format!("the server reported an error mid-stream: {message}").into(),
            ));
        }
        for choice in chunk.choices.unwrap_or_default() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta.or(choice.message) {
                self.on_delta(delta, out)?;
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.on_finish(reason, out);
            }
        }
        if let Some(usage) = chunk.usage.as_ref().and_then(normalise_usage) {
            self.usage = Some(usage);
        }
        Ok(())
    }

    fn on_delta(
        &mut self,
        delta: WireDelta<'_>,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        let texts = [
            (TextField::ReasoningContent, delta.reasoning_content.0),
            (TextField::Reasoning, delta.reasoning.0),
            (TextField::Content, delta.content.0),
        ];
        for (field, text) in texts {
            if let Some(text) = text {
                self.on_text(field, text, out)?;
            }
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.on_tool_delta(call)?;
        }
        Ok(())
    }

    /// A delta's text in `field`, borrowed from the event unless it held escapes, copied
    /// straight onto the chunk being built.
    fn on_text(
        &mut self,
        field: TextField,
        text: Cow<'_, str>,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        match field {
            TextField::Content => {
                self.content_bytes = self.content_bytes.saturating_add(text.len());
                if self.content_bytes > limits::CONTENT {
                    return Err(self.crossed(Overflow::Content));
                }
                self.content_seen |= !crate::text::is_blank(&text);
                self.think.push(text, out);
            }
            TextField::ReasoningContent | TextField::Reasoning => {
                self.reasoning_bytes = self.reasoning_bytes.saturating_add(text.len());
                if self.reasoning_bytes > limits::REASONING {
                    return Err(self.crossed(Overflow::Reasoning));
                }
                push_text(out, Piece::Reasoning, text);
            }
        }
        Ok(())
    }

    fn on_tool_delta(&mut self, delta: WireToolDelta<'_>) -> Result<(), ProviderError> {
        let id = delta.id.filter(|id| !id.is_empty());
        let index = match (delta.index, &id) {
            (Some(index), _) => index,
            // Without an index, a new id starts a new call and a known id continues one.
            (None, Some(id)) => self
                .calls
                .iter()
                .find(|(_, c)| c.id.as_deref() == Some(id.as_ref()))
                .map(|(i, _)| *i)
                .unwrap_or_else(|| {
                    self.calls
                        .keys()
                        .next_back()
                        .map_or(0, |i| i.saturating_add(1))
                }),
            (None, None) => self.last_call.unwrap_or(0),
        };
        if !self.calls.contains_key(&index) && self.calls.len() >= limits::TOOL_CALLS {
            return Err(self.crossed(Overflow::ToolCalls));
        }
        self.last_call = Some(index);
        let call = self.calls.entry(index).or_default();
        if call.id.is_none() {
            call.id = id.map(Cow::into_owned);
        }
        let Some(function) = delta.function else {
            return Ok(());
        };
        // Some servers repeat the name in every delta: set it, never append.
        if let Some(name) = function.name.filter(|n| !n.is_empty()) {
            call.name = name.into_owned();
        }
        let fragment = match function.arguments {
            Some(Value::String(fragment)) => fragment,
            Some(Value::Null) | None => return Ok(()),
            Some(other) => other.to_string(),
        };
        self.argument_bytes = self.argument_bytes.saturating_add(fragment.len());
        if self.argument_bytes > limits::TOOL_ARGUMENTS {
            return Err(self.crossed(Overflow::ToolArguments));
        }
        call.arguments.push_str(&fragment);
        Ok(())
    }

    fn on_finish(&mut self, reason: String, out: &mut Vec<Chunk>) {
        if self.finish_reason.is_none() {
            self.finish_reason = Some(reason);
        }
        self.emit_calls(out);
    }

    fn emit_calls(&mut self, out: &mut Vec<Chunk>) {
        if self.calls_emitted {
            return;
        }
        self.calls_emitted = true;
        self.think.flush(out);
        for (index, call) in std::mem::take(&mut self.calls) {
            if call.name.is_empty() && call.arguments.trim().is_empty() {
                continue;
            }
            let id = call
                .id
                .unwrap_or_else(|| format!("call_{:016x}_{index}", self.id_seed));
            let arguments = if call.arguments.trim().is_empty() {
                "{}".to_string()
            } else {
                call.arguments
            };
            self.content_seen = true;
            out.push(Chunk::ToolCall(ToolCall::new(id, call.name, arguments)));
        }
    }

    /// The reply is whole: flush everything, then usage (reported or estimated), then Done.
    /// A reply with neither text nor a tool call (only `[DONE]`, empty `choices`, null
    /// deltas, or reasoning alone) is [`ProviderError::EmptyReply`]: taking it as an answer
    /// would end the run as a success that did nothing.
    fn complete(&mut self, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        self.think.flush(out);
        let had_calls = !self.calls.is_empty();
        self.emit_calls(out);
        self.done = true;
        if !self.content_seen {
            return Err(ProviderError::EmptyReply {
                finish_reason: self.finish_reason.take(),
            });
        }
        let usage = self.usage.unwrap_or(Usage {
            prompt_tokens: self.prompt_estimate,
            completion_tokens: estimate_tokens(
                self.content_bytes + self.reasoning_bytes + self.argument_bytes,
            ),
            cache_miss_tokens: self.prompt_estimate,
            estimated: true,
            ..Usage::default()
        });
        out.push(Chunk::Usage(usage));
        let finish_reason = self
            .finish_reason
            .take()
            .unwrap_or_else(|| if had_calls { "tool_calls" } else { "stop" }.to_string());
        out.push(Chunk::Done { finish_reason });
        Ok(())
    }

    /// No event at all: a server that ignored `stream: true` and sent one JSON completion,
    /// an error object, or something that is not an API reply.
    fn finish_unstreamed(&mut self, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        let sniff = std::mem::take(&mut self.sniff);
        let text = String::from_utf8_lossy(&sniff);
        let trimmed = text.trim_start_matches('\u{feff}').trim();
        if trimmed.is_empty() {
            return Err(ProviderError::Stream(
                "the server sent an empty reply".into(),
            ));
        }
        let not_a_stream = || {
            ProviderError::Stream(
                format!(
                    "the reply is neither an event stream nor a chat completion: {}",
                    crate::text::one_line(trimmed, 120)
                )
                .into(),
            )
        };
        if !trimmed.starts_with('{') {
            return Err(not_a_stream());
        }
        let chunk: WireChunk = serde_json::from_str(trimmed).map_err(|_| not_a_stream())?;
        if chunk.choices.as_ref().is_none_or(|c| c.is_empty()) && chunk.error.is_none() {
            return Err(not_a_stream());
        }
        self.on_chunk(chunk, out)?;
        self.complete(out)
    }
}

/// A delta's text field: a string (borrowed from the event when it holds no escape), or an
/// array of parts whose text parts are joined; `None` for null, a missing field or any other
/// value. No `Value` in between.
#[derive(Default)]
struct WireText<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for WireText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(WireTextVisitor(std::marker::PhantomData))
    }
}

struct WireTextVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> serde::de::Visitor<'de> for WireTextVisitor<'a> {
    type Value = WireText<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("text, an array of parts or null")
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, text: &'de str) -> Result<WireText<'a>, E> {
        Ok(WireText(Some(Cow::Borrowed(text))))
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<WireText<'a>, E> {
        Ok(WireText(Some(Cow::Owned(text.to_string()))))
    }

    fn visit_string<E: serde::de::Error>(self, text: String) -> Result<WireText<'a>, E> {
        Ok(WireText(Some(Cow::Owned(text))))
    }

    /// Content as an array of parts: keep the text parts.
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut parts: A,
    ) -> Result<WireText<'a>, A::Error> {
        let mut text = String::new();
        while let Some(part) = parts.next_element::<Value>()? {
            if let Some(piece) = part.get("text").and_then(Value::as_str) {
                text.push_str(piece);
            }
        }
        Ok(WireText(Some(Cow::Owned(text))))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<WireText<'a>, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(WireText(None))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<WireText<'a>, E> {
        Ok(WireText(None))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<WireText<'a>, E> {
        Ok(WireText(None))
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<WireText<'a>, E> {
        Ok(WireText(None))
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<WireText<'a>, E> {
        Ok(WireText(None))
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<WireText<'a>, E> {
        Ok(WireText(None))
    }
}

/// Token counts from DeepSeek (`prompt_cache_hit_tokens`/`prompt_cache_miss_tokens`), OpenAI
/// (`prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`) and
/// plain servers (`prompt_tokens`/`completion_tokens` only).
pub fn normalise_usage(usage: &Value) -> Option<Usage> {
    let num = |path: &str| usage.pointer(path).and_then(Value::as_u64);
    let hit = num("/prompt_cache_hit_tokens")
        .or_else(|| num("/prompt_tokens_details/cached_tokens"))
        .or_else(|| num("/input_tokens_details/cached_tokens"));
    let miss = num("/prompt_cache_miss_tokens");
    let prompt = num("/prompt_tokens")
        .or_else(|| num("/input_tokens"))
        .or_else(|| Some(hit? + miss?));
    let completion = num("/completion_tokens").or_else(|| num("/output_tokens"));
    if prompt.is_none() && completion.is_none() {
        return None;
    }
    let prompt = prompt.unwrap_or(0);
    let hit = hit.unwrap_or(0).min(prompt);
    Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion.unwrap_or(0),
        cache_hit_tokens: hit,
        cache_miss_tokens: miss.unwrap_or(prompt - hit),
        reasoning_tokens: num("/completion_tokens_details/reasoning_tokens")
            .or_else(|| num("/output_tokens_details/reasoning_tokens"))
            .unwrap_or(0),
        estimated: false,
    })
}

/// Splits `<think>…</think>` at the start of `content` (servers that inline the reasoning)
/// into reasoning chunks, across arbitrary delta boundaries. Only a leading tag counts, so a
/// model writing about `<think>` tags mid-answer is left alone.
#[derive(Default)]
struct ThinkSplitter {
    state: ThinkState,
    pending: String,
}

#[derive(Default, PartialEq)]
enum ThinkState {
    #[default]
    Start,
    Thinking,
    Text,
}

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

impl ThinkSplitter {
    fn push(&mut self, text: Cow<'_, str>, out: &mut Vec<Chunk>) {
        match self.state {
            ThinkState::Text => push_text(out, Piece::Text, text),
            ThinkState::Start => {
                self.pending.push_str(&text);
                let trimmed = self.pending.trim_start();
                if let Some(rest) = trimmed.strip_prefix(THINK_OPEN) {
                    let rest = rest.to_string();
                    self.pending.clear();
                    self.state = ThinkState::Thinking;
                    self.push(Cow::Owned(rest), out);
                } else if !THINK_OPEN.starts_with(trimmed) {
                    self.state = ThinkState::Text;
                    push_text(out, Piece::Text, take(&mut self.pending));
                }
            }
            ThinkState::Thinking => {
                self.pending.push_str(&text);
                if let Some(pos) = self.pending.find(THINK_CLOSE) {
                    let rest = self.pending[pos + THINK_CLOSE.len()..]
                        .trim_start_matches(['\r', '\n'])
                        .to_string();
                    self.pending.truncate(pos);
                    push_text(out, Piece::Reasoning, take(&mut self.pending));
                    self.state = ThinkState::Text;
                    push_text(out, Piece::Text, Cow::Owned(rest));
                } else {
                    // Hold back a tail that could be the start of the closing tag.
                    let keep = (1..THINK_CLOSE.len())
                        .rev()
                        .find(|k| self.pending.ends_with(&THINK_CLOSE[..*k]))
                        .unwrap_or(0);
                    let tail = self.pending.split_off(self.pending.len() - keep);
                    let done = std::mem::replace(&mut self.pending, tail);
                    push_text(out, Piece::Reasoning, Cow::Owned(done));
                }
            }
        }
    }

    fn flush(&mut self, out: &mut Vec<Chunk>) {
        let pending = take(&mut self.pending);
        match self.state {
            ThinkState::Start => push_text(out, Piece::Text, pending),
            ThinkState::Thinking => push_text(out, Piece::Reasoning, pending),
            ThinkState::Text => {}
        }
    }
}

/// `text`, emptied, as an owned piece.
fn take(text: &mut String) -> Cow<'static, str> {
    Cow::Owned(std::mem::take(text))
}

/// Which kind of chunk a piece of text goes to.
#[derive(Clone, Copy)]
enum Piece {
    Text,
    Reasoning,
}

/// Pushes a text or reasoning chunk unless it is empty, appended to the last chunk when that
/// is of the same kind: what arrived in one read of the body travels on as one chunk, so the
/// agent, the output and the allocator see one piece per read, not one per token. A borrowed
/// piece is copied only onto the chunk (an owned string only when it starts one).
/// `text` appended to `to`. A delta is a token or two: a short one is copied a byte at a
/// time, since musl's `memcpy` (which `push_str` calls) costs more to start than that.
#[inline(always)]
fn append(to: &mut String, text: &str) {
    if text.len() > 16 {
        to.push_str(text);
        return;
    }
    to.reserve(text.len());
    for c in text.chars() {
        to.push(c);
    }
}

fn push_text(out: &mut Vec<Chunk>, piece: Piece, text: Cow<'_, str>) {
    if text.is_empty() {
        return;
    }
    match (out.last_mut(), piece) {
        (Some(Chunk::Text(last)), Piece::Text)
        | (Some(Chunk::Reasoning(last)), Piece::Reasoning) => append(last, &text),
        (_, Piece::Text) => out.push(Chunk::Text(text.into_owned())),
        (_, Piece::Reasoning) => out.push(Chunk::Reasoning(text.into_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Result<Vec<Chunk>, (Vec<Chunk>, String)> {
        let mut parser = StreamParser::new(7, 100);
        let mut out = Vec::new();
        let result = parser
            .feed(input, &mut out)
            .and_then(|_| parser.finish(&mut out));
        result
            .map(|_| out.clone())
            .map_err(|e| (out, e.to_string()))
    }

    fn parse_split(input: &[u8], cut: usize) -> Result<Vec<Chunk>, String> {
        let mut parser = StreamParser::new(7, 100);
        let mut out = Vec::new();
        parser
            .feed(&input[..cut], &mut out)
            .map_err(|e| e.to_string())?;
        parser
            .feed(&input[cut..], &mut out)
            .map_err(|e| e.to_string())?;
        parser.finish(&mut out).map_err(|e| e.to_string())?;
        Ok(out)
    }

    fn data(json: &str) -> String {
        format!("data: {json}\n\n")
    }

    /// Adjacent text (or reasoning) chunks merged, so split points do not matter.
    fn merged(chunks: Vec<Chunk>) -> Vec<Chunk> {
        let mut out: Vec<Chunk> = Vec::new();
        for chunk in chunks {
            match (out.last_mut(), &chunk) {
                (Some(Chunk::Text(a)), Chunk::Text(b)) => a.push_str(b),
                (Some(Chunk::Reasoning(a)), Chunk::Reasoning(b)) => a.push_str(b),
                _ => out.push(chunk),
            }
        }
        out
    }

    /// Feeds `event` until the parser fails; returns the error and the bytes fed.
    fn flood(first: &str, event: impl Fn(usize) -> String) -> (String, Option<Overflow>, usize) {
        let mut parser = StreamParser::new(7, 100);
        let mut out = Vec::new();
        let mut fed = first.len();
        let mut result = parser.feed(first.as_bytes(), &mut out);
        let mut i = 0;
        while result.is_ok() {
            let bytes = event(i);
            fed += bytes.len();
            result = parser.feed(bytes.as_bytes(), &mut out);
            out.clear();
            i += 1;
            assert!(fed < 64 << 20, "no cap after {fed} bytes");
        }
        (result.unwrap_err().to_string(), parser.overflow(), fed)
    }

    #[test]
    fn every_part_of_a_reply_is_capped_with_an_error_naming_it() {
        let piece = "x".repeat(60_000);
        let content = data(&format!(
            r#"{{"choices":[{{"delta":{{"content":"{piece}"}}}}]}}"#
        ));
        let (err, overflow, fed) = flood("", |_| content.clone());
        assert_eq!(overflow, Some(Overflow::Content), "{err}");
        assert!(err.contains("the reply's text passed 6 MiB"), "{err}");
        assert!(fed <= limits::CONTENT + 2 * content.len(), "{fed}");

        let thought = data(&format!(
            r#"{{"choices":[{{"delta":{{"reasoning_content":"{piece}"}}}}]}}"#
        ));
        let (_, overflow, _) = flood("", |_| thought.clone());
        assert_eq!(overflow, Some(Overflow::Reasoning));

        let args = data(&format!(
            r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":0,"function":{{"name":"f","arguments":"{piece}"}}}}]}}}}]}}"#
        ));
        let (err, overflow, _) = flood("", |_| args.clone());
        assert_eq!(overflow, Some(Overflow::ToolArguments));
        assert!(
            err.contains("the reply's tool arguments passed 4 MiB"),
            "{err}"
        );

        let (err, overflow, _) = flood("", |i| {
            data(&format!(
                r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":{i},"function":{{"name":"f"}}}}]}}}}]}}"#
            ))
        });
        assert_eq!(overflow, Some(Overflow::ToolCalls));
        assert!(err.contains("256 calls"), "{err}");
        // An index at the top of the range does not overflow the next one's.
        let mut parser = StreamParser::new(7, 100);
        let mut out = Vec::new();
        let top = data(&format!(
            r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":{},"id":"a"}}]}}}}]}}"#,
            u64::MAX
        ));
        parser.feed(top.as_bytes(), &mut out).unwrap();
        let next = data(r#"{"choices":[{"delta":{"tool_calls":[{"id":"b"}]}}]}"#);
        parser.feed(next.as_bytes(), &mut out).unwrap();
        assert_eq!(parser.calls.len(), 1);

        // A body that is no event stream (`stream = false`) and never ends.
        let (err, overflow, _) = flood("{\"choices\":[", |_| format!("{piece}\n"));
        assert_eq!(overflow, Some(Overflow::UnstreamedBody), "{err}");
        // One SSE line that never ends, after a first event.
        let (_, overflow, _) = flood(&data(r#"{"choices":[]}"#), |_| piece.clone());
        assert_eq!(overflow, Some(Overflow::SseLine));
    }

    #[test]
    fn deltas_of_one_read_travel_as_one_chunk_and_later_reads_as_their_own() {
        let text = |t: &str| {
            data(&format!(
                r#"{{"choices":[{{"index":0,"delta":{{"content":"{t}"}}}}]}}"#
            ))
        };
        let thought = |t: &str| {
            data(&format!(
                r#"{{"choices":[{{"index":0,"delta":{{"reasoning_content":"{t}"}}}}]}}"#
            ))
        };
        let mut parser = StreamParser::new(7, 100);
        let mut first = Vec::new();
        let read = [
            thought("a"),
            thought("b"),
            text("c"),
            text("d"),
            thought("e"),
        ]
        .concat();
        parser.feed(read.as_bytes(), &mut first).unwrap();
        assert_eq!(
            first,
            [
                Chunk::Reasoning("ab".into()),
                Chunk::Text("cd".into()),
                Chunk::Reasoning("e".into())
            ]
        );
        let mut second = Vec::new();
        parser.feed(text("f").as_bytes(), &mut second).unwrap();
        assert_eq!(second, [Chunk::Text("f".into())]);
    }

    fn canonical_tool_stream() -> String {
        [
            data(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"Let me look."}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"ls","arguments":"{\"pa"}}]}}]}"#),
            ": keep-alive\n\n".to_string(),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\".\"}"}}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.rs\"}"}}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#),
            data(r#"{"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":20,"prompt_cache_hit_tokens":32,"prompt_cache_miss_tokens":18}}"#),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat()
    }

    #[test]
    fn interleaved_tool_calls_assemble_by_index_at_every_split() {
        let input = canonical_tool_stream();
        let expected = vec![
            Chunk::Reasoning("Let me look.".into()),
            Chunk::ToolCall(ToolCall::new("call_a", "read_file", r#"{"path":"a.rs"}"#)),
            Chunk::ToolCall(ToolCall::new("call_b", "ls", r#"{"path":"."}"#)),
            Chunk::Usage(Usage {
                prompt_tokens: 50,
                completion_tokens: 20,
                cache_hit_tokens: 32,
                cache_miss_tokens: 18,
                reasoning_tokens: 0,
                estimated: false,
            }),
            Chunk::Done {
                finish_reason: "tool_calls".into(),
            },
        ];
        assert_eq!(parse_all(input.as_bytes()).unwrap(), expected);
        for cut in 0..=input.len() {
            let got = parse_split(input.as_bytes(), cut).unwrap();
            assert_eq!(merged(got), expected, "split at {cut}");
        }
    }

    #[test]
    fn repeated_ids_and_names_are_set_not_appended_and_missing_ids_are_synthetic() {
        let input = [
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call__0_bash_cmpl-1","type":"function","function":{"name":"bash","arguments":"{\"cmd\""}}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call__0_bash_cmpl-1","type":"function","function":{"name":"bash","arguments":": \"ls\"}"}}],"function_call":{"name":"bash"}}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"ls"}}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
        let chunks = parse_all(input.as_bytes()).unwrap();
        let calls: Vec<&ToolCall> = chunks
            .iter()
            .filter_map(|c| match c {
                Chunk::ToolCall(call) => Some(call),
                _ => None,
            })
            .collect();
        assert_eq!(
            calls,
            vec![
                &ToolCall::new("call__0_bash_cmpl-1", "bash", r#"{"cmd": "ls"}"#),
                &ToolCall::new("call_0000000000000007_1", "ls", "{}"),
            ]
        );
        // Usage was missing: estimated, and flagged as such.
        assert!(chunks
            .iter()
            .any(|c| matches!(c, Chunk::Usage(u) if u.estimated && u.prompt_tokens == 100)));
    }

    #[test]
    fn a_stream_cut_before_finish_is_an_error_and_emits_no_partial_call() {
        let input = [
            data(r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"bash","arguments":"{\"cm"}}]}}]}"#),
        ]
        .concat();
        let (out, err) = parse_all(input.as_bytes()).unwrap_err();
        assert_eq!(out, vec![Chunk::Text("Hi".into())]);
        assert!(err.contains("ended early"), "{err}");
    }

    #[test]
    fn finish_reason_without_done_is_complete_and_usage_after_finish_is_kept() {
        let input = [
            data(r#"{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}],"usage":null}"#),
            data(r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":1}}}"#),
        ]
        .concat();
        let out = parse_all(input.as_bytes()).unwrap();
        assert_eq!(
            out,
            vec![
                Chunk::Text("ok".into()),
                Chunk::Usage(Usage {
                    prompt_tokens: 10,
                    completion_tokens: 2,
                    cache_hit_tokens: 8,
                    cache_miss_tokens: 2,
                    reasoning_tokens: 1,
                    estimated: false
                }),
                Chunk::Done {
                    finish_reason: "stop".into()
                }
            ]
        );
    }

    #[test]
    fn a_reply_without_text_or_tool_call_is_an_empty_reply_at_every_split() {
        let cases = [
            "data: [DONE]\n\n".to_string(),
            format!(
                "{}{}data: [DONE]\n\n",
                data(r#"{"id":"x","choices":[]}"#),
                data(r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}"#)
            ),
            format!(
                "{}{}{}",
                data(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#),
                data(
                    r#"{"choices":[{"index":0,"delta":{"content":null,"tool_calls":null},"finish_reason":null}]}"#
                ),
                data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
            ),
            format!(
                "{}{}data: [DONE]\n\n",
                data(
                    r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hmm","content":"  "}}]}"#
                ),
                data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#),
            ),
        ];
        for input in &cases {
            for cut in 0..=input.len() {
                let err = parse_split(input.as_bytes(), cut).unwrap_err();
                assert!(err.contains("empty reply"), "cut {cut} of {input}: {err}");
            }
        }
        let (_, err) = parse_all(cases[3].as_bytes()).unwrap_err();
        assert_eq!(
            err,
            "provider: the model sent an empty reply (no text and no tool call, finish_reason `length`)"
        );
    }

    #[test]
    fn malformed_json_is_a_stream_error_with_an_excerpt() {
        let input = "data: {\"choices\": [\n\n";
        let (_, err) = parse_all(input.as_bytes()).unwrap_err();
        assert!(err.contains("malformed JSON"), "{err}");
        assert!(err.contains("{\"choices\": ["), "{err}");
    }

    #[test]
    fn error_events_and_error_objects_mid_stream_are_reported() {
        let input = data(r#"{"error":{"message":"upstream overloaded","code":503}}"#);
        let (_, err) = parse_all(input.as_bytes()).unwrap_err();
        assert!(err.contains("upstream overloaded"), "{err}");
        let input = "event: error\ndata: {\"message\":\"quota\"}\n\n";
        let (_, err) = parse_all(input.as_bytes()).unwrap_err();
        assert!(err.contains("quota"), "{err}");
    }

    #[test]
    fn non_streamed_json_completion_is_accepted_and_html_is_not() {
        let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hello","tool_calls":[{"id":"x","type":"function","function":{"name":"ls","arguments":{"path":"."}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#;
        let out = parse_all(body.as_bytes()).unwrap();
        assert_eq!(out[0], Chunk::Text("hello".into()));
        assert_eq!(
            out[1],
            Chunk::ToolCall(ToolCall::new("x", "ls", r#"{"path":"."}"#))
        );
        assert!(matches!(&out[3], Chunk::Done { finish_reason } if finish_reason == "tool_calls"));
        let (_, err) = parse_all(b"<html><body>Bad gateway</body></html>").unwrap_err();
        assert!(err.contains("neither an event stream"), "{err}");
        assert!(err.contains("Bad gateway"), "{err}");
        let (_, err) = parse_all(b"").unwrap_err();
        assert!(err.contains("empty reply"), "{err}");
    }

    #[test]
    fn inline_think_tags_become_reasoning_at_every_split() {
        let input = [
            data(r#"{"choices":[{"index":0,"delta":{"content":"\n<thi"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"content":"nk>plan a</th"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"content":"ink>\n\nAnswer <think> stays"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
        for cut in 0..=input.len() {
            let out = merged(parse_split(input.as_bytes(), cut).unwrap());
            assert_eq!(out[0], Chunk::Reasoning("plan a".into()), "split {cut}");
            assert_eq!(
                out[1],
                Chunk::Text("Answer <think> stays".into()),
                "split {cut}"
            );
        }
        let plain = data(
            r#"{"choices":[{"index":0,"delta":{"content":"<b>bold</b>"},"finish_reason":"stop"}]}"#,
        );
        let out = parse_all(plain.as_bytes()).unwrap();
        assert_eq!(out[0], Chunk::Text("<b>bold</b>".into()));
    }

    #[test]
    fn reasoning_field_variants_are_reasoning_chunks() {
        let input = [
            data(r#"{"choices":[{"index":0,"delta":{"reasoning":"r1"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"reasoning_content":"r2","content":""}}]}"#),
            data(r#"{"choices":[{"index":1,"delta":{"content":"other choice"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"content":"t"},"finish_reason":"stop"}]}"#),
        ]
        .concat();
        // One read: the two reasoning deltas arrive as one chunk.
        let out = parse_all(input.as_bytes()).unwrap();
        assert_eq!(
            &out[..2],
            &[Chunk::Reasoning("r1r2".into()), Chunk::Text("t".into())]
        );
    }

    #[test]
    fn text_parts_are_joined_escapes_decoded_and_other_values_ignored() {
        let input = [
            data(r#"{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"text":"b"}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"content":"\n\"q\" \u00e9\ud83d\ude00"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"content":null,"reasoning_content":[{"text":"r"}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"content":42,"reasoning":{"text":"no"}}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"content":true,"reasoning":-1.5}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
        ]
        .concat();
        let out = parse_all(input.as_bytes()).unwrap();
        assert_eq!(
            &out[..2],
            &[
                Chunk::Text("ab\n\"q\" \u{e9}\u{1f600}".into()),
                Chunk::Reasoning("r".into()),
            ]
        );
        assert!(matches!(out[2], Chunk::Usage(_)), "{out:?}");
    }

    #[test]
    fn usage_normalisation_covers_deepseek_openai_and_plain_servers() {
        let deepseek = serde_json::json!({"prompt_tokens": 100, "completion_tokens": 7,
            "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36,
            "completion_tokens_details": {"reasoning_tokens": 5}});
        let u = normalise_usage(&deepseek).unwrap();
        assert_eq!(
            (u.cache_hit_tokens, u.cache_miss_tokens, u.reasoning_tokens),
            (64, 36, 5)
        );
        let plain =
            serde_json::json!({"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12});
        let u = normalise_usage(&plain).unwrap();
        assert_eq!(
            (u.prompt_tokens, u.cache_hit_tokens, u.cache_miss_tokens),
            (9, 0, 9)
        );
        let hit_miss_only =
            serde_json::json!({"prompt_cache_hit_tokens": 4, "prompt_cache_miss_tokens": 6});
        assert_eq!(normalise_usage(&hit_miss_only).unwrap().prompt_tokens, 10);
        assert_eq!(normalise_usage(&serde_json::json!({"timings": {}})), None);
    }
}
