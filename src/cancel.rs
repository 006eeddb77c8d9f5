//! A cancellation token shared between the thread that decides to stop (signal handler, UI)
//! and the threads doing blocking work (provider streams, tools, subprocesses).
//!
//! Polling loops check [`CancelToken::is_cancelled`]; blocking I/O registers a hook with
//! [`CancelToken::on_cancel`] that unblocks it (shutting a socket, killing a process group).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The exit status of a run the user interrupted: 128 + SIGINT, as shells report it. Here
/// rather than with the CLI's other codes because the terminal's signal thread exits with it.
pub const INTERRUPTED_EXIT: i32 = 130;

type Hook = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    next_hook_id: AtomicU64,
    hooks: Mutex<Vec<(u64, Hook)>>,
}

/// Cheap to clone; every clone observes the same cancellation.
#[derive(Clone, Default)]
pub struct CancelToken(Arc<Inner>);

/// Removes its hook when dropped, so finished work does not keep handles alive.
pub struct HookGuard {
    token: CancelToken,
    id: u64,
}

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Marks the token cancelled and runs every registered hook once.
    pub fn cancel(&self) {
        if self.0.cancelled.swap(true, Ordering::SeqCst) {
            return;
        }
        let hooks = match self.0.hooks.lock() {
            Ok(mut hooks) => std::mem::take(&mut *hooks),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        for (_, hook) in hooks {
            hook();
        }
    }

    /// Runs `hook` when the token is cancelled, or at once if it already is.
    pub fn on_cancel(&self, hook: impl FnOnce() + Send + 'static) -> HookGuard {
        let id = self.0.next_hook_id.fetch_add(1, Ordering::SeqCst);
        let guard = HookGuard {
            token: self.clone(),
            id,
        };
        if self.is_cancelled() {
            hook();
            return guard;
        }
        let mut hooks = match self.0.hooks.lock() {
            Ok(hooks) => hooks,
            Err(poisoned) => poisoned.into_inner(),
        };
        // Re-check under the lock: cancel() may have drained the list meanwhile.
        if self.is_cancelled() {
            drop(hooks);
            hook();
        } else {
            hooks.push((id, Box::new(hook)));
        }
        guard
    }
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        let mut hooks = match self.token.0.hooks.lock() {
            Ok(hooks) => hooks,
            Err(poisoned) => poisoned.into_inner(),
        };
        hooks.retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn hooks_run_once_and_late_hooks_run_immediately() {
        let token = CancelToken::new();
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let _guard = token.on_cancel(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        token.cancel();
        token.cancel();
        assert_eq!(count.load(Ordering::SeqCst), 1);
        let c = count.clone();
        let _late = token.on_cancel(move || {
            c.fetch_add(10, Ordering::SeqCst);
        });
        assert_eq!(count.load(Ordering::SeqCst), 11);
    }

    #[test]
    fn dropped_guard_unregisters_its_hook() {
        let token = CancelToken::new();
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        drop(token.on_cancel(move || {
            c.fetch_add(1, Ordering::SeqCst);
        }));
        token.cancel();
        assert_eq!(count.load(Ordering::SeqCst), 0);
    }
}
