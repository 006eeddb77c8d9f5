//! Goal mode and AutoResearch end to end: the real binary against the scripted fake model.
//! `reasonix run --goal` continues until the model reports completion, stops on three
//! normalised repeats of a blocked state and at the continuation limit (exit codes), keeps the
//! system prompt, the tools and every earlier message byte-stable across continuation turns,
//! and creates an AutoResearch directory for a research goal and none for a simple one. In the
//! chat: `/goal` shows in the status line, runs to completion, and `/goal clear` and `/plan`
//! clear it.

use serde_json::Value;

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::pty::Pty;
use crate::util::{reasonix, run, use_fake_provider, Dir, Run};

fn setup(replies: Vec<Reply>) -> (FakeOpenAI, Dir, Dir) {
    let server = FakeOpenAI::start(replies);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    (server, home, work)
}

fn status(state: &str, extra: &str) -> Reply {
    Reply::text(&format!(
        "Worked on it.\n\n<goal-status>\nstate: {state}\n{extra}</goal-status>"
    ))
}

fn goal_run(home: &Dir, work: &Dir, args: &[&str]) -> Run {
    let mut all = vec!["run", "--output-format", "stream-json"];
    all.extend_from_slice(args);
    run(reasonix(home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(&all))
}

fn result_of(out: &Run) -> Value {
    let last = out.stdout.lines().last().unwrap_or_default();
    let value: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(value["type"], "result", "{out:?}");
    value
}

fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().expect("messages")
}

fn user_texts(body: &Value) -> Vec<String> {
    messages(body)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The directories under the workspace's `.reasonix/autoresearch/`.
fn research_dirs(work: &Dir) -> Vec<String> {
    let mut dirs: Vec<String> = std::fs::read_dir(work.join(".reasonix/autoresearch"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn a_goal_continues_until_the_model_reports_completion_and_the_prefix_stays_stable() {
    let (server, home, work) = setup(vec![
        Reply::text("Looked around; nothing reported yet."),
        Reply::tool_calls(&[("c1", "ls", "{}")]),
        status("continue", "summary: read the layout\n"),
        status(
            "complete",
            "summary: the flag is added\nverified:\n- cargo test (12 passed)\nunverified: \
             the Windows build\n",
        ),
    ]);
    let out = goal_run(&home, &work, &["--goal", "add a --json flag"]);
    assert_eq!(out.code, 0, "{out:?}");
    let result = result_of(&out);
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(
        result["result"], "Worked on it.",
        "the status block is the goal's"
    );
    let goal = &result["goal"];
    assert_eq!(goal["state"], "complete", "{goal}");
    assert_eq!(goal["objective"], "add a --json flag");
    assert_eq!(goal["summary"], "the flag is added");
    assert_eq!(
        goal["verified"],
        serde_json::json!(["cargo test (12 passed)"])
    );
    assert_eq!(goal["unverified"], serde_json::json!(["the Windows build"]));
    assert_eq!(goal["continuations"], 2);
    assert_eq!(goal["autoresearch_dir"], Value::Null);
    let notices: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "notice")
        .filter_map(|v| v["message"].as_str().map(str::to_string))
        .map(|m| Box::leak(m.into_boxed_str()) as &str)
        .collect();
    assert!(
        notices.contains(&"goal: continuing (2 of 20): read the layout"),
        "{notices:?}"
    );

    let requests = server.wait_for_requests(4);
    assert_eq!(server.requests().len(), 4, "no request after completion");
    let first = user_texts(&requests[0].body);
    assert_eq!(first.len(), 1);
    assert!(first[0].starts_with("<active-goal>\n"), "{}", first[0]);
    assert!(
        first[0].contains("Objective:\nadd a --json flag\n"),
        "{}",
        first[0]
    );
    let last = user_texts(&requests[3].body);
    assert_eq!(last.len(), 3, "two continuation turns: {last:?}");
    assert!(
        last[1].contains("ended without a <goal-status> block"),
        "{}",
        last[1]
    );
    assert!(
        last[2].contains("Continue with the next step"),
        "{}",
        last[2]
    );
    // The goal lives in user turns: the system prompt never mentions it, and every request
    // repeats the previous one byte for byte before adding to it.
    let system = messages(&requests[0].body)[0].to_string();
    assert!(!system.contains("active-goal"), "{system}");
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
}

#[test]
fn three_normalised_repeats_of_a_blocked_state_stop_the_goal_with_exit_5() {
    let (server, home, work) = setup(vec![
        status("blocked", "reason: Need the production API key.\n"),
        status("blocked", "reason: need the staging password\n"),
        status("blocked", "reason: need the  production api KEY\n"),
        status("blocked", "reason: NEED THE PRODUCTION API-KEY!\n"),
        Reply::text("never requested"),
    ]);
    let out = goal_run(&home, &work, &["--goal", "deploy the service"]);
    assert_eq!(out.code, 5, "{out:?}");
    let result = result_of(&out);
    assert_eq!(result["subtype"], "error_goal_blocked", "{result}");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["goal"]["state"], "blocked");
    assert_eq!(result["goal"]["reason"], "NEED THE PRODUCTION API-KEY!");
    assert!(
        result["error"].as_str().unwrap().contains("goal: blocked"),
        "{result}"
    );
    assert_eq!(server.wait_for_requests(4).len(), 4);
    assert_eq!(server.requests().len(), 4, "stopped at the third repeat");
    let texts = user_texts(&server.requests()[1].body);
    assert!(
        texts[1].contains("You reported blocked: Need the production API key."),
        "{}",
        texts[1]
    );
}

#[test]
fn the_continuation_limit_and_the_step_limit_end_a_goal_with_exit_4() {
    let (server, home, work) = setup(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three"),
        Reply::text("never requested"),
    ]);
    let out = goal_run(
        &home,
        &work,
        &["--goal", "--max-continuations", "2", "tidy the docs"],
    );
    assert_eq!(out.code, 4, "{out:?}");
    let result = result_of(&out);
    assert_eq!(result["subtype"], "error_goal_limit", "{result}");
    assert_eq!(result["goal"]["state"], "limit");
    assert_eq!(result["goal"]["continuations"], 2);
    assert_eq!(server.requests().len(), 3);

    // --max-steps bounds the tool rounds of the whole goal, across continuation turns.
    let (server, home, work) = setup(vec![
        Reply::tool_calls(&[("c1", "ls", "{}")]),
        Reply::text("first turn done"),
        Reply::tool_calls(&[("c2", "ls", "{}")]),
        Reply::text("never requested"),
    ]);
    let out = goal_run(
        &home,
        &work,
        &["--goal", "--max-steps", "1", "tidy the docs"],
    );
    assert_eq!(out.code, 4, "{out:?}");
    let result = result_of(&out);
    assert_eq!(result["subtype"], "error_max_turns", "{result}");
    assert_eq!(result["goal"]["state"], "ended");
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn a_research_goal_gets_a_directory_and_the_protocol_and_a_simple_goal_neither() {
    let done = || status("complete", "verified: nothing to run\n");
    let (server, home, work) = setup(vec![done(), done(), done(), done(), done(), done()]);
    let out = goal_run(
        &home,
        &work,
        &["--goal", "optimise the parser's throughput"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let dirs = research_dirs(&work);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    assert!(
        dirs[0].ends_with("-optimise-the-parser-s-throughput"),
        "{dirs:?}"
    );
    let dir = format!(".reasonix/autoresearch/{}", dirs[0]);
    assert_eq!(result_of(&out)["goal"]["autoresearch_dir"], dir.as_str());
    let body = &server.requests()[0].body;
    let user = &user_texts(body)[0];
    assert!(
        user.contains(&format!("<autoresearch dir=\"{dir}/\">")),
        "{user}"
    );
    assert!(user.contains("hypotheses.md"), "{user}");
    assert!(!messages(body)[0].to_string().contains("autoresearch"));
    assert!(!body["tools"].to_string().contains("autoresearch"));

    // --simple forbids it; --research forces it on a simple objective.
    let out = goal_run(
        &home,
        &work,
        &["--goal", "--simple", "optimise the parser's throughput"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(research_dirs(&work).len(), 1, "no new directory");
    assert_eq!(result_of(&out)["goal"]["autoresearch_dir"], Value::Null);
    assert!(!user_texts(&server.requests()[1].body)[0].contains("autoresearch"));
    let out = goal_run(&home, &work, &["--research", "fix the typo in README"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(research_dirs(&work).len(), 2);
    assert_eq!(result_of(&out)["goal"]["state"], "complete");

    // An ordinary prompt: a weak signal stays one turn, a very strong one becomes a research
    // goal, unless --simple.
    let weak = goal_run(&home, &work, &["optimize the long term research plan"]);
    assert_eq!(weak.code, 0, "{weak:?}");
    assert!(result_of(&weak).get("goal").is_none(), "{weak:?}");
    assert_eq!(research_dirs(&work).len(), 2);
    let strong = "run benchmark experiments overnight to optimize the parser; keep iterating \
                  until it is twice as fast";
    let simple = goal_run(&home, &work, &["--simple", strong]);
    assert!(result_of(&simple).get("goal").is_none(), "{simple:?}");
    assert_eq!(research_dirs(&work).len(), 2);
    let upgraded = goal_run(&home, &work, &[strong]);
    assert_eq!(upgraded.code, 0, "{upgraded:?}");
    assert!(upgraded
        .stdout
        .contains("autoresearch: this prompt asks for long-horizon research"));
    assert_eq!(result_of(&upgraded)["goal"]["state"], "complete");
    assert_eq!(research_dirs(&work).len(), 3);
}

#[test]
fn goal_flags_that_contradict_are_usage_errors() {
    let home = Dir::new();
    let work = Dir::new();
    for (args, message) in [
        (
            vec!["run", "--goal", "--plan", "x"],
            "--goal and --plan are two collaboration modes",
        ),
        (
            vec!["run", "--research", "--simple", "x"],
            "--research and --simple exclude each other",
        ),
        (
            vec!["run", "--goal", "--max-continuations", "many", "x"],
            "--max-continuations needs a whole number",
        ),
    ] {
        let out = run(reasonix(&home, work.path()).args(&args));
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains(message), "{args:?}: {out:?}");
    }
}

const READY: &str = "fake-model · ask";

fn chat(home: &Dir, work: &Dir) -> Pty {
    let mut cmd = reasonix(home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, 110, 30);
    pty.wait_text(READY);
    pty
}

#[test]
fn slash_goal_runs_to_completion_in_the_chat_and_clear_and_plan_end_it() {
    let (stalled, _release) = Reply::stall();
    let (server, home, work) = setup(vec![
        status("continue", "summary: halfway\n"),
        status("complete", "summary: finished it\nverified: the tests\n"),
        status("continue", "summary: started\n"),
        stalled,
    ]);
    let mut pty = chat(&home, &work);
    pty.send("/goal --simple write the release notes\r");
    pty.wait_text("goal complete: finished it");
    // Completion ends the goal: the status line is back to normal mode.
    pty.wait_for("normal mode after completion", |vt| {
        vt.screen().contains("fake-model · ask ·") && !vt.screen().contains("· goal")
    });
    let requests = server.wait_for_requests(2);
    let texts = user_texts(&requests[1].body);
    assert!(
        texts[0].contains("Objective:\nwrite the release notes"),
        "{texts:?}"
    );
    assert!(
        texts[1].contains("Continuation 1 of at most 20"),
        "{texts:?}"
    );

    // A goal that is still open stays in the status line until /goal clear.
    pty.send("/goal tidy the changelog\r");
    pty.wait_text("goal: continuing (1 of 20): started");
    server.wait_for_requests(4);
    // Esc stops it as any turn; the goal stays active.
    pty.send("\x1b");
    pty.wait_text("Ask anything");
    pty.wait_text("fake-model · ask · goal");
    pty.send("/goal\r");
    pty.wait_text("active goal: tidy the changelog; /goal clear ends it");
    pty.send("/goal clear\r");
    pty.wait_text("goal cleared");
    pty.send("/goal\r");
    pty.wait_text("no active goal; /goal OBJECTIVE starts one");
    pty.wait_for("goal gone from the status line", |vt| {
        vt.screen().contains("fake-model · ask ·") && !vt.screen().contains("· goal")
    });
    // Switching to plan mode clears a goal too.
    // (No reply is scripted, so its turn fails; the goal stays active.)
    pty.send("/goal tidy the changelog\r");
    pty.wait_text("no reply scripted");
    pty.wait_text("Ask anything");
    pty.wait_text("fake-model · ask · goal");
    pty.send("/plan\r");
    pty.wait_text("fake-model · ask · plan");
    assert!(!pty.screen().contains("· goal"), "{}", pty.screen());
}

#[test]
fn a_strong_message_becomes_a_research_goal_in_the_chat_and_shift_tab_returns_to_normal() {
    let (stalled, _release) = Reply::stall();
    let (server, home, work) = setup(vec![
        Reply::text("a weak one stays an ordinary turn"),
        stalled,
    ]);
    let mut pty = chat(&home, &work);
    pty.send("optimize the long term research plan\r");
    pty.wait_text("a weak one stays an ordinary turn");
    assert!(research_dirs(&work).is_empty());
    assert!(!pty.screen().contains("· goal"), "{}", pty.screen());
    pty.send(
        "run benchmark experiments overnight to optimize the parser; keep iterating until it is \
         twice as fast\r",
    );
    pty.wait_text("fake-model · ask · goal (research)");
    let requests = server.wait_for_requests(2);
    let texts = user_texts(&requests[1].body);
    assert!(!texts[0].contains("active-goal"), "{texts:?}");
    assert!(texts[1].starts_with("<active-goal>\n"), "{texts:?}");
    assert!(texts[1].contains("<autoresearch dir="), "{texts:?}");
    assert_eq!(research_dirs(&work).len(), 1);
    pty.send("\x1b");
    pty.wait_text("Ask anything");
    // Shift-Tab with a goal active: back to normal mode, the posture kept.
    pty.send("\x1b[Z");
    pty.wait_text("goal cleared; back to normal mode");
    pty.wait_for("normal mode, still ask", |vt| {
        vt.screen().contains("fake-model · ask ·") && !vt.screen().contains("· goal")
    });
}
