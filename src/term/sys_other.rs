//! `term::sys` where there is no Unix (the `x86_64-pc-windows-gnu` check): the same names as
//! `sys.rs` with no termios, signals or `poll` behind them. Entering raw mode and reading the
//! terminal fail with "not supported on this platform", so the interactive chat says so and
//! stops; the headless commands run without a Ctrl-C handler (their callers warn). No `unsafe`.

use std::io;

use crate::cancel::CancelToken;

/// The error of a call this platform lacks.
fn unsupported() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "not supported on this platform")
}

/// No signal handlers here: Ctrl-C ends the process the system's way.
pub fn cancel_on_interrupt(_cancel: CancelToken) -> io::Result<()> {
    Err(unsupported())
}

/// What the chat hears from the outside world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Interrupt,
    Terminate(i32),
    Suspend,
    Continue,
    Resize,
}

pub fn watch_signals(_deliver: impl Fn(Signal) + Send + 'static) -> io::Result<()> {
    Err(unsupported())
}

pub fn suspend_self() -> io::Result<()> {
    Err(unsupported())
}

/// Raw mode on a terminal; it cannot be entered here.
pub struct RawMode {
    _private: (),
}

impl RawMode {
    pub fn enter(_input: i32, _output: i32) -> io::Result<RawMode> {
        Err(unsupported())
    }

    pub fn apply_raw(&self) -> io::Result<()> {
        Err(unsupported())
    }

    pub fn restore(&self) {}
}

/// Nothing to restore: raw mode is never entered here.
pub fn restore_terminal() {}

pub fn window_size(_fd: i32) -> Option<(u16, u16)> {
    None
}

pub fn poll_readable(_fd: i32, _timeout_ms: i32) -> io::Result<bool> {
    Err(unsupported())
}

pub fn poll_readable_many(
    _fds: &[i32],
    _timeout_ms: i32,
    _ready: &mut Vec<bool>,
) -> io::Result<()> {
    Err(unsupported())
}

pub fn read_fd(_fd: i32, _buf: &mut [u8]) -> io::Result<usize> {
    Err(unsupported())
}
