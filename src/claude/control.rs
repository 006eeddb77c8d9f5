//! The Claude Agent SDK's control protocol on the wire (`--input-format stream-json`): one
//! stdin line into a user message, a control request from the SDK, a control response to one
//! of ours or a cancel; and the lines we write back (responses, our own requests). Sans-IO:
//! the reader thread and the session own the pipes; correlating our requests with their
//! responses is `control_calls`. The facts behind the shapes are in
//! `docs/claude/SDK_PROTOCOL.md`.

use std::fmt;
use std::io::{self, BufRead};
use std::time::Duration;

use serde_json::{json, Map, Value};

/// The longest stdin line accepted: a user message may carry a long prompt or pasted files.
/// A longer line is refused with its length, never buffered further.
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// The most hook callbacks one `initialize` may register (the SDK numbers one per callable).
pub const MAX_HOOK_CALLBACKS: usize = 256;
/// The longest timeout an SDK hook matcher may ask for; larger values saturate.
pub const MAX_HOOK_TIMEOUT: Duration = Duration::from_secs(600);

/// What went wrong reading or answering a control line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlError {
    /// The line is not JSON.
    Json(String),
    /// The line is JSON but not a message of the protocol.
    Shape(String),
    /// The line is longer than [`MAX_LINE_BYTES`].
    TooLong(usize),
    /// The SDK did not answer one of our requests in time.
    Timeout { subtype: String, seconds: u64 },
    /// The SDK answered one of our requests with an error.
    Refused { subtype: String, error: String },
    /// stdin closed (or the session ended) before the answer came.
    Closed(String),
    /// The turn was interrupted while waiting for the answer.
    Cancelled,
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlError::Json(e) => write!(f, "control: a stdin line is not JSON ({e})"),
            ControlError::Shape(e) => write!(f, "control: {e}"),
            ControlError::TooLong(len) => write!(
                f,
                "control: a stdin line of {len} bytes is longer than the {MAX_LINE_BYTES}-byte limit"
            ),
            ControlError::Timeout { subtype, seconds } => write!(
                f,
                "control: the SDK did not answer `{subtype}` within {seconds} s"
            ),
            ControlError::Refused { subtype, error } => {
                write!(f, "control: the SDK answered `{subtype}` with an error: {error}")
            }
            ControlError::Closed(why) => write!(f, "control: the SDK connection closed ({why})"),
            ControlError::Cancelled => write!(f, "control: interrupted while waiting for the SDK"),
        }
    }
}

impl std::error::Error for ControlError {}

/// One stdin line, read.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A user message: the next turn's prompt.
    User(UserMessage),
    /// A control request from the SDK; answer it with [`success`] or [`failure`] and its id.
    Request {
        request_id: String,
        request: SdkRequest,
    },
    /// The SDK's answer to one of our requests: the response body, or its error text.
    Response {
        request_id: String,
        outcome: Result<Value, String>,
    },
    /// The SDK withdraws a request it sent (we may not have answered yet).
    Cancel { request_id: String },
    /// A blank line or a keep-alive; nothing to do.
    Nothing,
}

/// A user message's prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserMessage {
    /// The text blocks joined by blank lines (a plain string content is one block).
    pub text: String,
    /// `parent_tool_use_id`: set only for answers inside a subagent, which we do not take.
    pub parent_tool_use_id: Option<String>,
}

/// A control request the SDK sends us.
#[derive(Debug, Clone, PartialEq)]
pub enum SdkRequest {
    Initialize(Initialize),
    Interrupt,
    /// Claude's mode name, unchecked here (the session knows which it honours).
    SetPermissionMode(String),
    /// `None` returns to the configured model.
    SetModel(Option<String>),
    McpStatus,
    GetContextUsage,
    /// A subtype we do not serve (`rewind_files`, `mcp_toggle`, ...); answered with an error.
    Unsupported(String),
}

impl SdkRequest {
    pub fn subtype(&self) -> &str {
        match self {
            SdkRequest::Initialize(_) => "initialize",
            SdkRequest::Interrupt => "interrupt",
            SdkRequest::SetPermissionMode(_) => "set_permission_mode",
            SdkRequest::SetModel(_) => "set_model",
            SdkRequest::McpStatus => "mcp_status",
            SdkRequest::GetContextUsage => "get_context_usage",
            SdkRequest::Unsupported(subtype) => subtype,
        }
    }
}

/// The `initialize` request: the SDK's hooks (as callback ids), agents and skills filter, and
/// what the TypeScript SDK sends here instead of as flags (the system prompt, structured
/// output, its in-process MCP servers), which print mode reads before the session opens.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Initialize {
    pub hooks: Vec<HookMatcher>,
    /// Subagent definitions by name, as the SDK sent them.
    pub agents: Map<String, Value>,
    /// `None`: every skill; otherwise only these.
    pub skills: Option<Vec<String>>,
    /// `systemPrompt`: replaces the system prompt when it holds any text (`[""]`: keep ours).
    pub system_prompt: Option<String>,
    /// `appendSystemPrompt`.
    pub append_system_prompt: Option<String>,
    /// `jsonSchema`: the final answer is JSON matching it (`--json-schema`).
    pub json_schema: Option<Value>,
    /// `sdkMcpServers`: the SDK's in-process MCP servers, by name (`--mcp-config` `type: sdk`).
    pub sdk_mcp_servers: Vec<String>,
    /// Keys the SDK set that reasonix does not use, for one notice.
    pub unsupported: Vec<String>,
}

/// `initialize` keys of the TypeScript SDK that reasonix does not use; set, each is named in a
/// notice instead of being dropped silently.
const UNSUPPORTED_INITIALIZE_KEYS: &[&str] = &[
    "planModeInstructions",
    "systemPromptSnapshot",
    "appendSubagentSystemPrompt",
    "toolAliases",
    "codeRunningMcpTools",
    "excludeDynamicSections",
    "title",
    "promptSuggestions",
    "agentProgressSummaries",
];

/// One matcher of an SDK hook event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookMatcher {
    /// The hook event (`PreToolUse`, ...), as Claude names it.
    pub event: String,
    /// A tool-name pattern; `None` matches every tool.
    pub matcher: Option<String>,
    pub callback_ids: Vec<String>,
    pub timeout: Option<Duration>,
    /// `onFailure` other than `continue`: a callback that fails blocks.
    pub block_on_failure: bool,
}

/// Reads the next stdin line and what it says; `None` at the end of input. A line longer than
/// [`MAX_LINE_BYTES`] is skipped to its end and reported, never held whole.
pub fn read_inbound<R: BufRead>(
    input: &mut R,
) -> io::Result<Option<Result<Inbound, ControlError>>> {
    let mut line = Vec::new();
    let mut seen = 0usize;
    loop {
        let available = match input.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            if seen == 0 {
                return Ok(None);
            }
            break;
        }
        let (take, ended) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (at, true),
            None => (available.len(), false),
        };
        if seen.saturating_add(take) <= MAX_LINE_BYTES {
            line.extend_from_slice(&available[..take]);
        }
        seen = seen.saturating_add(take);
        input.consume(if ended { take + 1 } else { take });
        if ended {
            break;
        }
    }
    if seen > MAX_LINE_BYTES {
        return Ok(Some(Err(ControlError::TooLong(seen))));
    }
    Ok(Some(parse_line(&line)))
}

/// Reads one stdin line.
pub fn parse_line(line: &[u8]) -> Result<Inbound, ControlError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(ControlError::TooLong(line.len()));
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(Inbound::Nothing);
    }
    let value: Value =
        serde_json::from_slice(line).map_err(|e| ControlError::Json(e.to_string()))?;
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| shape("a stdin message has no `type`"))?;
    match kind {
        "user" => parse_user(&value).map(Inbound::User),
        "control_request" => {
            let request_id = id_of(&value, "control_request")?;
            let body = value
                .get("request")
                .ok_or_else(|| shape("a control_request has no `request`"))?;
            Ok(Inbound::Request {
                request_id,
                request: parse_request(body)?,
            })
        }
        "control_response" => parse_response(&value),
        "control_cancel_request" => Ok(Inbound::Cancel {
            request_id: id_of(&value, "control_cancel_request")?,
        }),
        "keep_alive" => Ok(Inbound::Nothing),
        other => Err(shape(&format!(
            "a stdin message of type `{other}` is not understood; send `user` messages and \
             control requests"
        ))),
    }
}

fn shape(text: &str) -> ControlError {
    ControlError::Shape(text.to_string())
}

fn id_of(value: &Value, what: &str) -> Result<String, ControlError> {
    match value.get("request_id") {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        _ => Err(shape(&format!("a {what} has no `request_id` string"))),
    }
}

fn parse_user(value: &Value) -> Result<UserMessage, ControlError> {
    let content = value
        .get("message")
        .and_then(|m| m.get("content"))
        .ok_or_else(|| shape("a user message has no `message.content`"))?;
    let text = match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => {
            let mut parts = Vec::new();
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => parts.push(
                        block
                            .get("text")
                            .and_then(Value::as_str)
                            .ok_or_else(|| shape("a text block has no `text`"))?,
                    ),
                    Some(other) => {
                        return Err(shape(&format!(
                            "a user message block of type `{other}` is not supported; send text"
                        )))
                    }
                    None => return Err(shape("a user message block has no `type`")),
                }
            }
            parts.join("\n\n")
        }
        _ => return Err(shape("a user message's content is neither text nor blocks")),
    };
    let parent_tool_use_id = value
        .get("parent_tool_use_id")
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(UserMessage {
        text,
        parent_tool_use_id,
    })
}

fn parse_request(body: &Value) -> Result<SdkRequest, ControlError> {
    let subtype = body
        .get("subtype")
        .and_then(Value::as_str)
        .ok_or_else(|| shape("a control request has no `subtype`"))?;
    Ok(match subtype {
        "initialize" => SdkRequest::Initialize(parse_initialize(body)?),
        "interrupt" => SdkRequest::Interrupt,
        "set_permission_mode" => SdkRequest::SetPermissionMode(
            body.get("mode")
                .and_then(Value::as_str)
                .ok_or_else(|| shape("set_permission_mode has no `mode`"))?
                .to_string(),
        ),
        "set_model" => match body.get("model") {
            None | Some(Value::Null) => SdkRequest::SetModel(None),
            Some(Value::String(model)) if model.is_empty() || model == "default" => {
                SdkRequest::SetModel(None)
            }
            Some(Value::String(model)) => SdkRequest::SetModel(Some(model.clone())),
            Some(_) => return Err(shape("set_model's `model` is not a string")),
        },
        "mcp_status" => SdkRequest::McpStatus,
        "get_context_usage" => SdkRequest::GetContextUsage,
        other => SdkRequest::Unsupported(other.to_string()),
    })
}

fn parse_initialize(body: &Value) -> Result<Initialize, ControlError> {
    let mut init = Initialize::default();
    let mut callbacks = 0usize;
    if let Some(events) = body.get("hooks").filter(|h| !h.is_null()) {
        let events = events
            .as_object()
            .ok_or_else(|| shape("initialize's `hooks` is not an object"))?;
        for (event, matchers) in events {
            let matchers = matchers
                .as_array()
                .ok_or_else(|| shape(&format!("initialize's `hooks.{event}` is not a list")))?;
            for matcher in matchers {
                let hook = parse_hook_matcher(event, matcher)?;
                callbacks = callbacks.saturating_add(hook.callback_ids.len());
                if callbacks > MAX_HOOK_CALLBACKS {
                    return Err(shape(&format!(
                        "initialize registers more than {MAX_HOOK_CALLBACKS} hook callbacks"
                    )));
                }
                init.hooks.push(hook);
            }
        }
    }
    if let Some(agents) = body.get("agents").filter(|a| !a.is_null()) {
        init.agents = agents
            .as_object()
            .ok_or_else(|| shape("initialize's `agents` is not an object"))?
            .clone();
    }
    if let Some(skills) = body.get("skills").filter(|s| !s.is_null()) {
        let list = skills
            .as_array()
            .ok_or_else(|| shape("initialize's `skills` is not a list"))?;
        let names: Option<Vec<String>> = list
            .iter()
            .map(|s| s.as_str().map(str::to_string))
            .collect();
        init.skills = Some(names.ok_or_else(|| shape("initialize's `skills` holds a non-string"))?);
    }
    init.system_prompt = match body.get("systemPrompt") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .map(|p| {
                    p.as_str()
                        .ok_or_else(|| shape("initialize's `systemPrompt` holds a non-string"))
                })
                .collect::<Result<Vec<_>, _>>()?
                .join("\n\n"),
        ),
        Some(_) => return Err(shape("initialize's `systemPrompt` is not text")),
    }
    .filter(|text| !text.trim().is_empty());
    init.append_system_prompt = match body.get("appendSystemPrompt") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()).filter(|t| !t.trim().is_empty()),
        Some(_) => return Err(shape("initialize's `appendSystemPrompt` is not text")),
    };
    init.json_schema = body.get("jsonSchema").filter(|s| !s.is_null()).cloned();
    if let Some(servers) = body.get("sdkMcpServers").filter(|s| !s.is_null()) {
        let names: Option<Vec<String>> = servers
            .as_array()
            .ok_or_else(|| shape("initialize's `sdkMcpServers` is not a list"))?
            .iter()
            .map(|s| s.as_str().map(str::to_string))
            .collect();
        init.sdk_mcp_servers =
            names.ok_or_else(|| shape("initialize's `sdkMcpServers` holds a non-string"))?;
    }
    init.unsupported = UNSUPPORTED_INITIALIZE_KEYS
        .iter()
        .filter(|key| body.get(**key).is_some_and(|v| !v.is_null()))
        .map(|key| key.to_string())
        .collect();
    Ok(init)
}

fn parse_hook_matcher(event: &str, matcher: &Value) -> Result<HookMatcher, ControlError> {
    let ids = matcher
        .get("hookCallbackIds")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            shape(&format!(
                "a `{event}` hook matcher has no `hookCallbackIds`"
            ))
        })?;
    let callback_ids: Option<Vec<String>> =
        ids.iter().map(|i| i.as_str().map(str::to_string)).collect();
    let callback_ids = callback_ids
        .ok_or_else(|| shape(&format!("a `{event}` hook callback id is not a string")))?;
    let timeout = matcher
        .get("timeout")
        .and_then(Value::as_f64)
        .filter(|secs| secs.is_finite() && *secs > 0.0)
        .map(|secs| Duration::from_secs_f64(secs.min(MAX_HOOK_TIMEOUT.as_secs_f64())));
    Ok(HookMatcher {
        event: event.to_string(),
        matcher: matcher
            .get("matcher")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty() && *m != "*")
            .map(str::to_string),
        callback_ids,
        timeout,
        block_on_failure: matcher
            .get("onFailure")
            .and_then(Value::as_str)
            .is_some_and(|v| v != "continue"),
    })
}

fn parse_response(value: &Value) -> Result<Inbound, ControlError> {
    let response = value
        .get("response")
        .ok_or_else(|| shape("a control_response has no `response`"))?;
    let request_id = id_of(response, "control_response")?;
    let outcome = match response.get("subtype").and_then(Value::as_str) {
        Some("success") => Ok(response.get("response").cloned().unwrap_or(Value::Null)),
        Some("error") => Err(response
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("unknown error")
            .to_string()),
        _ => {
            return Err(shape(
                "a control_response's subtype is neither success nor error",
            ))
        }
    };
    Ok(Inbound::Response {
        request_id,
        outcome,
    })
}

/// Our answer to the SDK's request `request_id`, as one line with its newline.
pub fn success(request_id: &str, body: Value) -> String {
    line(json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": body},
    }))
}

/// Our refusal of the SDK's request `request_id`, as one line with its newline.
pub fn failure(request_id: &str, error: &str) -> String {
    line(json!({
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": error},
    }))
}

/// One of our requests to the SDK (`can_use_tool`, `hook_callback`, `mcp_message`).
pub fn request(request_id: &str, body: Value) -> String {
    line(json!({"type": "control_request", "request_id": request_id, "request": body}))
}

/// Withdraws one of our requests the SDK has not answered in time.
pub fn cancel(request_id: &str) -> String {
    line(json!({"type": "control_cancel_request", "request_id": request_id}))
}

fn line(value: Value) -> String {
    let mut text = value.to_string();
    text.push('\n');
    text
}

/// The answer to `initialize`: what the CLI supports. `hook_on_failure_supported` tells the
/// SDK that a matcher's `onFailure: "block"` is honoured (it refuses to start otherwise).
pub fn initialize_answer(commands: &[String], models: &[String]) -> Value {
    json!({
        "commands": commands.iter().map(|c| json!({"name": c, "description": "", "argumentHint": ""})).collect::<Vec<_>>(),
        "models": models.iter().map(|m| json!({"value": m, "displayName": m, "description": ""})).collect::<Vec<_>>(),
        "output_style": "default",
        "available_output_styles": ["default"],
        "hook_on_failure_supported": true,
        "hooks_applied": true,
    })
}

/// The refusal text of a request we do not serve.
pub fn unsupported_message(subtype: &str) -> String {
    format!(
        "reasonix does not support the control request `{subtype}`; supported: initialize, \
         interrupt, set_permission_mode, set_model, mcp_status, get_context_usage"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Inbound, ControlError> {
        parse_line(text.as_bytes())
    }

    #[test]
    fn a_string_prompt_and_a_block_prompt_are_user_messages() {
        let plain = parse(
            r#"{"type":"user","session_id":"","message":{"role":"user","content":"hi"},"parent_tool_use_id":null}"#,
        )
        .unwrap();
        assert_eq!(
            plain,
            Inbound::User(UserMessage {
                text: "hi".into(),
                parent_tool_use_id: None
            })
        );
        let blocks = parse(
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}"#,
        )
        .unwrap();
        let Inbound::User(user) = blocks else {
            panic!("not a user message: {blocks:?}")
        };
        assert_eq!(user.text, "a\n\nb");
    }

    #[test]
    fn an_image_block_is_refused_with_its_type() {
        let err = parse(r#"{"type":"user","message":{"content":[{"type":"image","source":{}}]}}"#)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "control: a user message block of type `image` is not supported; send text"
        );
    }

    #[test]
    fn initialize_reads_hooks_agents_and_skills() {
        let line = r#"{"type":"control_request","request_id":"req_1_ab","request":{"subtype":"initialize",
            "hooks":{"PreToolUse":[{"matcher":"Bash","hookCallbackIds":["hook_0","hook_1"],"timeout":5,"onFailure":"block"}],
                     "PostToolUse":[{"matcher":null,"hookCallbackIds":["hook_2"]}]},
            "agents":{"rev":{"description":"d","prompt":"p"}},"skills":["a"]}}"#
            .replace('\n', "");
        let Inbound::Request {
            request_id,
            request: SdkRequest::Initialize(init),
        } = parse(&line).unwrap()
        else {
            panic!("not initialize")
        };
        assert_eq!(request_id, "req_1_ab");
        assert_eq!(init.hooks.len(), 2);
        let pre = init.hooks.iter().find(|h| h.event == "PreToolUse").unwrap();
        assert_eq!(pre.matcher.as_deref(), Some("Bash"));
        assert_eq!(pre.callback_ids, ["hook_0", "hook_1"]);
        assert_eq!(pre.timeout, Some(Duration::from_secs(5)));
        assert!(pre.block_on_failure);
        let post = init
            .hooks
            .iter()
            .find(|h| h.event == "PostToolUse")
            .unwrap();
        assert_eq!(post.matcher, None);
        assert!(!post.block_on_failure);
        assert!(init.agents.contains_key("rev"));
        assert_eq!(init.skills, Some(vec!["a".to_string()]));
    }

    #[test]
    fn initialize_reads_what_the_typescript_sdk_sends_instead_of_flags() {
        let init = |body: &str| {
            let line = format!(
                r#"{{"type":"control_request","request_id":"r","request":{{"subtype":"initialize",{body}}}}}"#
            );
            match parse(&line) {
                Ok(Inbound::Request {
                    request: SdkRequest::Initialize(init),
                    ..
                }) => Ok(init),
                Ok(_) => panic!("not initialize"),
                Err(err) => Err(err.to_string()),
            }
        };
        let read = init(
            r#""systemPrompt":["Be terse.","Use tabs."],"appendSystemPrompt":"And kind.",
            "jsonSchema":{"type":"object"},"sdkMcpServers":["calc"],"title":"t","toolAliases":{}"#,
        )
        .unwrap();
        assert_eq!(
            read.system_prompt.as_deref(),
            Some("Be terse.\n\nUse tabs.")
        );
        assert_eq!(read.append_system_prompt.as_deref(), Some("And kind."));
        assert_eq!(
            read.json_schema,
            Some(serde_json::json!({"type": "object"}))
        );
        assert_eq!(read.sdk_mcp_servers, ["calc"]);
        assert_eq!(read.unsupported, ["toolAliases", "title"]);
        // The SDK's default (`[""]`) keeps reasonix's system prompt.
        let default = init(r#""systemPrompt":[""],"appendSystemPrompt":null"#).unwrap();
        assert_eq!(default.system_prompt, None);
        assert_eq!(default.append_system_prompt, None);
        assert!(init(r#""systemPrompt":[1]"#)
            .unwrap_err()
            .contains("systemPrompt"));
        assert!(init(r#""sdkMcpServers":"calc""#)
            .unwrap_err()
            .contains("sdkMcpServers"));
    }

    #[test]
    fn initialize_with_null_hooks_is_empty() {
        let Inbound::Request {
            request: SdkRequest::Initialize(init),
            ..
        } = parse(r#"{"type":"control_request","request_id":"r","request":{"subtype":"initialize","hooks":null}}"#)
            .unwrap()
        else {
            panic!("not initialize")
        };
        assert_eq!(init, Initialize::default());
    }

    #[test]
    fn a_hook_timeout_saturates_and_too_many_callbacks_are_refused() {
        let huge = r#"{"type":"control_request","request_id":"r","request":{"subtype":"initialize","hooks":{"Stop":[{"hookCallbackIds":["h"],"timeout":1e300}]}}}"#;
        let Inbound::Request {
            request: SdkRequest::Initialize(init),
            ..
        } = parse(huge).unwrap()
        else {
            panic!("not initialize")
        };
        assert_eq!(init.hooks[0].timeout, Some(MAX_HOOK_TIMEOUT));
        let ids: Vec<String> = (0..=MAX_HOOK_CALLBACKS)
            .map(|i| format!("\"h{i}\""))
            .collect();
        let many = format!(
            r#"{{"type":"control_request","request_id":"r","request":{{"subtype":"initialize","hooks":{{"Stop":[{{"hookCallbackIds":[{}]}}]}}}}}}"#,
            ids.join(",")
        );
        assert_eq!(
            parse(&many).unwrap_err().to_string(),
            format!("control: initialize registers more than {MAX_HOOK_CALLBACKS} hook callbacks")
        );
    }

    #[test]
    fn every_sdk_request_subtype_is_read() {
        let cases = [
            (r#"{"subtype":"interrupt"}"#, SdkRequest::Interrupt),
            (
                r#"{"subtype":"set_permission_mode","mode":"acceptEdits"}"#,
                SdkRequest::SetPermissionMode("acceptEdits".into()),
            ),
            (
                r#"{"subtype":"set_model","model":"fast"}"#,
                SdkRequest::SetModel(Some("fast".into())),
            ),
            (
                r#"{"subtype":"set_model","model":null}"#,
                SdkRequest::SetModel(None),
            ),
            (
                r#"{"subtype":"set_model","model":"default"}"#,
                SdkRequest::SetModel(None),
            ),
            (r#"{"subtype":"mcp_status"}"#, SdkRequest::McpStatus),
            (
                r#"{"subtype":"get_context_usage"}"#,
                SdkRequest::GetContextUsage,
            ),
            (
                r#"{"subtype":"rewind_files","user_message_id":"u"}"#,
                SdkRequest::Unsupported("rewind_files".into()),
            ),
        ];
        for (body, expected) in cases {
            let line = format!(r#"{{"type":"control_request","request_id":"x","request":{body}}}"#);
            match parse(&line).unwrap() {
                Inbound::Request { request, .. } => assert_eq!(request, expected, "{body}"),
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn responses_to_our_requests_carry_the_body_or_the_error() {
        let ok = parse(r#"{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow"}}}"#).unwrap();
        assert_eq!(
            ok,
            Inbound::Response {
                request_id: "r1".into(),
                outcome: Ok(json!({"behavior": "allow"}))
            }
        );
        let err = parse(r#"{"type":"control_response","response":{"subtype":"error","request_id":"r2","error":"boom"}}"#).unwrap();
        assert_eq!(
            err,
            Inbound::Response {
                request_id: "r2".into(),
                outcome: Err("boom".into())
            }
        );
        assert_eq!(
            parse(r#"{"type":"control_cancel_request","request_id":"r3"}"#).unwrap(),
            Inbound::Cancel {
                request_id: "r3".into()
            }
        );
    }

    #[test]
    fn malformed_lines_name_their_fault() {
        let cases = [
            ("not json", "control: a stdin line is not JSON"),
            (r#"{"x":1}"#, "control: a stdin message has no `type`"),
            (
                r#"{"type":"control_request","request":{"subtype":"interrupt"}}"#,
                "control: a control_request has no `request_id` string",
            ),
            (
                r#"{"type":"control_request","request_id":"r"}"#,
                "control: a control_request has no `request`",
            ),
            (
                r#"{"type":"user","message":{}}"#,
                "control: a user message has no `message.content`",
            ),
            (
                r#"{"type":"assistant"}"#,
                "control: a stdin message of type `assistant` is not understood",
            ),
        ];
        for (line, prefix) in cases {
            let err = parse(line).unwrap_err().to_string();
            assert!(err.starts_with(prefix), "{line}: {err}");
        }
        assert_eq!(parse("  ").unwrap(), Inbound::Nothing);
        let long = vec![b' '; MAX_LINE_BYTES + 1];
        assert_eq!(
            parse_line(&long).unwrap_err(),
            ControlError::TooLong(MAX_LINE_BYTES + 1)
        );
    }

    /// Hands out its bytes `step` at a time, so every split of a line is exercised.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    #[test]
    fn lines_are_read_whole_however_the_bytes_arrive() {
        let input = b"{\"type\":\"control_request\",\"request_id\":\"a\",\"request\":{\"subtype\":\"interrupt\"}}\n\n{\"type\":\"user\",\"message\":{\"content\":\"hi\"}}";
        for step in 1..=input.len() {
            let mut reader =
                io::BufReader::with_capacity(step.max(1), Trickle { bytes: input, step });
            let mut seen = Vec::new();
            while let Some(line) = read_inbound(&mut reader).unwrap() {
                seen.push(line.unwrap());
            }
            assert_eq!(
                seen,
                [
                    Inbound::Request {
                        request_id: "a".into(),
                        request: SdkRequest::Interrupt
                    },
                    Inbound::Nothing,
                    Inbound::User(UserMessage {
                        text: "hi".into(),
                        parent_tool_use_id: None
                    })
                ],
                "step {step}"
            );
        }
    }

    #[test]
    fn an_overlong_line_is_skipped_and_reading_goes_on() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.extend_from_slice(b"\n{\"type\":\"keep_alive\"}\n");
        let mut reader = io::BufReader::new(&input[..]);
        assert_eq!(
            read_inbound(&mut reader).unwrap(),
            Some(Err(ControlError::TooLong(MAX_LINE_BYTES + 10)))
        );
        assert_eq!(
            read_inbound(&mut reader).unwrap(),
            Some(Ok(Inbound::Nothing))
        );
        assert_eq!(read_inbound(&mut reader).unwrap(), None);
    }

    #[test]
    fn our_lines_are_one_json_object_each_in_the_sdk_shape() {
        let ok: Value = serde_json::from_str(&success("req_1", json!({"a": 1}))).unwrap();
        assert_eq!(
            ok,
            json!({"type":"control_response","response":{"subtype":"success","request_id":"req_1","response":{"a":1}}})
        );
        let err: Value = serde_json::from_str(&failure("req_2", "no")).unwrap();
        assert_eq!(err["response"]["error"], "no");
        assert_eq!(err["response"]["subtype"], "error");
        let ours = request("rx_1", json!({"subtype": "can_use_tool"}));
        assert!(ours.ends_with('\n') && !ours.trim_end().contains('\n'));
        let ours: Value = serde_json::from_str(&ours).unwrap();
        assert_eq!(ours["type"], "control_request");
        assert_eq!(ours["request_id"], "rx_1");
        let cancelled: Value = serde_json::from_str(&cancel("rx_1")).unwrap();
        assert_eq!(
            cancelled,
            json!({"type":"control_cancel_request","request_id":"rx_1"})
        );
        assert_eq!(
            initialize_answer(&[], &[])["hook_on_failure_supported"],
            true
        );
    }
}
