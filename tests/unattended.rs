//! Issue 35 in the chat: the loop guard ends a turn with the same message `run` gives, a
//! silent request shows the waiting line beside the working indicator, and an interruption
//! before any answer does not claim a partial answer was kept. (`reasonix run`'s side is in
//! `tests/run.rs`.)

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::pty::Pty;
use crate::util::{reasonix, use_fake_provider, Dir};

fn chat(home: &Dir, work: &Dir) -> Pty {
    let mut cmd = reasonix(home, work.path());
    cmd.arg("chat")
        .env("FAKE_API_KEY", "k")
        .env("REASONIX_WAIT_NOTICE_MS", "50");
    let mut pty = Pty::spawn(cmd, 140, 40);
    pty.wait_text("fake-model · ask");
    pty
}

#[test]
fn a_looping_model_in_the_chat_ends_the_turn_with_the_loop_message_and_the_chat_goes_on() {
    let server = FakeOpenAI::start_with(|requests| {
        let last = &requests[requests.len() - 1].body["messages"];
        let asked_again = last
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
            .is_some_and(|m| m["content"] == "and now?");
        if asked_again || requests.len() > 30 {
            return Reply::text("something else");
        }
        Reply::tool_calls(&[
            ("c1", "read_file", r#"{"path":"notes.txt"}"#),
            ("c2", "grep", r#"{"pattern":"todo"}"#),
        ])
    });
    let (home, work) = (Dir::new(), Dir::new());
    work.write("notes.txt", "todo: nothing\n");
    use_fake_provider(&home, &server.base_url(), "");
    let mut pty = chat(&home, &work);
    pty.send("use two tools\r");
    pty.wait_text("repeated the same tool calls");
    assert_eq!(server.requests().len(), 3, "{}", pty.screen());
    pty.send("and now?\r");
    pty.wait_text("something else");
    pty.send("\x04");
    assert!(pty.wait_exit().success());
}

#[test]
fn a_silent_request_shows_the_waiting_line_in_the_chat_and_esc_claims_no_partial_answer() {
    let (stalled, release) = Reply::stall();
    let server = FakeOpenAI::start(vec![stalled, Reply::text("back")]);
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(&home, &server.base_url(), "");
    let mut pty = chat(&home, &work);
    pty.send("hi\r");
    pty.wait_text("waiting for the model: ");
    assert!(
        pty.screen().contains("nothing received yet; idle limit "),
        "{}",
        pty.screen()
    );
    pty.send("\x1b");
    pty.wait_text("⎿ interrupted");
    assert!(
        !pty.screen().contains("partial answer"),
        "nothing streamed, nothing kept: {}",
        pty.screen()
    );
    release.release();
    pty.send("again\r");
    pty.wait_text("back");
    pty.send("\x04");
    assert!(pty.wait_exit().success());
}
