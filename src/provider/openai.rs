//! The OpenAI-compatible `/chat/completions` dialect: the request body, the headers, and the
//! streamed reply turned into [`Chunk`]s (tool-call deltas accumulated by index, reasoning
//! split out, usage normalised). Also the models endpoint, for `reasonix models` and
//! `reasonix doctor`.
//!
//! [`StreamParser`] is sans-IO so live streams and replays decode through the same code;
//! `net` owns the sockets and the retries before a reply starts (an empty reply is asked
//! again here), `record` the recording format.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::net::{self, Exchange, Limits, Method, Net, OpenBody};
use super::record::{self, RecordedExchange, Recorder};
use super::{retry, sse};
use super::{
    Chunk, ChunkStream, Message, Provider, ProviderError, ProviderSettings, Request, Role,
    ToolCall, Usage,
};
use crate::cancel::{CancelToken, HookGuard};
use crate::hash::{fnv_continue, FNV_OFFSET};

/// A models list larger than this is not a models list.
const MODELS_BODY_LIMIT: u64 = 16 * 1024 * 1024;
/// While no event has been decoded, keep this much of the body to explain what it was.
const SNIFF_LIMIT: usize = 1024 * 1024;

/// A provider of kind `openai`.
pub struct OpenAiProvider {
    settings: ProviderSettings,
    net: Net,
    chat_url: String,
    headers: Vec<(String, String)>,
    recorder: Option<Arc<Recorder>>,
    /// The last request's body buffer, back from its exchange thread: reused so a long
    /// session does not map and unmap a body-sized block every round.
    spare_body: Arc<Mutex<Vec<u8>>>,
}

/// The `openai` row of the factory table.
pub fn factory(settings: ProviderSettings) -> Result<Box<dyn Provider>, ProviderError> {
    Ok(Box::new(OpenAiProvider::new(settings)?))
}

impl OpenAiProvider {
    pub fn new(settings: ProviderSettings) -> Result<OpenAiProvider, ProviderError> {
        let chat_url = chat_url(&settings)?;
        let headers = request_headers(&settings, Method::Post)?;
        let net = Net::new(&settings, &chat_url)?;
        let recorder = settings
            .record_file
            .as_deref()
            .map(|path| Arc::new(Recorder::new(path)));
        Ok(OpenAiProvider {
            settings,
            net,
            chat_url,
            headers,
            recorder,
            spare_body: Arc::default(),
        })
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.settings.name
    }

    fn model(&self) -> &str {
        &self.settings.model
    }

    fn stream(
        &self,
        request: &Request,
        cancel: &CancelToken,
    ) -> Result<ChunkStream, ProviderError> {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let mut body = std::mem::take(
            &mut *self
                .spare_body
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let id_seed = write_request_body(&self.settings, request, &mut body);
        debug_assert!(
            body == serde_json::to_vec(&request_body(&self.settings, request)).unwrap_or_default(),
            "the assembled body differs from the one built from scratch"
        );
        debug_assert_eq!(id_seed, stable_hash(&body));
        // Recordings keep the request as JSON; only they pay for building it.
        let body_json = self
            .recorder
            .is_some()
            .then(|| request_body(&self.settings, request));
        // The exchange stops when the caller cancels or drops the stream, whichever is first.
        let abort = CancelToken::new();
        let abort_on_cancel = abort.clone();
        let job = Job {
            net: self.net.clone(),
            url: self.chat_url.clone(),
            headers: self.headers.clone(),
            id_seed,
            prompt_estimate: estimate_tokens(body.len()),
            body,
            body_json,
            spare_body: Arc::clone(&self.spare_body),
            idle: self.settings.timeouts.idle_stream,
            policy: self.settings.retry,
            api_key_env: self.settings.api_key_env.clone(),
            recorder: self.recorder.clone(),
            abort: abort.clone(),
            _abort_on_cancel: cancel.on_cancel(move || abort_on_cancel.cancel()),
        };
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("reasonix-provider-stream".into())
            .spawn(move || job.run(tx))
            .map_err(|e| ProviderError::Stream(format!("cannot start the stream thread: {e}")))?;
        await_start(rx, cancel.clone(), abort)
    }
}

/// What the stream thread tells the consumer.
enum Msg {
    /// A 2xx response head arrived; chunks follow.
    Started,
    Chunk(Chunk),
    Failed(ProviderError),
    End,
}

fn await_start(
    rx: Receiver<Msg>,
    cancel: CancelToken,
    abort: CancelToken,
) -> Result<ChunkStream, ProviderError> {
    loop {
        match rx.recv() {
            Ok(Msg::Started) => {
                return Ok(Box::new(ChannelStream {
                    rx,
                    cancel,
                    abort,
                    finished: false,
                }))
            }
            Ok(Msg::Failed(err)) => return Err(err),
            Ok(Msg::Chunk(_)) | Ok(Msg::End) => continue,
            Err(_) => {
                return Err(ProviderError::Stream(
                    "the stream thread stopped before the reply started".into(),
                ))
            }
        }
    }
}

/// The consumer's end: chunks in order, then `None`; `Err(Cancelled)` as soon as the token
/// fires (the stream thread's cancel hook wakes a blocked `recv`). Dropping it early shuts
/// the connection instead of leaving the thread reading until the idle timeout.
struct ChannelStream {
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

impl Iterator for ChannelStream {
    type Item = Result<Chunk, ProviderError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.finished {
            if self.cancel.is_cancelled() {
                self.finished = true;
                return Some(Err(ProviderError::Cancelled));
            }
            match self.rx.recv() {
                Ok(Msg::Chunk(chunk)) => {
                    if matches!(chunk, Chunk::Done { .. }) {
                        self.finished = true;
                        // Give the stream thread a moment to read past [DONE] so the
                        // connection is back in the pool before the next request; a server
                        // that keeps the body open costs at most this wait.
                        let _ = self.rx.recv_timeout(DRAIN_WAIT);
                    }
                    return Some(Ok(chunk));
                }
                Ok(Msg::Started) => continue,
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
        None
    }
}

/// How long the caller waits, after the last chunk, for the end of the body.
const DRAIN_WAIT: Duration = Duration::from_millis(20);

/// How much trailing body after `[DONE]` is read to keep a connection reusable.
const DRAIN_LIMIT: u64 = 64 * 1024;

/// One streamed exchange, run on its own thread.
struct Job {
    net: Net,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Only when recording.
    body_json: Option<Value>,
    /// Where `body` goes back when the exchange is over.
    spare_body: Arc<Mutex<Vec<u8>>>,
    id_seed: u64,
    prompt_estimate: u64,
    idle: Duration,
    policy: super::RetryPolicy,
    api_key_env: String,
    recorder: Option<Arc<Recorder>>,
    /// Fires on the caller's cancel and when the consumer drops the stream.
    abort: CancelToken,
    _abort_on_cancel: HookGuard,
}

impl Drop for Job {
    fn drop(&mut self) {
        let body = std::mem::take(&mut self.body);
        let mut spare = self
            .spare_body
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Keep the larger buffer: the history only grows between compactions.
        if body.capacity() > spare.capacity() {
            *spare = body;
        }
    }
}

/// How reading one response body ended.
enum BodyEnd {
    /// Complete, failed or abandoned: whatever the consumer needs was sent.
    Done,
    /// An empty reply of which nothing reached the consumer: worth asking again.
    Empty,
}

impl Job {
    fn run(self, tx: Sender<Msg>) {
        let _wake_consumer = {
            let tx = tx.clone();
            self.abort.on_cancel(move || {
                let _ = tx.send(Msg::Failed(ProviderError::Cancelled));
            })
        };
        let exchange = Exchange {
            method: Method::Post,
            url: &self.url,
            headers: &self.headers,
            body: &self.body,
            limits: Limits {
                per_read: Some(self.idle),
                total: None,
            },
            api_key_env: &self.api_key_env,
        };
        let mut started = false;
        let mut empty_retries = 0u32;
        loop {
            match self.net.send(&exchange, &self.policy, &self.abort) {
                Err(failure) => {
                    let error_text = (failure.status == 0).then(|| match &failure.error {
                        ProviderError::Cancelled => record::CANCELLED.to_string(),
                        // Replayed as Connect(detail), which adds its own prefix.
                        ProviderError::Connect(detail) => detail.clone(),
                        other => other.to_string(),
                    });
                    // The exchange's own error matters more than a failure to record it.
                    let _ = self.record(failure.status, failure.body.as_bytes(), error_text);
                    let _ = tx.send(Msg::Failed(failure.error));
                    break;
                }
                Ok(open) => {
                    if !started && tx.send(Msg::Started).is_err() {
                        break;
                    }
                    started = true;
                    let may_retry = empty_retries < self.policy.max_retries;
                    match self.read_body(open, &tx, may_retry) {
                        BodyEnd::Done => break,
                        BodyEnd::Empty => {
                            // Like a 5xx: the server had a bad moment, and since nothing
                            // was shown, asking again is invisible to the user.
                            let wait =
                                retry::delay(&self.policy, empty_retries, None, SystemTime::now());
                            if retry::sleep(wait, &self.abort).is_err() {
                                let _ = tx.send(Msg::Failed(ProviderError::Cancelled));
                                break;
                            }
                            empty_retries += 1;
                        }
                    }
                }
            }
        }
        let _ = tx.send(Msg::End);
    }

    fn read_body(&self, mut open: OpenBody, tx: &Sender<Msg>, may_retry: bool) -> BodyEnd {
        let mut parser = StreamParser::new(self.id_seed, self.prompt_estimate);
        let mut raw = Vec::new();
        let mut received = 0usize;
        let mut buf = vec![0u8; 16 * 1024];
        let mut out = Vec::new();
        let mut forwarded = false;
        let result = loop {
            match open.reader.read(&mut buf) {
                Ok(0) => break parser.finish(&mut out),
                Ok(n) => {
                    received += n;
                    if self.recorder.is_some() {
                        raw.extend_from_slice(&buf[..n]);
                    }
                    if let Err(err) = parser.feed(&buf[..n], &mut out) {
                        break Err(err);
                    }
                    if parser.is_done() {
                        break Ok(());
                    }
                    forwarded |= !out.is_empty();
                    if !send_all(tx, &mut out) {
                        // The consumer is gone; keep what arrived for the recording.
                        break Ok(());
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => break Err(self.read_error(e, received)),
            }
        };
        let silent = !forwarded && out.is_empty();
        if may_retry && silent && matches!(result, Err(ProviderError::EmptyReply { .. })) {
            // Not recorded: a recording keeps the exchange that counted, as with HTTP retries.
            return BodyEnd::Empty;
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

    fn read_error(&self, err: std::io::Error, received: usize) -> ProviderError {
        if self.abort.is_cancelled() {
            return ProviderError::Cancelled;
        }
        match ureq::Error::from(err) {
            ureq::Error::Timeout(ureq::Timeout::PerRead) => ProviderError::Stream(format!(
                "no data from the server for {}; the stream looks stalled \
                 (raise timeouts.idle_stream if the model thinks that long)",
                describe_duration(self.idle)
            )),
            other => ProviderError::Stream(format!(
                "the connection broke after {received} bytes of the reply: {other}"
            )),
        }
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
        })
    }
}

/// Sends every pending chunk; false once the consumer has hung up.
fn send_all(tx: &Sender<Msg>, out: &mut Vec<Chunk>) -> bool {
    out.drain(..)
        .all(|chunk| tx.send(Msg::Chunk(chunk)).is_ok())
}

fn describe_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{} s", d.as_secs())
    }
}

/// `chat_url`, else `base_url` + `/chat/completions`.
pub fn chat_url(settings: &ProviderSettings) -> Result<String, ProviderError> {
    endpoint(settings, settings.chat_url.as_deref(), "chat/completions")
}

/// `models_url`, else `base_url` + `/models`.
pub fn models_url(settings: &ProviderSettings) -> Result<String, ProviderError> {
    endpoint(settings, settings.models_url.as_deref(), "models")
}

fn endpoint(
    settings: &ProviderSettings,
    explicit: Option<&str>,
    suffix: &str,
) -> Result<String, ProviderError> {
    let url = match explicit.map(str::trim).filter(|u| !u.is_empty()) {
        Some(url) => url.to_string(),
        None if settings.base_url.trim().is_empty() => {
            return Err(ProviderError::Config(format!(
                "provider `{}` has no base_url",
                settings.name
            )))
        }
        None => format!(
            "{}/{suffix}",
            settings.base_url.trim().trim_end_matches('/')
        ),
    };
    net::parse_url(&url)?;
    Ok(url)
}

/// The exact request body: model, messages, tools, streaming options, sampling settings,
/// then `extra_body` merged at the top level. Keys are sorted (serde_json's map), so the same
/// request always serialises to the same bytes. Built from scratch: the reference that
/// [`write_request_body`] must match, and the form recordings keep.
pub fn request_body(settings: &ProviderSettings, request: &Request) -> Value {
    let mut body = envelope(settings, request);
    // `extra_body` may replace the messages, as it may replace anything else.
    body.entry("messages")
        .or_insert_with(|| Value::Array(request.messages.iter().map(message_json).collect()));
    Value::Object(body)
}

/// Everything in the body but the messages (unless `extra_body` sets them).
fn envelope(settings: &ProviderSettings, request: &Request) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(settings.model.clone()));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                serde_json::json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), Value::Bool(true));
    body.insert(
        "stream_options".into(),
        serde_json::json!({ "include_usage": true }),
    );
    if let Some(max_tokens) = request.max_tokens {
        body.insert("max_tokens".into(), max_tokens.into());
    }
    if let Some(t) = request.temperature.and_then(serde_json::Number::from_f64) {
        body.insert("temperature".into(), Value::Number(t));
    }
    if let Some(effort) = &request.reasoning_effort {
        body.insert("reasoning_effort".into(), Value::String(effort.clone()));
    }
    for (key, value) in &settings.extra_body {
        body.insert(key.clone(), value.clone());
    }
    body
}

/// The bytes `request_body` serialises to, assembled into `out` (cleared first, its capacity
/// reused) from the transcript's cached message JSON: only the envelope is serialised here.
/// Returns the body's [`stable_hash`], rolled forward over the messages hashed before.
pub fn write_request_body(
    settings: &ProviderSettings,
    request: &Request,
    out: &mut Vec<u8>,
) -> u64 {
    out.clear();
    let envelope = envelope(settings, request);
    if envelope.contains_key("messages") {
        // `extra_body` replaced the messages: nothing cached applies.
        write_json(out, &Value::Object(envelope));
        return stable_hash(out);
    }
    let messages = request.messages.bytes();
    out.reserve(messages.len() + 16 * 1024);
    out.push(b'{');
    // The map iterates in key order, the order serde_json writes it in.
    let mut entries = envelope.iter().peekable();
    let mut first = true;
    while let Some((key, value)) = entries.next_if(|(key, _)| key.as_str() < "messages") {
        write_entry(out, &mut first, key, value);
    }
    if !first {
        out.push(b',');
    }
    out.extend_from_slice(b"\"messages\":[");
    let state = request.messages.hash_after(stable_hash(out));
    let rest = out.len() + messages.len();
    out.extend_from_slice(messages);
    out.push(b']');
    for (key, value) in entries {
        write_entry(out, &mut false, key, value);
    }
    out.push(b'}');
    fnv_continue(state, &out[rest..])
}

fn write_entry(out: &mut Vec<u8>, first: &mut bool, key: &str, value: &Value) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    write_json(out, &Value::String(key.to_string()));
    out.push(b':');
    write_json(out, value);
}

/// Writing a `Value` into memory cannot fail; `null` keeps the body valid JSON if it did.
fn write_json(out: &mut Vec<u8>, value: &Value) {
    let len = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(len);
        out.extend_from_slice(b"null");
    }
}

pub(crate) fn message_json(message: &Message) -> Value {
    let mut value = serde_json::to_value(message).unwrap_or(Value::Null);
    // DeepSeek's thinking mode rejects an assistant tool-call turn without it.
    if message.role == Role::Assistant && !message.tool_calls.is_empty() {
        if let Value::Object(map) = &mut value {
            map.entry("reasoning_content")
                .or_insert_with(|| Value::String(String::new()));
        }
    }
    value
}

/// Final request headers; `settings.headers` override ours (case-insensitively).
fn request_headers(
    settings: &ProviderSettings,
    method: Method,
) -> Result<Vec<(String, String)>, ProviderError> {
    let mut headers: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut set = |name: &str, value: String| {
        headers.insert(name.to_ascii_lowercase(), (name.to_string(), value));
    };
    if let Some(key) = settings.api_key.as_deref().filter(|k| !k.trim().is_empty()) {
        set("Authorization", format!("Bearer {}", key.trim()));
    }
    match method {
        Method::Post => {
            set("Content-Type", "application/json".into());
            set("Accept", "text/event-stream".into());
        }
        Method::Get => set("Accept", "application/json".into()),
    }
    set("User-Agent", crate::user_agent());
    for (name, value) in &settings.headers {
        set(name, value.clone());
    }
    let headers: Vec<(String, String)> = headers.into_values().collect();
    for (name, value) in &headers {
        let valid_name = ureq::http::HeaderName::from_bytes(name.as_bytes()).is_ok();
        let valid_value = ureq::http::HeaderValue::from_str(value).is_ok();
        if !valid_name || !valid_value {
            let what = if name.eq_ignore_ascii_case("authorization") {
                format!("the API key from ${}", settings.api_key_env)
            } else {
                format!("header `{name}`")
            };
            return Err(ProviderError::Config(format!(
                "{what} of provider `{}` is not a valid HTTP header",
                settings.name
            )));
        }
    }
    Ok(headers)
}

/// FNV-1a: a fixed, dependency-free hash so synthetic tool-call ids are the same for the same
/// request on every machine and in every replay.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    fnv_continue(FNV_OFFSET, bytes)
}

/// About four bytes per token: only used when the server reports no usage.
fn estimate_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// Decodes a streamed chat completion from raw body bytes into chunks. Sans-IO: the network
/// thread and the replay provider both feed it.
pub struct StreamParser {
    decoder: sse::Decoder,
    id_seed: u64,
    prompt_estimate: u64,
    calls: BTreeMap<u64, PartialCall>,
    last_call: Option<u64>,
    calls_emitted: bool,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    /// Text or a tool call arrived: a reply without either is an error, not an answer.
    content_seen: bool,
    think: ThinkSplitter,
    output_bytes: usize,
    events: usize,
    sniff: Vec<u8>,
    done: bool,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

#[derive(Deserialize)]
struct WireChunk {
    choices: Option<Vec<WireChoice>>,
    usage: Option<Value>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    index: Option<u64>,
    delta: Option<WireDelta>,
    /// Some servers put a whole message in the last chunk, or answer without streaming.
    message: Option<WireDelta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    content: Option<Value>,
    reasoning_content: Option<Value>,
    reasoning: Option<Value>,
    tool_calls: Option<Vec<WireToolDelta>>,
}

#[derive(Deserialize)]
struct WireToolDelta {
    index: Option<u64>,
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<Value>,
}

impl StreamParser {
    /// `id_seed` makes synthetic tool-call ids; `prompt_estimate` stands in for the prompt
    /// token count when the server reports no usage.
    pub fn new(id_seed: u64, prompt_estimate: u64) -> StreamParser {
        StreamParser {
            decoder: sse::Decoder::new(),
            id_seed,
            prompt_estimate,
            calls: BTreeMap::new(),
            last_call: None,
            calls_emitted: false,
            finish_reason: None,
            usage: None,
            content_seen: false,
            think: ThinkSplitter::default(),
            output_bytes: 0,
            events: 0,
            sniff: Vec::new(),
            done: false,
        }
    }

    /// True once `[DONE]` arrived: the caller may stop reading.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Decodes `bytes`, appending finished chunks to `out` (also the ones before an error).
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if self.events == 0 && self.sniff.len() < SNIFF_LIMIT {
            let room = SNIFF_LIMIT - self.sniff.len();
            self.sniff
                .extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        for event in self.decoder.feed(bytes) {
            self.events += 1;
            self.on_event(event, out)?;
            if self.done {
                break;
            }
        }
        Ok(())
    }

    /// The body ended. Complete if `[DONE]` or a `finish_reason` arrived; otherwise an error,
    /// and tool calls still being assembled are dropped rather than emitted half-made.
    pub fn finish(&mut self, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        if let Some(event) = self.decoder.finish() {
            self.events += 1;
            self.on_event(event, out)?;
            if self.done {
                return Ok(());
            }
        }
        if self.events == 0 {
            return self.finish_unstreamed(out);
        }
        if self.finish_reason.is_none() {
            return Err(ProviderError::Stream(
                "the reply ended early: no finish_reason and no [DONE] (the server or a proxy \
                 cut the stream)"
                    .into(),
            ));
        }
        self.complete(out)
    }

    fn on_event(&mut self, event: sse::Event, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if event.event == "error" {
            return Err(ProviderError::Stream(format!(
                "the server reported an error: {}",
                net::error_message(data)
            )));
        }
        if event.event != "message" || data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            return self.complete(out);
        }
        let chunk: WireChunk = serde_json::from_str(data).map_err(|e| {
            ProviderError::Stream(format!(
                "malformed JSON in a stream event ({e}): {}",
                crate::text::one_line(data, 120)
            ))
        })?;
        self.on_chunk(chunk, out)
    }

    fn on_chunk(&mut self, chunk: WireChunk, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let message = net::error_message(&error.to_string());
            let message = if message.is_empty() {
                crate::text::one_line(&error.to_string(), 300)
            } else {
                message
            };
            return Err(ProviderError::Stream(format!(
                "the server reported an error mid-stream: {message}"
            )));
        }
        for choice in chunk.choices.unwrap_or_default() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta.or(choice.message) {
                self.on_delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.on_finish(reason, out);
            }
        }
        if let Some(usage) = chunk.usage.as_ref().and_then(normalise_usage) {
            self.usage = Some(usage);
        }
        Ok(())
    }

    fn on_delta(&mut self, delta: WireDelta, out: &mut Vec<Chunk>) {
        for reasoning in [delta.reasoning_content, delta.reasoning]
            .iter()
            .flatten()
            .filter_map(text_of)
        {
            if !reasoning.is_empty() {
                self.output_bytes += reasoning.len();
                out.push(Chunk::Reasoning(reasoning));
            }
        }
        if let Some(text) = delta.content.as_ref().and_then(text_of) {
            self.output_bytes += text.len();
            self.content_seen |= !text.trim().is_empty();
            self.think.push(&text, out);
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.on_tool_delta(call);
        }
    }

    fn on_tool_delta(&mut self, delta: WireToolDelta) {
        let id = delta.id.filter(|id| !id.is_empty());
        let index = match (delta.index, &id) {
            (Some(index), _) => index,
            // Without an index, a new id starts a new call and a known id continues one.
            (None, Some(id)) => self
                .calls
                .iter()
                .find(|(_, c)| c.id.as_deref() == Some(id))
                .map(|(i, _)| *i)
                .unwrap_or_else(|| self.calls.keys().next_back().map_or(0, |i| i + 1)),
            (None, None) => self.last_call.unwrap_or(0),
        };
        self.last_call = Some(index);
        let call = self.calls.entry(index).or_default();
        if call.id.is_none() {
            call.id = id;
        }
        if let Some(function) = delta.function {
            // Some servers repeat the name in every delta: set it, never append.
            if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                call.name = name;
            }
            match function.arguments {
                Some(Value::String(fragment)) => {
                    self.output_bytes += fragment.len();
                    call.arguments.push_str(&fragment);
                }
                Some(Value::Null) | None => {}
                Some(other) => call.arguments.push_str(&other.to_string()),
            }
        }
    }

    fn on_finish(&mut self, reason: String, out: &mut Vec<Chunk>) {
        if self.finish_reason.is_none() {
            self.finish_reason = Some(reason);
        }
        self.emit_calls(out);
    }

    fn emit_calls(&mut self, out: &mut Vec<Chunk>) {
        if self.calls_emitted {
            return;
        }
        self.calls_emitted = true;
        self.think.flush(out);
        for (index, call) in std::mem::take(&mut self.calls) {
            if call.name.is_empty() && call.arguments.trim().is_empty() {
                continue;
            }
            let id = call
                .id
                .unwrap_or_else(|| format!("call_{:016x}_{index}", self.id_seed));
            let arguments = if call.arguments.trim().is_empty() {
                "{}".to_string()
            } else {
                call.arguments
            };
            self.content_seen = true;
            out.push(Chunk::ToolCall(ToolCall::new(id, call.name, arguments)));
        }
    }

    /// The reply is whole: flush everything, then usage (reported or estimated), then Done.
    /// A reply with neither text nor a tool call (only `[DONE]`, empty `choices`, null
    /// deltas, or reasoning alone) is [`ProviderError::EmptyReply`]: taking it as an answer
    /// would end the run as a success that did nothing.
    fn complete(&mut self, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        self.think.flush(out);
        let had_calls = !self.calls.is_empty();
        self.emit_calls(out);
        self.done = true;
        if !self.content_seen {
            return Err(ProviderError::EmptyReply {
                finish_reason: self.finish_reason.take(),
            });
        }
        let usage = self.usage.unwrap_or(Usage {
            prompt_tokens: self.prompt_estimate,
            completion_tokens: estimate_tokens(self.output_bytes),
            cache_miss_tokens: self.prompt_estimate,
            estimated: true,
            ..Usage::default()
        });
        out.push(Chunk::Usage(usage));
        let finish_reason = self
            .finish_reason
            .take()
            .unwrap_or_else(|| if had_calls { "tool_calls" } else { "stop" }.to_string());
        out.push(Chunk::Done { finish_reason });
        Ok(())
    }

    /// No event at all: a server that ignored `stream: true` and sent one JSON completion,
    /// an error object, or something that is not an API reply.
    fn finish_unstreamed(&mut self, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        let text = String::from_utf8_lossy(&self.sniff).into_owned();
        let trimmed = text.trim_start_matches('\u{feff}').trim();
        if trimmed.is_empty() {
            return Err(ProviderError::Stream(
                "the server sent an empty reply".into(),
            ));
        }
        let not_a_stream = || {
            ProviderError::Stream(format!(
                "the reply is neither an event stream nor a chat completion: {}",
                crate::text::one_line(trimmed, 120)
            ))
        };
        if !trimmed.starts_with('{') {
            return Err(not_a_stream());
        }
        let chunk: WireChunk = serde_json::from_str(trimmed).map_err(|_| not_a_stream())?;
        if chunk.choices.as_ref().is_none_or(|c| c.is_empty()) && chunk.error.is_none() {
            return Err(not_a_stream());
        }
        self.on_chunk(chunk, out)?;
        self.complete(out)
    }
}

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        // Content as an array of parts: keep the text parts.
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
        ),
        _ => None,
    }
}

/// Token counts from DeepSeek (`prompt_cache_hit_tokens`/`prompt_cache_miss_tokens`), OpenAI
/// (`prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`) and
/// plain servers (`prompt_tokens`/`completion_tokens` only).
pub fn normalise_usage(usage: &Value) -> Option<Usage> {
    let num = |path: &str| usage.pointer(path).and_then(Value::as_u64);
    let hit = num("/prompt_cache_hit_tokens")
        .or_else(|| num("/prompt_tokens_details/cached_tokens"))
        .or_else(|| num("/input_tokens_details/cached_tokens"));
    let miss = num("/prompt_cache_miss_tokens");
    let prompt = num("/prompt_tokens")
        .or_else(|| num("/input_tokens"))
        .or_else(|| Some(hit? + miss?));
    let completion = num("/completion_tokens").or_else(|| num("/output_tokens"));
    if prompt.is_none() && completion.is_none() {
        return None;
    }
    let prompt = prompt.unwrap_or(0);
    let hit = hit.unwrap_or(0).min(prompt);
    Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion.unwrap_or(0),
        cache_hit_tokens: hit,
        cache_miss_tokens: miss.unwrap_or(prompt - hit),
        reasoning_tokens: num("/completion_tokens_details/reasoning_tokens")
            .or_else(|| num("/output_tokens_details/reasoning_tokens"))
            .unwrap_or(0),
        estimated: false,
    })
}

/// Splits `<think>…</think>` at the start of `content` (servers that inline the reasoning)
/// into reasoning chunks, across arbitrary delta boundaries. Only a leading tag counts, so a
/// model writing about `<think>` tags mid-answer is left alone.
#[derive(Default)]
struct ThinkSplitter {
    state: ThinkState,
    pending: String,
}

#[derive(Default, PartialEq)]
enum ThinkState {
    #[default]
    Start,
    Thinking,
    Text,
}

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

impl ThinkSplitter {
    fn push(&mut self, text: &str, out: &mut Vec<Chunk>) {
        match self.state {
            ThinkState::Text => push_text(out, Chunk::Text(text.to_string())),
            ThinkState::Start => {
                self.pending.push_str(text);
                let trimmed = self.pending.trim_start();
                if let Some(rest) = trimmed.strip_prefix(THINK_OPEN) {
                    let rest = rest.to_string();
                    self.pending.clear();
                    self.state = ThinkState::Thinking;
                    self.push(&rest, out);
                } else if !THINK_OPEN.starts_with(trimmed) {
                    self.state = ThinkState::Text;
                    push_text(out, Chunk::Text(std::mem::take(&mut self.pending)));
                }
            }
            ThinkState::Thinking => {
                self.pending.push_str(text);
                if let Some(pos) = self.pending.find(THINK_CLOSE) {
                    let rest = self.pending[pos + THINK_CLOSE.len()..]
                        .trim_start_matches(['\r', '\n'])
                        .to_string();
                    self.pending.truncate(pos);
                    push_text(out, Chunk::Reasoning(std::mem::take(&mut self.pending)));
                    self.state = ThinkState::Text;
                    push_text(out, Chunk::Text(rest));
                } else {
                    // Hold back a tail that could be the start of the closing tag.
                    let keep = (1..THINK_CLOSE.len())
                        .rev()
                        .find(|k| self.pending.ends_with(&THINK_CLOSE[..*k]))
                        .unwrap_or(0);
                    let tail = self.pending.split_off(self.pending.len() - keep);
                    push_text(
                        out,
                        Chunk::Reasoning(std::mem::replace(&mut self.pending, tail)),
                    );
                }
            }
        }
    }

    fn flush(&mut self, out: &mut Vec<Chunk>) {
        let pending = std::mem::take(&mut self.pending);
        match self.state {
            ThinkState::Start => push_text(out, Chunk::Text(pending)),
            ThinkState::Thinking => push_text(out, Chunk::Reasoning(pending)),
            ThinkState::Text => {}
        }
    }
}

/// Pushes a text or reasoning chunk unless it is empty.
fn push_text(out: &mut Vec<Chunk>, chunk: Chunk) {
    match &chunk {
        Chunk::Text(t) | Chunk::Reasoning(t) if t.is_empty() => {}
        _ => out.push(chunk),
    }
}

/// The model ids the provider's models endpoint lists (OpenAI `{data:[{id}]}`; also
/// `{models:[{id|name}]}` and a bare array), sorted and deduplicated.
pub fn list_models(
    settings: &ProviderSettings,
    cancel: &CancelToken,
) -> Result<Vec<String>, ProviderError> {
    let url = models_url(settings)?;
    let headers = request_headers(settings, Method::Get)?;
    let net = Net::new(settings, &url)?;
    let exchange = Exchange {
        method: Method::Get,
        url: &url,
        headers: &headers,
        body: &[],
        limits: Limits {
            per_read: Some(settings.timeouts.idle_stream),
            total: None,
        },
        api_key_env: &settings.api_key_env,
    };
    let open = net
        .send(&exchange, &settings.retry, cancel)
        .map_err(|failure| failure.error)?;
    let mut raw = Vec::new();
    open.reader
        .take(MODELS_BODY_LIMIT)
        .read_to_end(&mut raw)
        .map_err(|e| {
            if cancel.is_cancelled() {
                ProviderError::Cancelled
            } else {
                ProviderError::Stream(format!("reading the models list from {url}: {e}"))
            }
        })?;
    parse_models(&raw).ok_or_else(|| {
        ProviderError::BadResponse(format!(
            "{url} did not return a models list: {}",
            crate::text::one_line(&String::from_utf8_lossy(&raw), 120)
        ))
    })
}

fn parse_models(raw: &[u8]) -> Option<Vec<String>> {
    let value: Value = serde_json::from_slice(raw).ok()?;
    let entries = value
        .get("data")
        .or_else(|| value.get("models"))
        .unwrap_or(&value)
        .as_array()?;
    let mut ids: Vec<String> = entries
        .iter()
        .filter_map(|entry| match entry {
            Value::String(id) => Some(id.clone()),
            other => other
                .get("id")
                .or_else(|| other.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string),
        })
        .collect();
    ids.sort();
    ids.dedup();
    Some(ids)
}

/// The outcome of one request to the models endpoint, for `reasonix doctor`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeReport {
    pub url: String,
    pub status: u16,
    pub latency: Duration,
    /// The server's error message when the status is not 2xx.
    pub message: String,
    /// How many models the endpoint listed, when it answered with a models list.
    pub models: Option<usize>,
    /// Where the trusted CA certificates came from.
    pub tls_roots: String,
}

/// One GET of the models endpoint with `timeout` for the whole exchange and no retries.
/// Any HTTP answer is a report; only a failure to get one is an error.
pub fn probe(settings: &ProviderSettings, timeout: Duration) -> Result<ProbeReport, ProviderError> {
    let url = models_url(settings)?;
    let headers = request_headers(settings, Method::Get)?;
    let net = Net::new(settings, &url)?;
    let exchange = Exchange {
        method: Method::Get,
        url: &url,
        headers: &headers,
        body: &[],
        limits: Limits {
            per_read: Some(timeout),
            total: Some(timeout),
        },
        api_key_env: &settings.api_key_env,
    };
    let no_retries = super::RetryPolicy {
        max_retries: 0,
        ..settings.retry
    };
    let started = Instant::now();
    let (status, raw) = match net.send(&exchange, &no_retries, &CancelToken::new()) {
        Ok(open) => {
            let mut raw = Vec::new();
            // A short read still proves the endpoint answered.
            let _ = open.reader.take(MODELS_BODY_LIMIT).read_to_end(&mut raw);
            (open.status, raw)
        }
        Err(failure) if failure.status != 0 => (failure.status, failure.body.into_bytes()),
        Err(failure) => return Err(failure.error),
    };
    let latency = started.elapsed();
    let success = (200..300).contains(&status);
    Ok(ProbeReport {
        url,
        status,
        latency,
        message: if success {
            String::new()
        } else {
            net::error_message(&String::from_utf8_lossy(&raw))
        },
        models: success
            .then(|| parse_models(&raw).map(|m| m.len()))
            .flatten(),
        tls_roots: net.roots_description().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Result<Vec<Chunk>, (Vec<Chunk>, String)> {
        let mut parser = StreamParser::new(7, 100);
        let mut out = Vec::new();
        let result = parser
            .feed(input, &mut out)
            .and_then(|_| parser.finish(&mut out));
        result
            .map(|_| out.clone())
            .map_err(|e| (out, e.to_string()))
    }

    fn parse_split(input: &[u8], cut: usize) -> Result<Vec<Chunk>, String> {
        let mut parser = StreamParser::new(7, 100);
        let mut out = Vec::new();
        parser
            .feed(&input[..cut], &mut out)
            .map_err(|e| e.to_string())?;
        parser
            .feed(&input[cut..], &mut out)
            .map_err(|e| e.to_string())?;
        parser.finish(&mut out).map_err(|e| e.to_string())?;
        Ok(out)
    }

    fn data(json: &str) -> String {
        format!("data: {json}\n\n")
    }

    /// Adjacent text (or reasoning) chunks merged, so split points do not matter.
    fn merged(chunks: Vec<Chunk>) -> Vec<Chunk> {
        let mut out: Vec<Chunk> = Vec::new();
        for chunk in chunks {
            match (out.last_mut(), &chunk) {
                (Some(Chunk::Text(a)), Chunk::Text(b)) => a.push_str(b),
                (Some(Chunk::Reasoning(a)), Chunk::Reasoning(b)) => a.push_str(b),
                _ => out.push(chunk),
            }
        }
        out
    }

    fn canonical_tool_stream() -> String {
        [
            data(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"Let me look."}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"ls","arguments":"{\"pa"}}]}}]}"#),
            ": keep-alive\n\n".to_string(),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\".\"}"}}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.rs\"}"}}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#),
            data(r#"{"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":20,"prompt_cache_hit_tokens":32,"prompt_cache_miss_tokens":18}}"#),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat()
    }

    #[test]
    fn interleaved_tool_calls_assemble_by_index_at_every_split() {
        let input = canonical_tool_stream();
        let expected = vec![
            Chunk::Reasoning("Let me look.".into()),
            Chunk::ToolCall(ToolCall::new("call_a", "read_file", r#"{"path":"a.rs"}"#)),
            Chunk::ToolCall(ToolCall::new("call_b", "ls", r#"{"path":"."}"#)),
            Chunk::Usage(Usage {
                prompt_tokens: 50,
                completion_tokens: 20,
                cache_hit_tokens: 32,
                cache_miss_tokens: 18,
                reasoning_tokens: 0,
                estimated: false,
            }),
            Chunk::Done {
                finish_reason: "tool_calls".into(),
            },
        ];
        assert_eq!(parse_all(input.as_bytes()).unwrap(), expected);
        for cut in 0..=input.len() {
            let got = parse_split(input.as_bytes(), cut).unwrap();
            assert_eq!(merged(got), expected, "split at {cut}");
        }
    }

    #[test]
    fn repeated_ids_and_names_are_set_not_appended_and_missing_ids_are_synthetic() {
        let input = [
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call__0_bash_cmpl-1","type":"function","function":{"name":"bash","arguments":"{\"cmd\""}}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call__0_bash_cmpl-1","type":"function","function":{"name":"bash","arguments":": \"ls\"}"}}],"function_call":{"name":"bash"}}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"ls"}}]}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
        let chunks = parse_all(input.as_bytes()).unwrap();
        let calls: Vec<&ToolCall> = chunks
            .iter()
            .filter_map(|c| match c {
                Chunk::ToolCall(call) => Some(call),
                _ => None,
            })
            .collect();
        assert_eq!(
            calls,
            vec![
                &ToolCall::new("call__0_bash_cmpl-1", "bash", r#"{"cmd": "ls"}"#),
                &ToolCall::new("call_0000000000000007_1", "ls", "{}"),
            ]
        );
        // Usage was missing: estimated, and flagged as such.
        assert!(chunks
            .iter()
            .any(|c| matches!(c, Chunk::Usage(u) if u.estimated && u.prompt_tokens == 100)));
    }

    #[test]
    fn a_stream_cut_before_finish_is_an_error_and_emits_no_partial_call() {
        let input = [
            data(r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"bash","arguments":"{\"cm"}}]}}]}"#),
        ]
        .concat();
        let (out, err) = parse_all(input.as_bytes()).unwrap_err();
        assert_eq!(out, vec![Chunk::Text("Hi".into())]);
        assert!(err.contains("ended early"), "{err}");
    }

    #[test]
    fn finish_reason_without_done_is_complete_and_usage_after_finish_is_kept() {
        let input = [
            data(r#"{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}],"usage":null}"#),
            data(r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":1}}}"#),
        ]
        .concat();
        let out = parse_all(input.as_bytes()).unwrap();
        assert_eq!(
            out,
            vec![
                Chunk::Text("ok".into()),
                Chunk::Usage(Usage {
                    prompt_tokens: 10,
                    completion_tokens: 2,
                    cache_hit_tokens: 8,
                    cache_miss_tokens: 2,
                    reasoning_tokens: 1,
                    estimated: false
                }),
                Chunk::Done {
                    finish_reason: "stop".into()
                }
            ]
        );
    }

    #[test]
    fn a_reply_without_text_or_tool_call_is_an_empty_reply_at_every_split() {
        let cases = [
            "data: [DONE]\n\n".to_string(),
            format!(
                "{}{}data: [DONE]\n\n",
                data(r#"{"id":"x","choices":[]}"#),
                data(r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0}}"#)
            ),
            format!(
                "{}{}{}",
                data(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#),
                data(
                    r#"{"choices":[{"index":0,"delta":{"content":null,"tool_calls":null},"finish_reason":null}]}"#
                ),
                data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
            ),
            format!(
                "{}{}data: [DONE]\n\n",
                data(
                    r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hmm","content":"  "}}]}"#
                ),
                data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#),
            ),
        ];
        for input in &cases {
            for cut in 0..=input.len() {
                let err = parse_split(input.as_bytes(), cut).unwrap_err();
                assert!(err.contains("empty reply"), "cut {cut} of {input}: {err}");
            }
        }
        let (_, err) = parse_all(cases[3].as_bytes()).unwrap_err();
        assert_eq!(
            err,
            "provider: the model sent an empty reply (no text and no tool call, finish_reason `length`)"
        );
    }

    #[test]
    fn malformed_json_is_a_stream_error_with_an_excerpt() {
        let input = "data: {\"choices\": [\n\n";
        let (_, err) = parse_all(input.as_bytes()).unwrap_err();
        assert!(err.contains("malformed JSON"), "{err}");
        assert!(err.contains("{\"choices\": ["), "{err}");
    }

    #[test]
    fn error_events_and_error_objects_mid_stream_are_reported() {
        let input = data(r#"{"error":{"message":"upstream overloaded","code":503}}"#);
        let (_, err) = parse_all(input.as_bytes()).unwrap_err();
        assert!(err.contains("upstream overloaded"), "{err}");
        let input = "event: error\ndata: {\"message\":\"quota\"}\n\n";
        let (_, err) = parse_all(input.as_bytes()).unwrap_err();
        assert!(err.contains("quota"), "{err}");
    }

    #[test]
    fn non_streamed_json_completion_is_accepted_and_html_is_not() {
        let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hello","tool_calls":[{"id":"x","type":"function","function":{"name":"ls","arguments":{"path":"."}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#;
        let out = parse_all(body.as_bytes()).unwrap();
        assert_eq!(out[0], Chunk::Text("hello".into()));
        assert_eq!(
            out[1],
            Chunk::ToolCall(ToolCall::new("x", "ls", r#"{"path":"."}"#))
        );
        assert!(matches!(&out[3], Chunk::Done { finish_reason } if finish_reason == "tool_calls"));
        let (_, err) = parse_all(b"<html><body>Bad gateway</body></html>").unwrap_err();
        assert!(err.contains("neither an event stream"), "{err}");
        assert!(err.contains("Bad gateway"), "{err}");
        let (_, err) = parse_all(b"").unwrap_err();
        assert!(err.contains("empty reply"), "{err}");
    }

    #[test]
    fn inline_think_tags_become_reasoning_at_every_split() {
        let input = [
            data(r#"{"choices":[{"index":0,"delta":{"content":"\n<thi"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"content":"nk>plan a</th"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"content":"ink>\n\nAnswer <think> stays"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
        for cut in 0..=input.len() {
            let out = merged(parse_split(input.as_bytes(), cut).unwrap());
            assert_eq!(out[0], Chunk::Reasoning("plan a".into()), "split {cut}");
            assert_eq!(
                out[1],
                Chunk::Text("Answer <think> stays".into()),
                "split {cut}"
            );
        }
        let plain = data(
            r#"{"choices":[{"index":0,"delta":{"content":"<b>bold</b>"},"finish_reason":"stop"}]}"#,
        );
        let out = parse_all(plain.as_bytes()).unwrap();
        assert_eq!(out[0], Chunk::Text("<b>bold</b>".into()));
    }

    #[test]
    fn reasoning_field_variants_are_reasoning_chunks() {
        let input = [
            data(r#"{"choices":[{"index":0,"delta":{"reasoning":"r1"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"reasoning_content":"r2","content":""}}]}"#),
            data(r#"{"choices":[{"index":1,"delta":{"content":"other choice"}}]}"#),
            data(r#"{"choices":[{"index":0,"delta":{"content":"t"},"finish_reason":"stop"}]}"#),
        ]
        .concat();
        let out = parse_all(input.as_bytes()).unwrap();
        assert_eq!(
            &out[..3],
            &[
                Chunk::Reasoning("r1".into()),
                Chunk::Reasoning("r2".into()),
                Chunk::Text("t".into())
            ]
        );
    }

    #[test]
    fn usage_normalisation_covers_deepseek_openai_and_plain_servers() {
        let deepseek = serde_json::json!({"prompt_tokens": 100, "completion_tokens": 7,
            "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36,
            "completion_tokens_details": {"reasoning_tokens": 5}});
        let u = normalise_usage(&deepseek).unwrap();
        assert_eq!(
            (u.cache_hit_tokens, u.cache_miss_tokens, u.reasoning_tokens),
            (64, 36, 5)
        );
        let plain =
            serde_json::json!({"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12});
        let u = normalise_usage(&plain).unwrap();
        assert_eq!(
            (u.prompt_tokens, u.cache_hit_tokens, u.cache_miss_tokens),
            (9, 0, 9)
        );
        let hit_miss_only =
            serde_json::json!({"prompt_cache_hit_tokens": 4, "prompt_cache_miss_tokens": 6});
        assert_eq!(normalise_usage(&hit_miss_only).unwrap().prompt_tokens, 10);
        assert_eq!(normalise_usage(&serde_json::json!({"timings": {}})), None);
    }

    #[test]
    fn body_is_byte_stable_and_carries_reasoning_content_on_tool_call_turns() {
        let settings = ProviderSettings {
            model: "m".into(),
            extra_body: serde_json::from_str(r#"{"tool_choice":"auto","temperature":0.1}"#)
                .unwrap(),
            ..ProviderSettings::default()
        };
        let mut assistant = Message::assistant("");
        assistant.tool_calls.push(ToolCall::new("c1", "ls", "{}"));
        let request = Request {
            messages: vec![
                Message::user("hi"),
                assistant,
                Message::tool_result("c1", "x"),
            ]
            .into(),
            temperature: Some(0.7),
            max_tokens: Some(64),
            reasoning_effort: Some("high".into()),
            ..Request::default()
        };
        let a = serde_json::to_vec(&request_body(&settings, &request)).unwrap();
        let b = serde_json::to_vec(&request_body(&settings, &request)).unwrap();
        assert_eq!(a, b);
        let body: Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(body["messages"][1]["reasoning_content"], "");
        assert_eq!(body["messages"][1]["content"], "");
        assert!(body["messages"][0].get("reasoning_content").is_none());
        assert!(body.get("tools").is_none());
        // extra_body wins over our own keys.
        assert_eq!(body["temperature"], 0.1);
        assert_eq!(body["tool_choice"], "auto");
        assert_eq!(body["max_tokens"], 64);
    }

    /// The body assembled from cached bytes, and its rolling hash, against the from-scratch
    /// serialisation.
    fn assert_assembled_matches(settings: &ProviderSettings, request: &Request, buf: &mut Vec<u8>) {
        let hash = write_request_body(settings, request, buf);
        let scratch = serde_json::to_vec(&request_body(settings, request)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(buf),
            String::from_utf8_lossy(&scratch)
        );
        assert_eq!(hash, stable_hash(&scratch));
    }

    #[test]
    fn assembled_body_equals_the_scratch_body_after_appends_rewrites_and_a_resume() {
        let mut settings = ProviderSettings {
            model: "m".into(),
            extra_body: serde_json::from_str(r#"{"a_first":1,"top_p":0.5}"#).unwrap(),
            ..ProviderSettings::default()
        };
        let mut request = Request {
            tools: vec![crate::provider::ToolSchema {
                name: "ls".into(),
                description: "List \"files\"\n".into(),
                parameters: serde_json::json!({"type": "object", "properties": {}}),
            }],
            max_tokens: Some(99),
            temperature: Some(0.25),
            ..Request::default()
        };
        let mut buf = Vec::new();
        // Empty history, then appends of every shape.
        assert_assembled_matches(&settings, &request, &mut buf);
        let mut history = vec![
            Message::system("sys é \u{1F600} \"q\""),
            Message::user("hi"),
        ];
        for message in history.clone() {
            request.messages.push(message);
            assert_assembled_matches(&settings, &request, &mut buf);
        }
        for round in 0..5 {
            let mut assistant = Message::assistant(format!("round {round}"));
            assistant
                .tool_calls
                .push(ToolCall::new(format!("c{round}"), "ls", "{}"));
            if round % 2 == 1 {
                assistant.reasoning_content = Some("thinking\tit over".into());
            }
            let result = Message::tool_result(format!("c{round}"), "x".repeat(round * 300));
            for message in [assistant, result] {
                history.push(message.clone());
                request.messages.push(message);
                assert_assembled_matches(&settings, &request, &mut buf);
            }
        }
        // A compaction rewrite in the middle: only the changed suffix is re-encoded.
        history[5].content = "[snipped]".into();
        history.remove(3);
        history.remove(2);
        request.messages.replace(history.clone());
        assert_eq!(request.messages.messages(), &history[..]);
        assert_assembled_matches(&settings, &request, &mut buf);
        // A resume: the same history loaded afresh.
        request.messages = history.clone().into();
        assert_assembled_matches(&settings, &request, &mut buf);
        // Settings that move the bytes before the messages re-seed the rolling hash.
        request.max_tokens = None;
        settings.extra_body.remove("a_first");
        assert_assembled_matches(&settings, &request, &mut buf);
        // extra_body may replace the messages outright.
        settings
            .extra_body
            .insert("messages".into(), serde_json::json!([]));
        assert_assembled_matches(&settings, &request, &mut buf);
    }

    #[test]
    fn endpoints_join_base_url_with_or_without_trailing_slash() {
        let mut settings = ProviderSettings {
            name: "p".into(),
            base_url: "https://api.example.com/v1/".into(),
            ..ProviderSettings::default()
        };
        assert_eq!(
            chat_url(&settings).unwrap(),
            "https://api.example.com/v1/chat/completions"
        );
        assert_eq!(
            models_url(&settings).unwrap(),
            "https://api.example.com/v1/models"
        );
        settings.chat_url = Some("http://gw.local/x/chat".into());
        assert_eq!(chat_url(&settings).unwrap(), "http://gw.local/x/chat");
        settings.base_url = String::new();
        let err = models_url(&settings).unwrap_err();
        assert!(err.to_string().contains("no base_url"), "{err}");
    }

    #[test]
    fn models_lists_are_parsed_from_common_shapes() {
        assert_eq!(
            parse_models(br#"{"object":"list","data":[{"id":"b"},{"id":"a"},{"id":"a"}]}"#),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(
            parse_models(br#"{"models":[{"name":"llama3:8b"}]}"#),
            Some(vec!["llama3:8b".to_string()])
        );
        assert_eq!(parse_models(b"<html>"), None);
    }
}
