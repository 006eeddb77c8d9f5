//! Golden shapes: what the real Claude Code CLI prints with `-p --output-format stream-json
//! --verbose` (captured in `tests/claude_golden/*.jsonl` by `regenerate.sh` against the
//! Anthropic fake beside it) against what reasonix's print mode prints for the same script.
//!
//! Values differ by nature (ids, timings, costs, model names, the tool list), so the check is on
//! shapes: every message kind (`type`, plus `subtype` for `system`) the golden has, and within
//! each kind every key path with its JSON type, plus the few values that are not by nature
//! (the exit code, the result's `subtype`, `is_error` and whether `result` is empty). Arrays of typed objects (content
//! blocks) are keyed by the block's `type`; maps keyed by a model name are read as `*`. What
//! Claude prints and reasonix deliberately does not is in [`ABSENT`], each with its reason; what
//! only reasonix prints is in [`OURS_ONLY`]; where print mode still differs and should not is
//! in [`KNOWN_DIVERGENCES`]. The lists are summarised in `tests/claude_golden/README.md`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Key paths (or whole subtrees, or whole message kinds) of Claude Code's output that print
/// mode does not produce, with the reason. A path is `kind:.key.key`, `[type]` for a typed
/// array element, `[]` for any other element and `*` for a key that is a model's name.
pub const ABSENT: &[(&str, &str)] = &[
    ("system/init:.capabilities", "Claude Code's own client feature flags"),
    ("system/init:.plugins", "Claude Code plugins; reasonix has no plugin system of that name"),
    ("system/init:.terminal_slash_commands", "commands of Claude's terminal UI"),
    ("system/init:.claude_code_version", "Claude's version; reasonix's is in `--version`"),
    ("system/init:.output_style", "Claude output styles"),
    ("system/init:.analytics_disabled", "Claude telemetry"),
    ("system/init:.product_feedback_disabled", "Claude telemetry"),
    ("system/init:.served_by_anthropic", "Anthropic's service"),
    ("system/init:.sandbox_enabled", "Claude's sandbox switch; the jail is always on"),
    ("system/init:.memory_paths", "Claude's auto-memory folder"),
    ("system/init:.original_cwd", "Claude worktree sessions"),
    ("system/init:.additional_directories", "Claude's --add-dir echo"),
    ("system/init:.messaging_socket_path", "Claude's local IPC socket"),
    ("system/init:.fast_mode_state", "Anthropic fast mode"),
    ("system/init:.fast_mode_disabled_reason", "Anthropic fast mode"),
    ("system/init:.per_turn_effort_active", "Anthropic effort settings"),
    ("system/init:.ultrathink_available", "Anthropic thinking budgets"),
    ("system/init:.ultrathink_typed_raises", "Anthropic thinking budgets"),
    ("system/init:.view_mode", "Claude's terminal UI"),
    ("assistant:.timestamp", "Claude transcript timestamps"),
    ("assistant:.request_id", "Anthropic's request id header"),
    ("assistant:.error", "Claude's synthetic error message; the error is in the result"),
    ("assistant:.is_api_error_message", "Claude's synthetic error message"),
    ("assistant:.api_error_status", "Claude's synthetic error message"),
    ("assistant:.api_error_type", "Claude's synthetic error message"),
    ("assistant:.message.context_management", "Anthropic context-management beta"),
    ("assistant:.message.container", "Anthropic code-execution containers"),
    ("assistant:.message.diagnostics", "Claude's synthetic error message"),
    ("assistant:.message.stop_details", "Claude's synthetic error message"),
    ("assistant:.message.usage.output_tokens_details", "Anthropic usage detail"),
    ("assistant:.message.usage.server_tool_use", "Anthropic server tools"),
    ("assistant:.message.usage.service_tier", "Anthropic service tiers"),
    ("assistant:.message.usage.cache_creation", "Anthropic cache TTL split"),
    ("assistant:.message.usage.inference_geo", "Anthropic routing"),
    ("assistant:.message.usage.iterations", "Anthropic usage detail"),
    ("assistant:.message.usage.speed", "Anthropic fast mode"),
    ("assistant:.message.usage.fallback_credit", "Anthropic billing"),
    ("user:.timestamp", "Claude transcript timestamps"),
    ("user:.tool_use_result", "Claude's per-tool structured result for its UI; the model's text is in the tool_result block"),
    ("user:.tool_result_meta", "Claude's permission-decision telemetry"),
    ("result:.usage.output_tokens_details", "Anthropic usage detail"),
    ("result:.usage.server_tool_use", "Anthropic server tools"),
    ("result:.usage.service_tier", "Anthropic service tiers"),
    ("result:.usage.cache_creation", "Anthropic cache TTL split"),
    ("result:.usage.inference_geo", "Anthropic routing"),
    ("result:.usage.iterations", "Anthropic usage detail"),
    ("result:.usage.speed", "Anthropic fast mode"),
    ("result:.usage.fallback_credit", "Anthropic billing"),
    ("result:.modelUsage.*.webSearchRequests", "Anthropic server tools"),
    ("result:.modelUsage.*.thinkingTokens", "Anthropic usage detail"),
    ("result:.modelUsage.*.cacheCreationEphemeral5mInputTokens", "Anthropic cache TTL split"),
    ("result:.modelUsage.*.cacheCreationEphemeral1hInputTokens", "Anthropic cache TTL split"),
    ("result:.modelUsage.*.canonicalModel", "Anthropic model aliases"),
    ("result:.modelUsage.*.provider", "Anthropic's first-party/Bedrock/Vertex switch"),
    ("result:.modelUsage.*.costBasis", "Anthropic billing"),
    ("result:.terminal_reason", "Claude-internal loop state"),
    ("result:.fast_mode_state", "Anthropic fast mode"),
    ("result:.fast_mode_disabled_reason", "Anthropic fast mode"),
    ("result:.subagent_stats", "Claude's background-agent statistics"),
    ("result:.safety_stops", "Anthropic safety classifier"),
    ("result:.api_error_status", "Anthropic HTTP status echo; the message is in `result`"),
    ("result:.api_error_type", "Anthropic error type echo; the message is in `result`"),
    ("result:.ttft_ms", "Claude latency telemetry"),
    ("result:.ttft_stream_ms", "Claude latency telemetry"),
    ("result:.time_to_request_ms", "Claude latency telemetry"),
    ("result:.first_content_frame_ms", "Claude latency telemetry"),
    ("result:.queued_turn_count", "Claude's message queue"),
    ("result:.result_index", "Claude's message queue"),
    ("result:.model_usage_since_last_result", "Claude's message queue (modelUsage holds the same)"),
];

/// Key paths only reasonix prints (no golden has them anywhere), with the reason; the SDKs
/// ignore keys they do not know.
pub const OURS_ONLY: &[(&str, &str)] = &[];

/// The shape of one output: message kind → key path → JSON types seen there.
pub type Shape = BTreeMap<String, BTreeMap<String, BTreeSet<&'static str>>>;

/// Parses JSON lines; a line that is not a JSON object fails the test with its text.
pub fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(value) if value.is_object() => value,
            _ => panic!("not a JSON object line: {line}"),
        })
        .collect()
}

/// `type`, with `subtype` for `system` messages (an `init` and an `api_retry` are different
/// messages; a `result` is one message whatever its subtype).
pub fn kind(message: &Value) -> String {
    let kind = message["type"].as_str().unwrap_or("?");
    match message["subtype"].as_str() {
        Some(sub) if kind == "system" => format!("{kind}/{sub}"),
        _ => kind.to_string(),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Keys whose children are named by a model, read as `*`.
const MODEL_KEYED: &[&str] = &["modelUsage", "model_usage_since_last_result"];

fn walk(value: &Value, path: &str, key: &str, out: &mut BTreeMap<String, BTreeSet<&'static str>>) {
    out.entry(path.to_string())
        .or_default()
        .insert(type_name(value));
    match value {
        Value::Object(map) => {
            for (child_key, child) in map {
                let name = if MODEL_KEYED.contains(&key) {
                    "*"
                } else {
                    child_key
                };
                walk(child, &format!("{path}.{name}"), name, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                // Only content blocks are shaped per element; plain lists (tools, slash
                // commands) are values and differ by nature.
                if let Some(block) = item.get("type").and_then(Value::as_str) {
                    walk(item, &format!("{path}[{block}]"), key, out);
                }
            }
        }
        _ => {}
    }
}

pub fn shape(messages: &[Value]) -> Shape {
    let mut shape = Shape::new();
    for message in messages {
        let paths = shape.entry(kind(message)).or_default();
        if let Value::Object(map) = message {
            for (key, child) in map {
                walk(child, &format!(".{key}"), key, paths);
            }
        }
    }
    shape
}

/// Whether an entry's kind names `kind`: itself, or every subtype of it (`system` covers
/// `system/init` and `system/api_retry`).
fn kind_matches(entry_kind: &str, kind: &str) -> bool {
    entry_kind == kind
        || kind
            .strip_prefix(entry_kind)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Whether `kind` + `path` falls under a listed entry (a whole kind, the path itself or a
/// subtree of it).
fn listed(list: &[(&str, &str)], kind: &str, path: &str) -> bool {
    list.iter().any(|(entry, _)| {
        let (entry_kind, entry_path) = entry.split_once(':').unwrap_or((entry, ""));
        kind_matches(entry_kind, kind)
            && (entry_path.is_empty()
                || path == entry_path
                || path.starts_with(&format!("{entry_path}."))
                || path.starts_with(&format!("{entry_path}[")))
    })
}

/// Every way `ours` differs from `golden` in shape, one line each; empty when they agree.
/// A golden `null` accepts any type (the field is nullable: `parent_tool_use_id` is null at
/// top level and a string inside a subagent); any other golden type must be among ours. A key
/// only ours has is a difference unless some golden has it in that kind of message (`known`,
/// Claude's vocabulary over all scripts) or [`OURS_ONLY`] lists it.
pub fn differences(golden: &[Value], ours: &[Value], known: &Shape) -> Vec<String> {
    let mut problems = Vec::new();
    let first = |messages: &[Value]| messages.first().map(kind);
    let last = |messages: &[Value]| messages.last().map(kind);
    if first(ours) != first(golden) {
        problems.push(format!(
            "first message: golden {:?}, ours {:?}",
            first(golden),
            first(ours)
        ));
    }
    if last(ours) != last(golden) {
        problems.push(format!(
            "last message: golden {:?}, ours {:?}",
            last(golden),
            last(ours)
        ));
    }
    let want = shape(golden);
    let have = shape(ours);
    for (kind, paths) in &want {
        if listed(ABSENT, kind, "") {
            continue;
        }
        let Some(ours_paths) = have.get(kind) else {
            problems.push(format!("{kind}: golden has this message, ours does not"));
            continue;
        };
        for (path, types) in paths {
            if listed(ABSENT, kind, path) {
                continue;
            }
            match ours_paths.get(path) {
                None => problems.push(format!("{kind}:{path}: missing (golden {types:?})")),
                Some(ours_types) => {
                    let nullable = types.iter().all(|t| *t == "null");
                    if !nullable && !types.iter().all(|t| *t == "null" || ours_types.contains(t)) {
                        problems.push(format!(
                            "{kind}:{path}: golden {types:?}, ours {ours_types:?}"
                        ));
                    }
                }
            }
        }
    }
    for (kind, paths) in &have {
        for (path, types) in paths {
            let claude_has = known.get(kind).is_some_and(|p| p.contains_key(path));
            if !claude_has && !listed(OURS_ONLY, kind, path) {
                problems.push(format!("{kind}:{path}: only ours has it ({types:?})"));
            }
        }
    }
    problems
}

pub fn golden(name: &str) -> Vec<Value> {
    let path = format!(
        "{}/tests/claude_golden/{name}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    lines(&text)
}

const GOLDENS: [&str; 4] = ["text", "tool", "error", "fallback"];

/// The shapes of every golden together: every key Claude Code prints in each kind of message.
pub fn claude_vocabulary() -> Shape {
    let every: Vec<Value> = GOLDENS.iter().flat_map(|name| golden(name)).collect();
    shape(&every)
}

#[test]
fn goldens_hold_the_three_scripts() {
    let kinds = |name: &str| golden(name).iter().map(kind).collect::<Vec<_>>();
    assert_eq!(kinds("text"), ["system/init", "assistant", "result"]);
    assert_eq!(
        kinds("tool"),
        ["system/init", "assistant", "user", "assistant", "result"]
    );
    assert_eq!(
        kinds("error"),
        ["system/init", "system/api_retry", "assistant", "result"]
    );
    assert_eq!(
        kinds("fallback"),
        [
            "system/init",
            "system/api_retry",
            "system/api_retry",
            "system/model_fallback",
            "assistant",
            "result"
        ]
    );
    let tool = shape(&golden("tool"));
    assert!(tool["assistant"].contains_key(".message.content[tool_use].input.file_path"));
    assert!(tool["user"].contains_key(".message.content[tool_result].tool_use_id"));
    assert_eq!(golden("text").last().unwrap()["is_error"], false);
    assert_eq!(golden("error").last().unwrap()["is_error"], true);
}

#[test]
fn a_golden_matches_itself_and_every_absent_entry_names_a_golden_key() {
    for name in GOLDENS {
        let lines = golden(name);
        let known = shape(&lines);
        assert_eq!(
            differences(&lines, &lines, &known),
            Vec::<String>::new(),
            "{name}"
        );
    }
    let shapes: Vec<Shape> = GOLDENS.iter().map(|name| shape(&golden(name))).collect();
    for (entry, _) in ABSENT {
        let (kind, path) = entry.split_once(':').unwrap_or((entry, ""));
        let found = shapes.iter().any(|shape| {
            shape.iter().any(|(name, paths)| {
                kind_matches(kind, name) && (path.is_empty() || paths.contains_key(path))
            })
        });
        assert!(
            found,
            "ABSENT names {entry}, which no golden has (stale entry)"
        );
    }
}

#[test]
fn the_comparison_sees_a_missing_key_a_changed_type_an_extra_key_and_a_missing_kind() {
    let golden = golden("tool");
    let mut ours = golden.clone();
    // A missing key inside a content block, a number where Claude has a string, a key only
    // we print, and the user message dropped altogether.
    ours[1]["message"]["content"][0]
        .as_object_mut()
        .unwrap()
        .remove("id");
    ours[4]["session_id"] = serde_json::json!(7);
    ours[4]["reasonix_extra"] = serde_json::json!(true);
    ours.remove(2);
    let found = differences(&golden, &ours, &claude_vocabulary());
    let expected = [
        "assistant:.message.content[tool_use].id: missing",
        "result:.session_id: golden {\"string\"}, ours {\"number\"}",
        "result:.reasonix_extra: only ours has it",
        "user: golden has this message, ours does not",
    ];
    for want in expected {
        assert!(
            found.iter().any(|line| line.starts_with(want)),
            "expected a line starting {want:?} in {found:#?}"
        );
    }
    assert_eq!(found.len(), expected.len(), "{found:#?}");
}

/// Where print mode differs from Claude Code on a script, found by the comparison:
/// `(script, the start of the difference line, why it stays)`. The test requires exactly
/// these, so a fix (or a new difference) fails it until the list is brought up to date.
const KNOWN_DIVERGENCES: &[(&str, &str, &str)] = &[(
    "error",
    "system/api_retry: golden has this message, ours does not",
    "reasonix does not send a refused key (401) again, as no second try can succeed; Claude Code \
     retries it once. Retries that happen are printed as api_retry (the fallback script)",
)];

/// Runs print mode on `script` against the fake model, as `regenerate.sh` runs Claude Code on
/// the same script against the Anthropic fake: the same prompt, `--allowedTools Read`, the same
/// replies in the OpenAI dialect.
fn print_mode(script: &str) -> (i32, Vec<Value>) {
    use crate::util::fake_openai::{FakeOpenAI, Reply};
    use crate::util::{reasonix, run, use_fake_provider, Dir};
    let (replies, prompt) = match script {
        "text" => (vec![Reply::text("Hello from the fake model.")], "Say hello"),
        "tool" => (
            vec![
                Reply::tool_calls(&[("call_1", "read_file", r#"{"path":"hello.txt"}"#)]),
                Reply::text("The file says: golden hello."),
            ],
            "Read hello.txt and tell me what it says",
        ),
        "fallback" => (
            vec![
                Reply::error(529, "Overloaded"),
                Reply::error(529, "Overloaded"),
                Reply::error(529, "Overloaded"),
                Reply::text("Hello from the fake model."),
            ],
            "Say hello",
        ),
        _ => (vec![Reply::error(401, "invalid x-api-key")], "Say hello"),
    };
    let server = FakeOpenAI::start(replies);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let mut flags = vec![];
    if script == "fallback" {
        // As regenerate.sh runs Claude Code: the model retried (quickly here), and a fallback.
        home.write(
            ".reasonix/config.toml",
            &format!(
                "default_model = \"fake\"\n\n[[providers]]\nname = \"fake\"\nbase_url = \"{url}\"\nmodel = \"fake-model\"\napi_key_env = \"FAKE_API_KEY\"\nretry = {{ max_retries = 4, initial_backoff_ms = 1, max_backoff_seconds = 1 }}\n\n[[providers]]\nname = \"backup\"\nbase_url = \"{url}\"\nmodel = \"backup-model\"\napi_key_env = \"FAKE_API_KEY\"\n\n[environment]\nenabled = false\n",
                url = server.base_url()
            ),
        );
        flags = vec!["--fallback-model", "backup"];
    }
    work.write("hello.txt", "golden hello\n");
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args([
            "-p",
            prompt,
            "--output-format",
            "stream-json",
            "--verbose",
            "--allowedTools",
            "Read",
        ])
        .args(flags));
    (out.code, lines(&out.stdout))
}

/// The values that are not "by nature": the exit code, the result's subtype and whether its
/// text is empty, as extra difference lines.
fn value_differences(golden: &[Value], golden_code: i32, ours: &[Value], code: i32) -> Vec<String> {
    let mut problems = Vec::new();
    if golden_code != code {
        problems.push(format!("exit: golden {golden_code}, ours {code}"));
    }
    let result = |messages: &[Value]| messages.last().cloned().unwrap_or_default();
    let (want, have) = (result(golden), result(ours));
    if want["subtype"] != have["subtype"] {
        problems.push(format!(
            "result:.subtype: golden {}, ours {}",
            want["subtype"], have["subtype"]
        ));
    }
    if want["is_error"] != have["is_error"] {
        problems.push(format!(
            "result:.is_error: golden {}, ours {}",
            want["is_error"], have["is_error"]
        ));
    }
    let empty = |v: &Value| v["result"].as_str().is_none_or(str::is_empty);
    if empty(&want) != empty(&have) {
        problems.push(format!(
            "result:.result: golden {}, ours {}",
            if empty(&want) {
                "empty".to_string()
            } else {
                "non-empty".to_string()
            },
            have["result"]
        ));
    }
    problems
}

#[test]
fn print_mode_prints_claude_codes_shapes_for_the_golden_scripts() {
    let known = claude_vocabulary();
    let mut unexpected = Vec::new();
    let mut seen = Vec::new();
    for (name, golden_code) in [("text", 0), ("tool", 0), ("error", 1), ("fallback", 0)] {
        let want = golden(name);
        let (code, ours) = print_mode(name);
        let mut found = value_differences(&want, golden_code, &ours, code);
        found.extend(differences(&want, &ours, &known));
        for line in found {
            match KNOWN_DIVERGENCES
                .iter()
                .position(|(script, start, _)| *script == name && line.starts_with(start))
            {
                Some(index) => seen.push(index),
                None => unexpected.push(format!("{name}: {line}")),
            }
        }
    }
    let fixed: Vec<String> = KNOWN_DIVERGENCES
        .iter()
        .enumerate()
        .filter(|(index, _)| !seen.contains(index))
        .map(|(_, (script, start, _))| format!("{script}: {start}"))
        .collect();
    assert!(
        unexpected.is_empty() && fixed.is_empty(),
        "print mode's shapes differ from Claude Code's goldens in ways not listed:\n{unexpected:#?}\n\
         listed in KNOWN_DIVERGENCES but no longer seen (remove them):\n{fixed:#?}"
    );
}
