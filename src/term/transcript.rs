//! Turns the agent's events into transcript lines. Final lines (finished Markdown blocks,
//! completed tool calls, notices) are queued for scrollback with [`Transcript::take`]; what
//! is still moving (the partial answer, reasoning, running tools with their spinners) comes
//! from [`Transcript::live`] and is redrawn each frame. Every string from the model or a
//! tool is sanitized on the way in.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ansi::{Line, Style};
use super::children::Children;
use super::diff;
use super::markdown::Markdown;
use super::sanitize::{for_display, one_row};
use super::width::truncate;
use crate::agent::events::{Event, NoticeLevel};
use crate::agent::fallback;
use crate::i18n::{tr, trf, Ui};
use crate::permission::Resolution;
use crate::tool::Family;

const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Tool output rows shown when not verbose / verbose.
const FOLD_ROWS: usize = 4;
const VERBOSE_ROWS: usize = 40;
const DIFF_ROWS: usize = 24;
const VERBOSE_DIFF_ROWS: usize = 400;
/// The file a call changes in place, for calls whose successful results are shown as a diff
/// of that file: a writer naming one `path` (`move_file` names two and shows its output).
pub fn edited_path(family: Family, arguments: &str) -> Option<String> {
    if family != Family::Writer {
        return None;
    }
    let args = serde_json::from_str::<serde_json::Value>(arguments).ok()?;
    args.get("path")?.as_str().map(str::to_string)
}

/// A call between its use and its result.
struct InFlight {
    arguments: String,
    /// Shown as a diff of the file it edits.
    edits_a_file: bool,
}

struct RunningTool {
    id: String,
    title: Line,
    started: Instant,
}

struct Reasoning {
    started: Instant,
    /// The rendered reasoning in verbose mode, streamed to scrollback.
    markdown: Option<Markdown>,
    /// The latest text, for the collapsed preview.
    tail: String,
}

/// How a turn ended, for the last transcript line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    Answered,
    StepLimit,
    Interrupted,
    Failed(String),
}

pub struct Transcript {
    width: usize,
    verbose: bool,
    answer: Option<Markdown>,
    reasoning: Option<Reasoning>,
    tools: Vec<RunningTool>,
    /// File contents before and after an edit tool ran, by call id.
    before: HashMap<String, Option<String>>,
    after: HashMap<String, Option<String>>,
    /// Arguments of calls in flight, by id, for the result line.
    calls: HashMap<String, InFlight>,
    pending: Vec<Line>,
    /// Whether the last line handed out by `take` was blank, so gaps never double.
    ends_blank: bool,
    /// The spinner's time origin.
    created: Instant,
    /// The subagents of running calls, one line each under their call.
    children: Children,
    /// "waiting for the model: 40 s, ...": the request in flight has gone quiet; shown
    /// beside the working indicator until anything else happens.
    waiting: Option<String>,
    /// Answer text arrived in this turn: an interruption keeps it (else there is none to keep).
    answered: bool,
}

impl Transcript {
    pub fn new(width: usize) -> Transcript {
        Transcript {
            width: width.max(20),
            verbose: false,
            answer: None,
            reasoning: None,
            tools: Vec::new(),
            before: HashMap::new(),
            after: HashMap::new(),
            calls: HashMap::new(),
            pending: Vec::new(),
            ends_blank: true,
            created: Instant::now(),
            children: Children::default(),
            waiting: None,
            answered: false,
        }
    }

    pub fn set_width(&mut self, width: usize) {
        self.width = width.max(20);
        if let Some(md) = &mut self.answer {
            md.set_width(self.width);
        }
    }

    pub fn verbose(&self) -> bool {
        self.verbose
    }

    pub fn set_verbose(&mut self, verbose: bool) {
        self.verbose = verbose;
    }

    /// Lines that became final since the last call.
    pub fn take(&mut self) -> Vec<Line> {
        if let Some(last) = self.pending.last() {
            self.ends_blank = last.spans.is_empty();
        }
        std::mem::take(&mut self.pending)
    }

    pub fn push_line(&mut self, line: Line) {
        self.pending.push(line);
    }

    pub fn push_lines(&mut self, lines: impl IntoIterator<Item = Line>) {
        self.pending.extend(lines);
    }

    /// A blank separator line, never two in a row.
    pub fn gap(&mut self) {
        let blank = match self.pending.last() {
            Some(last) => last.spans.is_empty(),
            None => self.ends_blank,
        };
        if blank {
            return;
        }
        self.pending.push(Line::new());
    }

    /// The user's message as sent, `›`-prefixed and wrapped.
    pub fn user_message(&mut self, text: &str) {
        self.gap();
        let shown = for_display(text);
        for (i, row) in shown.lines().enumerate() {
            let mut line = Line::styled(if i == 0 { "› " } else { "  " }, Style::Accent);
            line.push(row, Style::User);
            self.pending.extend(line.wrap(self.width, "  "));
        }
        self.gap();
    }

    /// A notice from the agent or the chat itself.
    pub fn notice(&mut self, level: NoticeLevel, message: &str) {
        let (mark, style) = match level {
            NoticeLevel::Info => ("ℹ ", Style::Dim),
            NoticeLevel::Warning => ("⚠ ", Style::Warning),
        };
        // A notice of several lines (a planner's plan) keeps them, indented under the mark.
        let mut rows = message.split('\n');
        let mut line = Line::styled(mark, style);
        line.push(one_row(rows.next().unwrap_or("")), style);
        self.pending.extend(line.wrap(self.width, "  "));
        for row in rows {
            let mut line = Line::styled("  ", style);
            line.push(one_row(row), style);
            self.pending.extend(line.wrap(self.width, "  "));
        }
    }

    pub fn error(&mut self, message: &str) {
        let mut line = Line::styled("✗ ", Style::Error);
        line.push(one_row(message), Style::Error);
        self.pending.extend(line.wrap(self.width, "  "));
    }

    /// Records a file's content before or after an edit tool ran.
    pub fn file_snapshot(&mut self, id: &str, stage: Snapshot, content: Option<String>) {
        match stage {
            Snapshot::Before => self.before.insert(id.to_string(), content),
            Snapshot::After => self.after.insert(id.to_string(), content),
        };
    }

    pub fn event(&mut self, event: &Event) {
        self.waiting = None;
        match event {
            Event::Waiting {
                silent_ms,
                received,
                idle_limit_ms,
            } => {
                self.waiting = Some(crate::agent::events::waiting_message(
                    *silent_ms,
                    *received,
                    *idle_limit_ms,
                ));
            }
            Event::TextDelta(text) => {
                self.answered = true;
                self.end_reasoning();
                if self.answer.is_none() {
                    self.gap();
                }
                let width = self.width;
                let md = self.answer.get_or_insert_with(|| Markdown::new(width));
                let lines = md.push(text);
                self.pending.extend(lines);
            }
            Event::ReasoningDelta(text) => self.reasoning_delta(text),
            Event::ToolUse {
                id,
                name,
                arguments,
                family,
            } => {
                self.end_blocks();
                let call = InFlight {
                    arguments: arguments.clone(),
                    edits_a_file: edited_path(*family, arguments).is_some(),
                };
                self.calls.insert(id.clone(), call);
                self.tools.push(RunningTool {
                    id: id.clone(),
                    title: tool_title(name, arguments, self.width.saturating_sub(16)),
                    started: Instant::now(),
                });
            }
            Event::ToolResult {
                id,
                name,
                output,
                is_error,
                duration_ms,
            } => self.tool_result(id, name, output, *is_error, *duration_ms),
            Event::Notice { level, message } => {
                self.end_blocks();
                self.notice(*level, message);
            }
            Event::Retry(retry) => {
                self.end_blocks();
                self.notice(NoticeLevel::Warning, &retry.to_string());
            }
            Event::ModelFallback {
                from, to, reason, ..
            } => {
                self.end_blocks();
                self.notice(NoticeLevel::Warning, &fallback::describe(from, to, reason));
            }
            Event::Permission {
                tool,
                resolution,
                allowed,
                rule,
                reason,
                ..
            } => match reason {
                Some(reason) => self.reviewed(tool, *resolution, *allowed, reason),
                None => self.permission(tool, *resolution, *allowed, rule.as_deref()),
            },
            Event::Compaction {
                trigger,
                tier,
                before_tokens,
                after_tokens,
                ..
            } => {
                self.end_blocks();
                let text = trf(
                    Ui::Compacted,
                    &[
                        &tier.as_str(),
                        &trigger.as_str(),
                        before_tokens,
                        after_tokens,
                    ],
                );
                self.pending
                    .push(Line::styled(format!("  {text}"), Style::Dim));
            }
            Event::Init { .. }
            | Event::Usage { .. }
            | Event::ReviewerUsage { .. }
            | Event::CachePrefixChanged { .. } => {}
            Event::Subagent { .. } | Event::SubagentStatus { .. } | Event::Child { .. } => {
                self.children.event(event, Instant::now());
            }
            Event::Todo { .. } | Event::PlanMode { .. } | Event::Plan { .. } | Event::Ask(_) => {}
            Event::Hook {
                event,
                command,
                outcome,
                message,
                ..
            } => {
                if *outcome != "ok" || message.is_some() {
                    let mut text = trf(Ui::HookRan, &[event, command, outcome]);
                    if let Some(message) = message {
                        text.push_str(&format!(": {message}"));
                    }
                    let level = if *outcome == "ok" {
                        NoticeLevel::Info
                    } else {
                        NoticeLevel::Warning
                    };
                    self.notice(level, &text);
                }
            }
        }
    }

    /// A call the Guardian reviewer judged, or one it could not (then a person decided, or
    /// headless the call was refused): one line with the reason.
    fn reviewed(&mut self, tool: &str, resolution: Resolution, allowed: bool, reason: &str) {
        self.end_blocks();
        let key = match (resolution, allowed) {
            (Resolution::Guardian, true) => Ui::GuardianAllowed,
            (Resolution::Guardian, false) => Ui::GuardianDenied,
            (_, true) => Ui::GuardianFailedAllowed,
            (_, false) => Ui::GuardianFailedDenied,
        };
        let text = trf(key, &[&tool, &reason]);
        let style = if allowed { Style::Dim } else { Style::Warning };
        self.pending
            .push(Line::styled(format!("  {}", one_row(&text)), style));
    }

    fn permission(
        &mut self,
        tool: &str,
        resolution: Resolution,
        allowed: bool,
        rule: Option<&str>,
    ) {
        let text = match (allowed, resolution, rule) {
            (true, Resolution::UserSession, Some(rule)) => trf(Ui::GrantSession, &[&rule]),
            (true, Resolution::UserAlways, Some(rule)) => trf(Ui::GrantAlways, &[&rule]),
            (false, Resolution::Rule, Some(rule)) => trf(Ui::BlockedByRule, &[&tool, &rule]),
            _ => return,
        };
        let style = if allowed { Style::Dim } else { Style::Warning };
        self.pending
            .push(Line::styled(format!("  {}", one_row(&text)), style));
    }

    fn reasoning_delta(&mut self, text: &str) {
        if self.reasoning.is_none() {
            self.end_answer();
            let markdown = self.verbose.then(|| {
                self.pending
                    .push(Line::styled(tr(Ui::Thinking), Style::Thinking));
                Markdown::new(self.width.saturating_sub(2))
            });
            self.reasoning = Some(Reasoning {
                started: Instant::now(),
                markdown,
                tail: String::new(),
            });
        }
        let Some(reasoning) = &mut self.reasoning else {
            return;
        };
        reasoning.tail.push_str(text);
        if reasoning.tail.len() > 4096 {
            let cut = reasoning.tail.len() - 2048;
            let cut = (cut..reasoning.tail.len())
                .find(|i| reasoning.tail.is_char_boundary(*i))
                .unwrap_or(0);
            reasoning.tail.drain(..cut);
        }
        if let Some(md) = &mut reasoning.markdown {
            let lines = md.push(text);
            self.pending.extend(lines.into_iter().map(thinking_line));
        }
    }

    fn end_reasoning(&mut self) {
        let Some(mut reasoning) = self.reasoning.take() else {
            return;
        };
        match &mut reasoning.markdown {
            Some(md) => {
                let lines = md.finish();
                self.pending.extend(lines.into_iter().map(thinking_line));
            }
            None => self.pending.push(Line::styled(
                trf(Ui::ThoughtFor, &[&seconds(reasoning.started.elapsed())]),
                Style::Thinking,
            )),
        }
        self.gap();
    }

    fn end_answer(&mut self) {
        if let Some(mut md) = self.answer.take() {
            let lines = md.finish();
            self.pending.extend(lines);
            self.gap();
        }
    }

    /// Closes reasoning and answer blocks before something else is shown.
    pub fn end_blocks(&mut self) {
        self.end_reasoning();
        self.end_answer();
    }

    fn tool_result(&mut self, id: &str, name: &str, output: &str, is_error: bool, ms: u64) {
        self.end_blocks();
        let title = match self.tools.iter().position(|t| t.id == id) {
            Some(i) => self.tools.remove(i).title,
            None => {
                let args = self.calls.get(id).map(|c| c.arguments.as_str());
                tool_title(
                    name,
                    args.unwrap_or_default(),
                    self.width.saturating_sub(16),
                )
            }
        };
        let (args, edits_a_file) = self
            .calls
            .remove(id)
            .map_or((String::new(), false), |c| (c.arguments, c.edits_a_file));
        self.gap();
        let mut head = Line::styled(
            "● ",
            if is_error {
                Style::Error
            } else {
                Style::Success
            },
        );
        head.extend(title);
        head.push(
            format!("  {}", seconds(Duration::from_millis(ms))),
            Style::Dim,
        );
        self.pending.push(head.truncated(self.width));
        let children = self
            .children
            .finish(id, Instant::now(), self.width, self.verbose);
        self.pending.extend(children);
        let before = self.before.remove(id);
        let after = self.after.remove(id);
        let body = if is_error {
            error_body(output, self.width, self.rows())
        } else if edits_a_file {
            self.edit_body(before.flatten(), after.flatten(), output)
        } else {
            output_body(name, &args, output, self.width, self.rows())
        };
        self.pending.extend(body);
    }

    fn rows(&self) -> usize {
        if self.verbose {
            VERBOSE_ROWS
        } else {
            FOLD_ROWS
        }
    }

    fn edit_body(&self, before: Option<String>, after: Option<String>, output: &str) -> Vec<Line> {
        let Some(after) = after else {
            return output_body("", "", output, self.width, self.rows());
        };
        let before = before.unwrap_or_default();
        let old: Vec<&str> = before.lines().collect();
        let new: Vec<&str> = after.lines().collect();
        let (added, removed) = diff::stats(&diff::diff_lines(&old, &new));
        let mut summary = Line::styled("  ⎿ ", Style::Dim);
        summary.push(format!("+{added}"), Style::DiffAdd);
        summary.push(" ", Style::Dim);
        summary.push(format!("-{removed}"), Style::DiffDel);
        let mut out = vec![summary];
        let max = if self.verbose {
            VERBOSE_DIFF_ROWS
        } else {
            DIFF_ROWS
        };
        for line in diff::render(&before, &after, self.width.saturating_sub(4), max) {
            let mut row = Line::plain("    ");
            row.extend(line);
            out.push(row);
        }
        out
    }

    /// Ends the turn: flushes open blocks, reports how it ended, forgets running tools.
    pub fn end_turn(&mut self, end: &TurnEnd) {
        self.end_blocks();
        for tool in std::mem::take(&mut self.tools) {
            let mut line = Line::styled("● ", Style::Warning);
            line.extend(tool.title);
            line.push(tr(Ui::NotFinished), Style::Dim);
            self.pending.push(line.truncated(self.width));
        }
        self.calls.clear();
        self.before.clear();
        self.after.clear();
        self.children.clear();
        self.waiting = None;
        let answered = std::mem::take(&mut self.answered);
        match end {
            TurnEnd::Answered => {}
            TurnEnd::StepLimit => self.notice(NoticeLevel::Warning, tr(Ui::StepLimit)),
            TurnEnd::Interrupted => {
                let message = if answered {
                    Ui::Interrupted
                } else {
                    Ui::InterruptedBeforeAnswer
                };
                self.pending.push(Line::styled(tr(message), Style::Warning));
            }
            TurnEnd::Failed(message) => self.error(message),
        }
        self.gap();
    }

    /// What is still moving: reasoning preview, the partial answer, running tools, and a
    /// working indicator while `turn_started` is set.
    pub fn live(&self, now: Instant, turn_started: Option<Instant>) -> Vec<Line> {
        let ticks = now.saturating_duration_since(self.created).as_millis() / 80;
        let frame = SPINNER[ticks as usize % SPINNER.len()];
        let mut out = Vec::new();
        if let Some(reasoning) = &self.reasoning {
            match &reasoning.markdown {
                Some(md) => out.extend(md.live().into_iter().map(thinking_line)),
                None => {
                    out.push(Line::styled(
                        trf(
                            Ui::ThinkingFor,
                            &[&seconds(now.saturating_duration_since(reasoning.started))],
                        ),
                        Style::Thinking,
                    ));
                    let tail = one_row(reasoning.tail.trim());
                    let shown = tail_columns(&tail, self.width.saturating_sub(4));
                    if !shown.is_empty() {
                        out.push(Line::styled(format!("  {shown}"), Style::Thinking));
                    }
                }
            }
        }
        if let Some(md) = &self.answer {
            out.extend(md.live());
        }
        for tool in &self.tools {
            let mut line = Line::styled(format!("{frame} "), Style::Accent);
            line.extend(tool.title.clone());
            line.push(
                format!("  {}", seconds(now.saturating_duration_since(tool.started))),
                Style::Dim,
            );
            out.push(line.truncated(self.width));
            out.extend(self.children.live(&tool.id, now, self.width, self.verbose));
        }
        if let Some(started) = turn_started {
            if self.tools.is_empty() {
                let mut line = Line::styled(
                    trf(
                        Ui::Working,
                        &[&frame, &seconds(now.saturating_duration_since(started))],
                    ),
                    Style::Dim,
                );
                if let Some(waiting) = &self.waiting {
                    line.push(format!(" · {waiting}"), Style::Dim);
                }
                out.push(line.truncated(self.width));
            }
        }
        out
    }

    /// Whether anything in the live area animates (so the UI keeps ticking).
    pub fn animating(&self) -> bool {
        !self.tools.is_empty() || self.reasoning.is_some()
    }
}

/// Which side of an edit a snapshot is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snapshot {
    Before,
    After,
}

fn thinking_line(line: Line) -> Line {
    let mut out = Line::plain("  ");
    for span in line.spans {
        out.push(span.text, Style::Thinking);
    }
    out
}

/// The last `columns` columns of `text`.
fn tail_columns(text: &str, columns: usize) -> String {
    let mut width = 0;
    let mut start = text.len();
    for (i, c) in text.char_indices().rev() {
        let w = super::width::char_width(c);
        if width + w > columns {
            break;
        }
        width += w;
        start = i;
    }
    text[start..].to_string()
}

pub fn seconds(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

/// `name  subject` for a call: the command, path or pattern the tool works on.
pub fn tool_title(name: &str, arguments: &str, room: usize) -> Line {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let get = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
    let subject = match name {
        "bash" => get("command"),
        "read_file" | "write_file" | "edit_file" | "multi_edit" | "ls" => get("path"),
        "move_file" => match (get("source_path"), get("destination_path")) {
            (Some(a), Some(b)) => Some(format!("{a} → {b}")),
            _ => None,
        },
        "glob" => get("pattern"),
        "grep" => get("pattern").map(|p| match get("path") {
            Some(path) => format!("{p}  in {path}"),
            None => p,
        }),
        "todo_write" => Some(tr(Ui::TitleTodo).into()),
        "ask" => get("question"),
        "exit_plan_mode" => Some(tr(Ui::TitlePlan).into()),
        _ => match &args {
            Value::Object(map) if !map.is_empty() => Some(args.to_string()),
            _ => None,
        },
    };
    let mut line = Line::styled(one_row(name), Style::Bold);
    if let Some(subject) = subject {
        line.push("  ", Style::Plain);
        line.push(truncate(&one_row(&subject), room.max(10)), Style::Plain);
    }
    line
}

fn error_body(output: &str, width: usize, rows: usize) -> Vec<Line> {
    let text = for_display(output.strip_prefix("error: ").unwrap_or(output));
    fold(&text, width, rows.max(2), Style::Error)
}

fn output_body(name: &str, args: &str, output: &str, width: usize, rows: usize) -> Vec<Line> {
    if name == "todo_write" {
        return todo_body(args);
    }
    let text = for_display(output);
    if text.trim().is_empty() {
        return vec![Line::styled(tr(Ui::NoOutput), Style::Dim)];
    }
    if name == "read_file" {
        let count = text.lines().count();
        return vec![Line::styled(
            trf(
                if count == 1 {
                    Ui::ReadOneLine
                } else {
                    Ui::ReadLines
                },
                &[&count],
            ),
            Style::Dim,
        )];
    }
    fold(&text, width, rows, Style::Dim)
}

fn todo_body(args: &str) -> Vec<Line> {
    let value: Value = serde_json::from_str(args).unwrap_or(Value::Null);
    let Some(todos) = value.get("todos").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, todo) in todos.iter().enumerate() {
        let content = todo.get("content").and_then(Value::as_str).unwrap_or("");
        let status = todo.get("status").and_then(Value::as_str).unwrap_or("");
        let (mark, style) = match status {
            "completed" => ("☑", Style::Dim),
            "in_progress" => ("▸", Style::Bold),
            _ => ("☐", Style::Plain),
        };
        let lead = if i == 0 { "  ⎿ " } else { "    " };
        let mut line = Line::styled(lead, Style::Dim);
        line.push(format!("{mark} {}", one_row(content)), style);
        out.push(line);
    }
    out
}

/// The first `rows` lines of `text` under a `⎿`, each cut to the width, then a count of
/// what was folded away.
fn fold(text: &str, width: usize, rows: usize, style: Style) -> Vec<Line> {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().take(rows).enumerate() {
        let lead = if i == 0 { "  ⎿ " } else { "    " };
        let mut row = Line::styled(lead, Style::Dim);
        row.push(truncate(line, width.saturating_sub(5).max(10)), style);
        out.push(row);
    }
    if lines.len() > rows {
        out.push(Line::styled(
            trf(Ui::MoreLines, &[&(lines.len() - rows)]),
            Style::Dim,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    fn use_event(id: &str, name: &str, args: &str) -> Event {
        Event::ToolUse {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
            family: crate::tool::builtin::profile(name).map_or(Family::Other, |p| p.family),
        }
    }

    fn result(id: &str, name: &str, output: &str, is_error: bool) -> Event {
        Event::ToolResult {
            id: id.into(),
            name: name.into(),
            output: output.into(),
            is_error,
            duration_ms: 1200,
        }
    }

    #[test]
    fn text_then_tool_then_text() {
        let mut t = Transcript::new(60);
        t.event(&Event::TextDelta("Let me **look**.\n".into()));
        t.event(&Event::TextDelta("Partial".into()));
        assert_eq!(texts(&t.take()), vec!["Let me look."]);
        assert_eq!(texts(&t.live(Instant::now(), None)), vec!["Partial"]);
        t.event(&use_event("c1", "bash", r#"{"command":"ls -la"}"#));
        let live = texts(&t.live(Instant::now(), Some(Instant::now())));
        assert!(live[0].ends_with("bash  ls -la  0.0s"), "{live:?}");
        assert_eq!(live.len(), 1, "no working line while a tool runs");
        t.event(&result("c1", "bash", "a\nb\nc\nd\ne\nf\n", false));
        let lines = texts(&t.take());
        assert_eq!(
            lines,
            vec![
                "Partial",
                "",
                "● bash  ls -la  1.2s",
                "  ⎿ a",
                "    b",
                "    c",
                "    d",
                "    … 2 more lines (ctrl-o for more)",
            ]
        );
        t.set_verbose(true);
        t.event(&use_event("c2", "bash", r#"{"command":"x"}"#));
        t.event(&result("c2", "bash", "a\nb\nc\nd\ne\nf\n", false));
        assert_eq!(
            t.take().len(),
            8,
            "a gap, the head and all six lines when verbose"
        );
    }

    #[test]
    fn edits_show_a_diff_from_snapshots() {
        let mut t = Transcript::new(60);
        t.event(&use_event("e1", "edit_file", r#"{"path":"a.txt"}"#));
        t.file_snapshot("e1", Snapshot::Before, Some("one\ntwo\n".into()));
        t.file_snapshot("e1", Snapshot::After, Some("one\n2\n".into()));
        t.event(&result("e1", "edit_file", "edited a.txt", false));
        let lines = texts(&t.take());
        assert_eq!(lines[0], "● edit_file  a.txt  1.2s");
        assert_eq!(lines[1], "  ⎿ +1 -1");
        assert!(lines.iter().any(|l| l.ends_with("- two")), "{lines:?}");
        assert!(lines.iter().any(|l| l.ends_with("+ 2")), "{lines:?}");
    }

    #[test]
    fn errors_interruptions_and_unfinished_tools() {
        let mut t = Transcript::new(60);
        t.event(&use_event("c1", "bash", r#"{"command":"rm x"}"#));
        t.event(&result(
            "c1",
            "bash",
            "error: blocked: the user declined this `bash` call",
            true,
        ));
        t.event(&use_event("c2", "read_file", r#"{"path":"b"}"#));
        t.event(&Event::TextDelta("half an ans".into()));
        t.end_turn(&TurnEnd::Interrupted);
        let lines = texts(&t.take());
        assert_eq!(lines[0], "● bash  rm x  1.2s");
        assert_eq!(lines[1], "  ⎿ blocked: the user declined this `bash` call");
        assert!(lines.iter().any(|l| l == "half an ans"));
        assert!(lines
            .iter()
            .any(|l| l.contains("read_file  b  (not finished)")));
        assert!(lines
            .iter()
            .any(|l| l.starts_with("⎿ interrupted — the partial answer is kept")));
        // An interruption before any answer text has nothing to keep, and says no more.
        t.event(&Event::ReasoningDelta("hmm".into()));
        t.end_turn(&TurnEnd::Interrupted);
        let lines = texts(&t.take());
        assert!(
            lines.iter().any(|l| l.starts_with("⎿ interrupted;")),
            "{lines:?}"
        );
        assert!(
            !lines.iter().any(|l| l.contains("partial answer")),
            "{lines:?}"
        );
    }

    #[test]
    fn reasoning_collapses_to_a_summary_or_streams_when_verbose() {
        let mut t = Transcript::new(60);
        t.event(&Event::ReasoningDelta("weighing options".into()));
        let live = texts(&t.live(Instant::now(), None));
        assert!(live[0].starts_with("✻ Thinking…"));
        assert_eq!(live[1], "  weighing options");
        t.event(&Event::TextDelta("Answer\n".into()));
        let lines = texts(&t.take());
        assert!(lines[0].starts_with("✻ Thought for"));
        assert_eq!(lines.last().unwrap(), "Answer");
        let mut t = Transcript::new(60);
        t.set_verbose(true);
        t.event(&Event::ReasoningDelta("step one\nstep two\n".into()));
        t.event(&Event::TextDelta("Done".into()));
        let lines = t.take();
        assert_eq!(
            texts(&lines)[..3],
            ["✻ Thinking", "  step one", "  step two"]
        );
        assert!(lines[1].spans.iter().any(|s| s.style == Style::Thinking));
    }

    #[test]
    fn untrusted_names_and_outputs_are_sanitized() {
        let mut t = Transcript::new(60);
        t.event(&use_event(
            "c1",
            "evil\u{1b}[2J",
            "{\"x\":\"\u{1b}]0;t\u{7}\"}",
        ));
        t.event(&result("c1", "evil\u{1b}[2J", "out\u{1b}[31m", false));
        t.notice(NoticeLevel::Warning, "warn\u{1b}c");
        for line in t.take() {
            assert!(!line.text().contains('\u{1b}'), "{:?}", line.text());
        }
    }
}
