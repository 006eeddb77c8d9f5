//! The loop: build the request from the session, stream the reply, run the tools the model
//! asked for, append everything to the session, repeat until the model answers without tools.
//! Before each request the tool list is refreshed from its [`ToolSource`] (MCP servers that
//! announced new tools) and the context is measured and, near the window, maintained (see
//! `compaction`): the only two places the request prefix changes.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use super::compaction::{self, ContextOptions, Fold, Limits, Plan, Shorten, Tier, Trigger};
use super::dispatch::{self, Prepared};
use super::events::{Event, EventSink, NoticeLevel, PrefixChange};
use super::fallback::{self, Fallback};
use super::hooks::{HookEvent, Hooks};
use super::live::EventQueue;
use super::plan::{PlanSettings, Planner};
use super::progress::{self, Lease, LoopGuard, Repetition, Standing};
use super::waiting::{self, Watch};

#[path = "hook_points.rs"]
mod hook_points;
use super::round_caps::{self, McpCalls, RoundCaps};
use super::session::{Session, SessionError};
use super::snapshots::Recorder;
use super::tokens::{self, Meter};
use crate::cancel::CancelToken;
use crate::permission::{guardian, CallContext, Gate, ReviewSpend, Verdict};
use crate::provider::{
    Chunk, Message, Prices, Provider, ProviderError, Request, Role, ToolCall, ToolSchema, Usage,
};
use crate::tool::builtin::ask;
use crate::tool::builtin::todo::TodoItem;
use crate::tool::builtin::view_image::RequestImages;
use crate::tool::collab::{Interact, Workflow};
use crate::tool::{Family, Registry, Tool, ToolContext, ToolError};

/// The same malformed call this many times in a row ends the run.
const MALFORMED_REPEAT_LIMIT: u32 = 3;

/// The `finish_reason` of a reply the output token limit cut short.
const CUT_BY_LENGTH: &str = "length";

/// The result a cut tool call gets instead of running: its arguments may parse and still be
/// missing their end (half a file's content), so it is malformed whatever they look like.
const CUT_CALL: &str = "this call was cut off at the output token limit (finish_reason \
`length`), so its arguments are incomplete and it was not run; send it again, smaller (for \
example, write a long file in several parts)";

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Bound on tool rounds; `None` means unbounded.
    pub max_steps: Option<u32>,
    pub max_parallel_tools: usize,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    pub reasoning_effort: Option<String>,
    pub prices: Option<Prices>,
    /// Context window and compaction thresholds; the default (window 0) disables maintenance.
    pub context: ContextOptions,
    /// Auto-plan and the legacy plan-mode trust list.
    pub plan: PlanSettings,
    /// What the run may spend on the model (`run --max-tokens-total`, `--max-budget-usd`).
    pub budget: Budget,
    /// When a silent request says it is waiting, and the idle limit it names.
    pub watch: Watch,
    /// What one round may multiply: MCP calls, and the image bytes a request carries.
    pub caps: RoundCaps,
    /// `--fallback-model`: the model a turn goes on with when this one is overloaded.
    pub fallback: Option<Fallback>,
}

/// Limits on what a run spends on the model, checked after each reply: the reply that
/// crosses one is the last (its tool calls are not run). `None`: no limit. Clones share what
/// was spent, so a planner, an executor and their subagents draw on one budget.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// Prompt plus completion tokens over every request.
    pub max_tokens_total: Option<u64>,
    /// Cost in US dollars by the model's prices.
    pub max_cost_usd: Option<f64>,
    /// Tokens and dollars spent so far by every agent holding a clone.
    spent: Arc<Mutex<(u64, f64)>>,
}

/// Which budget a run used up, with the limit and what was spent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spent {
    Tokens { limit: u64, used: u64 },
    Cost { limit: f64, used: f64 },
}

impl Budget {
    /// Counts one request's usage and cost.
    fn record(&self, usage: &Usage, cost: Option<f64>) {
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        spent.0 = spent
            .0
            .saturating_add(usage.prompt_tokens.saturating_add(usage.completion_tokens));
        spent.1 += cost.unwrap_or(0.0);
    }

    /// The first limit reached, if any.
    pub fn spent(&self) -> Option<Spent> {
        let (tokens, cost) = *self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(limit) = self.max_tokens_total.filter(|&limit| tokens >= limit) {
            return Some(Spent::Tokens {
                limit,
                used: tokens,
            });
        }
        self.max_cost_usd
            .filter(|&limit| cost >= limit)
            .map(|limit| Spent::Cost { limit, used: cost })
    }
}

impl fmt::Display for Spent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spent::Tokens { limit, used } => write!(
                f,
                "the token budget (--max-tokens-total {limit}) was reached: {used} tokens used"
            ),
            Spent::Cost { limit, used } => write!(
                f,
                "the cost budget (--max-budget-usd {limit}) was reached: ${used:.4} spent"
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// The model answered without asking for tools.
    Answered,
    /// `max_steps` tool rounds ran and the model wanted more.
    StepLimit,
    /// Planning ended with this plan and no one could review it (headless `run --plan`).
    Plan(String),
    /// The progress lease ran out: rounds went by with a todo active and nothing new done.
    NoProgress,
    /// A budget of [`Options::budget`] was used up.
    Budget(Spent),
}

#[derive(Debug)]
pub enum AgentError {
    Provider(ProviderError),
    Session(SessionError),
    Interrupted,
    RepeatedMalformedCall {
        tool: String,
        detail: String,
    },
    /// A round repeated an earlier one (same calls, same results) after the model was told it
    /// was repeating itself; the calls, shown.
    Loop(String),
    /// A `UserPromptSubmit` hook blocked the message, with its reason.
    HookBlocked(String),
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::Provider(err) => write!(f, "{err}"),
            AgentError::Session(err) => write!(f, "{err}"),
            AgentError::Interrupted => write!(f, "agent: interrupted"),
            AgentError::HookBlocked(reason) => {
                write!(f, "hooks: the message was not sent: {reason}")
            }
            AgentError::Loop(calls) => write!(
                f,
                "agent: the model repeated the same tool calls with the same results after being told it was repeating itself ({calls}); stopping instead of looping"
            ),
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

/// Where the agent's changing tools come from; they live with the tools (below `mcp`).
use crate::tool::source::ToolSource;

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
    /// Summary requests made by compaction (not counted in `requests`; their usage is).
    pub summary_requests: u32,
    /// Maintenance rewrites of the history (snip, prune or fold), each a cache reset.
    pub compactions: u32,
    /// Prompt tokens of the last request, as measured before sending it.
    pub context_tokens: u64,
    /// The provider's `finish_reason` for the last reply (`length`: cut at the output token
    /// limit); `None` before the first reply.
    pub finish_reason: Option<String>,
    /// The Guardian reviewer's answered requests for this agent's calls (in none of the
    /// figures above).
    pub reviews: ReviewerStats,
    /// Each model's share of the answered requests, `usage` and `cost_usd`, in the order the
    /// models first served: the session's model changes between turns (`/model`, the SDK's
    /// `set_model`) and a turn may go on with the fallback model.
    pub by_model: Vec<ModelSpend>,
}

/// What one model served of an agent's answered requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelSpend {
    pub model: String,
    /// Served as `--fallback-model`.
    pub fallback: bool,
    pub requests: u32,
    pub usage: Usage,
    pub cost_usd: f64,
}

/// What the Guardian reviewer spent on one agent's calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewerStats {
    /// The reviewer's model; empty before the first review.
    pub model: String,
    pub requests: u32,
    pub usage: Usage,
    pub cost_usd: f64,
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
    /// The provider has sent reasoning (in this run or in the history): its tool-call turns
    /// then carry `reasoning_content`, empty when a reply had none, as DeepSeek's thinking
    /// mode requires. Set when learned and never cleared, so no message already sent changes.
    reasoning_echo: bool,
    warned_estimated_usage: bool,
    meter: Meter,
    /// The one "context half full" notice of a run was given.
    warned_half_full: bool,
    /// Estimated tokens of the tool definitions, part of every request.
    tools_tokens: u64,
    /// The tools' schemas as every request sends them, rebuilt only when the tools change
    /// (cloning them per request cost a few allocations a round).
    schemas: Arc<Vec<ToolSchema>>,
    tool_source: Option<Box<dyn ToolSource>>,
    /// The turn's progress lease, renewed by new work while a todo is active.
    lease: Lease,
    /// The turn's watch for rounds that repeat earlier ones.
    loops: LoopGuard,
    /// The hooks this agent runs, whether `SessionStart` ran, and `Stop` blocks in a row.
    hooks: Hooks,
    /// Hook events from the gate's and the person's threads, emitted after each round.
    hook_events: Arc<EventQueue>,
    /// The session facts those threads' hook inputs carry, kept current by the agent.
    hook_runner_base: Arc<Mutex<super::hooks::Base>>,
    session_started: bool,
    stop_blocks: u32,
    /// The hook event fired when the model has answered: `Stop`, or `SubagentStop` in a child.
    stop_event: HookEvent,
    /// Plan mode's hooks at the start and end of a turn, before the gate and after a round.
    planner: Planner,
    /// This turn switched to [`Options::fallback`]; the next turn starts on the primary again.
    on_fallback: bool,
}

/// What one assistant reply consisted of.
struct Reply {
    text: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    usage: Option<Usage>,
    /// As the provider sent it; empty when the reply did not finish.
    finish_reason: String,
}

impl Agent {
    pub fn new(
        provider: Box<dyn Provider>,
        tools: Registry,
        gate: Box<dyn Gate>,
        session: Session,
        mut ctx: ToolContext,
        options: Options,
    ) -> Agent {
        let schemas = Arc::new(tools.schemas());
        let tools_tokens = tokens::estimate_tools(&schemas);
        // The walkers must hide what the gate's deny rules forbid readers to see.
        if let Some(denials) = gate.read_denials() {
            ctx.read_denials = Some(denials);
        }
        let planner = Planner::new(options.plan.clone());
        ctx.session_path = Some(session.path().to_path_buf());
        // A child agent shares its parent's context otherwise: its images are its own.
        ctx.images = Arc::default();
        let reasoning_echo = session.transcript().has_reasoning();
        Agent {
            provider,
            tools,
            gate,
            session,
            ctx,
            options,
            planner,
            stats: Stats::default(),
            malformed: None,
            reasoning_echo,
            warned_estimated_usage: false,
            meter: Meter::new(),
            warned_half_full: false,
            tools_tokens,
            schemas,
            tool_source: None,
            lease: Lease::default(),
            loops: LoopGuard::default(),
            hooks: Hooks::default(),
            hook_events: Arc::default(),
            hook_runner_base: Arc::default(),
            session_started: false,
            stop_blocks: 0,
            stop_event: HookEvent::Stop,
            on_fallback: false,
        }
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// See [`Session::record_mcp_contracts`].
    pub fn record_mcp_contracts(
        &mut self,
        contracts: std::collections::BTreeMap<String, String>,
    ) -> Result<(), crate::agent::session::SessionError> {
        self.session.record_mcp_contracts(contracts)
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Makes this agent a subagent for its hooks: `SubagentStop` fires where `Stop` would.
    pub fn set_stop_event(&mut self, event: HookEvent) {
        self.stop_event = event;
    }

    /// Where other threads and tools (the hooks of the gate, a finished subagent) leave
    /// events; the agent emits them after each round.
    pub fn event_queue(&self) -> Arc<EventQueue> {
        Arc::clone(&self.hook_events)
    }

    pub fn tools(&self) -> &Registry {
        &self.tools
    }

    /// The MCP tools this agent is offered now.
    fn mcp_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools
            .names()
            .iter()
            .filter(|name| round_caps::is_mcp(name))
            .filter_map(|name| self.tools.get(name).cloned())
            .collect()
    }

    /// Adds tools between turns (MCP servers that finished starting after the chat opened).
    pub fn add_tools(&mut self, tools: Vec<Arc<dyn Tool>>) {
        for tool in tools {
            self.tools.insert(tool);
        }
        self.schemas = Arc::new(self.tools.schemas());
        self.tools_tokens = tokens::estimate_tools(&self.schemas);
    }

    /// Where the tool list is refreshed from before every request.
    pub fn set_tool_source(&mut self, source: Box<dyn ToolSource>) {
        self.tool_source = Some(source);
    }

    pub fn provider(&self) -> &dyn Provider {
        self.provider.as_ref()
    }

    /// The model this turn's requests go to: the fallback once the turn switched to it.
    fn active_provider(&self) -> &dyn Provider {
        match (&self.options.fallback, self.on_fallback) {
            (Some(fallback), true) => fallback.provider.as_ref(),
            _ => self.provider.as_ref(),
        }
    }

    /// Between turns of a chat: installs a fresh cancel token (the previous turn's may be
    /// cancelled) and returns a handle that cancels the next turn.
    pub fn reset_cancel(&mut self) -> CancelToken {
        self.ctx.cancel = CancelToken::new();
        self.ctx.cancel.clone()
    }

    /// Works under `cancel` from now on: a coordinator's planner shares its executor's token.
    pub fn set_cancel(&mut self, cancel: CancelToken) {
        self.ctx.cancel = cancel;
    }

    /// Enters or leaves plan mode between turns (`/plan`, Shift-Tab, `--plan`). The caller
    /// reports the change itself (`Event::PlanMode`); the agent reports the changes it makes
    /// (auto-plan, an approved plan).
    pub fn set_planning(&mut self, planning: bool) {
        self.planner.reported(planning);
        let mut workflow = self
            .ctx
            .workflow
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        workflow.planning = planning;
        workflow.proposed = None;
    }

    pub fn planning(&self) -> bool {
        self.ctx
            .workflow
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .planning
    }

    /// The plan-mode state the front end shows (shared, so it can be read during a turn).
    pub fn workflow(&self) -> Arc<Mutex<Workflow>> {
        Arc::clone(&self.ctx.workflow)
    }

    /// The task list the front end shows (shared, so it can be read during a turn).
    pub fn todos(&self) -> Arc<Mutex<Vec<TodoItem>>> {
        Arc::clone(&self.ctx.todos)
    }

    /// Who answers `ask` and reviews plans; without one (headless) `ask` returns an assumption.
    pub fn set_interact(&mut self, interact: Arc<dyn Interact>) {
        self.ctx.interact = Some(self.notifying(interact));
    }

    /// Switches the model between turns (`/model`); the session continues.
    pub fn set_provider(&mut self, provider: Box<dyn Provider>, prices: Option<Prices>) {
        self.provider = provider;
        self.options.prices = prices;
    }

    /// The request options in force.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The request options, for changes between turns (`/effort`).
    pub fn options_mut(&mut self) -> &mut Options {
        &mut self.options
    }

    /// Continues in another session (`/new`, `/clear`, `/resume`); returns the old one.
    pub fn replace_session(&mut self, session: Session) -> Session {
        self.malformed = None;
        self.loops = LoopGuard::default();
        self.ctx.session_path = Some(session.path().to_path_buf());
        let old = std::mem::replace(&mut self.session, session);
        self.reasoning_echo |= self.session.transcript().has_reasoning();
        self.session_changed();
        old
    }

    /// `/rewind`: keeps the first `to` messages of the conversation (see `Session::rewind`).
    pub fn rewind(&mut self, to: usize) -> Result<(), AgentError> {
        self.session.rewind(to)?;
        // The provider's last count covered messages that are gone.
        self.meter.invalidate();
        self.malformed = None;
        Ok(())
    }

    /// Sends `input` as a user turn and loops until the model answers without tools.
    pub fn run(&mut self, input: String, sink: &mut dyn EventSink) -> Result<Finish, AgentError> {
        // Every turn tries the session's own model first, whatever the last one fell back to.
        self.on_fallback = false;
        // Written now, made durable at the end of the first round: an fsync here would delay
        // the request, and a killed process loses nothing that write() has handed the kernel.
        let mut input =
            self.planner
                .start_turn(input, &self.ctx.workflow, self.gate.as_ref(), sink);
        if let Err(err) = self.hook_prompt(&mut input, sink) {
            self.planner
                .end_turn(&self.ctx.workflow, self.gate.as_ref());
            return Err(err);
        }
        self.session.push(Message::user(input))?;
        let result = self.run_loop(sink);
        self.planner
            .end_turn(&self.ctx.workflow, self.gate.as_ref());
        // Whatever happened, what was received is made durable.
        self.session.sync()?;
        result
    }

    /// `/<profile> TASK` typed in the chat: runs the subagent profile host-side (the spec's
    /// `RunSubagentProfile`), never by asking the model to call `task`. The child is an
    /// isolated session with the profile's prompt, tools and model; only its final answer
    /// comes back. The parent's history gains the user's turn and that answer as the reply,
    /// appended after everything already sent, so the cached prefix stays as it was and the
    /// next request sees both. The child's edits belong to this turn for `/rewind`.
    pub fn run_profile(
        &mut self,
        profile: &str,
        task: String,
        sink: &mut dyn EventSink,
    ) -> Result<Finish, AgentError> {
        let Some(delegate) = self.ctx.delegate.clone() else {
            sink.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message: format!("/{profile}: this session cannot start subagents"),
            });
            return Ok(Finish::Answered);
        };
        self.session
            .push(super::session::profile_turn(profile, &task))?;
        delegate.offer_mcp(self.mcp_tools());
        delegate.begin_round();
        let mut parent = self.ctx.clone();
        parent.call_id = None;
        parent.parent_turn = Some((self.session.id().to_string(), self.session.turns()));
        let spec = crate::tool::delegate::TaskSpec {
            prompt: task,
            profile: Some(profile.to_string()),
            ..Default::default()
        };
        let outcome = self
            .hook_events
            .relay_while(sink, || Some(delegate.run(&spec, &parent)))
            .unwrap_or_else(|| Err("the subagent could not start".into()));
        let answer = match outcome {
            Ok(outcome) if outcome.ok => outcome.answer,
            Ok(outcome) => format!(
                "The `{profile}` subagent did not finish: {}",
                outcome.answer
            ),
            Err(err) => format!("The `{profile}` subagent could not start: {err}"),
        };
        sink.emit(Event::TextDelta(answer.clone()));
        self.stats.final_text = answer.clone();
        self.session.push(Message::assistant(answer))?;
        self.session.sync()?;
        if self.ctx.cancel.is_cancelled() {
            return Err(AgentError::Interrupted);
        }
        Ok(Finish::Answered)
    }

    fn run_loop(&mut self, sink: &mut dyn EventSink) -> Result<Finish, AgentError> {
        self.lease = Lease::new(&self.todo_items());
        self.loops = LoopGuard::default();
        loop {
            if self.ctx.cancel.is_cancelled() {
                return Err(AgentError::Interrupted);
            }
            // Spent in an earlier turn of the run (a goal's continuation, a hook's).
            if let Some(spent) = self.options.budget.spent() {
                return Ok(Finish::Budget(spent));
            }
            self.refresh_tools(sink);
            self.maintain_context(sink)?;
            let reply = self.request(sink)?;
            let calls = reply.calls.clone();
            let cut = reply.finish_reason == CUT_BY_LENGTH;
            self.stats.finish_reason = Some(reply.finish_reason.clone());
            self.record_reply(reply)?;
            if cut {
                let message = if calls.is_empty() {
                    "the answer was cut off at the output token limit (finish_reason `length`); \
                     raise agent.max_tokens or ask for a shorter answer"
                } else {
                    "a tool call was cut off at the output token limit (finish_reason `length`); \
                     it was not run, and the model is told to send it again in smaller parts"
                };
                sink.emit(Event::Notice {
                    level: NoticeLevel::Warning,
                    message: message.into(),
                });
            }
            if calls.is_empty() {
                if self.hook_stop(sink)? {
                    continue;
                }
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
            if let Some(spent) = self.options.budget.spent() {
                let note = format!("not executed: {spent}");
                for call in &calls {
                    self.session
                        .push(Message::tool_result(call.id.clone(), note.clone()))?;
                }
                return Ok(Finish::Budget(spent));
            }
            self.stats.tool_rounds += 1;
            self.execute_round(&calls, cut, sink)?;
            self.session.sync()?;
            let planned = self.planner.after_round(
                &self.ctx.workflow,
                &self.ctx.todos,
                self.gate.as_ref(),
                sink,
            );
            if let Some(finish) = planned {
                return Ok(finish);
            }
            if self.lease_expired(sink) {
                return Ok(Finish::NoProgress);
            }
        }
    }

    fn todo_items(&self) -> Vec<TodoItem> {
        self.ctx
            .todos
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Ends the round for the lease and says when it nudged or ran out.
    fn lease_expired(&mut self, sink: &mut dyn EventSink) -> bool {
        let standing = self.lease.end_round(&self.todo_items());
        let message = match standing {
            Standing::Held => return false,
            Standing::Nudge => format!(
                "no progress on the task list for {} rounds; asking the model to reassess",
                progress::NUDGE_AFTER
            ),
            Standing::Expired => format!(
                "paused: no progress on the task list for {} rounds (nothing completed, only \
                 repeated calls); the work so far is kept in the session",
                progress::PAUSE_AFTER
            ),
        };
        sink.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message,
        });
        standing == Standing::Expired
    }

    /// Takes a changed tool set from the source. The tool definitions lead every request, so a
    /// real change restarts the provider's prompt cache from the top; consumers are told.
    fn refresh_tools(&mut self, sink: &mut dyn EventSink) {
        let Some(source) = self.tool_source.as_mut() else {
            return;
        };
        let mut warn = |message| {
            sink.emit(Event::Notice {
                level: NoticeLevel::Warning,
                message,
            })
        };
        let Some(change) = source.poll(&self.ctx.cancel, &mut warn) else {
            return;
        };
        self.tools.retain(|name| !name.starts_with(&change.prefix));
        for tool in change.tools {
            self.tools.insert(tool);
        }
        let before = std::mem::replace(&mut self.schemas, Arc::new(self.tools.schemas()));
        let summary = schema_changes(&before, &self.schemas);
        if summary.is_empty() {
            // The same list: keep the one the provider's envelope already holds.
            self.schemas = before;
            return;
        }
        self.tools_tokens = tokens::estimate_tools(&self.schemas);
        // The provider's last count included the old definitions.
        self.meter.invalidate();
        sink.emit(Event::Notice {
            level: NoticeLevel::Info,
            message: format!(
                "tools changed ({}): {}; the model sees the new list from its next request",
                change.origins.join(", "),
                summary.join("; ")
            ),
        });
        sink.emit(Event::CachePrefixChanged {
            reason: PrefixChange::Tools,
            first_changed: 0,
        });
    }

    fn build_request(&self) -> Request {
        let mut messages = self.session.transcript().clone();
        // Appended to this request only: the session, and so the next request's prefix,
        // never holds it.
        if self.lease.idle() == progress::NUDGE_AFTER {
            messages.push(Message::user(progress::nudge()));
        }
        Request {
            messages,
            tools: Arc::clone(&self.schemas),
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
            finish_reason: String::new(),
        };
        let mut outcome = self.stream_into(&request, &mut reply, sink);
        if let Err(err) = &outcome {
            if self.switch_to_fallback(err, &reply, sink) {
                self.stats.requests += 1;
                outcome = self.stream_into(&request, &mut reply, sink);
            }
        }
        match outcome {
            Ok(()) => {
                self.account_usage(&request, &reply, sink);
                if let Some(usage) = reply.usage.filter(|u| !u.estimated) {
                    self.meter.observe(
                        self.session.estimates(),
                        request.messages.len(),
                        self.tools_tokens,
                        usage.prompt_tokens,
                    );
                }
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

    /// Switches this turn to the fallback model when `err` ended a request to the primary
    /// before any of its reply arrived and is an overload the fallback is for; says so.
    fn switch_to_fallback(
        &mut self,
        err: &ProviderError,
        reply: &Reply,
        sink: &mut dyn EventSink,
    ) -> bool {
        let received =
            !reply.text.is_empty() || !reply.reasoning.is_empty() || !reply.calls.is_empty();
        let Some(fallback) = &self.options.fallback else {
            return false;
        };
        if self.on_fallback || received || self.ctx.cancel.is_cancelled() {
            return false;
        }
        let Some(trigger) = fallback::trigger(err) else {
            return false;
        };
        self.on_fallback = true;
        sink.emit(Event::ModelFallback {
            trigger: trigger.as_str(),
            from: self.provider.model().to_string(),
            to: fallback.provider.model().to_string(),
            reason: err.to_string(),
        });
        true
    }

    fn stream_into(
        &self,
        request: &Request,
        reply: &mut Reply,
        sink: &mut dyn EventSink,
    ) -> Result<(), ProviderError> {
        self.pull(request, sink, &mut |chunk, sink| match chunk {
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
            Chunk::Done { finish_reason } => reply.finish_reason = finish_reason,
        })
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
        let prices = match (&self.options.fallback, self.on_fallback) {
            (Some(fallback), true) => fallback.prices,
            _ => self.options.prices,
        };
        let cost = prices.map(|p| p.cost(&usage));
        self.options.budget.record(&usage, cost);
        self.stats.usage.add(&usage);
        self.stats.cost_usd += cost.unwrap_or(0.0);
        let (model, fallback) = (self.active_provider().model(), self.on_fallback);
        let at = match self
            .stats
            .by_model
            .iter()
            .position(|s| s.model == model && s.fallback == fallback)
        {
            Some(at) => at,
            None => {
                self.stats.by_model.push(ModelSpend {
                    model: model.to_string(),
                    fallback,
                    ..ModelSpend::default()
                });
                self.stats.by_model.len() - 1
            }
        };
        let share = &mut self.stats.by_model[at];
        share.requests = share.requests.saturating_add(1);
        share.usage.add(&usage);
        share.cost_usd += cost.unwrap_or(0.0);
        sink.emit(Event::Usage {
            usage,
            cost_usd: cost,
        });
    }

    /// A Guardian review's cost: the reviewer's own figures, the run's budget, the event.
    fn account_review(&mut self, spend: &ReviewSpend, sink: &mut dyn EventSink) {
        self.options.budget.record(&spend.usage, spend.cost_usd);
        let reviews = &mut self.stats.reviews;
        reviews.model.clone_from(&spend.model);
        reviews.requests = reviews.requests.saturating_add(1);
        reviews.usage.add(&spend.usage);
        reviews.cost_usd += spend.cost_usd.unwrap_or(0.0);
        sink.emit(Event::ReviewerUsage {
            model: spend.model.clone(),
            usage: spend.usage,
            cost_usd: spend.cost_usd,
        });
    }

    /// What the Guardian reviewer is shown of the conversation: the user's latest request and
    /// the model's message that made the calls, each cut to a few kilobytes.
    fn review_context(&self) -> String {
        const PART_BYTES: usize = 4 * 1024;
        let messages = self.session.messages();
        let mut out = String::new();
        if let Some(user) = messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User && !compaction::is_digest(m))
        {
            out.push_str("The user's latest message:\n");
            out.push_str(&guardian::clip(&user.content, PART_BYTES));
        }
        if let Some(reply) = messages.last().filter(|m| m.role == Role::Assistant) {
            if !reply.content.trim().is_empty() {
                out.push_str("\n\nThe agent's message with this call:\n");
                out.push_str(&guardian::clip(&reply.content, PART_BYTES));
            }
        }
        out
    }

    fn record_reply(&mut self, reply: Reply) -> Result<(), AgentError> {
        self.stats.final_text = reply.text.clone();
        self.reasoning_echo |= !reply.reasoning.is_empty();
        let echo = self.reasoning_echo && !reply.calls.is_empty();
        let mut message = Message::assistant(reply.text);
        message.reasoning_content =
            (echo || !reply.reasoning.is_empty()).then_some(reply.reasoning);
        message.tool_calls = reply.calls;
        self.session.push(message)?;
        Ok(())
    }

    /// Validates, gates and runs one round of calls; every call gets exactly one result. The
    /// calls of a reply `cut` at the token limit are all malformed: none runs.
    fn execute_round(
        &mut self,
        calls: &[ToolCall],
        cut: bool,
        sink: &mut dyn EventSink,
    ) -> Result<(), AgentError> {
        let todos = self.todo_items();
        self.ctx.images.start_round(
            self.active_provider().model(),
            self.active_provider().vision(),
            RequestImages {
                carried: self.session.image_bytes(),
                cap: self.options.caps.image_bytes_per_request,
            },
        );
        let mut mcp_calls = McpCalls::new(&self.options.caps);
        let mut results: Vec<Option<(Result<String, ToolError>, u64)>> = vec![None; calls.len()];
        let mut runnable = Vec::new();
        let mut runnable_index = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            let family = self
                .tools
                .get(call.name())
                .map_or(Family::Other, |tool| tool.family());
            sink.emit(Event::ToolUse {
                id: call.id.clone(),
                name: call.name().to_string(),
                arguments: call.arguments().to_string(),
                family,
            });
            let prepared = if cut {
                Err(ToolError::InvalidArgs(CUT_CALL.into()))
            } else {
                match mcp_calls.admit(call.name()) {
                    Ok(()) => self.prepare(call, sink),
                    Err(refusal) => Err(ToolError::Failed(refusal)),
                }
            };
            match prepared {
                Ok(prepared) => {
                    runnable.push(prepared);
                    runnable_index.push(i);
                }
                Err(err) => results[i] = Some((Err(err), 0)),
            }
        }
        self.drain_hook_events(sink);
        let max_parallel = self.options.max_parallel_tools.max(1);
        let ids = runnable_index
            .iter()
            .map(|&i| calls[i].id.clone())
            .collect();
        // A child's snapshots belong to the parent's turn that started it.
        let (session, turn) = self
            .ctx
            .parent_turn
            .clone()
            .unwrap_or_else(|| (self.session.id().to_string(), self.session.turns()));
        let snapshots = Recorder::new(&self.ctx, &session, turn, ids);
        // A round that starts subagents runs beside this thread, which relays their progress
        // to the sink as it comes; any other round runs here, without a thread to start.
        let outcomes = if runnable.iter().any(|call| call.tool.reports_live()) {
            if let Some(delegate) = &self.ctx.delegate {
                delegate.offer_mcp(self.mcp_tools());
            }
            // The children this round starts record into this turn's snapshots.
            let mut parent = self.ctx.clone();
            parent.parent_turn = Some((session, turn));
            let (ctx, recorder) = (&parent, snapshots.as_ref());
            self.hook_events.relay_while(sink, || {
                dispatch::run_round(&runnable, ctx, max_parallel, recorder)
            })
        } else {
            dispatch::run_round(&runnable, &self.ctx, max_parallel, snapshots.as_ref())
        };
        for (i, outcome) in runnable_index.into_iter().zip(outcomes) {
            results[i] = Some((outcome.result, outcome.duration_ms));
        }
        let mut repeated: Option<AgentError> = None;
        let mut answered = Vec::with_capacity(calls.len());
        for (call, result) in calls.iter().zip(results) {
            let (result, duration_ms) = result.unwrap_or((Err(ToolError::Cancelled), 0));
            if let Some(err) = self.track_malformed(call, &result) {
                repeated.get_or_insert(err);
            }
            let (mut output, is_error) = match &result {
                Ok(text) => (text.clone(), false),
                Err(err) => (format!("error: {err}"), true),
            };
            if let Some(asked) = ask::asked(call.name(), call.arguments(), &output) {
                sink.emit(Event::Ask(asked));
            }
            let succeeded = (!is_error).then_some(output.as_str());
            self.lease.call(call.name(), call.arguments(), succeeded);
            if !is_error {
                self.hook_post_tool(call, &mut output, sink);
            }
            self.loops.call(call.name(), call.arguments(), &output);
            sink.emit(Event::ToolResult {
                id: call.id.clone(),
                name: call.name().to_string(),
                output: output.clone(),
                is_error,
                duration_ms,
            });
            answered.push((call.id.clone(), output));
        }
        let looping = self.note_repetition(&mut answered, sink);
        for (id, output) in answered {
            self.session.push(Message::tool_result(id, output))?;
        }
        // Images go after every result: a message between the results would break the round.
        if let Some(images) = self.ctx.images.take_message() {
            self.session.push(images)?;
        }
        self.drain_hook_events(sink);
        let now = self.todo_items();
        if now != todos {
            sink.emit(Event::Todo { items: now });
        }
        if self.ctx.cancel.is_cancelled() {
            return Err(AgentError::Interrupted);
        }
        match repeated.or(looping) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// Ends the round for the loop guard. A first repeat gets the note on the round's last
    /// result (in the session, so the request prefix stays as sent); a repeat after it ends
    /// the turn, with every result still recorded so the history stays valid.
    fn note_repetition(
        &mut self,
        answered: &mut [(String, String)],
        sink: &mut dyn EventSink,
    ) -> Option<AgentError> {
        match self.loops.end_round() {
            Repetition::Fresh => None,
            Repetition::Nudge(calls) => {
                if let Some((_, output)) = answered.last_mut() {
                    output.push_str("\n\n");
                    output.push_str(&progress::loop_nudge(&calls));
                }
                sink.emit(Event::Notice {
                    level: NoticeLevel::Warning,
                    message: format!(
                        "the model repeated an earlier round ({calls}) with the same results; \
                         it is told so, and the turn stops if it repeats again"
                    ),
                });
                None
            }
            Repetition::Loop(calls) => Some(AgentError::Loop(calls)),
        }
    }

    fn prepare(
        &mut self,
        call: &ToolCall,
        sink: &mut dyn EventSink,
    ) -> Result<Prepared, ToolError> {
        let tool = self.tools.get(call.name()).cloned().ok_or_else(|| {
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
        // Before the gate: an argument the schema does not know could otherwise pose as the
        // call's permission subject.
        self.tools.validate(call.name(), &args)?;
        // Before the gate too: while planning, no approval releases what plan mode blocks.
        if let Some(message) =
            self.planner
                .check(call.name(), &self.ctx.workflow, self.gate.as_ref())
        {
            return Err(ToolError::Failed(message));
        }
        self.hook_pre_tool(call, &args, sink)?;
        let verdict = match tool.fresh_approval(&args, &self.ctx) {
            Some(preview) => self.gate.check_fresh(call.name(), &args, &preview),
            None => {
                let recent = || self.review_context();
                let context = CallContext {
                    recent: &recent,
                    cancel: &self.ctx.cancel,
                };
                self.gate
                    .check_in_context(call.name(), tool.profile(), &args, &context)
            }
        };
        if let Some(spend) = &verdict.review {
            self.account_review(spend, sink);
        }
        report_verdict(call.name(), &verdict, sink);
        if !verdict.allowed {
            let message = verdict
                .message
                .unwrap_or_else(|| "blocked by the permission policy".into());
            return Err(ToolError::Failed(message));
        }
        // The approver allowed the call with other arguments, which the gate judged as a call
        // of their own: those run, checked against the schema like the model's. The history
        // keeps the call the model made; its result is the executed call's.
        let args = match verdict.args {
            Some(changed) => {
                self.tools.validate(call.name(), &changed)?;
                changed
            }
            None => args,
        };
        Ok(Prepared {
            id: call.id.clone(),
            tool,
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

/// Context maintenance: measuring the prompt, snipping, pruning and folding.
impl Agent {
    /// Estimated prompt tokens of the next request: the provider's last count plus an
    /// estimate of what was appended since.
    pub fn context_tokens(&self) -> u64 {
        self.meter
            .context_tokens(self.session.estimates(), self.tools_tokens)
    }

    /// `/compact`: prunes stale tool results and folds the work before a short recent tail,
    /// whatever the thresholds say. Returns whether anything changed.
    pub fn compact_now(&mut self, sink: &mut dyn EventSink) -> Result<bool, AgentError> {
        let mut limits = Limits::manual(&self.options.context);
        // The user asked for it: the tail is the current user turn (capped as usual), so
        // everything before it can fold.
        let history = self.session.messages();
        if let Some(last_user) = history
            .iter()
            .rposition(|m| m.role == Role::User && !compaction::is_digest(m))
        {
            let costs = self.message_costs();
            limits.tail = limits.tail.min(costs[last_user..].iter().sum());
        }
        let plan = Plan {
            trigger: Trigger::Manual,
            shorten: Shorten::Prune,
            fold: true,
        };
        self.apply_plan(plan, &limits, sink)
    }

    fn maintain_context(&mut self, sink: &mut dyn EventSink) -> Result<(), AgentError> {
        let used = self.context_tokens();
        self.stats.context_tokens = used;
        let Some(limits) = Limits::new(&self.options.context) else {
            return Ok(());
        };
        if used >= limits.window / 2 && !self.warned_half_full {
            self.warned_half_full = true;
            sink.emit(Event::Notice {
                level: NoticeLevel::Info,
                message: format!(
                    "context: about {used} of {} tokens in use; stale tool output is shortened from {}",
                    limits.window, limits.snip_at
                ),
            });
        }
        if used < limits.snip_at {
            return Ok(());
        }
        let costs = self.message_costs();
        if let Some(plan) = compaction::plan(&limits, used, self.session.messages(), &costs) {
            self.apply_plan(plan, &limits, sink)?;
            self.stats.context_tokens = self.context_tokens();
        }
        Ok(())
    }

    /// Each message's estimate, scaled by what the provider's counts have shown.
    fn message_costs(&self) -> Vec<u64> {
        let estimates = self.session.estimates();
        (0..estimates.len())
            .map(|i| self.meter.scaled(estimates.get(i)))
            .collect()
    }

    fn apply_plan(
        &mut self,
        plan: Plan,
        limits: &Limits,
        sink: &mut dyn EventSink,
    ) -> Result<bool, AgentError> {
        let before = self.context_tokens();
        let costs = self.message_costs();
        let original = self.session.messages().to_vec();
        let tail = compaction::tail_start(&original, &costs, limits.tail);
        let fold = plan
            .fold
            .then(|| compaction::partition(&original, tail))
            .flatten();
        let (history, changed, tier, shortened) = match &fold {
            Some(fold) => {
                let summary = self.summarize(&original, fold, limits, sink)?;
                let digest = compaction::digest_message(&summary, fold.folded.len());
                let history = compaction::folded_history(&original, fold, digest);
                (history, fold.folded.clone(), Tier::Fold, 0)
            }
            None => {
                let mut history = original.clone();
                let changed: Vec<usize> =
                    compaction::shorten_stale(&mut history, tail, plan.shorten)
                        .into_iter()
                        .map(|(i, _)| i)
                        .collect();
                let count = changed.len();
                (history, changed, Tier::from(plan.shorten), count)
            }
        };
        let Some(&first_changed) = changed.first() else {
            return Ok(false);
        };
        let dropped: Vec<Message> = changed.iter().map(|&i| original[i].clone()).collect();
        let archive = self.archive(tier.as_str(), &dropped, sink);
        self.session.rewrite(history)?;
        self.meter.invalidate();
        self.stats.compactions += 1;
        sink.emit(Event::Compaction {
            trigger: plan.trigger,
            tier,
            before_tokens: before,
            after_tokens: self.context_tokens(),
            messages_folded: fold.as_ref().map_or(0, |f| f.folded.len()),
            results_shortened: shortened,
            archive,
        });
        sink.emit(Event::CachePrefixChanged {
            reason: PrefixChange::Compaction(tier),
            first_changed,
        });
        Ok(true)
    }

    /// Appends the originals to the archive; a failure is reported, not fatal, since a
    /// context that overflows would end the run anyway.
    fn archive(
        &self,
        reason: &str,
        dropped: &[Message],
        sink: &mut dyn EventSink,
    ) -> Option<String> {
        let dir = self.options.context.archive_dir.as_ref()?;
        match compaction::archive(dir, self.session.id(), reason, dropped) {
            Ok(path) => Some(path.display().to_string()),
            Err(err) => {
                sink.emit(Event::Notice {
                    level: NoticeLevel::Warning,
                    message: format!(
                        "context: could not archive {} messages in {} ({err}); compacting anyway",
                        dropped.len(),
                        dir.display()
                    ),
                });
                None
            }
        }
    }

    /// The digest text from the executor's own provider with no tools; a mechanical list when
    /// the provider fails or returns nothing.
    fn summarize(
        &mut self,
        history: &[Message],
        fold: &Fold,
        limits: &Limits,
        sink: &mut dyn EventSink,
    ) -> Result<String, AgentError> {
        let request = compaction::summary_request(history, fold, limits);
        self.stats.summary_requests += 1;
        let outcome = self.collect_text(&request, sink);
        if self.ctx.cancel.is_cancelled() {
            return Err(AgentError::Interrupted);
        }
        let failure = match outcome {
            Ok((text, usage)) => {
                let reply = Reply {
                    text: text.clone(),
                    reasoning: String::new(),
                    calls: Vec::new(),
                    usage,
                    finish_reason: String::new(),
                };
                self.account_usage(&request, &reply, sink);
                if !text.trim().is_empty() {
                    return Ok(text);
                }
                "the summarizer returned no text".to_string()
            }
            Err(err) => err.to_string(),
        };
        sink.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message: format!("context: {failure}; folding with a mechanical digest instead"),
        });
        Ok(compaction::mechanical_summary(history, fold))
    }

    /// Streams a request into `each`, reporting each retry and each long silence as events.
    fn pull(
        &self,
        request: &Request,
        sink: &mut dyn EventSink,
        each: &mut dyn FnMut(Chunk, &mut dyn EventSink),
    ) -> Result<(), ProviderError> {
        waiting::stream(
            self.active_provider(),
            request,
            &self.ctx.cancel,
            &self.options.watch,
            sink,
            each,
        )
    }

    /// Streams a request without reporting its text as the answer.
    fn collect_text(
        &self,
        request: &Request,
        sink: &mut dyn EventSink,
    ) -> Result<(String, Option<Usage>), ProviderError> {
        let mut text = String::new();
        let mut usage = None;
        self.pull(request, sink, &mut |chunk, _| match chunk {
            Chunk::Text(piece) => text.push_str(&piece),
            Chunk::Usage(reported) => usage = Some(reported),
            Chunk::Reasoning(_) | Chunk::ToolCall(_) | Chunk::Done { .. } => {}
        })?;
        Ok((text, usage))
    }
}

/// Every decision that was not a plain allow goes into the event stream.
fn report_verdict(tool: &str, verdict: &Verdict, sink: &mut dyn EventSink) {
    if verdict.is_reportable() {
        sink.emit(Event::Permission {
            tool: tool.to_string(),
            subject: verdict.subject.clone(),
            decision: verdict.decision,
            resolution: verdict.resolution,
            allowed: verdict.allowed,
            rule: verdict.rule.clone(),
            posture: verdict.posture,
            reason: verdict.reason.clone(),
        });
    }
    if let Some(warning) = &verdict.warning {
        sink.emit(Event::Notice {
            level: NoticeLevel::Warning,
            message: warning.clone(),
        });
    }
}

/// "added `a`, `b`", "removed `c`", "changed `d`": what differs between two tool lists, empty
/// when they are the same (order included, since it is part of the request bytes).
fn schema_changes(before: &[ToolSchema], after: &[ToolSchema]) -> Vec<String> {
    if before == after {
        return Vec::new();
    }
    let old: BTreeMap<&str, &ToolSchema> = before.iter().map(|t| (t.name.as_str(), t)).collect();
    let new: BTreeMap<&str, &ToolSchema> = after.iter().map(|t| (t.name.as_str(), t)).collect();
    let listed = |names: Vec<&str>| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let added: Vec<&str> = new
        .keys()
        .filter(|n| !old.contains_key(*n))
        .copied()
        .collect();
    let removed: Vec<&str> = old
        .keys()
        .filter(|n| !new.contains_key(*n))
        .copied()
        .collect();
    let changed: Vec<&str> = new
        .iter()
        .filter(|(n, t)| old.get(*n).is_some_and(|o| o != *t))
        .map(|(n, _)| *n)
        .collect();
    let mut summary = Vec::new();
    for (verb, names) in [("added", added), ("removed", removed), ("changed", changed)] {
        if !names.is_empty() {
            summary.push(format!("{verb} {}", listed(names)));
        }
    }
    if summary.is_empty() {
        summary.push("reordered".into());
    }
    summary
}

/// Our estimate for servers that report no usage.
fn estimate_usage(request: &Request, reply: &Reply) -> Usage {
    let completion = tokens::estimate_text(&reply.text)
        + tokens::estimate_text(&reply.reasoning)
        + reply
            .calls
            .iter()
            .map(|c| tokens::estimate_text(c.arguments()))
            .sum::<u64>();
    Usage {
        prompt_tokens: tokens::estimate_messages(&request.messages)
            + tokens::estimate_tools(&request.tools),
        completion_tokens: completion,
        estimated: true,
        ..Usage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(name: &str, description: &str) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn tool_list_differences_are_named() {
        let a = schema("a", "A");
        let b = schema("b", "B");
        assert!(schema_changes(&[a.clone(), b.clone()], &[a.clone(), b.clone()]).is_empty());
        assert_eq!(
            schema_changes(&[a.clone(), b.clone()], &[b.clone(), a.clone()]),
            ["reordered"]
        );
        assert_eq!(
            schema_changes(
                &[a.clone(), b.clone()],
                &[schema("a", "new"), schema("c", "C"), schema("d", "D")]
            ),
            ["added `c`, `d`", "removed `b`", "changed `a`"]
        );
    }
}
