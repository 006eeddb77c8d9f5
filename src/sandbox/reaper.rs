//! The orphan reaper: when reasonix is PID 1 of its PID namespace (`docker run image reasonix
//! run …`, a Kubernetes Job) or a child subreaper, every process whose parent dies is
//! reparented to it, and nobody but reasonix can reap it. bubblewrap's own helper process
//! lands here after every jailed command; a version probe's grandchildren do when the probe
//! is killed. Unreaped, each stays a zombie holding a pid, and a long session eventually
//! cannot fork.
//!
//! [`start`] starts one thread, and only in that situation. It blocks in `waitid(P_ALL,
//! WNOWAIT)` until some child has exited, then, holding the registry of children reasonix owns
//! (`process::owned`: every spawn and every reap takes it), reaps that child only if no
//! thread of reasonix will: the statuses `process::run`, the MCP transports and an editor wait
//! for are never taken from them. When the exited child is owned, its owner reaps it within
//! moments; meanwhile the reaper scans `/proc/self/task/*/children` for other exited orphans,
//! then waits for the owner (or [`OWNED_WAIT`]) instead of spinning. With no child at all it
//! sleeps until the next spawn, since an orphan can only come from a descendant.

use std::io;
use std::thread;
use std::time::Duration;

use super::process::{owned, wait_for_change, Owned};
use super::sys;

/// How long the reaper waits for an owner to reap its exited child before it looks again.
/// Owners reap within the output's drain window (`process::DRAIN_WINDOW`), so this is a
/// backstop, not the usual wake-up.
pub const OWNED_WAIT: Duration = Duration::from_secs(1);

/// How long the reaper sleeps with no child at all before it checks again (a spawn wakes it
/// sooner).
const IDLE_WAIT: Duration = Duration::from_secs(60);

/// Starts the reaper thread when orphans are reparented to this process; returns whether it
/// did. Call once, early in `main`.
pub fn start() -> bool {
    if !sys::adopts_orphans() {
        return false;
    }
    thread::Builder::new()
        .name("reasonix-reaper".into())
        .spawn(reap_forever)
        .is_ok()
}

fn reap_forever() {
    loop {
        let exited = match sys::wait_any_exit_keep_zombie() {
            Ok(Some(pid)) => pid,
            Ok(None) => {
                let owned = owned();
                drop(wait_for_change(owned, IDLE_WAIT));
                continue;
            }
            // waitid itself failed (not for want of children): nothing here can fix that.
            Err(_) => return,
        };
        let owned = owned();
        if !owned.owns(exited) {
            let _ = sys::reap_if_exited(exited);
            continue;
        }
        reap_other_orphans(&owned);
        drop(wait_for_change(owned, OWNED_WAIT));
    }
}

/// Reaps every exited child that is not owned, found through `/proc` (the kernel's `waitid`
/// keeps naming the owned one that is waiting for its owner). Without `/proc` the orphans
/// wait until the owned child is reaped and `waitid` names them.
fn reap_other_orphans(owned: &Owned) {
    for pid in children().unwrap_or_default() {
        if !owned.owns(pid) {
            let _ = sys::reap_if_exited(pid);
        }
    }
}

/// The children of every thread of this process.
fn children() -> io::Result<Vec<u32>> {
    let mut pids = Vec::new();
    for task in std::fs::read_dir("/proc/self/task")? {
        let Ok(text) = std::fs::read_to_string(task?.path().join("children")) else {
            continue;
        };
        pids.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    Ok(pids)
}
