//! reasonix-plugin-example: a small reference MCP server.
//!
//! It offers two tools (`echo`, and `wordcount`, which is annotated read-only), one prompt
//! (`review`, with an optional `focus` argument) and one resource (`doc://style-guide`). By
//! default it speaks MCP over stdio; `--http ADDR` serves streamable HTTP at `/mcp` instead,
//! answering with SSE (`--json-replies`: plain JSON bodies). `--page-size N` splits
//! `tools/list` into pages of N tools to exercise pagination. `--dynamic-tools` adds a tool
//! `enable_extra` whose call adds a third tool, `reverse`, and sends
//! `notifications/tools/list_changed` ahead of its result (over HTTP only in SSE replies,
//! since this server keeps no standalone stream). `--io-tools` adds four tools that touch the
//! machine, so tests can see what a sandbox lets the server do: `write_file` (`path`, `text`),
//! `read_file` (`path`), `connect` (`addr`, a TCP `host:port`) and `getenv` (`name`); each
//! reports a failure as a tool error carrying the OS error.
//!
//! Usage:
//!   reasonix-plugin-example [--page-size N] [--dynamic-tools] [--io-tools]
//!   reasonix-plugin-example --http 127.0.0.1:0 [--json-replies] [--page-size N] [--dynamic-tools]
//!
//! In HTTP mode the first line on stdout is `listening on http://HOST:PORT/mcp`.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use reasonix::mcp::jsonrpc::{
    self, Frame, Id, Message, RpcError, INVALID_PARAMS, METHOD_NOT_FOUND,
};
use serde_json::{json, Value};

const SUPPORTED: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

const STYLE_GUIDE: &str = "# Style guide\n\n- Functions do one thing.\n- Errors name the cause and the fix.\n- Tests assert something that could fail.\n";

struct Options {
    http: Option<String>,
    json_replies: bool,
    page_size: usize,
    dynamic_tools: bool,
    io_tools: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut options = Options {
        http: None,
        json_replies: false,
        page_size: usize::MAX,
        dynamic_tools: false,
        io_tools: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => options.http = Some(args.next().ok_or("--http needs an address")?),
            "--json-replies" => options.json_replies = true,
            "--dynamic-tools" => options.dynamic_tools = true,
            "--io-tools" => options.io_tools = true,
            "--page-size" => {
                let value = args.next().ok_or("--page-size needs a number")?;
                options.page_size =
                    value
                        .parse::<usize>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or(format!(
                            "--page-size needs a positive number, got `{value}`"
                        ))?;
            }
            "-h" | "--help" => {
                println!(
                    "usage: reasonix-plugin-example [--http ADDR [--json-replies]] [--page-size N] [--dynamic-tools] [--io-tools]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(options)
}

fn main() {
    let options = match parse_args() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("reasonix-plugin-example: {message}");
            std::process::exit(2);
        }
    };
    let server = Server {
        page_size: options.page_size,
        dynamic_tools: options.dynamic_tools,
        io_tools: options.io_tools,
        extra_enabled: AtomicBool::new(false),
    };
    let result = match &options.http {
        Some(addr) => serve_http(addr, server, options.json_replies),
        None => serve_stdio(&server),
    };
    if let Err(e) = result {
        eprintln!("reasonix-plugin-example: {e}");
        std::process::exit(1);
    }
}

/// The MCP logic, shared by both transports.
struct Server {
    page_size: usize,
    /// Offer `enable_extra`, which changes the tool list.
    dynamic_tools: bool,
    /// Offer the tools that write, read, connect and read the environment.
    io_tools: bool,
    /// `enable_extra` was called: `reverse` is offered.
    extra_enabled: AtomicBool,
}

fn base_tools() -> Vec<Value> {
    vec![
        json!({
            "name": "echo",
            "description": "Returns the given text unchanged.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "description": "Text to echo"}}, "required": ["text"]}
        }),
        json!({
            "name": "wordcount",
            "description": "Counts the words in the given text.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "description": "Text to count"}}, "required": ["text"]},
            "annotations": {"readOnlyHint": true}
        }),
    ]
}

/// The `--io-tools` tools: each takes one string argument.
fn io_tools() -> Vec<Value> {
    let tool = |name: &str, description: &str, args: &[&str]| {
        let properties: serde_json::Map<String, Value> = args
            .iter()
            .map(|a| (a.to_string(), json!({"type": "string"})))
            .collect();
        json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": properties, "required": args}
        })
    };
    vec![
        tool(
            "write_file",
            "Writes `text` to the file at `path`.",
            &["path", "text"],
        ),
        tool(
            "read_file",
            "Returns the content of the file at `path`.",
            &["path"],
        ),
        tool(
            "connect",
            "Opens a TCP connection to `addr` (host:port).",
            &["addr"],
        ),
        tool(
            "getenv",
            "Returns the value of the environment variable `name`.",
            &["name"],
        ),
    ]
}

/// Runs an `--io-tools` tool; `None` when `name` is not one of them.
fn call_io_tool(name: &str, arguments: Option<&Value>) -> Option<Value> {
    let arg = |key: &str| {
        arguments
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let outcome = match name {
        "write_file" => {
            std::fs::write(arg("path"), arg("text")).map(|()| format!("wrote {}", arg("path")))
        }
        "read_file" => std::fs::read_to_string(arg("path")),
        "connect" => arg("addr")
            .parse::<std::net::SocketAddr>()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
            .and_then(|addr| TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(5)))
            .map(|_| format!("connected to {}", arg("addr"))),
        "getenv" => Ok(std::env::var(arg("name")).unwrap_or_else(|_| "(unset)".into())),
        _ => return None,
    };
    Some(match outcome {
        Ok(text) => text_result(text, false),
        Err(e) => text_result(format!("{name} failed: {e}"), true),
    })
}

fn enable_extra_tool() -> Value {
    json!({
        "name": "enable_extra",
        "description": "Adds the `reverse` tool to this server's tools.",
        "inputSchema": {"type": "object", "properties": {}}
    })
}

fn extra_tool() -> Value {
    json!({
        "name": "reverse",
        "description": "Returns the given text reversed.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "description": "Text to reverse"}}, "required": ["text"]}
    })
}

impl Server {
    fn tools(&self) -> Vec<Value> {
        let mut tools = base_tools();
        if self.dynamic_tools {
            tools.push(enable_extra_tool());
        }
        if self.io_tools {
            tools.extend(io_tools());
        }
        if self.extra_enabled.load(Ordering::SeqCst) {
            tools.push(extra_tool());
        }
        tools
    }

    /// What to send for a message: a request's response, preceded by any notification it
    /// causes; nothing for notifications and responses.
    fn handle(&self, message: Message) -> Vec<Message> {
        let Message::Request { id, method, params } = message else {
            return Vec::new();
        };
        let params = params.unwrap_or(Value::Null);
        let mut sent = Vec::new();
        let result = match method.as_str() {
            "initialize" => Ok(initialize(&params, self.dynamic_tools)),
            "ping" => Ok(json!({})),
            "tools/list" => self.list_tools(&params),
            "tools/call" if self.is_enable_extra(&params) => {
                self.extra_enabled.store(true, Ordering::SeqCst);
                sent.push(Message::Notification {
                    method: "notifications/tools/list_changed".into(),
                    params: None,
                });
                Ok(text_result(
                    "the `reverse` tool is now available".into(),
                    false,
                ))
            }
            "tools/call" => {
                sent.extend(call_notifications(&params));
                self.call_tool(&params)
            }
            "prompts/list" => Ok(json!({"prompts": [{
                "name": "review",
                "description": "Review the current changes against the style guide.",
                "arguments": [{"name": "focus", "description": "What to look at first", "required": false}]
            }]})),
            "prompts/get" => get_prompt(&params),
            "resources/list" => Ok(json!({"resources": [{
                "uri": "doc://style-guide", "name": "style-guide",
                "mimeType": "text/markdown", "description": "The project's style guide"
            }]})),
            "resources/read" => read_resource(&params),
            other => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("Method not found: {other}"),
            )),
        };
        sent.push(Message::Response { id, result });
        sent
    }

    fn is_enable_extra(&self, params: &Value) -> bool {
        self.dynamic_tools && params.get("name").and_then(Value::as_str) == Some("enable_extra")
    }

    fn list_tools(&self, params: &Value) -> Result<Value, RpcError> {
        let all = self.tools();
        let start = match params.get("cursor").and_then(Value::as_str) {
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|n| *n < all.len())
                .ok_or_else(|| RpcError::new(INVALID_PARAMS, "invalid cursor"))?,
            None => 0,
        };
        let end = start.saturating_add(self.page_size).min(all.len());
        let mut page = json!({"tools": all[start..end]});
        if end < all.len() {
            page["nextCursor"] = json!(end.to_string());
        }
        Ok(page)
    }
}

/// A log line for every call, and a progress report when the client asked for one, so
/// clients can show both.
fn call_notifications(params: &Value) -> Vec<Message> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("?");
    let mut sent = vec![Message::Notification {
        method: "notifications/message".into(),
        params: Some(
            json!({"level": "info", "logger": "example", "data": format!("calling {name}")}),
        ),
    }];
    if let Some(token) = params.pointer("/_meta/progressToken") {
        sent.push(Message::Notification {
            method: "notifications/progress".into(),
            params: Some(json!({"progressToken": token, "progress": 1, "total": 1, "message": format!("{name} done")})),
        });
    }
    sent
}

fn initialize(params: &Value, list_changed: bool) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked
        .filter(|v| SUPPORTED.contains(v))
        .unwrap_or(SUPPORTED[0]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": list_changed}, "prompts": {}, "resources": {}},
        "serverInfo": {"name": "reasonix-plugin-example", "version": reasonix::VERSION}
    })
}

fn text_result(text: String, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

impl Server {
    fn call_tool(&self, params: &Value) -> Result<Value, RpcError> {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        if self.io_tools {
            if let Some(result) = call_io_tool(name, params.get("arguments")) {
                return Ok(result);
            }
        }
        let text = params
            .get("arguments")
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str);
        if name == "reverse" && !self.extra_enabled.load(Ordering::SeqCst) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "unknown tool `reverse`; call `enable_extra` first",
            ));
        }
        match (name, text) {
            ("echo" | "wordcount" | "reverse", None) => Ok(text_result(
                "the `text` argument is required and must be a string".into(),
                true,
            )),
            ("echo", Some(text)) => Ok(text_result(text.to_string(), false)),
            ("wordcount", Some(text)) => {
                let words = text.split_whitespace().count();
                let unit = if words == 1 { "word" } else { "words" };
                Ok(text_result(format!("{words} {unit}"), false))
            }
            ("reverse", Some(text)) => Ok(text_result(text.chars().rev().collect(), false)),
            (other, _) => Err(RpcError::new(
                INVALID_PARAMS,
                format!("unknown tool `{other}`"),
            )),
        }
    }
}

fn get_prompt(params: &Value) -> Result<Value, RpcError> {
    if params.get("name").and_then(Value::as_str) != Some("review") {
        return Err(RpcError::new(INVALID_PARAMS, "unknown prompt"));
    }
    let focus = params
        .get("arguments")
        .and_then(|a| a.get("focus"))
        .and_then(Value::as_str)
        .filter(|f| !f.trim().is_empty())
        .unwrap_or("correctness");
    Ok(json!({
        "description": "Review the current changes",
        "messages": [{"role": "user", "content": {"type": "text",
            "text": format!("Review the current changes against doc://style-guide. Focus on {focus}.")}}]
    }))
}

fn read_resource(params: &Value) -> Result<Value, RpcError> {
    match params.get("uri").and_then(Value::as_str) {
        Some(uri @ "doc://style-guide") => Ok(json!({"contents": [
            {"uri": uri, "mimeType": "text/markdown", "text": STYLE_GUIDE}
        ]})),
        Some(other) => Err(RpcError::new(
            -32002,
            format!("Resource not found: {other}"),
        )),
        None => Err(RpcError::new(INVALID_PARAMS, "`uri` is required")),
    }
}

fn serve_stdio(server: &Server) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut output = std::io::stdout().lock();
    loop {
        match jsonrpc::read_frame(&mut input, 16 * 1024 * 1024)? {
            Frame::Eof => return Ok(()),
            Frame::Invalid(err) => eprintln!("reasonix-plugin-example: ignored input: {err}"),
            Frame::Message(message) => {
                for reply in server.handle(message) {
                    jsonrpc::write_message(&mut output, &reply)?;
                }
            }
        }
    }
}

/// Sessions created by `initialize`, ended by `DELETE`.
struct Http {
    server: Server,
    json_replies: bool,
    sessions: Mutex<HashSet<String>>,
    next_session: AtomicU64,
}

fn serve_http(addr: &str, server: Server, json_replies: bool) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on http://{local}/mcp")?;
        out.flush()?;
    }
    let http = Arc::new(Http {
        server,
        json_replies,
        sessions: Mutex::new(HashSet::new()),
        next_session: AtomicU64::new(1),
    });
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let http = Arc::clone(&http);
        std::thread::spawn(move || {
            if let Err(e) = http.connection(stream) {
                eprintln!("reasonix-plugin-example: connection: {e}");
            }
        });
    }
    Ok(())
}

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_request(stream: &TcpStream) -> std::io::Result<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Request {
        method,
        path,
        headers,
        body,
    })
}

fn respond(
    mut stream: &TcpStream,
    status: &str,
    headers: &[(&str, String)],
    body: &str,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

impl Http {
    fn connection(&self, stream: TcpStream) -> std::io::Result<()> {
        let request = read_request(&stream)?;
        if request.path != "/mcp" {
            return respond(&stream, "404 Not Found", &[], "");
        }
        match request.method.as_str() {
            "POST" => self.post(&stream, &request),
            "DELETE" => {
                let id = request.header("mcp-session-id").unwrap_or("");
                let known = self.lock().remove(id);
                if known {
                    eprintln!("reasonix-plugin-example: session {id} deleted");
                }
                let status = if known { "200 OK" } else { "404 Not Found" };
                respond(&stream, status, &[], "")
            }
            // No standalone stream: this server never sends anything unasked.
            _ => respond(
                &stream,
                "405 Method Not Allowed",
                &[("Allow", "POST, DELETE".into())],
                "",
            ),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn post(&self, stream: &TcpStream, request: &Request) -> std::io::Result<()> {
        let accept = request.header("accept").unwrap_or("");
        if !(accept.contains("application/json") && accept.contains("text/event-stream")) {
            return respond(stream, "406 Not Acceptable", &[], "");
        }
        let text = String::from_utf8_lossy(&request.body);
        let message = match Message::parse(&text) {
            Ok(message) => message,
            Err(err) => {
                let reply = Message::Response {
                    id: Id::Number(0),
                    result: Err(RpcError::new(jsonrpc::PARSE_ERROR, err.to_string())),
                };
                return respond(stream, "400 Bad Request", &[], &reply.to_json());
            }
        };
        let mut headers = Vec::new();
        if message.method() == Some("initialize") {
            let n = self.next_session.fetch_add(1, Ordering::SeqCst);
            let id = format!("example-session-{n}");
            self.lock().insert(id.clone());
            headers.push(("Mcp-Session-Id", id));
        } else {
            match request.header("mcp-session-id") {
                None => return respond(stream, "400 Bad Request", &[], "missing Mcp-Session-Id"),
                Some(id) if !self.lock().contains(id) => {
                    return respond(stream, "404 Not Found", &[], "unknown session")
                }
                Some(_) => {}
            }
            if let Some(version) = request.header("mcp-protocol-version") {
                if !SUPPORTED.contains(&version) {
                    return respond(
                        stream,
                        "400 Bad Request",
                        &[],
                        "unsupported protocol version",
                    );
                }
            }
        }
        let mut replies = self.server.handle(message);
        let Some(reply) = replies.pop() else {
            return respond(stream, "202 Accepted", &headers, "");
        };
        if !self.json_replies {
            headers.push(("Content-Type", "text/event-stream".into()));
            // A 2025-11-25 priming event (id, retry, empty data), then any notification the
            // request caused, then the response.
            let mut body = String::from("id: 0\nretry: 500\ndata: \n\n");
            for (n, message) in replies.iter().chain([&reply]).enumerate() {
                body.push_str(&format!(
                    "event: message\nid: {}\ndata: {}\n\n",
                    n + 1,
                    message.to_json()
                ));
            }
            respond(stream, "200 OK", &headers, &body)
        } else {
            headers.push(("Content-Type", "application/json".into()));
            respond(stream, "200 OK", &headers, &reply.to_json())
        }
    }
}
