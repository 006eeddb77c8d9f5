//! The one-shot loopback redirect listener of the authorization code flow (RFC 8252 §7.3):
//! an HTTP/1.1 server on 127.0.0.1 that waits for `GET /callback?code=…&state=…`, checks the
//! `state` (and the issuer, RFC 9207) and answers the browser with a short page. Anything
//! else on the port gets a 404 and the wait goes on; a callback with the wrong `state` ends
//! the login, since only an attacker's page would send one.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use super::pkce::same_secret;
use super::url;
use super::OAuthError;

/// How long one browser connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the connection that wakes a timed-out listener may take.
const WAKE_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest request head read.
const MAX_HEAD: u64 = 16 * 1024;
pub const PATH: &str = "/callback";

/// What the callback must carry to be accepted.
#[derive(Debug, Clone)]
pub struct Expect {
    pub state: String,
    pub issuer: String,
    /// The server said it sends `iss`: a callback without it is refused.
    pub iss_required: bool,
}

/// The query of a callback request line (`GET /callback?… HTTP/1.1`); `None` for another
/// path or method.
pub fn callback_query(request_line: &str) -> Option<String> {
    let mut words = request_line.split_whitespace();
    let (method, target) = (words.next()?, words.next()?);
    if method != "GET" {
        return None;
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    (path == PATH).then(|| query.to_string())
}

/// The authorization code of a callback, after every check.
pub fn check(query: &str, expect: &Expect) -> Result<String, OAuthError> {
    let pairs = url::query_pairs(query);
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    if !get("state").is_some_and(|state| same_secret(state, &expect.state)) {
        return Err(OAuthError::Refused(
            "the redirect carried a `state` that does not match this login; it did not come \
             from the authorization request, so the login was stopped"
                .into(),
        ));
    }
    match get("iss") {
        Some(iss) if iss.trim_end_matches('/') != expect.issuer.trim_end_matches('/') => {
            return Err(OAuthError::Refused(format!(
                "the redirect came from issuer {iss}, not {}; the login was stopped",
                expect.issuer
            )))
        }
        None if expect.iss_required => {
            return Err(OAuthError::Refused(
                "the redirect lacks the `iss` its authorization server promised".into(),
            ))
        }
        _ => {}
    }
    if let Some(error) = get("error") {
        let description = get("error_description").unwrap_or("");
        let detail = crate::text::one_line(&format!("{error} {description}"), 200);
        return Err(OAuthError::Server(format!(
            "the authorization server refused: {}",
            detail.trim()
        )));
    }
    get("code")
        .filter(|code| !code.is_empty())
        .map(str::to_string)
        .ok_or_else(|| OAuthError::Server("the redirect carries no code".into()))
}

/// A bound listener and the redirect URI that reaches it.
pub struct Listener {
    listener: TcpListener,
    pub redirect_uri: String,
}

impl Listener {
    /// Binds 127.0.0.1 on `port` (0 = any free port).
    pub fn bind(port: u16) -> Result<Listener, OAuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|e| OAuthError::io("opening the redirect listener on 127.0.0.1", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| OAuthError::io("reading the redirect listener's port", e))?
            .port();
        Ok(Listener {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}{PATH}"),
        })
    }

    /// Waits up to `timeout` for the callback; returns its code. The port is closed when this
    /// returns, whatever the outcome: on a timeout the accepting thread is told to stop, woken
    /// by a connection of our own, and joined, so a login that gave up leaves nothing bound.
    pub fn wait(self, expect: Expect, timeout: Duration) -> Result<String, OAuthError> {
        let (tx, rx) = mpsc::channel();
        let listener = self.listener;
        let address = listener
            .local_addr()
            .map_err(|e| OAuthError::io("reading the redirect listener's port", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let accepting = std::thread::Builder::new()
            .name("mcp-oauth-redirect".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if stopped.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    if let Some(outcome) = serve(stream, &expect) {
                        let _ = tx.send(outcome);
                        return;
                    }
                }
            })
            .map_err(|e| OAuthError::io("starting the redirect listener", e))?;
        let outcome = match rx.recv_timeout(timeout) {
            Ok(outcome) => outcome,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                stop.store(true, Ordering::SeqCst);
                // The thread sits in accept(): one connection wakes it to see the flag. A
                // refused connection means it is already gone.
                let _ = TcpStream::connect_timeout(&address, WAKE_TIMEOUT);
                Err(OAuthError::Cancelled(format!(
                    "no redirect arrived within {} s",
                    timeout.as_secs()
                )))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(OAuthError::Cancelled(
                "the redirect listener stopped".into(),
            )),
        };
        // Bounded: the thread is at accept() or reading one request (READ_TIMEOUT).
        let _ = accepting.join();
        outcome
    }
}

/// Answers one connection; `Some` when it was the callback.
fn serve(stream: TcpStream, expect: &Expect) -> Option<Result<String, OAuthError>> {
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let mut reader = BufReader::new(std::io::Read::take(&stream, MAX_HEAD));
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    // Drain the headers so the browser sees a clean response.
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 0) && header.trim() != "" {
        header.clear();
    }
    let mut stream = &stream;
    let Some(query) = callback_query(&line) else {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return None;
    };
    let outcome = check(&query, expect);
    let page = match &outcome {
        Ok(_) => "Authorized. You can close this tab and return to reasonix.".to_string(),
        Err(err) => format!("Authorization failed: {err}"),
    };
    let page = page.replace('&', "&amp;").replace('<', "&lt;");
    let body = format!("<!doctype html><title>reasonix</title><p>{page}</p>\n");
    let status = if outcome.is_ok() {
        "200 OK"
    } else {
        "400 Bad Request"
    };
    let _ = stream.write_all(
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    Some(outcome)
}

/// Runs `$BROWSER URL` when the variable is set, without waiting for it (the URL is shown
/// either way, for a headless machine); its exit is collected on a thread. False when it could
/// not be started.
pub fn open_browser(address: &str) -> bool {
    let Some(browser) = std::env::var_os("BROWSER").filter(|b| !b.is_empty()) else {
        return true;
    };
    // Registered, so that as PID 1 the orphan reaper leaves the browser's status to its thread.
    let spawned = crate::sandbox::process::PlainChild::spawn(
        std::process::Command::new(browser)
            .arg(address)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    match spawned {
        Ok(child) => {
            let _ = std::thread::Builder::new()
                .name("browser".into())
                .spawn(move || child.wait());
            true
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expect() -> Expect {
        Expect {
            state: "s1".into(),
            issuer: "https://a.example".into(),
            iss_required: false,
        }
    }

    #[test]
    fn only_get_callback_counts() {
        assert_eq!(
            callback_query("GET /callback?code=c&state=s HTTP/1.1\r\n").as_deref(),
            Some("code=c&state=s")
        );
        assert_eq!(
            callback_query("GET /callback HTTP/1.1").as_deref(),
            Some("")
        );
        assert_eq!(callback_query("GET /favicon.ico HTTP/1.1"), None);
        assert_eq!(callback_query("POST /callback?code=c HTTP/1.1"), None);
        assert_eq!(callback_query(""), None);
    }

    #[test]
    fn the_state_and_issuer_must_match() {
        assert_eq!(check("code=c%2B1&state=s1", &expect()).unwrap(), "c+1");
        let err = check("code=c&state=s2", &expect()).unwrap_err();
        assert!(err.to_string().contains("`state`"), "{err}");
        assert!(check("code=c", &expect()).is_err());
        let err = check("code=c&state=s1&iss=https%3A%2F%2Fevil.example", &expect()).unwrap_err();
        assert!(err.to_string().contains("evil.example"), "{err}");
        assert!(check("code=c&state=s1&iss=https%3A%2F%2Fa.example", &expect()).is_ok());
        let strict = Expect {
            iss_required: true,
            ..expect()
        };
        assert!(check("code=c&state=s1", &strict).is_err());
        let err = check("error=access_denied&state=s1", &expect()).unwrap_err();
        assert!(err.to_string().contains("access_denied"), "{err}");
    }

    #[test]
    fn the_listener_answers_strays_with_404_and_returns_the_code() {
        use std::io::Read;
        let listener = Listener::bind(0).unwrap();
        let uri = listener.redirect_uri.clone();
        let addr = uri
            .trim_start_matches("http://")
            .trim_end_matches(PATH)
            .to_string();
        let client = std::thread::spawn(move || {
            let mut stray = TcpStream::connect(&addr).unwrap();
            stray
                .write_all(b"GET /favicon.ico HTTP/1.1\r\n\r\n")
                .unwrap();
            let mut reply = String::new();
            stray.read_to_string(&mut reply).unwrap();
            assert!(reply.starts_with("HTTP/1.1 404"), "{reply}");
            let mut real = TcpStream::connect(&addr).unwrap();
            real.write_all(b"GET /callback?code=abc&state=s1 HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut reply = String::new();
            real.read_to_string(&mut reply).unwrap();
            reply
        });
        let code = listener.wait(expect(), Duration::from_secs(60)).unwrap();
        assert_eq!(code, "abc");
        assert!(client.join().unwrap().starts_with("HTTP/1.1 200"));
        let addr = uri.trim_start_matches("http://").trim_end_matches(PATH);
        assert!(
            TcpStream::connect(addr).is_err(),
            "the port is closed after the callback"
        );
    }

    #[test]
    fn the_listener_is_bound_to_the_loopback_address_only() {
        let listener = Listener::bind(0).unwrap();
        let bound = listener.listener.local_addr().unwrap();
        assert_eq!(
            bound.ip(),
            std::net::IpAddr::from([127, 0, 0, 1]),
            "not on every interface"
        );
        assert_eq!(
            listener.redirect_uri,
            format!("http://127.0.0.1:{}{PATH}", bound.port())
        );
        assert_ne!(bound.port(), 0, "a random free port was taken");
    }

    /// Regression: the accepting thread kept the port bound after a login timed out.
    #[test]
    fn a_timed_out_wait_closes_the_port() {
        let listener = Listener::bind(0).unwrap();
        let addr = listener
            .redirect_uri
            .trim_start_matches("http://")
            .trim_end_matches(PATH)
            .to_string();
        let err = listener
            .wait(expect(), Duration::from_millis(20))
            .unwrap_err();
        assert!(err.to_string().contains("no redirect arrived"), "{err}");
        let refused = TcpStream::connect(&addr).map(|_| ()).map_err(|e| e.kind());
        assert_eq!(
            refused,
            Err(std::io::ErrorKind::ConnectionRefused),
            "nothing listens on {addr} any more"
        );
        // The port can be bound again (a fixed `callback_port` retried at once).
        assert!(TcpListener::bind(&addr).is_ok(), "{addr} is free");
    }
}
