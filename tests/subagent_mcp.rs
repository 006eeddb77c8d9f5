//! Subagents with MCP tools (issue 37.4), through the real binary and the fake model: a child
//! started by `task` is offered the MCP tools its parent is offered and calls them on the
//! parent's running server, which is started once for the whole run however many children
//! use it, under each jail backend.

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

use crate::mcp::jail_backends;
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
