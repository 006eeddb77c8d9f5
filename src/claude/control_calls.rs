//! Our requests to the SDK (`can_use_tool`, `hook_callback`, `mcp_message`) and their answers:
//! each gets a fresh `request_id`, is written as one stdout line, and waits until the stdin
//! reader delivers the response with the same id, the deadline passes (then the SDK is told to
//! drop it), the turn is interrupted, or stdin closes. The wire shapes are `control`; who
//! reads stdin and who writes stdout is the session's business ([`LineSink`]).

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use super::control::{self, ControlError};
use crate::cancel::CancelToken;

/// The most of our requests that may wait for an answer at once; one more is refused, so a
/// peer that never answers costs bounded memory.
pub const MAX_PENDING: usize = 1024;

/// Where our lines go: stdout, shared with the message stream (one writer at a time).
pub trait LineSink: Send + Sync {
    fn send_line(&self, line: &str) -> io::Result<()>;
}

/// What an answer is handed to.
enum Waiter {
    /// A thread blocked in [`Calls::call`].
    Blocked(Sender<Result<Value, ControlError>>),
    /// A callback run on the reader's thread ([`Calls::call_then`]).
    Then(Box<dyn FnOnce(Result<Value, ControlError>) + Send>),
}

impl Waiter {
    fn settle(self, outcome: Result<Value, ControlError>) {
        match self {
            // The waiter may have given up already (timeout, cancel); nothing to tell it then.
            Waiter::Blocked(tx) => drop(tx.send(outcome)),
            Waiter::Then(done) => done(outcome),
        }
    }
}

#[derive(Default)]
struct State {
    pending: HashMap<String, (String, Waiter)>,
    /// Set once stdin closed: every later request fails at once with this reason.
    closed: Option<String>,
}

/// The outgoing half of the control channel.
pub struct Calls {
    out: Arc<dyn LineSink>,
    next: AtomicU64,
    state: Mutex<State>,
}

impl Calls {
    pub fn new(out: Arc<dyn LineSink>) -> Calls {
        Calls {
            out,
            next: AtomicU64::new(1),
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a waiter under a fresh id and writes the request; the id, or why not.
    fn send(&self, body: Value, waiter: Waiter) -> Result<String, (ControlError, Waiter)> {
        let subtype = subtype_of(&body);
        let id = format!("reasonix_{}", self.next.fetch_add(1, Ordering::Relaxed));
        {
            let mut state = self.lock();
            if let Some(why) = &state.closed {
                return Err((ControlError::Closed(why.clone()), waiter));
            }
            if state.pending.len() >= MAX_PENDING {
                return Err((
                    ControlError::Shape(format!(
                        "more than {MAX_PENDING} requests to the SDK are unanswered"
                    )),
                    waiter,
                ));
            }
            state.pending.insert(id.clone(), (subtype, waiter));
        }
        if let Err(e) = self.out.send_line(&control::request(&id, body)) {
            let waiter = self.lock().pending.remove(&id);
            let error = ControlError::Closed(format!("writing to stdout: {e}"));
            return match waiter {
                Some((_, waiter)) => Err((error, waiter)),
                // The reader settled it meanwhile (closed); report the write failure alone.
                None => Err((error, Waiter::Then(Box::new(|_| {})))),
            };
        }
        Ok(id)
    }

    /// Sends `body` and waits for its answer: the response body, or why there is none. A
    /// request unanswered after `timeout` is withdrawn with a `control_cancel_request`.
    pub fn call(
        &self,
        body: Value,
        timeout: Duration,
        cancel: Option<&CancelToken>,
    ) -> Result<Value, ControlError> {
        let subtype = subtype_of(&body);
        let (tx, rx) = mpsc::channel();
        let _guard = cancel.map(|token| {
            let tx = tx.clone();
            token.on_cancel(move || drop(tx.send(Err(ControlError::Cancelled))))
        });
        let id = match self.send(body, Waiter::Blocked(tx)) {
            Ok(id) => id,
            Err((error, _)) => return Err(error),
        };
        let outcome = match rx.recv_timeout(timeout) {
            Ok(outcome) => outcome,
            Err(RecvTimeoutError::Timeout) => Err(ControlError::Timeout {
                subtype,
                seconds: timeout.as_secs(),
            }),
            Err(RecvTimeoutError::Disconnected) => {
                Err(ControlError::Closed("the request was dropped".into()))
            }
        };
        if matches!(
            outcome,
            Err(ControlError::Timeout { .. } | ControlError::Cancelled)
        ) && self.lock().pending.remove(&id).is_some()
        {
            // Best effort: if stdout is gone the SDK is too.
            let _ = self.out.send_line(&control::cancel(&id));
        }
        outcome
    }

    /// Sends `body` and returns at once; `done` runs with the answer on the thread that
    /// delivers it (or now, when the request cannot be sent). For transports whose own
    /// client keeps the deadline (MCP).
    pub fn call_then(
        &self,
        body: Value,
        done: Box<dyn FnOnce(Result<Value, ControlError>) + Send>,
    ) -> Result<(), ControlError> {
        match self.send(body, Waiter::Then(done)) {
            Ok(_) => Ok(()),
            Err((error, waiter)) => {
                waiter.settle(Err(error.clone()));
                Err(error)
            }
        }
    }

    /// Hands the SDK's answer to whoever waits for `request_id`; `false` when nobody does (an
    /// unknown id, or one already given up on).
    pub fn deliver(&self, request_id: &str, outcome: Result<Value, String>) -> bool {
        let Some((subtype, waiter)) = self.lock().pending.remove(request_id) else {
            return false;
        };
        waiter.settle(outcome.map_err(|error| ControlError::Refused { subtype, error }));
        true
    }

    /// stdin closed: every waiting request fails with `why`, and so does every later one.
    pub fn close(&self, why: &str) {
        let pending: Vec<(String, Waiter)> = {
            let mut state = self.lock();
            state.closed.get_or_insert_with(|| why.to_string());
            state.pending.drain().map(|(_, entry)| entry).collect()
        };
        for (_, waiter) in pending {
            waiter.settle(Err(ControlError::Closed(why.to_string())));
        }
    }

    /// How many requests wait for an answer (for tests and diagnostics).
    pub fn pending(&self) -> usize {
        self.lock().pending.len()
    }
}

fn subtype_of(body: &Value) -> String {
    body.get("subtype")
        .and_then(Value::as_str)
        .unwrap_or("request")
        .to_string()
}

/// The SDK's end of the line for unit tests: our lines go, without their line end, to a
/// channel the test reads.
#[cfg(test)]
pub(crate) mod test_pipe {
    use super::LineSink;
    use std::io;
    use std::sync::mpsc::Sender;
    use std::sync::Mutex;

    pub struct Pipe(pub Mutex<Sender<String>>);

    impl LineSink for Pipe {
        fn send_line(&self, line: &str) -> io::Result<()> {
            self.0
                .lock()
                .unwrap()
                .send(line.trim_end().to_string())
                .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::mpsc::Receiver;
    use test_pipe::Pipe;

    fn calls() -> (Arc<Calls>, Receiver<String>) {
        let (tx, rx) = mpsc::channel();
        (Arc::new(Calls::new(Arc::new(Pipe(Mutex::new(tx))))), rx)
    }

    fn id_of(line: &str) -> String {
        let value: Value = serde_json::from_str(line).unwrap();
        value["request_id"].as_str().unwrap().to_string()
    }

    #[test]
    fn an_answer_reaches_the_request_with_its_id_even_out_of_order() {
        let (calls, lines) = calls();
        let first = {
            let calls = Arc::clone(&calls);
            std::thread::spawn(move || {
                calls.call(json!({"subtype": "a"}), Duration::from_secs(60), None)
            })
        };
        let first_id = id_of(&lines.recv().unwrap());
        let second = {
            let calls = Arc::clone(&calls);
            std::thread::spawn(move || {
                calls.call(json!({"subtype": "b"}), Duration::from_secs(60), None)
            })
        };
        let second_id = id_of(&lines.recv().unwrap());
        assert_ne!(first_id, second_id);
        assert!(calls.deliver(&second_id, Ok(json!("two"))));
        assert!(calls.deliver(&first_id, Err("no".into())));
        assert_eq!(second.join().unwrap(), Ok(json!("two")));
        assert_eq!(
            first.join().unwrap(),
            Err(ControlError::Refused {
                subtype: "a".into(),
                error: "no".into()
            })
        );
        assert!(
            !calls.deliver(&first_id, Ok(json!(1))),
            "an id is answered once"
        );
        assert_eq!(calls.pending(), 0);
    }

    #[test]
    fn an_unanswered_request_times_out_and_is_withdrawn() {
        let (calls, lines) = calls();
        let outcome = calls.call(json!({"subtype": "can_use_tool"}), Duration::ZERO, None);
        assert_eq!(
            outcome,
            Err(ControlError::Timeout {
                subtype: "can_use_tool".into(),
                seconds: 0
            })
        );
        let sent = id_of(&lines.recv().unwrap());
        let withdrawn: Value = serde_json::from_str(&lines.recv().unwrap()).unwrap();
        assert_eq!(withdrawn["type"], "control_cancel_request");
        assert_eq!(withdrawn["request_id"], sent.as_str());
        assert!(
            !calls.deliver(&sent, Ok(json!(1))),
            "a late answer finds nobody"
        );
    }

    #[test]
    fn an_interrupt_ends_the_wait() {
        let (calls, lines) = calls();
        let token = CancelToken::new();
        let waiting = {
            let calls = Arc::clone(&calls);
            let token = token.clone();
            std::thread::spawn(move || {
                calls.call(
                    json!({"subtype": "a"}),
                    Duration::from_secs(600),
                    Some(&token),
                )
            })
        };
        lines.recv().unwrap();
        token.cancel();
        assert_eq!(waiting.join().unwrap(), Err(ControlError::Cancelled));
        assert_eq!(calls.pending(), 0);
    }

    #[test]
    fn closing_fails_the_waiting_and_every_later_request() {
        let (calls, lines) = calls();
        let waiting = {
            let calls = Arc::clone(&calls);
            std::thread::spawn(move || {
                calls.call(json!({"subtype": "a"}), Duration::from_secs(600), None)
            })
        };
        lines.recv().unwrap();
        calls.close("stdin closed");
        assert_eq!(
            waiting.join().unwrap(),
            Err(ControlError::Closed("stdin closed".into()))
        );
        let (tx, rx) = mpsc::channel();
        let later = calls.call_then(
            json!({"subtype": "b"}),
            Box::new(move |o| tx.send(o).unwrap()),
        );
        assert_eq!(later, Err(ControlError::Closed("stdin closed".into())));
        assert_eq!(
            rx.recv().unwrap(),
            Err(ControlError::Closed("stdin closed".into()))
        );
    }

    #[test]
    fn call_then_runs_its_callback_with_the_answer() {
        let (calls, lines) = calls();
        let (tx, rx) = mpsc::channel();
        calls
            .call_then(
                json!({"subtype": "mcp_message"}),
                Box::new(move |o| tx.send(o).unwrap()),
            )
            .unwrap();
        let id = id_of(&lines.recv().unwrap());
        calls.deliver(&id, Ok(json!({"mcp_response": {}})));
        assert_eq!(rx.recv().unwrap(), Ok(json!({"mcp_response": {}})));
    }

    #[test]
    fn a_peer_that_never_answers_costs_a_bounded_table() {
        let (calls, _lines) = calls();
        for _ in 0..MAX_PENDING {
            calls.call_then(json!({}), Box::new(|_| {})).unwrap();
        }
        let refused = calls.call_then(json!({}), Box::new(|_| {}));
        assert!(
            matches!(refused, Err(ControlError::Shape(_))),
            "{refused:?}"
        );
        assert_eq!(calls.pending(), MAX_PENDING);
    }
}
