//! One event stream's writer. A session's events go into each stream's queue and a thread of
//! the stream's own writes them to its socket, so a client that stops reading holds up
//! nobody: not the session's other tabs, not the agent thread that publishes. A client that
//! falls too far behind is cut off; its page reconnects with `Last-Event-ID` and replays the
//! rest from the session's log.

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes of published events a stream may have waiting before it is cut off. The frames are
/// shared by every stream of the session and its log, so this bounds how much older output
/// the slowest stream keeps alive, not a copy per stream. The backlog a stream starts with
/// is not counted: the log holds it anyway.
const QUEUE_LIMIT: usize = 32 << 20;
/// How long one write may make no progress before the client is taken for gone.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the streams of a closing session get, all together, to send what they have queued
/// before the ones still writing are cut: a crawling client must not hold up a shutdown.
const FINISH_WAIT: Duration = Duration::from_secs(2);
/// How long `closed` waits for a client to show it left (the kernel rounds up to a tick).
const PEEK_WAIT: Duration = Duration::from_micros(1);

pub(super) struct Subscriber {
    frames: Option<Sender<Arc<str>>>,
    queued: Arc<AtomicUsize>,
    /// The writer's socket, shared: to see a client that left and to cut one that lags.
    socket: TcpStream,
    writer: Option<JoinHandle<()>>,
    /// Disconnected when the writer has ended.
    ended: Receiver<()>,
}

impl Subscriber {
    /// Starts the writer of `stream` with `backlog` queued; `hold` (a place in the server's
    /// stream count) is let go when the writer ends and the socket closes.
    pub(super) fn start(
        stream: TcpStream,
        backlog: Vec<Arc<str>>,
        hold: impl Send + 'static,
    ) -> std::io::Result<Subscriber> {
        let socket = stream.try_clone()?;
        stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
        // Only `closed` reads (a peek); the writer never does. The blocking mode stays
        // untouched because the writer shares it.
        socket.set_read_timeout(Some(PEEK_WAIT))?;
        let (tx, rx) = mpsc::channel::<Arc<str>>();
        for frame in backlog {
            let _ = tx.send(frame);
        }
        let queued = Arc::new(AtomicUsize::new(0));
        let written = Arc::clone(&queued);
        let (ending, ended) = mpsc::channel::<()>();
        let writer = std::thread::Builder::new()
            .name("serve-events".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let _ending = ending;
                let _hold = hold;
                let mut stream = stream;
                for frame in rx {
                    let sent = stream
                        .write_all(frame.as_bytes())
                        .and_then(|_| stream.flush());
                    if sent.is_err() {
                        let _ = stream.shutdown(Shutdown::Both);
                        return;
                    }
                    // Backlog frames were never counted; saturate rather than wrap.
                    let _ = written.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                        Some(n.saturating_sub(frame.len()))
                    });
                }
            })?;
        Ok(Subscriber {
            frames: Some(tx),
            queued,
            socket,
            writer: Some(writer),
            ended,
        })
    }

    /// Queues a published frame. False when the client is gone or too far behind; it is cut
    /// off then, and the caller forgets it.
    pub(super) fn send(&self, frame: &Arc<str>) -> bool {
        let behind = self.queued.fetch_add(frame.len(), Ordering::SeqCst) + frame.len();
        let queued = behind <= QUEUE_LIMIT
            && self
                .frames
                .as_ref()
                .is_some_and(|frames| frames.send(Arc::clone(frame)).is_ok());
        if !queued {
            let _ = self.socket.shutdown(Shutdown::Both);
        }
        queued
    }

    /// Whether the client has closed its side: it sends nothing after its request, so a
    /// readable socket means end of file or an error. A peek bounded by the socket's read
    /// timeout, not a switch to non-blocking mode, which the writer would see mid-write.
    pub(super) fn closed(&self) -> bool {
        match self.socket.peek(&mut [0u8; 1]) {
            Ok(0) => true,
            Ok(_) => false,
            Err(err) => !matches!(
                err.kind(),
                std::io::ErrorKind::WouldBlock
                    | std::io::ErrorKind::TimedOut
                    | std::io::ErrorKind::Interrupted
            ),
        }
    }

    /// Ends every stream of `subscribers`: each writer sends what is queued for it, within
    /// [`FINISH_WAIT`] for all of them together; the ones still writing then are cut.
    pub(super) fn finish_all(mut subscribers: Vec<Subscriber>) {
        for subscriber in &mut subscribers {
            subscriber.frames = None;
        }
        let deadline = Instant::now() + FINISH_WAIT;
        for mut subscriber in subscribers {
            let left = deadline.saturating_duration_since(Instant::now());
            if let Err(RecvTimeoutError::Timeout) = subscriber.ended.recv_timeout(left) {
                let _ = subscriber.socket.shutdown(Shutdown::Both);
            }
            if let Some(writer) = subscriber.writer.take() {
                let _ = writer.join();
            }
        }
    }
}
