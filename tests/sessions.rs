//! Sessions as a trust boundary, end to end with the real binary and the fake model: one run
//! at a time per session (an exclusive lock), histories repaired before they are sent again,
//! private files, empty replies treated as failures, and the `result` object of the JSON
//! formats on every exit path.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::util::fake_openai::{
    done, sse_chunk, sse_data, sse_finish, sse_text, sse_tool_delta, sse_usage, FakeOpenAI, Reply,
};
use crate::util::{read_session, reasonix, run, session_files, use_fake_provider, Dir, Run};

fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

fn roles(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The role-order rule the repair guarantees: no assistant message directly after another,
/// and the history never ends on a user message that a new prompt would follow unanswered.
fn role_problems(messages: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, pair) in messages.windows(2).enumerate() {
        if pair[0]["role"] == "assistant" && pair[1]["role"] == "assistant" {
            problems.push(format!(
                "messages {} and {}: two assistant messages",
                i + 1,
                i + 2
            ));
        }
    }
    problems
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn reasonix")
}

fn finish(child: Child) -> Run {
    let out = child.wait_with_output().expect("wait for reasonix");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The one session of `home`, and its id.
fn only_session(home: &Dir) -> (std::path::PathBuf, String) {
    let files = session_files(home);
    assert_eq!(files.len(), 1, "{files:?}");
    let (header, _) = read_session(&files[0]);
    (files[0].clone(), header["id"].as_str().unwrap().to_string())
}

// ---------------------------------------------------------------------------------------
// One run per session.

#[test]
fn a_second_run_on_a_busy_session_fails_at_once_and_leaves_it_untouched() {
    let server = FakeOpenAI::start(vec![Reply::text("first answer")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, work.path()).args(["run", "first"]));
    assert_eq!(out.code, 0, "{out:?}");
    let (path, id) = only_session(&home);

    // The resumed run is inside its request, which the server holds open.
    let (held, release) = Reply::hold(vec![sse_text("working on it")]);
    server.push(held);
    let busy = spawn(reasonix(&home, work.path()).args(["run", "--resume", &id, "second"]));
    server.wait_for_requests(2);
    let before = std::fs::read(&path).unwrap();

    let attempts: [&[&str]; 3] = [
        &["run", "--resume", &id, "third"],
        &["run", "--continue", "third"],
        &["chat", "--resume", &id],
    ];
    for args in attempts {
        let out = run(reasonix(&home, work.path()).args(args));
        assert_eq!(out.code, 1, "{args:?}: {out:?}");
        assert_eq!(out.stdout, "", "{args:?}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {out:?}");
        assert!(
            out.stderr.contains(&id) && out.stderr.contains("in use by another reasonix"),
            "{args:?}: {out:?}"
        );
        assert!(out.stderr.contains("--fork-session"), "{args:?}: {out:?}");
    }
    assert_eq!(
        server.requests().len(),
        2,
        "a refused run must not reach the model"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "a refused run must not touch the session"
    );

    // --fork-session continues a copy under a new id while the original stays busy.
    server.push(Reply::text("forked answer"));
    let out = run(reasonix(&home, work.path()).args([
        "run",
        "--resume",
        &id,
        "--fork-session",
        "--output-format",
        "json",
        "fork",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    let result: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let fork_id = result["session_id"].as_str().unwrap().to_string();
    assert_ne!(fork_id, id);
    let sent = messages(&server.requests()[2].body);
    let contents: Vec<&str> = sent
        .iter()
        .skip(1)
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    // The held run's "second" was on disk when the fork read it, and got the repair's note.
    assert_eq!(
        contents[..3],
        ["first", "first answer", "second"],
        "{sent:?}"
    );
    assert_eq!(contents.last(), Some(&"fork"));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the fork wrote to the original"
    );

    release.release();
    let busy = finish(busy);
    assert_eq!(busy.code, 1, "the held reply was cut: {busy:?}");
    // Once the first run has exited, its lock is gone with it.
    server.push(Reply::text("later"));
    let out = run(reasonix(&home, work.path()).args(["run", "--resume", &id, "later"]));
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn the_lock_dies_with_a_killed_run() {
    let server = FakeOpenAI::start(vec![Reply::text("one")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    assert_eq!(run(reasonix(&home, work.path()).args(["run", "a"])).code, 0);
    let (_, id) = only_session(&home);
    let (stalled, _release) = Reply::stall();
    server.push(stalled);
    let mut busy = spawn(reasonix(&home, work.path()).args(["run", "--resume", &id, "b"]));
    server.wait_for_requests(2);
    busy.kill().unwrap();
    busy.wait().unwrap();
    server.push(Reply::text("two"));
    let out = run(reasonix(&home, work.path()).args(["run", "--resume", &id, "c"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "two\n");
}

// ---------------------------------------------------------------------------------------
// Repairing a history before it is sent again.

#[test]
fn sigkill_while_the_first_tool_call_streams_then_resume_sends_a_valid_history() {
    let (held, release) = Reply::hold(vec![sse_tool_delta(
        0,
        Some("call_1"),
        Some("bash"),
        r#"{"comm"#,
    )]);
    let server = FakeOpenAI::start(vec![held]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let mut child = spawn(reasonix(&home, work.path()).args(["run", "list the files"]));
    server.wait_for_requests(1);
    child.kill().unwrap();
    child.wait().unwrap();
    release.release();
    let (_, id) = only_session(&home);

    server.push(Reply::text("resumed"));
    let out = run(reasonix(&home, work.path()).args(["run", "--resume", &id, "try again"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "resumed\n");
    assert!(
        out.stderr.contains("repaired") && out.stderr.contains("no reply"),
        "the repair is reported: {out:?}"
    );
    let sent = messages(&server.requests()[1].body);
    assert_eq!(
        roles(&sent),
        ["system", "user", "assistant", "user"],
        "{sent:#?}"
    );
    assert_eq!(sent[1]["content"], "list the files");
    assert!(
        sent[2]["content"].as_str().unwrap().contains("interrupted"),
        "{:?}",
        sent[2]
    );
    assert_eq!(sent[3]["content"], "try again");
    assert!(server.take_pairing_violations().is_empty());
}

/// What four concurrent `--resume` runs left behind before the lock: prompts, calls and
/// results of different runs interleaved line by line.
fn interleaved_history(dir: &Path, id: &str) -> std::path::PathBuf {
    let header = json!({"type": "session", "schema": 1, "id": id, "provider": "fake",
                        "model": "fake-model", "cwd": "/w", "started_at": "2026-01-01T00:00:00Z"});
    let call = |id: &str| {
        json!({"id": id, "type": "function",
                                  "function": {"name": "ls", "arguments": "{}"}})
    };
    let lines = [
        header,
        json!({"role": "system", "content": "sys"}),
        json!({"role": "user", "content": "start"}),
        json!({"role": "assistant", "content": "ok"}),
        json!({"role": "user", "content": "run a"}),
        json!({"role": "user", "content": "run b"}),
        json!({"role": "assistant", "content": "", "tool_calls": [call("a1")]}),
        json!({"role": "assistant", "content": "", "tool_calls": [call("b1")]}),
        json!({"role": "tool", "content": "result a1", "tool_call_id": "a1"}),
        json!({"role": "tool", "content": "result b1", "tool_call_id": "b1"}),
        json!({"role": "tool", "content": "stray", "tool_call_id": "zz"}),
        json!({"role": "assistant", "content": "done a"}),
        json!({"role": "assistant", "content": "", "tool_calls": [call("b2"), call("b3")]}),
        json!({"role": "tool", "content": "result b3", "tool_call_id": "b3"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{id}.jsonl"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn resume_repairs_an_interleaved_history_and_reports_what_it_did() {
    let server = FakeOpenAI::start(vec![Reply::text("fine")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    // In the home, where reasonix keeps its own sessions: a file from elsewhere would be
    // adopted as a copy without authority instead of repaired in place.
    let sessions = reasonix::config::paths::sessions_dir(&home.join(".reasonix"), work.path());
    let path = interleaved_history(&sessions, "20260101T000000-abcdef");
    let out = run(reasonix(&home, work.path()).args([
        "run",
        "--resume",
        path.to_str().unwrap(),
        "--output-format",
        "stream-json",
        "next",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    let sent = messages(&server.requests()[0].body);
    assert!(
        server.take_pairing_violations().is_empty(),
        "broken pairing was sent: {sent:#?}"
    );
    assert_eq!(role_problems(&sent), Vec::<String>::new(), "{sent:#?}");
    let tool_ids: Vec<&str> = sent
        .iter()
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    assert_eq!(tool_ids, ["a1", "b1", "b3", "b2"], "{sent:#?}");
    let result_of = |id: &str| {
        sent.iter()
            .find(|m| m["tool_call_id"] == id)
            .map(|m| m["content"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(
        result_of("b1"),
        "result b1",
        "results are moved to their call"
    );
    assert!(
        result_of("b2").contains("interrupted"),
        "{}",
        result_of("b2")
    );
    let notices: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "notice" && e["message"].as_str().unwrap().contains("repaired"))
        .collect();
    assert_eq!(notices.len(), 1, "{out:?}");
    let notice = notices[0]["message"].as_str().unwrap();
    for part in ["moved", "dropped 1 tool result", "merged", "interrupted"] {
        assert!(notice.contains(part), "{part} missing from: {notice}");
    }
    // The repair was written back: the file now loads without one, as the model saw it.
    let (_, saved) = read_session(&path);
    // Requests carry an empty `reasoning_content` on tool-call turns; the file does not.
    let without_reasoning = |mut m: Value| {
        if m["reasoning_content"] == "" {
            m.as_object_mut().unwrap().remove("reasoning_content");
        }
        m
    };
    let sent_plain: Vec<Value> = sent.iter().cloned().map(without_reasoning).collect();
    assert_eq!(
        saved[..sent.len()],
        sent_plain[..],
        "file and request differ"
    );
    server.push(Reply::text("again"));
    let out =
        run(reasonix(&home, work.path()).args(["run", "--resume", path.to_str().unwrap(), "more"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stderr.contains("repaired"), "{out:?}");
}

// ---------------------------------------------------------------------------------------
// Private files.

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn session_files_and_the_state_dirs_created_for_them_are_private() {
    let server = FakeOpenAI::start(vec![Reply::text("one")]);
    let home = Dir::new();
    let work = Dir::new();
    // The config lives outside the state dir, so the run creates the state dir itself.
    let config = home.write(
        "config.toml",
        &format!(
            "default_model = \"fake\"\n[[providers]]\nname = \"fake\"\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"FAKE_API_KEY\"\n[environment]\nenabled = false\n",
            server.base_url()
        ),
    );
    let state = home.join("state");
    let mut cmd = reasonix(&home, work.path());
    cmd.env("REASONIX_HOME", &state)
        .args(["--config", config.to_str().unwrap(), "run", "hi"]);
    // SAFETY: umask is async-signal-safe; a permissive umask makes the test able to fail.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        });
    }
    let out = run(&mut cmd);
    assert_eq!(out.code, 0, "{out:?}");
    let sessions = std::fs::read_dir(state.join("projects"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("sessions");
    let file = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(mode(&file), 0o600, "{}", file.display());
    let mut dir = sessions.as_path();
    while dir != home.path() {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
        dir = dir.parent().unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// Empty replies.

fn retrying_provider(home: &Dir, base_url: &str) {
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"fake\"\n[[providers]]\nname = \"fake\"\nbase_url = \"{base_url}\"\nmodel = \"m\"\napi_key_env = \"FAKE_API_KEY\"\nretry = {{ max_retries = 2, initial_backoff_ms = 1, max_backoff_seconds = 1 }}\n[environment]\nenabled = false\n"
        ),
    );
}

fn empty_replies() -> [Reply; 3] {
    [
        Reply::events(vec![done()]),
        Reply::events(vec![
            sse_data(&json!({"id": "x", "choices": []})),
            sse_usage(10, 0, 0),
            done(),
        ]),
        Reply::events(vec![
            sse_chunk(json!({"role": "assistant", "content": null}), None),
            sse_chunk(json!({"content": null, "tool_calls": null}), None),
            sse_finish("stop"),
            done(),
        ]),
    ]
}

#[test]
fn an_empty_reply_is_retried_then_fails_the_run() {
    let server = FakeOpenAI::start(empty_replies().into());
    let home = Dir::new();
    let work = Dir::new();
    retrying_provider(&home, &server.base_url());
    let out = run(reasonix(&home, work.path()).args(["run", "--output-format", "json", "hi"]));
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(server.requests().len(), 3, "one try and two retries");
    assert!(out.stderr.contains("empty reply"), "{out:?}");
    let result: Value = serde_json::from_str(out.stdout.trim()).expect("a result object");
    assert_eq!(result["is_error"], true);
    assert!(
        result["error"].as_str().unwrap().contains("empty reply"),
        "{result}"
    );
    // Nothing was made up: the session holds the prompt and no empty answer.
    let (_, saved) = read_session(session_files(&home).last().unwrap());
    assert_eq!(roles(&saved), ["system", "user"], "{saved:?}");
}

#[test]
fn an_empty_reply_followed_by_a_real_one_succeeds() {
    let [first, ..] = empty_replies();
    let server = FakeOpenAI::start(vec![first, Reply::text("there")]);
    let home = Dir::new();
    let work = Dir::new();
    retrying_provider(&home, &server.base_url());
    let out = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "there\n");
    assert_eq!(server.requests().len(), 2);
}

// ---------------------------------------------------------------------------------------
// The result object on every exit path.

/// The last stdout line as the `result` object, checked for the fields every error has.
fn error_result(out: &Run, code: i32, error_part: &str) -> Value {
    assert_eq!(out.code, code, "{out:?}");
    let last = out
        .stdout
        .lines()
        .last()
        .unwrap_or_else(|| panic!("no stdout: {out:?}"));
    let result: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(result["type"], "result", "{out:?}");
    assert_eq!(result["is_error"], true, "{out:?}");
    assert_eq!(result["subtype"], "error_during_execution", "{out:?}");
    assert!(
        result["error"].as_str().unwrap_or("").contains(error_part),
        "{error_part} missing: {out:?}"
    );
    assert!(result.get("usage").is_some() && result.get("session_id").is_some());
    // The one-line message still goes to stderr for people.
    assert!(out.stderr.contains(error_part), "{out:?}");
    result
}

#[test]
fn json_formats_print_a_result_on_every_exit_path() {
    for format in ["json", "stream-json"] {
        // No key for the default remote provider.
        let home = Dir::new();
        let work = Dir::new();
        let out = run(reasonix(&home, work.path()).args(["run", "--output-format", format, "hi"]));
        let result = error_result(&out, 3, "$DEEPSEEK_API_KEY");
        assert_eq!(result["session_id"], Value::Null, "no session was started");

        // A broken project config.
        work.write("reasonix.toml", "[agent\n");
        let out = run(reasonix(&home, work.path()).args(["run", "--output-format", format, "hi"]));
        error_result(&out, 2, "reasonix.toml");
        std::fs::remove_file(work.join("reasonix.toml")).unwrap();

        // A bad flag after the format was given.
        let out = run(reasonix(&home, work.path()).args([
            "run",
            "--output-format",
            format,
            "--max-steps",
            "many",
            "hi",
        ]));
        error_result(&out, 2, "--max-steps");

        // The session cannot be created (the state dir is unusable, as on a full disk).
        let server = FakeOpenAI::start(vec![Reply::error(500, "upstream exploded")]);
        use_fake_provider(&home, &server.base_url(), "");
        home.write(".reasonix/projects", "not a directory");
        let out = run(reasonix(&home, work.path()).args(["run", "--output-format", format, "hi"]));
        error_result(&out, 1, "session");
        std::fs::remove_file(home.join(".reasonix/projects")).unwrap();

        // The provider fails.
        let out = run(reasonix(&home, work.path()).args(["run", "--output-format", format, "hi"]));
        let result = error_result(&out, 1, "upstream exploded");
        assert!(result["session_id"].is_string(), "{result}");
        if format == "stream-json" {
            let first: Value = serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
            assert_eq!(first["type"], "init");
        }
    }
}
