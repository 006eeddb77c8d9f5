//! MCP OAuth end to end: the real `reasonix` binary against a loopback server written here that
//! is both a protected MCP endpoint and its authorization server (protected resource metadata,
//! RFC 8414 metadata, dynamic registration, `/authorize`, `/token`). The browser step is the
//! test itself (it reads the URL `reasonix mcp login` prints, asks `/authorize` for the
//! redirect and follows it to the loopback listener) or a `$BROWSER` script that does the
//! same. Attacks (a foreign `state`, metadata on another origin, metadata for another
//! resource) must stop the login before any token, and no token may reach a file other than
//! the private token store, a log or the output.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{opened_url, reasonix, recording_browser, run, use_fake_provider, Dir};

/// One request the fake saw.
#[derive(Debug, Clone)]
struct Req {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
    fn form(&self) -> HashMap<String, String> {
        reasonix::mcp::oauth::url::query_pairs(&self.body)
            .into_iter()
            .collect()
    }
    fn query(&self) -> HashMap<String, String> {
        let query = self.target.split_once('?').map_or("", |(_, q)| q);
        reasonix::mcp::oauth::url::query_pairs(query)
            .into_iter()
            .collect()
    }
}

type Answer = (u16, Vec<(String, String)>, String);

/// A loopback HTTP server; `handler` gets the base URL and each request. Every request is
/// recorded.
fn serve(
    handler: impl Fn(&str, &Req) -> Answer + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Req>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (handler, record, url) = (Arc::new(handler), seen.clone(), base.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let (handler, record, url) = (handler.clone(), record.clone(), url.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let mut words = line.split_whitespace();
                let method = words.next().unwrap_or("").to_string();
                let target = words.next().unwrap_or("").to_string();
                let mut headers = Vec::new();
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).unwrap();
                    match header.trim().split_once(':') {
                        Some((n, v)) => headers.push((n.trim().to_string(), v.trim().to_string())),
                        None => break,
                    }
                }
                let length = headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                    .map_or(0, |(_, v)| v.parse().unwrap());
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let req = Req {
                    method,
                    target,
                    headers,
                    body: String::from_utf8_lossy(&body).into_owned(),
                };
                let (status, extra, body) = handler(&url, &req);
                record.lock().unwrap().push(req);
                let mut head = format!(
                    "HTTP/1.1 {status} X\r\nConnection: close\r\nContent-Length: {}\r\n",
                    body.len()
                );
                if !extra.iter().any(|(n, _)| n == "Content-Type") {
                    head.push_str("Content-Type: application/json\r\n");
                }
                for (n, v) in extra {
                    head.push_str(&format!("{n}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let mut stream = &stream;
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body.as_bytes());
            });
        }
    });
    (base, seen)
}

/// What the fake authorization server remembers between requests.
#[derive(Default)]
struct AuthState {
    /// code -> (code_challenge, resource)
    codes: HashMap<String, (String, String)>,
    valid: Vec<String>,
    /// Tokens granted `mcp:write`.
    write: Vec<String>,
    /// code -> the scope asked for
    scopes: HashMap<String, String>,
    issued: u32,
}

/// How the fake misbehaves.
#[derive(Clone, Default)]
struct Script {
    /// Where the 401 says the resource metadata is (default: this server).
    metadata_link: Option<String>,
    /// The `resource` the metadata claims (default: this server's `/mcp`).
    claimed_resource: Option<String>,
    /// `initialize` and notifications are answered without a token; only the later requests
    /// are protected (as the official conformance servers do).
    open_handshake: bool,
    /// `tools/call` wants `mcp:write` on top: a 403 `insufficient_scope` until a token with
    /// that scope is presented.
    call_needs_write: bool,
    /// The authorization server advertises `client_id_metadata_document_supported`.
    cimd: bool,
    /// The access token that served a `tools/call` is revoked right after it, so the next
    /// request with it gets a 401 (a token revoked in the middle of a session).
    revoke_after_call: bool,
    /// The refresh grant is refused with `invalid_grant` (the refresh token was revoked too).
    refuse_refresh: bool,
    /// Put before every access and refresh token (`at-N`, `rt-1`), so a test can look for
    /// them in files without matching anything else.
    token_prefix: &'static str,
}

fn json_answer(status: u16, body: Value) -> Answer {
    (status, vec![], body.to_string())
}

/// A protected MCP endpoint at `/mcp` with its own authorization server.
fn protected_server(script: Script) -> (String, Arc<Mutex<Vec<Req>>>) {
    let state = Arc::new(Mutex::new(AuthState::default()));
    serve(move |base, req| {
        let mut state = state.lock().unwrap();
        match (req.method.as_str(), req.path()) {
            ("POST", "/mcp") => {
                let token = req
                    .header("authorization")
                    .and_then(|h| h.strip_prefix("Bearer "))
                    .unwrap_or("");
                let message: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
                let method = message["method"].as_str().unwrap_or("");
                let open = script.open_handshake
                    && (method == "initialize" || method.starts_with("notifications/"));
                if !open && !state.valid.iter().any(|t| t == token) {
                    let link = script
                        .metadata_link
                        .clone()
                        .unwrap_or(format!("{base}/.well-known/oauth-protected-resource/mcp"));
                    let www = format!(r#"Bearer resource_metadata="{link}", scope="mcp:tools""#);
                    return (401, vec![("WWW-Authenticate".into(), www)], "{}".into());
                }
                if script.call_needs_write
                    && method == "tools/call"
                    && !state.write.iter().any(|t| t == token)
                {
                    let www = r#"Bearer error="insufficient_scope", scope="mcp:tools mcp:write""#;
                    return (
                        403,
                        vec![("WWW-Authenticate".into(), www.into())],
                        "{}".into(),
                    );
                }
                let id = message["id"].clone();
                let result = match method {
                    "initialize" => json!({"protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}}, "serverInfo": {"name": "vault", "version": "1"}}),
                    "tools/list" => json!({"tools": [{"name": "secret_count",
                        "inputSchema": {"type": "object"}}]}),
                    "tools/call" => {
                        if script.revoke_after_call {
                            state.valid.retain(|t| t != token);
                        }
                        json!({"content": [{"type": "text", "text": "42 secrets"}]})
                    }
                    _ => return (202, vec![], String::new()),
                };
                json_answer(200, json!({"jsonrpc": "2.0", "id": id, "result": result}))
            }
            ("GET", "/mcp") | ("DELETE", "/mcp") => (405, vec![], String::new()),
            ("GET", "/.well-known/oauth-protected-resource/mcp") => json_answer(
                200,
                json!({"resource": script.claimed_resource.clone().unwrap_or(format!("{base}/mcp")),
                       "authorization_servers": [base], "scopes_supported": ["mcp:tools"]}),
            ),
            ("GET", "/.well-known/oauth-authorization-server") => json_answer(
                200,
                json!({"issuer": base, "authorization_endpoint": format!("{base}/authorize"),
                       "token_endpoint": format!("{base}/token"),
                       "registration_endpoint": format!("{base}/register"),
                       "code_challenge_methods_supported": ["S256"],
                       "scopes_supported": ["mcp:tools", "offline_access"],
                       "client_id_metadata_document_supported": script.cimd,
                       "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"]}),
            ),
            ("POST", "/register") => json_answer(201, json!({"client_id": "dyn-client"})),
            ("GET", "/authorize") => {
                let q = req.query();
                let code = format!("code-{}", state.codes.len() + 1);
                state.codes.insert(
                    code.clone(),
                    (q["code_challenge"].clone(), q["resource"].clone()),
                );
                let scope = q.get("scope").cloned().unwrap_or_default();
                state.scopes.insert(code.clone(), scope);
                let location = format!(
                    "{}?code={code}&state={}&iss={}",
                    q["redirect_uri"],
                    reasonix::mcp::oauth::url::encode(&q["state"]),
                    reasonix::mcp::oauth::url::encode(base)
                );
                (302, vec![("Location".into(), location)], String::new())
            }
            ("POST", "/token") => {
                let form = req.form();
                let grant = form.get("grant_type").cloned().unwrap_or_default();
                let mut granted = "mcp:tools".to_string();
                match grant.as_str() {
                    "authorization_code" => {
                        let Some((challenge, _)) = state.codes.remove(&form["code"]) else {
                            return json_answer(400, json!({"error": "invalid_grant"}));
                        };
                        let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                        let expected = reasonix::mcp::oauth::pkce::base64url(
                            &reasonix::hash::sha256(verifier.as_bytes()),
                        );
                        if expected != challenge {
                            return json_answer(
                                400,
                                json!({"error": "invalid_grant", "error_description": "PKCE"}),
                            );
                        }
                        granted = state.scopes.remove(&form["code"]).unwrap_or_default();
                    }
                    "refresh_token" if script.refuse_refresh => {
                        return json_answer(400, json!({"error": "invalid_grant"}));
                    }
                    "refresh_token"
                        if form.get("refresh_token")
                            == Some(&format!("{}rt-1", script.token_prefix)) => {}
                    // A signed client assertion is checked by the test itself (with openssl).
                    "client_credentials" if form.contains_key("client_assertion") => {}
                    "client_credentials" => {
                        let basic = reasonix::mcp::oauth::pkce::base64(b"m2m:s3cret");
                        if req.header("authorization") != Some(&format!("Basic {basic}")) {
                            return json_answer(401, json!({"error": "invalid_client"}));
                        }
                    }
                    _ => return json_answer(400, json!({"error": "unsupported_grant_type"})),
                }
                state.issued += 1;
                let token = format!("{}at-{}", script.token_prefix, state.issued);
                state.valid.push(token.clone());
                if granted.split(' ').any(|s| s == "mcp:write") {
                    state.write.push(token.clone());
                }
                json_answer(
                    200,
                    json!({"access_token": token, "token_type": "Bearer",
                    "expires_in": 3600, "refresh_token": format!("{}rt-1", script.token_prefix),
                    "scope": granted}),
                )
            }
            _ => (404, vec![], String::new()),
        }
    })
}

fn plugin(url: &str, extra: &str) -> String {
    format!("[[plugins]]\nname = \"vault\"\ntype = \"http\"\nurl = \"{url}\"\n{extra}\n")
}

/// A home configured for the protected server at `base` as the plugin `vault`, with `extra`
/// config, and an empty workspace.
fn configured(base: &str, extra: &str) -> (Dir, Dir) {
    let home = Dir::new();
    home.write(
        ".reasonix/config.toml",
        &plugin(&format!("{base}/mcp"), extra),
    );
    (home, Dir::new())
}

/// The fake model answering with `replies`, a home configured for it and for the protected
/// server at `base` as the plugin `vault`, and an empty workspace.
fn with_model(replies: Vec<Reply>, base: &str) -> (FakeOpenAI, Dir, Dir) {
    let model = FakeOpenAI::start(replies);
    let home = Dir::new();
    use_fake_provider(
        &home,
        &model.base_url(),
        &plugin(&format!("{base}/mcp"), ""),
    );
    (model, home, Dir::new())
}

/// Model replies that call the vault's `secret_count` twice, then answer `answer`.
fn counts_twice(answer: &str) -> Vec<Reply> {
    vec![
        Reply::tool_calls(&[("c1", "mcp__vault__secret_count", "{}")]),
        Reply::tool_calls(&[("c2", "mcp__vault__secret_count", "{}")]),
        Reply::text(answer),
    ]
}

fn requests(seen: &Arc<Mutex<Vec<Req>>>, path: &str) -> Vec<Req> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|r| r.path() == path)
        .cloned()
        .collect()
}

/// Starts `reasonix mcp login vault`, plays the browser with `tamper` applied to the redirect
/// URL, and returns the finished run.
fn login_via_browser(home: &Dir, cwd: &Path, tamper: impl Fn(&str) -> String) -> crate::util::Run {
    let mut child = reasonix(home, cwd)
        .args(["mcp", "login", "vault"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut printed = String::new();
    let mut address = None;
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        printed.push_str(&line);
        if line.starts_with("http://") {
            address = Some(line.trim().to_string());
            break;
        }
    }
    if let Some(address) = address {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .build()
            .into();
        let reply = agent.get(&address).call().unwrap();
        assert_eq!(reply.status().as_u16(), 302, "{address}");
        let location = reply.headers()["location"].to_str().unwrap().to_string();
        let _ = agent.get(&tamper(&location)).call();
    }
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    crate::util::Run {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr: printed + &rest,
    }
}

fn token_files(home: &Dir) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(home.join(".reasonix/mcp-auth"))
        .map(|dir| dir.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[test]
fn login_registers_follows_the_browser_and_runs_use_and_refresh_the_token() {
    let (base, seen) = protected_server(Script::default());
    let home = Dir::new();
    let work = Dir::new();
    let url = format!("{base}/mcp");
    home.write(".reasonix/config.toml", &plugin(&url, ""));

    // Before any login: the server is reported as needing one, and `mcp list` fails.
    let out = run(reasonix(&home, work.path()).args(["mcp", "list"]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("reasonix mcp login vault"), "{out:?}");
    assert!(requests(&seen, "/token").is_empty());

    let out = login_via_browser(&home, work.path(), str::to_string);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.starts_with("Logged in to `vault`"), "{out:?}");
    let register = requests(&seen, "/register");
    assert_eq!(register.len(), 1, "dynamic client registration");
    let registration: Value = serde_json::from_str(&register[0].body).unwrap();
    assert!(registration["redirect_uris"][0]
        .as_str()
        .unwrap()
        .starts_with("http://127.0.0.1:"));
    let authorize = requests(&seen, "/authorize")[0].query();
    assert_eq!(authorize["client_id"], "dyn-client");
    assert_eq!(authorize["code_challenge_method"], "S256");
    assert_eq!(authorize["resource"], url, "RFC 8707 audience");
    assert_eq!(authorize["scope"], "mcp:tools offline_access");
    let token = requests(&seen, "/token")[0].form();
    assert_eq!(token["resource"], url);
    assert_eq!(token["client_id"], "dyn-client");

    // Stored for the user only, never printed.
    let files = token_files(&home);
    assert_eq!(files.len(), 1, "{files:?}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(!out.stdout.contains("at-1") && !out.stderr.contains("at-1"));

    let out = run(reasonix(&home, work.path()).args(["mcp", "call", "vault", "secret_count"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "42 secrets\n"),
        "{out:?}"
    );
    assert!(requests(&seen, "/mcp")
        .iter()
        .any(|r| r.header("authorization") == Some("Bearer at-1")));

    // An expired access token is refreshed before use.
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let mut saved: Value = serde_json::from_str(&text).unwrap();
    saved["tokens"]["expires_at"] = json!(1);
    std::fs::write(&files[0], saved.to_string()).unwrap();
    let out = run(reasonix(&home, work.path()).args(["mcp", "call", "vault", "secret_count"]));
    assert_eq!(out.code, 0, "{out:?}");
    let refresh = requests(&seen, "/token")
        .into_iter()
        .find(|r| r.form()["grant_type"] == "refresh_token")
        .expect("a refresh grant");
    assert_eq!(refresh.form()["resource"], url);
    assert!(requests(&seen, "/mcp")
        .iter()
        .any(|r| r.header("authorization") == Some("Bearer at-2")));

    let out = run(reasonix(&home, work.path()).args(["mcp", "logout", "vault"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(token_files(&home).is_empty());
}

#[test]
fn a_headless_run_reports_an_unauthorized_server_once_and_goes_on() {
    let (base, _seen) = protected_server(Script::default());
    let (_model, home, work) = with_model(vec![Reply::text("done without it")], &base);
    let out = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "done without it\n"),
        "{out:?}"
    );
    assert_eq!(
        out.stderr.matches("reasonix mcp login vault").count(),
        1,
        "{out:?}"
    );
}

#[test]
fn the_client_credentials_grant_needs_no_browser() {
    let (base, seen) = protected_server(Script::default());
    let home = Dir::new();
    let work = Dir::new();
    let oauth = "[plugins.oauth]\nclient_id = \"m2m\"\nclient_secret = \"${VAULT_SECRET}\"\ngrant = \"client_credentials\"\n";
    home.write(
        ".reasonix/config.toml",
        &plugin(&format!("{base}/mcp"), oauth),
    );
    let out = run(reasonix(&home, work.path())
        .env("VAULT_SECRET", "s3cret")
        .args(["mcp", "call", "vault", "secret_count"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "42 secrets\n"),
        "{out:?}"
    );
    let token = requests(&seen, "/token");
    assert_eq!(token.len(), 1);
    assert_eq!(token[0].form()["grant_type"], "client_credentials");
    assert_eq!(token[0].form()["resource"], format!("{base}/mcp"));
    assert!(requests(&seen, "/authorize").is_empty());
    // The configured secret is not copied next to the tokens.
    let files = token_files(&home);
    let stored = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        stored.contains("at-1") && !stored.contains("s3cret"),
        "{stored}"
    );
    // A second run reuses the stored token: no new token request.
    let out = run(reasonix(&home, work.path())
        .env("VAULT_SECRET", "s3cret")
        .args(["mcp", "call", "vault", "secret_count"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(requests(&seen, "/token").len(), 1);
}

#[test]
fn a_redirect_with_a_foreign_state_stops_the_login_before_any_token() {
    let (base, seen) = protected_server(Script::default());
    let (home, work) = configured(&base, "");
    let out = login_via_browser(&home, work.path(), |location| {
        let (before, after) = location.split_once("state=").unwrap();
        let rest = after.split_once('&').map_or("", |(_, r)| r);
        format!("{before}state=attacker&{rest}")
    });
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("`state`"), "{out:?}");
    assert!(
        requests(&seen, "/token").is_empty(),
        "no code was exchanged"
    );
    assert!(token_files(&home).is_empty());
}

#[test]
fn metadata_on_another_origin_or_for_another_resource_is_refused() {
    let (other, other_seen) = serve(|_, _| json_answer(404, json!({})));
    for script in [
        Script {
            metadata_link: Some(format!("{other}/.well-known/oauth-protected-resource")),
            ..Script::default()
        },
        Script {
            claimed_resource: Some(format!("{other}/mcp")),
            ..Script::default()
        },
    ] {
        let (base, seen) = protected_server(script);
        let (home, work) = configured(&base, "");
        let out = run(reasonix(&home, work.path()).args(["mcp", "login", "vault"]));
        assert_eq!(out.code, 1, "{out:?}");
        assert!(out.stderr.contains("refused"), "{out:?}");
        assert!(
            !out.stderr.contains("open this URL"),
            "no URL shown: {out:?}"
        );
        assert!(requests(&seen, "/register").is_empty() && requests(&seen, "/token").is_empty());
    }
    assert!(
        other_seen.lock().unwrap().is_empty(),
        "the other origin was never asked"
    );
}

#[test]
fn login_never_contacts_a_project_server_that_has_no_launch_grant() {
    let (base, seen) = protected_server(Script::default());
    let home = Dir::new();
    let work = Dir::new();
    let url = format!("{base}/mcp");
    // The repository declares the server; the user never approved it.
    work.write(
        ".mcp.json",
        &format!(r#"{{"mcpServers": {{"vault": {{"type": "http", "url": "{url}"}}}}}}"#),
    );
    let out = run(reasonix(&home, work.path())
        .args(["mcp", "login", "vault"])
        .stdin(Stdio::null()));
    assert_ne!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("launch grant"), "{out:?}");
    assert!(seen.lock().unwrap().is_empty(), "the server was contacted");
    assert!(token_files(&home).is_empty());
}

#[test]
fn login_finds_the_challenge_behind_an_open_handshake_and_steps_up_on_insufficient_scope() {
    let (base, seen) = protected_server(Script {
        open_handshake: true,
        call_needs_write: true,
        ..Script::default()
    });
    let (home, work) = configured(&base, "");
    // `initialize` succeeds without a token: the login still finds the 401 of `tools/list`.
    let out = login_via_browser(&home, work.path(), str::to_string);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.starts_with("Logged in to `vault`"), "{out:?}");
    let first = requests(&seen, "/authorize");
    assert_eq!(first.len(), 1, "one authorization request");
    assert_eq!(first[0].query()["scope"], "mcp:tools offline_access");
    let out = run(reasonix(&home, work.path()).args(["mcp", "list"]));
    assert_eq!(out.code, 0, "{out:?}");

    // The call wants more scope: the run says so and remembers it for the next login, which
    // asks for the union.
    let out = run(reasonix(&home, work.path()).args(["mcp", "call", "vault", "secret_count"]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("reasonix mcp login vault"), "{out:?}");
    assert!(out.stderr.contains("mcp:write"), "{out:?}");
    let out = login_via_browser(&home, work.path(), str::to_string);
    assert_eq!(out.code, 0, "{out:?}");
    let second = requests(&seen, "/authorize");
    assert_eq!(second.len(), 2, "a second authorization request");
    let scope = second[1].query()["scope"].clone();
    for wanted in ["mcp:tools", "mcp:write"] {
        assert!(scope.split(' ').any(|s| s == wanted), "{scope}");
    }
    let out = run(reasonix(&home, work.path()).args(["mcp", "call", "vault", "secret_count"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "42 secrets\n"),
        "{out:?}"
    );
}

/// Decodes unpadded base64url (the JWT parts).
fn base64url_decode(text: &str) -> Vec<u8> {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.bytes() {
        let value = alphabet.iter().position(|&a| a == c).unwrap() as u32;
        bits = (bits << 6) | value;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    out
}

/// The DER `SEQUENCE { INTEGER r, INTEGER s }` openssl verifies, from JOSE's `r || s`.
fn jose_to_der(signature: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    for half in signature.chunks(32) {
        let first = half.iter().position(|&b| b != 0).unwrap_or(31);
        let mut int = half[first..].to_vec();
        if int[0] & 0x80 != 0 {
            int.insert(0, 0);
        }
        body.extend([0x02, int.len() as u8]);
        body.extend(int);
    }
    let mut der = vec![0x30, body.len() as u8];
    der.extend(body);
    der
}

#[test]
fn the_client_credentials_grant_signs_a_private_key_jwt_that_openssl_verifies() {
    for (kind, alg, genpkey) in [
        (
            "ec",
            "ES256",
            ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
        ),
        (
            "rsa",
            "RS256",
            ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
        ),
    ] {
        let (base, seen) = protected_server(Script::default());
        let home = Dir::new();
        let work = Dir::new();
        let key = home.join(&format!("{kind}.pem"));
        let public = home.join(&format!("{kind}.pub"));
        let openssl = |args: &[&str]| {
            let out = std::process::Command::new("openssl")
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "openssl {args:?}: {out:?}");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let mut args = vec!["genpkey"];
        args.extend(genpkey);
        args.extend(["-out", key.to_str().unwrap()]);
        openssl(&args);
        openssl(&[
            "pkey",
            "-in",
            key.to_str().unwrap(),
            "-pubout",
            "-out",
            public.to_str().unwrap(),
        ]);
        let oauth = format!(
            "[plugins.oauth]\nclient_id = \"m2m\"\nprivate_key = \"{}\"\ngrant = \"client_credentials\"\n",
            key.display()
        );
        home.write(
            ".reasonix/config.toml",
            &plugin(&format!("{base}/mcp"), &oauth),
        );
        let out = run(reasonix(&home, work.path()).args(["mcp", "call", "vault", "secret_count"]));
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (0, "42 secrets\n"),
            "{kind}: {out:?}"
        );

        let token = requests(&seen, "/token");
        assert_eq!(token.len(), 1);
        let form = token[0].form();
        assert_eq!(form["grant_type"], "client_credentials");
        assert_eq!(
            form["client_assertion_type"],
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        );
        assert!(token[0].header("authorization").is_none(), "no secret sent");
        let jwt = form["client_assertion"].clone();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3, "{jwt}");
        let header: Value = serde_json::from_slice(&base64url_decode(parts[0])).unwrap();
        assert_eq!(header["alg"], alg);
        let claims: Value = serde_json::from_slice(&base64url_decode(parts[1])).unwrap();
        assert_eq!(
            (claims["iss"].as_str(), claims["sub"].as_str()),
            (Some("m2m"), Some("m2m"))
        );
        assert_eq!(claims["aud"], base.as_str(), "the issuer is the audience");
        assert!(claims["exp"].as_u64().unwrap() > claims["iat"].as_u64().unwrap());
        assert!(claims["jti"].as_str().is_some_and(|j| j.len() >= 16));

        // openssl checks the signature over `header.claims`.
        let signature = base64url_decode(parts[2]);
        let signature = match alg {
            "ES256" => {
                assert_eq!(signature.len(), 64, "JOSE r || s");
                jose_to_der(&signature)
            }
            _ => signature,
        };
        let input = home.join("input");
        let sig = home.join("sig");
        std::fs::write(&input, format!("{}.{}", parts[0], parts[1])).unwrap();
        std::fs::write(&sig, &signature).unwrap();
        let verified = openssl(&[
            "dgst",
            "-sha256",
            "-verify",
            public.to_str().unwrap(),
            "-signature",
            sig.to_str().unwrap(),
            input.to_str().unwrap(),
        ]);
        assert!(verified.contains("Verified OK"), "{kind}: {verified}");
        // A tampered input fails the same check.
        std::fs::write(&input, format!("{}.{}x", parts[0], parts[1])).unwrap();
        let out = std::process::Command::new("openssl")
            .args([
                "dgst",
                "-sha256",
                "-verify",
                public.to_str().unwrap(),
                "-signature",
                sig.to_str().unwrap(),
                input.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(!out.status.success());
    }
}

/// The names of the tools a model request offered.
fn offered_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_chat_offers_the_login_on_first_use_and_the_tools_arrive_without_blocking_input() {
    use crate::util::pty::Pty;
    let (base, seen) = protected_server(Script::default());
    let (model, home, work) = with_model(
        vec![Reply::text("first answer"), Reply::text("second answer")],
        &base,
    );
    // The browser keeps the URL for the person (this test) to follow later.
    let (browser, opened) = recording_browser(&home);
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat")
        .env("FAKE_API_KEY", "k")
        .env("BROWSER", &browser);
    let mut pty = Pty::spawn(cmd, 200, 40);
    pty.wait_text("fake-model · ask");
    pty.wait_text("log in to use its tools:");

    // Not logged in yet: the chat answers, without the server's tools.
    pty.send("hi\r");
    pty.wait_text("first answer");
    let first = model.wait_for_requests(1);
    assert!(!offered_tools(&first[0].body)
        .iter()
        .any(|t| t.starts_with("mcp__vault")));

    // The person follows the link the browser was given.
    let address = opened_url(&opened);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .build()
        .into();
    let reply = agent.get(&address).call().unwrap();
    assert_eq!(reply.status().as_u16(), 302, "{address}");
    let location = reply.headers()["location"].to_str().unwrap().to_string();
    let _ = agent.get(&location).call();
    pty.wait_text("logged in; 1 tool available");
    assert_eq!(requests(&seen, "/authorize").len(), 1);
    assert_eq!(token_files(&home).len(), 1, "stored as by `mcp login`");

    pty.send("again\r");
    pty.wait_text("second answer");
    let second = model.wait_for_requests(2);
    let tools = offered_tools(&second[1].body);
    assert!(
        tools.iter().any(|t| t == "mcp__vault__secret_count"),
        "{tools:?}"
    );
    // `/mcp` follows the login: the server is connected now, with its tool.
    pty.send("/mcp\r");
    pty.wait_text("vault  connected");
    assert!(
        !pty.screen().contains("waiting for authorization"),
        "{}",
        pty.screen()
    );
}

/// The Client ID Metadata Document the CIMD tests configure.
const CLIENT_DOCUMENT: &str = "https://client.example/reasonix.json";

/// The `grant_type` of every token request the server got, in order.
fn grant_types(seen: &Arc<Mutex<Vec<Req>>>) -> Vec<String> {
    requests(seen, "/token")
        .iter()
        .map(|r| r.form()["grant_type"].clone())
        .collect()
}

/// Logs in through the browser to a server that supports CIMD, configured with `oauth`: the
/// server's record of requests, and the home and workspace for further calls.
fn logged_in_to_a_cimd_server(oauth: &str) -> (Arc<Mutex<Vec<Req>>>, Dir, Dir) {
    let (base, seen) = protected_server(Script {
        cimd: true,
        ..Script::default()
    });
    let (home, work) = configured(&base, oauth);
    let out = login_via_browser(&home, work.path(), str::to_string);
    assert_eq!(out.code, 0, "{out:?}");
    (seen, home, work)
}

#[test]
fn a_server_that_supports_cimd_gets_the_document_url_as_client_id_and_no_registration() {
    let oauth = format!("[plugins.oauth]\nclient_metadata_url = \"{CLIENT_DOCUMENT}\"\n");
    let (seen, home, work) = logged_in_to_a_cimd_server(&oauth);
    assert_eq!(requests(&seen, "/register").len(), 0, "no registration");
    let authorize = requests(&seen, "/authorize");
    assert_eq!(authorize.len(), 1);
    assert_eq!(authorize[0].query()["client_id"], CLIENT_DOCUMENT);
    let token = requests(&seen, "/token");
    assert_eq!(token.len(), 1);
    assert_eq!(token[0].form()["client_id"], CLIENT_DOCUMENT);
    assert_eq!(token[0].form()["grant_type"], "authorization_code");
    let out = run(reasonix(&home, work.path()).args(["mcp", "call", "vault", "secret_count"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "42 secrets\n"),
        "{out:?}"
    );

    // The same configuration against a server without CIMD registers instead.
    let (base, seen) = protected_server(Script::default());
    let home = Dir::new();
    home.write(
        ".reasonix/config.toml",
        &plugin(&format!("{base}/mcp"), &oauth),
    );
    let out = login_via_browser(&home, work.path(), str::to_string);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(requests(&seen, "/register").len(), 1, "registered");
    assert_eq!(
        requests(&seen, "/authorize")[0].query()["client_id"],
        "dyn-client"
    );
}

/// A logged-in user of a server that revokes the access token after its first tool call
/// (and refuses the refresh grant when `refuse_refresh`), and a model that calls the tool
/// twice and then answers `answer`: the server's base URL, the requests it saw, the model,
/// the home and the workspace.
fn logged_in_revoking_session(
    refuse_refresh: bool,
    answer: &str,
) -> (String, Arc<Mutex<Vec<Req>>>, FakeOpenAI, Dir, Dir) {
    let (base, seen) = protected_server(Script {
        revoke_after_call: true,
        refuse_refresh,
        ..Script::default()
    });
    let (model, home, work) = with_model(counts_twice(answer), &base);
    let out = login_via_browser(&home, work.path(), str::to_string);
    assert_eq!(out.code, 0, "{out:?}");
    (base, seen, model, home, work)
}

#[test]
fn a_token_revoked_mid_session_is_refreshed_on_the_401_and_the_call_repeated() {
    let (base, seen, model, home, work) = logged_in_revoking_session(false, "counted twice");
    let url = format!("{base}/mcp");
    let before_run = requests(&seen, "/mcp").len();

    let out = run(reasonix(&home, work.path()).args(["run", "count the secrets twice"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "counted twice\n"),
        "{out:?}"
    );
    // Both calls answered, the second after the refresh.
    let requests_seen = model.wait_for_requests(3);
    for (n, id) in [(1, "c1"), (2, "c2")] {
        let result = requests_seen[n].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .map(|m| m["content"].clone());
        // The second call repeats the first (same call, same result), so its result also
        // carries the loop guard's note after the tool's text.
        assert!(
            result
                .as_ref()
                .and_then(Value::as_str)
                .is_some_and(|c| c == "42 secrets" || c.starts_with("42 secrets\n\n[reasonix]")),
            "call {id}: {result:?}"
        );
    }
    // One session: the first call used at-1, which the server then revoked; the next request
    // met a 401, the refresh grant got at-2 and the call went through with it.
    let refresh: Vec<HashMap<String, String>> = requests(&seen, "/token")
        .iter()
        .map(Req::form)
        .filter(|f| f["grant_type"] == "refresh_token")
        .collect();
    assert_eq!(refresh.len(), 1, "{refresh:?}");
    let form = &refresh[0];
    assert_eq!(form["refresh_token"], "rt-1");
    assert_eq!(form["resource"], url, "RFC 8707 audience on the refresh");
    assert_eq!(form["client_id"], "dyn-client");
    assert!(!form.contains_key("code"), "{form:?}");
    let mcp = requests(&seen, "/mcp").split_off(before_run);
    let calls: Vec<Option<&str>> = mcp
        .iter()
        .filter(|r| r.body.contains("\"tools/call\""))
        .map(|r| r.header("authorization"))
        .collect();
    assert_eq!(
        calls,
        [
            Some("Bearer at-1"),
            Some("Bearer at-1"),
            Some("Bearer at-2")
        ],
        "the first call with at-1, the second refused with at-1 and repeated once with at-2"
    );
    let handshakes: Vec<Option<&str>> = mcp
        .iter()
        .filter(|r| r.body.contains("\"initialize\""))
        .map(|r| r.header("authorization"))
        .collect();
    assert_eq!(
        handshakes,
        [Some("Bearer at-1")],
        "the run kept its session: no second handshake"
    );
}

#[test]
fn a_revoked_token_whose_refresh_fails_tells_to_log_in_again() {
    let (_, seen, model, home, work) = logged_in_revoking_session(true, "gave up");

    let out = run(reasonix(&home, work.path()).args(["run", "count the secrets twice"]));
    assert_eq!((out.code, out.stdout.as_str()), (0, "gave up\n"), "{out:?}");
    let requests_seen = model.wait_for_requests(3);
    let result = |n: usize, id: &str| {
        requests_seen[n].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .and_then(|m| m["content"].as_str().map(str::to_string))
            .unwrap_or_default()
    };
    assert_eq!(result(1, "c1"), "42 secrets");
    let refused = result(2, "c2");
    assert!(
        refused.contains("run `reasonix mcp login vault`"),
        "the model is told how the person logs in again: {refused}"
    );
    assert!(
        out.stderr.contains("reasonix mcp login vault"),
        "and so is the person: {out:?}"
    );
    let grants = grant_types(&seen);
    assert_eq!(
        grants,
        ["authorization_code", "refresh_token"],
        "one refresh attempt, no loop"
    );
}

/// A `$BROWSER` that plays the person: it loads the authorization URL it is given and follows
/// the authorization server's redirect to the loopback listener (python3's urllib, no proxy).
fn following_browser(home: &Dir) -> std::path::PathBuf {
    let script = home.join("browser");
    std::fs::write(
        &script,
        "#!/usr/bin/env python3\nimport sys, urllib.request\n\
         opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))\n\
         opener.open(sys.argv[1], timeout=60).read()\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn mcp_login_opens_browser_whose_redirect_completes_the_login() {
    let (base, seen) = protected_server(Script::default());
    let (home, work) = configured(&base, "");
    // Nobody reads the printed URL: the browser alone must finish the login.
    let out = run(reasonix(&home, work.path())
        .env("BROWSER", following_browser(&home))
        .stdin(Stdio::null())
        .args(["mcp", "login", "vault"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.starts_with("Logged in to `vault`"), "{out:?}");
    assert!(out.stderr.contains("open this URL"), "printed too: {out:?}");
    let authorize = requests(&seen, "/authorize");
    assert_eq!(authorize.len(), 1, "the browser loaded the URL");
    let redirect_uri = authorize[0].query()["redirect_uri"].clone();
    assert!(
        redirect_uri.starts_with("http://127.0.0.1:") && redirect_uri.ends_with("/callback"),
        "{redirect_uri}"
    );
    let token = requests(&seen, "/token");
    assert_eq!(token.len(), 1);
    assert_eq!(token[0].form()["redirect_uri"], redirect_uri);
    assert_eq!(token_files(&home).len(), 1);
    let out = run(reasonix(&home, work.path()).args(["mcp", "call", "vault", "secret_count"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "42 secrets\n"),
        "{out:?}"
    );
}

/// Every file under `dir`, except those under `skip`.
fn files_under(dir: &Path, skip: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.starts_with(skip) {
                continue;
            }
            let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn tokens_never_reach_project_files_logs_sessions_or_output() {
    const PREFIX: &str = "tok-9f3c-";
    let (base, seen) = protected_server(Script {
        revoke_after_call: true,
        token_prefix: PREFIX,
        ..Script::default()
    });
    let (_model, home, work) = with_model(counts_twice("counted"), &base);
    // The MCP log and the recording are written into the project, where they would be
    // committed or shared.
    let log = work.join("mcp.log");
    let record = work.join("run.jsonl");
    let mut outputs = Vec::new();
    let out = run(reasonix(&home, work.path())
        .env("BROWSER", following_browser(&home))
        .env("REASONIX_LOG", &log)
        .stdin(Stdio::null())
        .args(["mcp", "login", "vault"]));
    assert_eq!(out.code, 0, "{out:?}");
    outputs.push(out);
    let out = run(reasonix(&home, work.path())
        .env("REASONIX_LOG", &log)
        .args(["run", "--record"])
        .arg(&record)
        .arg("count the secrets twice"));
    assert_eq!((out.code, out.stdout.as_str()), (0, "counted\n"), "{out:?}");
    outputs.push(out);
    for args in [
        &["mcp", "list"][..],
        &["mcp", "call", "vault", "secret_count"][..],
    ] {
        let out = run(reasonix(&home, work.path())
            .env("REASONIX_LOG", &log)
            .args(args));
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
        outputs.push(out);
    }
    // Each revoked token was refreshed (in the run, then in `mcp call`), so several access
    // tokens and the refresh token passed through the client.
    let grants = grant_types(&seen);
    assert_eq!(
        grants,
        ["authorization_code", "refresh_token", "refresh_token"]
    );
    let stored = token_files(&home);
    assert_eq!(stored.len(), 1);
    let kept = std::fs::read_to_string(&stored[0]).unwrap();
    assert!(
        kept.contains(&format!("{PREFIX}at-3")) && kept.contains(&format!("{PREFIX}rt-1")),
        "the search looks for what the token file holds: {kept}"
    );
    for out in &outputs {
        assert!(
            !out.stdout.contains(PREFIX) && !out.stderr.contains(PREFIX),
            "a token was printed: {out:?}"
        );
    }
    assert!(log.exists() && record.exists(), "both were written");
    let auth_dir = home.join(".reasonix/mcp-auth");
    let mut checked = files_under(work.path(), &auth_dir);
    checked.extend(files_under(home.path(), &auth_dir));
    for file in &checked {
        let text = String::from_utf8_lossy(&std::fs::read(file).unwrap()).into_owned();
        assert!(
            !text.contains(PREFIX),
            "{} holds a token:\n{text}",
            file.display()
        );
    }
    assert!(
        checked
            .iter()
            .any(|f| f.starts_with(home.join(".reasonix/projects"))
                && f.components().any(|c| c.as_os_str() == "sessions")),
        "the session files were among those checked: {checked:?}"
    );
}

#[test]
fn a_pre_registered_client_comes_before_cimd_and_registration() {
    let oauth = format!(
        "[plugins.oauth]\nclient_id = \"pre-registered\"\nclient_metadata_url = \"{CLIENT_DOCUMENT}\"\n"
    );
    let (seen, _home, _work) = logged_in_to_a_cimd_server(&oauth);
    assert!(requests(&seen, "/register").is_empty(), "no registration");
    let authorize = requests(&seen, "/authorize");
    assert_eq!(authorize.len(), 1);
    assert_eq!(authorize[0].query()["client_id"], "pre-registered");
    let token = requests(&seen, "/token");
    assert_eq!(token[0].form()["client_id"], "pre-registered");
    assert!(
        token[0].header("authorization").is_none(),
        "a public client sends no secret"
    );
}
