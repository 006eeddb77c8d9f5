//! Sans-IO decoder for `text/event-stream` (the WHATWG "server-sent events" parsing rules).
//!
//! It owns line splitting (CR, LF, CRLF, also when a CRLF pair straddles two reads), the BOM,
//! comments, the `data`/`event`/`id`/`retry` fields and dispatch on a blank line. It knows
//! nothing about sockets or about what the data means: the OpenAI layer interprets `[DONE]`
//! and JSON, and the MCP HTTP transport reuses the same decoder.

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
        if self.bom_checked {
            self.feed_lines(bytes, &mut out);
            return out;
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
            self.feed_lines(&pending, &mut out);
        }
        out
    }

    /// Ends the stream. WHATWG discards an event whose blank line never came; many servers
    /// close right after their last `data:` line, so an event whose lines were all complete
    /// is dispatched. A trailing line without its line ending is treated as cut off and
    /// dropped.
    pub fn finish(&mut self) -> Option<Event> {
        self.line.clear();
        self.after_cr = false;
        self.dispatch()
    }

    fn feed_lines(&mut self, mut bytes: &[u8], out: &mut Vec<Event>) {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            if self.line.is_empty() {
                self.process_line(&bytes[..end], out);
            } else {
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
        }
        self.line.extend_from_slice(bytes);
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<Event>) {
        if line.is_empty() {
            out.extend(self.dispatch());
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            b"id" if !value.contains(&0) => {
                self.last_id = String::from_utf8_lossy(value).into_owned();
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) -> Option<Event> {
        let event = std::mem::take(&mut self.event);
        if !std::mem::replace(&mut self.has_data, false) {
            return None;
        }
        Some(Event {
            event: if event.is_empty() {
                "message".to_string()
            } else {
                event
            },
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
        })
    }
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
