//! An HTTP/1.1 response head (RFC 9112 §4–5): the status line and the header fields, parsed
//! from the bytes up to the blank line, and the request head we write.

use super::HttpError;

/// The largest response head accepted; a server that sends more is not a model server.
pub const MAX_HEAD: usize = 64 * 1024;

/// A parsed response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    /// `HTTP/1.0` closes the connection after the response unless told otherwise.
    pub http10: bool,
    /// Field names in lowercase, values trimmed, in the order received.
    pub fields: Vec<(String, String)>,
}

impl Head {
    /// The first value of field `name` (lowercase) when it is printable ASCII.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| v.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)))
    }

    /// Every value of field `name`, for the fields that may repeat.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.fields
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether a `Connection` field lists `token`.
    pub fn connection_has(&self, token: &str) -> bool {
        self.all("connection")
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }
}

/// Where the head in `bytes` ends (just past its blank line), if it is all there.
pub fn end_of_head(bytes: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some((text, taken)) = line(&bytes[from..]) {
        from += taken;
        // A blank line ends the head; one before the status line does not.
        if text.is_empty() && from > taken {
            return Some(from);
        }
    }
    None
}

/// The line at the start of `bytes` without its line end, and the bytes it takes with it.
// The release build optimises for size and would leave these per-chunk helpers (and the
// iterator adapters they would be written with) as calls; a stream has one chunk per token.
#[inline(always)]
pub fn line(bytes: &[u8]) -> Option<(&[u8], usize)> {
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'\n' {
            let text = &bytes[..at];
            let text = match text.last() {
                Some(b'\r') => &text[..at - 1],
                _ => text,
            };
            return Some((text, at + 1));
        }
        at += 1;
    }
    None
}

/// Parses a complete head (status line, fields, blank line).
pub fn parse(bytes: &[u8]) -> Result<Head, HttpError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| HttpError::Protocol("the response head is not valid UTF-8".into()))?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let status_line = lines.next().unwrap_or("");
    let (status, http10) = parse_status_line(status_line)?;
    let mut fields = Vec::new();
    for line in lines {
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            return Err(HttpError::Protocol(
                "the response folds a header line (obsolete line folding)".into(),
            ));
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(HttpError::Protocol(format!(
                "the response has a header line without a colon: `{}`",
                crate::text::one_line(line, 60)
            )));
        };
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(HttpError::Protocol(format!(
                "the response has an invalid header name `{}`",
                crate::text::one_line(name, 60)
            )));
        }
        fields.push((
            name.to_ascii_lowercase(),
            value.trim_matches([' ', '\t']).to_string(),
        ));
    }
    Ok(Head {
        status,
        http10,
        fields,
    })
}

fn parse_status_line(line: &str) -> Result<(u16, bool), HttpError> {
    let bad = || {
        HttpError::Protocol(format!(
            "the server did not answer with HTTP/1.x: `{}`",
            crate::text::one_line(line, 60)
        ))
    };
    let rest = line.strip_prefix("HTTP/1.").ok_or_else(bad)?;
    let http10 = match rest.as_bytes().first() {
        Some(b'0') => true,
        Some(b'1') => false,
        _ => return Err(bad()),
    };
    let code = rest[1..].strip_prefix(' ').ok_or_else(bad)?;
    let digits = code.get(..3).ok_or_else(bad)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) || code[3..].starts_with(|c| c != ' ') {
        return Err(bad());
    }
    let status: u16 = digits.parse().map_err(|_| bad())?;
    if status < 100 {
        return Err(bad());
    }
    Ok((status, http10))
}

/// RFC 9110 token characters, as header names must be.
pub fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Appends a request head: the request line, `Host`, the caller's fields, then the blank
/// line. A field that could end the line early (CR, LF, NUL) or a name that is not a token
/// is refused, so no configured header can smuggle a second request.
pub fn write_request_head(
    out: &mut Vec<u8>,
    method: &str,
    target: &str,
    host: &str,
    fields: &[(&str, &str)],
) -> Result<(), HttpError> {
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in fields {
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(HttpError::Header(format!(
                "header name `{}` is not a valid HTTP token",
                crate::text::one_line(name, 60)
            )));
        }
        if value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
            return Err(HttpError::Header(format!(
                "header `{name}` holds a line break or NUL"
            )));
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_parses_with_crlf_or_bare_lf_and_keeps_field_order() {
        let raw =
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-A:  1 \r\nx-a: 2\r\n\r\nbody";
        let end = end_of_head(raw).unwrap();
        assert_eq!(&raw[end..], b"body");
        let head = parse(&raw[..end]).unwrap();
        assert_eq!(head.status, 200);
        assert!(!head.http10);
        assert_eq!(head.get("content-type"), Some("text/event-stream"));
        assert_eq!(head.all("x-a").collect::<Vec<_>>(), ["1", "2"]);
        let lf = b"HTTP/1.0 404 Not Found\nConnection: keep-alive, Upgrade\n\n";
        let head = parse(&lf[..end_of_head(lf).unwrap()]).unwrap();
        assert_eq!((head.status, head.http10), (404, true));
        assert!(head.connection_has("keep-alive"));
        assert!(!head.connection_has("close"));
    }

    #[test]
    fn an_incomplete_head_has_no_end() {
        for raw in [
            &b"HTTP/1.1 200 OK\r\nA: b\r\n"[..],
            b"HTTP/1.1 200 OK",
            b"",
            b"\r\n",
        ] {
            assert_eq!(end_of_head(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn malformed_heads_are_refused_with_the_reason() {
        for (raw, says) in [
            ("HTTP/2 200\r\n\r\n", "HTTP/1.x"),
            ("HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.x"),
            ("HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.x"),
            ("HTTP/1.1 099 X\r\n\r\n", "HTTP/1.x"),
            ("SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.x"),
            (
                "HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
                "without a colon",
            ),
            (
                "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
                "invalid header name",
            ),
            ("HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n", "folds"),
        ] {
            let err = parse(raw.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(says), "{raw:?}: {err}");
        }
        assert_eq!(parse(b"HTTP/1.1 204\r\n\r\n").unwrap().status, 204);
    }

    #[test]
    fn a_header_value_with_a_line_break_is_never_written() {
        let mut out = Vec::new();
        write_request_head(&mut out, "POST", "/v1", "h:1", &[("A", "b")]).unwrap();
        assert_eq!(out, b"POST /v1 HTTP/1.1\r\nHost: h:1\r\nA: b\r\n\r\n");
        for (name, value) in [
            ("X", "a\r\nEvil: 1"),
            ("X", "a\nb"),
            ("X", "a\0"),
            ("X Y", "v"),
            ("", "v"),
        ] {
            let err = write_request_head(&mut Vec::new(), "GET", "/", "h", &[(name, value)]);
            assert!(
                matches!(err, Err(HttpError::Header(_))),
                "{name:?} {value:?}"
            );
        }
    }
}
