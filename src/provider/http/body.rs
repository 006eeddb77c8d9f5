//! A response body read through its framing (RFC 9112 §6–7): a `Content-Length`, chunked
//! transfer coding, or everything until the server closes. Chunks are decoded from the
//! connection's buffer straight into the caller's, as many as have arrived per call, so a
//! stream of small events costs one socket read and one copy per read, not a pass per chunk.

use std::io::{self, Read};
use std::time::Duration;

use super::conn::Connection;
use super::head::line;
use super::Idle;

/// How the end of a body is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body (a HEAD request, 1xx, 204, 304).
    Empty,
    Length(u64),
    Chunked,
    /// Until the server closes the connection, which then cannot be reused.
    Close,
}

/// The longest chunk-size line or trailer line accepted.
const MAX_LINE: usize = 4096;
/// The most trailer bytes read after the last chunk.
const MAX_TRAILER: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Length(u64),
    Close,
    /// Before a chunk-size line.
    Size,
    /// Inside a chunk with this many bytes left.
    Data(u64),
    /// After a chunk's data, before its CRLF.
    DataEnd,
    /// After the last chunk, with this many trailer bytes read.
    Trailer(usize),
    Done,
}

/// A response body; `Read` yields its decoded bytes. Once it is read to the end, the
/// connection goes back to `idle` when it may carry another request.
pub struct Body {
    conn: Option<Connection>,
    state: State,
    reusable: bool,
    idle: Option<Idle>,
}

impl Body {
    pub fn new(conn: Connection, framing: Framing, reusable: bool, idle: Option<Idle>) -> Body {
        let state = match framing {
            Framing::Empty => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::Size,
            Framing::Close => State::Close,
        };
        let mut body = Body {
            conn: Some(conn),
            state,
            reusable: reusable && framing != Framing::Close,
            idle,
        };
        if state == State::Done {
            body.release();
        }
        body
    }

    /// New limits for the rest of the body (see [`Connection::set_limits`]).
    pub fn set_limits(&mut self, per_read: Option<Duration>, total: Option<Duration>) {
        if let Some(conn) = self.conn.as_mut() {
            conn.set_limits(per_read, total);
        }
    }

    /// Whether the whole body has been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Hands the connection to the idle slot when nothing of another response is pending
    /// on it, else closes it.
    fn release(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        if let (true, true, Some(idle)) = (self.reusable, conn.buffered().is_empty(), &self.idle) {
            *idle.lock().unwrap_or_else(|p| p.into_inner()) = Some(conn);
        }
    }
}

fn cut_short(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("the server closed the connection in the middle of {what}"),
    )
}

fn malformed(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// A chunk-size line: hex digits, then optional whitespace and `;extensions`.
#[inline(always)]
fn chunk_size(line: &[u8]) -> io::Result<u64> {
    let mut size = 0u64;
    let mut at = 0;
    while at < line.len() {
        let digit = match line[at] {
            b @ b'0'..=b'9' => b - b'0',
            b @ b'a'..=b'f' => b - b'a' + 10,
            b @ b'A'..=b'F' => b - b'A' + 10,
            _ => break,
        };
        size = size * 16 + u64::from(digit);
        at += 1;
        if at > 15 {
            return Err(invalid_size());
        }
    }
    if at == 0 {
        return Err(invalid_size());
    }
    let mut rest = &line[at..];
    while let [b' ' | b'\t', tail @ ..] = rest {
        rest = tail;
    }
    match rest {
        [] | [b';', ..] => Ok(size),
        _ => Err(invalid_size()),
    }
}

fn invalid_size() -> io::Error {
    malformed("the server sent an invalid chunk size line")
}

/// What [`Body::next_run`] found in the bytes at hand.
pub enum Run<'a> {
    /// Body bytes, borrowed from the connection's buffer.
    Data(&'a [u8]),
    /// Everything that arrived is decoded; [`Body::wait`] for more.
    Pending,
    /// The body is complete.
    End,
}

/// What the framing makes of the buffered bytes: body bytes to hand over, or a wait.
enum Next {
    Data(usize),
    Pending,
    End,
}

impl Body {
    /// The next run of body bytes (at most `max`) among those already received, without
    /// waiting; chunk framing is decoded in place, so a run is a slice of the connection's
    /// buffer and a stream of small chunks is never copied on its way to the decoder.
    pub fn next_run(&mut self, max: usize) -> io::Result<Run<'_>> {
        let next = self.advance(max)?;
        Ok(match (next, self.conn.as_mut()) {
            (Next::Data(n), Some(conn)) => Run::Data(conn.take(n)),
            (Next::Pending, Some(_)) => Run::Pending,
            _ => Run::End,
        })
    }

    /// Runs the framing over the buffered bytes until body bytes, the end, or the need for
    /// more; the state moves past the body bytes it reports.
    fn advance(&mut self, max: usize) -> io::Result<Next> {
        loop {
            if self.state == State::Done {
                self.release();
                return Ok(Next::End);
            }
            let Some(conn) = self.conn.as_mut() else {
                return Ok(Next::End);
            };
            let buffered = conn.buffered();
            let (next, taken) = match self.state {
                State::Length(0) => (State::Done, 0),
                State::Length(left) | State::Data(left) => {
                    if buffered.is_empty() || max == 0 {
                        return Ok(Next::Pending);
                    }
                    let n = buffered.len().min(max);
                    let n = n.min(usize::try_from(left).unwrap_or(usize::MAX));
                    let left = left - n as u64;
                    self.state = match self.state {
                        State::Length(_) => State::Length(left),
                        _ if left == 0 => State::DataEnd,
                        _ => State::Data(left),
                    };
                    return Ok(Next::Data(n));
                }
                State::Close => {
                    if buffered.is_empty() || max == 0 {
                        return Ok(Next::Pending);
                    }
                    return Ok(Next::Data(buffered.len().min(max)));
                }
                State::Size => match line(buffered) {
                    Some((text, taken)) => match chunk_size(text)? {
                        0 => (State::Trailer(0), taken),
                        n => (State::Data(n), taken),
                    },
                    None if buffered.len() > MAX_LINE => {
                        return Err(malformed("the server sent a chunk size line over 4 KiB"))
                    }
                    None => return Ok(Next::Pending),
                },
                State::DataEnd => match buffered {
                    [b'\r', b'\n', ..] => (State::Size, 2),
                    [b'\n', ..] => (State::Size, 1),
                    [] | [b'\r'] => return Ok(Next::Pending),
                    _ => return Err(malformed("the server sent a chunk longer than its size")),
                },
                State::Trailer(read) => match line(buffered) {
                    Some((text, taken)) if read + taken <= MAX_TRAILER => match text.is_empty() {
                        true => (State::Done, taken),
                        false => (State::Trailer(read + taken), taken),
                    },
                    Some(_) => return Err(malformed("the server sent over 16 KiB of trailers")),
                    None if buffered.len() > MAX_LINE => {
                        return Err(malformed("the server sent a trailer line over 4 KiB"))
                    }
                    None => return Ok(Next::Pending),
                },
                State::Done => (State::Done, 0),
            };
            conn.consume(taken);
            self.state = next;
        }
    }

    /// Waits for more of the body to arrive (after [`Run::Pending`]). The end of the
    /// stream completes a body that runs until the close and breaks any other.
    pub fn wait(&mut self) -> io::Result<()> {
        let Some(conn) = self.conn.as_mut() else {
            return Ok(());
        };
        match conn.fill() {
            Ok(0) if self.state == State::Close => self.state = State::Done,
            // A TLS peer that closes without close_notify ends a body that runs until the
            // close just the same; every other framing knows its end.
            Err(e) if self.state == State::Close && e.kind() == io::ErrorKind::UnexpectedEof => {
                self.state = State::Done
            }
            Ok(0) => {
                self.conn = None;
                return Err(cut_short(match self.state {
                    State::Length(_) => "the body",
                    _ => "a chunked body",
                }));
            }
            Ok(_) => {}
            Err(e) => {
                self.conn = None;
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Read for Body {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut written = 0;
        while written < out.len() {
            match self.next_run(out.len() - written)? {
                Run::Data(bytes) => {
                    out[written..written + bytes.len()].copy_from_slice(bytes);
                    written += bytes.len();
                }
                Run::End => break,
                // Hand over what has arrived before waiting for more.
                Run::Pending if written > 0 => break,
                Run::Pending => self.wait()?,
            }
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::http::conn::testing::pieces;
    use std::sync::{Arc, Mutex};

    fn read_all(body: &mut Body, step: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; step];
        loop {
            match body.read(&mut buf)? {
                0 => return Ok(out),
                n => out.extend_from_slice(&buf[..n]),
            }
        }
    }

    fn chunked(parts: &[&str]) -> String {
        let mut wire: String = parts
            .iter()
            .map(|p| format!("{:x}\r\n{p}\r\n", p.len()))
            .collect();
        wire.push_str("0\r\n\r\n");
        wire
    }

    /// Every way of cutting `wire` into two reads, and one byte per read, with reads of
    /// every small output size.
    fn each_delivery(wire: &[u8], mut check: impl FnMut(Vec<Vec<u8>>, usize)) {
        for cut in 0..=wire.len() {
            for step in [1, 3, 64] {
                check(vec![wire[..cut].to_vec(), wire[cut..].to_vec()], step);
            }
        }
        check(wire.iter().map(|b| vec![*b]).collect(), 5);
    }

    #[test]
    fn a_chunked_body_decodes_the_same_however_it_arrives() {
        let wire = chunked(&["data: {\"a\":1}\n\n", "x", "data: [DONE]\n\n"]);
        let wire = wire
            .replace("1\r\nx", "1;ext=\"q\"\r\nx")
            .replace("0\r\n\r\n", "0\r\nX-T: 1\r\n\r\n");
        each_delivery(wire.as_bytes(), |reads, step| {
            let idle: Idle = Arc::new(Mutex::new(None));
            let mut body = Body::new(pieces(reads), Framing::Chunked, true, Some(idle.clone()));
            let got = read_all(&mut body, step).unwrap();
            assert_eq!(got, b"data: {\"a\":1}\n\nxdata: [DONE]\n\n");
            assert!(body.is_done());
            assert!(
                idle.lock().unwrap().is_some(),
                "a finished body returns its connection"
            );
        });
    }

    #[test]
    fn one_read_returns_every_chunk_that_has_arrived() {
        let events: Vec<String> = (0..50).map(|i| format!("data: {i}\n\n")).collect();
        let parts: Vec<&str> = events.iter().map(String::as_str).collect();
        let wire = chunked(&parts);
        let mut body = Body::new(
            pieces(vec![wire.into_bytes()]),
            Framing::Chunked,
            true,
            None,
        );
        let mut buf = vec![0u8; 64 * 1024];
        let n = body.read(&mut buf).unwrap();
        assert_eq!(n, events.concat().len(), "all 50 chunks in one read");
        assert!(body.is_done());
        assert_eq!(body.read(&mut buf).unwrap(), 0);
    }

    /// What `next_run` hands over, in order, waiting whenever it says `Pending`.
    fn runs(body: &mut Body, max: usize) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match body.next_run(max).unwrap() {
                Run::Data(bytes) => seen.push(String::from_utf8_lossy(bytes).into_owned()),
                Run::Pending => {
                    seen.push("|".into());
                    body.wait().unwrap();
                }
                Run::End => return seen,
            }
        }
    }

    #[test]
    fn runs_are_each_chunk_in_place_and_pending_only_when_nothing_is_left() {
        let first = b"3\r\nabc\r\n2\r\nde\r\n4\r\nfg".to_vec();
        let second = b"hi\r\n0\r\n\r\n".to_vec();
        let mut body = Body::new(
            pieces(vec![first.clone(), second.clone()]),
            Framing::Chunked,
            true,
            None,
        );
        assert_eq!(
            runs(&mut body, usize::MAX),
            ["|", "abc", "de", "fg", "|", "hi"]
        );
        let mut body = Body::new(pieces(vec![first, second]), Framing::Chunked, true, None);
        assert_eq!(runs(&mut body, 2), ["|", "ab", "c", "de", "fg", "|", "hi"]);
        let mut body = Body::new(
            pieces(vec![b"hello".to_vec()]),
            Framing::Length(5),
            true,
            None,
        );
        assert_eq!(runs(&mut body, usize::MAX), ["|", "hello"]);
    }

    #[test]
    fn a_length_body_stops_at_its_length_and_close_bodies_at_the_close() {
        each_delivery(b"hello world", |reads, step| {
            let mut body = Body::new(pieces(reads.clone()), Framing::Length(5), true, None);
            assert_eq!(read_all(&mut body, step).unwrap(), b"hello");
            let mut body = Body::new(pieces(reads), Framing::Close, true, None);
            assert_eq!(read_all(&mut body, step).unwrap(), b"hello world");
        });
    }

    #[test]
    fn a_connection_goes_back_only_after_a_whole_reusable_body() {
        let idle: Idle = Arc::new(Mutex::new(None));
        let wire = chunked(&["abc"]);
        // Not reusable (Connection: close): closed.
        let mut body = Body::new(
            pieces(vec![wire.clone().into_bytes()]),
            Framing::Chunked,
            false,
            Some(idle.clone()),
        );
        read_all(&mut body, 8).unwrap();
        assert!(idle.lock().unwrap().is_none());
        // Read up to the last data byte but not the terminator: still ours.
        let mut body = Body::new(
            pieces(vec![b"3\r\nabc".to_vec(), b"\r\n0\r\n\r\n".to_vec()]),
            Framing::Chunked,
            true,
            Some(idle.clone()),
        );
        let mut buf = [0u8; 3];
        assert_eq!(body.read(&mut buf).unwrap(), 3);
        assert!(idle.lock().unwrap().is_none());
        drop(body);
        assert!(
            idle.lock().unwrap().is_none(),
            "a dropped body closes its connection"
        );
        // Bytes after the end of the body: the connection is not trusted with another request.
        let mut body = Body::new(
            pieces(vec![(wire + "HTTP/1.1 200").into_bytes()]),
            Framing::Chunked,
            true,
            Some(idle.clone()),
        );
        read_all(&mut body, 8).unwrap();
        assert!(idle.lock().unwrap().is_none());
        // An empty body returns the connection at once.
        let _body = Body::new(pieces(vec![]), Framing::Empty, true, Some(idle.clone()));
        assert!(idle.lock().unwrap().is_some());
    }

    #[test]
    fn broken_framing_is_an_error_that_names_it() {
        for (wire, says) in [
            ("3\r\nab", "middle of a chunked body"),
            ("zz\r\nab\r\n", "invalid chunk size"),
            ("\r\nab\r\n", "invalid chunk size"),
            ("3 x\r\nabc\r\n", "invalid chunk size"),
            ("ffffffffffffffff\r\n", "invalid chunk size"),
            ("3\r\nabcd\r\n0\r\n\r\n", "longer than its size"),
            ("3\r\nabc\r\n0\r\n", "middle of a chunked body"),
        ] {
            let mut body = Body::new(
                pieces(vec![wire.as_bytes().to_vec()]),
                Framing::Chunked,
                true,
                None,
            );
            let err = read_all(&mut body, 16).unwrap_err().to_string();
            assert!(err.contains(says), "{wire:?}: {err}");
        }
        let long = "0".repeat(MAX_LINE + 1);
        let mut body = Body::new(
            pieces(vec![long.into_bytes()]),
            Framing::Chunked,
            true,
            None,
        );
        assert!(read_all(&mut body, 16)
            .unwrap_err()
            .to_string()
            .contains("over 4 KiB"));
        let mut body = Body::new(
            pieces(vec![b"abc".to_vec()]),
            Framing::Length(5),
            true,
            None,
        );
        let err = read_all(&mut body, 16).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}
