//! The model-facing data types (messages, tool calls, requests, stream chunks, usage), the
//! `Provider` trait and the kind -> factory table.
//!
//! Wire details live in the submodules: `sse` decodes event streams, `openai` speaks the
//! OpenAI-compatible `/chat/completions` dialect, `retry`, `net` and `proxy` hold backoff,
//! transport setup and proxy selection. Nothing here prints: errors flow up as
//! [`ProviderError`] and retries are reported to the caller's `on_retry` as [`Retry`]s.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cancel::CancelToken;

mod conn;
pub mod limits;
pub mod net;
pub mod openai;
pub mod record;
pub mod replay;
pub mod retry;
mod roots;
pub mod sse;
pub mod transcript;

pub use retry::Retry;
pub use transcript::Transcript;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One chat message, serialised exactly as the OpenAI wire format expects it, so the same
/// bytes serve the request body and the session file.
///
/// A message with `images` sends its content as an array of parts (the text, then one
/// `image_url` part per image); every other message keeps `content` a plain string, so
/// text-only bodies and session files are byte-for-byte what they were before images existed.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "WireMessage")]
pub struct Message {
    pub role: Role,
    /// Always sent, `""` when empty: some servers reject a tool-call message whose content is
    /// null or missing.
    pub content: String,
    /// `data:` URLs of images shown to the model after `content` (`view_image`); only user
    /// messages carry them, since providers reject non-text parts in tool results.
    pub images: Vec<String>,
    /// DeepSeek thinking mode requires it back on every assistant turn that carries tool calls.
    pub reasoning_content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: Option<String>,
    pub name: Option<String>,
}

/// The wire form a [`Message`] is read from: `content` is a string or an array of parts.
#[derive(Deserialize)]
struct WireMessage {
    role: Role,
    #[serde(default)]
    content: Content,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

/// One content part in the OpenAI shape.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize, Deserialize)]
struct ImageUrl {
    url: String,
}

impl From<WireMessage> for Message {
    fn from(wire: WireMessage) -> Message {
        let (content, images) = match wire.content {
            Content::Text(text) => (text, Vec::new()),
            Content::Parts(parts) => {
                let mut text = String::new();
                let mut images = Vec::new();
                for part in parts {
                    match part {
                        Part::Text { text: t } => text.push_str(&t),
                        Part::ImageUrl { image_url } => images.push(image_url.url),
                    }
                }
                (text, images)
            }
        };
        Message {
            role: wire.role,
            content,
            images,
            reasoning_content: wire.reasoning_content,
            tool_calls: wire.tool_calls,
            tool_call_id: wire.tool_call_id,
            name: wire.name,
        }
    }
}

/// Borrowed content parts, so serialising a message with images copies nothing.
struct Parts<'a>(&'a Message);

impl Serialize for Parts<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum PartRef<'a> {
            Text { text: &'a str },
            ImageUrl { image_url: UrlRef<'a> },
        }
        #[derive(Serialize)]
        struct UrlRef<'a> {
            url: &'a str,
        }
        let message = self.0;
        let mut seq = serializer.serialize_seq(None)?;
        if !message.content.is_empty() {
            seq.serialize_element(&PartRef::Text {
                text: &message.content,
            })?;
        }
        for url in &message.images {
            seq.serialize_element(&PartRef::ImageUrl {
                image_url: UrlRef { url },
            })?;
        }
        seq.end()
    }
}

impl Serialize for Message {
    /// The fields in declaration order, optional ones skipped when empty: exactly what the
    /// derived form wrote before `images` existed.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("Message", 6)?;
        out.serialize_field("role", &self.role)?;
        if self.images.is_empty() {
            out.serialize_field("content", &self.content)?;
        } else {
            out.serialize_field("content", &Parts(self))?;
        }
        if let Some(reasoning) = &self.reasoning_content {
            out.serialize_field("reasoning_content", reasoning)?;
        }
        if !self.tool_calls.is_empty() {
            out.serialize_field("tool_calls", &self.tool_calls)?;
        }
        if let Some(id) = &self.tool_call_id {
            out.serialize_field("tool_call_id", id)?;
        }
        if let Some(name) = &self.name {
            out.serialize_field("name", name)?;
        }
        out.end()
    }
}

impl Role {
    /// The name it is serialised as.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

impl Message {
    fn plain(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            images: Vec::new(),
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content)
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::plain(Role::Assistant, content)
    }

    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(call_id.into()),
            ..Self::plain(Role::Tool, content)
        }
    }
}

/// A complete tool call in wire shape: `{"id", "type": "function", "function": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    pub function: FunctionCall,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// Raw JSON text exactly as the model produced it.
    #[serde(default)]
    pub arguments: String,
}

fn function_kind() -> String {
    "function".to_string()
}

impl ToolCall {
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            kind: function_kind(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }

    pub fn name(&self) -> &str {
        &self.function.name
    }

    pub fn arguments(&self) -> &str {
        &self.function.arguments
    }
}

/// A tool as the model sees it. `parameters` is canonical JSON (sorted keys) so the request
/// prefix stays byte-stable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// Everything one model call needs besides the provider's own settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    /// Shared with the session, not copied: each message's JSON was encoded once, when it
    /// was added.
    pub messages: Transcript,
    /// Shared with the agent, which rebuilds the list only when its tools change.
    pub tools: Arc<Vec<ToolSchema>>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    pub reasoning_effort: Option<String>,
}

/// Token counts normalised across DeepSeek, OpenAI and local servers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Prompt tokens served from the provider's prefix cache.
    pub cache_hit_tokens: u64,
    pub cache_miss_tokens: u64,
    pub reasoning_tokens: u64,
    /// True when the server sent no usage and the numbers are our estimate.
    #[serde(default)]
    pub estimated: bool,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cache_hit_tokens += other.cache_hit_tokens;
        self.cache_miss_tokens += other.cache_miss_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.estimated |= other.estimated;
    }

    /// Fraction of prompt tokens that hit the cache, if the provider reported any prompt.
    pub fn cache_hit_ratio(&self) -> Option<f64> {
        (self.prompt_tokens > 0).then(|| self.cache_hit_tokens as f64 / self.prompt_tokens as f64)
    }
}

/// USD per one million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    pub input: f64,
    #[serde(default)]
    pub input_cache_hit: Option<f64>,
    pub output: f64,
}

impl Prices {
    pub fn cost(&self, usage: &Usage) -> f64 {
        let hit_price = self.input_cache_hit.unwrap_or(self.input);
        let miss = usage.prompt_tokens.saturating_sub(usage.cache_hit_tokens);
        (miss as f64 * self.input
            + usage.cache_hit_tokens as f64 * hit_price
            + usage.completion_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// One piece of a streamed reply. Tool calls arrive only when complete.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    Text(String),
    Reasoning(String),
    ToolCall(ToolCall),
    Usage(Usage),
    /// The stream finished properly; carries the server's `finish_reason`.
    Done {
        finish_reason: String,
    },
}

pub type ChunkStream = Box<dyn Iterator<Item = Result<Chunk, ProviderError>> + Send>;

/// How to reach one model, resolved from config, environment and flags.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderSettings {
    /// Instance name from `[[providers]] name`.
    pub name: String,
    pub kind: String,
    pub model: String,
    pub base_url: String,
    pub chat_url: Option<String>,
    pub models_url: Option<String>,
    pub api_key_env: String,
    /// `None` when neither the environment nor `<home>/.env` had the key.
    pub api_key: Option<String>,
    pub headers: BTreeMap<String, String>,
    /// Merged into the top level of every request body.
    pub extra_body: serde_json::Map<String, serde_json::Value>,
    /// 0 disables compaction.
    pub context_window: u64,
    /// The model accepts image content parts (`vision = true` in its provider entry).
    pub vision: bool,
    pub prices: Option<Prices>,
    pub ca_file: Option<PathBuf>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    /// For the `replay` kind: the recording to serve.
    pub replay_file: Option<PathBuf>,
    /// `reasonix run --record FILE`: append every exchange (request body, raw reply) here.
    pub record_file: Option<PathBuf>,
}

/// How long a model exchange may take, by phase (`[providers.timeouts]`; each saturates at a
/// day, see `limits`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    pub connect: Duration,
    /// No byte for this long on an open stream aborts it.
    pub idle_stream: Duration,
    /// The response head must be whole this long after the request went out, however
    /// slowly its bytes come.
    pub head: Duration,
    /// The whole reply, from the request to its last byte, however steadily bytes come.
    pub reply: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(30),
            idle_stream: Duration::from_secs(120),
            head: Duration::from_secs(300),
            reply: Duration::from_secs(30 * 60),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// Upper bound on a server's `Retry-After`.
    pub max_retry_after: Duration,
    /// The waits of one request's retries together stay under this (a server's
    /// `Retry-After` on a 429 is honoured besides it, each wait up to `max_retry_after`).
    pub max_total_wait: Duration,
    /// Give up after this many attempts in a row that the server answered overloaded (529 or
    /// 503), whatever retries are left: with `--fallback-model` the fallback takes over then,
    /// as Claude Code's does after three. `None`: only the limits above.
    pub overloaded_attempts: Option<u32>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 10,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            max_total_wait: Duration::from_secs(20),
            overloaded_attempts: None,
        }
    }
}

pub trait Provider: Send + Sync {
    /// The instance name, e.g. "deepseek".
    fn name(&self) -> &str;
    fn model(&self) -> &str;
    /// Whether the model accepts image content parts (`vision = true`); `view_image` refuses
    /// otherwise, since a text-only server rejects the whole request.
    fn vision(&self) -> bool {
        false
    }
    /// Starts one streamed completion and returns once the reply produced its first chunk.
    /// Errors before that (after any retries) are returned here; later ones arrive through
    /// the stream. Each retry is reported to `on_retry`, on this thread and before its wait:
    /// the provider never prints.
    fn stream(
        &self,
        request: &Request,
        cancel: &CancelToken,
        on_retry: &mut dyn FnMut(&Retry),
    ) -> Result<ChunkStream, ProviderError>;
}

/// The error underneath a provider error, kept for [`std::error::Error::source`].
#[derive(Debug)]
pub enum Cause {
    Io(std::io::Error),
    Transport(ureq::Error),
    Json(serde_json::Error),
}

impl Cause {
    fn as_error(&self) -> &(dyn std::error::Error + 'static) {
        match self {
            Cause::Io(err) => err,
            Cause::Transport(err) => err,
            Cause::Json(err) => err,
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_error(), f)
    }
}

impl From<std::io::Error> for Cause {
    fn from(err: std::io::Error) -> Self {
        Cause::Io(err)
    }
}

impl From<ureq::Error> for Cause {
    fn from(err: ureq::Error) -> Self {
        Cause::Transport(err)
    }
}

impl From<serde_json::Error> for Cause {
    fn from(err: serde_json::Error) -> Self {
        Cause::Json(err)
    }
}

/// A message for the user and, when a lower-level error caused it, that error.
#[derive(Debug)]
pub struct Detail {
    pub text: String,
    /// Boxed: errors travel in `Result`s and over channels, and most have no cause.
    pub cause: Option<Box<Cause>>,
}

impl Detail {
    pub fn caused(text: impl Into<String>, cause: impl Into<Cause>) -> Detail {
        Detail {
            text: text.into(),
            cause: Some(Box::new(cause.into())),
        }
    }
}

impl From<String> for Detail {
    fn from(text: String) -> Self {
        Detail { text, cause: None }
    }
}

impl From<&str> for Detail {
    fn from(text: &str) -> Self {
        Detail::from(text.to_string())
    }
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[derive(Debug)]
pub enum ProviderError {
    /// 401/403: the key is missing or wrong.
    Auth {
        status: u16,
        api_key_env: String,
        message: String,
    },
    /// The endpoint needs a key and none was found; nothing was sent.
    MissingKey {
        provider: String,
        /// Empty when the provider names no `api_key_env`.
        api_key_env: String,
    },
    /// Any other HTTP error status, after retries when it was retryable.
    Http {
        status: u16,
        message: String,
    },
    /// Connection, DNS or TLS failure, after retries.
    Connect(Detail),
    /// The connection was made and the request sent, then it broke before the reply began
    /// (reset, closed, timed out waiting), after retries: the server is there, so it is not a
    /// failure to connect.
    Dropped(Detail),
    /// Refused or not resolvable on first contact, after the quick retries: the server is
    /// not running or the address is wrong, and waiting out the backoff would not help.
    Unreachable {
        url: String,
        provider: String,
        attempts: u32,
        /// The proxy that refused, as `HTTPS_PROXY=http://host:port`, when one was in the way.
        via: Option<String>,
        source: Box<ureq::Error>,
    },
    /// The server's reply could not be read: not HTTP/1.1, a head too large, compressed
    /// although the request asked for none.
    Reply(Detail),
    /// The stream broke: cut off, malformed, idle for too long.
    Stream(Detail),
    /// The stream ended properly but carried neither text nor a tool call, after retries.
    EmptyReply {
        finish_reason: Option<String>,
    },
    Cancelled,
    /// Misconfiguration detected while building the provider.
    Config(Detail),
    /// The replay provider received a request that differs from the recording.
    ReplayDiverged(String),
    /// `--record`: the recording file could not be written.
    Record(Detail),
    /// A non-streaming endpoint (the models list) answered with something unexpected.
    BadResponse(String),
}

impl ProviderError {
    /// What a connection failure says after "cannot connect", for the message and for a
    /// recording, which replays it as [`ProviderError::Connect`]; `None` for other errors.
    pub fn connect_detail(&self) -> Option<String> {
        match self {
            ProviderError::Connect(detail) => Some(detail.text.clone()),
            ProviderError::Unreachable {
                url,
                provider,
                attempts,
                via,
                source,
            } => {
                let tries = match attempts {
                    1 => "1 attempt".to_string(),
                    n => format!("{n} attempts"),
                };
                let name_error = net::is_name_error(source);
                Some(match via {
                    Some(via) if name_error => format!(
                        "{url}: the proxy host of {via} does not resolve ({tries}); fix the variable or list the host in NO_PROXY"
                    ),
                    Some(via) => format!(
                        "{url}: {via} refused the connection ({tries}); is the proxy running? (NO_PROXY lists hosts reached directly)"
                    ),
                    None => match name_error {
                    true => format!(
                        "{url}: the host name does not resolve ({tries}); check base_url of provider `{provider}`"
                    ),
                    false => format!(
                        "{url}: connection refused ({tries}); is the server running? check base_url of provider `{provider}`"
                    ),
                    },
                })
            }
            _ => None,
        }
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProviderError::Auth {
                status,
                api_key_env,
                message,
            } => write!(
                f,
                "provider: authentication failed (HTTP {status}): {message}; check the key in ${api_key_env}"
            ),
            ProviderError::MissingKey {
                provider,
                api_key_env,
            } if api_key_env.is_empty() => write!(
                f,
                "provider: no API key for provider `{provider}`: set api_key_env in its [[providers]] entry, or run `reasonix setup --api-key-stdin`"
            ),
            ProviderError::MissingKey {
                provider,
                api_key_env,
            } => write!(
                f,
                "provider: no API key for provider `{provider}`: set ${api_key_env} or run `reasonix setup --api-key-stdin`"
            ),
            ProviderError::Http { status, message } => {
                write!(f, "provider: HTTP {status}: {message}")
            }
            ProviderError::Connect(detail) => write!(f, "provider: cannot connect: {detail}"),
            ProviderError::Dropped(detail) => write!(
                f,
                "provider: the connection dropped before the reply: {detail}"
            ),
            ProviderError::Unreachable { .. } => {
                let detail = self.connect_detail().unwrap_or_default();
                write!(f, "provider: cannot connect to {detail}")
            }
            ProviderError::Stream(detail) => write!(f, "provider: stream failed: {detail}"),
            ProviderError::Reply(detail) => write!(f, "provider: {detail}"),
            ProviderError::EmptyReply { finish_reason } => {
                write!(f, "provider: the model sent an empty reply (no text and no tool call")?;
                if let Some(reason) = finish_reason {
                    write!(f, ", finish_reason `{reason}`")?;
                }
                write!(f, ")")
            }
            ProviderError::Cancelled => write!(f, "provider: request cancelled"),
            ProviderError::Config(detail) => write!(f, "provider: {detail}"),
            ProviderError::ReplayDiverged(detail) => write!(f, "replay: request diverged: {detail}"),
            ProviderError::Record(detail) => write!(f, "provider: {detail}"),
            ProviderError::BadResponse(detail) => write!(f, "provider: unexpected reply: {detail}"),
        }
    }
}

impl std::error::Error for ProviderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProviderError::Connect(detail)
            | ProviderError::Dropped(detail)
            | ProviderError::Stream(detail)
            | ProviderError::Reply(detail)
            | ProviderError::Config(detail)
            | ProviderError::Record(detail) => detail.cause.as_deref().map(Cause::as_error),
            ProviderError::Unreachable { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

type Factory = fn(ProviderSettings) -> Result<Box<dyn Provider>, ProviderError>;

/// kind -> factory. Adding an OpenAI-compatible vendor is a config edit, not a row here.
const FACTORIES: &[(&str, Factory)] = &[("openai", openai::factory), ("replay", replay::factory)];

/// The provider kinds this build knows.
pub fn kinds() -> impl Iterator<Item = &'static str> {
    FACTORIES.iter().map(|(kind, _)| *kind)
}

pub fn build(settings: ProviderSettings) -> Result<Box<dyn Provider>, ProviderError> {
    match FACTORIES.iter().find(|(kind, _)| *kind == settings.kind) {
        Some((_, factory)) => factory(settings),
        None => Err(ProviderError::Config(
            format!(
                "unknown provider kind `{}` for `{}`; known kinds: {}",
                settings.kind,
                settings.name,
                kinds().collect::<Vec<_>>().join(", ")
            )
            .into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_missing_key_names_the_variable_or_the_config_key_and_setup() {
        let missing = |env: &str| ProviderError::MissingKey {
            provider: "deepseek".into(),
            api_key_env: env.into(),
        };
        assert_eq!(
            missing("DEEPSEEK_API_KEY").to_string(),
            "provider: no API key for provider `deepseek`: set $DEEPSEEK_API_KEY or run \
             `reasonix setup --api-key-stdin`"
        );
        assert_eq!(
            missing("").to_string(),
            "provider: no API key for provider `deepseek`: set api_key_env in its [[providers]] \
             entry, or run `reasonix setup --api-key-stdin`"
        );
    }

    #[test]
    fn wrapped_errors_are_the_source_and_bare_messages_have_none() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let err = ProviderError::Record(Detail::caused("cannot append to the recording x", io));
        assert_eq!(
            err.to_string(),
            "provider: cannot append to the recording x"
        );
        let source = err.source().expect("the io error");
        assert_eq!(source.to_string(), "no such file");
        assert!(source.downcast_ref::<std::io::Error>().is_some());

        let json = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        let err = ProviderError::Stream(Detail::caused("malformed JSON", json));
        assert_eq!(err.to_string(), "provider: stream failed: malformed JSON");
        assert!(err
            .source()
            .and_then(|s| s.downcast_ref::<serde_json::Error>())
            .is_some());

        let err = ProviderError::Connect("host: reset".into());
        assert_eq!(err.to_string(), "provider: cannot connect: host: reset");
        assert!(err.source().is_none());

        let err = ProviderError::Unreachable {
            url: "https://api.example.invalid/v1/models".into(),
            provider: "p".into(),
            attempts: 3,
            via: None,
            source: Box::new(ureq::Error::HostNotFound),
        };
        assert_eq!(
            err.to_string(),
            "provider: cannot connect to https://api.example.invalid/v1/models: the host name \
             does not resolve (3 attempts); check base_url of provider `p`"
        );
        assert!(err
            .source()
            .and_then(|s| s.downcast_ref::<ureq::Error>())
            .is_some());
    }
}
