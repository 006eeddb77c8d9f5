//! Small text helpers shared by every layer (a leaf: it uses nothing else in the crate).

/// Collapses whitespace runs (newlines included) and cuts to `max` characters with `…`, for
/// one-line error details and status lines.
pub fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let cut: String = joined.chars().take(max).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squashes_whitespace_and_cuts_on_characters() {
        assert_eq!(one_line("a\n  b\tc", 10), "a b c");
        assert_eq!(one_line("日本語テキスト", 3), "日本語…");
    }
}
