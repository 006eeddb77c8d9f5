//! Escape sequences and styled text. Call sites build [`Line`]s of [`Span`]s tagged with a
//! semantic [`Style`]; only [`Palette::render`] turns styles into SGR codes, and whether it
//! does is decided once per process by [`ColorMode::detect`]. Raw cursor and mode escapes
//! used by the screen live here as constants so no other file spells an escape.

use super::width::{char_width, str_width};

/// What a piece of text means; the palette decides how that looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    Bold,
    Italic,
    Dim,
    Heading,
    Code,
    /// The box drawn around fenced code and tables.
    Frame,
    Link,
    Quote,
    Accent,
    Success,
    Warning,
    Error,
    DiffAdd,
    DiffDel,
    DiffHunk,
    Thinking,
    /// The highlighted row of a menu or choice list.
    Selected,
    Status,
    /// A message the user typed, echoed into the transcript.
    User,
}

impl Style {
    fn sgr(self) -> &'static str {
        match self {
            Style::Plain => "",
            Style::Bold => "1",
            Style::Italic => "3",
            Style::Dim | Style::Frame => "2",
            Style::Heading => "1;36",
            Style::Code => "36",
            Style::Link => "4;34",
            Style::Quote => "3;2",
            Style::Accent => "35",
            Style::Success => "32",
            Style::Warning => "33",
            Style::Error => "31",
            Style::DiffAdd => "32",
            Style::DiffDel => "31",
            Style::DiffHunk => "36;2",
            Style::Thinking => "2;3",
            Style::Selected => "7",
            Style::Status => "2",
            Style::User => "1",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub style: Style,
}

/// One terminal row's worth of styled text (callers wrap before building lines).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Line {
    pub spans: Vec<Span>,
}

impl Line {
    pub fn new() -> Line {
        Line::default()
    }

    pub fn styled(text: impl Into<String>, style: Style) -> Line {
        let mut line = Line::new();
        line.push(text, style);
        line
    }

    pub fn plain(text: impl Into<String>) -> Line {
        Line::styled(text, Style::Plain)
    }

    /// Appends text, merging with the last span when the style is the same.
    pub fn push(&mut self, text: impl Into<String>, style: Style) {
        let text = text.into();
        if text.is_empty() {
            return;
        }
        match self.spans.last_mut() {
            Some(last) if last.style == style => last.text.push_str(&text),
            _ => self.spans.push(Span { text, style }),
        }
    }

    pub fn extend(&mut self, other: Line) {
        for span in other.spans {
            self.push(span.text, span.style);
        }
    }

    pub fn width(&self) -> usize {
        self.spans.iter().map(|s| str_width(&s.text)).sum()
    }

    /// The text without styles.
    pub fn text(&self) -> String {
        self.spans.iter().map(|s| s.text.as_str()).collect()
    }

    /// The line cut to `columns`, with `…` marking the cut.
    pub fn truncated(&self, columns: usize) -> Line {
        if self.width() <= columns {
            return self.clone();
        }
        let mut out = Line::new();
        let mut used = 0;
        let budget = columns.saturating_sub(1);
        'spans: for span in &self.spans {
            for c in span.text.chars() {
                let w = char_width(c);
                if used + w > budget {
                    break 'spans;
                }
                used += w;
                out.push(c.to_string(), span.style);
            }
        }
        if columns > 0 {
            out.push("…", Style::Dim);
        }
        out
    }

    /// Splits into rows of at most `columns`, breaking at spaces where possible.
    /// `indent` is prefixed to every continuation row.
    pub fn wrap(&self, columns: usize, indent: &str) -> Vec<Line> {
        let columns = columns.max(str_width(indent) + 2);
        if self.width() <= columns {
            return vec![self.clone()];
        }
        let chars: Vec<(char, Style)> = self
            .spans
            .iter()
            .flat_map(|s| s.text.chars().map(move |c| (c, s.style)))
            .collect();
        let mut rows = Vec::new();
        let mut start = 0;
        let mut first = true;
        while start < chars.len() {
            let room = if first {
                columns
            } else {
                columns - str_width(indent)
            };
            let (end, next) = break_point(&chars[start..], room);
            let mut row = Line::new();
            if !first {
                row.push(indent, Style::Plain);
            }
            for (c, style) in &chars[start..start + end] {
                row.push(c.to_string(), *style);
            }
            rows.push(row);
            start += next;
            first = false;
        }
        rows
    }
}

/// Where to end a row of at most `room` columns: (chars in the row, chars consumed). Breaks
/// after the last space that fits, else mid-word.
fn break_point(chars: &[(char, Style)], room: usize) -> (usize, usize) {
    let mut used = 0;
    let mut last_space = None;
    for (i, (c, _)) in chars.iter().enumerate() {
        let w = char_width(*c);
        if used + w > room {
            return match last_space {
                Some(space) if space > 0 => (space, space + 1),
                _ => (i.max(1), i.max(1)),
            };
        }
        if *c == ' ' {
            last_space = Some(i);
        }
        used += w;
    }
    (chars.len(), chars.len())
}

/// Whether styles become colours. Decided once from the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorMode {
    Color,
    Plain,
}

impl ColorMode {
    /// Colour only on a terminal whose `TERM` is set and not `dumb`, with `NO_COLOR` unset
    /// or empty (<https://no-color.org>).
    pub fn detect(is_tty: bool, term: Option<&str>, no_color: Option<&str>) -> ColorMode {
        let term_ok = term.is_some_and(|t| !t.is_empty() && t != "dumb");
        let no_color = no_color.is_some_and(|v| !v.is_empty());
        if is_tty && term_ok && !no_color {
            ColorMode::Color
        } else {
            ColorMode::Plain
        }
    }
}

/// Turns styled lines into bytes for the terminal.
#[derive(Debug, Clone, Copy)]
pub struct Palette {
    pub mode: ColorMode,
}

impl Palette {
    pub fn new(mode: ColorMode) -> Palette {
        Palette { mode }
    }

    /// The line with SGR codes around styled spans (none in plain mode).
    pub fn render(&self, line: &Line) -> String {
        let mut out = String::new();
        for span in &line.spans {
            let code = span.style.sgr();
            if self.mode == ColorMode::Plain || code.is_empty() {
                out.push_str(&span.text);
            } else {
                out.push_str(&format!("\x1b[{code}m{}\x1b[0m", span.text));
            }
        }
        out
    }
}

/// Clears from the cursor to the end of the screen.
pub const CLEAR_BELOW: &str = "\x1b[J";
/// Clears from the cursor to the end of the line.
pub const CLEAR_LINE: &str = "\x1b[K";
pub const HIDE_CURSOR: &str = "\x1b[?25l";
pub const SHOW_CURSOR: &str = "\x1b[?25h";
/// Synchronized output (mode 2026): the terminal paints the frame at once; terminals that do
/// not know the mode ignore it.
pub const BEGIN_SYNC: &str = "\x1b[?2026h";
pub const END_SYNC: &str = "\x1b[?2026l";
pub const BRACKETED_PASTE_ON: &str = "\x1b[?2004h";
pub const BRACKETED_PASTE_OFF: &str = "\x1b[?2004l";
/// The kitty keyboard protocol's "disambiguate" level (pushed, then popped on exit):
/// terminals that support it report Shift-Enter and modified keys as `CSI … u`; others
/// ignore the request.
pub const KEYBOARD_REPORTS_ON: &str = "\x1b[>1u";
pub const KEYBOARD_REPORTS_OFF: &str = "\x1b[<u";
/// Restores the terminal's default cursor shape.
pub const CURSOR_DEFAULT: &str = "\x1b[0 q";
pub const RESET: &str = "\x1b[0m";

/// Moves the cursor up `n` rows (nothing for 0).
pub fn cursor_up(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("\x1b[{n}A")
    }
}

/// Moves the cursor to column `col` (0-based) of the current row.
pub fn cursor_column(col: usize) -> String {
    format!("\x1b[{}G", col + 1)
}

/// The composer's cursor. The chat's caller maps its configuration onto this, so rendering
/// does not depend on how settings are stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CursorShape {
    #[default]
    Bar,
    Block,
    Underline,
}

/// DECSCUSR for the cursor: steady bar, block or underline.
pub fn cursor_shape(shape: CursorShape) -> &'static str {
    match shape {
        CursorShape::Bar => "\x1b[6 q",
        CursorShape::Block => "\x1b[2 q",
        CursorShape::Underline => "\x1b[4 q",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_is_decided_by_tty_term_and_no_color() {
        use ColorMode::*;
        assert_eq!(ColorMode::detect(true, Some("xterm-256color"), None), Color);
        assert_eq!(ColorMode::detect(true, Some("xterm"), Some("")), Color);
        assert_eq!(ColorMode::detect(true, Some("xterm"), Some("1")), Plain);
        assert_eq!(ColorMode::detect(true, Some("dumb"), None), Plain);
        assert_eq!(ColorMode::detect(true, None, None), Plain);
        assert_eq!(ColorMode::detect(false, Some("xterm"), None), Plain);
    }

    #[test]
    fn plain_palette_emits_no_escapes() {
        let mut line = Line::plain("a ");
        line.push("b", Style::Bold);
        assert_eq!(Palette::new(ColorMode::Plain).render(&line), "a b");
        assert_eq!(
            Palette::new(ColorMode::Color).render(&line),
            "a \x1b[1mb\x1b[0m"
        );
    }

    #[test]
    fn wrap_breaks_at_spaces_and_indents_continuations() {
        let line = Line::plain("the quick brown fox jumps");
        let rows: Vec<String> = line.wrap(10, "  ").iter().map(Line::text).collect();
        assert_eq!(rows, vec!["the quick", "  brown", "  fox", "  jumps"]);
        let cjk = Line::plain("日本語のテキスト");
        let rows: Vec<String> = cjk.wrap(6, "").iter().map(Line::text).collect();
        assert_eq!(rows, vec!["日本語", "のテキ", "スト"]);
        assert!(cjk.wrap(6, "").iter().all(|r| r.width() <= 6));
    }

    #[test]
    fn truncation_keeps_styles_and_marks_the_cut() {
        let mut line = Line::styled("abc", Style::Bold);
        line.push("defgh", Style::Plain);
        let cut = line.truncated(5);
        assert_eq!(cut.text(), "abcd…");
        assert_eq!(cut.spans[0].style, Style::Bold);
        assert_eq!(cut.width(), 5);
    }
}
