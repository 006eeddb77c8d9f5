//! Hooks through the real binary: `[[hooks]]` and `.claude/settings.json` hooks block tool
//! calls and prompts, add context, keep a turn going from `Stop`, can never allow what the
//! policy denies, time out without blocking, and a repository's hooks need trust.

use serde_json::Value;

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, run, use_fake_provider, Dir};

fn hook_config(entries: &[(&str, &str, &str)]) -> String {
    entries
        .iter()
        .map(|(event, matcher, command)| {
            format!(
                "[[hooks]]\nevent = \"{event}\"\nmatcher = \"{matcher}\"\ncommand = '''{command}'''\ntimeout_seconds = 20\n"
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn stream_events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn last_message(server: &FakeOpenAI, request: usize) -> String {
    let requests = server.requests();
    let messages = requests[request].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_pre_tool_use_hook_blocks_a_command_and_the_model_reads_why() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "bash", r#"{"command":"echo ran > ran.txt"}"#)]),
        Reply::text("ok"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    // Written for Claude Code: matches `Bash`, reads tool_input.command from stdin.
    let hook =
        r#"grep -q 'ran.txt' && { echo 'writing ran.txt is not allowed' >&2; exit 2; }; exit 0"#;
    use_fake_provider(
        &home,
        &server.base_url(),
        &hook_config(&[("PreToolUse", "Bash", hook)]),
    );
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--output-format",
        "stream-json",
        "--permission-mode",
        "yolo",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!work.join("ran.txt").exists(), "the blocked command ran");
    let result = last_message(&server, 1);
    assert!(
        result.contains("writing ran.txt is not allowed"),
        "{result}"
    );
    let events = stream_events(&out.stdout);
    let hook = events
        .iter()
        .find(|e| e["type"] == "hook")
        .expect("a hook event");
    assert_eq!(hook["event"], "PreToolUse");
    assert_eq!(hook["outcome"], "blocked");
    assert_eq!(hook["tool"], "bash");
}

#[test]
fn a_hook_cannot_allow_what_a_deny_rule_blocks() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "bash", r#"{"command":"touch denied.txt"}"#)]),
        Reply::text("ok"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'"#;
    let extra = format!(
        "{}\n[permissions]\ndeny = [\"Bash(touch:*)\"]\n",
        hook_config(&[("PreToolUse", "", allow)])
    );
    use_fake_provider(&home, &server.base_url(), &extra);
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--output-format",
        "stream-json",
        "--permission-mode",
        "yolo",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!work.join("denied.txt").exists());
    let events = stream_events(&out.stdout);
    let hook = events.iter().find(|e| e["type"] == "hook").unwrap();
    assert!(
        hook["message"].as_str().unwrap().contains("only tighten"),
        "{hook}"
    );
}

#[test]
fn prompt_hooks_add_context_or_block_the_turn() {
    let server = FakeOpenAI::start(vec![Reply::text("ok")]);
    let home = Dir::new();
    let work = Dir::new();
    let hooks = hook_config(&[(
        "UserPromptSubmit",
        "",
        r#"grep -q forbidden && { echo 'say it nicely' >&2; exit 2; }; echo 'ticket: RX-42'"#,
    )]);
    use_fake_provider(&home, &server.base_url(), &hooks);
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "fix the bug"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let user = last_message(&server, 0);
    assert!(
        user.starts_with("fix the bug") && user.contains("ticket: RX-42"),
        "{user}"
    );
    let blocked = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "do the forbidden thing"]));
    assert_eq!(blocked.code, 1, "{}", blocked.stderr);
    assert!(
        blocked.stderr.contains("say it nicely"),
        "{}",
        blocked.stderr
    );
    assert_eq!(
        server.requests().len(),
        1,
        "a blocked prompt reached the model"
    );
}

#[test]
fn a_stop_hook_keeps_the_turn_going_until_it_is_satisfied() {
    let server = FakeOpenAI::start(vec![Reply::text("done?"), Reply::text("now done")]);
    let home = Dir::new();
    let work = Dir::new();
    // Blocks the first stop only: the second time it finds its mark.
    let hook = r#"test -f stopped-once && exit 0; touch stopped-once; echo '{"decision":"block","reason":"run the tests first"}'"#;
    use_fake_provider(
        &home,
        &server.base_url(),
        &hook_config(&[("Stop", "", hook)]),
    );
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim_end(), "done?\nnow done", "{}", out.stdout);
    let nudge = last_message(&server, 1);
    assert!(nudge.contains("run the tests first"), "{nudge}");
}

#[test]
fn repository_hooks_run_only_in_a_trusted_workspace() {
    let server = FakeOpenAI::start(vec![Reply::text("ok"), Reply::text("ok")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let mark = work.join("hook-ran");
    work.write(
        ".claude/settings.json",
        &format!(
            r#"{{"hooks":{{"UserPromptSubmit":[{{"hooks":[{{"type":"command","command":"touch {}"}}]}}]}}}}"#,
            mark.display()
        ),
    );
    work.write(
        "reasonix.toml",
        &format!(
            "[[hooks]]\nevent = \"SessionStart\"\ncommand = \"touch {}-toml\"\n",
            mark.display()
        ),
    );
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !mark.exists() && !work.join("hook-ran-toml").exists(),
        "an untrusted repository's hook ran"
    );
    assert!(out.stderr.contains("not trusted"), "{}", out.stderr);
    assert_eq!(run(reasonix(&home, work.path()).arg("trust")).code, 0);
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "go"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        mark.exists() && work.join("hook-ran-toml").exists(),
        "{}",
        out.stderr
    );
}

#[test]
fn a_permission_request_hook_denies_what_would_otherwise_be_allowed_without_a_user() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "write_file", r#"{"path":"out.txt","content":"x"}"#)]),
        Reply::text("ok"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    // Headless, the writer's Ask is resolved without a user; this hook refuses instead.
    let hook = r#"cat > request.json; echo 'no unattended writes' >&2; exit 2"#;
    use_fake_provider(
        &home,
        &server.base_url(),
        &hook_config(&[("PermissionRequest", "Write", hook)]),
    );
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--output-format",
        "stream-json",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!work.join("out.txt").exists(), "the denied write ran");
    let events = stream_events(&out.stdout);
    let permission = events.iter().find(|e| e["type"] == "permission").unwrap();
    assert_eq!(permission["resolution"], "hook", "{permission}");
    assert_eq!(permission["allowed"], false);
    assert!(last_message(&server, 1).contains("no unattended writes"));
    assert!(events
        .iter()
        .any(|e| e["type"] == "hook" && e["event"] == "PermissionRequest"));
    let request: Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("request.json")).unwrap()).unwrap();
    assert_eq!(request["tool_name"], "write_file");
    assert_eq!(request["interactive"], false);
}

#[test]
fn a_notification_hook_hears_when_the_chat_waits_for_an_approval() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "write_file", r#"{"path":"out.txt","content":"x"}"#)]),
        Reply::text("ok"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    let hook = r#"cat > notified.json"#;
    use_fake_provider(
        &home,
        &server.base_url(),
        &hook_config(&[("Notification", "", hook)]),
    );
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = crate::util::pty::Pty::spawn(cmd, 100, 30);
    pty.wait_text("fake-model · ask");
    pty.send("write it\r");
    pty.wait_text("write_file");
    let notified = work.join("notified.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(&notified).is_ok_and(|t| t.ends_with('}')) {
        assert!(
            std::time::Instant::now() < deadline,
            "no notification\n{}",
            pty.screen()
        );
        std::thread::yield_now();
    }
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&notified).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "Notification");
    assert_eq!(
        input["message"],
        "reasonix needs your permission to use write_file"
    );
    pty.wait_text("Allow write_file?");
    pty.send("y");
    pty.wait_text("Ask anything");
    assert!(work.join("out.txt").exists());
    pty.send("\x04");
    assert!(pty.wait_exit().success());
}

#[test]
fn after_new_in_the_chat_session_start_runs_again_for_the_new_session() {
    let server = FakeOpenAI::start(vec![Reply::text("one"), Reply::text("two")]);
    let home = Dir::new();
    let work = Dir::new();
    let hook = r#"cat >> starts.jsonl; echo >> starts.jsonl"#;
    use_fake_provider(
        &home,
        &server.base_url(),
        &hook_config(&[("SessionStart", "", hook)]),
    );
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = crate::util::pty::Pty::spawn(cmd, 100, 30);
    pty.wait_text("fake-model · ask");
    pty.send("first\r");
    pty.wait_text("one");
    pty.wait_text("Ask anything");
    pty.send("/new\r");
    pty.wait_text("new conversation");
    pty.send("second\r");
    pty.wait_text("two");
    pty.send("\x04");
    assert!(pty.wait_exit().success());
    let starts: Vec<Value> = std::fs::read_to_string(work.join("starts.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert_eq!(starts[0]["source"], "startup");
    assert_eq!(starts[1]["source"], "startup");
    assert_ne!(
        starts[0]["session_id"], starts[1]["session_id"],
        "{starts:?}"
    );
    assert_ne!(starts[0]["transcript_path"], starts[1]["transcript_path"]);
}

#[test]
fn approve_plan_is_no_person_so_notification_hooks_stay_quiet() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("p1", "exit_plan_mode", r#"{"plan":"1. Write it"}"#)]),
        Reply::text("done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(
        &home,
        &server.base_url(),
        &hook_config(&[("Notification", "", "touch notified")]),
    );
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--plan",
        "--approve-plan",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests().len(), 2, "{}", out.stderr);
    assert!(
        !work.join("notified").exists(),
        "a plan approved by a flag notified"
    );
}
