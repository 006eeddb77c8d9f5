//! Runs a command in a pseudo-terminal (openpty via libc) and interprets what it draws with
//! [`Vt`], so tests can type keys and assert on the screen. Only the child holds the
//! terminal side, so end of file on the master means the child (and anything it started on
//! the terminal) is gone and every byte it wrote has been read. The terminal mode is read
//! through the master, which on Linux reports the terminal side's settings.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::vt::Vt;

/// How long `wait_for` waits: a safety net against hangs, not a synchronisation device.
const WAIT_LIMIT: Duration = Duration::from_secs(30);

pub struct Pty {
    master: File,
    child: Child,
    output: Receiver<Vec<u8>>,
    pub vt: Vt,
    /// Every byte the child wrote, for assertions on raw escapes.
    pub raw: Vec<u8>,
}

fn winsize(cols: u16, rows: u16) -> libc::winsize {
    libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

impl Pty {
    pub fn spawn(mut cmd: Command, cols: u16, rows: u16) -> Pty {
        let mut master_fd = -1;
        let mut slave_fd = -1;
        let size = winsize(cols, rows);
        // SAFETY (test code): openpty fills two descriptors we then own.
        let rc = unsafe {
            libc::openpty(
                &mut master_fd,
                &mut slave_fd,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // Other tests spawn children concurrently; without close-on-exec they would inherit
        // this terminal and keep it open after our child exits.
        for fd in [master_fd, slave_fd] {
            // SAFETY (test code): F_SETFD on descriptors we own.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
        // SAFETY: both descriptors were just created and are owned here.
        let master = unsafe { File::from_raw_fd(master_fd) };
        let slave = unsafe { OwnedFd::from_raw_fd(slave_fd) };
        let stdio = || Stdio::from(slave.try_clone().expect("dup pty"));
        cmd.stdin(stdio()).stdout(stdio()).stderr(stdio());
        cmd.env("TERM", "xterm-256color");
        // SAFETY: only async-signal-safe calls between fork and exec: a new session with the
        // pty as its controlling terminal, as a shell would set up.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("spawn in pty");
        drop(cmd);
        drop(slave);
        let mut reader = master.try_clone().expect("clone master");
        let (tx, output) = mpsc::channel();
        std::thread::Builder::new()
            .name("pty-reader".into())
            .spawn(move || {
                let mut buf = [0u8; 8192];
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if tx.send(buf[..n].to_vec()).is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .expect("reader thread");
        Pty {
            master,
            child,
            output,
            vt: Vt::new(cols as usize, rows as usize),
            raw: Vec::new(),
        }
    }

    /// Types `bytes` as if at the keyboard.
    pub fn send(&mut self, bytes: &str) {
        self.master
            .write_all(bytes.as_bytes())
            .expect("write to pty");
        self.master.flush().expect("flush pty");
    }

    /// Reads output until `ready` holds for a completely drawn screen, or fails the test
    /// with the screen.
    pub fn wait_for(&mut self, what: &str, ready: impl Fn(&Vt) -> bool) {
        let deadline = Instant::now() + WAIT_LIMIT;
        while self.vt.in_frame() || !ready(&self.vt) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.absorb(&bytes),
                Err(RecvTimeoutError::Timeout) => panic!(
                    "timed out waiting for {what}\n--- screen ---\n{}\n--- history ---\n{}",
                    self.vt.screen(),
                    self.vt.history()
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "terminal closed while waiting for {what}\n--- screen ---\n{}",
                    self.vt.screen()
                ),
            }
        }
    }

    /// Waits until `text` is visible on the screen.
    pub fn wait_text(&mut self, text: &str) {
        let wanted = text.to_string();
        self.wait_for(&format!("{text:?} on screen"), move |vt| {
            vt.screen().contains(&wanted)
        });
    }

    fn absorb(&mut self, bytes: &[u8]) {
        self.raw.extend_from_slice(bytes);
        self.vt.feed(bytes);
    }

    pub fn screen(&self) -> String {
        self.vt.screen()
    }

    /// Changes the window size; the kernel sends SIGWINCH to the child's process group.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        let size = winsize(cols, rows);
        // SAFETY (test code): TIOCSWINSZ reads the winsize we pass.
        let rc = unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &size) };
        assert_eq!(rc, 0);
        self.vt.resize(cols as usize, rows as usize);
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Reads everything the child writes until it closes the terminal, then reaps it.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + WAIT_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.absorb(&bytes),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "the child did not exit\n--- screen ---\n{}",
                    self.vt.screen()
                ),
            }
        }
        self.child.wait().expect("wait for the child")
    }

    /// The terminal's current mode flags (`c_lflag`), read on the terminal side.
    pub fn local_flags(&self) -> libc::tcflag_t {
        // SAFETY (test code): tcgetattr fills the zeroed termios we own.
        unsafe {
            let mut attr: libc::termios = std::mem::zeroed();
            assert_eq!(libc::tcgetattr(self.master.as_raw_fd(), &mut attr), 0);
            attr.c_lflag
        }
    }

    pub fn raw_text(&self) -> String {
        String::from_utf8_lossy(&self.raw).into_owned()
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
