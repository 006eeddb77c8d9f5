//! The listening socket, the reception of request heads, and the worker pool.
//!
//! One thread, reception, polls the listener and every connection that is still sending a
//! request head (new ones, and kept-alive ones between requests), so a slow or idle client
//! holds no worker. A complete head is parsed and classed: authenticated (a valid login cookie
//! or bearer token) or not. Connections still without a head are capped per source (an IPv6
//! /64 is one) and in total, the oldest giving way to a new one (a client that sends its head
//! at once always gets in), and one without a complete head after [`HEAD_DEADLINE`] is
//! closed. Of the workers, [`Pool::reserved`] take authenticated requests only, so no amount
//! of unauthenticated traffic takes every worker; the others take authenticated ones first.
//! A worker reads the body, answers, and hands a kept-alive connection back to reception; an
//! event stream leaves the pool once its headers are sent (the session writes to it from then
//! on). A full queue gets an immediate 503. Shutdown stops reception and the workers; the
//! caller then stops the sessions.

use std::collections::VecDeque;
use std::io::{Cursor, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::auth;
use super::http::{self, HttpError, Limits, Request, Response};
use super::routes::{Reply, Router};

/// How long a connection may take to send a whole request head before it is authenticated:
/// a client that trickles bytes (slowloris) or sends nothing is closed after this.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(10);
/// How long an authenticated connection may stay idle between requests, and may take to send
/// a request body.
const IDLE: Duration = Duration::from_secs(30);
/// Connections without a complete head, from one source and in total.
pub const MAX_PENDING_PER_SOURCE: usize = 32;
pub const MAX_PENDING: usize = 256;
/// Authenticated kept-alive connections waiting for their next request.
const MAX_IDLE: usize = 256;

pub struct Pool {
    pub workers: usize,
    /// Workers that take authenticated requests only.
    pub reserved: usize,
    /// Requests waiting for a worker, per class.
    pub queue: usize,
}

/// A connection reception watches until its head is complete.
struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    source: IpAddr,
    /// What has arrived of the head (and, pipelined, after it).
    bytes: Vec<u8>,
    deadline: Instant,
    since: Instant,
    /// Kept alive after an authenticated request: counted apart from the strangers.
    known: bool,
}

/// A request with a complete head, for a worker.
struct Job {
    stream: TcpStream,
    peer: SocketAddr,
    head: Result<(Request, usize), HttpError>,
    /// Bytes after the head: the body's start, and any pipelined request after it.
    rest: Vec<u8>,
    authenticated: bool,
}

/// A kept-alive connection a worker hands back, with what it already read past its request.
struct Back {
    stream: TcpStream,
    peer: SocketAddr,
    rest: Vec<u8>,
    known: bool,
}

#[derive(Default)]
struct Queues {
    authenticated: VecDeque<Job>,
    anonymous: VecDeque<Job>,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    queues: Mutex<Queues>,
    ready: Condvar,
}

/// Serves until `stop` is set and reception is woken (see [`wake`]).
pub fn serve(listener: TcpListener, router: Arc<Router>, pool: Pool, stop: Arc<AtomicBool>) {
    let Ok((wake_rx, wake_tx)) = wake_pair() else {
        return;
    };
    let shared = Arc::new(Shared::default());
    let (back_tx, back_rx) = mpsc::channel::<Back>();
    for n in 0..pool.workers.max(1) {
        let (shared, router) = (Arc::clone(&shared), Arc::clone(&router));
        let (back, wake) = (back_tx.clone(), wake_tx.try_clone());
        let reserved = n < pool.reserved.min(pool.workers.saturating_sub(1));
        let _ = std::thread::Builder::new()
            .name(format!("serve-worker-{n}"))
            .spawn(move || {
                if let Ok(wake) = wake {
                    worker(&shared, &router, &back, &wake, reserved);
                }
            });
    }
    drop(back_tx);
    let reception = Reception {
        router: &router,
        shared: &shared,
        queue: pool.queue.max(1),
        limits: Limits::default(),
        pending: Vec::new(),
    };
    reception.run(&listener, &wake_rx, &back_rx, &stop);
    let mut queues = shared.queues.lock().unwrap_or_else(PoisonError::into_inner);
    queues.closed = true;
    queues.authenticated.clear();
    queues.anonymous.clear();
    shared.ready.notify_all();
}

struct Reception<'a> {
    router: &'a Router,
    shared: &'a Shared,
    queue: usize,
    limits: Limits,
    pending: Vec<Pending>,
}

impl Reception<'_> {
    fn run(
        mut self,
        listener: &TcpListener,
        wake: &TcpStream,
        back: &Receiver<Back>,
        stop: &AtomicBool,
    ) {
        if listener.set_nonblocking(true).is_err() {
            return;
        }
        let mut fds = Vec::new();
        let mut ready = Vec::new();
        loop {
            let now = Instant::now();
            let timeout = self
                .pending
                .iter()
                .map(|p| p.deadline.saturating_duration_since(now))
                .min()
                .map_or(-1, |wait| {
                    i32::try_from(wait.as_millis().saturating_add(1)).unwrap_or(i32::MAX)
                });
            fds.clear();
            fds.push(raw(listener));
            fds.push(raw(wake));
            fds.extend(self.pending.iter().map(|p| raw(&p.stream)));
            if crate::term::sys::poll_readable_many(&fds, timeout, &mut ready).is_err() {
                return;
            }
            if stop.load(Ordering::SeqCst) {
                return;
            }
            // Readable heads first, from the back, so the indices of the rest hold.
            for at in (0..self.pending.len()).rev() {
                if ready.get(at + 2).copied().unwrap_or(false) {
                    self.read_some(at);
                }
            }
            let now = Instant::now();
            self.pending.retain(|p| p.deadline > now);
            if ready.get(1).copied().unwrap_or(false) {
                let mut scratch = [0u8; 64];
                while matches!((&*wake).read(&mut scratch), Ok(n) if n > 0) {}
            }
            while let Ok(kept) = back.try_recv() {
                self.admit(kept.stream, kept.peer, kept.rest, kept.known);
            }
            if ready.first().copied().unwrap_or(false) {
                loop {
                    match listener.accept() {
                        Ok((stream, peer)) => self.admit(stream, peer, Vec::new(), false),
                        Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(_) => break,
                    }
                }
            }
        }
    }

    /// Watches a connection for its next head, or dispatches it at once when the head is
    /// already there. A stranger over the caps of its source or of all makes the oldest such
    /// connection give way.
    fn admit(&mut self, stream: TcpStream, peer: SocketAddr, bytes: Vec<u8>, known: bool) {
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let _ = stream.set_nodelay(true);
        let now = Instant::now();
        let pending = Pending {
            source: auth::source(peer.ip()),
            stream,
            peer,
            bytes,
            deadline: now + if known { IDLE } else { HEAD_DEADLINE },
            since: now,
            known,
        };
        if http::head_complete(&pending.bytes) {
            self.dispatch(pending);
            return;
        }
        if known {
            self.make_room(MAX_IDLE, |p| p.known);
        } else {
            let source = pending.source;
            self.make_room(MAX_PENDING_PER_SOURCE, |p| !p.known && p.source == source);
            self.make_room(MAX_PENDING, |p| !p.known);
        }
        self.pending.push(pending);
    }

    /// Closes the oldest connection of those `which` selects while there are `cap` or more.
    fn make_room(&mut self, cap: usize, which: impl Fn(&Pending) -> bool) {
        while self.pending.iter().filter(|p| which(p)).count() >= cap {
            let oldest = self
                .pending
                .iter()
                .enumerate()
                .filter(|(_, p)| which(p))
                .min_by_key(|(_, p)| p.since)
                .map(|(at, _)| at);
            match oldest {
                Some(at) => drop(self.pending.swap_remove(at)),
                None => return,
            }
        }
    }

    /// Reads what a readable connection has sent: closed, failed or a complete (or too
    /// long) head takes it off the watch list.
    fn read_some(&mut self, at: usize) {
        let most = self.limits.line + self.limits.headers + 4;
        let mut chunk = [0u8; 16 * 1024];
        let Some(pending) = self.pending.get_mut(at) else {
            return;
        };
        let room = most
            .saturating_sub(pending.bytes.len())
            .clamp(1, chunk.len());
        let whole = match (&pending.stream).read(&mut chunk[..room]) {
            Ok(0) => None,
            Ok(n) => {
                pending.bytes.extend_from_slice(&chunk[..n]);
                Some(http::head_complete(&pending.bytes) || pending.bytes.len() >= most)
            }
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) =>
            {
                Some(false)
            }
            Err(_) => None,
        };
        match whole {
            Some(false) => {}
            Some(true) => {
                let done = self.pending.swap_remove(at);
                self.dispatch(done);
            }
            None => drop(self.pending.swap_remove(at)),
        }
    }

    /// Parses a complete head and queues it for a worker by its class; a full queue is
    /// answered 503 at once.
    fn dispatch(&mut self, pending: Pending) {
        let mut cursor = Cursor::new(&pending.bytes[..]);
        let head = match http::read_head(&mut cursor, &self.limits) {
            Ok(Some(head)) => Ok(head),
            Ok(None) | Err(HttpError::Io(_)) => return,
            Err(err) => Err(err),
        };
        let used = usize::try_from(cursor.position()).unwrap_or(pending.bytes.len());
        let rest = pending.bytes.get(used..).unwrap_or_default().to_vec();
        let authenticated = head
            .as_ref()
            .is_ok_and(|(request, _)| self.router.auth.authenticated(request));
        let job = Job {
            stream: pending.stream,
            peer: pending.peer,
            head,
            rest,
            authenticated,
        };
        let mut queues = self
            .shared
            .queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let queue = if authenticated {
            &mut queues.authenticated
        } else {
            &mut queues.anonymous
        };
        if queue.len() >= self.queue {
            drop(queues);
            busy(job.stream, self.router);
            return;
        }
        queue.push_back(job);
        drop(queues);
        self.shared.ready.notify_all();
    }
}

/// Answers 503 on a connection reception could not queue (it is non-blocking, and the answer
/// fits the socket's empty send buffer).
fn busy(mut stream: TcpStream, router: &Router) {
    let busy = Response::error(503, "the server is busy; try again").with("Retry-After", "1");
    let _ = router.finish(busy).write_to(&mut stream, false, false);
    drain_and_close(stream);
}

/// Closes a connection answered without reading its request: what has arrived of the request
/// is read first (without waiting), since closing a socket with unread data resets it, and a
/// reset can destroy the answer before the client reads it.
fn drain_and_close(stream: TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    if stream.set_nonblocking(true).is_ok() {
        let mut scratch = [0u8; 4096];
        let mut left = 64 * 1024;
        while left > 0 {
            match (&stream).read(&mut scratch) {
                Ok(0) | Err(_) => break,
                Ok(n) => left -= n.min(left),
            }
        }
    }
}

/// How long a refused request's client may go on sending before its connection is closed,
/// and how much of it is read meanwhile.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 16 * 1024 * 1024;

/// Closes a connection whose request was refused part-way (a body or headers over the limit,
/// a malformed request): our end is shut after the answer, and what the client still sends
/// (the rest of an upload) is read and dropped for a moment, since closing a socket with
/// unread data resets the connection, and the reset destroys the answer before the client
/// reads it. Bounded in time and bytes, so a client cannot keep the worker.
fn linger(stream: &TcpStream) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let until = Instant::now() + LINGER;
    let mut scratch = [0u8; 16 * 1024];
    let mut left = LINGER_BYTES;
    while left > 0 {
        let now = Instant::now();
        if now >= until || stream.set_read_timeout(Some(until - now)).is_err() {
            break;
        }
        match (&*stream).read(&mut scratch) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

/// Two connected loopback sockets: workers write a byte to one to wake reception, which polls
/// the other. TCP rather than a Unix socket pair so this builds everywhere; the accepted end
/// must be our own connection (a local process could race to connect to the listener in the
/// moment it exists).
fn wake_pair() -> std::io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
    let writer = TcpStream::connect(listener.local_addr()?)?;
    let ours = writer.local_addr()?;
    for _ in 0..16 {
        let (reader, from) = listener.accept()?;
        if from == ours {
            reader.set_nonblocking(true)?;
            writer.set_nonblocking(true)?;
            return Ok((reader, writer));
        }
    }
    Err(std::io::Error::other(
        "serve: cannot make the wake-up socket pair",
    ))
}

#[cfg(unix)]
fn raw(socket: &impl std::os::fd::AsRawFd) -> i32 {
    socket.as_raw_fd()
}

/// Only for the build: `term::sys` polls nothing without Unix, so reception ends at once.
#[cfg(not(unix))]
fn raw<T>(_socket: &T) -> i32 {
    -1
}

/// Connects to the listener so a blocked reception wakes and sees the stop flag.
pub fn wake(addr: SocketAddr) {
    let target = match addr {
        SocketAddr::V4(a) if a.ip().is_unspecified() => {
            SocketAddr::from(([127, 0, 0, 1], a.port()))
        }
        SocketAddr::V6(a) if a.ip().is_unspecified() => {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, a.port()))
        }
        other => other,
    };
    let _ = TcpStream::connect_timeout(&target, Duration::from_secs(1));
}

/// Takes jobs (authenticated ones first; a reserved worker takes only those) until the pool
/// closes, and hands each kept-alive connection back to reception.
fn worker(shared: &Shared, router: &Router, back: &Sender<Back>, wake: &TcpStream, reserved: bool) {
    loop {
        let job = {
            let mut queues = shared.queues.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if queues.closed {
                    return;
                }
                if let Some(job) = queues.authenticated.pop_front() {
                    break job;
                }
                if !reserved {
                    if let Some(job) = queues.anonymous.pop_front() {
                        break job;
                    }
                }
                queues = shared
                    .ready
                    .wait(queues)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        if let Some(kept) = answer(job, router) {
            if back.send(kept).is_err() {
                return;
            }
            let _ = (&*wake).write(&[1]);
        }
    }
}

/// Reads the job's body and answers it; the connection when it stays open.
fn answer(job: Job, router: &Router) -> Option<Back> {
    let Job {
        stream,
        peer,
        head,
        rest,
        authenticated,
    } = job;
    let mut out = stream;
    let _ = out.set_nonblocking(false);
    let _ = out.set_write_timeout(Some(IDLE));
    let refuse = |out: &mut TcpStream, err: HttpError| {
        if let Some((status, why)) = err.status() {
            let answered = router
                .finish(Response::error(status, why))
                .write_to(out, false, false);
            if answered.is_ok() {
                linger(out);
            }
        }
    };
    let (mut request, length) = match head {
        Ok(head) => head,
        Err(err) => {
            refuse(&mut out, err);
            return None;
        }
    };
    let until = Instant::now() + if authenticated { IDLE } else { HEAD_DEADLINE };
    let (body, rest) = match read_body(&out, rest, length, until) {
        Ok(read) => read,
        Err(err) => {
            refuse(&mut out, err);
            return None;
        }
    };
    request.body = body;
    let keep_alive = request.keep_alive();
    let head_only = request.method == "HEAD";
    match router.handle(&request, peer) {
        Reply::Response(response) => {
            if response.write_to(&mut out, keep_alive, head_only).is_err() || !keep_alive {
                return None;
            }
            Some(Back {
                stream: out,
                peer,
                rest,
                known: authenticated,
            })
        }
        Reply::Events(live, after) => {
            let mut header = String::from(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nX-Accel-Buffering: no\r\n",
            );
            for (name, value) in router.security_headers() {
                header.push_str(&format!("{name}: {value}\r\n"));
            }
            header.push_str("\r\n: stream\n\n");
            let _ = out.set_read_timeout(None);
            if let Err(mut full) = router.hub.subscribe(&live, out, &header, after) {
                let busy = Response::error(503, &full.why).with("Retry-After", "5");
                let _ = router.finish(busy).write_to(&mut full.stream, false, false);
            }
            None
        }
    }
}

/// The body of `length` bytes: what reception already read (`rest`), then the socket until
/// `until`. Also what was read past the body (a pipelined request).
fn read_body(
    stream: &TcpStream,
    mut rest: Vec<u8>,
    length: usize,
    until: Instant,
) -> Result<(Vec<u8>, Vec<u8>), HttpError> {
    if rest.len() >= length {
        let after = rest.split_off(length);
        return Ok((rest, after));
    }
    let mut body = rest;
    let mut filled = body.len();
    body.resize(length, 0);
    while filled < length {
        let now = Instant::now();
        if now >= until {
            return Err(HttpError::Io(std::io::ErrorKind::TimedOut.into()));
        }
        stream
            .set_read_timeout(Some(until - now))
            .map_err(HttpError::Io)?;
        match (&*stream).read(&mut body[filled..]) {
            Ok(0) => return Err(HttpError::Malformed("truncated body")),
            Ok(n) => filled += n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(HttpError::Io(err)),
        }
    }
    Ok((body, Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A connected pair of loopback sockets: ours and the peer's.
    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let ours = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (theirs, _) = listener.accept().unwrap();
        (ours, theirs)
    }

    #[test]
    fn a_body_comes_from_what_was_read_first_then_the_socket() {
        let (ours, mut theirs) = pair();
        let until = Instant::now() + Duration::from_secs(60);
        // All there already, with a pipelined request after it.
        let (body, rest) = read_body(&ours, b"helloGET".to_vec(), 5, until).unwrap();
        assert_eq!(
            (body.as_slice(), rest.as_slice()),
            (&b"hello"[..], &b"GET"[..])
        );
        // Part there, the rest from the socket.
        theirs.write_all(b"lo").unwrap();
        let (body, rest) = read_body(&ours, b"hel".to_vec(), 5, until).unwrap();
        assert_eq!((body.as_slice(), rest.len()), (&b"hello"[..], 0));
        // A peer that closes early sent a truncated body; a passed deadline fails at once.
        let err = read_body(&ours, Vec::new(), 5, Instant::now()).unwrap_err();
        assert!(matches!(err, HttpError::Io(_)), "{err:?}");
        drop(theirs);
        let err = read_body(&ours, b"he".to_vec(), 5, until).unwrap_err();
        assert_eq!(err.status().map(|(status, _)| status), Some(400));
    }
}
