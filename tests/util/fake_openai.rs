//! A fake OpenAI-compatible server on 127.0.0.1:0, on std threads. Each incoming request
//! takes the next scripted [`Reply`] (SSE piece by piece, an HTTP error, a cut or held
//! stream, a non-SSE body) and is recorded. Every chat request is checked for tool-call
//! pairing; violations are collected and fail the test when the server is dropped.
//!
//! SSE builders (`sse_text`, `sse_tool_calls`, `sse_usage`, `done`, ...) return one event's
//! text each, so tests can script multi-turn conversations:
//! `Reply::events(vec![sse_text("hi"), sse_finish("stop"), done()])`.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long the blocking `wait_*` helpers wait before failing the test: a safety net against
/// hangs, not a synchronisation device.
const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// One scripted answer.
pub enum Reply {
    /// `200 text/event-stream`, chunked; each piece written and flushed separately.
    Sse { pieces: Vec<Vec<u8>>, end: End },
    /// Any status with extra headers and a body (`application/json` unless a header says
    /// otherwise).
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Reads the request and sends nothing until released, then closes.
    Stall(Receiver<()>),
    /// Waits for the release, then sends the inner reply (a response the test lets go).
    Gated(Receiver<()>, Box<Reply>),
    /// Reads the request and closes the connection without a byte of response.
    Hangup,
}

/// How an SSE reply ends.
pub enum End {
    /// The terminating chunk, then close.
    Complete,
    /// Close the connection mid-body, without the terminating chunk.
    Cut,
    /// Keep the connection open until released (or until the client hangs up), then cut.
    Hold(Receiver<()>),
}

/// Lets a held or stalled reply finish. Dropping it releases too.
pub struct Release(Sender<()>);

impl Release {
    pub fn release(self) {
        let _ = self.0.send(());
    }
}

impl Reply {
    /// Each event string is one piece.
    pub fn events(events: Vec<String>) -> Reply {
        Reply::pieces(events.into_iter().map(String::into_bytes).collect())
    }

    /// Raw pieces: they may split lines, even UTF-8 characters, anywhere.
    pub fn pieces(pieces: Vec<Vec<u8>>) -> Reply {
        Reply::Sse {
            pieces,
            end: End::Complete,
        }
    }

    /// A complete text answer: a few content deltas, finish "stop", usage, [DONE].
    pub fn text(text: &str) -> Reply {
        let mut events: Vec<String> = split_text(text).iter().map(|t| sse_text(t)).collect();
        events.push(sse_finish("stop"));
        events.push(sse_usage(100, 10, 0));
        events.push(done());
        Reply::events(events)
    }

    /// A complete tool-call answer: the calls streamed in fragments, finish "tool_calls",
    /// usage, [DONE].
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Reply {
        let mut events = vec![sse_tool_calls(calls)];
        events.push(sse_finish("tool_calls"));
        events.push(sse_usage(100, 10, 0));
        events.push(done());
        Reply::events(events)
    }

    /// Many calls of one tool in one reply, each `(id, arguments)` (floods and batches).
    pub fn calls_of(tool: &str, calls: &[(String, String)]) -> Reply {
        let calls: Vec<(&str, &str, &str)> = calls
            .iter()
            .map(|(id, args)| (id.as_str(), tool, args.as_str()))
            .collect();
        Reply::tool_calls(&calls)
    }

    /// Some text, then tool calls in the same reply.
    pub fn text_then_tool_calls(text: &str, calls: &[(&str, &str, &str)]) -> Reply {
        let mut events: Vec<String> = split_text(text).iter().map(|t| sse_text(t)).collect();
        events.push(sse_tool_calls(calls));
        events.push(sse_finish("tool_calls"));
        events.push(sse_usage(100, 10, 0));
        events.push(done());
        Reply::events(events)
    }

    /// An OpenAI error object with `status`.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: json!({"error": {"message": message, "type": "fake_error"}}).to_string(),
        }
    }

    /// A 200 whose body is not an event stream.
    pub fn body(status: u16, content_type: &str, body: &str) -> Reply {
        Reply::Status {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// Sends `events`, then closes without ending the body.
    pub fn cut(events: Vec<String>) -> Reply {
        Reply::Sse {
            pieces: events.into_iter().map(String::into_bytes).collect(),
            end: End::Cut,
        }
    }

    /// Sends `events`, then holds the connection open until released.
    pub fn hold(events: Vec<String>) -> (Reply, Release) {
        let (tx, rx) = mpsc::channel();
        let reply = Reply::Sse {
            pieces: events.into_iter().map(String::into_bytes).collect(),
            end: End::Hold(rx),
        };
        (reply, Release(tx))
    }

    /// Answers with `reply`, but only once released.
    pub fn gated(reply: Reply) -> (Reply, Release) {
        let (tx, rx) = mpsc::channel();
        (Reply::Gated(rx, Box::new(reply)), Release(tx))
    }

    /// Accepts the request and never answers until released.
    pub fn stall() -> (Reply, Release) {
        let (tx, rx) = mpsc::channel();
        (Reply::Stall(rx), Release(tx))
    }
}

fn split_text(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(4).map(|c| c.iter().collect()).collect()
}

/// One `data:` event with a `chat.completion.chunk` for choice 0.
pub fn sse_chunk(delta: Value, finish_reason: Option<&str>) -> String {
    sse_data(&json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }))
}

/// `data: <json>` and the blank line.
pub fn sse_data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

pub fn sse_text(text: &str) -> String {
    sse_chunk(json!({"content": text}), None)
}

pub fn sse_reasoning(text: &str) -> String {
    sse_chunk(json!({"reasoning_content": text}), None)
}

/// One tool-call delta; `None` leaves the field out.
pub fn sse_tool_delta(index: u64, id: Option<&str>, name: Option<&str>, args: &str) -> String {
    let mut call = json!({"index": index, "function": {"arguments": args}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    sse_chunk(json!({"tool_calls": [call]}), None)
}

/// The canonical shape: per call, a first delta with id, type, name and empty arguments,
/// then the arguments in two fragments.
pub fn sse_tool_calls(calls: &[(&str, &str, &str)]) -> String {
    let mut out = String::new();
    for (index, (id, name, args)) in calls.iter().enumerate() {
        let index = index as u64;
        out += &sse_tool_delta(index, Some(id), Some(name), "");
        let mid = args
            .char_indices()
            .map(|(i, _)| i)
            .nth(args.chars().count() / 2)
            .unwrap_or(args.len());
        out += &sse_tool_delta(index, None, None, &args[..mid]);
        out += &sse_tool_delta(index, None, None, &args[mid..]);
    }
    out
}

pub fn sse_finish(reason: &str) -> String {
    sse_chunk(json!({}), Some(reason))
}

/// A usage chunk (`choices: []`) in both DeepSeek and OpenAI fields.
pub fn sse_usage(prompt: u64, completion: u64, cache_hit: u64) -> String {
    sse_data(&json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_cache_hit_tokens": cache_hit,
            "prompt_cache_miss_tokens": prompt - cache_hit,
            "prompt_tokens_details": {"cached_tokens": cache_hit},
        },
    }))
}

pub fn done() -> String {
    "data: [DONE]\n\n".to_string()
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The JSON body, `Null` when empty, a string when not JSON.
    pub body: Value,
    /// When the body had been read and parsed.
    pub at: Instant,
    /// When the request line arrived: the client had finished building the request.
    pub arrived: Instant,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Computes a reply from every request so far (the current one last); consulted once the
/// scripted replies run out.
pub type Handler = Box<dyn FnMut(&[RecordedRequest]) -> Reply + Send>;

#[derive(Default)]
struct State {
    replies: Mutex<VecDeque<Reply>>,
    handler: Mutex<Option<Handler>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// When the reply to request n (from 1) was completely written, by request number.
    answered: Mutex<Vec<(usize, Instant)>>,
    violations: Mutex<Vec<String>>,
    /// Connections the client closed while the server was holding them open.
    client_hangups: Mutex<usize>,
    changed: Condvar,
}

pub struct FakeOpenAI {
    addr: SocketAddr,
    state: Arc<State>,
    stop: Arc<AtomicBool>,
}

impl FakeOpenAI {
    pub fn start(replies: Vec<Reply>) -> FakeOpenAI {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind fake server");
        let addr = listener.local_addr().expect("fake server address");
        let state = Arc::new(State::default());
        state.replies.lock().unwrap().extend(replies);
        let stop = Arc::new(AtomicBool::new(false));
        {
            let state = state.clone();
            let stop = stop.clone();
            thread::Builder::new()
                .name("fake-openai-accept".into())
                .spawn(move || accept_loop(listener, state, stop))
                .expect("spawn fake server");
        }
        FakeOpenAI { addr, state, stop }
    }

    /// A server that answers every request with `handler`, for conversations too long or too
    /// dynamic to script (e.g. usage figures computed from the request body).
    pub fn start_with(
        handler: impl FnMut(&[RecordedRequest]) -> Reply + Send + 'static,
    ) -> FakeOpenAI {
        let server = FakeOpenAI::start(Vec::new());
        *server.state.handler.lock().unwrap() = Some(Box::new(handler));
        server
    }

    /// `http://127.0.0.1:<port>/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends more scripted replies.
    pub fn push(&self, reply: Reply) {
        self.state.replies.lock().unwrap().push_back(reply);
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Blocks until at least `n` requests have arrived.
    pub fn wait_for_requests(&self, n: usize) -> Vec<RecordedRequest> {
        let guard = self.state.requests.lock().unwrap();
        let (guard, timeout) = self
            .state
            .changed
            .wait_timeout_while(guard, WAIT_LIMIT, |r| r.len() < n)
            .unwrap();
        assert!(
            !timeout.timed_out(),
            "waited for {n} requests, got {}",
            guard.len()
        );
        guard.clone()
    }

    /// Whether a request `n` arrives within `window`: to show that a client does not send
    /// it yet (a capped client must wait), since an absence can only be watched for a time.
    pub fn request_arrives_within(&self, n: usize, window: Duration) -> bool {
        let guard = self.state.requests.lock().unwrap();
        let (guard, _) = self
            .state
            .changed
            .wait_timeout_while(guard, window, |r| r.len() < n)
            .unwrap();
        guard.len() >= n
    }

    /// Blocks until the client has closed `n` held connections.
    pub fn wait_for_client_hangups(&self, n: usize) {
        let guard = self.state.client_hangups.lock().unwrap();
        let (guard, timeout) = self
            .state
            .changed
            .wait_timeout_while(guard, WAIT_LIMIT, |h| *h < n)
            .unwrap();
        assert!(
            !timeout.timed_out(),
            "waited for {n} client hang-ups, saw {}",
            *guard
        );
    }

    /// When each reply was completely written, indexed like [`FakeOpenAI::requests`]
    /// (`None` for a reply still being written).
    pub fn answer_times(&self) -> Vec<Option<Instant>> {
        let answered = self.state.answered.lock().unwrap();
        let count = self.state.requests.lock().unwrap().len();
        let mut times = vec![None; count];
        for &(number, at) in answered.iter() {
            if let Some(slot) = times.get_mut(number - 1) {
                *slot = Some(at);
            }
        }
        times
    }

    pub fn pairing_violations(&self) -> Vec<String> {
        self.state.violations.lock().unwrap().clone()
    }

    /// Takes the violations, so a test that sends unpaired histories on purpose can drop
    /// the server without failing.
    pub fn take_pairing_violations(&self) -> Vec<String> {
        std::mem::take(&mut *self.state.violations.lock().unwrap())
    }
}

impl Drop for FakeOpenAI {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so its thread ends.
        let _ = TcpStream::connect(self.addr);
        let violations = self.pairing_violations();
        if !violations.is_empty() && !thread::panicking() {
            panic!("tool-call pairing violations:\n{}", violations.join("\n"));
        }
    }
}

fn accept_loop(listener: TcpListener, state: Arc<State>, stop: Arc<AtomicBool>) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let state = state.clone();
        let _ = thread::Builder::new()
            .name("fake-openai-conn".into())
            .spawn(move || serve(stream, state));
    }
}

fn serve(stream: TcpStream, state: Arc<State>) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    if request.method == "POST" {
        let problems = pairing_problems(&request.body);
        if !problems.is_empty() {
            let n = state.requests.lock().unwrap().len() + 1;
            let mut violations = state.violations.lock().unwrap();
            violations.extend(problems.into_iter().map(|p| format!("request {n}: {p}")));
        }
    }
    let (number, computed) = {
        let mut requests = state.requests.lock().unwrap();
        requests.push(request);
        let scripted_left = !state.replies.lock().unwrap().is_empty();
        let computed = match state.handler.lock().unwrap().as_mut() {
            Some(handler) if !scripted_left => Some(handler(&requests)),
            _ => None,
        };
        (requests.len(), computed)
    };
    state.changed.notify_all();
    let reply = computed.or_else(|| state.replies.lock().unwrap().pop_front());
    let reply = reply.unwrap_or_else(|| {
        Reply::error(
            400,
            &format!("fake server: no reply scripted for request {number}"),
        )
    });
    let _ = respond(stream, reply, &state);
    state
        .answered
        .lock()
        .unwrap()
        .push((number, Instant::now()));
}

fn read_request(stream: &TcpStream) -> Option<RecordedRequest> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let arrived = Instant::now();
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()))
    };
    Some(RecordedRequest {
        method,
        path,
        headers,
        body,
        at: Instant::now(),
        arrived,
    })
}

fn respond(mut stream: TcpStream, reply: Reply, state: &State) -> std::io::Result<()> {
    match reply {
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
            if !headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            {
                head += "Content-Type: application/json\r\n";
            }
            for (name, value) in headers {
                head += &format!("{name}: {value}\r\n");
            }
            head += &format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes())?;
            stream.write_all(body.as_bytes())?;
            stream.flush()
        }
        Reply::Hangup => stream.shutdown(Shutdown::Both),
        Reply::Stall(release) => {
            hold_until_released_or_hangup(&stream, release, state);
            Ok(())
        }
        Reply::Gated(release, reply) => match release.recv() {
            Ok(()) => respond(stream, *reply, state),
            Err(_) => stream.shutdown(Shutdown::Both),
        },
        Reply::Sse { pieces, end } => {
            stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
                  Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
            )?;
            for piece in pieces.iter().filter(|p| !p.is_empty()) {
                stream.write_all(format!("{:x}\r\n", piece.len()).as_bytes())?;
                stream.write_all(piece)?;
                stream.write_all(b"\r\n")?;
                stream.flush()?;
            }
            match end {
                End::Complete => {
                    stream.write_all(b"0\r\n\r\n")?;
                    stream.flush()
                }
                End::Cut => stream.shutdown(Shutdown::Both),
                End::Hold(release) => {
                    hold_until_released_or_hangup(&stream, release, state);
                    Ok(())
                }
            }
        }
    }
}

/// Blocks until the test releases the reply (then cuts the connection) or the client hangs
/// up (counted, so tests can prove a cancel really closed the socket).
fn hold_until_released_or_hangup(stream: &TcpStream, release: Receiver<()>, state: &State) {
    let released = Arc::new(AtomicBool::new(false));
    if let Ok(watch) = stream.try_clone() {
        let released = released.clone();
        let _ = thread::Builder::new()
            .name("fake-openai-release".into())
            .spawn(move || {
                let _ = release.recv();
                released.store(true, Ordering::SeqCst);
                let _ = watch.shutdown(Shutdown::Both);
            });
    }
    let mut sink = [0u8; 512];
    let mut reader = stream;
    // The client sends nothing more: a read returns only when it closes or we shut down.
    while let Ok(n) = reader.read(&mut sink) {
        if n == 0 {
            break;
        }
    }
    if !released.load(Ordering::SeqCst) {
        *state.client_hangups.lock().unwrap() += 1;
        state.changed.notify_all();
    }
    let _ = stream.shutdown(Shutdown::Both);
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Panics with a clear message unless every assistant tool call in `body["messages"]` has
/// exactly one following tool result and every tool result answers a call.
pub fn assert_tool_pairing(body: &Value) {
    let problems = pairing_problems(body);
    assert!(
        problems.is_empty(),
        "tool-call pairing broken:\n{}\nmessages: {}",
        problems.join("\n"),
        serde_json::to_string_pretty(&body["messages"]).unwrap_or_default()
    );
}

/// The pairing problems of a chat request body, one sentence each (messages numbered from 1).
pub fn pairing_problems(body: &Value) -> Vec<String> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    let role = |i: usize| messages[i]["role"].as_str().unwrap_or("");
    let mut problems = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let calls = messages[i]["tool_calls"]
            .as_array()
            .filter(|c| !c.is_empty());
        match (role(i), calls) {
            ("assistant", Some(calls)) => {
                let mut j = i + 1;
                while j < messages.len() && role(j) == "tool" {
                    j += 1;
                }
                let results: Vec<(usize, &str)> = (i + 1..j)
                    .map(|k| (k, messages[k]["tool_call_id"].as_str().unwrap_or("")))
                    .collect();
                for call in calls {
                    let id = call["id"].as_str().unwrap_or("");
                    let count = results.iter().filter(|(_, r)| *r == id).count();
                    if count != 1 {
                        problems.push(format!(
                            "message {}: assistant tool call {id:?} ({}) has {count} tool results, expected 1",
                            i + 1,
                            call["function"]["name"].as_str().unwrap_or("?")
                        ));
                    }
                }
                for (k, result) in &results {
                    if !calls.iter().any(|c| c["id"].as_str() == Some(result)) {
                        problems.push(format!(
                            "message {}: tool result for {result:?} answers no call of message {}",
                            k + 1,
                            i + 1
                        ));
                    }
                }
                i = j;
            }
            ("tool", _) => {
                problems.push(format!(
                    "message {}: tool result for {:?} does not follow an assistant tool call",
                    i + 1,
                    messages[i]["tool_call_id"].as_str().unwrap_or("")
                ));
                i += 1;
            }
            _ => i += 1,
        }
    }
    problems
}

/// The prompt cache of a DeepSeek-like provider: a request's prompt is cached in units of
/// [`PrefixCache::UNIT_TOKENS`] tokens (four bytes each, as the fake servers count), and a
/// later request hits the longest unit-aligned prefix it shares with any earlier request.
/// Keeps one hash per unit boundary of every prompt seen, so a lookup reads the prompt once.
#[derive(Default)]
pub struct PrefixCache {
    /// (prefix length in bytes, FNV-1a of that prefix) for every unit boundary seen.
    units: std::collections::HashSet<(usize, u64)>,
}

impl PrefixCache {
    pub const UNIT_TOKENS: usize = 64;
    pub const BYTES_PER_TOKEN: usize = 4;

    pub fn new() -> PrefixCache {
        PrefixCache::default()
    }

    /// Looks `prompt` up and then caches it; returns (prompt tokens, cache-hit tokens) as the
    /// usage chunk reports them.
    pub fn serve(&mut self, prompt: &[u8]) -> (u64, u64) {
        let unit = Self::UNIT_TOKENS * Self::BYTES_PER_TOKEN;
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let mut hit = 0;
        let mut missed = false;
        for (i, chunk) in prompt.chunks(unit).enumerate() {
            if chunk.len() < unit {
                break;
            }
            hash = chunk.iter().fold(hash, |h, b| {
                (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
            });
            let key = ((i + 1) * unit, hash);
            if !missed && self.units.contains(&key) {
                hit = (i + 1) * unit;
            } else {
                missed = true;
                self.units.insert(key);
            }
        }
        let tokens = |bytes: usize| (bytes / Self::BYTES_PER_TOKEN) as u64;
        (tokens(prompt.len()), tokens(hit))
    }
}
