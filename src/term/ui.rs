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

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use serde_json::json;

use super::ansi::{self, ColorMode, Line, Palette, Style};
use super::editor::{Editor, History};
use super::keys::{Decoder, Key};
use super::menu::{Menu, MenuKind};
use super::modal::{approval_choices, Choice, Choices, Outcome};
use super::sanitize::one_line;
use super::screen::Screen;
use super::sys::{self, RawMode, Signal};
use super::transcript::{self, Snapshot, Transcript, TurnEnd, EDIT_TOOLS};
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::agent::runner::{Agent, AgentError, Finish, ToolSource};
use crate::agent::session::Session;
use crate::cancel::CancelToken;
use crate::command::mcp::{LaunchAnswer, LaunchApprover, LaunchRequest, McpHost};
use crate::command::{self as commands, Catalog};
use crate::config::CursorShape;
use crate::permission::{ApprovalAnswer, ApprovalRequest, Approver, Gate, PolicyGate, Posture};
use crate::provider::{Prices, Provider, Usage};
use crate::tool::{Tool, ToolContext};

mod builtins;

/// How often the live area animates while something runs.
const TICK: Duration = Duration::from_millis(80);
/// Edit snapshots larger than this are not taken (no diff is shown).
const SNAPSHOT_CAP: u64 = 1024 * 1024;
/// Rows of `!command` output shown when not verbose.
const SHELL_ROWS: usize = 12;

/// Everything the UI thread hears about.
/// What the turn thread does with the agent.
pub(super) enum Work {
    Prompt(String),
    /// `/compact`: fold the conversation now.
    Compact,
}

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

/// The permission gate's approver and the MCP launch approver: each request goes to the UI
/// thread as a modal, and the calling thread waits for the answer. A UI that is gone denies.
pub struct UiApprover {
    tx: Mutex<Sender<Msg>>,
}

impl UiApprover {
    pub fn new(tx: Sender<Msg>) -> UiApprover {
        UiApprover { tx: Mutex::new(tx) }
    }

    fn ask<A>(&self, make: impl FnOnce(Sender<A>) -> Msg) -> Option<A> {
        let (reply, answer) = mpsc::channel();
        let sent = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(make(reply));
        sent.ok()?;
        answer.recv().ok()
    }
}

impl Approver for UiApprover {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.ask(|reply| Msg::Approval(request.clone(), reply))
            .unwrap_or(ApprovalAnswer::Deny)
    }
}

impl LaunchApprover for UiApprover {
    fn approve_launch(&self, request: &LaunchRequest) -> LaunchAnswer {
        self.ask(|reply| Msg::Launch(request.clone(), reply))
            .unwrap_or(LaunchAnswer::Deny)
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

/// One earlier conversation for `/resume`.
#[derive(Debug, Clone)]
pub struct SessionSummary {
    pub id: String,
    pub path: PathBuf,
    pub started: String,
    /// The first user message, shortened.
    pub preview: String,
}

/// What the chat needs from configuration.
pub trait Services {
    /// Configured models as `provider/model` references.
    fn models(&self) -> Vec<String>;
    fn switch_model(&mut self, reference: &str) -> Result<ModelSwitch, String>;
    fn new_session(&mut self) -> Result<Session, String>;
    /// This workspace's sessions, newest first.
    fn sessions(&self) -> Vec<SessionSummary>;
    fn open_session(&mut self, path: &Path) -> Result<Session, String>;
}

/// The parts the CLI assembles for a chat.
pub struct Parts {
    pub tx: Sender<Msg>,
    pub rx: Receiver<Msg>,
    pub agent: Agent,
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
    pub notices: Vec<String>,
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
type Pending = commands::input::Message;

enum Modal {
    Approval(Choices<ApprovalAnswer>, Sender<ApprovalAnswer>),
    Launch(Choices<LaunchAnswer>, Sender<LaunchAnswer>),
    ConfirmClear(Choices<bool>),
    Resume(Choices<Option<PathBuf>>),
    Info(Choices<()>),
}

#[derive(Default)]
struct Totals {
    usage: Usage,
    cost: f64,
    priced: bool,
    /// Prompt plus completion tokens of the last request: the context in use.
    context: u64,
}

/// How a menu item was accepted: Enter runs an argument-less command at once, Tab only
/// completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Accept {
    Enter,
    Tab,
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
    agent: Arc<Mutex<Agent>>,
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
    menu: Option<Menu>,
    /// The first Ctrl-C at an empty prompt arms exit; the second one exits.
    exit_armed: bool,
    /// The last turn was interrupted; the next message says so.
    interrupted: bool,
    exiting: Option<i32>,
    quit: Option<i32>,
}

/// The screen on stdout at the terminal's size, colours decided once from the environment.
fn terminal_screen(cursor: &'static str) -> Screen<io::Stdout> {
    let size = sys::window_size(1).unwrap_or((80, 24));
    let color = ColorMode::detect(
        true,
        std::env::var("TERM").ok().as_deref(),
        std::env::var("NO_COLOR").ok().as_deref(),
    );
    Screen::new(
        io::stdout(),
        Palette::new(color),
        (size.0 as usize, size.1 as usize),
        cursor,
    )
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
    let width = screen.width();
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
        menu: None,
        exit_armed: false,
        interrupted: false,
        exiting: None,
        quit: None,
    };
    chat.banner(&parts.notices);
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

/// Each tool's name and whether it is read-only, for `/tools`.
fn tool_names(agent: &Agent) -> Vec<(String, bool)> {
    let tools = agent.tools();
    tools
        .names()
        .into_iter()
        .map(|n| {
            let read_only = tools.get(&n).is_some_and(|t| t.read_only());
            (n, read_only)
        })
        .collect()
}

fn spawn_input(tx: Sender<Msg>) -> io::Result<()> {
    std::thread::Builder::new()
        .name("term-input".into())
        .spawn(move || {
            let mut decoder = Decoder::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = match sys::read_fd(0, &mut buf) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Msg::InputClosed);
                        return;
                    }
                    Ok(n) => n,
                };
                let mut keys = decoder.feed(&buf[..n]);
                // A lone ESC is the Esc key only if nothing follows it promptly.
                while decoder.has_pending() {
                    match sys::poll_readable(0, 30) {
                        Ok(true) => match sys::read_fd(0, &mut buf) {
                            Ok(n) if n > 0 => keys.extend(decoder.feed(&buf[..n])),
                            _ => keys.extend(decoder.flush()),
                        },
                        _ => keys.extend(decoder.flush()),
                    }
                }
                if !keys.is_empty() && tx.send(Msg::Keys(keys)).is_err() {
                    return;
                }
            }
        })?;
    Ok(())
}

/// The agent's event sink on the turn thread: forwards events, and snapshots files around
/// edit tools so the transcript can show what changed.
struct ChannelSink {
    tx: Sender<Msg>,
    cwd: PathBuf,
    edits: BTreeMap<String, PathBuf>,
}

impl ChannelSink {
    fn snapshot(&self, id: &str, path: &Path, stage: Snapshot) {
        let content = std::fs::metadata(path)
            .ok()
            .filter(|m| m.len() <= SNAPSHOT_CAP)
            .and_then(|_| std::fs::read_to_string(path).ok());
        let _ = self.tx.send(Msg::File {
            id: id.to_string(),
            stage,
            content,
        });
    }
}

impl EventSink for ChannelSink {
    fn emit(&mut self, event: Event) {
        match &event {
            Event::ToolUse {
                id,
                name,
                arguments,
            } if EDIT_TOOLS.contains(&name.as_str()) => {
                let path = serde_json::from_str::<serde_json::Value>(arguments)
                    .ok()
                    .and_then(|v| v.get("path").and_then(|p| p.as_str()).map(str::to_string));
                if let Some(path) = path {
                    let full = self.cwd.join(path);
                    self.snapshot(id, &full, Snapshot::Before);
                    self.edits.insert(id.clone(), full);
                }
            }
            Event::ToolResult { id, is_error, .. } => {
                if let Some(path) = self.edits.remove(id) {
                    if !is_error {
                        self.snapshot(id, &path, Snapshot::After);
                    }
                }
            }
            _ => {}
        }
        let _ = self.tx.send(Msg::Agent(event));
    }
}

/// Reports a turn thread that died without sending its result.
struct TurnGuard {
    tx: Sender<Msg>,
    done: bool,
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.tx.send(Msg::TurnLost);
        }
    }
}

/// Reports a startup thread that died without its result, so messages stop waiting for it.
struct StartupGuard {
    tx: Sender<Msg>,
    done: bool,
}

impl Drop for StartupGuard {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.tx.send(Msg::Started(Err(
                "starting the MCP servers failed (an internal error); the chat goes on without them"
                    .into(),
            )));
        }
    }
}

impl Chat {
    /// The agent when no turn holds it. The UI never waits for the lock: a turn may be
    /// waiting for the UI (an approval), so waiting here could deadlock.
    fn idle_agent(&self) -> Option<MutexGuard<'_, Agent>> {
        match self.agent.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// [`Chat::idle_agent`] for commands: says so when the agent is busy.
    fn agent_or_notice(&mut self) -> Option<MutexGuard<'_, Agent>> {
        if self.agent.try_lock().is_err() && !self.agent.is_poisoned() {
            self.transcript.notice(
                NoticeLevel::Warning,
                "the agent is busy with a turn; try again when it ends (esc interrupts it)",
            );
            return None;
        }
        self.idle_agent()
    }

    fn busy(&self) -> bool {
        self.turn.is_some() || self.preparing.is_some() || self.shell.is_some()
    }

    fn event_loop(&mut self, rx: &Receiver<Msg>) -> i32 {
        self.draw();
        loop {
            let animate = self.busy() || self.starting.is_some() || self.transcript.animating();
            let first = if animate {
                match rx.recv_timeout(TICK) {
                    Ok(msg) => Some(msg),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return 1,
                }
            } else {
                match rx.recv() {
                    Ok(msg) => Some(msg),
                    Err(_) => return 1,
                }
            };
            if let Some(msg) = first {
                self.handle(msg);
            }
            while let Ok(msg) = rx.try_recv() {
                self.handle(msg);
                if self.quit.is_some() {
                    break;
                }
            }
            if let Some(code) = self.quit {
                self.draw();
                return code;
            }
            self.draw();
        }
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Keys(keys) => {
                for key in keys {
                    self.on_key(key);
                }
            }
            Msg::InputClosed => self.request_exit(0),
            Msg::Signal(signal) => self.on_signal(signal),
            Msg::Agent(event) => self.on_agent_event(event),
            Msg::File { id, stage, content } => self.transcript.file_snapshot(&id, stage, content),
            Msg::TurnDone(result) => self.finish_turn(turn_end(result)),
            Msg::TurnLost => self.finish_turn(TurnEnd::Failed(
                "the turn stopped unexpectedly (an internal error); the conversation is saved up to it".into(),
            )),
            Msg::Approval(request, reply) => {
                let rows = self.screen.height().saturating_sub(14).max(4);
                let choices = approval_choices(&request, &self.cwd, self.screen.width(), rows);
                self.open_modal(Modal::Approval(choices, reply));
            }
            Msg::Launch(request, reply) => {
                self.open_modal(Modal::Launch(launch_choices(&request), reply))
            }
            Msg::Prepared(prepared) => self.on_prepared(prepared),
            Msg::ShellDone(result) => self.on_shell_done(result),
            Msg::Started(started) => self.on_started(started),
            Msg::Mcp(event) => self.on_mcp_event(event),
        }
    }

    /// Server logs and progress: progress is shown when it says something new or finishes,
    /// so a chatty server cannot flood the transcript.
    fn on_mcp_event(&mut self, event: crate::mcp::client::ServerEvent) {
        use crate::mcp::client::ServerEvent;
        let text = match event {
            ServerEvent::Log {
                server,
                level,
                text,
            } => format!("{server} ({level}): {text}"),
            ServerEvent::Progress {
                server,
                progress,
                total,
                message,
            } => {
                let done = total.is_some_and(|t| progress >= t);
                let said = message.clone().unwrap_or_default();
                let previous = self.mcp_progress.insert(server.clone(), said.clone());
                if !done && previous.as_deref() == Some(said.as_str()) {
                    return;
                }
                let amount = match total {
                    Some(total) => format!("{progress}/{total}"),
                    None => format!("{progress}"),
                };
                match message {
                    Some(message) => format!("{server}: {amount} {message}"),
                    None => format!("{server}: {amount}"),
                }
            }
        };
        self.transcript.notice(NoticeLevel::Info, &text);
    }

    fn start_up(&mut self, startup: Startup) {
        let tx = self.tx.clone();
        let spawned = std::thread::Builder::new()
            .name("mcp-startup".into())
            .spawn(move || {
                let mut guard = StartupGuard {
                    tx: tx.clone(),
                    done: false,
                };
                let started = startup();
                guard.done = true;
                let _ = tx.send(Msg::Started(Ok(started)));
            });
        match spawned {
            Ok(_) => self.starting = Some(Instant::now()),
            Err(_) => self.transcript.error(
                "could not start a thread for the MCP servers; the chat goes on without them",
            ),
        }
    }

    fn on_started(&mut self, started: Result<Started, String>) {
        match started {
            Ok(started) => {
                for notice in &started.notices {
                    self.transcript.notice(NoticeLevel::Warning, notice);
                }
                self.mcp = started.mcp;
                let custom = self
                    .catalog
                    .entries()
                    .iter()
                    .filter_map(|e| match &e.kind {
                        commands::Kind::Custom(command) => Some(command.clone()),
                        _ => None,
                    })
                    .collect();
                self.catalog = Catalog::new(custom, self.mcp.prompts());
                self.waiting_tools = started.tools;
                self.waiting_source = started.source;
            }
            Err(err) => self.transcript.error(&err),
        }
        self.install_tools();
    }

    /// Gives the agent the started servers' tools once no turn holds it (a `/compact` may),
    /// then lets the waiting messages go.
    fn install_tools(&mut self) {
        if !self.waiting_tools.is_empty() || self.waiting_source.is_some() {
            let tools = std::mem::take(&mut self.waiting_tools);
            let source = self.waiting_source.take();
            let Some(mut agent) = self.idle_agent() else {
                self.waiting_tools = tools;
                self.waiting_source = source;
                return;
            };
            agent.add_tools(tools);
            if let Some(source) = source {
                agent.set_tool_source(source);
            }
            let names = tool_names(&agent);
            drop(agent);
            self.tool_names = names;
        }
        self.starting = None;
        self.next_in_queue();
    }

    fn draw(&mut self) {
        let commit = self.transcript.take();
        let (bottom, cursor) = self.bottom();
        if self.screen.draw(&commit, &bottom, cursor).is_err() {
            // The terminal is gone (hang-up); nothing more can be shown.
            self.quit.get_or_insert(1);
        }
    }

    /// The redrawn region: live output, queued messages, then a modal or the menu and the
    /// composer, then the status line.
    fn bottom(&self) -> (Vec<Line>, Option<(usize, usize)>) {
        let now = Instant::now();
        let width = self.screen.width();
        let mut rows = self
            .transcript
            .live(now, self.turn.as_ref().map(|t| t.started));
        if let Some(started) = self.preparing {
            rows.push(Line::styled(
                format!(
                    "… preparing the message {}",
                    transcript::seconds(now - started)
                ),
                Style::Dim,
            ));
        }
        if let Some(started) = self.starting {
            rows.push(Line::styled(
                format!(
                    "… starting MCP servers {}",
                    transcript::seconds(now - started)
                ),
                Style::Dim,
            ));
        }
        if let Some((_, started, command)) = &self.shell {
            rows.push(Line::styled(
                format!(
                    "! {}  {} · esc to interrupt",
                    one_line(command),
                    transcript::seconds(now - *started)
                ),
                Style::Dim,
            ));
        }
        for pending in &self.queue {
            rows.push(
                Line::styled(
                    format!("  ↳ queued: {}", one_line(&pending.display)),
                    Style::Dim,
                )
                .truncated(width),
            );
        }
        let mut cursor = None;
        match &self.modal {
            Some(modal) => rows.extend(render_modal(modal, width)),
            None => {
                if let Some(menu) = &self.menu {
                    rows.extend(menu.render(width));
                }
                rows.push(Line::styled(
                    "─".repeat(width.saturating_sub(1)),
                    Style::Frame,
                ));
                let layout = self.editor.layout(width.saturating_sub(1), 2);
                cursor = Some((rows.len() + layout.cursor_row, layout.cursor_col));
                for (i, text) in layout.rows.iter().enumerate() {
                    let mut line = Line::styled(if i == 0 { "› " } else { "  " }, Style::Accent);
                    line.push(text.clone(), Style::Plain);
                    rows.push(line);
                }
                if self.editor.is_empty() && !self.busy() {
                    if let Some(first) = rows.last_mut() {
                        first.push("Ask anything · / commands · @ files · ! shell", Style::Dim);
                    }
                }
            }
        }
        rows.push(self.status_line(width));
        (rows, cursor)
    }

    fn status_line(&self, width: usize) -> Line {
        let posture = self.gate.posture();
        let posture_style = match posture {
            Posture::Ask | Posture::Strict => Style::Status,
            Posture::Auto => Style::Warning,
            Posture::Yolo => Style::Error,
        };
        let mut line = Line::styled(format!("{} · ", one_line(&self.model)), Style::Status);
        line.push(posture.as_str(), posture_style);
        let usage = &self.totals.usage;
        let mut parts = vec![format!(
            "↑{} ↓{}",
            short_count(usage.prompt_tokens),
            short_count(usage.completion_tokens)
        )];
        if let Some(ratio) = usage.cache_hit_ratio() {
            parts.push(format!("cache {:.0}%", ratio * 100.0));
        }
        if self.context_window > 0 {
            parts.push(format!(
                "ctx {:.0}%",
                self.totals.context as f64 * 100.0 / self.context_window as f64
            ));
        }
        if self.totals.priced {
            parts.push(format!("${:.4}", self.totals.cost));
        }
        line.push(format!(" · {}", parts.join(" · ")), Style::Status);
        if self.exit_armed {
            line.push("   press Ctrl-C again to exit", Style::Warning);
        } else {
            line.push("   shift-tab: posture · /help", Style::Dim);
        }
        line.truncated(width.saturating_sub(1))
    }

    fn banner(&mut self, notices: &[String]) {
        let mut title = Line::styled("reasonix ", Style::Heading);
        title.push(crate::VERSION, Style::Dim);
        title.push(
            format!(
                "  {}/{} · {}",
                one_line(&self.provider_name),
                one_line(&self.model),
                self.cwd.display()
            ),
            Style::Dim,
        );
        self.transcript.push_line(title);
        self.transcript.push_line(Line::styled(
            "/help for commands · esc interrupts · ctrl-c twice or ctrl-d exits",
            Style::Dim,
        ));
        for notice in notices.iter().chain(self.catalog.notices.clone().iter()) {
            self.transcript.notice(NoticeLevel::Warning, notice);
        }
        self.transcript.gap();
    }

    fn open_modal(&mut self, modal: Modal) {
        self.menu = None;
        if self.modal.is_some() {
            self.waiting_modals.push_back(modal);
        } else {
            self.modal = Some(modal);
        }
    }

    fn close_modal(&mut self) {
        self.modal = self.waiting_modals.pop_front();
    }

    // ----- keys -----

    fn on_key(&mut self, key: Key) {
        if self.modal.is_some() {
            self.modal_key(key);
            return;
        }
        if key != Key::Ctrl('c') {
            self.exit_armed = false;
        }
        match key {
            Key::Ctrl('c') => self.ctrl_c(),
            Key::Ctrl('d') if self.editor.is_empty() => self.request_exit(0),
            Key::Ctrl('d') | Key::Delete => self.edit(Editor::delete),
            Key::Esc => self.escape(),
            Key::BackTab => self.cycle_posture(),
            Key::Ctrl('o') => self.toggle_verbose(),
            Key::Ctrl('l') => {
                let _ = self.screen.clear();
            }
            Key::Ctrl('z') => self.suspend(),
            Key::Enter if self.menu_is_complete() => self.submit(),
            Key::Enter if self.menu.is_some() => self.accept_menu(Accept::Enter),
            Key::Enter => self.submit(),
            Key::Tab if self.menu.is_some() => self.accept_menu(Accept::Tab),
            Key::Up => match &mut self.menu {
                Some(menu) => menu.up(),
                None => {
                    self.editor.up();
                }
            },
            Key::Down => match &mut self.menu {
                Some(menu) => menu.down(),
                None => {
                    self.editor.down();
                }
            },
            Key::Newline | Key::Ctrl('j') => self.edit(|e| e.insert_char('\n')),
            Key::Char(c) if !c.is_control() => self.edit(|e| e.insert_char(c)),
            Key::Paste(text) => self.edit(|e| e.insert(&text)),
            Key::Backspace | Key::Ctrl('h') => self.edit(Editor::backspace),
            Key::Left => self.editor.left(),
            Key::Right => self.editor.right(),
            Key::Home | Key::Ctrl('a') => self.editor.line_start(),
            Key::End | Key::Ctrl('e') => self.editor.line_end(),
            Key::WordLeft | Key::Alt('b') => self.editor.word_left(),
            Key::WordRight | Key::Alt('f') => self.editor.word_right(),
            Key::Ctrl('b') => self.editor.left(),
            Key::Ctrl('f') => self.editor.right(),
            Key::Ctrl('k') => self.edit(Editor::kill_to_end),
            Key::Ctrl('u') => self.edit(Editor::kill_to_start),
            Key::Ctrl('w') | Key::DeleteWordBack => self.edit(Editor::delete_word_back),
            Key::Ctrl('p') => {
                self.editor.up();
            }
            Key::Ctrl('n') => {
                self.editor.down();
            }
            _ => {}
        }
    }

    /// Applies an edit and recomputes the completion menu (a discrete action).
    fn edit(&mut self, change: impl FnOnce(&mut Editor)) {
        change(&mut self.editor);
        self.refresh_menu();
    }

    fn refresh_menu(&mut self) {
        let (start, word) = self.editor.current_word();
        self.menu = Menu::for_token(start, word, &self.catalog, &self.cwd, self.mcp.as_ref());
    }

    /// Whether the word being completed already is the highlighted completion, so Enter
    /// should send rather than complete again.
    fn menu_is_complete(&self) -> bool {
        let Some(item) = self.menu.as_ref().and_then(Menu::chosen) else {
            return false;
        };
        let (_, word) = self.editor.current_word();
        !item.descend && word == item.completion.trim_end()
    }

    fn accept_menu(&mut self, how: Accept) {
        let Some(menu) = self.menu.take() else {
            return;
        };
        let Some(item) = menu.chosen().cloned() else {
            return;
        };
        if menu.kind == MenuKind::Slash && how == Accept::Enter && item.runs_alone {
            self.editor.set_text(item.completion.trim_end());
            self.submit();
            return;
        }
        self.editor
            .replace_before_cursor(menu.start, &item.completion);
        if item.descend {
            self.refresh_menu();
        }
    }

    fn ctrl_c(&mut self) {
        if self.busy() {
            self.cancel_work();
        } else if !self.editor.is_empty() {
            self.editor.clear();
            self.menu = None;
        } else if self.exit_armed {
            self.request_exit(0);
        } else {
            self.exit_armed = true;
        }
    }

    fn escape(&mut self) {
        if self.menu.take().is_some() {
            return;
        }
        if self.busy() {
            self.cancel_work();
        }
    }

    /// Cancels the running turn or shell command; queued messages wait for the next turn.
    fn cancel_work(&mut self) {
        if let Some(turn) = &self.turn {
            turn.cancel.cancel();
        }
        if let Some((cancel, _, _)) = &self.shell {
            cancel.cancel();
        }
    }

    fn cycle_posture(&mut self) {
        let next = match self.gate.posture() {
            Posture::Ask => Posture::Auto,
            Posture::Auto => Posture::Yolo,
            Posture::Yolo | Posture::Strict => Posture::Ask,
        };
        self.gate.set_posture(next);
    }

    fn toggle_verbose(&mut self) {
        let verbose = !self.transcript.verbose();
        self.transcript.set_verbose(verbose);
        let text = if verbose {
            "verbose: reasoning and long tool output are shown in full"
        } else {
            "verbose off: reasoning is summarised and long output folded"
        };
        self.transcript.notice(NoticeLevel::Info, text);
    }

    fn modal_key(&mut self, key: Key) {
        let Some(modal) = self.modal.as_mut() else {
            return;
        };
        let interrupt = key == Key::Ctrl('c');
        match modal {
            Modal::Approval(choices, reply) => {
                if let Outcome::Chosen(answer) = choices.key(&key) {
                    let _ = reply.send(answer);
                    self.close_modal();
                }
            }
            Modal::Launch(choices, reply) => {
                if let Outcome::Chosen(answer) = choices.key(&key) {
                    let _ = reply.send(answer);
                    self.close_modal();
                }
            }
            Modal::ConfirmClear(choices) => match choices.key(&key) {
                Outcome::Chosen(true) => {
                    self.close_modal();
                    self.clear_conversation();
                }
                Outcome::Chosen(false) | Outcome::Closed => self.close_modal(),
                Outcome::Pending => {}
            },
            Modal::Resume(choices) => match choices.key(&key) {
                Outcome::Chosen(Some(path)) => {
                    self.close_modal();
                    self.resume(&path);
                }
                Outcome::Chosen(None) | Outcome::Closed => self.close_modal(),
                Outcome::Pending => {}
            },
            Modal::Info(choices) => {
                if !matches!(choices.key(&key), Outcome::Pending) {
                    self.close_modal();
                }
            }
        }
        if interrupt && self.busy() {
            self.cancel_work();
            self.deny_waiting_approvals();
        }
    }

    /// Answers every open and queued tool approval with Deny (the turn is being cancelled).
    /// Launch grants are not part of a turn; they stay open.
    fn deny_waiting_approvals(&mut self) {
        let mut modals: Vec<Modal> = self.modal.take().into_iter().collect();
        modals.extend(self.waiting_modals.drain(..));
        for modal in modals {
            match modal {
                Modal::Approval(_, reply) => {
                    let _ = reply.send(ApprovalAnswer::Deny);
                }
                other => self.waiting_modals.push_back(other),
            }
        }
        self.close_modal();
    }

    // ----- signals and terminal -----

    fn on_signal(&mut self, signal: Signal) {
        match signal {
            Signal::Interrupt => self.on_key(Key::Ctrl('c')),
            Signal::Terminate(n) => self.request_exit(128 + n),
            Signal::Suspend => self.suspend(),
            Signal::Continue => {
                let _ = self.raw.apply_raw();
                let _ = self.screen.start();
            }
            Signal::Resize => {
                if let Some((w, h)) = sys::window_size(1) {
                    self.screen.resize((w as usize, h as usize));
                    self.transcript.set_width(self.screen.width());
                }
            }
        }
    }

    /// Ctrl-Z: gives the terminal back to the shell until we are continued.
    fn suspend(&mut self) {
        let _ = self.screen.leave();
        self.raw.restore();
        let _ = sys::suspend_self();
        let _ = self.raw.apply_raw();
        let _ = self.screen.start();
    }

    fn request_exit(&mut self, code: i32) {
        if self.turn.is_some() {
            // Leave once the turn has stopped and its partial answer is saved.
            self.exiting = Some(code);
            self.cancel_work();
            self.deny_waiting_approvals();
        } else {
            self.cancel_work();
            self.quit = Some(code);
        }
    }

    // ----- sending -----

    fn submit(&mut self) {
        self.menu = None;
        let text = self.editor.submit();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        crash_failpoint(trimmed);
        if let Some(command) = trimmed.strip_prefix('!') {
            self.shell(command.trim().to_string());
        } else {
            self.typed(trimmed.to_string());
        }
    }

    fn send(&mut self, pending: Pending) {
        if self.busy() || self.starting.is_some() || !self.queue.is_empty() {
            self.queue.push_back(pending);
            return;
        }
        self.prepare(pending);
    }

    /// Resolves `@` references or renders an MCP prompt off this thread.
    fn prepare(&mut self, pending: Pending) {
        self.transcript.user_message(&pending.display);
        self.preparing = Some(Instant::now());
        let tx = self.tx.clone();
        let cwd = self.cwd.clone();
        let mcp = Arc::clone(&self.mcp);
        let spawned = std::thread::Builder::new()
            .name("prepare".into())
            .spawn(move || {
                let prepared = builtins::prepared(pending.prepare(&cwd, mcp.as_ref()));
                let _ = tx.send(Msg::Prepared(prepared));
            });
        if spawned.is_err() {
            self.preparing = None;
            self.transcript
                .error("could not start a thread to prepare the message");
        }
    }

    fn on_prepared(&mut self, prepared: Prepared) {
        self.preparing = None;
        for notice in &prepared.notices {
            self.transcript.notice(NoticeLevel::Warning, notice);
        }
        if !prepared.attached.is_empty() {
            self.transcript.push_line(Line::styled(
                format!("  ⎿ attached {}", one_line(&prepared.attached.join(", "))),
                Style::Dim,
            ));
        }
        match prepared.text {
            Some(text) if self.exiting.is_none() && self.quit.is_none() => self.start_turn(text),
            _ => self.next_in_queue(),
        }
    }

    fn start_turn(&mut self, text: String) {
        let text = if std::mem::take(&mut self.interrupted) {
            format!("[The user interrupted your previous reply.]\n\n{text}")
        } else {
            text
        };
        self.start_work(Work::Prompt(text));
    }

    /// Runs `work` on the turn thread, so the UI stays live while the model answers.
    pub(super) fn start_work(&mut self, work: Work) {
        let Some(cancel) = self.agent_or_notice().map(|mut a| a.reset_cancel()) else {
            return;
        };
        let agent = Arc::clone(&self.agent);
        let tx = self.tx.clone();
        let cwd = self.cwd.clone();
        let spawned = std::thread::Builder::new()
            .name("agent-turn".into())
            .spawn(move || {
                let mut guard = TurnGuard {
                    tx: tx.clone(),
                    done: false,
                };
                let mut sink = ChannelSink {
                    tx: tx.clone(),
                    cwd,
                    edits: BTreeMap::new(),
                };
                let mut agent = agent.lock().unwrap_or_else(PoisonError::into_inner);
                let result = match work {
                    Work::Prompt(text) => agent.run(text, &mut sink),
                    Work::Compact => agent.compact_now(&mut sink).map(|folded| {
                        if !folded {
                            sink.emit(Event::Notice {
                                level: NoticeLevel::Info,
                                message: "nothing to compact yet".into(),
                            });
                        }
                        Finish::Answered
                    }),
                };
                drop(agent);
                guard.done = true;
                let _ = tx.send(Msg::TurnDone(result));
            });
        match spawned {
            Ok(_) => {
                self.turn = Some(Turn {
                    cancel,
                    started: Instant::now(),
                });
            }
            Err(_) => self.transcript.error("could not start the agent thread"),
        }
    }

    fn on_agent_event(&mut self, event: Event) {
        if let Event::Usage { usage, cost_usd } = &event {
            self.totals.usage.add(usage);
            self.totals.context = usage.prompt_tokens + usage.completion_tokens;
            if let Some(cost) = cost_usd {
                self.totals.cost += cost;
                self.totals.priced = true;
            }
        }
        self.transcript.event(&event);
    }

    fn finish_turn(&mut self, end: TurnEnd) {
        self.interrupted = end == TurnEnd::Interrupted;
        self.transcript.end_turn(&end);
        self.turn = None;
        // Approvals cannot outlive their turn.
        self.deny_waiting_approvals();
        if let Some(code) = self.exiting {
            self.quit = Some(code);
            return;
        }
        if !self.waiting_tools.is_empty() || self.waiting_source.is_some() {
            self.install_tools();
        } else if let Some(names) = self.idle_agent().map(|agent| tool_names(&agent)) {
            // The turn may have taken in an MCP server's new tool list.
            self.tool_names = names;
        }
        self.next_in_queue();
    }

    fn next_in_queue(&mut self) {
        if self.busy() || self.starting.is_some() {
            return;
        }
        if let Some(next) = self.queue.pop_front() {
            self.prepare(next);
        }
    }

    // ----- ! shell commands -----

    fn shell(&mut self, command: String) {
        if command.is_empty() {
            return;
        }
        self.transcript.gap();
        let mut echo = Line::styled("! ", Style::Accent);
        echo.push(one_line(&command), Style::Bold);
        self.transcript.push_line(echo);
        if self.busy() {
            self.transcript.notice(
                NoticeLevel::Warning,
                "a turn is running; run ! commands after it (esc interrupts it)",
            );
            return;
        }
        let cancel = CancelToken::new();
        let mut ctx = self.ctx.clone();
        ctx.cancel = cancel.clone();
        let gate = Arc::clone(&self.gate);
        let tx = self.tx.clone();
        let shown = command.clone();
        let spawned = std::thread::Builder::new()
            .name("shell".into())
            .spawn(move || {
                let args = json!({ "command": command });
                let verdict = gate.check("bash", false, &args);
                let result = if verdict.allowed {
                    match crate::tool::builtin::all()
                        .into_iter()
                        .find(|t| t.name() == "bash")
                    {
                        Some(tool) => tool.execute(&args, &ctx).map_err(|e| e.to_string()),
                        None => Err("the bash tool is not available".into()),
                    }
                } else {
                    Err(verdict
                        .message
                        .unwrap_or_else(|| "blocked by the permission policy".into()))
                };
                let _ = tx.send(Msg::ShellDone(result));
            });
        match spawned {
            Ok(_) => self.shell = Some((cancel, Instant::now(), shown)),
            Err(_) => self.transcript.error("could not start the shell thread"),
        }
    }

    fn on_shell_done(&mut self, result: Result<String, String>) {
        self.shell = None;
        let rows = if self.transcript.verbose() {
            200
        } else {
            SHELL_ROWS
        };
        let (text, style) = match &result {
            Ok(output) => (output.as_str(), Style::Plain),
            Err(err) => (err.as_str(), Style::Error),
        };
        let text = super::sanitize::for_display(text);
        let lines: Vec<&str> = text.trim_end().lines().collect();
        if lines.is_empty() {
            self.transcript
                .push_line(Line::styled("  ⎿ (no output)", Style::Dim));
        }
        let width = self.screen.width();
        for (i, line) in lines.iter().take(rows).enumerate() {
            let mut row = Line::styled(if i == 0 { "  ⎿ " } else { "    " }, Style::Dim);
            row.push(super::width::truncate(line, width.saturating_sub(5)), style);
            self.transcript.push_line(row);
        }
        if lines.len() > rows {
            self.transcript.push_line(Line::styled(
                format!("    … {} more lines (ctrl-o for more)", lines.len() - rows),
                Style::Dim,
            ));
        }
        self.transcript.gap();
        self.next_in_queue();
    }
}

fn render_modal(modal: &Modal, width: usize) -> Vec<Line> {
    match modal {
        Modal::Approval(choices, _) => choices.render(width),
        Modal::Launch(choices, _) => choices.render(width),
        Modal::ConfirmClear(choices) => choices.render(width),
        Modal::Resume(choices) => choices.render(width),
        Modal::Info(choices) => choices.render(width),
    }
}

/// The answer to the trust modal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustAnswer {
    /// Believe the project file for this chat only (like `--trust-project`).
    Session,
    /// Store trust in this workspace (like `reasonix trust`).
    Always,
    No,
}

/// Asks whether to trust the workspace, naming the project keys that are ignored until then.
/// Esc, Ctrl-C and a closed terminal answer no. SIGTERM and SIGHUP restore the terminal and
/// exit, as in the chat.
pub fn ask_trust(untrusted: &[String]) -> io::Result<TrustAnswer> {
    let raw = RawMode::enter(0, 1)?;
    sys::watch_signals(|signal| {
        if let Signal::Terminate(n) = signal {
            sys::restore_terminal();
            std::process::exit(128 + n);
        }
    })?;
    let mut screen = terminal_screen("");
    let mut choices = trust_choices(untrusted);
    let mut decoder = Decoder::new();
    let mut buf = [0u8; 1024];
    let answer = loop {
        screen.draw(&[], &choices.render(screen.width()), None)?;
        let n = sys::read_fd(0, &mut buf)?;
        if n == 0 {
            break TrustAnswer::No;
        }
        let mut keys = decoder.feed(&buf[..n]);
        if decoder.has_pending() && !sys::poll_readable(0, 30)? {
            keys.extend(decoder.flush());
        }
        let chosen = keys.iter().find_map(|key| match choices.key(key) {
            Outcome::Chosen(answer) => Some(answer),
            Outcome::Closed => Some(TrustAnswer::No),
            Outcome::Pending => None,
        });
        if let Some(answer) = chosen {
            break answer;
        }
    };
    let said = match answer {
        TrustAnswer::Session => "trusted for this chat",
        TrustAnswer::Always => "trusted; remembered for this workspace",
        TrustAnswer::No => "not trusted",
    };
    screen.draw(&[Line::styled(said, Style::Dim)], &[], None)?;
    screen.leave()?;
    drop(raw);
    Ok(answer)
}

fn trust_choices(untrusted: &[String]) -> Choices<TrustAnswer> {
    Choices {
        title: "Trust this workspace?".into(),
        body: vec![
            Line::styled(
                "./reasonix.toml wants to loosen your settings; until you trust the workspace \
                 it may only tighten them. Ignored:",
                Style::Dim,
            ),
            Line::styled(one_line(&untrusted.join(", ")), Style::Bold),
        ],
        items: vec![
            Choice {
                label: "Yes, for this session".into(),
                key: Some('y'),
                value: TrustAnswer::Session,
            },
            Choice {
                label: "Yes, and remember it for this workspace".into(),
                key: Some('a'),
                value: TrustAnswer::Always,
            },
            Choice {
                label: "No, keep ignoring those settings".into(),
                key: Some('n'),
                value: TrustAnswer::No,
            },
        ],
        selected: 2,
        on_cancel: Some(TrustAnswer::No),
    }
}

fn launch_choices(request: &LaunchRequest) -> Choices<LaunchAnswer> {
    Choices {
        title: format!("Start MCP server {}?", one_line(&request.server)),
        body: vec![
            Line::styled(
                format!(
                    "declared in {} · {}",
                    one_line(&request.origin),
                    one_line(&request.transport)
                ),
                Style::Dim,
            ),
            Line::styled(one_line(&request.detail), Style::Bold),
        ],
        items: vec![
            Choice {
                label: "Yes, for this session".into(),
                key: Some('y'),
                value: LaunchAnswer::Session,
            },
            Choice {
                label: "Yes, and remember it for this workspace".into(),
                key: Some('a'),
                value: LaunchAnswer::Always,
            },
            Choice {
                label: "No".into(),
                key: Some('n'),
                value: LaunchAnswer::Deny,
            },
        ],
        selected: 0,
        on_cancel: Some(LaunchAnswer::Deny),
    }
}

/// The last exchange of a resumed session, so the user sees where they left off.
fn turn_end(result: Result<Finish, AgentError>) -> TurnEnd {
    match result {
        Ok(Finish::Answered) => TurnEnd::Answered,
        Ok(Finish::StepLimit) => TurnEnd::StepLimit,
        Err(AgentError::Interrupted) => TurnEnd::Interrupted,
        Err(err) => TurnEnd::Failed(err.to_string()),
    }
}

fn short_count(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// Debug builds only: `REASONIX_FAILPOINTS=ui-panic` makes the input `/__panic` panic on the UI
/// thread, so the end-to-end tests can prove a crash leaves the terminal usable. Release
/// builds compile this to nothing.
fn crash_failpoint(input: &str) {
    if cfg!(debug_assertions)
        && input == "/__panic"
        && std::env::var("REASONIX_FAILPOINTS").is_ok_and(|v| v.split(',').any(|f| f == "ui-panic"))
    {
        panic!("failpoint ui-panic");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_short() {
        assert_eq!(short_count(999), "999");
        assert_eq!(short_count(12_345), "12.3k");
        assert_eq!(short_count(2_500_000), "2.5M");
    }

    #[test]
    fn approver_relays_requests_and_denies_when_the_ui_is_gone() {
        let (tx, rx) = channel();
        let approver = UiApprover::new(tx);
        let request = ApprovalRequest {
            tool: "bash".into(),
            subject: Some("ls".into()),
            args: json!({"command": "ls"}),
            rule: None,
            scopes: Vec::new(),
        };
        let ui = std::thread::spawn(move || {
            let Ok(Msg::Approval(req, reply)) = rx.recv() else {
                panic!("expected an approval request");
            };
            assert_eq!(req.tool, "bash");
            reply.send(ApprovalAnswer::Once).unwrap();
            drop(rx);
        });
        assert_eq!(approver.approve(&request), ApprovalAnswer::Once);
        ui.join().unwrap();
        assert_eq!(approver.approve(&request), ApprovalAnswer::Deny);
    }

    #[test]
    fn launch_grants_are_asked_through_the_same_channel() {
        let (tx, rx) = channel();
        let approver = UiApprover::new(tx);
        let request = LaunchRequest {
            server: "docs".into(),
            origin: "reasonix.toml".into(),
            transport: "stdio".into(),
            detail: "npx docs-server".into(),
        };
        let ui = std::thread::spawn(move || {
            let Ok(Msg::Launch(req, reply)) = rx.recv() else {
                panic!("expected a launch request");
            };
            let mut choices = launch_choices(&req);
            let text: Vec<String> = choices.render(60).iter().map(Line::text).collect();
            assert!(
                text.iter().any(|l| l.contains("npx docs-server")),
                "{text:?}"
            );
            let Outcome::Chosen(answer) = choices.key(&Key::Char('a')) else {
                panic!("`a` answers");
            };
            reply.send(answer).unwrap();
        });
        assert_eq!(approver.approve_launch(&request), LaunchAnswer::Always);
        ui.join().unwrap();
    }
}
