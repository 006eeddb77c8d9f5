//! The `stream-json` encoding of the agent's events, one JSON object per event (the schema
//! the README documents): `reasonix run --output-format stream-json` writes it line by line
//! and the browser front end streams it to the page. Encoding only; writing is the front
//! end's.

use serde_json::{json, Value};

use crate::agent::events::{waiting_message, Event, PrefixChange};
use crate::agent::fallback;
use crate::permission::Posture;
use crate::provider::Usage;
use crate::tool::collab::PlanOutcome;

/// Tool output in stream-json events is cut to this many bytes.
const STREAM_TOOL_OUTPUT_LIMIT: usize = 4000;

/// The stream-json encoding of one event (schema documented in the README).
pub fn stream_json(event: &Event) -> Option<Value> {
    Some(match event {
        Event::Init {
            session_id,
            model,
            provider,
            tools,
            cwd,
        } => json!({"type": "init", "session_id": session_id, "model": model,
                     "provider": provider, "tools": tools, "cwd": cwd}),
        Event::TextDelta(text) => json!({"type": "text", "text": text}),
        Event::ReasoningDelta(text) => json!({"type": "reasoning", "text": text}),
        Event::ToolUse {
            id,
            name,
            arguments,
            ..
        } => {
            let input = serde_json::from_str::<Value>(arguments)
                .unwrap_or_else(|_| Value::String(arguments.clone()));
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        Event::ToolResult {
            id,
            name,
            output,
            is_error,
            duration_ms,
        } => {
            let (content, truncated) = truncate(output, STREAM_TOOL_OUTPUT_LIMIT);
            json!({"type": "tool_result", "id": id, "name": name, "content": content,
                   "truncated": truncated, "is_error": is_error, "duration_ms": duration_ms})
        }
        Event::Permission {
            tool,
            subject,
            decision,
            resolution,
            allowed,
            rule,
            posture,
            reason,
        } => {
            let mut value = json!({"type": "permission", "tool": tool, "subject": subject,
                     "decision": decision.as_str(), "resolution": resolution.as_str(),
                     "allowed": allowed, "rule": rule, "posture": posture_name(*posture)});
            // Only Guardian reviews have a reason; other events keep their shape.
            if let Some(reason) = reason {
                value["reason"] = json!(reason);
            }
            value
        }
        Event::ReviewerUsage {
            model,
            usage,
            cost_usd,
        } => json!({
            "type": "usage",
            "role": "reviewer",
            "model": model,
            "usage": usage_json(usage),
            "cache_hit_ratio": usage.cache_hit_ratio(),
            "cost_usd": cost_usd,
            "estimated": usage.estimated,
        }),
        Event::Usage { usage, cost_usd } => json!({
            "type": "usage",
            "usage": usage_json(usage),
            "cache_hit_ratio": usage.cache_hit_ratio(),
            "cost_usd": cost_usd,
            "estimated": usage.estimated,
        }),
        Event::Todo { items } => json!({"type": "todo", "items": items}),
        Event::Subagent {
            parent_tool_use_id,
            task,
            session_path,
            profile,
            read_only,
            ok,
            requests,
            tool_rounds,
            usage,
            cost_usd,
            elapsed_ms,
        } => json!({"type": "subagent", "parent_tool_use_id": parent_tool_use_id,
                     "task": task, "session_path": session_path, "profile": profile,
                     "read_only": read_only, "ok": ok, "num_turns": requests,
                     "tool_rounds": tool_rounds, "usage": usage_json(usage),
                     "cost_usd": cost_usd, "duration_ms": elapsed_ms}),
        Event::Hook {
            event,
            command,
            tool,
            outcome,
            message,
            duration_ms,
        } => json!({"type": "hook", "event": event, "command": command, "tool": tool,
                     "outcome": outcome, "message": message, "duration_ms": duration_ms}),
        Event::SubagentStatus {
            parent_tool_use_id,
            task,
            profile,
            label,
            state,
        } => json!({"type": "subagent_status", "parent_tool_use_id": parent_tool_use_id,
                     "task": task, "profile": profile, "label": label,
                     "state": state.as_str()}),
        // The child's own event, tagged with the call that started it (as Claude Code's
        // stream-json tags a subagent's messages).
        Event::Child {
            parent_tool_use_id,
            task,
            event,
        } => {
            let mut value = stream_json(event)?;
            if let Some(object) = value.as_object_mut() {
                object.insert("parent_tool_use_id".into(), json!(parent_tool_use_id));
                object.insert("task".into(), json!(task));
            }
            value
        }
        Event::PlanMode { planning } => json!({"type": "plan_mode", "planning": planning}),
        Event::Ask(asked) => json!({"type": "ask", "question": asked.question,
            "options": asked.options, "answer": asked.answer,
            "source": if asked.assumption { "assumption" } else { "user" }}),
        Event::Plan { plan, outcome } => {
            let feedback = match outcome {
                PlanOutcome::KeepPlanning(feedback) => Some(feedback),
                _ => None,
            };
            json!({"type": "plan", "plan": plan, "outcome": outcome.as_str(),
                   "feedback": feedback})
        }
        Event::Notice { level, message } => {
            json!({"type": "notice", "level": level.as_str(), "message": message})
        }
        Event::ModelFallback {
            trigger,
            from,
            to,
            reason,
        } => json!({"type": "notice", "level": "warning", "kind": "model_fallback",
            "message": fallback::describe(from, to, reason), "trigger": trigger,
            "from": from, "to": to}),
        Event::Retry(retry) => json!({"type": "notice", "level": "warning", "kind": "retry",
            "message": retry.to_string(), "attempt": retry.attempt,
            "max_attempts": retry.max_attempts, "wait_ms": retry.wait.as_millis() as u64}),
        Event::Waiting {
            silent_ms,
            received,
            idle_limit_ms,
        } => json!({"type": "notice", "level": "info", "kind": "waiting",
            "message": waiting_message(*silent_ms, *received, *idle_limit_ms),
            "silent_ms": silent_ms, "received": received, "idle_limit_ms": idle_limit_ms}),
        Event::Compaction {
            trigger,
            tier,
            before_tokens,
            after_tokens,
            messages_folded,
            results_shortened,
            archive,
        } => json!({"type": "compaction", "trigger": trigger.as_str(), "tier": tier.as_str(),
                     "before_tokens": before_tokens, "after_tokens": after_tokens,
                     "messages_folded": messages_folded,
                     "results_shortened": results_shortened, "archive": archive}),
        Event::CachePrefixChanged {
            reason,
            first_changed,
        } => json!({"type": "notice", "level": "info", "kind": "cache_prefix_changed",
                     "reason": reason.as_str(), "first_changed": first_changed,
                     "message": prefix_changed_message(*reason, *first_changed)}),
    })
}

pub fn prefix_changed_message(reason: PrefixChange, first_changed: usize) -> String {
    format!(
        "cache prefix changed from message {first_changed} ({}); the provider's prompt cache restarts there",
        reason.as_str()
    )
}

/// The posture as the output formats name it; `none` for gates without one.
pub fn posture_name(posture: Option<Posture>) -> &'static str {
    posture.map_or("none", Posture::as_str)
}

pub fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "cache_read_input_tokens": usage.cache_hit_tokens,
        "cache_creation_input_tokens": usage.prompt_tokens.saturating_sub(usage.cache_hit_tokens),
        "reasoning_tokens": usage.reasoning_tokens,
    })
}

fn truncate(text: &str, limit: usize) -> (String, bool) {
    if text.len() <= limit {
        return (text.to_string(), false);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_string(), true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::compaction::Tier;

    #[test]
    fn tool_results_are_truncated_on_a_char_boundary() {
        let long = "é".repeat(STREAM_TOOL_OUTPUT_LIMIT);
        let event = Event::ToolResult {
            id: "c".into(),
            name: "bash".into(),
            output: long,
            is_error: false,
            duration_ms: 3,
        };
        let value = stream_json(&event).unwrap();
        assert_eq!(value["truncated"], true);
        assert_eq!(
            value["content"].as_str().unwrap().len(),
            STREAM_TOOL_OUTPUT_LIMIT
        );
    }

    #[test]
    fn permission_events_encode_every_field() {
        let event = Event::Permission {
            tool: "write_file".into(),
            subject: Some("a.txt".into()),
            decision: crate::permission::Decision::Ask,
            resolution: crate::permission::Resolution::Strict,
            allowed: false,
            rule: None,
            posture: Some(Posture::Strict),
            reason: None,
        };
        let value = stream_json(&event).unwrap();
        assert_eq!(
            value,
            json!({"type": "permission", "tool": "write_file", "subject": "a.txt",
                   "decision": "ask", "resolution": "strict", "allowed": false,
                   "rule": null, "posture": "strict"})
        );
        // A Guardian verdict carries its reason; the reviewer's usage is a usage event with
        // its role and model.
        let event = Event::Permission {
            tool: "mcp__s__send".into(),
            subject: None,
            decision: crate::permission::Decision::Ask,
            resolution: crate::permission::Resolution::Guardian,
            allowed: false,
            rule: Some("approval_mode = prompt".into()),
            posture: Some(Posture::Ask),
            reason: Some("not asked for".into()),
        };
        let value = stream_json(&event).unwrap();
        assert_eq!(value["resolution"], "guardian");
        assert_eq!(value["reason"], "not asked for");
        let event = Event::ReviewerUsage {
            model: "judge".into(),
            usage: Usage {
                prompt_tokens: 7,
                ..Usage::default()
            },
            cost_usd: None,
        };
        let value = stream_json(&event).unwrap();
        assert_eq!(
            (&value["type"], &value["role"], &value["model"]),
            (&json!("usage"), &json!("reviewer"), &json!("judge"))
        );
        assert_eq!(value["usage"]["input_tokens"], 7);
    }

    #[test]
    fn plan_events_encode_the_plan_the_outcome_and_the_feedback() {
        let event = Event::Plan {
            plan: "1. a".into(),
            outcome: PlanOutcome::KeepPlanning("check b".into()),
        };
        assert_eq!(
            stream_json(&event).unwrap(),
            json!({"type": "plan", "plan": "1. a", "outcome": "keep_planning",
                   "feedback": "check b"})
        );
        let event = Event::Plan {
            plan: "1. a".into(),
            outcome: PlanOutcome::ApprovedAcceptEdits,
        };
        let value = stream_json(&event).unwrap();
        assert_eq!(value["outcome"], "approved_accept_edits");
        assert_eq!(value["feedback"], Value::Null);
    }

    #[test]
    fn compaction_and_prefix_notices_encode_every_field() {
        let event = Event::Compaction {
            trigger: crate::agent::compaction::Trigger::Auto,
            tier: Tier::Fold,
            before_tokens: 900,
            after_tokens: 300,
            messages_folded: 12,
            results_shortened: 0,
            archive: Some("/h/archive/x.jsonl".into()),
        };
        assert_eq!(
            stream_json(&event).unwrap(),
            json!({"type": "compaction", "trigger": "auto", "tier": "fold",
                   "before_tokens": 900, "after_tokens": 300, "messages_folded": 12,
                   "results_shortened": 0, "archive": "/h/archive/x.jsonl"})
        );
        let notice = stream_json(&Event::CachePrefixChanged {
            reason: PrefixChange::Compaction(Tier::Snip),
            first_changed: 7,
        })
        .unwrap();
        assert_eq!(notice["type"], "notice");
        assert_eq!(notice["kind"], "cache_prefix_changed");
        assert_eq!(notice["reason"], "snip");
        assert_eq!(notice["first_changed"], 7);
        assert!(notice["message"].as_str().unwrap().contains("message 7"));
    }
}
