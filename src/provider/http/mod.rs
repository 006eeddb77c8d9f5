//! The provider's own HTTP/1.1 client: one request and its response on a connection that is
//! kept for the next request when the server allows. It exists for the streamed replies: a
//! generic client's chunk decoder made a pass over every chunk of an answer (one per token)
//! and cost more than the rest of the agent put together; this one decodes all the chunks
//! that arrived with one socket read in one call (`body`).
//!
//! Which proxy and which trust roots come from `net` and `proxy`; retries, the pool slot and
//! cancellation are `net`'s too. MCP servers and OAuth still go through ureq.

pub mod body;
pub mod conn;
pub mod head;
mod pace;
mod tls;

use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ureq::http::Uri;

pub use body::{Body, Framing};
pub use conn::{open, shut, waited, Connection, Waited};
pub use head::Head;
pub use tls::client_config;

/// Where an idle connection waits for the next request.
pub type Idle = Arc<Mutex<Option<Connection>>>;

/// The origin and request target of a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub https: bool,
    /// Without the brackets of an IPv6 literal.
    pub host: String,
    pub port: u16,
    /// The `Host` field: the URL's authority without user information.
    pub authority: String,
    /// Path and query; `/` when the URL has none.
    pub path: String,
}

impl Target {
    pub fn new(uri: &Uri) -> Target {
        let https = uri.scheme_str() == Some("https");
        let raw_host = uri.host().unwrap_or("");
        let host = raw_host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let authority = match uri.port_u16() {
            Some(port) => format!("{raw_host}:{port}"),
            None => raw_host.to_string(),
        };
        let path = uri
            .path_and_query()
            .map(|p| p.as_str())
            .filter(|p| !p.is_empty())
            .unwrap_or("/")
            .to_string();
        Target {
            https,
            host: host.to_string(),
            port,
            authority,
            path,
        }
    }

    /// `host:port`, bracketing an IPv6 literal, as a CONNECT request names it.
    pub fn host_port(&self) -> String {
        match self.host.contains(':') {
            true => format!("[{}]:{}", self.host, self.port),
            false => format!("{}:{}", self.host, self.port),
        }
    }
}

/// Why an exchange failed before its response head arrived.
#[derive(Debug)]
pub enum HttpError {
    /// The host name does not resolve.
    Resolve {
        host: String,
        detail: String,
    },
    /// The TCP connection could not be made (refused, unreachable).
    Connect(io::Error),
    /// A read or write ran out of time; the text says during what.
    Timeout(Waited, &'static str),
    Tls(rustls::Error),
    /// The TLS handshake with an `https://` proxy failed.
    ProxyTls(rustls::Error),
    /// The proxy refused or broke the tunnel.
    Proxy(String),
    /// A header we were to send cannot be sent.
    Header(String),
    /// The connection failed after it was made.
    Io(io::Error),
    /// The connection closed before any byte of an answer.
    Closed,
    /// The connection broke after part of the response head had arrived.
    Cut(io::Error),
    /// The server's answer is not HTTP/1.x we can read.
    Protocol(String),
}

impl HttpError {
    /// An I/O failure on an open connection; `received` when part of the answer had come.
    pub fn from_io(err: io::Error, received: bool) -> HttpError {
        if let Some(w) = waited(&err) {
            return HttpError::Timeout(
                w,
                match received {
                    true => "reading the response",
                    false => "waiting for the response",
                },
            );
        }
        let tls = err
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .cloned();
        match tls {
            Some(tls) => HttpError::Tls(tls),
            None => HttpError::Io(err),
        }
    }

    /// A refused connection or a name that does not resolve: nothing is there to answer.
    pub fn is_unreachable(&self) -> bool {
        match self {
            HttpError::Resolve { .. } => true,
            HttpError::Connect(e) => e.kind() == io::ErrorKind::ConnectionRefused,
            _ => false,
        }
    }

    /// The server's certificate could not be verified: retrying cannot help, `ca_file` can.
    pub fn is_certificate(&self) -> bool {
        matches!(
            self,
            HttpError::Tls(
                rustls::Error::InvalidCertificate(_) | rustls::Error::InvalidCertRevocationList(_)
            )
        )
    }

    /// Worth another attempt: the network or the server may do better next time.
    pub fn is_retryable(&self) -> bool {
        match self {
            HttpError::Connect(_) | HttpError::Io(_) | HttpError::Closed | HttpError::Cut(_) => {
                true
            }
            HttpError::Timeout(waited, _) => *waited != Waited::Total,
            _ => false,
        }
    }

    /// The connection was up when it failed (a peer that closed or reset it, or a reply
    /// that did not come in time), as opposed to one that never got going.
    pub fn is_dropped_after_connect(&self) -> bool {
        match self {
            HttpError::Closed | HttpError::Cut(_) => true,
            HttpError::Io(e) => matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::BrokenPipe
            ),
            HttpError::Timeout(waited, _) => *waited != Waited::Connect,
            _ => false,
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Resolve { host, detail } => write!(f, "cannot resolve {host}: {detail}"),
            HttpError::Connect(e) => write!(f, "{e}"),
            HttpError::Timeout(waited, during) => write!(f, "timed out {during} ({waited})"),
            HttpError::Tls(e) => write!(f, "{e}"),
            HttpError::ProxyTls(e) => write!(f, "TLS with the proxy failed: {e}"),
            HttpError::Proxy(detail) => write!(f, "{detail}"),
            HttpError::Header(detail) => write!(f, "{detail}"),
            HttpError::Io(e) => write!(f, "{e}"),
            HttpError::Closed => f.write_str("the connection closed before the server answered"),
            HttpError::Cut(e) => write!(
                f,
                "the connection broke in the middle of the response head: {e}"
            ),
            HttpError::Protocol(detail) => write!(f, "{detail}"),
        }
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HttpError::Connect(e) | HttpError::Io(e) | HttpError::Cut(e) => Some(e),
            HttpError::Tls(e) | HttpError::ProxyTls(e) => Some(e),
            _ => None,
        }
    }
}

/// One request: the method, the target, the fields (without `Host` and `Content-Length`,
/// which are added) and the body as consecutive parts, sent without joining them.
pub struct Request<'a> {
    pub method: &'a str,
    pub target: &'a Target,
    pub fields: &'a [(String, String)],
    pub body: Option<&'a [&'a [u8]]>,
}

/// A response whose head has arrived.
pub struct Response {
    pub head: Head,
    pub body: Body,
}

/// Sends `request` on `conn` and reads the response head. A failure says whether any byte
/// of the answer had arrived (`Err((_, false))` on a reused connection means it had gone
/// stale and a fresh one may be tried).
pub fn exchange(
    mut conn: Connection,
    request: &Request<'_>,
    limits: (Option<Duration>, Option<Duration>),
    idle: Option<Idle>,
) -> Result<Response, (HttpError, bool)> {
    conn.set_limits(limits.0, limits.1);
    let length = request.body.map(|parts| {
        parts
            .iter()
            .map(|part| part.len())
            .sum::<usize>()
            .to_string()
    });
    let mut fields: Vec<(&str, &str)> = request
        .fields
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    if let Some(length) = &length {
        // An explicit length keeps the body length-delimited: some local servers refuse
        // chunked requests.
        fields.push(("Content-Length", length));
    }
    let mut head_bytes = Vec::with_capacity(512);
    head::write_request_head(
        &mut head_bytes,
        request.method,
        &request.target.path,
        &request.target.authority,
        &fields,
    )
    .map_err(|e| (e, false))?;
    let sent = (|| {
        conn.write_all(&head_bytes)?;
        for part in request.body.unwrap_or_default() {
            conn.write_all(part)?;
        }
        conn.flush()
    })();
    sent.map_err(|e| (HttpError::from_io(e, false), false))?;
    let head = conn.read_head().map_err(|e| {
        let answered = !matches!(e, HttpError::Closed | HttpError::Io(_));
        (e, answered)
    })?;
    let framing = framing(request.method, &head).map_err(|e| (e, true))?;
    // Both framings at once is how requests are smuggled: never reuse such a connection.
    let both_framings =
        head.get("transfer-encoding").is_some() && head.get("content-length").is_some();
    let reusable = !head.http10 && !head.connection_has("close") && !both_framings;
    Ok(Response {
        body: Body::new(conn, framing, reusable, idle),
        head,
    })
}

/// How the body of a response to `method` ends (RFC 9112 §6.3).
pub fn framing(method: &str, head: &Head) -> Result<Framing, HttpError> {
    if method == "HEAD" || matches!(head.status, 100..=199 | 204 | 304) {
        return Ok(Framing::Empty);
    }
    let codings: Vec<&str> = head
        .all("transfer-encoding")
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    if let Some(last) = codings.last() {
        return Ok(match last.eq_ignore_ascii_case("chunked") {
            true => Framing::Chunked,
            false => Framing::Close,
        });
    }
    let mut length = None;
    for value in head.all("content-length").flat_map(|v| v.split(',')) {
        let value = value.trim();
        let parsed =
            (!value.is_empty() && value.len() <= 19 && value.bytes().all(|b| b.is_ascii_digit()))
                .then(|| value.parse::<u64>().ok())
                .flatten();
        match (parsed, length) {
            (Some(n), None) => length = Some(n),
            (Some(n), Some(m)) if n == m => {}
            _ => {
                return Err(HttpError::Protocol(format!(
                    "the server sent an invalid Content-Length `{}`",
                    crate::text::one_line(value, 40)
                )))
            }
        }
    }
    Ok(length.map_or(Framing::Close, Framing::Length))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(raw: &str) -> Head {
        head::parse(raw.as_bytes()).unwrap()
    }

    #[test]
    fn targets_keep_the_authority_and_default_the_port_and_path() {
        let t = Target::new(&"https://api.x.com".parse().unwrap());
        assert_eq!(
            (t.port, t.authority.as_str(), t.path.as_str()),
            (443, "api.x.com", "/")
        );
        let t = Target::new(&"http://[::1]:8080/v1/chat?x=1".parse().unwrap());
        assert_eq!(t.host, "::1");
        assert_eq!(t.authority, "[::1]:8080");
        assert_eq!(t.path, "/v1/chat?x=1");
        assert_eq!(t.host_port(), "[::1]:8080");
        let t = Target::new(&"http://user:pw@h:81/p".parse().unwrap());
        assert_eq!(t.authority, "h:81", "no credentials in Host");
    }

    #[test]
    fn framing_follows_rfc_9112() {
        let chunked = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
        assert_eq!(framing("POST", &chunked).unwrap(), Framing::Chunked);
        let gzip = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n");
        assert_eq!(framing("POST", &gzip).unwrap(), Framing::Close);
        let both =
            head("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(framing("POST", &both).unwrap(), Framing::Chunked);
        let length = head("HTTP/1.1 200 OK\r\nContent-Length: 12, 12\r\n\r\n");
        assert_eq!(framing("GET", &length).unwrap(), Framing::Length(12));
        assert_eq!(framing("HEAD", &length).unwrap(), Framing::Empty);
        let none = head("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(framing("GET", &none).unwrap(), Framing::Empty);
        let close = head("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!(framing("GET", &close).unwrap(), Framing::Close);
        for bad in ["-1", "1 2", "12, 13", "0x10", "99999999999999999999", ""] {
            let h = head(&format!("HTTP/1.1 200 OK\r\nContent-Length: {bad}\r\n\r\n"));
            assert!(framing("GET", &h).is_err(), "{bad:?}");
        }
    }

    /// Reads a whole response from `wire` the way `net` does: head, framing, body.
    fn read_response(wire: Vec<u8>, step: usize) -> Result<(u16, Vec<u8>), String> {
        use std::io::Read;
        let target = Target::new(&"http://h/v1".parse().unwrap());
        let request = Request {
            method: "POST",
            target: &target,
            fields: &[],
            body: Some(&[b"{}"]),
        };
        let conn = conn::testing::pieces(vec![wire]);
        let mut response =
            exchange(conn, &request, (None, None), None).map_err(|(e, _)| e.to_string())?;
        let mut out = Vec::new();
        let mut buf = vec![0u8; step];
        loop {
            match response.body.read(&mut buf) {
                Ok(0) => return Ok((response.head.status, out)),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    #[test]
    fn no_mutation_or_cut_of_a_response_makes_the_client_panic() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=1\r\n world\r\n0\r\nT: 1\r\n\r\n";
        assert_eq!(
            read_response(wire.to_vec(), 7).unwrap(),
            (200, b"hello world".to_vec())
        );
        for at in 0..wire.len() {
            for byte in [0u8, b'\r', b'\n', b'0', b'f', b';', b' ', b':', 0xff] {
                let mut mutated = wire.to_vec();
                mutated[at] = byte;
                if let Ok((_, body)) = read_response(mutated.clone(), 4) {
                    // A mutation can end the head early (then the rest is the body, up to the
                    // close), never make bytes up.
                    assert!(body.len() < mutated.len(), "{at} {byte}: {body:?}");
                }
            }
            read_response(wire[..at].to_vec(), 3).ok();
        }
    }
}
