//! Hostile model servers on loopback, through the real binary: an endless SSE line, endless
//! content deltas, a flood of tool-call indexes, a response head one byte at a time, a stream
//! of SSE comments, a flood of `100 Continue`, an endless non-streamed body. Each must end the
//! run with a provider error naming what happened, in bounded time and under 64 MiB of peak
//! RSS; the time and the peak are printed. A guard kills a run that goes on past
//! [`GUARD`] and fails the test instead of hanging (what the client without caps did).
//!
//! `REASONIX_HOSTILE_BIN` runs the scenarios against another build of the binary (an older
//! one, to see them fail).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::util::{bin, reasonix_binary, Dir};

/// A run still going after this long is killed and the test fails.
const GUARD: Duration = Duration::from_secs(60);

/// Peak resident memory a hostile reply may cost.
const PEAK_RSS_KIB: i64 = 64 * 1024;

/// A run whose memory passes this is killed at once (a client without caps grows by
/// gigabytes within seconds).
const KILL_RSS_KIB: i64 = 512 * 1024;

/// What a scenario writes after it has read the request; it returns when the client hangs up.
type Scenario = fn(&mut TcpStream) -> std::io::Result<()>;

/// Serves `scenario` on every connection; returns the base URL.
fn serve(scenario: Scenario) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            thread::spawn(move || {
                if read_request(&mut stream).is_some() {
                    let _ = scenario(&mut stream);
                }
            });
        }
    });
    url
}

fn read_request(stream: &mut TcpStream) -> Option<()> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().ok()?;
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()
}

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

fn event(json: &str) -> String {
    format!("data: {json}\n\n")
}

fn endless_sse_line(s: &mut TcpStream) -> std::io::Result<()> {
    s.write_all(SSE_HEAD)?;
    s.write_all(event(r#"{"choices":[{"delta":{"content":"a"}}]}"#).as_bytes())?;
    s.write_all(b"data: ")?;
    let piece = vec![b'x'; 64 * 1024];
    loop {
        s.write_all(&piece)?;
    }
}

fn endless_content(s: &mut TcpStream) -> std::io::Result<()> {
    s.write_all(SSE_HEAD)?;
    let delta = event(&format!(
        r#"{{"choices":[{{"delta":{{"content":"{}"}}}}]}}"#,
        "y".repeat(4000)
    ));
    loop {
        s.write_all(delta.as_bytes())?;
    }
}

fn tool_call_flood(s: &mut TcpStream) -> std::io::Result<()> {
    s.write_all(SSE_HEAD)?;
    for index in 0u64.. {
        let delta = event(&format!(
            r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":{index},"id":"c{index}","function":{{"name":"read_file","arguments":"{{}}"}}}}]}}}}]}}"#
        ));
        s.write_all(delta.as_bytes())?;
    }
    Ok(())
}

fn trickle_head(s: &mut TcpStream) -> std::io::Result<()> {
    s.write_all(b"HTTP/1.1 200 OK\r\nX-Slow: ")?;
    loop {
        s.write_all(b"a")?;
        // The pace of the attack: a byte well inside every idle limit.
        thread::sleep(Duration::from_millis(20));
    }
}

fn comment_stream(s: &mut TcpStream) -> std::io::Result<()> {
    s.write_all(SSE_HEAD)?;
    loop {
        s.write_all(b": keep-alive\n")?;
        thread::sleep(Duration::from_millis(20));
    }
}

fn continue_flood(s: &mut TcpStream) -> std::io::Result<()> {
    loop {
        s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        thread::sleep(Duration::from_millis(1));
    }
}

fn endless_unstreamed_body(s: &mut TcpStream) -> std::io::Result<()> {
    s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")?;
    s.write_all(br#"{"choices":[{"message":{"content":""#)?;
    let piece = vec![b'z'; 64 * 1024];
    loop {
        s.write_all(&piece)?;
    }
}

/// How one run against a hostile server ended.
struct Outcome {
    code: i32,
    stderr: String,
    elapsed: Duration,
    peak_rss_kib: i64,
    /// Why the guard killed the run, if it did.
    killed: Option<String>,
}

/// A `/proc/<pid>/status` figure of a running process, in KiB: `VmRSS` now or `VmHWM`, its
/// peak so far. (`wait4`'s `ru_maxrss` cannot serve: a child spawned from this large test
/// process starts with the parent's resident size as its high-water mark.)
fn status_kib(pid: libc::pid_t, field: &str) -> Option<i64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn binary() -> PathBuf {
    std::env::var_os("REASONIX_HOSTILE_BIN").map_or_else(bin, PathBuf::from)
}

/// `reasonix run hi` against `url` with short head and reply deadlines and no retries.
// The child is reaped with `waitpid`, not `Child::wait`: the guard needs its pid until then.
#[allow(clippy::zombie_processes)]
fn run_against(url: &str, extra: &str) -> Outcome {
    let home = Dir::new();
    let work = Dir::new();
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"fake\"\n\n[[providers]]\nname = \"fake\"\nbase_url = \"{url}\"\nmodel = \"fake-model\"\napi_key_env = \"FAKE_API_KEY\"\nretry = {{ max_retries = 0 }}\ntimeouts = {{ idle_seconds = 5, head_seconds = 3, reply_seconds = 4 }}\n{extra}\n\n[environment]\nenabled = false\n"
        ),
    );
    let started = Instant::now();
    let mut child = reasonix_binary(&binary(), &home, work.path())
        .args(["run", "hi"])
        .env("FAKE_API_KEY", "sk-test")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let err = thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    });
    let pid = child.id() as libc::pid_t;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let guard = thread::spawn(move || {
        // Samples the child's memory every 5 ms until it exits; the last `VmHWM` read is its
        // peak but for the last few milliseconds of its life.
        let mut peak = 0;
        let reason = loop {
            match done_rx.recv_timeout(Duration::from_millis(5)) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                _ => return (peak, None),
            }
            peak = peak.max(status_kib(pid, "VmHWM:").unwrap_or(0));
            if started.elapsed() > GUARD {
                break format!("still running after {GUARD:?}");
            }
            if let Some(rss) = status_kib(pid, "VmRSS:").filter(|rss| *rss > KILL_RSS_KIB) {
                break format!(
                    "resident memory {} MiB after {:.1} s",
                    rss / 1024,
                    started.elapsed().as_secs_f64()
                );
            }
        };
        // SAFETY: signalling our own child, which has not been reaped yet (the main thread
        // is still in wait4 for it).
        unsafe { libc::kill(pid, libc::SIGKILL) };
        (peak, Some(reason))
    });
    // The guard's samples up to the exit hold the peak.
    let mut status = 0;
    // SAFETY: waiting for a child we spawned and have not reaped.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(waited, pid, "waitpid failed");
    let elapsed = started.elapsed();
    let _ = done_tx.send(());
    let (peak_rss_kib, killed) = guard.join().unwrap();
    let _ = out.join();
    Outcome {
        code: if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -1
        },
        stderr: err.join().unwrap(),
        elapsed,
        peak_rss_kib,
        killed,
    }
}

fn assert_bounded(name: &str, scenario: Scenario, extra: &str, expected: &str) {
    let outcome = run_against(&serve(scenario), extra);
    println!(
        "hostile reply `{name}`: ended after {:.1} s, peak RSS (VmHWM) {:.1} MiB, exit {}",
        outcome.elapsed.as_secs_f64(),
        outcome.peak_rss_kib as f64 / 1024.0,
        outcome.code
    );
    if let Some(reason) = &outcome.killed {
        panic!("{name}: killed by the test's guard: {reason}");
    }
    assert!(
        outcome.peak_rss_kib < PEAK_RSS_KIB,
        "{name}: peak RSS {} KiB",
        outcome.peak_rss_kib
    );
    assert_eq!(outcome.code, 1, "{name}: {}", outcome.stderr);
    assert!(
        outcome.stderr.contains(expected),
        "{name}: expected `{expected}` in\n{}",
        outcome.stderr
    );
}

#[test]
fn an_endless_sse_line_ends_the_reply_at_its_cap() {
    assert_bounded(
        "endless SSE line",
        endless_sse_line,
        "",
        "one line of the reply passed 8 MiB",
    );
}

#[test]
fn endless_content_deltas_end_the_reply_at_the_text_cap() {
    assert_bounded(
        "endless content",
        endless_content,
        "",
        "the reply's text passed 6 MiB",
    );
}

#[test]
fn a_flood_of_tool_call_indexes_ends_the_reply_at_the_call_cap() {
    assert_bounded(
        "tool-call flood",
        tool_call_flood,
        "",
        "the reply's tool calls passed 256 calls",
    );
}

#[test]
fn a_head_sent_one_byte_at_a_time_ends_at_the_head_deadline() {
    assert_bounded(
        "trickle head",
        trickle_head,
        "",
        "the server's reply head did not arrive",
    );
}

#[test]
fn a_stream_of_comments_ends_at_the_reply_deadline() {
    assert_bounded(
        "comment stream",
        comment_stream,
        "",
        "the reply was not complete after 4 s",
    );
}

#[test]
fn a_flood_of_100_continue_ends_at_the_head_deadline() {
    assert_bounded(
        "100 Continue flood",
        continue_flood,
        "",
        "the server's reply",
    );
}

#[test]
fn an_endless_unstreamed_body_ends_at_its_cap() {
    assert_bounded(
        "endless stream=false body",
        endless_unstreamed_body,
        "extra_body = { stream = false }",
        "the reply's body passed 8 MiB",
    );
}

/// Every scenario with its name and the provider settings it needs, for the bench.
const SCENARIOS: [(&str, Scenario, &str); 7] = [
    ("endless SSE line", endless_sse_line, ""),
    ("endless content", endless_content, ""),
    ("tool-call flood", tool_call_flood, ""),
    ("trickle head", trickle_head, ""),
    ("comment stream", comment_stream, ""),
    ("100 Continue flood", continue_flood, ""),
    (
        "endless stream=false body",
        endless_unstreamed_body,
        "extra_body = { stream = false }",
    ),
];

/// `make bench`: the peak RSS and time of a run under each hostile reply (issue 33.2's bound
/// is 64 MiB), printed against that target rather than asserted.
#[test]
#[ignore]
fn bench_peak_rss_under_hostile_replies() {
    for (name, scenario, extra) in SCENARIOS {
        let outcome = run_against(&serve(scenario), extra);
        let peak = outcome.peak_rss_kib as f64 / 1024.0;
        println!(
            "hostile reply `{name}`: peak RSS {peak:.1} MiB (target < {} MiB: {}), ended after {:.1} s, exit {}{}",
            PEAK_RSS_KIB / 1024,
            if outcome.peak_rss_kib < PEAK_RSS_KIB { "met" } else { "NOT met" },
            outcome.elapsed.as_secs_f64(),
            outcome.code,
            outcome
                .killed
                .map(|why| format!(", killed by the guard: {why}"))
                .unwrap_or_default()
        );
    }
}
