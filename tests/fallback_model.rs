//! `--fallback-model` through the real binary and the fake model: a request the primary model
//! still fails with an overload goes to the fallback model, the rest of the turn stays there,
//! the next turn tries the primary again, and the usage of each model is its own. Print mode
//! says so with Claude Code's `system`/`model_fallback` message, `run` with a notice.

use serde_json::Value;

use crate::claude_print::lines;
use crate::util::fake_openai::{done, sse_finish, sse_text, sse_usage, FakeOpenAI, Reply};
use crate::util::{reasonix, run, run_with_stdin, Dir, Run};

struct Case {
    server: FakeOpenAI,
    home: Dir,
    work: Dir,
}

impl Case {
    /// `fake` (the model, `fake-model`) and `backup` (`backup-model`) on one fake server, no
    /// retries.
    fn new(replies: Vec<Reply>) -> Case {
        let no_retries = "retry = { max_retries = 0 }\n";
        Case::with(replies, no_retries, no_retries)
    }

    /// The two providers with `fake` and `backup` as the extra lines of their entries.
    fn with(replies: Vec<Reply>, fake: &str, backup: &str) -> Case {
        let server = FakeOpenAI::start(replies);
        let (home, work) = (Dir::new(), Dir::new());
        home.write(
            ".reasonix/config.toml",
            &format!(
                "default_model = \"fake\"\n\n[[providers]]\nname = \"fake\"\nbase_url = \"{url}\"\nmodel = \"fake-model\"\napi_key_env = \"FAKE_API_KEY\"\n{fake}\n[[providers]]\nname = \"backup\"\nbase_url = \"{url}\"\nmodel = \"backup-model\"\napi_key_env = \"FAKE_API_KEY\"\n{backup}\n[environment]\nenabled = false\n",
                url = server.base_url()
            ),
        );
        Case { server, home, work }
    }

    fn run(&self, args: &[&str]) -> Run {
        run(reasonix(&self.home, self.work.path())
            .args(args)
            .env("FAKE_API_KEY", "k"))
    }

    /// The model each request asked for, in order.
    fn models_asked(&self, n: usize) -> Vec<String> {
        self.server
            .wait_for_requests(n)
            .iter()
            .map(|r| r.body["model"].as_str().unwrap_or_default().to_string())
            .collect()
    }
}

fn answer(text: &str, prompt: u64, completion: u64) -> Reply {
    Reply::events(vec![
        sse_text(text),
        sse_finish("stop"),
        sse_usage(prompt, completion, 0),
        done(),
    ])
}

const PRINT: &[&str] = &[
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    "--fallback-model",
    "backup",
];

#[test]
fn an_overloaded_model_hands_the_turn_to_the_fallback_and_print_mode_says_so() {
    let case = Case::new(vec![
        Reply::error(529, "Overloaded"),
        answer("served by the backup", 300, 7),
    ]);
    let mut args = PRINT.to_vec();
    args.push("go");
    let out = case.run(&args);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(case.models_asked(2), ["fake-model", "backup-model"]);
    let messages = lines(&out);
    let switch: Vec<&Value> = messages
        .iter()
        .filter(|m| m["type"] == "system" && m["subtype"] == "model_fallback")
        .collect();
    assert_eq!(switch.len(), 1, "{messages:?}");
    assert_eq!(switch[0]["trigger"], "overloaded");
    assert_eq!(switch[0]["original_model"], "fake-model");
    assert_eq!(switch[0]["fallback_model"], "backup-model");
    assert_eq!(
        switch[0]["content"], "Switched to backup-model due to high demand for fake-model",
        "Claude Code's words"
    );
    let assistant = messages
        .iter()
        .find(|m| m["type"] == "assistant")
        .expect("an assistant message");
    assert_eq!(assistant["message"]["model"], "backup-model");
    let result = messages.last().expect("a result");
    assert_eq!(result["result"], "served by the backup");
    assert_eq!(result["is_error"], false);
    // Each model's usage is its own: the primary served nothing, so it is not listed.
    let usage = &result["modelUsage"];
    assert_eq!(usage["backup-model"]["inputTokens"], 300, "{usage}");
    assert_eq!(usage["backup-model"]["outputTokens"], 7, "{usage}");
    assert!(usage.get("fake-model").is_none(), "{usage}");
    assert!(out
        .stderr
        .contains("goes on with the fallback model `backup-model`"));
}

#[test]
fn the_turn_stays_on_the_fallback_and_the_next_turn_tries_the_primary_again() {
    let case = Case::new(vec![
        // Turn 1: the primary is overloaded; the fallback calls a tool, then answers.
        Reply::error(503, "Service Unavailable"),
        Reply::tool_calls(&[("call_1", "read_file", r#"{"path":"a.txt"}"#)]),
        answer("first", 100, 5),
        // Turn 2: the primary is back.
        answer("second", 200, 9),
    ]);
    case.work.write("a.txt", "hello");
    let user = |text: &str| {
        format!("{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}}}}\n")
    };
    let mut args = PRINT.to_vec();
    args.extend(["--input-format", "stream-json"]);
    let out = run_with_stdin(
        reasonix(&case.home, case.work.path())
            .args(&args)
            .env("FAKE_API_KEY", "k"),
        &(user("one") + &user("two")),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        case.models_asked(4),
        ["fake-model", "backup-model", "backup-model", "fake-model"]
    );
    let messages = lines(&out);
    let results: Vec<&Value> = messages.iter().filter(|m| m["type"] == "result").collect();
    assert_eq!(results.len(), 2, "{messages:?}");
    assert_eq!(results[0]["result"], "first");
    assert_eq!(results[1]["result"], "second");
    let models: Vec<&Value> = messages
        .iter()
        .filter(|m| m["type"] == "assistant")
        .map(|m| &m["message"]["model"])
        .collect();
    assert_eq!(
        models,
        ["backup-model", "backup-model", "fake-model"],
        "{messages:?}"
    );
}

#[test]
fn a_rate_limit_or_a_refused_key_does_not_switch_and_the_same_model_is_refused() {
    let case = Case::new(vec![Reply::error(429, "slow down")]);
    let mut args = PRINT.to_vec();
    args.push("go");
    let out = case.run(&args);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(case.models_asked(1), ["fake-model"]);
    assert!(
        case.server.requests().len() == 1,
        "a 429 is the account's limit, not the model's load"
    );
    assert!(!out.stdout.contains("model_fallback"), "{out:?}");

    let case = Case::new(vec![Reply::error(401, "bad key")]);
    let out = case.run(&args);
    assert_eq!(case.server.requests().len(), 1, "{out:?}");
    assert!(!out.stdout.contains("model_fallback"), "{out:?}");

    let case = Case::new(Vec::new());
    let out = case.run(&["-p", "--fallback-model", "fake", "go"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("--fallback-model `fake` is the model the run already uses"),
        "{out:?}"
    );
    assert!(case.server.requests().is_empty());
}

#[test]
fn run_reports_the_switch_and_each_models_share() {
    let case = Case::new(vec![
        Reply::error(502, "Bad Gateway"),
        answer("done", 120, 4),
    ]);
    let out = case.run(&[
        "run",
        "--output-format",
        "stream-json",
        "--fallback-model",
        "backup",
        "go",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let events = lines(&out);
    let notice = events
        .iter()
        .find(|e| e["kind"] == "model_fallback")
        .unwrap_or_else(|| panic!("a model_fallback notice: {events:?}"));
    assert_eq!(notice["trigger"], "server_error");
    assert_eq!(notice["from"], "fake-model");
    assert_eq!(notice["to"], "backup-model");
    let result = events.last().expect("a result");
    let models = &result["models"];
    assert_eq!(models["backup-model"]["role"], "fallback", "{models}");
    assert_eq!(models["backup-model"]["requests"], 1, "{models}");
    assert_eq!(
        models["backup-model"]["usage"]["input_tokens"], 120,
        "{models}"
    );
    assert_eq!(
        models["fake-model"]["requests"], 1,
        "the failed request: {models}"
    );
    assert_eq!(models["fake-model"]["usage"]["input_tokens"], 0, "{models}");
    assert_eq!(result["usage"]["input_tokens"], 120, "the totals hold both");
}

#[test]
fn a_subagent_whose_model_is_overloaded_goes_on_with_the_fallback_and_its_parent_does_not() {
    let case = Case::new(vec![
        Reply::tool_calls(&[("c1", "task", r#"{"prompt":"look around"}"#)]),
        Reply::error(529, "Overloaded"),
        answer("the child's findings", 50, 3),
        answer("all done", 80, 2),
    ]);
    let mut args = PRINT.to_vec();
    args.extend(["--allowedTools", "Task", "delegate it"]);
    let out = case.run(&args);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        case.models_asked(4),
        ["fake-model", "fake-model", "backup-model", "fake-model"],
        "the child fell back; the parent's next request tried its own model"
    );
    let messages = lines(&out);
    let switch = messages
        .iter()
        .find(|m| m["subtype"] == "model_fallback")
        .unwrap_or_else(|| panic!("a model_fallback message: {messages:?}"));
    assert_eq!(switch["fallback_model"], "backup-model");
    let result = messages.last().expect("a result");
    assert_eq!(result["result"], "all done");
    let last = messages
        .iter()
        .rfind(|m| m["type"] == "assistant" && m["parent_tool_use_id"].is_null())
        .expect("the parent's answer");
    assert_eq!(last["message"]["model"], "fake-model", "{last}");
}

/// The two providers, `fake` costing 1/2 USD per million tokens in/out and `backup` 3/4, or
/// nothing.
fn priced_case(replies: Vec<Reply>, backup_priced: bool) -> Case {
    let backup = if backup_priced {
        "prices = { \"backup-model\" = { input = 3.0, output = 4.0 } }\n"
    } else {
        ""
    };
    let fake = "retry = { max_retries = 0 }\nprices = { \"fake-model\" = { input = 1.0, output = 2.0 } }\n";
    Case::with(replies, fake, backup)
}

#[test]
fn the_fallbacks_own_prices_count_and_a_budget_needs_them() {
    let case = priced_case(Vec::new(), false);
    let mut args = PRINT.to_vec();
    args.extend(["--max-budget-usd", "1", "go"]);
    let out = case.run(&args);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("--max-budget-usd needs the prices of the fallback model too"),
        "{out:?}"
    );
    assert!(case.server.requests().is_empty());

    let case = priced_case(
        vec![
            Reply::error(529, "Overloaded"),
            answer("cheap enough", 300, 7),
        ],
        true,
    );
    let out = case.run(&args);
    assert_eq!(out.code, 0, "{out:?}");
    let result = lines(&out).pop().expect("a result");
    let expected = (300.0 * 3.0 + 7.0 * 4.0) / 1e6;
    let cost = result["total_cost_usd"].as_f64().expect("a cost");
    assert!(
        (cost - expected).abs() < 1e-12,
        "{cost} != {expected}: {result}"
    );
    let backup = result["modelUsage"]["backup-model"]["costUSD"]
        .as_f64()
        .expect("the fallback's cost");
    assert!((backup - expected).abs() < 1e-12, "{result}");
}

/// With retries left, the fallback takes over after the third overloaded answer in a row (as
/// Claude Code's does) instead of waiting out the whole retry budget; each retry before it is
/// a `system`/`api_retry` message in Claude Code's shape.
#[test]
fn the_fallback_takes_over_after_the_third_overloaded_answer_in_a_row() {
    let replies = vec![
        Reply::error(529, "Overloaded"),
        Reply::error(503, "Service Unavailable"),
        Reply::error(529, "Overloaded"),
        answer("from the backup", 10, 2),
    ];
    let retries = "retry = { max_retries = 10, initial_backoff_ms = 1, max_backoff_seconds = 1 }\n";
    let case = Case::with(replies, retries, "");
    let mut args = PRINT.to_vec();
    args.push("go");
    let out = case.run(&args);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        case.models_asked(4),
        ["fake-model", "fake-model", "fake-model", "backup-model"]
    );
    let messages = lines(&out);
    let retries: Vec<&Value> = messages
        .iter()
        .filter(|m| m["subtype"] == "api_retry")
        .collect();
    assert_eq!(retries.len(), 2, "{messages:?}");
    assert_eq!(retries[0]["attempt"], 1);
    assert_eq!(retries[0]["max_retries"], 10);
    assert_eq!(retries[0]["error_status"], 529);
    assert_eq!(retries[0]["error"], "overloaded");
    assert_eq!(retries[1]["attempt"], 2);
    assert_eq!(retries[1]["error_status"], 503);
    assert_eq!(retries[1]["error"], "server_error");
    assert!(messages.iter().any(|m| m["subtype"] == "model_fallback"));
    assert_eq!(
        messages.last().expect("a result")["result"],
        "from the backup"
    );
}
