//! The live sessions of the server: each has its agent on a thread of its own, a log of the
//! events it produced (as stream-json values, so the browser reads what `--output-format
//! stream-json` prints), the SSE subscribers that receive them (held to a cap per session and
//! in all, [`Streams`]), and the questions waiting for a person (tool approvals, `ask` cards,
//! plan reviews). A turn runs exactly as in the chat:
//! `Runner::run` with an event sink; approvals and questions block the agent's thread until
//! an answer comes over HTTP or the turn is interrupted. Between turns the thread also applies
//! what the page changed (plan mode, the model, the effort) and runs `/compact`; a session's
//! composition is chosen by opening it, so binding a blank session replaces it.

use std::collections::{HashMap, VecDeque};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

use super::subscriber::Subscriber;
use super::{edits, Factory, Open, Refused, Switch};
use crate::agent::driver::Runner;
use crate::agent::events::{Event, NoticeLevel};
use crate::agent::runner::AgentError;
use crate::cancel::CancelToken;
use crate::command::input::Message;
use crate::command::Catalog as Commands;
use crate::composition::resolve::Binding;
use crate::composition::{Code, CompositionError};
use crate::mcp::McpHost;
use crate::permission::{ApprovalAnswer, ApprovalRequest, Approver, PolicyGate, Posture};
use crate::tool::collab::{Answer, Interact, PlanReview, Question};

/// Events a session keeps for subscribers that join late or reconnect.
const LOG_LIMIT: usize = 20_000;

/// A question waiting for the person, with the channel its answer goes back on.
enum Pending {
    Approval(ApprovalRequest, Sender<ApprovalAnswer>),
    /// An `ask` card: its answer must name one of `options` or, with `free_text`, be typed.
    Ask {
        reply: Sender<Answer>,
        options: usize,
        free_text: bool,
    },
    Plan(Sender<PlanReview>),
}

enum Command {
    Send(Message),
    /// Enter or leave plan mode (between turns).
    Planning(bool),
    /// Use another model from the next turn on.
    Model(Switch),
    /// The reasoning effort from the next turn on (`None`: the provider's default).
    Effort(Option<String>),
    /// `/compact`: fold the conversation now.
    Compact,
    /// `/<profile> TASK`: the subagent profile runs host-side (`Runner::run_profile`).
    Profile {
        name: String,
        task: String,
    },
    Quit,
}

#[derive(Default)]
struct State {
    log: VecDeque<(u64, Arc<str>)>,
    next_event: u64,
    subscribers: Vec<Subscriber>,
    /// The running turn's cancel token.
    running: Option<CancelToken>,
    pending: HashMap<u64, Pending>,
    next_pending: u64,
    /// The conversation as it was when the server opened it, for the page to show.
    history: Vec<Value>,
    /// The latest figures: tokens, cache hits, context, cost.
    status: Value,
    planning: bool,
    /// `provider/model` of the next turn.
    model: String,
    /// Whether a prompt was ever accepted: the composition binding is locked from then on.
    prompted: bool,
    /// The conversation's first prompt, the page's title for it until it is renamed.
    first_prompt: Option<String>,
    /// The title the user gave it in the page (kept while the server runs).
    title: Option<String>,
}

/// How many characters of a title the page gets: a first prompt can be a whole file.
const TITLE_CHARS: usize = 80;

/// `text` on one line (control characters become spaces, runs of blanks one), at most
/// [`TITLE_CHARS`] characters with an ellipsis when cut.
fn one_line_title(text: &str) -> String {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect();
    let line = words.join(" ");
    if line.chars().count() <= TITLE_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(TITLE_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// The event streams open on the whole server, held to a cap per session and in total: each
/// stream keeps a socket and a place in every `publish`, so a client opening them without end
/// would exhaust descriptors and slow every session down.
pub struct Streams {
    open: AtomicUsize,
    pub per_session: usize,
    pub total: usize,
}

impl Streams {
    pub fn new(per_session: usize, total: usize) -> Arc<Streams> {
        Arc::new(Streams {
            open: AtomicUsize::new(0),
            per_session,
            total,
        })
    }

    /// A place for one more stream, if the server has one.
    fn reserve(self: &Arc<Self>) -> Option<Slot> {
        self.open
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.total).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(Arc::clone(self)))
    }

    fn full(&self) -> bool {
        self.open.load(Ordering::SeqCst) >= self.total
    }
}

/// One stream's place in [`Streams`], given back when its subscriber is dropped (however it
/// leaves: a failed write, a closed session, shutdown).
struct Slot(Arc<Streams>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An event stream refused because a cap is reached: the connection, for the 503, and why.
pub struct Full {
    pub stream: TcpStream,
    pub why: String,
}

/// One session the server has open.
pub struct Live {
    pub id: String,
    pub path: PathBuf,
    state: Mutex<State>,
    commands: Mutex<Sender<Command>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    gate: Arc<PolicyGate>,
    /// Built-ins, custom commands and MCP prompts: what a typed `/name` means here.
    pub catalog: Commands,
    /// The session's MCP servers; they stop when the last handle goes.
    pub mcp: Arc<dyn McpHost>,
    pub mcp_status: Value,
    pub binding: Option<Binding>,
    pub cwd: PathBuf,
}

impl Live {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends an event to the log and queues it for every subscriber (each has a writer of
    /// its own, see `subscriber`); one that is gone or too far behind is dropped.
    pub fn publish(&self, value: Value) {
        let mut state = self.lock();
        let id = state.next_event;
        state.next_event += 1;
        let frame: Arc<str> = Arc::from(format!("id: {id}\ndata: {value}\n\n"));
        state.subscribers.retain(|s| s.send(&frame));
        state.log.push_back((id, frame));
        if state.log.len() > LOG_LIMIT {
            state.log.pop_front();
        }
    }

    /// Opens an event stream: writes `head` (the response's status line and headers) and the
    /// events after `after`, and keeps the stream for the rest, with no gap and no repeat
    /// (both under the one lock `publish` takes). Refused, before anything is written, when the
    /// session or the server has as many streams as it serves; a session at its cap first
    /// forgets streams whose clients have gone.
    pub fn subscribe(
        &self,
        stream: TcpStream,
        head: &str,
        after: Option<u64>,
        streams: &Arc<Streams>,
    ) -> Result<(), Full> {
        let mut state = self.lock();
        if state.subscribers.len() >= streams.per_session {
            state.subscribers.retain(|s| !s.closed());
        }
        if state.subscribers.len() >= streams.per_session {
            let why = format!(
                "this conversation already has {} open event streams, the most it serves; close a tab showing it",
                streams.per_session
            );
            return Err(Full { stream, why });
        }
        let Some(slot) = streams.reserve() else {
            let why = format!(
                "the server already has {} open event streams, the most it serves; close some tabs",
                streams.total
            );
            return Err(Full { stream, why });
        };
        // Queued, not written: the writer thread sends them, so no socket is written under
        // the lock. A stream whose writer cannot start is dropped, as a failed write was.
        let backlog = std::iter::once(Arc::from(head))
            .chain(
                state
                    .log
                    .iter()
                    .filter(|(id, _)| after.is_none_or(|after| *id > after))
                    .map(|(_, frame)| Arc::clone(frame)),
            )
            .collect();
        if let Ok(subscriber) = Subscriber::start(stream, backlog, slot) {
            state.subscribers.push(subscriber);
        }
        Ok(())
    }

    /// Forgets the streams whose clients have gone.
    fn prune(&self) {
        self.lock().subscribers.retain(|s| !s.closed());
    }

    /// A comment line to every subscriber, so dead connections are noticed and proxies keep
    /// the stream open.
    pub fn ping(&self) {
        let ping: Arc<str> = Arc::from(": ping\n\n");
        self.lock().subscribers.retain(|s| s.send(&ping));
    }

    /// Ends every event stream once what is queued for it is written (a stalled client is
    /// cut after a short wait), without holding the lock while waiting.
    fn end_streams(&self) {
        let subscribers = std::mem::take(&mut self.lock().subscribers);
        Subscriber::finish_all(subscribers);
    }

    pub fn subscriber_count(&self) -> usize {
        self.lock().subscribers.len()
    }

    /// The session's summary for the API.
    pub fn describe(&self) -> Value {
        let state = self.lock();
        let pending: Vec<u64> = state.pending.keys().copied().collect();
        json!({
            "id": self.id,
            "running": state.running.is_some(),
            "pending": pending,
            "history": state.history,
            "status": state.status,
            "posture": self.gate.posture().as_str(),
            "planning": state.planning,
            "model": state.model,
            "title": state.title.clone().or_else(|| state.first_prompt.clone()).unwrap_or_default(),
            "workspace": self.cwd,
            "agentComposition": self.composition_of(&state),
            "last_event": state.next_event.checked_sub(1),
        })
    }

    /// The composition binding summary: canonical ID, revision, display name, and whether it is locked
    /// (a prompt was accepted, or a turn runs).
    pub fn composition(&self) -> Value {
        let state = self.lock();
        self.composition_of(&state)
    }

    fn composition_of(&self, state: &State) -> Value {
        let locked = state.prompted || state.running.is_some();
        match &self.binding {
            Some(binding) => json!({
                "id": binding.id, "revision": binding.revision, "name": binding.name,
                "bound": true, "locked": locked,
            }),
            None => json!({
                "id": format!("builtin:{}", crate::composition::builtin::GENERAL),
                "revision": null,
                "name": crate::composition::builtin::get(crate::composition::builtin::GENERAL)
                    .map(|d| d.name),
                "bound": false, "locked": locked,
            }),
        }
    }

    /// Whether the binding can no longer change.
    pub fn locked(&self) -> bool {
        let state = self.lock();
        state.prompted || state.running.is_some()
    }

    pub fn model(&self) -> String {
        self.lock().model.clone()
    }

    /// Queues a user message; refused while a turn runs. The first one titles the
    /// conversation.
    pub fn send(&self, message: Message) -> Result<(), String> {
        let title = one_line_title(&message.display);
        self.start_work(Command::Send(message), Some(title))
    }

    /// What the page calls the conversation: the title given to it, else its first prompt
    /// (`""` before one).
    pub fn title(&self) -> String {
        let state = self.lock();
        state
            .title
            .clone()
            .or_else(|| state.first_prompt.clone())
            .unwrap_or_default()
    }

    /// Renames the conversation (an empty title goes back to the first prompt) and tells every
    /// page showing it.
    pub fn set_title(&self, title: &str) {
        let title = one_line_title(title);
        self.lock().title = (!title.is_empty()).then_some(title);
        let shown = self.title();
        self.publish(json!({"type": "title", "title": shown}));
    }

    /// Runs `/<profile> TASK` on the agent's thread, as a turn of its own: the profile runs
    /// host-side and its answer joins the conversation.
    pub fn run_profile(&self, name: String, task: String) -> Result<(), String> {
        let title = one_line_title(&format!("/{name} {task}"));
        self.start_work(Command::Profile { name, task }, Some(title))
    }

    /// Runs `/compact` on the agent's thread, as a turn of its own.
    pub fn compact(&self) -> Result<(), String> {
        self.start_work(Command::Compact, None)
    }

    /// Starts `command` on the agent's thread; `prompt` is the title a user prompt gives a
    /// conversation that has none, set before the turn can start so its events find it.
    fn start_work(&self, command: Command, prompt: Option<String>) -> Result<(), String> {
        {
            let mut state = self.lock();
            if state.running.is_some() {
                return Err("a turn is running; interrupt it or wait".into());
            }
            // Marked running now so a second send cannot slip in before the thread starts.
            state.running = Some(CancelToken::new());
            state.prompted |= prompt.is_some();
            if state.first_prompt.is_none() {
                state.first_prompt = prompt;
            }
        }
        let sent = self
            .commands
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(command);
        if sent.is_err() {
            self.lock().running = None;
            return Err("the session has stopped".into());
        }
        Ok(())
    }

    /// Switches the model for the next turn (a running turn keeps its own).
    pub fn set_model(&self, switch: Switch) -> Result<(), String> {
        let name = switch.name.clone();
        self.command(Command::Model(switch))?;
        self.lock().model = name.clone();
        self.publish(json!({"type": "model", "model": name}));
        Ok(())
    }

    /// Sets the reasoning effort for the next turn.
    pub fn set_effort(&self, effort: Option<String>) -> Result<(), String> {
        self.command(Command::Effort(effort))
    }

    fn command(&self, command: Command) -> Result<(), String> {
        self.commands
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(command)
            .map_err(|_| "the session has stopped".to_string())
    }

    /// Switches the approval posture now (the gate is shared with the agent's thread).
    pub fn set_posture(&self, posture: Posture) -> Result<(), String> {
        if posture == Posture::Strict {
            return Err("strict is for `reasonix run`; use ask, auto or yolo".into());
        }
        self.gate.set_posture(posture);
        self.publish(json!({"type": "posture", "posture": posture.as_str()}));
        Ok(())
    }

    /// Enters or leaves plan mode; applied by the agent's thread before its next turn.
    pub fn set_planning(&self, planning: bool) -> Result<(), String> {
        self.command(Command::Planning(planning))
    }

    /// Interrupts the running turn: its token is cancelled and every waiting question is
    /// answered "no" (their channels close). Whether a turn was running.
    pub fn interrupt(&self) -> bool {
        let mut state = self.lock();
        state.pending.clear();
        match &state.running {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Takes waiting question `id` when `kind` accepts it: an answer of the wrong kind (a
    /// plan decision posted for an `ask` card) leaves the question waiting.
    fn take(&self, id: u64, kind: impl Fn(&Pending) -> bool) -> Option<Pending> {
        let mut state = self.lock();
        if state.pending.get(&id).is_some_and(kind) {
            state.pending.remove(&id)
        } else {
            None
        }
    }

    /// Answers a waiting approval; an error when there is no such approval or the answer is
    /// not one of the four.
    pub fn answer_approval(&self, id: u64, answer: &str) -> Result<(), String> {
        if !matches!(answer, "once" | "session" | "always" | "deny") {
            return Err(format!(
                "unknown answer {answer:?}: once, session, always or deny"
            ));
        }
        let Some(Pending::Approval(request, reply)) =
            self.take(id, |p| matches!(p, Pending::Approval(..)))
        else {
            return Err(format!("no approval {id} is waiting"));
        };
        let answer = match answer {
            "once" => ApprovalAnswer::Once,
            "session" => match request.session_scope() {
                Some(rule) => ApprovalAnswer::Session(rule.clone()),
                None => ApprovalAnswer::Once,
            },
            "always" => match request.always_scope() {
                Some(rule) => ApprovalAnswer::Always(rule.clone()),
                None => ApprovalAnswer::Once,
            },
            _ => ApprovalAnswer::Deny,
        };
        let _ = reply.send(answer);
        self.publish(json!({"type": "answered", "id": id}));
        Ok(())
    }

    pub fn answer_ask(&self, id: u64, answer: Answer) -> Result<(), String> {
        let fits = |pending: &Pending| match (pending, &answer) {
            (Pending::Ask { options, .. }, Answer::Option(i)) => i < options,
            (Pending::Ask { free_text, .. }, Answer::Text(_)) => *free_text,
            (Pending::Ask { .. }, Answer::Dismissed) => true,
            _ => false,
        };
        let Some(Pending::Ask { reply, .. }) = self.take(id, fits) else {
            return Err(format!(
                "no question {id} is waiting for that answer (an option it offers, or text where it allows it)"
            ));
        };
        let _ = reply.send(answer);
        self.publish(json!({"type": "answered", "id": id}));
        Ok(())
    }

    pub fn answer_plan(&self, id: u64, review: PlanReview) -> Result<(), String> {
        let Some(Pending::Plan(reply)) = self.take(id, |p| matches!(p, Pending::Plan(_))) else {
            return Err(format!("no plan review {id} is waiting"));
        };
        let _ = reply.send(review);
        self.publish(json!({"type": "answered", "id": id}));
        Ok(())
    }

    /// Registers a question and publishes it; the receiver gets the answer, or closes when the
    /// turn is interrupted.
    fn wait_for<A>(
        &self,
        make: impl FnOnce(Sender<A>) -> Pending,
        mut event: Value,
    ) -> Receiver<A> {
        let (tx, rx) = mpsc::channel();
        let id = {
            let mut state = self.lock();
            let id = state.next_pending;
            state.next_pending += 1;
            state.pending.insert(id, make(tx));
            id
        };
        event["id"] = json!(id);
        self.publish(event);
        rx
    }
}

/// The gate's approver for one session: the request becomes an `approval` event and the
/// agent's thread waits for the answer. No answer (interrupt, shutdown) denies.
struct WebApprover(Weak<Live>);

impl Approver for WebApprover {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let Some(live) = self.0.upgrade() else {
            return ApprovalAnswer::Deny;
        };
        let event = json!({
            "type": "approval",
            "tool": request.tool,
            "subject": request.subject,
            "args": request.args,
            "rule": request.rule,
            "session_scope": request.session_scope().map(|r| r.to_string()),
            "always_scope": request.always_scope().map(|r| r.to_string()),
            "diff": edits::proposed(&request.tool, &request.args, &live.cwd),
        });
        let rx = live.wait_for(|tx| Pending::Approval(request.clone(), tx), event);
        drop(live);
        rx.recv().unwrap_or(ApprovalAnswer::Deny)
    }
}

/// `ask` cards and plan reviews for one session, answered over HTTP.
struct WebInteract(Weak<Live>);

/// Waits for an answer while watching the turn's cancel token.
fn wait<A>(rx: Receiver<A>, cancel: &CancelToken) -> Option<A> {
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(answer) => return Some(answer),
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) if cancel.is_cancelled() => return None,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

impl Interact for WebInteract {
    fn ask(&self, question: &Question, cancel: &CancelToken) -> Option<Answer> {
        let live = self.0.upgrade()?;
        let event = json!({
            "type": "ask_request",
            "question": question.question,
            "options": question.options,
            "allow_free_text": question.allow_free_text,
        });
        let (options, free_text) = (question.options.len(), question.allow_free_text);
        let rx = live.wait_for(
            |reply| Pending::Ask {
                reply,
                options,
                free_text,
            },
            event,
        );
        drop(live);
        wait(rx, cancel)
    }

    fn review_plan(&self, plan: &str, cancel: &CancelToken) -> Option<PlanReview> {
        let live = self.0.upgrade()?;
        let rx = live.wait_for(Pending::Plan, json!({"type": "plan_review", "plan": plan}));
        drop(live);
        wait(rx, cancel)
    }
}

/// All live sessions.
pub struct Hub {
    factory: Arc<dyn Factory>,
    lives: Mutex<HashMap<String, Arc<Live>>>,
    pub max_sessions: usize,
    streams: Arc<Streams>,
}

impl Hub {
    pub fn new(factory: Arc<dyn Factory>, max_sessions: usize, streams: Arc<Streams>) -> Hub {
        Hub {
            factory,
            lives: Mutex::new(HashMap::new()),
            max_sessions,
            streams,
        }
    }

    /// Opens an event stream on `live` (see [`Live::subscribe`]); with the server at its cap,
    /// the streams whose clients have gone are forgotten first.
    pub fn subscribe(
        &self,
        live: &Live,
        stream: TcpStream,
        head: &str,
        after: Option<u64>,
    ) -> Result<(), Full> {
        if self.streams.full() {
            for other in self.all() {
                other.prune();
            }
        }
        live.subscribe(stream, head, after, &self.streams)
    }

    pub fn factory(&self) -> &dyn Factory {
        self.factory.as_ref()
    }

    pub fn get(&self, id: &str) -> Option<Arc<Live>> {
        self.lives
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    pub fn all(&self) -> Vec<Arc<Live>> {
        let lives = self.lives.lock().unwrap_or_else(PoisonError::into_inner);
        lives.values().cloned().collect()
    }

    /// Opens a session: new or a stored one by id or path. A stored session already open is
    /// returned as it is.
    pub fn open(&self, open: &Open) -> Result<Arc<Live>, Refused> {
        if let Some(reference) = &open.resume {
            if let Some(live) = self.all().into_iter().find(|l| l.id == *reference) {
                return Ok(live);
            }
        }
        if self.all().len() >= self.max_sessions {
            return Err(Refused::Other(format!(
                "{} sessions are open; that is the limit",
                self.max_sessions
            )));
        }
        let (ready_tx, ready_rx) = mpsc::channel::<Result<Arc<Live>, Refused>>();
        let (commands, rx) = mpsc::channel();
        let factory = Arc::clone(&self.factory);
        let wanted = open.clone();
        let handle = std::thread::Builder::new()
            .name("serve-session".into())
            .spawn(move || agent_thread(factory, wanted, commands, rx, ready_tx))
            .map_err(|e| Refused::Other(format!("cannot start a session thread: {e}")))?;
        let live = ready_rx
            .recv()
            .map_err(|_| Refused::Other("the session thread stopped".into()))??;
        *live.thread.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
        self.lives
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(live.id.clone(), Arc::clone(&live));
        Ok(live)
    }

    /// Binds a blank session to composition `id`: a session bound from its first message on
    /// replaces it (the blank one's file goes), on the same model. Refused with
    /// `agent_composition.locked` once a prompt was accepted.
    pub fn rebind(&self, live: &Arc<Live>, id: &str) -> Result<Arc<Live>, Refused> {
        if live.locked() {
            let bound = live.composition()["id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            return Err(Refused::Composition(CompositionError::new(
                Code::Locked,
                format!(
                    "this conversation is bound to {bound} since its first prompt; start a new \
                     conversation with another composition"
                ),
            )));
        }
        let open = Open {
            resume: None,
            composition: Some(id.to_string()),
            model: Some(live.model()),
        };
        let next = self.open(&open)?;
        live.publish(json!({"type": "session_replaced", "session": next.id}));
        self.close(live, true);
        Ok(next)
    }

    /// `/new` and `/clear`: another conversation with the same composition and model; `/clear`
    /// also closes this one and deletes its file. Subscribers are told where to go.
    pub fn replace(&self, live: &Arc<Live>, clear: bool) -> Result<Arc<Live>, Refused> {
        let open = Open {
            resume: None,
            composition: live.binding.as_ref().map(|b| b.id.clone()),
            model: Some(live.model()),
        };
        let next = self.open(&open)?;
        live.publish(json!({"type": "session_replaced", "session": next.id, "cleared": clear}));
        if clear {
            self.close(live, true);
        }
        Ok(next)
    }

    /// Stops one session and waits for its thread, and ends its event streams; `discard`
    /// deletes its file too.
    fn close(&self, live: &Arc<Live>, discard: bool) {
        self.lives
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&live.id);
        live.interrupt();
        let _ = live.command(Command::Quit);
        let handle = live
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
        if discard {
            let _ = std::fs::remove_file(&live.path);
        }
        live.end_streams();
    }

    /// Interrupts every turn, stops every agent thread and waits for them: the sessions'
    /// files are complete when this returns.
    pub fn shutdown(&self) {
        let lives: Vec<Arc<Live>> = self
            .lives
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, l)| l)
            .collect();
        for live in &lives {
            live.interrupt();
            let _ = live
                .commands
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .send(Command::Quit);
        }
        for live in &lives {
            let handle = live
                .thread
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(handle) = handle {
                let _ = handle.join();
            }
            live.publish(json!({"type": "shutdown"}));
            live.end_streams();
        }
    }
}

/// The agent's thread: builds the runner, announces the session, then runs one turn per
/// command until told to quit.
fn agent_thread(
    factory: Arc<dyn Factory>,
    open: Open,
    commands: Sender<Command>,
    rx: Receiver<Command>,
    ready: Sender<Result<Arc<Live>, Refused>>,
) {
    // The approver and the `ask` handler are handed over before the session exists; they
    // reach it through a slot filled in right after.
    let slot: Arc<Mutex<Weak<Live>>> = Arc::new(Mutex::new(Weak::new()));
    let approver = Box::new(SlotApprover(Arc::clone(&slot)));
    let interact = Arc::new(SlotInteract(Arc::clone(&slot)));
    let built = match factory.build(&open, approver, interact) {
        Ok(built) => built,
        Err(err) => {
            let _ = ready.send(Err(err));
            return;
        }
    };
    let mut runner = built.runner;
    let mcp = Arc::clone(&built.mcp);
    let cwd = built.cwd.clone();
    let messages = runner.session().messages();
    let first_prompt = messages
        .iter()
        .find(|m| m.role == crate::provider::Role::User)
        .map(|m| one_line_title(crate::agent::session::typed_text(m)));
    let prompted = first_prompt.is_some();
    let history = messages
        .iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .collect();
    let live = Arc::new(Live {
        id: runner.session().id().to_string(),
        path: runner.session().path().to_path_buf(),
        state: Mutex::new(State {
            history,
            status: status(&runner),
            planning: runner.planning(),
            model: built.model,
            prompted,
            first_prompt,
            ..State::default()
        }),
        commands: Mutex::new(commands),
        thread: Mutex::new(None),
        gate: built.gate,
        catalog: built.commands,
        mcp: built.mcp,
        mcp_status: built.mcp_status,
        binding: built.binding,
        cwd: built.cwd,
    });
    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Arc::downgrade(&live);
    if ready.send(Ok(Arc::clone(&live))).is_err() {
        return;
    }
    let weak = Arc::downgrade(&live);
    drop(live);
    loop {
        let work = match rx.recv() {
            Ok(Command::Send(message)) => Work::Send(message),
            Ok(Command::Compact) => Work::Compact,
            Ok(Command::Profile { name, task }) => Work::Profile(name, task),
            Ok(Command::Planning(planning)) => {
                let Some(live) = weak.upgrade() else { break };
                runner.set_planning(planning);
                live.lock().planning = runner.planning();
                live.publish(json!({"type": "plan_mode", "planning": runner.planning()}));
                continue;
            }
            Ok(Command::Model(switch)) => {
                runner.set_provider(switch.provider, switch.prices);
                continue;
            }
            Ok(Command::Effort(effort)) => {
                runner.options_mut().reasoning_effort = effort;
                continue;
            }
            Ok(Command::Quit) | Err(_) => break,
        };
        let Some(live) = weak.upgrade() else { break };
        let cancel = runner.reset_cancel();
        {
            // An interrupt that came between `send` and here cancelled the placeholder token.
            let mut state = live.lock();
            if state
                .running
                .as_ref()
                .is_some_and(CancelToken::is_cancelled)
            {
                cancel.cancel();
            }
            state.running = Some(cancel);
        }
        // A file-writing call's result carries the diff of what it did to the file.
        let mut snapshots = edits::Snapshots::new(&cwd);
        let mut sink = |event: Event| {
            let diff = snapshots.watch(&event);
            if let Some(mut value) = crate::app::stream_json::stream_json(&event) {
                if let Some(diff) = diff {
                    value["diff"] = diff;
                }
                live.publish(value);
            }
        };
        let result = match work {
            Work::Send(message) => {
                live.publish(json!({"type": "turn_start", "text": message.display}));
                turn(&mut runner, message, &cwd, mcp.as_ref(), &mut sink)
            }
            Work::Profile(name, task) => {
                live.publish(json!({"type": "turn_start", "text": format!("/{name} {task}")}));
                match runner.run_profile(&name, task, &mut |event| sink(event)) {
                    Ok(_) => Ok(()),
                    Err(AgentError::Interrupted) => Err(None),
                    Err(err) => Err(Some(err.to_string())),
                }
            }
            Work::Compact => {
                live.publish(json!({"type": "turn_start", "text": "/compact"}));
                compact(&mut runner, &live, &mut sink)
            }
        };
        let (outcome, error) = match result {
            Ok(()) => ("done", None),
            Err(None) => ("interrupted", None),
            Err(Some(err)) => ("error", Some(err)),
        };
        let figures = status(&runner);
        {
            let mut state = live.lock();
            state.running = None;
            state.pending.clear();
            state.status = figures.clone();
            state.planning = runner.planning();
        }
        live.publish(
            json!({"type": "turn_end", "outcome": outcome, "error": error, "status": figures}),
        );
    }
}

/// What the agent's thread runs as a turn.
enum Work {
    Send(Message),
    Compact,
    Profile(String, String),
}

/// One turn: the message's references are read (as the chat reads them, notices for those
/// that cannot be) and the agent runs. `Err(None)`: interrupted.
fn turn(
    runner: &mut Runner,
    message: Message,
    cwd: &std::path::Path,
    mcp: &dyn McpHost,
    sink: &mut dyn FnMut(Event),
) -> Result<(), Option<String>> {
    let boundary = crate::command::refs::workspace_boundary(cwd);
    let prepared = message
        .prepare(cwd, &boundary, mcp)
        .map_err(|e| Some(e.to_string()))?;
    for message in prepared.notices {
        sink(Event::Notice {
            level: NoticeLevel::Warning,
            message,
        });
    }
    match runner.run(prepared.text, &mut |event| sink(event)) {
        Ok(_) => Ok(()),
        Err(AgentError::Interrupted) => Err(None),
        Err(err) => Err(Some(err.to_string())),
    }
}

/// `/compact`: folds the conversation now and says what happened.
fn compact(
    runner: &mut Runner,
    live: &Live,
    sink: &mut dyn FnMut(Event),
) -> Result<(), Option<String>> {
    match runner.compact_now(&mut |event| sink(event)) {
        Ok(folded) => {
            let text = if folded {
                "compacted the conversation"
            } else {
                "nothing to compact yet"
            };
            live.publish(json!({"type": "command", "command": "compact", "text": text}));
            Ok(())
        }
        Err(AgentError::Interrupted) => Err(None),
        Err(err) => Err(Some(err.to_string())),
    }
}

/// The status line's figures: tokens, cache hit ratio, context size, cost.
fn status(runner: &Runner) -> Value {
    let stats = runner.total_stats();
    let usage = &stats.usage;
    let prompt = usage.cache_hit_tokens + usage.cache_miss_tokens;
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cache_hit_tokens": usage.cache_hit_tokens,
        "cache_hit": if prompt > 0 { Some(usage.cache_hit_tokens as f64 / prompt as f64) } else { None },
        "context_tokens": stats.context_tokens,
        "cost_usd": stats.cost_usd,
        "requests": stats.requests,
    })
}

/// The approver handed to the factory before the session exists; it reaches the session
/// through a slot filled in right after.
struct SlotApprover(Arc<Mutex<Weak<Live>>>);

impl Approver for SlotApprover {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let weak = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        WebApprover(weak).approve(request)
    }
}

struct SlotInteract(Arc<Mutex<Weak<Live>>>);

impl Interact for SlotInteract {
    fn ask(&self, question: &Question, cancel: &CancelToken) -> Option<Answer> {
        let weak = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        WebInteract(weak).ask(question, cancel)
    }

    fn review_plan(&self, plan: &str, cancel: &CancelToken) -> Option<PlanReview> {
        let weak = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        WebInteract(weak).review_plan(plan, cancel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_one_line_and_cut_with_an_ellipsis() {
        assert_eq!(
            one_line_title("  fix\tthe\n\ntests\u{7}now "),
            "fix the tests now"
        );
        let long = "word ".repeat(40);
        let cut = one_line_title(&long);
        assert_eq!(cut.chars().count(), TITLE_CHARS);
        assert!(cut.ends_with('…'), "{cut}");
        assert_eq!(one_line_title(" \n "), "");
    }
}
