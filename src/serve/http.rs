//! HTTP/1.1 on a byte stream: reading one request with limits on the request line, the
//! headers and the body, and writing a response. Chunked request bodies are refused (browsers
//! and `fetch` send a Content-Length); keep-alive follows the version and `Connection`.

use std::io::{self, BufRead, Write};

/// How much of a request we accept before refusing it.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of the request line, CRLF included.
    pub line: usize,
    /// Bytes of all header lines together.
    pub headers: usize,
    /// Number of header lines.
    pub header_count: usize,
    /// Bytes of the body.
    pub body: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            line: 8 * 1024,
            headers: 32 * 1024,
            header_count: 100,
            body: 1024 * 1024,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path without the query, not decoded.
    pub path: String,
    /// The raw query string after `?`, if any.
    pub query: Option<String>,
    /// `HTTP/1.0` is 0, `HTTP/1.1` is 1.
    pub minor: u8,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The first value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the connection stays open after the response.
    pub fn keep_alive(&self) -> bool {
        let connection = self.header("connection").unwrap_or("").to_ascii_lowercase();
        let says = |word: &str| connection.split(',').any(|t| t.trim() == word);
        if self.minor == 0 {
            says("keep-alive")
        } else {
            !says("close")
        }
    }

    /// The value of query parameter `name`, percent-decoded.
    pub fn query_param(&self, name: &str) -> Option<String> {
        self.query.as_deref()?.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == name).then(|| percent_decode(value))
        })
    }
}

/// Why a request could not be read; each maps to the status the client gets.
#[derive(Debug)]
pub enum HttpError {
    /// The peer closed the connection or it failed; nothing is answered.
    Io(io::Error),
    /// 400: not HTTP as we speak it.
    Malformed(&'static str),
    /// 414: the request line is longer than the limit.
    LineTooLong,
    /// 431: too many or too large headers.
    HeadersTooLarge,
    /// 413: the declared body is larger than the limit.
    BodyTooLarge,
    /// 411/501: a body without Content-Length (chunked) or a version we do not speak.
    Unsupported(u16, &'static str),
}

impl HttpError {
    /// The status and a short reason for the client; `None` for I/O errors.
    pub fn status(&self) -> Option<(u16, &'static str)> {
        match self {
            HttpError::Io(_) => None,
            HttpError::Malformed(why) => Some((400, why)),
            HttpError::LineTooLong => Some((414, "request line too long")),
            HttpError::HeadersTooLarge => Some((431, "request headers too large")),
            HttpError::BodyTooLarge => Some((413, "request body too large")),
            HttpError::Unsupported(status, why) => Some((*status, why)),
        }
    }
}

impl From<io::Error> for HttpError {
    fn from(err: io::Error) -> HttpError {
        HttpError::Io(err)
    }
}

/// Reads one line ending in LF (CRLF or bare LF), at most `limit` bytes including the ending.
/// `Ok(None)` at end of stream before any byte.
fn read_line(reader: &mut impl BufRead, limit: usize) -> Result<Option<Vec<u8>>, LineError> {
    let mut line = Vec::new();
    loop {
        let buf = reader.fill_buf().map_err(LineError::Io)?;
        if buf.is_empty() {
            return if line.is_empty() {
                Ok(None)
            } else {
                Err(LineError::Truncated)
            };
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        if line.len() + take > limit {
            return Err(LineError::TooLong);
        }
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if done {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(line));
        }
    }
}

enum LineError {
    Io(io::Error),
    TooLong,
    Truncated,
}

/// Reads the next request. `Ok(None)` when the peer closed the connection between requests.
pub fn read_request(
    reader: &mut impl BufRead,
    limits: &Limits,
) -> Result<Option<Request>, HttpError> {
    let Some((mut request, length)) = read_head(reader, limits)? else {
        return Ok(None);
    };
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).map_err(|err| {
        if err.kind() == io::ErrorKind::UnexpectedEof {
            HttpError::Malformed("truncated body")
        } else {
            HttpError::Io(err)
        }
    })?;
    request.body = body;
    Ok(Some(request))
}

/// Whether `bytes` hold a whole request head (up to the empty line that ends it).
pub fn head_complete(bytes: &[u8]) -> bool {
    bytes.windows(2).any(|w| w == b"\n\n") || bytes.windows(3).any(|w| w == b"\n\r\n")
}

/// Reads the next request's line and headers: the request with an empty body, and the length
/// of the body that follows (at most `limits.body`). `Ok(None)` when the peer closed the
/// connection between requests.
pub fn read_head(
    reader: &mut impl BufRead,
    limits: &Limits,
) -> Result<Option<(Request, usize)>, HttpError> {
    let line = match read_line(reader, limits.line) {
        Ok(Some(line)) => line,
        Ok(None) => return Ok(None),
        Err(LineError::Io(err)) => return Err(HttpError::Io(err)),
        Err(LineError::TooLong) => return Err(HttpError::LineTooLong),
        Err(LineError::Truncated) => return Err(HttpError::Malformed("truncated request line")),
    };
    let line =
        String::from_utf8(line).map_err(|_| HttpError::Malformed("request line is not UTF-8"))?;
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpError::Malformed("bad request line"));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(HttpError::Malformed("bad method"));
    }
    if !target.starts_with('/') || target.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(HttpError::Malformed("bad request target"));
    }
    let minor = match version {
        "HTTP/1.1" => 1,
        "HTTP/1.0" => 0,
        v if v.starts_with("HTTP/") => {
            return Err(HttpError::Unsupported(505, "HTTP version not supported"))
        }
        _ => return Err(HttpError::Malformed("bad HTTP version")),
    };
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path.to_string(), Some(query.to_string())),
        None => (target.to_string(), None),
    };
    let mut headers = Vec::new();
    let mut used = 0;
    loop {
        let line = match read_line(reader, limits.headers.saturating_sub(used).max(2)) {
            Ok(Some(line)) => line,
            Ok(None) | Err(LineError::Truncated) => {
                return Err(HttpError::Malformed("truncated headers"))
            }
            Err(LineError::Io(err)) => return Err(HttpError::Io(err)),
            Err(LineError::TooLong) => return Err(HttpError::HeadersTooLarge),
        };
        if line.is_empty() {
            break;
        }
        used += line.len() + 2;
        if used > limits.headers || headers.len() == limits.header_count {
            return Err(HttpError::HeadersTooLarge);
        }
        let line =
            String::from_utf8(line).map_err(|_| HttpError::Malformed("header is not UTF-8"))?;
        let (name, value) = line
            .split_once(':')
            .ok_or(HttpError::Malformed("header without a colon"))?;
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            // Includes obsolete line folding (a leading space) and "Name :" forms.
            return Err(HttpError::Malformed("bad header name"));
        }
        if value.bytes().any(|b| (b < b' ' && b != b'\t') || b == 0x7f) {
            return Err(HttpError::Malformed("bad header value"));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let request = Request {
        method: method.to_string(),
        path,
        query,
        minor,
        headers,
        body: Vec::new(),
    };
    if minor == 1 && request.header("host").is_none() {
        return Err(HttpError::Malformed("missing Host header"));
    }
    if request.header("transfer-encoding").is_some() {
        return Err(HttpError::Unsupported(
            411,
            "send a Content-Length, not chunks",
        ));
    }
    let lengths: Vec<&str> = request
        .headers
        .iter()
        .filter(|(n, _)| n == "content-length")
        .map(|(_, v)| v.as_str())
        .collect();
    let length = match lengths.as_slice() {
        [] => 0,
        [one] if !one.is_empty() && one.bytes().all(|b| b.is_ascii_digit()) => {
            one.parse::<u64>().map_err(|_| HttpError::BodyTooLarge)?
        }
        [_] => return Err(HttpError::Malformed("bad Content-Length")),
        _ => return Err(HttpError::Malformed("more than one Content-Length")),
    };
    if length > limits.body as u64 {
        return Err(HttpError::BodyTooLarge);
    }
    Ok(Some((request, length as usize)))
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `%XX` and `+` decoding of a query value; bad escapes are kept as they are.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(byte) => {
                        out.push(byte);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A response to write: status, extra headers and body. `Content-Length` and `Connection`
/// are added when written.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
        }
    }

    pub fn json(status: u16, value: &serde_json::Value) -> Response {
        Response::new(status, "application/json", value.to_string())
    }

    /// `{"error": message}` with `status`.
    pub fn error(status: u16, message: &str) -> Response {
        Response::json(status, &serde_json::json!({ "error": message }))
    }

    pub fn with(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Writes the response; `keep_alive` decides the `Connection` header. A HEAD response
    /// carries the headers only.
    pub fn write_to(&self, out: &mut impl Write, keep_alive: bool, head: bool) -> io::Result<()> {
        let mut text = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        for (name, value) in &self.headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        text.push_str(if keep_alive {
            "Connection: keep-alive\r\n\r\n"
        } else {
            "Connection: close\r\n\r\n"
        });
        let mut bytes = text.into_bytes();
        if !head {
            bytes.extend_from_slice(&self.body);
        }
        out.write_all(&bytes)?;
        out.flush()
    }
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Limits {
        Limits {
            line: 64,
            headers: 128,
            header_count: 4,
            body: 16,
        }
    }

    fn parse(raw: &str) -> Result<Option<Request>, HttpError> {
        read_request(&mut io::Cursor::new(raw.as_bytes().to_vec()), &small())
    }

    fn status(raw: &str) -> Option<u16> {
        match parse(raw) {
            Ok(_) => None,
            Err(err) => err.status().map(|(status, _)| status),
        }
    }

    #[test]
    fn a_head_is_complete_at_its_empty_line_and_leaves_the_body_unread() {
        for (raw, complete) in [
            ("GET / HTTP/1.1\r\nHost: h\r\n", false),
            ("GET / HTTP/1.1\r\nHost: h\r\n\r", false),
            ("GET / HTTP/1.1\r\nHost: h\r\n\r\n", true),
            ("GET / HTTP/1.0\n\n", true),
            ("GET / HTTP/1.1\r\nHost: h\r\n\n", true),
        ] {
            assert_eq!(head_complete(raw.as_bytes()), complete, "{raw:?}");
        }
        let raw = b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello";
        let mut cursor = io::Cursor::new(&raw[..]);
        let (request, length) = read_head(&mut cursor, &small()).unwrap().unwrap();
        assert_eq!((request.path.as_str(), length), ("/x", 5));
        assert!(request.body.is_empty());
        assert_eq!(&raw[cursor.position() as usize..], b"hello");
    }

    #[test]
    fn well_formed_requests_parse() {
        let request = parse("POST /api/x?a=1&b=%20c+d HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nX-A:  v \r\n\r\nhi")
            .unwrap()
            .unwrap();
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/api/x");
        assert_eq!(request.query_param("b").as_deref(), Some(" c d"));
        assert_eq!(request.header("x-a"), Some("v"));
        assert_eq!(request.body, b"hi");
        assert!(request.keep_alive());
        let bare_lf = parse("GET / HTTP/1.0\nHost: h\n\n").unwrap().unwrap();
        assert!(!bare_lf.keep_alive());
        assert_eq!(parse("").unwrap(), None);
    }

    #[test]
    fn bad_requests_get_the_right_status() {
        let long_line = format!("GET /{} HTTP/1.1\r\nHost: h\r\n\r\n", "a".repeat(80));
        let long_header = format!(
            "GET / HTTP/1.1\r\nHost: h\r\nX: {}\r\n\r\n",
            "a".repeat(200)
        );
        let many_headers = "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\n\r\n";
        let cases: &[(&str, &str, u16)] = &[
            ("no version", "GET /\r\n\r\n", 400),
            ("extra word", "GET / HTTP/1.1 x\r\nHost: h\r\n\r\n", 400),
            (
                "lower-case method",
                "get / HTTP/1.1\r\nHost: h\r\n\r\n",
                400,
            ),
            (
                "absolute target",
                "GET http://x/ HTTP/1.1\r\nHost: h\r\n\r\n",
                400,
            ),
            ("unknown version", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505),
            ("not http", "GET / FTP/1.0\r\n\r\n", 400),
            ("no host", "GET / HTTP/1.1\r\n\r\n", 400),
            ("no colon", "GET / HTTP/1.1\r\nHost h\r\n\r\n", 400),
            (
                "folded header",
                "GET / HTTP/1.1\r\nHost: h\r\n x\r\n\r\n",
                400,
            ),
            (
                "space before colon",
                "GET / HTTP/1.1\r\nHost : h\r\n\r\n",
                400,
            ),
            (
                "control byte",
                "GET / HTTP/1.1\r\nHost: h\u{1}\r\n\r\n",
                400,
            ),
            ("truncated headers", "GET / HTTP/1.1\r\nHost: h\r\n", 400),
            ("truncated line", "GET / HTT", 400),
            (
                "bad length",
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
                400,
            ),
            (
                "two lengths",
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
                400,
            ),
            (
                "truncated body",
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nab",
                400,
            ),
            (
                "chunked",
                "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
                411,
            ),
            (
                "body too large",
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n",
                413,
            ),
            (
                "huge length",
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                413,
            ),
            ("line too long", &long_line, 414),
            ("header too long", &long_header, 431),
            ("too many headers", many_headers, 431),
        ];
        for (name, raw, expected) in cases {
            assert_eq!(status(raw), Some(*expected), "{name}");
        }
    }

    #[test]
    fn keep_alive_reads_requests_one_after_another() {
        let raw = "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
        let mut reader = io::Cursor::new(raw.as_bytes().to_vec());
        let first = read_request(&mut reader, &small()).unwrap().unwrap();
        let second = read_request(&mut reader, &small()).unwrap().unwrap();
        assert_eq!((first.path.as_str(), first.keep_alive()), ("/a", true));
        assert_eq!((second.path.as_str(), second.keep_alive()), ("/b", false));
        assert!(read_request(&mut reader, &small()).unwrap().is_none());
    }

    #[test]
    fn responses_carry_length_and_connection() {
        let mut out = Vec::new();
        Response::new(200, "text/plain", "hey")
            .with("X-A", "1")
            .write_to(&mut out, false, false)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("Content-Length: 3\r\n"));
        assert!(text.contains("Connection: close\r\n\r\nhey"));
    }
}
