//! The loop: build the request from the session, stream the reply, run the tools the model
//! asked for, append everything to the session, repeat until the model answers without tools.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::dispatch::{self, Prepared};
use super::events::{Event, EventSink, NoticeLevel};
use super::session::{Session, SessionError};
use crate::permission::{Gate, Verdict};
use crate::provider::{Chunk, Message, Prices, Provider, ProviderError, Request, ToolCall, Usage};
use crate::tool::{Registry, ToolContext, ToolError};

/// The same malformed call this many times in a row ends the run.
const MALFORMED_REPEAT_LIMIT: u32 = 3;

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Bound on tool rounds; `None` means unbounded.
    pub max_steps: Option<u32>,
    pub max_parallel_tools: usize,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    pub reasoning_effort: Option<String>,
    pub prices: Option<Prices>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// The model answered without asking for tools.
    Answered,
    /// `max_steps` tool rounds ran and the model wanted more.
    StepLimit,
}

#[derive(Debug)]
pub enum AgentError {
    Provider(ProviderError),
    Session(SessionError),
    Interrupted,
    RepeatedMalformedCall { tool: String, detail: String },
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::Provider(err) => write!(f, "{err}"),
            AgentError::Session(err) => write!(f, "{err}"),
            AgentError::Interrupted => write!(f, "agent: interrupted"),
            AgentError::RepeatedMalformedCall { tool, detail } => write!(
                f,
                "agent: the model sent the same malformed `{tool}` call {MALFORMED_REPEAT_LIMIT} times in a row ({detail}); stopping instead of looping"
            ),
        }
    }
}

impl std::error::Error for AgentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AgentError::Provider(err) => Some(err),
            AgentError::Session(err) => Some(err),
            _ => None,
        }
    }
}

impl From<SessionError> for AgentError {
    fn from(err: SessionError) -> Self {
        AgentError::Session(err)
    }
}

/// Running totals over the whole run, readable after success or failure.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Provider requests made.
    pub requests: u32,
    /// Tool rounds executed.
    pub tool_rounds: u32,
    pub usage: Usage,
    pub cost_usd: f64,
    /// Text of the last assistant message.
    pub final_text: String,
}

pub struct Agent {
    provider: Box<dyn Provider>,
    tools: Registry,
    gate: Box<dyn Gate>,
    session: Session,
    ctx: ToolContext,
    options: Options,
    stats: Stats,
    malformed: Option<(String, String, u32)>,
    warned_estimated_usage: bool,
}

/// What one assistant reply consisted of.
struct Reply {
    text: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    usage: Option<Usage>,
}

impl Agent {
    pub fn new(
        provider: Box<dyn Provider>,
        tools: Registry,
        gate: Box<dyn Gate>,
        session: Session,
        ctx: ToolContext,
        options: Options,
    ) -> Agent {
        Agent {
            provider,
            tools,
            gate,
            session,
            ctx,
            options,
            stats: Stats::default(),
            malformed: None,
            warned_estimated_usage: false,
        }
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    pub fn tools(&self) -> &Registry {
        &self.tools
    }

    pub fn provider(&self) -> &dyn Provider {
        self.provider.as_ref()
    }

    /// Between turns of a chat: installs a fresh cancel token (the previous turn's may be
    /// cancelled) and returns a handle that cancels the next turn.
    pub fn reset_cancel(&mut self) -> crate::cancel::CancelToken {
        self.ctx.cancel = crate::cancel::CancelToken::new();
        self.ctx.cancel.clone()
    }

    /// Switches the model between turns (`/model`); the session continues.
    pub fn set_provider(&mut self, provider: Box<dyn Provider>, prices: Option<Prices>) {
        self.provider = provider;
        self.options.prices = prices;
    }

    /// The request options, for changes between turns (`/effort`).
    pub fn options_mut(&mut self) -> &mut Options {
        &mut self.options
    }

    /// Continues in another session (`/new`, `/clear`, `/resume`); returns the old one.
    pub fn replace_session(&mut self, session: Session) -> Session {
        self.malformed = None;
        std::mem::replace(&mut self.session, session)
    }

    /// Sends `input` as a user turn and loops until the model answers without tools.
    pub fn run(&mut self, input: String, sink: &mut dyn EventSink) -> Result<Finish, AgentError> {
        self.session.push(Message::user(input))?;
        self.session.sync()?;
        let result = self.run_loop(sink);
        // Whatever happened, what was received is made durable.
        self.session.sync()?;
        result
    }

    fn run_loop(&mut self, sink: &mut dyn EventSink) -> Result<Finish, AgentError> {
        loop {
            if self.ctx.cancel.is_cancelled() {
                return Err(AgentError::Interrupted);
            }
            let reply = self.request(sink)?;
            let calls = reply.calls.clone();
            self.record_reply(reply)?;
            if calls.is_empty() {
                return Ok(Finish::Answered);
            }
            if self
                .options
                .max_steps
                .is_some_and(|max| self.stats.tool_rounds >= max)
            {
                let note = format!(
                    "not executed: the step limit (--max-steps {}) was reached",
                    self.stats.tool_rounds
                );
                for call in &calls {
                    self.session
                        .push(Message::tool_result(call.id.clone(), note.clone()))?;
                }
                return Ok(Finish::StepLimit);
            }
            self.stats.tool_rounds += 1;
            self.execute_round(&calls, sink)?;
            self.session.sync()?;
        }
    }

    fn build_request(&self) -> Request {
        Request {
            messages: self.session.messages().to_vec(),
            tools: self.tools.schemas(),
            temperature: self.options.temperature,
            max_tokens: self.options.max_tokens,
            reasoning_effort: self.options.reasoning_effort.clone(),
        }
    }

    /// One provider request, streamed into events. On interruption the partial text is kept.
    fn request(&mut self, sink: &mut dyn EventSink) -> Result<Reply, AgentError> {
        let request = self.build_request();
        self.stats.requests += 1;
        let mut reply = Reply {
            text: String::new(),
            reasoning: String::new(),
            calls: Vec::new(),
            usage: None,
        };
        let outcome = self.stream_into(&request, &mut reply, sink);
        match outcome {
            Ok(()) => {
                self.account_usage(&request, &reply, sink);
                Ok(reply)
            }
            Err(err) => {
                let interrupted =
                    matches!(err, ProviderError::Cancelled) || self.ctx.cancel.is_cancelled();
                if !reply.text.is_empty() {
                    // Keep what the user already saw; calls are dropped since none completed.
                    reply.calls.clear();
                    self.record_reply(reply)?;
                }
                Err(if interrupted {
                    AgentError::Interrupted
                } else {
                    AgentError::Provider(err)
                })
            }
        }
    }

    fn stream_into(
        &self,
        request: &Request,
        reply: &mut Reply,
        sink: &mut dyn EventSink,
    ) -> Result<(), ProviderError> {
        let stream = self.provider.stream(request, &self.ctx.cancel)?;
        for chunk in stream {
            match chunk? {
                Chunk::Text(text) => {
                    reply.text.push_str(&text);
                    sink.emit(Event::TextDelta(text));
                }
                Chunk::Reasoning(text) => {
                    reply.reasoning.push_str(&text);
                    sink.emit(Event::ReasoningDelta(text));
                }
                Chunk::ToolCall(call) => reply.calls.push(call),
                Chunk::Usage(usage) => reply.usage = Some(usage),
                Chunk::Done { .. } => {}
            }
        }
        Ok(())
    }

    fn account_usage(&mut self, request: &Request, reply: &Reply, sink: &mut dyn EventSink) {
        let usage = reply
            .usage
            .unwrap_or_else(|| estimate_usage(request, reply));
        if usage.estimated && !self.warned_estimated_usage {
            self.warned_estimated_usage = true;
            sink.emit(Event::Notice {
                level: NoticeLevel::Info,
                message: "the server reported no token usage; figures are estimates".into(),
            });
        }
        let cost = self.options.prices.map(|p| p.cost(&usage));
        self.stats.usage.add(&usage);
        self.stats.cost_usd += cost.unwrap_or(0.0);
        sink.emit(Event::Usage {
            usage,
            cost_usd: cost,
        });
    }

    fn record_reply(&mut self, reply: Reply) -> Result<(), AgentError> {
        self.stats.final_text = reply.text.clone();
        let mut message = Message::assistant(reply.text);
        message.reasoning_content = (!reply.reasoning.is_empty()).then_some(reply.reasoning);
        message.tool_calls = reply.calls;
        self.session.push(message)?;
        Ok(())
    }

    /// Validates, gates and runs one round of calls; every call gets exactly one result.
    fn execute_round(
        &mut self,
        calls: &[ToolCall],
        sink: &mut dyn EventSink,
    ) -> Result<(), AgentError> {
        let mut results: Vec<Option<(Result<String, ToolError>, u64)>> = vec![None; calls.len()];
        let mut runnable = Vec::new();
        let mut runnable_index = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            sink.emit(Event::ToolUse {
                id: call.id.clone(),
                name: call.name().to_string(),
                arguments: call.arguments().to_string(),
            });
            match self.prepare(call, sink) {
                Ok(prepared) => {
                    runnable.push(prepared);
                    runnable_index.push(i);
                }
                Err(err) => results[i] = Some((Err(err), 0)),
            }
        }
        let max_parallel = self.options.max_parallel_tools.max(1);
        let outcomes = dispatch::run_round(&runnable, &self.ctx, max_parallel);
        for (i, outcome) in runnable_index.into_iter().zip(outcomes) {
            results[i] = Some((outcome.result, outcome.duration_ms));
        }
        let mut repeated: Option<AgentError> = None;
        for (call, result) in calls.iter().zip(results) {
            let (result, duration_ms) = result.unwrap_or((Err(ToolError::Cancelled), 0));
            if let Some(err) = self.track_malformed(call, &result) {
                repeated.get_or_insert(err);
            }
            let (output, is_error) = match &result {
                Ok(text) => (text.clone(), false),
                Err(err) => (format!("error: {err}"), true),
            };
            sink.emit(Event::ToolResult {
                id: call.id.clone(),
                name: call.name().to_string(),
                output: output.clone(),
                is_error,
                duration_ms,
            });
            self.session
                .push(Message::tool_result(call.id.clone(), output))?;
        }
        if self.ctx.cancel.is_cancelled() {
            return Err(AgentError::Interrupted);
        }
        match repeated {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    fn prepare(&self, call: &ToolCall, sink: &mut dyn EventSink) -> Result<Prepared, ToolError> {
        let tool = self.tools.get(call.name()).ok_or_else(|| {
            ToolError::InvalidArgs(format!(
                "unknown tool `{}`; available tools: {}",
                call.name(),
                self.tools.names().join(", ")
            ))
        })?;
        let raw = call.arguments().trim();
        let args: Value = if raw.is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_str(raw).map_err(|e| {
                ToolError::InvalidArgs(format!(
                    "arguments are not valid JSON ({e}); send one JSON object"
                ))
            })?
        };
        if !args.is_object() {
            return Err(ToolError::InvalidArgs(
                "arguments must be a JSON object".into(),
            ));
        }
        let verdict = self.gate.check(call.name(), tool.read_only(), &args);
        report_verdict(call.name(), &verdict, sink);
        if !verdict.allowed {
            let message = verdict
                .message
                .unwrap_or_else(|| "blocked by the permission policy".into());
            return Err(ToolError::Failed(message));
        }
        Ok(Prepared {
            tool: Arc::clone(tool),
            args,
        })
    }

    /// Counts identical malformed calls in a row; any other call resets the count.
    fn track_malformed(
        &mut self,
        call: &ToolCall,
        result: &Result<String, ToolError>,
    ) -> Option<AgentError> {
        let Err(ToolError::InvalidArgs(detail)) = result else {
            self.malformed = None;
            return None;
        };
        let key = (call.name().to_string(), call.arguments().to_string());
        let count = match &self.malformed {
            Some((name, args, n)) if (name, args) == (&key.0, &key.1) => n + 1,
            _ => 1,
        };
        self.malformed = Some((key.0.clone(), key.1, count));
        (count >= MALFORMED_REPEAT_LIMIT).then(|| AgentError::RepeatedMalformedCall {
            tool: key.0,
            detail: detail.clone(),
        })
    }
}

/// Every decision that was not a plain allow goes into the event stream.
fn report_verdict(tool: &str, verdict: &Verdict, sink: &mut dyn EventSink) {
    if verdict.is_reportable() {
        sink.emit(Event::Permission {
            tool: tool.to_string(),
            subject: verdict.subject.clone(),
            decision: verdict.decision.as_str().to_string(),
            resolution: verdict.resolution.as_str().to_string(),
            allowed: verdict.allowed,
            rule: verdict.rule.clone(),
            posture: verdict.posture.map_or("none", |p| p.as_str()).to_string(),
        });
    }
    if let Some(warning) = &verdict.warning {
        sink.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message: warning.clone(),
        });
    }
}

/// A rough count for servers that report no usage: about four bytes per token.
fn estimate_usage(request: &Request, reply: &Reply) -> Usage {
    let prompt_bytes: usize = request
        .messages
        .iter()
        .map(|m| m.content.len() + m.reasoning_content.as_ref().map_or(0, String::len))
        .sum::<usize>()
        + request
            .tools
            .iter()
            .map(|t| t.description.len() + t.parameters.to_string().len())
            .sum::<usize>();
    let completion_bytes = reply.text.len()
        + reply.reasoning.len()
        + reply
            .calls
            .iter()
            .map(|c| c.arguments().len())
            .sum::<usize>();
    Usage {
        prompt_tokens: (prompt_bytes / 4) as u64,
        completion_tokens: (completion_bytes / 4) as u64,
        estimated: true,
        ..Usage::default()
    }
}
