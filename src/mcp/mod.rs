//! The MCP client (SPEC §3.3): users bring tools, prompts and resources as MCP servers.
//!
//! - `jsonrpc`: messages and stdio line framing; `transport`: the call/notify/close interface;
//!   `stdio` and `http` (streamable HTTP) implement it.
//! - `client`: id correlation, server-to-client requests, notifications, timeouts and
//!   cancellation, the handshake and the typed MCP calls, once for every transport.
//! - `config`: `[[plugins]]` merged with the project's `.mcp.json`, `${VAR}` expansion and each
//!   server's launch identity; `grants`: the launch grants for project-declared servers.
//! - `content`: MCP results (tool content, prompt messages, resource contents) as text;
//!   `adapter`: a remote tool as a [`crate::tool::Tool`] named `mcp__<server>__<tool>`.
//! - `server`: one connected server (transport start, handshake, calls); `jail`: the sandbox
//!   a stdio server runs in; `launch`: launch authorization for project-declared servers.
//! - `manager`: starting servers in parallel with startup timeouts and the handle a run keeps;
//!   `watch`: the [`ToolWatch`] that hands announced tool-list changes to the agent.
//! - `host`: what the chat and the input path ask of MCP ([`McpHost`]: `/mcp`, prompts,
//!   resources) and its implementation over the handle. Turning `/mcp__server__prompt` and
//!   `@server:uri` in user input into text is the job of the input path in `command`.
//!
//! Notices (a server that failed to start, a tool list that could not be refreshed) go to a
//! `FnMut(String)` the caller passes, so this module knows nothing of the agent's events.
//!
//! Permission decisions stay in `permission`; this module only reports each tool's annotations
//! and approval mode through [`McpHandle::tool_policies`].

use std::fmt;
use std::io;

pub mod adapter;
pub mod client;
pub mod config;
pub mod content;
pub mod elicit;
pub mod grants;
pub mod host;
pub mod host_channel;
pub mod http;
pub mod jail;
pub mod jsonrpc;
pub mod launch;
pub mod log;
pub mod login_later;
pub mod manager;
pub mod oauth;
pub mod server;
pub mod stdio;
pub mod transport;
pub mod watch;

pub use host::{Host, McpHost, NoMcp};
pub use launch::{LaunchAnswer, LaunchApprover, LaunchRequest};
pub use manager::{start, McpHandle, McpOptions};
pub use watch::ToolWatch;

/// `mcp-<server>-<role>`, safe for a thread name whatever the server is called (a NUL byte
/// would make spawning panic).
fn thread_name(server: &str, role: &str) -> String {
    format!("mcp-{}-{role}", adapter::sanitize(server))
}

#[derive(Debug)]
pub enum McpError {
    /// The server's configuration cannot be used as written.
    Config(String),
    /// The server could not be started or reached.
    Start(String),
    /// The connection ended (the process exited, the stream closed).
    Closed(String),
    Timeout {
        method: String,
        seconds: f64,
    },
    Cancelled,
    /// The server answered with a JSON-RPC error.
    Rpc(jsonrpc::RpcError),
    /// The server broke the protocol.
    Protocol(String),
    /// An HTTP error status.
    Http {
        status: u16,
        detail: String,
    },
    /// The HTTP server no longer knows our session (404); the client initializes again.
    SessionExpired,
    /// The HTTP server could not be reached (connection refused, DNS, TLS).
    Network(String),
    /// A server the input names is not (or no longer) connected.
    NotConnected(String),
    /// Authorization failed or needs the user (`reasonix mcp login`).
    Auth(oauth::OAuthError),
    /// The server needs a step in the browser (a URL elicitation) that was not done.
    BrowserStep(String),
    /// Talking to the server failed below the protocol: a pipe, a socket, a thread.
    Io {
        context: String,
        source: io::Error,
    },
}

impl McpError {
    /// An I/O failure while `context` ("reading the reply").
    pub fn io(context: impl Into<String>, source: io::Error) -> McpError {
        McpError::Io {
            context: context.into(),
            source,
        }
    }
}

impl From<oauth::OAuthError> for McpError {
    fn from(error: oauth::OAuthError) -> McpError {
        McpError::Auth(error)
    }
}

impl From<jsonrpc::RpcError> for McpError {
    fn from(error: jsonrpc::RpcError) -> McpError {
        McpError::Rpc(error)
    }
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpError::Config(detail) => write!(f, "mcp: {detail}"),
            McpError::Start(detail) => write!(f, "mcp: {detail}"),
            McpError::Closed(reason) => write!(f, "mcp: the server is gone: {reason}"),
            McpError::Timeout { method, seconds } => write!(
                f,
                "mcp: `{method}` got no answer within {seconds} s; raise the timeout or check the server"
            ),
            McpError::Cancelled => write!(f, "mcp: cancelled"),
            McpError::Rpc(error) => write!(f, "mcp: the server answered with an error: {error}"),
            McpError::Protocol(detail) => write!(f, "mcp: protocol error: {detail}"),
            McpError::Http { status, detail } if detail.is_empty() => {
                write!(f, "mcp: HTTP {status}")
            }
            McpError::Http { status, detail } => write!(f, "mcp: HTTP {status}: {detail}"),
            McpError::SessionExpired => write!(f, "mcp: the server no longer knows our session"),
            McpError::Network(detail) => write!(f, "mcp: {detail}"),
            McpError::NotConnected(server) => {
                write!(f, "mcp: server `{server}` is not connected")
            }
            McpError::Io { context, source } => write!(f, "mcp: {context}: {source}"),
            McpError::BrowserStep(detail) => write!(f, "mcp: {detail}"),
            McpError::Auth(error) => {
                let text = error.to_string();
                write!(f, "mcp: {}", text.strip_prefix("oauth: ").unwrap_or(&text))
            }
        }
    }
}

impl std::error::Error for McpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            McpError::Io { source, .. } => Some(source),
            McpError::Rpc(error) => Some(error),
            McpError::Auth(error) => Some(error),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_names_survive_any_server_name() {
        assert_eq!(thread_name("a\0b c", "rx"), "mcp-a_b_c-rx");
        let spawned = std::thread::Builder::new()
            .name(thread_name("\0", "t"))
            .spawn(|| 1)
            .unwrap();
        assert_eq!(spawned.join().unwrap(), 1);
    }

    #[test]
    fn messages_are_one_line_and_prefixed() {
        let errors = [
            McpError::Config("server `x`: `sse` is not supported".into()),
            McpError::Closed("the server closed its output".into()),
            McpError::Timeout {
                method: "tools/call".into(),
                seconds: 1.5,
            },
            McpError::Cancelled,
            McpError::Rpc(jsonrpc::RpcError::new(-32601, "Method not found")),
            McpError::Http {
                status: 406,
                detail: String::new(),
            },
            McpError::SessionExpired,
        ];
        for err in errors {
            let text = err.to_string();
            assert!(text.starts_with("mcp: "), "{text}");
            assert!(!text.contains('\n') && !text.ends_with('.'), "{text}");
        }
        let io = McpError::io(
            "reading the reply",
            std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "early end"),
        );
        assert_eq!(io.to_string(), "mcp: reading the reply: early end");
        assert!(std::error::Error::source(&io).is_some());
        let rpc: McpError = jsonrpc::RpcError::new(-32601, "Method not found").into();
        assert!(std::error::Error::source(&rpc).is_some());
        assert_eq!(
            McpError::NotConnected("docs".into()).to_string(),
            "mcp: server `docs` is not connected"
        );
        assert_eq!(
            McpError::Timeout {
                method: "initialize".into(),
                seconds: 30.0
            }
            .to_string(),
            "mcp: `initialize` got no answer within 30 s; raise the timeout or check the server"
        );
    }
}
