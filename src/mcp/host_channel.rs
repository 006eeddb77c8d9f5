//! A transport to an MCP server that lives inside the program driving reasonix (the Claude
//! Agent SDK's `create_sdk_mcp_server`): each JSON-RPC message is handed to a [`HostChannel`]
//! (the control protocol's `mcp_message`) and the reply comes back through it, so the client
//! core treats the server like any stdio or HTTP one: the same handshake, deadlines, tool
//! adapters and gate. No process and no socket; the host keeps the server's lifetime.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use super::jsonrpc::{Id, Message};
use super::transport::{Inbox, Incoming, Transport};
use super::McpError;

/// What answers a message: the JSON-RPC reply, or why there is none.
pub type Reply = Box<dyn FnOnce(Result<Value, String>) + Send>;

/// How messages reach a server hosted by the driving program.
pub trait HostChannel: Send + Sync {
    /// Delivers `message` to the host's server `server`; `reply` runs once with its answer
    /// (for a notification, the host's acknowledgement, which is dropped).
    fn send(&self, server: &str, message: Value, reply: Reply);
}

/// The [`Transport`] over a [`HostChannel`].
pub struct HostTransport {
    server: String,
    channel: Arc<dyn HostChannel>,
    inbox: Mutex<Inbox>,
    closed: AtomicBool,
}

impl HostTransport {
    pub fn new(server: &str, channel: Arc<dyn HostChannel>, inbox: Inbox) -> HostTransport {
        HostTransport {
            server: server.to_string(),
            channel,
            inbox: Mutex::new(inbox),
            closed: AtomicBool::new(false),
        }
    }

    fn inbox(&self) -> Inbox {
        self.inbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn check_open(&self) -> Result<(), McpError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(McpError::Closed(format!(
                "the host's server `{}` was closed",
                self.server
            )));
        }
        Ok(())
    }
}

/// What the host's answer to request `id` means to the client core.
fn incoming(id: Id, server: &str, answer: Result<Value, String>) -> Incoming {
    match answer.map(Message::from_value) {
        Ok(Ok(message @ Message::Response { .. })) => Incoming::Message(message),
        Ok(Ok(_)) => Incoming::Failed {
            id,
            error: McpError::Protocol(format!(
                "the host's server `{server}` answered a request with something other than a response"
            )),
        },
        Ok(Err(e)) => Incoming::Failed {
            id,
            error: McpError::Protocol(format!("the host's server `{server}`: {e}")),
        },
        Err(why) => Incoming::Failed {
            id,
            error: McpError::Closed(why),
        },
    }
}

impl Transport for HostTransport {
    fn call(&self, request: &Message) -> Result<(), McpError> {
        self.check_open()?;
        let Message::Request { id, .. } = request else {
            return self.notify(request);
        };
        let (id, inbox, server) = (id.clone(), self.inbox(), self.server.clone());
        self.channel.send(
            &self.server,
            request.to_value(),
            Box::new(move |answer| {
                // The client may have shut down meanwhile; nobody waits for the answer then.
                let _ = inbox.send(incoming(id, &server, answer));
            }),
        );
        Ok(())
    }

    fn notify(&self, message: &Message) -> Result<(), McpError> {
        self.check_open()?;
        self.channel
            .send(&self.server, message.to_value(), Box::new(|_| {}));
        Ok(())
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::mpsc;

    /// A host that answers every request with `answer(message)` at once.
    struct Host<F>(F, Mutex<Vec<(String, Value)>>);

    impl<F: Fn(&Value) -> Result<Value, String> + Send + Sync> HostChannel for Host<F> {
        fn send(&self, server: &str, message: Value, reply: Reply) {
            self.1
                .lock()
                .unwrap()
                .push((server.to_string(), message.clone()));
            reply((self.0)(&message));
        }
    }

    #[test]
    fn a_request_goes_to_the_named_server_and_its_response_reaches_the_client() {
        let host = Arc::new(Host(
            |m: &Value| {
                Ok(json!({"jsonrpc": "2.0", "id": m["id"].clone(), "result": {"tools": []}}))
            },
            Mutex::new(Vec::new()),
        ));
        let (tx, rx) = mpsc::channel();
        let transport = HostTransport::new("calc", host.clone(), tx);
        transport
            .call(&Message::request(Id::Number(3), "tools/list", None))
            .unwrap();
        match rx.recv().unwrap() {
            Incoming::Message(Message::Response { id, result }) => {
                assert_eq!(id, Id::Number(3));
                assert_eq!(result.unwrap(), json!({"tools": []}));
            }
            other => panic!("{other:?}"),
        }
        transport
            .notify(&Message::notification("notifications/initialized", None))
            .unwrap();
        let sent = host.1.lock().unwrap();
        assert_eq!(sent[0].0, "calc");
        assert_eq!(sent[0].1["method"], "tools/list");
        assert_eq!(sent[1].1["method"], "notifications/initialized");
        assert!(
            rx.try_recv().is_err(),
            "a notification's ack is not a message"
        );
    }

    #[test]
    fn a_broken_answer_fails_only_its_request() {
        let (tx, rx) = mpsc::channel();
        let host = Arc::new(Host(
            |_: &Value| Ok(json!({"nonsense": 1})),
            Mutex::new(Vec::new()),
        ));
        let transport = HostTransport::new("calc", host, tx.clone());
        transport
            .call(&Message::request(Id::Number(1), "tools/call", None))
            .unwrap();
        assert!(matches!(
            rx.recv().unwrap(),
            Incoming::Failed {
                id: Id::Number(1),
                error: McpError::Protocol(_)
            }
        ));
        let gone = Arc::new(Host(
            |_: &Value| Err("stdin closed".to_string()),
            Mutex::new(Vec::new()),
        ));
        let transport = HostTransport::new("calc", gone, tx);
        transport
            .call(&Message::request(Id::Number(2), "tools/call", None))
            .unwrap();
        assert!(matches!(
            rx.recv().unwrap(),
            Incoming::Failed { id: Id::Number(2), error: McpError::Closed(why) } if why == "stdin closed"
        ));
        transport.close();
        assert!(transport
            .call(&Message::request(Id::Number(3), "tools/call", None))
            .is_err());
    }
}
