//! Context management end to end: sessions against the fake server that cross the snip,
//! compact and force thresholds, with a server that counts tokens and cache hits the way a
//! prefix-caching provider would; the history and memory tools; the headless refusal of
//! memory writes.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

use reasonix::agent::compaction::{self, ContextOptions, SUMMARY_SYSTEM_PROMPT};
use reasonix::agent::events::Event;
use reasonix::agent::runner::{Agent, Options};
use reasonix::agent::session::{self, Header, Session};
use reasonix::cancel::CancelToken;
use reasonix::permission::{
    AllowAll, ApprovalAnswer, ApprovalRequest, Approver, Decision, Gate, Policy, PolicyGate,
    Posture, Rule,
};
use reasonix::provider::{self, Message, ProviderSettings, RetryPolicy, ToolCall};
use reasonix::tool::builtin::history::{History, StatePaths};
use reasonix::tool::builtin::{self, memory};
use reasonix::tool::source::{ToolChange, ToolSource};
use reasonix::tool::{Family, Registry, Tool, ToolContext, ToolError};

use crate::util::fake_openai::{
    done, pairing_problems, sse_finish, sse_text, sse_tool_calls, sse_usage, FakeOpenAI,
    PrefixCache, RecordedRequest, Reply,
};
use crate::util::{read_session, reasonix, run, session_files, Dir};

// ---------------------------------------------------------------------------------------
// A server that behaves like a prefix-caching provider.

/// The prompt as a provider renders it: tool definitions, then the messages.
pub(crate) fn prompt_text(body: &Value) -> String {
    format!("{}{}", body["tools"], body["messages"])
}

pub(crate) fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

pub(crate) fn is_summary(body: &Value) -> bool {
    body.get("tools")
        .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
        && body["messages"][0]["content"]
            .as_str()
            .is_some_and(|c| c == SUMMARY_SYSTEM_PROMPT)
}

/// Answers like the model of a long chat: a user turn gets a `read_file` call for the path it
/// names, a tool result gets a short answer, a summary request gets a short digest. Usage is
/// what DeepSeek's prefix cache would report (see [`PrefixCache`]): four bytes per token,
/// cache hits in 64-token units of the longest prefix shared with any earlier request.
struct Conversation {
    cache: PrefixCache,
    digests: usize,
    /// What the model says after reading a file.
    answer: String,
}

impl Conversation {
    fn new(answer: &str) -> Conversation {
        Conversation {
            cache: PrefixCache::new(),
            digests: 0,
            answer: answer.to_string(),
        }
    }

    fn reply(&mut self, requests: &[RecordedRequest]) -> Reply {
        let request = requests.last().expect("a request");
        let body = &request.body;
        let (prompt, hit) = self.cache.serve(prompt_text(body).as_bytes());
        let usage = sse_usage(prompt, 20, hit);
        if is_summary(body) {
            self.digests += 1;
            return Reply::events(vec![
                sse_text(&format!(
                    "## Done\n- Read the data files the user named (digest {}).",
                    self.digests
                )),
                sse_finish("stop"),
                usage,
                done(),
            ]);
        }
        let messages = body["messages"].as_array().expect("messages");
        let last = messages.last().expect("a message");
        match last["role"].as_str() {
            Some("user") => {
                let content = last["content"].as_str().unwrap_or("");
                let path = content
                    .split_whitespace()
                    .find(|w| w.starts_with("data/"))
                    .unwrap_or("data/none.txt")
                    .trim_end_matches('.');
                let id = format!("call_{}", requests.len());
                let args = json!({ "path": path }).to_string();
                Reply::events(vec![
                    sse_tool_calls(&[(&id, "read_file", &args)]),
                    sse_finish("tool_calls"),
                    usage,
                    done(),
                ])
            }
            _ => Reply::events(vec![
                sse_text(&self.answer),
                sse_finish("stop"),
                usage,
                done(),
            ]),
        }
    }
}

pub(crate) fn conversation_server(answer: &str) -> FakeOpenAI {
    let mut conversation = Conversation::new(answer);
    FakeOpenAI::start_with(move |requests| conversation.reply(requests))
}

/// A reply long enough that only folding can reclaim it.
fn long_answer() -> String {
    "I read the file. The rows all report status ok and the checksums look consistent with \
     the earlier files; nothing needs to change. "
        .repeat(6)
}

/// `count` data files of about `bytes` bytes each, every line unique.
pub(crate) fn write_data(work: &Dir, count: usize, bytes: usize) {
    for k in 0..count {
        let mut text = String::new();
        let mut j = 0;
        while text.len() < bytes {
            text.push_str(&format!(
                "row {k}-{j}: checksum {:08x} status ok\n",
                (k * 7919 + j * 104_729) % 0xffff_ffff
            ));
            j += 1;
        }
        work.write(&format!("data/f{k}.txt"), &text);
    }
}

pub(crate) fn fact(turn: usize) -> String {
    format!(
        "Turn {turn}: please remember that the code word for turn {turn} is word{}x. Then read data/f{}.txt.",
        turn * 31 % 997,
        turn % 20
    )
}

/// Requests that belong to the conversation (not summary requests).
pub(crate) fn main_requests(server: &FakeOpenAI) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| !is_summary(b))
        .collect()
}

/// [`main_requests`], checked to pair every tool call with one result, both as the fake
/// server saw them arrive and in each body.
pub(crate) fn paired_main_requests(server: &FakeOpenAI) -> Vec<Value> {
    assert!(server.pairing_violations().is_empty());
    let requests = main_requests(server);
    for body in &requests {
        assert_eq!(pairing_problems(body), Vec::<String>::new());
    }
    requests
}

/// The text of each user message of a request body, in order.
pub(crate) fn user_texts(body: &Value) -> Vec<&str> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect()
}

fn messages_text(body: &Value) -> String {
    body["messages"].to_string()
}

/// Per consecutive pair of requests: `None` when the later one starts with every byte of the
/// earlier one's messages, else the index of the first message that differs.
pub(crate) fn prefix_breaks(requests: &[Value]) -> Vec<Option<usize>> {
    let texts: Vec<String> = requests.iter().map(messages_text).collect();
    requests
        .windows(2)
        .zip(texts.windows(2))
        .map(|(pair, text)| {
            let (before, after) = (&text[0], &text[1]);
            assert_eq!(
                pair[0]["tools"], pair[1]["tools"],
                "tool definitions changed"
            );
            // Everything but the closing bracket of the earlier array.
            if after.starts_with(&before[..before.len() - 1]) {
                return None;
            }
            let (old, new) = (
                pair[0]["messages"].as_array().unwrap(),
                pair[1]["messages"].as_array().unwrap(),
            );
            Some(old.iter().zip(new).take_while(|(a, b)| a == b).count())
        })
        .collect()
}

/// Bytes of every request's prompt that repeat the previous request's prompt, over all bytes.
pub(crate) fn stable_fraction(requests: &[Value]) -> f64 {
    let texts: Vec<String> = requests.iter().map(prompt_text).collect();
    let total: usize = texts.iter().map(String::len).sum();
    let stable: usize = texts
        .windows(2)
        .map(|pair| common_prefix(&pair[0], &pair[1]))
        .sum();
    stable as f64 / total as f64
}

// ---------------------------------------------------------------------------------------
// Library-level agents.

pub(crate) struct Harness {
    pub(crate) server: FakeOpenAI,
    pub(crate) work: Dir,
    state: Dir,
    pub(crate) agent: Agent,
    events: Arc<Mutex<Vec<Event>>>,
}

fn sessions_dir(state: &Dir) -> std::path::PathBuf {
    state.join("projects/p/sessions")
}

/// Every built-in tool.
pub(crate) const ALL_TOOLS: &[&str] = &[];
/// A small tool set, so the tool definitions do not dominate a small window.
pub(crate) const FEW_TOOLS: &[&str] = &["read_file", "history", "memory", "remember", "forget"];

/// An agent on `server` with the named tools (all when empty).
pub(crate) fn harness(
    server: FakeOpenAI,
    window: u64,
    gate: Box<dyn Gate>,
    names: &[&str],
) -> Harness {
    let work = Dir::new();
    let state = Dir::new();
    let settings = ProviderSettings {
        name: "fake".into(),
        kind: "openai".into(),
        model: "fake-model".into(),
        base_url: server.base_url(),
        retry: RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        },
        ..ProviderSettings::default()
    };
    let provider = provider::build(settings).expect("provider");
    let mut tools = Registry::new();
    for tool in builtin::all() {
        if names.is_empty() || names.contains(&tool.name()) {
            tools.insert(tool);
        }
    }
    let header = Header::new(session::new_id(), "fake", "fake-model", work.path());
    let mut session = Session::create(&sessions_dir(&state), header).expect("session");
    session
        .push(Message::system("You are a coding agent under test."))
        .unwrap();
    let mut ctx = ToolContext::new(work.path().to_path_buf());
    ctx.state = Some(Arc::new(StatePaths::new(
        state.path(),
        sessions_dir(&state),
    )));
    let options = Options {
        max_parallel_tools: 1,
        context: ContextOptions {
            window,
            archive_dir: Some(state.join("archive")),
            ..ContextOptions::default()
        },
        ..Options::default()
    };
    let agent = Agent::new(provider, tools, gate, session, ctx, options);
    Harness {
        server,
        work,
        state,
        agent,
        events: Arc::new(Mutex::new(Vec::new())),
    }
}

impl Harness {
    pub(crate) fn turn(&mut self, input: String) {
        let events = Arc::clone(&self.events);
        let mut sink = move |e: Event| events.lock().unwrap().push(e);
        self.agent.run(input, &mut sink).expect("turn");
    }

    pub(crate) fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }
}

pub(crate) fn compactions(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Compaction { trigger, tier, .. } => {
                Some((trigger.as_str().to_string(), tier.as_str().to_string()))
            }
            _ => None,
        })
        .collect()
}

pub(crate) fn prefix_changes(events: &[Event]) -> Vec<usize> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::CachePrefixChanged { first_changed, .. } => Some(*first_changed),
            _ => None,
        })
        .collect()
}

#[test]
fn two_hundred_turns_in_a_32k_window_keep_every_user_fact() {
    let mut h = harness(
        conversation_server("Noted."),
        32_000,
        Box::new(AllowAll),
        ALL_TOOLS,
    );
    write_data(&h.work, 20, 5_000);
    let started = Instant::now();
    for turn in 0..200 {
        h.turn(fact(turn));
    }
    let elapsed = started.elapsed();
    let requests = paired_main_requests(&h.server);
    assert_eq!(requests.len(), 400, "two requests per turn");

    // Every fact, verbatim, as a user message of the final request.
    let users = user_texts(requests.last().unwrap());
    for turn in 0..200 {
        assert!(users.contains(&fact(turn).as_str()), "fact {turn} lost");
    }

    // Between compactions the prefix is byte-stable; each break is a reported one.
    let events = h.events();
    let breaks: Vec<usize> = prefix_breaks(&requests).into_iter().flatten().collect();
    assert_eq!(breaks, prefix_changes(&events), "unreported prefix changes");
    let tiers = compactions(&events);
    let folds = tiers.iter().filter(|(_, t)| t == "fold").count();
    assert!(folds >= 1, "no fold: {tiers:?}");
    let summaries = h.agent.stats().summary_requests;
    assert!(summaries <= 20, "{summaries} summary calls in 200 turns");

    // The context never outgrew the window.
    let peak = requests
        .iter()
        .map(|body| prompt_text(body).len() as u64 / 4)
        .max()
        .unwrap_or(0);
    assert!(peak < 32_000, "peak prompt {peak} tokens");

    let stats = h.agent.stats();
    let fraction = stable_fraction(&requests);
    let count = |tier: &str| tiers.iter().filter(|(_, t)| t == tier).count();
    println!(
        "200 turns / 32k window: {} requests + {} summary requests in {:.1}s; \
         {} snips, {} prunes, {} folds; peak prompt {peak} tokens; \
         prefix-stable fraction of request bytes {:.1}%; session cache-hit ratio {:.1}%",
        stats.requests,
        stats.summary_requests,
        elapsed.as_secs_f64(),
        count("snip"),
        count("prune"),
        folds,
        fraction * 100.0,
        stats.usage.cache_hit_ratio().unwrap_or(0.0) * 100.0
    );
    assert!(fraction > 0.5, "prefix-stable fraction {fraction}");

    // Resume: the rewritten session reopens to exactly what the agent holds.
    // Read without the lock, which the agent still holds.
    let path = h.agent.session().path().to_path_buf();
    let (_, reopened) = session::load(&path).unwrap();
    assert_eq!(reopened, h.agent.session().messages());
}

#[test]
fn summary_request_carries_only_the_folded_work_and_the_digest_replaces_it() {
    let mut h = harness(
        conversation_server(&long_answer()),
        8_000,
        Box::new(AllowAll),
        FEW_TOOLS,
    );
    write_data(&h.work, 20, 3_000);
    // Shortening comes first; the summary call runs once the answers alone fill the window.
    let mut turn = 0;
    while h.agent.stats().summary_requests == 0 && turn < 60 {
        h.turn(fact(turn));
        turn += 1;
    }
    let summary = h
        .server
        .requests()
        .into_iter()
        .map(|r| r.body)
        .find(is_summary)
        .expect("a summary request");
    assert!(summary.get("tools").is_none(), "{summary}");
    let messages = summary["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    let transcript = messages[1]["content"].as_str().unwrap();
    assert!(transcript.contains("<transcript>"), "{transcript}");
    assert!(
        transcript.contains("user (kept)] Turn 0: please remember"),
        "{transcript}"
    );
    assert!(
        transcript.contains("assistant calls read_file]"),
        "{transcript}"
    );
    assert!(transcript.contains("[3 tool] "), "{transcript}");

    // The digest sits in the history as a user message; the facts stay verbatim around it.
    let history = h.agent.session().messages();
    let digest = history
        .iter()
        .find(|m| compaction::is_digest(m))
        .expect("a digest");
    assert!(digest.content.contains("(digest 1)"), "{}", digest.content);
    assert!(history
        .iter()
        .any(|m| m.content == fact(0) && m.role == provider::Role::User));

    // The archive holds the folded originals, one message per line, in full.
    let archives: Vec<_> = std::fs::read_dir(h.state.join("archive"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!archives.is_empty());
    let mut archived = Vec::new();
    for path in &archives {
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let value: Value = serde_json::from_str(line).expect("archive line is JSON");
            if value["type"] == "archive" {
                assert_eq!(value["session_id"], h.agent.session().id());
                continue;
            }
            archived.push(serde_json::from_value::<Message>(value).expect("a message"));
        }
    }
    let data = h.work.read("data/f1.txt");
    let middle = data.lines().nth(40).unwrap();
    assert!(
        archived
            .iter()
            .any(|m| m.role == provider::Role::Tool && m.content.contains(middle)),
        "the full tool output of turn 1 is archived"
    );
    assert!(archived.iter().any(|m| !m.tool_calls.is_empty()));
    assert!(!h
        .agent
        .session()
        .messages()
        .iter()
        .any(|m| m.content.contains(middle)));
}

#[test]
fn five_successive_folds_keep_facts_and_earlier_digests_verbatim() {
    let mut h = harness(
        conversation_server(&long_answer()),
        8_000,
        Box::new(AllowAll),
        FEW_TOOLS,
    );
    write_data(&h.work, 20, 2_000);
    let mut digests_seen: Vec<String> = Vec::new();
    let mut folds = 0;
    let mut turn = 0;
    while folds < 5 && turn < 60 {
        h.turn(fact(turn));
        turn += 1;
        folds = compactions(&h.events())
            .iter()
            .filter(|(_, t)| t == "fold")
            .count();
        let history = h.agent.session().messages().to_vec();
        // Every digest seen before is still there, byte for byte.
        for digest in &digests_seen {
            assert!(
                history.iter().any(|m| &m.content == digest),
                "digest changed"
            );
        }
        digests_seen = history
            .iter()
            .filter(|m| compaction::is_digest(m))
            .map(|m| m.content.clone())
            .collect();
        for earlier in 0..turn {
            assert!(
                history.iter().any(|m| m.content == fact(earlier)),
                "fact {earlier} lost after turn {turn}"
            );
        }
    }
    assert_eq!(folds, 5, "after {turn} turns");
    assert_eq!(digests_seen.len(), 5);
}

#[test]
fn manual_compaction_folds_on_demand_and_survives_a_resume() {
    let mut h = harness(
        conversation_server("Noted."),
        0,
        Box::new(AllowAll),
        FEW_TOOLS,
    );
    write_data(&h.work, 20, 3_000);
    for turn in 0..6 {
        h.turn(fact(turn));
    }
    assert!(
        compactions(&h.events()).is_empty(),
        "window 0 never compacts"
    );
    let before = h.agent.session().messages().len();
    let events = Arc::clone(&h.events);
    let mut sink = move |e: Event| events.lock().unwrap().push(e);
    assert!(h.agent.compact_now(&mut sink).unwrap());
    let events = h.events();
    let folded = events.iter().find_map(|e| match e {
        Event::Compaction {
            trigger,
            tier,
            messages_folded,
            before_tokens,
            after_tokens,
            ..
        } => Some((
            *trigger,
            *tier,
            *messages_folded,
            before_tokens > after_tokens,
        )),
        _ => None,
    });
    let (trigger, tier, count, shrank) = folded.expect("a compaction event");
    assert_eq!(
        (trigger.as_str(), tier.as_str(), shrank),
        ("manual", "fold", true)
    );
    assert!(count > 0 && h.agent.session().messages().len() < before);
    // Read without the lock, which the agent still holds.
    let path = h.agent.session().path().to_path_buf();
    let (_, reopened) = session::load(&path).unwrap();
    assert_eq!(reopened, h.agent.session().messages());
    // The next request sends exactly the compacted history.
    h.turn(fact(6));
    let last = main_requests(&h.server).pop().unwrap();
    let sent = last["messages"].as_array().unwrap();
    let kept = &reopened;
    for (i, message) in kept.iter().enumerate() {
        assert_eq!(message.content, sent[i]["content"], "message {i}");
        assert_eq!(
            serde_json::to_value(message.role).unwrap(),
            sent[i]["role"],
            "message {i}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// `reasonix run` end to end.

fn write_config(home: &Dir, base_url: &str, provider_extra: &str) {
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"fake\"\n\n[[providers]]\nname = \"fake\"\nbase_url = \"{base_url}\"\nmodel = \"fake-model\"\napi_key_env = \"FAKE_API_KEY\"\nretry = {{ max_retries = 0 }}\n{provider_extra}\n\n[tools]\nenabled = [\"read_file\", \"history\", \"remember\"]\n\n[environment]\nenabled = false\n"
        ),
    );
}

fn stream_events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("stream-json line"))
        .collect()
}

fn run_turn(home: &Dir, work: &Dir, turn: usize, input: &str) -> Vec<Value> {
    let mut cmd = reasonix(home, work.path());
    cmd.args(["run", "--output-format", "stream-json"]);
    cmd.args(["--system-prompt", "You are a coding agent under test."]);
    if turn > 0 {
        cmd.arg("--continue");
    }
    cmd.arg(input);
    let out = run(&mut cmd);
    assert_eq!(out.code, 0, "{out:?}");
    stream_events(&out.stdout)
}

#[test]
fn thirty_runs_stay_prefix_stable_between_reported_compactions() {
    let server = conversation_server("Noted.");
    let home = Dir::new();
    let work = Dir::new();
    write_config(&home, &server.base_url(), "context_window = 12000");
    write_data(&work, 20, 3_000);
    work.write(
        "data/big.txt",
        &"a large log line that repeats\n".repeat(700),
    );
    let mut events = Vec::new();
    for turn in 0..30 {
        let input = if turn == 25 {
            "Turn 25: read data/big.txt.".to_string()
        } else {
            fact(turn)
        };
        events.extend(run_turn(&home, &work, turn, &input));
    }
    let requests = main_requests(&server);
    assert_eq!(requests.len(), 60);
    let notices: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "notice" && e["kind"] == "cache_prefix_changed")
        .collect();
    let reported: Vec<usize> = notices
        .iter()
        .map(|n| n["first_changed"].as_u64().unwrap() as usize)
        .collect();
    // Runs resume the rewritten session: pairs across runs are stable too.
    let breaks: Vec<usize> = prefix_breaks(&requests).into_iter().flatten().collect();
    assert_eq!(breaks, reported);
    let tiers: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "compaction")
        .map(|e| (e["trigger"].as_str().unwrap(), e["tier"].as_str().unwrap()))
        .collect();
    assert!(tiers.contains(&("auto", "snip")), "{tiers:?}");
    assert!(tiers.iter().any(|(_, t)| *t == "fold"), "{tiers:?}");
    assert!(tiers.contains(&("force", "fold")), "{tiers:?}");
    assert_eq!(tiers.len(), notices.len());
    for event in events.iter().filter(|e| e["type"] == "compaction") {
        assert!(
            event["before_tokens"].as_u64() > event["after_tokens"].as_u64(),
            "{event}"
        );
        assert!(event["archive"]
            .as_str()
            .is_some_and(|a| Path::new(a).is_file()));
    }
    // The result object reports the session's cache-hit ratio.
    let result = events.iter().rev().find(|e| e["type"] == "result").unwrap();
    assert!(
        result["cache_hit_ratio"].as_f64().unwrap() > 0.0,
        "{result}"
    );
    let usage = events.iter().find(|e| e["type"] == "usage").unwrap();
    assert!(usage.get("cache_hit_ratio").is_some());

    // The session on disk is valid and every fact but the big turn's is in it.
    let files = session_files(&home);
    assert_eq!(files.len(), 1);
    let (_, messages) = read_session(&files[0]);
    let body = json!({ "messages": messages });
    assert_eq!(pairing_problems(&body), Vec::<String>::new());
    for turn in (0..30).filter(|t| *t != 25) {
        assert!(
            messages.iter().any(|m| m["content"] == fact(turn).as_str()),
            "fact {turn} lost"
        );
    }
    println!(
        "30 runs / 12k window: {} prefix changes, prefix-stable fraction {:.1}%",
        notices.len(),
        stable_fraction(&requests) * 100.0
    );
}

/// Hysteresis through the real binary: a compaction brings the prompt down to the low
/// watermark (half the snip threshold) when it can, so the requests after it are append-only
/// until the prompt has grown back to the snip threshold, at least as many as that growth
/// takes. (Late in a session the snipped stubs and the user's messages alone can be above the
/// watermark; those compactions promise less and are not held to it.)
#[test]
fn after_a_compaction_the_next_requests_are_append_only_as_long_as_the_hysteresis_promises() {
    const WINDOW: u64 = 24_000;
    // 1,200 tokens as the fake counts them (four bytes each).
    const RESULT_BYTES: usize = 4_800;
    let server = conversation_server("Noted.");
    let home = Dir::new();
    let work = Dir::new();
    write_config(
        &home,
        &server.base_url(),
        &format!("context_window = {WINDOW}"),
    );
    write_data(&work, 20, RESULT_BYTES);
    let mut events = Vec::new();
    for turn in 0..24 {
        events.extend(run_turn(&home, &work, turn, &fact(turn)));
    }
    let requests = main_requests(&server);
    assert_eq!(requests.len(), 48);
    // The default ratios: snip at 0.6 of the window, the low watermark half of that.
    let snip_at = WINDOW * 6 / 10;
    let low = snip_at / 2;
    let after: Vec<u64> = events
        .iter()
        .filter(|e| e["type"] == "compaction")
        .map(|e| e["after_tokens"].as_u64().unwrap())
        .collect();
    let reached = after.iter().filter(|t| **t <= low).count();
    assert!(reached >= 3, "compactions reaching {low}: {after:?}");
    // A turn (two requests) adds a user message, a call, one result and a short answer.
    let turn_growth = (RESULT_BYTES as u64 + 1_000) / 4;
    let turns = (snip_at - low - 1) / turn_growth;
    let promised = 2 * turns as usize - 1;
    assert!(promised >= 5, "{promised}");
    let changes: Vec<usize> = prefix_breaks(&requests)
        .iter()
        .enumerate()
        .filter(|(_, b)| b.is_some())
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(
        changes.len(),
        after.len(),
        "every prefix change is a compaction"
    );
    for (pair, tokens) in changes.windows(2).zip(&after) {
        if *tokens > low {
            continue;
        }
        let append_only = pair[1] - pair[0] - 1;
        assert!(
            append_only >= promised,
            "requests {} and {} changed the prefix with only {append_only} append-only requests between, {promised} promised: {changes:?}",
            pair[0],
            pair[1]
        );
    }
    // What was appended after the last compaction is still a byte prefix of the last request.
    let texts: Vec<String> = requests.iter().map(prompt_text).collect();
    let last_change = *changes.last().unwrap();
    for i in last_change + 1..texts.len() {
        let before = &texts[i - 1];
        assert!(
            texts[i].starts_with(&before[..before.len() - 1]),
            "request {i}"
        );
    }
}

#[test]
fn zero_window_disables_compaction_and_a_model_override_enables_it() {
    for (extra, expect_compaction) in [
        ("context_window = 0", false),
        (
            "context_window = 0\nmodel_overrides = { \"fake-model\" = { context_window = 5000 } }",
            true,
        ),
    ] {
        let server = conversation_server("Noted.");
        let home = Dir::new();
        let work = Dir::new();
        write_config(&home, &server.base_url(), extra);
        write_data(&work, 20, 3_000);
        let mut events = Vec::new();
        for turn in 0..10 {
            events.extend(run_turn(&home, &work, turn, &fact(turn)));
        }
        let compacted = events.iter().any(|e| e["type"] == "compaction");
        assert_eq!(compacted, expect_compaction, "{extra}");
        let breaks = prefix_breaks(&main_requests(&server));
        assert_eq!(
            breaks.iter().any(Option::is_some),
            expect_compaction,
            "{extra}"
        );
    }
}

#[test]
fn remember_is_refused_in_headless_runs() {
    let args = r#"{"name":"editor","content":"The user prefers tabs."}"#;
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "remember", args)]),
        Reply::text("I could not save it."),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    write_config(&home, &server.base_url(), "");
    let events = run_turn(&home, &work, 0, "remember that I prefer tabs");
    let permission = events
        .iter()
        .find(|e| e["type"] == "permission")
        .expect("a permission event");
    assert_eq!(permission["tool"], "remember");
    assert_eq!(permission["allowed"], false);
    assert_eq!(permission["resolution"], "headless");
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result")
        .expect("a tool result");
    assert_eq!(result["is_error"], true);
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("refused") && content.contains("non-interactive"),
        "{content}"
    );
    assert!(!home.join(".reasonix/memory").exists());
}

// ---------------------------------------------------------------------------------------
// Memory with a person at the keyboard.

/// Answers every approval with "allow for the session" and records what it was shown.
struct RecordingApprover {
    seen: Arc<Mutex<Vec<ApprovalRequest>>>,
}

impl Approver for RecordingApprover {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.seen.lock().unwrap().push(request.clone());
        ApprovalAnswer::Session(Rule::parse(&request.tool).unwrap())
    }
}

#[test]
fn memory_writes_ask_every_time_even_in_yolo_and_show_a_preview() {
    let save = r#"{"name":"db-port","content":"The database listens on port 5433.","description":"database port"}"#;
    let update = r#"{"name":"db-port","content":"The database moved to port 6543."}"#;
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "remember", save)]),
        Reply::tool_calls(&[("c2", "remember", update)]),
        Reply::tool_calls(&[(
            "c3",
            "memory",
            r#"{"operation":"search","query":"database port"}"#,
        )]),
        Reply::tool_calls(&[("c4", "forget", r#"{"name":"db-port"}"#)]),
        Reply::tool_calls(&[(
            "c5",
            "memory",
            r#"{"operation":"search","query":"database port"}"#,
        )]),
        Reply::text("done"),
    ]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let work_dir = Dir::new();
    let policy = Policy::new(Decision::Ask, work_dir.path().to_path_buf(), None);
    let gate = PolicyGate::new(
        policy,
        Posture::Yolo,
        Some(Box::new(RecordingApprover {
            seen: Arc::clone(&seen),
        })),
    );
    let mut h = harness(server, 0, Box::new(gate), FEW_TOOLS);
    h.turn("remember the database port".into());
    let seen = seen.lock().unwrap().clone();
    let tools: Vec<&str> = seen.iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(
        tools,
        vec!["remember", "remember", "forget"],
        "asked every time"
    );
    let preview = seen[0].subject.as_deref().unwrap();
    assert!(
        preview.contains("save new fact `db-port`") && preview.contains("port 5433"),
        "{preview}"
    );
    assert!(seen[1]
        .subject
        .as_deref()
        .unwrap()
        .contains("update saved fact"));
    assert!(seen[2].subject.as_deref().unwrap().contains("port 6543"));

    let results: Vec<String> = h
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult { output, .. } => Some(output.clone()),
            _ => None,
        })
        .collect();
    assert!(
        results[0].starts_with("saved memory `db-port`"),
        "{results:?}"
    );
    assert!(
        results[1].starts_with("updated memory `db-port`"),
        "{results:?}"
    );
    assert!(
        results[2].contains("- db-port (database port;") && results[2].contains("6543"),
        "{results:?}"
    );
    assert!(results[3].starts_with("forgot `db-port`"), "{results:?}");
    assert!(
        results[4].starts_with("No saved memory matches"),
        "{results:?}"
    );
    let memory = h.state.join("memory");
    let index = std::fs::read_to_string(memory.join("MEMORY.md")).unwrap();
    assert!(!index.contains("db-port"), "{index}");
    let archived: Vec<_> = std::fs::read_dir(memory.join("archive")).unwrap().collect();
    assert_eq!(archived.len(), 1);
}

#[test]
fn fresh_approval_is_refused_without_a_person_and_deny_rules_still_block() {
    let work = Dir::new();
    let args = json!({"name": "x", "content": "y"});
    let policy = Policy::new(Decision::Allow, work.path().to_path_buf(), None);
    // Headless, even with everything allowed and the yolo posture.
    let headless = PolicyGate::new(policy.clone(), Posture::Yolo, None);
    let verdict = headless.check_fresh("remember", &args, "save new fact `x`: y");
    assert!(!verdict.allowed);
    assert_eq!(verdict.resolution.as_str(), "headless");
    assert!(verdict.message.unwrap().contains("non-interactive"));
    assert!(!AllowAll.check_fresh("forget", &args, "p").allowed);
    // The strict posture (untrusted headless input) refuses even with an approver.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let strict = PolicyGate::new(
        policy.clone(),
        Posture::Strict,
        Some(Box::new(RecordingApprover {
            seen: Arc::clone(&seen),
        })),
    );
    assert!(!strict.check_fresh("remember", &args, "p").allowed);
    assert!(seen.lock().unwrap().is_empty());
    // A deny rule blocks before any person is asked.
    let mut denying = policy;
    denying.deny = vec![Rule::parse("remember").unwrap()];
    let gate = PolicyGate::new(
        denying,
        Posture::Ask,
        Some(Box::new(RecordingApprover {
            seen: Arc::clone(&seen),
        })),
    );
    let verdict = gate.check_fresh("remember", &args, "p");
    assert!(!verdict.allowed);
    assert_eq!(verdict.resolution.as_str(), "rule");
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn memory_list_and_read_after_remember() {
    let state = Dir::new();
    let mut ctx = ToolContext::new(state.path().to_path_buf());
    ctx.state = Some(Arc::new(StatePaths::new(state.path(), state.join("s"))));
    let remember = memory::Remember;
    let tool = memory::MemoryTool;
    for (name, content) in [
        ("tabs", "The user prefers tabs."),
        ("ci", "CI runs `make test`."),
    ] {
        remember
            .execute(&json!({"name": name, "content": content}), &ctx)
            .unwrap();
    }
    let list = tool.execute(&json!({"operation": "list"}), &ctx).unwrap();
    assert_eq!(
        list,
        "2 saved facts:\n- ci: CI runs `make test`.\n- tabs: The user prefers tabs.\n"
    );
    let read = tool
        .execute(&json!({"operation": "read", "name": "tabs"}), &ctx)
        .unwrap();
    assert!(read.ends_with("\n\nThe user prefers tabs."), "{read}");
    let err = tool
        .execute(&json!({"operation": "read", "name": "nope"}), &ctx)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no saved memory named `nope`"), "{err}");
    let index = std::fs::read_to_string(state.join("memory/MEMORY.md")).unwrap();
    assert!(
        index.contains("- [ci](ci.md): CI runs `make test`."),
        "{index}"
    );
}

// ---------------------------------------------------------------------------------------
// The history tool over saved sessions and the archive.

fn saved_session(dir: &Path, id: &str, messages: &[Message]) {
    let header = Header::new(id.into(), "fake", "m", Path::new("/w"));
    let mut session = Session::create(dir, header).unwrap();
    session.push(Message::system("system prompt")).unwrap();
    for message in messages {
        session.push(message.clone()).unwrap();
    }
    session.sync().unwrap();
}

fn history_ctx(state: &Dir) -> ToolContext {
    let mut ctx = ToolContext::new(state.path().to_path_buf());
    ctx.state = Some(Arc::new(StatePaths::new(
        state.path(),
        state.join("projects/here/sessions"),
    )));
    ctx
}

#[test]
fn history_search_ranks_hits_by_scope_and_reads_around_them() {
    let state = Dir::new();
    let here = state.join("projects/here/sessions");
    let there = state.join("projects/there/sessions");
    let mut call = Message::assistant("");
    call.tool_calls = vec![ToolCall::new("c1", "bash", r#"{"command":"cargo test"}"#)];
    saved_session(
        &here,
        "s-here",
        &[
            Message::user("the deploy target is the staging cluster"),
            call,
            Message::tool_result("c1", "test result: FAILED. linker error in musl build"),
            Message::assistant("the musl linker error needs musl-tools"),
            Message::user("thanks, and the staging cluster name is kestrel"),
        ],
    );
    saved_session(
        &there,
        "s-there",
        &[Message::user(
            "another project also mentions the musl linker",
        )],
    );
    compaction::archive(
        &state.join("archive"),
        "s-old",
        "fold",
        &[Message::tool_result(
            "c9",
            "archived output: flamingo deployment log",
        )],
    )
    .unwrap();
    let ctx = history_ctx(&state);
    let search = |args: Value| History.execute(&args, &ctx).unwrap();

    let hits = search(json!({"query": "musl linker"}));
    assert!(
        hits.starts_with("2 hits for \"musl linker\" (project scope, searched 1 file):"),
        "{hits}"
    );
    assert!(
        hits.contains("1. session s-here index 4 (assistant)"),
        "{hits}"
    );
    assert!(
        hits.contains("2. session s-here index 3 (tool `bash`)"),
        "{hits}"
    );
    assert!(!hits.contains("s-there"), "{hits}");

    let global = search(json!({"query": "musl linker", "scope": "global"}));
    assert!(
        global.contains("session s-there index 1 (user)"),
        "{global}"
    );
    let archived = search(json!({"query": "flamingo", "scope": "global"}));
    assert!(
        archived.contains("(tool, from session s-old)"),
        "{archived}"
    );
    assert!(archived.contains("session archive/"), "{archived}");

    let none = search(json!({"query": "flamingo"}));
    assert!(none.starts_with("No matches for \"flamingo\""), "{none}");
    assert!(
        none.contains("rarer, more specific terms") && none.contains("scope \"global\""),
        "{none}"
    );

    let window =
        search(json!({"operation": "around", "session": "s-here", "index": 3, "radius": 1}));
    assert!(window.starts_with("s-here messages 2-4 of 6:"), "{window}");
    assert!(
        window.contains("[2 assistant] bash {\"command\":\"cargo test\"}"),
        "{window}"
    );
    assert!(
        window.contains("[3 tool `bash` <- hit] test result: FAILED"),
        "{window}"
    );
    assert!(!window.contains("kestrel"), "{window}");

    let err = History
        .execute(
            &json!({"operation": "around", "session": "../x", "index": 1}),
            &ctx,
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("no saved session `../x`"), "{err}");
}

#[test]
fn history_index_follows_file_changes() {
    let state = Dir::new();
    let here = state.join("projects/here/sessions");
    saved_session(
        &here,
        "s1",
        &[
            Message::user("first topic: albatross"),
            Message::assistant("noted"),
        ],
    );
    let ctx = history_ctx(&state);
    let query = json!({"query": "pelican"});
    assert!(History
        .execute(&query, &ctx)
        .unwrap()
        .starts_with("No matches"));
    let path = here.join("s1.jsonl");
    let mut session = Session::open(&path).unwrap();
    session
        .push(Message::user("second topic: pelican"))
        .unwrap();
    session.sync().unwrap();
    drop(session);
    let found = History.execute(&query, &ctx).unwrap();
    assert!(found.contains("session s1 index 3 (user)"), "{found}");
}

/// `make bench`: BM25 search over 1,000 synthetic sessions, cold (building the index) and warm.
#[test]
#[ignore]
fn bench_history_search() {
    const SESSIONS: usize = 1_000;
    let state = Dir::new();
    let here = state.join("projects/here/sessions");
    let words = [
        "build", "cargo", "test", "deploy", "linker", "error", "config", "session", "window",
        "cache", "prefix", "token", "digest", "archive", "memory", "parser", "socket", "thread",
        "channel", "render", "module", "import", "schema", "binary", "static", "release",
    ];
    let mut bytes = 0;
    for s in 0..SESSIONS {
        let mut messages = Vec::new();
        for m in 0..30 {
            let text: Vec<&str> = (0..40)
                .map(|w| words[(s * 31 + m * 17 + w * 7 + w * w) % words.len()])
                .collect();
            let mut text = text.join(" ");
            if s == 777 && m == 12 {
                text.push_str(" quetzal");
            }
            bytes += text.len();
            messages.push(if m % 2 == 0 {
                Message::user(text)
            } else {
                Message::assistant(text)
            });
        }
        saved_session(&here, &format!("s{s:04}"), &messages);
    }
    let ctx = history_ctx(&state);
    let query = json!({"query": "quetzal linker"});
    let started = Instant::now();
    let cold = History.execute(&query, &ctx).unwrap();
    let cold_time = started.elapsed();
    let started = Instant::now();
    let warm = History.execute(&query, &ctx).unwrap();
    let warm_time = started.elapsed();
    assert!(cold.contains("1. session s0777 index 13"), "{cold}");
    assert_eq!(cold, warm);
    println!(
        "history search over {SESSIONS} sessions ({:.1} MB of text): cold {:.0} ms, warm {:.1} ms",
        bytes as f64 / 1e6,
        cold_time.as_secs_f64() * 1000.0,
        warm_time.as_secs_f64() * 1000.0
    );
    assert!(warm_time.as_secs_f64() < 1.0);
}

// ---------------------------------------------------------------------------------------
// Tool lists that change during a run.

/// A tool that is only a name.
struct Named(&'static str);

impl Tool for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "A tool that comes and goes."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn read_only(&self) -> bool {
        true
    }
    fn family(&self) -> Family {
        Family::Other
    }
    fn execute(&self, _: &Value, _: &ToolContext) -> Result<String, ToolError> {
        Ok(String::new())
    }
}

/// Answers each poll from a script: no change, or the new set of `ext__` tools.
struct Script(VecDeque<Option<Vec<&'static str>>>);

impl ToolSource for Script {
    fn poll(&mut self, _: &CancelToken, _: &mut dyn FnMut(String)) -> Option<ToolChange> {
        let names = self.0.pop_front().flatten()?;
        Some(ToolChange {
            prefix: "ext__".into(),
            tools: names
                .into_iter()
                .map(|n| Arc::new(Named(n)) as Arc<dyn Tool>)
                .collect(),
            origins: vec!["the script".into()],
        })
    }
}

#[test]
fn tool_list_changes_reach_the_next_request_and_reset_the_cache_only_when_real() {
    let mut h = harness(
        conversation_server("Noted."),
        0,
        Box::new(AllowAll),
        &["read_file"],
    );
    write_data(&h.work, 1, 200);
    h.agent.set_tool_source(Box::new(Script(VecDeque::from([
        Some(vec!["ext__a"]),
        // The same set again (a server that announced a change it did not make).
        Some(vec!["ext__a"]),
        Some(vec![]),
        None,
    ]))));
    h.turn("Read data/f0.txt.".into());
    h.turn("Read data/f0.txt again.".into());
    let requests = main_requests(&h.server);
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&requests[0]), ["read_file", "ext__a"]);
    assert_eq!(requests[1]["tools"], requests[0]["tools"]);
    assert_eq!(names(&requests[2]), ["read_file"]);
    assert_eq!(requests[3]["tools"], requests[2]["tools"]);
    let events = h.events();
    let resets: Vec<(String, usize)> = events
        .iter()
        .filter_map(|e| match e {
            Event::CachePrefixChanged {
                reason,
                first_changed,
            } => Some((reason.as_str().to_string(), *first_changed)),
            _ => None,
        })
        .collect();
    assert_eq!(resets, [("tools".to_string(), 0), ("tools".to_string(), 0)]);
    let notices: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { message, .. } if message.starts_with("tools changed") => {
                Some(message.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        notices,
        [
            "tools changed (the script): added `ext__a`; the model sees the new list from its next request",
            "tools changed (the script): removed `ext__a`; the model sees the new list from its next request",
        ]
    );
}
