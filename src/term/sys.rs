//! Signal handling through a self-pipe: the async-signal handler only writes one byte; a
//! named thread turns it into a cancellation of the run. A second interrupt while the first
//! is still being handled exits at once with status 130.

use std::io::Read;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::cancel::CancelToken;

static SIGNAL_PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

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

/// Routes SIGINT and SIGTERM to `cancel`. The first signal cancels; a second one exits the
/// process with 130 (the user insists). Returns an error if the handlers cannot be installed.
pub fn cancel_on_interrupt(cancel: CancelToken) -> std::io::Result<()> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    SIGNAL_PIPE_WRITE.store(fds[1], Ordering::SeqCst);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; we set the handler and an empty mask, and the
        // handler only performs an async-signal-safe write.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    // SAFETY: fds[0] is the read end we just created and nothing else owns it.
    let mut reader = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut byte = [0u8; 1];
            while reader.read_exact(&mut byte).is_ok() {
                if cancel.is_cancelled() {
                    std::process::exit(crate::error::exit::INTERRUPTED);
                }
                cancel.cancel();
            }
        })?;
    Ok(())
}
