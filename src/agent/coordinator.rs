//! Two-model collaboration (§3.5): a planner model plans, an executor model carries the plan
//! out, each in its own session. The sessions never mix and both only grow at the end, so
//! each model's prompt prefix (and its provider's cache) stays byte-stable.
//!
//! The planner is an [`Agent`] with the executor's standing context (its system prompt plus a
//! planner role) and only the read-only research tools ([`research_tools`]): no writers, no
//! bash, no workflow tools. It runs at the first turn, after the executor reports the plan
//! done, blocked or invalidated through the `plan_status` tool ([`PlanStatus`]), and when the
//! user asks (`/replan`). Its plan reaches the executor as a `<plan>` block in a user turn.
//!
//! The planner's session lives beside the executor's, in `planner/<executor-id>-planner.jsonl`
//! under the same sessions directory (so listings and `--continue` only ever see executors),
//! and each header names the other. Whether a plan is in force is read back from the
//! executor's own history, so a resumed pair carries on where it stopped. Building the two
//! agents from config is the CLI's job; this module only drives them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};

use super::events::{Event, EventSink, NoticeLevel};
use super::runner::{Agent, AgentError, Finish, Options};
use super::session::{Header, Session};
use crate::cancel::CancelToken;
use crate::permission::Gate;
use crate::provider::{Message, Provider, Role};
use crate::tool::{builtin, Family, Registry, Tool, ToolContext, ToolError};

/// The executor's tool for reporting on the plan.
pub const PLAN_STATUS_TOOL: &str = "plan_status";

/// Tools besides the file readers that only look things up: past sessions and saved memory.
const RESEARCH_TOOLS: [&str; 2] = ["history", "memory"];

/// Blocked or invalidated plans revised within one user turn before the turn ends anyway, so
/// two models that disagree cannot loop.
pub const MAX_REPLANS_PER_TURN: u32 = 2;

/// The planner's role, appended to the executor's system prompt for the planner's session.
pub const PLANNER_ROLE: &str = "\
# Your role: planner
You plan; another model (the executor) carries the plan out with the full tool set. You can \
only read: inspect the files, past sessions and memory you need, then reply with a concise, \
numbered plan the executor can follow without guessing: the files to change, the changes, \
and how to verify them. Reply with the plan only. Your turns carry the user's <request>, and \
an <executor_report> when the executor finished, got blocked or found the plan wrong.";

/// The opening of the user turn that hands a plan to the executor.
const PLAN_OPEN: &str = "<plan revision=\"";

/// How the executor reports on the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Done,
    Blocked,
    Invalidated,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Done => "done",
            Status::Blocked => "blocked",
            Status::Invalidated => "invalidated",
        }
    }

    fn parse(text: &str) -> Option<Status> {
        match text {
            "done" => Some(Status::Done),
            "blocked" => Some(Status::Blocked),
            "invalidated" => Some(Status::Invalidated),
            _ => None,
        }
    }
}

/// One `plan_status` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub status: Status,
    pub note: String,
}

impl Report {
    /// The report a `plan_status` call's arguments make; `None` for arguments that make none.
    fn from_args(args: &Value) -> Option<Report> {
        let status = Status::parse(args.get("status")?.as_str()?)?;
        let note = args
            .get("note")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string();
        Some(Report { status, note })
    }
}

/// `plan_status`: the executor's structured report. A tool rather than a phrase in the
/// answer, so the report is schema-checked, unambiguous and kept in the executor's session
/// (which is how a resumed pair knows whether its plan still stands).
pub struct PlanStatus {
    reported: Arc<Mutex<Option<Report>>>,
}

impl PlanStatus {
    /// An instance whose reports go nowhere: for listing the tool and its contract.
    pub fn unreported() -> PlanStatus {
        PlanStatus {
            reported: Arc::new(Mutex::new(None)),
        }
    }
}

impl Tool for PlanStatus {
    fn name(&self) -> &str {
        PLAN_STATUS_TOOL
    }

    fn description(&self) -> &str {
        "Report on the plan you were given in a <plan> block: `done` when it is carried out, \
         `blocked` when you cannot go on with it, `invalidated` when it turns out wrong. The \
         planner then plans again. `note` says in one line what was done or what is in the way."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": ["done", "blocked", "invalidated"]},
                "note": {"type": "string", "description": "One line: what was done, or what is in the way."}
            },
            "required": ["status", "note"]
        })
    }

    fn family(&self) -> Family {
        Family::Other
    }

    /// It changes nothing outside the coordinator.
    fn read_only(&self) -> bool {
        true
    }

    fn execute(&self, args: &Value, _ctx: &ToolContext) -> Result<String, ToolError> {
        let report = Report::from_args(args).ok_or_else(|| {
            ToolError::InvalidArgs("`status` must be done, blocked or invalidated".into())
        })?;
        let answer = match report.status {
            Status::Done => "recorded: the plan is done; the planner plans the next request",
            Status::Blocked | Status::Invalidated => {
                "recorded: the planner revises the plan once you end your reply"
            }
        };
        *self.reported.lock().unwrap_or_else(PoisonError::into_inner) = Some(report);
        Ok(answer.into())
    }
}

/// The planner's tools: the built-in readers and research tools among those the executor
/// has (so `[tools] enabled` still applies). MCP tools are left out: their read-only hints
/// are not trusted for a model that must not change anything.
pub fn research_tools(executor: &Registry) -> Registry {
    let mut tools = Registry::new();
    for tool in builtin::all() {
        let research = tool.family() == Family::Reader || RESEARCH_TOOLS.contains(&tool.name());
        if research && tool.read_only() && executor.get(tool.name()).is_some() {
            tools.insert(tool);
        }
    }
    tools
}

/// What the planner agent is made of, kept until the first plan is needed so a pair that
/// never plans (a resumed plan still in force) leaves no empty planner session behind.
pub struct PlannerParts {
    pub provider: Box<dyn Provider>,
    pub tools: Registry,
    pub gate: Box<dyn Gate>,
    /// Its own context: plan mode and the task list are the executor's.
    pub ctx: ToolContext,
    pub options: Options,
}

enum Planner {
    Pending(Box<PlannerParts>),
    Ready(Box<Agent>),
    /// Only while switching from one to the other.
    Building,
}

/// One model's share of the work.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelStats {
    /// "planner" or "executor" ("agent" for a single agent).
    pub role: &'static str,
    pub model: String,
    pub requests: u32,
    pub usage: crate::provider::Usage,
    pub cost_usd: f64,
}

/// Where the plan stands, as the executor's history shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Standing {
    /// Plans handed over so far; the next one gets the next number.
    revision: u32,
    /// The request behind the plan in force (or the last one).
    request: String,
    /// The executor's report after the last plan, if it made one: a report means the next
    /// turn starts with planning.
    report: Option<Report>,
}

impl Standing {
    fn needs_plan(&self) -> bool {
        self.revision == 0 || self.report.is_some()
    }

    /// Reads the standing from an executor history: its `<plan>` turns and `plan_status`
    /// calls (a rewind or resume lands wherever the history says).
    fn of(messages: &[Message]) -> Standing {
        let mut standing = Standing::default();
        for message in messages {
            match message.role {
                Role::User if message.content.starts_with(PLAN_OPEN) => {
                    standing.revision += 1;
                    standing.report = None;
                    if let Some(request) = request_of(&message.content) {
                        standing.request = request.to_string();
                    }
                }
                Role::Assistant => {
                    for call in &message.tool_calls {
                        if call.name() != PLAN_STATUS_TOOL {
                            continue;
                        }
                        let args: Value =
                            serde_json::from_str(call.arguments()).unwrap_or(Value::Null);
                        if let Some(report) = Report::from_args(&args) {
                            standing.report = Some(report);
                        }
                    }
                }
                _ => {}
            }
        }
        standing
    }
}

/// The `<request>` a handoff carries.
fn request_of(handoff: &str) -> Option<&str> {
    let start = handoff.rfind("<request>\n")? + "<request>\n".len();
    let end = handoff[start..].rfind("\n</request>")? + start;
    Some(&handoff[start..end])
}

/// What a listing shows of an executor's user turn: a plan handoff's request, or the turn.
pub fn shown_request(content: &str) -> &str {
    if content.starts_with(PLAN_OPEN) {
        request_of(content).unwrap_or(content)
    } else {
        content
    }
}

/// The executor's user turn carrying a plan: the plan, what to do with it, the request.
fn handoff(revision: u32, model: &str, plan: &str, request: &str) -> String {
    format!(
        "{PLAN_OPEN}{revision}\" from=\"{model}\">\n{plan}\n</plan>\n\n\
         Carry out this plan for the request below. When it is carried out, call `{PLAN_STATUS_TOOL}` \
         with status \"done\"; if you cannot go on with it, \"blocked\"; if it turns out wrong, \
         \"invalidated\"; with a one-line note. The planner then plans again.\n\n\
         <request>\n{request}\n</request>"
    )
}

/// The note in the planner's turn when the user asked for the new plan (`/replan`).
const USER_REPLAN: &str = "<replan>The user asked for a new plan.</replan>";

/// The planner's user turn: the executor's last report, a note (why it plans again), and the
/// request.
fn planner_turn(request: &str, report: Option<&Report>, note: Option<&str>) -> String {
    let mut text = String::new();
    if let Some(report) = report {
        text.push_str(&format!(
            "<executor_report status=\"{}\">\n{}\n</executor_report>\n\n",
            report.status.as_str(),
            report.note
        ));
    }
    if let Some(note) = note {
        text.push_str(note);
        text.push_str("\n\n");
    }
    text.push_str(&format!("<request>\n{request}\n</request>"));
    text
}

/// The planner session's id for an executor session.
pub fn planner_id(executor_id: &str) -> String {
    format!("{executor_id}-planner")
}

/// Where the planner session of the executor session at `executor` lives.
pub fn planner_path(executor: &Path, executor_id: &str) -> PathBuf {
    let dir = executor.parent().unwrap_or(Path::new("."));
    dir.join("planner")
        .join(format!("{}.jsonl", planner_id(executor_id)))
}

/// The planner's events reach the front end, except its text: the plan is shown once, whole,
/// as a notice, so a headless run's answer on stdout is the executor's alone.
struct PlannerSink<'a>(&'a mut dyn EventSink);

impl EventSink for PlannerSink<'_> {
    fn emit(&mut self, event: Event) {
        if !matches!(event, Event::TextDelta(_) | Event::ReasoningDelta(_)) {
            self.0.emit(event);
        }
    }
}

pub struct Coordinator {
    executor: Agent,
    planner: Planner,
    /// The executor session the planner's session belongs to.
    planner_for: Option<String>,
    standing: Standing,
    /// Where `plan_status` leaves the executor's report.
    reported: Arc<Mutex<Option<Report>>>,
}

impl Coordinator {
    /// Pairs an executor with the parts of a planner; the executor gets `plan_status`.
    pub fn new(mut executor: Agent, planner: PlannerParts) -> Coordinator {
        let reported = Arc::new(Mutex::new(None));
        executor.add_tools(vec![Arc::new(PlanStatus {
            reported: Arc::clone(&reported),
        })]);
        let standing = Standing::of(executor.session().messages());
        Coordinator {
            executor,
            planner: Planner::Pending(Box::new(planner)),
            planner_for: None,
            standing,
            reported,
        }
    }

    pub fn executor(&self) -> &Agent {
        &self.executor
    }

    pub fn executor_mut(&mut self) -> &mut Agent {
        &mut self.executor
    }

    /// The planner's agent, once it has planned in this process.
    pub fn planner(&self) -> Option<&Agent> {
        match &self.planner {
            Planner::Ready(agent) => Some(agent),
            _ => None,
        }
    }

    pub fn planner_model(&self) -> String {
        match &self.planner {
            Planner::Pending(parts) => parts.provider.model().to_string(),
            Planner::Ready(agent) => agent.provider().model().to_string(),
            Planner::Building => String::new(),
        }
    }

    /// Whether the next turn starts with planning.
    pub fn needs_plan(&self) -> bool {
        self.standing.needs_plan()
    }

    /// The planner works under the executor's cancel token, so one Esc or Ctrl-C stops both.
    pub fn reset_cancel(&mut self) -> CancelToken {
        let cancel = self.executor.reset_cancel();
        match &mut self.planner {
            Planner::Pending(parts) => parts.ctx.cancel = cancel.clone(),
            Planner::Ready(agent) => agent.set_cancel(cancel.clone()),
            Planner::Building => {}
        }
        cancel
    }

    /// `/new`, `/clear`, `/resume`: the executor continues in `session`; the planner follows
    /// it to that session's planner session when it next plans.
    pub fn replace_session(&mut self, session: Session) -> Session {
        let old = self.executor.replace_session(session);
        self.standing = Standing::of(self.executor.session().messages());
        old
    }

    /// `/rewind` on the executor; the plan in force is whatever the kept history says.
    pub fn rewind(&mut self, to: usize) -> Result<(), AgentError> {
        self.executor.rewind(to)?;
        self.standing = Standing::of(self.executor.session().messages());
        Ok(())
    }

    /// A user turn: planning first when no plan is in force, then the executor.
    pub fn run(&mut self, input: String, sink: &mut dyn EventSink) -> Result<Finish, AgentError> {
        if !self.standing.needs_plan() {
            return self.execute(input, sink);
        }
        self.standing.request = input;
        let turn = planner_turn(&self.standing.request, self.standing.report.as_ref(), None);
        let handoff = self.plan(turn, sink)?;
        self.execute(handoff, sink)
    }

    /// `/replan [TEXT]`: the planner plans again now, for TEXT or the request in force.
    pub fn replan(
        &mut self,
        input: String,
        sink: &mut dyn EventSink,
    ) -> Result<Finish, AgentError> {
        if !input.trim().is_empty() || self.standing.request.is_empty() {
            self.standing.request = input;
        }
        let turn = planner_turn(
            &self.standing.request,
            self.standing.report.as_ref(),
            Some(USER_REPLAN),
        );
        let handoff = self.plan(turn, sink)?;
        self.execute(handoff, sink)
    }

    /// Runs the executor, replanning within the turn (a bounded number of times) when it
    /// reports the plan blocked or invalidated.
    fn execute(
        &mut self,
        mut input: String,
        sink: &mut dyn EventSink,
    ) -> Result<Finish, AgentError> {
        let mut replans = 0;
        loop {
            self.take_report();
            let outcome = self.executor.run(input, sink);
            let report = self.take_report();
            let finish = outcome?;
            let Some(report) = report else {
                return Ok(finish);
            };
            let revise = report.status != Status::Done
                && finish == Finish::Answered
                && replans < MAX_REPLANS_PER_TURN;
            // Kept until a new plan replaces it, so a failed or interrupted planning leaves
            // the next turn to plan again.
            self.standing.report = Some(report);
            if !revise {
                return Ok(finish);
            }
            replans += 1;
            let turn = planner_turn(&self.standing.request, self.standing.report.as_ref(), None);
            input = self.plan(turn, sink)?;
        }
    }

    fn take_report(&self) -> Option<Report> {
        self.reported
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// One planner turn; returns the executor's handoff turn carrying the plan.
    fn plan(&mut self, turn: String, sink: &mut dyn EventSink) -> Result<String, AgentError> {
        let planner = self.ready_planner()?;
        let model = planner.provider().model().to_string();
        sink.emit(Event::Notice {
            level: NoticeLevel::Info,
            message: format!("planner ({model}) is planning"),
        });
        planner.run(turn, &mut PlannerSink(sink))?;
        let mut plan = planner.stats().final_text.trim().to_string();
        if plan.is_empty() {
            plan = "(the planner gave no plan: work from the request)".into();
        }
        self.standing.revision += 1;
        self.standing.report = None;
        sink.emit(Event::Notice {
            level: NoticeLevel::Info,
            message: format!("plan {} from {model}:\n{plan}", self.standing.revision),
        });
        Ok(handoff(
            self.standing.revision,
            &model,
            &plan,
            &self.standing.request,
        ))
    }

    /// Builds the planner on first use and points it at the planner session of the
    /// executor's current session.
    fn ready_planner(&mut self) -> Result<&mut Agent, AgentError> {
        let executor_id = self.executor.session().id().to_string();
        if self.planner_for.as_deref() != Some(executor_id.as_str()) {
            let session = self.planner_session()?;
            self.planner = match std::mem::replace(&mut self.planner, Planner::Building) {
                Planner::Pending(parts) => {
                    let parts = *parts;
                    Planner::Ready(Box::new(Agent::new(
                        parts.provider,
                        parts.tools,
                        parts.gate,
                        session,
                        parts.ctx,
                        parts.options,
                    )))
                }
                Planner::Ready(mut agent) => {
                    agent.replace_session(session);
                    Planner::Ready(agent)
                }
                Planner::Building => Planner::Building,
            };
            self.planner_for = Some(executor_id);
        }
        match &mut self.planner {
            Planner::Ready(agent) => Ok(agent),
            // Only after a panic mid-switch: there is no planner left to ask.
            _ => Err(AgentError::Interrupted),
        }
    }

    /// Opens the executor's planner session, or forks the one of the session it was forked
    /// from, or starts one with the executor's system prompt and the planner role.
    fn planner_session(&self) -> Result<Session, AgentError> {
        let executor = self.executor.session();
        let path = planner_path(executor.path(), executor.id());
        if path.is_file() {
            return Ok(Session::open(&path)?);
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let (provider, model) = match &self.planner {
            Planner::Pending(parts) => (parts.provider.name(), parts.provider.model()),
            Planner::Ready(agent) => (agent.provider().name(), agent.provider().model()),
            Planner::Building => ("", ""),
        };
        let mut header = Header::new(
            planner_id(executor.id()),
            provider,
            model,
            Path::new(&executor.header.cwd),
        );
        header.executor = Some(executor.id().to_string());
        if let Some(source) = &executor.header.forked_from {
            let source_path = planner_path(executor.path(), source);
            if source_path.is_file() {
                return Ok(Session::fork(&source_path, dir, header)?);
            }
        }
        let mut session = Session::create(dir, header)?;
        let standing = executor
            .messages()
            .first()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let system = if standing.is_empty() {
            PLANNER_ROLE.to_string()
        } else {
            format!("{standing}\n\n{PLANNER_ROLE}")
        };
        session.push(Message::system(system))?;
        Ok(session)
    }

    /// The planner's and the executor's own requests, usage and cost.
    pub fn models(&self) -> Vec<ModelStats> {
        let mut models = Vec::new();
        let (model, requests, usage, cost_usd) = match &self.planner {
            Planner::Ready(agent) => {
                let stats = agent.stats();
                (
                    agent.provider().model().to_string(),
                    stats.requests + stats.summary_requests,
                    stats.usage,
                    stats.cost_usd,
                )
            }
            _ => (self.planner_model(), 0, Default::default(), 0.0),
        };
        models.push(ModelStats {
            role: "planner",
            model,
            requests,
            usage,
            cost_usd,
        });
        models.extend(agent_stats("executor", &self.executor));
        models
    }
}

/// One agent's share, as [`ModelStats`]: one entry per model that served its requests (the
/// session's model may change between turns, and `--fallback-model` may serve some), the
/// current model's listed even when it served nothing, and holding the requests that failed.
pub fn agent_stats(role: &'static str, agent: &Agent) -> Vec<ModelStats> {
    let stats = agent.stats();
    let current = agent.provider().model();
    let mut models: Vec<ModelStats> = stats
        .by_model
        .iter()
        .map(|share| ModelStats {
            role: if share.fallback { "fallback" } else { role },
            model: share.model.clone(),
            requests: share.requests,
            usage: share.usage,
            cost_usd: share.cost_usd,
        })
        .collect();
    let answered: u32 = models.iter().map(|m| m.requests).sum();
    let failed = (stats.requests + stats.summary_requests).saturating_sub(answered);
    match models
        .iter_mut()
        .find(|m| m.model == current && m.role == role)
    {
        Some(own) => own.requests += failed,
        None => models.push(ModelStats {
            role,
            model: current.to_string(),
            requests: failed,
            usage: crate::provider::Usage::default(),
            cost_usd: 0.0,
        }),
    }
    models
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCall;

    fn status_call(status: &str) -> Message {
        let mut message = Message::assistant(String::new());
        message.tool_calls = vec![ToolCall::new(
            "c1",
            PLAN_STATUS_TOOL,
            json!({"status": status, "note": "n"}).to_string(),
        )];
        message
    }

    #[test]
    fn the_standing_is_read_back_from_the_executor_history() {
        let mut history = vec![Message::system("s")];
        assert!(Standing::of(&history).needs_plan(), "no plan yet");
        history.push(Message::user(handoff(1, "pro", "1. do it", "fix the bug")));
        let standing = Standing::of(&history);
        assert!(!standing.needs_plan());
        assert_eq!(
            (standing.revision, standing.request.as_str()),
            (1, "fix the bug")
        );
        history.push(status_call("blocked"));
        let standing = Standing::of(&history);
        assert_eq!(
            standing.report,
            Some(Report {
                status: Status::Blocked,
                note: "n".into()
            })
        );
        assert!(standing.needs_plan());
        history.push(Message::user(handoff(2, "pro", "2. other", "fix the bug")));
        assert!(
            !Standing::of(&history).needs_plan(),
            "a new plan is in force"
        );
        assert_eq!(Standing::of(&history).revision, 2);
    }

    #[test]
    fn a_malformed_report_is_no_report() {
        let history = vec![
            Message::user(handoff(1, "pro", "p", "r")),
            status_call("finished"),
        ];
        assert!(!Standing::of(&history).needs_plan());
    }

    #[test]
    fn the_planner_gets_only_research_tools() {
        let mut all = Registry::new();
        for tool in builtin::all() {
            all.insert(tool);
        }
        let names = research_tools(&all).names();
        assert_eq!(
            names,
            [
                "read_file",
                "ls",
                "glob",
                "grep",
                "view_image",
                "history",
                "memory"
            ],
            "planner tools"
        );
        let mut some = Registry::new();
        some.insert(Arc::new(builtin::read::ReadFile));
        assert_eq!(research_tools(&some).names(), ["read_file"]);
    }

    #[test]
    fn the_planner_turn_carries_the_report_and_the_request() {
        let report = Report {
            status: Status::Invalidated,
            note: "the API is gone".into(),
        };
        assert_eq!(
            planner_turn("fix it", Some(&report), Some(USER_REPLAN)),
            "<executor_report status=\"invalidated\">\nthe API is gone\n</executor_report>\n\n\
             <replan>The user asked for a new plan.</replan>\n\n<request>\nfix it\n</request>"
        );
        assert_eq!(request_of(&handoff(3, "m", "p", "a\nb")), Some("a\nb"));
        assert_eq!(shown_request(&handoff(3, "m", "p", "fix it")), "fix it");
        assert_eq!(
            shown_request("<request>\nx\n</request>"),
            "<request>\nx\n</request>"
        );
    }

    #[test]
    fn the_planner_session_sits_beside_the_executor_in_its_own_directory() {
        assert_eq!(
            planner_path(Path::new("/s/sessions/abc.jsonl"), "abc"),
            Path::new("/s/sessions/planner/abc-planner.jsonl")
        );
    }
}
