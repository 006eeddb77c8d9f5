//! The SDK's hooks (registered by `initialize` as callback ids) as hooks of the session: each
//! runs as a `hook_callback` request with the input a command hook would read on stdin, and
//! its JSON answer is read by `agent::hooks` like a command's, so an SDK hook only tightens
//! (a deny blocks, an allow is ignored). Events we do not fire are reported, not dropped
//! silently.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::control::Initialize;
use super::control_calls::Calls;
use crate::agent::hooks::{Callback, Hook, HookCallback};
use crate::cancel::CancelToken;

/// One SDK hook callback, reached through the control channel.
pub struct SdkHook {
    calls: Arc<Calls>,
    callback_id: String,
}

impl HookCallback for SdkHook {
    fn call(
        &self,
        input: &Value,
        tool_use_id: Option<&str>,
        timeout: Duration,
        cancel: &CancelToken,
    ) -> Result<Value, String> {
        let body = json!({
            "subtype": "hook_callback",
            "callback_id": self.callback_id,
            "input": in_claude_names(input),
            "tool_use_id": tool_use_id,
        });
        self.calls
            .call(body, timeout, Some(cancel))
            .map_err(|e| e.to_string())
    }
}

/// The hook input in Claude's vocabulary (`Bash {command}`, `Write {file_path, content}`), as
/// an SDK hook written for Claude Code expects it.
fn in_claude_names(input: &Value) -> Value {
    let mut input = input.clone();
    let Some(fields) = input.as_object_mut() else {
        return input;
    };
    if let Some(ours) = fields
        .get("tool_name")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        let args = fields.get("tool_input").cloned().unwrap_or(Value::Null);
        let (name, claude_input) = crate::tool::claude_vocabulary::to_claude(&ours, &args);
        fields.insert("tool_name".into(), Value::String(name));
        fields.insert("tool_input".into(), claude_input);
        fields.remove("tool_alias");
    }
    input
}

/// The session hooks `init` registers, and a line for each matcher we cannot honour.
pub fn hooks_from_initialize(init: &Initialize, calls: &Arc<Calls>) -> (Vec<Hook>, Vec<String>) {
    let mut hooks = Vec::new();
    let mut problems = Vec::new();
    for matcher in &init.hooks {
        for id in &matcher.callback_ids {
            let callback = Callback {
                run: Arc::new(SdkHook {
                    calls: Arc::clone(calls),
                    callback_id: id.clone(),
                }),
                block_on_failure: matcher.block_on_failure,
            };
            match Hook::with_callback(
                &matcher.event,
                matcher.matcher.as_deref().unwrap_or(""),
                &format!("sdk:{id}"),
                matcher.timeout,
                "the SDK's initialize",
                callback,
            ) {
                Ok(hook) => hooks.push(hook),
                Err(problem) => problems.push(problem),
            }
        }
    }
    (hooks, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claude::control::{self, Inbound, SdkRequest};
    use crate::claude::control_calls::test_pipe::Pipe;
    use std::sync::mpsc;
    use std::sync::Mutex;

    fn initialize(line: &str) -> Initialize {
        match control::parse_line(line.as_bytes()).unwrap() {
            Inbound::Request {
                request: SdkRequest::Initialize(init),
                ..
            } => init,
            other => panic!("not initialize: {other:?}"),
        }
    }

    #[test]
    fn each_callback_id_is_a_hook_that_asks_the_sdk_with_the_hook_input() {
        let init = initialize(
            r#"{"type":"control_request","request_id":"r","request":{"subtype":"initialize","hooks":{"PreToolUse":[{"matcher":"Bash","hookCallbackIds":["hook_0"],"timeout":7}],"PreCompact":[{"hookCallbackIds":["hook_1"]}]}}}"#,
        );
        let (tx, rx) = mpsc::channel();
        let calls = Arc::new(Calls::new(Arc::new(Pipe(Mutex::new(tx)))));
        let (hooks, problems) = hooks_from_initialize(&init, &calls);
        assert_eq!(hooks.len(), 1);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].contains("unknown hook event `PreCompact`"),
            "{problems:?}"
        );
        let hook = &hooks[0];
        assert_eq!(hook.command, "sdk:hook_0");
        assert_eq!(hook.timeout, Duration::from_secs(7));
        let run = Arc::clone(&hook.callback.as_ref().unwrap().run);
        let peer = {
            let calls = Arc::clone(&calls);
            std::thread::spawn(move || {
                let line: Value = serde_json::from_str(&rx.recv().unwrap()).unwrap();
                let id = line["request_id"].as_str().unwrap();
                calls.deliver(id, Ok(json!({"decision": "block", "reason": "r"})));
                line["request"].clone()
            })
        };
        let input = json!({"hook_event_name": "PreToolUse", "tool_name": "write_file",
            "tool_alias": "Write", "tool_input": {"path": "a.txt", "content": "x"}});
        let answer = run
            .call(&input, Some("toolu_1"), hook.timeout, &CancelToken::new())
            .unwrap();
        assert_eq!(answer, json!({"decision": "block", "reason": "r"}));
        let asked = peer.join().unwrap();
        let claude = json!({"hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": {"file_path": "a.txt", "content": "x"}});
        assert_eq!(
            asked,
            json!({"subtype": "hook_callback", "callback_id": "hook_0", "input": claude, "tool_use_id": "toolu_1"})
        );
    }
}
