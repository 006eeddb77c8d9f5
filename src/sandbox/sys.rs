//! The libc calls the sandbox needs that std does not offer: starting a child in its own
//! session, signalling a whole process group, waiting for an exit without reaping it, and
//! waiting for either of two pipes to become readable.
//!
//! This is one of the two places in the crate allowed to use `unsafe` (the other is
//! `term::sys`); everything here is a thin, documented wrapper, and policy (which signal, how
//! long to wait) lives in `sandbox::process`.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The signals the process runner sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Asks politely, so tools like git and cargo can remove lock files and temp dirs.
    Term,
    /// Cannot be caught or ignored.
    Kill,
}

impl Signal {
    fn raw(self) -> libc::c_int {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

/// Makes the child call `setsid()` before exec: it leads a new session and a new process group
/// whose id is its pid, and it has no controlling terminal.
///
/// The new group lets us kill every descendant at once. Dropping the controlling terminal means
/// a command that opens `/dev/tty` (an ssh or sudo password prompt, git asking for credentials)
/// fails at once instead of being stopped by SIGTTIN and hanging until the deadline, and the
/// terminal's Ctrl-C reaches only reasonix, which then decides what to kill.
pub fn start_new_session(command: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // functions may be called; setsid(2) is one, and the closure touches no shared state and
    // does not allocate. It cannot fail with EPERM because a freshly forked child is never a
    // process group leader.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A pipe as (read end, write end), both close-on-exec so no other child inherits them.
/// (`std::io::pipe` does the same but needs a newer Rust than the crate's minimum.)
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [libc::c_int; 2] = [-1, -1];
    // SAFETY: pipe2(2) writes two descriptors into the two-element array we own; on success
    // they are fresh, open and owned by nobody else, so wrapping each in an OwnedFd once is
    // sound.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// Sends `signal` to every process in the group `pgid`. A group that no longer exists is not
/// an error: the goal (nothing left running) already holds.
///
/// Callers must only pass the pgid of a child they have not reaped yet: while the group leader
/// is at least a zombie, its pid (and so the group id) cannot be reused by an unrelated process.
pub fn kill_group(pgid: u32, signal: Signal) -> io::Result<()> {
    let pgid = libc::pid_t::try_from(pgid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "process id out of range"))?;
    if pgid <= 1 {
        // kill(0) or kill(-1) would signal our own group or every process we may signal.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "refusing to signal process group 0 or 1",
        ));
    }
    // SAFETY: kill(2) takes plain integers and has no memory-safety preconditions; a negative
    // pid addresses the process group, and the guard above rules out the special values.
    let rc = unsafe { libc::kill(-pgid, signal.raw()) };
    if rc == -1 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ESRCH) {
            return Ok(());
        }
        return Err(err);
    }
    Ok(())
}

/// Blocks until the child `pid` has exited, leaving it a zombie so that its pid and process
/// group id stay reserved until the owner reaps it with `Child::wait`.
pub fn wait_exit_keep_zombie(pid: u32) -> io::Result<()> {
    let id = libc::id_t::from(pid);
    loop {
        // SAFETY: siginfo_t is plain data for which all-zero bytes are a valid value, and
        // waitid(2) only writes into the struct we pass by a pointer valid for the call.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Which of the two descriptors given to [`wait_readable`] needs attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// The data descriptor has bytes, end of file or an error: a `read` will not block.
    Data,
    /// The wake descriptor fired (its writer wrote or closed): stop reading.
    Wake,
}

/// Blocks until `data` or `wake` is readable or hung up. The wake side wins a tie so a reader
/// fed by a never-ending writer still notices when it is told to stop.
pub fn wait_readable(data: BorrowedFd<'_>, wake: BorrowedFd<'_>) -> io::Result<Readiness> {
    let mut fds = [
        libc::pollfd {
            fd: data.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a live array of two initialised pollfd structs, the length passed
        // matches it, and both descriptors are borrowed for the duration of the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if rc >= 0 {
            if fds[1].revents != 0 {
                return Ok(Readiness::Wake);
            }
            if fds[0].revents != 0 {
                return Ok(Readiness::Data);
            }
            continue;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn refuses_the_special_group_ids() {
        assert!(kill_group(0, Signal::Term).is_err());
        assert!(kill_group(1, Signal::Kill).is_err());
    }

    #[test]
    fn wake_wins_over_pending_data() {
        let (data_r, data_w) = pipe().unwrap();
        let (wake_r, wake_w) = pipe().unwrap();
        std::fs::File::from(data_w).write_all(b"x").unwrap();
        assert_eq!(
            wait_readable(data_r.as_fd(), wake_r.as_fd()).unwrap(),
            Readiness::Data
        );
        drop(wake_w);
        assert_eq!(
            wait_readable(data_r.as_fd(), wake_r.as_fd()).unwrap(),
            Readiness::Wake
        );
    }
}
