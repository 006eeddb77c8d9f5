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
    pty.wait_text("Which database should I use?");
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
    assert!(screen.contains("Which database should I use?"), "{screen}");
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
