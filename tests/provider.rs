//! The OpenAI-compatible provider through its public surface, against the fake server on
//! 127.0.0.1: streaming, tool-call assembly, usage, retries, errors, cancellation, the idle
//! watchdog, proxies, a private CA, record/replay, and the benchmarks.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use reasonix::cancel::CancelToken;
use reasonix::provider::openai::{list_models, probe};
use reasonix::provider::sse::Decoder;
use reasonix::provider::{
    self, Chunk, Message, Prices, Provider, ProviderError, ProviderSettings, Request, RetryPolicy,
    ToolCall, ToolSchema, Usage,
};
use serde_json::json;

use crate::util::fake_openai::*;
use crate::util::http_proxy::HttpProxy;
use crate::util::{reasonix, run, Dir};

/// The issue's bound for a cancel to stop an in-flight request.
const CANCEL_BOUND: Duration = Duration::from_millis(200);

fn settings(base_url: &str) -> ProviderSettings {
    ProviderSettings {
        name: "fake".into(),
        kind: "openai".into(),
        model: "fake-model".into(),
        base_url: base_url.into(),
        api_key_env: "FAKE_API_KEY".into(),
        api_key: Some("sk-test".into()),
        retry: RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(5),
            max_retry_after: Duration::from_secs(5),
            max_total_wait: Duration::from_secs(20),
            overloaded_attempts: None,
        },
        ..ProviderSettings::default()
    }
}

fn provider_for(fake: &FakeOpenAI) -> Box<dyn Provider> {
    provider::build(settings(&fake.base_url())).expect("build provider")
}

fn request() -> Request {
    Request {
        messages: vec![Message::system("You are terse."), Message::user("hi")].into(),
        ..Request::default()
    }
}

/// Every chunk of a stream that must succeed.
fn collect(provider: &dyn Provider, request: &Request) -> Vec<Chunk> {
    provider
        .stream(request, &CancelToken::new(), &mut |_| {})
        .expect("stream starts")
        .collect::<Result<Vec<_>, _>>()
        .expect("stream completes")
}

/// Chunks up to the first error, and that error (also one before the first chunk).
fn collect_until_error(provider: &dyn Provider) -> (Vec<Chunk>, ProviderError) {
    let mut chunks = Vec::new();
    let stream = match provider.stream(&request(), &CancelToken::new(), &mut |_| {}) {
        Ok(stream) => stream,
        Err(err) => return (chunks, err),
    };
    for item in stream {
        match item {
            Ok(chunk) => chunks.push(chunk),
            Err(err) => return (chunks, err),
        }
    }
    panic!("stream ended without an error: {chunks:?}");
}

fn text_of(chunks: &[Chunk]) -> String {
    chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn calls_of(chunks: &[Chunk]) -> Vec<ToolCall> {
    chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .collect()
}

fn usage_of(chunks: &[Chunk]) -> Usage {
    let usages: Vec<Usage> = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::Usage(u) => Some(*u),
            _ => None,
        })
        .collect();
    assert_eq!(usages.len(), 1, "exactly one usage chunk: {chunks:?}");
    usages[0]
}

#[test]
fn text_reply_streams_in_order_and_ends_with_usage_then_done() {
    let fake = FakeOpenAI::start(vec![Reply::text("Hello, streaming world")]);
    let chunks = collect(provider_for(&fake).as_ref(), &request());
    assert_eq!(text_of(&chunks), "Hello, streaming world");
    // Deltas that arrive in one read travel as one chunk, so the count depends on timing;
    // everything before the usage is text.
    let n = chunks.len();
    assert!(
        chunks[..n - 2].iter().all(|c| matches!(c, Chunk::Text(_))),
        "{chunks:?}"
    );
    assert!(matches!(chunks[n - 2], Chunk::Usage(_)), "{chunks:?}");
    assert_eq!(
        chunks[n - 1],
        Chunk::Done {
            finish_reason: "stop".into()
        }
    );
}

/// The exchange thread lets go of the history before the caller sees the first chunk, so the
/// caller's append after the reply never copies the whole transcript.
#[test]
fn the_history_is_no_longer_shared_once_the_reply_streams() {
    // The reply holds after its first piece, so the exchange is still running when we look.
    let (reply, release) = Reply::hold(vec![sse_text("Hello")]);
    let fake = FakeOpenAI::start(vec![reply]);
    let request = request();
    let provider = provider_for(&fake);
    let mut stream = provider
        .stream(&request, &CancelToken::new(), &mut |_| {})
        .expect("stream starts");
    assert!(matches!(stream.next(), Some(Ok(Chunk::Text(_)))));
    assert!(!request.messages.is_shared(), "held after the first chunk");
    release.release();
    drop(stream);
}

#[test]
fn pieces_split_mid_line_and_mid_character_with_keep_alive_comments_decode_the_same() {
    let events = [
        ": keep-alive\n\n".to_string(),
        sse_text("Grüße, "),
        ": ping\r\n\r\n".to_string(),
        sse_text("世界"),
        sse_finish("stop"),
        sse_usage(7, 2, 0),
        done(),
    ]
    .concat()
    .into_bytes();
    let pieces: Vec<Vec<u8>> = events.chunks(5).map(<[u8]>::to_vec).collect();
    let fake = FakeOpenAI::start(vec![Reply::pieces(pieces), Reply::pieces(vec![events])]);
    let provider = provider_for(&fake);
    let split = collect(provider.as_ref(), &request());
    let whole = collect(provider.as_ref(), &request());
    assert_eq!(text_of(&split), "Grüße, 世界");
    assert_eq!(merged(split), merged(whole));
}

#[test]
fn interleaved_tool_call_indexes_over_many_chunks_assemble_complete_calls() {
    let calls = [
        (
            "call_0",
            "read_file",
            r#"{"path":"src/main.rs","offset":10}"#,
        ),
        ("call_1", "grep", r#"{"pattern":"fn main","path":"src"}"#),
        (
            "call_2",
            "bash",
            r#"{"command":"cargo test -- --nocapture"}"#,
        ),
    ];
    let mut events = vec![sse_reasoning("I will look around.")];
    for (i, (id, name, _)) in calls.iter().enumerate() {
        events.push(sse_tool_delta(i as u64, Some(id), Some(name), ""));
    }
    // Round-robin, two characters at a time: the calls' fragments interleave throughout.
    let fragments: Vec<Vec<String>> = calls
        .iter()
        .map(|(_, _, args)| {
            args.chars()
                .collect::<Vec<_>>()
                .chunks(2)
                .map(|c| c.iter().collect())
                .collect()
        })
        .collect();
    let longest = fragments.iter().map(Vec::len).max().unwrap();
    for step in 0..longest {
        for (i, parts) in fragments.iter().enumerate() {
            if let Some(part) = parts.get(step) {
                events.push(sse_tool_delta(i as u64, None, None, part));
            }
        }
    }
    assert!(events.len() > 50, "{}", events.len());
    events.extend([sse_finish("tool_calls"), sse_usage(100, 40, 64), done()]);
    let fake = FakeOpenAI::start(vec![Reply::events(events)]);
    let chunks = collect(provider_for(&fake).as_ref(), &request());
    assert_eq!(chunks[0], Chunk::Reasoning("I will look around.".into()));
    let expected: Vec<ToolCall> = calls
        .iter()
        .map(|(id, name, args)| ToolCall::new(*id, *name, *args))
        .collect();
    assert_eq!(calls_of(&chunks), expected);
    assert_eq!(
        chunks.last(),
        Some(&Chunk::Done {
            finish_reason: "tool_calls".into()
        })
    );
}

#[test]
fn repeated_id_and_name_deltas_as_llama_cpp_python_sends_them() {
    let id = "call__0_bash_cmpl-3f1a2b";
    let events = vec![
        sse_tool_delta(0, Some(id), Some("bash"), "{\"command\""),
        sse_tool_delta(0, Some(id), Some("bash"), ": \"echo"),
        sse_tool_delta(0, Some(id), Some("bash"), " hi\"}"),
        sse_finish("tool_calls"),
        done(),
    ];
    let fake = FakeOpenAI::start(vec![Reply::events(events)]);
    let chunks = collect(provider_for(&fake).as_ref(), &request());
    assert_eq!(
        calls_of(&chunks),
        vec![ToolCall::new(id, "bash", r#"{"command": "echo hi"}"#)]
    );
    // No usage chunk from this server: the provider estimates and says so.
    assert!(usage_of(&chunks).estimated);
}

#[test]
fn calls_without_ids_get_synthetic_ids_that_are_stable_for_the_same_request() {
    let events = || {
        Reply::events(vec![
            sse_tool_delta(0, None, Some("ls"), "{}"),
            sse_tool_delta(1, None, Some("glob"), r#"{"pattern":"*.rs"}"#),
            sse_finish("tool_calls"),
            done(),
        ])
    };
    let fake = FakeOpenAI::start(vec![events(), events()]);
    let provider = provider_for(&fake);
    let first = calls_of(&collect(provider.as_ref(), &request()));
    let second = calls_of(&collect(provider.as_ref(), &request()));
    assert_eq!(first.len(), 2);
    assert_ne!(first[0].id, first[1].id);
    assert!(first.iter().all(|c| c.id.starts_with("call_")), "{first:?}");
    assert_eq!(first, second);
}

#[test]
fn usage_is_normalised_from_deepseek_and_openai_shapes_and_priced() {
    let deepseek = sse_data(&json!({"choices": [], "usage": {
        "prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200,
        "prompt_cache_hit_tokens": 800, "prompt_cache_miss_tokens": 200,
        "completion_tokens_details": {"reasoning_tokens": 150}}}));
    let openai = sse_data(&json!({"choices": [], "usage": {
        "prompt_tokens": 500, "completion_tokens": 50,
        "prompt_tokens_details": {"cached_tokens": 384},
        "completion_tokens_details": {"reasoning_tokens": 20}}}));
    // Usage in the same chunk as finish_reason, as some servers send it.
    let same_chunk = sse_data(
        &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 3}}),
    );
    let fake = FakeOpenAI::start(vec![
        Reply::events(vec![sse_text("a"), sse_finish("stop"), deepseek, done()]),
        Reply::events(vec![sse_text("b"), sse_finish("stop"), openai, done()]),
        Reply::events(vec![sse_text("c"), same_chunk, done()]),
    ]);
    let provider = provider_for(&fake);
    let ds = usage_of(&collect(provider.as_ref(), &request()));
    assert_eq!(
        ds,
        Usage {
            prompt_tokens: 1000,
            completion_tokens: 200,
            cache_hit_tokens: 800,
            cache_miss_tokens: 200,
            reasoning_tokens: 150,
            estimated: false
        }
    );
    let oa = usage_of(&collect(provider.as_ref(), &request()));
    assert_eq!(
        (
            oa.prompt_tokens,
            oa.cache_hit_tokens,
            oa.cache_miss_tokens,
            oa.reasoning_tokens
        ),
        (500, 384, 116, 20)
    );
    let plain = usage_of(&collect(provider.as_ref(), &request()));
    assert_eq!((plain.prompt_tokens, plain.completion_tokens), (30, 3));
    let prices = Prices {
        input: 0.27,
        input_cache_hit: Some(0.07),
        output: 1.10,
    };
    let expected = (200.0 * 0.27 + 800.0 * 0.07 + 200.0 * 1.10) / 1_000_000.0;
    assert!(
        (prices.cost(&ds) - expected).abs() < 1e-12,
        "{}",
        prices.cost(&ds)
    );
    assert_eq!(ds.cache_hit_ratio(), Some(0.8));
}

#[test]
fn reasoning_content_and_reasoning_deltas_are_reasoning_chunks() {
    let fake = FakeOpenAI::start(vec![Reply::events(vec![
        sse_reasoning("First, "),
        sse_chunk(json!({"reasoning": "think."}), None),
        sse_text("Answer."),
        sse_finish("stop"),
        done(),
    ])]);
    let chunks = merged(collect(provider_for(&fake).as_ref(), &request()));
    assert_eq!(
        &chunks[..2],
        &[
            Chunk::Reasoning("First, think.".into()),
            Chunk::Text("Answer.".into())
        ]
    );
}

/// Adjacent text (or reasoning) chunks joined: how many reads a reply took does not matter.
fn merged(chunks: Vec<Chunk>) -> Vec<Chunk> {
    let mut out: Vec<Chunk> = Vec::new();
    for chunk in chunks {
        match (out.last_mut(), &chunk) {
            (Some(Chunk::Text(a)), Chunk::Text(b))
            | (Some(Chunk::Reasoning(a)), Chunk::Reasoning(b)) => a.push_str(b),
            _ => out.push(chunk),
        }
    }
    out
}

#[test]
fn request_body_and_headers_carry_everything_the_server_needs() {
    let fake = FakeOpenAI::start(vec![Reply::text("ok")]);
    let mut s = settings(&fake.base_url());
    s.extra_body = serde_json::from_value(json!({"tool_choice": "auto", "top_p": 0.9})).unwrap();
    s.headers.insert("X-Tenant".into(), "team-a".into());
    let provider = provider::build(s).unwrap();
    let mut assistant = Message::assistant("");
    assistant.tool_calls = vec![ToolCall::new("c1", "ls", "{}")];
    let mut thinking = Message::assistant("");
    thinking.reasoning_content = Some("because".into());
    thinking.tool_calls = vec![ToolCall::new("c2", "ls", "{}")];
    let request = Request {
        messages: vec![
            Message::system("sys"),
            Message::user("list"),
            assistant,
            Message::tool_result("c1", "a.rs"),
            thinking,
            Message::tool_result("c2", "b.rs"),
        ]
        .into(),
        tools: vec![ToolSchema {
            name: "ls".into(),
            description: "List files".into(),
            parameters: json!({"properties": {"path": {"type": "string"}}, "type": "object"}),
        }]
        .into(),
        temperature: Some(0.2),
        max_tokens: Some(512),
        reasoning_effort: Some("high".into()),
    };
    collect(provider.as_ref(), &request);
    let sent = &fake.requests()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    let ua = format!("reasonix/{}", env!("CARGO_PKG_VERSION"));
    assert_eq!(sent.header("user-agent"), Some(ua.as_str()));
    assert_eq!(sent.header("x-tenant"), Some("team-a"));
    let body = &sent.body;
    assert_eq!(body["model"], "fake-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 512);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["reasoning_effort"], "high");
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "ls", "description": "List files",
            "parameters": {"properties": {"path": {"type": "string"}}, "type": "object"}}}])
    );
    let messages = body["messages"].as_array().unwrap();
    // Only where the message has one: the agent decides, and a provider that never sent
    // reasoning must not see the field.
    assert!(
        messages[2].get("reasoning_content").is_none(),
        "{:#}",
        messages[2]
    );
    assert_eq!(messages[2]["content"], "");
    assert_eq!(messages[4]["reasoning_content"], "because");
    assert_eq!(messages[3]["tool_call_id"], "c1");
    assert!(messages[1].get("reasoning_content").is_none());
    assert_tool_pairing(body);
}

#[test]
fn no_key_means_no_authorization_header() {
    let fake = FakeOpenAI::start(vec![Reply::text("ok")]);
    let mut s = settings(&fake.base_url());
    s.api_key = None;
    collect(provider::build(s).unwrap().as_ref(), &request());
    assert_eq!(fake.requests()[0].header("authorization"), None);
}

#[test]
fn rate_limit_429_then_success_honours_retry_after() {
    let fake = FakeOpenAI::start(vec![
        Reply::error(429, "Rate limit reached").with_header("Retry-After", "1"),
        Reply::text("after the wait"),
    ]);
    let chunks = collect(provider_for(&fake).as_ref(), &request());
    assert_eq!(text_of(&chunks), "after the wait");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    // The backoff alone would wait about a millisecond; Retry-After asked for a second.
    let gap = requests[1].at - requests[0].at;
    assert!(gap >= Duration::from_millis(990), "retried after {gap:?}");
}

#[test]
fn retry_after_is_capped_by_the_policy() {
    let fake = FakeOpenAI::start(vec![
        Reply::error(503, "busy").with_header("Retry-After", "3600"),
        Reply::text("ok"),
    ]);
    let mut s = settings(&fake.base_url());
    s.retry.max_retry_after = Duration::from_millis(20);
    let chunks = collect(provider::build(s).unwrap().as_ref(), &request());
    assert_eq!(text_of(&chunks), "ok");
    let requests = fake.requests();
    let gap = requests[1].at - requests[0].at;
    // Generous upper bound: the point is "not an hour".
    assert!(gap < Duration::from_secs(30), "{gap:?}");
}

#[test]
fn server_errors_are_retried_until_the_policy_gives_up() {
    let fake = FakeOpenAI::start(vec![
        Reply::error(500, "boom 1"),
        Reply::error(502, "boom 2"),
        Reply::error(500, "the model crashed\nstack trace follows"),
    ]);
    let err = provider_for(&fake)
        .stream(&request(), &CancelToken::new(), &mut |_| {})
        .err()
        .unwrap();
    assert_eq!(fake.requests().len(), 3, "one try and two retries");
    match &err {
        ProviderError::Http { status, message } => {
            assert_eq!(*status, 500);
            assert_eq!(
                message,
                "the model crashed stack trace follows (gave up after 2 retries)"
            );
        }
        other => panic!("expected Http, got {other:?}"),
    }
    assert!(!err.to_string().contains('\n'), "{err}");
}

#[test]
fn client_errors_are_not_retried_and_show_the_provider_message() {
    let fake = FakeOpenAI::start(vec![Reply::error(400, "model `nope` does not exist")]);
    let err = provider_for(&fake)
        .stream(&request(), &CancelToken::new(), &mut |_| {})
        .err()
        .unwrap();
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(
        err.to_string(),
        "provider: HTTP 400: model `nope` does not exist"
    );
}

#[test]
fn auth_failure_fails_fast_and_names_the_key_variable() {
    let fake = FakeOpenAI::start(vec![Reply::error(401, "Incorrect API key provided")]);
    let err = provider_for(&fake)
        .stream(&request(), &CancelToken::new(), &mut |_| {})
        .err()
        .unwrap();
    assert_eq!(fake.requests().len(), 1, "no retry on 401");
    assert!(
        matches!(&err, ProviderError::Auth { status: 401, api_key_env, message }
            if api_key_env == "FAKE_API_KEY" && message == "Incorrect API key provided"),
        "{err:?}"
    );
    assert!(err.to_string().contains("$FAKE_API_KEY"), "{err}");
    let exit = reasonix::cli::error::Error::Provider(err).exit_code();
    assert_eq!(exit, reasonix::cli::error::exit::AUTH);
}

#[test]
fn a_connection_dropped_before_any_byte_is_retried() {
    let fake = FakeOpenAI::start(vec![Reply::Hangup, Reply::text("second try")]);
    let chunks = collect(provider_for(&fake).as_ref(), &request());
    assert_eq!(text_of(&chunks), "second try");
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn dropping_a_stream_early_closes_its_connection() {
    let (reply, release) = Reply::hold(vec![sse_text("first")]);
    let fake = FakeOpenAI::start(vec![reply]);
    let mut stream = provider_for(&fake)
        .stream(&request(), &CancelToken::new(), &mut |_| {})
        .unwrap();
    assert_eq!(stream.next().unwrap().unwrap(), Chunk::Text("first".into()));
    drop(stream);
    fake.wait_for_client_hangups(1);
    drop(release);
}

#[test]
fn connection_refused_on_first_contact_fails_after_quick_unreported_retries() {
    let port = refused_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let mut s = settings(&url);
    // More retries than the quick ones, with waits long enough to notice: still only two.
    s.retry.max_retries = 10;
    s.retry.initial_backoff = Duration::from_secs(600);
    let provider = provider::build(s).unwrap();
    let mut retries = Vec::new();
    let err = provider
        .stream(&request(), &CancelToken::new(), &mut |r| {
            retries.push(r.clone())
        })
        .err()
        .unwrap();
    assert!(
        matches!(err, ProviderError::Unreachable { attempts: 3, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "provider: cannot connect to {url}/chat/completions: connection refused (3 attempts); \
             is the server running? check base_url of provider `fake`"
        )
    );
    let source = std::error::Error::source(&err).expect("the transport error underneath");
    assert!(
        source.to_string().to_lowercase().contains("refused"),
        "{source}"
    );
    assert_eq!(retries, vec![], "quick retries are not reported");
}

#[test]
fn a_refusal_after_the_server_answered_gets_the_backoff_and_reports_each_retry() {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    // Answers one request, then stops listening: the next connection is refused.
    let server = thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        read_request(&mut reader).unwrap();
        let sse = format!("{}{}{}", sse_text("ok"), sse_finish("stop"), done());
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{sse}",
            sse.len()
        );
        stream.write_all(reply.as_bytes()).unwrap();
    });
    let provider = provider::build(settings(&url)).unwrap();
    assert_eq!(text_of(&collect(provider.as_ref(), &request())), "ok");
    server.join().unwrap();
    let mut retries = Vec::new();
    let err = provider
        .stream(&request(), &CancelToken::new(), &mut |r| {
            retries.push(r.clone())
        })
        .err()
        .unwrap();
    assert!(matches!(err, ProviderError::Connect(_)), "{err:?}");
    assert!(err.to_string().contains("refused"), "{err}");
    assert!(err.to_string().contains("gave up after 2 retries"), "{err}");
    let shown: Vec<(u32, u32)> = retries
        .iter()
        .map(|r| (r.attempt, r.max_attempts))
        .collect();
    assert_eq!(shown, vec![(2, 3), (3, 3)], "{retries:?}");
    assert!(
        retries[0].reason.contains("refused the connection"),
        "{retries:?}"
    );
    assert!(retries[0].wait <= Duration::from_millis(5), "{retries:?}");
}

#[test]
fn mid_stream_disconnect_is_an_error_and_no_partial_tool_call_is_emitted() {
    let fake = FakeOpenAI::start(vec![Reply::cut(vec![
        sse_text("Let me run"),
        sse_tool_delta(0, Some("c1"), Some("bash"), "{\"command\": \"rm -"),
    ])]);
    let (chunks, err) = collect_until_error(provider_for(&fake).as_ref());
    assert_eq!(chunks, vec![Chunk::Text("Let me run".into())]);
    assert!(matches!(err, ProviderError::Stream(_)), "{err:?}");
}

#[test]
fn a_stream_that_ends_cleanly_without_finish_or_done_is_an_error() {
    let fake = FakeOpenAI::start(vec![Reply::events(vec![
        sse_text("partial"),
        sse_tool_delta(0, Some("c1"), Some("ls"), "{}"),
    ])]);
    let (chunks, err) = collect_until_error(provider_for(&fake).as_ref());
    assert!(calls_of(&chunks).is_empty(), "{chunks:?}");
    assert!(err.to_string().contains("ended early"), "{err}");
}

#[test]
fn malformed_json_in_a_data_line_is_a_clear_error_not_a_panic() {
    let fake = FakeOpenAI::start(vec![Reply::events(vec![
        sse_text("ok so far"),
        "data: {\"choices\": [{\"delta\": {\"content\": oops}}]}\n\n".into(),
        done(),
    ])]);
    let (chunks, err) = collect_until_error(provider_for(&fake).as_ref());
    assert_eq!(text_of(&chunks), "ok so far");
    let text = err.to_string();
    assert!(
        text.starts_with("provider: stream failed: malformed JSON"),
        "{text}"
    );
    assert!(text.contains("oops"), "{text}");
}

#[test]
fn a_200_that_is_not_an_event_stream_is_a_clear_error() {
    let fake = FakeOpenAI::start(vec![Reply::body(
        200,
        "text/html",
        "<html><body>Captive portal: please log in</body></html>",
    )]);
    let (_, err) = collect_until_error(provider_for(&fake).as_ref());
    let text = err.to_string();
    assert!(text.contains("neither an event stream"), "{text}");
    assert!(text.contains("Captive portal"), "{text}");
}

#[test]
fn a_server_that_ignores_stream_true_still_works() {
    let completion = json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": "whole answer"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2}});
    let fake = FakeOpenAI::start(vec![Reply::body(
        200,
        "application/json",
        &completion.to_string(),
    )]);
    let chunks = collect(provider_for(&fake).as_ref(), &request());
    assert_eq!(text_of(&chunks), "whole answer");
    assert_eq!(usage_of(&chunks).prompt_tokens, 5);
}

/// Runs `cancel` on another thread once `ready` fires and returns when it cancelled.
fn cancel_from_thread(cancel: &CancelToken) -> (mpsc::Sender<()>, thread::JoinHandle<Instant>) {
    let (tx, rx) = mpsc::channel::<()>();
    let cancel = cancel.clone();
    let handle = thread::spawn(move || {
        rx.recv().unwrap();
        let at = Instant::now();
        cancel.cancel();
        at
    });
    (tx, handle)
}

#[test]
fn cancel_from_another_thread_stops_a_held_stream_within_200ms() {
    let (reply, release) = Reply::hold(vec![sse_text("partial")]);
    let fake = FakeOpenAI::start(vec![reply]);
    let cancel = CancelToken::new();
    let mut stream = provider_for(&fake)
        .stream(&request(), &cancel, &mut |_| {})
        .unwrap();
    assert_eq!(
        stream.next().unwrap().unwrap(),
        Chunk::Text("partial".into())
    );
    let (go, canceller) = cancel_from_thread(&cancel);
    go.send(()).unwrap();
    // Blocks: the server holds the stream open and sends nothing more.
    let result = stream.next();
    let ended = Instant::now();
    let cancelled_at = canceller.join().unwrap();
    assert!(
        matches!(result, Some(Err(ProviderError::Cancelled))),
        "{result:?}"
    );
    assert!(stream.next().is_none());
    let took = ended.saturating_duration_since(cancelled_at);
    assert!(took < CANCEL_BOUND, "cancel took {took:?}");
    // The connection itself was shut, not just abandoned.
    fake.wait_for_client_hangups(1);
    drop(release);
}

/// Starts a request and cancels it from another thread once `fake` holds it (on the wire,
/// the server sitting on it): starting it must fail with `Cancelled` within the bound.
fn cancel_once_requested(fake: &FakeOpenAI, provider: &dyn Provider) {
    let cancel = CancelToken::new();
    let (go, canceller) = cancel_from_thread(&cancel);
    thread::scope(|scope| {
        scope.spawn(|| {
            fake.wait_for_requests(1);
            go.send(()).unwrap();
        });
        let result = provider.stream(&request(), &cancel, &mut |_| {});
        let ended = Instant::now();
        let took = ended.saturating_duration_since(canceller.join().unwrap());
        assert!(
            matches!(result, Err(ProviderError::Cancelled)),
            "{:?}",
            result.err()
        );
        assert!(took < CANCEL_BOUND, "cancel took {took:?}");
    });
}

#[test]
fn cancel_while_waiting_for_the_response_head_returns_within_200ms() {
    let (reply, release) = Reply::stall();
    let fake = FakeOpenAI::start(vec![reply]);
    // The provider lives on: the hangup must come from the cancel, not from dropping it.
    let provider = provider_for(&fake);
    cancel_once_requested(&fake, provider.as_ref());
    fake.wait_for_client_hangups(1);
    drop(release);
}

#[test]
fn cancel_interrupts_the_retry_backoff() {
    let fake = FakeOpenAI::start(vec![Reply::error(503, "overloaded")]);
    let mut s = settings(&fake.base_url());
    s.retry.initial_backoff = Duration::from_secs(600);
    s.retry.max_backoff = Duration::from_secs(600);
    cancel_once_requested(&fake, provider::build(s).unwrap().as_ref());
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn idle_stream_watchdog_fails_a_silent_stream() {
    let (reply, release) = Reply::hold(vec![sse_text("thinking...")]);
    let fake = FakeOpenAI::start(vec![reply]);
    let mut s = settings(&fake.base_url());
    s.timeouts.idle_stream = Duration::from_millis(300);
    let (chunks, err) = collect_until_error(provider::build(s).unwrap().as_ref());
    assert_eq!(text_of(&chunks), "thinking...");
    let text = err.to_string();
    assert!(
        text.contains("no data from the server for 300 ms"),
        "{text}"
    );
    assert!(text.contains("timeouts.idle_seconds"), "{text}");
    drop(release);
}

#[test]
fn list_models_reads_the_openai_shape_sorted_and_probe_reports_status() {
    let models =
        json!({"object": "list", "data": [{"id": "deepseek-v4-pro"}, {"id": "deepseek-v4-flash"}]});
    let fake = FakeOpenAI::start(vec![
        Reply::body(200, "application/json", &models.to_string()),
        Reply::body(200, "application/json", &models.to_string()),
        Reply::error(401, "invalid key"),
    ]);
    let s = settings(&fake.base_url());
    let ids = list_models(&s, &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(ids, vec!["deepseek-v4-flash", "deepseek-v4-pro"]);
    let sent = &fake.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    let ok = probe(&s, Duration::from_secs(10)).unwrap();
    assert_eq!((ok.status, ok.models), (200, Some(2)));
    assert_eq!(ok.url, format!("{}/models", fake.base_url()));
    let denied = probe(&s, Duration::from_secs(10)).unwrap();
    assert_eq!(
        (denied.status, denied.message.as_str()),
        (401, "invalid key")
    );
    let mut custom = s.clone();
    custom.models_url = Some(format!("{}/catalog", fake.base_url()));
    fake.push(Reply::body(
        200,
        "application/json",
        r#"{"data":[{"id":"x"}]}"#,
    ));
    assert_eq!(
        list_models(&custom, &CancelToken::new(), &mut |_| {}).unwrap(),
        vec!["x"]
    );
    assert_eq!(fake.requests()[3].path, "/v1/catalog");
}

#[test]
fn probe_of_a_dead_endpoint_is_unreachable_after_one_attempt() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let err = probe(
        &settings(&format!("http://127.0.0.1:{port}/v1")),
        Duration::from_secs(5),
    )
    .unwrap_err();
    // Doctor probes once: no retries, quick or not.
    assert!(
        matches!(err, ProviderError::Unreachable { attempts: 1, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("(1 attempt)"), "{err}");
}

#[test]
fn factory_table_knows_openai_and_replay_and_rejects_others() {
    let kinds: Vec<&str> = provider::kinds().collect();
    assert_eq!(kinds, vec!["openai", "replay"]);
    let mut s = settings("http://127.0.0.1:1/v1");
    s.kind = "anthropic".into();
    let err = provider::build(s).err().unwrap();
    assert!(
        err.to_string().contains("known kinds: openai, replay"),
        "{err}"
    );
    let mut s = settings("ftp://example.com");
    s.kind = "openai".into();
    assert!(matches!(
        provider::build(s).err().unwrap(),
        ProviderError::Config(_)
    ));
}

/// A two-turn conversation: a tool call, then the answer.
fn conversation() -> (Request, Request) {
    let first = request();
    let mut assistant = Message::assistant("");
    assistant.tool_calls = vec![ToolCall::new("call_ls", "ls", r#"{"path":"."}"#)];
    let mut second = first.clone();
    second.messages.push(assistant);
    second
        .messages
        .push(Message::tool_result("call_ls", "Cargo.toml\nsrc/"));
    (first, second)
}

#[test]
fn record_then_replay_serves_the_same_chunks_without_network() {
    let dir = Dir::new();
    let recording = dir.join("session.jsonl");
    let fake = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("call_ls", "ls", r#"{"path":"."}"#)]),
        Reply::text("There is a Cargo project."),
    ]);
    let mut s = settings(&fake.base_url());
    s.record_file = Some(recording.clone());
    let live = provider::build(s).unwrap();
    let (first, second) = conversation();
    let live_chunks = [
        collect(live.as_ref(), &first),
        collect(live.as_ref(), &second),
    ];

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&recording)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["status"], 200);
    assert_eq!(lines[0]["request"], fake.requests()[0].body);
    let raw = lines[1]["response"].as_str().unwrap();
    assert!(
        raw.contains("\"Ther\"") && raw.ends_with("data: [DONE]\n\n"),
        "{raw}"
    );

    // The replay runs with the fake server gone: no network is involved.
    drop(fake);
    let replay_settings = ProviderSettings {
        kind: "replay".into(),
        replay_file: Some(recording),
        ..settings("http://127.0.0.1:1/v1")
    };
    let replay = provider::build(replay_settings).unwrap();
    // A different system prompt does not matter; the shape of the conversation does.
    let mut first_elsewhere = first.clone();
    let mut messages = first.messages.to_vec();
    messages[0] = Message::system("Another machine, another prompt.");
    first_elsewhere.messages = messages.into();
    // Deltas of one read are one chunk, and the replay reads the whole recording at once.
    assert_eq!(
        merged(collect(replay.as_ref(), &first_elsewhere)),
        merged(live_chunks[0].clone())
    );
    assert_eq!(
        merged(collect(replay.as_ref(), &second)),
        merged(live_chunks[1].clone())
    );
    let err = replay
        .stream(&second, &CancelToken::new(), &mut |_| {})
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "replay: request diverged: request 3: the recording holds only 2 exchanges"
    );
}

#[test]
fn replay_reports_a_diverging_request_precisely() {
    let dir = Dir::new();
    let recording = dir.join("r.jsonl");
    let fake = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("call_ls", "ls", "{}")]),
        Reply::text("done"),
    ]);
    let mut s = settings(&fake.base_url());
    s.record_file = Some(recording.clone());
    let live = provider::build(s).unwrap();
    let (first, second) = conversation();
    collect(live.as_ref(), &first);
    collect(live.as_ref(), &second);

    let replay_settings = ProviderSettings {
        kind: "replay".into(),
        replay_file: Some(recording),
        ..settings("http://127.0.0.1:1/v1")
    };
    let replay = provider::build(replay_settings.clone()).unwrap();
    collect(replay.as_ref(), &first);
    let mut wrong_id = second.clone();
    let mut messages = second.messages.to_vec();
    messages[2].tool_calls[0].id = "call_other".into();
    messages[3] = Message::tool_result("call_other", "Cargo.toml");
    wrong_id.messages = messages.into();
    let err = replay
        .stream(&wrong_id, &CancelToken::new(), &mut |_| {})
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "replay: request diverged: request 2: message 4 answers tool call \"call_other\", \
         the recording answers \"call_ls\""
    );

    let replay = provider::build(replay_settings).unwrap();
    let mut extra = first.clone();
    extra.messages.push(Message::user("and also"));
    let err = replay
        .stream(&extra, &CancelToken::new(), &mut |_| {})
        .err()
        .unwrap();
    assert!(
        matches!(&err, ProviderError::ReplayDiverged(d) if d == "request 1: it has 3 messages, the recording has 2"),
        "{err}"
    );
}

#[test]
fn a_recorded_http_error_replays_as_the_same_error() {
    let dir = Dir::new();
    let recording = dir.join("r.jsonl");
    let fake = FakeOpenAI::start(vec![Reply::error(401, "bad key")]);
    let mut s = settings(&fake.base_url());
    s.record_file = Some(recording.clone());
    let live_err = provider::build(s)
        .unwrap()
        .stream(&request(), &CancelToken::new(), &mut |_| {})
        .err()
        .unwrap();
    let replay = provider::build(ProviderSettings {
        kind: "replay".into(),
        replay_file: Some(recording),
        ..settings("http://127.0.0.1:1/v1")
    })
    .unwrap();
    let replay_err = replay
        .stream(&request(), &CancelToken::new(), &mut |_| {})
        .err()
        .unwrap();
    assert_eq!(replay_err.to_string(), live_err.to_string());
}

#[test]
fn replay_without_a_file_or_with_a_corrupt_file_is_a_config_error() {
    let dir = Dir::new();
    let mut s = settings("http://127.0.0.1:1/v1");
    s.kind = "replay".into();
    let err = provider::build(s.clone()).err().unwrap();
    assert!(err.to_string().contains("--replay FILE"), "{err}");
    s.replay_file = Some(dir.write("bad.jsonl", "{\"request\":{},\"status\":200}\nnot json\n"));
    let err = provider::build(s).err().unwrap();
    assert!(err.to_string().contains("line 2"), "{err}");
}

/// The re-executed test binary runs `proxy_child` with proxy variables set, so the parent's
/// environment (shared by every test thread) is never modified.
fn run_proxy_child(base_url: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "provider::proxy_child",
        "--exact",
        "--ignored",
        "--nocapture",
    ]);
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"] {
        cmd.env_remove(var).env_remove(var.to_ascii_lowercase());
    }
    cmd.env("REASONIX_PROXY_CHILD_BASE_URL", base_url);
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

#[test]
#[ignore = "run by proxy tests in a child process"]
fn proxy_child() {
    let Ok(base_url) = std::env::var("REASONIX_PROXY_CHILD_BASE_URL") else {
        return;
    };
    let mut s = settings(&base_url);
    s.retry.max_retries = 0;
    let provider = provider::build(s).unwrap();
    match provider.stream(&request(), &CancelToken::new(), &mut |_| {}) {
        Ok(stream) => {
            let chunks: Vec<Chunk> = stream.collect::<Result<_, _>>().unwrap();
            println!("CHILD-TEXT:{}", text_of(&chunks));
        }
        Err(err) => println!("CHILD-ERROR:{err}"),
    }
}

#[test]
fn http_proxy_variable_routes_requests_through_the_proxy() {
    let fake = FakeOpenAI::start(vec![Reply::text("via the proxy")]);
    let proxy = HttpProxy::start_mapping(fake.addr());
    // The name does not resolve: only the proxy can reach it.
    let target = format!("fake-openai.invalid:{}", fake.addr().port());
    let out = run_proxy_child(
        &format!("http://{target}/v1"),
        &[("http_proxy", &proxy.url())],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("CHILD-TEXT:via the proxy"), "{stdout}");
    assert_eq!(proxy.seen(), vec![format!("CONNECT {target}")]);
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn no_proxy_bypasses_the_proxy() {
    let fake = FakeOpenAI::start(vec![]);
    let proxy = HttpProxy::start_mapping(fake.addr());
    let out = run_proxy_child(
        "http://fake-openai.invalid:9/v1",
        &[
            ("HTTP_PROXY", &proxy.url()),
            ("NO_PROXY", "localhost,.invalid"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("CHILD-ERROR:provider: cannot connect"),
        "{stdout}"
    );
    assert!(proxy.seen().is_empty(), "{:?}", proxy.seen());
}

/// `openssl s_server` with a certificate from a CA generated for this test, serving
/// `v1/models` over TLS on 127.0.0.1.
struct TlsServer {
    child: Child,
    port: u16,
}

impl TlsServer {
    fn start(dir: &Dir) -> TlsServer {
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir.path())
                .output()
                .expect("the private-CA test needs the `openssl` CLI (apt-get install openssl)");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            &[
                &["req", "-x509"][..],
                &ec,
                &[
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                    "-days",
                    "2",
                    "-subj",
                    "/CN=reasonix test CA",
                    "-addext",
                    "basicConstraints=critical,CA:TRUE",
                    "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign",
                ],
            ]
            .concat(),
        );
        openssl(
            &[
                &["req"][..],
                &ec,
                &[
                    "-keyout",
                    "server.key",
                    "-out",
                    "server.csr",
                    "-subj",
                    "/CN=127.0.0.1",
                ],
            ]
            .concat(),
        );
        dir.write(
            "ext.cnf",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        );
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ]);
        let body = r#"{"object":"list","data":[{"id":"private-b"},{"id":"private-a"}]}"#;
        dir.write(
            "www/v1/models",
            &format!("HTTP/1.0 200 ok\r\nContent-Type: application/json\r\n\r\n{body}"),
        );
        let mut child = Command::new("openssl")
            .args(["s_server", "-accept", "127.0.0.1:0", "-HTTP", "-cert"])
            .arg(dir.join("server.pem"))
            .arg("-key")
            .arg(dir.join("server.key"))
            .current_dir(dir.join("www"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn openssl s_server");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let port = loop {
            let line = lines.next().expect("s_server printed its port").unwrap();
            if let Some(addr) = line.strip_prefix("ACCEPT ") {
                break addr.rsplit(':').next().unwrap().parse().unwrap();
            }
        };
        // Keep draining s_server's stdout so it never blocks on a full pipe.
        thread::spawn(move || lines.for_each(drop));
        TlsServer { child, port }
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn private_ca_from_ca_file_is_trusted_and_nothing_else_is() {
    let dir = Dir::new();
    let server = TlsServer::start(&dir);
    let mut s = settings(&format!("https://127.0.0.1:{}/v1", server.port));
    s.retry.max_retries = 0;

    let err = list_models(&s, &CancelToken::new(), &mut |_| {}).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ProviderError::Connect(_)), "{err:?}");
    assert!(text.contains("ca_file"), "the error names the fix: {text}");

    s.ca_file = Some(dir.join("ca.pem"));
    let ids = list_models(&s, &CancelToken::new(), &mut |_| {}).unwrap();
    assert_eq!(ids, vec!["private-a", "private-b"]);
    let report = probe(&s, Duration::from_secs(10)).unwrap();
    assert_eq!(report.status, 200);
    assert!(report.tls_roots.contains("ca_file"), "{}", report.tls_roots);

    s.ca_file = Some(dir.join("ext.cnf"));
    let err = list_models(&s, &CancelToken::new(), &mut |_| {}).unwrap_err();
    assert!(
        err.to_string().contains("holds no PEM certificate"),
        "{err}"
    );
}

/// An `https://` proxy for one connection: TLS with the test CA's server certificate (the
/// files [`TlsServer::start`] made in `dir`), then the CONNECT request's line is reported and
/// refused with a 403.
fn tls_proxy_refusing_tunnels(dir: &Dir) -> (u16, mpsc::Receiver<String>) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::{Read, Write};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("server.pem"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let config = std::sync::Arc::new(config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { return };
            let tx = tx.clone();
            let config = std::sync::Arc::clone(&config);
            thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match tls.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                let text = String::from_utf8_lossy(&head).into_owned();
                let _ = tx.send(text.lines().next().unwrap_or("").to_string());
                let _ = tls.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
                let _ = tls.flush();
            });
        }
    });
    (port, rx)
}

#[test]
fn an_https_proxy_is_reached_over_tls_checked_against_the_trusted_roots() {
    let dir = Dir::new();
    // Only for the CA and the certificate it writes into `dir`.
    let _files = TlsServer::start(&dir);
    let (port, seen) = tls_proxy_refusing_tunnels(&dir);
    let proxy_url = format!("https://127.0.0.1:{port}");
    let target = "https://fake-openai.invalid/v1";

    // The proxy's certificate is not from a trusted root: the handshake with the proxy fails,
    // the error says it was the proxy's, and nothing reached the proxy in the clear.
    let out = run_proxy_child(target, &[("HTTPS_PROXY", &proxy_url)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("CHILD-ERROR:"), "{stdout}");
    assert!(stdout.contains("TLS with the proxy"), "{stdout}");
    assert!(
        stdout.contains("SSL_CERT_FILE"),
        "the error names the fix: {stdout}"
    );
    assert!(seen.try_recv().is_err());

    // Trusted through SSL_CERT_FILE: the CONNECT request goes to the proxy inside TLS, and
    // its refusal is reported as the proxy's.
    let ca = dir.join("ca.pem");
    let out = run_proxy_child(
        target,
        &[
            ("HTTPS_PROXY", &proxy_url),
            ("SSL_CERT_FILE", ca.to_str().unwrap()),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("proxy refused the tunnel to fake-openai.invalid"),
        "{stdout}"
    );
    assert!(stdout.contains("HTTP 403"), "{stdout}");
    assert_eq!(
        seen.recv_timeout(Duration::from_secs(10)).unwrap(),
        "CONNECT fake-openai.invalid:443 HTTP/1.1"
    );

    // A plain-http model server behind the same proxy: the proxy is still checked against
    // SSL_CERT_FILE, not only against the bundled roots.
    let out = run_proxy_child(
        "http://fake-openai.invalid/v1",
        &[
            ("HTTP_PROXY", &proxy_url),
            ("SSL_CERT_FILE", ca.to_str().unwrap()),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("HTTP 403"), "{stdout}");
    assert_eq!(
        seen.recv_timeout(Duration::from_secs(10)).unwrap(),
        "CONNECT fake-openai.invalid:80 HTTP/1.1"
    );
}

#[test]
fn recording_to_an_unwritable_path_fails_the_stream_visibly() {
    let dir = Dir::new();
    let fake = FakeOpenAI::start(vec![Reply::text("ok")]);
    let mut s = settings(&fake.base_url());
    s.record_file = Some(dir.join("missing-dir/rec.jsonl"));
    let provider = provider::build(s).unwrap();
    let items: Vec<_> = provider
        .stream(&request(), &CancelToken::new(), &mut |_| {})
        .unwrap()
        .collect();
    let err = items
        .iter()
        .find_map(|i| i.as_ref().err())
        .expect("an error");
    assert!(
        err.to_string().contains("cannot append to the recording"),
        "{err}"
    );
    // The error comes before Done, so a consumer that stops at Done still sees it.
    assert!(
        !items.iter().any(|i| matches!(i, Ok(Chunk::Done { .. }))),
        "{items:?}"
    );
}

fn synthetic_stream(deltas: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..deltas {
        out += &sse_text(&format!("tok{} ", i % 100));
        if i % 50 == 0 {
            out += ": keep-alive\n\n";
        }
    }
    out += &sse_finish("stop");
    out += &sse_usage(1000, deltas as u64, 0);
    out += &done();
    out.into_bytes()
}

#[test]
#[ignore = "benchmark"]
fn bench_sse_throughput() {
    let input = synthetic_stream(200_000);
    let mut events = 0usize;
    let start = Instant::now();
    let rounds = 5;
    for _ in 0..rounds {
        let mut decoder = Decoder::new();
        for piece in input.chunks(16 * 1024) {
            events += decoder.feed(piece).len();
        }
        events += decoder.finish().into_iter().count();
    }
    let secs = start.elapsed().as_secs_f64();
    let mb = (input.len() * rounds) as f64 / 1e6;
    assert!(events > 200_000);
    println!(
        "sse decoder: {:.1} MB/s ({} MB in {:.3} s, {} events)",
        mb / secs,
        mb,
        secs,
        events
    );
}

#[test]
#[ignore = "benchmark"]
fn bench_stream_tokens_per_second() {
    let deltas = 50_000;
    let input = synthetic_stream(deltas);
    // Pieces of about one event each, as a real server flushes them.
    let pieces: Vec<Vec<u8>> = input
        .split_inclusive(|b| *b == b'\n')
        .collect::<Vec<_>>()
        .chunks(2)
        .map(|c| c.concat())
        .collect();
    let fake = FakeOpenAI::start(vec![Reply::pieces(pieces)]);
    let provider = provider_for(&fake);
    let start = Instant::now();
    let chunks = collect(provider.as_ref(), &request());
    let secs = start.elapsed().as_secs_f64();
    // The deltas that arrived with one read come as one chunk: count the tokens in the text.
    let text = text_of(&chunks);
    let tokens = text.split_whitespace().count();
    assert_eq!(tokens, deltas);
    let pieces = chunks
        .iter()
        .filter(|c| matches!(c, Chunk::Text(_)))
        .count();
    println!(
        "streamed tokens: {:.0} tokens/s ({tokens} text deltas in {secs:.3} s, handed over in {pieces} chunks)",
        tokens as f64 / secs
    );
}

/// Reads one request's head and body from `reader` and returns the body; `None` once the
/// client has closed the connection.
fn read_request(reader: &mut BufReader<std::net::TcpStream>) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// A keep-alive server: answers every request on a connection with a short chunked SSE
/// stream and reports each accepted connection. A request whose body mentions "hold" gets
/// no answer; its arrival is reported on the second channel.
fn keep_alive_server() -> (String, mpsc::Receiver<()>, mpsc::Receiver<()>) {
    server_closing_after_replies("", false)
}

/// [`keep_alive_server`] with `extra` header lines in every reply and, when `close`, the
/// connection closed after each reply, as a server whose keep-alive timeout is shorter than
/// the pause between two requests does.
fn server_closing_after_replies(
    extra: &'static str,
    close: bool,
) -> (String, mpsc::Receiver<()>, mpsc::Receiver<()>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    let (held_tx, held_rx) = mpsc::channel();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = tx.send(());
            let held_tx = held_tx.clone();
            thread::spawn(move || loop {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let Some(body) = read_request(&mut reader) else {
                    return;
                };
                if String::from_utf8_lossy(&body).contains("hold") {
                    let _ = held_tx.send(());
                    // Wait for the client to hang up.
                    let _ = reader.read(&mut [0u8; 1]);
                    return;
                }
                let sse = format!("{}{}{}", sse_text("ok"), sse_finish("stop"), done());
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{extra}Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{sse}\r\n0\r\n\r\n",
                    sse.len()
                );
                stream.write_all(reply.as_bytes()).unwrap();
                if close {
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    return;
                }
            });
        }
    });
    (url, rx, held_rx)
}

#[test]
fn consecutive_requests_reuse_one_connection_and_a_cancel_starts_a_fresh_one() {
    let (url, connections, held) = keep_alive_server();
    let provider = provider::build(settings(&url)).unwrap();
    const TURNS: usize = 5;
    for _ in 0..TURNS {
        assert_eq!(text_of(&collect(provider.as_ref(), &request())), "ok");
    }
    connections.recv_timeout(Duration::from_secs(10)).unwrap();
    // The connection is back in the pool before the caller sees the end of the reply, so
    // every turn finds it there; without reuse every turn opens its own.
    let opened = 1 + connections.try_iter().count();
    assert_eq!(opened, 1, "{TURNS} turns opened {opened} connections");
    // Cancelling an in-flight request shuts its agent down; the next request needs a new one.
    let cancel = CancelToken::new();
    let mut hold = request();
    hold.messages.push(Message::user("hold"));
    let canceller = {
        let cancel = cancel.clone();
        thread::spawn(move || {
            held.recv_timeout(Duration::from_secs(10)).unwrap();
            cancel.cancel();
        })
    };
    // The request is waiting for a response head when the cancel arrives.
    let outcome = provider
        .stream(&hold, &cancel, &mut |_| {})
        .and_then(|mut stream| {
            stream
                .next()
                .unwrap_or(Err(ProviderError::Stream("empty".into())))
        });
    assert!(
        matches!(outcome, Err(ProviderError::Cancelled)),
        "{outcome:?}"
    );
    canceller.join().unwrap();
    assert_eq!(text_of(&collect(provider.as_ref(), &request())), "ok");
    connections
        .recv_timeout(Duration::from_secs(10))
        .expect("after a cancel the next request connects anew");
}

#[test]
fn a_body_the_server_keeps_open_after_done_ends_the_reply_and_is_not_kept() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (closed_tx, closed) = mpsc::channel();
    let (opened_tx, opened) = mpsc::channel();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let _ = opened_tx.send(());
            let closed_tx = closed_tx.clone();
            thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                if read_request(&mut reader).is_none() {
                    return;
                }
                // [DONE], but never the last chunk that ends the body.
                let sse = format!("{}{}{}", sse_text("ok"), sse_finish("stop"), done());
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{sse}\r\n",
                    sse.len()
                );
                stream.write_all(reply.as_bytes()).unwrap();
                // Until the client hangs up.
                let _ = reader.read(&mut [0u8; 1]);
                let _ = closed_tx.send(());
            });
        }
    });
    let mut s = settings(&url);
    // Long enough that waiting for the body's end would hold the test past its checks.
    s.timeouts.idle_stream = Duration::from_secs(3600);
    let provider: Arc<dyn Provider> = Arc::from(provider::build(s).unwrap());
    for turn in 0..2 {
        let (done_tx, done_rx) = mpsc::channel();
        let provider = Arc::clone(&provider);
        thread::spawn(move || {
            let _ = done_tx.send(collect(provider.as_ref(), &request()));
        });
        let chunks = done_rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("turn {turn}: the reply waited for the body's end"));
        assert_eq!(text_of(&chunks), "ok", "turn {turn}");
        opened
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("turn {turn} has a connection of its own"));
        // An unfinished body never goes back to the pool: its connection is closed, not
        // left to a reader until the idle timeout.
        closed
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("turn {turn}: the connection was not closed"));
    }
}

#[test]
fn a_reply_cancelled_or_dropped_midway_is_recorded_as_cancelled_with_what_arrived() {
    for how in ["cancel", "drop"] {
        let (reply, _release) = Reply::hold(vec![sse_text("partial")]);
        let server = FakeOpenAI::start(vec![reply]);
        let dir = Dir::new();
        let file = dir.join("rec.jsonl");
        let mut s = settings(&server.base_url());
        s.record_file = Some(file.clone());
        let provider = provider::build(s).unwrap();
        let cancel = CancelToken::new();
        let mut stream = provider.stream(&request(), &cancel, &mut |_| {}).unwrap();
        let first = stream.next().unwrap().unwrap();
        assert!(
            matches!(&first, Chunk::Text(t) if t == "partial"),
            "{how}: {first:?}"
        );
        if how == "cancel" {
            // From another thread, as Ctrl-C does, while the caller waits for more.
            let canceller = {
                let cancel = cancel.clone();
                thread::spawn(move || cancel.cancel())
            };
            let next = stream.next();
            assert!(
                matches!(next, Some(Err(ProviderError::Cancelled))),
                "{how}: {next:?}"
            );
            assert!(stream.next().is_none(), "{how}: nothing after the cancel");
            canceller.join().unwrap();
        }
        drop(stream);
        server.wait_for_client_hangups(1);
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "{how}: {lines:?}");
        assert_eq!(lines[0]["status"], 200, "{how}");
        assert_eq!(lines[0]["error"], "cancelled", "{how}");
        assert!(
            lines[0]["response"].as_str().unwrap().contains("partial"),
            "{how}: {}",
            lines[0]
        );
    }
}

#[test]
fn a_kept_connection_the_server_closed_is_replaced_without_a_retry() {
    for (extra, why) in [
        ("", "closed while idle"),
        ("Connection: close\r\n", "announced close"),
    ] {
        let (url, connections, _) = server_closing_after_replies(extra, true);
        let provider = provider::build(settings(&url)).unwrap();
        for turn in 0..3 {
            let mut retries = Vec::new();
            let chunks: Vec<Chunk> = provider
                .stream(&request(), &CancelToken::new(), &mut |r| {
                    retries.push(r.reason.clone())
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(text_of(&chunks), "ok", "{why}, turn {turn}");
            assert!(retries.is_empty(), "{why}, turn {turn}: {retries:?}");
            connections
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("{why}: turn {turn} has its own connection"));
        }
    }
}

/// A loopback port with nothing listening: connecting to it is refused at once.
fn refused_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A user config whose only provider is `base_url`, with the default retry policy unless
/// `retry` (a TOML inline table) says otherwise.
fn provider_config(home: &Dir, base_url: &str, retry: &str) {
    home.write(
        ".reasonix/config.toml",
        &format!(
            "default_model = \"fake\"\n\n[[providers]]\nname = \"fake\"\nbase_url = \"{base_url}\"\nmodel = \"fake-model\"\napi_key_env = \"FAKE_API_KEY\"\n{retry}\n\n[environment]\nenabled = false\n"
        ),
    );
}

/// The attempts a fail-fast error reports, from its "(N attempts)" text.
fn attempts_in(stderr: &str) -> Option<u32> {
    let (before, _) = stderr.split_once(" attempts)")?;
    before.rsplit('(').next()?.parse().ok()
}

#[test]
fn run_against_a_refused_port_fails_fast_naming_the_endpoint_and_a_fix() {
    let home = Dir::new();
    let work = Dir::new();
    let port = refused_port();
    // The default policy: ten retries, which used to take about 70 s against a dead server.
    provider_config(&home, &format!("http://127.0.0.1:{port}/v1"), "");
    let out = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("http://127.0.0.1:{port}/v1/chat/completions")),
        "{out:?}"
    );
    assert!(out.stderr.contains("is the server running?"), "{out:?}");
    assert!(
        out.stderr.contains("base_url of provider `fake`"),
        "{out:?}"
    );
    assert_eq!(attempts_in(&out.stderr), Some(3), "{out:?}");
    assert!(!out.stderr.contains("retrying"), "{out:?}");
}

#[test]
fn a_recorded_unreachable_endpoint_replays_as_the_same_error_once_prefixed() {
    let home = Dir::new();
    let work = Dir::new();
    let port = refused_port();
    provider_config(&home, &format!("http://127.0.0.1:{port}/v1"), "");
    let file = work.join("rec.jsonl").display().to_string();
    let recorded = run(reasonix(&home, work.path()).args(["run", "--record", &file, "hi"]));
    assert_eq!(recorded.code, 1, "{recorded:?}");
    let replayed = run(reasonix(&home, work.path()).args(["run", "--replay", &file, "hi"]));
    assert_eq!(replayed.code, 1, "{replayed:?}");
    assert!(
        replayed.stderr.contains("connection refused"),
        "{replayed:?}"
    );
    assert_eq!(
        replayed.stderr.matches("provider:").count(),
        1,
        "{replayed:?}"
    );
}

#[test]
fn models_against_a_refused_port_fails_fast_naming_the_endpoint() {
    let home = Dir::new();
    let work = Dir::new();
    let port = refused_port();
    provider_config(&home, &format!("http://127.0.0.1:{port}/v1"), "");
    let out = run(reasonix(&home, work.path()).args(["models"]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("http://127.0.0.1:{port}/v1/models")),
        "{out:?}"
    );
    assert!(out.stderr.contains("is the server running?"), "{out:?}");
    assert_eq!(attempts_in(&out.stderr), Some(3), "{out:?}");
}

#[test]
fn run_prints_one_line_per_retry_with_attempt_reason_and_wait() {
    let fake = FakeOpenAI::start(vec![
        Reply::error(503, "overloaded"),
        Reply::error(503, "still overloaded"),
        Reply::text("finally"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    provider_config(
        &home,
        &fake.base_url(),
        "retry = { max_retries = 3, initial_backoff_ms = 2, max_backoff_seconds = 1 }",
    );
    let out = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.trim(), "finally", "{out:?}");
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("retrying"))
        .collect();
    assert_eq!(lines.len(), 2, "{out:?}");
    assert!(
        lines[0].starts_with("warning: provider: HTTP 503: overloaded; retrying in "),
        "{lines:?}"
    );
    assert!(lines[0].ends_with(" ms (attempt 2 of 4)"), "{lines:?}");
    assert!(
        lines[1].contains("HTTP 503: still overloaded; retrying in "),
        "{lines:?}"
    );
    assert!(lines[1].ends_with("(attempt 3 of 4)"), "{lines:?}");

    let fake = FakeOpenAI::start(vec![Reply::error(429, "slow down"), Reply::text("ok")]);
    provider_config(
        &home,
        &fake.base_url(),
        "retry = { max_retries = 3, initial_backoff_ms = 2, max_backoff_seconds = 1 }",
    );
    let out =
        run(reasonix(&home, work.path()).args(["run", "--output-format", "stream-json", "hi"]));
    assert_eq!(out.code, 0, "{out:?}");
    let notices: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "notice" && v["kind"] == "retry")
        .collect();
    assert_eq!(notices.len(), 1, "{out:?}");
    let message = notices[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("provider: HTTP 429: slow down; retrying in "),
        "{message}"
    );
    assert!(message.ends_with("(attempt 2 of 4)"), "{message}");
    assert_eq!(notices[0]["level"], "warning");
    assert_eq!(notices[0]["attempt"], 2);
    assert_eq!(notices[0]["max_attempts"], 4);
    assert!(
        notices[0]["wait_ms"].as_u64().unwrap() <= 2,
        "{}",
        notices[0]
    );
    assert!(!out.stderr.contains("retrying"), "{out:?}");
}

#[test]
fn a_missing_api_key_names_the_variable_and_setup_not_http_0() {
    let home = Dir::new();
    let work = Dir::new();
    // https: a key is required; FAKE_API_KEY is not set (the helper clears *_API_KEY).
    provider_config(&home, "https://api.invalid/v1", "");
    let out = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert_eq!(out.code, 3, "{out:?}");
    assert!(!out.stderr.contains("HTTP 0"), "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        "reasonix: provider: no API key for provider `fake`: set $FAKE_API_KEY or run `reasonix setup --api-key-stdin`",
        "{out:?}"
    );
}

#[test]
fn server_error_text_is_sanitised_and_capped_before_it_reaches_the_terminal() {
    let hostile = format!(
        "bad \u{1b}[2J\u{1b}]0;pwned\u{7}request \u{9b}31m{}",
        "x".repeat(20_000)
    );
    for format in ["text", "stream-json"] {
        let fake = FakeOpenAI::start(vec![Reply::error(400, &hostile)]);
        let home = Dir::new();
        let work = Dir::new();
        provider_config(&home, &fake.base_url(), "");
        let out = run(reasonix(&home, work.path()).args(["run", "--output-format", format, "hi"]));
        assert_eq!(out.code, 1, "{out:?}");
        assert!(
            out.stderr.contains(
                "reasonix: provider: HTTP 400: bad ^[[2J^[]0;pwned^Grequest \\u{9b}31mxxx"
            ),
            "{out:?}"
        );
        assert!(
            !out.stderr
                .chars()
                .any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\u{9b}'),
            "{format}: an escape reached stderr"
        );
        assert!(
            out.stderr.len() < 1000,
            "{format}: {} bytes on stderr",
            out.stderr.len()
        );
    }
}

#[test]
fn run_against_a_host_that_does_not_resolve_fails_fast_naming_the_endpoint() {
    let home = Dir::new();
    let work = Dir::new();
    // `.invalid` never resolves (RFC 2606), with or without a network.
    provider_config(&home, "http://reasonix-test.invalid/v1", "");
    let out = run(reasonix(&home, work.path()).args(["run", "hi"]));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains(
            "cannot connect to http://reasonix-test.invalid/v1/chat/completions: the host name \
             does not resolve (3 attempts); check base_url of provider `fake`"
        ),
        "{out:?}"
    );
}

#[test]
fn an_empty_reply_is_asked_again_and_the_retry_is_reported() {
    let fake = FakeOpenAI::start(vec![Reply::events(vec![done()]), Reply::text("second")]);
    let provider = provider_for(&fake);
    let mut retries = Vec::new();
    let chunks: Vec<Chunk> = provider
        .stream(&request(), &CancelToken::new(), &mut |r| {
            retries.push(r.clone())
        })
        .expect("stream starts")
        .collect::<Result<_, _>>()
        .expect("stream completes");
    assert_eq!(text_of(&chunks), "second");
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert_eq!((retries[0].attempt, retries[0].max_attempts), (2, 3));
    assert_eq!(
        retries[0].reason,
        "provider: the model sent an empty reply (no text and no tool call)"
    );
}

/// A server that answers one request per connection with the raw bytes `reply`.
fn raw_server(reply: &'static [u8]) -> String {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                if read_request(&mut reader).is_some() {
                    let _ = stream.write_all(reply);
                }
            });
        }
    });
    url
}

#[test]
fn a_latin1_byte_in_a_response_header_is_accepted() {
    // RFC 9110 allows obs-text (bytes 0x80-0xFF) in field values; a server's localised
    // reason or date must not fail the whole reply.
    let url = raw_server(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Served-By: caf\xe9 m\xfcnchen\r\nConnection: close\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    );
    let provider = provider::build(settings(&url)).unwrap();
    assert_eq!(text_of(&collect(provider.as_ref(), &request())), "ok");
}

#[test]
fn streaming_requests_ask_for_identity_and_a_compressed_reply_names_its_encoding() {
    let fake = FakeOpenAI::start(vec![Reply::text("hi")]);
    collect(provider_for(&fake).as_ref(), &request());
    assert_eq!(
        fake.requests()[0].header("accept-encoding"),
        Some("identity")
    );
    let url = raw_server(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03binary",
    );
    let provider = provider::build(settings(&url)).unwrap();
    let err = provider
        .stream(&request(), &CancelToken::new(), &mut |_| {})
        .err()
        .expect("a compressed reply is an error");
    let text = err.to_string();
    assert!(text.contains("compressed (gzip)"), "{text}");
    assert!(text.contains("Accept-Encoding: identity"), "{text}");
    assert!(!text.contains('\u{fffd}'), "no binary junk: {text}");
}

#[test]
fn a_reply_that_is_not_http_is_the_server_s_reply_not_a_failure_to_connect() {
    let url = raw_server(b"SSH-2.0-OpenSSH_9.6\r\n\r\n");
    let mut s = settings(&url);
    s.retry.max_retries = 0;
    let err = provider::build(s)
        .unwrap()
        .stream(&request(), &CancelToken::new(), &mut |_| {})
        .err()
        .expect("not HTTP");
    let text = err.to_string();
    assert!(text.contains("the server's reply"), "{text}");
    assert!(!text.contains("cannot connect"), "{text}");
}

#[test]
fn a_refusing_proxy_is_named_as_the_proxy_not_the_server() {
    let port = refused_port();
    let proxy = format!("http://127.0.0.1:{port}");
    let out = run_proxy_child(
        "https://api.deepseek.invalid/v1",
        &[("HTTPS_PROXY", &proxy)],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("HTTPS_PROXY={proxy} refused the connection")),
        "{stdout}"
    );
    assert!(!stdout.contains("is the server running"), "{stdout}");
    // SOCKS is refused with a line naming the variable, before any connection.
    let out = run_proxy_child(
        "https://api.deepseek.invalid/v1",
        &[("HTTPS_PROXY", "socks5://127.0.0.1:1080")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("HTTPS_PROXY names a SOCKS proxy"),
        "{stdout}"
    );
}
