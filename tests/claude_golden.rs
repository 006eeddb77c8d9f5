//! Golden shapes: what the real Claude Code CLI prints with `-p --output-format stream-json
//! --verbose` (captured in `tests/claude_golden/*.jsonl` by `regenerate.sh` against the
//! Anthropic fake beside it) against what reasonix's print mode prints for the same script.
//!
//! Values differ by nature (ids, timings, costs, model names, the tool list), so the check is on
//! shapes: every message kind (`type`, plus `subtype` for `system` and `result`) the golden has,
//! and within each kind every key path with its JSON type. Arrays of typed objects (content
//! blocks) are keyed by the block's `type`; maps keyed by a model name are read as `*`. What
//! Claude prints and reasonix deliberately does not is in [`ABSENT`], each with its reason; what
//! only reasonix prints is in [`OURS_ONLY`]. Both lists are in `tests/claude_golden/README.md`.

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
    ("system/init:.agents", "Claude's built-in agent names"),
    ("system/init:.skills", "Claude's skill list (ours are in the system prompt's index)"),
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
    ("system/api_retry", "retries are internal to reasonix's provider; the final error is the result"),
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

/// Key paths only reasonix prints, with the reason (the SDKs ignore keys they do not know).
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

/// `type`, with `subtype` for the kinds that have one.
pub fn kind(message: &Value) -> String {
    let kind = message["type"].as_str().unwrap_or("?");
    match message["subtype"].as_str() {
        Some(sub) if kind == "system" || kind == "result" => format!("{kind}/{sub}"),
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

/// Whether an entry's kind names `kind`: itself, or every subtype of it (`result` covers
/// `result/success` and the error subtypes).
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
/// top level and a string inside a subagent); any other golden type must be among ours.
pub fn differences(golden: &[Value], ours: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    let first = |messages: &[Value]| messages.first().map(kind);
    let last = |messages: &[Value]| {
        messages
            .last()
            .map(kind)
            .map(|k| k.split('/').next().unwrap_or("").to_string())
    };
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
            let known = want.get(kind).is_some_and(|p| p.contains_key(path));
            if !known && !listed(OURS_ONLY, kind, path) {
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

const GOLDENS: [&str; 3] = ["text", "tool", "error"];

#[test]
fn goldens_hold_the_three_scripts() {
    let kinds = |name: &str| golden(name).iter().map(kind).collect::<Vec<_>>();
    assert_eq!(
        kinds("text"),
        ["system/init", "assistant", "result/success"]
    );
    assert_eq!(
        kinds("tool"),
        [
            "system/init",
            "assistant",
            "user",
            "assistant",
            "result/success"
        ]
    );
    assert_eq!(
        kinds("error"),
        [
            "system/init",
            "system/api_retry",
            "assistant",
            "result/success"
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
        assert_eq!(differences(&lines, &lines), Vec::<String>::new(), "{name}");
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
    let found = differences(&golden, &ours);
    let expected = [
        "assistant:.message.content[tool_use].id: missing",
        "result/success:.session_id: golden {\"string\"}, ours {\"number\"}",
        "result/success:.reasonix_extra: only ours has it",
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
