//! `reasonix run` end to end: the real binary against the fake OpenAI server, real tools,
//! real files. The fake server checks tool-call pairing on every request.

use std::io::{BufRead, BufReader, Read};
use std::process::Child;

use serde_json::{json, Value};

use crate::util::fake_openai::{done, sse_finish, sse_text, sse_usage, FakeOpenAI, Reply};
use crate::util::{
    read_session, reasonix, run, run_with_stdin, session_files, spawn_piped, use_fake_provider, Dir,
};

fn setup(replies: Vec<Reply>) -> (FakeOpenAI, Dir, Dir) {
    let server = FakeOpenAI::start(replies);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    (server, home, work)
}

fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().expect("messages array")
}

#[test]
fn scripted_conversation_uses_every_tool_and_changes_files_on_disk() {
    let (server, home, work) = setup(vec![
        Reply::tool_calls(&[
            (
                "c1",
                "write_file",
                r#"{"path":"src/app.txt","content":"alpha\nbeta\n"}"#,
            ),
            (
                "c2",
                "todo_write",
                r#"{"todos":[{"content":"edit app","status":"in_progress"}]}"#,
            ),
        ]),
        Reply::tool_calls(&[
            ("c3", "read_file", r#"{"path":"src/app.txt"}"#),
            ("c4", "ls", r#"{"path":"src"}"#),
            ("c5", "glob", r#"{"pattern":"**/*.txt"}"#),
            (
                "c6",
                "grep",
                r#"{"pattern":"beta","output_mode":"content"}"#,
            ),
        ]),
        Reply::tool_calls(&[
            (
                "c7",
                "edit_file",
                r#"{"path":"src/app.txt","old_string":"beta","new_string":"gamma"}"#,
            ),
            (
                "c8",
                "multi_edit",
                r#"{"path":"src/app.txt","edits":[{"old_string":"alpha","new_string":"one"},{"old_string":"gamma","new_string":"two"}]}"#,
            ),
            (
                "c9",
                "move_file",
                r#"{"source_path":"src/app.txt","destination_path":"out/final.txt"}"#,
            ),
            (
                "c10",
                "bash",
                r#"{"command":"cat out/final.txt; echo err >&2; exit 3"}"#,
            ),
        ]),
        Reply::text("All done."),
    ]);
    let out = run(reasonix(&home, work.path()).args(["run", "do the thing"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "All done.\n");
    assert_eq!(work.read("out/final.txt"), "one\ntwo\n");
    assert!(!work.join("src/app.txt").exists());
    let requests = server.wait_for_requests(4);
    assert!(server.pairing_violations().is_empty());
    let last = messages(&requests[3].body);
    let result_of = |id: &str| -> String {
        last.iter()
            .find(|m| m["tool_call_id"] == id)
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert!(result_of("c3").contains("alpha"), "{}", result_of("c3"));
    assert!(result_of("c4").contains("app.txt"), "{}", result_of("c4"));
    assert!(
        result_of("c5").contains("src/app.txt"),
        "{}",
        result_of("c5")
    );
    assert!(result_of("c6").contains("beta"), "{}", result_of("c6"));
    let bash = result_of("c10");
    assert!(bash.contains("one\ntwo\nerr"), "{bash}");
    assert!(bash.contains("exit code: 3"), "{bash}");
    // Tool calls are reported on stderr in text mode, one line each.
    for name in ["write_file", "read_file", "grep", "bash"] {
        assert!(
            out.stderr.contains(&format!("> {name} ")),
            "{name}: {out:?}"
        );
    }
}

#[test]
fn request_prefix_is_byte_stable_over_five_turns_and_a_resume() {
    let mut replies = Vec::new();
    for i in 0..4 {
        replies.push(Reply::tool_calls(&[(
            &format!("c{i}"),
            "bash",
            &format!(r#"{{"command":"echo turn {i}"}}"#),
        )]));
    }
    replies.push(Reply::text("first run done"));
    replies.push(Reply::text("second run done"));
    let server = FakeOpenAI::start(replies);
    let home = Dir::new();
    let work = Dir::new();
    // With the environment summary on: it must not change between requests either.
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"fake\"\n[[providers]]\nname = \"fake\"\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"FAKE_API_KEY\"\n",
            server.base_url()
        ),
    );
    let out = run(reasonix(&home, work.path()).args(["run", "go"]));
    assert_eq!(out.code, 0, "{out:?}");
    let out = run(reasonix(&home, work.path()).args(["run", "--continue", "again"]));
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(6);
    for pair in requests.windows(2) {
        let (before, after) = (&pair[0].body, &pair[1].body);
        assert_eq!(before["tools"].to_string(), after["tools"].to_string());
        let (old, new) = (messages(before), messages(after));
        assert!(new.len() > old.len());
        for (i, message) in old.iter().enumerate() {
            assert_eq!(
                message.to_string(),
                new[i].to_string(),
                "message {i} changed"
            );
        }
    }
    assert!(messages(&requests[0].body)[0]["content"]
        .as_str()
        .unwrap()
        .contains("<environment>"));
}

#[test]
fn output_formats_parse_back_as_json() {
    let (_server, home, work) = setup(vec![
        Reply::tool_calls(&[("c1", "ls", r#"{"path":"."}"#)]),
        Reply::text("answer"),
        Reply::text("answer"),
        Reply::text("only this"),
    ]);
    let out =
        run(reasonix(&home, work.path()).args(["run", "--output-format", "stream-json", "hi"]));
    assert_eq!(out.code, 0, "{out:?}");
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"init"));
    assert_eq!(types.last(), Some(&"result"));
    for t in ["tool_use", "tool_result", "usage", "text"] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
    assert!(events[0]["tools"].as_array().unwrap().len() >= 10);
    let result = events.last().unwrap();
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["result"], "answer");
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["usage"]["input_tokens"], 200);
    assert_eq!(result["session_id"], events[0]["session_id"]);

    let out = run(reasonix(&home, work.path()).args(["run", "--output-format", "json", "hi"]));
    assert_eq!(out.code, 0, "{out:?}");
    let value: Value = serde_json::from_str(out.stdout.trim()).expect("one JSON object");
    assert_eq!(value["type"], "result");
    assert_eq!(value["is_error"], false);

    let last = work.join("last.txt");
    let out = run(reasonix(&home, work.path()).args([
        "run",
        "-p",
        "--output-last-message",
        last.to_str().unwrap(),
        "hi",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "only this\n");
    assert_eq!(out.stderr, "");
    assert_eq!(std::fs::read_to_string(last).unwrap(), "only this");
}

#[test]
fn exit_codes_for_usage_auth_failure_and_step_limit() {
    let (server, home, work) = setup(vec![
        Reply::error(401, "invalid api key"),
        Reply::error(500, "boom"),
        Reply::tool_calls(&[("c1", "ls", "{}")]),
        Reply::tool_calls(&[("c2", "ls", "{}")]),
    ]);
    let empty = run(reasonix(&home, work.path()).args(["run", "  "]));
    assert_eq!(empty.code, 2, "{empty:?}");
    assert!(empty.stderr.contains("empty prompt"), "{empty:?}");

    let auth = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert_eq!(auth.code, 3, "{auth:?}");
    assert!(auth.stderr.contains("$FAKE_API_KEY"), "{auth:?}");

    let failed = run(reasonix(&home, work.path()).args(["run", "--output-format", "json", "hi"]));
    assert_eq!(failed.code, 1, "{failed:?}");
    let value: Value = serde_json::from_str(failed.stdout.trim()).unwrap();
    assert_eq!(value["subtype"], "error_during_execution");
    assert!(value["error"].as_str().unwrap().contains("boom"), "{value}");

    let limited = run(reasonix(&home, work.path()).args(["run", "--max-steps", "1", "hi"]));
    assert_eq!(limited.code, 4, "{limited:?}");
    assert!(server.pairing_violations().is_empty());
    // The unexecuted call still got a result, so the saved history stays valid.
    let (_, saved) = read_session(session_files(&home).last().unwrap());
    let last = saved.last().unwrap();
    assert_eq!(last["tool_call_id"], "c2");
    assert!(last["content"].as_str().unwrap().contains("step limit"));
}

#[test]
fn missing_key_for_a_remote_provider_exits_3_naming_the_variable() {
    let home = Dir::new();
    let work = Dir::new();
    let out = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("$DEEPSEEK_API_KEY"), "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
}

#[test]
fn repeated_malformed_call_ends_the_run() {
    let bad = || Reply::tool_calls(&[("c", "read_file", r#"{"path": 7}"#)]);
    let (server, home, work) = setup(vec![bad(), bad(), bad(), Reply::text("never")]);
    let out = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("same malformed `read_file` call 3 times"),
        "{out:?}"
    );
    assert_eq!(server.requests().len(), 3);
}

fn spawn_with_open_stdin(home: &Dir, work: &Dir, args: &[&str]) -> Child {
    spawn_piped(reasonix(home, work.path()).args(args))
}

#[test]
fn prompt_argument_with_idle_open_stdin_does_not_hang() {
    let (_server, home, work) = setup(vec![Reply::text("fine")]);
    let mut child = spawn_with_open_stdin(&home, &work, &["run", "hi"]);
    // stdin stays open and silent; the run must finish anyway.
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert_eq!(stdout, "fine\n");
    assert!(child.wait().unwrap().success());
}

#[test]
fn stdin_is_the_prompt_or_a_stdin_block_with_dash() {
    let (server, home, work) = setup(vec![Reply::text("a"), Reply::text("b")]);
    let out = run_with_stdin(reasonix(&home, work.path()).arg("run"), "from stdin");
    assert_eq!(out.code, 0, "{out:?}");
    let out = run_with_stdin(
        reasonix(&home, work.path()).args(["run", "review", "-"]),
        "diff text\n",
    );
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(2);
    let user = |i: usize| messages(&requests[i].body).last().unwrap()["content"].clone();
    assert_eq!(user(0), "from stdin");
    assert_eq!(user(1), "review\n\n<stdin>\ndiff text\n</stdin>");
}

fn interrupt(child: &Child) {
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
}

#[test]
fn sigint_mid_stream_exits_130_and_leaves_a_resumable_session() {
    let (held, release) = Reply::hold(vec![sse_text("partial ans")]);
    let server = FakeOpenAI::start(vec![held]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let mut child = spawn_with_open_stdin(&home, &work, &["run", "long task"]);
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = [0u8; 11];
    stdout.read_exact(&mut seen).unwrap();
    assert_eq!(&seen, b"partial ans");
    interrupt(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    release.release();
    let (header, saved) = read_session(session_files(&home).last().unwrap());
    assert_eq!(saved.last().unwrap()["content"], "partial ans");

    server.push(Reply::events(vec![
        sse_text("resumed"),
        sse_finish("stop"),
        sse_usage(5, 1, 0),
        done(),
    ]));
    // A unique prefix of the id is enough.
    let id = header["id"].as_str().unwrap();
    let out = run(reasonix(&home, work.path()).args(["run", "--resume", &id[..12], "continue"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "resumed\n");
    let requests = server.requests();
    let resumed = messages(&requests.last().unwrap().body);
    let contents: Vec<&str> = resumed
        .iter()
        .skip(1)
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents[..2], ["long task", "partial ans"]);
    assert_eq!(contents.last(), Some(&"continue"));
}

#[test]
fn sigint_mid_tool_kills_it_and_keeps_every_call_paired() {
    let work = Dir::new();
    let fifo = work.join("started.fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let command = format!("echo started > {}; sleep 60", fifo.display());
    let server = FakeOpenAI::start(vec![Reply::tool_calls(&[
        ("c1", "bash", &json!({"command": command}).to_string()),
        ("c2", "ls", "{}"),
    ])]);
    let home = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let mut child = spawn_with_open_stdin(&home, &work, &["run", "run it"]);
    let mut line = String::new();
    BufReader::new(std::fs::File::open(&fifo).unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "started\n");
    interrupt(&child);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let (_, saved) = read_session(session_files(&home).last().unwrap());
    let results: Vec<&Value> = saved.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(results.len(), 2, "{saved:?}");
    assert_eq!(results[0]["tool_call_id"], "c1");
    assert_eq!(results[1]["tool_call_id"], "c2");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("cancelled"),
        "{:?}",
        results[0]
    );
}

#[test]
fn headless_permission_flags_block_calls_and_report_them() {
    let (server, home, work) = setup(vec![
        Reply::tool_calls(&[
            ("c1", "bash", r#"{"command":"git push origin main"}"#),
            ("c2", "write_file", r#"{"path":"a.txt","content":"x"}"#),
            ("c3", "bash", r#"{"command":"echo allowed"}"#),
        ]),
        Reply::text("ok"),
    ]);
    let out = run(reasonix(&home, work.path()).args([
        "run",
        "--output-format",
        "stream-json",
        "--permission-mode",
        "strict",
        "--disallowedTools",
        "Bash(git push:*)",
        "--allow",
        "Bash(echo:*)",
        "go",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        !work.join("a.txt").exists(),
        "strict mode must not let a writer run"
    );
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let permissions: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "permission")
        .collect();
    assert_eq!(permissions.len(), 2, "{permissions:?}");
    assert_eq!(permissions[0]["decision"], "deny");
    assert_eq!(permissions[0]["rule"], "Bash(git push:*)");
    assert_eq!(permissions[1]["tool"], "write_file");
    assert_eq!(permissions[1]["allowed"], false);
    let requests = server.wait_for_requests(2);
    let results: Vec<String> = messages(&requests[1].body)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert!(
        results[0].contains("blocked by rule `Bash(git push:*)`"),
        "{results:?}"
    );
    assert!(results[1].contains("strict"), "{results:?}");
    assert!(results[2].contains("allowed"), "{results:?}");

    let bad = run(reasonix(&home, work.path()).args(["run", "--allow", "Bash(", "go"]));
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(bad.stderr.contains("invalid rule"), "{bad:?}");
    let bad = run(reasonix(&home, work.path()).args(["run", "--permission-mode", "maybe", "go"]));
    assert_eq!(bad.code, 2, "{bad:?}");
}

/// A `bwrap` first on PATH that records each invocation and then runs the real one.
fn recording_bwrap(dir: &Dir) -> (String, std::path::PathBuf) {
    let record = dir.join("bwrap-calls");
    let real = std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("bwrap"))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| "/usr/bin/bwrap".into());
    let script = dir.write(
        "bin/bwrap",
        &format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            record.display(),
            real.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (path, record)
}

#[test]
fn bash_off_never_starts_bwrap() {
    for (mode, probes) in [("off", false), ("enforce", true)] {
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[("c1", "bash", r#"{"command":"echo ran"}"#)]),
            Reply::text("done"),
        ]);
        let home = Dir::new();
        let work = Dir::new();
        let tools = Dir::new();
        let (path, record) = recording_bwrap(&tools);
        use_fake_provider(
            &home,
            &server.base_url(),
            &format!("[sandbox]\nbash = \"{mode}\"\n"),
        );
        let out = run(reasonix(&home, work.path())
            .args(["run", "--permission-mode", "yolo", "go"])
            .env("PATH", path));
        assert_eq!(out.code, 0, "bash = {mode}: {out:?}");
        let requests = server.wait_for_requests(2);
        let result = messages(&requests[1].body)
            .iter()
            .find(|m| m["role"] == "tool")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string();
        // The control (enforce) proves the recording bwrap is the one reasonix would use.
        assert_eq!(
            record.exists(),
            probes,
            "bash = {mode}: bwrap calls: {:?}; tool result: {result}",
            std::fs::read_to_string(&record).ok()
        );
        if mode == "off" {
            assert!(result.contains("ran"), "{result}");
        }
    }
}

/// The result object of a `--output-format json` run.
fn json_result(home: &Dir, work: &Dir, args: &[&str]) -> Value {
    let out = run(reasonix(home, work.path())
        .args(["run", "--output-format", "json"])
        .args(args));
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

#[test]
fn total_cost_is_null_without_prices_on_every_exit_path_and_a_figure_with_them() {
    let (_server, home, work) = setup(vec![
        Reply::text("fine"),
        Reply::error(500, "boom"),
        Reply::tool_calls(&[("c1", "ls", "{}")]),
    ]);
    let success = json_result(&home, &work, &["hi"]);
    assert_eq!(success["subtype"], "success", "{success}");
    assert_eq!(success["total_cost_usd"], Value::Null, "{success}");
    let failed = json_result(&home, &work, &["hi"]);
    assert_eq!(failed["subtype"], "error_during_execution", "{failed}");
    assert_eq!(failed["total_cost_usd"], Value::Null, "{failed}");
    let limited = json_result(&home, &work, &["--max-steps", "0", "hi"]);
    assert_eq!(limited["subtype"], "error_max_turns", "{limited}");
    assert_eq!(limited["total_cost_usd"], Value::Null, "{limited}");
    let before_start = json_result(&home, &work, &["--model", "nope/x", "hi"]);
    assert_eq!(before_start["is_error"], true, "{before_start}");
    assert_eq!(
        before_start["total_cost_usd"],
        Value::Null,
        "{before_start}"
    );
    let out = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert!(!out.stderr.contains('$'), "no cost without prices: {out:?}");

    // With prices: 100 prompt tokens at $1/M and 10 completion tokens at $2/M per request.
    let server = FakeOpenAI::start(vec![Reply::text("fine"), Reply::text("fine")]);
    let priced = Dir::new();
    use_fake_provider(&priced, &server.base_url(), "");
    let config = priced.join(".reasonix/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[providers.prices.fake-model]\ninput = 1.0\noutput = 2.0\n");
    std::fs::write(&config, text).unwrap();
    let result = json_result(&priced, &work, &["hi"]);
    let cost = result["total_cost_usd"]
        .as_f64()
        .unwrap_or_else(|| panic!("{result}"));
    assert!((cost - 0.00012).abs() < 1e-9, "{result}");
    let out = run(reasonix(&priced, work.path()).args(["run", "hi"]));
    let summary = out
        .stderr
        .lines()
        .find(|l| l.starts_with("session:"))
        .unwrap_or("");
    assert!(
        summary.ends_with(", $0.0001"),
        "text summary shows the cost: {out:?}"
    );
}

/// The history a request carries is assembled from cached segments of encoded messages (64
/// KiB each): across several segment boundaries every body is whole, valid JSON, and each
/// request repeats the one before it exactly, then the new messages.
#[test]
fn a_history_past_several_segments_is_sent_whole_and_in_order() {
    const ROUNDS: usize = 8;
    let mut replies: Vec<Reply> = (0..ROUNDS)
        .map(|i| {
            // A file per round: the same call every round would be a loop the guard stops.
            let args = json!({ "path": format!("a{i}.txt") }).to_string();
            Reply::tool_calls(&[(&format!("c{i}"), "read_file", &args)])
        })
        .collect();
    replies.push(Reply::text("done"));
    let (server, home, work) = setup(replies);
    // 30 KiB of distinct lines per result: eight of them cross the boundaries of 64 KiB
    // segments at different places in a message.
    let content: String = (0..500)
        .map(|i| format!("line {i:04} {}\n", "x".repeat(50)))
        .collect();
    for i in 0..ROUNDS {
        work.write(&format!("a{i}.txt"), &content);
    }
    let out = run(reasonix(&home, work.path()).args(["run", "loop"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), ROUNDS + 1);
    let mut sent = 0;
    for (i, pair) in requests.windows(2).enumerate() {
        let (before, after) = (messages(&pair[0].body), messages(&pair[1].body));
        assert_eq!(after.len(), before.len() + 2, "request {}", i + 1);
        assert_eq!(&after[..before.len()], &before[..], "request {}", i + 1);
        let result = after.last().unwrap();
        assert_eq!(result["tool_call_id"], format!("c{i}"));
        let text = result["content"].as_str().unwrap();
        assert!(
            text.contains("line 0000 ") && text.contains("line 0499 "),
            "request {}: {:.80}",
            i + 1,
            text
        );
        sent = serde_json::to_vec(&pair[1].body["messages"]).unwrap().len();
    }
    assert!(sent > 3 * 64 * 1024, "only {sent} bytes of history");
}

/// The fixture of issue 35: every turn answers with the same two calls, for ever. A model
/// that the old loop ran for 11,380 rounds.
fn same_two_calls_forever() -> FakeOpenAI {
    FakeOpenAI::start_with(|requests| {
        if requests.len() > 30 {
            // Far past the guard: a run without one would end here, with exit 0.
            return Reply::text("gave up");
        }
        Reply::tool_calls(&[
            ("c1", "read_file", r#"{"path":"notes.txt"}"#),
            ("c2", "grep", r#"{"pattern":"todo"}"#),
        ])
    })
}

#[test]
fn a_model_repeating_the_same_two_calls_forever_is_nudged_once_then_stopped_with_exit_5() {
    let server = same_two_calls_forever();
    let (home, work) = (Dir::new(), Dir::new());
    work.write("notes.txt", "todo: nothing\n");
    use_fake_provider(&home, &server.base_url(), "");
    let result = json_result(&home, &work, &["use two tools"]);
    assert_eq!(result["subtype"], "error_loop", "{result}");
    assert_eq!(result["is_error"], true, "{result}");
    let error = result["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(r#"`read_file {"path":"notes.txt"}`"#) && error.contains("`grep "),
        "the error names the repeated calls: {result}"
    );
    // Round 1 is new, round 2 repeats it and is told so, round 3 repeats again: the end.
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{result}");
    let told = |body: &Value| {
        messages(body)
            .iter()
            .filter(|m| {
                m["content"]
                    .as_str()
                    .is_some_and(|c| c.contains("You are repeating yourself"))
            })
            .count()
    };
    assert_eq!(told(&requests[1].body), 0);
    assert_eq!(told(&requests[2].body), 1, "request 3 carries the note");
    // The stopping round's calls have their results: the saved history stays valid.
    let (_, saved) = read_session(session_files(&home).last().unwrap());
    assert_eq!(saved.last().unwrap()["role"], "tool");

    let out = run(reasonix(&home, work.path()).args(["run", "use two tools"]));
    assert_eq!(out.code, 5, "{out:?}");
    assert!(
        out.stderr.contains("repeated an earlier round")
            && out.stderr.contains("repeated the same tool calls"),
        "a notice at the nudge and the reason at the end: {out:?}"
    );
}

/// A model that calls a new tool every round, for ever: only a step or token budget ends it.
fn new_call_every_round() -> FakeOpenAI {
    FakeOpenAI::start_with(|requests| {
        let n = requests.len();
        let args = json!({ "path": format!("missing-{n}.txt") }).to_string();
        Reply::tool_calls(&[(&format!("c{n}"), "read_file", &args)])
    })
}

#[test]
fn a_headless_run_has_a_default_step_budget_that_config_and_flag_override() {
    let server = new_call_every_round();
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(&home, &server.base_url(), "");
    let result = json_result(&home, &work, &["go on for ever"]);
    assert_eq!(result["subtype"], "error_max_turns", "{result}");
    // 200 rounds ran; the 201st request's calls were not run.
    assert_eq!(server.requests().len(), 201);
    assert!(
        result["error"]
            .as_str()
            .is_some_and(|e| e.contains("200 tool rounds")),
        "{result}"
    );

    let server = new_call_every_round();
    use_fake_provider(&home, &server.base_url(), "[agent]\nmax_steps_headless = 3");
    let out = run(reasonix(&home, work.path()).args(["run", "go on"]));
    assert_eq!(out.code, 4, "{out:?}");
    assert!(out.stderr.contains("step limit"), "{out:?}");
    assert_eq!(server.requests().len(), 4);
    let result = json_result(&home, &work, &["--max-steps", "1", "go on"]);
    assert_eq!(result["subtype"], "error_max_turns", "{result}");
    assert_eq!(
        server.requests().len(),
        4 + 2,
        "--max-steps wins over the config"
    );
}

#[test]
fn token_and_cost_budgets_stop_a_run_cleanly_with_their_own_subtypes() {
    // Each reply reports 100 prompt and 10 completion tokens.
    let server = new_call_every_round();
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(&home, &server.base_url(), "");
    let result = json_result(&home, &work, &["--max-tokens-total", "300", "go on"]);
    assert_eq!(result["subtype"], "error_max_tokens_total", "{result}");
    assert_eq!(result["usage"]["input_tokens"], 300, "{result}");
    assert_eq!(server.requests().len(), 3);
    let (_, saved) = read_session(session_files(&home).last().unwrap());
    let last = saved.last().unwrap();
    assert_eq!(last["role"], "tool", "the unrun call still has its result");
    assert!(last["content"].as_str().unwrap().contains("token budget"));

    let out = run(reasonix(&home, work.path()).args(["run", "--max-budget-usd", "1", "go"]));
    assert_eq!(out.code, 2, "a cost budget needs prices: {out:?}");
    assert!(out.stderr.contains("prices"), "{out:?}");
    let config = home.join(".reasonix/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    // $0.00012 a request.
    text.push_str("\n[providers.prices.fake-model]\ninput = 1.0\noutput = 2.0\n");
    std::fs::write(&config, text).unwrap();
    let before = server.requests().len();
    let out = run(reasonix(&home, work.path()).args(["run", "--max-budget-usd", "0.0003", "go"]));
    assert_eq!(out.code, 4, "{out:?}");
    assert!(out.stderr.contains("cost budget"), "{out:?}");
    assert_eq!(server.requests().len() - before, 3);
    let result = json_result(&home, &work, &["--max-budget-usd", "0.0001", "go"]);
    assert_eq!(result["subtype"], "error_max_budget_usd", "{result}");
    let bad = run(reasonix(&home, work.path()).args(["run", "--max-tokens-total", "lots", "go"]));
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(bad.stderr.contains("--max-tokens-total"), "{bad:?}");
}

#[test]
fn a_subagent_spends_from_the_run_token_budget() {
    // The parent asks for one subagent; the child would list files for ever.
    let server = FakeOpenAI::start_with(|requests| {
        let body = &requests[requests.len() - 1].body;
        let parent = messages(body)[1]["content"] == "delegate";
        let rounds = messages(body)
            .iter()
            .filter(|m| m["role"] == "tool")
            .count();
        match (parent, rounds) {
            (true, 0) => Reply::tool_calls(&[("t1", "task", r#"{"prompt":"look around"}"#)]),
            (true, _) => Reply::text("parent done"),
            (false, n) => {
                let args = json!({ "path": format!("missing-{n}.txt") }).to_string();
                Reply::tool_calls(&[(&format!("c{n}"), "read_file", &args)])
            }
        }
    });
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(&home, &server.base_url(), "");
    // 110 tokens a request: the parent's first and the child's first two reach 300.
    let result = json_result(&home, &work, &["--max-tokens-total", "300", "delegate"]);
    assert_eq!(result["subtype"], "error_max_tokens_total", "{result}");
    assert_eq!(server.requests().len(), 3, "{result}");
}

/// Reads `reader` line by line until one contains `needle`; every line read is returned. Ends
/// at the end of the stream, so a child that exits without the line fails the test, never
/// hangs it.
fn read_until(reader: &mut impl BufRead, needle: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        lines.push(std::mem::take(&mut line));
        if lines.last().is_some_and(|l| l.contains(needle)) {
            break;
        }
    }
    lines
}

#[test]
fn a_silent_endpoint_gets_a_waiting_line_on_stderr_and_a_notice_in_stream_json() {
    let (stalled, release) = Reply::stall();
    let (stalled_json, release_json) = Reply::stall();
    let server = FakeOpenAI::start(vec![stalled, stalled_json]);
    let (home, work) = (Dir::new(), Dir::new());
    use_fake_provider(&home, &server.base_url(), "");
    // The idle limit the line names; it also bounds the wait of a build that never says it
    // is waiting (that run fails after it, and the test with it).
    let config = home.join(".reasonix/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[providers.timeouts]\nidle_seconds = 20\n");
    std::fs::write(&config, text).unwrap();

    let mut child = spawn_piped(
        reasonix(&home, work.path())
            .env("REASONIX_WAIT_NOTICE_MS", "50")
            .args(["run", "hi"]),
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let lines = read_until(&mut stderr, "waiting for the model");
    let waiting = lines.last().cloned().unwrap_or_default();
    assert!(
        waiting.starts_with("waiting for the model: ")
            && waiting.contains("nothing received yet; idle limit 20 s"),
        "{lines:?}"
    );
    // Later notices follow while it stays silent; an interrupt ends the wait.
    read_until(&mut stderr, "waiting for the model");
    interrupt(&child);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    release.release();

    let mut child = spawn_piped(
        reasonix(&home, work.path())
            .env("REASONIX_WAIT_NOTICE_MS", "50")
            .args(["run", "--output-format", "stream-json", "hi"]),
    );
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let lines = read_until(&mut stdout, r#""kind":"waiting""#);
    let notice: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(notice["type"], "notice", "{notice}");
    assert_eq!(notice["received"], false, "{notice}");
    assert!(notice["silent_ms"].as_u64().unwrap() >= 50, "{notice}");
    assert_eq!(notice["idle_limit_ms"], 20_000, "{notice}");
    assert!(
        notice["message"]
            .as_str()
            .unwrap()
            .starts_with("waiting for the model"),
        "{notice}"
    );
    interrupt(&child);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    release_json.release();
}
