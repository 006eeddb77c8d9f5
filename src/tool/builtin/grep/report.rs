//! The output of a grep: files' outcomes added one at a time in walk order, with the result
//! cap (`head_limit`), the `--` between context groups, long lines clipped around their match
//! and the closing notes. Adding the same outcomes in the same order always gives the same
//! bytes, whichever thread produced them.

use std::borrow::Cow;

use super::scan::{Outcome, MULTILINE_WINDOW_BYTES};
use super::{Mode, Request};

/// Longer lines are shown as a window around the first match.
pub const MAX_LINE_BYTES: usize = 400;

/// The output being built, with the counts needed for the closing notes.
pub struct Report {
    out: String,
    mode: Mode,
    limit: usize,
    /// Results shown: matching lines in content mode, files otherwise.
    shown: usize,
    omitted: usize,
    files_matched: usize,
    lines_matched: usize,
    /// Whether a context group has been printed, so the next one is preceded by `--`.
    grouped: bool,
    /// Context lines were asked for, so groups are separated by `--`.
    with_context: bool,
    /// Files a multiline search saw only the start of.
    partial: Vec<String>,
}

impl Report {
    pub fn new(request: &Request) -> Report {
        Report {
            out: String::new(),
            mode: request.mode,
            limit: request.limit,
            shown: 0,
            omitted: 0,
            files_matched: 0,
            lines_matched: 0,
            grouped: false,
            with_context: request.before > 0 || request.after > 0,
            partial: Vec::new(),
        }
    }

    /// Matching lines shown so far in content mode: a file searched next can show at most
    /// `limit` minus this many.
    pub fn shown(&self) -> usize {
        self.shown
    }

    /// Adds the next file's outcome; `shown` is its path as printed.
    pub fn add(&mut self, outcome: &Outcome, shown: &str) {
        if outcome.partial {
            self.partial.push(shown.to_string());
        }
        if outcome.matches == 0 {
            return;
        }
        self.files_matched += 1;
        match self.mode {
            Mode::Files => self.add_entry(shown),
            Mode::Count => {
                self.lines_matched += outcome.matches;
                self.add_entry(&format!("{shown}:{}", outcome.matches));
            }
            Mode::Content => self.add_content(outcome, shown),
        }
    }

    fn add_entry(&mut self, line: &str) {
        if self.shown < self.limit {
            self.out.push_str(line);
            self.out.push('\n');
            self.shown += 1;
        } else {
            self.omitted += 1;
        }
    }

    /// The file's first matches, as many as there is room for, with their context; a gap
    /// since the last printed line (and a new file) starts a new group.
    fn add_content(&mut self, outcome: &Outcome, shown: &str) {
        self.lines_matched += outcome.matches;
        let take = outcome.matches.min(self.limit - self.shown.min(self.limit));
        self.shown += take;
        self.omitted += outcome.matches - take;
        let mut printed_to: Option<usize> = None;
        for line in outcome.printed.iter().take_while(|l| l.owner < take) {
            let gap = printed_to.is_none_or(|p| line.line != p + 1);
            if gap && self.grouped && self.with_context {
                self.out.push_str("--\n");
            }
            self.grouped = true;
            self.out.push_str(&format!(
                "{shown}{0}{1}{0}{2}\n",
                line.separator,
                line.line + 1,
                line.text
            ));
            printed_to = Some(line.line);
        }
    }

    pub fn finish(mut self, request: &Request, target: &str) -> String {
        let partial = self.partial_note();
        if self.files_matched == 0 {
            let filter = match &request.include {
                Some(include) => format!(" (files matching `{}`)", include.glob.as_str()),
                None => String::new(),
            };
            return format!(
                "No matches for `{}` in {target}{filter}.{}",
                request.pattern,
                partial.map(|p| format!("\n{p}")).unwrap_or_default()
            );
        }
        if self.mode == Mode::Count {
            self.out.push_str(&format!(
                "({} in {})\n",
                counted(self.lines_matched, "matching line"),
                counted(self.files_matched, "file")
            ));
        }
        if self.omitted > 0 {
            let unit = match self.mode {
                Mode::Content => "matching line",
                Mode::Files | Mode::Count => "file",
            };
            self.out.push_str(&format!(
                "[{} more {} not shown; narrow your search with path or glob, or raise head_limit]\n",
                self.omitted,
                noun(self.omitted, unit)
            ));
        }
        if let Some(partial) = partial {
            self.out.push_str(&partial);
            self.out.push('\n');
        }
        self.out
    }

    /// Names the files a multiline search saw only the start of.
    fn partial_note(&self) -> Option<String> {
        if self.partial.is_empty() {
            return None;
        }
        let listed: Vec<&str> = self.partial.iter().take(10).map(String::as_str).collect();
        let more = match self.partial.len() > 10 {
            true => format!(" and {} more", self.partial.len() - 10),
            false => String::new(),
        };
        Some(format!(
            "[multiline mode searched only the first {} MiB of {}: {}{more}; search the rest \
             without multiline or with bash]",
            MULTILINE_WINDOW_BYTES / (1024 * 1024),
            counted(self.partial.len(), "file"),
            listed.join(", ")
        ))
    }
}

/// `1 file`, `2 files`.
fn counted(n: usize, unit: &str) -> String {
    format!("{n} {}", noun(n, unit))
}

fn noun(n: usize, unit: &str) -> String {
    match n {
        1 => unit.to_string(),
        _ => format!("{unit}s"),
    }
}

/// A long line cut to a window around `focus` (a byte offset), saying how long it was.
pub fn clip(line: &str, focus: usize) -> Cow<'_, str> {
    if line.len() <= MAX_LINE_BYTES {
        return Cow::Borrowed(line);
    }
    let start = char_floor(line, focus.saturating_sub(MAX_LINE_BYTES / 4));
    let end = char_floor(line, (start + MAX_LINE_BYTES).min(line.len()));
    let head = if start > 0 { "…" } else { "" };
    let tail = if end < line.len() { "…" } else { "" };
    Cow::Owned(format!(
        "{head}{}{tail} [line truncated: {} bytes]",
        &line[start..end],
        line.len()
    ))
}

fn char_floor(s: &str, mut index: usize) -> usize {
    while index > 0 && !s.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_centres_long_lines_on_the_match() {
        let line = format!("{}NEEDLE{}", "x".repeat(1000), "y".repeat(1000));
        let clipped = clip(&line, 1000);
        assert!(clipped.contains("NEEDLE"), "{clipped}");
        assert!(clipped.starts_with('…'));
        assert!(clipped.ends_with("[line truncated: 2006 bytes]"));
        assert_eq!(clip("short", 0), "short");
        let wide = "é".repeat(500);
        assert!(clip(&wide, 3).len() < wide.len());
    }
}
