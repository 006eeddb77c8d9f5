//! MCP servers in the chat: starting them on their own thread once the chat is on screen,
//! handing their tools to the agent when it is idle, and showing their log and progress
//! notifications.

use std::time::Instant;

use super::{Chat, LostGuard, Msg, Started, Startup};
use crate::agent::events::NoticeLevel;
use crate::agent::runner::Agent;
use crate::command::{self as commands, Catalog};
use crate::i18n::{tr, Ui};

impl Chat {
    /// Server logs and progress: progress is shown when it says something new or finishes,
    /// so a chatty server cannot flood the transcript.
    pub(super) fn on_mcp_event(&mut self, event: crate::mcp::client::ServerEvent) {
        use crate::mcp::client::ServerEvent;
        let text = match event {
            ServerEvent::Log {
                server,
                level,
                text,
            } => format!("{server} ({level}): {text}"),
            ServerEvent::Progress {
                server,
                progress,
                total,
                message,
            } => {
                let done = total.is_some_and(|t| progress >= t);
                let said = message.clone().unwrap_or_default();
                let previous = self.mcp_progress.insert(server.clone(), said.clone());
                if !done && previous.as_deref() == Some(said.as_str()) {
                    return;
                }
                let amount = match total {
                    Some(total) => format!("{progress}/{total}"),
                    None => format!("{progress}"),
                };
                match message {
                    Some(message) => format!("{server}: {amount} {message}"),
                    None => format!("{server}: {amount}"),
                }
            }
        };
        self.transcript.notice(NoticeLevel::Info, &text);
    }

    pub(super) fn start_up(&mut self, startup: Startup) {
        let tx = self.tx.clone();
        let spawned = std::thread::Builder::new()
            .name("mcp-startup".into())
            .spawn(move || {
                let mut guard =
                    LostGuard::new(tx.clone(), Msg::Started(Err(tr(Ui::ServersLost).into())));
                let started = startup();
                guard.done();
                let _ = tx.send(Msg::Started(Ok(started)));
            });
        match spawned {
            Ok(_) => self.starting = Some(Instant::now()),
            Err(_) => self.transcript.error(tr(Ui::ServersNoThread)),
        }
    }

    pub(super) fn on_started(&mut self, started: Result<Started, String>) {
        match started {
            Ok(started) => {
                for notice in &started.notices {
                    self.transcript.notice(NoticeLevel::Warning, notice);
                }
                self.mcp = started.mcp;
                let custom = self
                    .catalog
                    .entries()
                    .iter()
                    .filter_map(|e| match &e.kind {
                        commands::Kind::Custom(command) => Some(command.clone()),
                        _ => None,
                    })
                    .collect();
                self.catalog = Catalog::new(custom, self.mcp.prompts());
                self.waiting_tools = started.tools;
                self.waiting_source = started.source;
                self.waiting_contracts = started.contracts;
            }
            Err(err) => self.transcript.error(&err),
        }
        self.install_tools();
    }

    /// Gives the agent the started servers' tools once no turn holds it (a `/compact` may),
    /// then lets the waiting messages go.
    pub(super) fn install_tools(&mut self) {
        if !self.waiting_tools.is_empty()
            || self.waiting_source.is_some()
            || self.waiting_contracts.is_some()
        {
            let tools = std::mem::take(&mut self.waiting_tools);
            let source = self.waiting_source.take();
            let contracts = self.waiting_contracts.take();
            let Some(mut agent) = self.idle_agent() else {
                self.waiting_tools = tools;
                self.waiting_source = source;
                self.waiting_contracts = contracts;
                return;
            };
            agent.add_tools(tools);
            if let Some(source) = source {
                agent.set_tool_source(source);
            }
            let recorded = contracts.map(|c| agent.record_mcp_contracts(c));
            let names = tool_names(&agent);
            drop(agent);
            self.tool_names = names;
            if let Some(Err(err)) = recorded {
                self.transcript.error(&err.to_string());
            }
        }
        self.starting = None;
        self.next_in_queue();
    }
}

/// Each tool's name and whether it is read-only, for `/tools`.
pub(super) fn tool_names(agent: &Agent) -> Vec<(String, bool)> {
    let tools = agent.tools();
    tools
        .names()
        .into_iter()
        .map(|n| {
            let read_only = tools.get(&n).is_some_and(|t| t.read_only());
            (n, read_only)
        })
        .collect()
}
