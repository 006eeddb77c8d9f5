//! Print mode's output: the agent's events turned into Claude Code's messages
//! (`--output-format stream-json`), or only its `result` (`json`) or final text (`text`).
//! Tool calls are shown in Claude Code's vocabulary; refused calls are collected for the
//! result's `permission_denials`. Encoding is `claude::encode`'s; this file decides what is
//! written when.

use std::collections::HashMap;
use std::io::Write;
use std::time::Instant;

use serde_json::Value;

use super::encode::{self, InitInfo, Origin, ResultInfo};
use super::init_catalog::{self, InitCatalog};
use crate::agent::compaction::{Tier, Trigger};
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::cancel::CancelToken;
use crate::cli::output::{Format, Report, RunResult};
use crate::cli::stdout_buffer::StdoutBuffer;
use crate::provider::Usage;
use crate::term::sanitize::sanitize;
use crate::tool::claude_vocabulary;

/// How print mode writes: the format and what `stream-json` includes.
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// `Text`, `Json` or `StreamJson` (`Print` is treated as `Text`).
    pub format: Option<Format>,
    pub partial_messages: bool,
    pub hook_events: bool,
    pub permission_mode: &'static str,
    /// `--json-schema`: the final answer is parsed as JSON into `structured_output`.
    pub json_schema: bool,
    pub verbose: bool,
}

/// The reply being streamed by one agent (the top level, or a subagent by its call).
#[derive(Debug, Default)]
struct Reply {
    message_id: String,
    text: String,
    thinking: String,
    /// The partial stream's `message_start` of this message was written.
    started: bool,
    /// The open content block of the partial stream: its index and whether it is thinking.
    open: Option<(usize, bool)>,
    next_index: usize,
    /// The usage of the last finished request, attached to its tool_use blocks.
    usage: Usage,
    /// The request finished: the message ends (`message_delta`, `message_stop` in the partial
    /// stream) once its tool_use blocks, which the agent reports after the request, are shown.
    ending: bool,
}

pub struct ClaudeStream {
    options: StreamOptions,
    stdout: StdoutBuffer,
    finished: bool,
    session_id: String,
    model: String,
    /// The fallback model this turn switched to (`--fallback-model`), until its result.
    turn_model: Option<String>,
    /// The reply in progress per agent: `None` is the top level.
    replies: HashMap<Option<String>, Reply>,
    /// Calls shown but not yet answered, for `permission_denials`: id, Claude name, input.
    pending: Vec<(String, String, Value)>,
    denials: Vec<Value>,
    /// When the current request started, for `duration_api_ms`.
    request_started: Instant,
    api_ms: u64,
    /// A `context_window` for `modelUsage`, from nothing better than the config's default.
    context_window: u64,
    /// What `init` lists besides the tools, once the session is open.
    catalog: InitCatalog,
}

impl ClaudeStream {
    pub fn new(options: StreamOptions) -> ClaudeStream {
        let tty = std::io::IsTerminal::is_terminal(&std::io::stdout());
        ClaudeStream {
            options,
            stdout: StdoutBuffer::new(!tty),
            finished: false,
            session_id: String::new(),
            model: String::new(),
            turn_model: None,
            replies: HashMap::new(),
            pending: Vec::new(),
            denials: Vec::new(),
            request_started: Instant::now(),
            api_ms: 0,
            context_window: 0,
            catalog: InitCatalog {
                api_key_source: init_catalog::NO_KEY,
                ..InitCatalog::default()
            },
        }
    }

    fn streaming(&self) -> bool {
        self.options.format == Some(Format::StreamJson)
    }

    fn line(&mut self, value: &Value) {
        let mut line = value.to_string();
        line.push('\n');
        self.stdout.write(line.as_bytes());
    }

    fn stderr(&mut self, text: &str) {
        self.stdout.flush();
        if self.closed() {
            return;
        }
        let _ = writeln!(std::io::stderr().lock(), "reasonix: {}", sanitize(text));
    }

    fn reply(&mut self, parent: &Option<String>) -> &mut Reply {
        self.replies.entry(parent.clone()).or_default()
    }

    /// One event of the agent (`parent`: the `task` call a subagent's event came through).
    fn event(&mut self, event: Event, parent: Option<String>) {
        match event {
            Event::Init {
                session_id,
                model,
                tools,
                cwd,
                ..
            } => self.init(session_id, model, tools, cwd),
            Event::TextDelta(text) => self.delta(&parent, &text, false),
            Event::ReasoningDelta(text) => self.delta(&parent, &text, true),
            Event::Usage { usage, .. } => self.reply_done(&parent, usage),
            Event::ToolUse {
                id,
                name,
                arguments,
                ..
            } => self.tool_use(&parent, id, &name, &arguments),
            Event::ToolResult {
                id,
                output,
                is_error,
                ..
            } => self.tool_result(&parent, &id, &output, is_error),
            Event::Permission {
                tool,
                allowed: false,
                ..
            } => self.denied(&tool),
            Event::Child {
                parent_tool_use_id,
                event,
                ..
            } => self.event(*event, Some(parent_tool_use_id)),
            Event::Compaction {
                trigger,
                tier: Tier::Fold,
                before_tokens,
                after_tokens,
                ..
            } if self.streaming() => {
                let value = encode::compact_boundary(
                    &self.session_id,
                    trigger == Trigger::Manual,
                    before_tokens,
                    after_tokens,
                );
                self.line(&value);
            }
            Event::Hook {
                event,
                command,
                outcome,
                message,
                ..
            } if self.streaming() && self.options.hook_events => {
                let value = encode::hook_response(
                    &self.session_id,
                    event,
                    &command,
                    outcome,
                    message.as_deref(),
                );
                self.line(&value);
            }
            Event::Notice {
                level: NoticeLevel::Warning,
                message,
            } => self.stderr(&format!("warning: {message}")),
            Event::Retry(retry) => {
                self.stderr(&format!("warning: {retry}"));
                if self.streaming() {
                    let value = encode::api_retry(&self.session_id, &retry);
                    self.line(&value);
                }
            }
            Event::ModelFallback {
                trigger,
                from,
                to,
                reason,
            } => {
                let warning = crate::agent::fallback::describe(&from, &to, &reason);
                self.stderr(&format!("warning: {warning}"));
                if self.streaming() {
                    let content =
                        crate::agent::fallback::claude_content(trigger, &from, &to, &reason);
                    let value =
                        encode::model_fallback(&self.session_id, trigger, &from, &to, &content);
                    self.line(&value);
                }
                if parent.is_none() {
                    self.turn_model = Some(to);
                }
            }
            Event::Notice { message, .. } if self.options.verbose => {
                self.stderr(&message);
            }
            _ => {}
        }
    }

    fn init(&mut self, session_id: String, model: String, tools: Vec<String>, cwd: String) {
        self.session_id = session_id;
        self.model = model;
        self.request_started = Instant::now();
        if !self.streaming() {
            return;
        }
        let mut servers: Vec<String> = tools
            .iter()
            .filter_map(|t| t.strip_prefix("mcp__"))
            .filter_map(|rest| rest.split("__").next())
            .map(str::to_string)
            .collect();
        servers.dedup();
        let info = InitInfo {
            session_id: self.session_id.clone(),
            cwd,
            model: self.model.clone(),
            tools: tools
                .iter()
                .map(|t| claude_vocabulary::claude_name(t).to_string())
                .collect(),
            mcp_servers: servers,
            permission_mode: self.options.permission_mode,
            slash_commands: self.catalog.slash_commands.clone(),
            skills: self.catalog.skills.clone(),
            agents: self.catalog.agents.clone(),
            api_key_source: self.catalog.api_key_source,
        };
        let value = encode::init(&info);
        self.line(&value);
    }

    fn origin<'a>(&'a self, parent: &'a Option<String>) -> Origin<'a> {
        Origin {
            session_id: &self.session_id,
            parent_tool_use_id: parent.as_deref(),
        }
    }

    fn partial(&self) -> bool {
        self.streaming() && self.options.partial_messages
    }

    /// Ends `parent`'s message if its request finished: the partial stream's closing events.
    fn end_message(&mut self, parent: &Option<String>) {
        let partial = self.partial();
        let reply = self.reply(parent);
        if !reply.ending {
            return;
        }
        let usage = reply.usage;
        let started = reply.started;
        *reply = Reply::default();
        if partial && started {
            let origin = self.origin(parent);
            let lines = [
                encode::stream_event(origin, encode::message_delta(&usage)),
                encode::stream_event(origin, encode::message_stop()),
            ];
            for line in lines {
                self.line(&line);
            }
        }
    }

    /// Starts `parent`'s message if none is under way: its id, and the partial stream's
    /// `message_start` (returned, to be written first).
    fn begin_message(&mut self, parent: &Option<String>) -> Vec<Value> {
        self.end_message(parent);
        let partial = self.partial();
        let model = self.message_model();
        let reply = self.reply(parent);
        if reply.message_id.is_empty() {
            reply.message_id = encode::message_id();
        }
        if partial && !reply.started {
            reply.started = true;
            return vec![encode::message_start(&reply.message_id, &model)];
        }
        Vec::new()
    }

    fn delta(&mut self, parent: &Option<String>, text: &str, thinking: bool) {
        let partial = self.partial();
        let mut events = self.begin_message(parent);
        let reply = self.reply(parent);
        if thinking {
            reply.thinking.push_str(text);
        } else {
            reply.text.push_str(text);
        }
        if partial {
            if reply
                .open
                .is_some_and(|(_, open_thinking)| open_thinking != thinking)
            {
                if let Some((index, _)) = reply.open.take() {
                    events.push(encode::content_block_stop(index));
                }
            }
            let index = match reply.open {
                Some((index, _)) => index,
                None => {
                    let index = reply.next_index;
                    reply.next_index += 1;
                    reply.open = Some((index, thinking));
                    events.push(encode::content_block_start(index, thinking));
                    index
                }
            };
            events.push(encode::content_block_delta(index, thinking, text));
        }
        for event in events {
            let value = encode::stream_event(self.origin(parent), event);
            self.line(&value);
        }
    }

    /// A request finished: its thinking and text become `assistant` messages.
    fn reply_done(&mut self, parent: &Option<String>, usage: Usage) {
        if parent.is_none() {
            self.api_ms = self
                .api_ms
                .saturating_add(self.request_started.elapsed().as_millis() as u64);
        }
        let model = self.message_model();
        let started: Vec<Value> = self.begin_message(parent);
        let reply = self.reply(parent);
        reply.usage = usage;
        reply.ending = true;
        let thinking = std::mem::take(&mut reply.thinking);
        let text = std::mem::take(&mut reply.text);
        let open = reply.open.take();
        let message_id = reply.message_id.clone();
        let origin = self.origin(parent);
        let mut lines: Vec<Value> = started
            .into_iter()
            .map(|event| encode::stream_event(origin, event))
            .collect();
        if let Some((index, _)) = open {
            lines.push(encode::stream_event(
                origin,
                encode::content_block_stop(index),
            ));
        }
        if self.streaming() {
            let origin = self.origin(parent);
            let assistant = |block| encode::assistant(origin, &message_id, &model, block, &usage);
            if !thinking.is_empty() {
                lines.push(assistant(encode::thinking_block(&thinking)));
            }
            if !text.is_empty() {
                lines.push(assistant(encode::text_block(&text)));
            }
        }
        for line in lines {
            self.line(&line);
        }
    }

    fn tool_use(&mut self, parent: &Option<String>, id: String, name: &str, arguments: &str) {
        let args: Value =
            serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.into()));
        let (claude_name, input) = claude_vocabulary::to_claude(name, &args);
        self.pending
            .push((id.clone(), claude_name.clone(), input.clone()));
        if !self.streaming() {
            return;
        }
        let model = self.message_model();
        let partial = self.partial();
        let reply = self.reply(parent);
        let mut events = Vec::new();
        if reply.message_id.is_empty() {
            // A call reported without its request's end (not expected): a message of its own.
            reply.message_id = encode::message_id();
            reply.ending = true;
            if partial {
                reply.started = true;
                events.push(encode::message_start(&reply.message_id, &model));
            }
        }
        if partial {
            let index = reply.next_index;
            reply.next_index += 1;
            events.extend(encode::tool_use_events(index, &id, &claude_name, &input));
        }
        let (message_id, usage) = (reply.message_id.clone(), reply.usage);
        let origin = self.origin(parent);
        let mut lines: Vec<Value> = events
            .into_iter()
            .map(|event| encode::stream_event(origin, event))
            .collect();
        let block = encode::tool_use_block(&id, &claude_name, &input);
        lines.push(encode::assistant(
            origin,
            &message_id,
            &model,
            block,
            &usage,
        ));
        for line in lines {
            self.line(&line);
        }
    }

    /// The gate refused a call of `tool` (our name): the oldest unanswered call of it.
    fn denied(&mut self, tool: &str) {
        let shown = claude_vocabulary::claude_name(tool);
        if let Some((id, name, input)) = self.pending.iter().find(|(_, name, _)| name == shown) {
            self.denials
                .push(encode::permission_denial(name, id, input));
        }
    }

    fn tool_result(&mut self, parent: &Option<String>, id: &str, output: &str, is_error: bool) {
        self.pending.retain(|(pending, _, _)| pending != id);
        // The calls are answered: their message ends, and the next request starts a new one.
        self.end_message(parent);
        self.reply(parent).message_id.clear();
        if parent.is_none() {
            self.request_started = Instant::now();
        }
        if self.streaming() {
            let value = encode::tool_result(self.origin(parent), id, output, is_error);
            self.line(&value);
        }
    }

    fn result_info(&self, result: &RunResult) -> ResultInfo {
        let (subtype, mut errors) = match result.subtype {
            "success" | "plan" => ("success", Vec::new()),
            "error_max_turns" | "error_max_budget_usd" => (result.subtype, Vec::new()),
            // Claude Code reports the model server's error as a `success` that is an error.
            _ if result.api_error => ("success", Vec::new()),
            _ => ("error_during_execution", Vec::new()),
        };
        errors.extend(result.error.clone());
        let text = match (&result.error, result.api_error) {
            (Some(error), true) => error.clone(),
            _ => result.result.clone(),
        };
        let mut info = ResultInfo {
            subtype,
            is_error: result.is_error,
            duration_ms: result.duration_ms,
            duration_api_ms: self.api_ms.min(result.duration_ms),
            num_turns: result.num_turns,
            result: text,
            session_id: result
                .session_id
                .clone()
                .unwrap_or_else(|| self.session_id.clone()),
            total_cost_usd: result.total_cost_usd.unwrap_or(0.0),
            usage: result.usage,
            model_usage: encode::model_usage(&result.models, self.context_window),
            permission_denials: self.denials.clone(),
            stop_reason: result
                .finish_reason
                .as_deref()
                .map(|r| encode::stop_reason(r).to_string()),
            errors,
            structured_output: None,
            api_error: result.api_error,
        };
        if self.options.json_schema && !result.is_error {
            match parse_structured(&result.result) {
                Some(value) => info.structured_output = Some(value),
                None => {
                    info.subtype = "error_max_structured_output_retries";
                    info.is_error = true;
                    info.errors
                        .push("the final answer is not JSON matching --json-schema".into());
                }
            }
        }
        info
    }

    /// The model the top level's messages name: the fallback's while a turn runs on it.
    fn message_model(&self) -> String {
        self.turn_model
            .clone()
            .unwrap_or_else(|| self.model.clone())
    }

    fn report(&mut self, result: &RunResult) {
        self.finished = true;
        let parents: Vec<Option<String>> = self.replies.keys().cloned().collect();
        for parent in parents {
            self.end_message(&parent);
        }
        let info = self.result_info(result);
        if info.api_error && self.streaming() {
            // As Claude Code: the error is also the text of a synthetic assistant message.
            let origin = self.origin(&None);
            let block = encode::text_block(&info.result);
            let id = encode::uuid();
            let mut value = encode::assistant(origin, &id, "<synthetic>", block, &Usage::default());
            value["message"]["stop_reason"] = "stop_sequence".into();
            value["message"]["stop_sequence"] = "".into();
            self.line(&value);
        }
        match self.options.format {
            Some(Format::Json) | Some(Format::StreamJson) => {
                let value = encode::result(&info);
                self.line(&value);
            }
            _ => {
                if !info.result.is_empty() {
                    let mut text = info.result.clone();
                    if !text.ends_with('\n') {
                        text.push('\n');
                    }
                    self.stdout.write(text.as_bytes());
                }
            }
        }
        self.stdout.flush();
        // The next turn starts on the primary model again.
        self.turn_model = None;
    }
}

/// The final answer as JSON: the whole text, or the one fenced block it is wrapped in.
fn parse_structured(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(value) = serde_json::from_str(trimmed) {
        return Some(value);
    }
    let inner = trimmed.strip_prefix("```")?.strip_suffix("```")?;
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    serde_json::from_str(inner.trim()).ok()
}

impl EventSink for ClaudeStream {
    fn emit(&mut self, event: Event) {
        let boundary = !matches!(event, Event::TextDelta(_) | Event::ReasoningDelta(_));
        self.event(event, None);
        if boundary || self.options.partial_messages {
            self.stdout.flush();
        }
    }
}

impl Report for ClaudeStream {
    fn cancel_on_close(&self, token: CancelToken) {
        self.stdout.cancel_on_close(token);
    }

    fn closed(&self) -> bool {
        self.stdout.broken()
    }

    fn finished(&self) -> bool {
        self.finished
    }

    fn finish(&mut self, result: &RunResult) {
        self.report(result);
    }

    /// A run that never finished still ends with its `result` (json formats); in text the
    /// CLI's one error line on stderr is the report.
    fn abort(&mut self, result: &RunResult) {
        self.report(result);
    }

    fn catalog(&mut self, catalog: &InitCatalog) {
        self.catalog = catalog.clone();
    }

    fn model_changed(&mut self, model: &str) {
        self.model = model.to_string();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_output_is_the_answer_or_its_one_fenced_block() {
        assert_eq!(
            parse_structured(" {\"a\": 1} "),
            Some(serde_json::json!({"a": 1}))
        );
        assert_eq!(
            parse_structured("```json\n{\"a\": 2}\n```"),
            Some(serde_json::json!({"a": 2}))
        );
        assert_eq!(parse_structured("here: {\"a\": 1}"), None);
    }
}
