//! Text-file handling shared by the file tools: encoding detection (UTF-8, UTF-8 with BOM,
//! UTF-16 with or without BOM), line-ending detection and conversion, `cat -n` style line
//! numbering, and loading/saving a whole text file with errors phrased for the model.
//!
//! Atomic, race-free writes belong to `crate::sandbox::beneath`; how much of a file is read
//! belongs to `read_limit` (loading stops at [`FULL_LOAD_MAX`]); paging through large files
//! belongs to `read_file`.

use std::borrow::Cow;
use std::io;
use std::path::Path;

use super::ToolError;
use crate::sandbox::beneath::{Entry, Parents};

/// Files larger than this are not loaded whole (edit tools refuse, read_file streams).
pub const FULL_LOAD_MAX: u64 = 10 * 1024 * 1024;

/// Lines longer than this many characters are cut when shown to the model.
pub const MAX_LINE_CHARS: usize = 2000;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// How a text file is stored on disk, so an edit can write it back the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf8Bom,
    /// `bom` records whether the file started with a byte-order mark.
    Utf16Le {
        bom: bool,
    },
    Utf16Be {
        bom: bool,
    },
}

impl Encoding {
    pub fn label(self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf8Bom => "UTF-8 with BOM",
            Encoding::Utf16Le { .. } => "UTF-16LE",
            Encoding::Utf16Be { .. } => "UTF-16BE",
        }
    }
}

/// Why bytes could not be decoded as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotText {
    /// NUL bytes that are not UTF-16.
    Binary,
    /// Not valid UTF-8 at this byte offset, and not UTF-16 either.
    InvalidUtf8 { offset: usize },
}

impl NotText {
    /// The model-facing explanation for a file shown as `shown`.
    pub fn describe(&self, shown: &str) -> String {
        match self {
            NotText::Binary => format!(
                "{shown} is a binary file (it contains NUL bytes), so it cannot be shown as text; \
                 inspect it with bash (`file`, `xxd | head`) if you need to"
            ),
            NotText::InvalidUtf8 { offset } => format!(
                "{shown} is not UTF-8 or UTF-16 text (invalid byte at offset {offset}); it may be \
                 binary or in a legacy encoding such as Latin-1; inspect it with bash \
                 (`file`, `iconv -f latin1`) if you need to"
            ),
        }
    }
}

/// Decodes file bytes to text, detecting the encoding.
pub fn decode(bytes: &[u8]) -> Result<(String, Encoding), NotText> {
    if let Some(rest) = bytes.strip_prefix(UTF8_BOM) {
        return std::str::from_utf8(rest)
            .map(|s| (s.to_string(), Encoding::Utf8Bom))
            .map_err(|e| NotText::InvalidUtf8 {
                offset: UTF8_BOM.len() + e.valid_up_to(),
            });
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return decode_utf16(rest, Encoding::Utf16Le { bom: true });
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return decode_utf16(rest, Encoding::Utf16Be { bom: true });
    }
    let has_nul = bytes.contains(&0);
    if !has_nul {
        return std::str::from_utf8(bytes)
            .map(|s| (s.to_string(), Encoding::Utf8))
            .map_err(|e| NotText::InvalidUtf8 {
                offset: e.valid_up_to(),
            });
    }
    match sniff_bomless_utf16(bytes) {
        Some(encoding) => decode_utf16(bytes, encoding),
        None => Err(NotText::Binary),
    }
}

/// Text in UTF-16 without a BOM is mostly ASCII in practice: one byte of every pair is NUL and
/// the other never is. Anything less regular is treated as binary.
fn sniff_bomless_utf16(bytes: &[u8]) -> Option<Encoding> {
    if bytes.len() < 2 || bytes.len() % 2 != 0 {
        return None;
    }
    let sample = &bytes[..bytes.len().min(8192)];
    let pairs = sample.len() / 2;
    let even_nuls = sample.iter().step_by(2).filter(|b| **b == 0).count();
    let odd_nuls = sample
        .iter()
        .skip(1)
        .step_by(2)
        .filter(|b| **b == 0)
        .count();
    if even_nuls == 0 && odd_nuls * 2 >= pairs {
        Some(Encoding::Utf16Le { bom: false })
    } else if odd_nuls == 0 && even_nuls * 2 >= pairs {
        Some(Encoding::Utf16Be { bom: false })
    } else {
        None
    }
}

fn decode_utf16(bytes: &[u8], encoding: Encoding) -> Result<(String, Encoding), NotText> {
    if bytes.len() % 2 != 0 {
        return Err(NotText::Binary);
    }
    let units = bytes.chunks_exact(2).map(|pair| match encoding {
        Encoding::Utf16Be { .. } => u16::from_be_bytes([pair[0], pair[1]]),
        _ => u16::from_le_bytes([pair[0], pair[1]]),
    });
    let text: String = char::decode_utf16(units)
        .collect::<Result<_, _>>()
        .map_err(|_| NotText::Binary)?;
    // A NUL or other control character after decoding means the guess (or the BOM) lied.
    let is_control = |c: char| c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c');
    if text.chars().any(is_control) {
        return Err(NotText::Binary);
    }
    Ok((text, encoding))
}

/// Encodes text back to the bytes of `encoding`.
pub fn encode(text: &str, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Utf8 => text.as_bytes().to_vec(),
        Encoding::Utf8Bom => [UTF8_BOM, text.as_bytes()].concat(),
        Encoding::Utf16Le { bom } => utf16_bytes(text, bom, u16::to_le_bytes),
        Encoding::Utf16Be { bom } => utf16_bytes(text, bom, u16::to_be_bytes),
    }
}

fn utf16_bytes(text: &str, bom: bool, to_bytes: fn(u16) -> [u8; 2]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() * 2 + 2);
    if bom {
        out.extend_from_slice(&to_bytes(0xFEFF));
    }
    for unit in text.encode_utf16() {
        out.extend_from_slice(&to_bytes(unit));
    }
    out
}

/// The line ending a file mostly uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    Lf,
    Crlf,
}

impl LineEnding {
    /// CRLF when CRLF endings outnumber bare LF endings; LF otherwise (including no newlines).
    pub fn detect(text: &str) -> LineEnding {
        let crlf = text.matches("\r\n").count();
        let lf = text.matches('\n').count() - crlf;
        if crlf > lf {
            LineEnding::Crlf
        } else {
            LineEnding::Lf
        }
    }

    /// Converts the bare LF endings of `text` to this style; existing CRLFs are left alone.
    pub fn apply(self, text: &str) -> Cow<'_, str> {
        match self {
            LineEnding::Lf => Cow::Borrowed(text),
            LineEnding::Crlf => to_crlf(text),
        }
    }
}

/// Turns every bare `\n` into `\r\n`.
pub fn to_crlf(text: &str) -> Cow<'_, str> {
    let bare = text
        .char_indices()
        .any(|(i, c)| c == '\n' && !text[..i].ends_with('\r'));
    if !bare {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    let mut prev = '\0';
    for c in text.chars() {
        if c == '\n' && prev != '\r' {
            out.push('\r');
        }
        out.push(c);
        prev = c;
    }
    Cow::Owned(out)
}

/// Turns every `\r\n` into `\n`.
pub fn to_lf(text: &str) -> Cow<'_, str> {
    if text.contains("\r\n") {
        Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// The 1-based line number of the line holding byte `offset`.
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// One line as read_file shows it: right-aligned number, a tab, the text (without its line
/// ending), cut at [`MAX_LINE_CHARS`] characters with a marker.
pub fn numbered_line(number: u64, line: &str) -> String {
    numbered_line_with_more(number, line, 0)
}

/// [`numbered_line`] for a line of which only `line` was kept and `skipped` more characters
/// were counted but not held in memory.
pub fn numbered_line_with_more(number: u64, line: &str, skipped: u64) -> String {
    let line = line.strip_suffix('\r').unwrap_or(line);
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None if skipped == 0 => format!("{number:>6}\t{line}\n"),
        None => format!("{number:>6}\t{line}... [line truncated: {skipped} more characters]\n"),
        Some((cut, _)) => {
            let more = line[cut..].chars().count() as u64 + skipped;
            format!(
                "{number:>6}\t{}... [line truncated: {more} more characters]\n",
                &line[..cut]
            )
        }
    }
}

/// Lines `first..=last` (1-based, clamped) of `text`, numbered like read_file.
pub fn numbered_range(text: &str, first: usize, last: usize) -> String {
    let first = first.max(1);
    text.lines()
        .enumerate()
        .skip(first - 1)
        .take((last + 1).saturating_sub(first))
        .map(|(i, line)| numbered_line(i as u64 + 1, line))
        .collect()
}

/// A text file loaded whole, remembering how to write it back.
pub struct TextFile {
    /// Where writes go: the entry in the directory opened when the file was read, which is the
    /// target of a symlink (the checked path had it followed), so editing keeps the link.
    pub entry: Entry,
    pub text: String,
    pub encoding: Encoding,
}

/// Loads an existing text file for editing from `path`, a path `Policy::check_write` returned,
/// through a race-free [`Entry`]. `shown` is the path as the model wrote it.
pub fn load(path: &Path, shown: &str) -> Result<TextFile, ToolError> {
    let missing = || {
        ToolError::Failed(format!(
            "{shown} does not exist; use write_file to create a new file, or glob to find the \
             right path"
        ))
    };
    let failed = |e: io::Error| match e.kind() {
        io::ErrorKind::NotFound => missing(),
        _ => io_failure("cannot read", shown, &e),
    };
    let entry = Entry::open(path, Parents::Existing).map_err(failed)?;
    let file = entry.open_existing().map_err(failed)?.ok_or_else(missing)?;
    let meta = file.metadata().map_err(failed)?;
    if meta.is_dir() {
        return Err(ToolError::Failed(format!(
            "{shown} is a directory, not a file"
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::Failed(format!(
            "{shown} is not a regular file (a device, socket or pipe); only regular files can \
             be edited"
        )));
    }
    // The size the file reports is not trusted: reading stops at the cap.
    let mut file = file;
    let capped =
        crate::tool::read_limit::read_capped(&mut file, FULL_LOAD_MAX as usize).map_err(failed)?;
    if !capped.complete {
        return Err(ToolError::Failed(format!(
            "{shown} is larger than {} MiB, too large to edit here; use bash (for example sed) \
             for large files",
            FULL_LOAD_MAX / (1024 * 1024)
        )));
    }
    let (text, encoding) =
        decode(&capped.bytes).map_err(|e| ToolError::Failed(e.describe(shown)))?;
    Ok(TextFile {
        entry,
        text,
        encoding,
    })
}

/// Writes `text` in `encoding` back over `file` atomically, keeping the file's mode.
pub fn save(file: &TextFile, text: &str, encoding: Encoding, shown: &str) -> Result<(), ToolError> {
    file.entry
        .replace(&encode(text, encoding))
        .map_err(|e| io_failure("cannot write", shown, &e))
}

/// An I/O failure as the model sees it: what we tried, on which path, and the OS reason.
pub fn io_failure(action: &str, shown: &str, err: &io::Error) -> ToolError {
    ToolError::Failed(format!("{action} {shown}: {}", plain_io_message(err)))
}

/// The OS message in lower case, without the "(os error N)" suffix models do not need.
fn plain_io_message(err: &io::Error) -> String {
    let text = err.to_string();
    let text = match text.find(" (os error") {
        Some(i) => &text[..i],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_each_encoding_and_round_trips() {
        let cases: [(&[u8], Encoding, &str); 5] = [
            (b"hi\n", Encoding::Utf8, "hi\n"),
            (b"\xEF\xBB\xBFhi\n", Encoding::Utf8Bom, "hi\n"),
            (b"\xFF\xFEh\0i\0", Encoding::Utf16Le { bom: true }, "hi"),
            (b"\xFE\xFF\0h\0i", Encoding::Utf16Be { bom: true }, "hi"),
            (b"h\0i\0\n\0", Encoding::Utf16Le { bom: false }, "hi\n"),
        ];
        for (bytes, encoding, text) in cases {
            let decoded = decode(bytes).unwrap();
            assert_eq!(decoded, (text.to_string(), encoding), "{bytes:?}");
            assert_eq!(encode(text, encoding), bytes, "{encoding:?}");
        }
    }

    #[test]
    fn nul_bytes_and_invalid_utf8_are_not_text() {
        assert_eq!(decode(b"\x7fELF\x02\x01\x01\0\0\0"), Err(NotText::Binary));
        assert_eq!(
            decode(b"caf\xE9 au lait"),
            Err(NotText::InvalidUtf8 { offset: 3 })
        );
        // A BOM followed by control characters is a binary file that happens to start FF FE.
        assert_eq!(decode(b"\xFF\xFE\x01\x00\x02\x00"), Err(NotText::Binary));
    }

    #[test]
    fn line_endings_are_detected_and_converted_without_doubling() {
        assert_eq!(LineEnding::detect("a\r\nb\r\nc\n"), LineEnding::Crlf);
        assert_eq!(LineEnding::detect("a\nb\r\n"), LineEnding::Lf);
        assert_eq!(LineEnding::detect("no newline"), LineEnding::Lf);
        assert_eq!(to_crlf("a\nb\r\nc\n"), "a\r\nb\r\nc\r\n");
        assert_eq!(to_lf("a\r\nb\n"), "a\nb\n");
    }

    #[test]
    fn numbered_lines_align_and_truncate_on_char_boundaries() {
        assert_eq!(numbered_line(7, "x\r"), "     7\tx\n");
        let long = "é".repeat(MAX_LINE_CHARS + 5);
        let shown = numbered_line(1, &long);
        assert!(
            shown.ends_with("... [line truncated: 5 more characters]\n"),
            "{shown}"
        );
        assert_eq!(
            numbered_range("a\nb\nc\nd\n", 2, 3),
            "     2\tb\n     3\tc\n"
        );
        assert_eq!(line_of("a\nb\nc", 4), 3);
    }

    #[test]
    fn io_messages_drop_the_os_error_suffix() {
        let err = io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(
            io_failure("cannot write", "a.txt", &err).to_string(),
            "cannot write a.txt: permission denied"
        );
    }
}
