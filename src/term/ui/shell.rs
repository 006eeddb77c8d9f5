//! `!command`: runs one shell command through the permission gate on its own thread, and
//! shows its output folded in the transcript.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::{Chat, Msg};
use crate::agent::events::NoticeLevel;
use crate::cancel::CancelToken;
use crate::i18n::{tr, Ui};
use crate::permission::Gate;
use crate::term::ansi::{Line, Style};
use crate::term::sanitize::one_row;

/// Rows of `!command` output shown when not verbose.
const SHELL_ROWS: usize = 12;

impl Chat {
    pub(super) fn shell(&mut self, command: String) {
        if command.is_empty() {
            return;
        }
        self.transcript.gap();
        let mut echo = Line::styled("! ", Style::Accent);
        echo.push(one_row(&command), Style::Bold);
        self.transcript.push_line(echo);
        if self.refused_as_history() {
            return;
        }
        if self.busy() {
            self.transcript
                .notice(NoticeLevel::Warning, tr(Ui::ShellWhileTurn));
            return;
        }
        let cancel = CancelToken::new();
        let mut ctx = self.ctx.clone();
        ctx.cancel = cancel.clone();
        let gate = Arc::clone(&self.gate);
        let tx = self.tx.clone();
        let shown = command.clone();
        let spawned = std::thread::Builder::new()
            .name("shell".into())
            .spawn(move || {
                let args = json!({ "command": command });
                let bash = crate::tool::builtin::all()
                    .into_iter()
                    .find(|t| t.name() == "bash");
                let result = match bash {
                    None => Err(tr(Ui::ShellNoBash).into()),
                    Some(tool) => {
                        // Judged as the bash tool is, so every `Bash(...)` rule applies.
                        let verdict = gate.check_declared("bash", tool.profile(), &args);
                        if verdict.allowed {
                            tool.execute(&args, &ctx).map_err(|e| e.to_string())
                        } else {
                            Err(verdict
                                .message
                                .unwrap_or_else(|| tr(Ui::ShellBlocked).into()))
                        }
                    }
                };
                let _ = tx.send(Msg::ShellDone(result));
            });
        match spawned {
            Ok(_) => self.shell = Some((cancel, Instant::now(), shown)),
            Err(_) => self.transcript.error(tr(Ui::ShellNoThread)),
        }
    }

    pub(super) fn on_shell_done(&mut self, result: Result<String, String>) {
        self.shell = None;
        let rows = if self.transcript.verbose() {
            200
        } else {
            SHELL_ROWS
        };
        let (text, style) = match &result {
            Ok(output) => (output.as_str(), Style::Plain),
            Err(err) => (err.as_str(), Style::Error),
        };
        let text = crate::term::sanitize::for_display(text);
        let lines: Vec<&str> = text.trim_end().lines().collect();
        if lines.is_empty() {
            self.transcript.push_line(Line::styled(
                crate::i18n::tr(crate::i18n::Ui::NoOutput),
                Style::Dim,
            ));
        }
        let width = self.screen.width();
        for (i, line) in lines.iter().take(rows).enumerate() {
            let mut row = Line::styled(if i == 0 { "  ⎿ " } else { "    " }, Style::Dim);
            row.push(
                crate::term::width::truncate(line, width.saturating_sub(5)),
                style,
            );
            self.transcript.push_line(row);
        }
        if lines.len() > rows {
            self.transcript.push_line(Line::styled(
                crate::i18n::trf(crate::i18n::Ui::MoreLines, &[&(lines.len() - rows)]),
                Style::Dim,
            ));
        }
        self.transcript.gap();
        self.next_in_queue();
    }
}
