//! Headless output as a reader of the pipe sees it: streamed text is written in batches, not a
//! `write(2)` per token, yet it shows up while the stream is still open.

use std::io::Read;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use crate::util::fake_openai::{sse_text, FakeOpenAI, Reply};
use crate::util::{reasonix, use_fake_provider, Dir};

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
