//! The request body of a chat completion: built from scratch as JSON ([`request_body`], the
//! reference and the form recordings keep) or as a [`Body`] of three parts around the
//! transcript's cached message bytes ([`write_request_body`], what is sent, with no copy of
//! the history), which must be byte-identical so the provider's prompt cache keeps hitting.
//! Also the stable hash those bytes are named by.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};

use super::super::transcript::Transcript;
use super::super::{Message, ProviderSettings, Request, ToolSchema};
use crate::hash::{fnv_continue, FNV_OFFSET};

/// The exact request body: model, messages, tools, streaming options, sampling settings,
/// then `extra_body` merged at the top level. Keys are sorted (serde_json's map), so the same
/// request always serialises to the same bytes. Built from scratch: the reference that
/// [`write_request_body`] must match, and the form recordings keep.
pub fn request_body(settings: &ProviderSettings, request: &Request) -> Value {
    let mut body = envelope(settings, request);
    // `extra_body` may replace the messages, as it may replace anything else.
    body.entry("messages")
        .or_insert_with(|| Value::Array(request.messages.iter().map(message_json).collect()));
    Value::Object(body)
}

/// Everything in the body but the messages (unless `extra_body` sets them).
fn envelope(settings: &ProviderSettings, request: &Request) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(settings.model.clone()));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                serde_json::json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), Value::Bool(true));
    body.insert(
        "stream_options".into(),
        serde_json::json!({ "include_usage": true }),
    );
    if let Some(max_tokens) = request.max_tokens {
        body.insert("max_tokens".into(), max_tokens.into());
    }
    if let Some(t) = request.temperature.and_then(serde_json::Number::from_f64) {
        body.insert("temperature".into(), Value::Number(t));
    }
    if let Some(effort) = &request.reasoning_effort {
        body.insert("reasoning_effort".into(), Value::String(effort.clone()));
    }
    for (key, value) in &settings.extra_body {
        body.insert(key.clone(), value.clone());
    }
    // Servers reject `stream_options` on a request that does not stream, unless the user
    // set it on purpose.
    if !streams(settings) && !settings.extra_body.contains_key("stream_options") {
        body.remove("stream_options");
    }
    body
}

/// Whether the request asks for a streamed reply: yes unless `extra_body` sets `"stream":
/// false` (the reply is then one `chat.completion` object, which the parser also reads).
pub(super) fn streams(settings: &ProviderSettings) -> bool {
    settings.extra_body.get("stream") != Some(&Value::Bool(false))
}

/// A request body as sent: `head`, the transcript's cached message bytes (in segments),
/// `tail`. Sending it streams the parts, so no round copies the history into one buffer.
pub struct Body {
    /// Shared with the [`BodyWriter`] that keeps it for the next request.
    pub head: Arc<[u8]>,
    /// `None` when `extra_body` replaced the messages and `head` is the whole body.
    pub messages: Option<Transcript>,
    pub tail: Arc<[u8]>,
    /// The body's [`stable_hash`].
    pub hash: u64,
}

impl Body {
    /// The parts in the order they are sent.
    pub fn parts(&self) -> Vec<&[u8]> {
        let mut parts = vec![&self.head[..]];
        parts.extend(self.messages.iter().flat_map(Transcript::segments));
        parts.push(&self.tail);
        parts
    }

    pub fn len(&self) -> usize {
        let messages: usize = self
            .messages
            .iter()
            .flat_map(Transcript::segments)
            .map(<[u8]>::len)
            .sum();
        self.head.len() + messages + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole body in one buffer, for tests and debug checks.
    pub fn to_vec(&self) -> Vec<u8> {
        self.parts().concat()
    }
}

/// The bytes `request_body` serialises to, as a [`Body`] around the transcript's cached
/// message JSON: only the envelope is serialised here. Its hash is rolled forward over the
/// messages hashed before.
pub fn write_request_body(settings: &ProviderSettings, request: &Request) -> Body {
    Envelope::new(settings, request).body(request)
}

/// Writes the request bodies of one provider (whose settings do not change), keeping the
/// envelope's bytes from one request to the next: they change only with the tools or the
/// sampling settings, and building them anew clones and serialises every tool schema.
#[derive(Default)]
pub struct BodyWriter {
    last: Mutex<Option<Envelope>>,
}

impl BodyWriter {
    /// What [`write_request_body`] writes for `request` under these `settings`.
    pub fn write(&self, settings: &ProviderSettings, request: &Request) -> Body {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if !last.as_ref().is_some_and(|envelope| envelope.fits(request)) {
            *last = None;
        }
        last.get_or_insert_with(|| Envelope::new(settings, request))
            .body(request)
    }
}

/// The serialised body around the messages, with the request fields it was made from.
struct Envelope {
    tools: Arc<Vec<ToolSchema>>,
    temperature: Option<f64>,
    max_tokens: Option<u64>,
    reasoning_effort: Option<String>,
    /// Up to and including the `[` of the messages; the whole body when `extra_body`
    /// replaced the messages (then `tail` is `None`).
    head: Arc<[u8]>,
    tail: Option<Arc<[u8]>>,
    /// The FNV state after `head`.
    head_state: u64,
}

impl Envelope {
    fn new(settings: &ProviderSettings, request: &Request) -> Envelope {
        let envelope = envelope(settings, request);
        let (head, tail) = if envelope.contains_key("messages") {
            // `extra_body` replaced the messages: nothing cached applies.
            let mut head = Vec::new();
            write_json(&mut head, &Value::Object(envelope));
            (head, None)
        } else {
            let mut head = vec![b'{'];
            // The map iterates in key order, the order serde_json writes it in.
            let mut entries = envelope.iter().peekable();
            let mut first = true;
            while let Some((key, value)) = entries.next_if(|(key, _)| key.as_str() < "messages") {
                write_entry(&mut head, &mut first, key, value);
            }
            if !first {
                head.push(b',');
            }
            head.extend_from_slice(b"\"messages\":[");
            let mut tail = vec![b']'];
            for (key, value) in entries {
                write_entry(&mut tail, &mut false, key, value);
            }
            tail.push(b'}');
            (head, Some(tail.into()))
        };
        Envelope {
            tools: request.tools.clone(),
            temperature: request.temperature,
            max_tokens: request.max_tokens,
            reasoning_effort: request.reasoning_effort.clone(),
            head_state: stable_hash(&head),
            head: head.into(),
            tail,
        }
    }

    /// Whether `request` would get the same envelope (a NaN temperature never does, which
    /// only costs a rebuild).
    fn fits(&self, request: &Request) -> bool {
        self.temperature == request.temperature
            && self.max_tokens == request.max_tokens
            && self.reasoning_effort == request.reasoning_effort
            // The agent hands over the same list until its tools change: the pointer decides
            // without comparing every schema.
            && (Arc::ptr_eq(&self.tools, &request.tools) || self.tools == request.tools)
    }

    fn body(&self, request: &Request) -> Body {
        let Some(tail) = &self.tail else {
            return Body {
                head: Arc::clone(&self.head),
                messages: None,
                tail: Arc::from(&[][..]),
                hash: self.head_state,
            };
        };
        let state = request.messages.hash_after(self.head_state);
        Body {
            hash: fnv_continue(state, tail),
            head: Arc::clone(&self.head),
            messages: Some(request.messages.clone()),
            tail: Arc::clone(tail),
        }
    }
}

fn write_entry(out: &mut Vec<u8>, first: &mut bool, key: &str, value: &Value) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    write_json(out, &Value::String(key.to_string()));
    out.push(b':');
    write_json(out, value);
}

/// Writing a `Value` into memory cannot fail; `null` keeps the body valid JSON if it did.
fn write_json(out: &mut Vec<u8>, value: &Value) {
    let len = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(len);
        out.extend_from_slice(b"null");
    }
}

/// A message as the request carries it: as the session keeps it. `reasoning_content` goes
/// only where the message has one (the agent gives a thinking provider's tool-call turns an
/// empty one), so a provider that never sent reasoning never sees the field.
pub(crate) fn message_json(message: &Message) -> Value {
    serde_json::to_value(message).unwrap_or(Value::Null)
}

/// FNV-1a: a fixed, dependency-free hash so synthetic tool-call ids are the same for the same
/// request on every machine and in every replay.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    fnv_continue(FNV_OFFSET, bytes)
}

/// About four bytes per token: only used when the server reports no usage.
pub(super) fn estimate_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    /// Text-only messages must encode exactly as they did before messages could carry
    /// images: a changed byte would miss every provider's prompt cache on the first request
    /// after an upgrade, and resumed session files are replayed as they were written.
    #[test]
    fn text_only_bodies_are_byte_identical_to_the_pre_image_encoding() {
        let settings = ProviderSettings {
            model: "m".into(),
            ..ProviderSettings::default()
        };
        let mut assistant = Message::assistant("");
        assistant.tool_calls.push(ToolCall::new("c1", "ls", "{}"));
        let mut named = Message::user("u \"q\" é");
        named.name = Some("n".into());
        let request = Request {
            messages: vec![
                Message::system("s"),
                named,
                assistant.clone(),
                Message::tool_result("c1", "x"),
            ]
            .into(),
            ..Request::default()
        };
        let expected = concat!(
            r#"{"messages":[{"content":"s","role":"system"},"#,
            r#"{"content":"u \"q\" é","name":"n","role":"user"},"#,
            // No `reasoning_content` here: it is sent only to a provider that sent some.
            r#"{"content":"","role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"ls"},"id":"c1","type":"function"}]},"#,
            r#"{"content":"x","role":"tool","tool_call_id":"c1"}],"#,
            r#""model":"m","stream":true,"stream_options":{"include_usage":true}}"#
        );
        assert_eq!(
            String::from_utf8_lossy(&write_request_body(&settings, &request).to_vec()),
            expected
        );
        // The session file's line for a message: the fields in declaration order.
        assert_eq!(
            serde_json::to_string(&assistant).unwrap(),
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}"#
        );
    }

    #[test]
    fn an_image_message_sends_content_parts_and_decodes_back_to_itself() {
        let settings = ProviderSettings {
            model: "m".into(),
            ..ProviderSettings::default()
        };
        let mut image = Message::user("look");
        image.images.push("data:image/png;base64,AAAA".into());
        let mut bare = Message::user("");
        bare.images.push("data:image/gif;base64,R0lG".into());
        let request = Request {
            messages: vec![Message::user("hi"), image.clone(), bare.clone()].into(),
            ..Request::default()
        };
        assert_assembled_matches(&settings, &request);
        let body: Value =
            serde_json::from_slice(&write_request_body(&settings, &request).to_vec()).unwrap();
        assert_eq!(body["messages"][0]["content"], "hi");
        assert_eq!(
            body["messages"][1]["content"],
            serde_json::json!([
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
            ])
        );
        assert_eq!(
            body["messages"][2]["content"],
            serde_json::json!([
                {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lG"}}
            ])
        );
        // The transcript decodes its bytes, and a session file its lines, to the same messages.
        assert_eq!(
            request.messages.messages(),
            &[Message::user("hi"), image.clone(), bare][..]
        );
        let line = serde_json::to_string(&image).unwrap();
        assert_eq!(serde_json::from_str::<Message>(&line).unwrap(), image);
    }

    #[test]
    fn body_is_byte_stable_and_carries_reasoning_content_only_where_the_message_has_it() {
        let settings = ProviderSettings {
            model: "m".into(),
            extra_body: serde_json::from_str(r#"{"tool_choice":"auto","temperature":0.1}"#)
                .unwrap(),
            ..ProviderSettings::default()
        };
        let mut assistant = Message::assistant("");
        assistant.tool_calls.push(ToolCall::new("c1", "ls", "{}"));
        let mut thinking = assistant.clone();
        thinking.reasoning_content = Some(String::new());
        let request = Request {
            messages: vec![
                Message::user("hi"),
                thinking,
                Message::tool_result("c1", "x"),
                assistant,
                Message::tool_result("c1", "y"),
            ]
            .into(),
            temperature: Some(0.7),
            max_tokens: Some(64),
            reasoning_effort: Some("high".into()),
            ..Request::default()
        };
        let a = serde_json::to_vec(&request_body(&settings, &request)).unwrap();
        let b = serde_json::to_vec(&request_body(&settings, &request)).unwrap();
        assert_eq!(a, b);
        let body: Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(body["messages"][1]["reasoning_content"], "");
        assert_eq!(body["messages"][1]["content"], "");
        assert!(body["messages"][0].get("reasoning_content").is_none());
        assert!(
            body["messages"][3].get("reasoning_content").is_none(),
            "a tool-call turn without reasoning gets none"
        );
        assert!(body.get("tools").is_none());
        // extra_body wins over our own keys.
        assert_eq!(body["temperature"], 0.1);
        assert_eq!(body["tool_choice"], "auto");
        assert_eq!(body["max_tokens"], 64);
    }

    /// The body assembled from cached bytes, and its rolling hash, against the from-scratch
    /// serialisation.
    fn assert_assembled_matches(settings: &ProviderSettings, request: &Request) {
        let body = write_request_body(settings, request);
        let scratch = serde_json::to_vec(&request_body(settings, request)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&body.to_vec()),
            String::from_utf8_lossy(&scratch)
        );
        assert_eq!(body.len(), scratch.len());
        assert_eq!(body.hash, stable_hash(&scratch));
    }

    #[test]
    fn assembled_body_equals_the_scratch_body_after_appends_rewrites_and_a_resume() {
        let mut settings = ProviderSettings {
            model: "m".into(),
            extra_body: serde_json::from_str(r#"{"a_first":1,"top_p":0.5}"#).unwrap(),
            ..ProviderSettings::default()
        };
        let mut request = Request {
            tools: vec![crate::provider::ToolSchema {
                name: "ls".into(),
                description: "List \"files\"\n".into(),
                parameters: serde_json::json!({"type": "object", "properties": {}}),
            }]
            .into(),
            max_tokens: Some(99),
            temperature: Some(0.25),
            ..Request::default()
        };
        // Empty history, then appends of every shape.
        assert_assembled_matches(&settings, &request);
        let mut history = vec![
            Message::system("sys é \u{1F600} \"q\""),
            Message::user("hi"),
        ];
        for message in history.clone() {
            request.messages.push(message);
            assert_assembled_matches(&settings, &request);
        }
        for round in 0..5 {
            let mut assistant = Message::assistant(format!("round {round}"));
            assistant
                .tool_calls
                .push(ToolCall::new(format!("c{round}"), "ls", "{}"));
            if round % 2 == 1 {
                assistant.reasoning_content = Some("thinking\tit over".into());
            }
            let result = Message::tool_result(format!("c{round}"), "x".repeat(round * 300));
            for message in [assistant, result] {
                history.push(message.clone());
                request.messages.push(message);
                assert_assembled_matches(&settings, &request);
            }
        }
        // A compaction rewrite in the middle: only the changed suffix is re-encoded.
        history[5].content = "[snipped]".into();
        history.remove(3);
        history.remove(2);
        request.messages.replace(history.clone());
        assert_eq!(request.messages.messages(), &history[..]);
        assert_assembled_matches(&settings, &request);
        // A resume: the same history loaded afresh.
        request.messages = history.clone().into();
        assert_assembled_matches(&settings, &request);
        // Settings that move the bytes before the messages re-seed the rolling hash.
        request.max_tokens = None;
        settings.extra_body.remove("a_first");
        assert_assembled_matches(&settings, &request);
        // extra_body may replace the messages outright.
        settings
            .extra_body
            .insert("messages".into(), serde_json::json!([]));
        assert_assembled_matches(&settings, &request);
    }

    #[test]
    fn a_body_writer_reuses_the_envelope_only_while_the_fields_it_was_made_from_hold() {
        let settings = ProviderSettings {
            model: "m".into(),
            ..ProviderSettings::default()
        };
        let writer = BodyWriter::default();
        let check = |request: &Request| {
            let reused = writer.write(&settings, request);
            let fresh = write_request_body(&settings, request);
            assert_eq!(
                String::from_utf8_lossy(&reused.to_vec()),
                String::from_utf8_lossy(&fresh.to_vec())
            );
            assert_eq!(reused.hash, fresh.hash);
        };
        let mut request = Request {
            messages: vec![Message::user("hi")].into(),
            ..Request::default()
        };
        check(&request);
        request.messages.push(Message::assistant("a"));
        check(&request);
        Arc::make_mut(&mut request.tools).push(ToolSchema {
            name: "ls".into(),
            description: "List".into(),
            parameters: serde_json::json!({"type": "object"}),
        });
        check(&request);
        Arc::make_mut(&mut request.tools)[0].description = "List files".into();
        check(&request);
        request.max_tokens = Some(5);
        check(&request);
        request.temperature = Some(0.5);
        check(&request);
        request.reasoning_effort = Some("high".into());
        check(&request);
        request.messages.push(Message::user("more"));
        check(&request);
    }
}
