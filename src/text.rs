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
}
