//! HTTP transport for providers: TLS trust roots, the connection kept for the next
//! request, and the retry loop that runs until a response body starts.
//!
//! The requests go through the provider's own HTTP/1.1 client (`http`); what the bytes mean
//! is left to `openai`; when to retry and how long to wait, to `retry`; which proxy to use,
//! to `proxy`. MCP servers and OAuth take a ureq agent from here ([`Net::agent`]) with the
//! same roots and proxy rules.
//! Nothing else in the crate opens a network connection to a model server.

use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use ureq::http::Uri;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use ureq::Agent;

use super::http::{self, HttpError, Idle};
use super::proxy::proxy_for;
use super::retry;
use super::{Cause, Detail, ProviderError, ProviderSettings, Retry, RetryPolicy};
use crate::cancel::{CancelToken, HookGuard};

/// The read and write buffers of one ureq connection (see [`Net::agent`]).
const IO_BUFFER_INPUT: usize = 64 * 1024;
const IO_BUFFER_OUTPUT: usize = 16 * 1024;

/// Error bodies are read up to this size; the message we show is one line of it anyway.
const ERROR_BODY_LIMIT: u64 = 64 * 1024;

/// Distro CA bundle locations, most common first.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/usr/local/etc/openssl/cert.pem",
    "/usr/local/share/certs/ca-root-nss.crt",
    "/etc/certs/ca-certificates.crt",
];

/// Everything needed to open connections for one provider, built once.
#[derive(Clone)]
pub struct Net {
    tls: TlsConfig,
    /// The roots again, for the provider's own client, whose TLS configuration is built on
    /// the first https connection (parsing a bundle of roots costs milliseconds at start-up).
    root_certs: RootCerts,
    tls_client: Arc<OnceLock<Result<Arc<rustls::ClientConfig>, String>>>,
    roots: Arc<str>,
    connect_timeout: Duration,
    /// The connection the next request reuses (keep-alive saves a TLS handshake per turn).
    /// A cancel empties it, so the next request starts afresh.
    idle: Idle,
    /// Some HTTP response has arrived through this transport: from then on a refused
    /// connection is a hiccup worth the full backoff, not a server that is not there.
    contacted: Arc<AtomicBool>,
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Net")
            .field("roots", &self.roots)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

/// Per-exchange limits on top of the connect timeout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// No byte for this long fails the read (the idle-stream watchdog).
    pub per_read: Option<Duration>,
    /// The whole exchange, for one-shot probes.
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
/// connection; reading it to the end keeps the connection for the next request.
pub struct OpenBody {
    pub status: u16,
    pub content_type: Option<String>,
    pub reader: http::Body,
    _shutdown_on_cancel: HookGuard,
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

/// Where one exchange's request goes: the server, the proxy in between, and the key under
/// which its connection is kept.
struct Route {
    target: http::Target,
    proxy: Option<ureq::Proxy>,
    key: String,
}

impl Route {
    fn new(url: &str) -> Result<Route, ProviderError> {
        let uri = parse_url(url)?;
        let proxy = proxy_for(&uri, &env_lookup)?;
        let target = http::Target::new(&uri);
        let key = format!(
            "{}://{} via {}",
            uri.scheme_str().unwrap_or(""),
            target.host_port(),
            proxy
                .as_ref()
                .map(|p| p.uri().to_string())
                .unwrap_or_default()
        );
        Ok(Route { target, proxy, key })
    }

    /// TLS with the server, or with an `https://` proxy in front of it: either is checked
    /// against the loaded roots.
    fn needs_tls(&self) -> bool {
        self.target.https
            || self
                .proxy
                .as_ref()
                .is_some_and(|p| p.protocol() == ureq::ProxyProtocol::Https)
    }
}

impl Net {
    /// Transport for talking to `url`. Trust roots are loaded only for https, so a broken
    /// CA setup never stands between the user and a plain-http local model server.
    pub fn new(settings: &ProviderSettings, url: &str) -> Result<Net, ProviderError> {
        Net::for_url(url, settings.ca_file.as_deref(), settings.timeouts.connect)
    }

    /// The same trust roots and proxy rules for a server that is not a provider (an MCP
    /// server over HTTP).
    pub fn for_url(
        url: &str,
        ca_file: Option<&Path>,
        connect_timeout: Duration,
    ) -> Result<Net, ProviderError> {
        // An https server, or an `https://` proxy in front of any server (a bad proxy
        // variable is reported by the request that would use it).
        let needs_roots =
            url.starts_with("https://") || Route::new(url).is_ok_and(|route| route.needs_tls());
        let (roots, description) = if needs_roots {
            load_roots(ca_file, &env_lookup)?
        } else {
            (RootCerts::WebPki, "not used (plain http)".to_string())
        };
        Ok(Net {
            tls: TlsConfig::builder().root_certs(roots.clone()).build(),
            root_certs: roots,
            tls_client: Arc::default(),
            roots: description.into(),
            connect_timeout,
            idle: Arc::default(),
            contacted: Arc::default(),
        })
    }

    /// Where the trusted CA certificates came from, for `reasonix doctor`.
    pub fn roots_description(&self) -> &str {
        &self.roots
    }

    /// A fresh ureq agent for an exchange with `url` (MCP servers and OAuth).
    pub fn agent(&self, url: &str, limits: Limits) -> Result<Agent, ProviderError> {
        let uri = parse_url(url)?;
        let proxy = proxy_for(&uri, &env_lookup)?;
        let config = Agent::config_builder()
            .http_status_as_error(false)
            // A redirected POST would silently become a GET; report the 3xx instead.
            .max_redirects(0)
            .proxy(proxy)
            .tls_config(self.tls.clone())
            .timeout_connect(Some(self.connect_timeout))
            .timeout_per_read(limits.per_read)
            .timeout_global(limits.total)
            // The caller sends User-Agent and Accept itself, exactly once.
            .user_agent("")
            .accept("")
            // ureq's defaults are 128 KiB each, zero-filled per connection: 256 KiB touched
            // for every new connection, held twice while an old connection's buffers are not
            // yet freed. The input buffer still holds the largest response head ureq accepts
            // (`max_response_header_size`, 64 KiB).
            .input_buffer_size(IO_BUFFER_INPUT)
            .output_buffer_size(IO_BUFFER_OUTPUT)
            .build();
        Ok(Agent::new_with_config(config))
    }

    /// The TLS configuration of the provider's client, built once.
    fn tls_client(&self) -> Result<Arc<rustls::ClientConfig>, ProviderError> {
        self.tls_client
            .get_or_init(|| http::client_config(&self.root_certs).map_err(|e| e.to_string()))
            .clone()
            .map_err(|e| ProviderError::Config(format!("TLS setup failed: {e}").into()))
    }

    /// Runs `exchange`, retrying retryable failures with backoff until a 2xx response head
    /// arrives, the policy gives up, or `cancel` fires. Each retry is reported to `on_retry`
    /// before its wait. A server that refuses or does not resolve before this transport ever
    /// got a response is given only the quick [`retry::FIRST_CONTACT_WAITS`], unreported.
    pub fn send(
        &self,
        exchange: &Exchange<'_>,
        policy: &RetryPolicy,
        cancel: &CancelToken,
        on_retry: &mut dyn FnMut(Retry, &Failure),
    ) -> Result<OpenBody, Failure> {
        let route = Route::new(exchange.url).map_err(Failure::without_response)?;
        let tls = match route.needs_tls() {
            true => Some(self.tls_client().map_err(Failure::without_response)?),
            false => None,
        };
        let mut attempt = 0u32;
        loop {
            if cancel.is_cancelled() {
                return Err(Failure::without_response(ProviderError::Cancelled));
            }
            // The socket of this attempt, for a cancel to shut down from its thread.
            let live: Arc<Mutex<Option<TcpStream>>> = Arc::default();
            let guard = {
                let live = Arc::clone(&live);
                let idle = Arc::clone(&self.idle);
                cancel.on_cancel(move || {
                    if let Some(socket) = live.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                        http::shut(socket);
                    }
                    idle.lock().unwrap_or_else(|p| p.into_inner()).take();
                })
            };
            let (failed, retry_after) =
                match self.attempt(exchange, &route, tls.as_ref(), &live, cancel) {
                    Ok(response) if (200..300).contains(&response.head.status) => {
                        self.contacted.store(true, Ordering::Relaxed);
                        return Ok(open_body(response, guard));
                    }
                    Ok(response) => {
                        self.contacted.store(true, Ordering::Relaxed);
                        let failed = http_failure(response, exchange.api_key_env);
                        let status = failed.status;
                        if !retry::is_retryable_status(status) || attempt >= policy.max_retries {
                            return Err(gave_up(failed.into_failure(), attempt));
                        }
                        let retry_after = failed.retry_after.clone();
                        (failed.into_failure(), retry_after)
                    }
                    Err(_) if cancel.is_cancelled() => {
                        return Err(Failure::without_response(ProviderError::Cancelled));
                    }
                    Err(err) if err.is_unreachable() && !self.contacted.load(Ordering::Relaxed) => {
                        let quick = policy
                            .max_retries
                            .min(retry::FIRST_CONTACT_WAITS.len() as u32);
                        if attempt >= quick {
                            return Err(Failure::without_response(ProviderError::Unreachable {
                                url: exchange.url.to_string(),
                                provider: exchange.provider.to_string(),
                                attempts: attempt + 1,
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
                        let retryable = err.is_retryable();
                        let detail = describe_http_error(&err, exchange.url);
                        let error = match err.is_dropped_after_connect() {
                            true => ProviderError::Dropped(Detail::caused(detail, err)),
                            false => ProviderError::Connect(Detail::caused(detail, err)),
                        };
                        let failure = Failure::without_response(error);
                        if !retryable || attempt >= policy.max_retries {
                            return Err(gave_up(failure, attempt));
                        }
                        (failure, None)
                    }
                };
            drop(guard);
            let wait = retry::delay(policy, attempt, retry_after.as_deref(), SystemTime::now());
            let retry = Retry {
                attempt: attempt + 2,
                max_attempts: policy.max_retries.saturating_add(1),
                wait,
                reason: failed.error.to_string(),
            };
            on_retry(retry, &failed);
            if retry::sleep(wait, cancel).is_err() {
                return Err(Failure::without_response(ProviderError::Cancelled));
            }
            attempt += 1;
        }
    }

    /// One attempt: on the kept connection when there is one for this route, and on a fresh
    /// one when there is none or the kept one turns out to have been closed by the server
    /// while it waited (no byte of an answer came back).
    fn attempt(
        &self,
        exchange: &Exchange<'_>,
        route: &Route,
        tls: Option<&Arc<rustls::ClientConfig>>,
        live: &Mutex<Option<TcpStream>>,
        cancel: &CancelToken,
    ) -> Result<http::Response, HttpError> {
        let request = http::Request {
            method: match exchange.method {
                Method::Get => "GET",
                Method::Post => "POST",
            },
            target: &route.target,
            fields: exchange.headers,
            body: (exchange.method == Method::Post).then_some(exchange.body),
        };
        let limits = (exchange.limits.per_read, exchange.limits.total);
        let mut watch = |socket: &TcpStream| {
            *live.lock().unwrap_or_else(|p| p.into_inner()) = socket.try_clone().ok();
            if cancel.is_cancelled() {
                http::shut(socket);
            }
        };
        let kept = self
            .idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .filter(|conn| conn.key == route.key);
        if let Some(conn) = kept {
            if let Some(socket) = conn.socket() {
                watch(socket);
            }
            match http::exchange(conn, &request, limits, Some(Arc::clone(&self.idle))) {
                Ok(response) => return Ok(response),
                Err((_, false)) if !cancel.is_cancelled() => {}
                Err((err, _)) => return Err(err),
            }
        }
        let conn = http::open(
            &route.target,
            route.proxy.as_ref(),
            tls,
            self.connect_timeout,
            route.key.clone(),
            &mut watch,
        )?;
        http::exchange(conn, &request, limits, Some(Arc::clone(&self.idle))).map_err(|(err, _)| err)
    }
}

fn open_body(response: http::Response, guard: HookGuard) -> OpenBody {
    OpenBody {
        status: response.head.status,
        content_type: response.head.get("content-type").map(str::to_string),
        reader: response.body,
        _shutdown_on_cancel: guard,
    }
}

/// A response header as text; `None` when absent or not visible ASCII.
pub fn header(response: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
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

fn http_failure(response: http::Response, api_key_env: &str) -> HttpFailure {
    let status = response.head.status;
    let retry_after = response.head.get("retry-after").map(str::to_string);
    let location = response.head.get("location").map(str::to_string);
    let mut raw = Vec::new();
    // The body only feeds the message; a read error leaves whatever arrived.
    let _ = response.body.take(ERROR_BODY_LIMIT).read_to_end(&mut raw);
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
        other => other,
    };
    failure
}

/// The host name does not resolve.
pub(crate) fn is_name_error(err: &HttpError) -> bool {
    matches!(err, HttpError::Resolve { .. })
}

/// A one-line account of a failed provider exchange that names the fix when there is one.
pub fn describe_http_error(err: &HttpError, url: &str) -> String {
    let host = parse_url(url)
        .ok()
        .and_then(|u| u.authority().map(|a| a.to_string()))
        .unwrap_or_else(|| url.to_string());
    match err {
        HttpError::Tls(tls) if err.is_certificate() => format!(
            "TLS with {host} failed: {tls}; for a private CA set ca_file in the provider config"
        ),
        HttpError::Tls(tls) => format!("TLS with {host} failed: {tls}"),
        HttpError::Connect(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            format!("{host} refused the connection; is the server running?")
        }
        HttpError::Resolve { .. } => format!("cannot resolve host {host}; check base_url"),
        HttpError::ProxyTls(tls) => format!(
            "TLS with the proxy for {host} failed: {tls}; for a private CA set SSL_CERT_FILE \
             or ca_file in the provider config"
        ),
        HttpError::Proxy(detail) => {
            format!("proxy refused the tunnel to {host}: {detail}; check HTTPS_PROXY/HTTP_PROXY")
        }
        HttpError::Header(detail) => {
            format!("{detail}; fix the provider's headers in the configuration")
        }
        other => format!("{host}: {other}"),
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
            _ => format!("{host}: {io}"),
        },
        ureq::Error::HostNotFound => format!("cannot resolve host {host}; check base_url"),
        ureq::Error::Timeout(t) => format!("{host}: timed out ({t})"),
        ureq::Error::Rustls(tls) => format!(
            "TLS with {host} failed: {tls}; for a private CA set ca_file in the provider config"
        ),
        ureq::Error::Tls(detail) => format!("TLS with {host} failed: {detail}"),
        ureq::Error::ConnectProxyFailed(detail) => {
            format!("proxy refused the tunnel to {host}: {detail}; check HTTPS_PROXY/HTTP_PROXY")
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

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The trusted roots: the system bundle (`SSL_CERT_FILE`, `SSL_CERT_DIR`, then the usual
/// distro paths) plus `ca_file`; ureq's bundled Mozilla roots when no system bundle exists.
/// Returns the roots and a description for `reasonix doctor`.
pub fn load_roots(
    ca_file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(RootCerts, String), ProviderError> {
    let (mut certs, mut description) = system_roots(env)?;
    if let Some(path) = ca_file {
        let extra = read_pem_certs(path)
            .map_err(|cause| unreadable_certs(format!("ca_file {}", path.display()), cause))?;
        if extra.is_empty() {
            return Err(ProviderError::Config(
                format!("ca_file {} holds no PEM certificate", path.display()).into(),
            ));
        }
        if certs.is_empty() {
            description = "ca_file only (no system CA bundle found)".to_string();
        }
        description = format!(
            "{description} + ca_file {} ({} certificates)",
            path.display(),
            extra.len()
        );
        certs.extend(extra);
    }
    if certs.is_empty() {
        return Ok((RootCerts::WebPki, description));
    }
    Ok((RootCerts::new_with_certs(&certs), description))
}

fn system_roots(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Vec<Certificate<'static>>, String), ProviderError> {
    if let Some(file) = env("SSL_CERT_FILE") {
        let certs = read_pem_certs(Path::new(&file))
            .map_err(|cause| unreadable_certs(format!("SSL_CERT_FILE {file}"), cause))?;
        let description = format!("SSL_CERT_FILE {file} ({} certificates)", certs.len());
        return Ok((certs, description));
    }
    if let Some(dirs) = env("SSL_CERT_DIR") {
        let mut certs = Vec::new();
        for dir in dirs.split(':').filter(|d| !d.is_empty()) {
            certs.extend(read_cert_dir(Path::new(dir)));
        }
        let description = format!("SSL_CERT_DIR {dirs} ({} certificates)", certs.len());
        return Ok((certs, description));
    }
    for path in SYSTEM_BUNDLES {
        if let Ok(certs) = read_pem_certs(Path::new(path)) {
            if !certs.is_empty() {
                let description = format!("system bundle {path} ({} certificates)", certs.len());
                return Ok((certs, description));
            }
        }
    }
    Ok((Vec::new(), "bundled Mozilla roots".to_string()))
}

fn read_cert_dir(dir: &Path) -> Vec<Certificate<'static>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    let mut seen = std::collections::HashSet::new();
    paths
        .iter()
        .filter(|p| p.is_file())
        .flat_map(|p| read_pem_certs(p).unwrap_or_default())
        .filter(|c| seen.insert(c.der().to_vec()))
        .collect()
}

/// The certificates in a PEM file: an I/O cause when it cannot be read, a transport one when
/// it is not PEM.
fn read_pem_certs(path: &Path) -> Result<Vec<Certificate<'static>>, Cause> {
    let bytes = std::fs::read(path)?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&bytes) {
        if let PemItem::Certificate(cert) = item? {
            certs.push(cert);
        }
    }
    Ok(certs)
}

fn unreadable_certs(what: String, cause: Cause) -> ProviderError {
    let text = match &cause {
        Cause::Io(err) => format!("{what}: {err}"),
        other => format!("{what}: not valid PEM: {other}"),
    };
    ProviderError::Config(Detail::caused(text, cause))
}

#[cfg(test)]
mod tests {
    use super::super::proxy::env_of;
    use super::*;

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

    #[test]
    fn roots_come_from_ssl_cert_file_or_fall_back_to_bundled() {
        let (roots, description) = load_roots(None, &env_of(&[])).unwrap();
        // This machine either has a distro bundle or falls back to the bundled roots.
        match roots {
            RootCerts::Specific(certs) => {
                assert!(!certs.is_empty());
                assert!(description.starts_with("system bundle"), "{description}");
            }
            RootCerts::WebPki => assert_eq!(description, "bundled Mozilla roots"),
            other => panic!("unexpected roots {other:?}"),
        }
        let missing = env_of(&[("SSL_CERT_FILE", "/nonexistent/ca.pem")]);
        let err = load_roots(None, &missing).unwrap_err();
        assert!(err.to_string().contains("SSL_CERT_FILE"), "{err}");
        let err = load_roots(Some(Path::new("/nonexistent/ca.pem")), &env_of(&[])).unwrap_err();
        assert!(
            err.to_string().contains("ca_file /nonexistent/ca.pem"),
            "{err}"
        );
    }
}
