//! Collaboration in the chat end to end (the real binary in a pseudo-terminal against the fake
//! model server): the `ask` choice card and its free-text overlay, the todo panel above the
//! input, plan mode's status and toggles; and `ask` headless, where the answer is an
//! assumption the event stream labels as such.

use serde_json::Value;

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::pty::Pty;
use crate::util::{reasonix, run, use_fake_provider, Dir};

const READY: &str = "fake-model · ask";

fn setup(replies: Vec<Reply>) -> (FakeOpenAI, Dir, Dir) {
    let server = FakeOpenAI::start(replies);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    (server, home, work)
}

fn chat(home: &Dir, work: &Dir) -> Pty {
    let mut cmd = reasonix(home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, 100, 30);
    pty.wait_text(READY);
    pty
}

fn wait_idle(pty: &mut Pty) {
    pty.wait_text("Ask anything");
}

fn wait_gone(pty: &mut Pty, text: &str) {
    let gone = text.to_string();
    pty.wait_for(&format!("{text:?} gone from the screen"), move |vt| {
        !vt.screen().contains(&gone)
    });
}

/// Whether the composer's frame (a full-width rule) is on screen.
fn has_composer(screen: &str) -> bool {
    screen
        .lines()
        .any(|l| l.chars().count() > 50 && l.chars().all(|c| c == '─'))
}

/// The content of the tool result with `id` in request `n` (1-based).
fn tool_result(server: &FakeOpenAI, n: usize, id: &str) -> String {
    let requests = server.wait_for_requests(n);
    requests[n - 1].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no result for {id} in request {n}"))
        .to_string()
}

const ASK: &str = r#"{"question":"Which database should I use?","options":["Postgres","SQLite"],"allow_free_text":true}"#;

fn ask_session() -> (FakeOpenAI, Dir, Dir, Pty) {
    let (server, home, work) = setup(vec![
        Reply::tool_calls(&[("q1", "ask", ASK)]),
        Reply::text("Noted, going ahead."),
    ]);
    let mut pty = chat(&home, &work);
    pty.send("set up storage\r");
    pty.wait_text("╭─ The model asks");
    (server, home, work, pty)
}

#[test]
fn the_ask_card_hides_the_composer_and_a_number_key_answers() {
    let (server, _home, _work, mut pty) = ask_session();
    let screen = pty.screen();
    assert!(screen.contains("1. Postgres"), "{screen}");
    assert!(screen.contains("3. Type an answer…"), "{screen}");
    assert!(
        !has_composer(&screen),
        "the composer is hidden by the card:\n{screen}"
    );
    pty.send("2");
    pty.wait_text("Noted, going ahead.");
    wait_idle(&mut pty);
    assert_eq!(tool_result(&server, 2, "q1"), "user answered: SQLite");
    pty.send("\x04");
    assert!(pty.wait_exit().success());
}

#[test]
fn free_text_keeps_the_composer_with_the_question_above_it() {
    let (server, _home, _work, mut pty) = ask_session();
    pty.send("\x1b[B\x1b[B\r");
    wait_gone(&mut pty, "1. Postgres");
    let screen = pty.screen();
    assert!(has_composer(&screen), "{screen}");
    assert!(
        screen.contains("type your answer · enter to send · esc back to the choices"),
        "{screen}"
    );
    assert!(!screen.contains("1. Postgres"), "{screen}");
    pty.send("MariaDB 11");
    pty.wait_text("› MariaDB 11");
    pty.send("\r");
    pty.wait_text("Noted, going ahead.");
    wait_idle(&mut pty);
    assert_eq!(tool_result(&server, 2, "q1"), "user answered: MariaDB 11");
}

#[test]
fn esc_on_the_card_tells_the_model_the_user_dismissed_it() {
    let (server, _home, _work, mut pty) = ask_session();
    pty.send("\x1b");
    pty.wait_text("Noted, going ahead.");
    wait_idle(&mut pty);
    let result = tool_result(&server, 2, "q1");
    assert!(result.starts_with("user dismissed"), "{result}");
}

#[test]
fn headless_ask_is_an_assumption_never_a_user_decision() {
    let (server, home, work) = setup(vec![
        Reply::tool_calls(&[("q1", "ask", ASK)]),
        Reply::text("Assuming SQLite."),
    ]);
    let out = run(reasonix(&home, work.path())
        .args(["run", "--output-format", "stream-json", "set up storage"])
        .env("FAKE_API_KEY", "k"));
    assert_eq!(out.code, 0, "{out:?}");
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("stream-json line"))
        .collect();
    let ask = events
        .iter()
        .find(|e| e["type"] == "ask")
        .unwrap_or_else(|| panic!("no ask event: {}", out.stdout));
    assert_eq!(ask["source"], "assumption");
    assert_eq!(ask["question"], "Which database should I use?");
    assert_eq!(ask["options"], serde_json::json!(["Postgres", "SQLite"]));
    assert!(ask["answer"].is_null());
    let result = tool_result(&server, 2, "q1");
    assert!(result.starts_with("no user: assumption"), "{result}");
    assert!(result.contains("state"), "{result}");

    // Text output says so on stderr.
    let (_server, home, work) = setup(vec![
        Reply::tool_calls(&[("q1", "ask", ASK)]),
        Reply::text("Assuming SQLite."),
    ]);
    let out = run(reasonix(&home, work.path())
        .args(["run", "set up storage"])
        .env("FAKE_API_KEY", "k"));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("ask: no user to answer \"Which database should I use?\"; the model assumes"),
        "{out:?}"
    );
}

#[test]
fn ask_arguments_are_validated() {
    let (server, home, work) = setup(vec![
        Reply::tool_calls(&[(
            "q1",
            "ask",
            r#"{"question":"Which?","options":[],"allow_free_text":false}"#,
        )]),
        Reply::text("ok"),
    ]);
    let out = run(reasonix(&home, work.path())
        .args(["run", "go"])
        .env("FAKE_API_KEY", "k"));
    assert_eq!(out.code, 0, "{out:?}");
    let result = tool_result(&server, 2, "q1");
    assert!(result.contains("at least one option"), "{result}");
}

#[test]
fn the_todo_panel_updates_in_place_and_ctrl_t_toggles_it() {
    let todos = r#"{"todos":[{"content":"Read the code","status":"completed"},{"content":"Write the fix","status":"in_progress","activeForm":"Writing the fix"},{"content":"Run the tests","status":"pending"}]}"#;
    let (_server, home, work) = setup(vec![
        Reply::tool_calls(&[("t1", "todo_write", todos)]),
        Reply::text("Working on it."),
    ]);
    let mut pty = chat(&home, &work);
    pty.send("fix the bug\r");
    pty.wait_text("Working on it.");
    wait_idle(&mut pty);
    pty.wait_text("◼ Writing the fix");
    let screen = pty.screen();
    assert!(screen.contains("✔ Read the code"), "{screen}");
    assert!(screen.contains("◻ Run the tests"), "{screen}");
    assert!(screen.contains("1/3"), "{screen}");
    pty.send("\x14");
    wait_gone(&mut pty, "◻ Run the tests");
    assert!(
        !pty.vt.history().contains("Tasks 1/3"),
        "the panel is redrawn in place, never committed to the transcript"
    );
    pty.send("\x14");
    pty.wait_text("◻ Run the tests");
}

#[test]
fn slash_plan_and_shift_tab_show_plan_in_the_status_line() {
    let (_server, home, work) = setup(Vec::new());
    let mut pty = chat(&home, &work);
    pty.send("/plan\r");
    pty.wait_text("fake-model · ask · plan");
    pty.send("/plan\r");
    pty.wait_for("plan mode left", |vt| {
        vt.screen().contains("fake-model · ask ·") && !vt.screen().contains("· plan")
    });
    // Shift-Tab: ask → auto → yolo → plan (posture kept) → ask.
    pty.send("\x1b[Z");
    pty.wait_text("fake-model · auto");
    pty.send("\x1b[Z");
    pty.wait_text("fake-model · yolo");
    pty.send("\x1b[Z");
    pty.wait_text("fake-model · yolo · plan");
    pty.send("\x1b[Z");
    pty.wait_for("back to ask, not planning", |vt| {
        vt.screen().contains("fake-model · ask ·") && !vt.screen().contains("· plan")
    });
}

const PLAN: &str = "## Plan\n\n1. Write **b.txt** with the greeting\n2. Check it";

fn plan_call(id: &str) -> (String, String, String) {
    (
        id.into(),
        "exit_plan_mode".into(),
        serde_json::json!({ "plan": PLAN }).to_string(),
    )
}

fn replies(calls: &[(String, String, String)]) -> Reply {
    let borrowed: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    Reply::tool_calls(&borrowed)
}

fn call(id: &str, name: &str, args: Value) -> (String, String, String) {
    (id.into(), name.into(), args.to_string())
}

#[test]
fn a_plan_session_reviews_the_plan_then_runs_its_writes_without_prompts() {
    let todo =
        |status: &str| serde_json::json!({"todos": [{"content": "write b", "status": status}]});
    let (server, home, work) = setup(vec![
        replies(&[call(
            "c1",
            "read_file",
            serde_json::json!({"path": "a.txt"}),
        )]),
        replies(&[plan_call("c2")]),
        replies(&[
            call("c3", "todo_write", todo("in_progress")),
            call(
                "c4",
                "write_file",
                serde_json::json!({"path": "b.txt", "content": "hi\n"}),
            ),
        ]),
        replies(&[call("c5", "todo_write", todo("completed"))]),
        replies(&[call(
            "c6",
            "write_file",
            serde_json::json!({"path": "c.txt", "content": "later\n"}),
        )]),
        Reply::text("Done."),
    ]);
    work.write("a.txt", "greeting: hi\n");
    let mut pty = chat(&home, &work);
    pty.send("/plan\r");
    pty.wait_text("fake-model · ask · plan");
    pty.send("write the greeting to b.txt\r");
    pty.wait_text("Plan ready for review");
    let screen = pty.screen();
    assert!(
        screen.contains("│ 1. Write b.txt with the greeting"),
        "{screen}"
    );
    assert!(screen.contains("❯ 1. Approve and start (y)"), "{screen}");
    assert!(
        !has_composer(&screen),
        "the review hides the composer:\n{screen}"
    );
    assert!(
        screen.contains("· plan"),
        "still planning while the review is open"
    );
    pty.send("y");
    // The window lets b.txt through under posture ask; the list completes and closes it, so
    // the next write asks again.
    pty.wait_text("Allow write_file?");
    let screen = pty.screen();
    assert!(
        screen.contains("c.txt"),
        "the only prompt is for the later write:\n{screen}"
    );
    assert_eq!(work.read("b.txt"), "hi\n");
    assert!(
        !screen.contains("· plan"),
        "plan mode ended with the approval:\n{screen}"
    );
    pty.send("n");
    pty.wait_text("Done.");
    wait_idle(&mut pty);
    assert!(!work.join("c.txt").exists());
    let result = tool_result(&server, 3, "c2");
    assert!(result.to_lowercase().contains("approved"), "{result}");
}

#[test]
fn keep_planning_sends_the_typed_feedback() {
    let (server, home, work) = setup(vec![
        replies(&[plan_call("c1")]),
        Reply::text("Revising the plan."),
    ]);
    let mut pty = chat(&home, &work);
    pty.send("\x1b[Z\x1b[Z\x1b[Z");
    pty.wait_text("fake-model · yolo · plan");
    pty.send("write the greeting\r");
    // Even under yolo the plan waits for the person.
    pty.wait_text("Plan ready for review");
    pty.send("n");
    pty.wait_text("Keep planning");
    wait_gone(&mut pty, "Plan ready for review");
    assert!(has_composer(&pty.screen()), "{}", pty.screen());
    pty.send("smaller steps please");
    pty.wait_text("› smaller steps please");
    pty.send("\r");
    pty.wait_text("Revising the plan.");
    wait_idle(&mut pty);
    let result = tool_result(&server, 2, "c1");
    assert!(result.contains("smaller steps please"), "{result}");
    assert!(pty.screen().contains("yolo · plan"), "{}", pty.screen());
}
