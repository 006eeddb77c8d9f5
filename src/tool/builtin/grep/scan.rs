//! The streaming search of one open file: its bytes pass through one fixed-size buffer (kept
//! by the worker for its next file), so memory never depends on the file's size. The buffer
//! is searched a run of whole lines at a time; the bytes of a line cut by the buffer's end are
//! moved to the front and the buffer is topped up.
//!
//! A line longer than the buffer (a "giant line": minified code, a JSON blob) is not held
//! whole. It is searched in windows of the buffer's size, each overlapping the previous one by
//! [`OVERLAP`] bytes (more when a literal of the pattern is longer), so a match of at most that
//! length is found wherever it lies in the line, and a literal pattern is always found. The
//! byte before a window is context, so `^`, `\A` and `\b` at its start are decided as for the
//! whole line; a match that runs into a window's cut is trusted only when the pattern asserts
//! nothing about what follows (`$`, `\b`, ...), otherwise the next window looks again. Such a
//! line is printed like any long line, cut to a window around its first match, with its full
//! length.
//!
//! A multiline pattern may span any lines, so it sees the first [`MULTILINE_WINDOW_BYTES`] of
//! each file as one block, and the output names files cut short. Collecting the matching lines
//! and their context into what one file contributes to the output is done here too, with each
//! printed line tagged by the match that printed it, so that `report` can cut a file's output
//! after any number of matches exactly as a sequential search would have.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};

use super::bytes::{find_byte, rfind_byte};
use super::matcher::{decode, line_count, Matcher, Visit};
use super::report::{clip, MAX_LINE_BYTES};
use super::{Mode, Request};
use crate::cancel::CancelToken;

/// The per-worker buffer of a line-by-line search: a file is read this much at a time, and a
/// longer line is searched in windows of this size.
pub const BUFFER_BYTES: usize = 256 * 1024;
/// A multiline pattern sees this much of each file.
pub const MULTILINE_WINDOW_BYTES: usize = 4 * 1024 * 1024;
/// Files whose first 8 KiB hold a NUL byte are binary and skipped.
const BINARY_PROBE_BYTES: usize = 8192;
/// How much consecutive windows of a giant line share, at least.
pub const OVERLAP: usize = 4096;

/// What searching one file found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub ended: Ended,
    /// Matching lines (in files mode, 1 at the first one: the search stops there).
    pub matches: usize,
    /// Content mode: the lines to print, in order.
    pub printed: Vec<Printed>,
    /// A multiline search saw only the start of the file.
    pub partial: bool,
}

#[derive(Debug, Default)]
pub enum Ended {
    #[default]
    Text,
    /// Its first 8 KiB hold a NUL byte; nothing was searched.
    Binary,
    /// A read failed part-way; what was found before the failure is kept.
    Unreadable(io::Error),
}

/// One output line of content mode.
#[derive(Debug)]
pub struct Printed {
    /// 0-based line number in the file.
    pub line: usize,
    /// `:` for a matching line, `-` for context.
    pub separator: char,
    pub text: String,
    /// The file's match (0-based, in order) whose turn printed this line: showing the first
    /// `k` matches of the file prints exactly the lines with `owner < k`.
    pub owner: usize,
}

/// The search was cancelled.
#[derive(Debug)]
pub struct Cancelled;

/// One worker's searcher: its own copy of the matcher and its own buffer.
pub struct Searcher<'r> {
    request: &'r Request,
    matcher: Matcher,
    buf: Vec<u8>,
}

impl<'r> Searcher<'r> {
    pub fn new(request: &'r Request) -> Searcher<'r> {
        let size = match request.matcher.is_multiline() {
            true => MULTILINE_WINDOW_BYTES,
            false => BUFFER_BYTES,
        };
        Searcher::with_buffer(request, size)
    }

    /// A searcher with a buffer of `size` bytes (tests use tiny ones to exercise boundaries).
    pub fn with_buffer(request: &'r Request, size: usize) -> Searcher<'r> {
        Searcher {
            request,
            matcher: request.matcher.clone(),
            buf: vec![0; size.max(16)],
        }
    }

    /// Searches `file`. In content mode at most `budget` matches are rendered (the rest are
    /// only counted): no file can show more than the output has room left for.
    pub fn search(
        &mut self,
        file: File,
        budget: usize,
        cancel: &CancelToken,
    ) -> Result<Outcome, Cancelled> {
        let mut scan = FileScan {
            request: self.request,
            matcher: &self.matcher,
            reader: Reader {
                file,
                buf: &mut self.buf,
                start: 0,
                end: 0,
                eof: false,
            },
            outcome: Outcome::default(),
            render: Render::new(self.request, budget),
        };
        let result = match self.matcher.is_multiline() {
            true => scan.multiline(),
            false => scan.by_lines(cancel),
        };
        match result {
            Ok(()) => {}
            Err(Stop::Cancelled) => return Err(Cancelled),
            Err(Stop::Io(e)) => scan.outcome.ended = Ended::Unreadable(e),
        }
        let mut outcome = scan.outcome;
        outcome.printed = scan.render.printed;
        if self.request.mode == Mode::Content {
            outcome.matches = scan.render.matches;
        }
        Ok(outcome)
    }
}

enum Stop {
    Cancelled,
    Io(io::Error),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Stop {
        Stop::Io(e)
    }
}

/// Whether the rest of the file is worth reading.
#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    Done,
}

/// A file read through a buffer: the unconsumed bytes are `buf[start..end]`.
struct Reader<'b> {
    file: File,
    buf: &'b mut Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
}

impl Reader<'_> {
    /// Moves the unconsumed bytes to the front and reads until the buffer is full or the file
    /// ends.
    fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        while self.end < self.buf.len() && !self.eof {
            match self.file.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Whether nothing follows the unconsumed bytes.
    fn at_end(&mut self) -> io::Result<bool> {
        if self.start < self.end {
            return Ok(false);
        }
        let mut probe = [0u8; 1];
        while !self.eof {
            match self.file.read(&mut probe) {
                Ok(0) => self.eof = true,
                Ok(_) => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

struct FileScan<'s, 'b> {
    request: &'s Request,
    matcher: &'s Matcher,
    reader: Reader<'b>,
    outcome: Outcome,
    render: Render,
}

impl FileScan<'_, '_> {
    fn is_binary(&self) -> bool {
        let probe = &self.reader.buf[..self.reader.end.min(BINARY_PROBE_BYTES)];
        find_byte(probe, 0).is_some()
    }

    fn by_lines(&mut self, cancel: &CancelToken) -> Result<(), Stop> {
        let mut first = true;
        loop {
            // A file of one buffer-full (most source files) needs no check of its own: the
            // walk checks between files.
            if !first && cancel.is_cancelled() {
                return Err(Stop::Cancelled);
            }
            self.reader.fill()?;
            if first && self.is_binary() {
                self.outcome.ended = Ended::Binary;
                return Ok(());
            }
            first = false;
            let (end, eof) = (self.reader.end, self.reader.eof);
            if end == 0 {
                return Ok(());
            }
            let stop = match eof {
                true => Some(end),
                false => rfind_byte(&self.reader.buf[..end], b'\n').map(|i| i + 1),
            };
            let flow = match stop {
                Some(stop) => {
                    self.reader.start = stop;
                    self.block(stop)
                }
                None => self.giant_line(cancel)?,
            };
            if flow == Flow::Done || (self.reader.eof && self.reader.start == self.reader.end) {
                return Ok(());
            }
        }
    }

    /// Searches `buf[..stop]`, a run of whole lines.
    fn block(&mut self, stop: usize) -> Flow {
        let block = &self.reader.buf[..stop];
        match self.request.mode {
            Mode::Files => {
                let mut found = false;
                self.matcher.visit_lines(block, |_, _| {
                    found = true;
                    Visit::Stop
                });
                if found {
                    self.outcome.matches = 1;
                    return Flow::Done;
                }
            }
            Mode::Count => self.matcher.visit_lines(block, |_, _| {
                self.outcome.matches += 1;
                Visit::Continue
            }),
            Mode::Content => {
                let mut matched = Vec::new();
                let (mut index, mut counted_to) = (0, 0);
                self.matcher.visit_lines(block, |start, _| {
                    index += super::bytes::count_newlines(&block[counted_to..start]);
                    counted_to = start;
                    matched.push(index);
                    Visit::Continue
                });
                let matcher = self.matcher;
                let mut spans: Option<Vec<(usize, usize)>> = None;
                let mut display = |i: usize, is_match: bool| {
                    let spans = spans.get_or_insert_with(|| line_spans(block));
                    let (s, e) = spans[i];
                    let line = &block[s..e];
                    let text = decode(line.strip_suffix(b"\r").unwrap_or(line));
                    let focus = match is_match {
                        true => matcher.first_match_in(&text),
                        false => 0,
                    };
                    clip(&text, focus).into_owned()
                };
                self.render
                    .add_block(line_count(block), &matched, &mut display);
            }
        }
        Flow::Continue
    }

    /// Searches a line longer than the buffer (which it fills, from offset 0) in overlapping
    /// windows, then leaves the reader after it.
    fn giant_line(&mut self, cancel: &CancelToken) -> Result<Flow, Stop> {
        let size = self.reader.buf.len();
        let overlap = OVERLAP.max(self.matcher.longest_literal()).min(size / 2);
        let mut offset = 0usize; // of buf[0] in the line
        let mut from = 0; // where a match may start in the current window
        let mut head = Excerpt::at(0);
        let mut found: Option<Excerpt> = None;
        loop {
            let buf = &self.reader.buf[..self.reader.end];
            let newline = find_byte(buf, b'\n');
            let last = newline.is_some() || self.reader.eof;
            let window_end = match newline {
                Some(i) => i,
                None if self.reader.eof => buf.len(),
                None => char_floor(buf, buf.len()),
            };
            let window = &buf[..window_end];
            head.feed(window, offset);
            match &mut found {
                Some(excerpt) => excerpt.feed(window, offset),
                None => {
                    if let Some(at) = self.matcher.window_match(window, from, last) {
                        let mut excerpt = Excerpt::around(window, at, offset);
                        excerpt.feed(window, offset);
                        found = Some(excerpt);
                        if self.request.mode == Mode::Files {
                            self.outcome.matches = 1;
                            return Ok(Flow::Done);
                        }
                    }
                }
            }
            if last {
                let body = window.strip_suffix(b"\r").unwrap_or(window);
                let length = offset + body.len();
                self.reader.start = newline.map_or(self.reader.end, |i| i + 1);
                self.end_giant_line(length, &head, found.as_ref());
                return Ok(Flow::Continue);
            }
            if cancel.is_cancelled() {
                return Err(Stop::Cancelled);
            }
            // The next window starts `overlap` bytes back, on a character boundary; its first
            // character is context only.
            let keep = char_floor(window, window_end.saturating_sub(overlap)).max(1);
            from = char_len(&window[keep..]);
            offset += keep;
            self.reader.start = keep;
            self.reader.fill()?;
        }
    }

    fn end_giant_line(&mut self, length: usize, head: &Excerpt, found: Option<&Excerpt>) {
        match self.request.mode {
            Mode::Files => {}
            Mode::Count => self.outcome.matches += found.is_some() as usize,
            Mode::Content => {
                let matched: &[usize] = match found {
                    Some(_) => &[0],
                    None => &[],
                };
                // A line is giant for the buffer, not necessarily for the output: a short one
                // (with a tiny test buffer) is printed whole, as `clip` would.
                let mut display = |_: usize, is_match: bool| match (is_match, found) {
                    _ if length <= MAX_LINE_BYTES => {
                        String::from_utf8_lossy(&head.bytes[..length.min(head.bytes.len())])
                            .into_owned()
                    }
                    (true, Some(excerpt)) => excerpt.render(length),
                    _ => head.render(length),
                };
                self.render.add_block(1, matched, &mut display);
            }
        }
    }

    /// A multiline pattern: the file's first window, cut after its last whole line.
    fn multiline(&mut self) -> Result<(), Stop> {
        self.reader.fill()?;
        if self.is_binary() {
            self.outcome.ended = Ended::Binary;
            return Ok(());
        }
        let end = self.reader.end;
        let stop = match self.reader.eof {
            true => end,
            false => rfind_byte(&self.reader.buf[..end], b'\n').map_or(end, |i| i + 1),
        };
        self.reader.start = stop;
        let block = &self.reader.buf[..stop];
        let text = decode(block);
        let matched = self.matcher.multiline_lines(&text);
        match self.request.mode {
            Mode::Files => {
                if !matched.is_empty() {
                    self.outcome.matches = 1;
                    return Ok(());
                }
            }
            Mode::Count => self.outcome.matches = matched.len(),
            Mode::Content => {
                let lines: Vec<&str> = text
                    .strip_suffix('\n')
                    .unwrap_or(&text)
                    .split('\n')
                    .map(|l| l.strip_suffix('\r').unwrap_or(l))
                    .collect();
                let matcher = self.matcher;
                let mut display = |i: usize, is_match: bool| {
                    let focus = match is_match {
                        true => matcher.first_match_in(lines[i]),
                        false => 0,
                    };
                    clip(lines[i], focus).into_owned()
                };
                self.render
                    .add_block(line_count(block), &matched, &mut display);
            }
        }
        self.outcome.partial = !self.reader.at_end()?;
        Ok(())
    }
}

/// `(start, end)` of each line of a block, without `\n`.
fn line_spans(block: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    while start < block.len() {
        let end = find_byte(&block[start..], b'\n').map_or(block.len(), |i| start + i);
        spans.push((start, end));
        start = end + 1;
    }
    spans
}

/// The largest character boundary at or before `at` (at most 3 bytes back: further is not
/// UTF-8 anyway).
fn char_floor(bytes: &[u8], at: usize) -> usize {
    let mut i = at;
    while i > 0 && at - i < 3 && bytes.get(i).is_some_and(|&b| b & 0xc0 == 0x80) {
        i -= 1;
    }
    i
}

/// The length of the character `bytes` starts with (1 for a stray byte).
fn char_len(bytes: &[u8]) -> usize {
    let mut n = 1;
    while n < 4 && bytes.get(n).is_some_and(|&b| b & 0xc0 == 0x80) {
        n += 1;
    }
    n.min(bytes.len().max(1))
}

/// Some bytes of a giant line, from `from`, gathered from consecutive windows: what a long
/// line is cut to when printed.
struct Excerpt {
    from: usize,
    bytes: Vec<u8>,
}

/// Enough bytes for [`clip`]'s window plus a character cut at its end.
const EXCERPT_BYTES: usize = MAX_LINE_BYTES + 4;

impl Excerpt {
    fn at(from: usize) -> Excerpt {
        Excerpt {
            from,
            bytes: Vec::new(),
        }
    }

    /// Starts a quarter of the printed width before the match at `at` in `window` (which
    /// starts at line offset `offset`), as [`clip`] does, but not before the window.
    fn around(window: &[u8], at: usize, offset: usize) -> Excerpt {
        let start = char_floor(window, at.saturating_sub(MAX_LINE_BYTES / 4));
        Excerpt::at(offset + start)
    }

    /// Takes what it still lacks from `window`, which starts at line offset `offset`.
    fn feed(&mut self, window: &[u8], offset: usize) {
        let want = self.from + self.bytes.len();
        if self.bytes.len() >= EXCERPT_BYTES || want < offset || want >= offset + window.len() {
            return;
        }
        let take = (EXCERPT_BYTES - self.bytes.len()).min(offset + window.len() - want);
        self.bytes
            .extend_from_slice(&window[want - offset..want - offset + take]);
    }

    /// The line as [`clip`] prints it, for a line of `length` bytes.
    fn render(&self, length: usize) -> String {
        let text = String::from_utf8_lossy(&self.bytes);
        let mut end = MAX_LINE_BYTES.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let head = if self.from > 0 { "…" } else { "" };
        let tail = if self.from + end < length { "…" } else { "" };
        format!(
            "{head}{}{tail} [line truncated: {length} bytes]",
            &text[..end]
        )
    }
}

/// Content mode's printing of one file: matching lines with their context, which may reach
/// back into the remembered tail of earlier blocks and on into later ones.
struct Render {
    before: usize,
    after: usize,
    budget: usize,
    /// Matching lines so far; the first `budget` of them are rendered.
    matches: usize,
    /// Lines in the blocks before the current one.
    lines_before: usize,
    /// The last line printed.
    printed_to: Option<usize>,
    /// Context after a match reaches this line, possibly in a later block, and the match.
    after_until: Option<(usize, usize)>,
    /// The last lines of the earlier blocks, as printed for context, for a match at the start
    /// of a block to show its before-context.
    tail: VecDeque<(usize, String)>,
    printed: Vec<Printed>,
}

impl Render {
    fn new(request: &Request, budget: usize) -> Render {
        Render {
            before: request.before,
            after: request.after,
            budget,
            matches: 0,
            lines_before: 0,
            printed_to: None,
            after_until: None,
            tail: VecDeque::new(),
            printed: Vec::new(),
        }
    }

    /// The first line not printed yet.
    fn unprinted(&self) -> usize {
        self.printed_to.map_or(0, |p| p + 1)
    }

    /// Adds a block of `count` lines whose matching lines are `matched` (block indices,
    /// ascending); `display(i, is_match)` gives line `i` as printed.
    fn add_block(
        &mut self,
        count: usize,
        matched: &[usize],
        display: &mut dyn FnMut(usize, bool) -> String,
    ) {
        let base = self.lines_before;
        self.lines_before += count;
        let first_owner = self.matches;
        let take = matched.len().min(self.budget.saturating_sub(self.matches));
        self.matches += matched.len();
        let carried = self
            .after_until
            .filter(|&(until, _)| until >= base && until >= self.unprinted());
        if (take > 0 || carried.is_some()) && count > 0 {
            let last = base + count - 1;
            let mut print = |render: &mut Render, index: usize, owner: usize| {
                let (separator, text) = if index < base {
                    let remembered = render.tail.iter().find(|(i, _)| *i == index);
                    match remembered {
                        Some((_, line)) => ('-', line.clone()),
                        None => return,
                    }
                } else {
                    let is_match = matched.binary_search(&(index - base)).is_ok();
                    let separator = if is_match { ':' } else { '-' };
                    (separator, display(index - base, is_match))
                };
                render.printed.push(Printed {
                    line: index,
                    separator,
                    text,
                    owner,
                });
                render.printed_to = Some(index);
            };
            if let Some((until, owner)) = carried {
                for index in self.unprinted().max(base)..=until.min(last) {
                    print(self, index, owner);
                }
            }
            for (j, &m) in matched[..take].iter().enumerate() {
                let at = base + m;
                let owner = first_owner + j;
                let first = at.saturating_sub(self.before).max(self.unprinted());
                for index in first..=(at + self.after).min(last) {
                    print(self, index, owner);
                }
                self.after_until = Some((at + self.after, owner));
            }
        }
        if self.before > 0 {
            let keep = self.before.min(count);
            for i in count - keep..count {
                self.tail.push_back((base + i, display(i, false)));
                if self.tail.len() > self.before {
                    self.tail.pop_front();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::Report;
    use super::*;
    use serde_json::{json, Value};

    /// Greps `f.txt` in `dir` through a buffer of `size` bytes.
    fn grep_with_buffer(dir: &std::path::Path, args: &Value, size: usize) -> String {
        let request = Request::parse(args).unwrap();
        let mut report = Report::new(&request);
        let file = File::open(dir.join("f.txt")).unwrap();
        let outcome = Searcher::with_buffer(&request, size)
            .search(file, request.limit, &CancelToken::new())
            .unwrap();
        assert!(matches!(outcome.ended, Ended::Text));
        report.add(&outcome, "f.txt");
        report.finish(&request, "f.txt")
    }

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("reasonix-grep-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Matches, context and lines that straddle buffer boundaries, or are longer than the
    /// buffer, print exactly as when the file fits in one buffer.
    #[test]
    fn buffer_boundaries_and_giant_lines_do_not_change_the_output() {
        let dir = temp_dir("buffers");
        let text: String = (1..=60)
            .map(|i| match i % 7 {
                0 | 3 => format!("hit {i}\r\n"),
                5 => format!("{}hit{}\n", "x".repeat(i), "y".repeat(40)),
                _ => format!("line {i}\n"),
            })
            .collect();
        std::fs::write(dir.join("f.txt"), format!("{text}hit at the end")).unwrap();
        let cases = [
            json!({"pattern": "hit", "output_mode": "content"}),
            json!({"pattern": "hit", "output_mode": "content", "context": 2}),
            json!({"pattern": "hit", "output_mode": "content", "before": 5, "after": 1}),
            json!({"pattern": "h.t", "output_mode": "content", "after": 4, "head_limit": 5}),
            json!({"pattern": "(?i)HIT \\d+$", "output_mode": "content"}),
            json!({"pattern": "\\bhit\\b", "output_mode": "count"}),
            json!({"pattern": "hit", "output_mode": "count"}),
            json!({"pattern": "end$"}),
            json!({"pattern": "nowhere"}),
        ];
        for args in cases {
            let whole = grep_with_buffer(&dir, &args, 1 << 20);
            for size in [16, 23, 40, 97, 256] {
                assert_eq!(
                    grep_with_buffer(&dir, &args, size),
                    whole,
                    "{args} through a buffer of {size}"
                );
            }
        }
        let context = grep_with_buffer(
            &dir,
            &json!({"pattern": "hit 7$", "output_mode": "content", "context": 1}),
            16,
        );
        assert_eq!(context, "f.txt-6-line 6\nf.txt:7:hit 7\nf.txt-8-line 8\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A line many times the buffer is searched to its end in bounded memory, and printed
    /// as a window around its first match with its full length.
    #[test]
    fn a_giant_line_is_searched_to_its_end_in_overlapping_windows() {
        let dir = temp_dir("giant");
        let long = format!("{}needle{}", "a".repeat(5000), "b".repeat(3000));
        std::fs::write(
            dir.join("f.txt"),
            format!("{long}\nneedle too\n{}\n", "c".repeat(9000)),
        )
        .unwrap();
        let content = json!({"pattern": "needle", "output_mode": "content", "context": 1});
        let expected = format!(
            "f.txt:1:{}\nf.txt:2:needle too\nf.txt-3-{}\n",
            super::super::report::clip(&long, 5000),
            super::super::report::clip(&"c".repeat(9000), 0)
        );
        for size in [64, 512, 4096, 1 << 20] {
            // With a tiny buffer (an overlap under 100 bytes) the printed window may start
            // later than `clip`'s; real buffers overlap by 4 KiB.
            if size >= 512 {
                assert_eq!(
                    grep_with_buffer(&dir, &content, size),
                    expected,
                    "buffer {size}"
                );
            }
            let count = json!({"pattern": "needle", "output_mode": "count"});
            assert_eq!(
                grep_with_buffer(&dir, &count, size),
                "f.txt:2\n(2 matching lines in 1 file)\n"
            );
            for (pattern, lines) in [
                ("\\bneedle\\b", 1),
                ("aneedleb", 1),
                ("^needle", 1),
                ("a$", 0),
                ("a\\b", 0),
                ("\\ba", 1),
                ("b$", 1),
                ("c$", 1),
            ] {
                let count = json!({"pattern": pattern, "output_mode": "count"});
                let out = grep_with_buffer(&dir, &count, size);
                match lines {
                    0 => assert!(out.starts_with("No matches"), "{pattern} {size}: {out}"),
                    n => assert_eq!(
                        out,
                        format!(
                            "f.txt:{n}\n({n} matching line{} in 1 file)\n",
                            if n == 1 { "" } else { "s" }
                        ),
                        "{pattern} buffer {size}"
                    ),
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
