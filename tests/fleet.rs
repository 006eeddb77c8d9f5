//! `fleet`, `parallel_tasks`, `write_paths` and `read_only_skill` through the real binary
//! against the fake model: every task's answer comes back, the children's events reach
//! stream-json live and tagged with the call that started them, the session scheduler's caps
//! hold (shown by when the fake server saw each child's request against when the test let
//! the earlier ones finish), a writer's `write_paths` fence its file tools and its shell, and
//! an interrupt ends every child.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::fake_openai::{FakeOpenAI, RecordedRequest, Release, Reply};
use crate::util::{reasonix, run, use_fake_provider, Dir};

/// How long the test watches for a child request that must not come yet.
const ABSENCE_WINDOW: Duration = Duration::from_millis(300);

type Held = Arc<Mutex<Vec<(String, Release)>>>;

/// The task prompt of a child's request (its first user message), or `None` for the
/// parent, whose first message is "go".
fn child_prompt(request: &RecordedRequest) -> Option<String> {
    let first = request.body["messages"][1]["content"].as_str()?;
    (first != "go").then(|| first.to_string())
}

fn child_prompts(requests: &[RecordedRequest]) -> Vec<String> {
    requests.iter().filter_map(child_prompt).collect()
}

/// A server whose parent calls `tool` with `arguments` once and then answers "parent done";
/// each child answers "answer to PROMPT", held until the test releases it when `gated`.
fn server(tool: &'static str, arguments: &'static str, gated: bool) -> (FakeOpenAI, Held) {
    let held: Held = Arc::default();
    let keep = Arc::clone(&held);
    let server = FakeOpenAI::start_with(move |requests| {
        let request = requests.last().expect("a request");
        let Some(prompt) = child_prompt(request) else {
            let answered = request.body["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
            return if answered {
                Reply::text("parent done")
            } else {
                Reply::tool_calls(&[("f1", tool, arguments)])
            };
        };
        let reply = Reply::text(&format!("answer to {prompt}"));
        if !gated {
            return reply;
        }
        let (reply, release) = Reply::gated(reply);
        keep.lock().unwrap().push((prompt, release));
        reply
    });
    (server, held)
}

/// Lets the held child with `prompt` answer; returns when it was let go.
fn release(held: &Held, prompt: &str) -> Instant {
    let mut held = held.lock().unwrap();
    let at = held.iter().position(|(p, _)| p == prompt).expect("held");
    let (_, release) = held.remove(at);
    let now = Instant::now();
    release.release();
    now
}

fn setup(server: &FakeOpenAI, extra: &str) -> (Dir, Dir) {
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), extra);
    (home, work)
}

fn stream_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn a_fleet_returns_every_answer_and_streams_its_childrens_events_live() {
    let (server, _) = server(
        "fleet",
        r#"{"tasks":[{"prompt":"alpha"},{"prompt":"beta","read_only":true},{"prompt":"gamma","write_paths":["src"]}]}"#,
        false,
    );
    let (home, work) = setup(&server, "");
    std::fs::create_dir_all(work.join("src")).unwrap();
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--permission-mode",
        "yolo",
        "--output-format",
        "stream-json",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let mut prompts = child_prompts(&requests);
    prompts.sort();
    assert_eq!(prompts, ["alpha", "beta", "gamma"]);
    // The read-only task's child got no writer; the others did.
    for request in &requests[1..4] {
        let tools = request.body["tools"].to_string();
        let reader = child_prompt(request).as_deref() == Some("beta");
        assert_eq!(!tools.contains("\"write_file\""), reader, "{tools}");
    }
    let result = requests[4].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.starts_with("3 of 3 subagents finished"), "{result}");
    let order: Vec<usize> = ["answer to alpha", "answer to beta", "answer to gamma"]
        .iter()
        .map(|a| result.find(a).expect(a))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{result}");

    let lines = stream_lines(&out.stdout);
    let position = |pred: &dyn Fn(&Value) -> bool| lines.iter().position(pred);
    let result_at = position(&|l| l["type"] == "tool_result" && l["id"] == "f1").unwrap();
    for task in 0..3 {
        let tagged = |l: &Value| l["parent_tool_use_id"] == "f1" && l["task"] == task;
        let running =
            position(&|l| tagged(l) && l["type"] == "subagent_status" && l["state"] == "running")
                .unwrap();
        let text = position(&|l| tagged(l) && l["type"] == "text").expect("child text");
        let usage = position(&|l| tagged(l) && l["type"] == "usage").expect("child usage");
        let done = position(&|l| tagged(l) && l["type"] == "subagent").unwrap();
        // Live: the child's events come before the call's result, in the child's order.
        assert!(running < text && text < usage && usage < done && done < result_at);
        assert_eq!(lines[done]["ok"], true);
        // No prices are known for the fake model: no cost, not a cost of 0 (issue 37.4).
        assert!(lines[done]["cost_usd"].is_null(), "{}", lines[done]);
    }
    // Usage rolls up: the fake reports 100 prompt tokens for each of the five replies.
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["usage"]["input_tokens"], 500, "{last}");
    assert!(last["total_cost_usd"].is_null(), "{last}");
}

#[test]
fn parallel_tasks_never_runs_more_children_than_the_concurrency_cap() {
    let (server, held) = server(
        "parallel_tasks",
        r#"{"tasks":[{"prompt":"one"},{"prompt":"two"},{"prompt":"three"},{"prompt":"four"}]}"#,
        true,
    );
    let (home, work) = setup(&server, "[agent]\nmax_subagent_concurrency = 2\n");
    let child = crate::util::spawn_piped(
        reasonix(&home, work.path())
            .env("FAKE_API_KEY", "k")
            .args(["run", "go"]),
    );
    // Two children start at once (the cap is reached, so they run in parallel)...
    let first_two = child_prompts(&server.wait_for_requests(3));
    assert_eq!(first_two.len(), 2);
    // ...and a third does not start while both are held.
    assert!(
        !server.request_arrives_within(4, ABSENCE_WINDOW),
        "{:?}",
        child_prompts(&server.requests())
    );
    let mut released = Vec::new();
    let mut running = first_two;
    for n in 4..=5 {
        let done = running.remove(0);
        released.push(release(&held, &done));
        let requests = server.wait_for_requests(n);
        let next = child_prompt(&requests[n - 1]).unwrap();
        // It started only after a place was freed, and no other started with it.
        assert!(requests[n - 1].arrived > *released.last().unwrap());
        assert!(!server.request_arrives_within(n + 1, ABSENCE_WINDOW));
        running.push(next);
    }
    for prompt in running {
        release(&held, &prompt);
    }
    let out = crate::util::Run::from(child.wait_with_output().unwrap());
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let mut all = child_prompts(&server.requests());
    all.sort();
    assert_eq!(all, ["four", "one", "three", "two"]);
}

#[test]
fn writers_whose_paths_overlap_never_run_together() {
    let (server, held) = server(
        "fleet",
        r#"{"tasks":[{"prompt":"src writer","write_paths":["src"]},{"prompt":"lib writer","write_paths":["src/lib"]},{"prompt":"docs writer","write_paths":["docs"]},{"prompt":"reader","read_only":true}]}"#,
        true,
    );
    let (home, work) = setup(&server, "");
    for dir in ["src/lib", "docs"] {
        std::fs::create_dir_all(work.join(dir)).unwrap();
    }
    let child =
        crate::util::spawn_piped(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
            "run",
            "--permission-mode",
            "yolo",
            "go",
        ]));
    let started = child_prompts(&server.wait_for_requests(4));
    assert!(started.contains(&"docs writer".to_string()), "{started:?}");
    assert!(started.contains(&"reader".to_string()), "{started:?}");
    let first = started
        .iter()
        .find(|p| p.as_str() == "src writer" || p.as_str() == "lib writer")
        .unwrap()
        .clone();
    assert!(!server.request_arrives_within(5, ABSENCE_WINDOW));
    release(&held, "docs writer");
    release(&held, "reader");
    // Freed places do not let the overlapping writer in...
    assert!(!server.request_arrives_within(5, ABSENCE_WINDOW));
    // ...only the end of the writer it overlaps does.
    let freed = release(&held, &first);
    let requests = server.wait_for_requests(5);
    let second = child_prompt(&requests[4]).unwrap();
    assert_ne!(second, first);
    assert!(requests[4].arrived > freed);
    release(&held, &second);
    let out = crate::util::Run::from(child.wait_with_output().unwrap());
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn write_paths_fence_the_childs_file_tools_and_shell() {
    // Under each jail: a fence that holds under bwrap but not under Landlock is a hole.
    for backend in crate::sandbox::jails() {
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[(
                "t1",
                "task",
                r#"{"prompt":"fix src","write_paths":["src"]}"#,
            )]),
            Reply::tool_calls(&[
                ("w1", "write_file", r#"{"path":"src/a.txt","content":"in"}"#),
                (
                    "w2",
                    "write_file",
                    r#"{"path":"docs/b.txt","content":"out"}"#,
                ),
                (
                    "b1",
                    "bash",
                    r#"{"command":"echo in > src/c.txt; echo out > docs/d.txt; echo exit=$?"}"#,
                ),
            ]),
            Reply::text("child done"),
            Reply::tool_calls(&[(
                "t2",
                "task",
                r#"{"prompt":"escape","write_paths":["../elsewhere"]}"#,
            )]),
            Reply::text("parent done"),
        ]);
        let (home, work) = setup(&server, &crate::escapes::sandbox_table(backend));
        for dir in ["src", "docs"] {
            std::fs::create_dir_all(work.join(dir)).unwrap();
        }
        let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
            "run",
            "--permission-mode",
            "yolo",
            "go",
        ]));
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        assert_eq!(work.read("src/a.txt"), "in");
        assert_eq!(work.read("src/c.txt"), "in\n");
        assert!(!work.join("docs/b.txt").exists());
        assert!(!work.join("docs/d.txt").exists());
        let requests = server.requests();
        let results: Vec<String> = requests[2].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect();
        assert!(
            results[1].contains("outside this subagent's write_paths"),
            "{results:?}"
        );
        assert!(
            results[2].contains("exit=1") || results[2].contains("exit=2"),
            "{results:?}"
        );
        // A fence outside the workspace is refused before any child starts.
        let refused = requests[4].body["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(refused.contains("write_paths"), "{refused}");
        assert_eq!(requests.len(), 5);
    }
}

#[test]
fn an_interrupt_ends_every_child_of_a_fleet_and_keeps_their_sessions() {
    let (server, _held) = server(
        "parallel_tasks",
        r#"{"tasks":[{"prompt":"slow one"},{"prompt":"slow two"}]}"#,
        true,
    );
    let (home, work) = setup(&server, "");
    let mut child = crate::util::spawn_piped(
        reasonix(&home, work.path())
            .env("FAKE_API_KEY", "k")
            .args(["run", "go"]),
    );
    server.wait_for_requests(3);
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let sessions = crate::util::session_files(&home);
    let children = crate::subagents::child_sessions(&home.join(".reasonix"));
    assert_eq!(children.len(), 2, "{children:?}");
    for file in children.iter().chain(&sessions).filter(|f| f.is_file()) {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            serde_json::from_str::<Value>(line).expect("a whole JSON line");
        }
    }
}

#[test]
fn read_only_skill_runs_an_inline_skill_in_a_read_only_child() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[(
            "s1",
            "read_only_skill",
            r#"{"name":"audit","args":"the parser"}"#,
        )]),
        Reply::text("audit findings"),
        Reply::text("parent done"),
    ]);
    let (home, work) = setup(&server, "");
    work.write(
        ".reasonix/skills/audit/SKILL.md",
        "---\nname: audit\ndescription: Audits a module\n---\nAudit $ARGUMENTS for unsafe code.\n",
    );
    let trusted = run(reasonix(&home, work.path()).arg("trust"));
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--permission-mode",
        "yolo",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = server.requests();
    let task = requests[1].body["messages"][1]["content"].as_str().unwrap();
    assert!(task.contains("Audit the parser for unsafe code."), "{task}");
    let tools = requests[1].body["tools"].to_string();
    assert!(!tools.contains("\"write_file\""), "{tools}");
    assert!(requests[2].body.to_string().contains("audit findings"));
}

#[test]
fn the_chat_shows_one_live_line_per_child_under_its_call() {
    let (server, held) = server(
        "parallel_tasks",
        r#"{"tasks":[{"prompt":"survey the parser"},{"prompt":"survey the lexer"}]}"#,
        true,
    );
    let (home, work) = setup(&server, "");
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = crate::util::pty::Pty::spawn(cmd, 100, 30);
    pty.wait_text("fake-model · ask");
    pty.send("go\r");
    server.wait_for_requests(3);
    pty.wait_for("both children running", |vt| {
        let screen = vt.screen();
        screen.contains("◆ 1 survey the parser") && screen.contains("◆ 2 survey the lexer")
    });
    let screen = pty.screen();
    assert!(screen.contains("0 tools · 0 tokens"), "{screen}");
    release(&held, "survey the parser");
    pty.wait_text("✓ 1 survey the parser");
    // The other is still running, under the same call.
    assert!(pty.screen().contains("◆ 2 survey the lexer"));
    release(&held, "survey the lexer");
    pty.wait_text("parent done");
    let screen = pty.screen();
    assert!(screen.contains("✓ 2 survey the lexer"), "{screen}");
    assert!(screen.contains("110 tokens"), "{screen}");
    // The children's tokens count in the status line: the parent's two replies and theirs.
    pty.wait_text("↑400 ↓40");
}

/// The arguments of a `parallel_tasks` or `fleet` call with `count` tasks tagged `tag`.
fn many_tasks(tag: &str, count: usize) -> String {
    let tasks: Vec<Value> = (0..count)
        .map(|i| serde_json::json!({ "prompt": format!("{tag} job {i}") }))
        .collect();
    serde_json::json!({ "tasks": tasks }).to_string()
}

#[test]
fn one_reply_with_four_parallel_tasks_and_a_fleet_does_not_start_320_children() {
    let calls: Vec<(String, &str, String)> = (0..4)
        .map(|i| {
            (
                format!("p{i}"),
                "parallel_tasks",
                many_tasks(&format!("p{i}"), 64),
            )
        })
        .chain([("f".to_string(), "fleet", many_tasks("f", 64))])
        .collect();
    let server = FakeOpenAI::start_with(move |requests| {
        let request = requests.last().expect("a request");
        if let Some(prompt) = child_prompt(request) {
            return Reply::text(&format!("answer to {prompt}"));
        }
        let answered = request.body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        if answered {
            return Reply::text("parent done");
        }
        let calls: Vec<(&str, &str, &str)> = calls
            .iter()
            .map(|(id, tool, args)| (id.as_str(), *tool, args.as_str()))
            .collect();
        Reply::tool_calls(&calls)
    });
    let (home, work) = setup(&server, "");
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--permission-mode",
        "yolo",
        "go",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.requests();
    let children = child_prompts(&requests).len();
    assert_eq!(
        children, 16,
        "children started by one reply (the per-round budget is 16)"
    );
    // The parent's second request carries the five results; the refusals say why and name
    // the key that raises the budget.
    let last = requests
        .iter()
        .rev()
        .find(|r| child_prompt(r).is_none())
        .expect("the parent's last request");
    let results: Vec<String> = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(results.len(), 5);
    assert!(
        results.iter().all(|r| !r.contains("invalid arguments")),
        "{results:?}"
    );
    assert!(
        results
            .iter()
            .any(|r| r.contains("agent.max_subagents_per_round = 16")),
        "{results:?}"
    );
}

#[test]
fn the_run_budget_of_children_holds_across_rounds() {
    let server = FakeOpenAI::start_with(move |requests| {
        let request = requests.last().expect("a request");
        if let Some(prompt) = child_prompt(request) {
            return Reply::text(&format!("answer to {prompt}"));
        }
        let rounds = request.body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        if rounds >= 3 {
            return Reply::text("parent done");
        }
        let args = many_tasks(&format!("r{rounds}"), 4);
        Reply::tool_calls(&[(&format!("c{rounds}"), "parallel_tasks", &args)])
    });
    let (home, work) = setup(
        &server,
        "[agent]\nmax_subagents_per_round = 4\nmax_subagents_per_run = 10\n",
    );
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--permission-mode",
        "yolo",
        "go",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.requests();
    assert_eq!(
        child_prompts(&requests).len(),
        10,
        "three rounds of 4, a run budget of 10: {out:?} {}",
        requests.last().unwrap().body
    );
    let last = requests.last().unwrap().body.to_string();
    assert!(last.contains("agent.max_subagents_per_run = 10"), "{last}");
}
