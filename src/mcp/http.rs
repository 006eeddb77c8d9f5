//! The streamable HTTP transport (`type = "http"` or `"streamable-http"`).
//!
//! Each request is a POST that accepts `application/json` and `text/event-stream`; a JSON reply
//! carries the response, an SSE reply carries it along with notifications and requests from the
//! server (parsed by the provider's SSE decoder). The `Mcp-Session-Id` from the `initialize`
//! reply is sent on every later request, `MCP-Protocol-Version` once negotiated, and the
//! session is deleted on close. After the handshake a standing GET stream receives what the
//! server sends outside any POST (a `roots/list` request, log messages).
//!
//! A server may close an SSE stream before the response once it has sent an event id; the
//! reply is then picked up with a GET carrying `Last-Event-ID` after the `retry:` delay. A 404
//! for a known session id is reported as [`McpError::SessionExpired`] so the client can
//! initialize again. TLS roots and proxies follow the provider rules (`provider::net`).
//!
//! A server behind OAuth gets the bearer token of its [`Authorizer`] on every request; a 401,
//! or a 403 asking for more scope, is handed to the authorizer and the request repeated once
//! it has a new token (refreshed or re-requested), a few times at most.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use ureq::Agent;

use super::jsonrpc::{self, Id, Message};
use super::oauth::{challenge, Authorizer};
use super::transport::{Inbox, Incoming, Transport};
use super::McpError;
use crate::provider::net::{self, Limits, Net};
use crate::provider::sse;

/// A JSON reply body larger than this is refused.
const MAX_BODY: u64 = 64 * 1024 * 1024;

/// The reconnection delay when the server names none (the TypeScript SDK's default).
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// How often a POST's reply is looked for on resumed streams before giving up.
const MAX_RESUMES: u32 = 5;

/// Standing GET streams that end without delivering anything before we stop reopening them.
const MAX_IDLE_STREAMS: u32 = 5;

/// Bounds on one-way POSTs (notifications, our answers) and on the closing DELETE.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(30);
const DELETE_TIMEOUT: Duration = Duration::from_secs(3);

/// Authorization retries of one request (a refresh, then step-ups).
const MAX_AUTH_RETRIES: u32 = 3;

const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const SESSION_HEADER: &str = "mcp-session-id";

/// What to connect to.
#[derive(Debug, Clone)]
pub struct HttpSpec {
    pub name: String,
    pub url: String,
    /// Static headers sent on every request (already `${VAR}`-expanded).
    pub headers: Vec<(String, String)>,
    pub connect_timeout: Duration,
    /// OAuth for this server; `None` when its headers already carry `Authorization`.
    pub auth: Option<Arc<Authorizer>>,
}

#[derive(Default)]
struct SessionState {
    session_id: Option<String>,
    protocol_version: Option<String>,
    closed: bool,
}

/// State shared with the POST and GET threads.
struct Shared {
    spec: HttpSpec,
    net: Net,
    inbox: Inbox,
    session: Mutex<SessionState>,
    /// Signalled on close, so waits between reconnects end at once.
    wake: Condvar,
    /// Agents with an exchange in flight, shut down on close so no read outlives the session.
    agents: Mutex<Vec<(u64, Agent)>>,
    next_agent: AtomicU64,
}

pub struct HttpTransport {
    shared: Arc<Shared>,
}

/// Which kind of body a reply has.
enum BodyKind {
    Json,
    Sse,
    Empty,
}

/// What reading one SSE stream found.
#[derive(Default)]
struct StreamEnd {
    answered: bool,
    last_event_id: Option<String>,
    retry: Option<Duration>,
    events: u32,
}

impl HttpTransport {
    pub fn connect(spec: HttpSpec, inbox: Inbox) -> Result<HttpTransport, McpError> {
        net::parse_url(&spec.url).map_err(|e| McpError::Config(provider_detail(&e)))?;
        let net = Net::for_url(&spec.url, None, spec.connect_timeout)
            .map_err(|e| McpError::Config(provider_detail(&e)))?;
        Ok(HttpTransport {
            shared: Arc::new(Shared {
                spec,
                net,
                inbox,
                session: Mutex::new(SessionState::default()),
                wake: Condvar::new(),
                agents: Mutex::new(Vec::new()),
                next_agent: AtomicU64::new(0),
            }),
        })
    }
}

fn provider_detail(err: &crate::provider::ProviderError) -> String {
    let text = err.to_string();
    text.strip_prefix("provider: ").unwrap_or(&text).to_string()
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, SessionState> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Waits up to `limit` or until close; true when closed.
    fn pause(&self, limit: Duration) -> bool {
        let state = self.lock();
        let (state, _) = self
            .wake
            .wait_timeout_while(state, limit, |s| !s.closed)
            .unwrap_or_else(PoisonError::into_inner);
        state.closed
    }

    fn headers(&self, accept: &str, last_event_id: Option<&str>) -> Vec<(String, String)> {
        let mut headers = vec![
            ("Accept".to_string(), accept.to_string()),
            ("User-Agent".to_string(), crate::user_agent()),
        ];
        let state = self.lock();
        if let Some(id) = &state.session_id {
            headers.push(("Mcp-Session-Id".into(), id.clone()));
        }
        if let Some(version) = &state.protocol_version {
            headers.push(("MCP-Protocol-Version".into(), version.clone()));
        }
        drop(state);
        if let Some(id) = last_event_id {
            headers.push(("Last-Event-ID".into(), id.to_string()));
        }
        headers.extend(self.spec.headers.iter().cloned());
        headers
    }

    /// An agent registered for shutdown on close; the guard unregisters it.
    fn agent(self: &Arc<Self>, limits: Limits) -> Result<(Agent, AgentGuard), McpError> {
        let agent = self
            .net
            .agent(&self.spec.url, limits)
            .map_err(|e| McpError::Config(provider_detail(&e)))?;
        let key = self.next_agent.fetch_add(1, Ordering::SeqCst);
        self.agents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((key, agent.clone()));
        Ok((
            agent,
            AgentGuard {
                shared: Arc::clone(self),
                key,
            },
        ))
    }

    fn post(
        self: &Arc<Self>,
        body: &str,
        limits: Limits,
    ) -> Result<(ureq::http::Response<ureq::Body>, AgentGuard, bool), McpError> {
        let (agent, guard) = self.agent(limits)?;
        let headers = self.headers(ACCEPT_BOTH, None);
        let had_session = headers.iter().any(|(n, _)| n == "Mcp-Session-Id");
        let response = self.authorized(|bearer| {
            let mut request = agent
                .post(&self.spec.url)
                .header("Content-Type", "application/json");
            for (name, value) in headers.iter().chain(bearer) {
                request = request.header(name.as_str(), value.as_str());
            }
            request
                .send(body.as_bytes())
                .map_err(|e| self.transport_error(&e))
        })?;
        if let Some(id) = net::header(&response, SESSION_HEADER) {
            self.lock().session_id = Some(id);
        }
        Ok((response, guard, had_session))
    }

    /// Sends with the authorizer's bearer token (when the server has one) and lets it answer
    /// a 401, or a 403 asking for more scope, before sending again.
    fn authorized(
        &self,
        send: impl Fn(Option<&(String, String)>) -> Result<ureq::http::Response<ureq::Body>, McpError>,
    ) -> Result<ureq::http::Response<ureq::Body>, McpError> {
        let Some(auth) = &self.spec.auth else {
            return send(None);
        };
        let mut retries = 0;
        loop {
            let (token, generation) = auth.bearer();
            let header = token.map(|t| ("Authorization".to_string(), format!("Bearer {t}")));
            let response = send(header.as_ref())?;
            let status = response.status().as_u16();
            let www = net::header(&response, "www-authenticate");
            let step_up = status == 403
                && www
                    .as_deref()
                    .is_some_and(|h| challenge::parse(h).insufficient_scope());
            if (status != 401 && !step_up) || retries == MAX_AUTH_RETRIES {
                return Ok(response);
            }
            retries += 1;
            auth.challenged(status, www.as_deref(), generation)?;
        }
    }

    fn transport_error(&self, err: &ureq::Error) -> McpError {
        if self.is_closed() {
            return McpError::Closed("the connection is closed".into());
        }
        McpError::Network(net::describe_transport_error(err, &self.spec.url))
    }

    /// Checks the status of a reply and says what its body holds.
    fn classify(
        &self,
        response: &mut ureq::http::Response<ureq::Body>,
        had_session: bool,
    ) -> Result<BodyKind, McpError> {
        let status = response.status().as_u16();
        if status == 404 && had_session {
            return Err(McpError::SessionExpired);
        }
        if !(200..300).contains(&status) {
            let mut text = String::new();
            let _ = response
                .body_mut()
                .as_reader()
                .take(64 * 1024)
                .read_to_string(&mut text);
            return Err(McpError::Http {
                status,
                detail: crate::text::one_line(&net::error_message(&text), 200),
            });
        }
        if status == 202 || status == 204 {
            return Ok(BodyKind::Empty);
        }
        let content_type = net::header(response, "content-type").unwrap_or_default();
        if content_type.starts_with("text/event-stream") {
            Ok(BodyKind::Sse)
        } else {
            Ok(BodyKind::Json)
        }
    }

    /// Delivers the messages of a JSON body; true when one of them answers `expect`.
    fn read_json(
        &self,
        response: ureq::http::Response<ureq::Body>,
        expect: Option<&Id>,
    ) -> Result<bool, McpError> {
        let mut text = String::new();
        response
            .into_body()
            .into_reader()
            .take(MAX_BODY)
            .read_to_string(&mut text)
            .map_err(|e| McpError::io("reading the reply", e))?;
        if text.trim().is_empty() {
            return Ok(false);
        }
        match jsonrpc::parse_batch(&text) {
            Ok(messages) => Ok(self.deliver(messages, expect)),
            Err(err) => Err(McpError::Protocol(format!("the reply is {err}"))),
        }
    }

    /// Reads an SSE body to its end, delivering every message.
    fn read_sse(
        &self,
        response: ureq::http::Response<ureq::Body>,
        expect: Option<&Id>,
    ) -> StreamEnd {
        let mut reader = response.into_body().into_reader();
        let mut decoder = sse::Decoder::new();
        let mut end = StreamEnd::default();
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    if !self.is_closed() {
                        let _ = self
                            .inbox
                            .send(Incoming::Log(format!("event stream ended: {e}")));
                    }
                    break;
                }
            };
            for event in decoder.feed(&buf[..n]) {
                self.handle_event(event, expect, &mut end);
            }
            if end.answered && expect.is_some() {
                break;
            }
        }
        if let Some(event) = decoder.finish() {
            self.handle_event(event, expect, &mut end);
        }
        end.retry = decoder.retry().map(Duration::from_millis);
        end
    }

    fn handle_event(&self, event: sse::Event, expect: Option<&Id>, end: &mut StreamEnd) {
        if !event.id.is_empty() {
            end.last_event_id = Some(event.id.clone());
        }
        // Priming events carry an id and empty data (2025-11-25); there is nothing to parse.
        if event.data.trim().is_empty() || event.event != "message" {
            return;
        }
        end.events += 1;
        match jsonrpc::parse_batch(&event.data) {
            Ok(messages) => end.answered |= self.deliver(messages, expect),
            Err(err) => {
                let _ = self.inbox.send(Incoming::Garbage(err.to_string()));
            }
        }
    }

    fn deliver(&self, messages: Vec<Message>, expect: Option<&Id>) -> bool {
        let mut answered = false;
        for message in messages {
            if let (Message::Response { id, .. }, Some(expect)) = (&message, expect) {
                answered |= id == expect;
            }
            let _ = self.inbox.send(Incoming::Message(message));
        }
        answered
    }

    /// A request: POST, then read the reply (resuming the stream if the server cut it).
    fn exchange(self: &Arc<Self>, id: &Id, body: &str) -> Result<(), McpError> {
        let (mut response, _guard, had_session) = self.post(body, Limits::default())?;
        let kind = self.classify(&mut response, had_session)?;
        let mut end = match kind {
            BodyKind::Json => {
                return match self.read_json(response, Some(id))? {
                    true => Ok(()),
                    false => Err(McpError::Protocol(
                        "the server's reply holds no response to the request".into(),
                    )),
                };
            }
            BodyKind::Empty => {
                return Err(McpError::Protocol(
                    "the server accepted the request but sent no response".into(),
                ))
            }
            BodyKind::Sse => self.read_sse(response, Some(id)),
        };
        let mut resumes = 0;
        while !end.answered {
            let Some(last_id) = end.last_event_id.clone() else {
                return Err(McpError::Closed(
                    "the server closed the event stream before answering".into(),
                ));
            };
            if resumes == MAX_RESUMES {
                return Err(McpError::Closed(format!(
                    "no response after resuming the event stream {MAX_RESUMES} times"
                )));
            }
            resumes += 1;
            if self.pause(end.retry.unwrap_or(DEFAULT_RETRY)) {
                return Err(McpError::Closed("the connection is closed".into()));
            }
            let previous = end.last_event_id.clone();
            end = self.resume(&last_id, id)?;
            if end.last_event_id.is_none() {
                end.last_event_id = previous;
            }
        }
        Ok(())
    }

    /// `GET` with `Last-Event-ID`: the server replays what we missed on that stream.
    fn resume(self: &Arc<Self>, last_id: &str, expect: &Id) -> Result<StreamEnd, McpError> {
        let (mut response, _guard) = self.get(Some(last_id))?;
        match self.classify(&mut response, false)? {
            BodyKind::Sse => Ok(self.read_sse(response, Some(expect))),
            _ => Err(McpError::Protocol(
                "resuming the event stream did not return an event stream".into(),
            )),
        }
    }

    /// The guard keeps the agent registered for shutdown while the caller reads the body.
    fn get(
        self: &Arc<Self>,
        last_event_id: Option<&str>,
    ) -> Result<(ureq::http::Response<ureq::Body>, AgentGuard), McpError> {
        let (agent, guard) = self.agent(Limits::default())?;
        let headers = self.headers("text/event-stream", last_event_id);
        let response = self.authorized(|bearer| {
            let mut request = agent.get(&self.spec.url);
            for (name, value) in headers.iter().chain(bearer) {
                request = request.header(name.as_str(), value.as_str());
            }
            request.call().map_err(|e| self.transport_error(&e))
        })?;
        Ok((response, guard))
    }

    /// The standing GET stream for messages the server sends outside a POST.
    fn listen(self: &Arc<Self>) {
        let mut last_id: Option<String> = None;
        let mut idle = 0;
        while !self.is_closed() && idle < MAX_IDLE_STREAMS {
            let (mut response, _guard) = match self.get(last_id.as_deref()) {
                Ok(pair) => pair,
                Err(err) => {
                    self.log(format!("standing event stream failed: {err}"));
                    idle += 1;
                    if self.pause(DEFAULT_RETRY) {
                        return;
                    }
                    continue;
                }
            };
            match self.classify(&mut response, false) {
                Ok(BodyKind::Sse) => {}
                Ok(_) => return self.log("the server offers no standing event stream".into()),
                Err(err) => {
                    // 405 means the server does not offer one, which the spec allows.
                    return self.log(format!("no standing event stream: {err}"));
                }
            }
            let end = self.read_sse(response, None);
            if end.last_event_id.is_some() {
                last_id = end.last_event_id;
            }
            idle = if end.events == 0 { idle + 1 } else { 0 };
            if self.pause(end.retry.unwrap_or(DEFAULT_RETRY)) {
                return;
            }
        }
    }

    fn log(&self, line: String) {
        let _ = self.inbox.send(Incoming::Log(line));
    }

    fn delete_session(self: &Arc<Self>) {
        let Some(session) = self.lock().session_id.clone() else {
            return;
        };
        let limits = Limits {
            per_read: None,
            total: Some(DELETE_TIMEOUT),
        };
        // Not registered for shutdown: close() shuts the others down before this runs.
        let Ok(agent) = self.net.agent(&self.spec.url, limits) else {
            return;
        };
        let mut request = agent
            .delete(&self.spec.url)
            .header("Mcp-Session-Id", session.as_str());
        for (name, value) in &self.spec.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        if let Some((Some(token), _)) = self.spec.auth.as_ref().map(|a| a.bearer()) {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        // Servers that do not support deletion answer 405, which is fine.
        let _ = request.call();
    }
}

struct AgentGuard {
    shared: Arc<Shared>,
    key: u64,
}

impl Drop for AgentGuard {
    fn drop(&mut self) {
        self.shared
            .agents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(k, _)| *k != self.key);
    }
}

impl Transport for HttpTransport {
    fn call(&self, request: &Message) -> Result<(), McpError> {
        let Message::Request { id, .. } = request else {
            return self.notify(request);
        };
        if self.shared.is_closed() {
            return Err(McpError::Closed("the connection is closed".into()));
        }
        let (shared, id, body) = (Arc::clone(&self.shared), id.clone(), request.to_json());
        std::thread::Builder::new()
            .name(super::thread_name(&self.shared.spec.name, "post"))
            .spawn(move || {
                if let Err(error) = shared.exchange(&id, &body) {
                    let _ = shared.inbox.send(Incoming::Failed { id, error });
                }
            })
            .map(drop)
            .map_err(|e| McpError::io("starting a thread", e))
    }

    fn notify(&self, message: &Message) -> Result<(), McpError> {
        if self.shared.is_closed() {
            return Err(McpError::Closed("the connection is closed".into()));
        }
        let limits = Limits {
            per_read: None,
            total: Some(NOTIFY_TIMEOUT),
        };
        let (mut response, _guard, had_session) = self.shared.post(&message.to_json(), limits)?;
        match self.shared.classify(&mut response, had_session)? {
            BodyKind::Empty => {}
            // A notification (or our answer to a server's request) has no response, but some
            // servers send one anyway: the conformance suite answers
            // `notifications/initialized` with `{"jsonrpc":"2.0","result":{}}`, which has no
            // id. Be liberal, as the reference SDK clients are: what parses is delivered, the
            // rest goes to the debug log and the server stays up.
            BodyKind::Json => {
                if let Err(err) = self.shared.read_json(response, None) {
                    let sent = match message {
                        Message::Notification { method, .. } => method.as_str(),
                        _ => "a one-way message",
                    };
                    self.shared
                        .log(format!("ignored the reply to {sent}: {err}"));
                }
            }
            BodyKind::Sse => {
                self.shared.read_sse(response, None);
            }
        }
        Ok(())
    }

    fn close(&self) {
        {
            let mut state = self.shared.lock();
            if state.closed {
                return;
            }
            state.closed = true;
        }
        self.shared.wake.notify_all();
        let agents = std::mem::take(
            &mut *self
                .shared
                .agents
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for (_, agent) in agents {
            agent.shutdown();
        }
        self.shared.delete_session();
    }

    fn negotiated(&self, protocol_version: &str) {
        self.shared.lock().protocol_version = Some(protocol_version.to_string());
    }

    fn ready(&self) {
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name(super::thread_name(&self.shared.spec.name, "get"))
            .spawn(move || shared.listen());
        if let Err(e) = spawned {
            self.shared
                .log(format!("cannot open the standing event stream: {e}"));
        }
    }

    fn reset_session(&self) {
        let mut state = self.shared.lock();
        state.session_id = None;
        state.protocol_version = None;
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.close();
    }
}
