//! The per-round caps on multiplying tools, through the real binary and the fake model: a
//! reply flooding an MCP server with calls (issue 33.3). The image flood lives with the other
//! `view_image` tests, the child floods with the fleet tests.

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
    let reply: Vec<(&str, &str, &str)> = args
        .iter()
        .map(|(id, a)| (id.as_str(), "mcp__local__echo", a.as_str()))
        .collect();
    server.push(Reply::tool_calls(&reply));
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
