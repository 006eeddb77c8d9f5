//! The `/memory` modal: saved facts, active then archived, with a search field; a fact opens
//! read-only, `f` forgets an active one and `r` restores an archived one. These are the
//! user's own explicit actions, so no approval is asked (unlike the model's `forget`). The
//! files, the index and the archive are `tool::memory_store`'s job; this file owns the keys
//! and the drawing.

use super::{Chat, Modal};
use crate::agent::events::NoticeLevel;
use crate::i18n::{tr, trf, Ui};
use crate::term::ansi::{Line, Style};
use crate::term::keys::Key;
use crate::term::sanitize::{for_display, one_row};
use crate::tool::memory_store::{Fact, Store};

/// Where the keys go.
enum Focus {
    List,
    Search,
    /// A fact open read-only, scrolled by this many rows.
    Read(Fact, usize),
}

pub(super) struct MemoryView {
    /// `None`: the run has no state directory, so there is no memory.
    store: Option<Store>,
    query: String,
    focus: Focus,
    /// The facts the query shows, active before archived when there is no query.
    facts: Vec<Fact>,
    selected: usize,
    /// Active and archived facts in the store, counted when the list is reloaded (a frame
    /// is drawn often; the directory is read only after a key).
    counts: (usize, usize),
    /// What the last action did, shown under the list.
    notice: Option<(NoticeLevel, String)>,
}

/// What a key did.
pub(super) enum Outcome {
    Pending,
    Closed,
    /// An action was carried out (or refused); the chat records it in the transcript too.
    Notice(NoticeLevel, String),
}

impl Chat {
    /// `/memory`: opens the modal on the run's memory directory.
    pub(super) fn memory_command(&mut self) {
        let store = self.ctx.state.as_ref().map(|s| Store::new(&s.memory));
        self.open_modal(Modal::Memory(MemoryView::new(store)));
    }
}

impl MemoryView {
    pub(super) fn new(store: Option<Store>) -> MemoryView {
        let mut view = MemoryView {
            store,
            query: String::new(),
            focus: Focus::List,
            facts: Vec::new(),
            selected: 0,
            counts: (0, 0),
            notice: None,
        };
        view.refresh();
        view
    }

    /// Reloads the list from disk for the current query, keeping the selection in range.
    fn refresh(&mut self) {
        let all = self.store.as_ref().map(Store::all).unwrap_or_default();
        let active = all.iter().filter(|f| f.is_active()).count();
        self.counts = (active, all.len() - active);
        self.facts = match &self.store {
            Some(store) => store.filter(&self.query),
            None => Vec::new(),
        };
        self.selected = self.selected.min(self.facts.len().saturating_sub(1));
    }

    pub(super) fn key(&mut self, key: &Key) -> Outcome {
        if *key == Key::Ctrl('c') {
            return Outcome::Closed;
        }
        match &mut self.focus {
            Focus::Read(_, scroll) => {
                match key {
                    Key::Esc | Key::Enter | Key::Backspace | Key::Left | Key::Char('q') => {
                        self.focus = Focus::List
                    }
                    Key::Up | Key::Ctrl('p') => *scroll = scroll.saturating_sub(1),
                    Key::Down | Key::Ctrl('n') => *scroll += 1,
                    Key::PageUp => *scroll = scroll.saturating_sub(10),
                    Key::PageDown | Key::Char(' ') => *scroll += 10,
                    Key::Home => *scroll = 0,
                    _ => {}
                }
                Outcome::Pending
            }
            Focus::Search => {
                self.search_key(key);
                Outcome::Pending
            }
            Focus::List => self.list_key(key),
        }
    }

    fn search_key(&mut self, key: &Key) {
        match key {
            Key::Esc | Key::Enter | Key::Down | Key::Tab => self.focus = Focus::List,
            Key::Backspace | Key::Ctrl('h') => {
                self.query.pop();
                self.refresh();
            }
            Key::Ctrl('u') => {
                self.query.clear();
                self.refresh();
            }
            Key::Char(c) if !c.is_control() => {
                self.query.push(*c);
                self.selected = 0;
                self.refresh();
            }
            Key::Paste(text) => {
                self.query.push_str(&one_row(text));
                self.selected = 0;
                self.refresh();
            }
            _ => {}
        }
    }

    fn list_key(&mut self, key: &Key) -> Outcome {
        match key {
            Key::Esc | Key::Char('q') => return Outcome::Closed,
            Key::Up | Key::Ctrl('p') => self.selected = self.selected.saturating_sub(1),
            Key::Down | Key::Ctrl('n') if self.selected + 1 < self.facts.len() => {
                self.selected += 1
            }
            Key::Char('/') => self.focus = Focus::Search,
            Key::Enter => {
                if let Some(fact) = self.facts.get(self.selected) {
                    self.focus = Focus::Read(fact.clone(), 0);
                }
            }
            Key::Char('f') => return self.act(forget),
            Key::Char('r') => return self.act(restore),
            _ => {}
        }
        Outcome::Pending
    }

    /// Runs an action on the selected fact, shows its notice and reloads the list.
    fn act(&mut self, action: fn(&Store, &Fact) -> (NoticeLevel, String)) -> Outcome {
        let (Some(store), Some(fact)) = (&self.store, self.facts.get(self.selected)) else {
            return Outcome::Pending;
        };
        let (level, text) = action(store, fact);
        self.notice = Some((level, text.clone()));
        self.refresh();
        Outcome::Notice(level, text)
    }

    pub(super) fn render(&self, width: usize, height: usize) -> Vec<Line> {
        // The transcript, the status line and a margin keep the rest of the screen.
        let rows = height.saturating_sub(10).max(4);
        match &self.focus {
            Focus::Read(fact, scroll) => render_fact(fact, *scroll, width, rows),
            Focus::List | Focus::Search => self.render_list(width, rows),
        }
    }

    fn render_list(&self, width: usize, rows: usize) -> Vec<Line> {
        let bar = || Line::styled("│ ", Style::Frame);
        let (active, archived) = self.counts;
        let mut top = Line::styled("╭─ ", Style::Frame);
        top.push(tr(Ui::MemoryTitle), Style::Bold);
        top.push(trf(Ui::MemoryCounts, &[&active, &archived]), Style::Dim);
        let mut out = vec![top];
        let mut search = bar();
        search.push(tr(Ui::MemorySearch), Style::Dim);
        match (&self.focus, self.query.is_empty()) {
            (Focus::Search, _) => {
                search.push(one_row(&self.query), Style::Plain);
                search.push("▏", Style::Accent);
            }
            (_, true) => search.push(tr(Ui::MemorySearchHint), Style::Dim),
            (_, false) => search.push(one_row(&self.query), Style::Plain),
        }
        out.push(search.truncated(width));
        out.push(bar());
        if self.facts.is_empty() {
            let text = match (&self.store, active + archived == 0) {
                (None, _) => tr(Ui::MemoryNoState),
                (Some(_), true) => tr(Ui::MemoryEmpty),
                (Some(_), false) => tr(Ui::MemoryNoMatch),
            };
            let mut line = bar();
            line.push(text, Style::Dim);
            out.push(line.truncated(width));
        }
        let first = self.selected.saturating_sub(rows.saturating_sub(1));
        let name_width = self
            .facts
            .iter()
            .map(|f| f.name.chars().count())
            .max()
            .unwrap_or(0)
            .min(24);
        for (i, fact) in self.facts.iter().enumerate().skip(first).take(rows) {
            let selected = i == self.selected;
            let mut row = bar();
            row.push(if selected { "❯ " } else { "  " }, Style::Accent);
            let style = match (selected, fact.is_active()) {
                (true, _) => Style::Selected,
                (false, true) => Style::Bold,
                (false, false) => Style::Dim,
            };
            row.push(format!("{:<name_width$}", one_row(&fact.name)), style);
            if !fact.is_active() {
                row.push(tr(Ui::MemoryArchivedTag), Style::Warning);
            }
            row.push(format!("  {}", day(&fact.updated)), Style::Dim);
            row.push(format!("  {}", one_row(&fact.description)), Style::Plain);
            out.push(row.truncated(width));
        }
        if let Some((level, text)) = &self.notice {
            let style = match level {
                NoticeLevel::Info => Style::Success,
                _ => Style::Warning,
            };
            let mut line = bar();
            line.push(one_row(text), style);
            out.push(line.truncated(width));
        }
        let hint = match self.focus {
            Focus::Search => tr(Ui::MemorySearchFooter),
            _ => tr(Ui::MemoryListFooter),
        };
        out.push(Line::styled(hint, Style::Frame).truncated(width));
        out
    }
}

/// One fact, read-only: a header, then its content wrapped and scrolled.
fn render_fact(fact: &Fact, scroll: usize, width: usize, rows: usize) -> Vec<Line> {
    let bar = || Line::styled("│ ", Style::Frame);
    let mut top = Line::styled(format!("╭─ {} › ", tr(Ui::MemoryTitle)), Style::Frame);
    top.push(one_row(&fact.name), Style::Bold);
    if !fact.is_active() {
        top.push(tr(Ui::MemoryArchivedTag), Style::Warning);
    }
    let mut out = vec![top.truncated(width)];
    let mut about = bar();
    about.push(
        trf(
            Ui::MemoryUpdated,
            &[&one_row(&fact.description), &one_row(&fact.updated)],
        ),
        Style::Dim,
    );
    out.push(about.truncated(width));
    out.push(bar());
    let body: Vec<Line> = for_display(&fact.content)
        .lines()
        .flat_map(|l| Line::plain(l).wrap(width.saturating_sub(3), ""))
        .collect();
    let scroll = scroll.min(body.len().saturating_sub(rows));
    for line in body.iter().skip(scroll).take(rows) {
        let mut row = bar();
        row.extend(line.clone());
        out.push(row.truncated(width));
    }
    let shown = (scroll + rows).min(body.len());
    out.push(
        Line::styled(
            trf(
                Ui::MemoryFactFooter,
                &[&(scroll + 1).min(shown), &shown, &body.len()],
            ),
            Style::Frame,
        )
        .truncated(width),
    );
    out
}

/// The date of an RFC 3339 time stamp.
fn day(updated: &str) -> &str {
    updated.get(..10).unwrap_or(updated)
}

fn forget(store: &Store, fact: &Fact) -> (NoticeLevel, String) {
    if !fact.is_active() {
        return (
            NoticeLevel::Warning,
            trf(Ui::MemoryAlreadyArchived, &[&fact.name]),
        );
    }
    match store.forget(&fact.name) {
        Ok(path) => (
            NoticeLevel::Info,
            trf(
                Ui::MemoryForgot,
                &[
                    &fact.name,
                    &path
                        .file_name()
                        .map(|n| n.to_string_lossy())
                        .unwrap_or_default(),
                ],
            ),
        ),
        Err(err) => (NoticeLevel::Warning, err.to_string()),
    }
}

fn restore(store: &Store, fact: &Fact) -> (NoticeLevel, String) {
    let Some(file) = &fact.archived else {
        return (NoticeLevel::Warning, trf(Ui::MemoryIsActive, &[&fact.name]));
    };
    match store.restore(file) {
        Ok(fact) => (NoticeLevel::Info, trf(Ui::MemoryRestored, &[&fact.name])),
        Err(err) => (NoticeLevel::Warning, err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    fn screen(view: &MemoryView) -> String {
        view.render(100, 30)
            .iter()
            .map(Line::text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn empty_states_say_why_there_is_nothing() {
        assert!(screen(&MemoryView::new(None)).contains("No state directory"));
        let dir = TempDir::new("memview-empty");
        let view = MemoryView::new(Some(Store::new(dir.join("memory"))));
        assert!(
            screen(&view).contains("No saved memory yet"),
            "{}",
            screen(&view)
        );
    }

    #[test]
    fn keys_search_read_forget_and_restore() {
        let dir = TempDir::new("memview-keys");
        let store = Store::new(dir.join("memory"));
        store.save("alpha", "First fact.", None).unwrap();
        store
            .save("beta", "Second fact about docker.", None)
            .unwrap();
        let mut view = MemoryView::new(Some(store.clone()));
        for key in [Key::Char('/'), Key::Char('d'), Key::Char('o'), Key::Enter] {
            view.key(&key);
        }
        assert_eq!(view.facts.len(), 1, "{}", screen(&view));
        view.key(&Key::Enter);
        assert!(screen(&view).contains("Second fact about docker."));
        view.key(&Key::Esc);
        assert!(matches!(
            view.key(&Key::Char('f')),
            Outcome::Notice(NoticeLevel::Info, _)
        ));
        assert!(
            screen(&view).contains("beta  [archived]"),
            "{}",
            screen(&view)
        );
        assert!(matches!(
            view.key(&Key::Char('f')),
            Outcome::Notice(NoticeLevel::Warning, _)
        ));
        assert!(matches!(
            view.key(&Key::Char('r')),
            Outcome::Notice(NoticeLevel::Info, _)
        ));
        assert_eq!(
            store.read("beta").unwrap().content,
            "Second fact about docker."
        );
        assert!(matches!(view.key(&Key::Esc), Outcome::Closed));
    }
}
