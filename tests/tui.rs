//! The interactive chat end to end: the real binary in a pseudo-terminal against the fake
//! model server. Tests type keys, interpret the ANSI output with a small VT parser and
//! assert on what a user would see, on the requests the model received, on files, and on the
//! terminal mode after exit.

use serde_json::Value;

use crate::util::fake_openai::{sse_text, FakeOpenAI, Reply};
use crate::util::pty::Pty;
use crate::util::{piped_chat, read_session, reasonix, run, session_files, use_fake_provider, Dir};

/// The status line once the chat is ready.
const READY: &str = "fake-model · ask";
/// Bash runs unconfined in these tests so they do not depend on the host's sandbox.
const NO_JAIL: &str = "[sandbox]\nbash = \"off\"\n";

fn setup(replies: Vec<Reply>, extra: &str) -> (FakeOpenAI, Dir, Dir) {
    let server = FakeOpenAI::start(replies);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), extra);
    (server, home, work)
}

fn chat(home: &Dir, work: &Dir, args: &[&str]) -> Pty {
    chat_sized(home, work, args, 100, 30)
}

fn chat_sized(home: &Dir, work: &Dir, args: &[&str], cols: u16, rows: u16) -> Pty {
    let mut cmd = reasonix(home, work.path());
    cmd.arg("chat").args(args).env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, cols, rows);
    pty.wait_text(READY);
    pty
}

/// Waits until the chat is idle again: the composer placeholder is back.
fn wait_idle(pty: &mut Pty) {
    pty.wait_text("Ask anything");
}

fn messages(server: &FakeOpenAI, n: usize) -> Vec<Value> {
    let requests = server.wait_for_requests(n);
    requests[n - 1].body["messages"]
        .as_array()
        .expect("messages")
        .clone()
}

/// The content of the last user message the model received in request `n` (1-based).
fn last_user_message(server: &FakeOpenAI, n: usize) -> String {
    messages(server, n)
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .expect("a user message")
        .to_string()
}

fn assert_cooked(pty: &Pty) {
    let flags = pty.local_flags();
    assert!(
        flags & libc::ICANON != 0 && flags & libc::ECHO != 0 && flags & libc::ISIG != 0,
        "terminal left in raw mode: c_lflag = {flags:#o}"
    );
}

fn exit_with_ctrl_d(pty: &mut Pty) {
    pty.send("\x04");
    let status = pty.wait_exit();
    assert!(status.success(), "{status:?}\n{}", pty.screen());
    assert_cooked(pty);
}

#[test]
fn chat_streams_markdown_and_restores_the_terminal_on_ctrl_d() {
    let (server, home, work) = setup(
        vec![Reply::text(
            "Hello **world**, here is `code`.\n\n- one\n- two\n\n| k | v |\n|---|---|\n| a | 1 |",
        )],
        "",
    );
    let mut pty = chat(&home, &work, &[]);
    pty.send("hi 日本語");
    pty.wait_text("› hi 日本語");
    pty.send("\r");
    pty.wait_text("Hello world, here is code.");
    pty.wait_text("• two");
    pty.wait_text("a │ 1");
    assert_eq!(last_user_message(&server, 1), "hi 日本語");
    assert!(pty.raw_text().contains("\x1b[1mworld"), "bold is styled");
    assert!(
        pty.raw_text().contains("\x1b[?2026h"),
        "frames are synchronized"
    );
    exit_with_ctrl_d(&mut pty);
    assert!(pty
        .vt
        .history()
        .contains("Resume this conversation with: reasonix chat --resume"));
    let raw = pty.raw_text();
    let last_paste_off = raw
        .rfind("\x1b[?2004l")
        .expect("bracketed paste turned off");
    assert!(raw.rfind("\x1b[?2004h").unwrap() < last_paste_off);
}

#[test]
fn approving_an_edit_shows_the_diff_and_changes_the_file() {
    let (server, home, work) = setup(
        vec![
            Reply::tool_calls(&[(
                "c1",
                "edit_file",
                r#"{"path":"a.txt","old_string":"two","new_string":"2"}"#,
            )]),
            Reply::text("Edited the file."),
        ],
        "",
    );
    work.write("a.txt", "one\ntwo\nthree\n");
    let mut pty = chat(&home, &work, &[]);
    pty.send("please edit\r");
    pty.wait_text("Allow edit_file?");
    let screen = pty.screen();
    assert!(
        screen.contains("2 - two") && screen.contains("2 + 2"),
        "{screen}"
    );
    assert!(
        !screen.contains("Ask anything"),
        "the modal hides the composer:\n{screen}"
    );
    assert_eq!(
        work.read("a.txt"),
        "one\ntwo\nthree\n",
        "nothing runs before approval"
    );
    pty.send("y");
    pty.wait_text("Edited the file.");
    assert_eq!(work.read("a.txt"), "one\n2\nthree\n");
    let screen = pty.screen();
    assert!(screen.contains("● edit_file  a.txt"), "{screen}");
    assert!(screen.contains("⎿ +1 -1"), "{screen}");
    let tool = messages(&server, 2)
        .into_iter()
        .find(|m| m["role"] == "tool")
        .expect("tool result");
    assert!(
        !tool["content"].as_str().unwrap().starts_with("error"),
        "{tool}"
    );
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn always_allow_saves_the_rule_and_stops_asking() {
    let (server, home, work) = setup(
        vec![
            Reply::tool_calls(&[("c1", "bash", r#"{"command":"echo first-run"}"#)]),
            Reply::tool_calls(&[("c2", "bash", r#"{"command":"echo first-run"}"#)]),
            Reply::text("Both ran."),
        ],
        NO_JAIL,
    );
    work.write(
        "reasonix.toml",
        "# project settings\n[ui]\ncursor_shape = \"block\"\n",
    );
    // Saved rules live in ./reasonix.toml, which only a trusted workspace may loosen with.
    let trusted = run(reasonix(&home, work.path()).arg("trust"));
    assert_eq!(trusted.code, 0, "{trusted:?}");
    let mut pty = chat(&home, &work, &[]);
    pty.send("run it twice\r");
    pty.wait_text("Allow bash?");
    assert!(pty.screen().contains("$ echo first-run"));
    pty.send("p");
    pty.wait_text("Both ran.");
    let saved = work.read("reasonix.toml");
    assert!(
        saved.starts_with("# project settings\n[ui]\ncursor_shape = \"block\"\n"),
        "{saved}"
    );
    assert!(
        saved.contains("[permissions]\nallow = [\"Bash(echo first-run)\"]"),
        "{saved}"
    );
    let results: Vec<String> = messages(&server, 3)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(results.len(), 2);
    assert!(
        results.iter().all(|r| r.contains("first-run")),
        "{results:?}"
    );
    assert!(pty
        .vt
        .history()
        .contains("always allowing Bash(echo first-run)"));
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn an_untrusted_workspace_says_what_it_ignored_and_saves_no_always_rule() {
    let (server, home, work) = setup(
        vec![
            Reply::tool_calls(&[("c1", "bash", r#"{"command":"echo first-run"}"#)]),
            Reply::text("Ran."),
        ],
        NO_JAIL,
    );
    let project = "[permissions]\nallow = [\"Bash(echo first-run)\"]\n";
    work.write("reasonix.toml", project);
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, 100, 30);
    pty.wait_text("Trust this workspace?");
    pty.send("n");
    pty.wait_text(READY);
    let screen = pty.screen();
    assert!(
        screen.contains("⚠ this workspace is not trusted")
            && screen.contains("permissions.allow; run 'reasonix trust'"),
        "{screen}"
    );
    pty.send("run it\r");
    pty.wait_text("Allow bash?");
    pty.send("p");
    pty.wait_text("Ran.");
    assert_eq!(work.read("reasonix.toml"), project, "nothing was saved");
    let history = pty.vt.history();
    assert!(
        history.contains("could not save rule `Bash(echo first-run)`"),
        "{history}"
    );
    let results: Vec<String> = messages(&server, 2)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(results[0].contains("first-run"), "{results:?}");
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn trusting_at_chat_start_applies_the_project_provider_and_remembers() {
    let (server, home, work) = setup(Vec::new(), "");
    let theirs = FakeOpenAI::start(vec![Reply::text("Hello from the project's model.")]);
    work.write(
        "reasonix.toml",
        &format!(
            "default_model = \"theirs\"\n[[providers]]\nname = \"theirs\"\nbase_url = \"{}\"\nmodel = \"their-model\"\n",
            theirs.base_url()
        ),
    );
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, 100, 30);
    pty.wait_text("Trust this workspace?");
    let screen = pty.screen();
    assert!(
        screen.contains("default_model, [[providers]] \"theirs\""),
        "{screen}"
    );
    pty.send("a");
    pty.wait_text("their-model · ask");
    pty.send("hi\r");
    pty.wait_text("Hello from the project's model.");
    assert_eq!(theirs.requests().len(), 1);
    assert!(
        server.requests().is_empty(),
        "the user's server was not asked"
    );
    exit_with_ctrl_d(&mut pty);
    let listed = run(reasonix(&home, work.path()).args(["trust", "--list"]));
    assert_eq!(listed.stdout.trim(), work.path().display().to_string());
}

#[test]
fn esc_in_the_approval_denies_and_the_model_is_told() {
    let (server, home, work) = setup(
        vec![
            Reply::tool_calls(&[("c1", "write_file", r#"{"path":"x.txt","content":"data"}"#)]),
            Reply::text("Understood, not writing."),
        ],
        "",
    );
    let mut pty = chat(&home, &work, &[]);
    pty.send("write x\r");
    pty.wait_text("Allow write_file?");
    assert!(pty.screen().contains("1 + data"), "{}", pty.screen());
    pty.send("\x1b");
    pty.wait_text("Understood, not writing.");
    assert!(!work.join("x.txt").exists());
    let tool = messages(&server, 2)
        .into_iter()
        .find(|m| m["role"] == "tool")
        .expect("tool result");
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("the user declined"),
        "{tool}"
    );
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn esc_interrupts_a_streaming_turn_and_keeps_the_partial_answer() {
    let (held, _release) = Reply::hold(vec![sse_text("partial answer")]);
    let (server, home, work) = setup(vec![held, Reply::text("Continuing.")], "");
    let mut pty = chat(&home, &work, &[]);
    pty.send("tell me a story\r");
    pty.wait_text("partial answer");
    pty.wait_text("esc to interrupt");
    pty.send("\x1b");
    pty.wait_text("⎿ interrupted");
    wait_idle(&mut pty);
    let (_, saved) = read_session(&session_files(&home)[0]);
    let last = saved.last().expect("messages");
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["content"], "partial answer");
    pty.send("go on\r");
    pty.wait_text("Continuing.");
    let sent = last_user_message(&server, 2);
    assert!(
        sent.starts_with("[The user interrupted your previous reply.]") && sent.ends_with("go on"),
        "{sent}"
    );
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn messages_typed_during_a_turn_are_queued_and_sent_after_it() {
    let (stalled, release) = Reply::stall();
    let (server, home, work) = setup(vec![stalled, Reply::text("Second answer.")], "");
    let mut pty = chat(&home, &work, &[]);
    pty.send("first\r");
    server.wait_for_requests(1);
    pty.send("second\r");
    pty.wait_text("↳ queued: second");
    release.release();
    pty.wait_text("Second answer.");
    assert_eq!(last_user_message(&server, 2), "second");
    assert!(!pty.screen().contains("queued:"));
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn custom_command_with_an_at_file_reference() {
    let (server, home, work) = setup(vec![Reply::text("Reviewed.")], "");
    work.write(
        ".reasonix/commands/review.md",
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $ARGUMENTS carefully.\n",
    );
    work.write(".reasonix/commands/git/log.md", "Summarise the log.");
    work.write("notes.txt", "hello notes\n");
    let mut pty = chat(&home, &work, &[]);
    pty.send("/rev");
    pty.wait_text("❯ /review");
    assert!(
        pty.screen().contains("FILE Review a file"),
        "{}",
        pty.screen()
    );
    pty.send("\t@notes.txt\r");
    pty.wait_text("Reviewed.");
    assert!(
        pty.screen().contains("⎿ attached @notes.txt"),
        "{}",
        pty.screen()
    );
    assert_eq!(
        last_user_message(&server, 1),
        "<file path=\"notes.txt\">\nhello notes\n</file>\n\nReview @notes.txt carefully.\n"
    );
    pty.send("/git");
    pty.wait_text("❯ /git:log");
    exit_with_ctrl_d_after_clearing(&mut pty);
}

fn exit_with_ctrl_d_after_clearing(pty: &mut Pty) {
    pty.send("\x15");
    wait_idle(pty);
    exit_with_ctrl_d(pty);
}

#[test]
fn at_menu_walks_one_directory_at_a_time() {
    let (_server, home, work) = setup(vec![], "");
    work.write("src/main.rs", "fn main() {}\n");
    work.write("src/lib.rs", "");
    work.write("README.md", "");
    let mut pty = chat(&home, &work, &[]);
    pty.send("look at @sr");
    pty.wait_text("❯ src/");
    pty.send("\t");
    pty.wait_text("› look at @src/");
    pty.wait_for("the src listing", |vt| {
        let s = vt.screen();
        s.contains("lib.rs") && s.contains("main.rs")
    });
    pty.send("m\t");
    pty.wait_text("› look at @src/main.rs");
    pty.wait_for("the menu to close", |vt| !vt.screen().contains("❯ main.rs"));
    exit_with_ctrl_d_after_clearing(&mut pty);
}

#[test]
fn slash_help_runs_from_the_menu() {
    let (_server, home, work) = setup(vec![], "");
    let mut pty = chat(&home, &work, &[]);
    pty.send("/hel");
    pty.wait_text("❯ /help");
    pty.send("\r");
    pty.wait_text("Keys");
    let history = pty.vt.history();
    assert!(history.contains("/compact"), "{history}");
    assert!(history.contains("shift-tab"), "{history}");
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn paste_inserts_lines_without_sending() {
    let (server, home, work) = setup(vec![Reply::text("Got both lines.")], "");
    let mut pty = chat(&home, &work, &[]);
    pty.send("\x1b[200~line one\rline two\x1b[201~");
    pty.wait_text("  line two");
    assert!(pty.screen().contains("› line one"));
    assert!(server.requests().is_empty(), "a paste never sends");
    pty.send("\x1b\r");
    pty.send("three\r");
    pty.wait_text("Got both lines.");
    assert_eq!(last_user_message(&server, 1), "line one\nline two\nthree");
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn shell_command_goes_through_the_permission_gate() {
    let (server, home, work) = setup(vec![], NO_JAIL);
    let mut pty = chat(&home, &work, &[]);
    pty.send("!echo hello-from-bang\r");
    pty.wait_text("Allow bash?");
    pty.send("y");
    pty.wait_text("⎿ hello-from-bang");
    assert!(
        server.requests().is_empty(),
        "! commands never reach the model"
    );
    exit_with_ctrl_d(&mut pty);
}

/// The `!` command is judged as the bash tool is: a `Bash(...)` deny rule covers it even in
/// yolo, where nothing is asked.
#[test]
fn shell_command_is_covered_by_bash_deny_rules() {
    let config = format!("{NO_JAIL}\n[permissions]\ndeny = [\"Bash(touch:*)\"]\n");
    let (_server, home, work) = setup(vec![], &config);
    let mut pty = chat(&home, &work, &[]);
    pty.send("\x1b[Z\x1b[Z");
    pty.wait_text("fake-model · yolo");
    pty.send("!touch made-by-bang\r");
    pty.wait_text("blocked by rule `Bash(touch:*)`");
    assert!(!work.path().join("made-by-bang").exists());
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn shift_tab_cycles_the_posture_and_yolo_skips_prompts() {
    let (_server, home, work) = setup(vec![], NO_JAIL);
    let mut pty = chat(&home, &work, &[]);
    pty.send("\x1b[Z");
    pty.wait_text("fake-model · auto");
    pty.send("\x1b[Z");
    pty.wait_text("fake-model · yolo");
    pty.send("!echo no-prompt\r");
    pty.wait_text("⎿ no-prompt");
    // yolo → plan (the posture stays) → ask.
    pty.send("\x1b[Z");
    pty.wait_text("fake-model · yolo · plan");
    pty.send("\x1b[Z");
    pty.wait_text("fake-model · ask");
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn ctrl_c_twice_at_an_empty_prompt_exits() {
    let (_server, home, work) = setup(vec![], "");
    let mut pty = chat(&home, &work, &[]);
    pty.send("draft");
    pty.wait_text("› draft");
    pty.send("\x03");
    pty.wait_text("Ask anything");
    pty.send("\x03");
    pty.wait_text("press Ctrl-C again to exit");
    pty.send("\x03");
    let status = pty.wait_exit();
    assert!(status.success(), "{status:?}");
    assert_cooked(&pty);
}

#[test]
fn termination_signals_restore_the_terminal() {
    for signal in [libc::SIGTERM, libc::SIGHUP] {
        let (_server, home, work) = setup(vec![], "");
        let mut pty = chat(&home, &work, &[]);
        // SAFETY (test code): signalling the child we spawned.
        assert_eq!(unsafe { libc::kill(pty.pid(), signal) }, 0);
        let status = pty.wait_exit();
        assert_eq!(
            status.code(),
            Some(128 + signal),
            "signal {signal}: {status:?}"
        );
        assert_cooked(&pty);
    }
}

#[test]
fn an_outside_sigint_acts_like_ctrl_c() {
    let (_server, home, work) = setup(vec![], "");
    let mut pty = chat(&home, &work, &[]);
    // SAFETY (test code): signalling the child we spawned.
    assert_eq!(unsafe { libc::kill(pty.pid(), libc::SIGINT) }, 0);
    pty.wait_text("press Ctrl-C again to exit");
    assert_eq!(unsafe { libc::kill(pty.pid(), libc::SIGINT) }, 0);
    let status = pty.wait_exit();
    assert!(status.success(), "{status:?}");
    assert_cooked(&pty);
}

#[test]
fn resize_rewraps_the_composer() {
    let (_server, home, work) = setup(vec![], "");
    let mut pty = chat_sized(&home, &work, &[], 100, 20);
    let long = "word ".repeat(24);
    pty.send(long.trim_end());
    pty.wait_text("› word word");
    pty.resize(50, 20);
    let typed = long.trim_end().to_string();
    pty.wait_for("the composer rewrapped at 50 columns", move |vt| {
        let lines = vt.lines();
        let Some(first) = lines.iter().position(|l| l.starts_with("› word")) else {
            return false;
        };
        let rows = &lines[first..(first + 3).min(lines.len())];
        let joined: String = rows.iter().flat_map(|r| r.chars().skip(2)).collect();
        rows.iter().all(|r| r.chars().count() <= 49) && joined == typed
    });
    let screen = pty.screen();
    assert_eq!(screen.matches("fake-model · ask").count(), 1, "{screen}");
    exit_with_ctrl_d_after_clearing(&mut pty);
}

#[test]
fn piped_chat_runs_one_turn_per_line() {
    let (server, home, work) = setup(vec![Reply::text("First."), Reply::text("Second.")], "");
    work.write("notes.txt", "n\n");
    let out = piped_chat(
        &home,
        work.path(),
        &[],
        "one @notes.txt\n\ntwo\n/exit\nnever sent\n",
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "First.\nSecond.\n");
    assert_eq!(server.requests().len(), 2);
    assert!(last_user_message(&server, 1).starts_with("<file path=\"notes.txt\">"));
    assert_eq!(last_user_message(&server, 2), "two");
}

#[test]
fn model_and_effort_switch_between_turns() {
    let server = FakeOpenAI::start(vec![Reply::text("From the other model.")]);
    let home = Dir::new();
    let work = Dir::new();
    let other = format!(
        "[ui]\ncursor_shape = \"block\"\n\n[[providers]]\nname = \"other\"\nbase_url = \"{}\"\nmodel = \"other-model\"\napi_key_env = \"FAKE_API_KEY\"\n",
        server.base_url()
    );
    use_fake_provider(&home, &server.base_url(), &other);
    let mut pty = chat(&home, &work, &[]);
    assert!(
        pty.raw_text().contains("\x1b[2 q"),
        "[ui] cursor_shape = block"
    );
    pty.send("/model\r");
    pty.wait_text("● fake/fake-model");
    assert!(
        pty.screen().contains("  other/other-model"),
        "{}",
        pty.screen()
    );
    pty.send("/model other\r");
    pty.wait_text("other-model · ask");
    pty.send("/effort high\r");
    pty.wait_text("reasoning effort set to high");
    pty.send("/effort extreme\r");
    pty.wait_text("unknown effort `extreme`");
    pty.send("hello\r");
    pty.wait_text("From the other model.");
    let body = &server.wait_for_requests(1)[0].body;
    assert_eq!(body["model"], "other-model");
    assert_eq!(body["reasoning_effort"], "high");
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn new_resume_and_clear_manage_conversations() {
    let (server, home, work) = setup(
        vec![
            Reply::text("Noted the first topic."),
            Reply::text("Noted the second topic."),
            Reply::text("Back on the first topic."),
        ],
        "",
    );
    let mut pty = chat(&home, &work, &[]);
    pty.send("first topic\r");
    pty.wait_text("Noted the first topic.");
    wait_idle(&mut pty);
    pty.send("/new\r");
    pty.wait_text("new conversation");
    pty.send("second topic\r");
    pty.wait_text("Noted the second topic.");
    wait_idle(&mut pty);
    assert_eq!(
        messages(&server, 2).len(),
        2,
        "system + the second topic only"
    );
    pty.send("/resume\r");
    pty.wait_text("Resume a conversation");
    assert!(pty.screen().contains("first topic"), "{}", pty.screen());
    assert!(
        !pty.screen().contains("Ask anything"),
        "the picker hides the composer"
    );
    pty.send("\r");
    pty.wait_text("resumed conversation");
    pty.send("and more\r");
    pty.wait_text("Back on the first topic.");
    let sent: Vec<String> = messages(&server, 3)
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    assert!(sent.iter().any(|c| c == "first topic"), "{sent:?}");
    assert!(!sent.iter().any(|c| c == "second topic"), "{sent:?}");
    wait_idle(&mut pty);
    let before = session_files(&home).len();
    pty.send("/clear\r");
    pty.wait_text("Clear the conversation?");
    pty.send("y");
    pty.wait_text("conversation cleared");
    // The cleared conversation is gone; a fresh empty one took its place.
    assert_eq!(session_files(&home).len(), before);
    exit_with_ctrl_d(&mut pty);
    assert_eq!(
        session_files(&home).len(),
        before - 1,
        "the empty session is not kept"
    );
}

#[test]
fn ctrl_c_interrupts_a_waiting_turn_and_the_chat_goes_on() {
    let (stalled, _release) = Reply::stall();
    let (server, home, work) = setup(vec![stalled, Reply::text("Fine.")], "");
    let mut pty = chat(&home, &work, &[]);
    pty.send("slow\r");
    server.wait_for_requests(1);
    pty.wait_text("Working…");
    pty.send("\x03");
    pty.wait_text("⎿ interrupted");
    wait_idle(&mut pty);
    pty.send("again\r");
    pty.wait_text("Fine.");
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn info_commands_and_the_mcp_modal() {
    let (_server, home, work) = setup(vec![], "");
    let mut pty = chat(&home, &work, &[]);
    pty.send("/tools\r");
    pty.wait_text("read_file  read-only");
    pty.send("/status\r");
    pty.wait_text("permissions");
    assert!(pty.screen().contains("posture ask"), "{}", pty.screen());
    pty.send("/cost\r");
    pty.wait_text("0 prompt tokens");
    pty.send("/compact\r");
    pty.wait_text("nothing to compact yet");
    pty.send("/mcp\r");
    pty.wait_text("No MCP servers are connected.");
    assert!(
        !pty.screen().contains("Ask anything"),
        "modal hides the composer"
    );
    pty.send("\x1b");
    wait_idle(&mut pty);
    pty.send("/nonsense\r");
    pty.wait_text("unknown command /nonsense");
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn suspend_and_continue_keep_the_chat_usable() {
    let (_server, home, work) = setup(vec![], "");
    let mut pty = chat(&home, &work, &[]);
    // SAFETY (test code): signalling the child we spawned. Its process group has no shell
    // to stop it, so the stop is discarded and the chat comes straight back.
    assert_eq!(unsafe { libc::kill(pty.pid(), libc::SIGTSTP) }, 0);
    assert_eq!(unsafe { libc::kill(pty.pid(), libc::SIGCONT) }, 0);
    pty.send("still here");
    pty.wait_text("› still here");
    let flags = pty.local_flags();
    assert_eq!(flags & libc::ICANON, 0, "raw mode is back after a continue");
    exit_with_ctrl_d_after_clearing(&mut pty);
}

#[test]
fn a_long_streamed_paragraph_wraps_as_if_it_came_at_once() {
    use crate::util::fake_openai::{done, sse_finish, sse_reasoning, sse_usage};
    let long = "This paragraph streams in small pieces without a newline, so it outgrows the live area and is moved to scrollback row by row while it arrives. ".repeat(3);
    let mut events = vec![
        sse_reasoning("Let me think about "),
        sse_reasoning("it.\nStep two."),
    ];
    for chunk in long.as_bytes().chunks(7) {
        events.push(sse_text(std::str::from_utf8(chunk).unwrap()));
    }
    events.push(sse_text("\n\nDone."));
    events.push(sse_finish("stop"));
    events.push(sse_usage(1000, 50, 800));
    events.push(done());
    let (_server, home, work) = setup(vec![Reply::events(events)], "");
    let mut pty = chat_sized(&home, &work, &[], 80, 24);
    pty.send("go\r");
    pty.wait_text("Done.");
    wait_idle(&mut pty);
    let mut md = reasonix::term::markdown::Markdown::new(80);
    let mut expected = md.push(long.trim_end());
    expected.extend(md.finish());
    let expected: Vec<String> = expected.iter().map(|l| l.text()).collect();
    let history = pty.vt.history();
    assert!(history.contains(&expected.join("\n")), "{history}");
    assert_eq!(history.matches("Done.").count(), 1, "{history}");
    assert!(history.contains("✻ Thought for"), "{history}");
    assert!(history.contains("cache 80%"), "{history}");
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn commands_during_a_turn_never_block_the_ui() {
    let (stalled, release) = Reply::stall();
    let (server, home, work) = setup(vec![stalled], "");
    let mut pty = chat(&home, &work, &[]);
    pty.send("slow\r");
    server.wait_for_requests(1);
    pty.send("/status\r");
    pty.wait_text("the agent is busy with a turn");
    pty.send("/new\r");
    pty.wait_text("/new waits for the running turn");
    pty.send("/tools\r");
    pty.wait_text("read_file  read-only");
    release.release();
    wait_idle(&mut pty);
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn history_and_conversations_carry_over_to_the_next_chat() {
    let (server, home, work) = setup(vec![Reply::text("One."), Reply::text("Two.")], "");
    let mut pty = chat(&home, &work, &[]);
    pty.send("remember the number 7\r");
    pty.wait_text("One.");
    exit_with_ctrl_d(&mut pty);
    let mut pty = chat(&home, &work, &["--continue"]);
    pty.wait_text("continuing conversation");
    // The reprinted exchange shows the message once; the recalled one is the second.
    let recalled =
        |vt: &crate::util::vt::Vt| vt.screen().matches("› remember the number 7").count() == 2;
    assert!(!recalled(&pty.vt), "{}", pty.screen());
    pty.send("\x1b[A");
    pty.wait_for("the message recalled into the composer", recalled);
    pty.send("\x15what was it?\r");
    pty.wait_text("Two.");
    let sent: Vec<String> = messages(&server, 2)
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    assert_eq!(sent, vec!["remember the number 7", "what was it?"]);
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn slash_compact_folds_earlier_work_through_the_model() {
    let (server, home, work) = setup(
        vec![
            Reply::tool_calls(&[("c1", "ls", "{}")]),
            Reply::text("Listed the files."),
            Reply::text("Second answer."),
            Reply::text("Earlier: the user asked for a listing; ls ran."),
        ],
        "",
    );
    let mut pty = chat(&home, &work, &[]);
    pty.send("list the files\r");
    pty.wait_text("Listed the files.");
    wait_idle(&mut pty);
    pty.send("and now?\r");
    pty.wait_text("Second answer.");
    wait_idle(&mut pty);
    pty.send("/compact\r");
    pty.wait_text("context fold (manual)");
    let requests = server.wait_for_requests(4);
    let summary = &requests[3].body;
    assert!(
        summary.get("tools").is_none(),
        "the summary request has no tools: {summary}"
    );
    exit_with_ctrl_d(&mut pty);
    let (_, saved) = crate::util::read_session(crate::util::session_files(&home).last().unwrap());
    assert!(
        saved.iter().any(|m| m["content"]
            .as_str()
            .unwrap_or("")
            .contains("the user asked for a listing")),
        "the digest replaced the folded work: {saved:?}"
    );
}

/// The reference MCP server built with the crate.
fn example_server() -> &'static str {
    env!("CARGO_BIN_EXE_reasonix-plugin-example")
}

/// `[[plugins]]` declaring the reference server as `name`.
fn example_plugin(name: &str) -> String {
    format!(
        "[[plugins]]\nname = \"{name}\"\ncommand = {}\n",
        serde_json::to_string(example_server()).unwrap()
    )
}

/// Waits until the MCP servers have started: the status row is gone from a drawn screen.
fn wait_mcp_started(pty: &mut Pty) {
    pty.wait_for("the MCP servers to start", |vt| {
        let screen = vt.screen();
        screen.contains(READY) && !screen.contains("starting MCP servers")
    });
}

/// Processes descended from `pid` running the reference server.
fn example_children(pid: i32) -> usize {
    // `pid -> (ppid, comm)` for every process; a jailed server is a grandchild or deeper
    // (reasonix -> bwrap -> bwrap -> server), so descendants count, not just children.
    let mut procs = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may contain spaces, so split after the ')'.
        let Some((head, tail)) = stat.rsplit_once(')') else {
            continue;
        };
        let own = head
            .split_whitespace()
            .next()
            .and_then(|p| p.parse::<i32>().ok());
        let ppid = tail
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<i32>().ok());
        if let (Some(own), Some(ppid)) = (own, ppid) {
            procs.push((own, ppid, head.contains("reasonix-plugin")));
        }
    }
    let mut found = 0;
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for (own, _, is_example) in procs.iter().filter(|(_, ppid, _)| *ppid == parent) {
            found += usize::from(*is_example);
            frontier.push(*own);
        }
    }
    found
}

#[test]
fn mcp_servers_bring_tools_prompts_and_resources_to_the_chat() {
    let (server, home, work) = setup(
        vec![
            Reply::text("Reviewed."),
            Reply::text("Read it."),
            Reply::tool_calls(&[("c1", "mcp__docs__echo", r#"{"text":"ping-from-model"}"#)]),
            Reply::text("Echo done."),
        ],
        &example_plugin("docs"),
    );
    let mut pty = chat(&home, &work, &[]);
    wait_mcp_started(&mut pty);
    pty.send("/mcp\r");
    pty.wait_text("2 tools · 1 prompts · 1 resources");
    let screen = pty.screen();
    assert!(
        screen.contains("docs  connected"),
        "the server and its status:\n{screen}"
    );
    pty.send("\x1b");
    wait_idle(&mut pty);

    pty.send("/mcp__docs__re");
    pty.wait_text("❯ /mcp__docs__review");
    pty.send("\terror handling\r");
    pty.wait_text("Reviewed.");
    assert_eq!(
        last_user_message(&server, 1),
        "Review the current changes against doc://style-guide. Focus on error handling."
    );
    let tools: Vec<String> = server.requests()[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        tools.iter().any(|t| t == "mcp__docs__echo"),
        "the first turn already has the server's tools: {tools:?}"
    );

    pty.send("Summarise @docs:d");
    pty.wait_text("❯ docs:doc://style-guide");
    pty.send("\tbriefly\r");
    pty.wait_text("Read it.");
    assert!(
        pty.screen().contains("⎿ attached @docs:doc://style-guide"),
        "{}",
        pty.screen()
    );
    let sent = last_user_message(&server, 2);
    assert!(
        sent.starts_with("<resource ref=\"docs:doc://style-guide\">\n# Style guide\n"),
        "{sent}"
    );
    assert!(
        sent.ends_with("</resource>\n\nSummarise @docs:doc://style-guide briefly"),
        "{sent}"
    );

    pty.send("echo something\r");
    pty.wait_text("Echo done.");
    let result = messages(&server, 4)
        .into_iter()
        .find(|m| m["role"] == "tool")
        .expect("the tool result");
    assert_eq!(result["content"], "ping-from-model", "{result}");
    assert!(pty.screen().contains("mcp__docs__echo"), "{}", pty.screen());
    // The server's log line and progress report for that call reach the transcript.
    pty.wait_text("docs (info): calling echo");
    pty.wait_text("docs: 1/1 echo done");
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn a_project_mcp_server_asks_for_its_launch_grant_in_the_chat() {
    let (_server, home, work) = setup(vec![], "");
    work.write(
        ".mcp.json",
        &serde_json::json!({"mcpServers": {"proj": {"command": example_server()}}}).to_string(),
    );
    let mut pty = chat(&home, &work, &[]);
    pty.wait_text("Start MCP server proj?");
    let screen = pty.screen();
    assert!(
        screen.contains("declared in .mcp.json · stdio")
            && screen.contains("reasonix-plugin-example"),
        "{screen}"
    );
    assert!(
        !screen.contains("Ask anything"),
        "the modal hides the composer:\n{screen}"
    );
    assert_eq!(
        example_children(pty.pid()),
        0,
        "nothing starts before the grant"
    );
    pty.send("a");
    wait_mcp_started(&mut pty);
    assert_eq!(example_children(pty.pid()), 1, "the granted server runs");
    pty.send("/mcp\r");
    pty.wait_text("proj  connected");
    pty.send("\x1b");
    wait_idle(&mut pty);
    exit_with_ctrl_d(&mut pty);

    // "Always" stored the grant: a headless listing starts the server without asking.
    let out = crate::util::run(reasonix(&home, work.path()).args(["mcp", "list"]));
    assert_eq!(out.code, 0, "{out:?}");
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("proj"))
        .unwrap_or_default();
    assert!(row.contains("connected"), "{out:?}");
}

#[test]
fn piped_chat_uses_mcp_prompts_resources_and_needs_trust_for_project_servers() {
    let (server, home, work) = setup(vec![Reply::text("One."), Reply::text("Two.")], "");
    work.write(
        ".mcp.json",
        &serde_json::json!({"mcpServers": {"proj": {"command": example_server()}}}).to_string(),
    );
    let out = piped_chat(&home, work.path(), &[], "/exit\n");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("`proj` was not started") && out.stderr.contains("--trust-project-mcp"),
        "{out:?}"
    );

    let out = piped_chat(
        &home,
        work.path(),
        &["--trust-project-mcp"],
        "/mcp__proj__review naming\nsee @proj:doc://style-guide\n",
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "One.\nTwo.\n");
    assert_eq!(
        last_user_message(&server, 1),
        "Review the current changes against doc://style-guide. Focus on naming."
    );
    assert!(
        last_user_message(&server, 2)
            .starts_with("<resource ref=\"proj:doc://style-guide\">\n# Style guide\n"),
        "{}",
        last_user_message(&server, 2)
    );
}

#[test]
fn messages_wait_for_starting_mcp_servers() {
    // The server starts only once the test writes a line into the FIFO. It lives in the
    // workspace, the server's working directory, because a jailed server sees no other test
    // directory (bwrap gives it a private /tmp); so does a copy of the server binary.
    let script = "read line < release; exec ./reasonix-plugin-example".to_string();
    let plugin = format!(
        "[[plugins]]\nname = \"slow\"\ncommand = \"sh\"\nargs = [\"-c\", {}]\n",
        serde_json::to_string(&script).unwrap()
    );
    let (server, home, work) = setup(vec![Reply::text("Hello.")], &plugin);
    crate::util::copy_into(example_server(), work.path());
    let fifo = work.join("release");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let mut pty = chat(&home, &work, &[]);
    pty.wait_text("starting MCP servers");
    pty.send("hi\r");
    pty.wait_text("↳ queued: hi");
    assert!(server.requests().is_empty(), "nothing is sent yet");
    std::fs::write(&fifo, "go\n").expect("release the server");
    pty.wait_text("Hello.");
    let tools = server.requests()[0].body["tools"].to_string();
    assert!(tools.contains("mcp__slow__echo"), "{tools}");
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn a_crash_on_the_ui_thread_leaves_the_terminal_usable() {
    let (_server, home, work) = setup(vec![], "");
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat")
        .env("FAKE_API_KEY", "k")
        .env("REASONIX_FAILPOINTS", "ui-panic");
    let mut pty = Pty::spawn(cmd, 100, 30);
    pty.wait_text(READY);
    pty.send("/__panic\r");
    let status = pty.wait_exit();
    assert!(
        !status.success(),
        "a panic must not look like a clean exit: {status:?}"
    );
    assert_cooked(&pty);
    let raw = pty.raw_text();
    assert!(
        raw.contains("failpoint ui-panic"),
        "the panic message is shown: {raw}"
    );
}

#[test]
fn continuing_a_chat_reprints_the_last_exchanges() {
    let (_server, home, work) = setup(
        vec![
            Reply::text("Noted the old question."),
            Reply::tool_calls(&[("c1", "ls", r#"{"path":"src"}"#)]),
            Reply::text("The directory holds **notes** and a \x1b[31mred\x1b[0m file."),
        ],
        "",
    );
    let runs: [&[&str]; 2] = [
        &["run", "an old question"],
        &["run", "--continue", "what is in src?"],
    ];
    for args in runs {
        let out = run(reasonix(&home, work.path())
            .args(args)
            .env("FAKE_API_KEY", "k"));
        assert_eq!(out.code, 0, "{out:?}");
    }
    let mut pty = chat(&home, &work, &["-c"]);
    let screen = pty.screen();
    for shown in [
        "› an old question",
        "Noted the old question.",
        "› what is in src?",
        "ls  src",
        "The directory holds notes and a ^[[31mred^[[0m file.",
    ] {
        assert!(screen.contains(shown), "{shown:?} is not shown:\n{screen}");
    }
    assert!(
        screen.find("› an old question") < screen.find("› what is in src?"),
        "oldest first:\n{screen}"
    );
    assert!(
        !pty.raw_text().contains("\x1b[31mred"),
        "the escape sequence from the session reached the terminal"
    );
    exit_with_ctrl_d(&mut pty);
}

#[test]
fn the_resume_picker_lists_this_workspaces_conversations_newest_first() {
    let (_server, home, work) = setup(
        vec![Reply::text("A."), Reply::text("B."), Reply::text("C.")],
        "",
    );
    let elsewhere = Dir::new();
    let runs = [
        (work.path(), "older topic"),
        (elsewhere.path(), "another workspace"),
        (work.path(), "newer topic"),
    ];
    for (dir, prompt) in runs {
        let out = run(reasonix(&home, dir)
            .args(["run", prompt])
            .env("FAKE_API_KEY", "k"));
        assert_eq!(out.code, 0, "{out:?}");
    }
    let mut pty = chat(&home, &work, &[]);
    pty.send("/resume\r");
    pty.wait_text("Resume a conversation");
    let screen = pty.screen();
    let (newer, older) = (screen.find("newer topic"), screen.find("older topic"));
    assert!(
        newer.is_some() && older.is_some() && newer < older,
        "{screen}"
    );
    assert!(!screen.contains("another workspace"), "{screen}");
    pty.send("\x1b");
    wait_idle(&mut pty);
    exit_with_ctrl_d(&mut pty);
}
