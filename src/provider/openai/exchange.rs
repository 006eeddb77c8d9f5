//! One streamed exchange, read on the caller's thread: the request sent through `net`
//! (which retries until a reply starts), an empty reply (or one that crossed a cap before
//! anything was shown) asked again, then the body decoded as the caller pulls chunks. Each
//! pull decodes what one read of ureq's body reader returned, so no thread and no channel
//! stand between the socket and the caller. A cancel from another thread shuts the
//! exchange's agent down (`net`'s hook), which ends a blocked read. The exchange is recorded
//! when `--record` is on.

use std::io::{self, Read};
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::Value;
use ureq::Timeout;

use super::super::limits::{self, Overflow};
use super::super::net::{Exchange, Failure, Limits, Method, Net, OpenBody};
use super::super::record::{self, RecordedExchange, Recorder};
use super::super::retry;
use super::super::{Chunk, ChunkStream, Detail, ProviderError, Retry, RetryPolicy, Timeouts};
use super::body::Body;
use super::StreamParser;
use crate::cancel::CancelToken;

/// How much trailing body after `[DONE]` is read to keep a connection reusable.
const DRAIN_LIMIT: u64 = 64 * 1024;

/// One read of the body takes at most this much (ureq hands over what it has decoded).
const READ_BUFFER: usize = 64 * 1024;

/// One streamed exchange.
pub(super) struct Job {
    pub(super) net: Net,
    pub(super) url: String,
    pub(super) headers: Vec<(String, String)>,
    /// Sent again by every retry; dropped once the reply has started, before the caller
    /// holds the stream: it shares the caller's transcript, and appending to a shared
    /// transcript would copy it.
    pub(super) body: Body,
    pub(super) id_seed: u64,
    pub(super) prompt_estimate: u64,
    pub(super) timeouts: Timeouts,
    pub(super) policy: RetryPolicy,
    pub(super) api_key_env: String,
    /// The provider's instance name, for the fix an unreachable endpoint's error names.
    pub(super) provider: String,
    pub(super) recording: Recording,
}

/// Where the exchange is recorded with the request as JSON, when `--record` is on; shared
/// by every attempt of the exchange.
#[derive(Clone)]
pub(super) struct Recording(pub(super) Option<(Arc<Recorder>, Arc<Value>)>);

impl Recording {
    fn append(
        &self,
        status: u16,
        raw: &[u8],
        error: Option<String>,
        retried: bool,
    ) -> Result<(), ProviderError> {
        let Some((recorder, request)) = &self.0 else {
            return Ok(());
        };
        recorder.append(&RecordedExchange {
            request: Value::clone(request),
            status,
            response: String::from_utf8_lossy(raw).into_owned(),
            error,
            retried,
        })
    }

    fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// The attempt that counts.
    fn write(&self, status: u16, raw: &[u8], error: Option<String>) -> Result<(), ProviderError> {
        self.append(status, raw, error, false)
    }

    /// An attempt that failed and is about to be sent again. A failure to write it is left
    /// to the attempt that counts, which writes to the same file.
    fn retried(&self, status: u16, raw: &[u8], error: Option<String>) {
        let _ = self.append(status, raw, error, true);
    }
}

/// Sends the request and waits for the reply's first chunks, reporting retries as they
/// come, so every retry (HTTP, transport or an empty reply) happens before the caller holds
/// a stream.
pub(super) fn start(
    job: Job,
    cancel: &CancelToken,
    on_retry: &mut dyn FnMut(&Retry),
) -> Result<ChunkStream, ProviderError> {
    let mut empty_retries = 0u32;
    let mut budget = retry::Budget::new(&job.policy);
    loop {
        let parts = job.body.parts();
        let exchange = Exchange {
            method: Method::Post,
            url: &job.url,
            headers: &job.headers,
            body: &parts,
            limits: Limits {
                per_read: Some(job.timeouts.idle_stream),
                total: Some(job.timeouts.reply),
            },
            api_key_env: &job.api_key_env,
            provider: &job.provider,
        };
        let mut retried = |retry, failed: &Failure| {
            job.recording
                .retried(failed.status, failed.body.as_bytes(), error_text(failed));
            on_retry(&retry);
        };
        let open = match job.net.send(&exchange, &job.policy, cancel, &mut retried) {
            Ok(open) => open,
            Err(failure) => {
                // The exchange's own error matters more than a failure to record it.
                let _ = job.recording.write(
                    failure.status,
                    failure.body.as_bytes(),
                    error_text(&failure),
                );
                return Err(failure.error);
            }
        };
        let mut stream = Pull {
            body: Some(open),
            parser: StreamParser::new(job.id_seed, job.prompt_estimate),
            buffer: vec![0; READ_BUFFER],
            raw: Vec::new(),
            received: 0,
            decoded: Vec::new(),
            ready: Vec::new(),
            error: None,
            overflowed: false,
            finished: false,
            timeouts: job.timeouts,
            cancel: cancel.clone(),
            recording: job.recording.clone(),
        };
        let may_retry = empty_retries < job.policy.max_retries;
        let Some(empty) = stream.read_more(may_retry) else {
            if stream.ready.is_empty() {
                if let Some(err) = stream.error.take() {
                    return Err(err);
                }
            }
            return Ok(Box::new(stream));
        };
        // Like a 5xx: the server had a bad moment, and since nothing was shown, asking
        // again costs the user only the wait.
        let wait = retry::delay(&job.policy, empty_retries, None, SystemTime::now());
        let Some(wait) = budget.take(wait) else {
            return Err(empty);
        };
        on_retry(&Retry {
            attempt: empty_retries + 2,
            max_attempts: job.policy.max_retries.saturating_add(1),
            wait,
            reason: empty.to_string(),
            status: None,
        });
        retry::sleep(wait, cancel).map_err(|_| ProviderError::Cancelled)?;
        empty_retries += 1;
    }
}

/// The caller's end: chunks in order as the body arrives, then the error that ended it if
/// any, then `None`; `Err(Cancelled)` as soon as the token fires. Dropping it early closes
/// the connection.
struct Pull {
    /// Until the body has ended (completely or not).
    body: Option<OpenBody>,
    parser: StreamParser,
    /// Where one read of the body lands.
    buffer: Vec<u8>,
    /// The body as received, only when recording (up to [`limits::RECORDED_REPLY`]).
    raw: Vec<u8>,
    received: u64,
    /// Chunks decoded from the bytes at hand, in order.
    decoded: Vec<Chunk>,
    /// Chunks for the caller, the next one last: the buffers swap instead of allocating.
    ready: Vec<Chunk>,
    /// What ended the body, handed out after the last chunk.
    error: Option<ProviderError>,
    /// The reply crossed one of the caps of `limits`.
    overflowed: bool,
    finished: bool,
    timeouts: Timeouts,
    cancel: CancelToken,
    recording: Recording,
}

impl Iterator for Pull {
    type Item = Result<Chunk, ProviderError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        if self.cancel.is_cancelled() {
            self.finished = true;
            self.abandon();
            return Some(Err(ProviderError::Cancelled));
        }
        if self.ready.is_empty() {
            self.read_more(false);
        }
        if let Some(chunk) = self.ready.pop() {
            return Some(Ok(chunk));
        }
        self.finished = true;
        self.error.take().map(Err)
    }
}

impl Drop for Pull {
    fn drop(&mut self) {
        self.abandon();
    }
}

impl Pull {
    /// Reads until chunks are ready for the caller or the body has ended; returns an empty
    /// reply of which nothing was decoded (or one that crossed a cap first) when `may_retry`
    /// lets it be asked again.
    fn read_more(&mut self, may_retry: bool) -> Option<ProviderError> {
        debug_assert!(self.ready.is_empty());
        let open = self.body.as_mut()?;
        let result = loop {
            let n = match open.reader.read(&mut self.buffer) {
                Ok(n) => n,
                Err(e) => {
                    break Err(read_error(e, self.received, &self.cancel, &self.timeouts));
                }
            };
            if n == 0 {
                break self.parser.finish(&mut self.decoded);
            }
            let bytes = &self.buffer[..n];
            self.received += n as u64;
            if self.received > limits::REPLY_BYTES {
                self.overflowed = true;
                break Err(overflow_error(Overflow::ReplyBytes));
            }
            if self.recording.is_on() && self.raw.len() < limits::RECORDED_REPLY {
                let room = limits::RECORDED_REPLY - self.raw.len();
                self.raw.extend_from_slice(&bytes[..n.min(room)]);
            }
            if let Err(err) = self.parser.feed(bytes, &mut self.decoded) {
                self.overflowed = self.parser.overflow().is_some();
                break Err(err);
            }
            if self.parser.is_done() {
                break Ok(());
            }
            // Everything that arrived is decoded: hand it over before waiting for more.
            if !self.decoded.is_empty() {
                self.hand_over();
                return None;
            }
        };
        self.end(result, may_retry)
    }

    /// The body ended with `result`: read past `[DONE]` so that the connection goes back to
    /// the pool, record the exchange, and queue what is left for the caller.
    fn end(&mut self, result: Result<(), ProviderError>, may_retry: bool) -> Option<ProviderError> {
        let mut open = self.body.take()?;
        let result = match result {
            Err(err)
                if may_retry
                    && self.received_nothing_decoded()
                    && (self.overflowed || matches!(err, ProviderError::EmptyReply { .. })) =>
            {
                self.recording.retried(open.status, &self.raw, None);
                return Some(err);
            }
            result => result,
        };
        let complete = self.parser.is_done() && result.is_ok();
        if complete {
            // Only a fully read response returns its connection, and keep-alive saves a TLS
            // handshake on the next turn.
            open.drain_briefly();
            let _ = io::copy(&mut (&mut open.reader).take(DRAIN_LIMIT), &mut io::sink());
        }
        let cancelled = matches!(result, Err(ProviderError::Cancelled));
        let recorded = self.recording.write(
            open.status,
            &self.raw,
            cancelled.then(|| record::CANCELLED.to_string()),
        );
        if recorded.is_err() {
            // A consumer stops at Done; the failure to record must come instead of it.
            self.decoded
                .retain(|chunk| !matches!(chunk, Chunk::Done { .. }));
        }
        self.raw = Vec::new();
        self.hand_over();
        self.error = result.and(recorded).err();
        None
    }

    /// Whether nothing of the reply was decoded yet (an empty reply may be asked again).
    fn received_nothing_decoded(&self) -> bool {
        self.decoded.is_empty() && self.ready.is_empty()
    }

    /// Moves the decoded chunks to the caller's queue.
    fn hand_over(&mut self) {
        std::mem::swap(&mut self.decoded, &mut self.ready);
        self.ready.reverse();
    }

    /// Stops reading a body the caller no longer wants, recording it as cancelled.
    fn abandon(&mut self) {
        if let Some(open) = self.body.take() {
            let _ =
                self.recording
                    .write(open.status, &self.raw, Some(record::CANCELLED.to_string()));
        }
    }
}

fn read_error(
    err: io::Error,
    received: u64,
    cancel: &CancelToken,
    timeouts: &Timeouts,
) -> ProviderError {
    if cancel.is_cancelled() {
        return ProviderError::Cancelled;
    }
    let err = ureq::Error::from(err);
    let text = match &err {
        ureq::Error::Timeout(Timeout::PerRead) => format!(
            "no data from the server for {}; the stream looks stalled \
             (raise timeouts.idle_seconds if the model thinks that long)",
            retry::describe_wait(timeouts.idle_stream)
        ),
        ureq::Error::Timeout(Timeout::Global | Timeout::RecvBody) => format!(
            "the reply was not complete after {} (timeouts.reply_seconds)",
            retry::describe_wait(timeouts.reply)
        ),
        other => format!("the connection broke after {received} bytes of the reply: {other}"),
    };
    ProviderError::Stream(Detail::caused(text, err))
}

/// The error of a reply that crossed a cap.
pub(super) fn overflow_error(overflow: Overflow) -> ProviderError {
    ProviderError::Stream(overflow.to_string().into())
}

/// What a recording keeps as `error` for a failure without a response (status 0).
fn error_text(failure: &Failure) -> Option<String> {
    (failure.status == 0).then(|| match &failure.error {
        ProviderError::Cancelled => record::CANCELLED.to_string(),
        // Replayed as Connect(detail), which adds its own prefix.
        other => other.connect_detail().unwrap_or_else(|| other.to_string()),
    })
}
