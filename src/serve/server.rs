//! The listening socket and the bounded worker pool: the acceptor hands connections to a
//! fixed number of workers through a bounded queue (a full queue gets an immediate 503), each
//! worker serves one connection's keep-alive requests in turn, and an event stream leaves the
//! pool once its headers are sent (the session writes to it from then on). Shutdown stops the
//! acceptor; the caller then stops the sessions.

use std::io::{BufReader, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::http::{self, Limits, Response};
use super::routes::{Reply, Router};

/// How long a connection may take to send its next request, idle wait included: a client
/// that trickles bytes (slowloris) loses its worker when this runs out, not per byte.
const IDLE: Duration = Duration::from_secs(30);

/// A reader that fails with `TimedOut` once its deadline has passed.
struct Deadline<R> {
    inner: R,
    until: Instant,
}

impl<R: Read> Read for Deadline<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if Instant::now() >= self.until {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the request took too long",
            ));
        }
        self.inner.read(buf)
    }
}

pub struct Pool {
    pub workers: usize,
    pub queue: usize,
}

/// Serves until `stop` is set and the acceptor is woken (see [`wake`]).
pub fn serve(listener: TcpListener, router: Arc<Router>, pool: Pool, stop: Arc<AtomicBool>) {
    let (tx, rx) = mpsc::sync_channel::<(TcpStream, SocketAddr)>(pool.queue);
    let rx = Arc::new(Mutex::new(rx));
    for n in 0..pool.workers {
        let rx = Arc::clone(&rx);
        let router = Arc::clone(&router);
        let _ = std::thread::Builder::new()
            .name(format!("serve-worker-{n}"))
            .spawn(move || worker(rx, router));
    }
    accept(listener, tx, stop);
}

fn accept(listener: TcpListener, tx: SyncSender<(TcpStream, SocketAddr)>, stop: Arc<AtomicBool>) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let Ok(peer) = stream.peer_addr() else {
            continue;
        };
        match tx.try_send((stream, peer)) {
            Ok(()) => {}
            Err(TrySendError::Full((mut stream, _))) => {
                let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
                let busy =
                    Response::error(503, "the server is busy; try again").with("Retry-After", "1");
                let _ = busy.write_to(&mut stream, false, false);
                drain_and_close(stream);
            }
            Err(TrySendError::Disconnected(_)) => break,
        }
    }
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

/// Connects to the listener so a blocked `accept` returns and sees the stop flag.
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

fn worker(rx: Arc<Mutex<Receiver<(TcpStream, SocketAddr)>>>, router: Arc<Router>) {
    loop {
        let next = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok((stream, peer)) = next else { return };
        connection(stream, peer, &router);
    }
}

/// Serves one connection's requests until it closes, asks to close, fails, or becomes an
/// event stream.
fn connection(stream: TcpStream, peer: SocketAddr, router: &Router) {
    let _ = stream.set_read_timeout(Some(IDLE));
    let _ = stream.set_write_timeout(Some(IDLE));
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(Deadline {
        inner: read_half,
        until: Instant::now() + IDLE,
    });
    let mut out = stream;
    let limits = Limits::default();
    loop {
        reader.get_mut().until = Instant::now() + IDLE;
        let request = match http::read_request(&mut reader, &limits) {
            Ok(Some(request)) => request,
            Ok(None) => return,
            Err(err) => {
                if let Some((status, why)) = err.status() {
                    let answered = router
                        .finish(Response::error(status, why))
                        .write_to(&mut out, false, false);
                    if answered.is_ok() {
                        linger(&out);
                    }
                }
                return;
            }
        };
        let keep_alive = request.keep_alive();
        let head = request.method == "HEAD";
        match router.handle(&request, peer) {
            Reply::Response(response) => {
                if response.write_to(&mut out, keep_alive, head).is_err() || !keep_alive {
                    return;
                }
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
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passed_deadline_fails_the_read() {
        let mut reader = Deadline {
            inner: &b"GET / HTTP/1.1\r\n"[..],
            until: Instant::now(),
        };
        let err = reader.read(&mut [0u8; 8]).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        reader.until = Instant::now() + Duration::from_secs(60);
        assert_eq!(reader.read(&mut [0u8; 3]).unwrap(), 3);
    }
}
