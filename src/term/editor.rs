//! The composer's line editor: a multi-line UTF-8 buffer with a cursor, word and line
//! motions, kill commands and history, plus the layout that wraps it to the terminal width by
//! display columns. Pure state: the UI maps keys to these methods and draws [`Layout`].
//!
//! The cursor is a byte index that always sits on a character boundary; motions skip
//! zero-width characters (combining marks, joiners) together with the character before them,
//! so the cursor never lands inside what the terminal draws as one glyph.

use std::path::{Path, PathBuf};

use super::width::{char_width, str_width};

#[derive(Debug, Default)]
pub struct Editor {
    text: String,
    cursor: usize,
    history: History,
    /// Position while browsing history (`None` = editing the draft).
    browsing: Option<usize>,
    /// The text being composed before history browsing started.
    draft: String,
}

/// The rows the composer occupies and where its cursor is, in display columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub rows: Vec<String>,
    pub cursor_row: usize,
    pub cursor_col: usize,
}

impl Editor {
    pub fn new(history: History) -> Editor {
        Editor {
            history,
            ..Editor::default()
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the whole buffer; the cursor goes to the end.
    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
        self.browsing = None;
    }

    /// Takes the buffer for sending and records it in history.
    pub fn submit(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        self.draft.clear();
        if !text.trim().is_empty() {
            self.history.push(&text);
        }
        text
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    pub fn insert(&mut self, text: &str) {
        self.text.insert_str(self.cursor, text);
        self.cursor += text.len();
    }

    pub fn insert_char(&mut self, c: char) {
        self.insert(c.encode_utf8(&mut [0u8; 4]));
    }

    /// Deletes the glyph before the cursor.
    pub fn backspace(&mut self) {
        let start = self.prev_boundary(self.cursor);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Deletes the glyph under the cursor.
    pub fn delete(&mut self) {
        let end = self.next_boundary(self.cursor);
        self.text.replace_range(self.cursor..end, "");
    }

    pub fn left(&mut self) {
        self.cursor = self.prev_boundary(self.cursor);
    }

    pub fn right(&mut self) {
        self.cursor = self.next_boundary(self.cursor);
    }

    pub fn word_left(&mut self) {
        self.cursor = self.word_start_before(self.cursor);
    }

    pub fn word_right(&mut self) {
        let rest = &self.text[self.cursor..];
        let skip_space = rest.len() - rest.trim_start().len();
        let after = &rest[skip_space..];
        let word = after
            .find(|c: char| c.is_whitespace())
            .unwrap_or(after.len());
        self.cursor += skip_space + word;
    }

    /// Start of the current line (Home, Ctrl-A).
    pub fn line_start(&mut self) {
        self.cursor = self.current_line_start();
    }

    /// End of the current line (End, Ctrl-E).
    pub fn line_end(&mut self) {
        self.cursor = self.current_line_end();
    }

    /// Ctrl-K: deletes to the end of the line, or the line break when already there.
    pub fn kill_to_end(&mut self) {
        let end = self.current_line_end();
        let end = if end == self.cursor && end < self.text.len() {
            end + 1
        } else {
            end
        };
        self.text.replace_range(self.cursor..end, "");
    }

    /// Ctrl-U: deletes to the start of the line.
    pub fn kill_to_start(&mut self) {
        let start = self.current_line_start();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Ctrl-W / Alt-Backspace: deletes the word before the cursor.
    pub fn delete_word_back(&mut self) {
        let start = self.word_start_before(self.cursor);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Up: the previous line, or from the first line the previous history entry.
    /// Returns false when there was nowhere to go.
    pub fn up(&mut self) -> bool {
        let start = self.current_line_start();
        if start == 0 {
            return self.history_prev();
        }
        let column = str_width(&self.text[start..self.cursor]);
        let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        self.cursor = column_offset(&self.text, prev_start, start - 1, column);
        true
    }

    /// Down: the next line, or from the last line the next history entry.
    pub fn down(&mut self) -> bool {
        let end = self.current_line_end();
        if end == self.text.len() {
            return self.history_next();
        }
        let column = str_width(&self.text[self.current_line_start()..self.cursor]);
        let next_start = end + 1;
        let next_end = self.text[next_start..]
            .find('\n')
            .map_or(self.text.len(), |i| next_start + i);
        self.cursor = column_offset(&self.text, next_start, next_end, column);
        true
    }

    fn history_prev(&mut self) -> bool {
        let next = match self.browsing {
            None if self.history.entries.is_empty() => return false,
            None => {
                self.draft = self.text.clone();
                self.history.entries.len() - 1
            }
            Some(0) => return false,
            Some(i) => i - 1,
        };
        self.browsing = Some(next);
        self.text = self.history.entries[next].clone();
        self.cursor = self.text.len();
        true
    }

    fn history_next(&mut self) -> bool {
        let Some(i) = self.browsing else {
            return false;
        };
        if i + 1 < self.history.entries.len() {
            self.browsing = Some(i + 1);
            self.text = self.history.entries[i + 1].clone();
        } else {
            self.browsing = None;
            self.text = std::mem::take(&mut self.draft);
        }
        self.cursor = self.text.len();
        true
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    /// The word the cursor is at the end of, and where it starts: what `/` and `@`
    /// completion look at.
    pub fn current_word(&self) -> (usize, &str) {
        let start = self.text[..self.cursor]
            .rfind(char::is_whitespace)
            .map_or(0, |i| {
                i + self.text[i..].chars().next().map_or(1, char::len_utf8)
            });
        (start, &self.text[start..self.cursor])
    }

    /// Replaces `start..cursor` with `replacement` (a completion).
    pub fn replace_before_cursor(&mut self, start: usize, replacement: &str) {
        self.text.replace_range(start..self.cursor, replacement);
        self.cursor = start + replacement.len();
    }

    /// Wraps the buffer to `width` columns after a prompt of `prompt_width` columns; every
    /// row is indented by the prompt width so text lines up.
    pub fn layout(&self, width: usize, prompt_width: usize) -> Layout {
        let room = width.saturating_sub(prompt_width).max(1);
        let mut rows = vec![String::new()];
        let mut used = 0;
        let mut cursor = (0, 0);
        for (i, c) in self.text.char_indices() {
            if i == self.cursor {
                cursor = (rows.len() - 1, used);
            }
            if c == '\n' {
                rows.push(String::new());
                used = 0;
                continue;
            }
            let w = char_width(c);
            if used + w > room {
                rows.push(String::new());
                used = 0;
            }
            if let Some(row) = rows.last_mut() {
                row.push(c);
            }
            used += w;
        }
        if self.cursor >= self.text.len() {
            cursor = (rows.len() - 1, used);
        }
        // A cursor after a full row sits at the start of the next one.
        if cursor.1 >= room {
            if cursor.0 + 1 == rows.len() {
                rows.push(String::new());
            }
            cursor = (cursor.0 + 1, 0);
        }
        Layout {
            rows,
            cursor_row: cursor.0,
            cursor_col: cursor.1 + prompt_width,
        }
    }

    fn current_line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn current_line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// The boundary before `at`, skipping zero-width characters with their base.
    fn prev_boundary(&self, at: usize) -> usize {
        let mut pos = at;
        for (i, c) in self.text[..at].char_indices().rev() {
            pos = i;
            if char_width(c) > 0 || c == '\n' {
                break;
            }
        }
        pos
    }

    /// The boundary after `at`, including the zero-width characters that follow.
    fn next_boundary(&self, at: usize) -> usize {
        let mut chars = self.text[at..].char_indices();
        let Some((_, first)) = chars.next() else {
            return at;
        };
        let mut end = at + first.len_utf8();
        for (i, c) in chars {
            if char_width(c) > 0 || c == '\n' || first == '\n' {
                break;
            }
            end = at + i + c.len_utf8();
        }
        end
    }

    fn word_start_before(&self, at: usize) -> usize {
        let before = &self.text[..at];
        let trimmed = before.trim_end();
        trimmed.rfind(char::is_whitespace).map_or(0, |i| {
            i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
        })
    }
}

/// The byte offset in `text[start..end]` at display column `column` (or the line end).
fn column_offset(text: &str, start: usize, end: usize, column: usize) -> usize {
    let mut used = 0;
    for (i, c) in text[start..end].char_indices() {
        if used >= column {
            return start + i;
        }
        used += char_width(c);
    }
    end
}

/// Entries sent from the composer, oldest first, optionally persisted one JSON string per
/// line so multi-line entries survive.
#[derive(Debug, Default)]
pub struct History {
    entries: Vec<String>,
    file: Option<PathBuf>,
}

/// Persisted entries beyond this are dropped, oldest first.
const HISTORY_LIMIT: usize = 1000;

impl History {
    pub fn in_memory() -> History {
        History::default()
    }

    /// Loads `file` (missing or unreadable means empty) and appends to it from now on.
    pub fn load(file: &Path) -> History {
        let entries = std::fs::read_to_string(file)
            .map(|text| {
                text.lines()
                    .filter_map(|l| serde_json::from_str::<String>(l).ok())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let skip = entries.len().saturating_sub(HISTORY_LIMIT);
        History {
            entries: entries.into_iter().skip(skip).collect(),
            file: Some(file.to_path_buf()),
        }
    }

    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Records an entry (a repeat of the last one is not stored twice). Saving failures are
    /// ignored: history is a convenience, never worth interrupting the user for.
    pub fn push(&mut self, entry: &str) {
        if self.entries.last().is_some_and(|last| last == entry) {
            return;
        }
        self.entries.push(entry.to_string());
        let Some(file) = &self.file else {
            return;
        };
        if self.entries.len() > HISTORY_LIMIT * 2 {
            self.entries.drain(..self.entries.len() - HISTORY_LIMIT);
            let text: String = self
                .entries
                .iter()
                .map(|e| format!("{}\n", serde_json::Value::String(e.clone())))
                .collect();
            let _ = crate::fsutil::write_atomic(file, text.as_bytes(), Some(0o600));
            return;
        }
        // What was typed is as private as the sessions it went into.
        if let Some(parent) = file.parent() {
            let _ = crate::fsutil::create_private_dir(parent);
        }
        let line = format!("{}\n", serde_json::Value::String(entry.to_string()));
        let _ = crate::platform::create_mode(
            std::fs::OpenOptions::new().create(true).append(true),
            0o600,
        )
        .open(file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsutil::scratch::TempDir;

    fn editor(text: &str) -> Editor {
        let mut e = Editor::new(History::in_memory());
        e.set_text(text);
        e
    }

    #[test]
    fn motions_move_by_glyph_word_and_line() {
        let mut e = editor("héllo wörld");
        e.line_start();
        e.right();
        e.right();
        assert_eq!(&e.text()[..e.cursor()], "hé");
        e.word_right();
        assert_eq!(&e.text()[..e.cursor()], "héllo");
        e.word_right();
        assert_eq!(e.cursor(), e.text().len());
        e.word_left();
        assert_eq!(&e.text()[e.cursor()..], "wörld");
        e.left();
        e.left();
        assert_eq!(&e.text()[e.cursor()..], "o wörld");
    }

    #[test]
    fn combining_marks_move_and_delete_with_their_base() {
        let mut e = editor("ae\u{301}b");
        e.left();
        e.left();
        assert_eq!(&e.text()[e.cursor()..], "e\u{301}b");
        e.delete();
        assert_eq!(e.text(), "ab");
        e.set_text("xe\u{301}");
        e.backspace();
        assert_eq!(e.text(), "x");
    }

    #[test]
    fn kill_commands_follow_readline() {
        let mut e = editor("one two three");
        e.delete_word_back();
        assert_eq!(e.text(), "one two ");
        e.word_left();
        e.kill_to_end();
        assert_eq!(e.text(), "one ");
        e.kill_to_start();
        assert_eq!(e.text(), "");
        let mut e = editor("a\nb");
        e.line_start();
        e.left();
        e.kill_to_end();
        assert_eq!(e.text(), "ab", "Ctrl-K at a line end joins lines");
    }

    #[test]
    fn up_and_down_move_between_lines_then_through_history() {
        let mut history = History::in_memory();
        history.push("first");
        history.push("second");
        let mut e = Editor::new(history);
        e.insert("draft");
        assert!(e.up());
        assert_eq!(e.text(), "second");
        assert!(e.up());
        assert_eq!(e.text(), "first");
        assert!(!e.up());
        assert!(e.down());
        assert!(e.down());
        assert_eq!(e.text(), "draft");
        assert!(!e.down());
        e.set_text("日本\nabcdef");
        // cursor at the end of "abcdef" (column 6) -> end of "日本" (column 4)
        assert!(e.up());
        assert_eq!(e.cursor(), "日本".len());
        e.line_start();
        e.right();
        assert!(e.down());
        assert_eq!(&e.text()[e.cursor()..], "cdef", "column 2 under 日");
    }

    #[test]
    fn layout_wraps_by_display_width_and_places_the_cursor() {
        let e = editor("日本語テキスト");
        let layout = e.layout(8, 2);
        assert_eq!(layout.rows, vec!["日本語", "テキス", "ト"]);
        assert_eq!((layout.cursor_row, layout.cursor_col), (2, 4));
        let e = editor("abc\ndef");
        let layout = e.layout(20, 2);
        assert_eq!(layout.rows, vec!["abc", "def"]);
        assert_eq!((layout.cursor_row, layout.cursor_col), (1, 5));
        let e = editor("abcd");
        let layout = e.layout(6, 2);
        assert_eq!(layout.rows, vec!["abcd", ""]);
        assert_eq!((layout.cursor_row, layout.cursor_col), (1, 2));
        let mut e = editor("ab");
        e.line_start();
        assert_eq!(e.layout(6, 2).cursor_col, 2);
    }

    #[test]
    fn current_word_feeds_completion() {
        let mut e = editor("look at @src/ma");
        assert_eq!(e.current_word(), (8, "@src/ma"));
        e.replace_before_cursor(8, "@src/main.rs ");
        assert_eq!(e.text(), "look at @src/main.rs ");
        assert_eq!(e.current_word(), (21, ""));
    }

    #[test]
    fn history_persists_multiline_entries() {
        let scratch = TempDir::new("hist");
        // The history's directory does not exist yet: saving creates it.
        let file = scratch.join("hist/history");
        let mut h = History::load(&file);
        h.push("one\ntwo");
        h.push("three");
        h.push("three");
        let again = History::load(&file);
        assert_eq!(again.entries(), &["one\ntwo".to_string(), "three".into()]);
    }
}
