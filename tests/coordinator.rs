//! Two-model collaboration end to end: the real binary against a fake server that serves two
//! models (a planner and an executor), each with its own DeepSeek-like prefix cache. The
//! planner's tools, the plan handed to the executor, byte-stable prefixes in both sessions,
//! resuming both, per-model usage in the result, and no change without a planner model.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::context::prompt_text;
use crate::util::fake_openai::{
    done, sse_finish, sse_text, sse_tool_calls, sse_usage, FakeOpenAI, PrefixCache,
    RecordedRequest, Reply,
};
use crate::util::pty::Pty;
use crate::util::{piped_chat, read_session, reasonix, run, Dir, Run};

pub(crate) const PLANNER: &str = "fake-pro";
pub(crate) const EXECUTOR: &str = "fake-flash";

/// The plan the fake planner writes.
const PLAN: &str = "1. Read notes.txt.\n2. Report what it says.";

/// A user turn containing this makes the fake executor report the plan done.
pub(crate) const DONE: &str = "[done]";

/// A user turn containing this makes the fake executor report the first plan blocked.
const BLOCKED: &str = "[blocked]";

/// A user turn containing this makes the fake planner fail.
const PLANNER_FAILS: &str = "[planner fails]";

/// Prompt and cache-hit tokens per model, as the fake reported them.
pub(crate) type Tally = Arc<Mutex<HashMap<String, (u64, u64)>>>;

/// A config with two models of one provider; `planner` names the planner model, if any.
pub(crate) fn two_model_config(home: &Dir, base_url: &str, planner: Option<&str>) {
    let agent = planner.map_or(String::new(), |p| {
        format!("[agent]\nplanner_model = \"fake/{p}\"\n\n")
    });
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"fake/{EXECUTOR}\"\n\n{agent}[[providers]]\nname = \"fake\"\nbase_url = \"{base_url}\"\nmodels = [\"{EXECUTOR}\", \"{PLANNER}\"]\napi_key_env = \"FAKE_API_KEY\"\nretry = {{ max_retries = 0 }}\n\n[environment]\nenabled = false\n"
        ),
    );
}

fn last_user_text(messages: &[Value]) -> &str {
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
}

/// Answers as either model would. The planner reads `notes.txt` once, then writes [`PLAN`].
/// The executor reads `notes.txt` for each user turn; when the turn holds [`DONE`] (or the
/// word "blocked") it reports that with `plan_status`, then answers. Usage is each model's
/// own prefix cache.
pub(crate) fn two_model_server() -> (FakeOpenAI, Tally) {
    let tally: Tally = Arc::default();
    let mut caches: HashMap<String, PrefixCache> = HashMap::new();
    let counted = Arc::clone(&tally);
    let server = FakeOpenAI::start_with(move |requests: &[RecordedRequest]| {
        let body = &requests.last().expect("a request").body;
        let model = body["model"].as_str().unwrap_or("").to_string();
        let (prompt, hit) = caches
            .entry(model.clone())
            .or_default()
            .serve(prompt_text(body).as_bytes());
        {
            let mut tally = counted.lock().unwrap();
            let entry = tally.entry(model.clone()).or_default();
            entry.0 += prompt;
            entry.1 += hit;
        }
        let usage = sse_usage(prompt, 20, hit);
        let messages = body["messages"].as_array().expect("messages");
        let last = messages.last().expect("a message");
        let id = format!("call_{}", requests.len());
        let call = |name: &str, args: Value| {
            Reply::events(vec![
                sse_tool_calls(&[(&id, name, &args.to_string())]),
                sse_finish("tool_calls"),
                usage.clone(),
                done(),
            ])
        };
        let text = |text: &str| {
            Reply::events(vec![
                sse_text(text),
                sse_finish("stop"),
                usage.clone(),
                done(),
            ])
        };
        let user = last["role"] == "user";
        if model == PLANNER {
            if last_user_text(messages).contains(PLANNER_FAILS) {
                return Reply::error(500, "the planner is down");
            }
            return if user {
                call("read_file", json!({"path": "notes.txt"}))
            } else {
                text(PLAN)
            };
        }
        let turn = last_user_text(messages);
        let reported = last["role"] == "tool"
            && last["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("recorded"));
        if user {
            call("read_file", json!({"path": "notes.txt"}))
        } else if reported {
            text("finished")
        } else if turn.contains(DONE) {
            call(
                "plan_status",
                json!({"status": "done", "note": "notes reported"}),
            )
        } else if turn.contains(BLOCKED) && !turn.contains("revision=\"2\"") {
            call(
                "plan_status",
                json!({"status": "blocked", "note": "notes.txt is empty"}),
            )
        } else {
            text("the notes say hello")
        }
    });
    (server, tally)
}

fn work_dir() -> Dir {
    let work = Dir::new();
    work.write("notes.txt", "hello\n");
    work
}

fn run_json(home: &Dir, work: &Dir, args: &[&str]) -> (Run, Value) {
    let out = run(reasonix(home, work.path())
        .args(["run", "--output-format", "json"])
        .args(args)
        .env("FAKE_API_KEY", "k"));
    let result: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or("null"))
        .unwrap_or_else(|e| panic!("no result object ({e}): {out:?}"));
    (out, result)
}

fn bodies(server: &FakeOpenAI, model: &str) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| b["model"] == model)
        .collect()
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Each request's tools and messages start with the previous request's, byte for byte.
fn assert_prefix_stable(requests: &[Value], who: &str) {
    for pair in requests.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert_eq!(
            before["tools"].to_string(),
            after["tools"].to_string(),
            "{who}: the tool list changed"
        );
        let old = before["messages"].as_array().unwrap();
        let new = after["messages"].as_array().unwrap();
        assert!(new.len() > old.len(), "{who}: the history did not grow");
        for (i, (a, b)) in old.iter().zip(new).enumerate() {
            assert_eq!(
                a.to_string(),
                b.to_string(),
                "{who}: message {i} changed between requests"
            );
        }
    }
}

/// Files in this workspace's sessions directory and in its `planner` directory.
fn session_layout(home: &Dir) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let projects = home.join(".reasonix/projects");
    let project = std::fs::read_dir(&projects)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let list = |dir: &Path| -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        files
    };
    let sessions = project.join("sessions");
    (list(&sessions), list(&sessions.join("planner")))
}

#[test]
fn the_planner_gets_read_only_tools_and_the_executor_gets_the_plan() {
    let (server, _) = two_model_server();
    let home = Dir::new();
    let work = work_dir();
    two_model_config(&home, &server.base_url(), Some(PLANNER));
    let (out, result) = run_json(&home, &work, &["what do the notes say"]);
    assert_eq!(out.code, 0, "{out:?}");

    let planner = bodies(&server, PLANNER);
    assert_eq!(planner.len(), 2, "the planner researched, then planned");
    for body in &planner {
        assert_eq!(
            tool_names(body),
            [
                "read_file",
                "ls",
                "glob",
                "grep",
                "view_image",
                "history",
                "memory"
            ],
            "the planner's tools"
        );
    }
    let system = planner[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("# Your role: planner"), "{system}");

    let executor = bodies(&server, EXECUTOR);
    let tools = tool_names(&executor[0]);
    for name in ["write_file", "bash", "todo_write", "task", "plan_status"] {
        assert!(
            tools.iter().any(|t| t == name),
            "executor lacks {name}: {tools:?}"
        );
    }
    let first = executor[0]["messages"].as_array().unwrap();
    let handoff = last_user_text(first);
    assert!(
        handoff.starts_with("<plan revision=\"1\" from=\"fake-pro\">\n1. Read notes.txt."),
        "{handoff}"
    );
    assert!(
        handoff.ends_with("<request>\nwhat do the notes say\n</request>"),
        "{handoff}"
    );
    assert!(
        !first.iter().any(|m| m["content"]
            .as_str()
            .is_some_and(|c| c.contains("# Your role: planner"))),
        "the planner's context leaked into the executor's session"
    );
    assert_eq!(result["result"], "the notes say hello", "{result}");
}

#[test]
fn both_sessions_stay_prefix_stable_resume_together_and_report_per_model_usage() {
    let (server, _) = two_model_server();
    let home = Dir::new();
    let work = work_dir();
    two_model_config(&home, &server.base_url(), Some(PLANNER));
    let (out, first) = run_json(&home, &work, &[&format!("read the notes {DONE}")]);
    assert_eq!(out.code, 0, "{out:?}");
    let (out, second) = run_json(&home, &work, &["--continue", "read them again"]);
    assert_eq!(out.code, 0, "{out:?}");
    let (out, third) = run_json(&home, &work, &["--continue", "and once more"]);
    assert_eq!(out.code, 0, "{out:?}");

    // The plan was reported done in run 1, so run 2 planned again, continuing the planner's
    // session; run 3 worked under run 2's plan without the planner.
    let planner = bodies(&server, PLANNER);
    assert_eq!(planner.len(), 4, "two plans of two requests each");
    assert_prefix_stable(&planner, "planner");
    let replanned = last_user_text(planner[2]["messages"].as_array().unwrap());
    assert!(
        replanned.starts_with("<executor_report status=\"done\">\nnotes reported\n"),
        "{replanned}"
    );
    let executor = bodies(&server, EXECUTOR);
    assert_prefix_stable(&executor, "executor");
    let last = last_user_text(executor.last().unwrap()["messages"].as_array().unwrap());
    assert_eq!(last, "and once more", "run 3 went straight to the executor");

    // One executor session named by both runs, its planner beside it, linked both ways.
    let (sessions, planners) = session_layout(&home);
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(planners.len(), 1, "{planners:?}");
    let (header, _) = read_session(&sessions[0]);
    let (planner_header, planner_messages) = read_session(&planners[0]);
    let id = header["id"].as_str().unwrap();
    assert_eq!(header["planner"], format!("{id}-planner"));
    assert_eq!(planner_header["executor"], id);
    assert_eq!(planner_header["model"], PLANNER);
    assert_eq!(first["session_id"], id);
    assert_eq!(third["session_id"], id);
    assert_eq!(
        planner_messages
            .iter()
            .filter(|m| m["role"] == "user")
            .count(),
        2,
        "the planner session holds both planning turns"
    );

    // Per-model usage: the planner's requests are the planner's, the totals add up.
    let models = &second["models"];
    assert_eq!(models[PLANNER]["role"], "planner", "{second}");
    assert_eq!(models[PLANNER]["requests"], 2, "{second}");
    assert_eq!(models[EXECUTOR]["role"], "executor", "{second}");
    assert_eq!(models[EXECUTOR]["requests"], 2, "{second}");
    let input = |v: &Value| v["usage"]["input_tokens"].as_u64().unwrap();
    assert_eq!(
        input(&models[PLANNER]) + input(&models[EXECUTOR]),
        input(&second),
        "{second}"
    );
    assert!(
        models[EXECUTOR]["cache_hit_ratio"].as_f64().unwrap() > 0.0,
        "{second}"
    );
    assert_eq!(third["models"][PLANNER]["requests"], 0, "{third}");
    assert_eq!(second["num_turns"], 4, "{second}");
}

#[test]
fn a_blocked_plan_is_revised_within_the_turn() {
    let (server, _) = two_model_server();
    let home = Dir::new();
    let work = work_dir();
    two_model_config(&home, &server.base_url(), Some(PLANNER));
    let (out, result) = run_json(&home, &work, &["this gets [blocked]"]);
    assert_eq!(out.code, 0, "{out:?}");
    let planner = bodies(&server, PLANNER);
    assert_eq!(planner.len(), 4, "planned, then revised");
    let report = last_user_text(planner[2]["messages"].as_array().unwrap());
    assert!(
        report.starts_with("<executor_report status=\"blocked\">\nnotes.txt is empty\n"),
        "{report}"
    );
    let executor = bodies(&server, EXECUTOR);
    let revised = last_user_text(executor.last().unwrap()["messages"].as_array().unwrap());
    assert!(revised.starts_with("<plan revision=\"2\""), "{revised}");
    assert!(
        revised.ends_with("<request>\nthis gets [blocked]\n</request>"),
        "{revised}"
    );
    assert_eq!(result["result"], "the notes say hello", "{result}");
}

#[test]
fn without_a_planner_model_one_agent_runs_as_before() {
    for planner in [None, Some(EXECUTOR)] {
        let (server, _) = two_model_server();
        let home = Dir::new();
        let work = work_dir();
        two_model_config(&home, &server.base_url(), planner);
        let (out, result) = run_json(&home, &work, &["what do the notes say"]);
        assert_eq!(out.code, 0, "{out:?}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "read, then answer");
        assert!(requests.iter().all(|r| r.body["model"] == EXECUTOR));
        let tools = tool_names(&requests[0].body);
        assert!(!tools.iter().any(|t| t == "plan_status"), "{tools:?}");
        assert_eq!(
            last_user_text(requests[0].body["messages"].as_array().unwrap()),
            "what do the notes say",
            "the prompt is sent as typed"
        );
        let (sessions, planners) = session_layout(&home);
        assert_eq!((sessions.len(), planners.len()), (1, 0));
        let (header, _) = read_session(&sessions[0]);
        assert!(header.get("planner").is_none(), "{header}");
        let models = result["models"].as_object().unwrap();
        assert_eq!(models.len(), 1, "{result}");
        assert_eq!(models[EXECUTOR]["role"], "agent", "{result}");
        assert_eq!(models[EXECUTOR]["requests"], 2, "{result}");
    }
}

#[test]
fn the_chat_continues_both_sessions() {
    let (server, _) = two_model_server();
    let home = Dir::new();
    let work = work_dir();
    two_model_config(&home, &server.base_url(), Some(PLANNER));
    let first = piped_chat(&home, work.path(), &[], &format!("read the notes {DONE}\n"));
    assert_eq!(first.code, 0, "{first:?}");
    let second = piped_chat(&home, work.path(), &["--continue"], "read them again\n");
    assert_eq!(second.code, 0, "{second:?}");
    let planner = bodies(&server, PLANNER);
    assert_eq!(planner.len(), 4, "planned in each chat");
    assert_prefix_stable(&planner, "planner");
    assert_prefix_stable(&bodies(&server, EXECUTOR), "executor");
    let (sessions, planners) = session_layout(&home);
    assert_eq!(
        (sessions.len(), planners.len()),
        (1, 1),
        "{sessions:?} {planners:?}"
    );
    assert!(second.stdout.contains("the notes say hello"), "{second:?}");
}

#[test]
fn the_chat_shows_the_plan_and_each_models_cache_and_replans_on_request() {
    let (server, _) = two_model_server();
    let home = Dir::new();
    let work = work_dir();
    two_model_config(&home, &server.base_url(), Some(PLANNER));
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, 120, 40);
    pty.wait_text("fake-flash · ask");
    pty.send("what do the notes say\r");
    pty.wait_text("the notes say hello");
    pty.wait_text("Ask anything");
    pty.wait_text("executor");
    let screen = pty.screen();
    assert!(screen.contains("plan 1 from fake-pro:"), "{screen}");
    assert!(screen.contains("  2. Report what it says."), "{screen}");
    let status = screen
        .lines()
        .find(|l| l.contains("fake-flash · ask"))
        .unwrap_or_default()
        .to_string();
    assert!(
        status.contains("planner ") && status.contains("executor "),
        "status line: {status}"
    );

    pty.send("/replan only the first line\r");
    pty.wait_text("plan 2 from fake-pro:");
    pty.wait_text("Ask anything");
    let planner = bodies(&server, PLANNER);
    assert_eq!(planner.len(), 4, "the planner ran again");
    let asked = last_user_text(planner[2]["messages"].as_array().unwrap());
    assert_eq!(
        asked,
        "<replan>The user asked for a new plan.</replan>\n\n<request>\nonly the first line\n</request>"
    );
    assert_prefix_stable(&planner, "planner");
    let executor = bodies(&server, EXECUTOR);
    let handoff = last_user_text(executor.last().unwrap()["messages"].as_array().unwrap());
    assert!(handoff.starts_with("<plan revision=\"2\""), "{handoff}");
    pty.send("\x04");
    assert!(pty.wait_exit().success(), "{}", pty.screen());
}

#[test]
fn resuming_in_the_chat_brings_back_the_planner_session_too() {
    let (server, _) = two_model_server();
    let home = Dir::new();
    let work = work_dir();
    two_model_config(&home, &server.base_url(), Some(PLANNER));
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, 120, 40);
    pty.wait_text("fake-flash · ask");
    pty.send(&format!("first topic {DONE}\r"));
    pty.wait_text("finished");
    pty.wait_text("Ask anything");
    pty.send("/new\r");
    pty.wait_text("new conversation");
    pty.send("second topic\r");
    pty.wait_text("the notes say hello");
    pty.wait_text("Ask anything");
    pty.send("/resume\r");
    pty.wait_text("Resume a conversation");
    // The listing shows the request, not the plan block the executor received.
    assert!(
        pty.screen().contains("first topic [done]"),
        "{}",
        pty.screen()
    );
    pty.send("\r");
    pty.wait_text("resumed conversation");
    pty.send("more on the first\r");
    // Plans are numbered per conversation: the first topic had one.
    pty.wait_text("plan 2 from fake-pro:");
    pty.wait_text("Ask anything");
    let planner = bodies(&server, PLANNER);
    assert_eq!(planner.len(), 6, "three plans of two requests");
    let first_topic = planner[1]["messages"].as_array().unwrap();
    let resumed = planner[4]["messages"].as_array().unwrap();
    assert_eq!(
        resumed[..first_topic.len()]
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>(),
        first_topic.iter().map(Value::to_string).collect::<Vec<_>>(),
        "the resumed planner continues the first topic's planner session"
    );
    let asked = last_user_text(resumed);
    assert!(
        asked.ends_with("<request>\nmore on the first\n</request>"),
        "{asked}"
    );
    pty.send("\x04");
    assert!(pty.wait_exit().success(), "{}", pty.screen());
    let (sessions, planners) = session_layout(&home);
    assert_eq!((sessions.len(), planners.len()), (2, 2));
}

#[test]
fn a_failed_planning_leaves_the_next_turn_to_plan() {
    let (server, _) = two_model_server();
    let home = Dir::new();
    let work = work_dir();
    two_model_config(&home, &server.base_url(), Some(PLANNER));
    // One chat process: the standing is the coordinator's memory, not re-read from disk.
    let lines = format!("read the notes {DONE}\n{PLANNER_FAILS}\nread them again\n");
    let out = piped_chat(&home, work.path(), &[], &lines);
    assert!(out.stderr.contains("the planner is down"), "{out:?}");
    let planner = bodies(&server, PLANNER);
    assert_eq!(
        planner.len(),
        5,
        "planned (2), failed (1), planned again (2): {out:?}"
    );
    let asked = last_user_text(planner[3]["messages"].as_array().unwrap());
    assert!(
        asked.starts_with("<executor_report status=\"done\">"),
        "the report still reaches the planner: {asked}"
    );
    assert!(
        asked.ends_with("<request>\nread them again\n</request>"),
        "{asked}"
    );
}

#[test]
fn a_forked_session_forks_its_planner_session_too() {
    let (server, _) = two_model_server();
    let home = Dir::new();
    let work = work_dir();
    two_model_config(&home, &server.base_url(), Some(PLANNER));
    let (out, first) = run_json(&home, &work, &[&format!("read the notes {DONE}")]);
    assert_eq!(out.code, 0, "{out:?}");
    let (out, forked) = run_json(&home, &work, &["--continue", "--fork-session", "again"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_ne!(first["session_id"], forked["session_id"]);
    let planner = bodies(&server, PLANNER);
    assert_eq!(planner.len(), 4, "planned in both runs");
    assert_prefix_stable(&planner, "planner");
    let (sessions, planners) = session_layout(&home);
    assert_eq!((sessions.len(), planners.len()), (2, 2));
    let original = first["session_id"].as_str().unwrap();
    let copy = forked["session_id"].as_str().unwrap();
    let (header, _) = read_session(
        &planners
            .iter()
            .find(|p| p.to_string_lossy().contains(copy))
            .expect("the fork's planner session")
            .clone(),
    );
    assert_eq!(header["executor"], copy, "{header}");
    assert_eq!(
        header["forked_from"],
        format!("{original}-planner"),
        "{header}"
    );
}
