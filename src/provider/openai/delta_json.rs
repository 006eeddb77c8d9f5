//! The common shape of a streamed chat-completion event, decoded without serde.
//!
//! Nearly every event of a long answer is the same small object: one choice whose delta
//! carries a piece of text (`content`, `reasoning_content` or `reasoning`), a
//! `finish_reason`, and scalar metadata beside it (`id`, `model`, `created`, `logprobs:
//! null`…). serde_json's generic path spends several thousand instructions on each such
//! event in the size-optimised build, more than everything else the stream costs together.
//! This decoder handles exactly that shape in one pass. Anything else (tool calls, usage,
//! errors, content parts, a message instead of a delta, a second choice, a nested value under
//! an unknown key, a duplicate or escaped key, bad syntax) gives `None`, and the caller
//! decodes the event with serde. So on every input this decoder accepts, the result equals
//! what serde makes of it, and every error message stays serde's.

use std::borrow::Cow;

use super::stream::{WireChoice, WireChunk, WireDelta, WireText};

/// `json` as a [`WireChunk`] when it has the common text-delta shape, else `None`; with the
/// place of its text when it can serve as a [`Template`].
pub(super) fn decode(json: &str) -> Option<(WireChunk, Option<Slot>)> {
    let mut cursor = Cursor {
        text: json,
        at: 0,
        slot: None,
        texts: 0,
    };
    let mut choices = None;
    let mut seen = Seen::default();
    cursor.object(|cursor, key| match key {
        b"choices" => {
            seen.first(0)?;
            choices = cursor.choices()?;
            Some(())
        }
        // Only their absence (or null) is the common shape.
        b"usage" => seen.first(1).and_then(|_| cursor.null()),
        b"error" => seen.first(2).and_then(|_| cursor.null()),
        _ => cursor.skip_scalar(),
    })?;
    cursor.skip_whitespace();
    if cursor.at != json.len() {
        return None;
    }
    // A template is an event whose only content is one text value of choice 0.
    let plain = match choices.as_deref() {
        Some([choice]) => {
            choice.index.unwrap_or(0) == 0
                && choice.delta.is_some()
                && choice.finish_reason.is_none()
                && cursor.texts == 1
        }
        _ => false,
    };
    let chunk = WireChunk {
        choices,
        usage: None,
        error: None,
    };
    Some((chunk, cursor.slot.filter(|_| plain)))
}

/// Which text field of a delta a [`Slot`] holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum TextField {
    Content,
    ReasoningContent,
    Reasoning,
}

/// Where an event's one text value lies: the string token from its opening quote to just
/// after its closing one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Slot {
    start: usize,
    end: usize,
    field: TextField,
}

/// The bytes around the text value of the last plain text event. A server repeats everything
/// else (`id`, `model`, `created`, the index, `finish_reason: null`) byte for byte in each
/// event of a stream, so an event that starts and ends with the same bytes and has exactly one
/// string token between them is that event with another text: only the string needs decoding.
#[derive(Default)]
pub(super) struct Template {
    before: Vec<u8>,
    after: Vec<u8>,
    field: Option<TextField>,
}

impl Template {
    /// Remembers the bytes around `slot` of `json`, an event [`decode`] accepted.
    pub(super) fn learn(&mut self, json: &str, slot: Slot) {
        let bytes = json.as_bytes();
        self.before.clear();
        self.before.extend_from_slice(&bytes[..slot.start]);
        self.after.clear();
        self.after.extend_from_slice(&bytes[slot.end..]);
        self.field = Some(slot.field);
    }

    /// The field and text of `json` when it is the learned event with another text: borrowed
    /// from `json` unless it had escapes, so the caller copies it straight into the chunk it
    /// is building (an allocation per event costs more than the rest of its decoding).
    pub(super) fn text<'a>(&self, json: &'a str) -> Option<(TextField, Cow<'a, str>)> {
        let field = self.field?;
        let bytes = json.as_bytes();
        let end = bytes.len().checked_sub(self.after.len())?;
        if end <= self.before.len()
            || !same_bytes(&bytes[..self.before.len()], &self.before)
            || !same_bytes(&bytes[end..], &self.after)
        {
            return None;
        }
        let mut cursor = Cursor {
            text: json.get(..end)?,
            at: self.before.len(),
            slot: None,
            texts: 0,
        };
        let text = cursor.string()?;
        (cursor.at == end).then_some((field, text))
    }
}

/// Which known keys an object has had: serde refuses a repeated field, so the fast path
/// leaves such an object to it.
#[derive(Default)]
struct Seen(u8);

impl Seen {
    fn first(&mut self, field: u8) -> Option<()> {
        let bit = 1 << field;
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }
}

/// `a == b`, eight bytes at a time: musl's `memcmp`, which the static binary uses, compares
/// one byte per step, and this runs twice on every streamed event.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let len = a.len();
    if len < 8 {
        return a == b;
    }
    let mut at = 0;
    while at + 8 < len {
        if word_at(a, at) != word_at(b, at) {
            return false;
        }
        at += 8;
    }
    // The last eight bytes, overlapping the words already compared.
    word_at(a, len - 8) == word_at(b, len - 8)
}

/// The eight bytes of `bytes` from `at` (which callers keep in bounds) as a word.
#[inline(always)]
fn word_at(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 8)
        .and_then(|w| w.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

/// The first `"`, `\\` or control byte at or after `from`: where a string's plain run ends.
#[inline(always)]
fn string_end(bytes: &[u8], from: usize) -> Option<usize> {
    let run = bytes.get(from..)?;
    let plain = run
        .iter()
        .position(|&byte| byte < 0x20 || byte == b'"' || byte == b'\\')?;
    Some(from + plain)
}

struct Cursor<'a> {
    text: &'a str,
    at: usize,
    /// The last text value decoded in a delta, and how many there were.
    slot: Option<Slot>,
    texts: u8,
}

impl<'a> Cursor<'a> {
    // The release build optimises for size and would not inline these one-liners on its own;
    // a call per byte costs more than the decoding.
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    #[inline(always)]
    fn skip_whitespace(&mut self) {
        let bytes = self.text.as_bytes();
        while self.at < bytes.len() && matches!(bytes[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    /// Skips whitespace, then consumes `byte` if it is next.
    #[inline(always)]
    fn eat(&mut self, byte: u8) -> Option<()> {
        self.skip_whitespace();
        (self.peek() == Some(byte)).then(|| self.at += 1)
    }

    #[inline(always)]
    fn literal(&mut self, word: &str) -> Option<()> {
        let rest = &self.text.as_bytes()[self.at..];
        rest.starts_with(word.as_bytes())
            .then(|| self.at += word.len())
    }

    #[inline(always)]
    fn null(&mut self) -> Option<()> {
        self.literal("null")
    }

    /// Consumes `null` if it is next: `true` when it was.
    #[inline(always)]
    fn take_null(&mut self) -> bool {
        self.null().is_some()
    }

    /// An object, calling `field` with each raw key and the cursor at its value.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &[u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let key = self.key()?;
            self.eat(b':')?;
            self.skip_whitespace();
            field(self, key)?;
            self.skip_whitespace();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A key without escapes (an escaped key could still name a known field).
    fn key(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let bytes = self.text.as_bytes();
        let start = self.at;
        let end = string_end(bytes, start)?;
        self.at = end + 1;
        (bytes[end] == b'"').then_some(&bytes[start..end])
    }

    /// A string value, unescaped: a slice of the input when it has no escape.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.peek() != Some(b'"') {
            return None;
        }
        self.at += 1;
        let bytes = self.text.as_bytes();
        let start = self.at;
        let end = string_end(bytes, start)?;
        // Cut at ASCII bytes only, so every piece is whole UTF-8.
        if bytes[end] == b'"' {
            self.at = end + 1;
            return self.text.get(start..end).map(Cow::Borrowed);
        }
        let mut out = String::new();
        let mut piece_end = end;
        self.at = start;
        loop {
            out.push_str(self.text.get(self.at..piece_end)?);
            self.at = piece_end + 1;
            match bytes[piece_end] {
                b'"' => return Some(Cow::Owned(out)),
                b'\\' => out.push(self.escape()?),
                _ => return None,
            }
            piece_end = string_end(bytes, self.at)?;
        }
    }

    /// A string value checked as [`Cursor::string`] checks it, without building it.
    fn skip_string(&mut self) -> Option<()> {
        let bytes = self.text.as_bytes();
        self.at += 1;
        loop {
            let end = string_end(bytes, self.at)?;
            self.at = end + 1;
            match bytes[end] {
                b'"' => return Some(()),
                b'\\' => self.escape().map(drop)?,
                _ => return None,
            }
        }
    }

    /// The character of the escape after a backslash. A lone surrogate is left to serde,
    /// which refuses it.
    fn escape(&mut self) -> Option<char> {
        let byte = self.peek()?;
        self.at += 1;
        Some(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                match unit {
                    0xD800..=0xDBFF => {
                        self.literal("\\u")?;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => char::from_u32(unit)?,
                }
            }
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.at..self.at + 4)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        u32::from_str_radix(digits, 16).ok()
    }

    /// A number in JSON's grammar; the bytes it spans.
    fn number(&mut self) -> Option<&'a [u8]> {
        let bytes = self.text.as_bytes();
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Some(&bytes[start..self.at])
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }

    /// A string, number, `true`, `false` or `null`, checked and passed over. Arrays and
    /// objects are left to serde.
    fn skip_scalar(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.null(),
            _ => self.number().map(drop),
        }
    }

    /// `choices`: null, or an array of at most one choice object.
    fn choices(&mut self) -> Option<Option<Vec<WireChoice>>> {
        if self.take_null() {
            return Some(None);
        }
        self.eat(b'[')?;
        if self.eat(b']').is_some() {
            return Some(Some(Vec::new()));
        }
        let choice = self.choice()?;
        self.eat(b']')?;
        Some(Some(vec![choice]))
    }

    fn choice(&mut self) -> Option<WireChoice> {
        let mut choice = WireChoice {
            index: None,
            delta: None,
            message: None,
            finish_reason: None,
        };
        let mut seen = Seen::default();
        self.object(|cursor, key| match key {
            b"index" => {
                seen.first(0)?;
                if !cursor.take_null() {
                    choice.index = Some(cursor.index()?);
                }
                Some(())
            }
            b"delta" => {
                seen.first(1)?;
                if !cursor.take_null() {
                    choice.delta = Some(cursor.delta()?);
                }
                Some(())
            }
            b"message" => seen.first(2).and_then(|_| cursor.null()),
            b"finish_reason" => {
                seen.first(3)?;
                if !cursor.take_null() {
                    choice.finish_reason = Some(cursor.string()?.into_owned());
                }
                Some(())
            }
            _ => cursor.skip_scalar(),
        })?;
        Some(choice)
    }

    /// A choice index: a plain non-negative integer that fits a `u64` (serde refuses the rest).
    fn index(&mut self) -> Option<u64> {
        let digits = self.number()?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(digits).ok()?.parse().ok()
    }

    fn delta(&mut self) -> Option<WireDelta> {
        let mut delta = WireDelta {
            content: WireText(None),
            reasoning_content: WireText(None),
            reasoning: WireText(None),
            tool_calls: None,
        };
        let mut seen = Seen::default();
        self.object(|cursor, key| {
            let (text, field) = match key {
                b"content" => {
                    seen.first(0)?;
                    (&mut delta.content, TextField::Content)
                }
                b"reasoning_content" => {
                    seen.first(1)?;
                    (&mut delta.reasoning_content, TextField::ReasoningContent)
                }
                b"reasoning" => {
                    seen.first(2)?;
                    (&mut delta.reasoning, TextField::Reasoning)
                }
                b"tool_calls" => return seen.first(3).and_then(|_| cursor.null()),
                _ => return cursor.skip_scalar(),
            };
            if !cursor.take_null() {
                let start = cursor.at;
                text.0 = Some(cursor.string()?.into_owned());
                cursor.slot = Some(Slot {
                    start,
                    end: cursor.at,
                    field,
                });
                cursor.texts += 1;
            }
            Some(())
        })?;
        Some(delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde makes of `json`, or `None` when it refuses it.
    fn by_serde(json: &str) -> Option<WireChunk> {
        serde_json::from_str(json).ok()
    }

    /// The fast path either declines or agrees with serde.
    fn agrees(json: &str) {
        if let Some((fast, _)) = decode(json) {
            assert_eq!(
                Some(fast),
                by_serde(json),
                "the fast path differs on {json:?}"
            );
        }
    }

    const COMMON: &[&str] = &[
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1712345678,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}"#,
        r#"{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hm","content":null}}],"system_fingerprint":"fp_1"}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning":"a \"quoted\" \\ line\nnext\t\u00e9\ud83d\ude00 \/"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"choices":[{"delta":{"content":"no index"}}]}"#,
        r#"{"choices":[]}"#,
        r#"{"choices":null}"#,
        r#"{}"#,
        " { \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"spaced\" } } ] } ",
        r#"{"choices":[{"index":0,"delta":null,"finish_reason":"length"}],"created":-1.5e+3,"flag":true,"other":false}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"中文 ünïcödé"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":3,"delta":{"content":"other choice"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"x","tool_calls":null}}],"error":null}"#,
    ];

    #[test]
    fn the_common_shapes_take_the_fast_path_and_equal_serde() {
        for json in COMMON {
            let (fast, _) = decode(json).unwrap_or_else(|| panic!("declined {json:?}"));
            assert_eq!(Some(fast), by_serde(json), "{json}");
        }
    }

    #[test]
    fn other_shapes_are_left_to_serde() {
        let declined = [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
            r#"{"error":{"message":"overloaded"}}"#,
            r#"{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"parts"}]}}]}"#,
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"whole"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a"}}],"meta":{"nested":1}}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}"#,
            r#"{"choices":[],"choices":[]}"#,
            r#"{"choices":[{"index":0,"delta":{"con\u0074ent":"escaped key"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":7}}]}"#,
            r#"{"choices":[{"index":-1,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"index":1.0,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"index":18446744073709551616,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lone \ud800 surrogate"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lone \udc00 low"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"bad \x escape"}}]}"#,
            "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"raw \u{1} control\"}}]}",
            r#"{"choices":[{"index":0,"delta":{"content":"a"}}]} trailing"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a"}},]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a"},}]}"#,
            r#"{"created":01,"choices":[]}"#,
            r#"{"created":1.,"choices":[]}"#,
            r#"{"created":+1,"choices":[]}"#,
            r#"{"choices":[],"x":nul}"#,
            r#"[]"#,
        ];
        for json in declined {
            assert!(decode(json).is_none(), "the fast path took {json:?}");
            agrees(json);
        }
    }

    /// Every prefix of a valid event and every single-byte change of it is either declined
    /// or decoded as serde decodes it.
    #[test]
    fn cut_and_mutated_events_never_disagree_with_serde() {
        let mutations = [
            b'"', b'\\', b',', b':', b'}', b']', b'{', b'[', b' ', b'0', b'n', b'x',
        ];
        for json in COMMON {
            for cut in 0..json.len() {
                if let Some(prefix) = json.get(..cut) {
                    agrees(prefix);
                }
            }
            let bytes = json.as_bytes();
            for at in 0..bytes.len() {
                for &byte in &mutations {
                    let mut changed = bytes.to_vec();
                    changed[at] = byte;
                    if let Ok(text) = std::str::from_utf8(&changed) {
                        agrees(text);
                    }
                }
            }
        }
    }

    #[test]
    fn same_bytes_is_slice_equality() {
        for len in 0..40 {
            let a: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            assert!(same_bytes(&a, &a.clone()));
            for at in 0..len {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!same_bytes(&a, &b), "len {len}, changed at {at}");
            }
            assert!(!same_bytes(&a, &a[..len.saturating_sub(1)]) || len == 0);
        }
    }

    fn learned(json: &str) -> Template {
        let (_, slot) = decode(json).expect("a common event");
        let mut template = Template::default();
        template.learn(json, slot.expect("a plain text event"));
        template
    }

    /// serde's reading of an event's content.
    fn content_by_serde(json: &str) -> Option<String> {
        let chunk = by_serde(json)?;
        let choice = chunk.choices?.into_iter().next()?;
        choice.delta?.content.0
    }

    #[test]
    fn a_template_reads_the_next_events_text_as_serde_does() {
        let first = COMMON[0];
        let template = learned(first);
        let texts = [
            "lo",
            "",
            r#"a \"q\" \\ \n \u00e9\ud83d\ude00 \/"#,
            "中文",
            "}]},{",
        ];
        for text in texts {
            let json = first.replace("\"Hel\"", &format!("\"{text}\""));
            let (field, read) = template
                .text(&json)
                .unwrap_or_else(|| panic!("missed {json}"));
            assert_eq!(field, TextField::Content);
            // Borrowed from the event unless it had an escape to undo.
            assert_eq!(matches!(read, Cow::Borrowed(_)), !text.contains('\\'));
            assert_eq!(Some(read.into_owned()), content_by_serde(&json), "{json}");
        }
    }

    #[test]
    fn a_template_declines_what_is_not_one_string_between_its_bytes() {
        let template = learned(r#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#);
        let declined = [
            // Two values where one was: serde refuses the duplicate.
            r#"{"choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a","tool_calls":[]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":null}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":7}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a" }}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lone \ud800"}}]}"#,
            r#"{"choices":[{"index":1,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":}}]}"#,
        ];
        for json in declined {
            assert!(template.text(json).is_none(), "the template took {json}");
        }
    }

    #[test]
    fn only_events_with_one_text_value_of_choice_zero_become_templates() {
        let plain = [
            r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"a","content":null}}]}"#,
        ];
        for json in plain {
            assert!(decode(json).and_then(|(_, slot)| slot).is_some(), "{json}");
        }
        let not_plain = [
            r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a","reasoning":"b"}}]}"#,
            r#"{"choices":[{"index":2,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":null}}]}"#,
            r#"{"choices":[]}"#,
        ];
        for json in not_plain {
            assert!(decode(json).and_then(|(_, slot)| slot).is_none(), "{json}");
        }
    }
}
