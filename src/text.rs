//! Small text helpers shared by every layer (a leaf: it uses nothing else in the crate).

/// Collapses whitespace runs (newlines included) and cuts to `max` characters with `…`, for
/// one-line error details and status lines.
pub fn one_line(text: &str, max: usize) -> String {
    let joined = collapse_whitespace(text);
    if joined.chars().count() <= max {
        return joined;
    }
    let cut: String = joined.chars().take(max).collect();
    format!("{cut}…")
}

/// Every run of whitespace (newlines included) as one space, without leading or trailing
/// whitespace.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` without one pair of matching surrounding quotes (double or single), as a `.env`
/// value or a frontmatter value is written; anything else is returned as it is.
pub fn unquote(text: &str) -> &str {
    for quote in ['"', '\''] {
        if text.len() >= 2 && text.starts_with(quote) && text.ends_with(quote) {
            return &text[1..text.len() - 1];
        }
    }
    text
}

/// `text.trim()`, without decoding characters when both ends are visible ASCII (nearly every
/// streamed event): `str::trim` walks chars from each end through Unicode's tables.
pub fn trim_fast(text: &str) -> &str {
    let bytes = text.as_bytes();
    let visible = |byte: Option<&u8>| byte.is_some_and(u8::is_ascii_graphic);
    if visible(bytes.first()) && visible(bytes.last()) {
        text
    } else {
        text.trim()
    }
}

/// `text.trim().is_empty()`, answered by the first ASCII byte that is not whitespace when
/// there is one, instead of trimming.
pub fn is_blank(text: &str) -> bool {
    // Every char `str::trim` removes is either one of these ASCII bytes or not ASCII at all.
    let ascii_visible = |byte: &u8| byte.is_ascii() && !matches!(byte, b' ' | b'\t'..=b'\r');
    !text.as_bytes().iter().any(ascii_visible) && text.trim().is_empty()
}

/// Keeps newlines and tabs; shows every other C0 control and DEL in caret form (`^[` for
/// ESC), and C1 controls and bidirectional overrides and isolates as `\u{..}`, so the text
/// stays readable but inert: an override would make the text read differently than it is
/// (the "Trojan Source" trick).
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{0}'..='\u{1f}' => {
                out.push('^');
                out.push((b'@' + c as u8) as char);
            }
            '\u{7f}' => out.push_str("^?"),
            '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squashes_whitespace_and_cuts_on_characters() {
        assert_eq!(one_line("a\n  b\tc", 10), "a b c");
        assert_eq!(one_line("日本語テキスト", 3), "日本語…");
    }

    #[test]
    fn unquote_strips_one_matching_pair() {
        assert_eq!(unquote("\"[focus-area]\""), "[focus-area]");
        assert_eq!(unquote("'x'"), "x");
        assert_eq!(unquote("\"unclosed"), "\"unclosed");
        assert_eq!(unquote("\"mixed'"), "\"mixed'");
        assert_eq!(unquote("\""), "\"");
        assert_eq!(unquote("plain"), "plain");
    }

    #[test]
    fn the_fast_trims_agree_with_str_trim() {
        let samples = [
            "",
            " ",
            "a",
            " a ",
            "{\"x\":1}",
            "\u{a0}{}\u{a0}",
            "\u{b}x\u{b}",
            "\u{3000}",
            "\u{b}",
            "\t\r\n",
            "é",
            " é",
            "中",
            "\u{2028}a",
            "a\u{85}",
            "\u{feff}",
        ];
        for text in samples {
            assert_eq!(trim_fast(text), text.trim(), "{text:?}");
            assert_eq!(is_blank(text), text.trim().is_empty(), "{text:?}");
        }
    }
}
