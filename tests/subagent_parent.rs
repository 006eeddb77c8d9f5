//! What a subagent shares with its parent (issue 37.4), through the real binary and the fake
//! model: a child started by `task` is offered the MCP tools its parent is offered and calls
//! them on the parent's running server, which is started once for the whole run however many
//! children use it, under each jail backend; and a writer child's edits belong to the parent's
//! turn, so `/rewind` of that turn in the chat restores them.

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

use crate::mcp::jail_backends;
use crate::rewind::chat_after_a_first_turn;
use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{copy_into, reasonix, run, use_fake_provider, Dir};

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

/// Issue 37.4: children got the built-in tools only, so a profile meant to use an MCP server
/// could not. Two children in turn call the parent's stdio server (the example server behind a
/// script that counts its starts): both get its tool and its answer, and the server started
/// once.
#[test]
fn children_call_the_parents_mcp_server_which_starts_once() {
    for backend in jail_backends() {
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[("p1", "task", r#"{"prompt":"child one"}"#)]),
            Reply::tool_calls(&[("k1", "mcp__local__echo", r#"{"text":"from child one"}"#)]),
            Reply::text("one done"),
            Reply::tool_calls(&[("p2", "task", r#"{"prompt":"child two"}"#)]),
            Reply::tool_calls(&[("k2", "mcp__local__echo", r#"{"text":"from child two"}"#)]),
            Reply::text("two done"),
            Reply::text("all done"),
        ]);
        let (home, work) = (Dir::new(), Dir::new());
        // Inside the jail only the workspace is sure to be visible: the server and its
        // wrapper live there.
        let example = copy_into(env!("CARGO_BIN_EXE_reasonix-plugin-example"), work.path());
        let starts = work.join("starts.log");
        let wrapper = work.write(
            "server.sh",
            &format!(
                "#!/bin/sh\necho started >> '{}'\nexec '{}' \"$@\"\n",
                starts.display(),
                example.display()
            ),
        );
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        use_fake_provider(
            &home,
            &server.base_url(),
            &format!(
                "[[plugins]]\nname = \"local\"\ncommand = \"{}\"\n\n[sandbox]\nbackend = \"{backend}\"\n",
                wrapper.display()
            ),
        );
        let out = run(reasonix(&home, work.path())
            .args(["run", "use the helpers"])
            .env("FAKE_API_KEY", "k"));
        assert_eq!(out.code, 0, "{backend}: {out:?}");
        assert_eq!(out.stdout, "all done\n", "{backend}");
        let requests = server.requests();
        assert_eq!(requests.len(), 7, "{backend}");
        for (child_request, answered, text) in [(1, 2, "from child one"), (4, 5, "from child two")]
        {
            let offered = tool_names(&requests[child_request].body);
            assert!(
                offered.iter().any(|n| n == "mcp__local__echo")
                    && !offered.iter().any(|n| n == "task"),
                "{backend}: the child is offered {offered:?}"
            );
            assert_eq!(
                tool_results(&requests[answered].body),
                [text],
                "{backend}: the child's call reached the server"
            );
        }
        let started = std::fs::read_to_string(&starts).unwrap_or_default();
        assert_eq!(
            started.lines().count(),
            1,
            "{backend}: the server started once for the parent and both children"
        );
    }
}

/// Issue 37.4 with a real third-party server: a child started by `task` calls the reference
/// server-everything's `echo` tool through the parent's connection, under each jail backend.
#[test]
fn a_child_calls_a_tool_of_the_reference_server_everything() {
    let Some((program, args)) = crate::mcp::server_everything() else {
        return;
    };
    for backend in jail_backends() {
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[("p1", "task", r#"{"prompt":"echo something"}"#)]),
            Reply::tool_calls(&[(
                "k1",
                "mcp__everything__echo",
                r#"{"message":"from the child"}"#,
            )]),
            Reply::text("child done"),
            Reply::text("all done"),
        ]);
        let (home, work) = (Dir::new(), Dir::new());
        let args: Vec<String> = args
            .iter()
            .map(|a| format!("{a:?}"))
            .chain(["\"stdio\"".to_string()])
            .collect();
        use_fake_provider(
            &home,
            &server.base_url(),
            &format!(
                "[[plugins]]\nname = \"everything\"\ncommand = {program:?}\nargs = [{}]\n\n[sandbox]\nbackend = \"{backend}\"\n",
                args.join(", ")
            ),
        );
        let out = run(reasonix(&home, work.path())
            .args(["run", "use the helper"])
            .env("FAKE_API_KEY", "k"));
        assert_eq!(out.code, 0, "{backend}: {out:?}");
        let requests = server.requests();
        assert_eq!(requests.len(), 4, "{backend}");
        let offered = tool_names(&requests[1].body);
        assert!(
            offered.iter().any(|n| n == "mcp__everything__echo"),
            "{backend}: the child is offered {offered:?}"
        );
        let results = tool_results(&requests[2].body);
        assert!(
            results.len() == 1 && results[0].contains("from the child"),
            "{backend}: the child's call reached server-everything: {results:?}"
        );
    }
}

/// Issue 37.4: a writer child kept its snapshots under its own session, so rewinding the
/// parent's turn that ran it left the child's edits in place. Now the rewind lists and
/// restores them like the parent's own.
#[test]
fn rewinding_a_turn_restores_the_edits_of_the_writer_child_it_ran() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "write_file", r#"{"path":"a.txt","content":"v1\n"}"#)]),
        Reply::text("Wrote version one."),
        Reply::tool_calls(&[("t1", "task", r#"{"prompt":"change the files"}"#)]),
        Reply::tool_calls(&[
            (
                "k1",
                "edit_file",
                r#"{"path":"a.txt","old_string":"v1","new_string":"v2"}"#,
            ),
            ("k2", "write_file", r#"{"path":"b.txt","content":"new\n"}"#),
        ]),
        Reply::text("The child changed them."),
        Reply::text("Turn two is done."),
    ]);
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(&home, &server.base_url(), "[sandbox]\nbash = \"off\"\n");
    let mut pty = chat_after_a_first_turn(&home, &work);
    pty.send("second task\r");
    pty.wait_text("Turn two is done.");
    pty.wait_text("Ask anything");
    assert_eq!(work.read("a.txt"), "v2\n", "the child edited it");
    assert_eq!(work.read("b.txt"), "new\n", "the child wrote it");

    pty.send("/rewind\r");
    pty.wait_text("Rewind to before which turn?");
    pty.send("\r");
    pty.wait_text("Rewind how?");
    let screen = pty.screen();
    for shown in [
        "Files restored:",
        "a.txt",
        "b.txt (removed: it did not exist)",
    ] {
        assert!(screen.contains(shown), "{shown:?} is not shown:\n{screen}");
    }
    pty.send("f");
    pty.wait_text("rewound the conversation to before turn #2; restored 2 files");
    assert_eq!(work.read("a.txt"), "v1\n", "the content before turn 2");
    assert!(
        !work.path().join("b.txt").exists(),
        "created by the child in turn 2"
    );
    pty.send("\x15\x04");
    assert!(pty.wait_exit().success());
}

/// `/<profile> TASK` typed in the chat runs the profile host-side; rewinding that turn
/// restores what the profile's child edited and drops the turn from what the model is sent.
#[test]
fn rewinding_a_host_side_profile_turn_restores_its_childs_edits() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "write_file", r#"{"path":"a.txt","content":"v1\n"}"#)]),
        Reply::text("Wrote version one."),
        Reply::tool_calls(&[(
            "k1",
            "edit_file",
            r#"{"path":"a.txt","old_string":"v1","new_string":"v2"}"#,
        )]),
        Reply::text("The fixer changed it."),
        Reply::text("Third turn done."),
    ]);
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(&home, &server.base_url(), "[sandbox]\nbash = \"off\"\n");
    home.write(
        ".reasonix/skills/fixer/SKILL.md",
        "---\nname: fixer\ndescription: Fixes things\nrunAs: subagent\ninvocation: manual\n---\nYou are the fixer.\n",
    );
    let mut pty = chat_after_a_first_turn(&home, &work);
    pty.send("/fixer bump the version\r");
    pty.wait_text("The fixer changed it.");
    pty.wait_text("Ask anything");
    assert_eq!(work.read("a.txt"), "v2\n", "the profile's child edited it");

    pty.send("/rewind\r");
    pty.wait_text("Rewind to before which turn?");
    pty.send("\r");
    pty.wait_text("Rewind how?");
    let screen = pty.screen();
    assert!(screen.contains("a.txt"), "a.txt is not listed:\n{screen}");
    pty.send("f");
    pty.wait_text("rewound the conversation to before turn #2; restored 1 file");
    assert_eq!(
        work.read("a.txt"),
        "v1\n",
        "the content before the profile's turn"
    );
    // The turn's text comes back to the composer as it was typed.
    pty.wait_text("/fixer bump the version");
    assert!(
        !pty.screen().contains("subagent on this task"),
        "the model's note came back:\n{}",
        pty.screen()
    );

    pty.send("\x15third task\r");
    pty.wait_text("Third turn done.");
    pty.wait_text("Ask anything");
    pty.send("\x15\x04");
    assert!(pty.wait_exit().success());
    let requests = server.wait_for_requests(5);
    let sent = requests[4].body["messages"].to_string();
    assert!(
        !sent.contains("bump the version") && !sent.contains("The fixer changed it."),
        "the rewound turn was sent again: {sent}"
    );
    assert!(sent.contains("Wrote version one."), "{sent}");
}
