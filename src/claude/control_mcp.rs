//! The SDK's in-process MCP servers (`{"type": "sdk"}` in `--mcp-config`) reached through the
//! control channel: each JSON-RPC message goes out as an `mcp_message` request and the SDK's
//! `mcp_response` comes back as the reply. The MCP client (`mcp::host_channel`) does the rest,
//! so such a server's tools are adapted, gated and shown like any other server's.

use serde_json::{json, Value};

use super::control_calls::Calls;
use crate::mcp::host_channel::{HostChannel, Reply};

impl HostChannel for Calls {
    fn send(&self, server: &str, message: Value, reply: Reply) {
        let body = json!({"subtype": "mcp_message", "server_name": server, "message": message});
        let done = Box::new(move |answer: Result<Value, super::control::ControlError>| {
            reply(match answer {
                Ok(mut body) => match body.get_mut("mcp_response").map(Value::take) {
                    Some(response) => Ok(response),
                    None => Err("the SDK's mcp_message answer has no `mcp_response`".into()),
                },
                Err(e) => Err(e.to_string()),
            })
        });
        // A refusal (stdin closed, too many waiting) has already run `done` with the reason.
        let _ = self.call_then(body, done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claude::control_calls::test_pipe::Pipe;
    use std::sync::mpsc;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_message_goes_out_as_mcp_message_and_the_mcp_response_comes_back() {
        let (tx, lines) = mpsc::channel();
        let calls = Arc::new(Calls::new(Arc::new(Pipe(Mutex::new(tx)))));
        let (got_tx, got) = mpsc::channel();
        HostChannel::send(
            calls.as_ref(),
            "calc",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            Box::new(move |answer| got_tx.send(answer).unwrap()),
        );
        let line: Value = serde_json::from_str(&lines.recv().unwrap()).unwrap();
        assert_eq!(line["request"]["subtype"], "mcp_message");
        assert_eq!(line["request"]["server_name"], "calc");
        assert_eq!(line["request"]["message"]["method"], "tools/list");
        let reply = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}});
        calls.deliver(
            line["request_id"].as_str().unwrap(),
            Ok(json!({"mcp_response": reply.clone()})),
        );
        assert_eq!(got.recv().unwrap(), Ok(reply));
    }
}
