//! Buffered standard output for the headless formats. Streamed text arrives a token at a time;
//! writing each token with its own `write(2)` costs more CPU than receiving it. When stdout is
//! a pipe or a file, bytes are collected and written when an event boundary asks for it
//! ([`StdoutBuffer::flush`]), when 64 KiB are pending, or at the latest 16 ms after the oldest
//! pending byte (a named flusher thread waits for that deadline), so a reader of the pipe still
//! sees the answer grow while it streams. On a terminal every write goes straight out, so the
//! feel does not change.
//!
//! One lock orders all writes to stdout: whoever writes takes the pending bytes and writes
//! them while holding it, so bytes leave in the order they were appended.
//!
//! A broken pipe (the reader went away: `reasonix run ... | head -1`) closes the buffer for
//! good: later bytes are dropped, and the run's cancel token, when one was handed over with
//! [`StdoutBuffer::cancel_on_close`], is cancelled so no further tool or request starts.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crate::cancel::CancelToken;

/// The longest a pending byte waits before it is written.
const FLUSH_DELAY: Duration = Duration::from_millis(16);
/// Pending bytes that are written at once, without waiting for the deadline.
const FLUSH_SIZE: usize = 64 * 1024;

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    /// When the oldest pending byte was appended.
    since: Option<Instant>,
    /// The owner is gone: the flusher writes what is left and stops.
    closed: bool,
}

struct Shared {
    pending: Mutex<Pending>,
    wake: Condvar,
    /// Held while writing to stdout, so writes never interleave or reorder.
    io: Mutex<()>,
    /// Stdout is a pipe whose reader is gone.
    broken: AtomicBool,
    /// Cancelled when the pipe breaks.
    on_broken: Mutex<Option<CancelToken>>,
}

impl Shared {
    fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes everything pending now. A write error drops the bytes: with a closed pipe there
    /// is nobody left to read them, and the run is cancelled.
    fn write_out(&self) {
        let _io = self.io.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = {
            let mut pending = self.pending();
            pending.since = None;
            std::mem::take(&mut pending.bytes)
        };
        if bytes.is_empty() {
            return;
        }
        if self.broken.load(Ordering::SeqCst) {
            return;
        }
        let mut stdout = io::stdout().lock();
        let written = stdout.write_all(&bytes).and_then(|()| stdout.flush());
        if written.is_err_and(|e| e.kind() == io::ErrorKind::BrokenPipe) {
            self.broken.store(true, Ordering::SeqCst);
            let token = self
                .on_broken
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(token) = token {
                token.cancel();
            }
        }
    }
}

pub struct StdoutBuffer {
    shared: Arc<Shared>,
    /// `false` on a terminal: every write goes straight out.
    buffered: bool,
    flusher: Option<thread::JoinHandle<()>>,
}

impl StdoutBuffer {
    pub fn new(buffered: bool) -> StdoutBuffer {
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            io: Mutex::new(()),
            broken: AtomicBool::new(false),
            on_broken: Mutex::new(None),
        });
        let flusher = if buffered {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("stdout-flush".into())
                .spawn(move || flush_loop(&shared))
                .ok()
        } else {
            None
        };
        StdoutBuffer {
            // Without a flusher thread nothing would honour the deadline: write through.
            buffered: flusher.is_some(),
            shared,
            flusher,
        }
    }

    pub fn write(&self, bytes: &[u8]) {
        if self.broken() {
            return;
        }
        let (urgent, first) = {
            let mut pending = self.shared.pending();
            pending.bytes.extend_from_slice(bytes);
            let first = pending.since.is_none();
            if first {
                pending.since = Some(Instant::now());
            }
            (!self.buffered || pending.bytes.len() >= FLUSH_SIZE, first)
        };
        if urgent {
            self.shared.write_out();
        } else if first {
            // Only the first pending byte sets a deadline the flusher must learn of; waking it
            // for every later token would cost a context switch per token.
            self.shared.wake.notify_one();
        }
    }

    /// Writes what is pending now: at event boundaries and before anything goes to stderr.
    pub fn flush(&self) {
        self.shared.write_out();
    }

    /// Whether a write met a closed pipe.
    pub fn broken(&self) -> bool {
        self.shared.broken.load(Ordering::SeqCst)
    }

    /// Cancels `token` when the pipe breaks, or at once if it already has.
    pub fn cancel_on_close(&self, token: CancelToken) {
        *self
            .shared
            .on_broken
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(token.clone());
        if self.broken() {
            token.cancel();
        }
    }
}

impl Drop for StdoutBuffer {
    fn drop(&mut self) {
        self.shared.pending().closed = true;
        self.shared.wake.notify_one();
        if let Some(flusher) = self.flusher.take() {
            let _ = flusher.join();
        }
        self.shared.write_out();
    }
}

fn flush_loop(shared: &Shared) {
    let mut pending = shared.pending();
    loop {
        if pending.closed {
            return;
        }
        match pending.since {
            None => {
                pending = shared
                    .wake
                    .wait(pending)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            Some(since) => {
                let due = since + FLUSH_DELAY;
                let now = Instant::now();
                if now < due {
                    pending = shared
                        .wake
                        .wait_timeout(pending, due - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                    continue;
                }
                drop(pending);
                shared.write_out();
                pending = shared.pending();
            }
        }
    }
}
