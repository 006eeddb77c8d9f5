//! The Guardian reviewer (SPEC §3.7, `approvals_reviewer = "auto_review"`) end to end: the
//! real binary, the reference MCP server with `prompt` approvals, and the fake model scripted
//! as both the agent and its reviewer (the review is the request between the call and the
//! agent's next turn). A verdict is final and shown; a missing one becomes a fresh human
//! approval in the chat and a refusal headless; destructive calls never reach the reviewer.

use serde_json::{json, Value};

use crate::util::fake_openai::{FakeOpenAI, RecordedRequest, Reply};
use crate::util::pty::Pty;
use crate::util::{reasonix, run, use_fake_provider, Dir};

fn example() -> &'static str {
    env!("CARGO_BIN_EXE_reasonix-plugin-example")
}

/// The reference server as `srv`, every call reviewed (`prompt`) by the Guardian.
fn reviewed_server(extra: &str) -> String {
    format!(
        "[[plugins]]\nname = \"srv\"\ncommand = {}\ndefault_tools_approval_mode = \"prompt\"\napprovals_reviewer = \"auto_review\"\n{extra}\n",
        serde_json::to_string(example()).unwrap()
    )
}

/// The model calls `echo` once; `review` answers the review; then the agent says "done".
fn script(review: Reply) -> Vec<Reply> {
    vec![
        Reply::text_then_tool_calls(
            "Echoing as asked.",
            &[("c1", "mcp__srv__echo", r#"{"text":"hello"}"#)],
        ),
        review,
        Reply::text("done"),
    ]
}

/// `reasonix run --output-format stream-json PROMPT` with `config` (plugins first, then the
/// fake provider); returns the events and the result line.
fn run_json(home: &Dir, work: &Dir, server: &FakeOpenAI, config: &str) -> (Vec<Value>, Value) {
    use_fake_provider(home, &server.base_url(), config);
    let out = run(reasonix(home, work.path())
        .args(["run", "--output-format", "stream-json", "echo hello please"])
        .env("FAKE_API_KEY", "k"));
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let result = lines.last().expect("a result").clone();
    assert_eq!(result["type"], "result", "{result}");
    (lines, result)
}

fn permission_events(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|l| l["type"] == "permission").collect()
}

/// The tool result the agent's last request carried for `c1`.
fn tool_result(request: &RecordedRequest) -> String {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "c1")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn the_guardian_allows_a_reviewed_call_and_its_tokens_count_in_the_result() {
    let server = FakeOpenAI::start(script(Reply::text(
        r#"{"decision": "allow", "reason": "the user asked to echo hello"}"#,
    )));
    let (home, work) = (Dir::new(), Dir::new());
    let (lines, result) = run_json(&home, &work, &server, &reviewed_server(""));
    let requests = server.wait_for_requests(3);
    // The review: the fixed prompt, no tools, the call and the user's words as data.
    let review = &requests[1].body;
    let messages = review["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{review}");
    assert_eq!(
        messages[0]["content"],
        reasonix::permission::guardian::REVIEWER_PROMPT
    );
    let question = messages[1]["content"].as_str().unwrap();
    for expected in [
        "Tool: mcp__srv__echo",
        "approval_mode = prompt",
        r#""text":"hello""#,
        "echo hello please",
        "Echoing as asked.",
    ] {
        assert!(
            question.contains(expected),
            "{expected} missing: {question}"
        );
    }
    assert!(
        review.get("tools").is_none() || review["tools"] == json!([]),
        "{review}"
    );
    // The verdict is shown and final: the call ran.
    let events = permission_events(&lines);
    assert_eq!(events.len(), 1, "{lines:?}");
    assert_eq!(events[0]["resolution"], "guardian");
    assert_eq!(events[0]["allowed"], true);
    assert_eq!(events[0]["reason"], "the user asked to echo hello");
    assert_eq!(tool_result(&requests[2]), "hello");
    // Three requests of 100 prompt tokens each: the reviewer's is in the totals and in the
    // model's entry, which it shares with the agent.
    assert_eq!(result["usage"]["input_tokens"], 300, "{result}");
    let model = &result["models"]["fake-model"];
    assert_eq!(model["role"], "agent+reviewer", "{result}");
    assert_eq!(model["requests"], 3, "{result}");
    let reviewer_usage = lines
        .iter()
        .find(|l| l["type"] == "usage" && l["role"] == "reviewer")
        .expect("the reviewer's usage event");
    assert_eq!(reviewer_usage["model"], "fake-model");
    assert_eq!(result["permission_denials"], json!([]));
}

#[test]
fn a_reviewer_model_of_its_own_has_its_own_entry_in_the_result() {
    let server = FakeOpenAI::start(script(Reply::text(r#"{"decision":"allow","reason":"ok"}"#)));
    let (home, work) = (Dir::new(), Dir::new());
    let judge = format!(
        "[agent]\nreviewer_model = \"judge/judge-model\"\n\n{}\n[[providers]]\nname = \"judge\"\nbase_url = \"{}\"\nmodel = \"judge-model\"\napi_key_env = \"FAKE_API_KEY\"\n",
        reviewed_server(""),
        server.base_url()
    );
    let (_, result) = run_json(&home, &work, &server, &judge);
    let requests = server.wait_for_requests(3);
    assert_eq!(requests[1].body["model"], "judge-model");
    assert_eq!(requests[2].body["model"], "fake-model");
    assert_eq!(
        result["models"]["judge-model"]["role"], "reviewer",
        "{result}"
    );
    assert_eq!(result["models"]["judge-model"]["requests"], 1, "{result}");
    assert_eq!(result["models"]["fake-model"]["role"], "agent", "{result}");
}

#[test]
fn the_guardians_deny_is_final_and_listed_among_the_denials() {
    let server = FakeOpenAI::start(script(Reply::text(
        "```json\n{\"decision\": \"deny\", \"reason\": \"nobody asked for an echo\"}\n```",
    )));
    let (home, work) = (Dir::new(), Dir::new());
    let (lines, result) = run_json(&home, &work, &server, &reviewed_server(""));
    let events = permission_events(&lines);
    assert_eq!(events.len(), 1, "{lines:?}");
    assert_eq!(
        (&events[0]["resolution"], &events[0]["allowed"]),
        (&json!("guardian"), &json!(false))
    );
    assert_eq!(events[0]["reason"], "nobody asked for an echo");
    let requests = server.wait_for_requests(3);
    let told = tool_result(&requests[2]);
    assert!(
        told.contains("blocked by the Guardian reviewer: nobody asked for an echo"),
        "{told}"
    );
    let denials = result["permission_denials"].as_array().unwrap();
    assert_eq!(denials.len(), 1, "{result}");
    assert_eq!(denials[0]["tool"], "mcp__srv__echo");
    assert_eq!(denials[0]["resolution"], "guardian");
    assert_eq!(denials[0]["reason"], "nobody asked for an echo");
}

/// Headless, no verdict means no call: a garbled reply, a reply that never comes (the
/// reviewer's deadline set to a second) and a failed request all fail closed, even in the
/// `ask` posture that otherwise lets an ask through without a person.
#[test]
fn headless_runs_fail_closed_when_the_guardian_gives_no_verdict() {
    let (stalled, _release) = Reply::stall();
    for (review, expected) in [
        (Reply::text("Sure, looks fine to me!"), "not a verdict"),
        (stalled, "no verdict within 1 s"),
        (Reply::error(500, "judge is down"), "request failed"),
    ] {
        let server = FakeOpenAI::start(script(review));
        let (home, work) = (Dir::new(), Dir::new());
        let config = format!(
            "[agent]\nreviewer_timeout_seconds = 1\n\n{}",
            reviewed_server("")
        );
        let (lines, result) = run_json(&home, &work, &server, &config);
        let events = permission_events(&lines);
        assert_eq!(events.len(), 1, "{lines:?}");
        assert_eq!(events[0]["resolution"], "guardian-failed", "{lines:?}");
        assert_eq!(events[0]["allowed"], false);
        let reason = events[0]["reason"].as_str().unwrap();
        assert!(reason.contains(expected), "{expected}: {reason}");
        let requests = server.wait_for_requests(3);
        let told = tool_result(&requests[2]);
        assert!(told.contains("cannot ask a person"), "{told}");
        assert_eq!(
            result["permission_denials"][0]["resolution"],
            "guardian-failed"
        );
    }
}

/// A destructive tool of a reviewed server goes to no reviewer: headless it is refused with
/// no review request made (the model is asked twice, not three times).
#[test]
fn destructive_calls_are_never_sent_to_the_guardian() {
    const ANNOTATED: &str = r#"read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"a","version":"1"}}}'; read l; read l; echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"rm","annotations":{"destructiveHint":true}}]}}'; cat > /dev/null"#;
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "mcp__srv__rm", "{}")]),
        Reply::text("done"),
        Reply::text(r#"{"decision":"allow","reason":"a reviewer would have said yes"}"#),
    ]);
    let (home, work) = (Dir::new(), Dir::new());
    let config = format!(
        "[[plugins]]\nname = \"srv\"\ncommand = \"sh\"\nargs = [\"-c\", {}]\nsandbox = \"off\"\ndefault_tools_approval_mode = \"prompt\"\napprovals_reviewer = \"auto_review\"\n",
        serde_json::to_string(ANNOTATED).unwrap()
    );
    let (lines, _) = run_json(&home, &work, &server, &config);
    let events = permission_events(&lines);
    assert_eq!(events.len(), 1, "{lines:?}");
    assert_ne!(events[0]["resolution"], "guardian", "{lines:?}");
    assert_eq!(events[0]["allowed"], false);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "no review request: {requests:?}");
    assert!(tool_result(&requests[1]).contains("marked destructive"));
}

/// A project file cannot hand the user's approvals to a model: its `auto_review` is ignored
/// with a warning, and the call takes the ordinary path (headless: allowed without a person,
/// no review request).
#[test]
fn a_project_file_cannot_turn_the_guardian_on() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "mcp__proj__echo", r#"{"text":"hi"}"#)]),
        Reply::text("done"),
    ]);
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(&home, &server.base_url(), "");
    work.write(
        "reasonix.toml",
        &format!(
            "[[plugins]]\nname = \"proj\"\ncommand = {}\ndefault_tools_approval_mode = \"prompt\"\napprovals_reviewer = \"auto_review\"\n\n[agent]\nreviewer_model = \"fake/fake-model\"\n",
            serde_json::to_string(example()).unwrap()
        ),
    );
    let out = run(reasonix(&home, work.path())
        .args(["run", "--trust-project", "--trust-project-mcp", "echo hi"])
        .env("FAKE_API_KEY", "k"));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("only the user config may hand approvals"),
        "{out:?}"
    );
    assert!(out.stderr.contains("agent.reviewer_model"), "{out:?}");
    let requests = server.wait_for_requests(2);
    assert_eq!(requests.len(), 2, "no review request");
    assert_eq!(tool_result(&requests[1]), "hi");
}

/// In the chat a garbled verdict becomes a fresh approval: the modal says why, offers no
/// grant for the session, and the answer counts once; the reviewer's tokens are in the status
/// line (three requests of 100 in and 10 out).
#[test]
fn in_the_chat_a_missing_verdict_asks_the_person_afresh() {
    let server = FakeOpenAI::start(script(Reply::text("I think it is probably fine")));
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(&home, &server.base_url(), &reviewed_server(""));
    let mut cmd = reasonix(&home, work.path());
    cmd.args(["chat", "--permission-mode", "auto"])
        .env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, 120, 32);
    pty.wait_text("fake-model · auto");
    pty.send("echo hello please\r");
    pty.wait_text("Allow mcp__srv__echo?");
    let screen = pty.screen();
    assert!(
        screen.contains("asking you: the Guardian reviewer gave no verdict"),
        "{screen}"
    );
    assert!(
        !screen.contains("for this session") && !screen.contains("Always allow"),
        "no session grant is offered:\n{screen}"
    );
    pty.send("y");
    pty.wait_text("done");
    pty.wait_text("allowed it once");
    pty.wait_text("↑300 ↓30");
    let requests = server.wait_for_requests(3);
    assert_eq!(tool_result(&requests[2]), "hello");
    pty.send("\x04");
    assert!(pty.wait_exit().success());
}
