//! The session's subagent scheduler: every child agent (`task`, `read_only_task`, `fleet`,
//! `parallel_tasks`, subagent skills) takes a slot here before it starts, so a session never
//! runs more than `agent.max_subagent_concurrency` children at once, nor more than
//! `agent.max_parallel_writers` writers, and two writers whose `write_paths` overlap never run
//! together (a writer without `write_paths` may write anywhere, so it overlaps every writer).
//! Waiting ends when a slot frees or the caller's cancel token fires.
//!
//! It also counts the children a session starts, against two budgets: at most
//! `agent.max_subagents_per_round` from one model reply's tool calls (four `parallel_tasks`
//! and a `fleet` in one message cannot start 320 children), and at most
//! `agent.max_subagents_per_run` over the whole run. A child past either is refused before it
//! starts, with a reason the model reads in its tool result.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::cancel::CancelToken;

/// What a child may change, for the writer rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Changes nothing: only the concurrency cap applies.
    Reader,
    /// Writes under these absolute, resolved paths; `None` is the whole workspace.
    Writer(Option<Vec<PathBuf>>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Children running at once (at least 1).
    pub running: usize,
    /// Writers among them (at least 1).
    pub writers: usize,
    /// Children started from one round of tool calls (`agent.max_subagents_per_round`).
    pub per_round: usize,
    /// Children started over the run (`agent.max_subagents_per_run`).
    pub per_run: usize,
}

#[derive(Default)]
struct State {
    running: usize,
    /// The claims of the writers running now, by slot id.
    writers: Vec<(u64, Option<Vec<PathBuf>>)>,
    next_id: u64,
    /// Children admitted since the round began, and over the run.
    round_started: usize,
    run_started: usize,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

pub struct Scheduler {
    limits: Limits,
    shared: Arc<Shared>,
}

/// A running child's place; dropping it frees the place and wakes the waiters.
pub struct Slot<'a> {
    scheduler: &'a Scheduler,
    writer: Option<u64>,
}

impl Scheduler {
    pub fn new(limits: Limits) -> Scheduler {
        Scheduler {
            limits: Limits {
                running: limits.running.max(1),
                writers: limits.writers.max(1),
                ..limits
            },
            shared: Arc::new(Shared {
                state: Mutex::default(),
                changed: Condvar::new(),
            }),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// A new round of the parent's tool calls begins: its children count afresh against the
    /// per-round budget.
    pub fn begin_round(&self) {
        lock(&self.shared.state).round_started = 0;
    }

    /// Counts one more child against the round's and the run's budgets, or says which budget
    /// it would pass (the text the model reads in place of the child's answer).
    pub fn admit(&self) -> Result<(), String> {
        let mut state = lock(&self.shared.state);
        if state.run_started >= self.limits.per_run {
            return Err(format!(
                "refused: this run already started {} subagents, the most one run may start \
                 (agent.max_subagents_per_run = {}); do the rest yourself",
                state.run_started, self.limits.per_run
            ));
        }
        if state.round_started >= self.limits.per_round {
            return Err(format!(
                "refused: the tool calls of this reply already started {} subagents, the most \
                 one reply may start (agent.max_subagents_per_round = {}); ask for fewer at once",
                state.round_started, self.limits.per_round
            ));
        }
        state.round_started += 1;
        state.run_started += 1;
        Ok(())
    }

    /// Waits for a place for a child with `claim`; `None` when `cancel` fired first.
    /// `on_wait` runs once, before the first wait, if there is one.
    pub fn acquire(
        &self,
        claim: &Claim,
        cancel: &CancelToken,
        on_wait: impl FnOnce(),
    ) -> Option<Slot<'_>> {
        let mut on_wait = Some(on_wait);
        // The hook takes the lock before it notifies, so a waiter that checked the token under
        // the lock cannot miss the wake-up.
        let shared = Arc::clone(&self.shared);
        let _wake = cancel.on_cancel(move || {
            let _state = lock(&shared.state);
            shared.changed.notify_all();
        });
        let mut state = lock(&self.shared.state);
        loop {
            if cancel.is_cancelled() {
                return None;
            }
            if self.fits(&state, claim) {
                state.running += 1;
                let writer = match claim {
                    Claim::Reader => None,
                    Claim::Writer(paths) => {
                        let id = state.next_id;
                        state.next_id += 1;
                        state.writers.push((id, paths.clone()));
                        Some(id)
                    }
                };
                return Some(Slot {
                    scheduler: self,
                    writer,
                });
            }
            if let Some(report) = on_wait.take() {
                report();
            }
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn fits(&self, state: &State, claim: &Claim) -> bool {
        if state.running >= self.limits.running {
            return false;
        }
        match claim {
            Claim::Reader => true,
            Claim::Writer(paths) => {
                state.writers.len() < self.limits.writers
                    && !state
                        .writers
                        .iter()
                        .any(|(_, running)| overlap(paths.as_deref(), running.as_deref()))
            }
        }
    }

    fn release(&self, writer: Option<u64>) {
        let mut state = lock(&self.shared.state);
        state.running = state.running.saturating_sub(1);
        if let Some(id) = writer {
            state.writers.retain(|(w, _)| *w != id);
        }
        self.shared.changed.notify_all();
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.scheduler.release(self.writer);
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether two writers could change the same file: one's path contains the other's.
fn overlap(a: Option<&[PathBuf]>, b: Option<&[PathBuf]>) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return true;
    };
    a.iter().any(|x| b.iter().any(|y| nested(x, y)))
}

fn nested(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn writer(paths: &[&str]) -> Claim {
        Claim::Writer(Some(paths.iter().map(PathBuf::from).collect()))
    }

    #[test]
    fn children_past_the_round_or_run_budget_are_refused_with_the_key_to_raise() {
        let scheduler = Scheduler::new(Limits {
            running: 2,
            writers: 1,
            per_round: 3,
            per_run: 5,
        });
        for _ in 0..3 {
            scheduler.admit().unwrap();
        }
        let refused = scheduler.admit().unwrap_err();
        assert!(
            refused.contains("agent.max_subagents_per_round = 3"),
            "{refused}"
        );
        scheduler.begin_round();
        scheduler.admit().unwrap();
        scheduler.admit().unwrap();
        scheduler.begin_round();
        let refused = scheduler.admit().unwrap_err();
        assert!(
            refused.contains("agent.max_subagents_per_run = 5"),
            "{refused}"
        );
    }

    #[test]
    fn the_concurrency_cap_holds_readers_back() {
        let scheduler = Scheduler::new(Limits {
            running: 2,
            writers: 1,
            per_round: 16,
            per_run: 64,
        });
        let cancel = CancelToken::new();
        let a = scheduler.acquire(&Claim::Reader, &cancel, || {}).unwrap();
        let _b = scheduler.acquire(&Claim::Reader, &cancel, || {}).unwrap();
        assert!(!scheduler.fits(&lock(&scheduler.shared.state), &Claim::Reader));
        drop(a);
        assert!(scheduler.fits(&lock(&scheduler.shared.state), &Claim::Reader));
    }

    #[test]
    fn overlapping_writers_never_run_together_and_disjoint_ones_do() {
        let scheduler = Scheduler::new(Limits {
            running: 6,
            writers: 3,
            per_round: 16,
            per_run: 64,
        });
        let cancel = CancelToken::new();
        let _src = scheduler
            .acquire(&writer(&["/w/src"]), &cancel, || {})
            .unwrap();
        let state = || lock(&scheduler.shared.state);
        assert!(!scheduler.fits(&state(), &writer(&["/w/src/lib.rs"])));
        assert!(!scheduler.fits(&state(), &writer(&["/w"])));
        assert!(!scheduler.fits(&state(), &Claim::Writer(None)));
        assert!(scheduler.fits(&state(), &writer(&["/w/docs"])));
        assert!(scheduler.fits(&state(), &writer(&["/w/srcx"])));
        assert!(scheduler.fits(&state(), &Claim::Reader));
    }

    #[test]
    fn the_writer_cap_counts_only_writers() {
        let scheduler = Scheduler::new(Limits {
            running: 6,
            writers: 1,
            per_round: 16,
            per_run: 64,
        });
        let cancel = CancelToken::new();
        let _a = scheduler
            .acquire(&writer(&["/w/a"]), &cancel, || {})
            .unwrap();
        let state = || lock(&scheduler.shared.state);
        assert!(!scheduler.fits(&state(), &writer(&["/w/b"])));
        assert!(scheduler.fits(&state(), &Claim::Reader));
    }

    #[test]
    fn a_waiter_starts_when_a_slot_frees_and_cancel_ends_a_wait() {
        let scheduler = Arc::new(Scheduler::new(Limits {
            running: 1,
            writers: 1,
            per_round: 16,
            per_run: 64,
        }));
        let cancel = CancelToken::new();
        let held = scheduler.acquire(&Claim::Reader, &cancel, || {}).unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                let slot = scheduler.acquire(&Claim::Reader, &cancel, || {});
                tx.send(slot.is_some()).unwrap();
            });
            // The waiter cannot have a slot while this one is held.
            assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
            drop(held);
            assert!(rx.recv().unwrap());
            waiter.join().unwrap();
        });
        let stop = CancelToken::new();
        let _held = scheduler.acquire(&Claim::Reader, &stop, || {}).unwrap();
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| scheduler.acquire(&Claim::Reader, &stop, || {}).is_none());
            stop.cancel();
            assert!(waiter.join().unwrap());
        });
    }
}
