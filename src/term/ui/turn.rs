//! Running a turn: the agent works on its own thread holding the agent's lock, its events
//! reach the UI through a [`ChannelSink`] (which also snapshots files around edits for the
//! diff), and the turn's end updates the totals, the tools and the queue.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use super::servers::tool_names;
use super::{Chat, LostGuard, Msg, Turn, Work};
use crate::agent::events::{Event, EventSink, NoticeLevel};
use crate::agent::runner::{AgentError, Finish};
use crate::i18n::{tr, Ui};
use crate::term::transcript::{edited_path, Snapshot, TurnEnd};

/// Edit snapshots larger than this are not taken (no diff is shown).
const SNAPSHOT_CAP: u64 = 1024 * 1024;

impl Chat {
    pub(super) fn start_turn(&mut self, text: String) {
        if self.refused_as_history() {
            return;
        }
        self.prompted = true;
        let text = if std::mem::take(&mut self.interrupted) {
            format!("[The user interrupted your previous reply.]\n\n{text}")
        } else {
            text
        };
        self.start_work(Work::Prompt(text));
    }

    /// Runs `work` on the turn thread, so the UI stays live while the model answers.
    pub(super) fn start_work(&mut self, work: Work) {
        // Every request to the model starts here: a history-only conversation makes none.
        if self.refused_as_history() {
            return;
        }
        let Some(cancel) = self.agent_or_notice().map(|mut a| a.reset_cancel()) else {
            return;
        };
        let agent = Arc::clone(&self.agent);
        let goal = Arc::clone(&self.goal);
        let tx = self.tx.clone();
        let cwd = self.cwd.clone();
        let spawned = std::thread::Builder::new()
            .name("agent-turn".into())
            .spawn(move || {
                let mut guard = LostGuard::new(tx.clone(), Msg::TurnLost);
                let mut sink = ChannelSink {
                    tx: tx.clone(),
                    cwd,
                    edits: BTreeMap::new(),
                };
                let mut agent = agent.lock().unwrap_or_else(PoisonError::into_inner);
                let result = match work {
                    Work::Prompt(text) => {
                        super::goal::run_turn(&goal, text, &mut sink, |input, sink| {
                            let finish = agent.run(input, sink)?;
                            Ok((finish, agent.stats().final_text.clone()))
                        })
                    }
                    Work::Profile { name, task } => agent.run_profile(&name, task, &mut sink),
                    Work::Replan(text) => agent
                        .replan(text, &mut sink)
                        .unwrap_or(Ok(Finish::Answered)),
                    Work::Compact => agent.compact_now(&mut sink).map(|folded| {
                        if !folded {
                            sink.emit(Event::Notice {
                                level: NoticeLevel::Info,
                                message: tr(Ui::NothingToCompact).into(),
                            });
                        }
                        Finish::Answered
                    }),
                };
                drop(agent);
                guard.done();
                let _ = tx.send(Msg::TurnDone(result));
            });
        match spawned {
            Ok(_) => {
                self.turn = Some(Turn {
                    cancel,
                    started: Instant::now(),
                });
            }
            Err(_) => self.transcript.error(tr(Ui::TurnNoThread)),
        }
    }

    pub(super) fn on_agent_event(&mut self, event: Event) {
        if let Event::Usage { usage, cost_usd } = &event {
            self.totals.usage.add(usage);
            self.totals.context = usage.prompt_tokens + usage.completion_tokens;
            if let Some(cost) = cost_usd {
                self.totals.cost += cost;
                self.totals.priced = true;
            }
        }
        // A subagent's tokens and cost are the session's too, though not its context.
        if let Event::Subagent {
            usage, cost_usd, ..
        } = &event
        {
            self.totals.usage.add(usage);
            if let Some(cost) = cost_usd {
                self.totals.cost += cost;
                self.totals.priced = true;
            }
        }
        // So are the Guardian reviewer's.
        if let Event::ReviewerUsage {
            usage, cost_usd, ..
        } = &event
        {
            self.totals.usage.add(usage);
            if let Some(cost) = cost_usd {
                self.totals.cost += cost;
                self.totals.priced = true;
            }
        }
        if event == (Event::PlanMode { planning: false }) {
            self.transcript.notice(
                NoticeLevel::Info,
                crate::i18n::tr(crate::i18n::Ui::PlanApproved),
            );
        }
        self.transcript.event(&event);
    }

    pub(super) fn finish_turn(&mut self, end: TurnEnd) {
        self.interrupted = end == TurnEnd::Interrupted;
        self.transcript.end_turn(&end);
        self.turn = None;
        // Approvals cannot outlive their turn.
        self.deny_waiting_approvals();
        if let Some(code) = self.exiting {
            self.quit = Some(code);
            return;
        }
        if !self.waiting_tools.is_empty()
            || self.waiting_source.is_some()
            || self.waiting_contracts.is_some()
        {
            self.install_tools();
        } else if let Some(names) = self.idle_agent().map(|agent| tool_names(&agent)) {
            // The turn may have taken in an MCP server's new tool list.
            self.tool_names = names;
        }
        if let Some(models) = self
            .idle_agent()
            .and_then(|a| a.coordinator().map(|c| c.models()))
        {
            self.totals.models = models;
        }
        self.next_in_queue();
    }
}

/// The agent's event sink on the turn thread: forwards events, and snapshots files around
/// edit tools so the transcript can show what changed.
struct ChannelSink {
    tx: Sender<Msg>,
    cwd: PathBuf,
    edits: BTreeMap<String, PathBuf>,
}

impl ChannelSink {
    fn snapshot(&self, id: &str, path: &Path, stage: Snapshot) {
        let content = std::fs::metadata(path)
            .ok()
            .filter(|m| m.len() <= SNAPSHOT_CAP)
            .and_then(|_| std::fs::read_to_string(path).ok());
        let _ = self.tx.send(Msg::File {
            id: id.to_string(),
            stage,
            content,
        });
    }
}

impl EventSink for ChannelSink {
    fn emit(&mut self, event: Event) {
        match &event {
            Event::ToolUse {
                id,
                arguments,
                family,
                ..
            } => {
                if let Some(path) = edited_path(*family, arguments) {
                    let full = self.cwd.join(path);
                    self.snapshot(id, &full, Snapshot::Before);
                    self.edits.insert(id.clone(), full);
                }
            }
            Event::ToolResult { id, is_error, .. } => {
                if let Some(path) = self.edits.remove(id) {
                    if !is_error {
                        self.snapshot(id, &path, Snapshot::After);
                    }
                }
            }
            _ => {}
        }
        let _ = self.tx.send(Msg::Agent(event));
    }
}

/// How the turn thread's result ends the turn in the transcript.
pub(super) fn turn_end(result: Result<Finish, AgentError>) -> TurnEnd {
    match result {
        Ok(Finish::Answered) | Ok(Finish::Plan(_)) => TurnEnd::Answered,
        Ok(Finish::StepLimit) => TurnEnd::StepLimit,
        Ok(Finish::Budget(spent)) => TurnEnd::Failed(spent.to_string()),
        Ok(Finish::NoProgress) => TurnEnd::Failed(crate::i18n::trf(
            Ui::NoProgress,
            &[&crate::agent::progress::PAUSE_AFTER],
        )),
        Err(AgentError::Interrupted) => TurnEnd::Interrupted,
        Err(err) => TurnEnd::Failed(err.to_string()),
    }
}
