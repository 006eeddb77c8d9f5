//! Headless output as a reader of the pipe sees it: streamed text is written in batches, not a
//! `write(2)` per token, yet it shows up while the stream is still open.

use std::io::Read;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use crate::util::fake_openai::{sse_text, FakeOpenAI, Reply};
use crate::util::{reasonix, spawn_piped, use_fake_provider, Dir};

const TOKENS: usize = 5000;

/// The `syscw` (write system calls) counter of a live process, when this user may read it.
fn write_calls(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("syscw: "))
        .and_then(|n| n.trim().parse().ok())
}

fn check_batched_stream(format: &str, last_token: &str) {
    let events: Vec<String> = (0..TOKENS).map(|i| sse_text(&format!("t{i} "))).collect();
    let (reply, release) = Reply::hold(events);
    let server = FakeOpenAI::start(vec![reply]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let mut child = reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "--output-format", format, "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn reasonix");
    let mut stdout = child.stdout.take().unwrap();
    let (seen_tx, seen_rx) = mpsc::channel();
    let last = last_token.to_string();
    let reader = std::thread::spawn(move || {
        let mut collected = Vec::new();
        let mut buf = [0u8; 65536];
        let mut told = false;
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            collected.extend_from_slice(&buf[..n]);
            if !told && String::from_utf8_lossy(&collected).contains(&last) {
                told = true;
                let _ = seen_tx.send(());
            }
        }
        collected
    });
    // The server holds the stream open after the last token: the text can only arrive through
    // the buffer's deadline flush. The limit is a safety net, not a synchronisation device.
    let seen = seen_rx.recv_timeout(Duration::from_secs(30));
    let writes = write_calls(child.id());
    release.release();
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    assert!(
        seen.is_ok(),
        "{format}: the streamed text did not reach the pipe while the stream was open"
    );
    match writes {
        Some(writes) => assert!(
            writes < (TOKENS / 10) as u64,
            "{format}: {writes} write calls for {TOKENS} streamed tokens"
        ),
        None => eprintln!("warning: /proc/<pid>/io is not readable here; write count not checked"),
    }
}

#[test]
fn streamed_text_is_batched_into_few_writes_but_shown_while_the_stream_is_open() {
    check_batched_stream("text", &format!("t{} ", TOKENS - 1));
    check_batched_stream("stream-json", &format!("t{} ", TOKENS - 1));
}

/// What the model does in the closed-pipe tests: round `n` (from 1) writes `marker-n` after a
/// line of text; the fourth request gets a plain answer.
fn marker_round(n: usize) -> Reply {
    if n > 3 {
        return Reply::text("done\n");
    }
    let args = format!(r#"{{"path":"marker-{n}","content":"x"}}"#);
    Reply::text_then_tool_calls(
        &format!("line {n}\n"),
        &[(&format!("c{n}"), "write_file", &args)],
    )
}

/// Runs `reasonix run` with stdout read by a reader that closes the pipe after the first line.
/// The server answers request `hold_at` only once that reader has gone, so everything the run
/// writes from then on meets a closed pipe.
fn run_into_closed_pipe(format: &str, hold_at: usize) -> (FakeOpenAI, Dir, std::process::Output) {
    into_closed_pipe(&["run", "--output-format", format, "go"], "", hold_at)
}

/// Runs reasonix with `args` and `stdin`, reads the first line of its stdout, then closes the
/// pipe while the fake holds reply number `hold_at`.
fn into_closed_pipe(
    args: &[&str],
    stdin: &str,
    hold_at: usize,
) -> (FakeOpenAI, Dir, std::process::Output) {
    let (closed_tx, closed_rx) = mpsc::channel::<()>();
    let server = FakeOpenAI::start_with(move |requests| {
        if requests.len() == hold_at {
            // A safety net against a hang, not a synchronisation device: the test sends.
            let _ = closed_rx.recv_timeout(Duration::from_secs(30));
        }
        marker_round(requests.len())
    });
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let mut child = spawn_piped(
        reasonix(&home, work.path())
            .env("FAKE_API_KEY", "k")
            .args(args),
    );
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut first).unwrap();
    assert!(!first.is_empty(), "{args:?}: no first line");
    // The reader (and with it the pipe's only read end) is gone now.
    closed_tx.send(()).unwrap();
    let output = child.wait_with_output().expect("wait for reasonix");
    (server, work, output)
}

#[test]
fn closed_stdout_pipe_stops_stream_json_run_before_any_tool_runs() {
    // The first line is the init event, written before the first request.
    let (server, work, output) = run_into_closed_pipe("stream-json", 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "stderr: {stderr}");
    assert_eq!(stderr, "", "nothing on stderr after the pipe closed");
    for n in 1..=3 {
        assert!(
            !work.join(&format!("marker-{n}")).exists(),
            "the tool of round {n} ran after stdout closed"
        );
    }
    assert_eq!(server.requests().len(), 1, "no request after stdout closed");
}

#[test]
fn closed_stdout_pipe_stops_plain_chat_before_the_next_tool_and_the_next_line() {
    // Plain chat prints answers as text: as in `run`, round 2's text meets the closed pipe,
    // so its tool must not run, and the second line of stdin is never sent.
    let (server, work, output) = into_closed_pipe(&["chat"], "go\nand again\n", 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "stderr: {stderr}");
    assert!(work.join("marker-1").exists(), "round 1 ran: {stderr}");
    assert!(!work.join("marker-2").exists(), "round 2's tool ran");
    assert_eq!(server.requests().len(), 2, "no request after stdout closed");
}

#[test]
fn closed_stdout_pipe_stops_text_run_before_the_next_tool() {
    // Text mode writes only the answer to stdout: the first line is round 1's text, so round
    // 1's tool may run; round 2's text meets the closed pipe and its tool must not.
    let (server, work, output) = run_into_closed_pipe("text", 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "stderr: {stderr}");
    assert!(work.join("marker-1").exists(), "round 1 ran: {stderr}");
    assert!(
        !work.join("marker-2").exists(),
        "round 2's tool ran: {stderr}"
    );
    assert!(
        !work.join("marker-3").exists(),
        "round 3's tool ran: {stderr}"
    );
    assert_eq!(server.requests().len(), 2, "no request after stdout closed");
    for noise in ["marker-2", "interrupt", "pipe", "error", "session:"] {
        assert!(
            !stderr.to_lowercase().contains(noise),
            "`{noise}` on stderr after stdout closed:\n{stderr}"
        );
    }
}
