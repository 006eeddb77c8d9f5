//! Streaming Markdown to styled terminal lines. Assistant text arrives in arbitrary chunks;
//! [`Markdown::push`] returns the lines that are final (complete source lines, rendered) so
//! the UI can move them into scrollback at once, and [`Markdown::live`] renders what is still
//! in flight (the partial last line, a table whose rows are still arriving) for the redrawn
//! bottom area. Feeding the same text in any chunking gives the same final lines.
//!
//! Covered: ATX headings, emphasis, inline code, fenced code blocks (a dim frame with the
//! language label), bullet and numbered lists with hanging indents, block quotes, rules,
//! tables aligned to the width, links shown as text plus URL. Everything is sanitized here,
//! line by line, so model text never reaches the terminal raw.

use super::ansi::{Line, Style};
use super::sanitize::for_display;
use super::width::{str_width, truncate};

/// A partial line wrapping to more rows than this is committed up to its last row, so a
/// long paragraph streaming without a newline never outgrows the redrawn area.
const LIVE_ROWS: usize = 4;
/// Table rows shown in the live area while the table is still arriving.
const LIVE_TABLE_ROWS: usize = 6;

#[derive(Debug, Clone)]
struct Fence {
    marker: char,
    len: usize,
}

/// How a soft-committed partial line continues on its next rows.
#[derive(Debug, Clone, PartialEq)]
struct Carry {
    /// Prefix of continuation rows (list indent, quote bar).
    indent: Line,
    /// Inline markers left open at the cut, reopened on the remainder.
    reopen: String,
}

#[derive(Debug)]
pub struct Markdown {
    width: usize,
    partial: String,
    fence: Option<Fence>,
    table: Vec<String>,
    carry: Option<Carry>,
    /// Whether the last committed line was blank (blank runs collapse to one) or nothing
    /// has been committed yet.
    at_blank: bool,
}

impl Markdown {
    pub fn new(width: usize) -> Markdown {
        Markdown {
            width: width.max(20),
            partial: String::new(),
            fence: None,
            table: Vec::new(),
            carry: None,
            at_blank: true,
        }
    }

    /// Later lines wrap to the new width; committed lines stay as they were.
    pub fn set_width(&mut self, width: usize) {
        self.width = width.max(20);
    }

    /// Adds streamed text; returns the lines that became final.
    pub fn push(&mut self, text: &str) -> Vec<Line> {
        self.partial.push_str(text);
        let mut out = Vec::new();
        while let Some(newline) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=newline).collect();
            self.complete_line(line.trim_end_matches(['\n', '\r']), &mut out);
        }
        self.soft_commit(&mut out);
        out
    }

    /// Ends the stream: everything pending becomes final.
    pub fn finish(&mut self) -> Vec<Line> {
        let mut out = Vec::new();
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.complete_line(&line, &mut out);
        }
        self.flush_table(&mut out);
        if self.fence.take().is_some() {
            self.emit(Line::styled("╰─", Style::Frame), &mut out);
        }
        self.carry = None;
        out
    }

    /// The in-flight rendering: buffered table rows and the partial line.
    pub fn live(&self) -> Vec<Line> {
        let mut out = Vec::new();
        if !self.table.is_empty() {
            let skip = self.table.len().saturating_sub(LIVE_TABLE_ROWS);
            if skip > 0 {
                out.push(Line::styled(
                    crate::i18n::trf(crate::i18n::Ui::MoreTableRows, &[&skip]),
                    Style::Dim,
                ));
            }
            for row in &self.table[skip..] {
                out.push(Line::plain(truncate(&for_display(row), self.width)));
            }
        }
        if !self.partial.is_empty() {
            out.extend(self.render_partial(&self.partial));
        }
        out
    }

    fn render_partial(&self, text: &str) -> Vec<Line> {
        if self.fence.is_some() {
            return code_rows(text, self.width);
        }
        if !self.table.is_empty() && is_table_row(text) {
            return vec![Line::plain(truncate(&for_display(text), self.width))];
        }
        self.render_block(text, self.carry.as_ref())
    }

    /// Commits all but the last row of a long partial paragraph.
    fn soft_commit(&mut self, out: &mut Vec<Line>) {
        if self.fence.is_some() || !self.table.is_empty() || is_table_row(&self.partial) {
            return;
        }
        let rows = self.render_block(&self.partial, self.carry.as_ref());
        if rows.len() <= LIVE_ROWS {
            return;
        }
        let indent = continuation_indent(&self.partial, self.carry.as_ref());
        let room = self.width.saturating_sub(indent.width());
        let Some(cut) = last_row_start(&self.partial, room) else {
            return;
        };
        let head = self.partial[..cut].trim_end().to_string();
        let tail = self.partial[cut..].to_string();
        let reopen = open_markers(&head);
        let mut closed = head.clone();
        for marker in reopen.chars().rev() {
            closed.push(marker);
        }
        let head_rows = self.render_block(&closed, self.carry.as_ref());
        for row in head_rows {
            self.emit(row, out);
        }
        self.partial = format!("{reopen}{tail}");
        self.carry = Some(Carry { indent, reopen });
    }

    fn complete_line(&mut self, raw: &str, out: &mut Vec<Line>) {
        let carry = self.carry.take();
        if let Some(fence) = &self.fence {
            if is_fence_close(raw, fence) {
                self.fence = None;
                self.emit(Line::styled("╰─", Style::Frame), out);
            } else {
                for row in code_rows(raw, self.width) {
                    self.emit(row, out);
                }
            }
            return;
        }
        if carry.is_none() && is_table_row(raw) {
            self.table.push(raw.to_string());
            return;
        }
        self.flush_table(out);
        if carry.is_none() {
            if let Some((fence, lang)) = fence_open(raw) {
                self.fence = Some(fence);
                let mut header = Line::styled("╭─", Style::Frame);
                if !lang.is_empty() {
                    header.push(" ", Style::Frame);
                    header.push(for_display(&lang), Style::Dim);
                }
                self.emit(header, out);
                return;
            }
        }
        if raw.trim().is_empty() && carry.is_none() {
            if !self.at_blank {
                out.push(Line::new());
                self.at_blank = true;
            }
            return;
        }
        for row in self.render_block(raw, carry.as_ref()) {
            self.emit(row, out);
        }
    }

    fn emit(&mut self, line: Line, out: &mut Vec<Line>) {
        self.at_blank = line.spans.is_empty();
        out.push(line);
    }

    fn flush_table(&mut self, out: &mut Vec<Line>) {
        if self.table.is_empty() {
            return;
        }
        let rows = std::mem::take(&mut self.table);
        for line in render_table(&rows, self.width) {
            self.emit(line, out);
        }
    }

    /// Renders one non-code, non-table source line (or its continuation after a soft
    /// commit).
    fn render_block(&self, raw: &str, carry: Option<&Carry>) -> Vec<Line> {
        let text = for_display(raw);
        if let Some(carry) = carry {
            return wrap_prefixed(
                inline(&text),
                carry.indent.clone(),
                carry.indent.clone(),
                self.width,
            );
        }
        if let Some((level, title)) = heading(&text) {
            let mut line = Line::new();
            if level <= 2 {
                line.extend(restyle(inline(title), Style::Heading));
            } else {
                line.extend(restyle(inline(title), Style::Bold));
            }
            return line.wrap(self.width, "");
        }
        if is_rule(&text) {
            return vec![Line::styled("─".repeat(self.width.min(60)), Style::Frame)];
        }
        if let Some((depth, rest)) = quote(&text) {
            let bar = Line::styled("│ ".repeat(depth), Style::Frame);
            return wrap_prefixed(
                restyle(inline(rest), Style::Quote),
                bar.clone(),
                bar,
                self.width,
            );
        }
        if let Some(item) = list_item(&text) {
            let pad = " ".repeat(item.indent);
            let mut first = Line::plain(pad.clone());
            first.push(item.marker.clone(), Style::Accent);
            first.push(" ", Style::Plain);
            let rest = Line::plain(" ".repeat(item.indent + str_width(&item.marker) + 1));
            return wrap_prefixed(inline(item.body), first, rest, self.width);
        }
        wrap_prefixed(
            inline(text.trim_start()),
            Line::new(),
            Line::new(),
            self.width,
        )
    }
}

/// `content` wrapped so it fits after `first` on the first row and after `rest` on later
/// rows.
fn wrap_prefixed(content: Line, first: Line, rest: Line, width: usize) -> Vec<Line> {
    let room = width
        .saturating_sub(first.width().max(rest.width()))
        .max(10);
    let mut rows = Vec::new();
    for (i, row) in content.wrap(room, "").into_iter().enumerate() {
        let mut line = if i == 0 { first.clone() } else { rest.clone() };
        line.extend(row);
        rows.push(line);
    }
    if rows.is_empty() {
        rows.push(first);
    }
    rows
}

/// Replaces the plain parts of `line` with `style` (styled parts such as code keep theirs).
fn restyle(line: Line, style: Style) -> Line {
    let mut out = Line::new();
    for span in line.spans {
        let s = if span.style == Style::Plain {
            style
        } else {
            span.style
        };
        out.push(span.text, s);
    }
    out
}

fn code_rows(raw: &str, width: usize) -> Vec<Line> {
    let text = for_display(raw);
    let bar = Line::styled("│ ", Style::Frame);
    let mut rows = Vec::new();
    for (i, row) in Line::styled(text, Style::Code)
        .wrap(width.saturating_sub(2).max(10), "")
        .into_iter()
        .enumerate()
    {
        let mut line = if i == 0 {
            bar.clone()
        } else {
            Line::styled("┆ ", Style::Frame)
        };
        line.extend(row);
        rows.push(line);
    }
    if rows.is_empty() {
        rows.push(bar);
    }
    rows
}

/// The byte offset where the last row of the partial line starts when it is wrapped to
/// `room` columns, estimated on the raw text (inline markup only makes the rendered text
/// shorter); `None` when the line fits in one row.
fn last_row_start(raw: &str, room: usize) -> Option<usize> {
    let room = room.max(10);
    let mut row_start = 0;
    let mut used = 0;
    let mut last_space = None;
    for (at, c) in raw.char_indices() {
        let w = super::width::char_width(c);
        if used + w > room {
            match last_space {
                Some(space) if space > row_start => {
                    row_start = space + 1;
                    used = str_width(&raw[row_start..at]);
                }
                _ => {
                    row_start = at;
                    used = 0;
                }
            }
            last_space = None;
        }
        if c == ' ' {
            last_space = Some(at);
        }
        used += w;
    }
    (row_start > 0).then_some(row_start)
}

/// Markers (`**`, `` ` ``) opened and not closed in `text`, in opening order.
fn open_markers(text: &str) -> String {
    let mut open = String::new();
    let ticks = text.matches('`').count();
    let outside_code: String = text
        .split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 0)
        .map(|(_, s)| s)
        .collect();
    if outside_code.matches("**").count() % 2 == 1 {
        open.push_str("**");
    }
    if ticks % 2 == 1 {
        open.push('`');
    }
    open
}

fn continuation_indent(raw: &str, carry: Option<&Carry>) -> Line {
    if let Some(carry) = carry {
        return carry.indent.clone();
    }
    let text = for_display(raw);
    if let Some((depth, _)) = quote(&text) {
        return Line::styled("│ ".repeat(depth), Style::Frame);
    }
    if let Some(item) = list_item(&text) {
        return Line::plain(" ".repeat(item.indent + str_width(&item.marker) + 1));
    }
    Line::new()
}

fn fence_open(raw: &str) -> Option<(Fence, String)> {
    let trimmed = raw.trim_start();
    if raw.len() - trimmed.len() > 3 {
        return None;
    }
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = trimmed.chars().take_while(|c| *c == marker).count();
    if len < 3 {
        return None;
    }
    let info = trimmed[len..].trim();
    if marker == '`' && info.contains('`') {
        return None;
    }
    let lang = info.split_whitespace().next().unwrap_or("").to_string();
    Some((Fence { marker, len }, lang))
}

fn is_fence_close(raw: &str, fence: &Fence) -> bool {
    let trimmed = raw.trim();
    let len = trimmed.chars().take_while(|c| *c == fence.marker).count();
    len >= fence.len && trimmed.chars().all(|c| c == fence.marker)
}

fn heading(text: &str) -> Option<(usize, &str)> {
    let trimmed = text.trim_start();
    let level = trimmed.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &trimmed[level..];
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim_end();
    Some((level, title))
}

fn is_rule(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    compact.len() >= 3
        && ['-', '*', '_']
            .iter()
            .any(|m| compact.chars().all(|c| c == *m))
}

fn quote(text: &str) -> Option<(usize, &str)> {
    let mut rest = text.trim_start();
    if !rest.starts_with('>') {
        return None;
    }
    let mut depth = 0;
    while let Some(stripped) = rest.strip_prefix('>') {
        depth += 1;
        rest = stripped.strip_prefix(' ').unwrap_or(stripped).trim_start();
    }
    Some((depth, rest))
}

struct ListItem<'a> {
    indent: usize,
    marker: String,
    body: &'a str,
}

fn list_item(text: &str) -> Option<ListItem<'_>> {
    let trimmed = text.trim_start();
    let indent = (text.len() - trimmed.len()).min(12);
    let (marker, rest) = if let Some(rest) = trimmed
        .strip_prefix("- ")
        .or_else(|| trimmed.strip_prefix("* "))
        .or_else(|| trimmed.strip_prefix("+ "))
    {
        ("•".to_string(), rest)
    } else {
        let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        let after = &trimmed[digits..];
        let rest = after
            .strip_prefix(". ")
            .or_else(|| after.strip_prefix(") "))?;
        (format!("{}.", &trimmed[..digits]), rest)
    };
    let (marker, body) = if let Some(rest) = rest.strip_prefix("[ ] ") {
        ("☐".to_string(), rest)
    } else if let Some(rest) = rest
        .strip_prefix("[x] ")
        .or_else(|| rest.strip_prefix("[X] "))
    {
        ("☑".to_string(), rest)
    } else {
        (marker, rest)
    };
    Some(ListItem {
        indent,
        marker,
        body,
    })
}

fn is_table_row(raw: &str) -> bool {
    let t = raw.trim();
    t.starts_with('|') && t.len() > 1 && t[1..].contains('|')
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Align {
    Left,
    Right,
    Center,
}

fn split_cells(row: &str) -> Vec<String> {
    let t = row.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut escaped = false;
    let mut in_code = false;
    for c in t.chars() {
        match c {
            '\\' if !escaped => {
                escaped = true;
                continue;
            }
            '`' => in_code = !in_code,
            '|' if !escaped && !in_code => {
                cells.push(cell.trim().to_string());
                cell.clear();
                continue;
            }
            _ => {}
        }
        if escaped && c != '|' {
            cell.push('\\');
        }
        escaped = false;
        cell.push(c);
    }
    cells.push(cell.trim().to_string());
    cells
}

fn separator_alignments(row: &str) -> Option<Vec<Align>> {
    let cells = split_cells(row);
    cells
        .iter()
        .map(|c| {
            let inner = c.trim_start_matches(':').trim_end_matches(':');
            if inner.is_empty() || !inner.chars().all(|ch| ch == '-') {
                return None;
            }
            Some(match (c.starts_with(':'), c.ends_with(':')) {
                (true, true) => Align::Center,
                (false, true) => Align::Right,
                _ => Align::Left,
            })
        })
        .collect()
}

fn render_table(rows: &[String], width: usize) -> Vec<Line> {
    let mut header = None;
    let mut aligns = Vec::new();
    let mut body: Vec<Vec<Line>> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        if i == 1 {
            if let Some(a) = separator_alignments(row) {
                aligns = a;
                header = body.pop();
                continue;
            }
        }
        body.push(
            split_cells(row)
                .iter()
                .map(|c| inline(&for_display(c)))
                .collect(),
        );
    }
    let columns = header
        .iter()
        .chain(body.iter())
        .map(Vec::len)
        .max()
        .unwrap_or(0);
    if columns == 0 {
        return Vec::new();
    }
    let mut widths = vec![1usize; columns];
    for row in header.iter().chain(body.iter()) {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.width());
        }
    }
    fit_widths(&mut widths, width.saturating_sub(3 * (columns - 1)));
    let mut out = Vec::new();
    if let Some(header) = &header {
        out.push(table_row(header, &widths, &aligns, Some(Style::Bold)));
        let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
        out.push(Line::styled(rule.join("─┼─"), Style::Frame));
    }
    for row in &body {
        out.push(table_row(row, &widths, &aligns, None));
    }
    out
}

/// Shrinks the widest columns until the total fits `room` (each keeps at least 3).
fn fit_widths(widths: &mut [usize], room: usize) {
    while widths.iter().sum::<usize>() > room {
        let Some((i, w)) = widths.iter().enumerate().max_by_key(|(_, w)| **w) else {
            return;
        };
        if *w <= 3 {
            return;
        }
        widths[i] -= 1;
    }
}

fn table_row(cells: &[Line], widths: &[usize], aligns: &[Align], style: Option<Style>) -> Line {
    let mut line = Line::new();
    for (i, width) in widths.iter().enumerate() {
        if i > 0 {
            line.push(" │ ", Style::Frame);
        }
        let cell = cells.get(i).cloned().unwrap_or_default().truncated(*width);
        let cell = match style {
            Some(style) => restyle(cell, style),
            None => cell,
        };
        let pad = width.saturating_sub(cell.width());
        let (left, right) = match aligns.get(i).copied().unwrap_or(Align::Left) {
            Align::Left => (0, pad),
            Align::Right => (pad, 0),
            Align::Center => (pad / 2, pad - pad / 2),
        };
        line.push(" ".repeat(left), Style::Plain);
        line.extend(cell);
        // Trailing padding of the last column is dropped so lines carry no trailing blanks.
        if i + 1 < widths.len() {
            line.push(" ".repeat(right), Style::Plain);
        }
    }
    line
}

/// Inline Markdown: code spans, strong, emphasis, strikethrough, links and autolinks.
/// An opener without a closer on the same line stays literal.
pub fn inline(text: &str) -> Line {
    let mut line = Line::new();
    inline_into(text, Style::Plain, &mut line);
    line
}

fn inline_into(text: &str, outer: Style, line: &mut Line) {
    let bytes = text.as_bytes();
    let mut plain_start = 0;
    let mut i = 0;
    let flush = |line: &mut Line, from: usize, to: usize| {
        if from < to {
            line.push(&text[from..to], outer);
        }
    };
    while i < bytes.len() {
        let rest = &text[i..];
        let step = if rest.starts_with('\\')
            && rest[1..].starts_with(|c: char| c.is_ascii_punctuation())
        {
            flush(line, plain_start, i);
            let c = rest[1..].chars().next().map_or(1, char::len_utf8);
            line.push(&rest[1..1 + c], outer);
            Some(1 + c)
        } else if rest.starts_with('`') {
            code_span(rest).map(|(inner, used)| {
                flush(line, plain_start, i);
                line.push(inner, Style::Code);
                used
            })
        } else if rest.starts_with("**") || rest.starts_with("__") {
            delimited(rest, &rest[..2], text, i).map(|(inner, used)| {
                flush(line, plain_start, i);
                inline_into(inner, Style::Bold, line);
                used
            })
        } else if rest.starts_with("~~") {
            delimited(rest, "~~", text, i).map(|(inner, used)| {
                flush(line, plain_start, i);
                inline_into(inner, Style::Dim, line);
                used
            })
        } else if rest.starts_with('*') || rest.starts_with('_') {
            delimited(rest, &rest[..1], text, i).map(|(inner, used)| {
                flush(line, plain_start, i);
                let style = if outer == Style::Bold {
                    Style::Bold
                } else {
                    Style::Italic
                };
                inline_into(inner, style, line);
                used
            })
        } else if rest.starts_with('[') || rest.starts_with("![") {
            link(rest).map(|(label, url, image, used)| {
                flush(line, plain_start, i);
                push_link(line, label, url, image);
                used
            })
        } else if rest.starts_with('<') {
            autolink(rest).map(|(url, used)| {
                flush(line, plain_start, i);
                line.push(url, Style::Link);
                used
            })
        } else {
            None
        };
        match step {
            Some(used) => {
                i += used;
                plain_start = i;
            }
            None => i += rest.chars().next().map_or(1, char::len_utf8),
        }
    }
    flush(line, plain_start, text.len());
}

fn push_link(line: &mut Line, label: &str, url: &str, image: bool) {
    if image {
        line.push(format!("[image: {label}]"), Style::Dim);
        line.push(format!(" ({url})"), Style::Dim);
    } else if label == url || label.is_empty() {
        line.push(url, Style::Link);
    } else {
        inline_into(label, Style::Link, line);
        line.push(format!(" ({url})"), Style::Dim);
    }
}

fn code_span(rest: &str) -> Option<(&str, usize)> {
    let ticks = rest.chars().take_while(|c| *c == '`').count();
    let fence = &rest[..ticks];
    let after = &rest[ticks..];
    let mut search = 0;
    while let Some(pos) = after[search..].find(fence) {
        let at = search + pos;
        let run = after[at..].chars().take_while(|c| *c == '`').count();
        if run == ticks {
            let inner = &after[..at];
            let inner = if inner.len() > 2 && inner.starts_with(' ') && inner.ends_with(' ') {
                &inner[1..inner.len() - 1]
            } else {
                inner
            };
            return Some((inner, ticks + at + ticks));
        }
        search = at + run;
    }
    None
}

/// `marker inner marker` at the front of `rest`. Single underscores only count at word
/// boundaries (`snake_case_name` stays literal); emphasis must hug its text.
fn delimited<'a>(rest: &'a str, marker: &str, whole: &str, at: usize) -> Option<(&'a str, usize)> {
    let after = &rest[marker.len()..];
    if after.starts_with(char::is_whitespace) || after.is_empty() {
        return None;
    }
    if marker == "_" || marker == "__" {
        let before = whole[..at].chars().next_back();
        if before.is_some_and(char::is_alphanumeric) {
            return None;
        }
    }
    let mut search = 0;
    while let Some(pos) = after[search..].find(marker) {
        let at_close = search + pos;
        let inner = &after[..at_close];
        let doubled =
            marker.len() == 1 && after[at_close + 1..].starts_with(marker) && !inner.is_empty();
        let next_alnum = after[at_close + marker.len()..]
            .chars()
            .next()
            .is_some_and(char::is_alphanumeric);
        let underscore_inside_word = marker.starts_with('_') && next_alnum;
        if !inner.is_empty() && !inner.ends_with(char::is_whitespace) && !underscore_inside_word {
            if doubled {
                search = at_close + 2;
                continue;
            }
            return Some((inner, marker.len() * 2 + inner.len()));
        }
        search = at_close + marker.len();
    }
    None
}

fn link(rest: &str) -> Option<(&str, &str, bool, usize)> {
    let image = rest.starts_with('!');
    let start = usize::from(image);
    let after = &rest[start + 1..];
    let close = after.find("](")?;
    let label = &after[..close];
    let url_part = &after[close + 2..];
    let end = url_part.find(')')?;
    let url = url_part[..end].trim();
    let url = url.split_whitespace().next().unwrap_or(url);
    if url.is_empty() {
        return None;
    }
    Some((label, url, image, start + 1 + close + 2 + end + 1))
}

fn autolink(rest: &str) -> Option<(&str, usize)> {
    let end = rest.find('>')?;
    let inner = &rest[1..end];
    let is_url = (inner.starts_with("http://") || inner.starts_with("https://"))
        && !inner.contains(char::is_whitespace);
    is_url.then_some((inner, end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_all(text: &str, width: usize) -> Vec<Line> {
        let mut md = Markdown::new(width);
        let mut out = md.push(text);
        out.extend(md.finish());
        out
    }

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    /// Feeding `text` split at every byte boundary (and char by char) gives the same lines.
    fn assert_chunking_invariant(text: &str, width: usize) -> Vec<Line> {
        let whole = render_all(text, width);
        for cut in (1..text.len()).filter(|c| text.is_char_boundary(*c)) {
            let mut md = Markdown::new(width);
            let mut out = md.push(&text[..cut]);
            out.extend(md.push(&text[cut..]));
            out.extend(md.finish());
            assert_eq!(texts(&out), texts(&whole), "split at {cut}");
        }
        let mut md = Markdown::new(width);
        let mut out = Vec::new();
        for c in text.chars() {
            out.extend(md.push(&c.to_string()));
        }
        out.extend(md.finish());
        assert_eq!(out, whole, "char by char");
        whole
    }

    #[test]
    fn code_fence_split_across_chunks() {
        let text = "Here:\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\nDone.\n";
        let lines = assert_chunking_invariant(text, 60);
        assert_eq!(
            texts(&lines),
            vec![
                "Here:",
                "╭─ rust",
                "│ fn main() {",
                "│     println!(\"hi\");",
                "│ }",
                "╰─",
                "Done.",
            ]
        );
        assert_eq!(lines[2].spans[1].style, Style::Code);
        assert_eq!(lines[1].spans[0].style, Style::Frame);
    }

    #[test]
    fn code_fence_contents_are_not_markdown() {
        let lines = render_all("```\n# not a heading\n**x**\n```\n", 40);
        assert_eq!(
            texts(&lines),
            vec!["╭─", "│ # not a heading", "│ **x**", "╰─"]
        );
    }

    #[test]
    fn table_arriving_row_by_row_is_aligned_when_it_ends() {
        let text =
            "| Name | Size |\n|:-----|-----:|\n| a.rs | 10 |\n| longer_name.rs | 2048 |\n\nafter\n";
        let lines = assert_chunking_invariant(text, 60);
        assert_eq!(
            texts(&lines),
            vec![
                "Name           │ Size",
                "───────────────┼─────",
                "a.rs           │   10",
                "longer_name.rs │ 2048",
                "",
                "after",
            ]
        );
        // While rows arrive, nothing is final and the live area shows them.
        let mut md = Markdown::new(60);
        assert!(md
            .push("| Name | Size |\n|---|---|\n| a | 1 |\n")
            .is_empty());
        assert_eq!(md.live().len(), 3);
    }

    #[test]
    fn wide_tables_shrink_to_the_width() {
        let text =
            "| a | b |\n|---|---|\n| 日本語のとても長いセル | another very long cell text |\n";
        let lines = render_all(text, 30);
        assert!(lines.iter().all(|l| l.width() <= 30), "{:?}", texts(&lines));
        assert!(lines[2].text().contains('…'));
    }

    #[test]
    fn headings_lists_quotes_rules_and_links() {
        let text = "# Title\n\n\n- one\n- [x] done\n  2. nested\n> quoted *em*\n---\nSee [docs](https://x.dev) or <https://y.dev>.\n";
        let lines = assert_chunking_invariant(text, 50);
        assert_eq!(
            texts(&lines),
            vec![
                "Title",
                "",
                "• one",
                "☑ done",
                "  2. nested",
                "│ quoted em",
                &"─".repeat(50),
                "See docs (https://x.dev) or https://y.dev.",
            ]
        );
        assert_eq!(lines[0].spans[0].style, Style::Heading);
        assert!(lines[7]
            .spans
            .iter()
            .any(|s| s.text == "docs" && s.style == Style::Link));
    }

    #[test]
    fn inline_styles_and_literal_leftovers() {
        let line = inline("a **bold** and *it* and `code` and snake_case_name and 2*3*4");
        let styled: Vec<(String, Style)> = line
            .spans
            .iter()
            .map(|s| (s.text.clone(), s.style))
            .collect();
        assert!(styled.contains(&("bold".into(), Style::Bold)));
        assert!(styled.contains(&("it".into(), Style::Italic)));
        assert!(styled.contains(&("code".into(), Style::Code)));
        assert!(line.text().contains("snake_case_name"));
        assert_eq!(inline("**open").text(), "**open");
        assert_eq!(inline(r"\*not em\*").text(), "*not em*");
        assert_eq!(inline("``a ` b``").spans[0].text, "a ` b");
    }

    #[test]
    fn list_items_wrap_with_hanging_indent() {
        let lines = render_all("- alpha beta gamma delta epsilon zeta eta theta\n", 24);
        let t = texts(&lines);
        assert!(t.len() > 1);
        assert!(t[0].starts_with("• alpha"));
        assert!(t[1..]
            .iter()
            .all(|r| r.starts_with("  ") && !r.starts_with("   ")));
        assert!(lines.iter().all(|l| l.width() <= 24));
    }

    #[test]
    fn escape_sequences_in_model_text_are_neutralised() {
        let lines = render_all(
            "hi \u{1b}]0;title\u{7} \u{1b}[2J\n```\n\u{1b}[31mred\n```\n",
            60,
        );
        for line in &lines {
            assert!(!line.text().contains('\u{1b}'), "{:?}", line.text());
        }
        assert!(lines[0].text().contains("^[]0;title"));
    }

    #[test]
    fn long_partial_paragraph_is_committed_before_it_overflows_the_live_area() {
        let mut md = Markdown::new(30);
        let words = "word ".repeat(60);
        let committed = md.push(&words);
        assert!(!committed.is_empty(), "a long line must not stay live");
        assert!(md.live().len() <= LIVE_ROWS);
        let mut all = committed;
        all.extend(md.push(" end\n"));
        all.extend(md.finish());
        let joined: String = texts(&all).join(" ");
        assert_eq!(
            joined.split_whitespace().filter(|w| *w == "word").count(),
            60
        );
        assert!(joined.ends_with("end"));
        assert!(all.iter().all(|l| l.width() <= 30));
    }

    #[test]
    fn soft_commit_keeps_bold_open_across_the_cut() {
        let mut md = Markdown::new(30);
        let mut out = md.push(&format!("**{}", "bold ".repeat(40)));
        out.extend(md.push("end** plain\n"));
        out.extend(md.finish());
        let plain_words: Vec<&str> = out
            .iter()
            .flat_map(|l| l.spans.iter())
            .filter(|s| s.style == Style::Plain)
            .flat_map(|s| s.text.split_whitespace())
            .collect();
        assert_eq!(plain_words, vec!["plain"]);
    }

    #[test]
    fn blank_runs_collapse_and_unclosed_fence_closes_at_finish() {
        let lines = render_all("\n\na\n\n\n\nb\n```\ncode", 40);
        assert_eq!(texts(&lines), vec!["a", "", "b", "╭─", "│ code", "╰─"]);
    }
}
