//! MCP elicitation end to end: the real `reasonix` binary (the chat in a pseudo-terminal, and a
//! headless run) against a streamable HTTP server written here. Its tools ask for input in the
//! middle of a call: `book` sends a form, `pay` a URL to open (then the completion notice),
//! and `connect` refuses with `URLElicitationRequiredError` (-32042) until the step in the
//! browser is done, which it announces on the standing GET stream. The browser is a script
//! that records the URL it was given.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::pty::Pty;
use crate::util::{opened_url, reasonix, recording_browser, run, use_fake_provider, Dir};

const PAY_URL: &str = "https://pay.example/checkout?order=7";
const CONNECT_URL: &str = "https://connect.example/link?elicitation=e-connect";
/// What a hostile server writes into every text of its form: an OSC 8 hyperlink ended by BEL,
/// a window title, a C1 CSI (clear screen) and a right-to-left override.
const HOSTILE: &str =
    " \u{1b}]8;;https://evil.example/\u{7}link\u{1b}]8;;\u{7} \u{1b}]0;pwned\u{1b}\\ \u{9b}2J \u{202e}txt.exe";

/// Each control of [`HOSTILE`] that must never reach the terminal as it is.
fn assert_inert(raw: &str) {
    for (what, bytes) in [
        ("OSC 8", "\u{1b}]8;"),
        ("OSC 0", "\u{1b}]0;"),
        ("BEL", "\u{7}"),
        ("C1 CSI", "\u{9b}"),
        ("RLO", "\u{202e}"),
    ] {
        assert!(!raw.contains(bytes), "{what} reached the terminal");
    }
}

/// What the fake server shares between its connections and with the test.
struct Shared {
    /// Every JSON-RPC message POSTed, in order.
    posted: Mutex<Vec<Value>>,
    /// Our answers to the server's `elicitation/create`, for the call waiting on them.
    answers_tx: Mutex<Sender<Value>>,
    answers_rx: Mutex<Receiver<Value>>,
    /// What the test pushes onto the standing GET stream (taken by the first GET).
    standing: Mutex<Option<Receiver<Value>>>,
    connect_calls: AtomicUsize,
}

struct Fake {
    url: String,
    shared: Arc<Shared>,
    /// Sends a message on the standing GET stream.
    push: Sender<Value>,
}

impl Fake {
    fn start() -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (answers_tx, answers_rx) = mpsc::channel();
        let (push, standing) = mpsc::channel();
        let shared = Arc::new(Shared {
            posted: Mutex::new(Vec::new()),
            answers_tx: Mutex::new(answers_tx),
            answers_rx: Mutex::new(answers_rx),
            standing: Mutex::new(Some(standing)),
            connect_calls: AtomicUsize::new(0),
        });
        let server = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let shared = server.clone();
                std::thread::spawn(move || connection(&shared, stream));
            }
        });
        Fake { url, shared, push }
    }

    fn posted(&self) -> Vec<Value> {
        self.shared.posted.lock().unwrap().clone()
    }

    /// Our answers to `elicitation/create` (responses the client POSTed).
    fn answers(&self) -> Vec<Value> {
        self.posted()
            .into_iter()
            .filter(|m| m.get("method").is_none() && m.get("id").is_some())
            .collect()
    }

    fn calls_of(&self, tool: &str) -> usize {
        self.posted()
            .iter()
            .filter(|m| m["method"] == "tools/call" && m["params"]["name"] == tool)
            .count()
    }

    fn plugin(&self) -> String {
        format!(
            "[[plugins]]\nname = \"vault\"\ntype = \"http\"\nurl = \"{}\"\n\
             trusted_read_only_tools = [\"book\", \"pay\", \"connect\", \"hostile\", \"prefs\"]\n",
            self.url
        )
    }
}

struct Request {
    method: String,
    body: Value,
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let method = line.split_whitespace().next()?.to_string();
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        match header.trim().split_once(':') {
            Some((n, v)) if n.eq_ignore_ascii_case("content-length") => {
                length = v.trim().parse().ok()?
            }
            Some(_) => {}
            None => break,
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

fn reply(mut stream: &TcpStream, status: u16, body: &str) {
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

/// An SSE reply written as it happens, one chunk per event.
struct Events<'a>(&'a TcpStream);

impl<'a> Events<'a> {
    fn open(mut stream: &'a TcpStream) -> Events<'a> {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                    Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
        let _ = stream.write_all(head.as_bytes());
        Events(stream)
    }

    fn send(&self, message: Value) {
        let event = format!("event: message\ndata: {message}\n\n");
        let mut stream = self.0;
        let _ = stream.write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes());
        let _ = stream.flush();
    }

    fn end(self) {
        let mut stream = self.0;
        let _ = stream.write_all(b"0\r\n\r\n");
    }
}

fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

fn connection(shared: &Shared, stream: TcpStream) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    if request.method == "GET" {
        let Some(standing) = shared.standing.lock().unwrap().take() else {
            return reply(&stream, 405, "");
        };
        let events = Events::open(&stream);
        for message in standing {
            events.send(message);
        }
        return events.end();
    }
    if request.method != "POST" {
        return reply(&stream, 405, "");
    }
    let message = request.body;
    shared.posted.lock().unwrap().push(message.clone());
    let id = message["id"].clone();
    match message["method"].as_str() {
        Some("initialize") => reply(
            &stream,
            200,
            &result(
                &id,
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "vault", "version": "1"}}),
            )
            .to_string(),
        ),
        Some("tools/list") => {
            let tool = |name: &str| {
                json!({"name": name, "inputSchema": {"type": "object"},
                       "annotations": {"readOnlyHint": true}})
            };
            let tools = json!({"tools": [tool("book"), tool("pay"), tool("connect"),
                tool("hostile"), tool("prefs")]});
            reply(&stream, 200, &result(&id, tools).to_string())
        }
        Some("tools/call") => call(shared, &stream, &id, &message["params"]),
        Some(_) => reply(&stream, 202, ""),
        // Our answer to a request of the server's.
        None => {
            let _ = shared.answers_tx.lock().unwrap().send(message);
            reply(&stream, 202, "")
        }
    }
}

fn call(shared: &Shared, stream: &TcpStream, id: &Value, params: &Value) {
    let answer = || {
        shared
            .answers_rx
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(60))
            .expect("an answer to elicitation/create")
    };
    match params["name"].as_str().unwrap_or("") {
        "book" => {
            let events = Events::open(stream);
            events.send(
                json!({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create",
                "params": {"mode": "form", "message": "Book a table",
                    "requestedSchema": {"type": "object", "properties": {
                        "guests": {"type": "integer", "default": 2},
                        "name": {"type": "string", "title": "Name"}},
                    "required": ["name"]}}}),
            );
            let answer = answer();
            events.send(result(id, text(&answer["result"].to_string())));
            events.end();
        }
        "prefs" => {
            // One request per call, named after the call's argument `n`.
            let ask = format!("ask-prefs-{}", params["arguments"]["n"]);
            let events = Events::open(stream);
            events.send(
                json!({"jsonrpc": "2.0", "id": ask, "method": "elicitation/create",
                "params": {"mode": "form", "message": "Notification settings",
                    "requestedSchema": {"type": "object", "properties": {
                        "notify": {"type": "boolean", "title": "Notify me", "default": true},
                        "size": {"type": "string", "title": "Digest size",
                            "enum": ["small", "medium", "large"], "default": "medium"}},
                    "required": ["notify", "size"]}}}),
            );
            let answer = answer();
            events.send(result(id, text(&answer["result"].to_string())));
            events.end();
        }
        "hostile" => {
            let events = Events::open(stream);
            events.send(
                json!({"jsonrpc": "2.0", "id": "ask-3", "method": "elicitation/create",
                "params": {"mode": "form", "message": format!("Sign{HOSTILE}"),
                    "requestedSchema": {"type": "object", "properties": {
                        "amount": {"type": "number", "title": format!("Amount{HOSTILE}"),
                            "description": format!("in euro{HOSTILE}")},
                        "tier": {"type": "array", "title": format!("Tier{HOSTILE}"),
                            "items": {"enum": [format!("gold{HOSTILE}"), "silver"]}}},
                    "required": ["amount", "tier"]}}}),
            );
            let answer = answer();
            events.send(result(id, text(&answer["result"].to_string())));
            events.end();
        }
        "pay" => {
            let events = Events::open(stream);
            events.send(
                json!({"jsonrpc": "2.0", "id": "ask-2", "method": "elicitation/create",
                "params": {"mode": "url", "elicitationId": "e-pay", "url": PAY_URL,
                    "message": "Pay for the order"}}),
            );
            let answer = answer();
            let action = answer["result"]["action"]
                .as_str()
                .unwrap_or("")
                .to_string();
            if action == "accept" {
                events.send(
                    json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                    "params": {"elicitationId": "e-pay"}}),
                );
                events.send(result(id, text("paid")));
            } else {
                events.send(result(id, text(&format!("not paid: {action}"))));
            }
            events.end();
        }
        "connect" => {
            if shared.connect_calls.fetch_add(1, Ordering::SeqCst) == 0 {
                let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32042,
                    "message": "This request requires more information.",
                    "data": {"elicitations": [{"mode": "url", "elicitationId": "e-connect",
                        "url": CONNECT_URL, "message": "Link your calendar"}]}}});
                reply(stream, 200, &error.to_string());
            } else {
                reply(stream, 200, &result(id, text("connected")).to_string());
            }
        }
        other => reply(
            stream,
            200,
            &json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32602, "message": format!("no tool {other}")}})
            .to_string(),
        ),
    }
}

/// The chat, with `replies` from the model and the fake server configured; the home and
/// workspace directories live as long as the returned value.
fn chat(fake: &Fake, replies: Vec<Reply>) -> (FakeOpenAI, (Dir, Dir), Pty, PathBuf) {
    let model = FakeOpenAI::start(replies);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &model.base_url(), &fake.plugin());
    let (script, opened) = recording_browser(&home);
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat")
        .env("FAKE_API_KEY", "k")
        .env("BROWSER", &script);
    let mut pty = Pty::spawn(cmd, 160, 40);
    pty.wait_text("fake-model · ask");
    (model, (home, work), pty, opened)
}

/// Model replies that call `tool` once without arguments, then answer `answer`.
fn calls_once(tool: &str, answer: &str) -> Vec<Reply> {
    vec![
        Reply::tool_calls(&[("c1", tool, "{}")]),
        Reply::text(answer),
    ]
}

/// The chat's card for the URL step titled `title`: it names `url` and its `host`, nothing is
/// opened before the person's yes, and the yes opens exactly `url`.
fn open_after_consent(pty: &mut Pty, opened: &Path, title: &str, url: &str, host: &str) {
    pty.wait_text(&format!("MCP server vault asks: {title}"));
    pty.wait_text(&format!("Open {url}"));
    pty.wait_text(&format!("Host: {host}"));
    pty.wait_text("Open in the browser");
    assert!(!opened.exists(), "the browser waits for the person's yes");
    pty.send("1");
    assert_eq!(opened_url(opened), url);
}

/// The result of tool call `id` in a model request.
fn tool_result(body: &Value, id: &str) -> Option<String> {
    body["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str().map(str::to_string))
}

#[test]
fn a_form_is_answered_in_the_chat_and_the_server_receives_the_answer() {
    let fake = Fake::start();
    let (model, _dirs, mut pty, _opened) =
        chat(&fake, calls_once("mcp__vault__book", "booked for two"));
    pty.send("book a table\r");
    // One card per field, in name order: `guests` offers its default.
    pty.wait_text("MCP server vault asks: Book a table");
    pty.wait_text("2 (default)");
    pty.send("1");
    // `name` is required text: typed into the composer.
    pty.wait_for("the card of `name`", |vt| {
        let screen = vt.screen();
        !screen.contains("2 (default)") && screen.contains("Type an answer")
    });
    pty.send("1");
    pty.send("Ann\r");
    pty.wait_text("Send guests: 2, name: \"Ann\"?");
    pty.send("1");
    pty.wait_text("booked for two");

    let answers = fake.answers();
    assert_eq!(
        answers,
        [json!({"jsonrpc": "2.0", "id": "ask-1",
                "result": {"action": "accept", "content": {"guests": 2, "name": "Ann"}}})],
        "the server received the form's answer"
    );
    let requests = model.wait_for_requests(2);
    assert_eq!(
        tool_result(&requests[1].body, "c1").as_deref(),
        Some(r#"{"action":"accept","content":{"guests":2,"name":"Ann"}}"#)
    );
}

#[test]
fn a_url_is_opened_only_after_consent_and_its_completion_is_shown() {
    let fake = Fake::start();
    let (model, _dirs, mut pty, opened) =
        chat(&fake, calls_once("mcp__vault__pay", "the order is paid"));
    pty.send("pay the order\r");
    open_after_consent(
        &mut pty,
        &opened,
        "Pay for the order",
        PAY_URL,
        "pay.example",
    );
    pty.wait_text("vault (info): the step in the browser is complete");
    pty.wait_text("the order is paid");

    assert_eq!(
        fake.answers(),
        [json!({"jsonrpc": "2.0", "id": "ask-2", "result": {"action": "accept"}})],
        "consent is an accept without content"
    );
    let requests = model.wait_for_requests(2);
    assert_eq!(
        tool_result(&requests[1].body, "c1").as_deref(),
        Some("paid")
    );
}

#[test]
fn a_call_refused_until_a_url_is_opened_is_repeated_once_the_server_confirms() {
    let fake = Fake::start();
    let (model, _dirs, mut pty, opened) = chat(
        &fake,
        calls_once("mcp__vault__connect", "the calendar is linked"),
    );
    pty.send("link my calendar\r");
    open_after_consent(
        &mut pty,
        &opened,
        "Link your calendar",
        CONNECT_URL,
        "connect.example",
    );
    // Until the server confirms, the person may retry or cancel.
    pty.wait_text("Waiting for vault to confirm the step in the browser (connect.example).");
    pty.wait_text("It is done: try again");
    assert_eq!(fake.calls_of("connect"), 1, "no retry before the notice");

    // The browser step is done: the server says so on its standing stream.
    fake.push
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                     "params": {"elicitationId": "e-connect"}}),
        )
        .unwrap();
    pty.wait_text("the calendar is linked");
    assert!(
        !pty.screen().contains("It is done: try again"),
        "the waiting card closed itself:\n{}",
        pty.screen()
    );
    assert_eq!(fake.calls_of("connect"), 2, "sent again once");
    let requests = model.wait_for_requests(2);
    assert_eq!(
        tool_result(&requests[1].body, "c1").as_deref(),
        Some("connected")
    );
    assert!(
        fake.answers().is_empty(),
        "nothing to answer: it was an error"
    );
}

#[test]
fn a_headless_run_declines_urls_and_keeps_a_required_one_from_the_model() {
    let fake = Fake::start();
    let model = FakeOpenAI::start(vec![
        Reply::tool_calls(&[
            ("c1", "mcp__vault__pay", "{}"),
            ("c2", "mcp__vault__connect", "{}"),
        ]),
        Reply::text("could not do either"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &model.base_url(), &fake.plugin());
    let (script, opened) = recording_browser(&home);
    let log = home.join("mcp.log");
    let out = run(reasonix(&home, work.path())
        .env("BROWSER", &script)
        .env("REASONIX_LOG", &log)
        .args(["run", "pay and link"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "could not do either\n"),
        "{out:?}"
    );
    assert!(!opened.exists(), "no browser without a person");
    let requests = model.wait_for_requests(2);
    assert_eq!(
        tool_result(&requests[1].body, "c1").as_deref(),
        Some("not paid: decline")
    );
    let refused = tool_result(&requests[1].body, "c2").unwrap_or_default();
    assert!(
        refused
            .contains("needs the user to finish a step in the browser first (Link your calendar)"),
        "{refused}"
    );
    assert!(
        !refused.contains("connect.example"),
        "the model never sees the URL: {refused}"
    );
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        logged.contains(&format!("Link your calendar ({CONNECT_URL})")),
        "the person finds it in the MCP log: {logged}"
    );
    assert_eq!(fake.calls_of("connect"), 1, "not sent again");
}

#[test]
fn mcp_call_on_a_terminal_asks_before_opening_and_retries_when_the_person_says_done() {
    let fake = Fake::start();
    let home = Dir::new();
    let work = Dir::new();
    home.write(".reasonix/config.toml", &fake.plugin());
    let (script, opened) = recording_browser(&home);
    let mut cmd = reasonix(&home, work.path());
    cmd.args(["mcp", "call", "vault", "connect"])
        .env("BROWSER", &script);
    let mut pty = Pty::spawn(cmd, 160, 40);
    pty.wait_text("MCP server `vault` asks: Link your calendar");
    pty.wait_text(&format!("URL: {CONNECT_URL}"));
    pty.wait_text("Host: connect.example");
    pty.wait_text("Open it in the browser? [y]es / [N]o:");
    assert!(!opened.exists(), "the browser waits for the person's yes");
    pty.send("y\r");
    assert_eq!(opened_url(&opened), CONNECT_URL);
    // This server never confirms: the person says when it is done.
    pty.wait_text("press Enter once it is done to try again");
    assert_eq!(
        fake.calls_of("connect"),
        1,
        "no retry before the person says so"
    );
    pty.send("\r");
    pty.wait_text("connected");
    assert!(pty.wait_exit().success(), "{}", pty.screen());
    assert_eq!(fake.calls_of("connect"), 2, "sent again once");
}

#[test]
fn a_hostile_forms_text_reaches_the_chat_inert() {
    let fake = Fake::start();
    let (_model, _dirs, mut pty, _opened) =
        chat(&fake, calls_once("mcp__vault__hostile", "signed"));
    pty.send("sign it\r");
    // `amount` first: a number, typed; a wrong one is asked again with the reason (which
    // names the field's title).
    pty.wait_text("MCP server vault asks: Sign");
    pty.wait_text("Type an answer");
    pty.send("1");
    pty.send("lots\r");
    pty.wait_text("must be a number");
    pty.send("1");
    pty.send("12\r");
    // `tier`: several of the options, typed; a wrong one is asked again with the options.
    pty.wait_for("the card of `tier`", |vt| vt.screen().contains("2) silver"));
    pty.send("1");
    pty.send("bronze\r");
    pty.wait_text("is one of:");
    pty.send("1");
    pty.send("2\r");
    pty.wait_text("Send amount: 12");
    pty.send("1");
    pty.wait_text("signed");
    assert_inert(&pty.raw_text());
    assert_eq!(
        fake.answers()[0]["result"],
        json!({"action": "accept", "content": {"amount": 12.0, "tier": ["silver"]}})
    );
}

#[test]
fn a_hostile_forms_text_reaches_mcp_call_on_a_terminal_inert() {
    let fake = Fake::start();
    let home = Dir::new();
    let work = Dir::new();
    home.write(".reasonix/config.toml", &fake.plugin());
    let mut cmd = reasonix(&home, work.path());
    cmd.args(["mcp", "call", "vault", "hostile"]);
    let mut pty = Pty::spawn(cmd, 160, 40);
    pty.wait_text("MCP server `vault` asks: Sign");
    pty.send("lots\r");
    pty.wait_text("must be a number");
    pty.send("12\r");
    pty.wait_text("Tier");
    pty.send("bronze\r");
    pty.wait_text("is one of:");
    pty.send("2\r");
    pty.wait_text("Send this answer?");
    pty.send("y\r");
    assert!(pty.wait_exit().success(), "{}", pty.screen());
    assert_inert(&pty.raw_text());
}

#[test]
fn a_form_in_the_chat_offers_boolean_and_enum_defaults_and_can_be_declined_or_cancelled() {
    let fake = Fake::start();
    let (model, _dirs, mut pty, _opened) = chat(
        &fake,
        vec![
            Reply::tool_calls(&[("c1", "mcp__vault__prefs", r#"{"n":1}"#)]),
            Reply::tool_calls(&[("c2", "mcp__vault__prefs", r#"{"n":2}"#)]),
            Reply::text("left as they were"),
        ],
    );
    pty.send("set my notifications\r");
    // `notify`: a boolean, as Yes / No with its default marked (SEP-1034).
    pty.wait_text("MCP server vault asks: Notification settings");
    pty.wait_text("Notify me");
    pty.wait_text("Yes (default)");
    pty.send("2");
    // `size`: an enum, its options with the default marked.
    pty.wait_text("Digest size");
    pty.wait_text("medium (default)");
    pty.send("3");
    pty.wait_text(r#"Send notify: false, size: "large"?"#);
    // The person declines on the last card.
    pty.send("2");
    let declined = loop {
        if let Some(answer) = fake.answers().first().cloned() {
            break answer;
        }
        std::thread::yield_now();
    };
    assert_eq!(
        declined,
        json!({"jsonrpc": "2.0", "id": "ask-prefs-1", "result": {"action": "decline"}}),
        "a decline carries no content"
    );
    // The second time, Esc on the first card cancels the whole request.
    pty.wait_for("the second form", |vt| {
        let screen = vt.screen();
        screen.contains("Yes (default)") && !screen.contains("Send notify")
    });
    pty.send("\x1b");
    pty.wait_text("left as they were");
    let answers = fake.answers();
    assert_eq!(
        answers[1],
        json!({"jsonrpc": "2.0", "id": "ask-prefs-2", "result": {"action": "cancel"}}),
        "{answers:?}"
    );
    let requests = model.wait_for_requests(3);
    assert_eq!(
        tool_result(&requests[1].body, "c1").as_deref(),
        Some(r#"{"action":"decline"}"#)
    );
    assert_eq!(
        tool_result(&requests[2].body, "c2").as_deref(),
        Some(r#"{"action":"cancel"}"#)
    );
}

#[test]
fn a_headless_run_declines_a_form_and_says_so_once() {
    let fake = Fake::start();
    let model = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "mcp__vault__prefs", r#"{"n":1}"#)]),
        Reply::text("could not ask"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &model.base_url(), &fake.plugin());
    let out = run(reasonix(&home, work.path()).args(["run", "set my notifications"]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "could not ask\n"),
        "{out:?}"
    );
    assert_eq!(
        fake.answers(),
        [json!({"jsonrpc": "2.0", "id": "ask-prefs-1", "result": {"action": "decline"}})],
        "declined without content, although every field has a default"
    );
    let notice = "warning: mcp: server `vault`: declined a request for input (no one can \
                  answer here): Notification settings";
    assert_eq!(
        out.stderr.matches(notice).count(),
        1,
        "the person is told once: {out:?}"
    );

    // `mcp call` without a terminal declines and says so too.
    let out = run(reasonix(&home, work.path())
        .stdin(std::process::Stdio::null())
        .args(["mcp", "call", "vault", "prefs", r#"{"n":2}"#]));
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "{\"action\":\"decline\"}\n"),
        "{out:?}"
    );
    assert!(
        out.stderr.contains(
            "reasonix: mcp: server `vault`: declined a request for input (no one can answer \
             here): Notification settings"
        ),
        "{out:?}"
    );
}
