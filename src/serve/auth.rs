//! Who may use the server: the auth mode (none: loopback only, with this run's random token;
//! a configured or random token; a password), the session cookies a login hands out, the
//! CSRF check on state-changing requests, the password rate limit (per source and global),
//! constant-time comparison and the random bytes tokens are made of. Forwarded headers
//! (`X-Forwarded-For`, `X-Forwarded-Proto`) count only with `behind_proxy`.
//!
//! Every mode needs a secret: a process on this machine (a jailed command or MCP server with
//! the network on among them) reaches loopback like the browser does, so "loopback" alone is
//! no authentication. Tokens are long enough that guessing is hopeless at any rate, so their
//! failures are not counted: counting them would only let a page elsewhere lock the user out
//! with `<img src="http://127.0.0.1:8787/?token=x">`. Passwords are counted.

use std::collections::HashMap;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::bcrypt;
use super::http::Request;

/// The cookie holding a logged-in browser's session.
pub const COOKIE: &str = "reasonix_session";
/// Failed password logins a source may make per window before it must wait.
pub const MAX_FAILURES: u32 = 5;
/// Failed password logins from all sources together per window: many addresses (a botnet,
/// an IPv6 block) get no more guesses than this between them.
pub const MAX_FAILURES_TOTAL: u32 = 20;
/// The shortest token accepted: 32 characters of hex are 128 bits.
pub const MIN_TOKEN_LEN: usize = 32;
/// Random bytes in a token made here (64 hex characters).
pub const TOKEN_BYTES: usize = 32;
const WINDOW: Duration = Duration::from_secs(60);
/// How long a login lasts.
const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Logins kept at once; the oldest goes first.
const MAX_SESSIONS: usize = 256;

/// The configured way in.
#[derive(Debug, Clone)]
pub enum Mode {
    /// No password: loopback only, and the way in is this run's random token (printed in the
    /// URL), which lives in this process's memory alone.
    None(String),
    /// The token, from the printed URL or an `Authorization: Bearer` header.
    Token(String),
    /// A password given at startup, or a stored bcrypt hash.
    Password(Secret),
}

#[derive(Debug, Clone)]
pub enum Secret {
    Plain(String),
    Hash(String),
}

impl Mode {
    pub fn name(&self) -> &'static str {
        match self {
            Mode::None(_) => "none",
            Mode::Token(_) => "token",
            Mode::Password(_) => "password",
        }
    }

    /// The token that logs in, in the modes that have one.
    pub fn token(&self) -> Option<&str> {
        match self {
            Mode::None(token) | Mode::Token(token) => Some(token),
            Mode::Password(_) => None,
        }
    }
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= x ^ y;
    }
    diff == 0
}

/// `n` random bytes from the kernel, as lower-case hex.
pub fn random_hex(n: usize) -> std::io::Result<String> {
    let mut bytes = vec![0u8; n];
    fill_random(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// 16 random bytes for a bcrypt salt.
pub fn random_salt() -> std::io::Result<[u8; 16]> {
    let mut salt = [0u8; 16];
    fill_random(&mut salt)?;
    Ok(salt)
}

/// Fills `buf` from the kernel's generator: the `getrandom(2)` system call, which needs no
/// file descriptor and no `/dev` (a chroot or a full descriptor table cannot break it), and
/// `/dev/urandom` only where the call does not exist (`ENOSYS`).
pub fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    fill_from(
        buf,
        crate::sandbox::sys::getrandom,
        Path::new("/dev/urandom"),
    )
}

/// [`fill_random`] over a given system call and fallback file: short reads are continued,
/// interrupted calls retried, and any error but `ENOSYS` returned as it is.
fn fill_from(
    buf: &mut [u8],
    mut call: impl FnMut(&mut [u8]) -> std::io::Result<usize>,
    fallback: &Path,
) -> std::io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        match call(&mut buf[filled..]) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "getrandom returned no bytes",
                ))
            }
            Ok(n) => filled += n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) if err.raw_os_error() == Some(libc::ENOSYS) => {
                return std::fs::File::open(fallback)?.read_exact(&mut buf[filled..]);
            }
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// What a login attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    /// The new session id for the cookie.
    Ok(String),
    Wrong,
    /// Too many failed passwords from this source or in all; retry after this many seconds.
    Limited(u64),
}

/// What a request's `Authorization: Bearer` header came to (the modes with a token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bearer {
    /// No bearer header, or password mode.
    Absent,
    Valid,
    Wrong,
}

/// Failed password logins in the current window, per source and in all.
#[derive(Default)]
struct Failures {
    by_source: HashMap<IpAddr, (u32, Instant)>,
    total: Option<(u32, Instant)>,
}

/// The server's authentication state.
pub struct Auth {
    pub mode: Mode,
    pub behind_proxy: bool,
    sessions: Mutex<HashMap<String, Instant>>,
    failures: Mutex<Failures>,
}

impl Auth {
    pub fn new(mode: Mode, behind_proxy: bool) -> Auth {
        Auth {
            mode,
            behind_proxy,
            sessions: Mutex::new(HashMap::new()),
            failures: Mutex::new(Failures::default()),
        }
    }

    /// The client's address: the peer, or with `behind_proxy` the address the proxy appended
    /// last to `X-Forwarded-For`.
    pub fn client_ip(&self, request: &Request, peer: SocketAddr) -> IpAddr {
        if self.behind_proxy {
            let forwarded = request
                .header("x-forwarded-for")
                .and_then(|v| v.rsplit(',').next());
            if let Some(ip) = forwarded.and_then(|v| v.trim().parse().ok()) {
                return ip;
            }
        }
        peer.ip()
    }

    /// Whether the browser reached us over TLS (only a trusted proxy can say so).
    pub fn is_https(&self, request: &Request) -> bool {
        self.behind_proxy
            && request
                .header("x-forwarded-proto")
                .is_some_and(|p| p.eq_ignore_ascii_case("https"))
    }

    /// Whether the request may use the API, given what its bearer token came to.
    pub fn allowed(&self, request: &Request, bearer: &Bearer) -> bool {
        matches!(bearer, Bearer::Valid) || self.cookie_ok(request)
    }

    /// Checks the request's `Authorization: Bearer` header against the token (password mode
    /// ignores the header). Not counted: see the module header.
    pub fn bearer(&self, request: &Request) -> Bearer {
        let Some(token) = self.mode.token() else {
            return Bearer::Absent;
        };
        let Some(given) = request
            .header("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
        else {
            return Bearer::Absent;
        };
        if same(given.trim().as_bytes(), token.as_bytes()) {
            Bearer::Valid
        } else {
            Bearer::Wrong
        }
    }

    /// Whether the request carries a valid login (cookie or bearer token), without counting
    /// anything: how the server tells an authenticated request from the rest.
    pub fn authenticated(&self, request: &Request) -> bool {
        self.allowed(request, &self.bearer(request))
    }

    /// Runs `check` as one password attempt of `client`. The attempt is counted as a failure
    /// of its source and of the total under the lock before `check` runs (a bcrypt check
    /// takes a while) and handed back when it succeeds, so parallel guesses cannot all pass
    /// the limit before any is counted. `Err(seconds)`: the source or everyone is over the
    /// limit and `check` did not run.
    fn attempt(&self, client: IpAddr, check: impl FnOnce() -> bool) -> Result<bool, u64> {
        let key = source(client);
        {
            let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
            let failures = &mut *failures;
            failures
                .by_source
                .retain(|_, (_, since)| since.elapsed() < WINDOW);
            if failures
                .total
                .is_some_and(|(_, since)| since.elapsed() >= WINDOW)
            {
                failures.total = None;
            }
            let wait = |since: Instant| WINDOW.saturating_sub(since.elapsed()).as_secs().max(1);
            let total = failures.total.get_or_insert((0, Instant::now()));
            if total.0 >= MAX_FAILURES_TOTAL {
                return Err(wait(total.1));
            }
            let (count, since) = failures.by_source.entry(key).or_insert((0, Instant::now()));
            if *count >= MAX_FAILURES {
                return Err(wait(*since));
            }
            *count += 1;
            total.0 += 1;
        }
        let right = check();
        if right {
            let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((count, _)) = failures.by_source.get_mut(&key) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    failures.by_source.remove(&key);
                }
            }
            if let Some((count, _)) = failures.total.as_mut() {
                *count = count.saturating_sub(1);
            }
        }
        Ok(right)
    }

    fn cookie_ok(&self, request: &Request) -> bool {
        let Some(id) = cookie(request, COOKIE) else {
            return false;
        };
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|_, created| created.elapsed() < SESSION_TTL);
        // Compare against each in constant time rather than a hash lookup keyed by the secret.
        sessions
            .keys()
            .any(|known| same(known.as_bytes(), id.as_bytes()))
    }

    /// Checks a token or a password; failed passwords are counted per source and in all.
    pub fn login(&self, client: IpAddr, given: &str) -> Login {
        let checked = match &self.mode {
            Mode::None(token) | Mode::Token(token) => Ok(same(given.as_bytes(), token.as_bytes())),
            Mode::Password(Secret::Plain(password)) => {
                self.attempt(client, || same(given.as_bytes(), password.as_bytes()))
            }
            Mode::Password(Secret::Hash(hash)) => self.attempt(client, || {
                bcrypt::verify(given.as_bytes(), hash).unwrap_or(false)
            }),
        };
        match checked {
            Ok(true) => {}
            Ok(false) => return Login::Wrong,
            Err(after) => return Login::Limited(after),
        }
        let Ok(id) = random_hex(32) else {
            return Login::Wrong;
        };
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if sessions.len() >= MAX_SESSIONS {
            if let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, t)| **t)
                .map(|(k, _)| k.clone())
            {
                sessions.remove(&oldest);
            }
        }
        sessions.insert(id.clone(), Instant::now());
        Login::Ok(id)
    }

    /// Ends the login the request's cookie holds.
    pub fn logout(&self, request: &Request) {
        if let Some(id) = cookie(request, COOKIE) {
            let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            sessions.retain(|known, _| !same(known.as_bytes(), id.as_bytes()));
        }
    }

    /// The `Set-Cookie` value for a new login.
    pub fn set_cookie(&self, request: &Request, id: &str) -> String {
        let secure = if self.is_https(request) {
            "; Secure"
        } else {
            ""
        };
        format!(
            "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            SESSION_TTL.as_secs()
        )
    }

    /// The `Set-Cookie` value that clears the login.
    pub fn clear_cookie(&self, request: &Request) -> String {
        let secure = if self.is_https(request) {
            "; Secure"
        } else {
            ""
        };
        format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}")
    }
}

/// The source a failed password is counted against: an IPv4 address, or the /64 an IPv6
/// address is in (one subscriber usually holds a whole /64, so its addresses are one source).
pub fn source(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(
                u128::from(v6) & !((1u128 << 64) - 1),
            )),
        },
    }
}

/// The value of cookie `name` in the request.
pub fn cookie<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request
        .headers
        .iter()
        .filter(|(n, _)| n == "cookie")
        .flat_map(|(_, v)| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then_some(value)
        })
}

/// The CSRF check for a state-changing request from a browser: its `Origin` (or, failing that,
/// `Referer`) must name the host the request was sent to. A browser always sends `Origin` on
/// a cross-site `fetch`/form POST, so a page elsewhere cannot drive the API with our cookie.
pub fn same_origin(request: &Request) -> bool {
    let Some(host) = request.header("host") else {
        return false;
    };
    let origin = request
        .header("origin")
        .filter(|o| *o != "null")
        .or_else(|| request.header("referer"));
    let Some(origin) = origin else {
        return false;
    };
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or("");
    authority.eq_ignore_ascii_case(host)
}

/// Whether `Host` names this machine's loopback interface, for auth mode none: a page on
/// another site that rebinds its DNS name to 127.0.0.1 sends its own name as Host.
pub fn loopback_host(request: &Request) -> bool {
    let Some(host) = request.header("host") else {
        return false;
    };
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[(&str, &str)]) -> Request {
        Request {
            method: "POST".into(),
            path: "/api/x".into(),
            query: None,
            minor: 1,
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn comparison_is_exact() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        assert!(!same(b"", b"a"));
        assert!(same(b"", b""));
    }

    #[test]
    fn origin_must_match_host() {
        let ok = request(&[
            ("host", "127.0.0.1:8787"),
            ("origin", "http://127.0.0.1:8787"),
        ]);
        assert!(same_origin(&ok));
        let evil = request(&[
            ("host", "127.0.0.1:8787"),
            ("origin", "http://evil.example"),
        ]);
        assert!(!same_origin(&evil));
        let none = request(&[("host", "127.0.0.1:8787")]);
        assert!(!same_origin(&none));
        let referer = request(&[("host", "h:1"), ("referer", "https://h:1/page")]);
        assert!(same_origin(&referer));
        let null = request(&[("host", "h:1"), ("origin", "null")]);
        assert!(!same_origin(&null));
    }

    #[test]
    fn loopback_hosts() {
        for host in ["127.0.0.1:8787", "localhost:1", "[::1]:80", "localhost"] {
            assert!(loopback_host(&request(&[("host", host)])), "{host}");
        }
        for host in ["evil.example:8787", "10.0.0.1:80", "[2001:db8::1]:80"] {
            assert!(!loopback_host(&request(&[("host", host)])), "{host}");
        }
    }

    #[test]
    fn failures_are_rate_limited_per_client() {
        let auth = Auth::new(Mode::Password(Secret::Plain("secret".into())), false);
        let client: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..MAX_FAILURES {
            assert_eq!(auth.login(client, "nope"), Login::Wrong);
        }
        assert!(matches!(auth.login(client, "secret"), Login::Limited(_)));
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        assert!(matches!(auth.login(other, "secret"), Login::Ok(_)));
    }

    #[test]
    fn a_success_hands_its_attempt_back() {
        let auth = Auth::new(Mode::Password(Secret::Plain("secret".into())), false);
        let client: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..MAX_FAILURES - 1 {
            assert_eq!(auth.login(client, "nope"), Login::Wrong);
        }
        assert!(matches!(auth.login(client, "secret"), Login::Ok(_)));
        assert_eq!(auth.login(client, "nope"), Login::Wrong);
        assert!(matches!(auth.login(client, "secret"), Login::Limited(_)));
    }

    #[test]
    fn parallel_attempts_are_counted_before_they_are_checked() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        const GUESSES: usize = 12;
        let auth = Arc::new(Auth::new(Mode::Token("secret".into()), false));
        let client: IpAddr = "10.0.0.1".parse().unwrap();
        // Every check waits at this gate until all guesses are either in a check or refused.
        let gate = Arc::new(Mutex::new(()));
        let (inside, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let held = gate.lock().unwrap();
        let threads: Vec<_> = (0..GUESSES)
            .map(|_| {
                let (auth, gate) = (Arc::clone(&auth), Arc::clone(&gate));
                let (inside, refused) = (Arc::clone(&inside), Arc::clone(&refused));
                std::thread::spawn(move || {
                    let result = auth.attempt(client, || {
                        inside.fetch_add(1, Ordering::SeqCst);
                        drop(gate.lock().unwrap_or_else(PoisonError::into_inner));
                        false
                    });
                    if result.is_err() {
                        refused.fetch_add(1, Ordering::SeqCst);
                    }
                    result
                })
            })
            .collect();
        while inside.load(Ordering::SeqCst) + refused.load(Ordering::SeqCst) < GUESSES {
            std::thread::yield_now();
        }
        drop(held);
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let checked = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(checked, MAX_FAILURES as usize, "{results:?}");
        assert_eq!(inside.load(Ordering::SeqCst), MAX_FAILURES as usize);
    }

    #[test]
    fn wrong_tokens_are_refused_and_never_counted() {
        for mode in [Mode::Token("secret".into()), Mode::None("secret".into())] {
            let auth = Auth::new(mode, false);
            let client: IpAddr = "10.0.0.1".parse().unwrap();
            let with = |token: &str| request(&[("authorization", &format!("Bearer {token}"))]);
            assert_eq!(auth.bearer(&request(&[])), Bearer::Absent);
            assert!(!auth.authenticated(&request(&[])));
            for _ in 0..3 * MAX_FAILURES_TOTAL {
                assert_eq!(auth.bearer(&with("nope")), Bearer::Wrong);
                assert_eq!(auth.login(client, "nope"), Login::Wrong);
            }
            assert_eq!(auth.bearer(&with("secret")), Bearer::Valid);
            assert!(auth.authenticated(&with("secret")));
            assert!(matches!(auth.login(client, "secret"), Login::Ok(_)));
        }
        // Password mode does not read the header.
        let password = Auth::new(Mode::Password(Secret::Plain("p".into())), false);
        let with = request(&[("authorization", "Bearer p")]);
        assert_eq!(password.bearer(&with), Bearer::Absent);
        assert!(!password.authenticated(&with));
    }

    #[test]
    fn many_sources_share_a_global_limit() {
        let auth = Auth::new(Mode::Password(Secret::Plain("p".into())), false);
        let mut refused = 0;
        for n in 0..(MAX_FAILURES_TOTAL + 10) {
            let client = IpAddr::from([10, 0, (n / 250) as u8, (n % 250) as u8]);
            match auth.login(client, "nope") {
                Login::Wrong => {}
                Login::Limited(after) => {
                    assert!((1..=60).contains(&after), "{after}");
                    refused += 1;
                }
                Login::Ok(_) => panic!("a wrong password logged in"),
            }
        }
        assert_eq!(refused, 10);
        // A fresh source is over the total too, the right password included.
        assert!(matches!(
            auth.login("10.9.9.9".parse().unwrap(), "p"),
            Login::Limited(_)
        ));
    }

    #[test]
    fn an_ipv6_64_is_one_source() {
        let auth = Auth::new(Mode::Password(Secret::Plain("p".into())), false);
        for n in 0..MAX_FAILURES {
            let client: IpAddr = format!("2001:db8:1:2:{n:x}::1").parse().unwrap();
            assert_eq!(auth.login(client, "nope"), Login::Wrong);
        }
        let same_64: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        assert!(matches!(auth.login(same_64, "p"), Login::Limited(_)));
        let next_64: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert!(matches!(auth.login(next_64, "p"), Login::Ok(_)));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(source(mapped), "10.0.0.1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn random_bytes_come_from_getrandom() {
        let mut a = [0u8; 32];
        let mut b = [0u8; 32];
        fill_random(&mut a).unwrap();
        fill_random(&mut b).unwrap();
        // Two draws of 256 bits are equal, or all zero, with probability 2^-256.
        assert_ne!(a, b);
        assert_ne!(a, [0u8; 32]);
        #[cfg(target_os = "linux")]
        assert_eq!(crate::sandbox::sys::getrandom(&mut a).unwrap(), 32);
        let token = random_hex(24).unwrap();
        assert_eq!(token.len(), 48);
        assert!(token.bytes().all(|c| c.is_ascii_hexdigit()), "{token}");
    }

    #[test]
    fn only_enosys_falls_back_to_the_file() {
        let dir = crate::fsutil::scratch::TempDir::new("random");
        let file = dir.write("urandom", b"0123456789abcdef");
        // Short reads are continued and EINTR retried; the system call fills everything.
        let mut calls = 0;
        let mut buf = [0u8; 6];
        fill_from(
            &mut buf,
            |rest| {
                calls += 1;
                match calls {
                    1 => Err(std::io::Error::from_raw_os_error(libc::EINTR)),
                    _ => {
                        rest[0] = b'x';
                        Ok(1)
                    }
                }
            },
            &file,
        )
        .unwrap();
        assert_eq!(&buf, b"xxxxxx");
        assert_eq!(calls, 7);
        // ENOSYS after a short read: the rest comes from the file.
        let mut first = true;
        let mut buf = [0u8; 6];
        fill_from(
            &mut buf,
            |rest| {
                if std::mem::take(&mut first) {
                    rest[..2].copy_from_slice(b"ab");
                    return Ok(2);
                }
                Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
            },
            &file,
        )
        .unwrap();
        assert_eq!(&buf, b"ab0123");
        // Any other error is returned, and the file is not read.
        let mut buf = [0u8; 6];
        let err = fill_from(
            &mut buf,
            |_| Err(std::io::Error::from_raw_os_error(libc::EFAULT)),
            &file,
        )
        .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EFAULT));
        assert_eq!(buf, [0u8; 6]);
    }

    #[test]
    fn forwarded_headers_count_only_behind_a_proxy() {
        let req = request(&[
            ("x-forwarded-for", "1.2.3.4, 5.6.7.8"),
            ("x-forwarded-proto", "https"),
        ]);
        let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let direct = Auth::new(Mode::None("t".into()), false);
        assert_eq!(direct.client_ip(&req, peer), peer.ip());
        assert!(!direct.is_https(&req));
        assert!(!direct.set_cookie(&req, "x").contains("Secure"));
        let proxied = Auth::new(Mode::None("t".into()), true);
        assert_eq!(
            proxied.client_ip(&req, peer),
            "5.6.7.8".parse::<IpAddr>().unwrap()
        );
        assert!(proxied.set_cookie(&req, "x").ends_with("; Secure"));
    }
}
