//! A thin wrapper around every connection of the provider's ureq agent, for the two things
//! ureq's public API does not say about a connection: whether a request went out on a
//! connection kept from an earlier exchange (a stale one the server closed is then replaced
//! without a retry line), and a short wait for the end of a body whose stream already said
//! `[DONE]` (a server that keeps the body open costs the reply a few milliseconds, not the
//! idle limit, and a body that ends in time returns its connection to the pool).
//!
//! The connection's TCP, proxy and TLS work stays ureq's (`DefaultConnector`); this layer
//! only forwards, except that it shortens the read wait while [`Handle::drain`] is on.
//! ureq sends a request and reads its reply on the caller's thread, so the connection that
//! carried the latest request is handed to that thread through a thread-local.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ureq::unversioned::transport::{
    time, Buffers, ConnectionDetails, Connector, NextTimeout, Transport,
};

/// How long the end of a body may take to arrive after `[DONE]`.
pub const DRAIN_WAIT: Duration = Duration::from_millis(20);

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
}

impl Wrapped {
    fn read_timeout(&mut self, mut timeout: NextTimeout) -> NextTimeout {
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
        let timeout = self.read_timeout(timeout);
        self.inner.maybe_await_input(timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let timeout = self.read_timeout(timeout);
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}
