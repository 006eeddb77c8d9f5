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

/// A provider entry for the fake server with `extra` TOML inside its table.
fn use_fake_provider_with(home: &Dir, base_url: &str, extra: &str) {
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"fake\"\n\n[[providers]]\nname = \"fake\"\nbase_url = \"{base_url}\"\nmodel = \"fake-model\"\napi_key_env = \"FAKE_API_KEY\"\nretry = {{ max_retries = 0 }}\n{extra}\n\n[environment]\nenabled = false\n"
        ),
    );
}

/// A whole `chat.completion` object, as a server that does not stream sends it.
fn completion(message: Value, finish_reason: &str) -> Reply {
    let body = serde_json::json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57,
                  "prompt_cache_hit_tokens": 40, "prompt_cache_miss_tokens": 10},
    });
    Reply::body(200, "application/json", &body.to_string())
}

#[test]
fn stream_false_in_extra_body_drops_stream_options_and_reads_a_whole_completion() {
    let server = FakeOpenAI::start(vec![
        completion(
            serde_json::json!({"role": "assistant", "content": "",
                "reasoning_content": "list it",
                "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "write_file",
                                 "arguments": "{\"path\":\"w.txt\",\"content\":\"whole\"}"}}]}),
            "tool_calls",
        ),
        completion(
            serde_json::json!({"role": "assistant", "content": "Written."}),
            "stop",
        ),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider_with(&home, &server.base_url(), "extra_body = { stream = false }");
    let (out, lines) = run_stream_json(&home, &work, "write");
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(work.read("w.txt"), "whole", "the tool call ran");
    let reasoning: String = lines
        .iter()
        .filter(|l| l["type"] == "reasoning")
        .filter_map(|l| l["text"].as_str())
        .collect();
    assert_eq!(reasoning, "list it", "{out:?}");
    let result = lines.last().unwrap();
    assert_eq!(result["result"], "Written.", "{out:?}");
    assert_eq!(
        result["usage"]["input_tokens"], 100,
        "reported usage, not estimates"
    );
    assert_eq!(result["usage"]["cache_read_input_tokens"], 80);
    for request in server.requests() {
        assert_eq!(request.body["stream"], false, "{}", request.body);
        assert!(
            request.body.get("stream_options").is_none(),
            "stream_options sent without streaming: {}",
            request.body["stream_options"]
        );
        assert_eq!(request.header("accept"), Some("application/json"));
    }

    // stream_options set by extra_body itself is the user's to send.
    let server = FakeOpenAI::start(vec![completion(
        serde_json::json!({"role": "assistant", "content": "ok"}),
        "stop",
    )]);
    let home = Dir::new();
    use_fake_provider_with(
        &home,
        &server.base_url(),
        "extra_body = { stream = false, stream_options = { include_usage = false } }",
    );
    let (out, _) = run_stream_json(&home, &work, "hi");
    assert_eq!(out.code, 0, "{out:?}");
    let body = &server.requests()[0].body;
    assert_eq!(body["stream_options"]["include_usage"], false, "{body}");

    // Streaming stays the default, with usage asked for.
    let (server, home, work) = setup(vec![Reply::text("ok")]);
    let (out, _) = run_stream_json(&home, &work, "hi");
    assert_eq!(out.code, 0, "{out:?}");
    let request = &server.requests()[0];
    assert_eq!(request.body["stream"], true);
    assert_eq!(request.body["stream_options"]["include_usage"], true);
    assert_eq!(request.header("accept"), Some("text/event-stream"));
}

#[test]
fn a_connection_dropped_after_it_was_made_is_not_reported_as_cannot_connect() {
    // The server reads the request and hangs up without a byte of response.
    let (_server, home, work) = setup(vec![Reply::Hangup]);
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "hi"]));
    assert_ne!(out.code, 0, "{out:?}");
    assert!(!out.stderr.contains("cannot connect"), "{out:?}");
    assert!(
        out.stderr.contains("the connection dropped"),
        "says what happened: {out:?}"
    );

    // Cut in the middle of the reply: a broken stream, not a failure to connect.
    let (_server, home, work) = setup(vec![Reply::cut(vec![sse_text("Half an")])]);
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "hi"]));
    assert_ne!(out.code, 0, "{out:?}");
    assert!(!out.stderr.contains("cannot connect"), "{out:?}");

    // Nothing listening: that one is a failure to connect.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let home = Dir::new();
    use_fake_provider(&home, &format!("http://127.0.0.1:{port}/v1"), "");
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "hi"]));
    assert!(out.stderr.contains("cannot connect"), "{out:?}");
}

#[test]
fn record_keeps_every_attempt_of_a_retried_request_and_replay_skips_the_failed_ones() {
    let server = FakeOpenAI::start(vec![Reply::error(500, "busy"), Reply::text("Second try.")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider_with(
        &home,
        &server.base_url(),
        "retry = { max_retries = 2, initial_backoff_ms = 1 }",
    );
    // The table above replaces the helper's retry line; drop the helper's own.
    let config = home.read(".reasonix/config.toml");
    home.write(
        ".reasonix/config.toml",
        &config.replacen("retry = { max_retries = 0 }\n", "", 1),
    );
    let file = work.join("rec.jsonl");
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--record",
        file.to_str().unwrap(),
        "hi",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(server.requests().len(), 2, "one retry: {out:?}");
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let statuses: Vec<&Value> = lines.iter().map(|l| &l["status"]).collect();
    assert_eq!(lines.len(), 2, "both attempts are recorded: {statuses:?}");
    assert_eq!(lines[0]["status"], 500);
    assert!(lines[0]["response"].as_str().unwrap().contains("busy"));
    assert_eq!(lines[0]["retried"], true);
    assert_eq!(lines[1]["status"], 200);
    assert!(lines[1].get("retried").is_none(), "{}", lines[1]);

    // The replay answers with the attempt that counted.
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--replay",
        file.to_str().unwrap(),
        "-p",
        "hi",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.trim(), "Second try.", "{out:?}");
}

/// The assistant message of a request that carries the tool call `id`.
fn assistant_with_call<'a>(body: &'a Value, id: &str) -> &'a Value {
    body["messages"]
        .as_array()
        .and_then(|m| {
            m.iter().find(|m| {
                m["role"] == "assistant"
                    && m["tool_calls"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|c| c["id"] == id))
            })
        })
        .unwrap_or_else(|| panic!("no assistant message calls {id}"))
}

#[test]
fn reasoning_content_is_echoed_only_once_the_provider_sent_some_and_the_prefix_holds() {
    // Three places to list: the same call three times would be a loop the guard stops.
    let ls = r#"{"path":"."}"#;
    let mut thinking_call = vec![sse_reasoning("Look first.")];
    thinking_call.push(sse_tool_calls(&[("c2", "ls", r#"{"path":"sub"}"#)]));
    thinking_call.extend([sse_finish("tool_calls"), sse_usage(100, 10, 0), done()]);
    let (server, home, work) = setup(vec![
        // A provider that has sent no reasoning yet: nothing to echo.
        Reply::tool_calls(&[("c1", "ls", ls)]),
        // Now it thinks: learned mid-session.
        Reply::events(thinking_call),
        // A later tool-call turn without reasoning still carries the (empty) field.
        Reply::tool_calls(&[("c3", "ls", r#"{"path":"sub/more"}"#)]),
        Reply::text("Done."),
    ]);
    work.write("sub/more/x.txt", "x\n");
    let (out, _) = run_stream_json(&home, &work, "look");
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(4);
    let bodies: Vec<&Value> = requests.iter().map(|r| &r.body).collect();
    let first = assistant_with_call(bodies[1], "c1");
    assert!(
        first.get("reasoning_content").is_none(),
        "echoed to a provider that never sent reasoning: {first}"
    );
    assert_eq!(
        assistant_with_call(bodies[2], "c2")["reasoning_content"],
        "Look first."
    );
    assert_eq!(
        assistant_with_call(bodies[3], "c3")["reasoning_content"],
        "",
        "a thinking provider gets the field on every tool-call turn"
    );
    // Every request's messages start with the previous request's, unchanged: learning that
    // the provider thinks rewrote nothing already sent.
    for n in 1..bodies.len() {
        let before = bodies[n - 1]["messages"].as_array().unwrap();
        let after = bodies[n]["messages"].as_array().unwrap();
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "request {} changed the prefix of request {n}",
            n + 1
        );
    }
    for id in ["c1", "c2"] {
        assert_eq!(
            assistant_with_call(bodies[3], id),
            assistant_with_call(bodies[2], id)
        );
    }
}
