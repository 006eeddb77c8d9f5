//! The task list at work, end to end through `reasonix run` against the fake server: a
//! two-level todo carried out with `complete_step` (and its stream-json `todo` events), the
//! progress lease (a looping model is nudged once, then paused with exit code 5; a model
//! doing new work is never paused), and the one-time migration that removes the retired
//! `[agent] max_steps` keys from the user's config.

use serde_json::{json, Value};

use crate::context::{common_prefix, prompt_text};
use crate::util::fake_openai::{FakeOpenAI, RecordedRequest, Reply};
use crate::util::{reasonix, run, use_fake_provider, Dir, Run};

fn stream_json(home: &Dir, work: &Dir, prompt: &str) -> (Run, Vec<Value>) {
    let out =
        run(reasonix(home, work.path()).args(["run", "--output-format", "stream-json", prompt]));
    let events = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{out:?}")))
        .collect();
    (out, events)
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// Each item of a `todo` event as `id:level:status`.
fn states(event: &Value) -> Vec<String> {
    event["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            format!(
                "{}:{}:{}",
                i["id"].as_str().unwrap(),
                i["level"],
                i["status"].as_str().unwrap()
            )
        })
        .collect()
}

fn last_message(request: &RecordedRequest) -> &Value {
    request.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .expect("a last message")
}

const NUDGE_MARK: &str = "no progress";

fn is_nudge(message: &Value) -> bool {
    message["role"] == "user"
        && message["content"]
            .as_str()
            .is_some_and(|c| c.to_lowercase().contains(NUDGE_MARK))
}

#[test]
fn complete_step_walks_a_two_level_list_and_streams_todo_events() {
    let plan = json!({"todos": [
        {"id": "build", "content": "Build the feature", "status": "pending"},
        {"id": "code", "content": "Write the code", "status": "in_progress", "level": 1},
        {"id": "test", "content": "Test the code", "status": "pending", "level": 1},
        {"id": "ship", "content": "Ship it", "status": "pending", "level": 0},
    ]})
    .to_string();
    let step = |id: &str| json!({"id": id, "evidence": format!("{id} is done")}).to_string();
    let server = FakeOpenAI::start(vec![
        // A sub-step without a phase above it is refused, and nothing changes.
        Reply::tool_calls(&[(
            "c0",
            "todo_write",
            r#"{"todos":[{"content":"orphan","status":"in_progress","level":1}]}"#,
        )]),
        Reply::tool_calls(&[("c1", "todo_write", &plan)]),
        // Not the step in progress: refused, naming the one that is.
        Reply::tool_calls(&[("c2", "complete_step", &step("test"))]),
        Reply::tool_calls(&[("c3", "complete_step", &step("code"))]),
        Reply::tool_calls(&[("c4", "complete_step", &step("test"))]),
        Reply::tool_calls(&[("c5", "complete_step", &step("build"))]),
        Reply::tool_calls(&[("c6", "complete_step", &step("ship"))]),
        Reply::text("Shipped."),
    ]);
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(&home, &server.base_url(), "");
    let (out, events) = stream_json(&home, &work, "build and ship");
    assert_eq!(out.code, 0, "{out:?}");
    let results: Vec<(String, bool)> = of_type(&events, "tool_result")
        .iter()
        .map(|e| {
            (
                e["content"].as_str().unwrap().to_string(),
                e["is_error"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(results.len(), 7, "{results:#?}");
    assert!(
        results[0].1 && results[0].0.contains("todos[0]"),
        "{results:#?}"
    );
    assert!(results[0].0.contains("no phase"), "{results:#?}");
    assert!(!results[1].1, "{results:#?}");
    assert!(
        results[1].0.contains("\n  [>] Write the code"),
        "{}",
        results[1].0
    );
    assert!(
        results[2].1 && results[2].0.contains("`code`"),
        "{results:#?}"
    );
    assert!(
        results[3].0.ends_with("Next: Test the code"),
        "{}",
        results[3].0
    );
    assert!(
        results[4].0.ends_with("Next: Build the feature"),
        "{}",
        results[4].0
    );
    assert!(results[5].0.ends_with("Next: Ship it"), "{}", results[5].0);
    assert!(
        results[6].0.ends_with("All steps are complete."),
        "{}",
        results[6].0
    );
    assert!(
        results.iter().skip(3).all(|(_, error)| !error),
        "{results:#?}"
    );

    // One event per round that changed the list, each the whole list with its levels.
    let todos: Vec<Vec<String>> = of_type(&events, "todo").into_iter().map(states).collect();
    assert_eq!(
        todos,
        vec![
            vec![
                "build:0:pending",
                "code:1:in_progress",
                "test:1:pending",
                "ship:0:pending"
            ],
            vec![
                "build:0:pending",
                "code:1:completed",
                "test:1:in_progress",
                "ship:0:pending"
            ],
            vec![
                "build:0:in_progress",
                "code:1:completed",
                "test:1:completed",
                "ship:0:pending"
            ],
            vec![
                "build:0:completed",
                "code:1:completed",
                "test:1:completed",
                "ship:0:in_progress"
            ],
            vec![
                "build:0:completed",
                "code:1:completed",
                "test:1:completed",
                "ship:0:completed"
            ],
        ]
    );
    // Each comes after the round's tool results, before the next request's output.
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let first_todo = kinds.iter().position(|k| *k == "todo").unwrap();
    assert_eq!(kinds[first_todo - 1], "tool_result", "{kinds:?}");
}

/// Files the looping models below read in turn: a cycle longer than the loop guard's window
/// (`agent::progress::LOOP_WINDOW`), so each round repeats an earlier call, which the lease
/// counts, without repeating one of the last few rounds, which the guard would stop first.
const CYCLED: [&str; 4] = ["a.txt", "b.txt", "c.txt", "d.txt"];

fn write_cycled(work: &Dir) {
    for name in CYCLED {
        work.write(name, &format!("the same text every time in {name}\n"));
    }
}

fn cycled_read(n: usize) -> String {
    json!({ "path": CYCLED[n % CYCLED.len()] }).to_string()
}

/// The first round: the task list, and every cycled file read once (the round's progress).
fn first_round(todo: &str) -> Reply {
    let reads: Vec<String> = CYCLED
        .iter()
        .map(|name| json!({ "path": name }).to_string())
        .collect();
    let mut calls = vec![("t1", "todo_write", todo)];
    for (id, args) in ["r1a", "r1b", "r1c", "r1d"].into_iter().zip(&reads) {
        calls.push((id, "read_file", args));
    }
    Reply::tool_calls(&calls)
}

#[test]
fn a_looping_model_is_nudged_once_then_paused_with_exit_code_5() {
    let todo = r#"{"todos":[{"content":"Fix the bug","status":"in_progress"}]}"#;
    let server = FakeOpenAI::start_with(move |requests| {
        let n = requests.len();
        if n == 1 {
            first_round(todo)
        } else if n > 40 {
            // Far past the pause: a host without a lease would loop for ever.
            Reply::text("gave up")
        } else {
            Reply::tool_calls(&[(&format!("r{n}"), "read_file", &cycled_read(n))])
        }
    });
    let (home, work) = (Dir::new(), Dir::new());
    write_cycled(&work);
    use_fake_provider(&home, &server.base_url(), "");
    let (out, events) = stream_json(&home, &work, "fix the bug");
    assert_eq!(out.code, 5, "{out:?}");
    let result = events.last().expect("a result event");
    assert_eq!(result["subtype"], "error_no_progress", "{result}");
    assert_eq!(result["is_error"], true);

    // Round 1 made the list and read the files for the first time (progress). Rounds 2..=9
    // repeat a read: eight rounds without progress, so request 10 carries the nudge.
    // Rounds 10..=17 make sixteen, and the run pauses without another request.
    let requests = server.requests();
    assert_eq!(requests.len(), 17, "{out:?}");
    let nudged: Vec<usize> = requests
        .iter()
        .enumerate()
        .filter(|(_, r)| r.body["messages"].as_array().unwrap().iter().any(is_nudge))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(nudged, vec![10], "only request 10 carries the nudge");
    let nudge = last_message(&requests[9]);
    assert!(is_nudge(nudge), "{nudge}");
    assert_eq!(last_message(&requests[10])["role"], "tool");

    // The nudge sits outside the cache-stable prefix: request 11 repeats every byte of
    // request 10 before it.
    let (ten, eleven) = (&requests[9].body, &requests[10].body);
    let mut without = ten.clone();
    without["messages"].as_array_mut().unwrap().pop();
    let stable = prompt_text(&without);
    let stable = &stable[..stable.len() - 1]; // all but the closing `]`
    let shared = common_prefix(&prompt_text(ten), &prompt_text(eleven));
    assert!(
        prompt_text(eleven).starts_with(stable) && shared >= stable.len(),
        "request 11 does not start with request 10's bytes before the nudge"
    );

    // Every call got its result (the fake server checks pairing on every request), and the
    // pause is explained.
    assert_eq!(of_type(&events, "tool_result").len(), 5 + 16);
    let notices: Vec<&str> = of_type(&events, "notice")
        .iter()
        .map(|n| n["message"].as_str().unwrap())
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("paused") && n.contains("16")),
        "{notices:?}"
    );
    let session = crate::util::session_files(&home);
    let (_, messages) = crate::util::read_session(session.last().expect("a session"));
    assert!(
        !messages.iter().any(is_nudge),
        "the nudge is not stored in the session"
    );
}

#[test]
fn a_model_doing_new_work_is_never_paused() {
    let todo = r#"{"todos":[{"content":"Read everything","status":"in_progress"}]}"#;
    let rounds = 24;
    let server = FakeOpenAI::start_with(move |requests| {
        let n = requests.len();
        if n == 1 {
            Reply::tool_calls(&[("t1", "todo_write", todo)])
        } else if n <= rounds {
            let args = json!({"path": format!("f{n}.txt")}).to_string();
            Reply::tool_calls(&[(&format!("r{n}"), "read_file", &args)])
        } else {
            Reply::text("Read them all.")
        }
    });
    let (home, work) = (Dir::new(), Dir::new());
    for n in 2..=rounds {
        work.write(&format!("f{n}.txt"), &format!("file {n}\n"));
    }
    use_fake_provider(&home, &server.base_url(), "");
    let (out, events) = stream_json(&home, &work, "read the files");
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(events.last().unwrap()["subtype"], "success");
    let requests = server.requests();
    assert_eq!(requests.len(), rounds + 1);
    assert!(
        !requests
            .iter()
            .any(|r| r.body["messages"].as_array().unwrap().iter().any(is_nudge)),
        "a nudge was sent"
    );
}

#[test]
fn retired_step_keys_are_removed_from_the_user_config_once() {
    let server = FakeOpenAI::start(vec![Reply::text("one"), Reply::text("two")]);
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(
        &home,
        &server.base_url(),
        "# my settings\nplanner_max_steps = 4\n[agent]\nmax_steps = 50 # old cap\nplanner_max_steps = 10\ntemperature = 0.25 # keep me",
    );
    // A project file is repository content: its retired keys are ignored, never rewritten.
    let project = "[agent]\nmax_steps = 7\n";
    work.write("reasonix.toml", project);
    let config = home.join(".reasonix/config.toml");

    let first = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert_eq!(first.code, 0, "{first:?}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(!text.contains("max_steps"), "{text}");
    assert!(
        text.starts_with("default_model = \"fake\"\n# my settings\n[agent]\n"),
        "{text}"
    );
    assert!(text.contains("temperature = 0.25 # keep me"), "{text}");
    assert!(text.contains("[[providers]]"), "{text}");
    let notices: Vec<&str> = first
        .stderr
        .lines()
        .filter(|l| l.contains("max_steps"))
        .collect();
    assert_eq!(notices.len(), 1, "{first:?}");
    let notice = notices[0];
    assert!(notice.contains(&config.display().to_string()), "{notice}");
    for key in [
        "agent.max_steps",
        "agent.planner_max_steps",
        "planner_max_steps",
    ] {
        assert!(notice.contains(&format!("`{key}`")), "{notice}");
    }
    assert_eq!(work.read("reasonix.toml"), project);

    let second = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert_eq!(second.code, 0, "{second:?}");
    assert!(!second.stderr.contains("max_steps"), "{second:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);
}

#[test]
fn the_text_format_prints_the_list_on_stderr_when_it_changes() {
    let plan = r#"{"todos":[{"content":"Phase","status":"pending"},{"content":"Done part","status":"completed","level":1},{"content":"Next part","status":"in_progress","level":1}]}"#;
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("t1", "todo_write", plan)]),
        Reply::tool_calls(&[("l1", "ls", r#"{"path":"."}"#)]),
        Reply::text("ok"),
    ]);
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, work.path()).args(["run", "plan it"]));
    assert_eq!(out.code, 0, "{out:?}");
    let list = "todo: 1 of 3 done\n  [ ] Phase\n    [x] Done part\n    [>] Next part\n";
    assert_eq!(out.stderr.matches(list).count(), 1, "{out:?}");
}

#[test]
fn a_looping_model_in_the_chat_is_paused_with_the_reason_and_the_chat_goes_on() {
    let todo = r#"{"todos":[{"content":"Fix the bug","status":"in_progress"}]}"#;
    let server = FakeOpenAI::start_with(move |requests| {
        let n = requests.len();
        let last_user = requests[n - 1].body["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "user").cloned())
            .unwrap_or_default();
        if last_user["content"]
            .as_str()
            .is_some_and(|c| c.contains("try another way"))
        {
            Reply::text("trying another way")
        } else if n == 1 {
            first_round(todo)
        } else if n > 40 {
            Reply::text("gave up")
        } else {
            Reply::tool_calls(&[(&format!("r{n}"), "read_file", &cycled_read(n))])
        }
    });
    let (home, work) = (Dir::new(), Dir::new());
    write_cycled(&work);
    use_fake_provider(&home, &server.base_url(), "");
    let mut cmd = crate::util::reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = crate::util::pty::Pty::spawn(cmd, 120, 40);
    pty.wait_text("fake-model · ask");
    pty.send("fix the bug\r");
    pty.wait_text("paused: 16 rounds");
    pty.wait_text("Ask anything");
    assert_eq!(server.requests().len(), 17);
    // The chat is still usable and the conversation, with all its work, continues.
    pty.send("try another way\r");
    pty.wait_text("trying another way");
    let requests = server.wait_for_requests(18);
    let messages = requests[17].body["messages"].as_array().unwrap();
    assert!(messages.iter().filter(|m| m["role"] == "tool").count() >= 17);
    pty.send("\x04");
    assert!(pty.wait_exit().success());
}
