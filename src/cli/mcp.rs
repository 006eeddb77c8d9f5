//! `reasonix mcp`: `list` starts every configured MCP server and prints its transport, status,
//! protocol version, tool/prompt/resource counts and sandbox (exiting 1 when one failed);
//! `call SERVER TOOL [JSON]` calls one tool directly, to debug a server without a model in the
//! loop; `login SERVER` runs the OAuth flow of an HTTP server (printing the authorization URL
//! and opening `$BROWSER` when set) and `logout SERVER` forgets its tokens.
//!
//! On a terminal, project servers without a grant are offered for approval (once, or always
//! for this exact command or URL); elsewhere they need `--trust-project-mcp`. On a terminal,
//! a server's request for input (elicitation) is asked field by field on stderr, and a URL it
//! wants opened is shown whole, with its host, and opened in `$BROWSER` only when agreed to.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;

use serde_json::Value;

use super::lex::{Arg, Lexer};
use super::{print_out, unknown_flag, Global};
use crate::cancel::CancelToken;
use crate::cli::error::{exit, Error};
use crate::config::{self, Config, LoadOptions};
use crate::mcp::config::{Endpoint, ServerSpec};
use crate::mcp::elicit::{self, Answer, Elicitor, Mode, Waited};
use crate::mcp::manager::ServerState;
use crate::mcp::oauth::{self, LoginOutcome};
use crate::mcp::{self, LaunchAnswer, LaunchApprover, LaunchRequest, McpHandle, McpOptions};
use crate::term::sanitize::sanitize;

pub const HELP: &str = "\
Usage: reasonix mcp list [--trust-project-mcp]
       reasonix mcp call [--trust-project-mcp] SERVER TOOL [JSON]
       reasonix mcp login SERVER
       reasonix mcp logout SERVER

Manages the MCP servers declared in [[plugins]] and the project's .mcp.json.

  list   Start every server and show its transport, status, protocol version, how many
         tools, prompts and resources it offers, and the sandbox a stdio server runs in
  call   Call TOOL of SERVER with the JSON object of arguments (default {}) and print the
         result; exits 1 when the tool reports an error
  login  Authorize an HTTP server with OAuth: prints the authorization URL (and opens
         $BROWSER when set), waits for the redirect on 127.0.0.1, stores the tokens in
         ~/.reasonix/mcp-auth/ (0600); with oauth.grant = \"client_credentials\" no browser
  logout Forget the stored tokens of SERVER

Flags:
  --trust-project-mcp   Launch servers declared by project files (reasonix.toml, .mcp.json)
                        without a stored grant

On a terminal, a project server without a grant is offered for approval first.
";

enum Action {
    List,
    Login(String),
    Logout(String),
    Call {
        server: String,
        tool: String,
        args: Value,
    },
}

pub fn main(mut global: Global, lexer: &mut Lexer) -> Result<i32, Error> {
    let mut trust_project = false;
    let mut words = Vec::new();
    while let Some(arg) = lexer.next().map_err(Error::Usage)? {
        if global.accept(&arg, lexer)? {
            continue;
        }
        match arg {
            Arg::Long(ref name) if name == "trust-project-mcp" => trust_project = true,
            Arg::Long(ref name) if name == "help" => return show_help(),
            Arg::Short('h') => return show_help(),
            Arg::Value(word) => words.push(word),
            other => return Err(unknown_flag("mcp", &other)),
        }
    }
    let action = parse_action(words)?;
    global.enter_dir()?;
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| Error::io("reading the working directory", e))?;
    let config = load_config(&global, &cwd)?;
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let mut options = McpOptions {
        trust_project,
        interactive,
        approver: interactive.then(|| Arc::new(TerminalApprover) as Arc<dyn LaunchApprover>),
        elicitor: interactive.then(|| Arc::new(TerminalElicitor::default()) as Arc<dyn Elicitor>),
        ..McpOptions::default()
    };
    match action {
        Action::List => {
            let handle = start(&config, &cwd, options);
            print_out(&listing(&handle));
            let failed = handle
                .statuses()
                .iter()
                .any(|s| matches!(s.state, ServerState::Failed(_)));
            Ok(if failed { exit::FAILURE } else { exit::OK })
        }
        Action::Login(server) => login(&config, &cwd, &server),
        Action::Logout(server) => logout(&config, &cwd, &server),
        Action::Call { server, tool, args } => {
            options.only = Some(server.clone());
            let handle = start(&config, &cwd, options);
            call(&handle, &server, &tool, &args)
        }
    }
}

fn show_help() -> Result<i32, Error> {
    print_out(HELP);
    Ok(exit::OK)
}

fn parse_action(words: Vec<String>) -> Result<Action, Error> {
    let mut words = words.into_iter();
    let usage =
        || Error::Usage("usage: reasonix mcp list | reasonix mcp call SERVER TOOL [JSON]".into());
    match words.next().as_deref() {
        Some("list") if words.len() == 0 => Ok(Action::List),
        Some(verb @ ("login" | "logout")) => match (words.next(), words.next()) {
            (Some(server), None) if verb == "login" => Ok(Action::Login(server)),
            (Some(server), None) => Ok(Action::Logout(server)),
            _ => Err(Error::Usage(format!("usage: reasonix mcp {verb} SERVER"))),
        },
        Some("call") => {
            let (Some(server), Some(tool)) = (words.next(), words.next()) else {
                return Err(usage());
            };
            let json = words.next().unwrap_or_else(|| "{}".into());
            if words.next().is_some() {
                return Err(Error::Usage(
                    "`reasonix mcp call` takes one JSON argument; quote the whole object".into(),
                ));
            }
            let args: Value = serde_json::from_str(&json).map_err(|e| {
                Error::Usage(format!("the tool arguments are not valid JSON ({e}); pass an object like '{{\"text\":\"hi\"}}'"))
            })?;
            if !args.is_object() {
                return Err(Error::Usage(
                    "the tool arguments must be a JSON object like '{\"text\":\"hi\"}'".into(),
                ));
            }
            Ok(Action::Call { server, tool, args })
        }
        Some(other) if other != "list" => Err(Error::Usage(format!(
            "unknown `reasonix mcp` action `{other}`; use `list`, `call`, `login` or `logout`"
        ))),
        _ => Err(usage()),
    }
}

fn load_config(global: &Global, cwd: &Path) -> Result<Config, Error> {
    let options = LoadOptions::from_env(cwd.to_path_buf(), global.config.clone())?;
    let loaded = config::load(&options)?;
    for warning in &loaded.warnings {
        eprintln!("reasonix: warning: {warning}");
    }
    Ok(loaded.config)
}

/// Starts the servers, printing each notice to stderr as it happens.
fn start(config: &Config, cwd: &Path, options: McpOptions) -> McpHandle {
    let mut notices = |message: String| eprintln!("reasonix: {}", sanitize(&message));
    mcp::start(config, cwd, options, &mut notices)
}

fn count(list: Result<Vec<Value>, mcp::McpError>) -> String {
    match list {
        Ok(items) => items.len().to_string(),
        Err(_) => "?".into(),
    }
}

fn listing(handle: &McpHandle) -> String {
    if handle.statuses().is_empty() {
        return "No MCP servers configured. Declare them in [[plugins]] or .mcp.json.\n".into();
    }
    let mut rows = vec![[
        "NAME",
        "TRANSPORT",
        "STATUS",
        "PROTOCOL",
        "TOOLS",
        "PROMPTS",
        "RESOURCES",
        "SANDBOX",
    ]
    .map(String::from)
    .to_vec()];
    let mut reasons = Vec::new();
    for status in handle.statuses() {
        let name = sanitize(&status.name);
        let mut row = vec![name.clone(), status.transport.to_string()];
        match (&status.state, handle.server(&status.name)) {
            (ServerState::Connected, Some(server)) => {
                let task_only = server.task_only_tools();
                if !task_only.is_empty() {
                    let names: Vec<String> = task_only.iter().map(|n| sanitize(n)).collect();
                    reasons.push(format!(
                        "{name}: task-only tools, not offered: {}",
                        names.join(", ")
                    ));
                }
                row.push("connected".into());
                row.push(server.info().protocol_version.clone());
                row.push(server.tools().len().to_string());
                row.push(count(server.prompts()));
                row.push(count(server.resources()));
            }
            (ServerState::Failed(reason), _) => {
                row.push("failed".into());
                reasons.push(format!("{name}: {}", sanitize(reason)));
            }
            (ServerState::Skipped(reason), _) => {
                row.push("not started".into());
                reasons.push(format!("{name}: {}", sanitize(reason)));
            }
            (ServerState::Connected, None) => row.push("gone".into()),
        }
        while row.len() < 7 {
            row.push("-".into());
        }
        row.push(match &status.sandbox {
            Some(jail) => sanitize(&jail.describe()),
            None => "-".into(),
        });
        rows.push(row);
    }
    let widths: Vec<usize> = (0..8)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    if !reasons.is_empty() {
        out.push('\n');
        for reason in reasons {
            out.push_str(&reason);
            out.push('\n');
        }
    }
    out
}

fn call(handle: &McpHandle, server_name: &str, tool: &str, args: &Value) -> Result<i32, Error> {
    let Some(server) = handle.server(server_name) else {
        let reason = handle
            .statuses()
            .iter()
            .find(|s| s.name == server_name)
            .map(|s| match &s.state {
                ServerState::Failed(r) | ServerState::Skipped(r) => r.clone(),
                ServerState::Connected => "it is not connected".into(),
            });
        return Err(Error::Failed(match reason {
            Some(reason) => format!("MCP server `{server_name}` is unavailable: {reason}"),
            None => format!(
                "no MCP server named `{server_name}`; `reasonix mcp list` shows the configured ones"
            ),
        }));
    };
    // Accept the registry name too (`mcp__server__tool`), as the model and logs show it.
    let raw = handle
        .tools()
        .iter()
        .find(|t| crate::tool::Tool::name(t.as_ref()) == tool)
        .map(|t| t.remote_name().to_string())
        .unwrap_or_else(|| tool.to_string());
    if !server.tools().iter().any(|t| t.name == raw) {
        let offered: Vec<String> = server.tools().iter().map(|t| sanitize(&t.name)).collect();
        let task_only = server.task_only_tools().contains(&raw);
        return Err(Error::Failed(match task_only {
            true => format!(
                "the tool `{}` of `{server_name}` can only run as a task, which reasonix does not support",
                sanitize(&raw)
            ),
            false => format!(
                "MCP server `{server_name}` has no tool `{}`; it offers: {}",
                sanitize(&raw),
                if offered.is_empty() { "none".to_string() } else { offered.join(", ") }
            ),
        }));
    }
    let cancel = crate::cancel::CancelToken::new();
    let _ = crate::term::sys::cancel_on_interrupt(cancel.clone());
    let called = server.call_tool(&raw, args, &cancel);
    // What the server's requests during the call came to (a form declined off a terminal).
    for warning in handle.unshown_warnings() {
        eprintln!("reasonix: {}", sanitize(&warning));
    }
    match called {
        Ok(output) if output.is_error => {
            print_out(&format!("{}\n", sanitize(&output.text)));
            eprintln!("reasonix: the tool reported an error");
            Ok(exit::FAILURE)
        }
        Ok(output) => {
            print_out(&format!("{}\n", sanitize(&output.text)));
            Ok(exit::OK)
        }
        Err(mcp::McpError::Cancelled) => Err(Error::Interrupted),
        Err(err) => Err(err.into()),
    }
}

/// The declared HTTP server named `name`.
fn http_server(config: &Config, cwd: &Path, name: &str) -> Result<(ServerSpec, String), Error> {
    let declared = mcp::config::declared(config, cwd);
    let Some(spec) = declared.servers.into_iter().find(|s| s.name == name) else {
        return Err(Error::Failed(format!(
            "no MCP server named `{name}`; `reasonix mcp list` shows the configured ones"
        )));
    };
    match &spec.endpoint {
        Endpoint::Http { url, .. } => {
            let url = url.clone();
            Ok((spec, url))
        }
        Endpoint::Stdio { .. } => Err(Error::Failed(format!(
            "`{name}` is a stdio server; OAuth is for HTTP servers (a stdio server takes its \
             credentials from its env)"
        ))),
        Endpoint::Host => Err(Error::Failed(format!(
            "`{name}` is an Agent SDK in-process server; OAuth is for HTTP servers"
        ))),
    }
}

fn login(config: &Config, cwd: &Path, name: &str) -> Result<i32, Error> {
    let (spec, url) = http_server(config, cwd, name)?;
    // Logging in connects to the server, which a repository's server may only do once the
    // user has approved it, exactly as for a launch.
    let grants = mcp::grants::GrantStore::new(&config.home);
    if spec.origin.needs_grant() && !grants.is_granted(cwd, &spec.name, &spec.identity_hash()) {
        return Err(Error::Failed(format!(
            "`{name}` is declared in {} and has no launch grant for this workspace; approve it \
             first (`reasonix mcp list` on a terminal offers it), then log in",
            spec.origin.describe()
        )));
    }
    let target = oauth::Target {
        name,
        url: &url,
        settings: &spec.oauth,
        home: &config.home,
    };
    let mut show = |address: &str| {
        eprintln!(
            "reasonix: open this URL to authorize `{}`:\n{}",
            sanitize(name),
            sanitize(address)
        );
        open_browser(address);
    };
    match oauth::login(&target, &oauth::web::Ureq, &mut show) {
        Ok(LoginOutcome::NotNeeded) => {
            print_out(&format!(
                "`{}` answered without asking for authorization; nothing to do\n",
                sanitize(name)
            ));
            Ok(exit::OK)
        }
        Ok(LoginOutcome::LoggedIn { scope }) => {
            let scope = scope.map(|s| format!(" (scope: {})", sanitize(&s)));
            print_out(&format!(
                "Logged in to `{}`{}\n",
                sanitize(name),
                scope.unwrap_or_default()
            ));
            Ok(exit::OK)
        }
        Err(err) => Err(Error::Failed(format!(
            "login to `{name}` failed: {}",
            err.to_string().trim_start_matches("oauth: ")
        ))),
    }
}

fn logout(config: &Config, cwd: &Path, name: &str) -> Result<i32, Error> {
    let (_, url) = http_server(config, cwd, name)?;
    match oauth::logout(&config.home, &url) {
        Ok(true) => print_out(&format!("Forgot the tokens of `{}`\n", sanitize(name))),
        Ok(false) => print_out(&format!("`{}` had no stored tokens\n", sanitize(name))),
        Err(err) => return Err(Error::Failed(err.to_string())),
    }
    Ok(exit::OK)
}

/// Runs `$BROWSER URL` when the variable is set (the URL is printed either way).
fn open_browser(address: &str) {
    if !crate::mcp::oauth::redirect::open_browser(address) {
        eprintln!("reasonix: could not run $BROWSER");
    }
}

/// What the terminal elicitor hears: a line the person typed, the end of input, or the
/// server's completion notice for the URL it waits on.
enum Heard {
    Line(String),
    End,
    Complete,
}

/// Asks a server's questions on the terminal, one field at a time. Lines come from a reader
/// thread (started at the first question), so that waiting for a server's completion notice
/// and waiting for the person's Enter can race; the lock keeps two requests from interleaving
/// their prompts.
#[derive(Default)]
struct TerminalElicitor {
    input: std::sync::Mutex<Option<(Sender<Heard>, Receiver<Heard>)>>,
}

/// The input of one request, asked while the elicitor's lock is held.
struct Asking<'a> {
    tx: &'a Sender<Heard>,
    rx: &'a Receiver<Heard>,
}

impl Asking<'_> {
    /// One trimmed line after `prompt`; `None` at the end of input. A completion notice
    /// left over from an earlier wait is skipped.
    fn line(&self, prompt: &str) -> Option<String> {
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        loop {
            match self.rx.recv() {
                Ok(Heard::Line(line)) => return Some(line.trim().to_string()),
                Ok(Heard::Complete) => continue,
                Ok(Heard::End) | Err(_) => return None,
            }
        }
    }
}

impl TerminalElicitor {
    fn asking<T>(&self, ask: impl FnOnce(Asking<'_>) -> T) -> T {
        let mut input = self
            .input
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (tx, rx) = input.get_or_insert_with(|| {
            let (tx, rx) = mpsc::channel();
            let reader = tx.clone();
            let spawned = std::thread::Builder::new()
                .name("mcp-elicit-stdin".into())
                .spawn(move || {
                    for line in std::io::stdin().lines() {
                        let Ok(line) = line else { break };
                        if reader.send(Heard::Line(line)).is_err() {
                            return;
                        }
                    }
                    let _ = reader.send(Heard::End);
                });
            if spawned.is_err() {
                let _ = tx.send(Heard::End);
            }
            (tx, rx)
        });
        ask(Asking { tx, rx })
    }
}

impl Elicitor for TerminalElicitor {
    fn elicit(&self, request: &elicit::Request) -> Answer {
        self.asking(|input| {
            eprintln!(
                "MCP server `{}` asks: {}",
                sanitize(&request.server),
                sanitize(&request.message)
            );
            match &request.mode {
                Mode::Url { url, host, .. } => url_consent(&input, url, host),
                Mode::Form(fields) => form(&input, fields),
            }
        })
    }

    fn wait(&self, request: &elicit::Request, complete: &CancelToken) -> Waited {
        self.asking(|input| {
            let notice = input.tx.clone();
            let _hook = complete.on_cancel(move || {
                let _ = notice.send(Heard::Complete);
            });
            eprint!(
                "Waiting for `{}` to confirm the step in the browser; press Enter once it is \
                 done to try again: ",
                sanitize(&request.server)
            );
            let _ = std::io::stderr().flush();
            match input.rx.recv() {
                Ok(Heard::Complete) => {
                    eprintln!("confirmed");
                    Waited::Complete
                }
                Ok(Heard::Line(_)) => Waited::Retry,
                Ok(Heard::End) | Err(_) => Waited::Cancel,
            }
        })
    }
}

/// A URL request: the whole URL and its host are shown, and the browser opens only when
/// the person agrees.
fn url_consent(input: &Asking<'_>, url: &str, host: &str) -> Answer {
    eprintln!("URL: {}\nHost: {}", sanitize(url), sanitize(host));
    if elicit::punycode(host) {
        eprintln!("The host is written in Punycode and may imitate another name; check it.");
    }
    match input
        .line("Open it in the browser? [y]es / [N]o: ")
        .as_deref()
    {
        Some("y" | "yes") => {
            if std::env::var_os("BROWSER").is_some_and(|b| !b.is_empty()) {
                open_browser(url);
            } else {
                eprintln!("Open the URL above in a browser.");
            }
            Answer::Opened
        }
        Some(_) => Answer::Decline,
        None => Answer::Cancel,
    }
}

fn form(input: &Asking<'_>, fields: &[elicit::Field]) -> Answer {
    let mut content = serde_json::Map::new();
    for field in fields {
        let mut prompt = sanitize(&field.title);
        if let elicit::Kind::Enum(options) = &field.kind {
            let listed: Vec<String> = options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}) {}", i + 1, sanitize(o)))
                .collect();
            prompt.push_str(&format!(" [{}]", listed.join(" ")));
        }
        if let Some(default) = &field.default {
            prompt.push_str(&format!(" (default {})", sanitize(&default.to_string())));
        }
        prompt.push_str(": ");
        loop {
            let Some(typed) = input.line(&prompt) else {
                return Answer::Cancel;
            };
            match elicit::value_of(field, &typed) {
                Ok(Some(value)) => {
                    content.insert(field.name.clone(), value);
                    break;
                }
                Ok(None) => break,
                Err(why) => eprintln!("{}", sanitize(&why)),
            }
        }
    }
    match input
        .line("Send this answer? [y]es / [n]o (decline): ")
        .as_deref()
    {
        Some("y" | "yes") => Answer::Accept(content),
        Some(_) => Answer::Decline,
        None => Answer::Cancel,
    }
}

/// Asks on the terminal before a project server is launched.
struct TerminalApprover;

impl LaunchApprover for TerminalApprover {
    fn approve_launch(&self, request: &LaunchRequest) -> LaunchAnswer {
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "{} declares the MCP server `{}` ({}):\n  {}\nLaunch it? [y]es once / [a]lways for this workspace / [N]o: ",
            request.origin,
            sanitize(&request.server),
            request.transport,
            sanitize(&request.detail)
        );
        let _ = err.flush();
        let mut answer = String::new();
        if std::io::stdin().lock().read_line(&mut answer).is_err() {
            return LaunchAnswer::Deny;
        }
        match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => LaunchAnswer::Session,
            "a" | "always" => LaunchAnswer::Always,
            _ => LaunchAnswer::Deny,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn actions_parse_and_bad_json_is_a_usage_error() {
        assert!(matches!(parse_action(words(&["list"])), Ok(Action::List)));
        let Ok(Action::Call { server, tool, args }) =
            parse_action(words(&["call", "s", "t", "{\"a\":1}"]))
        else {
            panic!("expected a call");
        };
        assert_eq!((server.as_str(), tool.as_str()), ("s", "t"));
        assert_eq!(args["a"], 1);
        let Ok(Action::Call { args, .. }) = parse_action(words(&["call", "s", "t"])) else {
            panic!("expected a call");
        };
        assert!(args.as_object().unwrap().is_empty());
        for bad in [
            &["call", "s"][..],
            &["call", "s", "t", "[1]"],
            &["frob"],
            &[],
        ] {
            assert!(
                matches!(parse_action(words(bad)), Err(Error::Usage(_))),
                "{bad:?}"
            );
        }
        let Err(Error::Usage(message)) = parse_action(words(&["call", "s", "t", "{oops"])) else {
            panic!("expected a usage error");
        };
        assert!(message.contains("not valid JSON"), "{message}");
    }
}
