//! A session driven by the Agent SDK over `--input-format stream-json`: a reader thread turns
//! stdin lines into user messages and control requests (and hands responses to our own
//! requests straight to `control_calls`, so a turn waiting on `can_use_tool` is never stuck
//! behind the loop); one worker thread owns the agent ([`Turns`]) and runs the turns in the
//! order their messages came, answering the requests that need the agent between them; the
//! loop itself answers at once what must not wait for a turn: `interrupt` (cancels the running
//! turn) and `set_permission_mode`. The session ends when stdin closes and the turns already
//! received have run. What a turn prints (the stream-json messages and the result) is the
//! print-mode front end's; this file only schedules.

use std::io::BufRead;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use super::control::{self, ControlError, Inbound, Initialize, SdkRequest};
use super::control_calls::{Calls, LineSink};
use super::control_hooks::hooks_from_initialize;
use crate::agent::hooks::Hook;
use crate::cancel::CancelToken;

/// The agent side of an SDK session; implemented by the print-mode front end.
pub trait Turns {
    /// Runs one user turn under `cancel`, writing its messages and its `result` line.
    fn run_turn(&mut self, prompt: String, cancel: CancelToken);
    /// Adds the SDK's hooks (from `initialize`) to the session's own.
    fn add_hooks(&mut self, hooks: Vec<Hook>);
    /// The body of the `initialize` answer (see [`control::initialize_answer`]).
    fn initialize_answer(&self) -> Value;
    /// `set_model`: `None` returns to the configured model.
    fn set_model(&mut self, model: Option<&str>) -> Result<(), String>;
    /// The `mcp_status` answer: `{"mcpServers": [...]}`.
    fn mcp_status(&self) -> Value;
    /// The `get_context_usage` answer.
    fn context_usage(&self) -> Value;
}

/// The running turn's cancel token, set by the worker as each turn starts and read by the
/// SDK approver (an interrupt ends its wait).
pub type CurrentTurn = Arc<Mutex<CancelToken>>;

/// Applies a `set_permission_mode` (Claude's mode name); the error text refuses it.
pub type SetMode = Box<dyn Fn(&str) -> Result<(), String> + Send>;

/// What the session needs besides the agent.
pub struct Wiring {
    pub calls: Arc<Calls>,
    pub out: Arc<dyn LineSink>,
    pub current: CurrentTurn,
    /// `set_permission_mode`, applied at once (the gate's posture); the error refuses it.
    pub set_mode: SetMode,
    /// Lines for the user (stderr): bad stdin lines, SDK options we do not honour.
    pub notice: Arc<dyn Fn(String) + Send + Sync>,
}

/// What print mode sets up for an SDK session before the agent exists: the channel the
/// approver and the hooks ask through, and the running turn's token.
#[derive(Clone)]
pub struct SdkLink {
    pub calls: Arc<Calls>,
    pub out: Arc<dyn LineSink>,
    pub current: CurrentTurn,
    /// stdin's lines, taken once by the session.
    pub reads: Arc<Mutex<Option<Reads>>>,
}

impl SdkLink {
    /// A link on this process's stdin and stdout; stdin is read from now on.
    pub fn stdio() -> std::io::Result<SdkLink> {
        let out: Arc<dyn LineSink> = Arc::new(StdoutLines);
        let calls = Arc::new(Calls::new(Arc::clone(&out)));
        let reads = start_reader(std::io::BufReader::new(std::io::stdin()), &calls)?;
        Ok(SdkLink {
            calls,
            out,
            current: Arc::default(),
            reads: Arc::new(Mutex::new(Some(reads))),
        })
    }

    /// See [`Reads::first_initialize`]; `None` also once the session took the lines.
    pub fn first_initialize(&self) -> Option<Initialize> {
        self.reads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .and_then(Reads::first_initialize)
    }

    /// stdin's lines for the session; `None` once taken.
    pub fn take_reads(&self) -> Option<Reads> {
        self.reads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// Writes each control line to stdout in one locked write, so it never splits a line of the
/// message stream (which writes whole lines too).
struct StdoutLines;

impl LineSink for StdoutLines {
    fn send_line(&self, line: &str) -> std::io::Result<()> {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(line.as_bytes())?;
        stdout.flush()
    }
}

/// Work for the thread that owns the agent.
enum Job {
    Turn(String, CancelToken),
    Initialize { id: String, init: Initialize },
    SetModel { id: String, model: Option<String> },
    McpStatus { id: String },
    ContextUsage { id: String },
}

/// What the reader thread hands the loop.
pub enum Read {
    Line(Inbound),
    Bad(ControlError),
    End(String),
}

/// The lines the reader has taken from stdin, in order, for [`serve`]; `first` is a line read
/// early ([`Reads::first_initialize`]) and not yet handled.
pub struct Reads {
    first: Option<Read>,
    rest: Receiver<Read>,
}

impl Reads {
    /// The SDK's `initialize` request when it is the first line on stdin, as both SDKs send it
    /// (the TypeScript one puts the system prompt, structured output and its in-process MCP
    /// servers there, which must be known before the session opens). Waits for that first
    /// line; the line stays first for [`serve`] to answer.
    pub fn first_initialize(&mut self) -> Option<Initialize> {
        if self.first.is_none() {
            self.first = self.rest.recv().ok();
        }
        match &self.first {
            Some(Read::Line(Inbound::Request {
                request: SdkRequest::Initialize(init),
                ..
            })) => Some(init.clone()),
            _ => None,
        }
    }
}

/// Starts reading `input` at once: answers to our requests are delivered from then on (the
/// SDK's in-process MCP servers answer while the session is still being set up), the rest
/// waits for [`serve`].
pub fn start_reader<R: BufRead + Send + 'static>(
    input: R,
    calls: &Arc<Calls>,
) -> std::io::Result<Reads> {
    let (read_tx, read_rx) = mpsc::channel();
    let calls = Arc::clone(calls);
    std::thread::Builder::new()
        .name("sdk-stdin".into())
        .spawn(move || read_stdin(input, &calls, &read_tx))?;
    Ok(Reads {
        first: None,
        rest: read_rx,
    })
}

/// Runs the session until stdin ends and every received turn has run. The turns run on the
/// calling thread (the agent and its output stay where they were made); the loop gets a
/// thread of its own.
pub fn serve<T: Turns>(turns: &mut T, reads: Reads, wiring: Wiring) -> std::io::Result<()> {
    let (job_tx, job_rx) = mpsc::channel();
    let calls = Arc::clone(&wiring.calls);
    let out = Arc::clone(&wiring.out);
    let current = Arc::clone(&wiring.current);
    let notice = Arc::clone(&wiring.notice);
    // When stdin ends the loop returns and drops the job sender: the turns already queued
    // still run, then `work` returns.
    std::thread::Builder::new()
        .name("sdk-control".into())
        .spawn(move || dispatch(reads, &job_tx, &wiring))?;
    work(
        turns,
        &job_rx,
        &calls,
        out.as_ref(),
        &current,
        notice.as_ref(),
    );
    Ok(())
}

/// The reader: one stdin line at a time, responses delivered where they are awaited.
fn read_stdin<R: BufRead>(mut input: R, calls: &Calls, tx: &Sender<Read>) {
    loop {
        let read = match control::read_inbound(&mut input) {
            Ok(None) => Read::End("stdin closed".into()),
            Err(e) => Read::End(format!("reading stdin: {e}")),
            Ok(Some(Err(bad))) => Read::Bad(bad),
            Ok(Some(Ok(Inbound::Response {
                request_id,
                outcome,
            }))) => {
                calls.deliver(&request_id, outcome);
                continue;
            }
            Ok(Some(Ok(inbound))) => Read::Line(inbound),
        };
        if let Read::End(why) = &read {
            // Whatever waits for an answer will not get one now.
            calls.close(why);
            let _ = tx.send(read);
            return;
        }
        if tx.send(read).is_err() {
            return;
        }
    }
}

/// The loop: answers what cannot wait, queues the rest for the worker.
fn dispatch(reads: Reads, jobs: &Sender<Job>, wiring: &Wiring) {
    let answer = |line: String| {
        // stdout gone means the SDK is gone; the end of stdin follows.
        let _ = wiring.out.send_line(&line);
    };
    // The tokens of the turns received since the last interrupt: an interrupt stops the
    // running turn and those still queued, even one whose message arrived just before it.
    let mut unfinished: Vec<CancelToken> = Vec::new();
    for read in reads.first.into_iter().chain(reads.rest.iter()) {
        let (id, request) = match read {
            Read::End(_) => return,
            Read::Bad(error) => {
                (wiring.notice)(format!("{error}; the line is ignored"));
                continue;
            }
            Read::Line(Inbound::User(user)) => {
                if user.parent_tool_use_id.is_some() {
                    (wiring.notice)(
                        "control: a user message for a subagent (parent_tool_use_id) is ignored"
                            .into(),
                    );
                    continue;
                }
                let cancel = CancelToken::new();
                unfinished.retain(|t| !t.is_cancelled());
                unfinished.push(cancel.clone());
                let _ = jobs.send(Job::Turn(user.text, cancel));
                continue;
            }
            Read::Line(Inbound::Request {
                request_id,
                request,
            }) => (request_id, request),
            // We run no long handler for the SDK's requests outside the worker's queue, so
            // there is nothing to withdraw; the answer, when it comes, is ignored by the SDK.
            Read::Line(Inbound::Cancel { .. } | Inbound::Nothing | Inbound::Response { .. }) => {
                continue
            }
        };
        let job = match request {
            SdkRequest::Interrupt => {
                for turn in unfinished.drain(..) {
                    turn.cancel();
                }
                answer(control::success(&id, Value::Object(Default::default())));
                continue;
            }
            SdkRequest::SetPermissionMode(mode) => {
                answer(match (wiring.set_mode)(&mode) {
                    Ok(()) => control::success(&id, serde_json::json!({"mode": mode})),
                    Err(why) => control::failure(&id, &why),
                });
                continue;
            }
            SdkRequest::Unsupported(subtype) => {
                answer(control::failure(
                    &id,
                    &control::unsupported_message(&subtype),
                ));
                continue;
            }
            SdkRequest::Initialize(init) => Job::Initialize { id, init },
            SdkRequest::SetModel(model) => Job::SetModel { id, model },
            SdkRequest::McpStatus => Job::McpStatus { id },
            SdkRequest::GetContextUsage => Job::ContextUsage { id },
        };
        let _ = jobs.send(job);
    }
}

/// The worker: owns the agent, runs each job in order.
fn work<T: Turns>(
    turns: &mut T,
    jobs: &Receiver<Job>,
    calls: &Arc<Calls>,
    out: &dyn LineSink,
    current: &CurrentTurn,
    notice: &(dyn Fn(String) + Send + Sync),
) {
    let answer = |line: String| {
        let _ = out.send_line(&line);
    };
    for job in jobs {
        match job {
            Job::Turn(prompt, cancel) => {
                *current.lock().unwrap_or_else(PoisonError::into_inner) = cancel.clone();
                turns.run_turn(prompt, cancel.clone());
                // Marks the turn finished, so the loop stops keeping its token.
                cancel.cancel();
            }
            Job::Initialize { id, init } => {
                if !init.unsupported.is_empty() {
                    notice(format!(
                        "control: initialize's {} not used by reasonix; ignored",
                        init.unsupported
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                            + if init.unsupported.len() == 1 {
                                " is"
                            } else {
                                " are"
                            }
                    ));
                }
                let (hooks, problems) = hooks_from_initialize(&init, calls);
                for problem in problems {
                    notice(format!("{problem}; that SDK hook is not run"));
                }
                if !init.agents.is_empty() {
                    let names: Vec<&str> = init.agents.keys().map(String::as_str).collect();
                    notice(format!(
                        "control: the SDK's agents ({}) are not used; define subagents as \
                         reasonix skills or compositions",
                        names.join(", ")
                    ));
                }
                turns.add_hooks(hooks);
                answer(control::success(&id, turns.initialize_answer()));
            }
            Job::SetModel { id, model } => answer(match turns.set_model(model.as_deref()) {
                Ok(()) => control::success(&id, Value::Object(Default::default())),
                Err(why) => control::failure(&id, &why),
            }),
            Job::McpStatus { id } => answer(control::success(&id, turns.mcp_status())),
            Job::ContextUsage { id } => answer(control::success(&id, turns.context_usage())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::{self, BufReader};
    use std::sync::mpsc::Receiver;

    use crate::claude::control_calls::test_pipe::Pipe;

    /// stdin as the test writes it, line by line, until the sender is dropped.
    struct Stdin {
        lines: Receiver<String>,
        buffer: Vec<u8>,
    }

    impl io::Read for Stdin {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.buffer.is_empty() {
                match self.lines.recv() {
                    Ok(line) => self.buffer = format!("{line}\n").into_bytes(),
                    Err(_) => return Ok(0),
                }
            }
            let n = buf.len().min(self.buffer.len());
            buf[..n].copy_from_slice(&self.buffer[..n]);
            self.buffer.drain(..n);
            Ok(n)
        }
    }

    /// A fake agent: a turn writes a result line naming its prompt; the prompt `wait` runs
    /// until it is interrupted.
    struct Fake {
        out: Arc<dyn LineSink>,
        hooks: Arc<Mutex<Vec<String>>>,
    }

    impl Turns for Fake {
        fn run_turn(&mut self, prompt: String, cancel: CancelToken) {
            if prompt == "wait" {
                let (tx, rx) = mpsc::channel();
                let _guard = cancel.on_cancel(move || {
                    let _ = tx.send(());
                });
                self.out
                    .send_line(r#"{"type":"assistant","waiting":true}"#)
                    .unwrap();
                rx.recv().unwrap();
            }
            let line =
                json!({"type": "result", "result": prompt, "interrupted": cancel.is_cancelled()});
            self.out.send_line(&line.to_string()).unwrap();
        }
        fn add_hooks(&mut self, hooks: Vec<Hook>) {
            self.hooks
                .lock()
                .unwrap()
                .extend(hooks.into_iter().map(|h| h.command));
        }
        fn initialize_answer(&self) -> Value {
            control::initialize_answer(&[], &["fake".into()])
        }
        fn set_model(&mut self, model: Option<&str>) -> Result<(), String> {
            match model {
                Some("nope") => Err("unknown model `nope`".into()),
                _ => Ok(()),
            }
        }
        fn mcp_status(&self) -> Value {
            json!({"mcpServers": []})
        }
        fn context_usage(&self) -> Value {
            json!({"totalTokens": 1, "maxTokens": 2})
        }
    }

    struct Peer {
        stdin: Sender<String>,
        stdout: Receiver<String>,
        modes: Arc<Mutex<Vec<String>>>,
        hooks: Arc<Mutex<Vec<String>>>,
        session: std::thread::JoinHandle<io::Result<()>>,
    }

    impl Peer {
        fn send(&self, line: Value) {
            self.stdin.send(line.to_string()).unwrap();
        }
        fn next(&self) -> Value {
            serde_json::from_str(&self.stdout.recv().unwrap()).unwrap()
        }
        fn request(&self, id: &str, body: Value) -> Value {
            self.send(json!({"type": "control_request", "request_id": id, "request": body}));
            let answer = self.next();
            assert_eq!(answer["response"]["request_id"], id, "{answer}");
            answer["response"].clone()
        }
    }

    fn start() -> Peer {
        let (stdin, lines) = mpsc::channel();
        let (out_tx, stdout) = mpsc::channel();
        let out: Arc<dyn LineSink> = Arc::new(Pipe(Mutex::new(out_tx)));
        let modes = Arc::new(Mutex::new(Vec::new()));
        let hooks = Arc::new(Mutex::new(Vec::new()));
        let wiring = Wiring {
            calls: Arc::new(Calls::new(Arc::clone(&out))),
            out: Arc::clone(&out),
            current: Arc::new(Mutex::new(CancelToken::new())),
            set_mode: {
                let modes = Arc::clone(&modes);
                Box::new(move |mode| {
                    if mode == "sideways" {
                        return Err(format!("unknown permission mode `{mode}`"));
                    }
                    modes.lock().unwrap().push(mode.to_string());
                    Ok(())
                })
            },
            notice: Arc::new(|_| {}),
        };
        let fake = Fake {
            out,
            hooks: Arc::clone(&hooks),
        };
        let input = BufReader::new(Stdin {
            lines,
            buffer: Vec::new(),
        });
        let reads = start_reader(input, &wiring.calls).unwrap();
        let session = std::thread::spawn(move || {
            let mut fake = fake;
            serve(&mut fake, reads, wiring)
        });
        Peer {
            stdin,
            stdout,
            modes,
            hooks,
            session,
        }
    }

    fn user(text: &str) -> Value {
        json!({"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": null, "session_id": ""})
    }

    #[test]
    fn initialize_registers_the_hooks_and_answers_what_is_supported() {
        let peer = start();
        let answer = peer.request(
            "req_1",
            json!({"subtype": "initialize", "hooks": {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"]}]}}),
        );
        assert_eq!(answer["subtype"], "success");
        assert_eq!(answer["response"]["hook_on_failure_supported"], true);
        assert_eq!(*peer.hooks.lock().unwrap(), ["sdk:hook_0"]);
    }

    #[test]
    fn two_user_messages_are_two_turns_of_one_session_in_order() {
        let peer = start();
        peer.send(user("one"));
        peer.send(user("two"));
        assert_eq!(peer.next()["result"], "one");
        assert_eq!(peer.next()["result"], "two");
        drop(peer.stdin);
        peer.session.join().unwrap().unwrap();
    }

    #[test]
    fn interrupt_ends_the_running_turn_and_the_next_turn_runs() {
        let peer = start();
        peer.send(user("wait"));
        assert_eq!(peer.next()["waiting"], true);
        peer.send(json!({"type": "control_request", "request_id": "req_2", "request": {"subtype": "interrupt"}}));
        // The answer to the interrupt and the stopped turn's result are written by two
        // threads; the SDK matches answers by request id, so either order is right.
        let lines: Vec<Value> = (0..2).map(|_| peer.next()).collect();
        let answer = lines.iter().find(|l| l["type"] == "control_response");
        let answer = &answer.expect("the interrupt is answered")["response"];
        assert_eq!(
            (answer["request_id"].as_str(), answer["subtype"].as_str()),
            (Some("req_2"), Some("success"))
        );
        let result = lines.iter().find(|l| l["type"] == "result");
        let result = result.expect("the interrupted turn reports");
        assert_eq!(
            (result["result"].as_str(), result["interrupted"].as_bool()),
            (Some("wait"), Some(true))
        );
        peer.send(user("after"));
        let result = peer.next();
        assert_eq!(
            (result["result"].as_str(), result["interrupted"].as_bool()),
            (Some("after"), Some(false))
        );
    }

    #[test]
    fn an_interrupt_right_behind_its_message_still_stops_that_turn() {
        let peer = start();
        peer.send(user("wait"));
        peer.send(json!({"type": "control_request", "request_id": "i", "request": {"subtype": "interrupt"}}));
        let mut lines: Vec<Value> = (0..3).map(|_| peer.next()).collect();
        lines.retain(|l| l["type"] == "result");
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0]["interrupted"], true);
    }

    #[test]
    fn mode_model_status_and_usage_are_answered() {
        let peer = start();
        assert_eq!(
            peer.request(
                "a",
                json!({"subtype": "set_permission_mode", "mode": "acceptEdits"})
            )["subtype"],
            "success"
        );
        let refused = peer.request(
            "b",
            json!({"subtype": "set_permission_mode", "mode": "sideways"}),
        );
        assert_eq!(refused["error"], "unknown permission mode `sideways`");
        assert_eq!(*peer.modes.lock().unwrap(), ["acceptEdits"]);
        assert_eq!(
            peer.request("c", json!({"subtype": "set_model", "model": "x"}))["subtype"],
            "success"
        );
        assert_eq!(
            peer.request("d", json!({"subtype": "set_model", "model": "nope"}))["error"],
            "unknown model `nope`"
        );
        assert_eq!(
            peer.request("e", json!({"subtype": "mcp_status"}))["response"],
            json!({"mcpServers": []})
        );
        assert_eq!(
            peer.request("f", json!({"subtype": "get_context_usage"}))["response"]["maxTokens"],
            2
        );
        let unsupported = peer.request(
            "g",
            json!({"subtype": "rewind_files", "user_message_id": "u"}),
        );
        assert_eq!(unsupported["subtype"], "error");
        assert!(unsupported["error"]
            .as_str()
            .unwrap()
            .contains("`rewind_files`"));
    }

    #[test]
    fn a_turn_received_before_stdin_closed_still_runs() {
        let peer = start();
        peer.send(user("last"));
        let Peer {
            stdin,
            stdout,
            session,
            ..
        } = peer;
        drop(stdin);
        session.join().unwrap().unwrap();
        let result: Value = serde_json::from_str(&stdout.recv().unwrap()).unwrap();
        assert_eq!(result["result"], "last");
        assert!(stdout.try_recv().is_err(), "nothing after the result");
    }
}
