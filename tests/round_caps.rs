//! The per-round caps on multiplying tools, through the real binary and the fake model: a
//! reply flooding an MCP server with calls (issue 33.3), and what the caps cost a normal run
//! (`make bench`). The image flood lives with the other `view_image` tests, the child floods
//! with the fleet tests.

use serde_json::json;

use crate::util::fake_openai::{assert_tool_pairing, FakeOpenAI, Reply};
use crate::util::{reasonix, use_fake_provider, Dir, Run};

fn example() -> &'static str {
    env!("CARGO_BIN_EXE_reasonix-plugin-example")
}

/// The peak resident memory (`VmHWM`) of process `pid` so far, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// One run whose model asks for `calls` echo calls of the stdio example server in one reply,
/// with `agent` as the `[agent]` table; the tool results of the second request and the run's
/// peak RSS in KiB.
fn mcp_flood(calls: usize, agent: &str) -> (Vec<String>, u64) {
    let server = FakeOpenAI::start(Vec::new());
    let (home, work) = (Dir::new(), Dir::new());
    let plugin = format!(
        "[[plugins]]\nname = \"local\"\ncommand = {}\n\n[agent]\n{agent}\n",
        serde_json::to_string(example()).unwrap()
    );
    use_fake_provider(&home, &server.base_url(), &plugin);
    let args: Vec<(String, String)> = (0..calls)
        .map(|i| {
            (
                format!("c{i}"),
                json!({ "text": format!("echo {i}") }).to_string(),
            )
        })
        .collect();
    server.push(Reply::calls_of("mcp__local__echo", &args));
    let (last, release) = Reply::gated(Reply::text("done"));
    server.push(last);
    let child = reasonix(&home, work.path())
        .args(["run", "--permission-mode", "yolo", "flood the server"])
        .env("FAKE_API_KEY", "k")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let requests = server.wait_for_requests(2);
    let peak = peak_rss_kib(child.id());
    release.release();
    let out: Run = child.wait_with_output().unwrap().into();
    assert_eq!(out.code, 0, "{out:?}");
    let body = &requests[1].body;
    assert_tool_pairing(body);
    let results = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    (results, peak)
}

fn count(results: &[String], what: impl Fn(&str) -> bool) -> usize {
    results.iter().filter(|r| what(r)).count()
}

/// Issue 33.3: nothing capped the MCP calls of one reply; 200 calls in one round all went to
/// the server. The first `agent.max_mcp_calls_per_round` (32) run, in order; the rest are
/// refused with the cap and its key, before the gate.
#[test]
fn an_mcp_call_flood_in_one_reply_stops_at_the_rounds_cap() {
    let (results, peak) = mcp_flood(200, "");
    eprintln!("200 MCP calls in one reply: peak RSS {} MiB", peak / 1024);
    assert_eq!(results.len(), 200);
    let ran = count(&results, |r| r.starts_with("echo "));
    let refused = count(&results, |r| {
        r.contains("refused") && r.contains("agent.max_mcp_calls_per_round = 32")
    });
    assert_eq!((ran, refused), (32, 168), "{results:?}");
    for (i, result) in results.iter().take(32).enumerate() {
        assert_eq!(
            result,
            &format!("echo {i}"),
            "the first calls run, in order"
        );
    }
    assert!(peak > 0 && peak < 256 * 1024, "peak RSS {peak} KiB");
}

#[test]
fn the_mcp_call_cap_is_configurable() {
    let (results, _) = mcp_flood(5, "max_mcp_calls_per_round = 2");
    let ran = count(&results, |r| r.starts_with("echo "));
    let refused = count(&results, |r| {
        r.contains("agent.max_mcp_calls_per_round = 2")
    });
    assert_eq!((ran, refused), (2, 3), "{results:?}");
}

/// The CPU time (user plus system) of `child` once it exits, and its exit code.
fn cpu_of(child: std::process::Child) -> (i32, std::time::Duration) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for a child we spawned and have not reaped.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed");
    let time =
        |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (
        libc::WEXITSTATUS(status),
        time(usage.ru_utime) + time(usage.ru_stime),
    )
}

/// One normal session of `rounds` rounds, each a `read_file`, an MCP echo and a small
/// `view_image` (every cap is consulted each round, none is reached), with `agent` as the
/// `[agent]` table; its CPU time.
fn normal_session_cpu(rounds: usize, agent: &str) -> std::time::Duration {
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR tiny";
    let work = Dir::new();
    for n in 0..4 {
        work.write(&format!("a{n}.txt"), "hello\n");
        std::fs::write(work.join(&format!("s{n}.png")), PNG).unwrap();
    }
    let mut replies: Vec<Reply> = (0..rounds)
        .map(|i| {
            let read = format!(r#"{{"path":"a{}.txt"}}"#, i % 4);
            let echo = json!({ "text": format!("round {i}") }).to_string();
            let view = format!(r#"{{"path":"s{}.png"}}"#, i % 4);
            Reply::tool_calls(&[
                (&format!("r{i}"), "read_file", &read),
                (&format!("m{i}"), "mcp__local__echo", &echo),
                (&format!("v{i}"), "view_image", &view),
            ])
        })
        .collect();
    replies.push(Reply::text("done"));
    let server = FakeOpenAI::start(replies);
    let home = Dir::new();
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"fake\"\n\n[[plugins]]\nname = \"local\"\ncommand = {}\n\n[agent]\nmax_steps_headless = 0\n{agent}\n\n[[providers]]\nname = \"fake\"\nbase_url = \"{}\"\nmodel = \"fake-model\"\napi_key_env = \"FAKE_API_KEY\"\nvision = true\nretry = {{ max_retries = 0 }}\n\n[environment]\nenabled = false\n",
            serde_json::to_string(example()).unwrap(),
            server.base_url()
        ),
    );
    let child = reasonix(&home, work.path())
        .args(["run", "--permission-mode", "yolo", "work"])
        .env("FAKE_API_KEY", "k")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (code, cpu) = cpu_of(child);
    assert_eq!(code, 0);
    assert_eq!(server.requests().len(), rounds + 1);
    cpu
}

/// `make bench`: the caps cost a normal session nothing measurable. The same 200-round
/// session (a read, an MCP call and an image each round) with the caps at their defaults and
/// raised to their maxima, alternated five times; the medians of the CPU time are printed.
#[test]
#[ignore]
fn bench_cost_of_the_round_caps_on_a_normal_run() {
    const ROUNDS: usize = 200;
    let huge = "max_mcp_calls_per_round = 1024\nmax_image_bytes_per_request = 1073741824\nmax_subagents_per_round = 4294967295\nmax_subagents_per_run = 4294967295";
    let (mut capped, mut uncapped) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        capped.push(normal_session_cpu(ROUNDS, ""));
        uncapped.push(normal_session_cpu(ROUNDS, huge));
    }
    capped.sort();
    uncapped.sort();
    let (a, b) = (capped[2].as_secs_f64(), uncapped[2].as_secs_f64());
    println!(
        "cost of the round caps on a normal {ROUNDS}-round run (a read, an MCP call and an image per round): \
         CPU median {:.1} ms with the default caps, {:.1} ms with the caps at their maxima ({:+.1}%; \
         spread {:.1} to {:.1} ms and {:.1} to {:.1} ms)",
        a * 1000.0,
        b * 1000.0,
        (a - b) / b * 100.0,
        capped[0].as_secs_f64() * 1000.0,
        capped[4].as_secs_f64() * 1000.0,
        uncapped[0].as_secs_f64() * 1000.0,
        uncapped[4].as_secs_f64() * 1000.0,
    );
}
