//! The one interface both transports implement (call / notify / close), and what they hand back
//! to the client core: every message, log line and failure goes through one channel of
//! [`Incoming`] values, read by the client's dispatcher thread.
//!
//! A transport never interprets messages: correlating responses, answering server requests and
//! acting on notifications happen once, in `client`, whatever carried the bytes.

use std::sync::mpsc::Sender;

use super::jsonrpc::{Id, Message};
use super::McpError;

/// Everything a transport reports to the client core.
#[derive(Debug)]
pub enum Incoming {
    Message(Message),
    /// Output that is not a JSON-RPC message; logged and otherwise ignored.
    Garbage(String),
    /// A line for the debug log (the server's stderr, HTTP stream events).
    Log(String),
    /// The request `id` failed in transit (an HTTP error status, a broken stream).
    Failed {
        id: Id,
        error: McpError,
    },
    /// The connection is gone for good; every pending request fails with this reason.
    Closed(String),
    /// The client is shutting down; the dispatcher stops.
    Shutdown,
}

/// Where a transport delivers what it receives.
pub type Inbox = Sender<Incoming>;

/// Moves JSON-RPC messages to and from one server.
pub trait Transport: Send + Sync {
    /// Sends a request. The response arrives later through the inbox, or as
    /// [`Incoming::Failed`] when the transport knows it will not.
    fn call(&self, request: &Message) -> Result<(), McpError>;

    /// Sends a message that gets no response: a notification, or our answer to a request the
    /// server made.
    fn notify(&self, message: &Message) -> Result<(), McpError>;

    /// Ends the connection: stdin closed and the process group terminated, or the HTTP session
    /// deleted. Idempotent.
    fn close(&self);

    /// `initialize` settled on `protocol_version`: HTTP sends it as a header from now on.
    fn negotiated(&self, _protocol_version: &str) {}

    /// The handshake is complete: HTTP opens its stream for server-initiated messages.
    fn ready(&self) {}

    /// Forget the session before a fresh `initialize` (HTTP answered 404 for our session id).
    fn reset_session(&self) {}

    /// Recent diagnostic output (a stdio server's stderr), newest last, for error messages.
    fn diagnostics(&self) -> Vec<String> {
        Vec::new()
    }
}
