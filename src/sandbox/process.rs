//! Child processes that cannot outlive or wedge the agent: a [`CommandSpec`] describes what to
//! run, [`command`] turns it into a `std::process::Command` (the step a sandbox backend wraps),
//! [`GroupChild`] owns a running child and its whole process group, and [`run`] executes a
//! command to completion with a deadline, cancellation and a head/tail output cap.
//!
//! How [`run`] behaves, in the order things happen:
//! - The child gets `/dev/null` as stdin and one pipe for both stdout and stderr, so the output
//!   keeps the order in which the child wrote it. It starts a new session (see
//!   [`sys::start_new_session`]): its own process group, no controlling terminal.
//! - A named thread drains the pipe into a [`Capture`] that keeps the first and last bytes and
//!   counts what it drops, so a chatty child never blocks on a full pipe and memory stays bounded.
//!   A second named thread waits for the direct child to exit without reaping it, so the group
//!   id stays reserved and a later group kill cannot hit an unrelated process.
//! - On timeout or cancellation the whole group gets SIGTERM, then SIGKILL after
//!   [`CommandSpec::kill_grace`] or as soon as the direct child has exited, whichever is first.
//!   SIGTERM first because build tools and git clean up lock files on it; SIGKILL always follows
//!   because a grandchild may ignore SIGTERM, and the group must be empty when we return.
//! - After the direct child exits on its own, the output gets [`DRAIN_WINDOW`] to reach end of
//!   file. If something still holds the pipe (typically `server &` in the command), the group is
//!   killed and the window repeats: background jobs that keep our output open die with the
//!   command, while jobs that redirected their output (`server > log 2>&1 &`) keep running. If
//!   the pipe is still open after that (a process that left the group holds it), reading stops
//!   and the result says so; that process gets EPIPE on its next write. Either way `bash -c
//!   "sleep 100 &"` returns in well under a second with its exit code. A jailed command keeps
//!   nothing running after it exits: bubblewrap's PID namespace and the Landlock jail's
//!   supervisor (see [`command`]) kill every descendant, redirected or not.
//! - Children die with reasonix: the parent-death signal is set in every child, and they are
//!   spawned from one long-lived thread because the kernel ties that signal to the spawning
//!   thread. Paths that exit without unwinding call [`kill_all_groups`] first; the end of
//!   `main` calls [`shut_down`], which also waits (briefly) until the killed groups are reaped.
//!   After either, nothing new is spawned.
//! - Every child is registered ([`GroupChild`], or [`PlainChild`] for one that keeps our group)
//!   in the same step as the fork and unregistered in the same step as the reap, so the orphan
//!   reaper (`sandbox::reaper`, when reasonix is PID 1) never takes a status someone waits for.
//! - Dropping a [`GroupChild`] that has not been reaped kills its group with SIGKILL and reaps
//!   the leader, so an early return or a panic leaves nothing running.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::sys::{self, AsFd, OwnedFd, Readiness, Signal};
use crate::cancel::CancelToken;

/// How long the output may stay open after the direct child exited before the runner kills
/// the group (and, if that does not close it, stops reading). Long enough for exiting
/// grandchildren to flush, short enough that a forgotten `&` job costs nothing noticeable.
pub const DRAIN_WINDOW: Duration = Duration::from_millis(200);

/// How many bytes of output are kept: the first `head_bytes` and the last `tail_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputCap {
    pub head_bytes: usize,
    pub tail_bytes: usize,
}

/// Everything needed to start a child. Plain data, so a sandbox backend can rewrite it (wrap
/// the program in `bwrap ... --`, add roots) before [`command`] builds the real thing.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// Variables removed from the inherited environment (provider keys and other secrets).
    pub env_remove: Vec<String>,
    /// Variables set after the removals.
    pub env_set: Vec<(String, String)>,
    /// `None` waits for as long as the child runs (or until cancelled).
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when the runner stops the group.
    pub kill_grace: Duration,
    pub output_cap: OutputCap,
    /// A Landlock ruleset the child enforces on itself just before exec (see
    /// `sandbox::landlock`); `None` runs the program without one.
    pub landlock_ruleset: Option<Arc<OwnedFd>>,
    /// The jail's seccomp filter (see `sandbox::seccomp`): with a Landlock ruleset the child
    /// installs it itself; otherwise it is handed to bubblewrap, whose `--seccomp` argument
    /// names its descriptor.
    pub seccomp: Option<Arc<sys::Filter>>,
    /// Written to the child's standard input, which is then closed; `None` gives it
    /// `/dev/null`. Hooks get their event this way.
    pub stdin: Option<Arc<Vec<u8>>>,
    /// Capture standard error apart from standard output (into [`Finished::stderr`]), for
    /// programs whose stdout is data and stderr a message (hooks); otherwise the two
    /// interleave in [`Finished::output`].
    pub stderr_apart: bool,
}

impl CommandSpec {
    /// A spec with no arguments, the inherited environment, no timeout, a 2 s kill grace and a
    /// 30 KiB + 10 KiB output cap.
    pub fn new(program: impl Into<OsString>, cwd: impl Into<PathBuf>) -> CommandSpec {
        CommandSpec {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env_remove: Vec::new(),
            env_set: Vec::new(),
            timeout: None,
            kill_grace: Duration::from_secs(2),
            output_cap: OutputCap {
                head_bytes: 30 * 1024,
                tail_bytes: 10 * 1024,
            },
            landlock_ruleset: None,
            seccomp: None,
            stdin: None,
            stderr_apart: false,
        }
    }
}

/// Builds the `Command` for `spec`: program, arguments, working directory, environment, a new
/// session, death with reasonix, and the jail's part of the child, if any. Stdio is left to
/// the caller, which spawns it with [`GroupChild::spawn`].
///
/// What runs in the child before exec, in this order: `setsid` (see
/// [`sys::start_new_session`]); `PR_SET_PDEATHSIG(SIGKILL)`; then under Landlock
/// [`sys::lock_down_before_exec`] (descriptors above 2 close-on-exec, a supervisor that stays
/// the direct child and kills every descendant when the command ends, is stopped, or reasonix
/// dies; in the command: no_new_privs, the ruleset, no capabilities, the seccomp filter), and
/// under bubblewrap [`sys::pass_filter_before_exec`] (descriptors above 2 close-on-exec but the
/// filter's, which bubblewrap installs after building the sandbox; bubblewrap itself sets
/// no_new_privs, drops capabilities with `--cap-drop ALL` and starts a new session).
pub fn command(spec: &CommandSpec) -> Command {
    let mut command = Command::new(&spec.program);
    command.args(&spec.args).current_dir(&spec.cwd);
    for name in &spec.env_remove {
        command.env_remove(name);
    }
    for (name, value) in &spec.env_set {
        command.env(name, value);
    }
    sys::start_new_session(&mut command);
    sys::die_with_parent_before_exec(&mut command);
    match (&spec.landlock_ruleset, &spec.seccomp) {
        (Some(ruleset), Some(filter)) => sys::lock_down_before_exec(
            &mut command,
            Arc::new(sys::Lockdown {
                ruleset: Arc::clone(ruleset),
                filter: Arc::clone(filter),
                last_cap: sys::last_capability(),
            }),
        ),
        (Some(ruleset), None) => sys::restrict_self_before_exec(&mut command, Arc::clone(ruleset)),
        (None, Some(filter)) => sys::pass_filter_before_exec(&mut command, Arc::clone(filter)),
        (None, None) => {}
    }
    command
}

/// The children reasonix spawned and will reap itself, so that [`kill_all_groups`] can stop
/// them on the way out and the orphan reaper (`sandbox::reaper`) never takes their exit
/// status. A pid is added under the lock in the same step as the fork, and removed under the
/// lock in the same step as the reap, so whoever holds the lock sees every child either owned
/// or not ours to wait for; and a group id is never signalled after it could be reused.
pub(super) struct Owned {
    /// Leaders of process groups ([`GroupChild`]): their pid is their group id.
    groups: Vec<u32>,
    /// Children that keep reasonix's group (an editor on the terminal, a browser).
    plain: Vec<u32>,
    /// Set on the way out: nothing new is started after the last group kill.
    closed: bool,
    /// Counts spawns and reaps, so a waiter on [`OWNED_CHANGED`] can tell that one happened.
    generation: u64,
}

impl Owned {
    /// Whether `pid` is a child some thread of reasonix will reap.
    pub(super) fn owns(&self, pid: u32) -> bool {
        self.groups.contains(&pid) || self.plain.contains(&pid)
    }

    fn changed(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        OWNED_CHANGED.notify_all();
    }
}

static OWNED: Mutex<Owned> = Mutex::new(Owned {
    groups: Vec::new(),
    plain: Vec::new(),
    closed: false,
    generation: 0,
});

/// Notified whenever a child is spawned or reaped (see [`Owned::generation`]).
static OWNED_CHANGED: Condvar = Condvar::new();

pub(super) fn owned() -> MutexGuard<'static, Owned> {
    OWNED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits until a child was spawned or reaped, or `timeout` passed.
pub(super) fn wait_for_change(
    guard: MutexGuard<'static, Owned>,
    timeout: Duration,
) -> MutexGuard<'static, Owned> {
    let generation = guard.generation;
    OWNED_CHANGED
        .wait_timeout_while(guard, timeout, |owned| owned.generation == generation)
        .map(|(guard, _)| guard)
        .unwrap_or_else(|poisoned| poisoned.into_inner().0)
}

/// The error of a spawn attempted after [`kill_all_groups`]: reasonix is on its way out.
fn exiting() -> io::Error {
    io::Error::other("reasonix is exiting")
}

/// SIGKILLs every process group reasonix started and has not reaped, and refuses every later
/// spawn (a version probe starting late must not outlive us): for the paths that exit the
/// process without unwinding (a second Ctrl-C, a second SIGTERM) and the end of `main`
/// (through [`shut_down`]).
pub fn kill_all_groups() {
    let mut owned = owned();
    owned.closed = true;
    for pgid in owned.groups.iter() {
        let _ = sys::kill_group(*pgid, Signal::Kill);
    }
}

/// Whether [`kill_all_groups`] has run: a caller that sees its child die now knows why.
pub fn is_exiting() -> bool {
    owned().closed
}

/// How long [`shut_down`] waits for the killed groups' owners to reap them.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(1);

/// The end of `main`: [`kill_all_groups`], then up to [`SHUTDOWN_WAIT`] for their owners to
/// reap the leaders. A runner reaps only once the group's output has closed, so by then the
/// group's processes are gone, not dying: nothing reasonix started is left when it exits.
pub fn shut_down() {
    kill_all_groups();
    let until = Instant::now() + SHUTDOWN_WAIT;
    let mut owned = owned();
    while !owned.groups.is_empty() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        owned = wait_for_change(owned, left);
    }
}

/// A child that is not a [`GroupChild`] (it keeps reasonix's process group and terminal: an
/// editor, a browser) but is still registered, so the orphan reaper leaves its status to
/// [`PlainChild::wait`].
pub struct PlainChild {
    child: Child,
}

impl PlainChild {
    /// Spawns `command` as is and registers it.
    pub fn spawn(command: &mut Command) -> io::Result<PlainChild> {
        let mut owned = owned();
        if owned.closed {
            return Err(exiting());
        }
        let child = command.spawn()?;
        owned.plain.push(child.id());
        owned.changed();
        Ok(PlainChild { child })
    }

    /// Waits for the child to exit and reaps it.
    pub fn wait(mut self) -> io::Result<ExitStatus> {
        let pid = self.child.id();
        // Waiting without reaping first keeps the lock free while the child runs (an editor
        // for minutes); without Unix there is no reaper to race and nothing to keep.
        if cfg!(unix) {
            sys::wait_exit_keep_zombie(pid)?;
        }
        let mut owned = owned();
        owned.plain.retain(|p| *p != pid);
        let status = self.child.wait();
        owned.changed();
        status
    }
}

/// A request to the spawner thread: the command and where to send the child.
type SpawnRequest = (Command, Sender<io::Result<Child>>);

/// Spawns `command` from one thread that lives as long as the process. The kernel sends the
/// parent-death signal when the *thread* that forked the child exits, not the process; spawning
/// from short-lived worker threads would kill long-running children (an MCP server) when
/// their thread ends.
fn spawn_from_lifetime_thread(command: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Option<Mutex<Sender<SpawnRequest>>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        thread::Builder::new()
            .name("reasonix-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let Some(spawner) = spawner else {
        return Err(io::Error::other("cannot start the spawner thread"));
    };
    let (reply, answer) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .send((command, reply))
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the spawner thread is gone"))?
}

/// A running child that leads its own session and process group. Dropping it before it was
/// reaped kills the whole group and reaps the leader.
pub struct GroupChild {
    child: Child,
    reaped: bool,
}

impl GroupChild {
    /// Spawns `command`, built by [`command`] (which makes it lead a new session and process
    /// group), from the spawner thread, and records its group for [`kill_all_groups`].
    pub fn spawn(command: Command) -> io::Result<GroupChild> {
        // Without process groups a child could neither be stopped with its descendants nor
        // jailed, so elsewhere nothing is started rather than something left unconfined.
        if cfg!(not(unix)) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "running commands is not supported on this platform",
            ));
        }
        let mut owned = owned();
        if owned.closed {
            return Err(exiting());
        }
        let child = spawn_from_lifetime_thread(command)?;
        owned.groups.push(child.id());
        owned.changed();
        drop(owned);
        Ok(GroupChild {
            child,
            reaped: false,
        })
    }

    /// Reaps the leader after taking its group out of the live list; the caller knows it has
    /// exited (or killed its group), so the wait is short.
    fn forget_and_wait(&mut self) -> io::Result<ExitStatus> {
        let mut owned = owned();
        let pid = self.child.id();
        owned.groups.retain(|pgid| *pgid != pid);
        let status = self.child.wait();
        owned.changed();
        drop(owned);
        status
    }

    /// The leader's pid, which is also the process group id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Signals every process in the group. Does nothing once the leader was reaped, because
    /// from then on the group id may belong to someone else.
    pub fn signal(&self, signal: Signal) -> io::Result<()> {
        if self.reaped {
            return Ok(());
        }
        sys::kill_group(self.id(), signal)
    }

    /// Waits for the leader to exit and reaps it. Other members of the group are left alone;
    /// signal the group first if they must not survive.
    pub fn reap(&mut self) -> io::Result<ExitStatus> {
        // Waits outside the lock so other spawns proceed; the leader stays a zombie, so its
        // group id stays ours until `forget_and_wait` reaps it.
        sys::wait_exit_keep_zombie(self.id())?;
        let status = self.forget_and_wait()?;
        self.reaped = true;
        Ok(status)
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = sys::kill_group(self.id(), Signal::Kill);
            let _ = sys::wait_exit_keep_zombie(self.id());
            let _ = self.forget_and_wait();
        }
    }
}

/// How the direct child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    fn from_status(status: ExitStatus) -> Exit {
        match (status.code(), sys::exit_signal(&status)) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(signal)) => Exit::Signal(signal),
            // A reaped child has either a code or a signal; this arm only satisfies the types.
            (None, None) => Exit::Code(-1),
        }
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "exit code {code}"),
            Exit::Signal(signal) => match signal_name(*signal) {
                Some(name) => write!(f, "signal {signal} ({name})"),
                None => write!(f, "signal {signal}"),
            },
        }
    }
}

/// The conventional name of the signals a command commonly dies of.
#[cfg(unix)]
pub fn signal_name(signal: i32) -> Option<&'static str> {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return None,
    };
    Some(name)
}

/// No signals elsewhere, so no child dies of one.
#[cfg(not(unix))]
pub fn signal_name(_signal: i32) -> Option<&'static str> {
    None
}

/// Why the runner stopped the child instead of letting it finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    TimedOut,
    Cancelled,
}

/// Processes still holding the output pipe after the direct child exited on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stragglers {
    /// The output reached end of file; nothing was left holding it.
    None,
    /// Background processes in the group kept the output open and were killed.
    Killed,
    /// A process outside the group kept the output open; reading stopped without end of file.
    Abandoned,
}

/// The kept output: the first and last bytes, with the exact count of bytes dropped between
/// them. `head` never ends and `tail` never starts inside a UTF-8 character when bytes were
/// dropped; the partial character's bytes are counted in `elided`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    pub elided: u64,
}

impl Output {
    /// The number of bytes the child wrote.
    pub fn total_bytes(&self) -> u64 {
        self.head.len() as u64 + self.elided + self.tail.len() as u64
    }

    /// The output as text (invalid UTF-8 replaced), with a `[... N bytes elided ...]` line in
    /// place of the dropped middle.
    pub fn to_text(&self) -> String {
        if self.elided == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&self.tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[... {} bytes elided ...]\n", self.elided));
        text.push_str(&String::from_utf8_lossy(&self.tail));
        text
    }
}

/// Collects output under an [`OutputCap`]: fills the head, then keeps a sliding tail and counts
/// every byte that slides out of it.
#[derive(Debug)]
pub struct Capture {
    cap: OutputCap,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    elided: u64,
}

impl Capture {
    pub fn new(cap: OutputCap) -> Capture {
        Capture {
            cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            elided: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        let room = self.cap.head_bytes.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        let keep = self.cap.tail_bytes;
        if rest.len() >= keep {
            self.elided += (self.tail.len() + rest.len() - keep) as u64;
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - keep..]);
        } else {
            self.tail.extend(rest);
            let over = self.tail.len().saturating_sub(keep);
            self.tail.drain(..over);
            self.elided += over as u64;
        }
    }

    /// The kept bytes, with partial UTF-8 characters at the cut moved into the elided count.
    pub fn finish(self) -> Output {
        let mut head = self.head;
        let mut tail: Vec<u8> = self.tail.into();
        let mut elided = self.elided;
        if elided > 0 {
            let partial = incomplete_suffix_len(&head);
            head.truncate(head.len() - partial);
            let orphans = tail
                .iter()
                .take(3)
                .take_while(|b| is_continuation(**b))
                .count();
            tail.drain(..orphans);
            elided += (partial + orphans) as u64;
        }
        Output { head, tail, elided }
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// The length of a UTF-8 character cut short at the end of `bytes`, or 0 when the last
/// character is complete (or the bytes are not UTF-8 there, which lossy decoding handles).
fn incomplete_suffix_len(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(4) {
        let byte = bytes[bytes.len() - back];
        if is_continuation(byte) {
            continue;
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

/// A command that ran to completion or was stopped.
#[derive(Debug, Clone)]
pub struct Finished {
    pub exit: Exit,
    /// stdout and stderr interleaved in the order the child wrote them, capped.
    pub output: Output,
    /// Set when the runner killed the group because of the deadline or a cancellation.
    pub stopped: Option<Stop>,
    pub stragglers: Stragglers,
    pub duration: Duration,
    /// Standard error, when the spec asked for it apart (`stderr_apart`), under the same cap.
    pub stderr: Option<Output>,
}

#[derive(Debug)]
pub enum ProcessError {
    Pipe(io::Error),
    Spawn {
        program: String,
        cwd: PathBuf,
        source: io::Error,
    },
    Thread(io::Error),
    Wait(io::Error),
    /// The output thread panicked, so the output is lost.
    Reader,
}

impl fmt::Display for ProcessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcessError::Pipe(e) => write!(f, "process: cannot create the output pipe: {e}"),
            ProcessError::Spawn {
                program,
                cwd,
                source,
            } => write!(
                f,
                "process: cannot start `{program}` in {}: {source}",
                cwd.display()
            ),
            ProcessError::Thread(e) => write!(f, "process: cannot start a helper thread: {e}"),
            ProcessError::Wait(e) => write!(f, "process: cannot collect the exit status: {e}"),
            ProcessError::Reader => write!(f, "process: the output reader stopped unexpectedly"),
        }
    }
}

impl std::error::Error for ProcessError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProcessError::Pipe(e) | ProcessError::Thread(e) | ProcessError::Wait(e) => Some(e),
            ProcessError::Spawn { source, .. } => Some(source),
            ProcessError::Reader => None,
        }
    }
}

/// What the helper threads and the cancel hook tell the supervising thread.
enum Event {
    /// The direct child exited (or waiting for it failed; reaping will report why).
    Exited,
    /// The output pipe reached end of file: every writer has closed it.
    OutputClosed,
    Cancelled,
}

/// Runs `spec` to completion, or until its timeout or `cancel` stops it. A non-zero exit is a
/// normal [`Finished`]; errors are only about failing to start or observe the child.
pub fn run(spec: &CommandSpec, cancel: &CancelToken) -> Result<Finished, ProcessError> {
    let (output_reader, output_writer) = sys::pipe().map_err(ProcessError::Pipe)?;
    let (wake_reader, wake_writer) = sys::pipe().map_err(ProcessError::Pipe)?;
    let stderr_pipe = if spec.stderr_apart {
        Some(sys::pipe().map_err(ProcessError::Pipe)?)
    } else {
        None
    };
    let mut command = command(spec);
    command
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(output_writer.try_clone().map_err(ProcessError::Pipe)?);
    let stderr_reader = match stderr_pipe {
        Some((reader, writer)) => {
            command.stderr(writer);
            drop(output_writer);
            Some(reader)
        }
        None => {
            command.stderr(output_writer);
            None
        }
    };
    let started = Instant::now();
    // `command` (and with it our copies of the pipe's write end) is consumed here, so end of
    // file arrives as soon as the child's side closes.
    let mut child = GroupChild::spawn(command).map_err(|source| ProcessError::Spawn {
        program: spec.program.to_string_lossy().into_owned(),
        cwd: spec.cwd.clone(),
        source,
    })?;
    if let (Some(input), Some(mut pipe)) = (spec.stdin.clone(), child.take_stdin()) {
        // A child that exits without reading gets EPIPE here, which is not an error of ours;
        // the pipe closes when the thread ends, so the child sees end of file.
        thread::Builder::new()
            .name("reasonix-process-input".into())
            .spawn(move || {
                use std::io::Write;
                let _ = pipe.write_all(&input);
            })
            .map_err(ProcessError::Thread)?;
    }
    let (events, rx) = mpsc::channel();
    // Standard error, when apart, is a second output the watch waits for, woken like the
    // first once the child is reaped.
    let errors = match stderr_reader {
        Some(reader) => {
            let wake = wake_reader.try_clone().map_err(ProcessError::Pipe)?;
            Some(spawn_reader(reader, wake, spec.output_cap, events.clone())?)
        }
        None => None,
    };
    let reader = spawn_reader(output_reader, wake_reader, spec.output_cap, events.clone())?;
    spawn_waiter(child.id(), events.clone())?;
    let _hook = cancel.on_cancel(move || {
        let _ = events.send(Event::Cancelled);
    });

    let mut watch = Watch::new(rx, if spec.stderr_apart { 2 } else { 1 });
    // A timeout too long to add to the clock is no deadline at all (never a panic).
    let deadline = spec.timeout.and_then(|t| started.checked_add(t));
    let stopped = watch.until_exit_or_stop(deadline);
    if stopped.is_some() {
        stop_group(&child, &mut watch, spec.kill_grace);
    }
    let stragglers = drain(&child, &mut watch, stopped);
    let status = child.reap().map_err(ProcessError::Wait)?;
    // Wakes the reader if it is still waiting on a pipe someone outside the group holds.
    drop(wake_writer);
    let capture = reader.join().map_err(|_| ProcessError::Reader)?;
    let stderr = match errors {
        Some(errors) => Some(errors.join().map_err(|_| ProcessError::Reader)?.finish()),
        None => None,
    };
    Ok(Finished {
        exit: Exit::from_status(status),
        output: capture.finish(),
        stopped,
        stragglers,
        duration: started.elapsed(),
        stderr,
    })
}

fn spawn_reader(
    output: OwnedFd,
    wake: OwnedFd,
    cap: OutputCap,
    events: Sender<Event>,
) -> Result<JoinHandle<Capture>, ProcessError> {
    thread::Builder::new()
        .name("reasonix-process-output".into())
        .spawn(move || read_output(output, wake, cap, events))
        .map_err(ProcessError::Thread)
}

fn read_output(output: OwnedFd, wake: OwnedFd, cap: OutputCap, events: Sender<Event>) -> Capture {
    let mut output = File::from(output);
    let mut capture = Capture::new(cap);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match sys::wait_readable(output.as_fd(), wake.as_fd()) {
            Ok(Readiness::Data) => {}
            // Told to stop, or poll itself failed: either way nothing more will be read.
            Ok(Readiness::Wake) | Err(_) => return capture,
        }
        match output.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => capture.push(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = events.send(Event::OutputClosed);
    capture
}

fn spawn_waiter(pid: u32, events: Sender<Event>) -> Result<(), ProcessError> {
    thread::Builder::new()
        .name("reasonix-process-wait".into())
        .spawn(move || {
            // An error here (the child was reaped elsewhere) also means there is nothing left
            // to wait for; reaping reports the cause.
            let _ = sys::wait_exit_keep_zombie(pid);
            let _ = events.send(Event::Exited);
        })
        .map(drop)
        .map_err(ProcessError::Thread)
}

/// The supervising thread's view of the child: the event channel plus what it has learnt.
struct Watch {
    rx: Receiver<Event>,
    exited: bool,
    output_closed: bool,
    /// Output pipes still open (stdout, and stderr when captured apart).
    open_outputs: usize,
}

impl Watch {
    fn new(rx: Receiver<Event>, outputs: usize) -> Watch {
        Watch {
            rx,
            exited: false,
            output_closed: false,
            open_outputs: outputs,
        }
    }

    /// The next event before `deadline` (`None` waits indefinitely), or `None` on timeout.
    fn next(&mut self, deadline: Option<Instant>) -> Option<Event> {
        let received = match deadline {
            Some(deadline) => self
                .rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now())),
            None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match received {
            Ok(event) => {
                match event {
                    Event::Exited => self.exited = true,
                    Event::OutputClosed => {
                        self.open_outputs = self.open_outputs.saturating_sub(1);
                        self.output_closed = self.open_outputs == 0;
                    }
                    Event::Cancelled => {}
                }
                Some(event)
            }
            Err(RecvTimeoutError::Timeout) => None,
            // Every sender is gone, so both helper threads have finished: nothing is pending.
            Err(RecvTimeoutError::Disconnected) => {
                self.exited = true;
                self.output_closed = true;
                Some(Event::Exited)
            }
        }
    }

    /// Waits for the child to exit; returns why it must be stopped instead, if it must.
    fn until_exit_or_stop(&mut self, deadline: Option<Instant>) -> Option<Stop> {
        while !self.exited {
            match self.next(deadline) {
                None => return Some(Stop::TimedOut),
                Some(Event::Cancelled) => return Some(Stop::Cancelled),
                Some(_) => {}
            }
        }
        None
    }

    /// Waits until the leader exited or `deadline` passed; `None` waits indefinitely.
    fn until_exit(&mut self, deadline: Option<Instant>) {
        while !self.exited {
            if self.next(deadline).is_none() {
                return;
            }
        }
    }

    /// Whether the output reached end of file within `window`.
    fn output_closes_within(&mut self, window: Duration) -> bool {
        let deadline = Instant::now() + window;
        while !self.output_closed {
            if self.next(Some(deadline)).is_none() {
                return false;
            }
        }
        true
    }
}

/// SIGTERM to the group, SIGKILL once the leader has exited or the grace is over, then waits
/// for the leader. The leader is not reaped yet, so the group id is still ours to signal.
fn stop_group(child: &GroupChild, watch: &mut Watch, grace: Duration) {
    let _ = child.signal(Signal::Term);
    watch.until_exit(Some(Instant::now() + grace));
    let _ = child.signal(Signal::Kill);
    watch.until_exit(None);
}

/// Gives the output time to close after the leader exited; see the module doc for the policy.
fn drain(child: &GroupChild, watch: &mut Watch, stopped: Option<Stop>) -> Stragglers {
    if watch.output_closes_within(DRAIN_WINDOW) {
        return Stragglers::None;
    }
    if stopped.is_some() {
        // The group is already dead, so whoever holds the pipe lives outside it.
        return Stragglers::Abandoned;
    }
    let _ = child.signal(Signal::Kill);
    if watch.output_closes_within(DRAIN_WINDOW) {
        Stragglers::Killed
    } else {
        Stragglers::Abandoned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(head: usize, tail: usize, chunks: &[&[u8]]) -> Output {
        let mut capture = Capture::new(OutputCap {
            head_bytes: head,
            tail_bytes: tail,
        });
        for chunk in chunks {
            capture.push(chunk);
        }
        capture.finish()
    }

    fn shell(script: &str) -> CommandSpec {
        let mut spec = CommandSpec::new("/bin/sh", "/");
        spec.args = vec!["-c".into(), script.into()];
        spec.timeout = Some(Duration::from_secs(30));
        spec
    }

    #[test]
    fn stdin_is_delivered_and_stderr_can_be_kept_apart() {
        let mut spec = shell("read line; echo out:$line; echo err:$line >&2; exit 2");
        spec.stdin = Some(Arc::new(b"hello\n".to_vec()));
        spec.stderr_apart = true;
        let finished = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(finished.output.to_text(), "out:hello\n");
        assert_eq!(finished.stderr.unwrap().to_text(), "err:hello\n");
        assert_eq!(finished.exit, Exit::Code(2));
        // Interleaved by default, with no stdin.
        let finished = run(&shell("cat; echo out; echo err >&2"), &CancelToken::new()).unwrap();
        assert_eq!(finished.output.to_text(), "out\nerr\n");
        assert!(finished.stderr.is_none());
    }

    #[test]
    fn a_child_that_never_reads_its_input_does_not_hang_the_run() {
        let mut spec = shell("echo done");
        spec.stdin = Some(Arc::new(vec![b'x'; 4 * 1024 * 1024]));
        spec.stderr_apart = true;
        let finished = run(&spec, &CancelToken::new()).unwrap();
        assert_eq!(finished.output.to_text(), "done\n");
        assert_eq!(finished.exit, Exit::Code(0));
    }

    #[test]
    fn capture_keeps_head_and_tail_whatever_the_chunking() {
        let data: Vec<u8> = (0..100u8).collect();
        let whole = capture(10, 7, &[&data]);
        let bytewise: Vec<&[u8]> = data.chunks(1).collect();
        let split = capture(10, 7, &bytewise);
        let uneven = capture(
            10,
            7,
            &[&data[..3], &data[3..50], &data[50..96], &data[96..]],
        );
        for output in [&whole, &split, &uneven] {
            assert_eq!(output.head, (0..10u8).collect::<Vec<_>>());
            assert_eq!(output.tail, (93..100u8).collect::<Vec<_>>());
            assert_eq!(output.elided, 83);
            assert_eq!(output.total_bytes(), 100);
        }
    }

    #[test]
    fn capture_under_the_cap_keeps_everything() {
        let output = capture(10, 7, &[b"hello ", b"world"]);
        assert_eq!(output.elided, 0);
        assert_eq!(output.to_text(), "hello world");
    }

    #[test]
    fn cut_never_splits_a_utf8_character() {
        // "é" is two bytes, "€" three: a head of 3 bytes ends inside the second "é", and a
        // tail of 4 bytes starts inside a "€".
        let text = "éé-xxxxxxxx-€€";
        let output = capture(3, 4, &[text.as_bytes()]);
        assert_eq!(output.head, "é".as_bytes());
        assert_eq!(output.tail, "€".as_bytes());
        assert_eq!(output.elided as usize, text.len() - 2 - 3);
        assert_eq!(
            output.to_text(),
            format!("é\n[... {} bytes elided ...]\n€", text.len() - 5)
        );
    }

    #[test]
    fn incomplete_suffix_detection() {
        assert_eq!(incomplete_suffix_len(b"abc"), 0);
        assert_eq!(incomplete_suffix_len("é".as_bytes()), 0);
        assert_eq!(incomplete_suffix_len(&"€".as_bytes()[..2]), 2);
        assert_eq!(incomplete_suffix_len(&"😀".as_bytes()[..3]), 3);
        assert_eq!(incomplete_suffix_len(&[0xC3]), 1);
        assert_eq!(incomplete_suffix_len(&[0x80, 0x80]), 0);
    }

    #[test]
    fn exit_and_errors_read_well() {
        assert_eq!(Exit::Code(3).to_string(), "exit code 3");
        assert_eq!(Exit::Signal(9).to_string(), "signal 9 (SIGKILL)");
        let err = ProcessError::Spawn {
            program: "nope".into(),
            cwd: PathBuf::from("/tmp"),
            source: io::Error::from(io::ErrorKind::NotFound),
        };
        assert!(err
            .to_string()
            .starts_with("process: cannot start `nope` in /tmp: "));
    }
}
