//! The real Python `claude-agent-sdk` (pinned in `.ci/run`) driving reasonix through
//! `ClaudeAgentOptions(cli_path=...)` against the loopback fake model: each test scripts the
//! fake's replies, runs one scenario of `tests/sdk/sdk_scenarios.py` and checks what only this
//! side can see (what the model was sent, which files exist). The SDK absent skips, unless
//! `REASONIX_REQUIRE_SDK` is set (CI), where its absence fails; installed, every failed
//! scenario fails the test. The TypeScript `@anthropic-ai/claude-agent-sdk` runs the scenarios
//! of `tests/sdk/ts_scenarios.mjs` the same way (`pathToClaudeCodeExecutable`), from the folder
//! `REASONIX_TS_SDK_DIR` names (`REASONIX_REQUIRE_TS_SDK` in CI).

use crate::util::fake_openai::{sse_text, FakeOpenAI, Reply};
use serde_json::Value;

use crate::util::{reasonix, use_fake_provider, Dir};

/// The SDK version `.ci/run` installs; the scenarios were written against it.
const SDK_VERSION: &str = "0.2.190";

/// Whether `import claude_agent_sdk` works here. With `REASONIX_REQUIRE_SDK` set, a missing
/// SDK fails instead of skipping.
fn sdk_available() -> bool {
    let found = std::process::Command::new("python3")
        .args(["-c", "import claude_agent_sdk"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("REASONIX_REQUIRE_SDK").is_none(),
            "REASONIX_REQUIRE_SDK is set but `import claude_agent_sdk` fails: \
             pip install claude-agent-sdk=={SDK_VERSION}"
        );
        eprintln!("skipping the SDK test: pip install claude-agent-sdk=={SDK_VERSION}");
    }
    found
}

/// The TypeScript SDK version `.ci/run` installs; `tests/sdk/ts_scenarios.mjs` was written
/// against it.
const TS_SDK_VERSION: &str = "0.3.337";

/// Where `npm install --prefix DIR @anthropic-ai/claude-agent-sdk` put the TypeScript SDK,
/// when it did. With `REASONIX_REQUIRE_TS_SDK` set, a missing SDK fails instead of skipping.
fn ts_sdk_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("REASONIX_TS_SDK_DIR").map(std::path::PathBuf::from);
    let found = dir.filter(|d| {
        d.join("node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs")
            .is_file()
    });
    if found.is_none() {
        assert!(
            std::env::var_os("REASONIX_REQUIRE_TS_SDK").is_none(),
            "REASONIX_REQUIRE_TS_SDK is set but REASONIX_TS_SDK_DIR holds no SDK: npm install \
             --prefix DIR --omit=optional @anthropic-ai/claude-agent-sdk@{TS_SDK_VERSION}"
        );
        eprintln!(
            "skipping the TypeScript SDK test: npm install --prefix DIR --omit=optional \
             @anthropic-ai/claude-agent-sdk@{TS_SDK_VERSION} and set REASONIX_TS_SDK_DIR=DIR"
        );
    }
    found
}

/// A workspace and a home whose only model is `fake`.
struct Setup {
    home: Dir,
    work: Dir,
}

fn setup(fake: &FakeOpenAI) -> Setup {
    let home = Dir::outside_temp();
    let work = Dir::outside_temp();
    use_fake_provider(&home, &fake.base_url(), "");
    Setup { home, work }
}

/// Runs `scenario` of the Python script with the SDK spawning our binary; fails the test
/// with the script's output when the scenario fails.
fn run_scenario(setup: &Setup, scenario: &str) {
    run_scenario_with(setup, scenario, &[]);
}

/// [`run_scenario`] with arguments for the scenario.
fn run_scenario_with(setup: &Setup, scenario: &str, args: &[&str]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/sdk_scenarios.py");
    run_script(setup, "python3", script, scenario, args);
}

/// Runs `scenario` of `script` under `interpreter` (Python or Node), whose SDK spawns our
/// binary; fails the test with the script's output when the scenario fails.
fn run_script(setup: &Setup, interpreter: &str, script: &str, scenario: &str, args: &[&str]) {
    // The environment `reasonix` gets in every test (HOME, REASONIX_HOME, no keys or proxies),
    // given to the interpreter, whose SDK passes it on to the binary it spawns.
    let template = reasonix(&setup.home, setup.work.path());
    let mut python = std::process::Command::new(interpreter);
    python
        .arg(script)
        .arg(scenario)
        .args(args)
        .current_dir(setup.work.path())
        .env_clear();
    for (key, value) in template.get_envs() {
        if let Some(value) = value {
            python.env(key, value);
        }
    }
    for key in [
        "PATH",
        "PYTHONPATH",
        "PYENV_ROOT",
        "VIRTUAL_ENV",
        "LANG",
        "REASONIX_TS_SDK_DIR",
    ] {
        if let Some(value) = std::env::var_os(key) {
            python.env(key, value);
        }
    }
    let out = python
        .env("FAKE_API_KEY", "test-key")
        .env("REASONIX_BIN", template.get_program())
        .env("SDK_WORKSPACE", setup.work.path())
        .env("CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK", "1")
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(&format!("ok {scenario}")),
        "the SDK scenario `{scenario}` failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
}

/// The text of every message the model was sent in request `n`.
fn request_text(fake: &FakeOpenAI, n: usize) -> String {
    fake.requests()[n].body["messages"].to_string()
}

#[test]
fn sdk_query_yields_system_assistant_tool_result_and_result_messages() {
    if !sdk_available() {
        return;
    }
    let fake = FakeOpenAI::start(vec![
        Reply::text_then_tool_calls(
            "Let me look.",
            &[("c1", "read_file", r#"{"path":"a.txt"}"#)],
        ),
        Reply::text("It says hello."),
    ]);
    let setup = setup(&fake);
    setup.work.write("a.txt", "hello from a\n");
    run_scenario(&setup, "query_basic");
    assert_eq!(fake.requests().len(), 2);
}

/// The two SDKs, each driving reasonix through its own scenario script.
#[derive(Clone, Copy)]
enum Sdk {
    Python,
    TypeScript,
}

impl Sdk {
    /// Whether it is installed here (a required one that is missing fails the test).
    fn available(self) -> bool {
        match self {
            Sdk::Python => sdk_available(),
            Sdk::TypeScript => ts_sdk_dir().is_some(),
        }
    }

    fn run(self, setup: &Setup, scenario: &str) {
        match self {
            Sdk::Python => run_scenario(setup, scenario),
            Sdk::TypeScript => run_ts_scenario(setup, scenario),
        }
    }
}

/// `can_use_tool` is asked about the model's write in Claude's names; its deny is final (the
/// file stays absent) and the model reads its message.
fn can_use_tool_deny_is_final(sdk: Sdk) {
    if !sdk.available() {
        return;
    }
    let fake = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "write_file", r#"{"path":"out.txt","content":"x"}"#)]),
        Reply::text("I could not write it."),
    ]);
    let setup = setup(&fake);
    sdk.run(&setup, "can_use_tool_deny");
    assert!(!setup.work.join("out.txt").exists());
    let sent = request_text(&fake, 1);
    assert!(
        sent.contains("writes are not allowed in this test"),
        "the model was not told why: {sent}"
    );
}

#[test]
fn sdk_can_use_tool_deny_is_final_and_the_model_reads_its_message() {
    can_use_tool_deny_is_final(Sdk::Python);
}

#[test]
fn ts_sdk_can_use_tool_deny_is_final() {
    can_use_tool_deny_is_final(Sdk::TypeScript);
}

/// An SDK `PreToolUse` hook callback denies a `Bash` call even under `bypassPermissions`; the
/// command does not run and the model reads the reason.
fn pre_tool_use_hook_blocks_a_bash_call(sdk: Sdk) {
    if !sdk.available() {
        return;
    }
    let fake = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "bash", r#"{"command":"touch ran.txt"}"#)]),
        Reply::text("The hook stopped it."),
    ]);
    let setup = setup(&fake);
    sdk.run(&setup, "hook_blocks_bash");
    assert!(!setup.work.join("ran.txt").exists());
    assert!(request_text(&fake, 1).contains("bash is off today"));
}

#[test]
fn sdk_pre_tool_use_hook_blocks_a_bash_call() {
    pre_tool_use_hook_blocks_a_bash_call(Sdk::Python);
}

#[test]
fn ts_sdk_pre_tool_use_hook_blocks_a_bash_call() {
    pre_tool_use_hook_blocks_a_bash_call(Sdk::TypeScript);
}

/// An SDK's in-process MCP server's tool is offered to the model, called, and its result
/// returns to the model.
fn in_process_mcp_tool_is_called_and_its_result_returns(sdk: Sdk) {
    if !sdk.available() {
        return;
    }
    let fake = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "mcp__calc__add", r#"{"a":2,"b":3}"#)]),
        Reply::text("The sum is 5."),
    ]);
    let setup = setup(&fake);
    sdk.run(&setup, "sdk_mcp_tool");
    let offered = fake.requests()[0].body["tools"].to_string();
    assert!(
        offered.contains("mcp__calc__add"),
        "the SDK tool was not offered: {offered}"
    );
    assert!(request_text(&fake, 1).contains("sum is 5"));
}

#[test]
fn sdk_in_process_mcp_tool_is_called_and_its_result_returns() {
    in_process_mcp_tool_is_called_and_its_result_returns(Sdk::Python);
}

#[test]
fn ts_sdk_in_process_mcp_tool_is_called_and_its_result_returns() {
    in_process_mcp_tool_is_called_and_its_result_returns(Sdk::TypeScript);
}

/// Two turns in one session, then a third whose endless answer the SDK's interrupt stops
/// within a second (the scenario measures it).
fn two_turns_in_one_session_and_interrupt(sdk: Sdk) {
    if !sdk.available() {
        return;
    }
    // The third answer starts streaming and never ends on its own: only the interrupt stops it.
    let (endless, _release) =
        Reply::hold(vec![sse_text("Once upon a time "), sse_text("there was ")]);
    let fake = FakeOpenAI::start(vec![
        Reply::text("first answer"),
        Reply::text("second answer"),
        endless,
    ]);
    let setup = setup(&fake);
    sdk.run(&setup, "client_two_turns_and_interrupt");
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    // One session: the second request carries the first turn.
    let second = requests[1].body["messages"].to_string();
    assert!(
        second.contains("first question") && second.contains("first answer"),
        "{second}"
    );
}

#[test]
fn sdk_client_runs_two_turns_in_one_session_and_interrupt_stops_a_long_stream() {
    two_turns_in_one_session_and_interrupt(Sdk::Python);
}

#[test]
fn ts_sdk_runs_two_turns_in_one_session_and_interrupt_stops_a_long_stream() {
    two_turns_in_one_session_and_interrupt(Sdk::TypeScript);
}

/// The SDK allows the model's write of `out.txt` as a write of `target`: the scenario checks
/// what the SDK sees (`runs` or `denied`), the test what was written.
fn rewritten_write(target: &str, outcome: &str) -> (Setup, FakeOpenAI) {
    let fake = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "write_file", r#"{"path":"out.txt","content":"x"}"#)]),
        Reply::text("Done."),
    ]);
    let setup = setup(&fake);
    run_scenario_with(&setup, "can_use_tool_rewrite", &[target, outcome]);
    assert!(
        !setup.work.join("out.txt").exists(),
        "the model's own path was written"
    );
    (setup, fake)
}

#[test]
fn sdk_can_use_tool_updated_input_runs_the_changed_call() {
    if !sdk_available() {
        return;
    }
    let (setup, fake) = rewritten_write("moved.txt", "runs");
    assert_eq!(setup.work.read("moved.txt"), "x");
    // The model's history keeps its own call; the result is the executed one's.
    let sent = request_text(&fake, 1);
    assert!(sent.contains(r#"\"path\":\"out.txt\""#), "{sent}");
    assert!(sent.contains("moved.txt"), "{sent}");
}

#[test]
fn sdk_can_use_tool_updated_input_is_judged_again_deny_rules_and_workspace_hold() {
    if !sdk_available() {
        return;
    }
    let (setup, _fake) = rewritten_write("secret/key.txt", "denied");
    assert!(!setup.work.join("secret/key.txt").exists());
    let elsewhere = Dir::outside_temp();
    let outside = elsewhere.join("planted.txt");
    let (_setup, fake) = rewritten_write(outside.to_str().unwrap(), "denied");
    assert!(!outside.exists(), "a write outside the workspace ran");
    assert!(request_text(&fake, 1).contains("outside the workspace"));
}

/// `ClaudeAgentOptions(fallback_model=...)`: the SDK passes `--fallback-model`; the primary's
/// 529 hands the turn to the fallback, which the SDK sees in a `model_fallback` message.
#[test]
fn sdk_fallback_model_answers_when_the_primary_is_overloaded() {
    if !sdk_available() {
        return;
    }
    let fake = FakeOpenAI::start(vec![
        Reply::error(529, "Overloaded"),
        Reply::text("From the backup."),
    ]);
    let setup = setup(&fake);
    add_backup_provider(&setup, &fake);
    run_scenario(&setup, "fallback_model");
    assert_eq!(models_asked(&fake), ["fake-model", "backup-model"]);
}

/// A second provider, `backup` (model `backup-model`), on the same fake server.
fn add_backup_provider(setup: &Setup, fake: &FakeOpenAI) {
    let config = setup.home.join(".reasonix/config.toml");
    let mut text = std::fs::read_to_string(&config).expect("the config");
    text.push_str(&format!(
        "\n[[providers]]\nname = \"backup\"\nbase_url = \"{}\"\nmodel = \"backup-model\"\napi_key_env = \"FAKE_API_KEY\"\n",
        fake.base_url()
    ));
    std::fs::write(&config, text).expect("write the config");
}

/// The model each request asked for, in order.
fn models_asked(fake: &FakeOpenAI) -> Vec<Value> {
    fake.requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect()
}

/// `ClaudeSDKClient.set_model` between turns: the second turn goes to the model set and its
/// messages name it (they named the first model before).
#[test]
fn sdk_set_model_sends_the_next_turn_to_the_model_set() {
    if !sdk_available() {
        return;
    }
    let fake = FakeOpenAI::start(vec![Reply::text("one"), Reply::text("two")]);
    let setup = setup(&fake);
    add_backup_provider(&setup, &fake);
    run_scenario(&setup, "client_set_model");
    assert_eq!(models_asked(&fake), ["fake-model", "backup-model"]);
}

/// The TypeScript SDK's `query()` against reasonix: init, a `Read` tool_use in Claude's keys,
/// its result, the answer and a success result with usage.
#[test]
fn ts_sdk_query_yields_init_tool_use_tool_result_and_result() {
    if ts_sdk_dir().is_none() {
        return;
    }
    let fake = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "read_file", r#"{"path":"a.txt"}"#)]),
        Reply::text("It says hello."),
    ]);
    let setup = setup(&fake);
    setup.work.write("a.txt", "hello from a\n");
    run_ts_scenario(&setup, "query_basic");
    assert_eq!(fake.requests().len(), 2);
}

/// The TypeScript SDK's `canUseTool` is asked about a write in Claude's names; its deny is
/// final (the file stays absent) and the model reads its message.
/// The TypeScript SDK sends its `systemPrompt` (and the output schema) in `initialize`, not as
/// flags: the session opens with that system prompt and the answer is structured output.
#[test]
fn ts_sdk_system_prompt_and_output_schema_apply() {
    if ts_sdk_dir().is_none() {
        return;
    }
    let fake = FakeOpenAI::start(vec![Reply::text(r#"{"answer":"yes"}"#)]);
    let setup = setup(&fake);
    run_ts_scenario(&setup, "system_prompt_and_structured_output");
    let system = fake.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        system.starts_with("You are the TypeScript test agent."),
        "the SDK's system prompt was not used: {system}"
    );
    assert!(system.contains("JSON Schema"), "{system}");
}

fn run_ts_scenario(setup: &Setup, scenario: &str) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/ts_scenarios.mjs");
    run_script(setup, "node", script, scenario, &[]);
}
