//! The subagents of running calls (`task`, `fleet`, `parallel_tasks`, subagent skills) as the
//! chat shows them: one line each under the call that started them — queued, then running
//! with its tool count, tokens and time, then done or stopped — folded to a few rows unless
//! verbose (ctrl-o). Their own steps stay in their sessions.

use std::time::{Duration, Instant};

use super::ansi::{Line, Style};
use super::sanitize::one_row;
use super::width::truncate;
use crate::agent::events::{ChildState, Event};
use crate::i18n::{tr, trf, Ui};

/// Child lines shown per call when not verbose.
const FOLD_ROWS: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Progress {
    Queued,
    Running(Instant),
    Finished { ok: bool, elapsed: Duration },
}

struct Child {
    call: String,
    task: usize,
    label: String,
    profile: Option<String>,
    progress: Progress,
    tools: u32,
    tokens: u64,
}

#[derive(Default)]
pub struct Children {
    children: Vec<Child>,
}

impl Children {
    /// Takes in a subagent event; `false` for every other event.
    pub fn event(&mut self, event: &Event, now: Instant) -> bool {
        match event {
            Event::SubagentStatus {
                parent_tool_use_id: Some(call),
                task,
                profile,
                label,
                state,
            } => {
                let progress = match state {
                    ChildState::Queued => Progress::Queued,
                    ChildState::Running => Progress::Running(now),
                };
                match self.find(call, *task) {
                    Some(child) => child.progress = progress,
                    None => self.children.push(Child {
                        call: call.clone(),
                        task: *task,
                        label: label.clone(),
                        profile: profile.clone(),
                        progress,
                        tools: 0,
                        tokens: 0,
                    }),
                }
            }
            Event::Child {
                parent_tool_use_id,
                task,
                event,
            } => {
                if let Some(child) = self.find(parent_tool_use_id, *task) {
                    match event.as_ref() {
                        Event::ToolUse { .. } => child.tools += 1,
                        Event::Usage { usage, .. } => {
                            child.tokens += usage.prompt_tokens + usage.completion_tokens
                        }
                        _ => {}
                    }
                }
            }
            Event::Subagent {
                parent_tool_use_id: Some(call),
                task,
                ok,
                usage,
                elapsed_ms,
                ..
            } => {
                if let Some(child) = self.find(call, *task) {
                    child.tokens = usage.prompt_tokens + usage.completion_tokens;
                    child.progress = Progress::Finished {
                        ok: *ok,
                        elapsed: Duration::from_millis(*elapsed_ms),
                    };
                }
            }
            Event::SubagentStatus { .. } | Event::Subagent { .. } => {}
            _ => return false,
        }
        true
    }

    fn find(&mut self, call: &str, task: usize) -> Option<&mut Child> {
        self.children
            .iter_mut()
            .find(|c| c.call == call && c.task == task)
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// The lines under the running call `call`: running children first, then queued, then
    /// finished, folded unless verbose.
    pub fn live(&self, call: &str, now: Instant, width: usize, verbose: bool) -> Vec<Line> {
        let mut shown: Vec<&Child> = self.children.iter().filter(|c| c.call == call).collect();
        shown.sort_by_key(|c| {
            let rank = match c.progress {
                Progress::Running(_) => 0,
                Progress::Queued => 1,
                Progress::Finished { .. } => 2,
            };
            (rank, c.task)
        });
        fold(shown, width, verbose, |c| c.line(now, width))
    }

    /// The final lines of `call`'s children, in task order, and forgets them.
    pub fn finish(&mut self, call: &str, now: Instant, width: usize, verbose: bool) -> Vec<Line> {
        let mut mine: Vec<Child> = Vec::new();
        self.children.retain_mut(|c| {
            if c.call == call {
                mine.push(Child {
                    call: String::new(),
                    label: std::mem::take(&mut c.label),
                    profile: c.profile.take(),
                    ..*c
                });
                false
            } else {
                true
            }
        });
        mine.sort_by_key(|c| c.task);
        fold(mine.iter().collect(), width, verbose, |c| {
            c.line(now, width)
        })
    }

    pub fn clear(&mut self) {
        self.children.clear();
    }
}

fn fold(
    children: Vec<&Child>,
    width: usize,
    verbose: bool,
    line: impl Fn(&Child) -> Line,
) -> Vec<Line> {
    let rows = if verbose { children.len() } else { FOLD_ROWS };
    let mut out: Vec<Line> = children.iter().take(rows).map(|c| line(c)).collect();
    if children.len() > rows {
        out.push(
            Line::styled(
                trf(Ui::MoreSubagents, &[&(children.len() - rows)]),
                Style::Dim,
            )
            .truncated(width),
        );
    }
    out
}

impl Child {
    fn line(&self, now: Instant, width: usize) -> Line {
        let (mark, style, status) = match self.progress {
            Progress::Queued => ("◦", Style::Dim, tr(Ui::ChildQueued).to_string()),
            Progress::Running(started) => (
                "◆",
                Style::Accent,
                seconds(now.saturating_duration_since(started)),
            ),
            Progress::Finished { ok: true, elapsed } => ("✓", Style::Success, seconds(elapsed)),
            Progress::Finished { ok: false, elapsed } => (
                "✗",
                Style::Warning,
                trf(Ui::ChildStopped, &[&seconds(elapsed)]),
            ),
        };
        let mut line = Line::styled(format!("  ⎿ {mark} "), style);
        let name = match &self.profile {
            Some(profile) => format!("{} [{profile}]", self.task + 1),
            None => format!("{}", self.task + 1),
        };
        line.push(format!("{name} "), Style::Bold);
        let facts = trf(
            Ui::ChildFacts,
            &[&self.tools, &short_count(self.tokens), &status],
        );
        let room = width.saturating_sub(name.len() + facts.len() + 8);
        line.push(truncate(&one_row(&self.label), room.max(10)), Style::Plain);
        line.push(facts, Style::Dim);
        line.truncated(width)
    }
}

fn seconds(d: Duration) -> String {
    super::transcript::seconds(d)
}

/// A count in at most four or five characters: 950, 12.3k, 4.1M.
pub fn short_count(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Usage;

    fn text(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.text.as_str()).collect())
            .collect()
    }

    fn status(task: usize, state: ChildState) -> Event {
        Event::SubagentStatus {
            parent_tool_use_id: Some("call_1".into()),
            task,
            profile: None,
            label: format!("job {task}"),
            state,
        }
    }

    #[test]
    fn a_child_line_counts_tools_and_tokens_then_shows_how_it_ended() {
        let now = Instant::now();
        let mut children = Children::default();
        assert!(children.event(&status(0, ChildState::Running), now));
        let inner = |event| Event::Child {
            parent_tool_use_id: "call_1".into(),
            task: 0,
            event: Box::new(event),
        };
        children.event(
            &inner(Event::ToolUse {
                id: "c".into(),
                name: "read_file".into(),
                arguments: "{}".into(),
                family: crate::tool::Family::Reader,
            }),
            now,
        );
        let usage = Usage {
            prompt_tokens: 1200,
            completion_tokens: 300,
            ..Usage::default()
        };
        children.event(
            &inner(Event::Usage {
                usage,
                cost_usd: None,
            }),
            now,
        );
        let live = text(&children.live("call_1", now, 100, false));
        assert_eq!(live.len(), 1);
        assert!(live[0].contains("job 0") && live[0].contains("1 tools · 1.5k tokens"));
        assert!(!children.event(&Event::TextDelta("x".into()), now));
        children.event(
            &Event::Subagent {
                parent_tool_use_id: Some("call_1".into()),
                task: 0,
                session_path: String::new(),
                profile: None,
                read_only: true,
                ok: false,
                requests: 1,
                tool_rounds: 1,
                usage,
                cost_usd: None,
                elapsed_ms: 2500,
            },
            now,
        );
        let done = text(&children.finish("call_1", now, 100, false));
        assert!(
            done[0].contains("✗") && done[0].contains("stopped · 2.5s"),
            "{done:?}"
        );
        assert!(children.is_empty());
    }

    #[test]
    fn many_children_fold_unless_verbose() {
        let now = Instant::now();
        let mut children = Children::default();
        for task in 0..6 {
            let state = if task == 5 {
                ChildState::Running
            } else {
                ChildState::Queued
            };
            children.event(&status(task, state), now);
        }
        let folded = text(&children.live("call_1", now, 100, false));
        assert_eq!(folded.len(), FOLD_ROWS + 1);
        // The running one comes first, whatever its number.
        assert!(folded[0].contains("job 5"), "{folded:?}");
        assert!(folded[FOLD_ROWS].contains("2 more subagents"));
        assert_eq!(children.live("call_1", now, 100, true).len(), 6);
        assert!(children.live("other", now, 100, true).is_empty());
    }
}
