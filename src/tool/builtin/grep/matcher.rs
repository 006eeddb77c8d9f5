//! Which lines of a block match: the pattern compiled once, with the cheapest exact way to
//! decide each line. A pattern without regex syntax is a plain byte search; for any other the
//! literals `literals` reads off it are searched first and regex-lite only runs on the lines
//! holding one. Lines are split on `\n`, a final newline does not start a line, and a `\r`
//! before the newline is not part of the line the regex sees.
//!
//! Blocks are raw bytes: invalid UTF-8 is decoded lossily per line (the same as per block,
//! since `\n` never belongs to a multi-byte sequence) only where the regex must run or a line
//! is printed. Reading files into blocks belongs to `scan`.

use std::borrow::Cow;

use regex_lite::{Regex, RegexBuilder};

use super::bytes::{count_newlines, find_byte, rfind_byte, Finder};
use super::literals::required_literals;
use crate::tool::ToolError;

/// A compiled pattern; cloned per worker thread so each has its own regex cache.
#[derive(Clone)]
pub struct Matcher {
    kind: Kind,
    /// The pattern may assert something about what follows a match (`$`, `\b`, `\B`, `\z`,
    /// `\>`), so a match ending where a window of a giant line is cut cannot be trusted.
    end_assertion: bool,
}

#[derive(Clone)]
enum Kind {
    /// No regex syntax beyond a leading `(?i)` and `|`: plain substring searches (`\r`
    /// included, as it is on disk), no regex at all.
    Literal(Vec<Finder>),
    PerLine {
        regex: Regex,
        hint: Hint,
    },
    Multiline {
        regex: Regex,
        hint: Hint,
    },
}

/// How to avoid running the (slow, literal-unaware) regex engine over every byte.
#[derive(Clone)]
enum Hint {
    /// Every match contains one of these: only lines holding one are tried.
    Needles(Vec<Finder>),
    /// No literal to go on, but a whole-block test finds no false negatives.
    WholeText,
    /// `\A` or `\z`: whole-text and per-line searches disagree, so every line is tried.
    EveryLine,
}

/// Whether a visit of matching lines goes on.
#[derive(PartialEq, Eq)]
pub enum Visit {
    Continue,
    Stop,
}

impl Matcher {
    pub fn new(pattern: &str, case_insensitive: bool, multiline: bool) -> Result<Self, ToolError> {
        let end_assertion = pattern.contains('$')
            || ["\\b", "\\B", "\\z", "\\>"]
                .iter()
                .any(|a| pattern.contains(a));
        // `(?i)copyright` and `todo|fixme` need no regex: regex-lite's folding is ASCII-only,
        // exactly what the finder does.
        let (body, fold) = match pattern.strip_prefix("(?i)") {
            Some(rest) => (rest, true),
            None => (pattern, case_insensitive),
        };
        let plain = |part: &str| {
            !part.is_empty()
                && !part.contains([
                    '\\', '.', '+', '*', '?', '(', ')', '|', '[', ']', '{', '}', '^', '$', '\n',
                ])
        };
        if !multiline && body.split('|').all(plain) {
            let mut needles: Vec<String> = body
                .split('|')
                .map(|n| match fold {
                    true => n.to_ascii_lowercase(),
                    false => n.to_string(),
                })
                .collect();
            needles.sort_unstable();
            needles.dedup();
            let finders = needles
                .iter()
                .map(|n| Finder::new(n.as_bytes(), fold))
                .collect();
            return Ok(Matcher {
                kind: Kind::Literal(finders),
                end_assertion,
            });
        }
        let regex = RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .multi_line(true)
            .crlf(true)
            .dot_matches_new_line(multiline)
            .build()
            .map_err(|e| {
                ToolError::InvalidArgs(format!(
                    "`pattern` is not a valid regular expression: {e}; put a backslash before \
                     ( ) [ ] {{ }} . * + ? | ^ $ to match them literally"
                ))
            })?;
        // Lossy decoding turns invalid bytes into U+FFFD, which a raw-byte prefilter for it
        // would never see.
        let literals = required_literals(pattern, case_insensitive)
            .filter(|l| !l.needles.iter().any(|n| n.contains('\u{fffd}')));
        let hint = match literals {
            Some(literals) => Hint::Needles(
                literals
                    .needles
                    .iter()
                    .map(|n| Finder::new(n.as_bytes(), literals.fold))
                    .collect(),
            ),
            None if pattern.contains("\\A") || pattern.contains("\\z") => Hint::EveryLine,
            None => Hint::WholeText,
        };
        let kind = match multiline {
            true => Kind::Multiline { regex, hint },
            false => Kind::PerLine { regex, hint },
        };
        Ok(Matcher {
            kind,
            end_assertion,
        })
    }

    pub fn is_multiline(&self) -> bool {
        matches!(self.kind, Kind::Multiline { .. })
    }

    /// The longest literal a giant line's windows must overlap by to find every occurrence.
    pub fn longest_literal(&self) -> usize {
        match &self.kind {
            Kind::Literal(finders)
            | Kind::PerLine {
                hint: Hint::Needles(finders),
                ..
            } => finders.iter().map(Finder::len).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// Calls `visit(start, end)` with the byte span (without `\n`) of each matching line of
    /// `block`, a run of whole lines, in order, until it says stop. Not for multiline patterns.
    pub fn visit_lines(&self, block: &[u8], mut visit: impl FnMut(usize, usize) -> Visit) {
        match &self.kind {
            Kind::Literal(finders) => visit_candidates(block, finders, &mut visit),
            Kind::PerLine { regex, hint } => match hint {
                Hint::Needles(finders) => visit_candidates(block, finders, |s, e| {
                    match regex.is_match(&line_text(&block[s..e])) {
                        true => visit(s, e),
                        false => Visit::Continue,
                    }
                }),
                Hint::WholeText if !regex.is_match(&decode(block)) => {}
                Hint::WholeText | Hint::EveryLine => {
                    let mut start = 0;
                    while start < block.len() {
                        let end =
                            find_byte(&block[start..], b'\n').map_or(block.len(), |i| start + i);
                        if regex.is_match(&line_text(&block[start..end]))
                            && visit(start, end) == Visit::Stop
                        {
                            return;
                        }
                        start = end + 1;
                    }
                }
            },
            Kind::Multiline { .. } => {}
        }
    }

    /// Indices of the lines of `text` (one whole window) that a multiline match touches.
    pub fn multiline_lines(&self, text: &str) -> Vec<usize> {
        let Kind::Multiline { regex, hint } = &self.kind else {
            return Vec::new();
        };
        if let Hint::Needles(finders) = hint {
            if !finders.iter().any(|f| f.find(text.as_bytes()).is_some()) {
                return Vec::new();
            }
        }
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let line_of = |offset: usize| starts.partition_point(|&s| s <= offset).saturating_sub(1);
        let last_line = line_count(text.as_bytes()).saturating_sub(1);
        let mut found = Vec::new();
        for m in regex.find_iter(text) {
            let first = line_of(m.start()).min(last_line);
            let last = line_of(m.end().saturating_sub(1).max(m.start())).min(last_line);
            found.extend(first..=last);
        }
        found.sort_unstable();
        found.dedup();
        found
    }

    /// Byte offset of the first match in one line, to centre a clipped long line on it.
    pub fn first_match_in(&self, line: &str) -> usize {
        match &self.kind {
            Kind::Literal(finders) => finders
                .iter()
                .filter_map(|f| f.find(line.as_bytes()))
                .min()
                .unwrap_or(0),
            Kind::PerLine { regex, .. } | Kind::Multiline { regex, .. } => {
                regex.find(line).map_or(0, |m| m.start())
            }
        }
    }

    /// The start of a match in one window of a line too long for the buffer, found at or
    /// after `from` (the bytes before it are context only, so `^` and `\b` see what precedes
    /// the window). `last` says the window ends where the line does; otherwise a match that
    /// runs into the cut is trusted only when the pattern asserts nothing about what follows
    /// it, and the next window, which overlaps this one, gets another look.
    pub fn window_match(&self, window: &[u8], from: usize, last: bool) -> Option<usize> {
        let (regex, hint) = match &self.kind {
            Kind::Literal(finders) => {
                return finders
                    .iter()
                    .filter_map(|f| f.find(&window[from..]))
                    .min()
                    .map(|i| from + i)
            }
            Kind::PerLine { regex, hint } => (regex, hint),
            Kind::Multiline { .. } => return None,
        };
        if let Hint::Needles(finders) = hint {
            if !finders.iter().any(|f| f.find(window).is_some()) {
                return None;
            }
        }
        let text = match last {
            true => line_text(window),
            false => decode(window),
        };
        let mut at = from.min(text.len());
        // A few retries past an untrustworthy match; the overlap covers what they miss.
        for _ in 0..8 {
            let m = regex.find_at(&text, at)?;
            if last || !self.end_assertion || m.end() < text.len() {
                return Some(m.start());
            }
            at = m.start() + text[m.start()..].chars().next().map_or(1, char::len_utf8);
            if at > text.len() {
                return None;
            }
        }
        None
    }
}

/// Calls `visit` with the span of each line holding one of `finders`' literals, in order.
/// Each literal's next occurrence is remembered, so a frequent one does not make a rare one
/// rescan the block.
fn visit_candidates(
    block: &[u8],
    finders: &[Finder],
    mut visit: impl FnMut(usize, usize) -> Visit,
) {
    // Offset of each literal's next occurrence at or after `from`; `None` once none is left.
    let mut next: Vec<Option<usize>> = vec![Some(0); finders.len()];
    let mut searched_from: Vec<usize> = vec![usize::MAX; finders.len()];
    let mut from = 0;
    while from < block.len() {
        let mut best: Option<usize> = None;
        for (i, finder) in finders.iter().enumerate() {
            let stale = searched_from[i] == usize::MAX || next[i].is_some_and(|at| at < from);
            if stale {
                next[i] = finder.find(&block[from..]).map(|at| from + at);
                searched_from[i] = from;
            }
            if let Some(at) = next[i] {
                best = Some(best.map_or(at, |b| b.min(at)));
            }
        }
        let Some(at) = best else { return };
        let start = rfind_byte(&block[from..at], b'\n').map_or(from, |i| from + i + 1);
        let end = find_byte(&block[at..], b'\n').map_or(block.len(), |i| at + i);
        if visit(start, end) == Visit::Stop {
            return;
        }
        from = end + 1;
    }
}

/// A line as the regex sees it: decoded, without a final `\r`.
fn line_text(line: &[u8]) -> Cow<'_, str> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    decode(line)
}

/// from_utf8 validates much faster than from_utf8_lossy's chunked walk, and almost every
/// line is valid.
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// The number of lines of `text`: a final newline does not start a line.
pub fn line_count(text: &[u8]) -> usize {
    if text.is_empty() {
        return 0;
    }
    let newlines = count_newlines(text);
    match text.ends_with(b"\n") {
        true => newlines,
        false => newlines + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<&str> {
        match text.is_empty() {
            true => Vec::new(),
            false => text
                .strip_suffix('\n')
                .unwrap_or(text)
                .split('\n')
                .map(|l| l.strip_suffix('\r').unwrap_or(l))
                .collect(),
        }
    }

    /// Indices of the lines regex-lite alone matches, line by line: the reference.
    fn plain_matches(plain: &Regex, text: &str) -> Vec<usize> {
        lines(text)
            .iter()
            .enumerate()
            .filter(|(_, l)| plain.is_match(l))
            .map(|(i, _)| i)
            .collect()
    }

    /// Indices of the lines `matcher` finds in `text`.
    fn matching(matcher: &Matcher, text: &str) -> Vec<usize> {
        let bytes = text.as_bytes();
        let mut found = Vec::new();
        matcher.visit_lines(bytes, |start, _| {
            found.push(count_newlines(&bytes[..start]));
            Visit::Continue
        });
        found
    }

    #[test]
    fn literal_and_regex_matchers_agree_on_line_numbers() {
        let text = "alpha\nBeta\r\ngamma beta\n";
        let literal = Matcher::new("beta", true, false).unwrap();
        assert!(matches!(literal.kind, Kind::Literal(_)));
        assert_eq!(matching(&literal, text), vec![1, 2]);
        let regex = Matcher::new("(?i)beta$", false, false).unwrap();
        assert_eq!(matching(&regex, text), vec![1, 2]);
        let anchored = Matcher::new("\\Agamma", false, false).unwrap();
        assert_eq!(matching(&anchored, text), vec![2]);
        let multi = Matcher::new("alpha.Beta", false, true).unwrap();
        assert_eq!(multi.multiline_lines(text), vec![0, 1]);
    }

    /// regex-lite folds ASCII letters only; the prefilter must agree with it exactly, never
    /// dropping a line the regex would match.
    #[test]
    fn regex_lite_case_folding_is_ascii_only_and_the_prefilter_agrees() {
        let folds = |pattern: &str, text: &str| Regex::new(pattern).unwrap().is_match(text);
        assert!(folds("(?i)k", "K"));
        assert!(!folds("(?i)k", "\u{212a}"), "Kelvin sign");
        assert!(!folds("(?i)ß", "ẞ"));
        assert!(!folds("(?i)é", "É"));
        assert!(!folds("(?i)ss", "ß"));
        let text = "K\n\u{212a}\nstraße\nSTRAẞE\nSTRAßE\ncafé\nCAFÉ\nCafÉ\n";
        for pattern in [
            "(?i)k",
            "(?i)straße",
            "(?i)café",
            "(?i)CAFÉ",
            "(?i)stra(ß|ss)e",
        ] {
            let plain = Regex::new(pattern).unwrap();
            let expected = plain_matches(&plain, text);
            for ci in [false, true] {
                let matcher = Matcher::new(pattern, ci, false).unwrap();
                assert_eq!(matching(&matcher, text), expected, "{pattern} ci {ci}");
            }
        }
    }

    /// The accelerated paths must find exactly the lines a plain per-line regex finds,
    /// for patterns whose literals are easy to misread.
    #[test]
    fn accelerated_matching_agrees_with_plain_per_line_regex() {
        let text = "fn get_mut(&mut self)\r\nfn Get(&self)\n// TODO fix\n\
                    todo: later\nlet x = a.b + c;\n\nFIXME!\nimpl Foo\nimpl  Foo for Bar\n\
                    caf\u{e9} au lait\nab\ncd\nacd\nabcd\nx.y\nxzy\n[a]\na|b\n\u{212a}elvin\n\
                    Kelvin\ncolor colour\nend";
        let patterns = [
            r"fn \w+_mut\(",
            r"(?i)todo|fixme",
            r"a\.b",
            r"^impl\s+Foo$",
            r"impl\s+Foo",
            r"\bget\b",
            r"(?i)GET",
            r"caf\u{e9}",
            r"[A-Z]{4}",
            r"self\)$",
            r"\Afn",
            r"x|y|z",
            "au lait",
            "",
            r"(ab)?cd",
            r"a(b|)cd",
            r"ab?cd",
            r"x\.y|xzy",
            r"\[a\]",
            r"a\|b",
            r"[Kk]elvin",
            r"(?i)kelvin",
            r"colou?r",
            r"(?i)COLOU?R\b",
            r"a|",
            r"(?:ab|cd)+",
        ];
        for pattern in patterns {
            for ci in [false, true] {
                let plain = RegexBuilder::new(pattern)
                    .case_insensitive(ci)
                    .multi_line(true)
                    .crlf(true)
                    .build()
                    .unwrap();
                let expected = plain_matches(&plain, text);
                let matcher = Matcher::new(pattern, ci, false).unwrap();
                assert_eq!(
                    matching(&matcher, text),
                    expected,
                    "pattern {pattern:?}, case_insensitive {ci}"
                );
            }
        }
    }

    #[test]
    fn window_matches_respect_context_and_untrusted_ends() {
        let word = Matcher::new(r"\bfoo\b", false, false).unwrap();
        // `xfoo`: the window starts after the `x`, which `\b` still sees.
        assert_eq!(word.window_match(b"xfoo bar", 1, false), None);
        assert_eq!(word.window_match(b" foo bar", 1, false), Some(1));
        // `foo` at a cut window end may go on as `foox`: not trusted unless the line ends.
        assert_eq!(word.window_match(b" foo", 1, false), None);
        assert_eq!(word.window_match(b" foo", 1, true), Some(1));
        let prefix = Matcher::new(r"foo\w+", false, false).unwrap();
        assert_eq!(prefix.window_match(b"a foobar", 0, false), Some(2));
        let literal = Matcher::new("needle", false, false).unwrap();
        assert_eq!(literal.window_match(b"needle..needle", 1, false), Some(8));
    }
}
