//! Drawing the chat: the screen it draws on, the banner, and each frame's redrawn bottom
//! (live output, queued messages, a modal or the menu and the composer, the status line).
//! What the transcript commits above it is the transcript's job.

use std::io;
use std::time::Instant;

use super::{Chat, Modal};
use crate::agent::events::NoticeLevel;
use crate::i18n::{tr, trf, Ui};
use crate::permission::Posture;
use crate::term::ansi::{ColorMode, Line, Palette, Style};
use crate::term::sanitize::one_row;
use crate::term::screen::Screen;
use crate::term::sys;
use crate::term::transcript;

/// The screen on stdout at the terminal's size, colours decided once from the environment.
pub(super) fn terminal_screen(cursor: &'static str) -> Screen<io::Stdout> {
    let size = sys::window_size(1).unwrap_or((80, 24));
    let color = ColorMode::detect(
        true,
        std::env::var("TERM").ok().as_deref(),
        std::env::var("NO_COLOR").ok().as_deref(),
    );
    Screen::new(
        io::stdout(),
        Palette::new(color),
        (size.0 as usize, size.1 as usize),
        cursor,
    )
}

impl Chat {
    pub(super) fn draw(&mut self) {
        let commit = self.transcript.take();
        let (bottom, cursor) = self.bottom();
        if self.screen.draw(&commit, &bottom, cursor).is_err() {
            // The terminal is gone (hang-up); nothing more can be shown.
            self.quit.get_or_insert(1);
        }
    }

    /// The redrawn region: live output, queued messages, then a modal or the menu and the
    /// composer, then the status line.
    fn bottom(&self) -> (Vec<Line>, Option<(usize, usize)>) {
        let now = Instant::now();
        let width = self.screen.width();
        let mut rows = self
            .transcript
            .live(now, self.turn.as_ref().map(|t| t.started));
        for (started, what) in [
            (self.preparing, tr(Ui::Preparing)),
            (self.starting, tr(Ui::StartingServers)),
        ] {
            if let Some(started) = started {
                let waited = transcript::seconds(now - started);
                rows.push(Line::styled(format!("… {what} {waited}"), Style::Dim));
            }
        }
        if let Some((_, started, command)) = &self.shell {
            rows.push(Line::styled(
                trf(
                    Ui::ShellRunning,
                    &[&one_row(command), &transcript::seconds(now - *started)],
                ),
                Style::Dim,
            ));
        }
        for pending in &self.queue {
            rows.push(
                Line::styled(trf(Ui::Queued, &[&one_row(&pending.display)]), Style::Dim)
                    .truncated(width),
            );
        }
        let mut cursor = None;
        let height = self.screen.height();
        match &self.modal {
            Some(modal) if !modal.owns_input() => rows.extend(render_modal(
                modal,
                width,
                height.saturating_sub(rows.len() + 1),
            )),
            overlay => {
                rows.extend(self.todo_panel.render(width, self.turn.is_some()));
                match overlay {
                    Some(modal) => rows.extend(render_modal(modal, width, height)),
                    None => {
                        if let Some(menu) = &self.menu {
                            rows.extend(menu.render(width));
                        }
                    }
                }
                rows.push(Line::styled(
                    "─".repeat(width.saturating_sub(1)),
                    Style::Frame,
                ));
                let layout = self.editor.layout(width.saturating_sub(1), 2);
                cursor = Some((rows.len() + layout.cursor_row, layout.cursor_col));
                for (i, text) in layout.rows.iter().enumerate() {
                    let mut line = Line::styled(if i == 0 { "› " } else { "  " }, Style::Accent);
                    line.push(text.clone(), Style::Plain);
                    rows.push(line);
                }
                if self.editor.is_empty() && !self.busy() {
                    if let Some(first) = rows.last_mut() {
                        first.push(tr(Ui::Placeholder), Style::Dim);
                    }
                }
            }
        }
        rows.push(self.status_line(width));
        (rows, cursor)
    }

    fn status_line(&self, width: usize) -> Line {
        let posture = self.gate.posture();
        let posture_style = match posture {
            Posture::Ask | Posture::Strict => Style::Status,
            Posture::Auto => Style::Warning,
            Posture::Yolo => Style::Error,
        };
        let mut line = Line::styled(format!("{} · ", one_row(&self.model)), Style::Status);
        line.push(posture_label(posture), posture_style);
        let mode = if self.planning() {
            tr(Ui::ModePlan)
        } else if let Some(goal) = self.goal_label() {
            goal
        } else {
            tr(Ui::ModeNormal)
        };
        // English leaves the normal mode unnamed, so its label is empty.
        if !mode.is_empty() {
            line.push(" · ", Style::Status);
            line.push(mode, Style::Accent);
        }
        let usage = &self.totals.usage;
        let mut parts = vec![format!(
            "↑{} ↓{}",
            short_count(usage.prompt_tokens),
            short_count(usage.completion_tokens)
        )];
        if let Some(ratio) = usage.cache_hit_ratio() {
            parts.push(trf(Ui::StatusCache, &[&format!("{:.0}", ratio * 100.0)]));
        }
        // A planner/executor pair: each model's cache hits, which is what the pair is for.
        for model in &self.totals.models {
            if let Some(ratio) = model.usage.cache_hit_ratio() {
                parts.push(format!("{} {:.0}%", model.role, ratio * 100.0));
            }
        }
        if self.context_window > 0 {
            let ratio = self.totals.context as f64 * 100.0 / self.context_window as f64;
            parts.push(trf(Ui::StatusContext, &[&format!("{ratio:.0}")]));
        }
        if self.totals.priced {
            parts.push(format!("${:.4}", self.totals.cost));
        }
        line.push(format!(" · {}", parts.join(" · ")), Style::Status);
        if self.exit_armed {
            line.push(tr(Ui::StatusExitArmed), Style::Warning);
        } else {
            line.push(tr(Ui::StatusHint), Style::Dim);
        }
        line.truncated(width.saturating_sub(1))
    }

    pub(super) fn banner(&mut self, notices: &[(NoticeLevel, String)]) {
        let mut title = Line::styled("reasonix ", Style::Heading);
        title.push(crate::VERSION, Style::Dim);
        title.push(
            format!(
                "  {}/{} · {}",
                one_row(&self.provider_name),
                one_row(&self.model),
                self.cwd.display()
            ),
            Style::Dim,
        );
        self.transcript.push_line(title);
        self.transcript
            .push_line(Line::styled(tr(Ui::BannerHint), Style::Dim));
        for (level, notice) in notices {
            self.transcript.notice(*level, notice);
        }
        for notice in self.catalog.notices.clone() {
            self.transcript.notice(NoticeLevel::Warning, &notice);
        }
        self.transcript.gap();
    }
}

/// The posture's name in the status line (the spec's labels in Chinese).
pub(super) fn posture_label(posture: Posture) -> &'static str {
    tr(match posture {
        Posture::Ask => Ui::PostureAsk,
        Posture::Auto => Ui::PostureAuto,
        Posture::Yolo => Ui::PostureYolo,
        Posture::Strict => Ui::PostureStrict,
    })
}

/// A modal in `height` rows at most (only the plan review needs to know).
fn render_modal(modal: &Modal, width: usize, height: usize) -> Vec<Line> {
    match modal {
        Modal::Ask(card, _) => card.render(width),
        Modal::Plan(card, _) => card.render(width, height),
        Modal::Approval(choices, _) => choices.render(width),
        Modal::Launch(choices, _) => choices.render(width),
        Modal::ConfirmClear(choices) => choices.render(width),
        Modal::Resume(choices) => choices.render(width),
        Modal::Info(choices) => choices.render(width),
        Modal::Memory(view) => view.render(width, height),
        Modal::Rewind(rewind) => rewind.render(width),
    }
}

use crate::term::children::short_count;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_short() {
        assert_eq!(short_count(999), "999");
        assert_eq!(short_count(12_345), "12.3k");
        assert_eq!(short_count(2_500_000), "2.5M");
    }
}
