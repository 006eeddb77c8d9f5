//! The one quoting rule for what a user types after a command: words are separated by
//! whitespace, and a word that starts with a double or single quote runs to the matching
//! closing quote, whitespace included, with the quotes removed (`"two words" x` is `two words`
//! and `x`). A quote anywhere else, or one that is never closed, is an ordinary character, so
//! `don't` stays `don't`. Custom-command placeholders and MCP prompt arguments both read text
//! through here, so a quote means the same everywhere; a whole quoted value (frontmatter,
//! `.env`) is unwrapped by [`crate::text::unquote`].

/// Splits `text` into words by the rule above; `""` is an empty word.
pub fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let (word, tail) = next_word(rest);
        words.push(word);
        rest = tail.trim_start();
    }
    words
}

/// The word at the start of `text` (which does not start with whitespace) and what follows it.
fn next_word(text: &str) -> (String, &str) {
    let mut word = String::new();
    let mut rest = text;
    loop {
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'');
        let closed = quote.and_then(|q| rest[1..].find(q).map(|end| (q, end + 1)));
        match closed {
            Some((_, end)) => {
                word.push_str(&rest[1..end]);
                rest = &rest[end + 1..];
            }
            None => {
                // An unquoted part runs to the next whitespace; quotes inside it are literal.
                let stop = rest
                    .char_indices()
                    .skip(1)
                    .find(|(_, c)| c.is_whitespace())
                    .map_or(rest.len(), |(i, _)| i);
                word.push_str(&rest[..stop]);
                rest = &rest[stop..];
            }
        }
        if rest.is_empty() || rest.starts_with(char::is_whitespace) {
            return (word, rest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_group_words_and_are_removed() {
        assert_eq!(split_words(" \"two words\" x "), vec!["two words", "x"]);
        assert_eq!(split_words("don't 'a b'c d"), vec!["don't", "a bc", "d"]);
        assert_eq!(split_words("a \"\" b"), vec!["a", "", "b"]);
        assert_eq!(
            split_words("\"never closed x"),
            vec!["\"never", "closed", "x"]
        );
        assert_eq!(split_words("say \"it's\""), vec!["say", "it's"]);
        assert_eq!(split_words("日本 \"語 x\""), vec!["日本", "語 x"]);
        assert!(split_words("   ").is_empty());
    }
}
