//! `/rewind` end to end: the real chat in a pseudo-terminal against the fake model. Two turns
//! change files (one also runs a command); rewinding to before the second turn with "restore
//! files" puts the files back, lists the command as not restorable, appends a marker to the
//! session file, gives the turn's text back, and the next request repeats the old prefix.

use serde_json::Value;

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::pty::Pty;
use crate::util::{read_session, reasonix, run, session_files, use_fake_provider, Dir};

/// Bash runs unconfined here so the test does not depend on the host's sandbox.
const NO_JAIL: &str = "[sandbox]\nbash = \"off\"\n";

/// The chat in a pseudo-terminal, switched to yolo, after a first turn whose reply (the fake's
/// script) ends with "Wrote version one.".
pub fn chat_after_a_first_turn(home: &Dir, work: &Dir) -> Pty {
    let mut cmd = reasonix(home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, 100, 40);
    pty.wait_text("fake-model · ask");
    pty.send("\x1b[Z\x1b[Z");
    pty.wait_text("fake-model · yolo");
    pty.send("first task\r");
    pty.wait_text("Wrote version one.");
    pty.wait_text("Ask anything");
    pty
}

fn messages(server: &FakeOpenAI, n: usize) -> Vec<Value> {
    server.wait_for_requests(n)[n - 1].body["messages"]
        .as_array()
        .expect("messages")
        .clone()
}

#[test]
fn rewind_restores_files_and_the_conversation_continues_from_before_the_turn() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "write_file", r#"{"path":"a.txt","content":"v1\n"}"#)]),
        Reply::text("Wrote version one."),
        Reply::tool_calls(&[
            (
                "c2",
                "edit_file",
                r#"{"path":"a.txt","old_string":"v1","new_string":"v2"}"#,
            ),
            ("c3", "write_file", r#"{"path":"b.txt","content":"new\n"}"#),
            ("c4", "bash", r#"{"command":"echo hi > c.txt"}"#),
        ]),
        Reply::text("Turn two is done."),
        Reply::text("A fresh answer."),
        Reply::text("Resumed after the rewind."),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), NO_JAIL);
    let mut pty = chat_after_a_first_turn(&home, &work);
    pty.send("second task\r");
    pty.wait_text("Turn two is done.");
    pty.wait_text("Ask anything");
    assert_eq!(work.read("a.txt"), "v2\n");
    assert_eq!(work.read("b.txt"), "new\n");
    assert_eq!(work.read("c.txt"), "hi\n");
    let before_turn_two = messages(&server, 3);

    pty.send("/rewind\r");
    pty.wait_text("Rewind to before which turn?");
    let screen = pty.screen();
    let (second, first) = (
        screen.find("#2  second task"),
        screen.find("#1  first task"),
    );
    assert!(
        second.is_some() && first.is_some() && second < first,
        "newest first:\n{screen}"
    );
    assert!(
        !screen.contains("Ask anything"),
        "the modal hides the composer"
    );
    pty.send("\r");
    pty.wait_text("Rewind how?");
    let screen = pty.screen();
    for shown in [
        "Files restored:",
        "a.txt",
        "b.txt (removed: it did not exist)",
        "Not restorable (commands are not undone):",
        "echo hi > c.txt",
    ] {
        assert!(screen.contains(shown), "{shown:?} is not shown:\n{screen}");
    }
    pty.send("f");
    pty.wait_text("rewound the conversation to before turn #2; restored 2 files");
    pty.wait_text("not undone: `echo hi > c.txt`");
    assert_eq!(work.read("a.txt"), "v1\n", "the content before turn 2");
    assert!(!work.path().join("b.txt").exists(), "created in turn 2");
    assert_eq!(work.read("c.txt"), "hi\n", "bash changes stay");
    // The turn's text is back in the composer.
    pty.wait_text("› second task");

    let files = session_files(&home);
    assert_eq!(files.len(), 1, "{files:?}");
    let (_, lines) = read_session(&files[0]);
    let markers: Vec<&Value> = lines.iter().filter(|l| l["type"] == "rewind").collect();
    assert_eq!(markers.len(), 1, "{lines:?}");
    assert_eq!(markers[0]["to"], before_turn_two.len() - 1);

    // Ctrl-U clears the composer; the new second turn follows the kept prefix.
    pty.send("\x15second task, redone\r");
    pty.wait_text("A fresh answer.");
    pty.wait_text("Ask anything");
    let after = messages(&server, 5);
    let kept = before_turn_two.len() - 1;
    assert_eq!(after.len(), before_turn_two.len(), "{after:#?}");
    assert_eq!(
        after[..kept],
        before_turn_two[..kept],
        "the prefix up to the rewind point is unchanged"
    );
    assert_eq!(after[kept]["content"], "second task, redone");
    pty.send("\x04");
    assert!(pty.wait_exit().success());

    // The marker is applied on load: a resumed run continues the truncated conversation.
    let (header, _) = read_session(&files[0]);
    let id = header["id"].as_str().expect("session id").to_string();
    let out = run(reasonix(&home, work.path())
        .args(["run", "--resume", &id, "and now?"])
        .env("FAKE_API_KEY", "k"));
    assert_eq!(out.code, 0, "{out:?}");
    let resumed = messages(&server, 6);
    let contents: Vec<&str> = resumed
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(contents.contains(&"second task, redone"), "{contents:?}");
    assert!(!contents.contains(&"second task"), "{contents:?}");
    assert!(!contents.contains(&"Turn two is done."), "{contents:?}");
    assert_eq!(resumed[..after.len()], after[..], "{resumed:#?}");
    assert_eq!(contents.last(), Some(&"and now?"));
}

#[test]
fn rewinding_the_conversation_only_leaves_files_and_clear_drops_the_snapshots() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "write_file", r#"{"path":"a.txt","content":"v1\n"}"#)]),
        Reply::text("Wrote it."),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, 100, 40);
    pty.wait_text("fake-model · ask");
    pty.send("\x1b[Z\x1b[Z");
    pty.wait_text("fake-model · yolo");
    pty.send("only task\r");
    pty.wait_text("Wrote it.");
    pty.wait_text("Ask anything");
    let snapshots = home.join(".reasonix/snapshots");
    let sessions: Vec<_> = std::fs::read_dir(&snapshots).unwrap().flatten().collect();
    assert_eq!(sessions.len(), 1, "one session's snapshots");
    pty.send("/rewind\r");
    pty.wait_text("Rewind to before which turn?");
    pty.send("1");
    pty.wait_text("a.txt (removed: it did not exist)");
    pty.send("c");
    pty.wait_text("rewound the conversation to before turn #1; files were left as they are");
    assert_eq!(work.read("a.txt"), "v1\n");
    pty.send("\x15/rewind\r");
    pty.wait_text("nothing to rewind");
    pty.send("/clear\r");
    pty.wait_text("Clear the conversation?");
    pty.send("y");
    pty.wait_text("conversation cleared");
    assert!(
        !sessions[0].path().exists(),
        "the cleared session's snapshots are gone"
    );
    pty.send("\x04");
    assert!(pty.wait_exit().success());
}
