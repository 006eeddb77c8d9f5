//! A thin wrapper around every connection of the provider's ureq agent, for what ureq's
//! public API does not do with a connection: say whether a request went out on a connection
//! kept from an earlier exchange (a stale one the server closed is then replaced without a
//! retry line), wait only briefly for the end of a body whose stream already said `[DONE]`
//! (a server that keeps the body open costs the reply a few milliseconds, not the idle
//! limit, and a body that ends in time returns its connection to the pool), and pace the
//! reads of a burst.
//!
//! Pacing: a server that writes each event on its own wakes a reader that keeps up once per
//! event or so, and every wake-up costs a context switch, a read and an ACK, more than
//! decoding the few events it brings. When reads keep finding their data already waiting, a
//! short pause before the next read lets it take everything that arrived meanwhile. A stream
//! whose events come apart (a model's tokens, tens of milliseconds apart) never pauses;
//! during a burst a byte waits at most [`PAUSE`] longer.
//!
//! The connection's TCP, proxy and TLS work stays ureq's (`DefaultConnector`); this layer
//! only forwards, besides the drain wait and the pause.
//! ureq sends a request and reads its reply on the caller's thread, so the connection that
//! carried the latest request is handed to that thread through a thread-local.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ureq::unversioned::transport::{
    time, Buffers, ConnectionDetails, Connector, NextTimeout, Transport,
};

/// How long the end of a body may take to arrive after `[DONE]`.
pub const DRAIN_WAIT: Duration = Duration::from_millis(20);

/// A read that returned within this found its data waiting (or nearly).
const QUICK: Duration = Duration::from_micros(250);
/// Quick reads in a row that make a burst: more than a short reply (a tool call, a
/// sentence) takes, so that only a long stream is ever paced.
const BURST_READS: u32 = 32;
/// The pause before a read during a burst: far below what a person sees (a frame is 16 ms),
/// long enough for one read to take a few hundred small events.
pub const PAUSE: Duration = Duration::from_millis(1);

/// What the exchange knows about the connection its request went out on.
#[derive(Debug, Clone, Default)]
pub struct Handle {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    draining: AtomicBool,
    /// Requests sent on the connection, this one included.
    requests: AtomicU32,
}

impl Handle {
    /// The request went out on a connection that had carried an earlier exchange.
    pub fn was_reused(&self) -> bool {
        self.shared.requests.load(Ordering::Relaxed) > 1
    }

    /// From now on a read waits at most [`DRAIN_WAIT`].
    pub fn drain(&self) {
        self.shared.draining.store(true, Ordering::Relaxed);
    }
}

thread_local! {
    /// The connection of the request this thread sent last.
    static LAST: RefCell<Option<Handle>> = const { RefCell::new(None) };
}

/// Forgets the connection of an earlier request, before sending a new one.
pub fn forget_last() {
    LAST.with(|last| last.borrow_mut().take());
}

/// The connection this thread's latest request went out on, if it reached one.
pub fn last() -> Option<Handle> {
    LAST.with(|last| last.borrow().clone())
}

/// The connector that wraps what ureq's default chain made.
#[derive(Debug)]
pub struct Wrap;

impl Connector<Box<dyn Transport>> for Wrap {
    type Out = Box<dyn Transport>;

    fn connect(
        &self,
        _: &ConnectionDetails,
        chained: Option<Box<dyn Transport>>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        Ok(chained.map(|inner| {
            Box::new(Wrapped {
                inner,
                handle: Handle::default(),
                sending: false,
                pace: Pace::default(),
            }) as Box<dyn Transport>
        }))
    }
}

#[derive(Debug)]
struct Wrapped {
    inner: Box<dyn Transport>,
    handle: Handle,
    /// Between the first write of a request and the first read of its reply.
    sending: bool,
    pace: Pace,
}

/// The reads of the current reply so far.
#[derive(Debug, Default)]
struct Pace {
    quick_reads: u32,
    pause_next: bool,
}

impl Pace {
    /// A read waited `waited` and brought `read` bytes into `room` free bytes.
    fn record(&mut self, waited: Duration, read: usize, room: usize) {
        self.quick_reads = match waited < QUICK && read > 0 {
            true => self.quick_reads.saturating_add(1),
            false => 0,
        };
        // A read that half filled the buffer had plenty waiting: reading again at once is
        // already efficient, and pausing would only slow a fast stream down.
        self.pause_next = self.quick_reads >= BURST_READS && read < room / 2;
    }
}

impl Wrapped {
    fn read_timeout(&mut self, mut timeout: NextTimeout) -> NextTimeout {
        if self.sending {
            // The first read of a new reply: its pace starts afresh.
            self.pace = Pace::default();
        }
        self.sending = false;
        if self.handle.shared.draining.load(Ordering::Relaxed) {
            let wait = time::Duration::Exact(DRAIN_WAIT);
            timeout.per_read = Some(timeout.per_read.map_or(wait, |t| t.min(wait)));
        }
        timeout
    }
}

impl Transport for Wrapped {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        if !self.sending {
            // The first write of a new request on this connection.
            self.sending = true;
            let shared = &self.handle.shared;
            shared.draining.store(false, Ordering::Relaxed);
            shared.requests.fetch_add(1, Ordering::Relaxed);
            let handle = self.handle.clone();
            LAST.with(|last| *last.borrow_mut() = Some(handle));
        }
        self.inner.transmit_output(amount, timeout)
    }

    fn maybe_await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        // As the trait's own: input already buffered is used without waiting.
        if self.inner.buffers().can_use_input() {
            return Ok(true);
        }
        self.await_input(timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let timeout = self.read_timeout(timeout);
        let draining = self.handle.shared.draining.load(Ordering::Relaxed);
        if self.pace.pause_next && !draining {
            std::thread::sleep(PAUSE);
        }
        let before = self.inner.buffers().input().len();
        let room = self.inner.buffers().input_append_buf().len();
        let started = Instant::now();
        let result = self.inner.await_input(timeout);
        let read = self.inner.buffers().input().len().saturating_sub(before);
        self.pace.record(started.elapsed(), read, room);
        result
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOM: usize = 64 * 1024;

    fn after(reads: &[(u64, usize)]) -> bool {
        let mut pace = Pace::default();
        for &(micros, read) in reads {
            pace.record(Duration::from_micros(micros), read, ROOM);
        }
        pace.pause_next
    }

    #[test]
    fn only_a_run_of_quick_small_reads_pauses_the_next_one() {
        let burst = BURST_READS as usize;
        assert!(!after(&vec![(5, 300); burst - 1]), "a short reply");
        assert!(after(&vec![(5, 300); burst]));
        assert!(after(&vec![(5, 300); burst * 10]));
    }

    #[test]
    fn a_read_that_waited_ends_the_burst() {
        // Tokens 20 ms apart: every read waits for its data.
        assert!(!after(&[(20_000, 40); 50]));
        let burst = BURST_READS as usize;
        let mut reads = vec![(5, 300); burst + 2];
        reads.push((900, 300));
        assert!(!after(&reads), "the burst is over");
        reads.extend(vec![(5, 300); burst - 1]);
        assert!(!after(&reads), "a new burst needs as many again");
        reads.push((5, 300));
        assert!(after(&reads));
    }

    #[test]
    fn a_read_that_half_fills_the_buffer_or_finds_the_end_does_not_pause() {
        let mut reads = vec![(5, 300); BURST_READS as usize + 2];
        reads.push((5, ROOM / 2));
        assert!(!after(&reads), "plenty was waiting");
        reads.push((5, 300));
        assert!(after(&reads), "still a burst");
        reads.push((5, 0));
        assert!(!after(&reads), "the end of the stream");
    }
}
