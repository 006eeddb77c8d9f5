//! Decodes the bytes a terminal sends in raw mode into [`Key`]s: UTF-8 text, control keys,
//! CSI/SS3 sequences (arrows, Home/End, Delete, Shift-Tab, modified Enter in both the
//! xterm `modifyOtherKeys` and the kitty `CSI u` forms) and bracketed paste. Sans-IO: bytes
//! may arrive split anywhere; a lone ESC stays pending until [`Decoder::flush`] says the
//! pause after it was long enough to mean the Esc key.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Char(char),
    /// Enter: send.
    Enter,
    /// Alt-Enter, Ctrl-J or Shift-Enter: a newline in the composer.
    Newline,
    Tab,
    BackTab,
    Backspace,
    Delete,
    Left,
    Right,
    Up,
    Down,
    Home,
    End,
    PageUp,
    PageDown,
    WordLeft,
    WordRight,
    /// Alt-Backspace or Ctrl-Backspace.
    DeleteWordBack,
    /// Ctrl plus a letter, lowercase (`Ctrl('c')`).
    Ctrl(char),
    /// Alt plus a character.
    Alt(char),
    Esc,
    Paste(String),
}

const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

#[derive(Debug, Default)]
pub struct Decoder {
    pending: Vec<u8>,
    /// Inside a bracketed paste: the bytes so far.
    paste: Option<Vec<u8>>,
}

/// What parsing the front of the buffer gave.
enum Step {
    Key(Option<Key>, usize),
    /// The buffer holds the start of a sequence; wait for more bytes.
    Incomplete,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Decodes what it can; keeps an incomplete sequence for the next call.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Key> {
        self.pending.extend_from_slice(bytes);
        let mut keys = Vec::new();
        loop {
            if let Some(paste) = self.paste.as_mut() {
                match find(&self.pending, PASTE_END) {
                    Some(end) => {
                        paste.extend_from_slice(&self.pending[..end]);
                        self.pending.drain(..end + PASTE_END.len());
                        let text = normalize_paste(paste);
                        self.paste = None;
                        keys.push(Key::Paste(text));
                        continue;
                    }
                    None => {
                        // Keep a tail that could be the start of the end marker.
                        let keep = partial_suffix(&self.pending, PASTE_END);
                        let take = self.pending.len() - keep;
                        paste.extend_from_slice(&self.pending[..take]);
                        self.pending.drain(..take);
                        return keys;
                    }
                }
            }
            if self.pending.is_empty() {
                return keys;
            }
            if self.pending.starts_with(PASTE_START) {
                self.pending.drain(..PASTE_START.len());
                self.paste = Some(Vec::new());
                continue;
            }
            match parse(&self.pending) {
                Step::Key(key, used) => {
                    self.pending.drain(..used);
                    keys.extend(key);
                }
                Step::Incomplete => return keys,
            }
        }
    }

    /// Whether bytes are waiting for the rest of a sequence (the caller then waits a moment
    /// for more input before calling [`Decoder::flush`]).
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty() && self.paste.is_none()
    }

    /// No more bytes came: a pending ESC was the Esc key, and a pending ESC-prefixed
    /// fragment is taken as Esc followed by its text.
    pub fn flush(&mut self) -> Vec<Key> {
        if self.paste.is_some() || self.pending.is_empty() {
            return Vec::new();
        }
        let rest: Vec<u8> = self.pending.drain(..).collect();
        let mut keys = Vec::new();
        let tail = if rest[0] == 0x1b {
            keys.push(Key::Esc);
            &rest[1..]
        } else {
            &rest[..]
        };
        keys.extend(
            String::from_utf8_lossy(tail)
                .chars()
                .filter(|c| !c.is_control())
                .map(Key::Char),
        );
        keys
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The length of the longest suffix of `data` that is a proper prefix of `marker`.
fn partial_suffix(data: &[u8], marker: &[u8]) -> usize {
    (1..marker.len())
        .rev()
        .find(|&n| data.len() >= n && data[data.len() - n..] == marker[..n])
        .unwrap_or(0)
}

/// Pasted text with line ends unified; control characters other than newline and tab are
/// dropped so a paste cannot smuggle keys or escapes.
fn normalize_paste(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

fn parse(buf: &[u8]) -> Step {
    let b = buf[0];
    match b {
        0x1b => parse_escape(buf),
        b'\r' => Step::Key(Some(Key::Enter), 1),
        b'\n' => Step::Key(Some(Key::Newline), 1),
        b'\t' => Step::Key(Some(Key::Tab), 1),
        0x7f | 0x08 => Step::Key(Some(Key::Backspace), 1),
        0x00 => Step::Key(None, 1),
        0x01..=0x1a => Step::Key(Some(Key::Ctrl((b'a' + b - 1) as char)), 1),
        0x1c..=0x1f => Step::Key(None, 1),
        _ => parse_utf8(buf),
    }
}

fn parse_utf8(buf: &[u8]) -> Step {
    let len = match buf[0] {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return Step::Key(None, 1),
    };
    if buf.len() < len {
        return Step::Incomplete;
    }
    match std::str::from_utf8(&buf[..len]) {
        Ok(s) => Step::Key(s.chars().next().map(Key::Char), len),
        Err(_) => Step::Key(None, 1),
    }
}

fn parse_escape(buf: &[u8]) -> Step {
    let Some(&next) = buf.get(1) else {
        return Step::Incomplete;
    };
    match next {
        b'[' => parse_csi(buf),
        b'O' => match buf.get(2) {
            None => Step::Incomplete,
            Some(&c) => Step::Key(ss3_key(c), 3),
        },
        b'\r' | b'\n' => Step::Key(Some(Key::Newline), 2),
        0x7f | 0x08 => Step::Key(Some(Key::DeleteWordBack), 2),
        b'b' => Step::Key(Some(Key::WordLeft), 2),
        b'f' => Step::Key(Some(Key::WordRight), 2),
        0x1b => Step::Key(Some(Key::Esc), 1),
        c if c >= 0x20 => match parse_utf8(&buf[1..]) {
            Step::Key(Some(Key::Char(ch)), used) => Step::Key(Some(Key::Alt(ch)), used + 1),
            Step::Key(_, used) => Step::Key(None, used + 1),
            Step::Incomplete => Step::Incomplete,
        },
        _ => Step::Key(Some(Key::Esc), 1),
    }
}

fn ss3_key(c: u8) -> Option<Key> {
    match c {
        b'A' => Some(Key::Up),
        b'B' => Some(Key::Down),
        b'C' => Some(Key::Right),
        b'D' => Some(Key::Left),
        b'H' => Some(Key::Home),
        b'F' => Some(Key::End),
        b'M' => Some(Key::Enter),
        _ => None,
    }
}

fn parse_csi(buf: &[u8]) -> Step {
    // ESC [ parameters (0x30-0x3f) intermediates (0x20-0x2f) final (0x40-0x7e)
    let mut i = 2;
    while let Some(&b) = buf.get(i) {
        if (0x40..=0x7e).contains(&b) {
            let params = String::from_utf8_lossy(&buf[2..i]).into_owned();
            return Step::Key(csi_key(&params, b), i + 1);
        }
        if !(0x20..=0x3f).contains(&b) {
            // Not a CSI after all: report Esc and let the rest be parsed again.
            return Step::Key(Some(Key::Esc), 1);
        }
        i += 1;
    }
    Step::Incomplete
}

fn csi_key(params: &str, last: u8) -> Option<Key> {
    let fields: Vec<u32> = params.split(';').map(|f| f.parse().unwrap_or(0)).collect();
    let modifier = fields.get(1).copied().unwrap_or(1);
    let ctrl_or_alt = modifier == 3 || modifier == 5;
    match last {
        b'A' => Some(Key::Up),
        b'B' => Some(Key::Down),
        b'C' if ctrl_or_alt => Some(Key::WordRight),
        b'D' if ctrl_or_alt => Some(Key::WordLeft),
        b'C' => Some(Key::Right),
        b'D' => Some(Key::Left),
        b'H' => Some(Key::Home),
        b'F' => Some(Key::End),
        b'Z' => Some(Key::BackTab),
        b'u' => csi_u_key(&fields),
        b'~' => match fields.first().copied().unwrap_or(0) {
            1 | 7 => Some(Key::Home),
            4 | 8 => Some(Key::End),
            3 => Some(Key::Delete),
            5 => Some(Key::PageUp),
            6 => Some(Key::PageDown),
            // xterm modifyOtherKeys: CSI 27 ; modifier ; code ~
            27 => fields.get(2).and_then(|&code| modified_key(code, modifier)),
            _ => None,
        },
        _ => None,
    }
}

/// The kitty keyboard protocol's `CSI code ; modifier u`.
fn csi_u_key(fields: &[u32]) -> Option<Key> {
    let code = fields.first().copied()?;
    let modifier = fields.get(1).copied().unwrap_or(1);
    modified_key(code, modifier)
}

fn modified_key(code: u32, modifier: u32) -> Option<Key> {
    let ctrl = matches!(modifier, 5..=8);
    match code {
        13 if modifier > 1 => Some(Key::Newline),
        13 => Some(Key::Enter),
        9 if modifier == 2 => Some(Key::BackTab),
        9 => Some(Key::Tab),
        27 => Some(Key::Esc),
        127 | 8 => Some(if modifier > 1 {
            Key::DeleteWordBack
        } else {
            Key::Backspace
        }),
        c => {
            let ch = char::from_u32(c)?;
            if ctrl && ch.is_ascii_alphabetic() {
                Some(Key::Ctrl(ch.to_ascii_lowercase()))
            } else if modifier == 3 {
                Some(Key::Alt(ch))
            } else {
                Some(Key::Char(ch))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_split_everywhere(bytes: &[u8]) -> Vec<Key> {
        let whole = Decoder::new().feed(bytes);
        for cut in 0..=bytes.len() {
            let mut d = Decoder::new();
            let mut keys = d.feed(&bytes[..cut]);
            keys.extend(d.feed(&bytes[cut..]));
            assert_eq!(keys, whole, "split at {cut} of {bytes:?}");
        }
        whole
    }

    #[test]
    fn text_controls_and_sequences_decode_at_every_split() {
        let keys = decode_split_everywhere(
            "a日\r\x01\x03\x17\x1b[A\x1b[1;5C\x1b[3~\x1b[Z\x1bOH\x1b\r\x7f🦀".as_bytes(),
        );
        assert_eq!(
            keys,
            vec![
                Key::Char('a'),
                Key::Char('日'),
                Key::Enter,
                Key::Ctrl('a'),
                Key::Ctrl('c'),
                Key::Ctrl('w'),
                Key::Up,
                Key::WordRight,
                Key::Delete,
                Key::BackTab,
                Key::Home,
                Key::Newline,
                Key::Backspace,
                Key::Char('🦀'),
            ]
        );
    }

    #[test]
    fn shift_enter_in_both_protocols_and_ctrl_j_make_newlines() {
        assert_eq!(Decoder::new().feed(b"\x1b[13;2u"), vec![Key::Newline]);
        assert_eq!(Decoder::new().feed(b"\x1b[27;2;13~"), vec![Key::Newline]);
        assert_eq!(Decoder::new().feed(b"\n"), vec![Key::Newline]);
        assert_eq!(Decoder::new().feed(b"\x1b[13u"), vec![Key::Enter]);
    }

    #[test]
    fn bracketed_paste_is_one_key_even_with_escapes_and_enters_inside() {
        let bytes = b"x\x1b[200~line1\r\nline2\x1b[Aq\r\x1b[201~y";
        let keys = decode_split_everywhere(bytes);
        assert_eq!(
            keys,
            vec![
                Key::Char('x'),
                Key::Paste("line1\nline2[Aq\n".into()),
                Key::Char('y')
            ]
        );
    }

    #[test]
    fn lone_escape_waits_for_flush() {
        let mut d = Decoder::new();
        assert!(d.feed(b"\x1b").is_empty());
        assert!(d.has_pending());
        assert_eq!(d.flush(), vec![Key::Esc]);
        assert!(!d.has_pending());
        assert_eq!(Decoder::new().feed(b"\x1bx"), vec![Key::Alt('x')]);
        assert_eq!(Decoder::new().feed(b"\x1b\x1b"), vec![Key::Esc]);
    }

    #[test]
    fn split_utf8_waits_and_invalid_bytes_are_dropped() {
        let mut d = Decoder::new();
        let crab = "🦀".as_bytes();
        assert!(d.feed(&crab[..2]).is_empty());
        assert_eq!(d.feed(&crab[2..]), vec![Key::Char('🦀')]);
        assert_eq!(Decoder::new().feed(b"\xffa"), vec![Key::Char('a')]);
    }
}
