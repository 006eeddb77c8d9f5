//! Never silent: one provider request is pulled on a named worker thread while the loop's
//! thread, which owns the event sink, relays its chunks and retries as they come and, when
//! nothing has come for a while, says that it is waiting for the model ([`Event::Waiting`]).
//! The provider knows nothing of this (its own idle limit ends a request that stays silent);
//! the front ends only show the event. The thresholds are named here, in one place.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::events::{Event, EventSink};
use crate::cancel::CancelToken;
use crate::provider::{Chunk, Provider, ProviderError, Request, Retry};

/// Silence after which the first notice is given.
pub const FIRST_NOTICE: Duration = Duration::from_secs(10);
/// Silence between later notices.
pub const NOTICE_EVERY: Duration = Duration::from_secs(30);
/// The environment variable that shortens both (first notice after N ms, then every 3N ms),
/// so a test need not wait ten real seconds.
pub const NOTICE_ENV: &str = "REASONIX_WAIT_NOTICE_MS";
/// Chunks the worker may run ahead of the loop: a reply that arrives faster than the front
/// end takes it waits in the socket, not in memory.
const AHEAD: usize = 256;

/// When to say that a request is waiting, and the provider's idle limit to name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watch {
    pub first: Duration,
    pub every: Duration,
    pub idle_limit: Option<Duration>,
}

impl Default for Watch {
    fn default() -> Watch {
        Watch {
            first: FIRST_NOTICE,
            every: NOTICE_EVERY,
            idle_limit: None,
        }
    }
}

impl Watch {
    /// The thresholds [`NOTICE_ENV`] asks for (`value` in milliseconds, at least 1), or the
    /// defaults when it is absent or not a number.
    pub fn with_override(self, value: Option<&str>) -> Watch {
        let Some(ms) = value.and_then(|v| v.trim().parse::<u64>().ok()) else {
            return self;
        };
        let first = Duration::from_millis(ms.clamp(1, 3_600_000));
        Watch {
            first,
            every: first.saturating_mul(3),
            ..self
        }
    }
}

/// What the worker hands the loop's thread.
enum Pulled {
    Retry(Retry),
    Chunk(Result<Chunk, ProviderError>),
}

/// Streams `request` from `provider`, handing each chunk to `each` and each retry to the sink
/// as an event on this thread, with [`Event::Waiting`] notices while it is silent. Returns
/// when the reply has ended, or with its first error.
pub fn stream(
    provider: &dyn Provider,
    request: &Request,
    cancel: &CancelToken,
    watch: &Watch,
    sink: &mut dyn EventSink,
    each: &mut dyn FnMut(Chunk, &mut dyn EventSink),
) -> Result<(), ProviderError> {
    let (tx, rx) = mpsc::sync_channel(AHEAD);
    std::thread::scope(|scope| {
        let pull = move || {
            let mut on_retry = |retry: &Retry| {
                let _ = tx.send(Pulled::Retry(retry.clone()));
            };
            let chunks = match provider.stream(request, cancel, &mut on_retry) {
                Ok(chunks) => chunks,
                Err(err) => {
                    let _ = tx.send(Pulled::Chunk(Err(err)));
                    return;
                }
            };
            for chunk in chunks {
                let failed = chunk.is_err();
                // A closed channel: the loop returned; nobody wants the rest.
                if tx.send(Pulled::Chunk(chunk)).is_err() || failed {
                    return;
                }
            }
        };
        let worker = std::thread::Builder::new()
            .name("request".into())
            .spawn_scoped(scope, pull);
        if worker.is_err() {
            // No thread to spare: pull here, without the notices.
            return inline(provider, request, cancel, sink, each);
        }
        relay(&rx, watch, sink, each)
    })
}

/// The loop's side: chunks and retries as they come, a notice at each threshold of silence.
fn relay(
    rx: &mpsc::Receiver<Pulled>,
    watch: &Watch,
    sink: &mut dyn EventSink,
    each: &mut dyn FnMut(Chunk, &mut dyn EventSink),
) -> Result<(), ProviderError> {
    let mut last = Instant::now();
    let mut received = false;
    let mut next_notice = watch.first;
    loop {
        let wait = next_notice.saturating_sub(last.elapsed());
        match rx.recv_timeout(wait) {
            Ok(Pulled::Chunk(Ok(chunk))) => {
                (last, received, next_notice) = (Instant::now(), true, watch.first);
                each(chunk, sink);
            }
            Ok(Pulled::Chunk(Err(err))) => return Err(err),
            Ok(Pulled::Retry(retry)) => {
                // A retry's own line says what happens next; the silence starts over after it.
                (last, next_notice) = (Instant::now(), watch.first);
                sink.emit(Event::Retry(retry));
            }
            Err(RecvTimeoutError::Timeout) => {
                let silent = last.elapsed();
                sink.emit(Event::Waiting {
                    silent_ms: millis(silent),
                    received,
                    idle_limit_ms: watch.idle_limit.map(millis),
                });
                next_notice = silent.saturating_add(watch.every);
            }
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        }
    }
}

fn inline(
    provider: &dyn Provider,
    request: &Request,
    cancel: &CancelToken,
    sink: &mut dyn EventSink,
    each: &mut dyn FnMut(Chunk, &mut dyn EventSink),
) -> Result<(), ProviderError> {
    let chunks = provider.stream(request, cancel, &mut |retry| {
        sink.emit(Event::Retry(retry.clone()))
    })?;
    for chunk in chunks {
        each(chunk?, sink);
    }
    Ok(())
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_override_scales_both_thresholds_and_ignores_nonsense() {
        let watch = Watch::default();
        assert_eq!(watch.with_override(None), watch);
        assert_eq!(watch.with_override(Some("soon")), watch);
        let quick = watch.with_override(Some(" 200 "));
        assert_eq!(quick.first, Duration::from_millis(200));
        assert_eq!(quick.every, Duration::from_millis(600));
        assert_eq!(
            watch.with_override(Some("0")).first,
            Duration::from_millis(1)
        );
        assert_eq!(
            watch.with_override(Some("99999999999999")).first,
            Duration::from_secs(3600)
        );
    }
}
