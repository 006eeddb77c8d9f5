//! The plan review modal: the plan `exit_plan_mode` proposed, rendered as Markdown and
//! scrollable (PgUp/PgDn, Home/End) when taller than the room, above three choices: approve,
//! approve and auto-accept edits, keep planning. Keep planning switches to an input-owned
//! overlay where the composer takes the feedback (Enter sends it, Esc goes back to the plan);
//! Esc on the modal keeps planning with no feedback. No posture answers it.

use std::cell::Cell;

use crate::i18n::{tr, trf, Ui};
use crate::term::ansi::{Line, Style};
use crate::term::keys::Key;
use crate::term::markdown::Markdown;
use crate::term::modal::{Choice, Choices, Outcome};
use crate::tool::collab::PlanReview;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    Approve,
    AcceptEdits,
    Keep,
    /// Esc: keep planning without feedback.
    Close,
}

/// What a key did to the modal.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum PlanKey {
    Pending,
    Review(PlanReview),
    /// The feedback overlay opened: the composer takes the keys.
    StartTyping,
    /// The overlay closed; the plan is back.
    BackToPlan,
    /// A key for the composer (the overlay is open).
    Edit(Key),
}

/// Rows the modal keeps for itself besides the plan: title, spacer, three choices, the
/// scroll line, the footer.
const CHROME_ROWS: usize = 7;

pub(super) struct PlanCard {
    plan: String,
    choices: Choices<Pick>,
    /// The first plan row shown.
    scroll: usize,
    /// The plan rows shown by the last frame, so paging moves by what the user sees.
    page: Cell<usize>,
    /// How far the last frame could scroll.
    max_scroll: Cell<usize>,
    typing: bool,
}

impl PlanCard {
    pub(super) fn new(plan: String) -> PlanCard {
        let choice = |label: &str, key, value| Choice {
            label: label.into(),
            key: Some(key),
            value,
        };
        PlanCard {
            plan,
            choices: Choices {
                title: tr(Ui::PlanTitle).into(),
                body: Vec::new(),
                items: vec![
                    choice(tr(Ui::PlanApprove), 'y', Pick::Approve),
                    choice(tr(Ui::PlanApproveAuto), 'a', Pick::AcceptEdits),
                    choice(tr(Ui::PlanKeep), 'n', Pick::Keep),
                ],
                selected: 0,
                on_cancel: Some(Pick::Close),
            },
            scroll: 0,
            page: Cell::new(1),
            max_scroll: Cell::new(0),
            typing: false,
        }
    }

    pub(super) fn owns_input(&self) -> bool {
        self.typing
    }

    /// Handles `key`; `typed` is the composer's text, sent as the feedback on Enter while the
    /// overlay is open. Ctrl-C is the chat's (it interrupts the turn) and does nothing here.
    pub(super) fn key(&mut self, key: Key, typed: &str) -> PlanKey {
        if key == Key::Ctrl('c') {
            return PlanKey::Pending;
        }
        if self.typing {
            return match key {
                Key::Enter => PlanKey::Review(PlanReview::KeepPlanning(typed.trim().to_string())),
                Key::Esc => {
                    self.typing = false;
                    PlanKey::BackToPlan
                }
                other => PlanKey::Edit(other),
            };
        }
        let page = self.page.get().max(1);
        let max = self.max_scroll.get();
        match key {
            Key::PageDown | Key::Char(' ') => self.scroll = (self.scroll + page).min(max),
            Key::PageUp => self.scroll = self.scroll.saturating_sub(page),
            Key::Home => self.scroll = 0,
            Key::End => self.scroll = max,
            other => {
                return match self.choices.key(&other) {
                    Outcome::Chosen(Pick::Approve) => PlanKey::Review(PlanReview::Approve),
                    Outcome::Chosen(Pick::AcceptEdits) => {
                        PlanKey::Review(PlanReview::ApproveAcceptEdits)
                    }
                    Outcome::Chosen(Pick::Keep) => {
                        self.typing = true;
                        PlanKey::StartTyping
                    }
                    Outcome::Chosen(Pick::Close) | Outcome::Closed => {
                        PlanKey::Review(PlanReview::KeepPlanning(String::new()))
                    }
                    Outcome::Pending => PlanKey::Pending,
                }
            }
        }
        PlanKey::Pending
    }

    fn plan_lines(&self, width: usize) -> Vec<Line> {
        let mut markdown = Markdown::new(width.saturating_sub(2));
        let mut lines = markdown.push(&self.plan);
        lines.extend(markdown.finish());
        while lines.last().is_some_and(|l| l.text().trim().is_empty()) {
            lines.pop();
        }
        lines
    }

    /// The modal in at most `height` rows, or while typing the lines above the composer.
    pub(super) fn render(&self, width: usize, height: usize) -> Vec<Line> {
        if self.typing {
            return vec![
                Line::styled(format!("╭─ {}", tr(Ui::PlanKeepTitle)), Style::Frame),
                Line::styled(tr(Ui::PlanKeepFooter), Style::Frame),
            ];
        }
        let lines = self.plan_lines(width);
        let room = height.saturating_sub(CHROME_ROWS).max(3);
        let max_scroll = lines.len().saturating_sub(room);
        self.max_scroll.set(max_scroll);
        self.page.set(room);
        let scroll = self.scroll.min(max_scroll);
        let shown: Vec<Line> = lines.iter().skip(scroll).take(room).cloned().collect();
        let mut choices = Choices {
            title: self.choices.title.clone(),
            body: shown,
            items: self
                .choices
                .items
                .iter()
                .map(|item| Choice {
                    label: item.label.clone(),
                    key: item.key,
                    value: (),
                })
                .collect(),
            selected: self.choices.selected,
            on_cancel: None,
        };
        if max_scroll > 0 {
            choices.body.push(Line::styled(
                trf(
                    Ui::PlanRows,
                    &[
                        &(scroll + 1),
                        &(scroll + room).min(lines.len()),
                        &lines.len(),
                    ],
                ),
                Style::Dim,
            ));
        }
        let mut out = choices.render(width);
        out.pop();
        out.push(Line::styled(tr(Ui::PlanFooter), Style::Frame));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(card: &PlanCard, height: usize) -> Vec<String> {
        card.render(60, height).iter().map(Line::text).collect()
    }

    #[test]
    fn the_plan_is_markdown_and_choices_answer() {
        let mut c = PlanCard::new("## Steps\n\n1. Read **main.rs**\n2. Fix it\n".into());
        let lines = text(&c, 30);
        assert!(lines.contains(&"│ Steps".to_string()), "{lines:?}");
        assert!(lines.iter().any(|l| l == "│ 1. Read main.rs"), "{lines:?}");
        assert!(!lines.iter().any(|l| l.contains("pgup")), "{lines:?}");
        assert_eq!(
            c.key(Key::Char('y'), ""),
            PlanKey::Review(PlanReview::Approve)
        );
        assert_eq!(
            c.key(Key::Char('2'), ""),
            PlanKey::Review(PlanReview::ApproveAcceptEdits)
        );
        assert_eq!(
            c.key(Key::Esc, ""),
            PlanKey::Review(PlanReview::KeepPlanning(String::new()))
        );
        assert_eq!(c.key(Key::Ctrl('c'), ""), PlanKey::Pending);
    }

    #[test]
    fn keep_planning_takes_feedback_in_the_composer() {
        let mut c = PlanCard::new("1. a\n".into());
        c.key(Key::Down, "");
        c.key(Key::Down, "");
        assert_eq!(c.key(Key::Enter, ""), PlanKey::StartTyping);
        assert!(c.owns_input());
        assert!(!text(&c, 30).iter().any(|l| l.contains("1. a")));
        assert_eq!(c.key(Key::Char('x'), ""), PlanKey::Edit(Key::Char('x')));
        assert_eq!(c.key(Key::Esc, "x"), PlanKey::BackToPlan);
        assert_eq!(c.key(Key::Char('n'), ""), PlanKey::StartTyping);
        assert_eq!(
            c.key(Key::Enter, " smaller steps "),
            PlanKey::Review(PlanReview::KeepPlanning("smaller steps".into()))
        );
    }

    #[test]
    fn a_tall_plan_scrolls_by_pages() {
        let plan: String = (1..=40).map(|i| format!("- step {i}\n")).collect();
        let mut c = PlanCard::new(plan);
        let first = text(&c, 17);
        assert_eq!(first.len(), 17, "{first:?}");
        assert!(first.iter().any(|l| l == "│ • step 1"), "{first:?}");
        assert!(
            first.iter().any(|l| l.contains("rows 1-10 of 40")),
            "{first:?}"
        );
        c.key(Key::PageDown, "");
        let second = text(&c, 17);
        assert!(second.iter().any(|l| l == "│ • step 11"), "{second:?}");
        assert!(!second.iter().any(|l| l == "│ • step 1"), "{second:?}");
        c.key(Key::End, "");
        assert!(text(&c, 17).iter().any(|l| l == "│ • step 40"));
        c.key(Key::PageUp, "");
        c.key(Key::PageUp, "");
        c.key(Key::PageUp, "");
        c.key(Key::PageUp, "");
        assert!(text(&c, 17).iter().any(|l| l == "│ • step 1"));
    }
}
