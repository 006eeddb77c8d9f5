//! Claude Code's stream-json messages, one function per message type, as the Agent SDKs
//! parse them (`system`/`init`, `assistant`, `user`, `stream_event`, `system` notices,
//! `result`). Pure: values in, JSON out; `claude::stream` decides when each is written. Tool
//! names and inputs arrive already in Claude Code's vocabulary.

use serde_json::{json, Map, Value};

use crate::agent::coordinator::ModelStats;
use crate::provider::{Retry, Usage};

/// A random UUID (version 4), as Claude Code gives every message.
pub fn uuid() -> String {
    let mut bytes = random_bytes::<16>();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A message id in the Anthropic API's form (`msg_` and 24 hex digits).
pub fn message_id() -> String {
    let hex: String = random_bytes::<12>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("msg_{hex}")
}

/// Bytes from the kernel's generator; without it, the clock and a counter, which keep ids
/// unique within a run (they name messages, they protect nothing).
fn random_bytes<const N: usize>() -> [u8; N] {
    use std::io::Read;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut bytes = [0u8; N];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let seed = nanos ^ COUNTER.fetch_add(1, Ordering::Relaxed).rotate_left(32);
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = (seed.rotate_left((i as u32 * 8) % 64) & 0xff) as u8;
        }
    }
    bytes
}

/// What every `init` message says about the session.
#[derive(Debug, Clone, Default)]
pub struct InitInfo {
    pub session_id: String,
    pub cwd: String,
    pub model: String,
    /// Claude Code's names where a tool has one.
    pub tools: Vec<String>,
    /// MCP servers by name; each one with tools in the session is `connected`.
    pub mcp_servers: Vec<String>,
    pub permission_mode: &'static str,
    pub slash_commands: Vec<String>,
    pub skills: Vec<String>,
    /// The subagent profiles `Task` can run.
    pub agents: Vec<String>,
    /// Claude Code's value for where the key came from (`init_catalog::api_key_source`).
    pub api_key_source: &'static str,
}

/// `{"type": "system", "subtype": "init", ...}`: the first message of a session.
pub fn init(info: &InitInfo) -> Value {
    let servers: Vec<Value> = info
        .mcp_servers
        .iter()
        .map(|name| json!({"name": name, "status": "connected"}))
        .collect();
    json!({
        "type": "system",
        "subtype": "init",
        "cwd": info.cwd,
        "session_id": info.session_id,
        "tools": info.tools,
        "mcp_servers": servers,
        "model": info.model,
        "permissionMode": info.permission_mode,
        "slash_commands": info.slash_commands,
        "apiKeySource": info.api_key_source,
        "claude_code_version": format!("reasonix {}", crate::VERSION),
        "output_style": "default",
        "agents": info.agents,
        "skills": info.skills,
        "plugins": [],
        "uuid": uuid(),
    })
}

/// A `text` content block.
pub fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A `thinking` content block. OpenAI-compatible servers sign nothing: the signature is
/// empty (the SDKs require the key).
pub fn thinking_block(thinking: &str) -> Value {
    json!({"type": "thinking", "thinking": thinking, "signature": ""})
}

/// A `tool_use` content block (name and input in Claude Code's vocabulary).
pub fn tool_use_block(id: &str, name: &str, input: &Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

/// Where a message belongs: the session, and the `task` call whose subagent produced it.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    pub session_id: &'a str,
    /// `None` at top level.
    pub parent_tool_use_id: Option<&'a str>,
}

/// `{"type": "assistant", "message": {...}}` with one content block, as Claude Code writes
/// each block of a reply as it completes (the blocks of one reply share `message.id`).
pub fn assistant(
    origin: Origin,
    message_id: &str,
    model: &str,
    block: Value,
    usage: &Usage,
) -> Value {
    json!({
        "type": "assistant",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage_json(usage),
        },
        "parent_tool_use_id": origin.parent_tool_use_id,
        "session_id": origin.session_id,
        "uuid": uuid(),
    })
}

/// `{"type": "user", "message": {"content": [tool_result]}}`: a tool's result, as the model
/// got it.
pub fn tool_result(origin: Origin, tool_use_id: &str, content: &str, is_error: bool) -> Value {
    let mut block = json!({"type": "tool_result", "tool_use_id": tool_use_id, "content": content});
    // Claude Code marks failed results only.
    if is_error {
        block["is_error"] = json!(true);
    }
    json!({
        "type": "user",
        "message": {
            "role": "user",
            "content": [block],
        },
        "parent_tool_use_id": origin.parent_tool_use_id,
        "session_id": origin.session_id,
        "uuid": uuid(),
    })
}

/// `{"type": "stream_event", "event": ...}`: one Anthropic streaming event
/// (`--include-partial-messages`).
pub fn stream_event(origin: Origin, event: Value) -> Value {
    json!({
        "type": "stream_event",
        "event": event,
        "parent_tool_use_id": origin.parent_tool_use_id,
        "session_id": origin.session_id,
        "uuid": uuid(),
    })
}

/// The streaming event that opens a reply.
pub fn message_start(message_id: &str, model: &str) -> Value {
    json!({"type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": usage_json(&Usage::default()),
    }})
}

/// The streaming event that opens content block `index` (`text` or `thinking`).
pub fn content_block_start(index: usize, thinking: bool) -> Value {
    let block = if thinking {
        json!({"type": "thinking", "thinking": "", "signature": ""})
    } else {
        json!({"type": "text", "text": ""})
    };
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

/// A piece of text or thinking for block `index`.
pub fn content_block_delta(index: usize, thinking: bool, text: &str) -> Value {
    let delta = if thinking {
        json!({"type": "thinking_delta", "thinking": text})
    } else {
        json!({"type": "text_delta", "text": text})
    };
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

/// The partial stream of a `tool_use` block at `index`: its start with an empty input, the
/// whole input (Claude's keys) as one `input_json_delta`, its stop. The agent reports a call
/// once the model finished it, so its input is streamed whole; the model's argument stream is
/// in reasonix's keys and is not shown.
pub fn tool_use_events(index: usize, id: &str, name: &str, input: &Value) -> [Value; 3] {
    [
        json!({"type": "content_block_start", "index": index,
               "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        json!({"type": "content_block_delta", "index": index,
               "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
        content_block_stop(index),
    ]
}

pub fn content_block_stop(index: usize) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

/// The closing events of a reply: its usage, then `message_stop`.
pub fn message_delta(usage: &Usage) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": null, "stop_sequence": null},
           "usage": usage_json(usage)})
}

pub fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

/// `{"type": "system", "subtype": "compact_boundary"}`: the history was folded.
pub fn compact_boundary(
    session_id: &str,
    manual: bool,
    pre_tokens: u64,
    post_tokens: u64,
) -> Value {
    json!({
        "type": "system",
        "subtype": "compact_boundary",
        "compact_metadata": {
            "trigger": if manual { "manual" } else { "auto" },
            "pre_tokens": pre_tokens,
            "post_tokens": post_tokens,
        },
        "session_id": session_id,
        "uuid": uuid(),
    })
}

/// `{"type": "system", "subtype": "api_retry"}`: a request failed in a way worth another try,
/// which comes after `retry.wait`; Claude Code's attempt numbers count the retries (the first
/// retry is attempt 1), and its `error` is a category of the status.
pub fn api_retry(session_id: &str, retry: &Retry) -> Value {
    let error = match retry.status {
        Some(529) => "overloaded",
        Some(429) => "rate_limit",
        Some(401 | 403) => "authentication_failed",
        Some(status) if status >= 408 => "server_error",
        _ => "unknown",
    };
    json!({
        "type": "system",
        "subtype": "api_retry",
        "attempt": retry.attempt.saturating_sub(1),
        "max_retries": retry.max_attempts.saturating_sub(1),
        "retry_delay_ms": u64::try_from(retry.wait.as_millis()).unwrap_or(u64::MAX),
        "error_status": retry.status,
        "error": error,
        "session_id": session_id,
        "uuid": uuid(),
    })
}

/// `{"type": "system", "subtype": "model_fallback"}`: this turn goes on with the fallback
/// model (`trigger`: `overloaded`, `server_error` or `model_not_found`).
pub fn model_fallback(
    session_id: &str,
    trigger: &str,
    from: &str,
    to: &str,
    content: &str,
) -> Value {
    json!({
        "type": "system",
        "subtype": "model_fallback",
        "trigger": trigger,
        "original_model": from,
        "fallback_model": to,
        "content": content,
        "session_id": session_id,
        "uuid": uuid(),
    })
}

/// `{"type": "system", "subtype": "hook_response"}` (`--include-hook-events`): a hook ran.
pub fn hook_response(
    session_id: &str,
    event: &str,
    command: &str,
    outcome: &str,
    message: Option<&str>,
) -> Value {
    let outcome = match outcome {
        "error" => "error",
        _ => "success",
    };
    json!({
        "type": "system",
        "subtype": "hook_response",
        "hook_id": uuid(),
        "hook_name": format!("{event}:{command}"),
        "hook_event": event,
        "output": message.unwrap_or(""),
        "stdout": "",
        "stderr": "",
        "outcome": outcome,
        "session_id": session_id,
        "uuid": uuid(),
    })
}

/// Usage in Claude Code's accounting: `input_tokens` are the prompt tokens not read from
/// the cache (ours count them in), `cache_read_input_tokens` the cached ones; an
/// OpenAI-compatible server reports no cache writes.
pub fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.prompt_tokens.saturating_sub(usage.cache_hit_tokens),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage.cache_hit_tokens,
        "output_tokens": usage.completion_tokens,
    })
}

/// The result's usage: [`usage_json`] with the two keys Claude Code's result always has.
fn result_usage_json(usage: &Usage) -> Value {
    let mut value = usage_json(usage);
    value["server_tool_use"] = json!({"web_search_requests": 0, "web_fetch_requests": 0});
    value["service_tier"] = json!("standard");
    value
}

/// `modelUsage`: each model's totals in Claude Code's per-model shape.
pub fn model_usage(models: &[ModelStats], context_window: u64) -> Value {
    let mut out = Map::new();
    // A model that used nothing (its one request failed) is not listed, as in Claude Code.
    let used = models
        .iter()
        .filter(|m| m.usage.prompt_tokens > 0 || m.usage.completion_tokens > 0);
    // Roles on one model (the agent and its Guardian reviewer, or its fallback) are one entry.
    let mut merged: Vec<(&str, Usage, f64)> = Vec::new();
    for model in used {
        match merged.iter_mut().find(|(name, ..)| *name == model.model) {
            Some((_, usage, cost)) => {
                usage.add(&model.usage);
                *cost += model.cost_usd;
            }
            None => merged.push((&model.model, model.usage, model.cost_usd)),
        }
    }
    for (name, usage, cost) in merged {
        out.insert(
            name.to_string(),
            json!({
                "inputTokens": usage.prompt_tokens.saturating_sub(usage.cache_hit_tokens),
                "outputTokens": usage.completion_tokens,
                "cacheReadInputTokens": usage.cache_hit_tokens,
                "cacheCreationInputTokens": 0,
                "webSearchRequests": 0,
                "costUSD": cost,
                "contextWindow": context_window,
                "maxOutputTokens": 0,
            }),
        );
    }
    Value::Object(out)
}

/// One refused call in `permission_denials`.
pub fn permission_denial(tool_name: &str, tool_use_id: &str, tool_input: &Value) -> Value {
    json!({"tool_name": tool_name, "tool_use_id": tool_use_id, "tool_input": tool_input})
}

/// What the final `result` message reports.
#[derive(Debug, Clone, Default)]
pub struct ResultInfo {
    /// `success`, `error_max_turns`, `error_max_budget_usd`,
    /// `error_max_structured_output_retries` or `error_during_execution`.
    pub subtype: &'static str,
    pub is_error: bool,
    pub duration_ms: u64,
    pub duration_api_ms: u64,
    pub num_turns: u32,
    pub result: String,
    pub session_id: String,
    pub total_cost_usd: f64,
    pub usage: Usage,
    pub model_usage: Value,
    pub permission_denials: Vec<Value>,
    pub stop_reason: Option<String>,
    pub errors: Vec<String>,
    /// `--json-schema`: the final answer as JSON.
    pub structured_output: Option<Value>,
    /// The run ended on the model server's error.
    pub api_error: bool,
}

/// `{"type": "result", ...}`: the last message, and all of `--output-format json`.
pub fn result(info: &ResultInfo) -> Value {
    let mut value = json!({
        "type": "result",
        "subtype": info.subtype,
        "is_error": info.is_error,
        "duration_ms": info.duration_ms,
        "duration_api_ms": info.duration_api_ms,
        "num_turns": info.num_turns,
        "result": info.result,
        "stop_reason": info.stop_reason,
        "session_id": info.session_id,
        "total_cost_usd": info.total_cost_usd,
        "usage": result_usage_json(&info.usage),
        "modelUsage": info.model_usage,
        "permission_denials": info.permission_denials,
        "uuid": uuid(),
    });
    if info.subtype != "success" {
        value["errors"] = json!(info.errors);
    }
    if info.api_error {
        // Claude Code ends an API error with a `success` result that is an error, its text
        // the message.
        value["stop_reason"] = json!("stop_sequence");
    }
    if let Some(output) = &info.structured_output {
        value["structured_output"] = output.clone();
    }
    value
}

/// Claude Code's `stop_reason` for an OpenAI-compatible `finish_reason`.
pub fn stop_reason(finish_reason: &str) -> &str {
    match finish_reason {
        "stop" => "end_turn",
        "length" => "max_tokens",
        "tool_calls" => "tool_use",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_reads_as_claude_codes_api_retry() {
        let retry = |status| Retry {
            attempt: 3,
            max_attempts: 11,
            wait: std::time::Duration::from_millis(1500),
            reason: "busy".into(),
            status,
        };
        let value = api_retry("s", &retry(Some(529)));
        assert_eq!(value["attempt"], 2, "the second retry");
        assert_eq!(value["max_retries"], 10);
        assert_eq!(value["retry_delay_ms"], 1500);
        assert_eq!(value["error_status"], 529);
        let error = |status| api_retry("s", &retry(status))["error"].clone();
        assert_eq!(error(Some(529)), "overloaded");
        assert_eq!(error(Some(429)), "rate_limit");
        assert_eq!(error(Some(401)), "authentication_failed");
        assert_eq!(error(Some(403)), "authentication_failed");
        assert_eq!(error(Some(408)), "server_error");
        assert_eq!(error(Some(503)), "server_error");
        assert_eq!(error(Some(404)), "unknown");
        assert_eq!(error(None), "unknown");
        assert_eq!(api_retry("s", &retry(None))["error_status"], Value::Null);
    }

    #[test]
    fn ids_have_the_shapes_the_sdks_expect() {
        let id = uuid();
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert_eq!(&parts[2][..1], "4");
        assert_ne!(uuid(), uuid());
        let msg = message_id();
        assert!(msg.starts_with("msg_") && msg.len() == 28, "{msg}");
    }

    #[test]
    fn usage_counts_cache_reads_apart_from_input_tokens() {
        let usage = Usage {
            prompt_tokens: 1000,
            completion_tokens: 50,
            cache_hit_tokens: 800,
            ..Usage::default()
        };
        let value = usage_json(&usage);
        assert_eq!(value["input_tokens"], 200);
        assert_eq!(value["cache_read_input_tokens"], 800);
        assert_eq!(value["cache_creation_input_tokens"], 0);
        assert_eq!(value["output_tokens"], 50);
        let sum = value["input_tokens"].as_u64().unwrap()
            + value["cache_read_input_tokens"].as_u64().unwrap()
            + value["cache_creation_input_tokens"].as_u64().unwrap();
        assert_eq!(sum, 1000, "the three input fields add up to the prompt");
    }

    #[test]
    fn messages_carry_their_session_parent_and_uuid() {
        let origin = Origin {
            session_id: "s",
            parent_tool_use_id: Some("call_1"),
        };
        let message = assistant(origin, "msg_1", "m", text_block("hi"), &Usage::default());
        assert_eq!(message["type"], "assistant");
        assert_eq!(message["message"]["content"][0]["text"], "hi");
        assert_eq!(message["message"]["model"], "m");
        assert_eq!(message["parent_tool_use_id"], "call_1");
        assert_eq!(message["session_id"], "s");
        assert!(message["uuid"].is_string());
        let result_message = tool_result(origin, "call_2", "out", true);
        assert_eq!(
            result_message["message"]["content"][0]["tool_use_id"],
            "call_2"
        );
        assert_eq!(result_message["message"]["content"][0]["is_error"], true);
        let top = Origin {
            session_id: "s",
            parent_tool_use_id: None,
        };
        let ok = tool_result(top, "c", "", false);
        assert!(ok["parent_tool_use_id"].is_null());
        assert!(ok["message"]["content"][0].get("is_error").is_none());
    }

    #[test]
    fn the_result_has_claude_codes_keys_and_errors_only_on_failure() {
        let success = result(&ResultInfo {
            subtype: "success",
            ..ResultInfo::default()
        });
        for key in [
            "type",
            "subtype",
            "is_error",
            "duration_ms",
            "duration_api_ms",
            "num_turns",
            "result",
            "stop_reason",
            "session_id",
            "total_cost_usd",
            "usage",
            "modelUsage",
            "permission_denials",
            "uuid",
        ] {
            assert!(success.get(key).is_some(), "{key} missing: {success}");
        }
        assert!(success.get("errors").is_none());
        let failed = result(&ResultInfo {
            subtype: "error_max_turns",
            is_error: true,
            errors: vec!["stopped".into()],
            ..ResultInfo::default()
        });
        assert_eq!(failed["errors"][0], "stopped");
        assert_eq!(stop_reason("stop"), "end_turn");
        assert_eq!(stop_reason("tool_calls"), "tool_use");
    }
}
