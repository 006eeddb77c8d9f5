//! The task-list panel above the input: the model's current todo list, redrawn in place in
//! the bottom region so an update never scrolls the transcript. It reads the list the agent
//! shares (`Agent::todos`) every frame rather than keeping a copy from `Event::Todo`, so it
//! is right whichever tool changed the list and whether or not an event said so. At most
//! [`MAX_ROWS`] task rows, keeping the task in progress in view, with "+N more" for the rest;
//! Ctrl-T hides and shows it; it also hides once the turn is over and every task is done.

use std::sync::{Arc, Mutex, PoisonError};

use crate::i18n::{trf, Ui};
use crate::term::ansi::{Line, Style};
use crate::term::sanitize::one_row;
use crate::tool::builtin::todo::{TodoItem, TodoStatus};

/// Task rows shown at most (the "+N more" line counts as one).
const MAX_ROWS: usize = 8;

pub(super) struct TodoPanel {
    items: Arc<Mutex<Vec<TodoItem>>>,
    /// Ctrl-T's choice.
    hidden: bool,
}

impl TodoPanel {
    pub(super) fn new(items: Arc<Mutex<Vec<TodoItem>>>) -> TodoPanel {
        TodoPanel {
            items,
            hidden: false,
        }
    }

    /// Replaces the shared list (a new conversation starts without one).
    pub(super) fn set(&self, items: Vec<TodoItem>) {
        *self.items.lock().unwrap_or_else(PoisonError::into_inner) = items;
    }

    /// Ctrl-T; returns whether the panel is now hidden.
    pub(super) fn toggle(&mut self) -> bool {
        self.hidden = !self.hidden;
        self.hidden
    }

    /// The panel's rows; none when hidden, empty, or finished with no turn running.
    pub(super) fn render(&self, width: usize, turn_running: bool) -> Vec<Line> {
        let items = self.items.lock().unwrap_or_else(PoisonError::into_inner);
        self.render_items(&items, width, turn_running)
    }

    fn render_items(&self, items: &[TodoItem], width: usize, turn_running: bool) -> Vec<Line> {
        let done = items
            .iter()
            .filter(|i| i.status == TodoStatus::Completed)
            .count();
        if self.hidden || items.is_empty() || (done == items.len() && !turn_running) {
            return Vec::new();
        }
        let mut out = vec![Line::styled(
            trf(Ui::TodoHeader, &[&done, &items.len()]),
            Style::Dim,
        )];
        let (start, end) = window(items);
        let hidden_before = start;
        let hidden_after = items.len() - end;
        for item in &items[start..end] {
            // Sub-steps sit under their phase.
            let indent = "  ".repeat(1 + usize::from(item.level > 0));
            let (mark, text, style) = match item.status {
                TodoStatus::Completed => ("✔ ", item.content.as_str(), Style::Dim),
                TodoStatus::InProgress => (
                    "◼ ",
                    item.active_form.as_deref().unwrap_or(&item.content),
                    Style::Accent,
                ),
                TodoStatus::Pending => ("◻ ", item.content.as_str(), Style::Plain),
            };
            let mut line = Line::styled(format!("{indent}{mark}"), style);
            line.push(one_row(text), style);
            out.push(line.truncated(width.saturating_sub(1)));
        }
        if hidden_before + hidden_after > 0 {
            out.push(Line::styled(
                trf(Ui::TodoMore, &[&(hidden_before + hidden_after)]),
                Style::Dim,
            ));
        }
        out
    }
}

/// The slice of tasks shown: all of them when they fit, else `MAX_ROWS - 1` rows starting a
/// little before the task in progress (or the first unfinished one).
fn window(items: &[TodoItem]) -> (usize, usize) {
    if items.len() <= MAX_ROWS {
        return (0, items.len());
    }
    let rows = MAX_ROWS - 1;
    let focus = items
        .iter()
        .position(|i| i.status == TodoStatus::InProgress)
        .or_else(|| items.iter().position(|i| i.status != TodoStatus::Completed))
        .unwrap_or(items.len() - 1);
    let start = focus.saturating_sub(2).min(items.len() - rows);
    (start, start + rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(n: usize, status: TodoStatus) -> TodoItem {
        TodoItem {
            id: n.to_string(),
            content: format!("task {n}"),
            status,
            active_form: None,
            level: 0,
        }
    }

    #[test]
    fn sub_steps_are_indented_under_their_phase() {
        let panel = TodoPanel::new(Arc::default());
        let mut step = item(2, TodoStatus::InProgress);
        step.level = 1;
        *panel.items.lock().unwrap() = vec![item(1, TodoStatus::Pending), step];
        let lines = text(&panel, true);
        assert!(lines[1].starts_with("  ◻ task 1"), "{lines:?}");
        assert!(lines[2].starts_with("    ◼ task 2"), "{lines:?}");
    }

    fn text(panel: &TodoPanel, running: bool) -> Vec<String> {
        panel.render(60, running).iter().map(Line::text).collect()
    }

    #[test]
    fn long_lists_keep_the_active_task_in_view() {
        let panel = TodoPanel::new(Arc::default());
        let items: Vec<TodoItem> = (1..=20)
            .map(|n| {
                let status = match n {
                    1..=11 => TodoStatus::Completed,
                    12 => TodoStatus::InProgress,
                    _ => TodoStatus::Pending,
                };
                item(n, status)
            })
            .collect();
        panel.set(items);
        let lines = text(&panel, true);
        assert_eq!(lines[0], "  Tasks 11/20 · ctrl-t hides");
        assert_eq!(lines.len(), 1 + MAX_ROWS, "{lines:?}");
        assert!(lines.contains(&"  ◼ task 12".to_string()), "{lines:?}");
        assert!(lines.contains(&"  ✔ task 10".to_string()), "{lines:?}");
        assert_eq!(lines.last().unwrap(), "    +13 more");
    }

    #[test]
    fn hidden_when_toggled_empty_or_finished_after_the_turn() {
        let mut panel = TodoPanel::new(Arc::default());
        assert!(text(&panel, true).is_empty());
        panel.set(vec![
            item(1, TodoStatus::Completed),
            item(2, TodoStatus::Pending),
        ]);
        assert_eq!(text(&panel, false).len(), 3);
        assert!(panel.toggle());
        assert!(text(&panel, true).is_empty());
        assert!(!panel.toggle());
        panel.set(vec![item(1, TodoStatus::Completed)]);
        assert_eq!(text(&panel, true).len(), 2, "shown while the turn runs");
        assert!(text(&panel, false).is_empty());
    }
}
