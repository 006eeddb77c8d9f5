//! Subagents through the real binary: `task` and `read_only_task` run a child agent against
//! the same fake model, in a child session stored under the parent's, and hand back only the
//! child's final answer; `reasonix run` never turns `/name` into a subagent.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, run, use_fake_provider, Dir};

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn last_content(body: &Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn system(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Every `*.jsonl` below a `children` directory under `dir`.
pub(crate) fn child_sessions(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(child_sessions(&path));
        } else if path.extension().is_some_and(|e| e == "jsonl")
            && path.parent().is_some_and(|p| p.ends_with("children"))
        {
            found.push(path);
        }
    }
    found
}

#[test]
fn task_returns_only_the_childs_answer_from_a_child_session_under_the_parents() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "task", r#"{"prompt":"find the config loader"}"#)]),
        Reply::text_then_tool_calls("looking", &[("k1", "ls", r#"{}"#)]),
        Reply::text("CHILD ANSWER: it is in src/config"),
        Reply::text("parent done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    work.write("notes.txt", "x");
    use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--output-format",
        "json",
        "delegate it",
    ]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(tool_names(&requests[0].body).contains(&"task".to_string()));
    // The child starts its own conversation with the task as its only user message.
    let child = &requests[1].body;
    let messages = child["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{child}");
    assert_eq!(messages[1]["content"], "find the config loader");
    assert!(!tool_names(child).contains(&"task".to_string()));
    // Only the final answer comes back, with the child session named.
    let result = last_content(&requests[3].body);
    assert!(
        result.contains("CHILD ANSWER: it is in src/config"),
        "{result}"
    );
    assert!(!result.contains("looking"), "{result}");
    let children = child_sessions(&home.join(".reasonix"));
    assert_eq!(children.len(), 1, "{children:?}");
    assert!(
        result.contains(&children[0].display().to_string()),
        "{result}"
    );
    let parent: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let parent_id = parent["session_id"].as_str().unwrap();
    assert!(
        children[0]
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .ends_with(parent_id),
        "{children:?}"
    );
    let saved = std::fs::read_to_string(&children[0]).unwrap();
    assert!(saved.contains("CHILD ANSWER"), "{saved}");
    // The child session resumes like any other, by path.
    server.push(Reply::text("resumed child"));
    let child_path = children[0].display().to_string();
    let resumed = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--resume",
        &child_path,
        "and more",
    ]));
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let again = &server.requests()[4].body;
    assert_eq!(again["messages"][1]["content"], "find the config loader");
    assert!(last_content(again).contains("and more"));
    // The child's usage rolls up: the fake server reports 100 prompt tokens per reply.
    assert_eq!(parent["usage"]["input_tokens"], 400, "{parent}");
}

#[test]
fn read_only_task_gives_the_child_no_writer() {
    // Under each jail: a fence that holds under bwrap but not under Landlock is a hole.
    for backend in crate::sandbox::jails() {
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[("c1", "read_only_task", r#"{"prompt":"look around"}"#)]),
            Reply::tool_calls(&[(
                "w1",
                "write_file",
                r#"{"path":"out.txt","content":"written"}"#,
            )]),
            // Its shell reads, but nothing it runs can write the workspace.
            Reply::tool_calls(&[(
                "b1",
                "bash",
                r#"{"command":"cat seen.txt; echo shell > out.txt; echo exit=$?"}"#,
            )]),
            Reply::text("child could not write"),
            Reply::text("parent done"),
        ]);
        let home = Dir::new();
        let work = Dir::new();
        work.write("seen.txt", "seen by the child");
        use_fake_provider(
            &home,
            &server.base_url(),
            &crate::escapes::sandbox_table(backend),
        );
        let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
            "run",
            "--permission-mode",
            "yolo",
            "look",
        ]));
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        let requests = server.requests();
        let child_tools = tool_names(&requests[1].body);
        assert!(
            child_tools.contains(&"read_file".to_string()),
            "{child_tools:?}"
        );
        for writer in ["write_file", "edit_file", "task", "read_only_task", "fleet"] {
            assert!(
                !child_tools.contains(&writer.to_string()),
                "{child_tools:?}"
            );
        }
        assert!(bash_description(&requests[1].body).contains("read-only"));
        let shell = last_content(&requests[3].body);
        assert!(shell.contains("seen by the child"), "{shell}");
        assert!(!shell.contains("exit=0"), "{shell}");
        assert!(!work.join("out.txt").exists());
        assert!(last_content(&requests[4].body).contains("child could not write"));
    }
}

/// The description of the `bash` tool a request offers.
fn bash_description(body: &Value) -> String {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["function"]["name"] == "bash")
        .and_then(|t| t["function"]["description"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_deny_rule_of_the_parent_blocks_the_childs_call() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "task", r#"{"prompt":"write it"}"#)]),
        Reply::tool_calls(&[(
            "w1",
            "write_file",
            r#"{"path":"out.txt","content":"written"}"#,
        )]),
        Reply::text("child was denied"),
        Reply::text("parent done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--permission-mode",
        "yolo",
        "--deny",
        "Write",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = server.requests();
    // The write came from the child (its own conversation), and the parent's rule held.
    assert_eq!(requests[1].body["messages"][1]["content"], "write it");
    assert!(!work.join("out.txt").exists());
    let refused = last_content(&requests[2].body);
    assert!(refused.contains("blocked by rule `Write`"), "{refused}");
}

#[test]
fn interrupting_the_parent_ends_the_child() {
    let (stalled, release) = Reply::stall();
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "task", r#"{"prompt":"take forever"}"#)]),
        stalled,
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let mut child = crate::util::spawn_piped(
        reasonix(&home, work.path())
            .env("FAKE_API_KEY", "k")
            .args(["run", "go"]),
    );
    let requests = server.wait_for_requests(2);
    assert_eq!(requests[1].body["messages"][1]["content"], "take forever");
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    server.wait_for_client_hangups(1);
    release.release();
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn profile_names_stay_out_of_the_parents_schemas_and_prompt() {
    let server = FakeOpenAI::start(vec![Reply::text("ok")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    home.write(
        ".reasonix/skills/secret-helper/SKILL.md",
        "---\nname: secret-helper\ndescription: Private profile\nrunAs: subagent\ninvocation: manual\n---\nYou help.\n",
    );
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "hi"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let body = &server.requests()[0].body;
    let text = body.to_string();
    // `review` is an ordinary word in other tools' descriptions; the task tools and the
    // prompt's skill index must not name any profile.
    for name in ["secret-helper", "explore"] {
        assert!(!text.contains(name), "{name} leaked: {text}");
    }
    let tasks: Vec<&Value> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["function"]["name"].as_str().unwrap().ends_with("task"))
        .collect();
    assert_eq!(tasks.len(), 2, "{text}");
    for tool in tasks {
        assert!(!tool.to_string().contains("review"), "{tool}");
    }
}

#[test]
fn a_subagent_skill_runs_as_a_child_with_its_body_as_the_system_prompt() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[(
            "c1",
            "skill",
            r#"{"name":"helper","args":"count the files"}"#,
        )]),
        Reply::text("three files"),
        Reply::text("parent done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    home.write(
        ".reasonix/skills/helper/SKILL.md",
        "---\nname: helper\ndescription: Counts things\nrunAs: subagent\n---\nYou are the helper profile.\n",
    );
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "go"]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = server.requests();
    assert_eq!(system(&requests[1].body), "You are the helper profile.");
    assert_eq!(
        requests[1].body["messages"][1]["content"],
        "count the files"
    );
    assert!(last_content(&requests[2].body).contains("three files"));
}

#[test]
fn run_never_turns_a_slash_profile_name_into_a_subagent() {
    let server = FakeOpenAI::start(vec![Reply::text("plain answer")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    // `/explore` is a built-in profile, not a command: `run` reports it as unknown, as it
    // would any unknown `/word`, instead of starting a child.
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "/explore where is main"]));
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("unknown command /explore"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty());
    assert!(child_sessions(&home.join(".reasonix")).is_empty());
}

#[test]
fn subagent_list_shows_built_in_and_stored_profiles() {
    let home = Dir::new();
    let work = Dir::new();
    home.write(
        ".reasonix/skills/helper/SKILL.md",
        "---\nname: helper\ndescription: Counts things\nrunAs: subagent\nmodel: fake-model\n---\nYou help.\n",
    );
    home.write(
        ".reasonix/skills/notes/SKILL.md",
        "---\nname: notes\ndescription: Inline notes\n---\nTake notes.\n",
    );
    let out = run(reasonix(&home, work.path()).args(["subagent", "list"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("explore  [built-in, read-only]  Read-only codebase research"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("helper   [user, model fake-model]  Counts things"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("review   [built-in]"), "{}", out.stdout);
    assert!(!out.stdout.contains("notes"), "{}", out.stdout);
}

#[test]
fn subagent_try_is_read_only_and_run_has_the_normal_tools() {
    let server = FakeOpenAI::start(vec![Reply::text("found it"), Reply::text("reviewed")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let tried = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "subagent",
        "try",
        "explore",
        "--output-format",
        "json",
        "where is main",
    ]));
    assert_eq!(tried.code, 0, "{}\n{}", tried.stdout, tried.stderr);
    let result: Value = serde_json::from_str(tried.stdout.trim()).unwrap();
    assert_eq!(result["result"], "found it");
    let ran = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "subagent",
        "run",
        "review",
        "check the diff",
    ]));
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("reviewed"), "{}", ran.stdout);
    let requests = server.requests();
    assert!(system(&requests[0].body).starts_with("You are a research subagent"));
    assert_eq!(last_content(&requests[0].body), "where is main");
    let tried_tools = tool_names(&requests[0].body);
    assert!(tried_tools.contains(&"grep".to_string()), "{tried_tools:?}");
    for writer in ["write_file", "task"] {
        assert!(
            !tried_tools.contains(&writer.to_string()),
            "{tried_tools:?}"
        );
    }
    // Its shell is the one that cannot write, as in a read-only child.
    assert!(bash_description(&requests[0].body).contains("read-only"));
    assert!(system(&requests[1].body).starts_with("You are a code review subagent"));
    let run_tools = tool_names(&requests[1].body);
    assert!(run_tools.contains(&"bash".to_string()), "{run_tools:?}");

    let unknown = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["subagent", "try", "nosuch", "x"]));
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("no subagent profile `nosuch`"),
        "{}",
        unknown.stderr
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn subagent_effort_follows_the_precedence_of_config_call_and_profile() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "task", r#"{"prompt":"plain"}"#)]),
        Reply::text("a"),
        Reply::tool_calls(&[("c2", "task", r#"{"prompt":"called","effort":"medium"}"#)]),
        Reply::text("b"),
        Reply::tool_calls(&[(
            "c3",
            "task",
            r#"{"prompt":"profiled","profile":"review","effort":"medium"}"#,
        )]),
        Reply::text("c"),
        Reply::tool_calls(&[("c4", "task", r#"{"prompt":"fronted","profile":"helper"}"#)]),
        Reply::text("d"),
        Reply::text("parent done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(
        &home,
        &server.base_url(),
        "[agent]\nsubagent_effort = \"low\"\nsubagent_efforts = { review = \"high\" }",
    );
    home.write(
        ".reasonix/skills/helper/SKILL.md",
        "---\nname: helper\ndescription: Helps\nrunAs: subagent\neffort: minimal\n---\nYou help.\n",
    );
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "go"]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("not supported"), "{}", out.stderr);
    let requests = server.requests();
    let effort = |i: usize| requests[i].body["reasoning_effort"].clone();
    assert_eq!(requests[1].body["messages"][1]["content"], "plain");
    assert_eq!(effort(1), "low");
    assert_eq!(effort(3), "medium");
    assert_eq!(effort(5), "high");
    assert_eq!(effort(7), "minimal");
    assert!(effort(0).is_null(), "{}", requests[0].body);
}

#[test]
fn stream_json_reports_each_finished_subagent() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[(
            "c1",
            "read_only_task",
            r#"{"prompt":"look","profile":"explore"}"#,
        )]),
        Reply::text_then_tool_calls("reading", &[("k1", "ls", r#"{}"#)]),
        Reply::text("seen"),
        Reply::text("parent done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--output-format",
        "stream-json",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reports: Vec<&Value> = events.iter().filter(|e| e["type"] == "subagent").collect();
    assert_eq!(reports.len(), 1, "{}", out.stdout);
    let report = reports[0];
    assert_eq!(report["profile"], "explore");
    assert_eq!(report["read_only"], true);
    assert_eq!(report["ok"], true);
    assert_eq!(report["num_turns"], 2);
    assert_eq!(report["tool_rounds"], 1);
    assert_eq!(report["usage"]["input_tokens"], 200);
    let children = child_sessions(&home.join(".reasonix"));
    assert_eq!(report["session_path"], children[0].display().to_string());
    // The child's own text reaches the parent's stream only tagged with the call that
    // started it, never as the parent's text.
    let text_of = |tagged: bool| -> String {
        events
            .iter()
            .filter(|e| e["type"] == "text" && e.get("parent_tool_use_id").is_some() == tagged)
            .filter_map(|e| e["text"].as_str())
            .collect()
    };
    assert_eq!(text_of(true), "readingseen", "{}", out.stdout);
    assert!(!text_of(false).contains("reading"), "{}", out.stdout);
    assert!(
        events
            .iter()
            .filter(|e| e.get("parent_tool_use_id").is_some() && e["type"] == "text")
            .all(|e| e["parent_tool_use_id"] == "c1" && e["task"] == 0),
        "{}",
        out.stdout
    );
    let result = events.last().unwrap();
    assert_eq!(result["usage"]["input_tokens"], 400, "{result}");
}

#[test]
fn the_parents_tool_hooks_judge_the_childs_calls_and_subagent_stop_fires() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "task", r#"{"prompt":"write it"}"#)]),
        Reply::tool_calls(&[(
            "w1",
            "write_file",
            r#"{"path":"out.txt","content":"written"}"#,
        )]),
        Reply::text("child blocked"),
        Reply::text("parent done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    let hooks = "[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"write_file\"\n\
                 command = '''echo no writes from hooks >&2; exit 2'''\n\n\
                 [[hooks]]\nevent = \"SubagentStop\"\n\
                 command = '''cat > subagent-stop.json'''\n";
    use_fake_provider(&home, &server.base_url(), hooks);
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--permission-mode",
        "yolo",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("SubagentStop"), "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests[1].body["messages"][1]["content"], "write it");
    assert!(!work.join("out.txt").exists());
    let refused = last_content(&requests[2].body);
    assert!(refused.contains("no writes from hooks"), "{refused}");
    let stop: Value = serde_json::from_str(&work.read("subagent-stop.json")).unwrap();
    assert_eq!(stop["hook_event_name"], "SubagentStop");
    assert_eq!(stop["last_assistant_message"], "child blocked");
}

#[test]
fn the_chat_runs_subagents_too() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "read_only_task", r#"{"prompt":"scan"}"#)]),
        Reply::text("CHAT CHILD"),
        Reply::text("chat parent done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let out = crate::util::piped_chat(&home, work.path(), &[], "look around\n");
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{out:?}");
    assert_eq!(requests[1].body["messages"][1]["content"], "scan");
    assert!(last_content(&requests[2].body).contains("CHAT CHILD"));
    assert_eq!(child_sessions(&home.join(".reasonix")).len(), 1);
}

#[test]
fn after_new_a_childs_session_goes_under_the_current_parent() {
    let server = FakeOpenAI::start(vec![
        Reply::text("first answer"),
        Reply::tool_calls(&[("c1", "read_only_task", r#"{"prompt":"scan"}"#)]),
        Reply::text("CHILD"),
        Reply::text("second answer"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = crate::util::pty::Pty::spawn(cmd, 100, 30);
    pty.wait_text("fake-model · ask");
    pty.send("first\r");
    pty.wait_text("first answer");
    pty.wait_text("Ask anything");
    pty.send("/new\r");
    pty.wait_text("new conversation");
    pty.send("second\r");
    pty.wait_text("second answer");
    pty.wait_text("Ask anything");
    pty.send("\x04");
    assert!(pty.wait_exit().success(), "{}", pty.screen());
    let children = child_sessions(&home.join(".reasonix"));
    assert_eq!(children.len(), 1);
    let parent_file = children[0]
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .with_extension("jsonl");
    let parent = std::fs::read_to_string(&parent_file).unwrap();
    assert!(parent.contains("second answer"), "{parent}");
    assert!(!parent.contains("first answer"), "{parent}");
}

#[test]
fn a_profile_from_an_untrusted_workspace_runs_read_only() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "task", r#"{"prompt":"go","profile":"repo-agent"}"#)]),
        Reply::text("child"),
        Reply::text("parent done"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    work.write(
        ".reasonix/skills/repo-agent/SKILL.md",
        "---\nname: repo-agent\ndescription: From the repository\nrunAs: subagent\n---\nYou are the repository's agent.\n",
    );
    let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
        "run",
        "--permission-mode",
        "yolo",
        "go",
    ]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = server.requests();
    assert_eq!(system(&requests[1].body), "You are the repository's agent.");
    let tools = tool_names(&requests[1].body);
    assert!(tools.contains(&"read_file".to_string()), "{tools:?}");
    assert!(!tools.contains(&"write_file".to_string()), "{tools:?}");
    assert!(bash_description(&requests[1].body).contains("read-only"));
}

/// `/<profile> TASK` in the chat runs the profile host-side (the spec's
/// `RunSubagentProfile`): the child's request is the first one sent, with the profile's body
/// as its system prompt and the task as its only user message; the model is never asked to
/// call `task`. The answer enters the conversation, so the next request carries it, after a
/// prefix that did not move.
#[test]
fn a_slash_profile_in_the_chat_runs_the_profile_host_side() {
    let server = FakeOpenAI::start(vec![
        Reply::text("hello there"),
        Reply::text("SCOUTED: the loader is in src/load.rs"),
        Reply::text("noted"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    home.write(
        ".reasonix/skills/scout/SKILL.md",
        "---\nname: scout\ndescription: Finds things\nrunAs: subagent\ninvocation: manual\n---\nYou are the scout profile.\n",
    );
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = crate::util::pty::Pty::spawn(cmd, 100, 30);
    pty.wait_text("fake-model · ask");
    pty.send("hello\r");
    pty.wait_text("hello there");
    pty.wait_text("Ask anything");
    pty.send("/scout where is the loader\r");
    pty.wait_text("SCOUTED");
    pty.wait_text("Ask anything");
    pty.send("thanks\r");
    pty.wait_text("noted");
    pty.wait_text("Ask anything");
    pty.send("\x04");
    assert!(pty.wait_exit().success(), "{}", pty.screen());
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", pty.screen());
    // The child: the profile's prompt, the task, and no `task` call asked of the parent.
    assert_eq!(system(&requests[1].body), "You are the scout profile.");
    assert_eq!(
        requests[1].body["messages"][1]["content"],
        "where is the loader"
    );
    assert_eq!(requests[1].body["messages"].as_array().unwrap().len(), 2);
    // The parent's next request: its earlier messages unchanged, then the user's `/scout`
    // turn and the child's answer, then the new message.
    let before = requests[0].body["messages"].as_array().unwrap();
    let after = requests[2].body["messages"].as_array().unwrap();
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "the cached prefix moved"
    );
    let added: Vec<(&str, &str)> = after[before.len()..]
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default(),
                m["content"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(added.len(), 4, "{added:?}");
    assert_eq!(added[0], ("assistant", "hello there"));
    assert_eq!(added[1].0, "user");
    assert!(
        added[1].1.starts_with("/scout where is the loader"),
        "{added:?}"
    );
    assert_eq!(
        added[2],
        ("assistant", "SCOUTED: the loader is in src/load.rs")
    );
    assert_eq!(added[3], ("user", "thanks"));
    // A manual profile stays out of the parent's system prompt, yet `/scout` runs it.
    assert!(!system(&requests[0].body).contains("scout"));
    assert_eq!(child_sessions(&home.join(".reasonix")).len(), 1);
}

/// The plain (piped) chat runs `/<profile> TASK` host-side too; the built-in `explore`
/// profile runs read-only with its own prompt.
#[test]
fn a_slash_profile_in_the_piped_chat_runs_host_side() {
    let server = FakeOpenAI::start(vec![Reply::text("EXPLORED"), Reply::text("parent done")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let out = crate::util::piped_chat(
        &home,
        work.path(),
        &[],
        "/explore where is the loader\nwhat did it find\n",
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("EXPLORED"), "{out:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{out:?}");
    assert_eq!(
        requests[0].body["messages"][1]["content"],
        "where is the loader"
    );
    assert!(!tool_names(&requests[0].body).contains(&"write_file".to_string()));
    assert!(!tool_names(&requests[0].body).contains(&"task".to_string()));
    let parent = requests[1].body["messages"].as_array().unwrap();
    assert!(parent
        .iter()
        .any(|m| m["role"] == "assistant" && m["content"] == "EXPLORED"));
    assert_eq!(last_content(&requests[1].body), "what did it find");
}
