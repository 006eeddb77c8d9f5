//! Events produced away from the loop's thread (hooks run by the gate or the person's side,
//! subagents working inside a tool call) and how they reach the sink, which lives on the
//! loop's thread. Other threads push into an [`EventQueue`]; the loop drains it after each
//! step, and while a round of calls that report live progress runs it relays them as they
//! come ([`EventQueue::relay_while`]), so a front end shows a child's work as it happens.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::events::{Event, EventSink};

#[derive(Default)]
struct Pending {
    events: Vec<Event>,
    /// The work `relay_while` runs has ended.
    done: bool,
}

#[derive(Default)]
pub struct EventQueue {
    pending: Mutex<Pending>,
    ready: Condvar,
}

impl EventQueue {
    pub fn push(&self, event: Event) {
        self.lock().events.push(event);
        self.ready.notify_all();
    }

    pub fn extend(&self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        self.lock().events.extend(events);
        self.ready.notify_all();
    }

    /// Everything pushed since the last take, in order.
    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut self.lock().events)
    }

    /// Runs `work` on a scoped thread and emits into `sink`, on this thread, every event
    /// pushed meanwhile, as it arrives; returns when `work` has ended and its events are out.
    /// Without a thread to spare, `work` runs here and its events follow it.
    pub fn relay_while<T: Send + Default>(
        &self,
        sink: &mut dyn EventSink,
        work: impl FnOnce() -> T + Send,
    ) -> T {
        self.lock().done = false;
        // Shared so that, should no thread start, the work is still here to run inline.
        let work = Mutex::new(Some(work));
        let take = || work.lock().unwrap_or_else(PoisonError::into_inner).take();
        let relayed = std::thread::scope(|scope| {
            let worker = std::thread::Builder::new()
                .name("round".into())
                .spawn_scoped(scope, || {
                    let _done = Done(self);
                    take().map(|work| work())
                })
                .ok()?;
            loop {
                let (events, done) = {
                    let mut pending = self.lock();
                    while pending.events.is_empty() && !pending.done {
                        pending = self
                            .ready
                            .wait(pending)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                    (std::mem::take(&mut pending.events), pending.done)
                };
                for event in events {
                    sink.emit(event);
                }
                if done {
                    break;
                }
            }
            worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        if let Some(result) = relayed {
            return result;
        }
        let result = match take() {
            Some(work) => work(),
            // Not reached: the work either ran on the worker and returned, or is still here.
            None => T::default(),
        };
        for event in self.take() {
            sink.emit(event);
        }
        result
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Marks the relayed work done even when it panics, so the relaying loop always ends.
struct Done<'a>(&'a EventQueue);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.lock().done = true;
        self.0.ready.notify_all();
    }
}
