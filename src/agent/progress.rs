//! The progress lease: while a task list is active, each tool round either shows progress
//! (an item newly completed, or a successful call whose tool, arguments and result were never
//! seen before in this turn) or does not. After [`NUDGE_AFTER`] rounds without progress the
//! next request carries a one-shot reassessment nudge; after [`PAUSE_AFTER`] the turn pauses,
//! keeping everything done so far. The runner feeds it calls and lists and acts on its word;
//! `--max-steps` is a separate, explicit bound the lease knows nothing about.
//!
//! The [`LoopGuard`] watches every turn, with or without a task list: a round whose calls
//! (tools, arguments and results) are those of one of the few rounds before it taught the
//! model nothing. The first such round earns the model one note saying so; another before a
//! round with something new ends the turn, since a model that repeats itself after being told
//! would otherwise repeat until a budget or a person stops it.

use std::collections::{HashSet, VecDeque};

use crate::hash;
use crate::text::one_line;
use crate::tool::builtin::todo::{TodoItem, TodoStatus};

/// Rounds without progress after which the next request carries the nudge.
pub const NUDGE_AFTER: u32 = 8;
/// Rounds without progress after which the turn pauses.
pub const PAUSE_AFTER: u32 = 16;

/// Calls that only keep the books: they neither read, run nor change anything, so a new one
/// is no progress (a completion they make is, through the list).
const BOOKKEEPING: &[&str] = &["todo_write", "complete_step", "ask"];

/// The reminder appended, once, to the request after [`NUDGE_AFTER`] rounds without progress.
pub fn nudge() -> String {
    format!(
        "[reasonix] There has been no progress on the task list for {NUDGE_AFTER} tool rounds: \
         nothing was completed and every call repeated an earlier one with the same result. \
         Stop and reassess before the next call. Is the step in progress already done (then \
         call complete_step with the evidence)? Is the approach wrong (then try a different \
         one, or change the list with todo_write)? Is something missing that only the user can \
         provide (then say so and stop)? After {} more rounds without progress this turn \
         pauses.",
        PAUSE_AFTER - NUDGE_AFTER
    )
}

/// What the lease says after a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Go on as usual.
    Held,
    /// The next request carries [`nudge`].
    Nudge,
    /// The turn pauses.
    Expired,
}

/// One turn's lease.
#[derive(Debug, Default)]
pub struct Lease {
    /// Rounds without progress since the last progress, counted while the list is active.
    idle: u32,
    /// Hashes of every successful (tool, arguments, result) of the turn.
    seen: HashSet<u64>,
    /// Hashes of every (id, content) seen completed in the turn.
    completed: HashSet<u64>,
    /// This round made progress so far.
    progress: bool,
}

impl Lease {
    /// A fresh lease for a turn that starts with `items` (their completions are not new).
    pub fn new(items: &[TodoItem]) -> Lease {
        let mut lease = Lease::default();
        lease.note_completions(items);
        lease
    }

    /// A call of the current round and its outcome (`None` when it failed).
    pub fn call(&mut self, tool: &str, arguments: &str, output: Option<&str>) {
        let Some(output) = output else {
            return;
        };
        if self.seen.insert(call_key(tool, arguments, output)) && !BOOKKEEPING.contains(&tool) {
            self.progress = true;
        }
    }

    /// Ends a round with the task list as it now stands.
    pub fn end_round(&mut self, items: &[TodoItem]) -> Standing {
        let completed = self.note_completions(items);
        let progress = std::mem::take(&mut self.progress) || completed;
        let active = items.iter().any(|i| i.status != TodoStatus::Completed);
        if progress || !active {
            self.idle = 0;
            return Standing::Held;
        }
        self.idle += 1;
        match self.idle {
            NUDGE_AFTER => Standing::Nudge,
            n if n >= PAUSE_AFTER => Standing::Expired,
            _ => Standing::Held,
        }
    }

    /// Rounds without progress so far.
    pub fn idle(&self) -> u32 {
        self.idle
    }

    /// Records the completed items; true when one was not completed before in this turn.
    fn note_completions(&mut self, items: &[TodoItem]) -> bool {
        let mut new = false;
        for item in items.iter().filter(|i| i.status == TodoStatus::Completed) {
            let key = hash::fnv_continue(
                hash::fnv1a(item.id.as_bytes()),
                format!("\0{}", item.content).as_bytes(),
            );
            new |= self.completed.insert(key);
        }
        new
    }
}

/// One call as the guards compare it: tool, arguments and result. Key order and spacing of
/// the arguments are the model's whim; the call is the same.
fn call_key(tool: &str, arguments: &str, output: &str) -> u64 {
    let arguments = serde_json::from_str::<serde_json::Value>(arguments)
        .map_or_else(|_| arguments.trim().to_string(), |v| v.to_string());
    let mut state = hash::FNV_OFFSET;
    for part in [tool, "\0", &arguments, "\0", output] {
        state = hash::fnv_continue(state, part.as_bytes());
    }
    state
}

/// How many rounds back a repeat is looked for: enough for a model alternating between two
/// or three rounds, few enough that re-reading a file many rounds later (after compaction
/// shortened it) is not taken for a loop.
pub const LOOP_WINDOW: usize = 3;

/// The longest a repeated call is shown in a note or an error.
const SHOWN_CALL: usize = 120;

/// What the guard says after a round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repetition {
    /// Something in the round was new.
    Fresh,
    /// The round repeats an earlier one; the model is told once (the calls, shown).
    Nudge(String),
    /// It repeated again after the note: the turn stops (the calls, shown).
    Loop(String),
}

/// One turn's loop guard.
#[derive(Debug, Default)]
pub struct LoopGuard {
    /// The keys of the last [`LOOP_WINDOW`] rounds, newest last.
    recent: VecDeque<u64>,
    /// The current round: its calls' keys and the calls as shown.
    round: Vec<u64>,
    shown: Vec<String>,
    /// The model was told it repeats itself and has done nothing new since.
    nudged: bool,
}

impl LoopGuard {
    /// A call of the current round with its result (an error's text is a result too: a call
    /// refused the same way each time is as much a loop).
    pub fn call(&mut self, tool: &str, arguments: &str, output: &str) {
        self.round.push(call_key(tool, arguments, output));
        self.shown
            .push(format!("`{tool} {}`", one_line(arguments, SHOWN_CALL)));
    }

    /// Ends the round. The calls' order does not matter: a model that swaps two calls still
    /// repeats itself.
    pub fn end_round(&mut self) -> Repetition {
        let mut keys = std::mem::take(&mut self.round);
        let shown = std::mem::take(&mut self.shown).join(", ");
        if keys.is_empty() {
            return Repetition::Fresh;
        }
        keys.sort_unstable();
        let mut state = hash::FNV_OFFSET;
        for key in keys {
            state = hash::fnv_continue(state, &key.to_le_bytes());
        }
        let repeated = self.recent.contains(&state);
        if self.recent.len() == LOOP_WINDOW {
            self.recent.pop_front();
        }
        self.recent.push_back(state);
        match (repeated, self.nudged) {
            (false, _) => {
                self.nudged = false;
                Repetition::Fresh
            }
            (true, false) => {
                self.nudged = true;
                Repetition::Nudge(shown)
            }
            (true, true) => Repetition::Loop(shown),
        }
    }
}

/// The note appended to the result of a round that repeats an earlier one.
pub fn loop_nudge(calls: &str) -> String {
    format!(
        "[reasonix] You are repeating yourself: this round ({calls}) made the same calls with \
         the same results as an earlier round, so it told you nothing new. Do not send these \
         calls again. Use what you already have, try a different approach, or answer and say \
         what is missing. If the next round repeats an earlier one again, the run stops."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, status: TodoStatus) -> TodoItem {
        TodoItem {
            id: id.into(),
            content: format!("do {id}"),
            status,
            active_form: None,
            level: 0,
        }
    }

    fn active() -> Vec<TodoItem> {
        vec![
            item("1", TodoStatus::InProgress),
            item("2", TodoStatus::Pending),
        ]
    }

    /// Rounds of the same successful read: the first is new, the rest repeat it.
    fn repeat(lease: &mut Lease, rounds: u32, items: &[TodoItem]) -> Vec<Standing> {
        (0..rounds)
            .map(|_| {
                lease.call("read_file", r#"{"path":"a"}"#, Some("text"));
                lease.end_round(items)
            })
            .collect()
    }

    #[test]
    fn exact_repeats_run_the_lease_down_to_a_nudge_then_a_pause() {
        let mut lease = Lease::new(&active());
        let standings = repeat(&mut lease, 1 + PAUSE_AFTER, &active());
        let nudges: Vec<usize> = (0..standings.len())
            .filter(|&i| standings[i] == Standing::Nudge)
            .collect();
        assert_eq!(nudges, vec![NUDGE_AFTER as usize], "{standings:?}");
        assert_eq!(standings.last(), Some(&Standing::Expired));
        assert!(standings[..PAUSE_AFTER as usize]
            .iter()
            .all(|s| *s != Standing::Expired));
        assert_eq!(lease.idle(), PAUSE_AFTER);
    }

    #[test]
    fn new_calls_and_new_completions_renew_it_and_bookkeeping_does_not() {
        let mut lease = Lease::new(&active());
        repeat(&mut lease, 5, &active());
        assert_eq!(lease.idle(), 4);
        // Same call, different result: new information.
        lease.call("read_file", r#"{ "path": "a" }"#, Some("changed"));
        assert_eq!(lease.end_round(&active()), Standing::Held);
        assert_eq!(lease.idle(), 0);
        // Same call and result with the arguments spelled differently: a repeat.
        lease.call("read_file", r#"{ "path":  "a"}"#, Some("changed"));
        lease.end_round(&active());
        assert_eq!(lease.idle(), 1);
        // A failed call, and a new bookkeeping call, are no progress.
        lease.call("bash", r#"{"command":"make"}"#, None);
        lease.call("todo_write", r#"{"todos":[]}"#, Some("new"));
        lease.end_round(&active());
        assert_eq!(lease.idle(), 2);
        // A completion is, once.
        let done = vec![
            item("1", TodoStatus::Completed),
            item("2", TodoStatus::InProgress),
        ];
        lease.end_round(&done);
        assert_eq!(lease.idle(), 0);
        lease.end_round(&active());
        lease.end_round(&done);
        assert_eq!(lease.idle(), 2, "completing the same item again is not new");
        // An MCP tool's new call is progress like a built-in one.
        lease.call("mcp__db__query", r#"{"sql":"select 1"}"#, Some("1"));
        lease.end_round(&done);
        assert_eq!(lease.idle(), 0);
    }

    #[test]
    fn a_repeated_round_is_nudged_once_then_stops_the_turn() {
        let mut guard = LoopGuard::default();
        let round = |guard: &mut LoopGuard, path: &str| {
            guard.call("read_file", &format!(r#"{{"path":"{path}"}}"#), "text");
            guard.call("grep", r#"{"pattern":"x"}"#, "error: no match");
            guard.end_round()
        };
        assert_eq!(round(&mut guard, "a"), Repetition::Fresh);
        let Repetition::Nudge(shown) = round(&mut guard, "a") else {
            panic!("the second identical round is nudged");
        };
        assert_eq!(shown, r#"`read_file {"path":"a"}`, `grep {"pattern":"x"}`"#);
        assert!(matches!(round(&mut guard, "a"), Repetition::Loop(_)));
        // Something new clears the note: the next repeat is nudged again, not stopped.
        let mut guard = LoopGuard::default();
        round(&mut guard, "a");
        round(&mut guard, "a");
        assert_eq!(round(&mut guard, "b"), Repetition::Fresh);
        assert!(matches!(round(&mut guard, "b"), Repetition::Nudge(_)));
    }

    #[test]
    fn a_loop_is_a_repeat_within_the_window_in_any_order_and_spelling() {
        let mut guard = LoopGuard::default();
        // Two rounds alternating: the third repeats the first.
        guard.call("read_file", r#"{"path":"a"}"#, "A");
        assert_eq!(guard.end_round(), Repetition::Fresh);
        guard.call("read_file", r#"{"path":"b"}"#, "B");
        assert_eq!(guard.end_round(), Repetition::Fresh);
        guard.call("read_file", r#"{ "path": "a" }"#, "A");
        assert!(matches!(guard.end_round(), Repetition::Nudge(_)));
        // Calls in another order are the same round; a changed result is not.
        let mut guard = LoopGuard::default();
        guard.call("ls", "{}", "x");
        guard.call("glob", "{}", "y");
        guard.end_round();
        guard.call("glob", "{}", "y");
        guard.call("ls", "{}", "x");
        assert!(matches!(guard.end_round(), Repetition::Nudge(_)));
        guard.call("glob", "{}", "y");
        guard.call("ls", "{}", "changed");
        assert_eq!(guard.end_round(), Repetition::Fresh);
        // A round older than the window is forgotten.
        let mut guard = LoopGuard::default();
        for path in ["a", "b", "c", "d", "a"] {
            guard.call("read_file", &format!(r#"{{"path":"{path}"}}"#), "same");
            assert_eq!(guard.end_round(), Repetition::Fresh, "{path}");
        }
    }

    #[test]
    fn rounds_count_only_while_a_todo_is_active() {
        let mut lease = Lease::new(&[]);
        assert!(repeat(&mut lease, 30, &[])
            .iter()
            .all(|s| *s == Standing::Held));
        let finished = vec![item("1", TodoStatus::Completed)];
        let mut lease = Lease::new(&finished);
        repeat(&mut lease, 30, &finished);
        assert_eq!(lease.idle(), 0);
        // Completions already there when the turn began are not new.
        let mut lease = Lease::new(&finished);
        let mut items = finished.clone();
        items.push(item("2", TodoStatus::InProgress));
        lease.end_round(&items);
        assert_eq!(lease.idle(), 1);
    }
}
