//! The autocomplete menu above the composer, an input-owned overlay: typing keeps going to
//! the composer while it is open. `/` at the start of the input lists slash commands; a word
//! starting with `@` lists one directory level (and MCP resources at the top level). The
//! menu is recomputed only when the input changes, never while output streams, so its
//! height changes only on the user's keystrokes.

use std::path::Path;

use super::ansi::{Line, Style};
use super::sanitize::one_row;
use super::width::truncate;
use crate::command::{refs, Catalog};
use crate::mcp::McpHost;

/// Rows the menu shows at most.
pub const MENU_ROWS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MenuKind {
    Slash,
    At,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MenuItem {
    pub label: String,
    pub detail: String,
    /// Replaces the token (including its `/` or `@`).
    pub completion: String,
    /// A directory: choosing it descends instead of closing the menu.
    pub descend: bool,
    /// A command that takes no arguments: Enter runs it at once.
    pub runs_alone: bool,
}

#[derive(Debug, Clone)]
pub struct Menu {
    pub kind: MenuKind,
    /// Byte offset of the token in the input.
    pub start: usize,
    pub items: Vec<MenuItem>,
    pub selected: usize,
}

impl Menu {
    /// The menu for the input as it stands, or `None` when nothing should be offered.
    /// `token` is the word before the cursor and `start` its offset.
    pub fn for_token(
        start: usize,
        token: &str,
        catalog: &Catalog,
        cwd: &Path,
        mcp: &dyn McpHost,
    ) -> Option<Menu> {
        let (kind, items) = if let Some(prefix) = token.strip_prefix('/') {
            if start != 0 {
                return None;
            }
            let items = catalog
                .matching(prefix)
                .into_iter()
                .map(|e| MenuItem {
                    label: format!("/{}", e.name),
                    detail: if e.argument_hint.is_empty() {
                        e.description.clone()
                    } else {
                        format!("{} {}", e.argument_hint, e.description)
                    },
                    completion: format!("/{} ", e.name),
                    descend: false,
                    runs_alone: e.argument_hint.is_empty(),
                })
                .collect();
            (MenuKind::Slash, items)
        } else if let Some(typed) = token.strip_prefix('@') {
            let items = refs::complete(typed, cwd, mcp)
                .into_iter()
                .map(|c| MenuItem {
                    label: c.label,
                    detail: String::new(),
                    completion: if c.is_dir {
                        format!("@{}", c.completion)
                    } else {
                        format!("@{} ", c.completion)
                    },
                    descend: c.is_dir,
                    runs_alone: false,
                })
                .collect();
            (MenuKind::At, items)
        } else {
            return None;
        };
        let items: Vec<MenuItem> = items;
        (!items.is_empty()).then_some(Menu {
            kind,
            start,
            items,
            selected: 0,
        })
    }

    pub fn up(&mut self) {
        self.selected = self
            .selected
            .checked_sub(1)
            .unwrap_or(self.items.len().saturating_sub(1));
    }

    pub fn down(&mut self) {
        self.selected = if self.selected + 1 >= self.items.len() {
            0
        } else {
            self.selected + 1
        };
    }

    pub fn chosen(&self) -> Option<&MenuItem> {
        self.items.get(self.selected)
    }

    /// At most [`MENU_ROWS`] rows, scrolled so the selection is visible.
    pub fn render(&self, width: usize) -> Vec<Line> {
        let first = self.selected.saturating_sub(MENU_ROWS - 1);
        let label_width = self
            .items
            .iter()
            .map(|i| super::width::str_width(&i.label))
            .max()
            .unwrap_or(0)
            .min(width / 2);
        self.items
            .iter()
            .enumerate()
            .skip(first)
            .take(MENU_ROWS)
            .map(|(i, item)| {
                let selected = i == self.selected;
                let mut line = Line::styled(if selected { "❯ " } else { "  " }, Style::Accent);
                let label = truncate(&one_row(&item.label), label_width);
                let pad = label_width.saturating_sub(super::width::str_width(&label));
                let style = if selected {
                    Style::Selected
                } else {
                    Style::Plain
                };
                line.push(format!("{label}{}", " ".repeat(pad)), style);
                if !item.detail.is_empty() {
                    line.push(format!("  {}", one_row(&item.detail)), Style::Dim);
                }
                line.truncated(width)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::NoMcp;

    #[test]
    fn slash_menu_only_at_the_start_and_filters_by_prefix() {
        let catalog = Catalog::new(Vec::new(), Vec::new());
        let menu = Menu::for_token(0, "/mo", &catalog, Path::new("/"), &NoMcp).unwrap();
        assert_eq!(menu.items.len(), 1);
        assert_eq!(menu.items[0].completion, "/model ");
        assert!(!menu.items[0].runs_alone);
        let help = Menu::for_token(0, "/he", &catalog, Path::new("/"), &NoMcp).unwrap();
        assert!(help.items[0].runs_alone);
        assert!(Menu::for_token(4, "/mo", &catalog, Path::new("/"), &NoMcp).is_none());
        assert!(Menu::for_token(0, "/zzz", &catalog, Path::new("/"), &NoMcp).is_none());
        let all = Menu::for_token(0, "/", &catalog, Path::new("/"), &NoMcp).unwrap();
        assert_eq!(all.render(60).len(), MENU_ROWS);
    }

    #[test]
    fn selection_wraps_and_stays_visible() {
        let catalog = Catalog::new(Vec::new(), Vec::new());
        let mut menu = Menu::for_token(0, "/", &catalog, Path::new("/"), &NoMcp).unwrap();
        menu.up();
        assert_eq!(menu.selected, menu.items.len() - 1);
        let rows = menu.render(60);
        assert!(rows.last().unwrap().text().starts_with("❯ /exit"));
        menu.down();
        assert_eq!(menu.selected, 0);
    }
}
