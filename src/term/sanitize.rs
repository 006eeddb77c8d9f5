//! Makes untrusted text (model output, tool output, file names) safe to write to a terminal:
//! escape sequences and other control characters are replaced, so nothing from outside can
//! move the cursor, retitle the window or rewrite the scrollback.

/// Keeps newlines and tabs; shows every other C0 control and DEL in caret form (`^[` for
/// ESC) and C1 controls as `\u{..}`, so the text stays readable but inert.
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
            '\u{80}'..='\u{9f}' => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_neutralised_but_text_survives() {
        assert_eq!(sanitize("a\u{1b}[2Jb\r\nc\td"), "a^[[2Jb^M\nc\td");
        assert_eq!(sanitize("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(sanitize("日本語 ✓"), "日本語 ✓");
    }
}
