//! `read_file`: shows a window of a text file as numbered lines, with a hint for the next
//! window. Files are opened through `read_limit` (regular files only). Files up to
//! `text::FULL_LOAD_MAX` are decoded whole (any supported encoding); larger ones are streamed
//! line by line as UTF-8 so a huge log can still be paged, reading at most [`READ_MAX_BYTES`]
//! per call and keeping at most [`LINE_KEEP_BYTES`] of any one line in memory.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};

use serde_json::{json, Value};

use crate::cancel::CancelToken;
use crate::tool::read_limit::{self, Refusal};
use crate::tool::text::{self, NotText};
use crate::tool::{args, Family, Subjects, Tool, ToolContext, ToolError};

const DEFAULT_LIMIT: u64 = 2000;

/// About 25k tokens: past this the output stops early and the hint says where to resume.
const MAX_OUTPUT_BYTES: usize = 100 * 1024;

/// How much of a streamed file is checked for binary content before paging it.
const SNIFF_BYTES: usize = 8192;

/// The most one call reads of a file, so paging a huge log costs bounded time: lines past it
/// are out of read_file's reach (bash can get them) and are not counted.
const READ_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// The most of one line kept in memory: enough for the [`text::MAX_LINE_CHARS`] characters
/// shown even if each takes four bytes. The rest of a longer line is counted, not kept.
const LINE_KEEP_BYTES: usize = 4 * text::MAX_LINE_CHARS + 4;

/// How much of an over-long line is read at a time while skipping it.
const SKIP_CHUNK: usize = 64 * 1024;

pub struct ReadFile;

const DESCRIPTION: &str = "\
Reads a text file and returns its lines numbered like `cat -n` (line number, tab, text). \
Returns up to 2000 lines starting at `offset` (1-based, default 1); for long files page with \
`offset` and `limit` as the hint at the end of the output says. Lines longer than 2000 \
characters are cut. Decodes UTF-8 (with or without BOM) and UTF-16. Reads at most 256 MiB of \
a file per call. Refuses directories (use ls), binary files, and FIFOs, devices and /proc or \
/sys pseudo-files (use bash). Read a file before editing it, and copy text into edit_file without the \
line-number prefix. When you need several files, read them in parallel calls.";

impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File to read, absolute or relative to the workspace root"
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "First line to show, 1-based (default 1)"
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Maximum number of lines to show (default 2000)"
                }
            },
            "required": ["path"]
        })
    }

    fn family(&self) -> Family {
        Family::Reader
    }

    fn subjects(&self) -> Subjects {
        Subjects::Paths {
            keys: &["path"],
            default: None,
        }
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let shown = args::required_str(args, "path")?;
        // Offset 0 is a common off-by-one; it can only mean the start.
        let offset = args::optional_u64(args, "offset")?.unwrap_or(1).max(1);
        let limit = args::optional_u64(args, "limit")?.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 {
            return Err(ToolError::InvalidArgs(
                "`limit` must be at least 1 (or omitted for up to 2000 lines)".into(),
            ));
        }
        let window = Window {
            offset,
            limit,
            shown,
        };
        let path = ctx.resolve_read(shown)?;
        let mut file = read_limit::open(&path).map_err(|r| refused(shown, r))?;
        // Small files are decoded whole (any encoding); the size on disk is not trusted to say
        // which files are small, the bytes actually read are.
        let head = read_limit::read_capped(&mut file, text::FULL_LOAD_MAX as usize)
            .map_err(|e| refused(shown, e.into()))?;
        if head.complete {
            read_whole(&head.bytes, &window, &ctx.cancel)
        } else {
            read_streaming(head.bytes, file, &window, &ctx.cancel)
        }
    }
}

/// The lines the model asked for and the path as it wrote it.
struct Window<'a> {
    offset: u64,
    limit: u64,
    shown: &'a str,
}

fn refused(shown: &str, refusal: Refusal) -> ToolError {
    ToolError::Failed(match refusal {
        Refusal::Missing => {
            format!("{shown} does not exist; use glob or ls to find the right path")
        }
        Refusal::Directory => {
            format!("{shown} is a directory, not a file; use ls to list its contents")
        }
        other => other.describe(shown),
    })
}

fn read_whole(bytes: &[u8], window: &Window, cancel: &CancelToken) -> Result<String, ToolError> {
    let (content, _) =
        text::decode(bytes).map_err(|e| ToolError::Failed(e.describe(window.shown)))?;
    let mut lines = content.lines().map(|l| {
        Ok(Line {
            bytes: Cow::Borrowed(l.as_bytes()),
            skipped_chars: 0,
        })
    });
    let rendered = render(&mut lines, window, cancel)?;
    finish(rendered, window, false)
}

fn read_streaming(
    mut head: Vec<u8>,
    file: File,
    window: &Window,
    cancel: &CancelToken,
) -> Result<String, ToolError> {
    sniff_large(&head[..head.len().min(SNIFF_BYTES)], window.shown)?;
    let bom = if head.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    head.drain(..bom);
    let mut lines = StreamLines {
        reader: io::Cursor::new(head)
            .chain(BufReader::with_capacity(64 * 1024, file))
            .take(READ_MAX_BYTES - bom as u64),
        done: false,
        capped: false,
    };
    let rendered = render(&mut lines, window, cancel)?;
    let capped = lines.capped;
    finish(rendered, window, capped)
}

/// A large file is paged only if its start looks like UTF-8 text; UTF-16 would need decoding
/// the whole file, which is what the size limit avoids.
fn sniff_large(head: &[u8], shown: &str) -> Result<(), ToolError> {
    if head.starts_with(b"\xFF\xFE") || head.starts_with(b"\xFE\xFF") {
        return Err(ToolError::Failed(format!(
            "{shown} is UTF-16 and larger than {} MiB, too large to decode here; search it with \
             grep or convert part of it with bash (`iconv -f utf-16`)",
            text::FULL_LOAD_MAX / (1024 * 1024)
        )));
    }
    if head.contains(&0) {
        return Err(ToolError::Failed(NotText::Binary.describe(shown)));
    }
    match std::str::from_utf8(head) {
        // `error_len() == None` is a character cut by the sniff boundary, not bad data.
        Err(e) if e.error_len().is_some() => Err(ToolError::Failed(
            NotText::InvalidUtf8 {
                offset: e.valid_up_to(),
            }
            .describe(shown),
        )),
        _ => Ok(()),
    }
}

/// One raw line without its `\n`; decoding waits until a line is shown.
struct Line<'a> {
    bytes: Cow<'a, [u8]>,
    /// Characters past the kept bytes that were counted and dropped.
    skipped_chars: u64,
}

/// Raw lines of a stream whose reader is limited to the bytes one call may read. Each line
/// keeps at most [`LINE_KEEP_BYTES`], so a file that is one endless line costs no memory.
struct StreamLines<R> {
    reader: io::Take<R>,
    done: bool,
    /// The byte limit was reached before the end of the file.
    capped: bool,
}

impl<R: BufRead> StreamLines<R> {
    fn read_line(&mut self) -> io::Result<Option<Line<'static>>> {
        let mut kept = Vec::new();
        let n = (&mut self.reader)
            .take(LINE_KEEP_BYTES as u64)
            .read_until(b'\n', &mut kept)?;
        if n == 0 {
            // Out of budget or at the end: which one decides the closing hint.
            self.capped = self.reader.limit() == 0 && !self.reader.get_mut().fill_buf()?.is_empty();
            return Ok(None);
        }
        if kept.ends_with(b"\n") {
            kept.pop();
            return Ok(Some(Line {
                bytes: Cow::Owned(kept),
                skipped_chars: 0,
            }));
        }
        let skipped_chars = if n == LINE_KEEP_BYTES {
            self.skip_rest_of_line()?
        } else {
            0
        };
        Ok(Some(Line {
            bytes: Cow::Owned(kept),
            skipped_chars,
        }))
    }

    /// Consumes the rest of an over-long line, returning how many characters it held.
    fn skip_rest_of_line(&mut self) -> io::Result<u64> {
        let mut chars = 0;
        let mut scratch = Vec::with_capacity(SKIP_CHUNK);
        loop {
            scratch.clear();
            let n = (&mut self.reader)
                .take(SKIP_CHUNK as u64)
                .read_until(b'\n', &mut scratch)?;
            let ended = scratch.ends_with(b"\n");
            if ended {
                scratch.pop();
            }
            // UTF-8 continuation bytes do not start a character.
            chars += scratch.iter().filter(|&&b| b & 0xC0 != 0x80).count() as u64;
            if ended || n == 0 {
                return Ok(chars);
            }
        }
    }
}

impl<R: BufRead> Iterator for StreamLines<R> {
    type Item = io::Result<Line<'static>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let line = self.read_line().transpose();
        if !matches!(line, Some(Ok(_))) {
            self.done = true;
        }
        line
    }
}

/// The numbered lines of the window, how many lines were seen in all, and where to resume.
struct Rendered {
    out: String,
    total: u64,
    /// The first line not shown after the window started, and what stopped it.
    resume: Option<(u64, Stop)>,
}

/// Numbers the lines in the window and counts the rest.
fn render<'a, I>(
    lines: &mut I,
    window: &Window,
    cancel: &CancelToken,
) -> Result<Rendered, ToolError>
where
    I: Iterator<Item = io::Result<Line<'a>>>,
{
    let mut out = String::new();
    let mut total: u64 = 0;
    let mut resume: Option<(u64, Stop)> = None;
    for line in lines {
        let line = line.map_err(|e| text::io_failure("cannot read", window.shown, &e))?;
        total += 1;
        if total % 65_536 == 0 && cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        if total < window.offset || resume.is_some() {
            continue;
        }
        if total - window.offset >= window.limit {
            resume = Some((total, Stop::Limit));
            continue;
        }
        if out.len() >= MAX_OUTPUT_BYTES {
            resume = Some((total, Stop::OutputCap));
            continue;
        }
        out.push_str(&text::numbered_line_with_more(
            total,
            &String::from_utf8_lossy(&line.bytes),
            line.skipped_chars,
        ));
    }
    Ok(Rendered { out, total, resume })
}

/// The output with its closing hint. `capped` says the file went on past [`READ_MAX_BYTES`],
/// so `total` is only the lines seen.
fn finish(rendered: Rendered, window: &Window, capped: bool) -> Result<String, ToolError> {
    let Rendered {
        mut out,
        total,
        resume,
    } = rendered;
    let max_mib = READ_MAX_BYTES / (1024 * 1024);
    if total == 0 {
        return Ok(format!("{} is empty (no lines)", window.shown));
    }
    if window.offset > total {
        let (reach, advice) = match capped {
            true => (
                format!(" within the first {max_mib} MiB read_file reads per call"),
                "; use bash (`tail -n`, `sed -n 'FIRST,LASTp'`) to read further",
            ),
            false => (String::new(), ""),
        };
        return Err(ToolError::Failed(format!(
            "offset {} is past the end of {}, which has {total} line{}{reach}; use an offset from \
             1 to {total}{advice}",
            window.offset,
            window.shown,
            plural(total)
        )));
    }
    match (resume, capped) {
        (Some((next, stop)), _) => {
            let mut why: Vec<String> = Vec::new();
            if let Stop::OutputCap = stop {
                why.push(format!("output capped at {} KiB", MAX_OUTPUT_BYTES / 1024));
            }
            let more = match capped {
                true => {
                    why.push(format!(
                        "read_file stopped counting at the {max_mib} MiB it reads per call"
                    ));
                    "more lines follow".to_string()
                }
                false => {
                    let remaining = total - next + 1;
                    format!("{remaining} more line{}", plural(remaining))
                }
            };
            let why = match why.is_empty() {
                true => String::new(),
                false => format!(" ({})", why.join("; ")),
            };
            out.push_str(&format!(
                "... {more}{why}; call read_file with offset={next} to continue\n"
            ));
        }
        (None, true) => out.push_str(&format!(
            "... read_file reads at most {max_mib} MiB of a file per call and stopped at line \
             {total}; read the rest of {} with bash (`tail -n`, `sed -n 'FIRST,LASTp'`)\n",
            window.shown
        )),
        (None, false) => {}
    }
    Ok(out)
}

#[derive(Clone, Copy)]
enum Stop {
    Limit,
    OutputCap,
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(offset: u64, limit: u64) -> Window<'static> {
        Window {
            offset,
            limit,
            shown: "f.txt",
        }
    }

    fn lines(n: usize, width: usize) -> Vec<io::Result<Line<'static>>> {
        (0..n)
            .map(|_| {
                Ok(Line {
                    bytes: Cow::Owned(vec![b'x'; width]),
                    skipped_chars: 0,
                })
            })
            .collect()
    }

    fn stream(bytes: &[u8], budget: u64) -> StreamLines<io::Cursor<Vec<u8>>> {
        StreamLines {
            reader: io::Cursor::new(bytes.to_vec()).take(budget),
            done: false,
            capped: false,
        }
    }

    #[test]
    fn output_cap_stops_early_and_says_where_to_resume() {
        // 200 lines of 1000 bytes exceed the 100 KiB cap after about 100 lines.
        let window = window(1, 2000);
        let rendered = render(
            &mut lines(200, 1000).into_iter(),
            &window,
            &CancelToken::new(),
        )
        .unwrap();
        let out = finish(rendered, &window, false).unwrap();
        let last = out.lines().last().unwrap();
        assert!(last.contains("(output capped at 100 KiB)"), "{last}");
        let shown = out.lines().count() - 1;
        assert!(
            last.contains(&format!("offset={}", shown + 1)),
            "{shown} {last}"
        );
        assert!(out.len() < MAX_OUTPUT_BYTES + 2000);
    }

    #[test]
    fn streamed_lines_keep_empty_lines_and_a_missing_final_newline() {
        let got: Vec<Vec<u8>> = stream(b"a\n\nb", 100)
            .map(|l| l.unwrap().bytes.into_owned())
            .collect();
        assert_eq!(got, vec![b"a".to_vec(), b"".to_vec(), b"b".to_vec()]);
    }

    #[test]
    fn an_over_long_line_is_kept_in_part_and_the_rest_counted() {
        let mut bytes = "é".repeat(LINE_KEEP_BYTES).into_bytes();
        bytes.extend_from_slice(b"\nnext\n");
        let mut lines = stream(&bytes, u64::MAX);
        let first = lines.next().unwrap().unwrap();
        assert_eq!(first.bytes.len(), LINE_KEEP_BYTES);
        assert_eq!(
            first.skipped_chars,
            (LINE_KEEP_BYTES - LINE_KEEP_BYTES / 2) as u64
        );
        assert_eq!(lines.next().unwrap().unwrap().bytes.as_ref(), b"next");
        assert!(lines.next().is_none());
        assert!(!lines.capped);
    }

    #[test]
    fn the_byte_budget_ends_the_stream_and_is_reported() {
        let mut lines = stream(b"one\ntwo\nthree\n", 6);
        let got: Vec<Vec<u8>> = lines
            .by_ref()
            .map(|l| l.unwrap().bytes.into_owned())
            .collect();
        assert_eq!(got, vec![b"one".to_vec(), b"tw".to_vec()]);
        assert!(lines.capped);
        let mut exact = stream(b"one\n", 4);
        assert_eq!(exact.by_ref().count(), 1);
        assert!(!exact.capped, "ending exactly at the budget is not a cap");
    }

    #[test]
    fn sniff_rejects_binary_but_tolerates_a_cut_character() {
        assert!(sniff_large(b"abc\0def", "big").is_err());
        assert!(sniff_large(b"abc\xC3", "big").is_ok());
        assert!(sniff_large(b"abc\xFFdef", "big").is_err());
    }
}
