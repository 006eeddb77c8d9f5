//! Makes untrusted text (model output, tool output, file names, MCP text) safe to write to a
//! terminal: escape sequences and other control characters are replaced, so nothing from
//! outside can move the cursor, retitle the window, set the clipboard or rewrite the
//! scrollback.

/// The inert form of untrusted text; a leaf (`text`), so `app` can use it too.
pub use crate::text::sanitize;

/// What the chat UI shows: [`sanitize`] plus the fixes that keep column arithmetic right.
/// CRLF and lone CR line ends become LF, tabs become spaces up to the next multiple of four,
/// and bidirectional overrides (which can make text read differently than it is, the
/// "Trojan Source" trick) are shown as `\u{..}` instead of taking effect.
pub fn for_display(text: &str) -> String {
    let unified = text.replace("\r\n", "\n");
    let mut out = String::with_capacity(unified.len());
    let mut column = 0;
    let mut chars = unified.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\t' => {
                let pad = 4 - column % 4;
                out.extend(std::iter::repeat_n(' ', pad));
                column += pad;
            }
            '\n' => {
                out.push('\n');
                column = 0;
            }
            // A lone carriage return (progress bars) would overwrite the line; show the line
            // break it stands for.
            '\r' if chars.peek().is_some() => {
                out.push('\n');
                column = 0;
            }
            '\r' => {}
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
                let shown = format!("\\u{{{:x}}}", c as u32);
                column += shown.len();
                out.push_str(&shown);
            }
            other => {
                let shown = sanitize(other.encode_utf8(&mut [0u8; 4]));
                column += super::width::str_width(&shown);
                out.push_str(&shown);
            }
        }
    }
    out
}

/// [`for_display`] for a one-row context (a tool subject, a file name, a menu entry): line
/// breaks become `⏎` so the text cannot spill onto other rows.
pub fn one_row(text: &str) -> String {
    for_display(text).replace('\n', "⏎")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_neutralised_but_text_survives() {
        assert_eq!(sanitize("a\u{1b}[2Jb\r\nc\td"), "a^[[2Jb^M\nc\td");
        assert_eq!(sanitize("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(sanitize("日本語 ✓"), "日本語 ✓");
        assert_eq!(
            sanitize("a\u{202e}b\u{2066}c"),
            "a\\u{202e}b\\u{2066}c",
            "bidi overrides too, wherever plain sanitize is the last step"
        );
    }

    #[test]
    fn injection_attempts_never_leave_an_escape_byte() {
        let attacks = [
            "\u{1b}]0;pwned\u{7}",                              // set the window title
            "\u{1b}]52;c;ZWNobyBoaQ==\u{7}",                    // write the clipboard (OSC 52)
            "\u{1b}[2J\u{1b}[H",                                // clear the screen
            "\u{1b}P+q544e\u{1b}\\",                            // DCS query
            "\u{9b}6n",                                         // C1 CSI: report cursor position
            "\u{1b}]8;;http://evil\u{1b}\\x\u{1b}]8;;\u{1b}\\", // hyperlink
            "ok\u{1b}[1A\u{1b}[Kfake prompt$ ",                 // rewrite the previous line
            "\u{8}\u{8}\u{8}overwrite",                         // backspaces
        ];
        for attack in attacks {
            for shown in [sanitize(attack), for_display(attack), one_row(attack)] {
                assert!(
                    !shown.chars().any(|c| c == '\u{1b}'
                        || c == '\u{7}'
                        || c == '\u{8}'
                        || ('\u{80}'..='\u{9f}').contains(&c)),
                    "{attack:?} -> {shown:?}"
                );
            }
        }
    }

    #[test]
    fn display_form_fixes_line_ends_tabs_and_bidi_overrides() {
        assert_eq!(for_display("a\r\nb"), "a\nb");
        assert_eq!(for_display("50%\r100%\r"), "50%\n100%");
        assert_eq!(for_display("\tx\nab\tc"), "    x\nab  c");
        assert_eq!(for_display("if \u{202e}x"), "if \\u{202e}x");
        assert_eq!(one_row("two\nlines"), "two⏎lines");
    }
}
