//! One streamed exchange on a worker thread: the request sent through `net` (which retries
//! until a reply starts), the body read and fed to the [`StreamParser`], chunks handed to the
//! caller over a channel, an empty reply asked again, the exchange recorded when
//! `--record` is on. The caller's end is a [`ChunkStream`] that a cancel or a drop stops.
//! [`Workers`] keeps the threads between exchanges: a thread per request would map and unmap
//! a fresh stack every round, which musl's allocator does not cache.

use std::io::Read;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::super::http::body::Run;
use super::super::http::{self, Waited};
use super::super::net::{Exchange, Failure, Limits, Method, Net, OpenBody};
use super::super::record::{self, RecordedExchange, Recorder};
use super::super::retry;
use super::super::{Chunk, ChunkStream, Detail, ProviderError, Retry, RetryPolicy};
use super::body::Body;
use super::StreamParser;
use crate::cancel::{CancelToken, HookGuard};

/// What the stream thread tells the consumer.
pub(super) enum Msg {
    /// A retry is about to wait; the consumer reports it on its own thread.
    Retry(Retry),
    /// The chunks decoded from one read of the body, never empty: one message (and at most
    /// one wake-up of the consumer) per read, not per token.
    Chunks(Vec<Chunk>),
    Failed(ProviderError),
    End,
}

/// Waits for the reply's first chunk, reporting retries as they come, so every retry (HTTP,
/// transport or an empty reply) happens before the caller holds a stream.
pub(super) fn await_start(
    rx: Receiver<Msg>,
    cancel: CancelToken,
    abort: CancelToken,
    on_retry: &mut dyn FnMut(&Retry),
) -> Result<ChunkStream, ProviderError> {
    let first = loop {
        match rx.recv() {
            Ok(Msg::Retry(retry)) => on_retry(&retry),
            Ok(Msg::Chunks(chunks)) => break Some(chunks),
            Ok(Msg::Failed(err)) => return Err(err),
            Ok(Msg::End) => break None,
            Err(_) => {
                return Err(ProviderError::Stream(
                    "the stream thread stopped before the reply started".into(),
                ))
            }
        }
    };
    Ok(Box::new(ChannelStream {
        finished: first.is_none(),
        ready: first.unwrap_or_default().into_iter(),
        rx,
        cancel,
        abort,
    }))
}

/// The consumer's end: chunks in order, then `None`; `Err(Cancelled)` as soon as the token
/// fires (the stream thread's cancel hook wakes a blocked `recv`). Dropping it early shuts
/// the connection instead of leaving the thread reading until the idle timeout.
struct ChannelStream {
    /// Chunks received and not yet handed out: first the batch [`await_start`] waited for.
    ready: std::vec::IntoIter<Chunk>,
    rx: Receiver<Msg>,
    cancel: CancelToken,
    abort: CancelToken,
    finished: bool,
}

impl Drop for ChannelStream {
    fn drop(&mut self) {
        self.abort.cancel();
    }
}

impl ChannelStream {
    fn deliver(&mut self, chunk: Chunk) -> Option<Result<Chunk, ProviderError>> {
        if matches!(chunk, Chunk::Done { .. }) {
            self.finished = true;
            // Give the stream thread a moment to read past [DONE] so the connection is back
            // in the pool before the next request; a server that keeps the body open costs
            // at most this wait.
            let _ = self.rx.recv_timeout(DRAIN_WAIT);
        }
        Some(Ok(chunk))
    }
}

impl Iterator for ChannelStream {
    type Item = Result<Chunk, ProviderError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.finished {
                return None;
            }
            if self.cancel.is_cancelled() {
                self.finished = true;
                return Some(Err(ProviderError::Cancelled));
            }
            if let Some(chunk) = self.ready.next() {
                return self.deliver(chunk);
            }
            match self.rx.recv() {
                Ok(Msg::Chunks(chunks)) => self.ready = chunks.into_iter(),
                // Retries happen only before anything was forwarded.
                Ok(Msg::Retry(_)) => continue,
                Ok(Msg::Failed(err)) => {
                    self.finished = true;
                    return Some(Err(err));
                }
                Ok(Msg::End) => self.finished = true,
                Err(_) => {
                    self.finished = true;
                    return Some(Err(ProviderError::Stream(
                        "the stream thread stopped unexpectedly".into(),
                    )));
                }
            }
        }
    }
}

/// How long the caller waits, after the last chunk, for the end of the body.
const DRAIN_WAIT: Duration = Duration::from_millis(20);

/// How much trailing body after `[DONE]` is read to keep a connection reusable.
const DRAIN_LIMIT: u64 = 64 * 1024;

/// One streamed exchange, run on its own thread.
pub(super) struct Job {
    pub(super) net: Net,
    pub(super) url: String,
    pub(super) headers: Vec<(String, String)>,
    /// Until the first chunk reaches the caller (retries before that send it again). It
    /// holds the caller's transcript, which must be released before the caller appends the
    /// reply: appending to a shared transcript would copy it.
    pub(super) body: Mutex<Option<Body>>,
    /// Only when recording.
    pub(super) body_json: Option<Value>,
    pub(super) id_seed: u64,
    pub(super) prompt_estimate: u64,
    pub(super) idle: Duration,
    pub(super) policy: RetryPolicy,
    pub(super) api_key_env: String,
    /// The provider's instance name, for the fix an unreachable endpoint's error names.
    pub(super) provider: String,
    pub(super) recorder: Option<Arc<Recorder>>,
    /// Fires on the caller's cancel and when the consumer drops the stream.
    pub(super) abort: CancelToken,
    pub(super) _abort_on_cancel: HookGuard,
}

/// How reading one response body ended.
enum BodyEnd {
    /// Complete, failed or abandoned: whatever the consumer needs was sent.
    Done,
    /// An empty reply of which nothing reached the consumer: worth asking again.
    Empty(ProviderError),
}

/// Idle exchange threads, each waiting on its own channel. A request takes one (or starts
/// one when all are busy); a thread puts itself back when its exchange is over, so the pool
/// grows to the number of exchanges open at once and no further.
#[derive(Default)]
pub(super) struct Workers {
    idle: Arc<Mutex<Vec<Sender<Work>>>>,
}

/// One exchange for a worker, with the worker's own inbox so that it can return to the pool.
struct Work {
    job: Job,
    tx: Sender<Msg>,
    inbox: Sender<Work>,
}

/// Idle threads kept beyond this many exit instead.
const MAX_IDLE: usize = 4;

impl Workers {
    /// Runs `job` on an idle worker, or on a new one; chunks go to `tx`.
    pub(super) fn start(&self, mut job: Job, mut tx: Sender<Msg>) -> Result<(), ProviderError> {
        loop {
            let idle = self
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            let Some(inbox) = idle else { break };
            let work = Work {
                job,
                tx,
                inbox: inbox.clone(),
            };
            match inbox.send(work) {
                Ok(()) => return Ok(()),
                // That worker is gone (it panicked): try the next one.
                Err(mpsc::SendError(returned)) => (job, tx) = (returned.job, returned.tx),
            }
        }
        let (inbox, rx) = mpsc::channel();
        let idle = Arc::downgrade(&self.idle);
        std::thread::Builder::new()
            .name("reasonix-provider-stream".into())
            .spawn(move || serve(rx, idle))
            .map_err(|e| {
                ProviderError::Stream(format!("cannot start the stream thread: {e}").into())
            })?;
        let work = Work {
            job,
            tx,
            inbox: inbox.clone(),
        };
        inbox.send(work).map_err(|_| {
            ProviderError::Stream("the stream thread stopped before the request".into())
        })
    }
}

/// A worker's life: exchanges until the provider (and with it the pool) is dropped, or the
/// pool has enough idle threads.
fn serve(rx: Receiver<Work>, idle: Weak<Mutex<Vec<Sender<Work>>>>) {
    while let Ok(Work { job, tx, inbox }) = rx.recv() {
        job.run(&tx);
        // Back in the pool before the consumer learns the exchange is over, so that its next
        // request finds this thread idle instead of starting another.
        let Some(idle) = idle.upgrade() else { break };
        {
            let mut idle = idle.lock().unwrap_or_else(PoisonError::into_inner);
            if idle.len() >= MAX_IDLE {
                let _ = tx.send(Msg::End);
                break;
            }
            idle.push(inbox);
        }
        let _ = tx.send(Msg::End);
    }
}

impl Job {
    /// Runs the exchange, reading the reply straight from the connection's buffer; the
    /// caller sends the final [`Msg::End`].
    fn run(self, tx: &Sender<Msg>) {
        let _wake_consumer = {
            let tx = tx.clone();
            self.abort.on_cancel(move || {
                let _ = tx.send(Msg::Failed(ProviderError::Cancelled));
            })
        };
        let mut empty_retries = 0u32;
        let report = |retry| {
            let _ = tx.send(Msg::Retry(retry));
        };
        loop {
            let sent = {
                let body = self.body.lock().unwrap_or_else(PoisonError::into_inner);
                let parts = body.as_ref().map_or_else(Vec::new, Body::parts);
                let exchange = Exchange {
                    method: Method::Post,
                    url: &self.url,
                    headers: &self.headers,
                    body: &parts,
                    limits: Limits {
                        per_read: Some(self.idle),
                        total: None,
                    },
                    api_key_env: &self.api_key_env,
                    provider: &self.provider,
                };
                let mut retried = |retry, failed: &Failure| {
                    self.record_retried(failed.status, failed.body.as_bytes(), error_text(failed));
                    report(retry);
                };
                self.net
                    .send(&exchange, &self.policy, &self.abort, &mut retried)
            };
            match sent {
                Err(failure) => {
                    // The exchange's own error matters more than a failure to record it.
                    let _ = self.record(
                        failure.status,
                        failure.body.as_bytes(),
                        error_text(&failure),
                    );
                    self.release_body();
                    let _ = tx.send(Msg::Failed(failure.error));
                    break;
                }
                Ok(open) => {
                    let may_retry = empty_retries < self.policy.max_retries;
                    match self.read_body(open, tx, may_retry) {
                        BodyEnd::Done => break,
                        BodyEnd::Empty(reason) => {
                            // Like a 5xx: the server had a bad moment, and since nothing
                            // was shown, asking again costs the user only the wait.
                            let wait =
                                retry::delay(&self.policy, empty_retries, None, SystemTime::now());
                            report(Retry {
                                attempt: empty_retries + 2,
                                max_attempts: self.policy.max_retries.saturating_add(1),
                                wait,
                                reason: reason.to_string(),
                            });
                            if retry::sleep(wait, &self.abort).is_err() {
                                self.release_body();
                                let _ = tx.send(Msg::Failed(ProviderError::Cancelled));
                                break;
                            }
                            empty_retries += 1;
                        }
                    }
                }
            }
        }
    }

    fn read_body(&self, mut open: OpenBody, tx: &Sender<Msg>, may_retry: bool) -> BodyEnd {
        let mut parser = StreamParser::new(self.id_seed, self.prompt_estimate);
        let mut raw = Vec::new();
        let mut received = 0usize;
        let mut out = Vec::new();
        let mut forwarded = false;
        let result = loop {
            let run = match open.reader.next_run(usize::MAX) {
                Ok(run) => run,
                Err(e) => break Err(self.read_error(e, received)),
            };
            match run {
                Run::Data(bytes) => {
                    received += bytes.len();
                    if self.recorder.is_some() {
                        raw.extend_from_slice(bytes);
                    }
                    if let Err(err) = parser.feed(bytes, &mut out) {
                        break Err(err);
                    }
                    if parser.is_done() {
                        break Ok(());
                    }
                }
                Run::End => break parser.finish(&mut out),
                Run::Pending => {
                    // Everything that arrived is decoded: hand it over, then wait for more.
                    if !out.is_empty() && !forwarded {
                        forwarded = true;
                        self.release_body();
                    }
                    if !send_all(tx, &mut out) {
                        // The consumer is gone; keep what arrived for the recording.
                        break Ok(());
                    }
                    if let Err(e) = open.reader.wait() {
                        break Err(self.read_error(e, received));
                    }
                }
            }
        };
        let silent = !forwarded && out.is_empty();
        if may_retry && silent {
            if let Err(empty @ ProviderError::EmptyReply { .. }) = result {
                self.record_retried(open.status, &raw, None);
                return BodyEnd::Empty(empty);
            }
        }
        let cancelled = matches!(result, Err(ProviderError::Cancelled));
        let recorded = self.record(
            open.status,
            &raw,
            cancelled.then(|| record::CANCELLED.to_string()),
        );
        if recorded.is_err() {
            // A consumer stops at Done; the failure to record must come instead of it.
            out.retain(|chunk| !matches!(chunk, Chunk::Done { .. }));
        }
        self.release_body();
        send_all(tx, &mut out);
        let complete = parser.is_done() && result.is_ok() && recorded.is_ok();
        if let Err(err) = result.and(recorded) {
            let _ = tx.send(Msg::Failed(err));
        }
        if complete {
            // Read past [DONE] to the end of the body: only a fully read response returns its
            // connection to the pool, and keep-alive saves a TLS handshake on the next turn.
            let _ = std::io::copy(
                &mut (&mut open.reader).take(DRAIN_LIMIT),
                &mut std::io::sink(),
            );
        }
        BodyEnd::Done
    }

    /// Drops the body (and with it the caller's transcript) once it will not be sent again.
    fn release_body(&self) {
        self.body
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    fn read_error(&self, err: std::io::Error, received: usize) -> ProviderError {
        if self.abort.is_cancelled() {
            return ProviderError::Cancelled;
        }
        let text = match http::waited(&err) {
            Some(Waited::Read(_)) => format!(
                "no data from the server for {}; the stream looks stalled \
                 (raise timeouts.idle_stream if the model thinks that long)",
                retry::describe_wait(self.idle)
            ),
            _ => format!("the connection broke after {received} bytes of the reply: {err}"),
        };
        ProviderError::Stream(Detail::caused(text, err))
    }

    fn record(&self, status: u16, raw: &[u8], error: Option<String>) -> Result<(), ProviderError> {
        let Some(recorder) = &self.recorder else {
            return Ok(());
        };
        recorder.append(&RecordedExchange {
            request: self.body_json.clone().unwrap_or_default(),
            status,
            response: String::from_utf8_lossy(raw).into_owned(),
            error,
            retried: false,
        })
    }

    /// Records an attempt that failed and is about to be sent again. A failure to write it
    /// is left to the attempt that counts, which writes to the same file.
    fn record_retried(&self, status: u16, raw: &[u8], error: Option<String>) {
        if let Some(recorder) = &self.recorder {
            let _ = recorder.append(&RecordedExchange {
                request: self.body_json.clone().unwrap_or_default(),
                status,
                response: String::from_utf8_lossy(raw).into_owned(),
                error,
                retried: true,
            });
        }
    }
}

/// What a recording keeps as `error` for a failure without a response (status 0).
fn error_text(failure: &Failure) -> Option<String> {
    (failure.status == 0).then(|| match &failure.error {
        ProviderError::Cancelled => record::CANCELLED.to_string(),
        // Replayed as Connect(detail), which adds its own prefix.
        other => other.connect_detail().unwrap_or_else(|| other.to_string()),
    })
}

/// Sends every pending chunk as one message; false once the consumer has hung up.
fn send_all(tx: &Sender<Msg>, out: &mut Vec<Chunk>) -> bool {
    out.is_empty() || tx.send(Msg::Chunks(std::mem::take(out))).is_ok()
}
