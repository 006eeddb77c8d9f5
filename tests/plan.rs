//! Plan mode end to end: `reasonix run --plan` ends at `exit_plan_mode` with the plan as its
//! result, `--approve-plan` carries on into execution with the approved-plan window open, MCP
//! writers and untrusted MCP readers are hard-blocked while planning, and auto-plan enters plan
//! mode for a task that looks complex. The real binary against the fake OpenAI server and the
//! reference MCP server.

use serde_json::{json, Value};

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, run, use_fake_provider, Dir};

const PLAN: &str = "1. Read src/lib.rs\n2. Rename `foo` to `bar` in every caller\n3. Run the tests";

fn exit_plan(id: &str) -> (String, String, String) {
    let args = serde_json::json!({ "plan": PLAN }).to_string();
    (id.to_string(), "exit_plan_mode".to_string(), args)
}

fn calls(list: &[(String, String, String)]) -> Reply {
    let borrowed: Vec<(&str, &str, &str)> = list
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    Reply::tool_calls(&borrowed)
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn tool_results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or("").to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn result_for(body: &Value, id: &str) -> String {
    tool_results(body)
        .into_iter()
        .find(|(call, _)| call == id)
        .map(|(_, content)| content)
        .unwrap_or_else(|| panic!("no result for {id} in {body}"))
}

#[test]
fn run_plan_ends_at_exit_plan_mode_with_the_plan_as_the_result() {
    for format in ["stream-json", "json"] {
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[("c1", "ls", "{}")]),
            calls(&[exit_plan("c2")]),
        ]);
        let home = Dir::new();
        let work = Dir::new();
        use_fake_provider(&home, &server.base_url(), "");
        let last = work.join("last.txt");
        let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
            "run",
            "--plan",
            "--output-format",
            format,
            "--output-last-message",
            last.to_str().unwrap(),
            "rename foo to bar",
        ]));
        assert_eq!(out.code, 0, "{format}: {out:?}");
        let lines = json_lines(&out.stdout);
        let result = lines.last().unwrap();
        assert_eq!(result["type"], "result", "{format}: {result}");
        assert_eq!(result["subtype"], "plan", "{format}: {result}");
        assert_eq!(result["is_error"], false);
        assert_eq!(result["result"], PLAN, "{format}: {result}");
        assert_eq!(std::fs::read_to_string(&last).unwrap(), PLAN);
        // Planning ended the run: no request after the plan.
        assert_eq!(server.requests().len(), 2, "{format}");
        let first = &server.requests()[0].body;
        let user = first["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(user.starts_with("rename foo to bar"), "{user}");
        assert!(user.contains("plan mode"), "the turn says it plans: {user}");
        if format == "stream-json" {
            let plan_events: Vec<&Value> = lines.iter().filter(|l| l["type"] == "plan").collect();
            assert_eq!(plan_events.len(), 1, "{}", out.stdout);
            assert_eq!(plan_events[0]["plan"], PLAN);
            assert_eq!(plan_events[0]["outcome"], "proposed");
            assert!(
                lines
                    .iter()
                    .any(|l| l["type"] == "plan_mode" && l["planning"] == true),
                "{}",
                out.stdout
            );
        }
    }
}

#[test]
fn exit_plan_mode_outside_plan_mode_is_an_error() {
    let server = FakeOpenAI::start(vec![calls(&[exit_plan("c1")]), Reply::text("ok")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "just do it"]));
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(2);
    let result = result_for(&requests[1].body, "c1");
    assert!(result.contains("not in plan mode"), "{result}");
}

#[test]
fn approve_plan_without_plan_is_a_usage_error() {
    let home = Dir::new();
    let work = Dir::new();
    let out = run(reasonix(&home, work.path()).args(["run", "--approve-plan", "x"]));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("--approve-plan approves the plan of a plan-mode run; add --plan"),
        "{out:?}"
    );
}

fn call(id: &str, name: &str, args: Value) -> (String, String, String) {
    (id.to_string(), name.to_string(), args.to_string())
}

fn user_message(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

#[test]
fn approve_plan_carries_the_plan_out_with_the_window_open_until_the_list_completes() {
    let todo = |status: &str| json!({"todos": [{"content": "write b", "status": status}]});
    let server = FakeOpenAI::start(vec![
        calls(&[call(
            "c1",
            "write_file",
            json!({"path": "a.txt", "content": "a"}),
        )]),
        calls(&[exit_plan("c2")]),
        calls(&[
            call("c3", "todo_write", todo("in_progress")),
            call("c4", "write_file", json!({"path": "b.txt", "content": "b"})),
        ]),
        calls(&[call("c5", "todo_write", todo("completed"))]),
        calls(&[
            call("c6", "write_file", json!({"path": "c.txt", "content": "c"})),
            exit_plan("c7"),
        ]),
        Reply::text("Done."),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    // Strict denies every Ask, so only the approved-plan window can let b.txt through.
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--plan",
        "--approve-plan",
        "--permission-mode",
        "strict",
        "--output-format",
        "stream-json",
        "write b",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    let lines = json_lines(&out.stdout);
    let result = lines.last().unwrap();
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["result"], "Done.");
    assert!(!work.join("a.txt").exists(), "planning follows the posture");
    assert_eq!(
        work.read("b.txt"),
        "b",
        "the window allowed the approved edit"
    );
    assert!(
        !work.join("c.txt").exists(),
        "the window closed with the list"
    );
    let requests = server.wait_for_requests(6);
    let approved = result_for(&requests[2].body, "c2");
    assert!(approved.contains("approved the plan"), "{approved}");
    let outside = result_for(&requests[5].body, "c7");
    assert!(outside.contains("not in plan mode"), "{outside}");
    let writes: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["type"] == "permission" && l["tool"] == "write_file")
        .map(|l| {
            (
                l["subject"].as_str().unwrap_or(""),
                l["resolution"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        writes,
        [
            ("a.txt", "strict"),
            ("b.txt", "plan_window"),
            ("c.txt", "strict")
        ],
        "{}",
        out.stdout
    );
    let plans: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "plan")
        .map(|l| l["outcome"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(plans, ["approved"]);
    let modes: Vec<bool> = lines
        .iter()
        .filter(|l| l["type"] == "plan_mode")
        .map(|l| l["planning"].as_bool().unwrap())
        .collect();
    assert_eq!(modes, [true, false], "{}", out.stdout);
}

fn example() -> &'static str {
    env!("CARGO_BIN_EXE_reasonix-plugin-example")
}

/// The reference server as `local`, with `extra` lines in its `[[plugins]]` entry and
/// `agent` lines in `[agent]`.
fn with_example(home: &Dir, server: &FakeOpenAI, agent: &str, extra: &str) {
    let plugin = format!(
        "[agent]\n{agent}\n\n[[plugins]]\nname = \"local\"\ncommand = {}\n{extra}\n",
        serde_json::to_string(example()).unwrap()
    );
    use_fake_provider(home, &server.base_url(), &plugin);
}

#[test]
fn an_mcp_writer_is_blocked_while_planning_and_allowed_after_approval() {
    let echo = || json!({"text": "hi"});
    let server = FakeOpenAI::start(vec![
        calls(&[call("c1", "mcp__local__echo", echo())]),
        calls(&[exit_plan("c2")]),
        calls(&[call("c3", "mcp__local__echo", echo())]),
        Reply::text("Echoed."),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    // Even yolo does not release a plan-mode block.
    with_example(&home, &server, "", "");
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--plan",
        "--approve-plan",
        "--permission-mode",
        "yolo",
        "echo hi",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(4);
    let blocked = result_for(&requests[1].body, "c1");
    assert!(
        blocked.starts_with("error: blocked while planning: `mcp__local__echo`")
            && blocked.contains("after the plan is approved"),
        "{blocked}"
    );
    assert_eq!(result_for(&requests[3].body, "c3"), "hi");
}

#[test]
fn only_a_trusted_mcp_reader_runs_while_planning() {
    let cases = [
        ("", "", false),
        ("", "trusted_read_only_tools = [\"wordcount\"]", true),
        (
            "plan_mode_allowed_tools = [\"mcp__local__wordcount\"]",
            "",
            true,
        ),
        ("", "trusted_read_only_tools = [\"echo\"]", false),
    ];
    for (agent, extra, runs) in cases {
        let server = FakeOpenAI::start(vec![
            calls(&[call(
                "c1",
                "mcp__local__wordcount",
                json!({"text": "one two"}),
            )]),
            calls(&[exit_plan("c2")]),
        ]);
        let home = Dir::new();
        let work = Dir::new();
        with_example(&home, &server, agent, extra);
        let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
            "run",
            "--plan",
            "--output-format",
            "json",
            "count",
        ]));
        assert_eq!(out.code, 0, "{agent} {extra}: {out:?}");
        assert!(!out.stderr.contains("not supported"), "{out:?}");
        let requests = server.wait_for_requests(2);
        let result = result_for(&requests[1].body, "c1");
        if runs {
            assert_eq!(result, "2 words", "{agent} {extra}");
        } else {
            assert!(
                result.contains("blocked while planning") && result.contains("has not trusted"),
                "{agent} {extra}: {result}"
            );
        }
    }
}

#[test]
fn auto_plan_enters_plan_mode_for_a_complex_task_and_not_for_a_typo() {
    let server = FakeOpenAI::start(vec![calls(&[exit_plan("c1")]), Reply::text("Fixed.")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "[agent]\nauto_plan = true\n");
    let start = |prompt: &str| {
        run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
            "run",
            "--output-format",
            "stream-json",
            prompt,
        ]))
    };
    let out = start("refactor the session module across the codebase");
    assert_eq!(out.code, 0, "{out:?}");
    let lines = json_lines(&out.stdout);
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "plan_mode" && l["planning"] == true),
        "{}",
        out.stdout
    );
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "notice" && l["message"].as_str().unwrap().contains("auto-plan")),
        "{}",
        out.stdout
    );
    assert_eq!(lines.last().unwrap()["subtype"], "plan");
    let out = start("fix the typo in README");
    assert_eq!(out.code, 0, "{out:?}");
    let lines = json_lines(&out.stdout);
    assert!(
        !lines.iter().any(|l| l["type"] == "plan_mode"),
        "{}",
        out.stdout
    );
    assert_eq!(lines.last().unwrap()["subtype"], "success");
    let requests = server.wait_for_requests(2);
    assert!(user_message(&requests[0].body).contains("<plan-mode>"));
    assert_eq!(user_message(&requests[1].body), "fix the typo in README");
}

#[test]
fn chat_plan_and_bare_plan_start_the_chat_in_plan_mode() {
    for args in [&["chat", "--plan"][..], &["--plan"][..]] {
        let server = FakeOpenAI::start(vec![Reply::text("Looking first.")]);
        let home = Dir::new();
        let work = Dir::new();
        use_fake_provider(&home, &server.base_url(), "");
        let out = crate::util::run_with_stdin(
            reasonix(&home, work.path())
                .args(args)
                .env("FAKE_API_KEY", "k"),
            "rename foo\n",
        );
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
        let requests = server.wait_for_requests(1);
        let user = user_message(&requests[0].body);
        assert!(
            user.starts_with("rename foo") && user.ends_with("</plan-mode>"),
            "{args:?}: {user}"
        );
    }
}

#[test]
fn run_plan_prints_the_plan_in_text_and_print_formats() {
    for flag in ["--output-format=text", "-p"] {
        let server = FakeOpenAI::start(vec![calls(&[exit_plan("c1")])]);
        let home = Dir::new();
        let work = Dir::new();
        use_fake_provider(&home, &server.base_url(), "");
        let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
            "run",
            "--plan",
            flag,
            "rename foo",
        ]));
        assert_eq!(out.code, 0, "{flag}: {out:?}");
        assert_eq!(out.stdout, format!("{PLAN}\n"), "{flag}: {out:?}");
        if flag != "-p" {
            assert!(out.stderr.contains("plan mode: on"), "{out:?}");
            assert!(out.stderr.contains("plan proposed"), "{out:?}");
        }
    }
}

#[test]
fn complete_step_is_refused_while_planning() {
    let server = FakeOpenAI::start(vec![
        calls(&[call(
            "c1",
            "complete_step",
            json!({"id": "1", "evidence": "done"}),
        )]),
        calls(&[exit_plan("c2")]),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "--plan", "plan it"]));
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(2);
    let refused = result_for(&requests[1].body, "c1");
    assert!(
        refused.contains("refused while planning") && refused.contains("exit_plan_mode"),
        "{refused}"
    );
}
