//! Sending a message: what Enter does with the composer's text (a `!` command, a slash
//! command or a message), the queue of messages waiting for the running turn, and preparing
//! a message off the UI thread ([`Chat::prepare`]: `@` references, MCP prompts) before its
//! turn starts.

use std::sync::Arc;
use std::time::Instant;

use super::{builtins, Chat, Msg, Pending, Prepared};
use crate::agent::events::NoticeLevel;
use crate::i18n::{tr, Ui};
use crate::term::ansi::{Line, Style};
use crate::term::sanitize::one_row;

impl Chat {
    pub(super) fn submit(&mut self) {
        self.menu = None;
        let text = self.editor.submit();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        crash_failpoint(trimmed);
        if let Some(command) = trimmed.strip_prefix('!') {
            self.shell(command.trim().to_string());
        } else {
            self.typed(trimmed.to_string());
        }
    }

    pub(super) fn send(&mut self, pending: Pending) {
        if self.history_only.is_some() {
            if !pending.display.is_empty() {
                self.transcript.user_message(&pending.display);
            }
            self.refused_as_history();
            return;
        }
        if self.busy() || self.starting.is_some() || !self.queue.is_empty() {
            self.queue.push_back(pending);
            return;
        }
        self.prepare(pending);
    }

    /// Resolves `@` references or renders an MCP prompt off this thread.
    fn prepare(&mut self, pending: Pending) {
        // A goal's first message was shown as the `/goal` that started it.
        if !pending.display.is_empty() {
            self.transcript.user_message(&pending.display);
        }
        self.preparing = Some(Instant::now());
        let tx = self.tx.clone();
        let cwd = self.cwd.clone();
        let mcp = Arc::clone(&self.mcp);
        let sandbox = Arc::clone(&self.ctx.sandbox);
        let spawned = std::thread::Builder::new()
            .name("prepare".into())
            .spawn(move || {
                let prepared = builtins::prepared(pending.prepare(&cwd, &sandbox, mcp.as_ref()));
                let _ = tx.send(Msg::Prepared(prepared));
            });
        if spawned.is_err() {
            self.preparing = None;
            self.transcript.error(tr(Ui::PrepareNoThread));
        }
    }

    pub(super) fn on_prepared(&mut self, prepared: Prepared) {
        self.preparing = None;
        for notice in &prepared.notices {
            self.transcript.notice(NoticeLevel::Warning, notice);
        }
        if !prepared.attached.is_empty() {
            self.transcript.push_line(Line::styled(
                crate::i18n::trf(
                    crate::i18n::Ui::Attached,
                    &[&one_row(&prepared.attached.join(", "))],
                ),
                Style::Dim,
            ));
        }
        match prepared.text {
            Some(text) if self.exiting.is_none() && self.quit.is_none() => self.start_turn(text),
            _ => self.next_in_queue(),
        }
    }

    pub(super) fn next_in_queue(&mut self) {
        if self.busy() || self.starting.is_some() {
            return;
        }
        if let Some(next) = self.queue.pop_front() {
            self.prepare(next);
        }
    }
}

/// Debug builds only: `REASONIX_FAILPOINTS=ui-panic` makes the input `/__panic` panic on the UI
/// thread, so the end-to-end tests can prove a crash leaves the terminal usable. Release
/// builds compile this to nothing.
fn crash_failpoint(input: &str) {
    if cfg!(debug_assertions)
        && input == "/__panic"
        && std::env::var("REASONIX_FAILPOINTS").is_ok_and(|v| v.split(',').any(|f| f == "ui-panic"))
    {
        panic!("failpoint ui-panic");
    }
}
