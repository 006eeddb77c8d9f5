//! The libc side of the terminal: raw mode via termios (saved once, restored on every way
//! out: drop, panic hook, fatal signals, suspend), the window size, polling stdin, and
//! signals through a self-pipe. The async-signal handler only writes one byte; a named
//! thread turns it into an event. This file and `sandbox/sys.rs` are the only unsafe code.

use std::io::{self, Read};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::cancel::CancelToken;

static SIGNAL_PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// The terminal before raw mode, for restoring from anywhere (panic hook, signal thread).
/// `None` when raw mode is not active.
static SAVED: Mutex<Option<Saved>> = Mutex::new(None);

#[derive(Clone, Copy)]
struct Saved {
    /// The descriptor whose mode we changed (the input side of the terminal).
    input: i32,
    /// Where the restoring escapes go (the output side).
    output: i32,
    termios: libc::termios,
}

/// Escapes that undo what the chat turns on: bracketed paste, keyboard reports, a hidden
/// cursor, a custom cursor shape, a half-written style, an unfinished synchronized frame.
const RESTORE_ESCAPES: &[u8] = b"\x1b[?2026l\x1b[0m\x1b[?2004l\x1b[<u\x1b[0 q\x1b[?25h";

extern "C" fn on_signal(signal: libc::c_int) {
    let fd = SIGNAL_PIPE_WRITE.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = signal as u8;
        // SAFETY: write(2) is async-signal-safe; the buffer is a live local byte.
        unsafe {
            libc::write(fd, (&byte as *const u8).cast(), 1);
        }
    }
}

/// Creates the self-pipe and routes `signals` to it; returns the read end.
fn install(signals: &[libc::c_int]) -> io::Result<std::fs::File> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    #[cfg(target_os = "linux")]
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // Other Unix systems lack pipe2: the descriptors are marked close-on-exec right after.
    // SAFETY: pipe writes two descriptors into the array we own; fcntl takes integers only.
    #[cfg(not(target_os = "linux"))]
    unsafe {
        if libc::pipe(fds.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        for fd in fds {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    SIGNAL_PIPE_WRITE.store(fds[1], Ordering::SeqCst);
    for &signal in signals {
        set_handler(signal)?;
    }
    // SAFETY: fds[0] is the read end we just created and nothing else owns it.
    Ok(unsafe { std::fs::File::from_raw_fd(fds[0]) })
}

fn set_handler(signal: libc::c_int) -> io::Result<()> {
    // SAFETY: a zeroed sigaction is valid; we set the handler and an empty mask, and the
    // handler only performs an async-signal-safe write.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Routes SIGINT and SIGTERM to `cancel`. The first signal cancels; a second one kills every
/// running command's process group and exits the process with 130 (the user insists). Returns
/// an error if the handlers cannot be installed.
pub fn cancel_on_interrupt(cancel: CancelToken) -> io::Result<()> {
    let mut reader = install(&[libc::SIGINT, libc::SIGTERM])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut byte = [0u8; 1];
            while reader.read_exact(&mut byte).is_ok() {
                if cancel.is_cancelled() {
                    crate::sandbox::process::kill_all_groups();
                    std::process::exit(crate::cancel::INTERRUPTED_EXIT);
                }
                cancel.cancel();
            }
        })?;
    Ok(())
}

/// What the chat hears from the outside world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT sent by someone else (in raw mode Ctrl-C arrives as a key instead).
    Interrupt,
    /// SIGTERM or SIGHUP: restore the terminal and leave; carries the signal number.
    Terminate(i32),
    /// SIGTSTP sent by someone else (Ctrl-Z arrives as a key in raw mode).
    Suspend,
    /// SIGCONT: we were resumed after a stop and must re-enter raw mode and redraw.
    Continue,
    /// SIGWINCH: the window size changed.
    Resize,
}

/// Installs handlers for the chat's signals and calls `deliver` for each on a thread named
/// `signals`. A second SIGTERM/SIGHUP while the first is being handled restores the
/// terminal and exits at once, so a stuck UI can still be killed cleanly.
pub fn watch_signals(deliver: impl Fn(Signal) + Send + 'static) -> io::Result<()> {
    let mut reader = install(&[
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGTSTP,
        libc::SIGCONT,
        libc::SIGWINCH,
    ])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut byte = [0u8; 1];
            let mut terminating = false;
            while reader.read_exact(&mut byte).is_ok() {
                let signal = match i32::from(byte[0]) {
                    libc::SIGINT => Signal::Interrupt,
                    n @ (libc::SIGTERM | libc::SIGHUP) => {
                        if terminating {
                            restore_terminal();
                            crate::sandbox::process::kill_all_groups();
                            std::process::exit(128 + n);
                        }
                        terminating = true;
                        Signal::Terminate(n)
                    }
                    libc::SIGTSTP => Signal::Suspend,
                    libc::SIGCONT => Signal::Continue,
                    libc::SIGWINCH => Signal::Resize,
                    _ => continue,
                };
                deliver(signal);
            }
        })?;
    Ok(())
}

/// Stops the process the way Ctrl-Z would (the terminal must already be restored). Returns
/// after the shell continues us; the caller then re-enters raw mode.
pub fn suspend_self() -> io::Result<()> {
    // SAFETY: restoring the default disposition and signalling ourselves are plain syscalls;
    // the handler is reinstalled right after we are continued.
    unsafe {
        libc::signal(libc::SIGTSTP, libc::SIG_DFL);
        libc::kill(libc::getpid(), libc::SIGTSTP);
    }
    set_handler(libc::SIGTSTP)
}

/// Raw mode on a terminal; dropping it restores the saved state.
pub struct RawMode {
    fd: i32,
}

impl RawMode {
    /// Saves the current state and switches `fd` to raw input: no echo, no line buffering,
    /// no signals from keys (Ctrl-C, Ctrl-Z arrive as bytes), no CR→NL translation (so Enter
    /// and Ctrl-J differ). Output processing stays on so a stray `\n` still returns the
    /// carriage.
    /// `input` is the terminal's input descriptor, `output` where escapes are written.
    pub fn enter(input: i32, output: i32) -> io::Result<RawMode> {
        let termios = get_attr(input)?;
        *SAVED.lock().unwrap_or_else(PoisonError::into_inner) = Some(Saved {
            input,
            output,
            termios,
        });
        let mode = RawMode { fd: input };
        mode.apply_raw()?;
        Ok(mode)
    }

    /// Switches back to raw mode after a suspend or a shell-out.
    pub fn apply_raw(&self) -> io::Result<()> {
        let Some(saved) = *SAVED.lock().unwrap_or_else(PoisonError::into_inner) else {
            return Ok(());
        };
        let mut raw = saved.termios;
        raw.c_iflag &= !(libc::BRKINT | libc::ICRNL | libc::INPCK | libc::ISTRIP | libc::IXON);
        raw.c_cflag |= libc::CS8;
        raw.c_lflag &= !(libc::ECHO | libc::ICANON | libc::IEXTEN | libc::ISIG);
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        set_attr(self.fd, &raw)
    }

    /// Restores the saved state without giving up the guard (before a suspend).
    pub fn restore(&self) {
        restore_terminal();
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        restore_terminal();
        *SAVED.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// Puts the terminal back the way it was and undoes our output modes. Safe to call from
/// the panic hook and more than once; does nothing when raw mode was never entered.
pub fn restore_terminal() {
    let saved = *SAVED.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(saved) = saved else {
        return;
    };
    let _ = set_attr(saved.input, &saved.termios);
    // SAFETY: writing a static byte string to the terminal's descriptor; a short or failed
    // write only leaves cosmetic modes behind.
    unsafe {
        libc::write(
            saved.output,
            RESTORE_ESCAPES.as_ptr().cast(),
            RESTORE_ESCAPES.len(),
        );
    }
}

fn get_attr(fd: i32) -> io::Result<libc::termios> {
    // SAFETY: tcgetattr fills the zeroed struct we own.
    unsafe {
        let mut attr: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut attr) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(attr)
    }
}

fn set_attr(fd: i32, attr: &libc::termios) -> io::Result<()> {
    // SAFETY: tcsetattr reads the struct we pass by reference.
    if unsafe { libc::tcsetattr(fd, libc::TCSADRAIN, attr) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The terminal size as (columns, rows), when `fd` is a terminal that knows it.
pub fn window_size(fd: i32) -> Option<(u16, u16)> {
    // SAFETY: TIOCGWINSZ fills the zeroed winsize we own.
    let size = unsafe {
        let mut size: libc::winsize = std::mem::zeroed();
        if libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) != 0 {
            return None;
        }
        size
    };
    (size.ws_col > 0 && size.ws_row > 0).then_some((size.ws_col, size.ws_row))
}

/// Waits up to `timeout_ms` for `fd` to become readable.
pub fn poll_readable(fd: i32, timeout_ms: i32) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll reads and writes the one pollfd we own.
    let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    match n {
        n if n < 0 => {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(err)
            }
        }
        0 => Ok(false),
        _ => Ok(true),
    }
}

/// Waits up to `timeout_ms` (negative: no limit) until one of `fds` is readable, closed or in
/// error; `ready` is refilled with one flag per descriptor. For `serve`'s reception of request
/// heads, which watches many sockets on one thread. An interrupted wait reports nothing ready.
pub fn poll_readable_many(fds: &[i32], timeout_ms: i32, ready: &mut Vec<bool>) -> io::Result<()> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: poll reads and writes exactly pfds.len() pollfd entries of the vector we own.
    let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
    ready.clear();
    if n < 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    let woke = libc::POLLIN | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
    ready.extend(pfds.iter().map(|p| n > 0 && p.revents & woke != 0));
    Ok(())
}

/// Reads what is available from `fd` into `buf` (blocking until at least one byte), retrying
/// when a signal interrupts the wait.
pub fn read_fd(fd: i32, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: read(2) writes at most buf.len() bytes into the buffer we own.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
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

    /// A pseudo-terminal pair: (master, terminal side).
    fn pty() -> (i32, i32) {
        let (mut master, mut slave) = (-1, -1);
        // SAFETY: openpty fills the two descriptors; null name, termios and size are allowed.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0);
        (master, slave)
    }

    #[test]
    fn raw_mode_is_restored_with_its_escapes_by_drop_and_by_restore() {
        let (master, slave) = pty();
        let cooked = get_attr(slave).unwrap().c_lflag;
        assert_ne!(cooked & libc::ICANON, 0);
        let raw = RawMode::enter(slave, slave).unwrap();
        let flags = get_attr(slave).unwrap().c_lflag;
        assert_eq!(flags & (libc::ICANON | libc::ECHO | libc::ISIG), 0);
        // What the panic hook and the signal thread call.
        restore_terminal();
        assert_eq!(get_attr(slave).unwrap().c_lflag, cooked);
        raw.apply_raw().unwrap();
        assert_eq!(get_attr(slave).unwrap().c_lflag & libc::ICANON, 0);
        drop(raw);
        assert_eq!(get_attr(slave).unwrap().c_lflag, cooked);
        restore_terminal();
        let mut buf = [0u8; 256];
        assert!(poll_readable(master, 1000).unwrap());
        let n = read_fd(master, &mut buf).unwrap();
        let written = String::from_utf8_lossy(&buf[..n]);
        assert!(
            written.contains("\x1b[?2004l\x1b[<u\x1b[0 q\x1b[?25h"),
            "{written:?}"
        );
        assert_eq!(window_size(slave), None, "a fresh pty has no size");
        // SAFETY: closing the descriptors this test opened.
        unsafe {
            libc::close(master);
            libc::close(slave);
        }
    }
}
