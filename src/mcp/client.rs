//! The MCP client core, written once for every transport: request ids and their correlation by
//! a dispatcher thread, answers to the server's own requests (`ping`, `roots/list`; anything
//! else is "method not found"; `elicitation/create` goes to the [`Elicitor`] on a thread of its
//! own), notifications (`tools/list_changed` marks the tool list stale; progress and log
//! messages go to the debug log and the event channel; `elicitation/complete` ends the wait for
//! a URL elicitation it knows), timeouts and cancellation (both send `notifications/cancelled`),
//! a request the server refuses with `URLElicitationRequiredError` (the person opens the URLs,
//! the request is sent again once), and the typed MCP calls: the `initialize` handshake,
//! paginated lists, `tools/call`, `prompts/get` and `resources/read`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::elicit::{self, Answer, Elicitor};
use super::jsonrpc::{Id, Message, RpcError, INVALID_PARAMS, METHOD_NOT_FOUND};
use super::log::Log;
use super::transport::{Inbox, Incoming, Transport};
use super::McpError;
use crate::cancel::CancelToken;

/// The version we offer in `initialize`.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Every version we accept in the server's answer, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// A paginated list stops after this many pages (a server looping on cursors).
const MAX_PAGES: usize = 1000;

/// URL elicitations whose completion notice is awaited, at most (the oldest is forgotten
/// first): a server that never sends the notice must not grow the list without bound.
const MAX_AWAITED: usize = 64;

/// Something a server reported that a user interface may show.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    Progress {
        server: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    Log {
        server: String,
        level: String,
        text: String,
    },
}

/// The log levels (RFC 5424, as MCP names them) reported even where no UI shows server
/// events: warning and worse.
pub fn reported_level(level: &str) -> bool {
    ["warning", "error", "critical", "alert", "emergency"].contains(&level)
}

/// What the client needs besides a transport.
#[derive(Clone, Default)]
pub struct ClientOptions {
    /// The server's name, for messages and logs.
    pub name: String,
    /// Directories offered to the server through `roots/list`.
    pub roots: Vec<PathBuf>,
    /// Do not declare the roots capability (`roots = []` in the config).
    pub no_roots: bool,
    pub events: Option<Sender<ServerEvent>>,
    /// Without `events` (no UI shows them): where the warnings and worse among them wait for
    /// the run to report them. A bounded queue: when it is full, more are dropped (the MCP log
    /// keeps them), so a server that floods costs no memory.
    pub warnings: Option<SyncSender<ServerEvent>>,
    pub log: Log,
    /// Who answers `elicitation/create`; `None` declines every request (headless runs).
    pub elicitor: Option<Arc<dyn Elicitor>>,
}

/// How long a request may take, and what may cancel it.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// `None` waits as long as the server takes.
    pub timeout: Option<Duration>,
    pub cancel: Option<CancelToken>,
}

impl CallOptions {
    pub fn timeout(timeout: Duration) -> CallOptions {
        CallOptions {
            timeout: Some(timeout),
            cancel: None,
        }
    }
}

/// What the server said about itself in `initialize`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerInfo {
    pub protocol_version: String,
    pub name: String,
    pub version: String,
    pub capabilities: Value,
    pub instructions: Option<String>,
}

impl ServerInfo {
    /// Whether the server declared a capability (`tools`, `prompts`, `resources`, ...).
    pub fn has(&self, capability: &str) -> bool {
        self.capabilities
            .get(capability)
            .is_some_and(|v| !v.is_null())
    }
}

/// One pending request's outcome.
enum Reply {
    Result(Value),
    Error(RpcError),
    Failed(McpError),
}

#[derive(Default)]
struct State {
    pending: HashMap<Id, Sender<Reply>>,
    /// Why the connection ended; set once, after which every request fails at once.
    closed: Option<String>,
}

struct Inner {
    options: ClientOptions,
    transport: Box<dyn Transport>,
    state: Mutex<State>,
    next_id: AtomicI64,
    tools_stale: AtomicBool,
    info: Mutex<Option<ServerInfo>>,
    /// URL elicitations the person agreed to, by `elicitationId`, each with the token that
    /// `notifications/elicitation/complete` cancels.
    awaited: Mutex<Vec<(String, CancelToken)>>,
}

/// A connection to one MCP server. Dropping it closes the transport.
pub struct Client {
    inner: Arc<Inner>,
    shutdown: Inbox,
}

impl Client {
    /// Builds the transport with `connect` (given the inbox it must deliver to) and starts the
    /// dispatcher. No message is sent yet; call [`Client::initialize`].
    pub fn start(
        options: ClientOptions,
        connect: impl FnOnce(Inbox) -> Result<Box<dyn Transport>, McpError>,
    ) -> Result<Client, McpError> {
        let (tx, rx) = mpsc::channel();
        let transport = connect(tx.clone())?;
        let inner = Arc::new(Inner {
            options,
            transport,
            state: Mutex::new(State::default()),
            next_id: AtomicI64::new(1),
            tools_stale: AtomicBool::new(false),
            info: Mutex::new(None),
            awaited: Mutex::new(Vec::new()),
        });
        let dispatcher = Arc::clone(&inner);
        std::thread::Builder::new()
            .name(super::thread_name(&inner.options.name, "rx"))
            .spawn(move || dispatch(dispatcher, rx))
            .map_err(|e| McpError::io("starting a thread", e))?;
        Ok(Client {
            inner,
            shutdown: tx,
        })
    }

    pub fn name(&self) -> &str {
        &self.inner.options.name
    }

    /// The handshake: `initialize`, version check, `notifications/initialized`.
    pub fn initialize(&self, options: &CallOptions) -> Result<ServerInfo, McpError> {
        let mut capabilities = json!({"elicitation": {"form": {}, "url": {}}});
        if !self.inner.options.no_roots {
            capabilities["roots"] = json!({"listChanged": false});
        }
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": capabilities,
            "clientInfo": {"name": "reasonix", "version": crate::VERSION},
        });
        let result = self
            .inner
            .request_once("initialize", Some(params), options)?;
        let info = parse_server_info(&result)?;
        self.inner.transport.negotiated(&info.protocol_version);
        self.notify("notifications/initialized", None)?;
        self.inner.transport.ready();
        *self
            .inner
            .info
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(info.clone());
        Ok(info)
    }

    /// What `initialize` returned, once it has.
    pub fn info(&self) -> Option<ServerInfo> {
        self.inner
            .info
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sends a request and waits for its result. A request the server refuses until URL
    /// elicitations are done (`-32042`) is sent again once after the person did them.
    pub fn request(
        &self,
        method: &str,
        params: Option<Value>,
        options: &CallOptions,
    ) -> Result<Value, McpError> {
        match self.request_in_session(method, params.clone(), options) {
            Err(McpError::Rpc(error)) if error.code == elicit::URL_ELICITATION_REQUIRED => {
                self.browser_steps(&error, options)?;
                self.request_in_session(method, params, options)
            }
            other => other,
        }
    }

    /// A request; a session the HTTP server forgot is initialized again once and the request
    /// repeated.
    fn request_in_session(
        &self,
        method: &str,
        params: Option<Value>,
        options: &CallOptions,
    ) -> Result<Value, McpError> {
        match self.inner.request_once(method, params.clone(), options) {
            Err(McpError::SessionExpired) => {
                self.inner
                    .log("the server forgot our session; initializing again");
                self.inner.transport.reset_session();
                self.initialize(options)?;
                self.inner.request_once(method, params, options)
            }
            other => other,
        }
    }

    /// The URL elicitations of a `URLElicitationRequiredError`, one after another: the person
    /// agrees to open the URL, then waits for the server's completion notice or says it is
    /// done. Ok when the request may be sent again.
    fn browser_steps(&self, error: &RpcError, options: &CallOptions) -> Result<(), McpError> {
        let name = &self.inner.options.name;
        let requests = elicit::required(name, error).map_err(McpError::Protocol)?;
        let Some(elicitor) = &self.inner.options.elicitor else {
            // No one here can open a URL; the person reads it in the log, the model does not
            // (it must not fetch it on its own).
            for request in &requests {
                if let elicit::Mode::Url { url, .. } = &request.mode {
                    let text = format!(
                        "needs a step in the browser that this run cannot offer: {} ({url})",
                        crate::text::one_line(&request.message, 200)
                    );
                    self.inner.log(&text);
                    self.inner.emit(ServerEvent::Log {
                        server: name.clone(),
                        level: "warning".into(),
                        text,
                    });
                }
            }
            return Err(McpError::BrowserStep(format!(
                "the server needs the user to finish a step in the browser first ({}); this run \
                 cannot ask them: use the chat or `reasonix mcp call` on a terminal",
                crate::text::one_line(&requests[0].message, 200)
            )));
        };
        // Every id is awaited before anyone is asked: the server may finish early.
        let awaited: Vec<CancelToken> = requests
            .iter()
            .filter_map(|r| match &r.mode {
                elicit::Mode::Url { id, .. } => Some(self.inner.await_completion(id)),
                elicit::Mode::Form(_) => None,
            })
            .collect();
        let outcome = requests
            .iter()
            .zip(&awaited)
            .try_for_each(|(request, complete)| {
                match elicitor.elicit(request) {
                    Answer::Opened => {}
                    Answer::Cancel => return Err(McpError::Cancelled),
                    _ => {
                        return Err(McpError::BrowserStep(format!(
                            "the user declined the server's step in the browser ({})",
                            crate::text::one_line(&request.message, 200)
                        )))
                    }
                }
                // The wait ends with the notice, the person, or the cancelled call.
                let wake = CancelToken::new();
                let woken = wake.clone();
                let _complete = complete.on_cancel(move || woken.cancel());
                let _cancel = options.cancel.as_ref().map(|cancel| {
                    let woken = wake.clone();
                    cancel.on_cancel(move || woken.cancel())
                });
                let waited = elicitor.wait(request, &wake);
                if options
                    .cancel
                    .as_ref()
                    .is_some_and(CancelToken::is_cancelled)
                {
                    return Err(McpError::Cancelled);
                }
                match waited {
                    elicit::Waited::Complete | elicit::Waited::Retry => Ok(()),
                    elicit::Waited::Cancel => Err(McpError::Cancelled),
                }
            });
        self.inner.forget_awaited(&requests);
        outcome
    }

    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), McpError> {
        self.inner
            .transport
            .notify(&Message::notification(method, params))
    }

    /// Every item of a paginated list (`tools/list` -> `tools`, ...), following `nextCursor`.
    pub fn list_all(
        &self,
        method: &str,
        key: &str,
        options: &CallOptions,
    ) -> Result<Vec<Value>, McpError> {
        let started = Instant::now();
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let page_options = remaining(options, started)?;
            let page = self.request(method, params, &page_options)?;
            match page.get(key) {
                Some(Value::Array(list)) => items.extend(list.iter().cloned()),
                Some(_) => {
                    return Err(McpError::Protocol(format!(
                        "`{method}` returned `{key}` that is not a list"
                    )))
                }
                None => {}
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() && cursor.as_deref() != Some(next) => {
                    cursor = Some(next.to_string())
                }
                _ => return Ok(items),
            }
        }
        Err(McpError::Protocol(format!(
            "`{method}` still had more pages after {MAX_PAGES}"
        )))
    }

    /// `tools/list`, every page. Clears the stale mark first, so a `list_changed` that arrives
    /// while listing marks the new list stale again.
    pub fn list_tools(&self, options: &CallOptions) -> Result<Vec<Value>, McpError> {
        self.inner.tools_stale.store(false, Ordering::SeqCst);
        self.list_all("tools/list", "tools", options)
    }

    /// True once after the server announced that its tool list changed.
    pub fn take_tools_stale(&self) -> bool {
        self.inner.tools_stale.swap(false, Ordering::SeqCst)
    }

    /// `tools/call` with a progress token, so servers that report progress do.
    pub fn call_tool(
        &self,
        name: &str,
        arguments: &Value,
        options: &CallOptions,
    ) -> Result<Value, McpError> {
        let token = format!("reasonix-{}", self.inner.next_id.load(Ordering::SeqCst));
        let params = json!({
            "name": name,
            "arguments": arguments,
            "_meta": {"progressToken": token},
        });
        self.request("tools/call", Some(params), options)
    }

    pub fn get_prompt(
        &self,
        name: &str,
        arguments: &serde_json::Map<String, Value>,
        options: &CallOptions,
    ) -> Result<Value, McpError> {
        let params = json!({"name": name, "arguments": arguments});
        self.request("prompts/get", Some(params), options)
    }

    pub fn read_resource(&self, uri: &str, options: &CallOptions) -> Result<Value, McpError> {
        self.request("resources/read", Some(json!({ "uri": uri })), options)
    }

    /// `prompts/list` or `resources/list` when the server declared the capability; an empty
    /// list when it did not or answers "method not found" anyway.
    pub fn list_optional(
        &self,
        capability: &str,
        options: &CallOptions,
    ) -> Result<Vec<Value>, McpError> {
        if !self.info().is_some_and(|info| info.has(capability)) {
            return Ok(Vec::new());
        }
        let method = format!("{capability}/list");
        match self.list_all(&method, capability, options) {
            Err(McpError::Rpc(e)) if e.code == METHOD_NOT_FOUND => Ok(Vec::new()),
            other => other,
        }
    }

    /// Why the connection ended, if it has.
    pub fn closed_reason(&self) -> Option<String> {
        self.inner.lock().closed.clone()
    }

    /// Recent diagnostic lines from the transport (a stdio server's stderr).
    pub fn diagnostics(&self) -> Vec<String> {
        self.inner.transport.diagnostics()
    }
}

impl Client {
    /// Closes the transport, fails whatever is pending and stops the dispatcher. Idempotent.
    pub fn shutdown(&self) {
        self.inner.transport.close();
        self.inner.close_all("the connection was shut down".into());
        let _ = self.shutdown.send(Incoming::Shutdown);
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The options for the next page: what is left of the overall timeout.
fn remaining(options: &CallOptions, started: Instant) -> Result<CallOptions, McpError> {
    let timeout = match options.timeout {
        Some(limit) => Some(
            limit
                .checked_sub(started.elapsed())
                .ok_or(McpError::Timeout {
                    method: "list".into(),
                    seconds: limit.as_secs_f64(),
                })?,
        ),
        None => None,
    };
    Ok(CallOptions {
        timeout,
        cancel: options.cancel.clone(),
    })
}

fn parse_server_info(result: &Value) -> Result<ServerInfo, McpError> {
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            McpError::Protocol("the `initialize` result names no protocolVersion".into())
        })?;
    if !SUPPORTED_VERSIONS.contains(&version) {
        return Err(McpError::Protocol(format!(
            "the server speaks MCP {version}, which reasonix does not support (supported: {})",
            SUPPORTED_VERSIONS.join(", ")
        )));
    }
    let server = result.get("serverInfo");
    let text = |key: &str| {
        server
            .and_then(|s| s.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    Ok(ServerInfo {
        protocol_version: version.to_string(),
        name: text("name"),
        version: text("version"),
        capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
        instructions: result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn log(&self, line: &str) {
        self.options.log.line(&self.options.name, line);
    }

    fn request_once(
        &self,
        method: &str,
        params: Option<Value>,
        options: &CallOptions,
    ) -> Result<Value, McpError> {
        let id = Id::Number(self.next_id.fetch_add(1, Ordering::SeqCst));
        let (tx, rx) = mpsc::channel();
        {
            let mut state = self.lock();
            if let Some(reason) = &state.closed {
                return Err(McpError::Closed(reason.clone()));
            }
            state.pending.insert(id.clone(), tx.clone());
        }
        let _cancel_hook = options.cancel.as_ref().map(|cancel| {
            cancel.on_cancel(move || {
                let _ = tx.send(Reply::Failed(McpError::Cancelled));
            })
        });
        if let Err(err) = self
            .transport
            .call(&Message::request(id.clone(), method, params))
        {
            self.lock().pending.remove(&id);
            return Err(err);
        }
        let outcome = wait(&rx, options.timeout);
        match outcome {
            Some(Reply::Result(value)) => Ok(value),
            Some(Reply::Error(error)) => Err(McpError::Rpc(error)),
            Some(Reply::Failed(McpError::Cancelled)) => {
                self.abandon(&id, method, "cancelled by the user");
                Err(McpError::Cancelled)
            }
            Some(Reply::Failed(error)) => Err(error),
            None => {
                self.abandon(&id, method, "timed out");
                Err(McpError::Timeout {
                    method: method.to_string(),
                    seconds: options.timeout.map_or(0.0, |t| t.as_secs_f64()),
                })
            }
        }
    }

    /// Forgets a request we stopped waiting for and tells the server (never for `initialize`,
    /// which the protocol says must not be cancelled).
    fn abandon(&self, id: &Id, method: &str, reason: &str) {
        self.lock().pending.remove(id);
        if method == "initialize" {
            return;
        }
        let params = json!({"requestId": id.to_value(), "reason": reason});
        let _ = self.transport.notify(&Message::notification(
            "notifications/cancelled",
            Some(params),
        ));
    }

    fn complete(&self, id: Id, result: Result<Value, RpcError>) {
        let waiter = self.lock().pending.remove(&id);
        match waiter {
            Some(tx) => {
                let _ = tx.send(match result {
                    Ok(value) => Reply::Result(value),
                    Err(error) => Reply::Error(error),
                });
            }
            None => self.log(&format!("ignored a response with unknown id {id}")),
        }
    }

    fn fail(&self, id: Id, error: McpError) {
        if let Some(tx) = self.lock().pending.remove(&id) {
            let _ = tx.send(Reply::Failed(error));
        }
    }

    fn close_all(&self, reason: String) {
        let pending = {
            let mut state = self.lock();
            if state.closed.is_none() {
                state.closed = Some(reason.clone());
            }
            std::mem::take(&mut state.pending)
        };
        for (_, tx) in pending {
            let _ = tx.send(Reply::Failed(McpError::Closed(reason.clone())));
        }
    }

    /// Answers a request the server made of us.
    fn answer(&self, id: Id, method: &str) {
        let result = match method {
            "ping" => Ok(json!({})),
            "roots/list" => Ok(json!({ "roots": self.roots() })),
            other => {
                self.log(&format!(
                    "answered the server's `{other}` request with method not found"
                ));
                Err(RpcError::new(
                    METHOD_NOT_FOUND,
                    format!("Method not found: {other}"),
                ))
            }
        };
        let response = Message::Response { id, result };
        if let Err(err) = self.transport.notify(&response) {
            self.log(&format!("could not answer `{method}`: {err}"));
        }
    }

    /// Starts awaiting the completion notice of the URL elicitation `id`; the token is
    /// cancelled when it arrives.
    fn await_completion(&self, id: &str) -> CancelToken {
        let token = CancelToken::new();
        let mut awaited = self.awaited.lock().unwrap_or_else(PoisonError::into_inner);
        awaited.retain(|(known, _)| known != id);
        if awaited.len() >= MAX_AWAITED {
            awaited.remove(0);
        }
        awaited.push((id.to_string(), token.clone()));
        token
    }

    fn forget_awaited(&self, requests: &[elicit::Request]) {
        let mut awaited = self.awaited.lock().unwrap_or_else(PoisonError::into_inner);
        awaited.retain(|(known, _)| {
            !requests
                .iter()
                .any(|r| matches!(&r.mode, elicit::Mode::Url { id, .. } if id == known))
        });
    }

    /// `notifications/elicitation/complete`: ends the wait for a URL elicitation we know;
    /// an unknown or already completed id is ignored, as the protocol says.
    fn elicitation_complete(&self, params: &Value) {
        let id = params
            .get("elicitationId")
            .and_then(Value::as_str)
            .unwrap_or("");
        let found = {
            let mut awaited = self.awaited.lock().unwrap_or_else(PoisonError::into_inner);
            awaited
                .iter()
                .position(|(known, _)| known == id)
                .map(|i| awaited.remove(i).1)
        };
        let Some(token) = found else {
            self.log(&format!(
                "ignored the completion of an unknown elicitation `{}`",
                crate::text::one_line(id, 80)
            ));
            return;
        };
        token.cancel();
        let text = "the step in the browser is complete".to_string();
        self.log(&text);
        self.emit(ServerEvent::Log {
            server: self.options.name.clone(),
            level: "info".into(),
            text,
        });
    }

    fn roots(&self) -> Vec<Value> {
        self.options
            .roots
            .iter()
            .map(|root| {
                let name = root
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| root.display().to_string());
                json!({"uri": file_uri(root), "name": name})
            })
            .collect()
    }

    fn on_notification(&self, method: &str, params: Option<Value>) {
        let params = params.unwrap_or(Value::Null);
        match method {
            "notifications/tools/list_changed" => {
                self.tools_stale.store(true, Ordering::SeqCst);
                self.log("the tool list changed");
            }
            "notifications/elicitation/complete" => self.elicitation_complete(&params),
            "notifications/progress" => {
                let number = |key: &str| params.get(key).and_then(Value::as_f64);
                let message = params
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let progress = number("progress").unwrap_or(0.0);
                let total = number("total");
                self.log(&format!(
                    "progress {progress}{}{}",
                    total.map(|t| format!("/{t}")).unwrap_or_default(),
                    message
                        .as_deref()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                ));
                self.emit(ServerEvent::Progress {
                    server: self.options.name.clone(),
                    progress,
                    total,
                    message,
                });
            }
            "notifications/message" => {
                let level = params
                    .get("level")
                    .and_then(Value::as_str)
                    .unwrap_or("info")
                    .to_string();
                let text = match params.get("data") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                self.log(&format!("[{level}] {text}"));
                self.emit(ServerEvent::Log {
                    server: self.options.name.clone(),
                    level,
                    text,
                });
            }
            other => self.log(&format!("notification `{other}`")),
        }
    }

    fn emit(&self, event: ServerEvent) {
        if let Some(events) = &self.options.events {
            let _ = events.send(event);
        } else if let Some(warnings) = &self.options.warnings {
            if matches!(&event, ServerEvent::Log { level, .. } if reported_level(level)) {
                let _ = warnings.try_send(event);
            }
        }
    }
}

/// Waits for a reply; `None` on timeout. A dropped sender cannot happen while the request is
/// pending (the state holds a clone), so it counts as a timeout only in theory.
fn wait(rx: &Receiver<Reply>, timeout: Option<Duration>) -> Option<Reply> {
    match timeout {
        Some(limit) => match rx.recv_timeout(limit) {
            Ok(reply) => Some(reply),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => Some(Reply::Failed(McpError::Closed(
                "the connection ended".into(),
            ))),
        },
        None => Some(rx.recv().unwrap_or(Reply::Failed(McpError::Closed(
            "the connection ended".into(),
        )))),
    }
}

/// The dispatcher: owns the inbox and routes everything in it until shutdown.
fn dispatch(inner: Arc<Inner>, inbox: Receiver<Incoming>) {
    for incoming in inbox {
        match incoming {
            Incoming::Message(Message::Response { id, result }) => inner.complete(id, result),
            Incoming::Message(Message::Request { id, method, params }) => {
                if method == "elicitation/create" {
                    elicitation(&inner, id, params.unwrap_or(Value::Null));
                } else {
                    inner.answer(id, &method)
                }
            }
            Incoming::Message(Message::Notification { method, params }) => {
                inner.on_notification(&method, params)
            }
            Incoming::Garbage(text) => inner.log(&format!("ignored output: {text}")),
            Incoming::Log(text) => inner.log(&text),
            Incoming::Failed { id, error } => inner.fail(id, error),
            Incoming::Closed(reason) => {
                inner.log(&format!("connection closed: {reason}"));
                inner.close_all(reason);
            }
            Incoming::Shutdown => return,
        }
    }
}

/// Answers `elicitation/create` on its own thread, since a person may take a while and the
/// dispatcher must keep routing replies meanwhile.
fn elicitation(inner: &Arc<Inner>, id: Id, params: Value) {
    let worker = Arc::clone(inner);
    let (thread_id, thread_params) = (id.clone(), params.clone());
    let spawned = std::thread::Builder::new()
        .name(super::thread_name(&inner.options.name, "elicit"))
        .spawn(move || answer_elicitation(&worker, thread_id, &thread_params));
    if spawned.is_err() {
        // No thread for a person to answer on: refuse now rather than leave it unanswered.
        let response = Message::Response {
            id,
            result: Ok(elicit::result(&Answer::Decline)),
        };
        let _ = inner.transport.notify(&response);
    }
}

fn answer_elicitation(inner: &Inner, id: Id, params: &Value) {
    let Some(elicitor) = &inner.options.elicitor else {
        // No one to ask: decline whatever was asked, and say so.
        let message = params.get("message").and_then(Value::as_str).unwrap_or("");
        let text = format!(
            "declined a request for input (no one can answer here): {}",
            crate::text::one_line(message, 200)
        );
        inner.log(&text);
        inner.emit(ServerEvent::Log {
            server: inner.options.name.clone(),
            level: "warning".into(),
            text,
        });
        let response = Message::Response {
            id,
            result: Ok(elicit::result(&Answer::Decline)),
        };
        if let Err(err) = inner.transport.notify(&response) {
            inner.log(&format!("could not answer `elicitation/create`: {err}"));
        }
        return;
    };
    let result = match elicit::parse(&inner.options.name, params) {
        Err(why) => Err(RpcError::new(INVALID_PARAMS, why)),
        Ok(request) => {
            let answer = elicitor.elicit(&request);
            if let (Answer::Opened, elicit::Mode::Url { id, .. }) = (&answer, &request.mode) {
                // The notice only updates the person; the call itself goes on meanwhile.
                inner.await_completion(id);
            }
            Ok(elicit::result(&answer))
        }
    };
    let response = Message::Response { id, result };
    if let Err(err) = inner.transport.notify(&response) {
        inner.log(&format!("could not answer `elicitation/create`: {err}"));
    }
}

/// `file://` URI of an absolute path, percent-encoding everything but unreserved characters
/// and `/`.
pub fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for &byte in crate::platform::os_bytes(path.as_os_str()) {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::jsonrpc::Id;
    use std::sync::mpsc::Receiver as StdReceiver;

    /// An in-memory transport: what the client sends goes to the test (playing the server),
    /// which answers through the inbox.
    struct Loopback {
        sent: Mutex<Sender<Message>>,
    }

    impl Transport for Loopback {
        fn call(&self, request: &Message) -> Result<(), McpError> {
            self.notify(request)
        }
        fn notify(&self, message: &Message) -> Result<(), McpError> {
            self.sent
                .lock()
                .unwrap()
                .send(message.clone())
                .map_err(|_| McpError::Closed("test server gone".into()))
        }
        fn close(&self) {}
    }

    struct Peer {
        client: Client,
        from_client: Mutex<StdReceiver<Message>>,
        to_client: Inbox,
    }

    fn peer(roots: Vec<PathBuf>) -> Peer {
        peer_with(ClientOptions {
            name: "t".into(),
            roots,
            ..ClientOptions::default()
        })
    }

    fn peer_with(options: ClientOptions) -> Peer {
        let (sent_tx, sent_rx) = mpsc::channel();
        let (inbox_tx, inbox_rx) = mpsc::channel();
        let client = Client::start(options, |inbox| {
            inbox_tx.send(inbox).unwrap();
            Ok(Box::new(Loopback {
                sent: Mutex::new(sent_tx),
            }))
        })
        .unwrap();
        Peer {
            client,
            from_client: Mutex::new(sent_rx),
            to_client: inbox_rx.recv().unwrap(),
        }
    }

    impl Peer {
        fn next(&self) -> Message {
            self.from_client
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(10))
                .expect("the client sent nothing")
        }

        fn send(&self, message: Message) {
            self.to_client.send(Incoming::Message(message)).unwrap();
        }

        fn answer(&self, id: Id, result: Value) {
            self.send(Message::Response {
                id,
                result: Ok(result),
            });
        }
    }

    fn request_id(message: &Message, expected_method: &str) -> (Id, Option<Value>) {
        match message {
            Message::Request { id, method, params } if method == expected_method => {
                (id.clone(), params.clone())
            }
            other => panic!("expected a `{expected_method}` request, got {other:?}"),
        }
    }

    fn init_result(version: &str) -> Value {
        json!({"protocolVersion": version, "capabilities": {"tools": {}},
               "serverInfo": {"name": "srv", "version": "1"}})
    }

    /// Runs the handshake on a thread while the test plays the server.
    fn handshake(peer: &Peer, version: &str) -> Result<ServerInfo, McpError> {
        std::thread::scope(|s| {
            let handle = s.spawn(|| peer.client.initialize(&CallOptions::default()));
            let (id, params) = request_id(&peer.next(), "initialize");
            let params = params.unwrap();
            assert_eq!(params["protocolVersion"], PROTOCOL_VERSION);
            assert!(params["capabilities"]["roots"].is_object());
            peer.answer(id, init_result(version));
            let result = handle.join().unwrap();
            if result.is_ok() {
                assert_eq!(
                    peer.next(),
                    Message::notification("notifications/initialized", None)
                );
            }
            result
        })
    }

    #[test]
    fn handshake_accepts_every_supported_version_and_rejects_others() {
        for version in SUPPORTED_VERSIONS {
            let p = peer(vec![]);
            let info = handshake(&p, version).unwrap();
            assert_eq!(info.protocol_version, *version);
            assert!(info.has("tools") && !info.has("prompts"));
        }
        let p = peer(vec![]);
        let err = handshake(&p, "1999-01-01").unwrap_err().to_string();
        assert!(
            err.contains("1999-01-01") && err.contains("2025-11-25"),
            "{err}"
        );
    }

    #[test]
    fn without_a_ui_only_warnings_wait_and_a_flood_is_cut_at_the_queue() {
        let (tx, rx) = mpsc::sync_channel(3);
        let p = peer_with(ClientOptions {
            name: "t".into(),
            warnings: Some(tx),
            ..ClientOptions::default()
        });
        let message = |level: &str, data: &str| {
            Message::notification(
                "notifications/message",
                Some(json!({"level": level, "data": data})),
            )
        };
        p.send(message("info", "chatty"));
        p.send(Message::notification(
            "notifications/progress",
            Some(json!({"progressToken": 1, "progress": 1})),
        ));
        p.send(message("warning", "w1"));
        p.send(message("debug", "noise"));
        p.send(message("error", "e1"));
        for n in 0..100 {
            p.send(message("critical", &format!("flood {n}")));
        }
        // Notifications are handled in order: once the ping is answered, all of them were.
        p.send(Message::request(Id::Number(1), "ping", None));
        assert!(matches!(p.next(), Message::Response { .. }));
        let kept: Vec<(String, String)> = rx
            .try_iter()
            .map(|e| match e {
                ServerEvent::Log { level, text, .. } => (level, text),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kept,
            [
                ("warning".to_string(), "w1".to_string()),
                ("error".into(), "e1".into()),
                ("critical".into(), "flood 0".into())
            ]
        );
    }

    #[test]
    fn answers_ping_and_roots_and_refuses_other_server_requests() {
        let p = peer(vec![PathBuf::from("/work/my project")]);
        p.send(Message::request(Id::Number(0), "roots/list", None));
        let Message::Response { id, result } = p.next() else {
            panic!("expected a response");
        };
        assert_eq!(id, Id::Number(0));
        assert_eq!(
            result.unwrap(),
            json!({"roots": [{"uri": "file:///work/my%20project", "name": "my project"}]})
        );
        p.send(Message::request(Id::Str("p".into()), "ping", None));
        assert_eq!(
            p.next(),
            Message::Response {
                id: Id::Str("p".into()),
                result: Ok(json!({}))
            }
        );
        p.send(Message::request(
            Id::Number(5),
            "sampling/createMessage",
            None,
        ));
        let Message::Response { result: Err(e), .. } = p.next() else {
            panic!("expected an error response");
        };
        assert_eq!(e.code, METHOD_NOT_FOUND);
    }

    #[test]
    fn responses_are_matched_by_id_whatever_the_order_and_notifications_are_not_responses() {
        let p = peer(vec![]);
        std::thread::scope(|s| {
            let a = s.spawn(|| p.client.request("a", None, &CallOptions::default()));
            let (id_a, _) = request_id(&p.next(), "a");
            let b = s.spawn(|| p.client.request("b", None, &CallOptions::default()));
            let (id_b, _) = request_id(&p.next(), "b");
            p.send(Message::notification(
                "notifications/message",
                Some(json!({"level": "info", "data": "hi"})),
            ));
            p.answer(Id::Number(999), json!("stray"));
            p.answer(id_b, json!("B"));
            p.answer(id_a, json!("A"));
            assert_eq!(a.join().unwrap().unwrap(), json!("A"));
            assert_eq!(b.join().unwrap().unwrap(), json!("B"));
        });
    }

    #[test]
    fn pagination_follows_cursors_and_stops_on_a_repeated_one() {
        let p = peer(vec![]);
        std::thread::scope(|s| {
            let list = s.spawn(|| p.client.list_tools(&CallOptions::default()));
            let (id, params) = request_id(&p.next(), "tools/list");
            assert_eq!(params, None);
            p.answer(id, json!({"tools": [{"name": "a"}], "nextCursor": "c1"}));
            let (id, params) = request_id(&p.next(), "tools/list");
            assert_eq!(params, Some(json!({"cursor": "c1"})));
            p.answer(id, json!({"tools": [{"name": "b"}], "nextCursor": "c2"}));
            let (id, params) = request_id(&p.next(), "tools/list");
            assert_eq!(params, Some(json!({"cursor": "c2"})));
            // A server that hands back the same cursor would loop forever; we stop.
            p.answer(id, json!({"tools": [{"name": "c"}], "nextCursor": "c2"}));
            let names: Vec<Value> = list
                .join()
                .unwrap()
                .unwrap()
                .into_iter()
                .map(|t| t["name"].clone())
                .collect();
            assert_eq!(names, vec![json!("a"), json!("b"), json!("c")]);
        });
    }

    #[test]
    fn list_changed_marks_the_tool_list_stale_once() {
        let p = peer(vec![]);
        assert!(!p.client.take_tools_stale());
        p.send(Message::notification(
            "notifications/tools/list_changed",
            None,
        ));
        // A ping round trip proves the dispatcher processed the notification before it.
        p.send(Message::request(Id::Number(1), "ping", None));
        p.next();
        assert!(p.client.take_tools_stale());
        assert!(!p.client.take_tools_stale());
    }

    #[test]
    fn a_timeout_sends_cancelled_and_a_late_answer_is_ignored() {
        let p = peer(vec![]);
        let err = std::thread::scope(|s| {
            let call = s.spawn(|| {
                p.client.request(
                    "tools/call",
                    None,
                    &CallOptions::timeout(Duration::from_millis(50)),
                )
            });
            let (id, _) = request_id(&p.next(), "tools/call");
            let Message::Notification { method, params } = p.next() else {
                panic!("expected notifications/cancelled");
            };
            assert_eq!(method, "notifications/cancelled");
            assert_eq!(params.unwrap()["requestId"], id.to_value());
            p.answer(id, json!("late"));
            call.join().unwrap().unwrap_err()
        });
        assert!(matches!(err, McpError::Timeout { .. }), "{err}");
    }

    #[test]
    fn cancelling_sends_cancelled_at_once() {
        let p = peer(vec![]);
        let cancel = CancelToken::new();
        let options = CallOptions {
            timeout: None,
            cancel: Some(cancel.clone()),
        };
        let err = std::thread::scope(|s| {
            let call = s.spawn(|| p.client.request("tools/call", None, &options));
            let (id, _) = request_id(&p.next(), "tools/call");
            cancel.cancel();
            let Message::Notification { method, params } = p.next() else {
                panic!("expected notifications/cancelled");
            };
            assert_eq!(method, "notifications/cancelled");
            assert_eq!(params.unwrap()["reason"], "cancelled by the user");
            let _ = id;
            call.join().unwrap().unwrap_err()
        });
        assert!(matches!(err, McpError::Cancelled), "{err}");
    }

    #[test]
    fn a_closed_connection_fails_pending_and_later_requests() {
        let p = peer(vec![]);
        std::thread::scope(|s| {
            let call = s.spawn(|| p.client.request("x", None, &CallOptions::default()));
            request_id(&p.next(), "x");
            p.to_client
                .send(Incoming::Closed("the server closed its output".into()))
                .unwrap();
            let err = call.join().unwrap().unwrap_err();
            assert_eq!(
                err.to_string(),
                "mcp: the server is gone: the server closed its output"
            );
        });
        let err = p
            .client
            .request("y", None, &CallOptions::default())
            .unwrap_err();
        assert!(err.to_string().contains("closed its output"), "{err}");
    }

    #[test]
    fn an_expired_session_is_initialized_again_once() {
        let p = peer(vec![]);
        handshake(&p, "2025-06-18").unwrap();
        std::thread::scope(|s| {
            let call = s.spawn(|| {
                p.client
                    .request("tools/list", None, &CallOptions::default())
            });
            let (id, _) = request_id(&p.next(), "tools/list");
            p.to_client
                .send(Incoming::Failed {
                    id,
                    error: McpError::SessionExpired,
                })
                .unwrap();
            let (id, _) = request_id(&p.next(), "initialize");
            p.answer(id, init_result("2025-11-25"));
            assert_eq!(
                p.next(),
                Message::notification("notifications/initialized", None)
            );
            let (id, _) = request_id(&p.next(), "tools/list");
            p.answer(id, json!({"tools": []}));
            assert_eq!(call.join().unwrap().unwrap(), json!({"tools": []}));
        });
    }

    #[test]
    fn elicitation_is_declared_and_declined_without_anyone_to_ask() {
        let p = peer(vec![]);
        p.send(Message::request(
            Id::Number(7),
            "elicitation/create",
            Some(
                json!({"message": "Your name?", "requestedSchema": {"type": "object",
                "properties": {"name": {"type": "string"}}}}),
            ),
        ));
        assert_eq!(
            p.next(),
            Message::Response {
                id: Id::Number(7),
                result: Ok(json!({"action": "decline"}))
            }
        );
        // With someone to ask: the form reaches them and their answer goes back; a schema
        // no form can ask for is invalid params.
        struct Fills;
        impl Elicitor for Fills {
            fn elicit(&self, request: &elicit::Request) -> Answer {
                let mut content = serde_json::Map::new();
                content.insert("asked".into(), json!(request.message));
                Answer::Accept(content)
            }
        }
        let p = peer_with(ClientOptions {
            name: "t".into(),
            elicitor: Some(Arc::new(Fills)),
            ..ClientOptions::default()
        });
        p.send(Message::request(
            Id::Number(8),
            "elicitation/create",
            Some(json!({"message": "Name?", "requestedSchema": {"properties": {}}})),
        ));
        assert_eq!(
            p.next(),
            Message::Response {
                id: Id::Number(8),
                result: Ok(json!({"action": "accept", "content": {"asked": "Name?"}}))
            }
        );
        p.send(Message::request(
            Id::Number(9),
            "elicitation/create",
            Some(json!({"requestedSchema": {"properties": {"o": {"type": "object"}}}})),
        ));
        let Message::Response { result: Err(e), .. } = p.next() else {
            panic!("expected an error response");
        };
        assert_eq!(e.code, crate::mcp::jsonrpc::INVALID_PARAMS);
    }

    /// Agrees to open every URL and says so on `asked`; waits as the trait does by default.
    struct Opens {
        asked: Mutex<Sender<String>>,
        answer: Answer,
    }

    impl Elicitor for Opens {
        fn elicit(&self, request: &elicit::Request) -> Answer {
            let _ = self.asked.lock().unwrap().send(request.message.clone());
            self.answer.clone()
        }
    }

    fn opening_peer(answer: Answer) -> (Peer, StdReceiver<String>, StdReceiver<ServerEvent>) {
        let (asked_tx, asked) = mpsc::channel();
        let (events_tx, events) = mpsc::channel();
        let p = peer_with(ClientOptions {
            name: "t".into(),
            elicitor: Some(Arc::new(Opens {
                asked: Mutex::new(asked_tx),
                answer,
            })),
            events: Some(events_tx),
            ..ClientOptions::default()
        });
        (p, asked, events)
    }

    fn url_required(id: Id, elicitation: &str) -> Message {
        Message::Response {
            id,
            result: Err(RpcError {
                code: elicit::URL_ELICITATION_REQUIRED,
                message: "needs a browser step".into(),
                data: Some(
                    json!({"elicitations": [{"mode": "url", "elicitationId": elicitation,
                    "url": "https://pay.example/connect", "message": "Connect your account"}]}),
                ),
            }),
        }
    }

    /// A `tools/call` without arguments, with the default options.
    fn bare_call(p: &Peer) -> Result<Value, McpError> {
        p.client
            .request("tools/call", None, &CallOptions::default())
    }

    /// The server refuses the client's next `tools/call` until the URL of `elicitation` is
    /// opened.
    fn refuse_next_call(p: &Peer, elicitation: &str) {
        let (id, _) = request_id(&p.next(), "tools/call");
        p.send(url_required(id, elicitation));
    }

    fn complete(elicitation: &str) -> Message {
        Message::notification(
            "notifications/elicitation/complete",
            Some(json!({ "elicitationId": elicitation })),
        )
    }

    /// A ping round trip: the dispatcher handled everything sent before it.
    fn settle(p: &Peer, n: i64) {
        p.send(Message::request(Id::Number(100 + n), "ping", None));
        assert_eq!(
            p.next(),
            Message::Response {
                id: Id::Number(100 + n),
                result: Ok(json!({}))
            },
            "nothing else before the ping's answer"
        );
    }

    #[test]
    fn a_request_that_needs_a_url_elicitation_is_sent_again_once_after_its_notice() {
        let (p, asked, _events) = opening_peer(Answer::Opened);
        std::thread::scope(|s| {
            let call = s.spawn(|| {
                p.client.request(
                    "tools/call",
                    Some(json!({"name": "pay"})),
                    &CallOptions::default(),
                )
            });
            refuse_next_call(&p, "e-1");
            assert_eq!(
                asked.recv_timeout(Duration::from_secs(10)).unwrap(),
                "Connect your account"
            );
            // Another id, or none, does not end the wait.
            p.send(complete("someone-else"));
            p.send(Message::notification(
                "notifications/elicitation/complete",
                None,
            ));
            settle(&p, 1);
            p.send(complete("e-1"));
            let (id, params) = request_id(&p.next(), "tools/call");
            assert_eq!(params.unwrap()["name"], "pay", "the same request again");
            p.answer(id, json!({"content": []}));
            assert_eq!(call.join().unwrap().unwrap(), json!({"content": []}));
        });
        // Completed once: the same notice again is an unknown id now, and no request follows.
        p.send(complete("e-1"));
        settle(&p, 2);
    }

    #[test]
    fn a_second_refusal_is_the_callers_error_and_a_declined_step_is_not_retried() {
        let (p, asked, _events) = opening_peer(Answer::Opened);
        let err = std::thread::scope(|s| {
            let call = s.spawn(|| bare_call(&p));
            refuse_next_call(&p, "e-1");
            asked.recv_timeout(Duration::from_secs(10)).unwrap();
            p.send(complete("e-1"));
            refuse_next_call(&p, "e-2");
            call.join().unwrap().unwrap_err()
        });
        assert!(
            matches!(&err, McpError::Rpc(e) if e.code == elicit::URL_ELICITATION_REQUIRED),
            "{err}"
        );

        let (p, asked, _events) = opening_peer(Answer::Decline);
        let err = std::thread::scope(|s| {
            let call = s.spawn(|| bare_call(&p));
            refuse_next_call(&p, "e-1");
            asked.recv_timeout(Duration::from_secs(10)).unwrap();
            call.join().unwrap().unwrap_err()
        });
        assert_eq!(
            err.to_string(),
            "mcp: the user declined the server's step in the browser (Connect your account)"
        );
        settle(&p, 1);
    }

    #[test]
    fn cancelling_the_call_ends_the_wait_for_the_notice() {
        let (p, asked, _events) = opening_peer(Answer::Opened);
        let cancel = CancelToken::new();
        let options = CallOptions {
            timeout: None,
            cancel: Some(cancel.clone()),
        };
        let err = std::thread::scope(|s| {
            let call = s.spawn(|| p.client.request("tools/call", None, &options));
            refuse_next_call(&p, "e-1");
            asked.recv_timeout(Duration::from_secs(10)).unwrap();
            cancel.cancel();
            call.join().unwrap().unwrap_err()
        });
        assert!(matches!(err, McpError::Cancelled), "{err}");
        settle(&p, 1);
    }

    #[test]
    fn without_anyone_to_ask_the_url_goes_to_the_log_and_not_to_the_model() {
        let (events_tx, events) = mpsc::channel();
        let p = peer_with(ClientOptions {
            name: "t".into(),
            events: Some(events_tx),
            ..ClientOptions::default()
        });
        let err = std::thread::scope(|s| {
            let call = s.spawn(|| bare_call(&p));
            refuse_next_call(&p, "e-1");
            call.join().unwrap().unwrap_err()
        });
        let text = err.to_string();
        assert!(
            text.contains("Connect your account") && text.contains("cannot ask"),
            "{text}"
        );
        assert!(!text.contains("pay.example"), "{text}");
        let Ok(ServerEvent::Log { level, text, .. }) = events.try_recv() else {
            panic!("expected a warning");
        };
        assert_eq!(level, "warning");
        assert!(text.contains("https://pay.example/connect"), "{text}");
    }

    #[test]
    fn an_opened_url_is_accepted_without_content_and_its_notice_is_shown_once() {
        let (p, asked, events) = opening_peer(Answer::Opened);
        p.send(Message::request(
            Id::Number(5),
            "elicitation/create",
            Some(
                json!({"mode": "url", "elicitationId": "e-9", "message": "Pay",
                "url": "https://pay.example/checkout"}),
            ),
        ));
        assert_eq!(asked.recv_timeout(Duration::from_secs(10)).unwrap(), "Pay");
        assert_eq!(
            p.next(),
            Message::Response {
                id: Id::Number(5),
                result: Ok(json!({"action": "accept"}))
            }
        );
        p.send(complete("e-9"));
        p.send(complete("e-9"));
        p.send(complete("unknown"));
        settle(&p, 1);
        let shown: Vec<ServerEvent> = events.try_iter().collect();
        assert_eq!(
            shown,
            [ServerEvent::Log {
                server: "t".into(),
                level: "info".into(),
                text: "the step in the browser is complete".into()
            }]
        );
        // A URL the browser must not be given is invalid params, and no one is asked.
        p.send(Message::request(
            Id::Number(6),
            "elicitation/create",
            Some(json!({"mode": "url", "elicitationId": "e", "url": "file:///etc/passwd"})),
        ));
        let Message::Response { result: Err(e), .. } = p.next() else {
            panic!("expected an error response");
        };
        assert_eq!(e.code, crate::mcp::jsonrpc::INVALID_PARAMS);
        assert!(asked.try_recv().is_err());
    }

    #[test]
    fn roots_can_be_turned_off() {
        let (sent_tx, sent_rx) = mpsc::channel();
        let client = Client::start(
            ClientOptions {
                name: "t".into(),
                no_roots: true,
                ..ClientOptions::default()
            },
            |_| {
                Ok(Box::new(Loopback {
                    sent: Mutex::new(sent_tx),
                }))
            },
        )
        .unwrap();
        let options = CallOptions::timeout(Duration::from_millis(1));
        let _ = client.initialize(&options);
        let (_, params) = request_id(&sent_rx.recv().unwrap(), "initialize");
        let capabilities = &params.unwrap()["capabilities"];
        assert!(capabilities.get("roots").is_none(), "{capabilities}");
        assert!(
            capabilities["elicitation"]["form"].is_object(),
            "{capabilities}"
        );
    }

    #[test]
    fn file_uris_are_percent_encoded() {
        assert_eq!(file_uri(Path::new("/a b/ü")), "file:///a%20b/%C3%BC");
    }
}
