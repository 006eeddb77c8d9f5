//! The chat's own commands: the built-in slash commands (§3.8) and the dispatch of custom
//! commands and MCP prompts into messages. Built-ins act on the session and the UI and never
//! reach the model.

use std::path::Path;

use super::{Chat, Modal, Prepared, Totals};
use crate::agent::events::NoticeLevel;
use crate::agent::session::Summary;
use crate::command::input::{self, Input, Turn};
use crate::command::{Builtin, CommandError};
use crate::i18n::{tr, trf, Ui};
use crate::term::ansi::{Line, Style};
use crate::term::modal::{Choice, Choices};
use crate::term::sanitize::one_row;

impl Chat {
    /// What the user typed (except `!cmd`), through the one input path: a built-in runs here,
    /// a message is sent (queued while a turn runs) and prepared off this thread.
    pub(super) fn typed(&mut self, typed: String) {
        match input::interpret(&typed, &self.catalog) {
            None => {}
            Some(Ok(Input::Builtin(builtin, args))) => self.builtin(builtin, &args, &typed),
            // A message with a very strong AutoResearch signal is sent as a research goal.
            Some(Ok(Input::Message(_))) if self.upgrade_to_goal(&typed) => {}
            Some(Ok(Input::Message(message))) => self.send(message),
            Some(Ok(Input::Profile { name, task })) => self.profile_command(name, task, &typed),
            // The catalog learns the servers' prompts once they are up.
            Some(Err(CommandError::Unknown(name)))
                if name.starts_with("mcp__") && self.starting.is_some() =>
            {
                self.transcript.user_message(&typed);
                self.transcript.notice(
                    NoticeLevel::Warning,
                    &trf(Ui::ServersStillStarting, &[&name]),
                );
            }
            Some(Err(err)) => self.transcript.error(&err.to_string()),
        }
    }

    /// `/<profile> TASK`: runs the profile host-side on the turn thread, like a message
    /// but never through the model's `task` tool; it waits for a running turn to end.
    fn profile_command(&mut self, name: String, task: String, typed: &str) {
        self.transcript.user_message(typed);
        if self.refused_as_history() {
            return;
        }
        if self.busy() || self.starting.is_some() || self.preparing.is_some() {
            self.transcript
                .notice(NoticeLevel::Warning, &trf(Ui::WaitsForTurn, &[&name]));
            return;
        }
        if task.is_empty() {
            self.transcript.error(&format!(
                "/{name} needs a task: /{name} TASK runs the `{name}` subagent on it"
            ));
            return;
        }
        self.prompted = true;
        self.start_work(super::Work::Profile { name, task });
    }

    pub(super) fn builtin(&mut self, builtin: Builtin, args: &str, typed: &str) {
        self.transcript.user_message(typed);
        if builtin.needs_idle(args) && self.busy() {
            self.transcript.notice(
                NoticeLevel::Warning,
                &trf(Ui::WaitsForTurn, &[&builtin.name()]),
            );
            return;
        }
        match builtin {
            Builtin::Help => self.help(),
            Builtin::New => self.new_conversation(),
            Builtin::Clear => self.open_modal(Modal::ConfirmClear(confirm_clear())),
            Builtin::Compact => self.start_work(super::Work::Compact),
            Builtin::Model => self.model_command(args),
            Builtin::Effort => self.effort_command(args),
            Builtin::Mcp => self.mcp_command(),
            Builtin::Tools => self.tools_command(),
            Builtin::Cost => self.cost_command(),
            Builtin::Status => self.status_command(),
            Builtin::Resume => self.resume_picker(),
            Builtin::Memory => self.memory_command(),
            Builtin::Rewind => self.rewind_picker(),
            Builtin::Verbose => self.toggle_verbose(),
            Builtin::Plan => {
                let planning = !self.planning();
                self.set_planning(planning);
            }
            Builtin::Goal => self.goal_command(args),
            Builtin::Replan => self.replan_command(args),
            Builtin::Agent => self.agent_command(args),
            Builtin::Persona => {
                let answer = self.services.persona(args);
                self.service_answer(answer);
            }
            Builtin::Exit => self.request_exit(0),
        }
        self.transcript.gap();
    }

    pub(super) fn info_lines(&mut self, lines: Vec<Line>) {
        self.transcript.push_lines(lines);
    }

    pub(super) fn help(&mut self) {
        let mut lines = vec![Line::styled(tr(Ui::HelpCommands), Style::Heading)];
        let width = self.screen.width();
        for entry in self.catalog.entries() {
            let mut line = Line::styled(format!("  /{}", entry.name), Style::Bold);
            if !entry.argument_hint.is_empty() {
                line.push(format!(" {}", one_row(&entry.argument_hint)), Style::Dim);
            }
            line.push(format!("  {}", one_row(&entry.description)), Style::Plain);
            lines.push(line.truncated(width));
        }
        lines.push(Line::styled(tr(Ui::HelpKeys), Style::Heading));
        for (keys, what) in KEY_HELP {
            let mut line = Line::styled(format!("  {keys:<22}"), Style::Bold);
            line.push(tr(*what), Style::Plain);
            lines.push(line.truncated(width));
        }
        self.info_lines(lines);
    }

    /// `/agent [ID]`: the catalog, or choosing a composition. Only a blank, idle chat (no
    /// prompt accepted, nothing queued, MCP servers started) switches; the CLI decides the
    /// rest (the lock after the first prompt).
    fn agent_command(&mut self, args: &str) {
        if !args.trim().is_empty() && (self.starting.is_some() || !self.queue.is_empty()) {
            self.transcript.notice(
                NoticeLevel::Warning,
                crate::i18n::tr(crate::i18n::Ui::AgentSwitchBusy),
            );
            return;
        }
        let prompted = self.prompted;
        let Some(blank) = self
            .agent_or_notice()
            .map(|a| !prompted && a.session().turns() == 0)
        else {
            return;
        };
        match self.services.agent(args, blank) {
            Ok(super::AgentAnswer::Text(text)) => self.service_answer(Ok(text)),
            Ok(super::AgentAnswer::Switched(switched)) => self.switch_composition(*switched),
            Err(err) => self.service_answer(Err(err)),
        }
    }

    /// Puts the rebuilt agent in place of the blank one and starts the composition's MCP
    /// servers. The blank conversation left behind is removed, as the chat does with one at
    /// exit.
    fn switch_composition(&mut self, switched: super::Switched) {
        if let Some(old) = self.put_in_place(switched) {
            remove_session(old);
        }
    }

    /// Puts a rebuilt chat (see [`super::Switched`]) in place of the current one, keeping plan
    /// mode and the reasoning effort, and starts its MCP servers. Returns the replaced runner
    /// for the caller to keep or remove its conversation; `None` when a turn holds the agent.
    fn put_in_place(&mut self, switched: super::Switched) -> Option<crate::agent::driver::Runner> {
        let planning = self.planning();
        let mut agent = self.agent_or_notice()?;
        let effort = agent.options_mut().reasoning_effort.clone();
        let old = std::mem::replace(&mut *agent, switched.agent);
        agent.set_planning(planning);
        agent.options_mut().reasoning_effort = effort;
        let names = super::servers::tool_names(&agent);
        let (workflow, todos) = (agent.workflow(), agent.todos());
        let prompted = agent.session().turns() > 0;
        drop(agent);
        self.tool_names = names;
        self.workflow = workflow;
        self.todo_panel = super::TodoPanel::new(todos);
        self.ctx = switched.ctx;
        self.catalog = switched.catalog;
        self.mcp = switched.mcp;
        self.waiting_tools.clear();
        self.waiting_source = None;
        self.waiting_contracts = None;
        self.prompted = prompted;
        self.reset_conversation_state();
        for (level, notice) in &switched.notices {
            self.transcript.notice(*level, notice);
        }
        if !switched.message.is_empty() {
            self.transcript.notice(NoticeLevel::Info, &switched.message);
        }
        self.history_only = None;
        self.open_history_only(switched.history_only);
        if let Some(startup) = switched.startup {
            self.start_up(startup);
        }
        Some(old)
    }

    /// Marks the conversation as history only, saying why.
    pub(super) fn open_history_only(&mut self, history_only: Option<super::HistoryOnly>) {
        if let Some(history_only) = &history_only {
            self.transcript.notice(
                NoticeLevel::Warning,
                &trf(Ui::HistoryOnlyOpened, &[&one_row(&history_only.reason)]),
            );
        }
        self.history_only = history_only;
    }

    /// In a history-only conversation: refuses what would continue it (a prompt, a `!`
    /// command, compaction, a replan), with the code and the fix. `true` when refused.
    pub(super) fn refused_as_history(&mut self) -> bool {
        let Some(history_only) = &self.history_only else {
            return false;
        };
        let message = trf(Ui::HistoryOnlyNotSent, &[&history_only.code]);
        self.transcript.notice(NoticeLevel::Warning, &message);
        true
    }

    /// Rebuilding the chat waits for its MCP servers to start and its queue to empty: a late
    /// startup would hand the old composition's tools to the new agent.
    fn rebuild_busy(&mut self) -> bool {
        if self.starting.is_none() && self.queue.is_empty() {
            return false;
        }
        self.transcript
            .notice(NoticeLevel::Warning, tr(Ui::ResumeBusy));
        true
    }

    /// `/new` or `/clear` in a history-only chat: the chat rebuilt as it started, in a new
    /// conversation (the history-only one is kept, or removed by `/clear`).
    fn fresh_conversation(&mut self, clear: Clear) {
        if self.rebuild_busy() {
            return;
        }
        let switched = match self.services.fresh() {
            Ok(switched) => switched,
            Err(err) => return self.transcript.error(&err),
        };
        let Some(old) = self.put_in_place(*switched) else {
            return;
        };
        let id = old.session().id().to_string();
        match clear {
            Clear::Keep => {
                drop(old);
                self.transcript
                    .notice(NoticeLevel::Info, &trf(Ui::NewConversation, &[&id]));
            }
            Clear::Remove => {
                remove_session(old);
                self.forget_snapshots(&id);
                self.transcript
                    .notice(NoticeLevel::Info, tr(Ui::ConversationCleared));
            }
        }
    }

    pub(super) fn new_conversation(&mut self) {
        if self.history_only.is_some() {
            return self.fresh_conversation(Clear::Keep);
        }
        match self.services.new_session() {
            Ok(session) => {
                let Some(old) = self
                    .agent_or_notice()
                    .map(|mut a| a.replace_session(session))
                else {
                    return;
                };
                self.prompted = false;
                self.reset_conversation_state();
                self.transcript
                    .notice(NoticeLevel::Info, &trf(Ui::NewConversation, &[&old.id()]));
            }
            Err(err) => self.transcript.error(&err),
        }
    }

    pub(super) fn clear_conversation(&mut self) {
        if self.history_only.is_some() {
            return self.fresh_conversation(Clear::Remove);
        }
        match self.services.new_session() {
            Ok(session) => {
                let Some(old) = self
                    .agent_or_notice()
                    .map(|mut a| a.replace_session(session))
                else {
                    return;
                };
                let path = old.path().to_path_buf();
                let id = old.id().to_string();
                drop(old);
                let _ = std::fs::remove_file(&path);
                self.forget_snapshots(&id);
                self.reset_conversation_state();
                self.transcript
                    .notice(NoticeLevel::Info, tr(Ui::ConversationCleared));
            }
            Err(err) => self.transcript.error(&err),
        }
        self.transcript.gap();
    }

    pub(super) fn reset_conversation_state(&mut self) {
        self.totals = Totals::default();
        self.interrupted = false;
        // A goal belongs to its conversation.
        self.clear_goal();
        self.todo_panel.set(Vec::new());
    }

    pub(super) fn model_command(&mut self, args: &str) {
        if args.is_empty() {
            let current = format!("{}/{}", self.provider_name, self.model);
            let mut lines = vec![Line::styled(tr(Ui::ModelsHeading), Style::Heading)];
            for model in self.services.models() {
                let mark = if model == current { "● " } else { "  " };
                let mut line = Line::styled(format!("  {mark}"), Style::Accent);
                line.push(one_row(&model), Style::Plain);
                lines.push(line);
            }
            lines.push(Line::styled(tr(Ui::ModelsHint), Style::Dim));
            self.info_lines(lines);
            return;
        }
        match self.services.switch_model(args) {
            Ok(switch) => {
                let Some(mut agent) = self.agent_or_notice() else {
                    return;
                };
                agent.set_provider(switch.provider, switch.prices);
                drop(agent);
                self.provider_name = switch.provider_name;
                self.model = switch.model;
                self.context_window = switch.context_window;
                self.transcript.notice(
                    NoticeLevel::Info,
                    &trf(Ui::NowUsing, &[&self.provider_name, &self.model]),
                );
            }
            Err(err) => self.transcript.error(&err),
        }
    }

    pub(super) fn effort_command(&mut self, args: &str) {
        if args.is_empty() {
            let Some(current) = self
                .agent_or_notice()
                .map(|mut a| a.options_mut().reasoning_effort.clone())
            else {
                return;
            };
            let text = match current {
                Some(effort) => trf(Ui::EffortIs, &[&effort]),
                None => tr(Ui::EffortDefault).into(),
            };
            self.transcript.notice(NoticeLevel::Info, &text);
            return;
        }
        let value = args.trim().to_ascii_lowercase();
        let effort = match value.as_str() {
            "default" | "none" | "off" => None,
            "minimal" | "low" | "medium" | "high" | "max" | "xhigh" => Some(value.clone()),
            _ => {
                self.transcript.error(&trf(Ui::EffortUnknown, &[&value]));
                return;
            }
        };
        let Some(mut agent) = self.agent_or_notice() else {
            return;
        };
        agent.options_mut().reasoning_effort = effort;
        drop(agent);
        self.transcript
            .notice(NoticeLevel::Info, &trf(Ui::EffortSet, &[&value]));
    }

    pub(super) fn mcp_command(&mut self) {
        let servers = self.mcp.servers();
        let body: Vec<Line> = if servers.is_empty() && self.starting.is_some() {
            vec![Line::plain(tr(Ui::McpStarting))]
        } else if servers.is_empty() {
            vec![
                Line::plain(tr(Ui::McpNone)),
                Line::styled(tr(Ui::McpDeclare), Style::Dim),
            ]
        } else {
            servers
                .iter()
                .map(|s| {
                    let mut line = Line::styled(one_row(&s.name), Style::Bold);
                    line.push(format!("  {}", one_row(&s.status)), Style::Dim);
                    line.push(
                        trf(Ui::McpCounts, &[&s.tools, &s.prompts, &s.resources]),
                        Style::Plain,
                    );
                    line
                })
                .collect()
        };
        self.open_modal(Modal::Info(Choices {
            title: tr(Ui::McpTitle).into(),
            body,
            items: vec![Choice {
                label: tr(Ui::Close).into(),
                key: None,
                value: (),
            }],
            selected: 0,
            on_cancel: Some(()),
        }));
    }

    /// The text a service answered (`/agent`, `/persona`), one line each, or its error.
    fn service_answer(&mut self, answer: Result<String, String>) {
        match answer {
            Ok(text) => {
                let lines = text.lines().map(|l| Line::plain(one_row(l))).collect();
                self.info_lines(lines);
            }
            Err(err) => self.transcript.error(&err),
        }
    }

    pub(super) fn tools_command(&mut self) {
        let mut lines = vec![Line::styled(tr(Ui::ToolsHeading), Style::Heading)];
        for (name, read_only) in &self.tool_names {
            let mut line = Line::styled(format!("  {}", one_row(name)), Style::Bold);
            if *read_only {
                line.push(tr(Ui::ReadOnly), Style::Dim);
            }
            lines.push(line);
        }
        self.info_lines(lines);
    }

    /// `/replan [TEXT]`: only a planner/executor pair has a planner to ask.
    fn replan_command(&mut self, args: &str) {
        let Some(paired) = self.agent_or_notice().map(|a| a.coordinator().is_some()) else {
            return;
        };
        if paired {
            self.start_work(super::Work::Replan(args.trim().to_string()));
        } else {
            self.transcript
                .notice(NoticeLevel::Warning, tr(Ui::ReplanNeedsPlanner));
        }
    }

    pub(super) fn cost_command(&mut self) {
        let u = &self.totals.usage;
        let mut text = trf(
            Ui::CostTotal,
            &[&u.prompt_tokens, &u.cache_hit_tokens, &u.completion_tokens],
        );
        if self.totals.priced {
            text.push_str(&format!(", ${:.4}", self.totals.cost));
        } else {
            text.push_str(tr(Ui::CostUnknown));
        }
        if u.estimated {
            text.push_str(tr(Ui::CostEstimated));
        }
        for model in &self.totals.models {
            text.push_str(&trf(
                Ui::CostModel,
                &[
                    &model.role,
                    &model.model,
                    &model.requests,
                    &model.usage.prompt_tokens,
                    &model.usage.cache_hit_tokens,
                    &model.usage.completion_tokens,
                ],
            ));
            if self.totals.priced {
                text.push_str(&format!(", ${:.4}", model.cost_usd));
            }
        }
        self.transcript.notice(NoticeLevel::Info, &text);
    }

    pub(super) fn status_command(&mut self) {
        let (id, path, messages, composition) = {
            let Some(agent) = self.agent_or_notice() else {
                return;
            };
            let session = agent.session();
            // The binding as the session header keeps it: ID, bound revision, display name.
            let composition = match &session.header.composition {
                Some(b) => trf(Ui::StatusCompositionBound, &[&b.id, &b.revision, &b.name]),
                None => trf(
                    Ui::StatusCompositionUnbound,
                    &[&format!("builtin:{}", crate::composition::builtin::GENERAL)],
                ),
            };
            (
                session.id().to_string(),
                session.path().display().to_string(),
                session.messages().len(),
                composition,
            )
        };
        let policy = self.gate.policy();
        let rows = [
            (
                Ui::StatusModel,
                format!("{}/{}", self.provider_name, self.model),
            ),
            (
                Ui::StatusSession,
                trf(Ui::StatusSessionValue, &[&id, &messages]),
            ),
            (Ui::StatusFile, path),
            (Ui::StatusDirectory, self.cwd.display().to_string()),
            (
                Ui::StatusPermissions,
                trf(
                    Ui::StatusPermissionsValue,
                    &[
                        &self.gate.posture().as_str(),
                        &policy.mode.as_str(),
                        &policy.allow.len(),
                        &policy.ask.len(),
                        &policy.deny.len(),
                        &self.gate.grants().len(),
                    ],
                ),
            ),
            (
                Ui::StatusContextRow,
                if self.context_window > 0 {
                    let ratio = self.totals.context as f64 * 100.0 / self.context_window as f64;
                    trf(
                        Ui::StatusContextValue,
                        &[
                            &self.totals.context,
                            &self.context_window,
                            &format!("{ratio:.0}"),
                        ],
                    )
                } else {
                    trf(Ui::StatusContextNoWindow, &[&self.totals.context])
                },
            ),
            (
                Ui::StatusMcp,
                trf(Ui::StatusMcpValue, &[&self.mcp.servers().len()]),
            ),
            (Ui::StatusComposition, composition),
        ];
        let mut lines = vec![Line::styled(tr(Ui::StatusHeading), Style::Heading)];
        for (key, value) in rows {
            // Padded by display width: a Chinese label is two columns a character.
            let key = tr(key);
            let pad = " ".repeat(12usize.saturating_sub(crate::term::width::str_width(key)));
            let mut line = Line::styled(format!("  {key}{pad}"), Style::Bold);
            line.push(one_row(&value), Style::Plain);
            lines.push(line);
        }
        self.info_lines(lines);
    }

    pub(super) fn resume_picker(&mut self) {
        let Some(current) = self.agent_or_notice().map(|a| a.session().id().to_string()) else {
            return;
        };
        let sessions: Vec<Summary> = self
            .services
            .sessions()
            .into_iter()
            .filter(|s| s.id != current)
            .take(20)
            .collect();
        if sessions.is_empty() {
            self.transcript
                .notice(NoticeLevel::Info, tr(Ui::NoEarlierConversations));
            return;
        }
        let items = sessions
            .into_iter()
            .map(|s| Choice {
                label: format!("{}  {}", s.started, s.preview),
                key: None,
                value: Some(s.path),
            })
            .collect();
        self.open_modal(Modal::Resume(Choices {
            title: tr(Ui::ResumeTitle).into(),
            body: Vec::new(),
            items,
            selected: 0,
            on_cancel: Some(None),
        }));
    }

    /// Continues the conversation at `path` in a chat rebuilt for it: its retained
    /// composition's agent, tools and MCP servers (the CLI applies the checks `--resume` does),
    /// or a history-only view when that cannot run here. A blank conversation left behind is
    /// removed, as at exit.
    pub(super) fn resume(&mut self, path: &Path) {
        if self.rebuild_busy() {
            return;
        }
        match self.services.resume(path) {
            Ok(switched) => {
                let Some(old) = self.put_in_place(*switched) else {
                    return;
                };
                if old.session().turns() == 0 {
                    remove_session(old);
                }
                let Some(agent) = self.idle_agent() else {
                    return;
                };
                let width = self.screen.width();
                let summary = super::resumed::last_exchanges(agent.session().messages(), width);
                let id = agent.session().id().to_string();
                drop(agent);
                self.transcript
                    .notice(NoticeLevel::Info, &trf(Ui::ResumedConversation, &[&id]));
                self.transcript.push_lines(summary);
            }
            Err(err) => self.transcript.error(&err),
        }
        self.transcript.gap();
    }
}

/// Whether `/clear` removes the conversation it replaces (`/new` keeps it).
#[derive(Clone, Copy)]
enum Clear {
    Keep,
    Remove,
}

/// Closes a replaced conversation and removes its file.
fn remove_session(old: crate::agent::driver::Runner) {
    let path = old.session().path().to_path_buf();
    drop(old);
    let _ = std::fs::remove_file(path);
}

/// A prepared message for the UI thread; a prompt that could not render becomes a notice.
pub(super) fn prepared(result: Result<Turn, CommandError>) -> Prepared {
    match result {
        Ok(turn) => Prepared {
            text: Some(turn.text),
            attached: turn.attached,
            notices: turn.notices,
        },
        Err(err) => Prepared {
            text: None,
            attached: Vec::new(),
            notices: vec![err.to_string()],
        },
    }
}

const KEY_HELP: &[(&str, Ui)] = &[
    ("enter", Ui::KeyEnter),
    ("alt-enter, ctrl-j", Ui::KeyNewLine),
    ("esc", Ui::KeyEsc),
    ("ctrl-c", Ui::KeyCtrlC),
    ("ctrl-d", Ui::KeyCtrlD),
    ("shift-tab", Ui::KeyShiftTab),
    ("ctrl-t", Ui::KeyCtrlT),
    ("ctrl-o", Ui::KeyCtrlO),
    ("up, down", Ui::KeyUpDown),
    ("ctrl-a/e/k/u/w", Ui::KeyEditing),
    ("tab", Ui::KeyTab),
    ("ctrl-l", Ui::KeyCtrlL),
    ("ctrl-z", Ui::KeyCtrlZ),
    ("/ @ !", Ui::KeyPrefixes),
];
fn confirm_clear() -> Choices<bool> {
    Choices {
        title: tr(Ui::ClearTitle).into(),
        body: vec![Line::plain(tr(Ui::ClearBody))],
        items: vec![
            Choice {
                label: tr(Ui::ClearYes).into(),
                key: Some('y'),
                value: true,
            },
            Choice {
                label: tr(Ui::LaunchNo).into(),
                key: Some('n'),
                value: false,
            },
        ],
        selected: 1,
        on_cancel: Some(false),
    }
}
