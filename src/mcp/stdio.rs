//! The stdio transport: the server is a child process speaking one JSON-RPC message per line on
//! its stdin and stdout. Its stderr goes to the debug log (and a short tail is kept for error
//! messages); it runs in its own process group so shutting it down reaches every descendant,
//! and in the jail of its [`Policy`] (see [`Policy::confine_command`]), like bash.
//!
//! Threads, one job each: `mcp-<name>-in` writes queued messages to stdin (so a server that
//! stops reading can never block a caller past its timeout), `mcp-<name>-out` reads stdout into
//! the inbox, `mcp-<name>-err` drains stderr, and `mcp-<name>-wait` starts the server, notices
//! its exit, kills what is left of the group and reaps the leader. The waiting thread is the one
//! that starts it because bwrap's `--die-with-parent` (`PR_SET_PDEATHSIG`) fires when the
//! *thread* that forked it ends: started from the short-lived startup thread, a jailed server
//! would be killed right after its handshake. Shutdown closes stdin, waits briefly for the server to leave on its own, then sends
//! SIGTERM and finally SIGKILL to the group.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, Stdio};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use super::jsonrpc::{self, Frame, Message};
use super::transport::{Inbox, Incoming, Transport};
use super::McpError;
use crate::sandbox::process::{command, CommandSpec, GroupChild};
use crate::sandbox::sys::{wait_exit_keep_zombie, Signal};
use crate::sandbox::Policy;

/// A single message larger than this is dropped (and logged) rather than buffered.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// How many stderr lines are kept for error messages.
const STDERR_TAIL: usize = 20;

/// How long a server may take to exit after its stdin closed, and again after SIGTERM.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// After stdout ends, how long to wait for the exit status and the end of stderr to include
/// them in the reason. A server that exits is waited for only until it has (milliseconds);
/// the bound matters for one that closes stdout and lingers. Half a second lost the server's
/// last stderr line on a loaded machine (a jailed server's exit travels through bwrap).
const STATUS_WAIT: Duration = Duration::from_secs(2);

/// What to launch.
#[derive(Debug, Clone)]
pub struct StdioSpec {
    /// The server name, for thread names and messages.
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Set in the child's environment.
    pub env: Vec<(String, String)>,
    /// Removed from the inherited environment (provider keys the server did not ask for).
    pub env_remove: Vec<String>,
    /// The jail the process runs in; a policy with `BashMode::Off` runs it unconfined.
    pub sandbox: Arc<Policy>,
}

/// The exit of the server process, once known.
#[derive(Default)]
struct ExitState {
    exited: bool,
    status: Option<String>,
    /// The stderr drain reached end of file, so the tail is complete.
    stderr_done: bool,
}

struct Exit {
    state: Mutex<ExitState>,
    changed: Condvar,
}

impl Exit {
    fn lock(&self) -> std::sync::MutexGuard<'_, ExitState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, status: Option<String>) {
        let mut state = self.lock();
        state.exited = true;
        state.status = status;
        self.changed.notify_all();
    }

    fn stderr_done(&self) {
        self.lock().stderr_done = true;
        self.changed.notify_all();
    }

    /// Waits up to `limit` for the exit; true when the server has exited.
    fn wait(&self, limit: Duration) -> bool {
        let state = self.lock();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, limit, |s| !s.exited)
            .unwrap_or_else(PoisonError::into_inner);
        state.exited
    }

    /// Waits up to `limit` for the exit and the end of stderr, so a failure can quote the
    /// server's last words.
    fn wait_final(&self, limit: Duration) -> Option<String> {
        let state = self.lock();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, limit, |s| !(s.exited && s.stderr_done))
            .unwrap_or_else(PoisonError::into_inner);
        state.status.clone()
    }

    fn status(&self) -> Option<String> {
        self.lock().status.clone()
    }
}

pub struct StdioTransport {
    name: String,
    /// Lines for the writer thread; taken (dropped) to close stdin.
    stdin: Mutex<Option<Sender<String>>>,
    child: Arc<Mutex<GroupChild>>,
    exit: Arc<Exit>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl StdioTransport {
    /// Starts the server. Everything it writes goes to `inbox`.
    pub fn spawn(spec: &StdioSpec, inbox: Inbox) -> Result<StdioTransport, McpError> {
        let mut cmd_spec = CommandSpec::new(&spec.program, &spec.cwd);
        cmd_spec.args = spec.args.iter().map(Into::into).collect();
        cmd_spec.env_remove = spec.env_remove.clone();
        cmd_spec.env_set = spec.env.clone();
        // Inside the jail the program is bwrap's to find, and a missing one would only show as
        // bwrap's exit; looking first keeps the plain "cannot run" answer.
        if !program_exists(spec) {
            return Err(cannot_run(
                &spec.program,
                std::io::Error::from_raw_os_error(libc::ENOENT),
            ));
        }
        let cmd_spec = spec.sandbox.confine_command(cmd_spec).map_err(|e| {
            McpError::Start(format!(
                "cannot jail it: {}; install bubblewrap, or set `sandbox = \"off\"` for this \
                 server in the user config",
                e.to_string().trim_start_matches("sandbox: ")
            ))
        })?;
        let mut cmd = command(&cmd_spec);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let exit = Arc::new(Exit {
            state: Mutex::new(ExitState::default()),
            changed: Condvar::new(),
        });
        let started = start_and_wait(&spec.name, cmd, Arc::clone(&exit))
            .map_err(|e| e.into_mcp(&spec.program))?;
        let Pipes {
            stdin,
            stdout,
            stderr,
        } = started.pipes;
        let transport = StdioTransport {
            name: spec.name.clone(),
            stdin: Mutex::new(None),
            child: started.child,
            exit,
            stderr_tail: Arc::new(Mutex::new(VecDeque::new())),
        };
        if let Some(stdin) = stdin {
            transport.write_stdin(stdin, inbox.clone())?;
        }
        if let Some(stderr) = stderr {
            transport.drain_stderr(stderr, inbox.clone())?;
        }
        if let Some(stdout) = stdout {
            transport.read_stdout(stdout, inbox)?;
        }
        Ok(transport)
    }

    fn thread(&self, role: &str) -> std::thread::Builder {
        std::thread::Builder::new().name(super::thread_name(&self.name, role))
    }

    fn write_stdin(&self, mut stdin: ChildStdin, inbox: Inbox) -> Result<(), McpError> {
        let (tx, rx) = mpsc::channel::<String>();
        *self.stdin.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx);
        self.thread("in")
            .spawn(move || {
                for line in rx {
                    if let Err(e) = stdin.write_all(line.as_bytes()).and_then(|_| stdin.flush()) {
                        let _ =
                            inbox.send(Incoming::Log(format!("cannot write to the server: {e}")));
                        return;
                    }
                }
                // Every sender is gone: dropping stdin here is the end of input.
            })
            .map(drop)
            .map_err(|e| McpError::io("starting a thread", e))
    }

    fn drain_stderr(
        &self,
        stderr: std::process::ChildStderr,
        inbox: Inbox,
    ) -> Result<(), McpError> {
        let tail = Arc::clone(&self.stderr_tail);
        let exit = Arc::clone(&self.exit);
        self.thread("err")
            .spawn(move || {
                let mut reader = BufReader::new(stderr);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    match reader.read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    let text = String::from_utf8_lossy(&line).trim_end().to_string();
                    if text.is_empty() {
                        continue;
                    }
                    {
                        let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                        if tail.len() == STDERR_TAIL {
                            tail.pop_front();
                        }
                        tail.push_back(text.clone());
                    }
                    let _ = inbox.send(Incoming::Log(format!("stderr: {text}")));
                }
                exit.stderr_done();
            })
            .map(drop)
            .map_err(|e| McpError::io("starting a thread", e))
    }

    fn read_stdout(&self, stdout: std::process::ChildStdout, inbox: Inbox) -> Result<(), McpError> {
        let exit = Arc::clone(&self.exit);
        self.thread("out")
            .spawn(move || {
                let mut reader = BufReader::new(stdout);
                let reason = loop {
                    match jsonrpc::read_frame(&mut reader, MAX_LINE) {
                        Ok(Frame::Message(message)) => {
                            if inbox.send(Incoming::Message(message)).is_err() {
                                return;
                            }
                        }
                        Ok(Frame::Invalid(err)) => {
                            let _ = inbox.send(Incoming::Garbage(err.to_string()));
                        }
                        Ok(Frame::Eof) => break "the server closed its output".to_string(),
                        Err(e) => break format!("reading the server's output failed: {e}"),
                    }
                };
                let reason = match exit.wait_final(STATUS_WAIT) {
                    Some(status) => format!("{reason} and {status}"),
                    None => reason,
                };
                let _ = inbox.send(Incoming::Closed(reason));
            })
            .map(drop)
            .map_err(|e| McpError::io("starting a thread", e))
    }

    /// Queues one line for the writer thread. Fails only once the connection is closed or
    /// the writer gave up; a server that died is reported by the reader with its status.
    fn write(&self, message: &Message) -> Result<(), McpError> {
        let stdin = self.stdin.lock().unwrap_or_else(PoisonError::into_inner);
        let closed = || {
            McpError::Closed(match self.exit.status() {
                Some(status) => format!("the server {status}"),
                None => "the connection is closed".into(),
            })
        };
        let Some(writer) = stdin.as_ref() else {
            return Err(closed());
        };
        let mut line = message.to_json();
        line.push('\n');
        writer.send(line).map_err(|_| closed())
    }

    fn signal(&self, signal: Signal) {
        let child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = child.signal(signal);
    }
}

/// A server started by its waiting thread, with its pipes.
struct Started {
    child: Arc<Mutex<GroupChild>>,
    pipes: Pipes,
}

/// The server's standard streams, taken by the thread that started it before it waits: a
/// server that exits at once is reaped right away, and reaping closes a stdin still held by
/// the child handle, which made a server that died with a message on stderr fail as "the
/// server exited" before that message was read.
struct Pipes {
    stdin: Option<ChildStdin>,
    stdout: Option<std::process::ChildStdout>,
    stderr: Option<std::process::ChildStderr>,
}

/// Why [`start_and_wait`] could not start the server.
enum StartError {
    Spawn(std::io::Error),
    Thread(String),
}

impl StartError {
    fn into_mcp(self, program: &str) -> McpError {
        match self {
            StartError::Spawn(e) => cannot_run(program, e),
            StartError::Thread(why) => McpError::Start(why),
        }
    }
}

fn cannot_run(program: &str, e: std::io::Error) -> McpError {
    McpError::Start(format!(
        "cannot run `{program}`: {e}; check `command` and PATH"
    ))
}

/// Whether the server's program is an executable file, looked up on its `PATH` (its own `env`
/// first, else ours) when it names no directory, as `execvp` would.
fn program_exists(spec: &StdioSpec) -> bool {
    let executable = crate::platform::is_executable;
    if spec.program.contains('/') {
        return executable(&spec.cwd.join(&spec.program));
    }
    let path = match spec.env.iter().find(|(name, _)| name == "PATH") {
        Some((_, value)) => Some(std::ffi::OsString::from(value)),
        None => std::env::var_os("PATH"),
    };
    path.is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| executable(&spec.cwd.join(dir).join(&spec.program)))
    })
}

/// Starts `cmd` on a new `mcp-<name>-wait` thread, which then stays to notice the exit, kill
/// what is left of the group, reap the leader and record the status in `exit` (see the module
/// doc for why the thread that waits must be the one that forks).
fn start_and_wait(
    name: &str,
    cmd: std::process::Command,
    exit: Arc<Exit>,
) -> Result<Started, StartError> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name(super::thread_name(name, "wait"))
        .spawn(move || {
            let mut child = match GroupChild::spawn(cmd) {
                Ok(child) => child,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            let pipes = Pipes {
                stdin: child.take_stdin(),
                stdout: child.take_stdout(),
                stderr: child.take_stderr(),
            };
            let pid = child.id();
            let child = Arc::new(Mutex::new(child));
            if tx.send(Ok((Arc::clone(&child), pipes))).is_err() {
                // Nobody took the server: dropping the child kills its group.
                return;
            }
            let _ = wait_exit_keep_zombie(pid);
            let mut child = child.lock().unwrap_or_else(PoisonError::into_inner);
            // The leader is a zombie, so the group id is still ours: clear out anything it
            // left behind before reaping it.
            let _ = child.signal(Signal::Kill);
            let status = child.reap().ok().map(|s| describe_status(&s));
            exit.record(status);
        })
        .map_err(|e| StartError::Thread(format!("cannot start a thread: {e}")))?;
    match rx.recv() {
        Ok(Ok((child, pipes))) => Ok(Started { child, pipes }),
        Ok(Err(e)) => Err(StartError::Spawn(e)),
        Err(_) => Err(StartError::Thread(
            "the thread starting the server stopped unexpectedly".into(),
        )),
    }
}

fn describe_status(status: &std::process::ExitStatus) -> String {
    match (status.code(), crate::sandbox::sys::exit_signal(status)) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => match crate::sandbox::process::signal_name(signal) {
            Some(name) => format!("was killed by {name}"),
            None => format!("was killed by signal {signal}"),
        },
        _ => "exited".to_string(),
    }
}

impl Transport for StdioTransport {
    fn call(&self, request: &Message) -> Result<(), McpError> {
        self.write(request)
    }

    fn notify(&self, message: &Message) -> Result<(), McpError> {
        self.write(message)
    }

    fn close(&self) {
        // Closing stdin is the polite MCP shutdown; most servers exit on end of input. The
        // writer closes it once the queue is drained.
        drop(
            self.stdin
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        if self.exit.wait(EXIT_GRACE) {
            return;
        }
        self.signal(Signal::Term);
        if self.exit.wait(EXIT_GRACE) {
            return;
        }
        self.signal(Signal::Kill);
        self.exit.wait(EXIT_GRACE);
    }

    fn diagnostics(&self) -> Vec<String> {
        self.stderr_tail
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// The flaky `mcp::misbehaving_servers_cost_only_their_tools_and_a_notice`: a server that
    /// exits at once was reaped before its pipes were taken, reaping closed its stdin, and it
    /// failed as "the server exited" without the stderr line that says why. The pipes are
    /// taken before the wait, so they are all there even once the exit is recorded.
    #[test]
    fn a_server_that_exits_at_once_still_hands_over_its_pipes() {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "echo 'fatal: no config' >&2; exit 3"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let exit = Arc::new(Exit {
            state: Mutex::new(ExitState::default()),
            changed: Condvar::new(),
        });
        let started = match start_and_wait("quick", cmd, Arc::clone(&exit)) {
            Ok(started) => started,
            Err(_) => panic!("sh did not start"),
        };
        assert!(exit.wait(Duration::from_secs(60)), "sh never exited");
        assert_eq!(exit.status().as_deref(), Some("exited with status 3"));
        let Pipes {
            stdin,
            stdout,
            stderr,
        } = started.pipes;
        assert!(stdin.is_some() && stdout.is_some());
        let mut said = String::new();
        stderr.expect("stderr").read_to_string(&mut said).unwrap();
        assert_eq!(said, "fatal: no config\n");
    }
}
