//! Claude Code's print mode through the real binary and the fake model: `reasonix -p` with
//! Claude Code's flags, its stream-json messages and result in Claude Code's shape and tool
//! names, its permission semantics (a headless ask is denied in `default`), and the flag
//! table kept in step with `reasonix help print` and the man page.

use serde_json::Value;

use crate::util::fake_openai::{done, sse_finish, sse_text, sse_usage, FakeOpenAI, Reply};
use crate::util::{reasonix, run, run_with_stdin, use_fake_provider, Dir, Run};

/// A workspace, a home using the fake server, and `reasonix` with `args` in it.
struct Case {
    server: FakeOpenAI,
    home: Dir,
    work: Dir,
}

impl Case {
    fn new(replies: Vec<Reply>, config: &str) -> Case {
        let server = FakeOpenAI::start(replies);
        let home = Dir::new();
        let work = Dir::new();
        use_fake_provider(&home, &server.base_url(), config);
        Case { server, home, work }
    }

    fn run(&self, args: &[&str]) -> Run {
        run(reasonix(&self.home, self.work.path())
            .args(args)
            .env("FAKE_API_KEY", "k"))
    }
}

/// Every stdout line as JSON.
pub fn lines(out: &Run) -> Vec<Value> {
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}\n{out:?}")))
        .collect()
}

fn of_type<'a>(messages: &'a [Value], kind: &str) -> Vec<&'a Value> {
    messages.iter().filter(|m| m["type"] == kind).collect()
}

fn result(messages: &[Value]) -> &Value {
    let last = messages.last().expect("a message");
    assert_eq!(
        last["type"], "result",
        "the result comes last: {messages:?}"
    );
    last
}

#[test]
fn text_output_is_the_final_answer_only() {
    let case = Case::new(vec![Reply::text("hello there")], "");
    let out = case.run(&["-p", "say hi"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "hello there\n");
    // `reasonix print` is the same mode under its own name.
    let case = Case::new(vec![Reply::text("again")], "");
    let out = case.run(&["print", "say hi"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "again\n"), "{out:?}");
}

#[test]
fn stream_json_has_claude_codes_messages_in_order_with_claude_tool_names() {
    let case = Case::new(
        vec![
            Reply::tool_calls(&[("call_1", "read_file", r#"{"path":"a.txt"}"#)]),
            Reply::events(vec![
                sse_text("the file says "),
                sse_text("hi"),
                sse_finish("stop"),
                sse_usage(1000, 20, 800),
                done(),
            ]),
        ],
        "",
    );
    case.work.write("a.txt", "hi\n");
    let out = case.run(&[
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "read a.txt",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let messages = lines(&out);
    let init = &messages[0];
    assert_eq!(
        (&init["type"], &init["subtype"]),
        (&"system".into(), &"init".into()),
        "{init}"
    );
    for key in [
        "cwd",
        "session_id",
        "tools",
        "mcp_servers",
        "model",
        "permissionMode",
        "slash_commands",
        "apiKeySource",
        "uuid",
    ] {
        assert!(init.get(key).is_some(), "init lacks {key}: {init}");
    }
    let tools: Vec<&str> = init["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in [
        "Read",
        "Write",
        "Edit",
        "MultiEdit",
        "Bash",
        "Glob",
        "Grep",
        "LS",
        "TodoWrite",
    ] {
        assert!(tools.contains(&name), "{name} not in {tools:?}");
    }
    assert!(!tools.contains(&"read_file"), "{tools:?}");
    assert_eq!(init["permissionMode"], "default");
    let session = init["session_id"].as_str().unwrap();

    let assistant = of_type(&messages, "assistant");
    let tool_use = &assistant[0]["message"]["content"][0];
    assert_eq!(tool_use["type"], "tool_use");
    assert_eq!(tool_use["name"], "Read");
    assert_eq!(tool_use["id"], "call_1");
    assert_eq!(tool_use["input"], serde_json::json!({"file_path": "a.txt"}));
    let user = of_type(&messages, "user");
    let tool_result = &user[0]["message"]["content"][0];
    assert_eq!(tool_result["type"], "tool_result");
    assert_eq!(tool_result["tool_use_id"], "call_1");
    assert!(
        tool_result["content"].as_str().unwrap().contains("hi"),
        "{tool_result}"
    );
    let text = &assistant[1]["message"]["content"][0];
    assert_eq!(
        (&text["type"], &text["text"]),
        (&"text".into(), &"the file says hi".into())
    );
    for message in assistant.iter().chain(&user) {
        assert_eq!(message["session_id"], session);
        assert!(message["parent_tool_use_id"].is_null(), "{message}");
        assert!(message["uuid"].is_string());
    }
    assert!(assistant[1]["message"]["model"].is_string());

    let result = result(&messages);
    for key in [
        "subtype",
        "is_error",
        "duration_ms",
        "duration_api_ms",
        "num_turns",
        "result",
        "session_id",
        "total_cost_usd",
        "usage",
        "modelUsage",
        "permission_denials",
        "stop_reason",
        "uuid",
    ] {
        assert!(result.get(key).is_some(), "result lacks {key}: {result}");
    }
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "the file says hi");
    assert_eq!(result["stop_reason"], "end_turn");
    assert_eq!(result["num_turns"], 2);
    // Claude Code's accounting: the cached 800 are not in input_tokens.
    let usage = &result["usage"];
    assert_eq!(usage["input_tokens"], 100 + 200, "{usage}");
    assert_eq!(usage["cache_read_input_tokens"], 800, "{usage}");
    assert_eq!(usage["cache_creation_input_tokens"], 0);
    assert_eq!(usage["output_tokens"], 30);
    assert!(
        result["modelUsage"]["fake-model"]["inputTokens"].is_u64(),
        "{result}"
    );
}

/// The `system/init` message of a one-answer `stream-json` run of `reasonix` in `case`, with
/// `env` set.
fn init_of(case: &Case, env: &[(&str, &str)]) -> Value {
    let mut cmd = reasonix(&case.home, case.work.path());
    cmd.args(["-p", "--output-format", "stream-json", "--verbose", "hi"]);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = run(&mut cmd);
    assert_eq!(out.code, 0, "{out:?}");
    lines(&out)[0].clone()
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn init_lists_commands_skills_agents_and_where_the_key_came_from() {
    let case = Case::new(vec![Reply::text("a"), Reply::text("b")], "");
    case.home
        .write(".reasonix/commands/deploy.md", "Deploy $ARGUMENTS now.\n");
    case.home.write(
        ".reasonix/skills/lint/SKILL.md",
        "---\nname: lint\ndescription: Lint the code\n---\nRun the linter.\n",
    );
    case.home.write(
        ".claude/agents/reviewer.md",
        "---\nname: code-reviewer\ndescription: Reviews a diff\n---\nYou review code.\n",
    );
    let init = init_of(&case, &[("FAKE_API_KEY", "k")]);
    // What a print-mode prompt may start with, without the slash: the custom commands (skills
    // and profiles run as `/NAME` in the chat only).
    assert_eq!(strings(&init["slash_commands"]), ["deploy"], "{init}");
    assert_eq!(strings(&init["skills"]), ["lint"], "{init}");
    let agents = strings(&init["agents"]);
    for name in ["code-reviewer", "explore", "review"] {
        assert!(agents.contains(&name), "{name} not in {agents:?}");
    }
    assert!(!agents.contains(&"lint"), "{agents:?}");
    assert_eq!(init["apiKeySource"], "ANTHROPIC_API_KEY", "{init}");
    // The key stored in the home's `.env` (as `reasonix setup` writes it), no variable set.
    case.home.write(".reasonix/.env", "FAKE_API_KEY=stored\n");
    let init = init_of(&case, &[]);
    assert_eq!(init["apiKeySource"], "/login managed key", "{init}");
}

#[test]
fn init_says_none_when_the_provider_takes_no_key_and_lists_the_built_in_agents() {
    let server = FakeOpenAI::start(vec![Reply::text("a")]);
    let home = Dir::new();
    let work = Dir::new();
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"local\"\n\n[[providers]]\nname = \"local\"\nbase_url = \"{}\"\nmodel = \"m\"\nretry = {{ max_retries = 0 }}\n\n[environment]\nenabled = false\n",
            server.base_url()
        ),
    );
    let out = run(reasonix(&home, work.path()).args([
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "hi",
    ]));
    assert_eq!(out.code, 0, "{out:?}");
    let init = &lines(&out)[0];
    assert_eq!(init["apiKeySource"], "none", "{out:?}");
    // No skill anywhere: the built-in profiles are still what `Task` can run.
    assert_eq!(strings(&init["agents"]), ["explore", "review"], "{init}");
    assert_eq!(strings(&init["skills"]), Vec::<&str>::new(), "{init}");
}

#[test]
fn json_output_is_the_result_object_alone() {
    let case = Case::new(vec![Reply::text("done")], "");
    let out = case.run(&["-p", "--output-format", "json", "go"]);
    assert_eq!(out.code, 0, "{out:?}");
    let messages = lines(&out);
    assert_eq!(messages.len(), 1, "{out:?}");
    assert_eq!(messages[0]["type"], "result");
    assert_eq!(messages[0]["result"], "done");
    // Bare `reasonix --output-format json` is print mode too, as for `claude`.
    let case = Case::new(vec![Reply::text("bare")], "");
    let out = case.run(&["--output-format=json", "go"]);
    assert_eq!(lines(&out)[0]["result"], "bare", "{out:?}");
}

#[test]
fn partial_messages_stream_text_deltas() {
    let case = Case::new(vec![Reply::text("streamed answer")], "");
    let out = case.run(&[
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "go",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let messages = lines(&out);
    let events: Vec<&Value> = of_type(&messages, "stream_event")
        .into_iter()
        .map(|m| &m["event"])
        .collect();
    assert_eq!(
        events.first().map(|e| &e["type"]),
        Some(&"message_start".into()),
        "{events:?}"
    );
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "content_block_delta")
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "streamed answer");
    assert_eq!(
        events.last().map(|e| &e["type"]),
        Some(&"message_stop".into())
    );
}

#[test]
fn partial_messages_stream_tool_use_blocks_in_claude_names() {
    let case = Case::new(
        vec![
            Reply::text_then_tool_calls(
                "Reading.",
                &[("call_1", "read_file", r#"{"path":"a.txt"}"#)],
            ),
            Reply::text("it says hi"),
        ],
        "",
    );
    case.work.write("a.txt", "hi\n");
    let out = case.run(&[
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "read a.txt",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    // Each line as a short label, in order: stream events by their type (and block type),
    // other messages by theirs. How the text is cut into deltas is the stream's business, so
    // a run of text deltas is one label.
    let mut labels: Vec<String> = lines(&out)
        .iter()
        .map(|m| match m["type"].as_str() {
            Some("stream_event") => {
                let event = &m["event"];
                let kind = event["type"].as_str().unwrap_or("?");
                let detail = event["content_block"]["type"]
                    .as_str()
                    .or(event["delta"]["type"].as_str())
                    .map(|d| format!(":{d}@{}", event["index"]))
                    .unwrap_or_default();
                format!("{kind}{detail}")
            }
            Some(other) => other.to_string(),
            None => "?".into(),
        })
        .collect();
    labels.dedup_by(|a, b| a == b && a.contains("text_delta"));
    let expected = [
        "system",
        "message_start",
        "content_block_start:text@0",
        "content_block_delta:text_delta@0",
        "content_block_stop",
        "assistant",
        "content_block_start:tool_use@1",
        "content_block_delta:input_json_delta@1",
        "content_block_stop",
        "assistant",
        "message_delta",
        "message_stop",
        "user",
        "message_start",
        "content_block_start:text@0",
        "content_block_delta:text_delta@0",
        "content_block_stop",
        "assistant",
        "message_delta",
        "message_stop",
        "result",
    ];
    assert_eq!(labels, expected, "{}", out.stdout);
    let messages = lines(&out);
    let start = messages
        .iter()
        .map(|m| &m["event"])
        .find(|e| e["content_block"]["type"] == "tool_use")
        .unwrap();
    assert_eq!(
        start["content_block"],
        serde_json::json!({"type": "tool_use", "id": "call_1", "name": "Read", "input": {}})
    );
    let partial = messages
        .iter()
        .map(|m| &m["event"])
        .find(|e| e["delta"]["type"] == "input_json_delta")
        .unwrap();
    let input: Value =
        serde_json::from_str(partial["delta"]["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(input, serde_json::json!({"file_path": "a.txt"}));
    // The tool_use message and its partials belong to one message.
    let ids: Vec<&Value> = messages
        .iter()
        .filter(|m| m["type"] == "assistant")
        .map(|m| &m["message"]["id"])
        .collect();
    assert_eq!(ids[0], ids[1]);
    assert_ne!(ids[1], ids[2]);
}

/// One `write_file` call of `new.txt` and the answer, under `args`: the file's content after
/// the run (if any) and the result.
fn write_attempt(args: &[&str], config: &str) -> (Option<String>, Value) {
    let case = Case::new(
        vec![
            Reply::tool_calls(&[(
                "call_w",
                "write_file",
                r#"{"path":"new.txt","content":"x"}"#,
            )]),
            Reply::text("done"),
        ],
        config,
    );
    let mut all = vec!["-p", "--output-format", "json"];
    all.extend_from_slice(args);
    all.push("write it");
    let out = case.run(&all);
    assert_eq!(out.code, 0, "{out:?}");
    let written = std::fs::read_to_string(case.work.join("new.txt")).ok();
    (written, lines(&out).remove(0))
}

#[test]
fn default_mode_denies_a_write_not_in_allowed_tools_and_lists_it() {
    let (written, result) = write_attempt(&[], "");
    assert_eq!(written, None, "the write ran: {result}");
    let denials = result["permission_denials"].as_array().unwrap();
    assert_eq!(denials.len(), 1, "{result}");
    assert_eq!(denials[0]["tool_name"], "Write");
    assert_eq!(denials[0]["tool_use_id"], "call_w");
    assert_eq!(
        denials[0]["tool_input"],
        serde_json::json!({"file_path": "new.txt", "content": "x"})
    );
    // dontAsk and plan refuse it too.
    for mode in ["dontAsk", "default"] {
        let (written, _) = write_attempt(&["--permission-mode", mode], "");
        assert_eq!(written, None, "{mode}");
    }
}

#[test]
fn allowed_tools_accept_edits_and_bypass_let_the_write_run() {
    for args in [
        &["--allowedTools", "Write"][..],
        &["--allowed-tools", "Edit"][..],
        &["--permission-mode", "acceptEdits"][..],
        &["--permission-mode", "bypassPermissions"][..],
        &["--dangerously-skip-permissions"][..],
    ] {
        let (written, result) = write_attempt(args, "");
        assert_eq!(written.as_deref(), Some("x"), "{args:?}: {result}");
        assert_eq!(
            result["permission_denials"],
            serde_json::json!([]),
            "{args:?}"
        );
    }
}

#[test]
fn deny_rules_and_disallowed_tools_hold_under_bypass_permissions() {
    let (written, result) = write_attempt(
        &[
            "--dangerously-skip-permissions",
            "--disallowedTools",
            "Write",
        ],
        "",
    );
    assert_eq!(written, None, "{result}");
    assert_eq!(result["permission_denials"][0]["tool_name"], "Write");
    let (written, _) = write_attempt(
        &["--permission-mode", "bypassPermissions"],
        "[permissions]\ndeny = [\"Write(new.txt)\"]\n",
    );
    assert_eq!(written, None);
}

#[test]
fn disallowed_bash_is_blocked_in_every_mode() {
    for mode in ["default", "acceptEdits", "bypassPermissions", "dontAsk"] {
        let case = Case::new(
            vec![
                Reply::tool_calls(&[("call_b", "bash", r#"{"command":"touch made"}"#)]),
                Reply::text("done"),
            ],
            "[permissions]\nmode = \"allow\"\n",
        );
        let out = case.run(&[
            "-p",
            "--output-format",
            "json",
            "--permission-mode",
            mode,
            "--disallowedTools",
            "Bash",
            "go",
        ]);
        assert_eq!(out.code, 0, "{out:?}");
        assert!(!case.work.join("made").exists(), "{mode}: bash ran");
        assert_eq!(
            lines(&out)[0]["permission_denials"][0]["tool_name"],
            "Bash",
            "{mode}"
        );
    }
}

#[test]
fn the_jail_holds_under_bypass_permissions() {
    let outside = Dir::new();
    let target = outside.join("escaped.txt");
    let args = format!(r#"{{"path":"{}","content":"x"}}"#, target.display());
    let case = Case::new(
        vec![
            Reply::tool_calls(&[("call_o", "write_file", &args)]),
            Reply::text("done"),
        ],
        "",
    );
    let out = case.run(&["-p", "--dangerously-skip-permissions", "go"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        !target.exists(),
        "a write outside the workspace got through"
    );
}

#[test]
fn max_turns_stops_the_run_with_claude_codes_subtype() {
    let case = Case::new(
        vec![
            Reply::tool_calls(&[("c1", "ls", "{}")]),
            Reply::tool_calls(&[("c2", "ls", "{}")]),
            Reply::text("never"),
        ],
        "",
    );
    let out = case.run(&["-p", "--output-format", "json", "--max-turns", "1", "go"]);
    assert_eq!(out.code, 4, "{out:?}");
    let result = &lines(&out)[0];
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(result["is_error"], true);
    assert!(result["errors"].is_array(), "{result}");
}

#[test]
fn json_schema_returns_the_answer_as_structured_output() {
    let case = Case::new(vec![Reply::text("{\"name\": \"reasonix\"}")], "");
    let schema = r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}"#;
    let out = case.run(&[
        "-p",
        "--output-format",
        "json",
        "--json-schema",
        schema,
        "name it",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        lines(&out)[0]["structured_output"],
        serde_json::json!({"name": "reasonix"})
    );
    let requests = case.server.wait_for_requests(1);
    assert!(
        requests[0]
            .body
            .to_string()
            .contains("\\\"required\\\":[\\\"name\\\"]"),
        "the schema reached the model"
    );
}

#[test]
fn stream_json_input_takes_the_user_messages_on_stdin() {
    let case = Case::new(vec![Reply::text("answered")], "");
    let stdin = "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"from stdin\"}}\n";
    let out = run_with_stdin(
        reasonix(&case.home, case.work.path())
            .args([
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
            ])
            .env("FAKE_API_KEY", "k"),
        stdin,
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(result(&lines(&out))["result"], "answered");
    let requests = case.server.wait_for_requests(1);
    assert!(requests[0].body.to_string().contains("from stdin"));
}

#[test]
fn piped_stdin_is_added_to_the_prompt_argument() {
    let case = Case::new(vec![Reply::text("ok")], "");
    let out = run_with_stdin(
        reasonix(&case.home, case.work.path())
            .args(["-p", "explain"])
            .env("FAKE_API_KEY", "k"),
        "LOG LINE 42\n",
    );
    assert_eq!(out.code, 0, "{out:?}");
    let body = case.server.wait_for_requests(1)[0].body.to_string();
    assert!(
        body.contains("explain") && body.contains("LOG LINE 42"),
        "{body}"
    );
}

/// `(flag, the value it takes)` for every flag of the print-mode table, as a Claude pipeline
/// would give it; refused flags exit 2 with one line naming the flag.
#[test]
fn every_flag_is_accepted_with_its_effect_or_refused_with_one_line() {
    let accepted_runs: &[&[&str]] = &[
        &["--print"],
        &["--verbose"],
        &["--include-hook-events", "--output-format", "stream-json"],
        &["--model", "fake"],
        &["--effort", "high"],
        &["--thinking", "adaptive"],
        &["--system-prompt", "You are terse."],
        &["--append-system-prompt", "Be brief."],
        &["--tools", "Read,Grep"],
        &["--tools", ""],
        &["--allow-dangerously-skip-permissions"],
        &["--setting-sources", "user,project"],
        &["--settings", r#"{"permissions":{"deny":["Bash"]}}"#],
        &[
            "--mcp-config",
            r#"{"mcpServers":{}}"#,
            "--strict-mcp-config",
        ],
        &["--permission-mode", "plan"],
        &["--max-budget-usd", "1"],
    ];
    for args in accepted_runs {
        let case = Case::new(vec![Reply::text("fine")], "");
        let mut all = vec!["-p"];
        all.extend_from_slice(args);
        all.push("go");
        let out = case.run(&all);
        let budget = args.contains(&"--max-budget-usd");
        if budget {
            // The fake model has no prices: the run says so instead of ignoring the budget.
            assert_eq!(out.code, 2, "{args:?}: {out:?}");
            assert!(
                out.stderr
                    .contains("--max-budget-usd needs the model's prices"),
                "{out:?}"
            );
            continue;
        }
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
    }
    let refused: &[(&[&str], &str)] = &[
        (&["--session-id", "s1"], "--session-id must be a UUID"),
        (
            &["--session-id", "0b5e7c1a-0000-4000-8000-000000000000", "-c"],
            "it needs --fork-session",
        ),
        (&["--agents", "{}"], "--agents: subagents are skills"),
        (
            &["--thinking", "disabled"],
            "--thinking disabled: a model's reasoning cannot be turned off",
        ),
        (
            &["--max-thinking-tokens", "8000"],
            "--max-thinking-tokens: a thinking budget in tokens has no OpenAI-compatible equivalent",
        ),
        (
            &["--thinking-display", "summarized"],
            "--thinking-display: reasonix shows the model's reasoning as it arrives",
        ),
        (&["--task-budget", "5000"], "--task-budget: reasonix has no task budget"),
        (
            &["--session-mirror"],
            "--session-mirror: an SDK session store is not supported",
        ),
        (
            &["--resume-session-at", "m1"],
            "--resume-session-at: resuming at a chosen message is not supported",
        ),
        (
            &["--resume-drops-turn", "m1"],
            "--resume-drops-turn: resuming at a chosen message is not supported",
        ),
        (
            &["--plugin-dir", "/tmp"],
            "--plugin-dir: Claude Code plugins are not supported",
        ),
        (&["--betas", "x"], "--betas: beta headers"),
        (
            &["--no-session-persistence"],
            "--no-session-persistence: every reasonix session is saved",
        ),
        (
            &["--replay-user-messages"],
            "--replay-user-messages: user messages are not echoed",
        ),
        (&["--permission-mode", "auto"], "--permission-mode auto"),
        (&["--permission-prompt-tool", "mcp__x__y"], "only `stdio`"),
        (
            &["--allowedTools", "Nope"],
            "unknown tool `Nope` in --allowedTools",
        ),
        (
            &["--disallowedTools", "Nope"],
            "unknown tool `Nope` in --disallowedTools",
        ),
        (
            &["--frobnicate"],
            "unknown flag `--frobnicate` in print mode",
        ),
    ];
    let home = Dir::new();
    let work = Dir::new();
    for (args, line) in refused {
        let mut all = vec!["-p"];
        all.extend_from_slice(args);
        all.push("go");
        let out = run(reasonix(&home, work.path()).args(&all));
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains(line), "{args:?}: {out:?}");
        assert_eq!(out.stderr.trim().lines().count(), 1, "one line: {out:?}");
    }
}

/// `--session-id UUID` names the new session, which `--resume UUID` then continues; an id a
/// session already has is refused, and with `--fork-session` the fork takes the id.
#[test]
fn session_id_names_the_new_session_and_resume_finds_it() {
    let case = Case::new(
        vec![
            Reply::text("first"),
            Reply::text("second"),
            Reply::text("third"),
        ],
        "",
    );
    let id = "0b5e7c1a-0000-4000-8000-00000000abcd";
    let out = case.run(&["-p", "--output-format", "json", "--session-id", id, "one"]);
    assert_eq!(out.code, 0, "{out:?}");
    let first: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(first["session_id"], id, "{first}");

    let again = case.run(&["-p", "--session-id", id, "two"]);
    assert_eq!(again.code, 2, "{again:?}");
    assert!(again.stderr.contains("already exists"), "{again:?}");

    let resumed = case.run(&["-p", "--output-format", "json", "-r", id, "two"]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let second: Value = serde_json::from_str(resumed.stdout.trim()).unwrap();
    assert_eq!(second["session_id"], id);
    let sent = case.server.wait_for_requests(2)[1].body.to_string();
    assert!(
        sent.contains("first"),
        "the resumed session has the first turn: {sent}"
    );

    let fork = "0b5e7c1a-0000-4000-8000-00000000beef";
    let forked = case.run(&[
        "-p",
        "--output-format",
        "json",
        "-r",
        id,
        "--fork-session",
        "--session-id",
        fork,
        "three",
    ]);
    assert_eq!(forked.code, 0, "{forked:?}");
    let third: Value = serde_json::from_str(forked.stdout.trim()).unwrap();
    assert_eq!(third["session_id"], fork);
}

#[test]
fn tools_limits_the_builtin_tools_offered_to_the_model() {
    let case = Case::new(vec![Reply::text("fine")], "");
    let out = case.run(&[
        "-p",
        "--output-format",
        "stream-json",
        "--tools",
        "Read,Grep",
        "go",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let tools = lines(&out)[0]["tools"].clone();
    assert_eq!(tools, serde_json::json!(["Read", "Grep"]), "{out:?}");
    let body = &case.server.wait_for_requests(1)[0].body;
    let offered: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(offered, ["read_file", "grep"], "the model sees our names");
}

#[test]
fn the_flag_table_is_in_step_with_the_help_and_the_man_page() {
    let home = Dir::new();
    let work = Dir::new();
    let help = run(reasonix(&home, work.path()).args(["help", "print"]));
    let man = run(reasonix(&home, work.path()).arg("man"));
    assert_eq!((help.code, man.code), (0, 0));
    let man_text = man.stdout.replace("\\-", "-");
    for (flag, _) in reasonix::claude::flags::FLAGS {
        let long = format!("--{flag}");
        assert!(
            help.stdout.contains(&long),
            "{long} missing from `reasonix help print`"
        );
        assert!(man_text.contains(&long), "{long} missing from the man page");
    }
    // And the other way: every long flag the help documents is in the table (or global).
    for word in help
        .stdout
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
    {
        let Some(flag) = word.strip_prefix("--") else {
            continue;
        };
        if flag.is_empty()
            || [
                "allowed-tools",
                "disallowed-tools",
                "config",
                "cd",
                "help",
                "version",
                "trust-project",
                "trust-project-mcp",
            ]
            .contains(&flag)
        {
            continue;
        }
        assert!(
            reasonix::claude::flags::FLAGS
                .iter()
                .any(|(name, _)| *name == flag),
            "--{flag} is documented but not in the table"
        );
    }
}

#[test]
fn a_subagents_messages_carry_the_task_calls_id_as_parent_tool_use_id() {
    let case = Case::new(
        vec![
            Reply::tool_calls(&[("call_task", "task", r#"{"prompt":"list the files"}"#)]),
            Reply::tool_calls(&[("call_ls", "ls", "{}")]),
            Reply::text("child done"),
            Reply::text("all done"),
        ],
        "",
    );
    let out = case.run(&[
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
        "Task",
        "go",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let messages = lines(&out);
    let uses: Vec<&Value> = of_type(&messages, "assistant")
        .into_iter()
        .filter(|m| m["message"]["content"][0]["type"] == "tool_use")
        .collect();
    let task = uses
        .iter()
        .find(|m| m["message"]["content"][0]["name"] == "Task")
        .expect("a Task call");
    assert!(task["parent_tool_use_id"].is_null());
    assert_eq!(
        task["message"]["content"][0]["input"]["description"],
        "list the files"
    );
    let ls = uses
        .iter()
        .find(|m| m["message"]["content"][0]["name"] == "LS")
        .expect("the child's LS call");
    assert_eq!(ls["parent_tool_use_id"], "call_task", "{ls}");
    let results = of_type(&messages, "user");
    let child_result = results
        .iter()
        .find(|m| m["message"]["content"][0]["tool_use_id"] == "call_ls")
        .expect("the child's result");
    assert_eq!(child_result["parent_tool_use_id"], "call_task");
    let task_result = results
        .iter()
        .find(|m| m["message"]["content"][0]["tool_use_id"] == "call_task")
        .expect("the task's result");
    assert!(task_result["parent_tool_use_id"].is_null());
    assert_eq!(result(&messages)["result"], "all done");
}

#[test]
fn setting_sources_decides_which_claude_settings_files_are_read() {
    let attempt = |sources: Option<&str>| {
        let case = Case::new(
            vec![
                Reply::tool_calls(&[(
                    "call_w",
                    "write_file",
                    r#"{"path":"new.txt","content":"x"}"#,
                )]),
                Reply::text("done"),
            ],
            "",
        );
        // The user's own Claude settings allow the write.
        case.home.write(
            ".claude/settings.json",
            r#"{"permissions": {"allow": ["Write"]}}"#,
        );
        let mut args = vec!["-p", "--output-format", "json"];
        if let Some(sources) = sources {
            args.extend(["--setting-sources", sources]);
        }
        args.push("write it");
        let out = case.run(&args);
        assert_eq!(out.code, 0, "{out:?}");
        case.work.join("new.txt").exists()
    };
    assert!(attempt(None), "the user's settings are read by default");
    assert!(attempt(Some("user,project")));
    assert!(
        !attempt(Some("project,local")),
        "the user's settings were read"
    );
}

#[test]
fn hooks_get_claude_codes_names_and_keys_and_hook_events_are_streamed() {
    let case = Case::new(
        vec![
            Reply::tool_calls(&[("call_w", "write_file", r#"{"path":"new.txt","content":"x"}"#)]),
            Reply::text("done"),
        ],
        "[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"Write\"\ncommand = '''cat > hook_in.json'''\ntimeout_seconds = 20\n",
    );
    let out = case.run(&[
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-hook-events",
        "--allowedTools",
        "Write",
        "go",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let input: Value =
        serde_json::from_str(&case.work.read("hook_in.json")).expect("the hook's stdin");
    assert_eq!(input["tool_alias"], "Write", "{input}");
    assert_eq!(input["tool_input"]["file_path"], "new.txt", "{input}");
    let messages = lines(&out);
    let hook = messages
        .iter()
        .find(|m| m["type"] == "system" && m["subtype"] == "hook_response")
        .unwrap_or_else(|| panic!("no hook_response: {out:?}"));
    assert_eq!(hook["hook_event"], "PreToolUse");
    assert_eq!(hook["outcome"], "success");
    // Without the flag, no hook messages.
    let case = Case::new(
        vec![Reply::text("done")],
        "[[hooks]]\nevent = \"UserPromptSubmit\"\ncommand = \"true\"\n",
    );
    let out = case.run(&["-p", "--output-format", "stream-json", "go"]);
    assert!(!out.stdout.contains("hook_response"), "{out:?}");
}

/// An SDK session reads its first stdin line (the `initialize` request) before it opens, but a
/// command line already refused is reported at once: nothing waits for stdin, which the SDK
/// (or a pipeline) may keep open without writing.
#[test]
fn a_refused_flag_with_stream_json_input_does_not_wait_for_stdin() {
    let home = Dir::new();
    let work = Dir::new();
    let mut child = crate::util::spawn_piped(reasonix(&home, work.path()).args([
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--frobnicate",
    ]));
    // Held open and silent for as long as the test waits.
    let stdin = child.stdin.take().expect("piped stdin");
    let (done, exited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    // A bound only so that a regression fails instead of hanging the suite.
    let out = exited
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("reasonix waited for stdin before reporting the refused flag")
        .expect("wait for reasonix");
    drop(stdin);
    let out: Run = out.into();
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("unknown flag `--frobnicate`"),
        "{out:?}"
    );
}
