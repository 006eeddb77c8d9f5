//! Provider edge cases through the real binary against the fake server: the stream-json
//! `init` line comes first, answers and tool calls cut by `finish_reason: "length"`,
//! non-streamed replies (`stream = false`), `reasoning_content` echoed only to providers
//! that send it, dropped connections, and `--record` with retried requests.

use serde_json::Value;

use crate::util::fake_openai::*;
use crate::util::{reasonix, run, use_fake_provider, Dir, Run};

fn stream_json_lines(out: &Run) -> Vec<Value> {
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{out:?}")))
        .collect()
}

fn run_stream_json(home: &Dir, work: &Dir, prompt: &str) -> (Run, Vec<Value>) {
    let out = run(reasonix(home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--output-format",
        "stream-json",
        prompt,
    ]));
    let lines = stream_json_lines(&out);
    (out, lines)
}

#[test]
fn stream_json_starts_with_init_even_when_a_notice_comes_first() {
    // A plugin that cannot start warns while the tools are gathered, before the session
    // (and with it `init`) exists.
    let server = FakeOpenAI::start(vec![Reply::text("fine")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(
        &home,
        &server.base_url(),
        "[[plugins]]\nname = \"broken\"\ncommand = \"/nonexistent/mcp-server\"\nargs = []\n",
    );
    let (out, lines) = run_stream_json(&home, &work, "hi");
    assert_eq!(out.code, 0, "{out:?}");
    let types: Vec<&str> = lines
        .iter()
        .map(|l| l["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(types.first(), Some(&"init"), "{types:?}\n{out:?}");
    let notice = lines
        .iter()
        .position(|l| {
            l["type"] == "notice" && l["message"].as_str().unwrap_or("").contains("broken")
        })
        .unwrap_or_else(|| panic!("the plugin's warning is kept: {types:?}\n{out:?}"));
    assert_eq!(notice, 1, "held notices come right after init: {types:?}");
    assert_eq!(types.last(), Some(&"result"), "{types:?}");
}

fn setup(replies: Vec<Reply>) -> (FakeOpenAI, Dir, Dir) {
    let server = FakeOpenAI::start(replies);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    (server, home, work)
}

/// A reply whose events end with `finish_reason: "length"`.
fn cut_by_length(mut events: Vec<String>) -> Reply {
    events.push(sse_finish("length"));
    events.push(sse_usage(100, 4096, 0));
    events.push(done());
    Reply::events(events)
}

#[test]
fn an_answer_cut_by_the_token_limit_is_reported_with_stop_reason_max_tokens() {
    let (_server, home, work) = setup(vec![cut_by_length(vec![sse_text("The answer is")])]);
    let (out, lines) = run_stream_json(&home, &work, "hi");
    assert_eq!(out.code, 0, "{out:?}");
    let warning = lines.iter().find(|l| {
        l["type"] == "notice"
            && l["level"] == "warning"
            && l["message"].as_str().unwrap_or("").contains("token limit")
    });
    assert!(
        warning.is_some(),
        "a warning says the answer was cut: {out:?}"
    );
    let result = lines.last().expect("a result line");
    assert_eq!(result["type"], "result", "{out:?}");
    assert_eq!(result["stop_reason"], "max_tokens", "{result}");
    assert_eq!(result["result"], "The answer is");

    // A whole answer ends its turn.
    let (_server, home, work) = setup(vec![Reply::text("All of it.")]);
    let (out, lines) = run_stream_json(&home, &work, "hi");
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(lines.last().unwrap()["stop_reason"], "end_turn", "{out:?}");
    assert!(
        !lines.iter().any(|l| l["type"] == "notice"),
        "no notice for a whole answer: {out:?}"
    );

    // Text output warns on stderr.
    let (_server, home, work) = setup(vec![cut_by_length(vec![sse_text("Half")])]);
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "hi"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("warning: ") && out.stderr.contains("token limit"),
        "{out:?}"
    );
}

#[test]
fn a_tool_call_cut_by_the_token_limit_is_not_executed_and_the_model_is_told() {
    // The arguments happen to parse: only the finish reason says they are cut.
    let args = r#"{"path":"cut.txt","content":"first line"}"#;
    let (server, home, work) = setup(vec![
        cut_by_length(vec![sse_tool_calls(&[("c1", "write_file", args)])]),
        Reply::text("I will write it in parts."),
    ]);
    let (out, lines) = run_stream_json(&home, &work, "write it");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!work.join("cut.txt").exists(), "the cut call ran: {out:?}");
    let result = lines
        .iter()
        .find(|l| l["type"] == "tool_result" && l["id"] == "c1")
        .unwrap_or_else(|| panic!("the cut call has a result: {out:?}"));
    assert_eq!(result["is_error"], true, "{result}");
    let requests = server.wait_for_requests(2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let told = messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "c1")
        .unwrap_or_else(|| panic!("a tool result for c1: {messages:?}"));
    let content = told["content"].as_str().unwrap_or("");
    assert!(content.contains("token limit"), "{content}");
    assert_eq!(lines.last().unwrap()["stop_reason"], "end_turn", "{out:?}");
}
