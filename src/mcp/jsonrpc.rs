//! JSON-RPC 2.0 messages as MCP uses them, and the stdio line framing (one message per line,
//! no embedded newlines). Generic over `BufRead`/`Write` and free of I/O policy: which thread
//! reads, and what happens to a message, is the client's business.
//!
//! Ids are numbers or strings and compared exactly: `0` is a valid id (servers use it for their
//! first request) and `1` never matches `"1"`.

use std::fmt;
use std::io::{self, BufRead, Write};

use serde_json::{json, Map, Value};

/// The JSON-RPC version string every message carries.
pub const VERSION: &str = "2.0";

/// Error codes from the JSON-RPC specification.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

/// A request id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id {
    Number(i64),
    Str(String),
}

impl Id {
    fn from_value(value: &Value) -> Option<Id> {
        match value {
            Value::Number(n) => n.as_i64().map(Id::Number),
            Value::String(s) => Some(Id::Str(s.clone())),
            _ => None,
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            Id::Number(n) => json!(n),
            Id::Str(s) => json!(s),
        }
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::Str(s) => write!(f, "\"{s}\""),
        }
    }
}

/// The `error` member of a failed response.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn from_value(value: &Value) -> RpcError {
        RpcError {
            code: value.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: value
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_string(),
            data: value.get("data").cloned(),
        }
    }

    fn to_value(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// One JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: Id,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    Response {
        id: Id,
        result: Result<Value, RpcError>,
    },
}

/// Why bytes could not become a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// Not JSON at all; carries the start of the offending text.
    NotJson(String),
    /// JSON, but not a JSON-RPC 2.0 message.
    NotRpc(String),
    /// A line longer than the limit; it was skipped up to its end.
    TooLong(usize),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::NotJson(text) => write!(f, "not JSON: {text}"),
            FrameError::NotRpc(text) => write!(f, "not a JSON-RPC 2.0 message: {text}"),
            FrameError::TooLong(limit) => write!(f, "a line longer than {limit} bytes"),
        }
    }
}

impl std::error::Error for FrameError {}

/// At most this many characters of offending input are quoted in an error.
const QUOTE_CHARS: usize = 120;

fn quote(text: &str) -> String {
    let mut quoted: String = text.chars().take(QUOTE_CHARS).collect();
    if quoted.len() < text.len() {
        quoted.push('…');
    }
    quoted
}

impl Message {
    pub fn request(id: Id, method: &str, params: Option<Value>) -> Message {
        Message::Request {
            id,
            method: method.to_string(),
            params,
        }
    }

    pub fn notification(method: &str, params: Option<Value>) -> Message {
        Message::Notification {
            method: method.to_string(),
            params,
        }
    }

    /// Classifies a parsed JSON value: a method with an id is a request, a method without one
    /// a notification, and `result` or `error` with an id a response.
    pub fn from_value(value: Value) -> Result<Message, FrameError> {
        let not_rpc = |v: &Value| FrameError::NotRpc(quote(&v.to_string()));
        let Value::Object(mut map) = value else {
            return Err(not_rpc(&value));
        };
        if map.get("jsonrpc").and_then(Value::as_str) != Some(VERSION) {
            return Err(not_rpc(&Value::Object(map)));
        }
        let id = map.get("id").and_then(Id::from_value);
        let params = map.remove("params");
        if let Some(Value::String(method)) = map.remove("method") {
            return Ok(match id {
                Some(id) => Message::Request { id, method, params },
                None => Message::Notification { method, params },
            });
        }
        let Some(id) = id else {
            return Err(not_rpc(&Value::Object(map)));
        };
        if let Some(error) = map.get("error") {
            return Ok(Message::Response {
                id,
                result: Err(RpcError::from_value(error)),
            });
        }
        match map.remove("result") {
            Some(result) => Ok(Message::Response {
                id,
                result: Ok(result),
            }),
            None => Err(not_rpc(&Value::Object(map))),
        }
    }

    /// Parses one message from text. A JSON array (a batch) is not a message; use
    /// [`parse_batch`] where batches may occur.
    pub fn parse(text: &str) -> Result<Message, FrameError> {
        let value: Value =
            serde_json::from_str(text).map_err(|_| FrameError::NotJson(quote(text.trim())))?;
        Message::from_value(value)
    }

    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("jsonrpc".into(), json!(VERSION));
        match self {
            Message::Request { id, method, params } => {
                map.insert("id".into(), id.to_value());
                map.insert("method".into(), json!(method));
                if let Some(params) = params {
                    map.insert("params".into(), params.clone());
                }
            }
            Message::Notification { method, params } => {
                map.insert("method".into(), json!(method));
                if let Some(params) = params {
                    map.insert("params".into(), params.clone());
                }
            }
            Message::Response { id, result } => {
                map.insert("id".into(), id.to_value());
                match result {
                    Ok(result) => map.insert("result".into(), result.clone()),
                    Err(error) => map.insert("error".into(), error.to_value()),
                };
            }
        }
        Value::Object(map)
    }

    /// Compact JSON. serde_json escapes control characters inside strings, so the text never
    /// contains a raw newline and is safe for line framing.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            Message::Response { .. } => None,
        }
    }
}

/// Parses a body that holds one message or a JSON array of them (HTTP replies may batch).
pub fn parse_batch(text: &str) -> Result<Vec<Message>, FrameError> {
    let value: Value =
        serde_json::from_str(text).map_err(|_| FrameError::NotJson(quote(text.trim())))?;
    match value {
        Value::Array(items) => items.into_iter().map(Message::from_value).collect(),
        single => Ok(vec![Message::from_value(single)?]),
    }
}

/// Writes one message as a line and flushes, so the peer sees it at once.
pub fn write_message<W: Write>(out: &mut W, message: &Message) -> io::Result<()> {
    let mut line = message.to_json();
    line.push('\n');
    out.write_all(line.as_bytes())?;
    out.flush()
}

/// What [`read_frame`] found.
#[derive(Debug, PartialEq)]
pub enum Frame {
    Message(Message),
    /// A line that is not a message (a stray log line, a banner); the caller decides whether
    /// to log it. Reading can go on.
    Invalid(FrameError),
    /// End of input.
    Eof,
}

/// Reads the next non-blank line (LF or CRLF terminated; a final unterminated line counts)
/// and parses it. Lines longer than `max_line` bytes are skipped to their end and reported, so
/// a runaway peer cannot exhaust memory.
pub fn read_frame<R: BufRead>(input: &mut R, max_line: usize) -> io::Result<Frame> {
    loop {
        let mut line = Vec::new();
        let mut too_long = false;
        let ended = read_line_capped(input, &mut line, max_line, &mut too_long)?;
        if too_long {
            return Ok(Frame::Invalid(FrameError::TooLong(max_line)));
        }
        if line.is_empty() && !ended {
            return Ok(Frame::Eof);
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            if !ended {
                return Ok(Frame::Eof);
            }
            continue;
        }
        return Ok(match Message::parse(text) {
            Ok(message) => Frame::Message(message),
            Err(err) => Frame::Invalid(err),
        });
    }
}

/// Appends bytes up to (not including) the next `\n` to `line`, keeping at most `max` bytes.
/// Returns whether a newline ended the line (false at end of input).
fn read_line_capped<R: BufRead>(
    input: &mut R,
    line: &mut Vec<u8>,
    max: usize,
    too_long: &mut bool,
) -> io::Result<bool> {
    loop {
        let available = match input.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(false);
        }
        let (chunk, found) = match available.iter().position(|&b| b == b'\n') {
            Some(end) => (&available[..end], true),
            None => (available, false),
        };
        if line.len() + chunk.len() > max {
            *too_long = true;
            line.clear();
        } else if !*too_long {
            line.extend_from_slice(chunk);
        }
        let used = chunk.len() + usize::from(found);
        input.consume(used);
        if found {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};

    /// A reader that hands out its bytes in pieces of the given sizes, to test framing at
    /// every split point.
    struct Pieces {
        data: Vec<u8>,
        pos: usize,
        step: usize,
    }

    impl Read for Pieces {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len() - self.pos);
            buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    fn read_all(bytes: &[u8], step: usize, max: usize) -> Vec<Frame> {
        let mut reader = BufReader::with_capacity(
            step.max(1),
            Pieces {
                data: bytes.to_vec(),
                pos: 0,
                step,
            },
        );
        let mut frames = Vec::new();
        loop {
            match read_frame(&mut reader, max).unwrap() {
                Frame::Eof => return frames,
                frame => frames.push(frame),
            }
        }
    }

    #[test]
    fn classifies_requests_notifications_and_responses() {
        let request = Message::parse(r#"{"jsonrpc":"2.0","id":0,"method":"roots/list"}"#).unwrap();
        assert_eq!(request, Message::request(Id::Number(0), "roots/list", None));
        let note =
            Message::parse(r#"{"method":"notifications/tools/list_changed","jsonrpc":"2.0"}"#)
                .unwrap();
        assert_eq!(
            note,
            Message::notification("notifications/tools/list_changed", None)
        );
        let ok = Message::parse(r#"{"jsonrpc":"2.0","id":"a","result":{"x":1}}"#).unwrap();
        assert_eq!(
            ok,
            Message::Response {
                id: Id::Str("a".into()),
                result: Ok(json!({"x": 1}))
            }
        );
        let err = Message::parse(
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}"#,
        )
        .unwrap();
        let Message::Response { result: Err(e), .. } = err else {
            panic!("expected an error response, got {err:?}");
        };
        assert_eq!((e.code, e.message.as_str()), (-32601, "Method not found"));
    }

    #[test]
    fn ids_compare_exactly_and_zero_is_an_id() {
        assert_ne!(Id::Number(1), Id::Str("1".into()));
        let Message::Response { id, .. } =
            Message::parse(r#"{"jsonrpc":"2.0","id":0,"result":null}"#).unwrap()
        else {
            panic!("not a response");
        };
        assert_eq!(id, Id::Number(0));
    }

    #[test]
    fn rejects_what_is_not_json_rpc() {
        assert!(matches!(
            Message::parse("hello world"),
            Err(FrameError::NotJson(_))
        ));
        for text in [
            r#"{"id":1,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            "[1,2]",
            "42",
        ] {
            assert!(
                matches!(Message::parse(text), Err(FrameError::NotRpc(_))),
                "{text}"
            );
        }
    }

    #[test]
    fn round_trips_and_never_writes_a_raw_newline() {
        let messages = [
            Message::request(Id::Number(3), "tools/call", Some(json!({"a": "x\ny"}))),
            Message::notification("notifications/initialized", None),
            Message::Response {
                id: Id::Str("s".into()),
                result: Err(RpcError::new(METHOD_NOT_FOUND, "no\nsuch")),
            },
        ];
        for message in messages {
            let mut out = Vec::new();
            write_message(&mut out, &message).unwrap();
            assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
            assert!(out.ends_with(b"\n"));
            let back = Message::parse(std::str::from_utf8(&out).unwrap()).unwrap();
            assert_eq!(back, message);
        }
    }

    #[test]
    fn framing_survives_every_split_point() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\n  \nnot json\n{\"jsonrpc\":\"2.0\",\"method\":\"m\"}";
        for step in 1..input.len() {
            let frames = read_all(input, step, 1024);
            assert_eq!(frames.len(), 3, "step {step}: {frames:?}");
            assert!(matches!(
                &frames[0],
                Frame::Message(Message::Response {
                    id: Id::Number(1),
                    ..
                })
            ));
            assert!(
                matches!(&frames[1], Frame::Invalid(FrameError::NotJson(t)) if t == "not json")
            );
            assert_eq!(frames[2], Frame::Message(Message::notification("m", None)));
        }
    }

    #[test]
    fn overlong_lines_are_skipped_and_reading_goes_on() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"method\":\"after\"}\n");
        for step in [1, 7, 64, 4096] {
            let frames = read_all(&input, step, 60);
            assert_eq!(
                frames,
                vec![
                    Frame::Invalid(FrameError::TooLong(60)),
                    Frame::Message(Message::notification("after", None))
                ],
                "step {step}"
            );
        }
    }

    #[test]
    fn batches_parse_into_messages() {
        let batch =
            parse_batch(r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"result":1}]"#)
                .unwrap();
        assert_eq!(batch.len(), 2);
        assert_eq!(
            parse_batch(r#"{"jsonrpc":"2.0","method":"a"}"#)
                .unwrap()
                .len(),
            1
        );
    }
}
