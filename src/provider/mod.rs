//! The model-facing data types (messages, tool calls, requests, stream chunks, usage), the
//! `Provider` trait and the kind -> factory table.
//!
//! Wire details live in the submodules: `sse` decodes event streams, `openai` speaks the
//! OpenAI-compatible `/chat/completions` dialect, `retry`, `net` and `proxy` hold backoff,
//! transport setup and proxy selection. Nothing here prints; errors flow up as [`ProviderError`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cancel::CancelToken;

pub mod net;
pub mod openai;
pub mod proxy;
pub mod record;
pub mod replay;
pub mod retry;
pub mod sse;
pub mod transcript;

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    /// Always sent, `""` when empty: some servers reject a tool-call message whose content is
    /// null or missing.
    #[serde(default)]
    pub content: String,
    /// DeepSeek thinking mode requires it back on every assistant turn that carries tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Message {
    fn plain(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
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
    pub tools: Vec<ToolSchema>,
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
    pub prices: Option<Prices>,
    pub ca_file: Option<PathBuf>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    /// For the `replay` kind: the recording to serve.
    pub replay_file: Option<PathBuf>,
    /// `reasonix run --record FILE`: append every exchange (request body, raw reply) here.
    pub record_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    pub connect: Duration,
    /// No byte for this long on an open stream aborts it.
    pub idle_stream: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(30),
            idle_stream: Duration::from_secs(300),
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
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 10,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(15),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

pub trait Provider: Send + Sync {
    /// The instance name, e.g. "deepseek".
    fn name(&self) -> &str;
    fn model(&self) -> &str;
    /// Starts one streamed completion. Errors before the first byte of the body (after any
    /// retries) are returned here; later ones arrive through the stream.
    fn stream(&self, request: &Request, cancel: &CancelToken)
        -> Result<ChunkStream, ProviderError>;
}

#[derive(Debug)]
pub enum ProviderError {
    /// 401/403: the key is missing or wrong.
    Auth {
        status: u16,
        api_key_env: String,
        message: String,
    },
    /// Any other HTTP error status, after retries when it was retryable.
    Http {
        status: u16,
        message: String,
    },
    /// Connection, DNS or TLS failure, after retries.
    Connect(String),
    /// The stream broke: cut off, malformed, idle for too long.
    Stream(String),
    /// The stream ended properly but carried neither text nor a tool call, after retries.
    EmptyReply {
        finish_reason: Option<String>,
    },
    Cancelled,
    /// Misconfiguration detected while building the provider.
    Config(String),
    /// The replay provider received a request that differs from the recording.
    ReplayDiverged(String),
    /// `--record`: the recording file could not be written.
    Record(String),
    /// A non-streaming endpoint (the models list) answered with something unexpected.
    BadResponse(String),
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
            ProviderError::Http { status, message } => {
                write!(f, "provider: HTTP {status}: {message}")
            }
            ProviderError::Connect(detail) => write!(f, "provider: cannot connect: {detail}"),
            ProviderError::Stream(detail) => write!(f, "provider: stream failed: {detail}"),
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

impl std::error::Error for ProviderError {}

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
        None => Err(ProviderError::Config(format!(
            "unknown provider kind `{}` for `{}`; known kinds: {}",
            settings.kind,
            settings.name,
            kinds().collect::<Vec<_>>().join(", ")
        ))),
    }
}
