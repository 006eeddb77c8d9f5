//! One HTTP/1.1 connection: opening it (TCP, an optional proxy tunnel, TLS), its read
//! buffer, and the timeouts every read and write is held to.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ureq::{Proxy, ProxyProtocol};

use super::head::{self, Head};
use super::pace::Pace;
use super::{tls, HttpError, Target};

/// The read buffer of a connection: a response head must fit in it.
const BUFFER: usize = 64 * 1024;

/// A byte stream a connection runs over: a socket, or TLS over one.
pub trait Io: Read + Write + Send {}
impl<T: Read + Write + Send> Io for T {}

pub struct Connection {
    io: Box<dyn Io>,
    /// The socket under `io`, for its timeouts; `None` for the in-memory streams of tests.
    socket: Option<TcpStream>,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    per_read: Option<Duration>,
    deadline: Option<Instant>,
    /// The read timeout last set on the socket, so it is set again only when it changes.
    read_timeout: Option<Duration>,
    pace: Pace,
    /// The origin (and proxy) this connection reaches, for reuse.
    pub key: String,
}

/// Which read failed for lack of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// No byte for the per-read limit.
    Read(Duration),
    /// The whole exchange's limit ran out.
    Total,
    /// The connect timeout ran out (TCP, the proxy's tunnel, the TLS handshake).
    Connect,
}

impl std::fmt::Display for Waited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Waited::Read(d) => write!(f, "no data for {} ms", d.as_millis()),
            Waited::Total => f.write_str("the exchange took longer than its limit"),
            Waited::Connect => f.write_str("the connect timeout ran out"),
        }
    }
}

impl std::error::Error for Waited {}

/// Whether `err` is a read or write that ran out of time (a [`Waited`]).
pub fn waited(err: &io::Error) -> Option<Waited> {
    err.get_ref()?.downcast_ref::<Waited>().copied()
}

impl Connection {
    pub fn new(io: Box<dyn Io>, socket: Option<TcpStream>, key: String) -> Connection {
        Connection {
            io,
            socket,
            buf: vec![0u8; BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
            per_read: None,
            deadline: None,
            read_timeout: None,
            pace: Pace::default(),
            key,
        }
    }

    /// The limits of the exchange about to run: `per_read` for every read and write, and
    /// `total` for the whole exchange from now.
    pub fn set_limits(&mut self, per_read: Option<Duration>, total: Option<Duration>) {
        self.per_read = per_read;
        self.deadline = total.map(|t| Instant::now() + t);
        self.pace = Pace::default();
        if let Some(socket) = &self.socket {
            let _ = socket.set_write_timeout(per_read.or(total));
        }
    }

    /// A handle on the socket that can shut it down from another thread.
    pub fn socket(&self) -> Option<&TcpStream> {
        self.socket.as_ref()
    }

    #[inline(always)]
    pub fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    #[inline(always)]
    pub fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start >= self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// The next `n` buffered bytes, consumed: they stay in place until the next
    /// [`Connection::fill`].
    #[inline(always)]
    pub fn take(&mut self, n: usize) -> &[u8] {
        let start = self.start;
        self.consume(n);
        &self.buf[start..start + n]
    }

    /// Reads what the peer has sent into the buffer; `Ok(0)` at the end of the stream.
    pub fn fill(&mut self) -> io::Result<usize> {
        // Decoding leaves at most a partial line behind; move it down only when the tail is
        // short, so a stream of small reads is not copied once per read.
        if self.start > 0 && self.buf.len() - self.end < BUFFER / 4 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the connection's read buffer is full",
            ));
        }
        if let Some(pause) = self.pace.pause() {
            std::thread::sleep(pause);
        }
        let waited = self.arm_read_timeout()?;
        let room = self.buf.len() - self.end;
        let started = Instant::now();
        loop {
            match self.io.read(&mut self.buf[self.end..]) {
                Ok(n) => {
                    self.end += n;
                    self.pace.record(started.elapsed(), n, room);
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, waited))
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sets the socket's read timeout for the next read: the per-read limit, or what is left
    /// of the exchange's when that is sooner. Returns which limit a timeout would mean.
    fn arm_read_timeout(&mut self) -> io::Result<Waited> {
        let per_read = self.per_read;
        let (timeout, waited) = match self.deadline {
            None => (per_read, Waited::Read(per_read.unwrap_or_default())),
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, Waited::Total));
                }
                match per_read {
                    Some(p) if p < left => (Some(p), Waited::Read(p)),
                    _ => (Some(left), Waited::Total),
                }
            }
        };
        if let Some(socket) = &self.socket {
            if self.read_timeout != timeout {
                socket.set_read_timeout(timeout)?;
                self.read_timeout = timeout;
            }
        }
        Ok(waited)
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.io.write_all(bytes).map_err(|e| match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => io::Error::new(
                io::ErrorKind::TimedOut,
                Waited::Read(self.per_read.unwrap_or_default()),
            ),
            _ => e,
        })
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.io.flush()
    }

    /// Reads the next final response head (skipping 1xx interim ones); the body's bytes
    /// that came with it stay in the buffer.
    pub fn read_head(&mut self) -> Result<Head, HttpError> {
        let mut received = !self.buffered().is_empty();
        loop {
            if let Some(end) = head::end_of_head(self.buffered()) {
                let parsed = head::parse(&self.buffered()[..end])?;
                self.consume(end);
                if (100..200).contains(&parsed.status) && parsed.status != 101 {
                    continue;
                }
                return Ok(parsed);
            }
            if self.buffered().len() >= head::MAX_HEAD {
                return Err(HttpError::Protocol(
                    "the response head is over 64 KiB".into(),
                ));
            }
            match self.fill() {
                Ok(0) if !received => return Err(HttpError::Closed),
                Ok(0) => {
                    return Err(HttpError::Protocol(
                        "the connection closed in the middle of the response head".into(),
                    ))
                }
                Ok(_) => received = true,
                Err(e) if received && waited(&e).is_none() => return Err(HttpError::Cut(e)),
                Err(e) => return Err(HttpError::from_io(e, received)),
            }
        }
    }

    /// The stream under this connection, once nothing is left in its buffer (a proxy
    /// tunnel is handed over to TLS this way).
    fn into_io(self) -> Result<Box<dyn Io>, HttpError> {
        if !self.buffered().is_empty() {
            return Err(HttpError::Proxy(
                "the proxy sent data before the tunnel was used".into(),
            ));
        }
        Ok(self.io)
    }
}

/// Opens a connection to `target`, through `proxy` when given (a CONNECT tunnel, TLS to the
/// proxy first for an https proxy), with TLS for an https target. `on_socket` sees the
/// socket as soon as it is connected, so a cancel can shut it down mid-handshake.
pub fn open(
    target: &Target,
    proxy: Option<&Proxy>,
    tls_config: Option<&Arc<rustls::ClientConfig>>,
    connect_timeout: Duration,
    key: String,
    on_socket: &mut dyn FnMut(&TcpStream),
) -> Result<Connection, HttpError> {
    let (host, port) = match proxy {
        Some(p) => (
            p.host().trim_start_matches('[').trim_end_matches(']'),
            p.port(),
        ),
        None => (target.host.as_str(), target.port),
    };
    let deadline = Instant::now() + connect_timeout;
    let socket = tcp(host, port, deadline)?;
    on_socket(&socket);
    let _ = socket.set_nodelay(true);
    // The handshakes are held to what is left of the connect timeout.
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    socket.set_read_timeout(Some(left)).map_err(HttpError::Io)?;
    socket
        .set_write_timeout(Some(left))
        .map_err(HttpError::Io)?;
    let mut io: Box<dyn Io> = Box::new(socket.try_clone().map_err(HttpError::Io)?);
    if let Some(proxy) = proxy {
        if proxy.protocol() == ProxyProtocol::Https {
            io = tls::handshake(io, host, tls_config).map_err(|e| match e {
                HttpError::Tls(tls) => HttpError::ProxyTls(tls),
                other => other,
            })?;
        }
        let mut tunnel = Connection::new(io, None, String::new());
        tunnel.per_read = Some(left);
        connect_through(&mut tunnel, target, proxy).map_err(|e| match e {
            HttpError::Timeout(..) => HttpError::Timeout(Waited::Connect, "waiting for the proxy"),
            other => other,
        })?;
        io = tunnel.into_io()?;
    }
    if target.https {
        io = tls::handshake(io, &target.host, tls_config)?;
    }
    let mut conn = Connection::new(io, Some(socket), key);
    conn.read_timeout = Some(left);
    Ok(conn)
}

/// TCP to the first address of `host` that accepts before `deadline`.
fn tcp(host: &str, port: u16, deadline: Instant) -> Result<TcpStream, HttpError> {
    let addrs: Vec<SocketAddr> = match (host, port).to_socket_addrs() {
        Ok(addrs) => addrs.collect(),
        Err(e) => {
            return Err(HttpError::Resolve {
                host: host.to_string(),
                detail: e.to_string(),
            })
        }
    };
    if addrs.is_empty() {
        return Err(HttpError::Resolve {
            host: host.to_string(),
            detail: "no addresses".into(),
        });
    }
    let mut last = None;
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(socket) => return Ok(socket),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) if e.kind() != io::ErrorKind::TimedOut => HttpError::Connect(e),
        _ => HttpError::Timeout(Waited::Connect, "connecting"),
    })
}

/// Asks the proxy for a tunnel to `target` (RFC 9110 §9.3.6).
fn connect_through(
    tunnel: &mut Connection,
    target: &Target,
    proxy: &Proxy,
) -> Result<(), HttpError> {
    let authority = target.host_port();
    let mut fields = Vec::new();
    let credentials;
    if let Some(user) = proxy.username() {
        let secret = format!("{user}:{}", proxy.password().unwrap_or(""));
        credentials = format!("Basic {}", crate::base64::base64(secret.as_bytes()));
        fields.push(("Proxy-Authorization", credentials.as_str()));
    }
    let mut request = Vec::new();
    head::write_request_head(&mut request, "CONNECT", &authority, &authority, &fields)?;
    tunnel
        .write_all(&request)
        .and_then(|()| tunnel.flush())
        .map_err(|e| HttpError::from_io(e, false))?;
    let answer = tunnel.read_head().map_err(|e| match e {
        HttpError::Closed => HttpError::Proxy("the proxy closed the connection".into()),
        other => other,
    })?;
    match answer.status {
        200..=299 => Ok(()),
        407 => Err(HttpError::Proxy(
            "the proxy wants credentials (HTTP 407); put them in the proxy URL".into(),
        )),
        status => Err(HttpError::Proxy(format!("HTTP {status}"))),
    }
}

/// Shuts a connection's socket down from another thread (a cancel): blocked reads and
/// writes on it return at once.
pub fn shut(socket: &TcpStream) {
    let _ = socket.shutdown(Shutdown::Both);
}

#[cfg(test)]
pub mod testing {
    use super::*;

    /// A stream that yields each piece in one read, then the end; writes are discarded.
    struct Pieces(std::collections::VecDeque<Vec<u8>>);

    impl Read for Pieces {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some(piece) = self.0.front_mut() else {
                return Ok(0);
            };
            let n = piece.len().min(buf.len());
            buf[..n].copy_from_slice(&piece[..n]);
            piece.drain(..n);
            if piece.is_empty() {
                self.0.pop_front();
            }
            Ok(n)
        }
    }

    impl Write for Pieces {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A connection whose peer sends `reads` (an empty piece reads as nothing, not an end).
    pub fn pieces(reads: Vec<Vec<u8>>) -> Connection {
        let reads = reads.into_iter().filter(|r| !r.is_empty()).collect();
        Connection::new(Box::new(Pieces(reads)), None, String::new())
    }
}

#[cfg(test)]
mod tests {
    use super::testing::pieces;
    use super::*;

    #[test]
    fn interim_heads_are_skipped_and_the_body_stays_buffered() {
        let mut conn = pieces(vec![
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-".to_vec(),
            b"Length: 2\r\n\r\nhi".to_vec(),
        ]);
        let head = conn.read_head().unwrap();
        assert_eq!(head.status, 200);
        assert_eq!(conn.buffered(), b"hi");
    }

    #[test]
    fn a_close_before_any_byte_differs_from_a_close_mid_head() {
        assert!(matches!(pieces(vec![]).read_head(), Err(HttpError::Closed)));
        let err = pieces(vec![b"HTTP/1.1 200 OK\r\n".to_vec()])
            .read_head()
            .unwrap_err();
        assert!(
            err.to_string().contains("middle of the response head"),
            "{err}"
        );
        let huge = [b"HTTP/1.1 200 OK\r\nX: ".to_vec(), vec![b'a'; BUFFER]].concat();
        let err = pieces(vec![huge]).read_head().unwrap_err();
        assert!(err.to_string().contains("over 64 KiB"), "{err}");
    }
}
