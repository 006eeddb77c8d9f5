//! Sans-IO decoder for `text/event-stream` (the WHATWG "server-sent events" parsing rules).
//!
//! It owns line splitting (CR, LF, CRLF, also when a CRLF pair straddles two reads), the BOM,
//! comments, the `data`/`event`/`id`/`retry` fields and dispatch on a blank line. It knows
//! nothing about sockets or about what the data means: the OpenAI layer interprets `[DONE]`
//! and JSON, and the MCP HTTP transport reuses the same decoder.
//!
//! A line or an event larger than the caps of `limits` stops the decoder: it drops what it
//! held, ignores the rest of the stream and reports [`Decoder::overflow`], so an endless
//! line costs the cap, not memory without end.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field, `"message"` when the server sent none.
    pub event: String,
    /// Every `data:` line of the event joined with `\n`.
    pub data: String,
    /// The last event id seen so far in the stream (WHATWG keeps it across events).
    pub id: String,
}

/// An event as [`Decoder::feed_with`] hands it over: borrowed from the decoder, so decoding
/// a stream allocates nothing per event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRef<'a> {
    /// `"message"` when the server sent no `event:` field.
    pub event: &'a str,
    pub data: &'a str,
    pub id: &'a str,
}

impl EventRef<'_> {
    /// Whether this is a plain `message` event (no `event:` field, or that name), compared
    /// without a `bcmp` call per event.
    #[inline(always)]
    pub fn is_message(&self) -> bool {
        let b = self.event.as_bytes();
        b.len() == 7
            && u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) == u32::from_ne_bytes(*b"mess")
            && u32::from_ne_bytes([b[3], b[4], b[5], b[6]]) == u32::from_ne_bytes(*b"sage")
    }

    fn to_owned(self) -> Event {
        Event {
            event: self.event.to_string(),
            data: self.data.to_string(),
            id: self.id.to_string(),
        }
    }
}

use super::limits::{self, Overflow};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Feed it bytes as they arrive; it returns the events completed by those bytes.
#[derive(Debug, Default)]
pub struct Decoder {
    /// An unterminated line carried over from the previous feed.
    line: Vec<u8>,
    /// The previous feed ended with CR: an LF at the start of the next one belongs to it.
    after_cr: bool,
    /// Bytes seen before we know whether the stream starts with a BOM.
    bom_pending: Vec<u8>,
    bom_checked: bool,
    data: String,
    has_data: bool,
    event: String,
    last_id: String,
    retry: Option<u64>,
    /// A line or an event passed its cap: nothing more is decoded.
    overflow: Option<Overflow>,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The reconnection time the server asked for with `retry:`, in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Decodes `bytes` and returns every event they complete, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        self.feed_with(bytes, &mut |event| out.push(event.to_owned()));
        out
    }

    /// The cap the stream crossed, after which the decoder ignores its input.
    pub fn overflow(&self) -> Option<Overflow> {
        self.overflow
    }

    /// Decodes `bytes`, handing every event they complete to `on_event`, in order.
    pub fn feed_with(&mut self, bytes: &[u8], on_event: &mut dyn FnMut(EventRef<'_>)) {
        if self.overflow.is_some() {
            return;
        }
        if self.bom_checked {
            self.feed_lines(bytes, on_event);
            return;
        }
        self.bom_pending.extend_from_slice(bytes);
        let pending = &self.bom_pending;
        let common = pending.len().min(BOM.len());
        if pending[..common] != BOM[..common] {
            self.bom_checked = true;
        } else if pending.len() >= BOM.len() {
            self.bom_checked = true;
            self.bom_pending.drain(..BOM.len());
        }
        if self.bom_checked {
            let pending = std::mem::take(&mut self.bom_pending);
            self.feed_lines(&pending, on_event);
        }
    }

    /// Ends the stream. WHATWG discards an event whose blank line never came; many servers
    /// close right after their last `data:` line, so an event whose lines were all complete
    /// is dispatched. A trailing line without its line ending is treated as cut off and
    /// dropped.
    pub fn finish(&mut self) -> Option<Event> {
        let mut last = None;
        self.finish_with(&mut |event| last = Some(event.to_owned()));
        last
    }

    /// [`Decoder::finish`], handing the last event (if any) to `on_event`.
    pub fn finish_with(&mut self, on_event: &mut dyn FnMut(EventRef<'_>)) {
        if self.overflow.is_some() {
            return;
        }
        self.line.clear();
        self.after_cr = false;
        self.dispatch(on_event);
    }

    fn feed_lines(&mut self, mut bytes: &[u8], out: &mut dyn FnMut(EventRef<'_>)) {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(end) = find_line_end(bytes) {
            if self.line.is_empty() && !self.has_data {
                if let Some(rest) = self.single_data_line(bytes, end, out) {
                    bytes = rest;
                    continue;
                }
            }
            if self.line.is_empty() {
                self.process_line(&bytes[..end], out);
            } else {
                if self.line_overflows(end) {
                    return;
                }
                self.line.extend_from_slice(&bytes[..end]);
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, out);
                self.line = line;
                self.line.clear();
            }
            let ending_cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if ending_cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if self.overflow.is_some() {
                return;
            }
        }
        if self.line_overflows(bytes.len()) {
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    /// Whether `more` bytes would make the carried line pass its cap; if so the decoder
    /// stops, dropping what it held.
    fn line_overflows(&mut self, more: usize) -> bool {
        if self.line.len().saturating_add(more) <= limits::SSE_LINE {
            return false;
        }
        self.stop(Overflow::SseLine);
        true
    }

    fn stop(&mut self, overflow: Overflow) {
        self.overflow = Some(overflow);
        self.line = Vec::new();
        self.data = String::new();
        self.has_data = false;
    }

    /// The common event, one `data:` line of UTF-8 ended by a blank line (`data: …\n\n`),
    /// handed over straight from `bytes` instead of being copied into the event's data
    /// first. Returns the bytes after it, or `None` for anything else (the general path).
    fn single_data_line<'b>(
        &mut self,
        bytes: &'b [u8],
        end: usize,
        out: &mut dyn FnMut(EventRef<'_>),
    ) -> Option<&'b [u8]> {
        if bytes[end] != b'\n' || bytes.get(end + 1) != Some(&b'\n') {
            return None;
        }
        let data = std::str::from_utf8(data_value(&bytes[..end])?).ok()?;
        out(EventRef {
            event: self.event_type(),
            data,
            id: &self.last_id,
        });
        self.event.clear();
        Some(&bytes[end + 2..])
    }

    fn process_line(&mut self, line: &[u8], out: &mut dyn FnMut(EventRef<'_>)) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        if let Some(value) = data_value(line) {
            self.push_data(value);
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                // A pattern, not `strip_prefix`, which the size-optimised build leaves a call.
                let value = match value {
                    [b' ', rest @ ..] => rest,
                    _ => value,
                };
                (&line[..colon], value)
            }
            None => (line, &b""[..]),
        };
        match field {
            // `data` with no colon: an empty line of data.
            b"data" => self.push_data(value),
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            b"id" if !value.contains(&0) => {
                self.last_id = String::from_utf8_lossy(value).into_owned();
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
    }

    fn push_data(&mut self, value: &[u8]) {
        if self.data.len().saturating_add(value.len()) >= limits::SSE_EVENT {
            self.stop(Overflow::SseEvent);
            return;
        }
        if self.has_data {
            self.data.push('\n');
        }
        // The validation alone, without `from_utf8_lossy`'s slower chunking, for the common
        // case of valid UTF-8.
        match std::str::from_utf8(value) {
            Ok(text) => self.data.push_str(text),
            Err(_) => self.data.push_str(&String::from_utf8_lossy(value)),
        }
        self.has_data = true;
    }

    /// The event's type: `message` unless an `event:` field named another.
    fn event_type(&self) -> &str {
        if self.event.is_empty() {
            "message"
        } else {
            &self.event
        }
    }

    /// Ends the event at a blank line: hands it over if it had data, then resets the event
    /// type and the data (keeping their buffers for the next event).
    fn dispatch(&mut self, out: &mut dyn FnMut(EventRef<'_>)) {
        if std::mem::replace(&mut self.has_data, false) {
            out(EventRef {
                event: self.event_type(),
                data: &self.data,
                id: &self.last_id,
            });
        }
        self.event.clear();
        self.data.clear();
    }
}

/// The value of a `data:` line (one leading space dropped), `None` for any other line. Nearly
/// every line is one: its name is one 4-byte compare, not a `memcmp` call (musl's goes byte by
/// byte), and the value is a pattern, not `strip_prefix`, which the size-optimised build
/// leaves a call.
#[inline(always)]
fn data_value(line: &[u8]) -> Option<&[u8]> {
    match line {
        [d, a, t, b, b':', value @ ..]
            if u32::from_ne_bytes([*d, *a, *t, *b]) == u32::from_ne_bytes(*b"data") =>
        {
            Some(match value {
                [b' ', rest @ ..] => rest,
                _ => value,
            })
        }
        _ => None,
    }
}

/// The offset of the first CR or LF in `bytes`. Eight bytes at a time: the release build is
/// optimised for size, where a byte loop is not vectorised, and an event line of a chat
/// stream is a few hundred bytes long.
fn find_line_end(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let is_end = |b: u8| b == b'\n' || b == b'\r';
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let word = u64::from_le_bytes([
            bytes[at],
            bytes[at + 1],
            bytes[at + 2],
            bytes[at + 3],
            bytes[at + 4],
            bytes[at + 5],
            bytes[at + 6],
            bytes[at + 7],
        ]);
        // Nonzero when some byte is below 0x0e, which both line ends are: one test for the
        // two of them. A tab or another control byte also passes it, so the word is then
        // looked at byte by byte (JSON escapes those, so that is rare).
        if word.wrapping_sub(ONES * 0x0e) & !word & HIGH != 0 {
            if let Some(i) = bytes[at..at + 8].iter().position(|&b| is_end(b)) {
                return Some(at + i);
            }
        }
        at += 8;
    }
    bytes[at..].iter().position(|&b| is_end(b)).map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str, id: &str) -> Event {
        Event {
            event: event.into(),
            data: data.into(),
            id: id.into(),
        }
    }

    fn decode_whole(input: &[u8]) -> Vec<Event> {
        let mut d = Decoder::new();
        let mut out = d.feed(input);
        out.extend(d.finish());
        out
    }

    #[test]
    fn an_endless_line_or_event_stops_the_decoder_at_its_cap() {
        // A line that never ends, fed in reads of 64 KiB: the decoder holds at most the cap.
        let mut d = Decoder::new();
        let piece = vec![b'x'; 64 * 1024];
        let mut fed = 0;
        while d.overflow().is_none() {
            assert!(d.feed(&piece).is_empty());
            fed += piece.len();
            assert!(fed <= limits::SSE_LINE + piece.len(), "fed {fed} bytes");
            assert!(
                d.line.capacity() <= limits::SSE_LINE,
                "{}",
                d.line.capacity()
            );
        }
        assert_eq!(d.overflow(), Some(Overflow::SseLine));
        assert!(
            d.feed(b"\n\ndata: late\n\n").is_empty(),
            "nothing after the cap"
        );
        assert_eq!(d.finish(), None);
        // Short data lines that never reach the blank line that ends their event.
        let mut d = Decoder::new();
        let line = format!("data: {}\n", "y".repeat(1000));
        while d.overflow().is_none() {
            assert!(d.feed(line.as_bytes()).is_empty());
            assert!(d.data.len() < limits::SSE_EVENT);
        }
        assert_eq!(d.overflow(), Some(Overflow::SseEvent));
    }

    #[test]
    fn a_data_field_without_a_colon_is_an_empty_line_of_data() {
        // WHATWG: a line with no colon is a field name with an empty value.
        let events = decode_whole(b"data\ndata: x\ndata\n\ndata\n\n");
        assert_eq!(
            events,
            vec![ev("message", "\nx\n", ""), ev("message", "", "")]
        );
    }

    #[test]
    fn only_a_message_event_is_a_message() {
        let event = |event| EventRef {
            event,
            data: "",
            id: "",
        };
        assert!(event("message").is_message());
        for other in [
            "messagE", "mess", "error", "", "message ", "xessage", "messagex",
        ] {
            assert!(!event(other).is_message(), "{other:?}");
        }
    }

    #[test]
    fn control_bytes_before_the_line_end_do_not_hide_it() {
        // Tabs and other bytes below 0x0e pass the word test for a line end; the scan must
        // go on past them, at every offset in the word.
        for pad in 0..16 {
            let data = format!("{}\t\x01\x0b{}", "x".repeat(pad), "y".repeat(20));
            for end in ["\n", "\r", "\r\n"] {
                let input = format!("data: {data}{end}{end}");
                let events = decode_whole(input.as_bytes());
                assert_eq!(events, vec![ev("message", &data, "")], "{pad} {end:?}");
            }
        }
    }

    /// Every split point, every pair of split points, and byte-by-byte must agree with the
    /// whole-input decode.
    fn assert_split_invariant(input: &[u8]) -> Vec<Event> {
        let whole = decode_whole(input);
        for cut in 0..=input.len() {
            let mut d = Decoder::new();
            let mut out = d.feed(&input[..cut]);
            out.extend(d.feed(&input[cut..]));
            out.extend(d.finish());
            assert_eq!(
                out,
                whole,
                "split at {cut} of {:?}",
                String::from_utf8_lossy(input)
            );
        }
        for a in 0..=input.len() {
            for b in a..=input.len() {
                let mut d = Decoder::new();
                let mut out = d.feed(&input[..a]);
                out.extend(d.feed(&input[a..b]));
                out.extend(d.feed(&input[b..]));
                out.extend(d.finish());
                assert_eq!(out, whole, "splits at {a},{b}");
            }
        }
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for byte in input {
            out.extend(d.feed(std::slice::from_ref(byte)));
        }
        out.extend(d.finish());
        assert_eq!(out, whole, "byte by byte");
        whole
    }

    #[test]
    fn multi_line_data_is_joined_with_newlines() {
        let got = assert_split_invariant(b"data: a\ndata: b\ndata:c\n\ndata: d\n\n");
        assert_eq!(
            got,
            vec![ev("message", "a\nb\nc", ""), ev("message", "d", "")]
        );
    }

    #[test]
    fn cr_lf_and_crlf_are_all_line_endings() {
        let got =
            assert_split_invariant(b"data: a\r\rdata: b\r\n\r\ndata: c\n\ndata: d\r\ndata: e\r\r");
        assert_eq!(
            got,
            vec![
                ev("message", "a", ""),
                ev("message", "b", ""),
                ev("message", "c", ""),
                ev("message", "d\ne", "")
            ]
        );
    }

    #[test]
    fn crlf_split_across_feeds_is_one_line_ending() {
        let mut d = Decoder::new();
        let mut out = d.feed(b"data: x\r");
        out.extend(d.feed(b"\ndata: y\r"));
        out.extend(d.feed(b"\n\r"));
        out.extend(d.feed(b"\n"));
        assert_eq!(out, vec![ev("message", "x\ny", "")]);
    }

    #[test]
    fn comments_fields_without_colon_and_one_optional_space() {
        let input = b": keep-alive\n\n:another\nevent: update\nid: 7\ndata:  two spaces\ndata\n\n";
        let got = assert_split_invariant(input);
        assert_eq!(got, vec![ev("update", " two spaces\n", "7")]);
    }

    #[test]
    fn leading_bom_is_stripped_once() {
        let mut input = BOM.to_vec();
        input.extend_from_slice(b"data: a\n\n");
        input.extend_from_slice(BOM);
        input.extend_from_slice(b"data: b\n\n");
        let got = assert_split_invariant(&input);
        // Only the first BOM is special: the second one is part of a field name.
        assert_eq!(got, vec![ev("message", "a", "")]);
        let short = assert_split_invariant(b"\xEF\xBBdata: x\n\n");
        assert!(short.is_empty(), "{short:?}");
    }

    #[test]
    fn events_without_data_are_not_dispatched_and_event_type_resets() {
        let got = assert_split_invariant(b"event: ping\n\nid: 1\n\ndata: x\n\n");
        assert_eq!(got, vec![ev("message", "x", "1")]);
    }

    #[test]
    fn id_persists_and_id_with_nul_is_ignored_and_retry_needs_digits() {
        let mut d = Decoder::new();
        let out = d
            .feed(b"id: a\ndata: 1\n\ndata: 2\n\nid: b\0c\nretry: 12x\ndata: 3\n\nretry: 3000\n\n");
        assert_eq!(
            out,
            vec![
                ev("message", "1", "a"),
                ev("message", "2", "a"),
                ev("message", "3", "a")
            ]
        );
        assert_eq!(d.retry(), Some(3000));
    }

    #[test]
    fn finish_dispatches_completed_lines_but_drops_a_cut_line() {
        let got = assert_split_invariant(b"data: [DONE]\n");
        assert_eq!(got, vec![ev("message", "[DONE]", "")]);
        let got = assert_split_invariant(b"data: {\"a\":1}\n\ndata: {\"cut");
        assert_eq!(got, vec![ev("message", "{\"a\":1}", "")]);
    }

    #[test]
    fn non_utf8_bytes_are_replaced_not_fatal() {
        let got = assert_split_invariant(b"data: caf\xC3\xA9 \xFF\n\n");
        assert_eq!(got, vec![ev("message", "café \u{FFFD}", "")]);
    }

    #[test]
    fn openai_shaped_stream_survives_every_split() {
        let input = concat!(
            ": OPENROUTER PROCESSING\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"He\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"llo\"}}]}\r\n\r\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\r",
            "data: [DONE]\n\n"
        );
        let got = assert_split_invariant(input.as_bytes());
        assert_eq!(got.len(), 4);
        assert_eq!(got[3].data, "[DONE]");
    }
}
