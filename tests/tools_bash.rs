//! The `bash` tool through the `Tool` trait, and `sandbox::process::run` directly, with real
//! subprocesses: output order, exit codes, stdin, cwd, environment, output cap, timeouts,
//! cancellation and the fate of background processes.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use reasonix::cancel::CancelToken;
use reasonix::sandbox::process::{
    self, CommandSpec, Exit, GroupChild, OutputCap, ProcessError, Stop, Stragglers,
};
use reasonix::tool::{builtin, Tool, ToolContext, ToolError};

use crate::util::Dir;

/// Generous bound for "returned promptly": the commands under test would otherwise run for
/// 300 s, while a correct runner returns in about a second even on a loaded machine.
const PROMPT: Duration = Duration::from_secs(60);

fn bash_tool() -> Arc<dyn Tool> {
    builtin::all()
        .into_iter()
        .find(|tool| tool.name() == "bash")
        .expect("bash is a built-in tool")
}

fn ctx(dir: &Dir) -> ToolContext {
    ToolContext::new(dir.path().to_path_buf())
}

fn exec(ctx: &ToolContext, args: Value) -> Result<String, ToolError> {
    bash_tool().execute(&args, ctx)
}

fn exec_ok(dir: &Dir, command: &str) -> String {
    exec(&ctx(dir), json!({ "command": command })).expect("bash tool result")
}

fn bash_spec(dir: &Dir, script: &str) -> CommandSpec {
    let mut spec = CommandSpec::new("bash", dir.path());
    spec.args = vec!["-c".into(), script.into()];
    spec
}

/// True once `pid` is gone or a zombie: killed but not yet reaped by whoever inherited it.
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            matches!(state, Some('Z') | Some('X'))
        }
    }
}

/// Polls (bounded) because the kill is delivered asynchronously; this is not synchronisation
/// with the code under test, which has already returned.
fn dies_soon(pid: u32) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if is_dead(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Waits (bounded) for the child under test to write `path`, its signal that it has started.
fn wait_for_file(path: &Path) -> String {
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{} was never written", path.display());
}

fn read_pid(path: &Path) -> u32 {
    let text = std::fs::read_to_string(path).expect("pid file");
    text.trim().parse().expect("pid")
}

/// Kills a process a test deliberately left running, even when an assertion fails first.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-9", &self.0.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

#[test]
fn stdout_and_stderr_interleave_in_write_order() {
    let dir = Dir::new();
    assert_eq!(
        exec_ok(&dir, "echo a; echo b >&2; echo c"),
        "a\nb\nc\n[exit code: 0]"
    );
    let many = exec_ok(
        &dir,
        "for i in $(seq 1 200); do echo out$i; echo err$i >&2; done",
    );
    let expected: String = (1..=200).map(|i| format!("out{i}\nerr{i}\n")).collect();
    assert_eq!(many, format!("{expected}[exit code: 0]"));
}

#[test]
fn non_zero_exit_is_reported_not_an_error() {
    let dir = Dir::new();
    assert_eq!(exec_ok(&dir, "echo oops; exit 3"), "oops\n[exit code: 3]");
    assert_eq!(
        exec_ok(&dir, "printf partial; kill -9 $$"),
        "partial\n[killed by signal 9 (SIGKILL)]"
    );
}

#[test]
fn stdin_is_closed() {
    let dir = Dir::new();
    assert_eq!(
        exec_ok(&dir, "cat; readlink /proc/$$/fd/0"),
        "/dev/null\n[exit code: 0]"
    );
}

#[test]
fn runs_in_the_workspace() {
    let dir = Dir::new();
    dir.write("marker.txt", "here\n");
    assert_eq!(
        exec_ok(&dir, "pwd; cat marker.txt"),
        format!("{}\nhere\n[exit code: 0]", dir.path().display())
    );
}

#[test]
fn secret_variables_are_removed_and_defaults_set() {
    let dir = Dir::new();
    // A variable the test process really has, so the control run proves it would leak.
    let name = ["CARGO_MANIFEST_DIR", "HOME", "USER"]
        .into_iter()
        .find(|name| std::env::var_os(name).is_some())
        .expect("the test environment has CARGO_MANIFEST_DIR, HOME or USER");
    let command = format!("echo \"${{{name}-unset}}\"; echo \"$PAGER $GIT_PAGER $TERM\"");
    let plain = exec(&ctx(&dir), json!({ "command": command })).unwrap();
    let value = std::env::var(name).unwrap();
    assert_eq!(plain, format!("{value}\ncat cat dumb\n[exit code: 0]"));

    let mut secret = ctx(&dir);
    secret.secret_env = Arc::new(vec![name.to_string()]);
    assert_eq!(
        exec(&secret, json!({ "command": command })).unwrap(),
        "unset\ncat cat dumb\n[exit code: 0]"
    );
}

#[test]
fn child_leads_its_own_session_and_group() {
    let dir = Dir::new();
    let spec = bash_spec(
        &dir,
        "read -r pid comm state ppid pgrp sid rest < /proc/$$/stat; echo \"$$ $pid $pgrp $sid\"",
    );
    let finished = process::run(&spec, &CancelToken::new()).unwrap();
    let text = finished.output.to_text();
    let ids: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(ids.len(), 4, "{text}");
    assert!(ids.iter().all(|id| *id == ids[0]), "pid, pgrp, sid: {text}");
}

#[test]
fn tool_output_keeps_head_and_tail_with_exact_elided_count() {
    let dir = Dir::new();
    let text = exec_ok(&dir, "head -c 100000 /dev/zero | tr '\\0' x");
    let expected = format!(
        "{}\n[... 59040 bytes elided ...]\n{}\n[exit code: 0]",
        "x".repeat(30 * 1024),
        "x".repeat(10 * 1024)
    );
    assert!(
        text == expected,
        "got {} bytes: {:?}...",
        text.len(),
        &text[..80]
    );
}

#[test]
fn chatty_child_is_drained_and_counted_exactly() {
    let dir = Dir::new();
    let mut spec = bash_spec(&dir, "yes 0123456789 | head -c 5000000");
    spec.output_cap = OutputCap {
        head_bytes: 10,
        tail_bytes: 10,
    };
    let finished = process::run(&spec, &CancelToken::new()).unwrap();
    let written = "0123456789\n".repeat(5_000_000 / 11 + 1);
    let written = &written.as_bytes()[..5_000_000];
    assert_eq!(finished.exit, Exit::Code(0));
    assert_eq!(finished.output.head, &written[..10]);
    assert_eq!(finished.output.tail, &written[5_000_000 - 10..]);
    assert_eq!(finished.output.elided, 5_000_000 - 20);
    assert_eq!(finished.stragglers, Stragglers::None);
}

#[test]
fn cap_does_not_split_utf8_characters() {
    let dir = Dir::new();
    let mut spec = bash_spec(&dir, "printf 'éééé'");
    spec.output_cap = OutputCap {
        head_bytes: 3,
        tail_bytes: 3,
    };
    let finished = process::run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(finished.output.total_bytes(), 8);
    assert_eq!(finished.output.to_text(), "é\n[... 4 bytes elided ...]\né");
}

#[test]
fn timeout_kills_the_whole_process_group() {
    let dir = Dir::new();
    let started = Instant::now();
    let text = exec(
        &ctx(&dir),
        json!({
            "command": "echo before; sleep 300 & echo $! > grandchild.pid; sleep 300",
            "timeout": 1
        }),
    )
    .unwrap();
    assert!(started.elapsed() < PROMPT, "took {:?}", started.elapsed());
    assert!(
        text.starts_with("before\n[timed out after 1s; process group killed]\n[hint: "),
        "{text}"
    );
    let grandchild = read_pid(&dir.join("grandchild.pid"));
    let _cleanup = KillOnDrop(grandchild);
    assert!(dies_soon(grandchild), "grandchild {grandchild} survived");
}

#[test]
fn sigterm_ignored_escalates_to_sigkill() {
    let dir = Dir::new();
    let mut spec = bash_spec(
        &dir,
        "trap '' TERM; sleep 300 & echo $! > grandchild.pid; wait",
    );
    spec.timeout = Some(Duration::from_millis(300));
    spec.kill_grace = Duration::from_millis(300);
    let finished = process::run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(finished.stopped, Some(Stop::TimedOut));
    assert_eq!(finished.exit, Exit::Signal(9));
    assert!(finished.duration < PROMPT, "took {:?}", finished.duration);
    let grandchild = read_pid(&dir.join("grandchild.pid"));
    let _cleanup = KillOnDrop(grandchild);
    assert!(dies_soon(grandchild), "grandchild {grandchild} survived");
}

#[test]
fn cancel_from_another_thread_kills_the_group() {
    let dir = Dir::new();
    let ctx = ctx(&dir);
    let cancel = ctx.cancel.clone();
    let (done_tx, done_rx) = mpsc::channel();
    let worker_ctx = ctx.clone();
    std::thread::spawn(move || {
        let result = exec(
            &worker_ctx,
            json!({
                "command": "sleep 300 & echo $! > pid.tmp && mv pid.tmp grandchild.pid; wait"
            }),
        );
        let _ = done_tx.send(result);
    });
    let grandchild: u32 = wait_for_file(&dir.join("grandchild.pid"))
        .trim()
        .parse()
        .unwrap();
    let _cleanup = KillOnDrop(grandchild);
    let cancelled_at = Instant::now();
    cancel.cancel();
    let result = done_rx
        .recv_timeout(PROMPT)
        .expect("the tool returned after cancel");
    assert!(cancelled_at.elapsed() < PROMPT);
    assert_eq!(result, Err(ToolError::Cancelled));
    assert!(dies_soon(grandchild), "grandchild {grandchild} survived");
}

#[test]
fn already_cancelled_token_runs_nothing() {
    let dir = Dir::new();
    let ctx = ctx(&dir);
    ctx.cancel.cancel();
    let result = exec(&ctx, json!({ "command": "touch ran" }));
    assert_eq!(result, Err(ToolError::Cancelled));
    assert!(!dir.join("ran").exists());
}

#[test]
fn background_job_holding_the_output_does_not_hang_the_call() {
    let dir = Dir::new();
    let started = Instant::now();
    let text = exec_ok(&dir, "sleep 300 & echo $! > grandchild.pid; echo started");
    assert!(started.elapsed() < PROMPT, "took {:?}", started.elapsed());
    assert!(
        text.starts_with("started\n[exit code: 0]\n[background processes still writing"),
        "{text}"
    );
    let grandchild = read_pid(&dir.join("grandchild.pid"));
    let _cleanup = KillOnDrop(grandchild);
    assert!(dies_soon(grandchild), "grandchild {grandchild} survived");
}

#[test]
fn background_job_with_redirected_output_keeps_running() {
    let dir = Dir::new();
    let spec = bash_spec(&dir, "sleep 300 > /dev/null 2>&1 & echo $!; exit 4");
    let finished = process::run(&spec, &CancelToken::new()).unwrap();
    let pid: u32 = finished.output.to_text().trim().parse().unwrap();
    let _cleanup = KillOnDrop(pid);
    assert_eq!(finished.exit, Exit::Code(4));
    assert_eq!(finished.stragglers, Stragglers::None);
    assert_eq!(finished.stopped, None);
    assert!(!is_dead(pid), "a detached job should survive the command");
}

#[test]
fn output_held_outside_the_group_is_abandoned_not_waited_for() {
    let dir = Dir::new();
    let started = Instant::now();
    let text = exec_ok(
        &dir,
        "setsid sleep 300 & echo $! > escaped.pid; echo started",
    );
    assert!(started.elapsed() < PROMPT, "took {:?}", started.elapsed());
    let escaped = read_pid(&dir.join("escaped.pid"));
    let _cleanup = KillOnDrop(escaped);
    assert!(
        text.starts_with("started\n[exit code: 0]\n[a process outside the command's process group"),
        "{text}"
    );
}

#[test]
fn dropping_a_group_child_kills_its_group() {
    let dir = Dir::new();
    let mut command = process::command(&bash_spec(&dir, "sleep 300 & echo $!; wait"));
    command.stdin(Stdio::null()).stdout(Stdio::piped());
    let mut child = GroupChild::spawn(command).unwrap();
    let mut line = String::new();
    BufReader::new(child.take_stdout().unwrap())
        .read_line(&mut line)
        .unwrap();
    let grandchild: u32 = line.trim().parse().unwrap();
    let _cleanup = KillOnDrop(grandchild);
    assert!(!is_dead(grandchild));
    drop(child);
    assert!(dies_soon(grandchild), "grandchild {grandchild} survived");
}

#[test]
fn no_timeout_when_the_run_has_no_cap() {
    let dir = Dir::new();
    let mut ctx = ctx(&dir);
    ctx.bash_timeout = None;
    assert_eq!(
        exec(&ctx, json!({ "command": "echo fine" })).unwrap(),
        "fine\n[exit code: 0]"
    );
}

#[test]
fn spawn_failures_and_bad_arguments_are_explained() {
    let dir = Dir::new();
    let spec = CommandSpec::new("/nonexistent/program", dir.path());
    let err = process::run(&spec, &CancelToken::new()).unwrap_err();
    assert!(matches!(err, ProcessError::Spawn { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("process: cannot start `/nonexistent/program` in "),
        "{err}"
    );

    let gone = ToolContext::new(dir.join("missing"));
    match exec(&gone, json!({ "command": "true" })) {
        Err(ToolError::Failed(message)) => assert!(message.contains("missing"), "{message}"),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(
        exec(&ctx(&dir), json!({})),
        Err(ToolError::InvalidArgs(
            "missing required parameter `command`".into()
        ))
    );
    assert!(matches!(
        exec(&ctx(&dir), json!({ "command": "  " })),
        Err(ToolError::InvalidArgs(_))
    ));
    assert!(matches!(
        exec(&ctx(&dir), json!({ "command": "true", "timeout": 0 })),
        Err(ToolError::InvalidArgs(_))
    ));
    assert!(!bash_tool().read_only());
}

/// Issue 37.5: `[tools.shell]` chooses the interpreter of the shell tool on Linux, through the
/// real binary: `path` runs exactly that executable, `prefer = "bash"` runs bash, and the
/// Windows-only PowerShell values are refused at load with one line naming the file and line.
#[test]
fn the_shell_setting_chooses_the_interpreter_and_refuses_powershell() {
    use crate::util::fake_openai::{FakeOpenAI, Reply};
    use crate::util::{reasonix, run, use_fake_provider};
    use std::os::unix::fs::PermissionsExt;
    let work = Dir::new();
    let wrapper = work.write(
        "myshell",
        "#!/bin/sh\necho \"wrapped by myshell\"\nexec /bin/sh \"$@\"\n",
    );
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let shell_run = |shell: &str, command: &str| {
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[("c1", "bash", &json!({ "command": command }).to_string())]),
            Reply::text("done"),
        ]);
        let home = Dir::new();
        use_fake_provider(
            &home,
            &server.base_url(),
            &format!("[permissions]\nmode = \"allow\"\n\n[sandbox]\nbash = \"off\"\n\n[tools.shell]\n{shell}\n"),
        );
        let out = run(reasonix(&home, work.path())
            .args(["run", "go"])
            .env("FAKE_API_KEY", "k"));
        (server, home, out)
    };
    let result = |server: &FakeOpenAI| {
        let requests = server.wait_for_requests(2);
        requests[1].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let path = format!("path = {}", json!(wrapper.to_str().unwrap()));
    let (server, _home, out) = shell_run(&path, "echo hi");
    assert_eq!(out.code, 0, "{out:?}");
    let output = result(&server);
    assert!(output.starts_with("wrapped by myshell\nhi"), "{output}");

    let (server, _home, out) = shell_run("prefer = \"bash\"", "echo \"[$BASH_VERSION]\"");
    assert_eq!(out.code, 0, "{out:?}");
    let output = result(&server);
    assert!(!output.starts_with("[]"), "bash ran: {output}");

    for prefer in ["powershell", "pwsh"] {
        let (_server, home, out) = shell_run(&format!("prefer = \"{prefer}\""), "echo hi");
        assert_eq!(out.code, 2, "{out:?}");
        let config = home.join(".reasonix/config.toml");
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{out:?}");
        assert!(
            lines[0].contains(&format!("{}:", config.display()))
                && lines[0].contains("is for Windows"),
            "{out:?}"
        );
    }
}
