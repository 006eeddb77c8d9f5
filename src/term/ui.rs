//! The interactive chat: the one thread that writes to the terminal. Everything else talks to
//! it through one channel of [`Msg`]: the input thread (decoded keys), the signal thread,
//! the agent's turn thread (events, its end), the approver (a request plus a reply channel),
//! and helper threads (`@` resolution, MCP prompts, `!` shell commands). Each loop pass
//! handles every waiting message, then draws one frame.
//!
//! The agent sits behind a mutex that the turn thread holds for the whole turn; the UI only
//! locks it while no turn runs, so it never blocks on it. Config-dependent work (switching
//! models, creating and finding sessions) goes through [`Services`], which the CLI provides.
//!
//! MCP servers start on their own thread once the chat is on screen (a [`Startup`]): a
//! project server's launch grant is asked in the chat itself, so it cannot be asked before.
//! Messages typed meanwhile wait in the queue, so the first turn already has the servers'
//! tools.
//!
//! Before the chat opens, [`ask_trust`] shows the trust modal for an untrusted workspace whose
//! `./reasonix.toml` would loosen something: the provider and the permission policy depend on
//! the answer, so it is asked before they are built, on this thread, with its own raw mode.
//!
//! This file owns the chat's state, the types the CLI hands in and gets back, and start-up and
//! teardown ([`run`]). The rest is split by job: `event_loop` (the loop, the input thread,
//! signals), `input` (keys and modals), `send` (Enter, the queue, preparing a message),
//! `turn` (the turn thread and its events), `shell` (`!` commands), `servers` (MCP start-up
//! and notifications), `builtins` (slash commands), `memory` (the `/memory` modal), `draw`
//! (frames and the status line), `approver` (approval and launch requests from other threads),
//! `interact` (`ask` questions and plan reviews from the tools), `ask_card` and `plan_review`
//! (their modals), `todo_panel` (the task list above the input), `goal` (goal mode), `resumed` (the last exchanges
//! of a resumed conversation), `trust` (the trust modal before the chat) and `rewind`
//! (`/rewind`).

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Instant;

use super::ansi::{self, CursorShape};
use super::editor::{Editor, History};
use super::keys::Key;
use super::menu::Menu;
use super::modal::Choices;
use super::screen::Screen;
use super::sys::{self, RawMode, Signal};
use super::transcript::{Snapshot, Transcript};
use crate::agent::coordinator::ModelStats;
use crate::agent::driver::Runner;
use crate::agent::events::{Event, NoticeLevel};
use crate::agent::runner::{AgentError, Finish};
use crate::agent::session::{self, Session};
use crate::cancel::CancelToken;
use crate::command::Catalog;
use crate::mcp::{LaunchAnswer, LaunchRequest, McpHost};
use crate::permission::{ApprovalAnswer, ApprovalRequest, PolicyGate};
use crate::provider::{Prices, Provider, Usage};
use crate::tool::collab::{Answer, PlanReview, Question, Workflow};
use crate::tool::source::ToolSource;
use crate::tool::{Tool, ToolContext};
use ask_card::AskCard;
use plan_review::PlanCard;
use todo_panel::TodoPanel;

mod approver;
mod ask_card;
mod builtins;
mod draw;
mod elicit_form;
mod event_loop;
mod goal;
mod input;
mod interact;
mod memory;
mod plan_review;
mod resumed;
mod rewind;
mod send;
mod servers;
mod shell;
mod todo_panel;
mod trust;
mod turn;

pub use approver::UiApprover;
use draw::terminal_screen;
pub use elicit_form::UiElicitor;
use event_loop::spawn_input;
pub use interact::{Reply, UiInteract};
use servers::tool_names;
pub use trust::{ask_trust, TrustAnswer};

/// What the turn thread does with the agent.
pub(super) enum Work {
    Prompt(String),
    /// `/compact`: fold the conversation now.
    Compact,
    /// `/replan [TEXT]`: a planner/executor pair plans again, then carries on.
    Replan(String),
    /// `/<profile> TASK`: the subagent profile runs host-side and its answer joins the
    /// conversation.
    Profile {
        name: String,
        task: String,
    },
}

/// Everything the UI thread hears about.
pub enum Msg {
    Keys(Vec<Key>),
    /// Stdin reached end of file or failed: the terminal is gone.
    InputClosed,
    Signal(Signal),
    Agent(Event),
    /// A file's content around an edit tool call, taken on the turn thread.
    File {
        id: String,
        stage: Snapshot,
        content: Option<String>,
    },
    TurnDone(Result<Finish, AgentError>),
    /// The turn thread ended without reporting (it panicked).
    TurnLost,
    Approval(ApprovalRequest, Sender<ApprovalAnswer>),
    Launch(LaunchRequest, Sender<LaunchAnswer>),
    /// An `ask` question for the choice card; `None` answers nothing (the card was dropped).
    Ask(Question, Reply<Answer>),
    /// A plan from `exit_plan_mode` for the review modal.
    PlanReview(String, Reply<PlanReview>),
    /// The asker of a question or plan stopped waiting: its card closes.
    Withdrawn,
    Prepared(Prepared),
    ShellDone(Result<String, String>),
    /// The [`Startup`] finished (or its thread died, with the reason).
    Started(Result<Started, String>),
    /// A progress or log notification from an MCP server.
    Mcp(crate::mcp::client::ServerEvent),
}

/// Starts the MCP servers; runs on its own thread while the chat is already on screen.
pub type Startup = Box<dyn FnOnce() -> Started + Send>;

/// What a [`Startup`] brings to the chat.
pub struct Started {
    /// Added to the agent before the next turn.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Where the agent gets later changes of those tools from.
    pub source: Option<Box<dyn ToolSource>>,
    /// Replaces the MCP host the chat opened with.
    pub mcp: Arc<dyn McpHost>,
    /// Servers that failed or were not started.
    pub notices: Vec<String>,
    /// The MCP tool contracts a bound conversation pins now and records in its session
    /// header; `None` when unbound or already recorded.
    pub contracts: Option<std::collections::BTreeMap<String, String>>,
}

/// A message ready to send, after `@` resolution or MCP prompt rendering.
pub struct Prepared {
    /// `None` when preparing failed (the notices say why) and nothing is sent.
    pub text: Option<String>,
    pub attached: Vec<String>,
    pub notices: Vec<String>,
}

pub fn channel() -> (Sender<Msg>, Receiver<Msg>) {
    mpsc::channel()
}

/// Sends `lost` if a worker thread ends without its result (it panicked), so the UI stops
/// waiting for it. [`LostGuard::done`] disarms it once the result is on its way.
struct LostGuard {
    tx: Sender<Msg>,
    lost: Option<Msg>,
}

impl LostGuard {
    fn new(tx: Sender<Msg>, lost: Msg) -> LostGuard {
        LostGuard {
            tx,
            lost: Some(lost),
        }
    }

    fn done(&mut self) {
        self.lost = None;
    }
}

impl Drop for LostGuard {
    fn drop(&mut self) {
        if let Some(lost) = self.lost.take() {
            let _ = self.tx.send(lost);
        }
    }
}

/// A model switch prepared by the CLI.
pub struct ModelSwitch {
    pub provider: Box<dyn Provider>,
    pub provider_name: String,
    pub model: String,
    pub context_window: u64,
    pub prices: Option<Prices>,
}

/// What the chat needs from configuration.
pub trait Services {
    /// Configured models as `provider/model` references.
    fn models(&self) -> Vec<String>;
    fn switch_model(&mut self, reference: &str) -> Result<ModelSwitch, String>;
    fn new_session(&mut self) -> Result<Session, String>;
    /// This workspace's sessions, newest first.
    fn sessions(&self) -> Vec<session::Summary>;
    /// `/resume`: the chat rebuilt for the conversation at `path` through the same binding
    /// checks as `--resume` (its retained composition, or history only when that cannot run
    /// here). Nothing changes on an error.
    fn resume(&mut self, path: &Path) -> Result<Box<Switched>, String>;
    /// `/new` or `/clear` in a history-only chat: the chat rebuilt as it started, in a new
    /// conversation.
    fn fresh(&mut self) -> Result<Box<Switched>, String>;
    /// `/agent [ID]`: the composition catalog, or choosing one (`blank`: no prompt yet),
    /// which rebuilds the chat's agent for it.
    fn agent(&mut self, _args: &str, _blank: bool) -> Result<AgentAnswer, String> {
        Err(crate::i18n::tr(crate::i18n::Ui::AgentUnavailable).into())
    }
    /// `/persona [prefix TEXT | suffix TEXT | clear]`: the user-config persona.
    fn persona(&mut self, _args: &str) -> Result<String, String> {
        Err(crate::i18n::tr(crate::i18n::Ui::PersonaUnavailable).into())
    }
}

/// What `/agent` answered: text to show, or the chat rebuilt for another composition.
pub enum AgentAnswer {
    Text(String),
    Switched(Box<Switched>),
}

/// The chat rebuilt for another agent composition or another conversation (persona, tools,
/// skills, commands, hooks, MCP servers): it replaces the agent, its context, the command
/// catalog and the MCP servers.
pub struct Switched {
    pub agent: Runner,
    pub ctx: ToolContext,
    pub catalog: Catalog,
    pub mcp: Arc<dyn McpHost>,
    /// The composition's MCP servers, started like the chat's first ones.
    pub startup: Option<Startup>,
    pub notices: Vec<(NoticeLevel, String)>,
    /// What to tell the user (nothing when empty).
    pub message: String,
    /// The conversation can be read but not continued.
    pub history_only: Option<HistoryOnly>,
}

/// A conversation opened as history only: its retained agent composition cannot run here, so
/// no prompt, `!` command or compaction reaches the model or the shell, and no MCP server
/// starts.
#[derive(Debug, Clone)]
pub struct HistoryOnly {
    /// The stable refusal code, e.g. `agent_composition.unavailable`.
    pub code: String,
    /// The whole refusal: why, and what would let it continue.
    pub reason: String,
}

/// The parts the CLI assembles for a chat.
pub struct Parts {
    pub tx: Sender<Msg>,
    pub rx: Receiver<Msg>,
    /// The agent, or a planner/executor pair (the runner derefs to the executor).
    pub agent: Runner,
    pub gate: Arc<PolicyGate>,
    /// For `!` commands: the agent's context with its own cancel token per command.
    pub ctx: ToolContext,
    pub services: Box<dyn Services>,
    pub catalog: Catalog,
    pub mcp: Arc<dyn McpHost>,
    /// MCP servers still to start; `None` when none are declared.
    pub startup: Option<Startup>,
    pub history: History,
    pub cwd: PathBuf,
    pub cursor_shape: CursorShape,
    pub provider_name: String,
    pub model: String,
    pub context_window: u64,
    /// Shown under the banner (skipped command files, config warnings, a resumed session).
    pub notices: Vec<(NoticeLevel, String)>,
    /// The resumed conversation can be read but not continued.
    pub history_only: Option<HistoryOnly>,
}

/// How the chat ended.
pub struct Exit {
    pub code: i32,
    pub session_id: String,
    pub session_path: PathBuf,
    /// Whether the conversation has a user turn, so it is worth resuming.
    pub resumable: bool,
}

/// A message waiting to be prepared and sent.
type Pending = crate::command::input::Message;

enum Modal {
    Approval(Choices<ApprovalAnswer>, Sender<ApprovalAnswer>),
    Launch(Choices<LaunchAnswer>, Sender<LaunchAnswer>),
    ConfirmClear(Choices<bool>),
    Resume(Choices<Option<PathBuf>>),
    Info(Choices<()>),
    /// `/memory`: saved facts, with search, read, forget and restore.
    Memory(memory::MemoryView),
    Rewind(Box<rewind::Rewind>),
    Ask(AskCard, Reply<Answer>),
    Plan(PlanCard, Reply<PlanReview>),
}

impl Modal {
    /// An input-owned overlay: the composer stays and takes the keys (§ "CLI modal/composer
    /// ownership"); every other modal hides it.
    fn owns_input(&self) -> bool {
        match self {
            Modal::Ask(card, _) => card.owns_input(),
            Modal::Plan(card, _) => card.owns_input(),
            _ => false,
        }
    }

    /// A card no one waits for any more.
    fn withdrawn(&self) -> bool {
        match self {
            Modal::Ask(_, reply) => reply.withdrawn(),
            Modal::Plan(_, reply) => reply.withdrawn(),
            _ => false,
        }
    }

    /// Part of the running turn: answered (or dropped) when the turn is cancelled.
    fn belongs_to_turn(&self) -> bool {
        matches!(self, Modal::Approval(..) | Modal::Ask(..) | Modal::Plan(..))
    }
}

#[derive(Default)]
struct Totals {
    usage: Usage,
    cost: f64,
    priced: bool,
    /// Prompt plus completion tokens of the last request: the context in use.
    context: u64,
    /// A planner/executor pair's figures per model, as of the last turn's end; empty for a
    /// single agent.
    models: Vec<ModelStats>,
}

struct Turn {
    cancel: CancelToken,
    started: Instant,
}

struct Chat {
    /// The last progress message shown per MCP server.
    mcp_progress: BTreeMap<String, String>,
    screen: Screen<io::Stdout>,
    raw: RawMode,
    editor: Editor,
    transcript: Transcript,
    tx: Sender<Msg>,
    agent: Arc<Mutex<Runner>>,
    gate: Arc<PolicyGate>,
    ctx: ToolContext,
    services: Box<dyn Services>,
    catalog: Catalog,
    mcp: Arc<dyn McpHost>,
    cwd: PathBuf,
    tool_names: Vec<(String, bool)>,
    /// Since when MCP servers are starting (until their tools are in the agent); messages
    /// wait meanwhile.
    starting: Option<Instant>,
    /// Tools from the startup waiting for the agent to be idle.
    waiting_tools: Vec<Arc<dyn Tool>>,
    waiting_source: Option<Box<dyn ToolSource>>,
    /// MCP contracts for the bound conversation's header, recorded with those tools.
    waiting_contracts: Option<std::collections::BTreeMap<String, String>>,
    provider_name: String,
    model: String,
    context_window: u64,
    totals: Totals,
    turn: Option<Turn>,
    preparing: Option<Instant>,
    shell: Option<(CancelToken, Instant, String)>,
    queue: VecDeque<Pending>,
    modal: Option<Modal>,
    waiting_modals: VecDeque<Modal>,
    /// The composer's text while an input-owned overlay borrows it; put back when it closes.
    draft: Option<String>,
    /// Plan mode, shared with the agent: the status line reads it every frame, so a change
    /// the agent makes mid-turn (an approved plan) shows at once.
    workflow: Arc<Mutex<Workflow>>,
    /// The active goal (goal mode), shared with the turn thread that drives it.
    goal: Arc<Mutex<Option<crate::agent::goal::Goal>>>,
    todo_panel: TodoPanel,
    menu: Option<Menu>,
    /// The first Ctrl-C at an empty prompt arms exit; the second one exits.
    exit_armed: bool,
    /// The last turn was interrupted; the next message says so.
    interrupted: bool,
    /// A prompt was accepted in this conversation: its composition is locked, also after
    /// `/clear` or `/rewind`; only `/new` starts an unlocked one.
    prompted: bool,
    /// The conversation is history only: nothing is sent until another one is opened.
    history_only: Option<HistoryOnly>,
    exiting: Option<i32>,
    quit: Option<i32>,
}

/// Runs the chat on this thread until the user leaves. Fails only if the terminal cannot be
/// put into raw mode.
pub fn run(parts: Parts) -> io::Result<Exit> {
    let raw = RawMode::enter(0, 1)?;
    let mut screen = terminal_screen(ansi::cursor_shape(parts.cursor_shape));
    screen.start()?;
    spawn_input(parts.tx.clone())?;
    let signal_tx = Mutex::new(parts.tx.clone());
    sys::watch_signals(move |signal| {
        let _ = signal_tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(Msg::Signal(signal));
    })?;
    let tool_names = tool_names(&parts.agent);
    let workflow = parts.agent.workflow();
    let todos = parts.agent.todos();
    let prompted = parts.agent.session().turns() > 0;
    let width = screen.width();
    let resumed = resumed::last_exchanges(parts.agent.session().messages(), width);
    let mut chat = Chat {
        mcp_progress: BTreeMap::new(),
        screen,
        raw,
        editor: Editor::new(parts.history),
        transcript: Transcript::new(width),
        tx: parts.tx,
        agent: Arc::new(Mutex::new(parts.agent)),
        gate: parts.gate,
        ctx: parts.ctx,
        services: parts.services,
        catalog: parts.catalog,
        mcp: parts.mcp,
        cwd: parts.cwd,
        tool_names,
        starting: None,
        waiting_tools: Vec::new(),
        waiting_source: None,
        waiting_contracts: None,
        provider_name: parts.provider_name,
        model: parts.model,
        context_window: parts.context_window,
        totals: Totals::default(),
        turn: None,
        preparing: None,
        shell: None,
        queue: VecDeque::new(),
        modal: None,
        waiting_modals: VecDeque::new(),
        draft: None,
        workflow,
        goal: Arc::default(),
        todo_panel: TodoPanel::new(todos),
        menu: None,
        exit_armed: false,
        interrupted: false,
        prompted,
        history_only: None,
        exiting: None,
        quit: None,
    };
    chat.banner(&parts.notices);
    chat.open_history_only(parts.history_only);
    if !resumed.is_empty() {
        chat.transcript.push_lines(resumed);
        chat.transcript.gap();
    }
    if let Some(startup) = parts.startup {
        chat.start_up(startup);
    }
    let rx = parts.rx;
    let code = chat.event_loop(&rx);
    let _ = chat.screen.leave();
    // Nothing answers from now on: pending and future approvals are denied, a running turn
    // is cancelled, and its end is awaited before the session is read.
    drop(rx);
    chat.cancel_work();
    let (session_id, session_path, resumable) = {
        let agent = chat.agent.lock().unwrap_or_else(PoisonError::into_inner);
        let session = agent.session();
        let has_turns = session
            .messages()
            .iter()
            .any(|m| m.role == crate::provider::Role::User);
        (
            session.id().to_string(),
            session.path().to_path_buf(),
            has_turns,
        )
    };
    drop(chat);
    Ok(Exit {
        code,
        session_id,
        session_path,
        resumable,
    })
}

impl Chat {
    /// The agent when no turn holds it. The UI never waits for the lock: a turn may be
    /// waiting for the UI (an approval), so waiting here could deadlock.
    fn idle_agent(&self) -> Option<MutexGuard<'_, Runner>> {
        match self.agent.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// [`Chat::idle_agent`] for commands: says so when the agent is busy.
    fn agent_or_notice(&mut self) -> Option<MutexGuard<'_, Runner>> {
        if self.agent.try_lock().is_err() && !self.agent.is_poisoned() {
            self.transcript.notice(
                NoticeLevel::Warning,
                crate::i18n::tr(crate::i18n::Ui::AgentBusy),
            );
            return None;
        }
        self.idle_agent()
    }

    fn planning(&self) -> bool {
        self.workflow
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .planning
    }

    fn busy(&self) -> bool {
        self.turn.is_some() || self.preparing.is_some() || self.shell.is_some()
    }
}
