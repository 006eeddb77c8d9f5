//! HTTP for everything reasonix asks of a server, through ureq: one agent configuration for
//! model requests, MCP servers and OAuth (the trust roots `roots` loads, the proxy chosen
//! here from the `*_proxy` variables, the timeouts), and for model requests the retry loop
//! that runs until a response body starts.
//!
//! What the bytes mean is left to `openai`; when to retry and how long to wait, to `retry`;
//! the caps on what a reply may hold, to `limits`; what a connection says about itself
//! (reused, a short wait for a body's end), to `conn`. A cancel shuts the exchange's agent
//! down: ureq closes its sockets, which ends a blocked read at once.
//! Nothing else in the crate opens a network connection to a model server.

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use ureq::config::Config;
use ureq::http::Uri;
use ureq::tls::{RootCerts, TlsConfig};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{Connector, DefaultConnector, NextTimeout};
use ureq::{Agent, BodyReader, Proxy, ProxyProtocol, Timeout};

use super::conn::{self, Handle};
use super::limits::clamp_timeout;
use super::retry;
use super::roots::{env_lookup, load_roots};
use super::{Detail, ProviderError, ProviderSettings, Retry, RetryPolicy};
use crate::cancel::{CancelToken, HookGuard};

/// The read and write buffers of one connection (see [`Net::config`]).
const IO_BUFFER_INPUT: usize = 64 * 1024;
const IO_BUFFER_OUTPUT: usize = 16 * 1024;

/// Error bodies are read up to this size; the message we show is one line of it anyway.
const ERROR_BODY_LIMIT: u64 = 64 * 1024;

/// Everything needed to open connections for one provider, built once.
#[derive(Debug, Clone)]
pub struct Net {
    tls: TlsConfig,
    roots: Arc<str>,
    connect_timeout: Duration,
    /// The response head of a model request must be whole this long after the request went
    /// out, however slowly its bytes come.
    head_timeout: Option<Duration>,
    /// The agent whose connection pool later requests reuse (keep-alive saves a TLS
    /// handshake per turn). A cancel shuts it down and empties the slot, so the next
    /// request starts a fresh one.
    pooled: Arc<Mutex<Option<Pooled>>>,
    /// Some HTTP response has arrived through this transport: from then on a refused
    /// connection is a hiccup worth the full backoff, not a server that is not there.
    contacted: Arc<AtomicBool>,
}

#[derive(Debug)]
struct Pooled {
    url: String,
    limits: Limits,
    agent: Agent,
    /// Tells this agent apart from a later one in the same slot.
    generation: u64,
}

/// Per-exchange limits on top of the connect timeout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// No byte for this long fails the read (the idle-stream watchdog).
    pub per_read: Option<Duration>,
    /// The whole exchange, from the request to the body's last byte.
    pub total: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
}

/// One HTTP exchange to attempt, with the headers already final.
pub struct Exchange<'a> {
    pub method: Method,
    pub url: &'a str,
    pub headers: &'a [(String, String)],
    /// The body as consecutive parts, sent in order without joining them.
    pub body: &'a [&'a [u8]],
    pub limits: Limits,
    /// Named in the authentication error so the user knows which variable to fix.
    pub api_key_env: &'a str,
    /// The provider's instance name, for the fix an unreachable endpoint's error names.
    pub provider: &'a str,
}

/// A 2xx response whose body is ready to read. Dropping it before the end closes the
/// connection; reading it to the end returns the connection to the pool.
pub struct OpenBody {
    pub status: u16,
    pub content_type: Option<String>,
    pub reader: BodyReader<'static>,
    /// The connection the body arrives on.
    connection: Option<Handle>,
    _agent: Agent,
    _shutdown_on_cancel: HookGuard,
}

impl OpenBody {
    /// The reply is complete: later reads wait only [`conn::DRAIN_WAIT`] for the body's end.
    pub fn drain_briefly(&self) {
        if let Some(connection) = &self.connection {
            connection.drain();
        }
    }
}

/// The final failure of an exchange, with what the server said if it said anything.
#[derive(Debug)]
pub struct Failure {
    pub error: ProviderError,
    /// 0 when no HTTP response arrived.
    pub status: u16,
    pub body: String,
}

impl Failure {
    fn without_response(error: ProviderError) -> Self {
        Failure {
            error,
            status: 0,
            body: String::new(),
        }
    }
}

/// The proxy an exchange goes through, and the variable that named it (for messages).
#[derive(Debug, Clone)]
pub struct ChosenProxy {
    pub variable: &'static str,
    pub proxy: Proxy,
}

impl ChosenProxy {
    /// `HTTPS_PROXY=http://proxy:3128`, without any password.
    pub fn describe(&self) -> String {
        let uri = self.proxy.uri();
        let scheme = uri.scheme_str().unwrap_or("http");
        let host = uri.host().unwrap_or("");
        match uri.port_u16() {
            Some(port) => format!("{}={scheme}://{host}:{port}", self.variable),
            None => format!("{}={scheme}://{host}", self.variable),
        }
    }
}

impl Net {
    /// Transport for talking to `url`. Trust roots are loaded only for https (the server's
    /// or an `https://` proxy's), so a broken CA setup never stands between the user and a
    /// plain-http local model server.
    pub fn new(settings: &ProviderSettings, url: &str) -> Result<Net, ProviderError> {
        let mut net = Net::for_url(url, settings.ca_file.as_deref(), settings.timeouts.connect)?;
        net.head_timeout = Some(clamp_timeout(settings.timeouts.head));
        Ok(net)
    }

    /// The same trust roots and proxy rules for a server that is not a provider (an MCP
    /// server over HTTP).
    pub fn for_url(
        url: &str,
        ca_file: Option<&Path>,
        connect_timeout: Duration,
    ) -> Result<Net, ProviderError> {
        // A bad proxy variable is reported by the request that would use it.
        let https_proxy = parse_url(url)
            .ok()
            .and_then(|uri| proxy_for(&uri, &env_lookup).ok().flatten())
            .is_some_and(|chosen| chosen.proxy.protocol() == ProxyProtocol::Https);
        let (roots, description) = if url.starts_with("https://") || https_proxy {
            load_roots(ca_file, &env_lookup)?
        } else {
            (RootCerts::WebPki, "not used (plain http)".to_string())
        };
        Ok(Net {
            tls: TlsConfig::builder().root_certs(roots).build(),
            roots: description.into(),
            connect_timeout: clamp_timeout(connect_timeout),
            head_timeout: None,
            pooled: Arc::default(),
            contacted: Arc::default(),
        })
    }

    /// Where the trusted CA certificates came from, for `reasonix doctor`.
    pub fn roots_description(&self) -> &str {
        &self.roots
    }

    /// The one agent configuration: trust roots, proxy, timeouts (each at most a day), no
    /// redirects, statuses as responses.
    fn config(&self, proxy: Option<Proxy>, limits: Limits) -> Config {
        Agent::config_builder()
            .http_status_as_error(false)
            // A redirected POST would silently become a GET; report the 3xx instead.
            .max_redirects(0)
            .proxy(proxy)
            .tls_config(self.tls.clone())
            .timeout_connect(Some(self.connect_timeout))
            .timeout_per_read(limits.per_read.map(clamp_timeout))
            .timeout_recv_response(self.head_timeout)
            .timeout_global(limits.total.map(clamp_timeout))
            // The caller sends User-Agent and Accept itself, exactly once.
            .user_agent("")
            .accept("")
            // ureq's defaults are 128 KiB each, zero-filled per connection: 256 KiB touched
            // for every new connection (a server that closes them makes one a round), held
            // twice while an old connection's buffers are not yet freed. A body is streamed
            // through the output buffer and a stream is read in pieces; the input buffer
            // still holds the largest response head ureq accepts
            // (`max_response_header_size`, 64 KiB).
            .input_buffer_size(IO_BUFFER_INPUT)
            .output_buffer_size(IO_BUFFER_OUTPUT)
            .build()
    }

    /// A fresh agent for an exchange with `url` (MCP servers and OAuth).
    pub fn agent(&self, url: &str, limits: Limits) -> Result<Agent, ProviderError> {
        let proxy = proxy_for(&parse_url(url)?, &env_lookup)?.map(|chosen| chosen.proxy);
        let config = self.config(proxy, limits);
        Ok(Agent::with_parts(
            config,
            DefaultConnector::new(),
            LiteralFirst::default(),
        ))
    }

    /// The agent for a model exchange with `url`: the pooled one when it was built for the
    /// same URL and limits, else a new one that becomes the pooled one. Its connections are
    /// wrapped by `conn`.
    fn pooled_agent(&self, url: &str, limits: Limits, proxy: Option<&ChosenProxy>) -> (Agent, u64) {
        static GENERATION: AtomicU64 = AtomicU64::new(0);
        let mut slot = self.pooled.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pooled) = slot.as_ref() {
            if pooled.url == url && pooled.limits == limits {
                return (pooled.agent.clone(), pooled.generation);
            }
        }
        let config = self.config(proxy.map(|chosen| chosen.proxy.clone()), limits);
        let connector = DefaultConnector::new().chain(conn::Wrap);
        let agent = Agent::with_parts(config, connector, LiteralFirst::default());
        let generation = GENERATION.fetch_add(1, Ordering::Relaxed);
        *slot = Some(Pooled {
            url: url.to_string(),
            limits,
            agent: agent.clone(),
            generation,
        });
        (agent, generation)
    }

    /// Runs `exchange`, retrying retryable failures with backoff until a 2xx response head
    /// arrives, the policy gives up, or `cancel` fires. Each retry is reported to `on_retry`
    /// before its wait. A server (or proxy) that refuses or does not resolve before this
    /// transport ever got a response is given only the quick
    /// [`retry::FIRST_CONTACT_WAITS`], unreported; a kept connection the server had closed
    /// is replaced at once, unreported.
    pub fn send(
        &self,
        exchange: &Exchange<'_>,
        policy: &RetryPolicy,
        cancel: &CancelToken,
        on_retry: &mut dyn FnMut(Retry, &Failure),
    ) -> Result<OpenBody, Failure> {
        let uri = parse_url(exchange.url).map_err(Failure::without_response)?;
        let proxy = proxy_for(&uri, &env_lookup).map_err(Failure::without_response)?;
        let mut attempt = 0u32;
        let mut overloaded_in_a_row = 0u32;
        let mut replaced_stale = false;
        let mut budget = retry::Budget::new(policy);
        loop {
            if cancel.is_cancelled() {
                return Err(Failure::without_response(ProviderError::Cancelled));
            }
            let (agent, generation) =
                self.pooled_agent(exchange.url, exchange.limits, proxy.as_ref());
            let guard = {
                let agent = agent.clone();
                let pooled = Arc::clone(&self.pooled);
                cancel.on_cancel(move || {
                    // Shut down exactly this agent; a newer pooled one is not ours to kill.
                    let mut slot = pooled.lock().unwrap_or_else(|p| p.into_inner());
                    if slot.as_ref().is_some_and(|p| p.generation == generation) {
                        *slot = None;
                    }
                    drop(slot);
                    agent.shutdown()
                })
            };
            conn::forget_last();
            let outcome = send_once(&agent, exchange);
            let connection = conn::last();
            let (failed, retry_after) = match outcome {
                Ok(response) if response.status().is_success() => {
                    self.contacted.store(true, Ordering::Relaxed);
                    if let Some(encoding) = compressed(&response) {
                        return Err(Failure::without_response(compressed_error(&encoding)));
                    }
                    return Ok(open_body(response, agent, connection, guard));
                }
                Ok(response) => {
                    self.contacted.store(true, Ordering::Relaxed);
                    let failed = http_failure(response, exchange.api_key_env);
                    let status = failed.status;
                    overloaded_in_a_row = match status {
                        503 | 529 => overloaded_in_a_row + 1,
                        _ => 0,
                    };
                    let handed_over = policy
                        .overloaded_attempts
                        .is_some_and(|n| overloaded_in_a_row >= n);
                    if !retry::is_retryable_status(status)
                        || attempt >= policy.max_retries
                        || handed_over
                    {
                        return Err(gave_up(failed.into_failure(), attempt));
                    }
                    let retry_after = failed.retry_after.clone();
                    (failed.into_failure(), retry_after)
                }
                Err(_) if cancel.is_cancelled() => {
                    return Err(Failure::without_response(ProviderError::Cancelled));
                }
                Err(err)
                    if !replaced_stale
                        && is_closed_before_reply(&err)
                        && connection.as_ref().is_some_and(Handle::was_reused) =>
                {
                    // The server closed the kept connection while it waited (its keep-alive
                    // timeout is shorter than the pause between turns): not a failure of
                    // this request, so no retry line and no backoff.
                    replaced_stale = true;
                    drop(guard);
                    self.forget_pooled(generation);
                    continue;
                }
                Err(err) if is_unreachable(&err) && !self.contacted.load(Ordering::Relaxed) => {
                    let quick = policy
                        .max_retries
                        .min(retry::FIRST_CONTACT_WAITS.len() as u32);
                    if attempt >= quick {
                        return Err(Failure::without_response(ProviderError::Unreachable {
                            url: exchange.url.to_string(),
                            provider: exchange.provider.to_string(),
                            attempts: attempt + 1,
                            via: proxy.as_ref().map(ChosenProxy::describe),
                            source: Box::new(err),
                        }));
                    }
                    drop(guard);
                    let wait = retry::FIRST_CONTACT_WAITS[attempt as usize];
                    if retry::sleep(wait, cancel).is_err() {
                        return Err(Failure::without_response(ProviderError::Cancelled));
                    }
                    attempt += 1;
                    continue;
                }
                Err(err) => {
                    let retryable = is_retryable_transport_error(&err);
                    let failure = Failure::without_response(transport_failure(
                        err,
                        exchange.url,
                        proxy.as_ref(),
                    ));
                    if !retryable || attempt >= policy.max_retries {
                        return Err(gave_up(failure, attempt));
                    }
                    (failure, None)
                }
            };
            drop(guard);
            let wait = retry::delay(policy, attempt, retry_after.as_deref(), SystemTime::now());
            // A rate limit that says how long to wait is honoured (up to `max_retry_after`)
            // outside the budget: waiting is what the server asked for.
            let told_to_wait = failed.status == 429 && retry_after.is_some();
            let wait = match told_to_wait {
                true => wait,
                false => match budget.take(wait) {
                    Some(wait) => wait,
                    None => return Err(gave_up(failed, attempt)),
                },
            };
            let retry = Retry {
                attempt: attempt + 2,
                max_attempts: policy.max_retries.saturating_add(1),
                wait,
                reason: failed.error.to_string(),
                status: (failed.status != 0).then_some(failed.status),
            };
            on_retry(retry, &failed);
            if retry::sleep(wait, cancel).is_err() {
                return Err(Failure::without_response(ProviderError::Cancelled));
            }
            attempt += 1;
        }
    }

    /// Drops the pooled agent of `generation`, so that the next attempt connects afresh.
    fn forget_pooled(&self, generation: u64) {
        let mut slot = self.pooled.lock().unwrap_or_else(|p| p.into_inner());
        if slot.as_ref().is_some_and(|p| p.generation == generation) {
            *slot = None;
        }
    }
}

/// ureq's resolver, except for a host that is an IP address (a local model server at
/// `http://127.0.0.1:8080`): that needs no lookup, while ureq's resolver spends a thread on
/// every lookup whenever a connect timeout is set, as it always is here.
#[derive(Debug, Default)]
struct LiteralFirst(DefaultResolver);

impl Resolver for LiteralFirst {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let literal = uri.host().and_then(|host| {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            host.parse::<std::net::IpAddr>().ok()
        });
        let port = uri.port_u16().or(match uri.scheme_str() {
            Some("http") => Some(80),
            Some("https") => Some(443),
            _ => None,
        });
        match (literal, port) {
            (Some(ip), Some(port)) => {
                let mut addresses = self.empty();
                addresses.push(std::net::SocketAddr::new(ip, port));
                Ok(addresses)
            }
            _ => self.0.resolve(uri, config, timeout),
        }
    }
}

fn send_once(
    agent: &Agent,
    exchange: &Exchange<'_>,
) -> Result<ureq::http::Response<ureq::Body>, ureq::Error> {
    match exchange.method {
        Method::Get => {
            let mut request = agent.get(exchange.url);
            for (name, value) in exchange.headers {
                request = request.header(name.as_str(), value.as_str());
            }
            request.call()
        }
        Method::Post => {
            let mut request = agent.post(exchange.url);
            for (name, value) in exchange.headers {
                request = request.header(name.as_str(), value.as_str());
            }
            let length: usize = exchange.body.iter().map(|part| part.len()).sum();
            // An explicit length keeps the body length-delimited, as one slice would be:
            // some local servers refuse chunked requests.
            let mut parts = Parts::new(exchange.body);
            request
                .header("content-length", length.to_string())
                .send(ureq::SendBody::from_reader(&mut parts))
        }
    }
}

/// Reads consecutive byte slices as one stream.
struct Parts<'a> {
    rest: &'a [&'a [u8]],
    at: usize,
}

impl<'a> Parts<'a> {
    fn new(parts: &'a [&'a [u8]]) -> Self {
        Parts { rest: parts, at: 0 }
    }
}

impl Read for Parts<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while let Some((part, later)) = self.rest.split_first() {
            if self.at < part.len() {
                let n = buf.len().min(part.len() - self.at);
                buf[..n].copy_from_slice(&part[self.at..self.at + n]);
                self.at += n;
                return Ok(n);
            }
            self.rest = later;
            self.at = 0;
        }
        Ok(0)
    }
}

fn open_body(
    response: ureq::http::Response<ureq::Body>,
    agent: Agent,
    connection: Option<Handle>,
    guard: HookGuard,
) -> OpenBody {
    let status = response.status().as_u16();
    let content_type = header(&response, "content-type");
    OpenBody {
        status,
        content_type,
        reader: response.into_body().into_reader(),
        connection,
        _agent: agent,
        _shutdown_on_cancel: guard,
    }
}

/// The body's `Content-Encoding` when it is not plain: the requests ask for `identity`,
/// and reasonix decodes no compression.
fn compressed(response: &ureq::http::Response<ureq::Body>) -> Option<String> {
    let encoding = String::from_utf8_lossy(response.headers().get("content-encoding")?.as_bytes())
        .trim()
        .to_ascii_lowercase();
    (!encoding.is_empty() && encoding != "identity").then_some(encoding)
}

fn compressed_error(encoding: &str) -> ProviderError {
    ProviderError::Reply(
        format!(
            "the server's reply is compressed ({}) although the request asked for none \
             (Accept-Encoding: identity); a proxy in between may be compressing it",
            crate::text::one_line(encoding, 40)
        )
        .into(),
    )
}

/// A response header as text; `None` when absent. Bytes outside ASCII (obs-text, which
/// HTTP allows) are read as Latin-1.
pub fn header(response: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    let value = response.headers().get(name)?;
    Some(match value.to_str() {
        Ok(text) => text.to_string(),
        Err(_) => value.as_bytes().iter().map(|&b| char::from(b)).collect(),
    })
}

/// A non-2xx response, read and classified.
struct HttpFailure {
    status: u16,
    body: String,
    retry_after: Option<String>,
    error: ProviderError,
}

impl HttpFailure {
    fn into_failure(self) -> Failure {
        Failure {
            error: self.error,
            status: self.status,
            body: self.body,
        }
    }
}

fn http_failure(response: ureq::http::Response<ureq::Body>, api_key_env: &str) -> HttpFailure {
    let status = response.status().as_u16();
    let retry_after = header(&response, "retry-after");
    let location = header(&response, "location");
    let mut raw = Vec::new();
    // The body only feeds the message; a read error leaves whatever arrived.
    let _ = response
        .into_body()
        .into_reader()
        .take(ERROR_BODY_LIMIT)
        .read_to_end(&mut raw);
    let body = String::from_utf8_lossy(&raw).into_owned();
    let error = status_error(status, &body, api_key_env, location.as_deref());
    HttpFailure {
        status,
        body,
        retry_after,
        error,
    }
}

/// The error for an HTTP status and its body, shared by live requests and replays.
pub fn status_error(
    status: u16,
    body: &str,
    api_key_env: &str,
    location: Option<&str>,
) -> ProviderError {
    let mut message = error_message(body);
    if let Some(location) = location.filter(|_| (300..400).contains(&status)) {
        message = format!("redirected to {location}; point base_url at the final address");
    }
    if message.is_empty() {
        message = match status {
            401 | 403 => "the server rejected the credentials".to_string(),
            _ => "the server gave no details".to_string(),
        };
    }
    match status {
        401 | 403 => ProviderError::Auth {
            status,
            api_key_env: api_key_env.to_string(),
            message,
        },
        _ => ProviderError::Http { status, message },
    }
}

/// One line from an error body: the OpenAI error object's message, a few other common
/// shapes, else the first non-empty line.
pub fn error_message(body: &str) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| json_error_message(&v));
    let text = match from_json {
        Some(message) => message,
        None => body
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string(),
    };
    crate::text::one_line(&text, 300)
}

fn json_error_message(value: &serde_json::Value) -> Option<String> {
    let candidates = [
        value.pointer("/error/message"),
        value.get("error"),
        value.get("message"),
        value.get("detail"),
        value.pointer("/detail/0/msg"),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|v| v.as_str().map(str::to_string))
}

fn gave_up(mut failure: Failure, retries: u32) -> Failure {
    if retries == 0 {
        return failure;
    }
    let suffix = format!(" (gave up after {retries} retries)");
    failure.error = match failure.error {
        ProviderError::Http { status, message } => ProviderError::Http {
            status,
            message: message + &suffix,
        },
        ProviderError::Connect(detail) => ProviderError::Connect(Detail {
            text: detail.text + &suffix,
            cause: detail.cause,
        }),
        ProviderError::Dropped(detail) => ProviderError::Dropped(Detail {
            text: detail.text + &suffix,
            cause: detail.cause,
        }),
        ProviderError::Reply(detail) => ProviderError::Reply(Detail {
            text: detail.text + &suffix,
            cause: detail.cause,
        }),
        other => other,
    };
    failure
}

/// A refused connection or a name that does not resolve: on first contact that is a wrong
/// `base_url`, a server (or proxy) that is not running, not a passing failure.
fn is_unreachable(err: &ureq::Error) -> bool {
    is_name_error(err)
        || matches!(err, ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused)
}

/// The host name does not resolve. ureq reports an empty answer as `HostNotFound`, but a
/// failed lookup as the I/O error std's resolver gives, which has no stable kind.
pub(crate) fn is_name_error(err: &ureq::Error) -> bool {
    match err {
        ureq::Error::HostNotFound => true,
        ureq::Error::Io(io) => io.to_string().starts_with("failed to lookup address"),
        _ => false,
    }
}

/// The connection was open and closed (or reset) before any byte of a reply: what a kept
/// connection the server gave up on looks like.
fn is_closed_before_reply(err: &ureq::Error) -> bool {
    use std::io::ErrorKind;
    matches!(err, ureq::Error::Io(io) if matches!(
        io.kind(),
        ErrorKind::UnexpectedEof
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
    ))
}

/// The connection was up when it failed: the peer closed or reset it, or the wait for the
/// reply timed out. A refused connection, a failed lookup or handshake is not.
fn is_dropped_after_connect(err: &ureq::Error) -> bool {
    is_closed_before_reply(err)
        || matches!(
            err,
            ureq::Error::Timeout(
                Timeout::SendRequest | Timeout::SendBody | Timeout::RecvResponse | Timeout::PerRead
            )
        )
}

/// Whether the server's reply itself was at fault: not HTTP that can be read, a head too
/// large or too slow to arrive whole.
fn is_bad_reply(err: &ureq::Error) -> bool {
    matches!(
        err,
        ureq::Error::Protocol(_)
            | ureq::Error::LargeResponseHeader(..)
            | ureq::Error::Timeout(Timeout::RecvResponse)
    )
}

fn is_retryable_transport_error(err: &ureq::Error) -> bool {
    match err {
        ureq::Error::Io(io) => !is_certificate_error(io),
        ureq::Error::ConnectionFailed | ureq::Error::BodyStalled => true,
        ureq::Error::Timeout(t) => !matches!(t, Timeout::Global),
        other => is_bad_reply(other),
    }
}

/// The error for a failed exchange that got no response: the connection's, the reply's or
/// the proxy's, each with the fix it needs.
fn transport_failure(err: ureq::Error, url: &str, proxy: Option<&ChosenProxy>) -> ProviderError {
    let detail = describe_error(&err, url, proxy);
    if is_bad_reply(&err) {
        ProviderError::Reply(Detail::caused(detail, err))
    } else if is_dropped_after_connect(&err) {
        ProviderError::Dropped(Detail::caused(detail, err))
    } else {
        ProviderError::Connect(Detail::caused(detail, err))
    }
}

/// A one-line account of a failed exchange that names the fix when there is one; `proxy`
/// is the proxy it went through, named when the failure is the proxy's.
fn describe_error(err: &ureq::Error, url: &str, proxy: Option<&ChosenProxy>) -> String {
    let host = parse_url(url)
        .ok()
        .and_then(|u| u.authority().map(|a| a.to_string()))
        .unwrap_or_else(|| url.to_string());
    if let Some(proxy) = proxy {
        let via = proxy.describe();
        match err {
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                return format!(
                    "{via} refused the connection; is the proxy running? (NO_PROXY lists hosts \
                     reached directly)"
                );
            }
            ureq::Error::Timeout(Timeout::Connect) => {
                return format!("{via} did not answer within the connect timeout");
            }
            _ if is_name_error(err) => {
                return format!("cannot resolve the proxy host of {via}");
            }
            ureq::Error::ConnectProxyFailed(detail) => {
                return format!(
                    "proxy refused the tunnel to {host} ({}); check {via} or list the host in \
                     NO_PROXY",
                    proxy_refusal(detail)
                );
            }
            _ if proxy.proxy.protocol() == ProxyProtocol::Https && is_tls_error(err) => {
                return format!(
                    "TLS with the proxy of {via} (or with {host} through it) failed: {err}; for \
                     a private CA set SSL_CERT_FILE or ca_file in the provider config"
                );
            }
            _ => {}
        }
    }
    describe_transport_error(err, url)
}

/// ureq's "proxy server responded 403/403" as "HTTP 403".
fn proxy_refusal(detail: &str) -> String {
    match detail
        .strip_prefix("proxy server responded ")
        .and_then(|rest| rest.split('/').next())
    {
        Some(status) => format!("HTTP {status}"),
        None => detail.to_string(),
    }
}

fn is_tls_error(err: &ureq::Error) -> bool {
    match err {
        ureq::Error::Io(io) => is_certificate_error(io),
        ureq::Error::Rustls(_) | ureq::Error::Tls(_) => true,
        _ => false,
    }
}

/// A one-line account of a transport failure that names the fix when there is one.
pub fn describe_transport_error(err: &ureq::Error, url: &str) -> String {
    let host = parse_url(url)
        .ok()
        .and_then(|u| u.authority().map(|a| a.to_string()))
        .unwrap_or_else(|| url.to_string());
    match err {
        ureq::Error::Io(io) if is_certificate_error(io) => format!(
            "TLS with {host} failed: {io}; for a private CA set ca_file in the provider config"
        ),
        ureq::Error::Io(io) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => {
                format!("{host} refused the connection; is the server running?")
            }
            std::io::ErrorKind::UnexpectedEof => {
                format!("{host} closed the connection before it replied")
            }
            _ => format!("{host}: {io}"),
        },
        _ if is_name_error(err) => format!("cannot resolve host {host}; check base_url"),
        ureq::Error::Timeout(Timeout::RecvResponse) => {
            format!("the server's reply head did not arrive in time from {host} (timeouts.head_seconds)")
        }
        ureq::Error::Timeout(Timeout::PerRead) => {
            format!("{host} sent nothing for the idle limit (timeouts.idle_seconds)")
        }
        ureq::Error::Timeout(t) => format!("{host}: timed out ({t})"),
        ureq::Error::Rustls(tls) => format!(
            "TLS with {host} failed: {tls}; for a private CA set ca_file in the provider config"
        ),
        ureq::Error::Tls(detail) => format!("TLS with {host} failed: {detail}"),
        ureq::Error::ConnectProxyFailed(detail) => format!(
            "proxy refused the tunnel to {host} ({}); check HTTPS_PROXY/HTTP_PROXY",
            proxy_refusal(detail)
        ),
        ureq::Error::Protocol(detail) => {
            format!("the server's reply from {host} is not HTTP/1.1 that can be read: {detail}")
        }
        ureq::Error::LargeResponseHeader(_, limit) => {
            format!("the server's reply head from {host} passed {limit} bytes")
        }
        other => format!("{host}: {other}"),
    }
}

/// rustls reports a certificate it cannot verify as an `InvalidData` I/O error during the
/// handshake; retrying cannot fix that, and the user needs to hear about `ca_file`.
fn is_certificate_error(io: &std::io::Error) -> bool {
    io.kind() == std::io::ErrorKind::InvalidData && io.to_string().contains("certificate")
}

pub fn parse_url(url: &str) -> Result<Uri, ProviderError> {
    let uri: Uri = url
        .parse()
        .map_err(|_| ProviderError::Config(format!("invalid URL `{url}`").into()))?;
    match uri.scheme_str() {
        Some("http") | Some("https") if uri.host().is_some() => Ok(uri),
        _ => Err(ProviderError::Config(
            format!("URL `{url}` must start with http:// or https:// and name a host").into(),
        )),
    }
}

/// The proxy for `uri` from the environment: `https_proxy`/`HTTPS_PROXY` for https targets,
/// `http_proxy`/`HTTP_PROXY` for http ones, then `all_proxy`/`ALL_PROXY`; lowercase wins as
/// with curl. `NO_PROXY` (hosts, domain suffixes, IPs, CIDR blocks, `*`) bypasses it, and so
/// does a loopback host, as in Go's net/http: a local model server is never behind the
/// corporate proxy. An `http://` or `https://` proxy (Basic auth in its URL) is ureq's to
/// speak; a SOCKS one is refused.
pub fn proxy_for(
    uri: &Uri,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ChosenProxy>, ProviderError> {
    let host = uri
        .host()
        .unwrap_or("")
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    if is_loopback(&host) {
        return Ok(None);
    }
    let no_proxy = env("no_proxy").or_else(|| env("NO_PROXY"));
    if no_proxy.is_some_and(|list| no_proxy_matches(&list, &host)) {
        return Ok(None);
    }
    let names: [&'static str; 4] = if uri.scheme_str() == Some("https") {
        ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
    } else {
        ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
    };
    let Some((variable, value)) = names
        .iter()
        .find_map(|name| env(name).map(|value| (*name, value)))
    else {
        return Ok(None);
    };
    let value = value.trim();
    if value
        .get(..5)
        .is_some_and(|s| s.eq_ignore_ascii_case("socks"))
    {
        return Err(socks_refused(variable));
    }
    let proxy = Proxy::new(value).map_err(|_| {
        ProviderError::Config(format!("{variable} is not a valid proxy URL: `{value}`").into())
    })?;
    if !matches!(proxy.protocol(), ProxyProtocol::Http | ProxyProtocol::Https) {
        return Err(socks_refused(variable));
    }
    Ok(Some(ChosenProxy { variable, proxy }))
}

fn socks_refused(variable: &str) -> ProviderError {
    ProviderError::Config(
        format!(
            "{variable} names a SOCKS proxy, which reasonix does not support; use an HTTP proxy \
             (http:// or https://)"
        )
        .into(),
    )
}

fn is_loopback(host: &str) -> bool {
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// curl's NO_PROXY rules plus CIDR blocks: `example.com` and `.example.com` both match the
/// domain and its subdomains; a `:port` suffix on an entry is ignored.
pub fn no_proxy_matches(list: &str, host: &str) -> bool {
    list.split([',', ' '])
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .any(|entry| no_proxy_entry_matches(&entry, host))
}

fn no_proxy_entry_matches(entry: &str, host: &str) -> bool {
    if entry == "*" {
        return true;
    }
    if let Some((net, bits)) = entry.split_once('/') {
        return cidr_contains(net, bits, host);
    }
    let entry = strip_port(entry.trim_start_matches("*.").trim_start_matches('.'));
    let entry = entry.trim_start_matches('[').trim_end_matches(']');
    host == entry
        || (host.len() > entry.len()
            && host.ends_with(entry)
            && host.as_bytes()[host.len() - entry.len() - 1] == b'.')
}

fn strip_port(entry: &str) -> &str {
    if entry.starts_with('[') {
        return entry.split(']').next().unwrap_or(entry);
    }
    match entry.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.chars().all(|c| c.is_ascii_digit()) => {
            name
        }
        _ => entry,
    }
}

fn cidr_contains(net: &str, bits: &str, host: &str) -> bool {
    use std::net::IpAddr;
    let (Ok(net), Ok(bits), Ok(ip)) = (
        net.parse::<IpAddr>(),
        bits.parse::<u32>(),
        host.parse::<IpAddr>(),
    ) else {
        return false;
    };
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(i)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(n) & mask == u32::from(i) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(i)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(n) & mask == u128::from(i) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::roots::env_of;
    use super::*;

    #[test]
    fn an_ip_address_host_is_its_own_address_and_a_name_is_looked_up() {
        let config = Agent::config_builder().build();
        let timeout = NextTimeout {
            after: ureq::unversioned::transport::time::Duration::from_secs(5),
            reason: Timeout::Connect,
            per_read: None,
            per_write: None,
        };
        let resolve = |url: &str| {
            let uri: Uri = url.parse().unwrap();
            let found = LiteralFirst::default()
                .resolve(&uri, &config, timeout)
                .map(|addresses| addresses.iter().map(|a| a.to_string()).collect::<Vec<_>>());
            found.map_err(|e| e.to_string())
        };
        assert_eq!(
            resolve("http://127.0.0.1:8080/v1").unwrap(),
            vec!["127.0.0.1:8080"]
        );
        assert_eq!(resolve("http://[::1]/v1").unwrap(), vec!["[::1]:80"]);
        assert_eq!(
            resolve("https://10.0.0.7/v1").unwrap(),
            vec!["10.0.0.7:443"]
        );
        // A name goes to ureq's resolver: localhost resolves to a loopback address.
        let local = resolve("http://localhost:9/v1").unwrap();
        assert!(
            local
                .iter()
                .all(|a| a.starts_with("127.") || a.starts_with("[::1]")),
            "{local:?}"
        );
    }

    #[test]
    fn urls_must_be_http_or_https() {
        assert!(parse_url("http://127.0.0.1:1/v1").is_ok());
        assert!(parse_url("https://api.deepseek.com").is_ok());
        for bad in ["ftp://x", "api.deepseek.com", "", "https://"] {
            let err = parse_url(bad).unwrap_err();
            assert!(matches!(err, ProviderError::Config(_)), "{bad}: {err}");
        }
    }

    #[test]
    fn error_messages_come_from_the_openai_error_object_or_the_first_line() {
        assert_eq!(
            error_message(r#"{"error":{"message":"Rate limit\nreached","type":"x"}}"#),
            "Rate limit reached"
        );
        assert_eq!(error_message(r#"{"error":"bad model"}"#), "bad model");
        assert_eq!(error_message(r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(
            error_message("\n  <html>oops</html>\nmore"),
            "<html>oops</html>"
        );
        assert_eq!(error_message(""), "");
        assert!(error_message(&"x".repeat(1000)).chars().count() <= 301);
        let err = status_error(302, "", "K", Some("https://elsewhere/v1"));
        assert!(err.to_string().contains("https://elsewhere/v1"), "{err}");
        let err = status_error(403, "", "MY_KEY", None);
        assert!(
            matches!(err, ProviderError::Auth { status: 403, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("$MY_KEY"), "{err}");
    }

    fn proxy_host(url: &str, pairs: &[(&str, &str)]) -> Option<String> {
        let uri = parse_url(url).unwrap();
        proxy_for(&uri, &env_of(pairs))
            .unwrap()
            .map(|c| format!("{}:{}", c.proxy.host(), c.proxy.port()))
    }

    #[test]
    fn proxy_is_chosen_by_target_scheme_and_lowercase_wins() {
        let env = [
            ("HTTPS_PROXY", "http://secure:1"),
            ("HTTP_PROXY", "http://plain:2"),
        ];
        assert_eq!(
            proxy_host("https://api.x.com/v1", &env).unwrap(),
            "secure:1"
        );
        assert_eq!(proxy_host("http://api.x.com/v1", &env).unwrap(), "plain:2");
        let env = [
            ("https_proxy", "lower:3"),
            ("HTTPS_PROXY", "http://upper:4"),
        ];
        assert_eq!(proxy_host("https://api.x.com", &env).unwrap(), "lower:3");
        let env = [("ALL_PROXY", "http://all:5")];
        assert_eq!(proxy_host("http://api.x.com", &env).unwrap(), "all:5");
        assert_eq!(
            proxy_host("https://api.x.com", &[("HTTP_PROXY", "p:6")]),
            None
        );
        assert_eq!(proxy_host("https://api.x.com", &[]), None);
    }

    #[test]
    fn no_proxy_and_loopback_bypass_the_proxy() {
        let env = [
            ("HTTPS_PROXY", "http://proxy:1"),
            (
                "NO_PROXY",
                "internal.corp, .example.org,10.0.0.0/8 ,api.local:8080",
            ),
        ];
        assert_eq!(proxy_host("https://internal.corp/v1", &env), None);
        assert_eq!(proxy_host("https://a.b.internal.corp/v1", &env), None);
        assert_eq!(proxy_host("https://example.org/v1", &env), None);
        assert_eq!(proxy_host("https://10.1.2.3/v1", &env), None);
        assert_eq!(proxy_host("https://api.local/v1", &env), None);
        assert!(proxy_host("https://notinternal.corp/v1", &env).is_some());
        assert!(proxy_host("https://11.1.2.3/v1", &env).is_some());
        for local in [
            "https://127.0.0.1:8080",
            "https://localhost",
            "http://[::1]:9",
        ] {
            assert_eq!(proxy_host(local, &env), None, "{local}");
        }
        let all = [("HTTPS_PROXY", "http://proxy:1"), ("no_proxy", "*")];
        assert_eq!(proxy_host("https://api.x.com", &all), None);
    }

    #[test]
    fn socks_and_garbage_proxies_are_config_errors_naming_the_variable() {
        let uri = parse_url("https://api.x.com").unwrap();
        let err = proxy_for(&uri, &env_of(&[("HTTPS_PROXY", "socks5://p:1080")])).unwrap_err();
        assert!(err.to_string().contains("HTTPS_PROXY"), "{err}");
        assert!(err.to_string().contains("SOCKS"), "{err}");
        let err = proxy_for(&uri, &env_of(&[("https_proxy", "http://[bad")])).unwrap_err();
        assert!(err.to_string().contains("https_proxy"), "{err}");
    }
}
