//! Headless output: the `text`, `json` and `stream-json` formats and `--print`, all as
//! consumers of the agent's event stream. The final `result` object follows the shape Claude
//! Code uses so existing CI scripts can parse it.
//!
//! When stdout turns out to be a closed pipe, the output goes quiet on both streams (as a CLI
//! killed by SIGPIPE would) and cancels the run it was tied to with
//! [`Output::cancel_on_close`]; the caller exits with [`crate::cli::error::exit::OUTPUT_CLOSED`].

use std::io::{IsTerminal, Write};

use serde_json::{json, Value};

use super::stdout_buffer::StdoutBuffer;
use crate::agent::compaction::Tier;
use crate::agent::coordinator::ModelStats;
use crate::agent::events::{waiting_message, Event, EventSink};
use crate::agent::fallback;
use crate::app::stream_json::{posture_name, prefix_changed_message, stream_json, usage_json};
use crate::cancel::CancelToken;
use crate::provider::Usage;
use crate::term::sanitize::sanitize;
use crate::text::one_line;
use crate::tool::builtin::todo::TodoStatus;
use crate::tool::collab::PlanOutcome;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    StreamJson,
    /// `-p/--print`: only the final answer.
    Print,
}

impl Format {
    pub fn parse(value: &str) -> Option<Format> {
        match value {
            "text" => Some(Format::Text),
            "json" => Some(Format::Json),
            "stream-json" => Some(Format::StreamJson),
            _ => None,
        }
    }
}

pub struct Output {
    format: Format,
    show_thinking: bool,
    /// Whether stdout is a terminal: then model text is sanitized before it is shown.
    stdout_tty: bool,
    stdout_ends_with_newline: bool,
    in_reasoning: bool,
    /// The final report was given (`finish` or `abort`): there is exactly one.
    finished: bool,
    /// Whether the run's `init` line was written: a stream-json consumer reads it first.
    init_written: bool,
    /// Stream-json lines of events that came before `init` (start-up warnings), written
    /// right after it, or before the result if `init` never comes.
    held: Vec<Value>,
    /// Every call the gate refused, in order: the JSON result's `permission_denials`.
    denials: Vec<Value>,
    stdout: StdoutBuffer,
}

impl Output {
    pub fn new(format: Format, show_thinking: bool) -> Output {
        let stdout_tty = std::io::stdout().is_terminal();
        Output {
            format,
            show_thinking,
            stdout_tty,
            stdout_ends_with_newline: true,
            in_reasoning: false,
            finished: false,
            init_written: false,
            held: Vec::new(),
            denials: Vec::new(),
            stdout: StdoutBuffer::new(!stdout_tty),
        }
    }

    fn out(&mut self, text: &str) {
        self.stdout.write(text.as_bytes());
        if !text.is_empty() {
            self.stdout_ends_with_newline = text.ends_with('\n');
        }
    }

    /// One status line on stderr. A partial answer line on stdout is ended first, so the two
    /// streams never run together on a terminal.
    fn err_line(&mut self, line: &str) {
        self.end_reasoning();
        self.finish_stdout_line();
        self.stdout.flush();
        if self.closed() {
            return;
        }
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "{}", sanitize(line));
    }

    fn json_line(&mut self, value: Value) {
        let mut line = value.to_string();
        line.push('\n');
        self.out(&line);
    }

    fn text_event(&mut self, event: Event) {
        match event {
            Event::Init { .. } => {}
            // A subagent's own steps stay out of the text output; its summary line (below)
            // says how it went, and its session holds the rest.
            Event::Child { .. } | Event::SubagentStatus { .. } => {}
            Event::TextDelta(text) => {
                self.end_reasoning();
                let text = if self.stdout_tty {
                    sanitize(&text)
                } else {
                    text
                };
                self.out(&text);
            }
            Event::ReasoningDelta(text) if self.show_thinking && !self.closed() => {
                self.stdout.flush();
                let mut stderr = std::io::stderr().lock();
                if !self.in_reasoning {
                    let _ = write!(stderr, "[thinking] ");
                    self.in_reasoning = true;
                }
                let _ = write!(stderr, "{}", sanitize(&text));
            }
            Event::ReasoningDelta(_) => {}
            Event::Hook {
                event,
                command,
                outcome,
                message,
                ..
            } => {
                // A hook that ran quietly is not worth a line; one that blocked or failed is.
                if outcome != "ok" || message.is_some() {
                    self.end_reasoning();
                    self.finish_stdout_line();
                    let detail = message.map(|m| format!(": {}", one_line(&m, 200)));
                    self.err_line(&format!(
                        "hook {event} `{}` {outcome}{}",
                        one_line(&command, 80),
                        detail.unwrap_or_default()
                    ));
                }
            }
            Event::Subagent {
                session_path,
                ok,
                tool_rounds,
                usage,
                elapsed_ms,
                ..
            } => {
                self.end_reasoning();
                self.finish_stdout_line();
                self.err_line(&format!(
                    "subagent {}: {tool_rounds} tool rounds, {} tokens, {:.1}s ({session_path})",
                    if ok { "done" } else { "stopped" },
                    usage.prompt_tokens + usage.completion_tokens,
                    elapsed_ms as f64 / 1000.0
                ));
            }
            Event::Todo { items } => {
                let done = items
                    .iter()
                    .filter(|i| i.status == TodoStatus::Completed)
                    .count();
                self.err_line(&format!("todo: {done} of {} done", items.len()));
                for item in &items {
                    let indent = if item.level > 0 { "    " } else { "  " };
                    self.err_line(&format!("{indent}{} {}", item.status.mark(), item.content));
                }
            }
            Event::Ask(asked) => {
                let question = one_line(&asked.question, 120);
                let line = match (&asked.answer, asked.assumption) {
                    (_, true) => format!(
                        "ask: no user to answer \"{question}\"; the model assumes and says what"
                    ),
                    (Some(answer), false) => {
                        format!(
                            "ask: \"{question}\" answered by the user: {}",
                            one_line(answer, 120)
                        )
                    }
                    (None, false) => format!("ask: the user dismissed \"{question}\""),
                };
                self.err_line(&line);
            }
            Event::PlanMode { planning } => {
                let line = if planning {
                    "plan mode: on (research, then propose a plan; MCP writers are blocked)"
                } else {
                    "plan mode: off"
                };
                self.err_line(line);
            }
            Event::Plan { plan, outcome } => self.text_plan(&plan, &outcome),
            Event::ToolUse {
                name, arguments, ..
            } => {
                self.end_reasoning();
                self.finish_stdout_line();
                self.err_line(&format!("> {name} {}", one_line(&arguments, 160)));
            }
            Event::ToolResult {
                name,
                output,
                is_error,
                duration_ms,
                ..
            } => {
                let mark = if is_error { "failed" } else { "ok" };
                let lines = output.lines().count();
                self.err_line(&format!(
                    "  {name} {mark} in {duration_ms} ms, {lines} lines: {}",
                    one_line(&output, 120)
                ));
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
                let verb = if allowed { "allowed" } else { "blocked" };
                let mut line = format!("permission: {verb} {tool}");
                if let Some(subject) = subject {
                    line.push_str(&format!(" {}", one_line(&subject, 120)));
                }
                line.push_str(&format!(
                    " ({} resolved by {}",
                    decision.as_str(),
                    resolution.as_str()
                ));
                if let Some(rule) = rule {
                    line.push_str(&format!(", rule `{rule}`"));
                }
                line.push_str(&format!(", posture {})", posture_name(posture)));
                if let Some(reason) = reason {
                    line.push_str(&format!(": {}", one_line(&reason, 300)));
                }
                self.err_line(&line);
            }
            Event::ReviewerUsage {
                model,
                usage,
                cost_usd,
            } => {
                let mut line = format!(
                    "usage (reviewer {model}): {} in ({} cached), {} out",
                    usage.prompt_tokens, usage.cache_hit_tokens, usage.completion_tokens
                );
                if let Some(cost) = cost_usd {
                    line.push_str(&format!(", ${cost:.4}"));
                }
                self.err_line(&line);
            }
            Event::Usage { usage, cost_usd } => {
                let mut line = format!(
                    "usage: {} in ({} cached{}), {} out",
                    usage.prompt_tokens,
                    usage.cache_hit_tokens,
                    percent(usage.cache_hit_ratio()),
                    usage.completion_tokens
                );
                if usage.reasoning_tokens > 0 {
                    line.push_str(&format!(", {} reasoning", usage.reasoning_tokens));
                }
                if let Some(cost) = cost_usd {
                    line.push_str(&format!(", ${cost:.4}"));
                }
                if usage.estimated {
                    line.push_str(" (estimated)");
                }
                self.err_line(&line);
            }
            Event::Notice { level, message } => {
                self.err_line(&format!("{}: {message}", level.as_str()));
            }
            Event::Retry(retry) => self.err_line(&format!("warning: {retry}")),
            Event::ModelFallback {
                from, to, reason, ..
            } => self.err_line(&format!(
                "warning: {}",
                fallback::describe(&from, &to, &reason)
            )),
            Event::Waiting {
                silent_ms,
                received,
                idle_limit_ms,
            } => self.err_line(&waiting_message(silent_ms, received, idle_limit_ms)),
            Event::Compaction {
                trigger,
                tier,
                before_tokens,
                after_tokens,
                messages_folded,
                results_shortened,
                ..
            } => {
                let what = match tier {
                    Tier::Fold => format!("folded {messages_folded} messages into a digest"),
                    Tier::Snip => format!("snipped {results_shortened} stale tool results"),
                    Tier::Prune => format!("pruned {results_shortened} stale tool results"),
                };
                self.err_line(&format!(
                    "context: {what} ({before_tokens} -> {after_tokens} tokens, {})",
                    trigger.as_str()
                ));
            }
            Event::CachePrefixChanged {
                reason,
                first_changed,
            } => {
                self.err_line(&format!(
                    "context: {}",
                    prefix_changed_message(reason, first_changed)
                ));
            }
        }
    }

    /// A proposed plan is the run's answer, so it goes to stdout; a review is a status line.
    fn text_plan(&mut self, plan: &str, outcome: &PlanOutcome) {
        match outcome {
            PlanOutcome::Proposed => {
                self.err_line("plan proposed (no one can review it in this run):");
                let plan = if self.stdout_tty {
                    sanitize(plan)
                } else {
                    plan.to_string()
                };
                self.out(&plan);
                self.finish_stdout_line();
            }
            PlanOutcome::KeepPlanning(feedback) => self.err_line(&format!(
                "plan: sent back for more planning: {}",
                one_line(feedback, 160)
            )),
            other => self.err_line(&format!("plan: {}", other.as_str().replace('_', " "))),
        }
    }

    fn end_reasoning(&mut self) {
        if self.in_reasoning {
            self.in_reasoning = false;
            if self.closed() {
                return;
            }
            let _ = writeln!(std::io::stderr());
        }
    }

    /// Ends a partial answer line on stdout, if there is one.
    pub fn finish_stdout_line(&mut self) {
        if !self.stdout_ends_with_newline {
            self.out("\n");
        }
    }

    /// Whether the final report has been given.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Whether stdout is a pipe whose reader went away. Nothing more is printed then.
    pub fn closed(&self) -> bool {
        self.stdout.broken()
    }

    /// Cancels the run behind `token` when stdout turns out to be a closed pipe (also when it
    /// already has).
    pub fn cancel_on_close(&self, token: CancelToken) {
        self.stdout.cancel_on_close(token);
    }

    /// The report of a run that failed before it could finish: the JSON formats still end
    /// with their `result` object; in text and `--print` the CLI's one-line error is the
    /// whole report.
    pub fn abort(&mut self, result: &RunResult) {
        self.finished = true;
        self.end_reasoning();
        self.write_held();
        if matches!(self.format, Format::Json | Format::StreamJson) {
            let value = self.with_denials(result.to_json());
            self.json_line(value);
        }
        self.stdout.flush();
    }

    /// The result object with the refused calls of the run (`permission_denials`).
    fn with_denials(&self, mut result: Value) -> Value {
        result["permission_denials"] = Value::Array(self.denials.clone());
        result
    }

    /// Called once at the end with the result object.
    pub fn finish(&mut self, result: &RunResult) {
        self.finished = true;
        match self.format {
            Format::Text => {
                self.end_reasoning();
                self.finish_stdout_line();
                // An error line (a limit reached included) is printed by the CLI's error path.
                let usage = &result.usage;
                let mut line = format!(
                    "session: {} requests, {} in ({} cached{}), {} out",
                    result.num_turns,
                    usage.prompt_tokens,
                    usage.cache_hit_tokens,
                    percent(usage.cache_hit_ratio()),
                    usage.completion_tokens
                );
                if let Some(cost) = result.total_cost_usd {
                    line.push_str(&format!(", ${cost:.4}"));
                }
                self.err_line(&line);
                // A planner and an executor: each one's share on its own line.
                for model in self.models_shown(result) {
                    self.err_line(&model);
                }
            }
            Format::Print => {
                if !result.is_error || !result.result.is_empty() {
                    let mut text = result.result.clone();
                    if !text.ends_with('\n') {
                        text.push('\n');
                    }
                    self.out(&text);
                }
            }
            Format::Json | Format::StreamJson => {
                self.write_held();
                let value = self.with_denials(result.to_json());
                self.json_line(value);
            }
        }
        self.stdout.flush();
    }

    /// One stream-json event: `init` first, whatever came before it right after.
    fn stream_json_event(&mut self, event: &Event) {
        let Some(value) = stream_json(event) else {
            return;
        };
        if matches!(event, Event::Init { .. }) {
            self.json_line(value);
            self.init_written = true;
            self.write_held();
        } else if self.init_written {
            self.json_line(value);
        } else {
            self.held.push(value);
        }
    }

    /// Writes the held pre-`init` lines (a run that failed before `init` still reports them).
    fn write_held(&mut self) {
        for value in std::mem::take(&mut self.held) {
            self.json_line(value);
        }
    }
}

impl Output {
    /// "  planner deepseek-pro: 2 requests, 3100 in (2900 cached, 94%), 120 out" per model,
    /// when there is more than one.
    fn models_shown(&self, result: &RunResult) -> Vec<String> {
        if result.models.len() < 2 {
            return Vec::new();
        }
        result
            .models
            .iter()
            .map(|m| {
                format!(
                    "  {} {}: {} requests, {} in ({} cached{}), {} out",
                    m.role,
                    sanitize(&m.model),
                    m.requests,
                    m.usage.prompt_tokens,
                    m.usage.cache_hit_tokens,
                    percent(m.usage.cache_hit_ratio()),
                    m.usage.completion_tokens
                )
            })
            .collect()
    }
}

/// What a headless front end needs of its output besides the events: the one final report
/// (`finish`, or `abort` when the run never finished) and whether stdout closed. [`Output`]
/// is `reasonix run`'s; Claude print mode has its own (`claude::stream`).
pub trait Report: EventSink {
    /// Cancels the run behind `token` when stdout turns out to be a closed pipe.
    fn cancel_on_close(&self, token: CancelToken);
    fn closed(&self) -> bool;
    fn finished(&self) -> bool;
    fn finish(&mut self, result: &RunResult);
    fn abort(&mut self, result: &RunResult);
    /// What the opened session offers besides its tools, before its `Init` event (print
    /// mode's `system/init` lists it); other reports show nothing of it.
    fn catalog(&mut self, _catalog: &crate::claude::init_catalog::InitCatalog) {}
    /// The session's model changed between turns (the Agent SDK's `set_model`): print mode's
    /// messages name the new one from then on; other reports show nothing of it.
    fn model_changed(&mut self, _model: &str) {}
}

impl Report for Output {
    fn cancel_on_close(&self, token: CancelToken) {
        Output::cancel_on_close(self, token)
    }

    fn closed(&self) -> bool {
        Output::closed(self)
    }

    fn finished(&self) -> bool {
        Output::finished(self)
    }

    fn finish(&mut self, result: &RunResult) {
        Output::finish(self, result)
    }

    fn abort(&mut self, result: &RunResult) {
        Output::abort(self, result)
    }
}

impl EventSink for Output {
    fn emit(&mut self, event: Event) {
        // Deltas stay in the buffer (see `stdout_buffer`); every other event is a boundary a
        // reader of the stream should see at once.
        let boundary = !matches!(event, Event::TextDelta(_) | Event::ReasoningDelta(_));
        if let Event::Permission {
            tool,
            subject,
            resolution,
            rule,
            allowed: false,
            reason,
            ..
        } = &event
        {
            let mut denial = json!({
                "tool": tool,
                "subject": subject,
                "resolution": resolution.as_str(),
                "rule": rule,
            });
            // A Guardian refusal says why, as its permission event does.
            if let Some(reason) = reason {
                denial["reason"] = json!(reason);
            }
            self.denials.push(denial);
        }
        match self.format {
            Format::Text => self.text_event(event),
            Format::StreamJson => self.stream_json_event(&event),
            Format::Json | Format::Print => {}
        }
        if boundary {
            self.stdout.flush();
        }
    }
}

/// Claude Code's `stop_reason` for an OpenAI `finish_reason`; another reason passes as is.
fn stop_reason(finish_reason: &str) -> &str {
    match finish_reason {
        "stop" => "end_turn",
        "length" => "max_tokens",
        "tool_calls" | "function_call" => "tool_use",
        "content_filter" => "refusal",
        other => other,
    }
}

/// ", 83%" for a ratio, nothing without one.
fn percent(ratio: Option<f64>) -> String {
    ratio.map_or(String::new(), |r| format!(", {:.0}%", r * 100.0))
}

/// The final object of `json` and `stream-json`.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// "success", "error_max_turns", "error_during_execution" or "error_interrupted".
    pub subtype: &'static str,
    pub is_error: bool,
    pub duration_ms: u64,
    pub num_turns: u32,
    pub result: String,
    pub error: Option<String>,
    /// `None` (null in JSON) when the run failed before a session was opened.
    pub session_id: Option<String>,
    /// `None` (null in JSON) when the model has no prices configured: unknown, not free.
    pub total_cost_usd: Option<f64>,
    pub usage: Usage,
    /// Goal mode's report (`--goal`): the objective, how it ended, what was verified.
    pub goal: Option<Value>,
    /// Each model's share (a planner and an executor, or the one agent); subagents count in
    /// the totals only.
    pub models: Vec<ModelStats>,
    /// The provider's `finish_reason` for the run's last reply, when the run ended with one;
    /// reported as Claude Code's `stop_reason`.
    pub finish_reason: Option<String>,
    /// The run ended on the model server's error (Claude print mode reports it as Claude
    /// Code does an API error); not part of `run`'s JSON.
    pub api_error: bool,
}

impl RunResult {
    /// The result of a run that failed before its first request: no session, no usage.
    pub fn before_start(error: String, duration_ms: u64) -> RunResult {
        RunResult {
            subtype: "error_during_execution",
            is_error: true,
            duration_ms,
            num_turns: 0,
            result: String::new(),
            error: Some(error),
            session_id: None,
            total_cost_usd: None,
            usage: Usage::default(),
            goal: None,
            models: Vec::new(),
            finish_reason: None,
            api_error: false,
        }
    }

    /// `{"MODEL": {"role", "requests", "usage", "cost_usd", "cache_hit_ratio"}}`; a cost is
    /// null when the run's cost is unknown. Roles sharing a model (the agent and a Guardian
    /// reviewer on the same model) are one entry with their figures added up and their roles
    /// joined by `+`.
    fn models_json(&self) -> Value {
        let mut merged: Vec<(String, ModelStats)> = Vec::new();
        for model in &self.models {
            match merged.iter_mut().find(|(_, m)| m.model == model.model) {
                Some((roles, shared)) => {
                    roles.push('+');
                    roles.push_str(model.role);
                    shared.requests = shared.requests.saturating_add(model.requests);
                    shared.usage.add(&model.usage);
                    shared.cost_usd += model.cost_usd;
                }
                None => merged.push((model.role.to_string(), model.clone())),
            }
        }
        let mut models = serde_json::Map::new();
        for (roles, model) in merged {
            models.insert(
                model.model.clone(),
                json!({
                    "role": roles,
                    "requests": model.requests,
                    "usage": usage_json(&model.usage),
                    "cost_usd": self.total_cost_usd.map(|_| model.cost_usd),
                    "cache_hit_ratio": model.usage.cache_hit_ratio(),
                }),
            );
        }
        Value::Object(models)
    }

    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "type": "result",
            "subtype": self.subtype,
            "is_error": self.is_error,
            "duration_ms": self.duration_ms,
            "num_turns": self.num_turns,
            "result": self.result,
            "session_id": self.session_id,
            "total_cost_usd": self.total_cost_usd,
            "usage": usage_json(&self.usage),
            "cache_hit_ratio": self.usage.cache_hit_ratio(),
            "models": self.models_json(),
            "stop_reason": self.finish_reason.as_deref().map(stop_reason),
        });
        if let Some(error) = &self.error {
            value["error"] = Value::String(error.clone());
        }
        if let Some(goal) = &self.goal {
            value["goal"] = goal.clone();
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_object_has_the_documented_fields() {
        let result = RunResult {
            subtype: "success",
            is_error: false,
            duration_ms: 5,
            num_turns: 2,
            result: "done".into(),
            error: None,
            session_id: Some("s".into()),
            total_cost_usd: Some(0.5),
            usage: Usage {
                prompt_tokens: 100,
                cache_hit_tokens: 80,
                completion_tokens: 7,
                ..Usage::default()
            },
            goal: None,
            models: Vec::new(),
            finish_reason: Some("length".into()),
            api_error: false,
        };
        let v = result.to_json();
        assert_eq!(v["stop_reason"], "max_tokens");
        for key in [
            "type",
            "subtype",
            "is_error",
            "duration_ms",
            "num_turns",
            "result",
            "session_id",
            "total_cost_usd",
            "usage",
            "cache_hit_ratio",
        ] {
            assert!(v.get(key).is_some(), "missing {key}: {v}");
        }
        assert_eq!(v["usage"]["cache_read_input_tokens"], 80);
        assert_eq!(v["usage"]["cache_creation_input_tokens"], 20);
        assert_eq!(v["cache_hit_ratio"], 0.8);
        assert!(v.get("goal").is_none(), "only a goal run has one: {v}");
    }
}
